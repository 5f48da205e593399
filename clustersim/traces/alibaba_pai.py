"""Alibaba PAI 2020 GPU trace: ``pai_job_table`` joined with ``pai_task_table``.

Format (Weng et al., "MLaaS in the Wild: Workload Analysis and Scheduling in Large-Scale
Heterogeneous GPU Clusters", NSDI'22; alibaba/clusterdata ``cluster-trace-gpu-v2020``):
comma-separated, **no header** (a first line equal to the column names of the ``.header``
file is accepted and skipped), times in seconds shifted by an undisclosed constant:

- ``pai_job_table.csv``, 6 fields: ``job_name, inst_id, user, status, start_time (submit),
  end_time``;
- ``pai_task_table.csv``, 10 fields: ``job_name, task_name, inst_num, status, start_time
  (launch), end_time, plan_cpu (% of a core), plan_mem (GB), plan_gpu (% of a GPU),
  gpu_type``; the tasks of a job share its ``job_name``.

The table is told by its field count. Read either

- the task table alone: ``read_trace(task_csv, "alibaba-pai")``. It carries ``job_name``, the
  GPU demand and the run times; submit time is then the first task launch (queueing delay
  unknown) and the user unknown. Optionally ``job_table=job_csv`` adds submit time, user and
  status;
- or the job table with ``task_table=task_csv`` (the job table alone has no GPU demand).

No other PAI table is needed. Values that the real tables leave empty (``end_time`` of running
jobs, ``start_time`` of waiting ones, ``plan_*`` and ``gpu_type`` of CPU tasks, ``user``,
``inst_id``) may be empty; ``job_name``, ``status`` and ``inst_num`` may not. A value that is
present but not a number is an error at its line.

Mapping to the job table
------------------------
One job per ``job_name`` (compared as written). A job-table row repeating an earlier
``job_name`` is dropped when the job table is the main file; with ``job_table=`` the first row
of a name is used. A job's line in the report is its line in the main file (for the task
table: its first task line), and ``jobs_read`` counts jobs.

- ``job_id``: ``job_name``; ``user``: ``user`` of the job table;
- ``submit_time``: the job's ``start_time`` (submission) from the job table, else its first
  task launch; re-based so that the earliest kept submission is 0 (the report says which
  raw time that was and its clock time in UTC+8, which the trace preserves);
- run time: last task ``end_time`` − first task ``start_time``. A job still ``Running`` whose
  tasks have no ``end_time`` runs until the trace end (the latest time in the tables),
  warned as a lower bound;
- ``num_gpus``: ⌈Σ over its tasks of ``inst_num × plan_gpu / 100``⌉. A job asking for a
  fraction of a GPU in total (GPU sharing: ``plan_gpu`` 50 is half a GPU) gets whole devices:
  the engine allocates whole devices; the report counts such jobs. Jobs without GPU demand
  (CPU-only) are dropped;
- ``gpu_type``: the ``gpu_type`` of its GPU tasks (the type they ran on), through the catalog
  aliases (``V100M32`` → ``V100-SXM2-32GB``); ``MISC`` (older GPUs: K40m, K80, M60) and other
  names the catalog does not know are kept as written and reported. Jobs whose GPU tasks ran
  on different types get no type (warned). ``gpu_constraint=False`` keeps the type only for
  the work conversion and leaves ``gpu_type`` empty, so the jobs may run anywhere;
- ``work``: run time × speed of that type relative to the reference type
  (:func:`clustersim.jobtypes.reference_speed`), so that the job takes as long as it did on
  its type; jobs without a known type keep the run time as reference seconds;
- ``cpu``: Σ ``inst_num × plan_cpu / 100`` cores; ``mem_gb``: Σ ``inst_num × plan_mem``;
- status: from the job table, else from the tasks (``Failed`` if any task failed, else
  ``Running`` if any runs, else ``Waiting`` if any waits, else ``Terminated``; an unknown task
  status is the job's). Option ``statuses`` picks the statuses to keep (default
  ``Terminated``, ``Failed`` and ``Running``: every job that used GPUs; ``Waiting`` jobs never
  started). ``job_type``, ``vc``: unknown.

Rows are dropped (per job) when the status is not selected, the job never started, has no end
time, ends before (or when) it starts, asks for no GPU or for an implausible number, or (job
table as main file) has no task or repeats an earlier ``job_name``.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from clustersim.catalog import UNMAPPED, load_catalog, normalize_name
from clustersim.errors import TraceError
from clustersim.jobs import JobTable
from clustersim.jobtypes import reference_speed
from clustersim.traces.arrow import pa, pc
from clustersim.traces.base import (
    MAX_CPU,
    MAX_GPUS,
    MAX_MEM_GB,
    MAX_TIME_S,
    ColumnParser,
    DelimitedText,
    FloatArray,
    IntArray,
    ParseReport,
    TraceReader,
    build_table,
    check_options,
    drop_rows,
    head_lines,
    is_numbers,
    load_text,
    name_list_option,
    no_blank,
    numbers_of,
    set_jobs_read,
    string_offsets,
    trim,
)
from clustersim.traces.limits import ReadLimits

JOB_FIELDS = ("job_name", "inst_id", "user", "status", "start_time", "end_time")
TASK_FIELDS = (
    "job_name",
    "task_name",
    "inst_num",
    "status",
    "start_time",
    "end_time",
    "plan_cpu",
    "plan_mem",
    "plan_gpu",
    "gpu_type",
)
STATUSES = ("Terminated", "Failed", "Running", "Waiting")
DEFAULT_STATUSES = ("Terminated", "Failed", "Running")
#: Time zone in which the shifted times keep their clock time and weekday (README).
TRACE_TZ = timezone(timedelta(hours=8))
_BIG = np.iinfo(np.int64).max
_JOB_TIMES = ("start_time", "end_time")
_TASK_NUMBERS = ("start_time", "end_time", "plan_cpu", "plan_mem", "plan_gpu")


class AlibabaPaiReader(TraceReader):
    """Reader of the Alibaba PAI 2020 job and task tables (header-less CSV)."""

    name: ClassVar[str] = "alibaba-pai"
    description: ClassVar[str] = (
        "Alibaba PAI 2020 pai_task_table (optionally joined with pai_job_table via job_table=), "
        "or pai_job_table with task_table="
    )

    def sniff(self, head: bytes, filename: str) -> bool:
        """True when the first lines are PAI job-table or task-table rows (a header may lead)."""
        lines = head_lines(head, limit=5)
        kinds = [_line_kind(line) for line in lines]
        data_rows = [k for k, line in zip(kinds, lines, strict=True) if not _is_header(line)]
        return bool(data_rows) and len(set(kinds)) == 1 and None not in kinds

    def parse(
        self, data: bytes, path: str, *, limits: ReadLimits | None = None, **options: Any
    ) -> tuple[JobTable, ParseReport]:
        """Parse a PAI table (options ``task_table``, ``job_table``, ``statuses``,
        ``gpu_constraint``; see the module docstring)."""
        known = {"task_table", "job_table", "statuses", "gpu_constraint"}
        check_options(self, path, options, known)
        statuses = _statuses(options.get("statuses"), path)
        constrain = options.get("gpu_constraint", True)
        if not isinstance(constrain, bool):
            raise TraceError(path, 0, "gpu_constraint", "gpu_constraint must be True or False")
        report = ParseReport(format=self.name, path=path)
        text = DelimitedText(data, ",")
        main_kind = _table_kind(text, path)
        jobs: _Jobs | None
        if main_kind == "job":
            if options.get("job_table") is not None:
                raise TraceError(path, 0, "job_table", "this file is a job table; give task_table=")
            other = options.get("task_table")
            if other is None:
                raise TraceError(
                    path,
                    0,
                    "task_table",
                    "this is a pai_job_table, which has no GPU demand: pass "
                    "task_table=<pai_task_table.csv> (or read the task table alone)",
                )
            jobs = _read_jobs(text, path)
            tasks = _read_tasks(*_other(other, "task", "task_table", path, limits))
        else:
            if options.get("task_table") is not None:
                raise TraceError(
                    path, 0, "task_table", "this file is a task table; give job_table="
                )
            tasks = _read_tasks(text, path)
            other = options.get("job_table")
            jobs = (
                None
                if other is None
                else _read_jobs(*_other(other, "job", "job_table", path, limits))
            )

        vocab = list(STATUSES)
        agg = _aggregate(tasks, vocab)
        view = _view(main_kind, jobs, agg, vocab, report, path)
        g = view.group

        def per_job(values: np.ndarray) -> np.ndarray:
            """Per-task-group values for the jobs of the main file."""
            return values if view.in_order else values[g]

        lines = view.line

        first_start = per_job(agg.first_start)
        missing_end = per_job(agg.missing_end)
        gpu_sum = per_job(agg.gpu)
        times = [tasks.start, tasks.end] + ([jobs.start, jobs.end] if jobs is not None else [])
        every = np.concatenate(times)
        every = every[np.isfinite(every)]
        trace_end = float(every.max()) if len(every) else 0.0
        running = view.status == vocab.index("Running")
        end = np.where(missing_end & running, trace_end, per_job(agg.last_end))
        type_code = per_job(agg.type_code)  # index into agg.type_names, -1 none, -2 several
        speed_of, name_of = _type_tables(agg.type_names)
        speed = speed_of[type_code]
        with np.errstate(invalid="ignore", over="ignore"):
            run = end - first_start
            submit = np.fmin(view.submit, first_start)
            work = run * speed

        wanted = [vocab.index(s) for s in statuses if s in vocab]
        with np.errstate(invalid="ignore"):
            checks = [
                ("job_name repeats an earlier job row", view.dup),
                ("no task in the task table", view.no_task),
                ("status not selected (option statuses)", ~_among(view.status, wanted, vocab)),
                ("never started (no task start_time)", np.isnan(first_start)),
                ("no end_time", np.isnan(end)),
                ("end_time before start_time", run < 0),
                ("zero run time", run == 0),
                ("CPU-only job (no task asks for a GPU)", gpu_sum <= 0),
                ("GPU demand not finite", ~np.isfinite(gpu_sum)),
                (f"GPU demand > {MAX_GPUS}", gpu_sum > MAX_GPUS),
                ("times not finite", ~np.isfinite(work) | ~np.isfinite(submit)),
            ]
        keep = drop_rows(report, lines, checks)
        idx = np.flatnonzero(keep)
        kl = lines[idx]

        # Statuses and run times.
        counts = np.bincount(view.status[idx], minlength=len(vocab))
        report.assume(
            "statuses of kept jobs: "
            + ", ".join(f"{s} {int(c)}" for s, c in zip(vocab, counts, strict=True) if c)
            + f" (kept statuses: {', '.join(statuses)}; option statuses)"
        )
        report.warn(
            f"status Running without end_time: runs until the trace end ({trace_end:g} s raw; "
            "run time is a lower bound)",
            kl[(running & missing_end)[idx]],
        )
        report.warn(
            "status Running but every task has an end_time: last end_time taken as the end",
            kl[(running & ~missing_end)[idx]],
        )
        if jobs is not None:
            with np.errstate(invalid="ignore"):
                late = view.submit > first_start
            report.warn(
                "submitted after its first task started: submit taken as the task start",
                kl[late[idx]],
            )
            report.warn(
                "no submit time (empty start_time, or no row in the job table): first task "
                "launch used",
                kl[np.isnan(view.submit[idx])],
            )

        # GPUs.
        gk = gpu_sum[idx]
        gpus = np.ceil(gk - 1e-9).astype(np.int64)
        frac = gk != np.round(gk)
        if frac.any():
            report.assume(
                f"{int(frac.sum())} jobs ask for a fractional number of GPUs "
                f"({int((gk < 1).sum())} for less than one: GPU sharing); num_gpus rounded up to "
                "whole devices, run times kept"
            )
        report.assume("num_gpus = ⌈Σ inst_num × plan_gpu / 100⌉ over the job's tasks")

        # Types.
        kt = type_code[idx]
        report.warn(
            "GPU tasks of the job ran on different gpu_type: no type (work = run time)",
            kl[kt == -2],
        )
        _report_types(agg.type_names, kt, kl, constrain, report)
        gpu_type = name_of[kt] if constrain else np.full(len(idx), "", dtype=object)

        # Time origin.
        kept_submit = submit[idx]
        origin = float(kept_submit.min()) if len(idx) else 0.0
        clock = _clock(origin)
        report.assume(
            f"submit_time re-based: t = 0 is the earliest kept submission, raw time {origin:g} s"
            + (
                f" ({clock} in UTC+8: the trace keeps clock time and weekday, not dates)"
                if clock
                else ""
            )
        )
        if jobs is None:
            report.assume(
                "no job table: submit time = first task launch (queueing delay unknown); "
                "user unknown"
            )
        report.assume("cpu = Σ inst_num × plan_cpu / 100 cores, mem_gb = Σ inst_num × plan_mem")
        take = pa.array(idx)
        table = build_table(
            path,
            report,
            kl,
            {"work": "end_time - start_time", "num_gpus": "plan_gpu"},
            job_id=view.name.take(take),
            submit_time=kept_submit - origin,
            num_gpus=gpus,
            work=work[idx],
            # one Python string per distinct user, not per job (none without a job table)
            user=None if jobs is None else pc.dictionary_encode(view.user.take(take)),
            gpu_type=gpu_type,
            cpu=agg.cpu[g[idx]],
            mem_gb=agg.mem[g[idx]],
        )
        return table, report


# --------------------------------------------------------------------------------------------
# Telling the tables apart


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _is_header(line: str) -> bool:
    return tuple(c.strip() for c in line.split(",")) in (JOB_FIELDS, TASK_FIELDS)


def _line_kind(line: str) -> str | None:
    """``"job"``, ``"task"`` or ``None`` for one line of a PAI table (header lines count)."""
    f = [x.strip() for x in line.split(",")]
    if tuple(f) == JOB_FIELDS:
        return "job"
    if tuple(f) == TASK_FIELDS:
        return "task"
    if len(f) not in (6, 10) or not f[0] or " " in f[0] or f[3] not in STATUSES:
        return None
    numeric = (4, 5) if len(f) == 6 else (2, 4, 5, 6, 7, 8)
    if any(f[i] and not _is_number(f[i]) for i in numeric) or (len(f) == 10 and not f[2]):
        return None
    return "job" if len(f) == 6 else "task"


def _table_kind(text: DelimitedText, path: str) -> str:
    if not text:
        raise TraceError(path, 0, "", "empty file")
    nf = len(text.fields(0))
    if nf == len(JOB_FIELDS):
        return "job"
    if nf == len(TASK_FIELDS):
        return "task"
    raise TraceError(
        path,
        text.first_line,
        "",
        f"found {nf} comma-separated fields; a PAI job table has 6, a task table 10",
    )


def _other(
    value: Any, kind: str, option: str, path: str, limits: ReadLimits | None
) -> tuple[DelimitedText, str]:
    """Load the second table named by an option (within ``limits``) and check its kind."""
    if not isinstance(value, str | os.PathLike):
        raise TraceError(path, 0, option, f"{option} must be a file path")
    other = os.fspath(value)
    text = DelimitedText(load_text(other, None, limits), ",")
    if _table_kind(text, other) != kind:
        raise TraceError(
            other, text.first_line, "", f"{option} must be a pai_{kind}_table, not this file"
        )
    return text, other


# --------------------------------------------------------------------------------------------
# Reading the tables


@dataclass
class _Jobs:
    name: pa.Array
    line: IntArray
    status: pa.Array
    user: pa.Array
    start: FloatArray
    end: FloatArray


@dataclass
class _Tasks:
    name: pa.Array
    line: IntArray
    inst: FloatArray
    status: pa.Array
    start: FloatArray
    end: FloatArray
    cpu: FloatArray
    mem: FloatArray
    gpu: FloatArray
    gpu_type: pa.Array


def _start_row(text: DelimitedText, fields: tuple[str, ...]) -> int:
    """1 when the first line is the header, else 0."""
    return 1 if tuple(c.strip() for c in text.fields(0)) == fields else 0


def _optional_numbers(parser: ColumnParser, values: pa.Array, name: str) -> FloatArray:
    """A numeric column whose empty values mean "none" (``nan``); other values that are not
    numbers (also whitespace) are errors."""
    if is_numbers(values):
        return numbers_of(values)
    empty = _empty(values)
    if not empty.any():
        return parser.numbers(values, name)
    out = parser.numbers(pc.if_else(pa.array(empty), "0", values), name)
    out[empty] = np.nan
    return out


def _empty(values: pa.Array) -> npt.NDArray[np.bool_]:
    """(m,) bool: empty strings, from the offsets (no string is touched)."""
    buf = values.buffers()[1]
    if buf is None or len(values) == 0:
        return np.zeros(len(values), dtype=bool)
    width = np.int64 if pa.types.is_large_string(values.type) else np.int32
    offsets = np.frombuffer(buf, dtype=width)
    offsets = offsets[values.offset : values.offset + len(values) + 1]
    return np.asarray(np.diff(offsets) == 0, dtype=bool)


def _blank(values: pa.Array) -> npt.NDArray[np.bool_]:
    """(m,) bool: empty or whitespace-only values (without copying the strings)."""
    if no_blank(values):
        return np.zeros(len(values), dtype=bool)
    mask = pc.or_(pc.equal(values, ""), pc.utf8_is_space(values))
    return np.asarray(mask.to_numpy(zero_copy_only=False), dtype=bool)


def _required_text(parser: ColumnParser, values: pa.Array, name: str) -> pa.Array:
    """A text column that may not be blank, as written (checked without copying to Python)."""
    if _blank(values).any():
        parser.required(values, name)  # records the first blank value
    return values


def _split(
    text: DelimitedText,
    path: str,
    fields: tuple[str, ...],
    numbers: dict[str, bool],
    unused: tuple[str, ...],
) -> tuple[dict[str, pa.Array], IntArray, ColumnParser]:
    """The rows of a table (after its header line, if it has one) by field name (but the
    ``unused`` ones), their line numbers and a parser for them; ``numbers`` as for
    :meth:`DelimitedText.columns`."""
    start = _start_row(text, fields)
    cols = text.columns(path, list(fields), start, numbers, skip=unused)
    lines = text.lines[start:]
    return cols, lines, ColumnParser(path, lines)


def _read_jobs(text: DelimitedText, path: str) -> _Jobs:
    numbers = dict.fromkeys(_JOB_TIMES, True)
    cols, lines, parser = _split(text, path, JOB_FIELDS, numbers, ("inst_id",))
    name = _required_text(parser, cols["job_name"], "job_name")
    status = _required_text(parser, cols["status"], "status")
    t0 = _optional_numbers(parser, cols["start_time"], "start_time")
    t1 = _optional_numbers(parser, cols["end_time"], "end_time")
    parser.check()
    _check_ranges(
        path, lines, [("start_time", t0, MAX_TIME_S, None), ("end_time", t1, MAX_TIME_S, None)]
    )
    user = trim(cols["user"])
    return _Jobs(name=name, line=lines, status=status, user=user, start=t0, end=t1)


def _read_tasks(text: DelimitedText, path: str) -> _Tasks:
    numbers = {"inst_num": False, **dict.fromkeys(_TASK_NUMBERS, True)}
    cols, lines, parser = _split(text, path, TASK_FIELDS, numbers, ("task_name",))
    name = _required_text(parser, cols["job_name"], "job_name")
    inst = parser.numbers(cols["inst_num"], "inst_num")
    status = _required_text(parser, cols["status"], "status")
    num = {c: _optional_numbers(parser, cols[c], c) for c in _TASK_NUMBERS}
    parser.check()
    with np.errstate(invalid="ignore", over="ignore"):
        cores = inst * num["plan_cpu"] / 100.0
        memory = inst * num["plan_mem"]
    _check_ranges(
        path,
        lines,
        [
            ("inst_num", inst, MAX_GPUS, None),
            ("start_time", num["start_time"], MAX_TIME_S, None),
            ("end_time", num["end_time"], MAX_TIME_S, None),
            ("plan_cpu", cores, _TASK_CPU, "inst_num × plan_cpu / 100 cores"),
            ("plan_mem", memory, _TASK_MEM_GB, "inst_num × plan_mem GB"),
        ],
    )
    return _Tasks(
        name=name,
        line=lines,
        inst=inst,
        status=status,
        start=num["start_time"],
        end=num["end_time"],
        cpu=num["plan_cpu"],
        mem=num["plan_mem"],
        gpu=num["plan_gpu"],
        gpu_type=cols["gpu_type"],
    )


#: Most host CPU cores and memory (GB) one task may ask for (a job of up to a hundred such
#: tasks stays within the job table's ranges, see :mod:`clustersim.traces.base`).
_TASK_CPU = MAX_CPU / 100
_TASK_MEM_GB = MAX_MEM_GB / 100


def _check_ranges(
    path: str, lines: IntArray, checks: list[tuple[str, FloatArray, float, str | None]]
) -> None:
    """Raise :class:`TraceError` at the earliest line with a value (not ``nan``) outside
    ``[0, high]``, naming its field (the first check on a tie).

    ``checks`` holds ``(field, values, high, what)``; ``what`` names a derived value in the
    message (default: the field).
    """
    worst: tuple[int, int, str, str] | None = None
    for order, (name, values, high, what) in enumerate(checks):
        with np.errstate(invalid="ignore"):
            bad = ~np.isnan(values) & ~((values >= 0) & (values <= high))
        if not bad.any():
            continue
        rows = np.flatnonzero(bad)
        i = int(rows[np.argmin(lines[rows])])
        key = (int(lines[i]), order)
        if worst is None or key < worst[:2]:
            text = f"{what or name} = {values[i]:g} is out of range (must be within [0, {high:g}])"
            worst = (*key, name, text)
    if worst is not None:
        raise TraceError(path, worst[0], worst[2], worst[3])


def _encode(values: pa.Array) -> tuple[list[str], IntArray]:
    """Distinct values without surrounding spaces (in order of first appearance) and each
    row's index into them."""
    enc = pc.dictionary_encode(values)
    code = np.asarray(enc.indices.to_numpy(zero_copy_only=False), dtype=np.int64)
    raw = [str(x).strip() for x in enc.dictionary.to_pylist()]
    names = list(dict.fromkeys(raw))
    if len(names) == len(raw):
        return names, code
    lookup = np.array([names.index(x) for x in raw], dtype=np.int64)
    return names, lookup[code]


