"""SenseTime Helios ``cluster_log.csv`` (Venus, Earth, Saturn, Uranus; SC'21).

Format (``HeliosData`` README, copied in ``shared/data/traces/helios/``): comma-separated
with a header ``job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,
end_time,duration,queue``; one row a Slurm job. Times are ``YYYY-MM-DD HH:MM:SS`` without a
time zone; ``duration`` (= end − start) and ``queue`` (= start − submit) are seconds;
``state`` is ``COMPLETED``, ``CANCELLED``, ``FAILED``, ``TIMEOUT`` or ``NODE_FAIL`` (the
README also mentions one ``SUSPENDED`` job). Columns may come in any order; ``gpu_num``,
``state``, ``submit_time`` and ``duration`` (or ``start_time`` and ``end_time``) are
required, the others optional; extra columns are ignored. Files are read in chunks with
bounded memory (the four clusters together hold 3.4 M jobs).

Mapping to the job table
------------------------
- ``job_id``: ``job_id`` (default: the 0-based index of the data row); ``user``, ``vc``: as
  written; ``cpu``: ``cpu_num``;
- ``submit_time``: ``submit_time``, re-based so that the earliest kept job arrives at 0;
- ``work``: ``duration`` (or ``end_time - start_time`` where it is blank) in reference
  seconds, times the option ``speed`` (default 1: Helios's GPUs — V100s and others — taken
  as the reference type, like every trace without per-job GPU types);
- ``num_gpus``: ``gpu_num``.

Jobs that asked for no GPU (more than half of Helios's jobs are CPU-only) are dropped with
their own reason. The option ``states`` lists the states whose jobs are kept (compared
without case, by their first word); by default ``COMPLETED``, ``CANCELLED``, ``FAILED``,
``TIMEOUT`` and ``NODE_FAIL`` are kept — cancelled and failed jobs are simulated for the time
they actually ran — and any other state is dropped with one reason per state.

Rows are also dropped when ``gpu_num`` is negative, fractional or implausibly large, or the
run time is missing (the job never started), negative, zero or not finite. Warnings: a
``duration`` that disagrees with ``end_time - start_time``, a ``queue`` that disagrees with
``start_time - submit_time``, a start before the submit time, more than 8 GPUs per node
(Helios nodes have 8), duplicate job ids.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, ClassVar

import numpy as np

from clustersim.jobs import JobTable
from clustersim.traces.arrow import pa
from clustersim.traces.base import (
    MAX_GPUS,
    FloatArray,
    ParseReport,
    build_table,
    check_options,
    gpu_checks,
)
from clustersim.traces.generic import (
    Block,
    ChunkedCsvReader,
    DelimitedChunks,
    LenientParser,
    LineCollector,
    apply_drops,
    as_objects,
    check_speed,
    check_statuses,
    header_name_set,
    kept_job_ids,
    read_blocks,
    row_ids,
    status_drops,
)
from clustersim.traces.limits import ReadLimits

#: The documented states, in the order the README lists them.
STATES = ("COMPLETED", "CANCELLED", "FAILED", "TIMEOUT", "NODE_FAIL")
COLUMNS = (
    "job_id",
    "user",
    "vc",
    "gpu_num",
    "cpu_num",
    "node_num",
    "state",
    "submit_time",
    "start_time",
    "end_time",
    "duration",
    "queue",
)
#: GPUs per node in the Helios clusters.
NODE_GPUS = 8
#: Seconds by which ``duration`` or ``queue`` may differ from the times before a warning.
TOLERANCE_S = 1.0

_TEXT = ("job_id", "user", "vc", "state")
_NUMBERS = ("gpu_num", "cpu_num", "node_num", "duration", "queue")
_W_DURATION = (
    f"duration differs from end_time - start_time by more than {TOLERANCE_S:g} s (duration used)"
)
_W_QUEUE = f"queue differs from start_time - submit_time by more than {TOLERANCE_S:g} s"
_W_EARLY = "start_time before submit_time (kept)"
_W_NODE = f"more than {NODE_GPUS} GPUs per node (kept)"
_CPU_ONLY = "CPU-only job (gpu_num = 0)"
_ORDER = (
    _CPU_ONLY,
    "gpu_num < 0",
    "gpu_num not an integer",
    f"gpu_num > {MAX_GPUS}",
    "never started (no duration or start_time/end_time)",
    "duration < 0 (end before start)",
    "duration = 0",
    "duration not finite",
)


class HeliosReader(ChunkedCsvReader):
    """Reader of Helios ``cluster_log.csv`` (chunked)."""

    name: ClassVar[str] = "helios"
    description: ClassVar[str] = (
        "SenseTime Helios cluster_log.csv (job_id, user, vc, gpu_num, cpu_num, node_num, "
        "state, submit_time, start_time, end_time, duration, queue)"
    )

    def sniff(self, head: bytes, filename: str) -> bool:
        """True when the first line is a header with Helios's own column names."""
        names = header_name_set(head)
        return {"gpu_num", "state", "submit_time"} <= names and bool(
            {"duration", "end_time"} & names
        )

    def parse(
        self, data: bytes, path: str, *, limits: ReadLimits | None = None, **options: Any
    ) -> tuple[JobTable, ParseReport]:
        """Parse a whole file held in memory.

        Parameters
        ----------
        data, path, limits
            See :meth:`TraceReader.parse`.
        states : sequence of str, optional
            States whose jobs are kept (default: the five documented ones).
        speed : float, optional
            Speed of the trace's GPUs relative to the reference type (default 1).
        """
        return super().parse(data, path, limits=limits, **options)

    def _read(
        self,
        chunks_in: Iterable[tuple[int, bytes]],
        path: str,
        report: ParseReport,
        options: dict[str, Any],
        limits: ReadLimits,
    ) -> tuple[JobTable, ParseReport]:
        check_options(self, path, options, {"states", "speed"})
        states = check_statuses(path, options.get("states", STATES), "states")
        speed = check_speed(path, options.get("speed", 1.0))
        chunks = DelimitedChunks(chunks_in, path, ",", limits)
        index = {}
        for col in COLUMNS:
            found = chunks.find(col)
            if found is not None:
                index[col] = chunks.names[found]
        for col in ("gpu_num", "state", "submit_time"):
            if col not in index:
                chunks.column_index(col, col)  # raises, naming the header line
        if "duration" not in index and not {"start_time", "end_time"} <= set(index):
            chunks.column_index("duration", "duration")

        drops, warnings = LineCollector(), LineCollector()
        numbers = {index[c]: c != "gpu_num" for c in _NUMBERS if c in index}
        parts = read_blocks(
            chunks,
            path,
            report,
            lambda block: _block(block, index, path, states, drops, warnings),
            numbers,
        )
        state_reasons = [m for m in drops.messages() if m.startswith("state ")]
        drops.drop(report, [*state_reasons, *_ORDER])
        warnings.warn(report, (_W_DURATION, _W_QUEUE, _W_EARLY, _W_NODE))

        submit = np.concatenate(parts["submit"])
        job_id = kept_job_ids(parts, report)
        origin = float(submit.min()) if len(submit) else 0.0
        if len(submit):
            report.start_time = str(np.datetime64(int(origin), "s"))
            report.assume(
                f"submit times re-based: t = 0 is the earliest kept submit_time "
                f"{report.start_time} (Helios times carry no zone; used as written)"
            )
        names = [s.upper() for s in states or ()]
        unfinished = [n for n in names if n != "COMPLETED"]
        fate = (
            f"jobs ending {', '.join(unfinished)} are simulated for the time they actually ran"
            if unfinished
            else "cancelled and failed jobs are dropped"
        )
        report.assume(
            f"states kept: {', '.join(names) or 'none'}; {fate} (choose with the states option)"
        )
        report.assume(
            f"work = duration (end_time - start_time where blank) x speed {speed:g} = "
            "reference seconds on P100; GPU types per job unknown; no job types"
        )
        if "job_id" not in index:
            report.assume("no job_id column: job_id is the 0-based index of the data row")
        columns: dict[str, Any] = {
            "job_id": job_id,
            "submit_time": submit - origin,
            "num_gpus": np.concatenate(parts["num_gpus"]).astype(np.int64),
            "work": np.concatenate(parts["work"]) * speed,
        }
        for key in ("user", "vc"):
            if key in parts:
                columns[key] = as_objects(parts[key], repeated=True)
        if "cpu" in parts:
            columns["cpu"] = np.concatenate(parts["cpu"])
        fields = {"submit_time": "submit_time", "num_gpus": "gpu_num", "work": "duration"}
        if "cpu" in columns:
            fields["cpu"] = "cpu_num"
        table = build_table(path, report, np.concatenate(parts["lines"]), fields, **columns)
        return table, report


