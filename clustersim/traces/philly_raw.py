"""Microsoft Philly raw job log (``cluster_job_log``), streamed with bounded memory.

Format (``philly-traces`` README, schema copied in ``shared/data/traces/philly/``): one JSON
list of job objects::

    [{"status": "Pass", "vc": "ee9e8c", "jobid": "application_1506638472019_14199",
      "submitted_time": "2017-10-07 01:11:39", "user": "ce2f4c",
      "attempts": [{"start_time": "2017-10-07 01:12:09", "end_time": "2017-10-07 01:13:23",
                    "detail": [{"ip": "m47", "gpus": ["gpu0", "gpu1"]}]}, ...]}, ...]

``status`` is ``Pass``, ``Killed`` or ``Failed``; times are ``YYYY-MM-DD HH:MM:SS`` without
a time zone, and a missing time is ``null``, ``"None"`` (as in the published file) or ``""``.
A file of one job object per line (JSON Lines) is read too. The real file is 6.6 GB, so it is
never loaded whole: the reader decodes one job object at a time from a sliding window of the
(possibly compressed, see :mod:`clustersim.traces.compressed`) input; memory is the window
(a few MB) plus the output columns. One job object may not be longer than the read's
``max_line_bytes`` limit (see :mod:`clustersim.traces.limits`; characters of its text, which
may span lines or share one with other objects).

Mapping to the job table
------------------------
- ``job_id``: ``jobid``; ``user``, ``vc``: as written (``""`` when missing or ``null``);
- ``submit_time``: ``submitted_time``, re-based so that the earliest kept job arrives at 0
  (the report's ``start_time`` holds that calendar time);
- an attempt is *complete* when it has both a start and an end time. ``work`` is, with the
  option ``work="sum"`` (default), the sum of the run times (end − start) of the complete
  attempts — a retried job is charged for every try, as Gavel's and Synergy's Philly parsers
  do with ``sum_attempts``; with ``work="last"``, the run time of the last complete attempt
  only (retries restart from scratch). Run times are in reference seconds: multiplied by the
  option ``speed`` (default 1: the Philly GPUs — mostly P100 — taken as the reference type);
- ``num_gpus``: the GPUs of the last complete attempt used, summed over its machines
  (``detail[].gpus``). An attempt's gang rarely differs from the others'; that is a warning;
- ``status`` chooses what happens to killed and failed jobs: the option ``statuses``
  (default ``("Pass", "Killed", "Failed")``, compared without case) lists the statuses whose
  jobs are kept; killed and failed jobs are then simulated for the time they actually ran.
  Other jobs are dropped, with one reason per status.

Rows are dropped (one reason each, checked in this order) when the job has no submit time, its
status is not selected, it has no attempt, its last attempt started but has no end (still
running when the log was taken), no attempt is complete, its attempts end before they start,
its run time is zero, or its attempt used no GPU (or implausibly many). Kept jobs get warnings
for incomplete or backwards attempts that were ignored, gangs that changed between attempts, a
first start before the submit time, and duplicate job ids.

Errors
------
A job's line is the line where its object starts (its ``{``). Invalid JSON, a job that is not
an object, a missing key (``jobid``, ``status``, ``submitted_time``, ``attempts``), a value of
the wrong type or a time of another form fail the file at that job's line; the message says
where in the object, and for invalid JSON the exact line and column.
"""

from __future__ import annotations

import codecs
import json
import math
import os
import re
from array import array
from collections import Counter
from collections.abc import Iterator
from datetime import datetime
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from clustersim.errors import TraceError
from clustersim.jobs import JobTable
from clustersim.traces.base import (
    MAX_GPUS,
    ParseReport,
    TraceReader,
    build_table,
    check_options,
)
from clustersim.traces.compressed import Source, bytes_source, open_source
from clustersim.traces.limits import ReadLimits

#: Statuses of the published log, in the order reports list them.
STATUSES = ("Pass", "Killed", "Failed")
WORK_MODES = ("sum", "last")
#: Bytes decoded per read from the input.
BLOCK_CHARS = 1 << 20
#: Characters decoded ahead of a value before trying to decode it (at most a block).
_AHEAD = 1 << 16
#: A JSON error this many characters before the end of the window is not caused by the
#: window cutting the object short (only strings run long, and the decoder reports an
#: unterminated string as such).
_TAIL = 256