def _status_codes(values: pa.Array, vocab: list[str]) -> IntArray:
    """Index of each status in ``vocab`` (extended with statuses not yet in it)."""
    names, code = _encode(values)
    for s in names:
        if s not in vocab:
            vocab.append(s)
    lookup = np.array([vocab.index(s) for s in names], dtype=np.int64)
    return lookup[code] if len(names) else np.zeros(len(code), dtype=np.int64)


# --------------------------------------------------------------------------------------------
# Grouping tasks into jobs


def _group_codes(values: pa.Array) -> tuple[pa.Array, IntArray]:
    """Distinct values (as written, in order of first appearance) and each row's index into
    them: :func:`pyarrow.compute.dictionary_encode`, without hashing the strings in the usual
    layout (see :func:`_run_codes`)."""
    runs = _run_codes(values)
    if runs is not None:
        return runs
    enc = pc.dictionary_encode(values)
    return enc.dictionary, np.asarray(enc.indices.to_numpy(zero_copy_only=False), dtype=np.int64)


#: Odd 64-bit multipliers of the check hash of :func:`_run_codes`.
_MIX = (np.uint64(0x9E3779B97F4A7C15), np.uint64(0xC2B2AE3D27D4EB4F))


def _run_codes(values: pa.Array) -> tuple[pa.Array, IntArray] | None:
    """:func:`_group_codes` when every value has the same length (up to 64 bytes; PAI job
    names have 24) and equal values are adjacent (the tasks of a job are listed together);
    ``None`` otherwise, or when in doubt.

    Runs of equal values are found by comparing each value with the one before it (8 bytes at
    a time); the values starting the runs must then be distinct. That is checked with a hash:
    equal values have equal hashes, so when the sorted hashes of the runs are distinct, so are
    the runs, and each run is a value of its own, numbered in order. A repeated hash (a value
    listed in two places, or a collision) leaves the answer to the hash table.
    """
    n = len(values)
    if n < 2 or values.null_count or not pa.types.is_string(values.type):
        return None
    offsets = string_offsets(values)
    width = int(offsets[1] - offsets[0])
    if not 0 < width <= 64 or not bool(np.all(np.diff(offsets) == width)):
        return None
    first = int(offsets[0])
    data = np.frombuffer(values.buffers()[2], dtype=np.uint8)[first : first + n * width]
    words = -(-width // 8)
    if width % 8:
        padded = np.zeros((n, words * 8), dtype=np.uint8)
        padded[:, :width] = data.reshape(n, width)
    else:
        padded = data.reshape(n, width)
    block = padded.view(np.uint64)  # (n, words): each value as 64-bit words
    starts = np.empty(n, dtype=bool)
    starts[0] = True
    np.not_equal(block[1:, 0], block[:-1, 0], out=starts[1:])
    for j in range(1, words):
        starts[1:] |= block[1:, j] != block[:-1, j]
    heads = np.flatnonzero(starts)
    firsts = np.take(block, heads, axis=0)
    with np.errstate(over="ignore"):
        digest = np.zeros(len(heads), dtype=np.uint64)
        for j in range(words):
            digest ^= firsts[:, j]
            digest *= _MIX[j % 2]
            digest ^= digest >> np.uint64(29)
    digest.sort()
    if len(digest) > 1 and bool(np.any(digest[1:] == digest[:-1])):
        return None
    code = np.cumsum(starts, dtype=np.int64) - 1
    return values.take(pa.array(heads)), code


@dataclass
class _Agg:
    """Per distinct task ``job_name`` (in order of first appearance)."""

    name: pa.Array
    line: IntArray
    gpu: FloatArray
    cpu: FloatArray
    mem: FloatArray
    first_start: FloatArray
    last_end: FloatArray
    missing_end: npt.NDArray[np.bool_]
    status: IntArray
    type_code: IntArray  # index into type_names; -1 no GPU type, -2 several
    type_names: list[str]


def _aggregate(tasks: _Tasks, vocab: list[str]) -> _Agg:
    names, code = _group_codes(tasks.name)
    m = len(names)
    # Codes number the names in order of first appearance, so when the tasks of each job are
    # adjacent (the usual layout) the codes are already sorted and no reordering is needed.
    grouped = len(code) < 2 or bool(np.all(code[1:] >= code[:-1]))
    order = None if grouped else np.argsort(code, kind="stable")
    sc = code if order is None else code[order]
    bounds = np.flatnonzero(np.r_[True, sc[1:] != sc[:-1]]) if len(sc) else np.zeros(0, np.int64)

    def red(ufunc: np.ufunc, values: np.ndarray) -> np.ndarray:
        if m == 0:
            return values[:0]
        return np.asarray(ufunc.reduceat(values if order is None else values[order], bounds))

    def any_of(mask: npt.NDArray[np.bool_]) -> npt.NDArray[np.bool_]:
        """Per job: whether ``mask`` holds for one of its tasks."""
        out = np.zeros(m, dtype=bool)
        out[code[mask]] = True
        return out

    with np.errstate(invalid="ignore", over="ignore"):
        gpu = tasks.inst * _nan_to_zero(tasks.gpu) / 100.0
        cpu = tasks.inst * _nan_to_zero(tasks.cpu) / 100.0
        mem = tasks.inst * _nan_to_zero(tasks.mem)
    gpu = np.where(np.isnan(gpu), np.inf, gpu)  # inf × 0: a garbage demand, dropped later

    # Job status from its tasks: Failed > Running > Waiting > an unknown status > Terminated.
    status = _status_codes(tasks.status, vocab)
    unknown = status >= len(STATUSES)
    pos = np.arange(len(status))
    job_status = np.full(m, vocab.index("Terminated"), dtype=np.int64)
    if unknown.any():
        first_unknown = red(np.minimum, np.where(unknown, pos, len(pos)))
        has_unknown = first_unknown < len(pos)
        job_status[has_unknown] = status[first_unknown[has_unknown]]
    for s in ("Waiting", "Running", "Failed"):
        job_status[any_of(status == vocab.index(s))] = vocab.index(s)

    # The gpu_type of GPU tasks.
    type_names, tcode = _encode(tasks.gpu_type)
    empty_type = [i for i, t in enumerate(type_names) if not t]
    valid = (gpu > 0) & ~np.isin(tcode, empty_type)
    big = len(type_names) + 1
    tmin = red(np.minimum, np.where(valid, tcode, big))
    tmax = red(np.maximum, np.where(valid, tcode, -1))
    type_code = np.where(tmax < 0, -1, np.where(tmin == tmax, tmin, -2))
    with np.errstate(invalid="ignore"):
        return _Agg(
            name=names,
            # Line numbers increase down the file: a job's first task has its smallest.
            line=(tasks.line if order is None else tasks.line[order])[bounds],
            gpu=red(np.add, gpu),
            cpu=red(np.add, _nan_to_zero(cpu)),
            mem=red(np.add, _nan_to_zero(mem)),
            first_start=red(np.fmin, tasks.start),
            last_end=red(np.fmax, tasks.end),
            missing_end=any_of(np.isnan(tasks.end)),
            status=job_status,
            type_code=type_code.astype(np.int64),
            type_names=type_names,
        )


def _nan_to_zero(values: FloatArray) -> FloatArray:
    """``np.nan_to_num(values, nan=0.0)`` (``nan`` → 0, ``±inf`` → the largest finite
    floats), looking again only at the values that are not finite (``values`` itself when
    every value is)."""
    bad = ~np.isfinite(values)
    if not bad.any():
        return values
    out = values.copy()
    out[bad] = np.nan_to_num(values[bad], nan=0.0)
    return out


@dataclass
class _View:
    """The jobs of the main file: per job its line, task group and job-table data."""

    name: pa.Array
    line: IntArray
    group: IntArray
    status: IntArray
    submit: FloatArray
    user: pa.Array
    dup: npt.NDArray[np.bool_]
    no_task: npt.NDArray[np.bool_]
    #: Whether ``group`` is ``0, 1, 2, ...`` (the jobs are the task groups, in order).
    in_order: bool = False


def _view(
    kind: str, jobs: _Jobs | None, agg: _Agg, vocab: list[str], report: ParseReport, path: str
) -> _View:
    m = len(agg.line)
    if kind == "job":
        assert jobs is not None
        set_jobs_read(report, path, len(jobs.line))
        group = _index_in(jobs.name, agg.name)
        used = np.zeros(m, dtype=bool)
        used[group[group >= 0]] = True
        orphans = np.flatnonzero(~used)
        report.warn("task rows of jobs not in the job table ignored", agg.line[orphans])
        return _View(
            name=jobs.name,
            line=jobs.line,
            group=np.maximum(group, 0),
            in_order=_same_names(jobs.name, agg.name),
            status=_status_codes(jobs.status, vocab),
            submit=jobs.start,
            user=jobs.user,
            dup=_repeats(group),
            no_task=group < 0,
        )
    set_jobs_read(report, path, m)
    report.assume(
        f"one job per job_name of the task table ({len(agg.line)} jobs); a job's line is its "
        "first task line"
    )
    status = agg.status
    submit = np.full(m, np.nan)
    user = pa.repeat(pa.scalar("", pa.string()), m)
    if jobs is not None:
        row = _index_in(agg.name, jobs.name)
        has = row >= 0
        r = pa.array(np.maximum(row, 0))
        if len(jobs.line):
            status = np.where(has, _status_codes(jobs.status, vocab)[np.maximum(row, 0)], status)
            submit = np.where(has, jobs.start[np.maximum(row, 0)], np.nan)
            user = pc.if_else(pa.array(has), jobs.user.take(r), "")
        report.warn("job has no row in the job table: status from its tasks", agg.line[~has])
    return _View(
        name=agg.name,
        line=agg.line,
        group=np.arange(m),
        in_order=True,
        status=status,
        submit=submit,
        user=user,
        dup=np.zeros(m, dtype=bool),
        no_task=np.zeros(m, dtype=bool),
    )


def _same_names(a: pa.Array, b: pa.Array) -> bool:
    """Whether two name columns are equal, value by value (compared without hashing)."""
    return bool(a.equals(b))


def _among(codes: IntArray, wanted: list[int], vocab: list[str]) -> npt.NDArray[np.bool_]:
    """Whether each code (an index into ``vocab``) is one of ``wanted``."""
    table = np.zeros(len(vocab), dtype=bool)
    table[wanted] = True
    return table[codes]


def _index_in(values: pa.Array, value_set: pa.Array) -> IntArray:
    """Index of each value in ``value_set`` (first match), -1 where absent.

    One of the two is always the distinct job names of the task table, so when the two are
    equal (the job and task tables list the jobs in the same order) value ``i`` is at index
    ``i``, and nothing is hashed.
    """
    if _same_names(values, value_set):
        return np.arange(len(values), dtype=np.int64)
    idx = pc.index_in(values, value_set=value_set)
    return np.asarray(idx.fill_null(-1).to_numpy(zero_copy_only=False), dtype=np.int64)


def _repeats(group: IntArray) -> npt.NDArray[np.bool_]:
    """True for job rows whose task group (``>= 0``) an earlier row already has: a repeated
    ``job_name`` (repeats without tasks are dropped for that reason anyway)."""
    out = np.zeros(len(group), dtype=bool)
    has = np.flatnonzero(group >= 0)
    if len(has):
        _, first = np.unique(group[has], return_index=True)
        out[has] = True
        out[has[first]] = False
    return out


# --------------------------------------------------------------------------------------------
# GPU types


def _type_tables(names: list[str]) -> tuple[FloatArray, np.ndarray]:
    """Speed and table name per type code (index ``-1``/``-2``: no type → 1.0 and ``""``)."""
    catalog = load_catalog()
    speeds, out = [], []
    for t in names:
        acc = catalog.resolve(t) if t else None
        out.append(acc.name if acc is not None else t)
        speeds.append((reference_speed(acc.name) or 1.0) if acc is not None else 1.0)
    # Codes -2 and -1 index the two trailing "no type" entries.
    return (
        np.array([*speeds, 1.0, 1.0], dtype=np.float64),
        np.array([*out, "", ""], dtype=object),
    )


def _report_types(
    names: list[str], code: IntArray, lines: IntArray, constrain: bool, report: ParseReport
) -> None:
    catalog = load_catalog()
    counts = np.bincount(code[code >= 0], minlength=len(names)) if len(names) else np.zeros(0)
    unmapped = {
        t: int(c) for t, c in zip(names, counts, strict=True) if c and not catalog.resolve(t)
    }
    if unmapped:
        why = {normalize_name(u): w for u, w in UNMAPPED.items()}
        notes = sorted({why[normalize_name(u)] for u in unmapped if normalize_name(u) in why})
        listed = ", ".join(f"{k} {v}" for k, v in sorted(unmapped.items()))
        bad = [i for i, t in enumerate(names) if t in unmapped]
        report.warn(
            f"gpu_type names not in the catalog, kept as written (jobs per name: {listed}"
            + (f"; {'; '.join(notes)}" if notes else "")
            + "): work = run time; such jobs run only on a cluster with a type of that name"
            + ("" if constrain else " (not constrained: gpu_constraint=False)"),
            lines[np.isin(code, bad)],
        )
    mapped = []
    for t, c in zip(names, counts, strict=True):
        acc = catalog.resolve(t) if c else None
        if acc is not None and acc.name != t:
            mapped.append(f"{t}→{acc.name}")
    if mapped:
        report.assume("gpu_type mapped to catalog types: " + ", ".join(sorted(mapped)))
    report.assume(
        "work = run time × speed of the job's gpu_type relative to the reference type (the type "
        "its tasks ran on); jobs without a known type: run time in reference seconds"
    )
    if constrain:
        report.assume("gpu_type constraint = the type the job ran on (gpu_constraint=False: none)")
    else:
        report.assume("gpu_type only converts run times (gpu_constraint=False): jobs run anywhere")


def _statuses(value: Any, path: str) -> list[str]:
    out = name_list_option(value, path, "statuses", "job statuses")
    return list(DEFAULT_STATUSES) if out is None else out


def _clock(origin: float) -> str:
    """``"Tue 14:03:05"``: weekday and clock time of raw time ``origin`` in UTC+8, or ``""``."""
    if not math.isfinite(origin):
        return ""
    try:
        stamp = datetime.fromtimestamp(origin, TRACE_TZ)
    except (OverflowError, OSError, ValueError):
        return ""
    return stamp.strftime("%a %H:%M:%S")