def _block(
    block: Block,
    index: dict[str, str],
    path: str,
    states: tuple[str, ...] | None,
    drops: LineCollector,
    warnings: LineCollector,
) -> dict[str, Any]:
    cols = {col: block.column(name, col in _TEXT) for col, name in index.items()}
    lines = block.lines
    parser = LenientParser(path, lines)
    submit_t = parser.timestamps(cols["submit_time"], "submit_time")
    gpus = parser.numbers(cols["gpu_num"], "gpu_num")
    parser.required(cols["state"], "state")
    nan = np.full(len(lines), np.nan)
    start = end = np.full(len(lines), np.datetime64("NaT"), dtype="datetime64[s]")
    if "start_time" in cols:
        start = parser.optional_timestamps(cols["start_time"], "start_time")
    if "end_time" in cols:
        end = parser.optional_timestamps(cols["end_time"], "end_time")
    optional: dict[str, FloatArray] = {}
    for col in ("duration", "queue", "cpu_num", "node_num"):
        optional[col] = parser.optional_numbers(cols[col], col) if col in cols else nan
    parser.check()

    submit = _seconds(submit_t)
    t_start, t_end = _seconds(start), _seconds(end)
    span = t_end - t_start
    duration = optional["duration"]
    work = np.where(np.isnan(duration), span, duration)

    with np.errstate(invalid="ignore"):
        checks = status_drops(cols["state"], states, "state")
        checks += [
            (_CPU_ONLY, gpus == 0),
            *gpu_checks(gpus, "gpu_num", "< 0"),
            ("never started (no duration or start_time/end_time)", np.isnan(work)),
            ("duration < 0 (end before start)", work < 0),
            ("duration = 0", work == 0),
            ("duration not finite", ~np.isfinite(work)),
        ]
    keep = apply_drops(drops, lines, checks)

    with np.errstate(invalid="ignore"):
        node = optional["node_num"]
        warn = [
            (_W_DURATION, np.abs(duration - span) > TOLERANCE_S),
            (_W_QUEUE, np.abs(optional["queue"] - (t_start - submit)) > TOLERANCE_S),
            (_W_EARLY, t_start < submit),
            (_W_NODE, gpus > NODE_GPUS * node),
        ]
    for message, mask in warn:
        warnings.add(message, lines[keep & mask])

    idx = np.flatnonzero(keep)
    taken = pa.array(idx)
    out: dict[str, Any] = {
        "lines": lines[idx],
        "submit": submit[idx],
        "num_gpus": gpus[idx],
        "work": work[idx],
        "job_id": row_ids(cols.get("job_id"), block.first_row, idx),
    }
    for key in ("user", "vc"):
        if key in cols:
            out[key] = cols[key].take(taken)
    if "cpu_num" in cols:
        out["cpu"] = optional["cpu_num"][idx]
    return out


def _seconds(times: np.ndarray) -> FloatArray:
    """datetime64[s] → float seconds since 1970 (``nan`` for ``NaT``)."""
    out = times.astype(np.int64).astype(np.float64)
    out[np.isnat(times)] = np.nan
    return out