_MISSING = (None, "None", "", "null")
_fromisoformat = datetime.fromisoformat
_EPOCH = datetime(1970, 1, 1)
_WHITESPACE = re.compile(r"[ \t\n\r]*")
_BOM = "\ufeff"

# Drop reasons, in the order they are checked.
_NO_SUBMIT = "no submitted_time"
_NO_ATTEMPT = "no attempts"
_RUNNING = "still running when the log was taken (last attempt has no end_time)"
_INCOMPLETE = "no attempt with both start_time and end_time"
_BACKWARDS = "end_time before start_time"
_ZERO = "zero run time"
_NO_GPU = "no GPU in the attempt's detail"
_HUGE = f"more than {MAX_GPUS} GPUs"

# Warnings about kept jobs.
_W_IGNORED = "attempts without start_time or end_time ignored"
_W_BACKWARDS = "attempts ending before they start ignored"
_W_GANG = "GPU count differs between attempts (the last complete attempt's count used)"
_W_EARLY = "first attempt starts before submitted_time (kept)"
_W_DUPLICATE = "job id appears more than once (kept)"


class PhillyRawReader(TraceReader):
    """Reader of the raw Philly ``cluster_job_log`` JSON (streamed)."""

    name: ClassVar[str] = "philly_raw"
    description: ClassVar[str] = (
        "Microsoft Philly raw cluster_job_log (JSON list of jobs with attempts; streamed, any size)"
    )

    def sniff(self, head: bytes, filename: str) -> bool:
        """True when the head is a JSON list (or lines) of objects with Philly job keys."""
        text = head.decode("utf-8", errors="replace").lstrip(_BOM + " \t\r\n")
        return (
            text[:1] in ("[", "{")
            and '"jobid"' in text
            and ('"attempts"' in text or '"submitted_time"' in text)
        )

    def read(
        self, path: str | os.PathLike[str], *, limits: ReadLimits | None = None, **options: Any
    ) -> tuple[JobTable, ParseReport]:
        """Stream a (possibly compressed) job log within ``limits``; options as for
        :meth:`parse`."""
        name = os.fspath(path)
        member = options.pop("member", None)
        settings = _settings(self, name, options)
        with open_source(name, member, limits, streamed=True) as source:
            report = ParseReport(format=self.name, path=name)
            where = source.info.describe()
            if where:
                report.assume(f"read the {where}")
            return _parse(source, name, report, *settings)

    def parse(
        self, data: bytes, path: str, *, limits: ReadLimits | None = None, **options: Any
    ) -> tuple[JobTable, ParseReport]:
        """Parse a job log held in memory.

        Parameters
        ----------
        data, path, limits
            See :meth:`TraceReader.parse`.
        statuses : sequence of str, optional
            Statuses whose jobs are kept (default ``("Pass", "Killed", "Failed")``).
        work : {"sum", "last"}, optional
            Run time of a job: all complete attempts (default) or the last one.
        speed : float, optional
            Speed of the trace's GPUs relative to the reference type (default 1).
        """
        settings = _settings(self, path, options)
        report = ParseReport(format=self.name, path=path)
        return _parse(bytes_source(data, path, limits), path, report, *settings)


def _settings(
    reader: TraceReader, path: str, options: dict[str, Any]
) -> tuple[tuple[str, ...], str, float]:
    check_options(reader, path, options, {"statuses", "work", "speed"})
    statuses = options.get("statuses", STATUSES)
    if not isinstance(statuses, list | tuple | set | frozenset) or not all(
        isinstance(s, str) for s in statuses
    ):
        raise TraceError(path, 0, "statuses", "statuses must be a list of status names")
    work = options.get("work", "sum")
    if work not in WORK_MODES:
        raise TraceError(path, 0, "work", f"work must be one of {WORK_MODES}, got {work!r}")
    speed = options.get("speed", 1.0)
    if not isinstance(speed, int | float) or not math.isfinite(speed) or speed <= 0:
        raise TraceError(path, 0, "speed", f"speed must be a positive number, got {speed!r}")
    return tuple(s.strip().lower() for s in statuses), work, float(speed)


# --------------------------------------------------------------------------------------------
# Streaming the JSON


