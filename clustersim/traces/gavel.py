"""Gavel / Shockwave ``.trace`` files.

Tab-separated, no header, one line a job. Three layouts, told apart by the number of fields
(the first job line decides; every line must then have that many):

- 7 fields, old Gavel: ``job_type, command, num_steps_arg, needs_data_dir, total_steps,
  arrival_time, scale_factor``;
- 10 fields, current Gavel: ``job_type, command, working_directory, num_steps_arg,
  needs_data_dir, total_steps, scale_factor, priority_weight, SLO, arrival_time``;
- 12 fields, Shockwave: ``job_type, command, working_directory, num_steps_arg,
  needs_data_dir, total_steps, scale_factor, mode, priority_weight, SLO, duration,
  arrival_time``.

Mapping to the job table
------------------------
- ``job_id``: the 0-based index of the job line (blank lines not counted), which is how Gavel
  numbers the jobs of a trace;
- ``job_type``: exactly as written, e.g. ``"ResNet-18 (batch size 32)"`` (the key of Gavel's
  throughput tables);
- ``work``: ``total_steps`` (training steps, the unit of Gavel's measured throughputs);
- ``num_gpus``: ``scale_factor``;
- ``submit_time``: ``arrival_time``, already relative seconds in Gavel; *not* re-based (a
  first arrival after 0 is kept) so that results line up with Gavel's own simulator. Gavel
  replays jobs in file order; the real traces are in arrival order, and a file that is not
  gets a warning (the table then orders by arrival, stably);
- ``priority``: ``priority_weight`` as an integer when every weight is integral, else the
  rank of the weight (see the report); the 7-field layout has no weight and gets Gavel's
  default, 1;
- ``deadline``: Gavel's SLO is a factor, not a time: a job's deadline is ``arrival + SLO ×
  duration``, where Gavel's generator knows the job's isolated duration. Shockwave files carry
  that duration, so their deadline is computed; the 10-field layout does not, so its SLOs
  cannot be turned into deadlines (the report says how many jobs had one). ``SLO <= 0`` (the
  generators write ``-1``) means no deadline;
- ``user``, ``vc``, ``gpu_type``: unknown (``""``). ``command``, ``working_directory``,
  ``num_steps_arg`` and ``needs_data_dir`` only matter on a physical cluster; Shockwave's
  batch-size ``mode`` is not modelled.

Rows are dropped when ``total_steps`` ≤ 0 or not finite, ``scale_factor`` is < 1, not an
integer or implausibly large, ``arrival_time`` < 0 or not finite, or ``priority_weight`` is
not finite.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from clustersim.errors import TraceError
from clustersim.jobs import JobTable
from clustersim.traces.base import (
    ColumnParser,
    DelimitedText,
    FloatArray,
    IntArray,
    ObjArray,
    ParseReport,
    TraceReader,
    arrow_objects,
    build_table,
    check_options,
    drop_rows,
    gpu_checks,
    head_lines,
    small_columns,
    small_rows,
)
from clustersim.traces.limits import ReadLimits

#: Field names of each layout, by field count.
LAYOUTS: dict[int, tuple[str, ...]] = {
    7: (
        "job_type",
        "command",
        "num_steps_arg",
        "needs_data_dir",
        "total_steps",
        "arrival_time",
        "scale_factor",
    ),
    10: (
        "job_type",
        "command",
        "working_directory",
        "num_steps_arg",
        "needs_data_dir",
        "total_steps",
        "scale_factor",
        "priority_weight",
        "SLO",
        "arrival_time",
    ),
    12: (
        "job_type",
        "command",
        "working_directory",
        "num_steps_arg",
        "needs_data_dir",
        "total_steps",
        "scale_factor",
        "mode",
        "priority_weight",
        "SLO",
        "duration",
        "arrival_time",
    ),
}
_VARIANT = {7: "old Gavel (7 fields)", 10: "Gavel (10 fields)", 12: "Shockwave (12 fields)"}
#: Numeric fields, in the order they are checked (every layout has the first four).
_NUMERIC = ("needs_data_dir", "total_steps", "scale_factor", "arrival_time")
_OPTIONAL_NUMERIC = ("priority_weight", "SLO", "duration")
#: Largest integer a float64 holds exactly.
_EXACT_INT = 2.0**53
#: Line numbers, field count, text columns and numeric columns of a file.
_Columns = tuple[IntArray, int, dict[str, ObjArray], dict[str, FloatArray]]


class GavelReader(TraceReader):
    """Reader of Gavel's tab-separated ``.trace`` files (7-, 10- and 12-field layouts)."""

    name: ClassVar[str] = "gavel"
    description: ClassVar[str] = (
        "Gavel / Shockwave .trace (tab-separated; old 7-field, current 10-field and "
        "Shockwave 12-field layouts)"
    )

    def sniff(self, head: bytes, filename: str) -> bool:
        """True when the first line has a Gavel layout's field count and numeric fields."""
        lines = head_lines(head, limit=1)
        if not lines:
            return False
        fields = lines[0].split("\t")
        names = LAYOUTS.get(len(fields))
        if names is None or not fields[0].strip():
            return False
        for col in _NUMERIC:
            try:
                float(fields[names.index(col)])
            except ValueError:
                return False
        return True

    def parse(
        self, data: bytes, path: str, *, limits: ReadLimits | None = None, **options: Any
    ) -> tuple[JobTable, ParseReport]:
        """Parse a Gavel ``.trace`` file (no options).

        A small plain file (see :func:`~clustersim.traces.base.small_rows`) is read without
        pyarrow; the job table and the report are the same either way.
        """
        check_options(self, path, options, set())
        report = ParseReport(format=self.name, path=path)
        lines, nfields, text, num = self._small(data) or self._arrow(data, path)
        n = report.jobs_read = len(lines)
        report.assume(f"layout: {_VARIANT[nfields]}")
        job_type = text["job_type"]

        steps, gpus, arrival = num["total_steps"], num["scale_factor"], num["arrival_time"]
        checks = [
            ("total_steps <= 0", steps <= 0),
            ("total_steps not finite", ~np.isfinite(steps)),
            *gpu_checks(gpus, "scale_factor"),
            ("arrival_time < 0", arrival < 0),
            ("arrival_time not finite", ~np.isfinite(arrival)),
        ]
        if "priority_weight" in num:
            checks.append(("priority_weight not finite", ~np.isfinite(num["priority_weight"])))
        keep = drop_rows(report, lines, checks)
        idx = np.flatnonzero(keep)
        kept_lines = lines[idx]

        with np.errstate(invalid="ignore"):
            report.warn(
                "total_steps is not an integer (Gavel's parser would reject it)",
                kept_lines[np.floor(steps[idx]) != steps[idx]],
            )
        backwards = np.flatnonzero(np.diff(arrival[idx]) < 0) + 1
        report.warn(
            "jobs not in arrival order (arrival_time smaller than on the line before; "
            "the table orders jobs by arrival, Gavel replays them in file order)",
            kept_lines[backwards],
        )

        priority = self._priority(num.get("priority_weight"), idx, report)
        deadline = self._deadline(num, idx, kept_lines, report)
        report.assume(
            "arrival_time taken as relative seconds, not re-based "
            f"(first arrival {arrival[idx].min() if len(idx) else 0.0:g} s)"
        )
        report.assume("work = total_steps (training steps); num_gpus = scale_factor")
        report.assume(
            "command, working_directory, num_steps_arg and needs_data_dir ignored; "
            "user and virtual cluster unknown"
        )
        if "mode" in text:
            modes = text["mode"][idx]
            kinds, counts = np.unique(modes.astype(str), return_counts=True)
            listed = ", ".join(f"{k or '(empty)'}: {c}" for k, c in zip(kinds, counts, strict=True))
            report.assume(
                f"Shockwave batch-size mode ignored ({listed}); jobs run with a static batch size"
            )

        table = build_table(
            path,
            report,
            kept_lines,
            {
                "submit_time": "arrival_time",
                "num_gpus": "scale_factor",
                "work": "total_steps",
                "priority": "priority_weight",
                "deadline": "SLO",
            },
            job_id=np.arange(n)[idx],
            submit_time=arrival[idx],
            num_gpus=gpus[idx].astype(np.int64),
            work=steps[idx],
            job_type=job_type[idx],
            priority=priority,
            deadline=deadline,
        )
        return table, report

    @staticmethod
    def _small(data: bytes) -> _Columns | None:
        """A small plain file's line numbers, field count, text columns (``job_type`` and,
        in the Shockwave layout, ``mode``) and numeric columns, read without pyarrow;
        ``None`` when :func:`small_rows` or :func:`small_columns` leave the file to pyarrow,
        or the layout is unknown."""
        split = small_rows(data, "\t")
        if split is None or not split[1]:
            return None
        lines, rows = split
        names = LAYOUTS.get(len(rows[0]))
        if names is None:
            return None
        numbers = [c for c in (*_NUMERIC, *_OPTIONAL_NUMERIC) if c in names]
        columns = small_columns(names, rows, ("job_type", *numbers), numbers)
        if columns is None:
            return None
        text, num = columns
        return lines, len(names), text, num

    @staticmethod
    def _arrow(data: bytes, path: str) -> _Columns:
        """What :meth:`_small` gives, read with pyarrow (any file).

        Raises
        ------
        TraceError
            At the file's first problem.
        """
        text = DelimitedText(data, "\t")
        if not text:
            raise TraceError(path, 0, "", "empty file")
        nfields = int(text.nfields[0])
        if nfields not in LAYOUTS:
            raise TraceError(
                path,
                text.first_line,
                "",
                f"found {nfields} tab-separated fields; a Gavel trace has 7, 10 or 12",
            )
        cols = text.columns(path, list(LAYOUTS[nfields]))
        lines = text.lines
        parser = ColumnParser(path, lines)
        out = {"job_type": parser.text(cols["job_type"], "job_type")}
        num = {c: parser.numbers(cols[c], c) for c in _NUMERIC}
        num.update({c: parser.numbers(cols[c], c) for c in _OPTIONAL_NUMERIC if c in cols})
        parser.check()
        if "mode" in cols:
            out["mode"] = arrow_objects(cols["mode"])
        return lines, nfields, out, num

    @staticmethod
    def _priority(weight: FloatArray | None, idx: np.ndarray, report: ParseReport) -> np.ndarray:
        """Integer priorities of the kept rows from ``priority_weight``."""
        if weight is None:
            report.assume("no priority_weight in this layout: priority 1 (Gavel's default)")
            return np.ones(len(idx), dtype=np.int64)
        w = weight[idx]
        if np.all((np.floor(w) == w) & (np.abs(w) <= _EXACT_INT)):
            return w.astype(np.int64)
        levels = np.unique(w)
        shown = ", ".join(f"{x:g}" for x in levels[:10]) + (", ..." if len(levels) > 10 else "")
        report.assume(
            f"priority_weight has fractional values; priority = rank of the weight among the "
            f"{len(levels)} distinct weights (1 = smallest; weights in rank order: {shown})"
        )
        return (np.searchsorted(levels, w) + 1).astype(np.int64)

    @staticmethod
    def _deadline(
        num: dict[str, FloatArray], idx: np.ndarray, lines: np.ndarray, report: ParseReport
    ) -> FloatArray:
        """Absolute deadlines of the kept rows (``nan`` for none)."""
        deadline = np.full(len(idx), np.nan)
        if "SLO" not in num:
            return deadline
        slo = num["SLO"][idx]
        with np.errstate(invalid="ignore"):
            has_slo = np.isfinite(slo) & (slo > 0)
        if not has_slo.any():
            report.assume("no job has an SLO (SLO <= 0): no deadlines")
            return deadline
        if "duration" not in num:
            report.warn(
                "SLO set but the 10-field layout has no job duration to scale it by; "
                "no deadline set",
                lines[has_slo],
            )
            return deadline
        duration = num["duration"][idx]
        with np.errstate(invalid="ignore", over="ignore"):
            usable = has_slo & np.isfinite(duration) & (duration > 0)
            deadline[usable] = num["arrival_time"][idx][usable] + slo[usable] * duration[usable]
        deadline[~np.isfinite(deadline)] = np.nan  # an overflowing deadline is no deadline
        report.warn(
            "SLO set but duration is not positive; no deadline set", lines[has_slo & ~usable]
        )
        report.assume("deadline = arrival_time + SLO × duration (Gavel's SLO definition)")
        return deadline