class JsonObjects:
    """The top-level values of a JSON list (or of JSON Lines), decoded one at a time.

    Parameters
    ----------
    source
        The decompressed bytes (its ``limits.max_line_bytes`` bounds the characters of one
        value).
    path
        For errors.
    block_chars
        Bytes decoded per read (default :data:`BLOCK_CHARS`).

    Notes
    -----
    Iterating yields ``(line, value)``: the 1-based line where the value starts and the value.
    The window holds at most the current value plus two blocks.
    """

    def __init__(self, source: Source, path: str, block_chars: int | None = None) -> None:
        self._source = source
        self.path = path
        self._block = block_chars or BLOCK_CHARS
        self._decoder = codecs.getincrementaldecoder("utf-8")("strict")
        self._buf = ""
        self._pos = 0  # next character to look at
        self._line = 1  # line number at _line_pos
        self._line_pos = 0
        self._eof = False
        self._started = False
        self._pending_cr = False
        self._lines_read = 0  # line ends in all text decoded so far
        self._scan = json.JSONDecoder().raw_decode
        self._limits = source.limits
        self._longest = source.limits.max_line_bytes

    # -- the window ----------------------------------------------------------------------

    def _fill(self, size: int = 0) -> bool:
        """Decode the next block (or ``size`` bytes) onto the window; False at the end."""
        if self._eof:
            return False
        raw = self._source.read(max(size, self._block))
        try:
            text = self._decoder.decode(raw, final=not raw)
        except UnicodeDecodeError as exc:
            good = bytes(exc.object[: exc.start]).decode("utf-8", errors="replace")
            line = self._lines_read + 1 + good.count("\n") + good.count("\r")
            raise TraceError(
                self.path, line, "", f"not UTF-8 text (byte 0x{exc.object[exc.start]:02x})"
            ) from None
        if not raw:
            self._eof = True
        if not self._started and (text or self._eof):
            text = text.removeprefix(_BOM)
            self._started = True
        if self._pending_cr:
            text = "\r" + text
            self._pending_cr = False
        if text.endswith("\r") and not self._eof:
            text, self._pending_cr = text[:-1], True
        if "\r" in text:
            text = text.replace("\r\n", "\n").replace("\r", "\n")
        nul = text.find("\x00")
        if nul >= 0:
            raise TraceError(
                self.path,
                self._lines_read + 1 + text.count("\n", 0, nul),
                "",
                "binary content (NUL byte): not a text trace",
            )
        self._lines_read += text.count("\n")
        if self._pos > 0:  # drop what was consumed
            self._line += self._buf.count("\n", self._line_pos, self._pos)
            self._buf = self._buf[self._pos :]
            self._pos = self._line_pos = 0
        self._buf += text
        return bool(text) or not self._eof

    def line_at(self, pos: int) -> int:
        """Line number of window position ``pos`` (never before the last one asked for)."""
        self._line += self._buf.count("\n", self._line_pos, pos)
        self._line_pos = pos
        return self._line

    def _peek(self) -> str:
        """The next non-blank character ("" at the end), skipping whitespace."""
        while True:
            end = _WHITESPACE.match(self._buf, self._pos)
            assert end is not None  # the pattern matches the empty string
            self._pos = end.end()
            if self._pos < len(self._buf):
                return self._buf[self._pos]
            if not self._fill() and self._pos >= len(self._buf):
                return ""

    def _describe_next(self) -> str:
        text = self._buf[self._pos : self._pos + 20]
        return repr(text.split("\n", 1)[0]) if text else "the end of the file"

    # -- values --------------------------------------------------------------------------

    def _value(self) -> tuple[int, Any]:
        """Decode the value at the current position."""
        start_line = self.line_at(self._pos)
        ahead = min(_AHEAD, self._block)
        while len(self._buf) - self._pos < ahead and self._fill():
            pass
        while True:
            try:
                value, end = self._scan(self._buf, self._pos)
                break
            except json.JSONDecodeError as exc:
                near_end = len(self._buf) - exc.pos < _TAIL or exc.msg.startswith(
                    "Unterminated string"
                )
                if near_end and not self._eof:
                    if len(self._buf) - self._pos > self._longest:
                        raise self._too_long(start_line) from None
                    self._fill(len(self._buf) - self._pos)  # doubles the window: linear time
                    continue
                line = start_line + self._buf.count("\n", self._pos, exc.pos)
                col = exc.pos - self._buf.rfind("\n", 0, exc.pos)
                cut = " (the file ends inside this object: truncated?)" if near_end else ""
                raise TraceError(
                    self.path,
                    start_line,
                    "",
                    f"invalid JSON: {exc.msg} at line {line} column {col}{cut}",
                ) from None
            except RecursionError:
                raise TraceError(self.path, start_line, "", "JSON nested too deeply") from None
            except ValueError as exc:  # e.g. integers longer than Python converts
                raise TraceError(self.path, start_line, "", f"invalid JSON value: {exc}") from None
        if end - self._pos > self._longest:
            raise self._too_long(start_line)
        self._pos = end
        return start_line, value

    def _too_long(self, line: int) -> TraceError:
        what = "job object (or invalid JSON) longer than the limit"
        return self._limits.exceeded("max_line_bytes", self.path, line, "", what)

    def __iter__(self) -> Iterator[tuple[int, Any]]:
        first = self._peek()
        if first == "":
            raise TraceError(self.path, 0, "", "empty file")
        if first == "{":  # JSON Lines: values one after the other
            while self._peek() != "":
                yield self._value()
            return
        if first != "[":
            raise TraceError(
                self.path,
                self.line_at(self._pos),
                "",
                f"not a JSON list of job objects: expected '[', found {self._describe_next()}",
            )
        self._pos += 1
        if self._peek() == "]":
            self._pos += 1
        else:
            while True:
                if self._peek() == "":
                    raise TraceError(
                        self.path,
                        self.line_at(self._pos),
                        "",
                        "the file ends inside the job list (truncated?)",
                    )
                yield self._value()
                sep = self._peek()
                if sep == ",":
                    self._pos += 1
                elif sep == "]":
                    self._pos += 1
                    break
                elif sep == "":
                    raise TraceError(
                        self.path,
                        self.line_at(self._pos),
                        "",
                        "the file ends before the job list is closed with ']' (truncated?)",
                    )
                else:
                    raise TraceError(
                        self.path,
                        self.line_at(self._pos),
                        "",
                        f"invalid JSON: expected ',' or ']' after a job, found "
                        f"{self._describe_next()}",
                    )
        if self._peek() != "":
            raise TraceError(
                self.path,
                self.line_at(self._pos),
                "",
                f"unexpected {self._describe_next()} after the end of the job list",
            )


# --------------------------------------------------------------------------------------------
# Jobs


def _type_name(value: object) -> str:
    return {
        dict: "an object",
        list: "a list",
        str: "a string",
        bool: "a boolean",
        int: "a number",
        float: "a number",
        type(None): "null",
    }.get(type(value), type(value).__name__)


def _wrong_type(path: str, line: int, field: str, expected: str, value: object) -> TraceError:
    """The error for a JSON value of the wrong type (``expected``: what should be there)."""
    return TraceError(path, line, field, f"expected {expected}, found {_type_name(value)}")


def _seconds(value: object, path: str, line: int, field: str, attempt: int = -1) -> float | None:
    """Seconds since 1970 of a time value; ``None`` when the value marks a missing time.

    ``field`` is the key; ``attempt`` the index of the attempt it belongs to (-1: the job).
    """
    if (
        type(value) is str
        and len(value) == 19
        and value[13] == ":"
        and value[16] == ":"
        and value[10] in " T"
    ):
        try:
            return (_fromisoformat(value) - _EPOCH).total_seconds()
        except ValueError:
            pass
    elif value in _MISSING:
        return None
    where = field if attempt < 0 else f"attempts[{attempt}].{field}"
    if not isinstance(value, str):
        raise _wrong_type(path, line, where, "a time string or null", value)
    text = value if len(value) <= 40 else value[:40] + "…"
    raise TraceError(path, line, where, f"not a time of the form YYYY-MM-DD HH:MM:SS: {text!r}")


def _text(job: dict[str, Any], key: str, path: str, line: int, required: bool) -> str:
    value = job.get(key)
    if type(value) is str:
        return value
    if key not in job:
        if required:
            raise TraceError(path, line, key, "missing key in the job object")
        return ""
    value = job[key]
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    raise _wrong_type(path, line, key, "a string", value)


def _bad_detail(detail: list[Any], path: str, line: int, k: int) -> None:
    """Raise at the first machine of ``detail`` that is not ``{"ip": ..., "gpus": [...]}``."""
    for m, machine in enumerate(detail):
        if type(machine) is not dict:
            raise _wrong_type(path, line, f"attempts[{k}].detail[{m}]", "a machine object", machine)
        devices = machine.get("gpus")
        if devices is not None and type(devices) is not list:
            raise _wrong_type(path, line, f"attempts[{k}].detail[{m}].gpus", "a list", devices)


class _Columns:
    """The kept jobs' columns and the drop and warning tallies, built one job at a time."""

    def __init__(self) -> None:
        self.job_id: list[str] = []
        self.user: list[str] = []
        self.vc: list[str] = []
        self.submit = array("d")
        self.work = array("d")
        self.gpus = array("q")
        self.lines = array("q")
        self.drops: dict[str, array[int]] = {}
        self.warnings: dict[str, array[int]] = {}
        self.status_counts: dict[str, int] = {}
        self._names: dict[str, str] = {}

    def intern(self, text: str) -> str:
        """One string object per distinct user / vc name."""
        return self._names.setdefault(text, text)

    def drop(self, reason: str, line: int) -> None:
        self.drops.setdefault(reason, array("q")).append(line)

    def warn(self, message: str, line: int) -> None:
        self.warnings.setdefault(message, array("q")).append(line)


def _job(job: Any, line: int, path: str, keep: tuple[str, ...], mode: str, out: _Columns) -> None:
    """Check one job object and add it to ``out`` (kept, or dropped with a reason)."""
    if not isinstance(job, dict):
        raise _wrong_type(path, line, "", "a job object", job)
    jobid = _text(job, "jobid", path, line, True)
    status = _text(job, "status", path, line, True)
    user = _text(job, "user", path, line, False)
    vc = _text(job, "vc", path, line, False)
    if "submitted_time" not in job:
        raise TraceError(path, line, "submitted_time", "missing key in the job object")
    submit = _seconds(job["submitted_time"], path, line, "submitted_time")
    if "attempts" not in job:
        raise TraceError(path, line, "attempts", "missing key in the job object")
    attempts = job["attempts"]
    if attempts is None:
        attempts = []
    if not isinstance(attempts, list):
        raise _wrong_type(path, line, "attempts", "a list", attempts)

    # Every attempt is checked (types, times) before the job is judged.
    runs: list[tuple[float, float, int]] = []  # complete attempts: start, end, gpus
    ignored = False
    first_start: float | None = None
    last_started_open = False
    for k, attempt in enumerate(attempts):
        if type(attempt) is not dict:
            raise _wrong_type(path, line, f"attempts[{k}]", "an attempt object", attempt)
        start = _seconds(attempt.get("start_time"), path, line, "start_time", k)
        end = _seconds(attempt.get("end_time"), path, line, "end_time", k)
        detail = attempt.get("detail")
        gpus = 0
        if type(detail) is list:
            for machine in detail:
                devices = machine.get("gpus") if type(machine) is dict else False
                if type(devices) is list:
                    gpus += len(devices)
                elif devices is not None:
                    _bad_detail(detail, path, line, k)
        elif detail is not None:
            raise _wrong_type(path, line, f"attempts[{k}].detail", "a list", detail)
        if start is not None and first_start is None:
            first_start = start
        if start is not None and end is not None:
            runs.append((start, end, gpus))
        else:
            ignored = True
        last_started_open = start is not None and end is None

    # Drops, in the documented order.
    out.status_counts[status] = out.status_counts.get(status, 0) + 1
    reason = ""
    if submit is None:
        reason = _NO_SUBMIT
    elif status.strip().lower() not in keep:
        reason = f"status {status!r} not selected"
    elif not attempts:
        reason = _NO_ATTEMPT
    elif last_started_open:
        reason = _RUNNING
    elif not runs:
        reason = _INCOMPLETE
    if not reason:
        forward = [r for r in runs if r[1] >= r[0]]
        if mode == "last":
            forward = forward[-1:] if runs[-1][1] >= runs[-1][0] else []
        if not forward:
            reason = _BACKWARDS
        else:
            work = sum(end - start for start, end, _ in forward)
            gpus = forward[-1][2]
            if work <= 0:
                reason = _ZERO
            elif gpus < 1:
                reason = _NO_GPU
            elif gpus > MAX_GPUS:
                reason = _HUGE
    if reason:
        out.drop(reason, line)
        return
    assert submit is not None and first_start is not None
    if ignored:
        out.warn(_W_IGNORED, line)
    if mode == "sum" and len(forward) < len(runs):
        out.warn(_W_BACKWARDS, line)
    if any(r[2] != gpus for r in runs):
        out.warn(_W_GANG, line)
    if first_start < submit:
        out.warn(_W_EARLY, line)
    out.job_id.append(jobid)
    out.user.append(out.intern(user))
    out.vc.append(out.intern(vc))
    out.submit.append(submit)
    out.work.append(work)
    out.gpus.append(gpus)
    out.lines.append(line)


def _repeated(ids: list[str]) -> npt.NDArray[np.bool_]:
    """(n,) bool: ids that occur more than once.

    Compares hashes first (8 bytes a job), then only the strings whose hashes collide.
    """
    hashes = np.fromiter(map(hash, ids), dtype=np.int64, count=len(ids))
    order = np.argsort(hashes, kind="stable")
    same = hashes[order[1:]] == hashes[order[:-1]]
    out = np.zeros(len(ids), dtype=bool)
    if not same.any():
        return out
    maybe = np.union1d(order[1:][same], order[:-1][same])
    counts = Counter(ids[i] for i in maybe)
    out[maybe] = [counts[ids[i]] > 1 for i in maybe]
    return out


def _parse(
    source: Source,
    path: str,
    report: ParseReport,
    keep: tuple[str, ...],
    mode: str,
    speed: float,
) -> tuple[JobTable, ParseReport]:
    out = _Columns()
    read = 0
    most = source.limits.max_rows
    for line, job in JsonObjects(source, path):
        read += 1
        if read > most:
            what = "more job objects than the limit"
            raise source.limits.exceeded("max_rows", path, line, "", what)
        _job(job, line, path, keep, mode, out)
    report.jobs_read = read

    fixed = [_NO_SUBMIT]
    status_reasons = sorted(r for r in out.drops if r.startswith("status "))
    rest = [_NO_ATTEMPT, _RUNNING, _INCOMPLETE, _BACKWARDS, _ZERO, _NO_GPU, _HUGE]
    for reason in [*fixed, *status_reasons, *rest]:
        if reason in out.drops:
            report.drop(reason, np.frombuffer(out.drops[reason], dtype=np.int64))
    for message in (_W_IGNORED, _W_BACKWARDS, _W_GANG, _W_EARLY):
        if message in out.warnings:
            report.warn(message, np.frombuffer(out.warnings[message], dtype=np.int64))

    lines = np.frombuffer(out.lines, dtype=np.int64)
    submit_abs = np.frombuffer(out.submit, dtype=np.float64)
    job_id = np.array(out.job_id, dtype=object)
    report.warn(_W_DUPLICATE, lines[_repeated(out.job_id)])
    if len(job_id):
        origin = float(submit_abs.min())
        report.start_time = str(np.datetime64(int(origin), "s"))
        report.assume(
            f"submit times re-based: t = 0 is the earliest kept submitted_time "
            f"{report.start_time}; times carry no time zone and are used as written (if they "
            "are US Pacific local time, gaps spanning the 2017-11-05 DST change are off by one "
            "hour)"
        )
    else:
        origin = 0.0
    names = [{s.lower(): s for s in STATUSES}.get(k, k) for k in keep]
    unfinished = [n for n in names if n in ("Killed", "Failed")]
    fate = (
        f"{' and '.join(unfinished)} jobs are simulated for the time they actually ran"
        if unfinished
        else "killed and failed jobs are dropped"
    )
    counts_text = ", ".join(f"{k}: {v}" for k, v in sorted(out.status_counts.items())) or "none"
    report.assume(
        f"statuses kept: {', '.join(names) or 'none'} (jobs by status: {counts_text}); {fate} "
        "(choose with the statuses option)"
    )
    if mode == "sum":
        report.assume(
            "work = sum of the run times (end - start) of a job's complete attempts: every "
            "retry is charged (option work='last' keeps only the last attempt's run time)"
        )
    else:
        report.assume(
            "work = run time (end - start) of a job's last complete attempt: earlier attempts "
            "are taken as lost (option work='sum' charges every attempt)"
        )
    report.assume("num_gpus = GPUs of the last complete attempt, summed over its machines")
    report.assume(
        f"run times measured on Philly GPUs (mostly P100) x speed {speed:g} = reference "
        "seconds on P100; no job types in this trace"
    )
    work = np.frombuffer(out.work, dtype=np.float64) * speed
    table = build_table(
        path,
        report,
        lines,
        {"submit_time": "submitted_time", "work": "attempts", "num_gpus": "attempts"},
        job_id=job_id,
        submit_time=submit_abs - origin,
        num_gpus=np.frombuffer(out.gpus, dtype=np.int64),
        work=work,
        user=np.array(out.user, dtype=object),
        vc=np.array(out.vc, dtype=object),
    )
    return table, report
