"""Generic delimited text with a user-given column mapping and units (format ``"csv"``).

>>> read_trace("jobs.csv", "csv",
...            mapping={"submit_time": "arrival", "num_gpus": "gpus", "work": "runtime_min"},
...            units={"work": "min"})                                   # doctest: +SKIP

The file has a header line; one row a job. Columns are found by the names in ``mapping``
(job-table column → header name; matched exactly after trimming spaces and one pair of
enclosing double quotes, else without regard to case). A job-table column that is not in
``mapping`` is read from a header column of the same name when there is one, so a file whose
header already uses the job-table names needs no mapping. Spaces around values are ignored.
Fields are not quoted (see :mod:`clustersim.traces.base`): a value wrapped in one pair of
double quotes is unwrapped, but a separator inside quotes still separates.

Detection: a comma-separated file whose header names ``submit_time``, ``num_gpus`` and
``work`` is recognised as this format; anything else needs ``format="csv"``. The reader is
registered last, so every specific format wins.

Columns (keys of ``mapping``)
-----------------------------
Required: ``submit_time``, ``num_gpus``, and ``work`` or both ``start_time`` and
``end_time`` (then ``work = end - start``). Optional: ``job_id`` (default: the 0-based index
of the data row), ``user``, ``vc``, ``job_type``, ``gpu_type``, ``priority`` (integers),
``deadline`` (a time on the same clock as ``submit_time``), ``cpu``, ``mem_gb``,
``min_gpus``, ``max_gpus`` (blank: ``num_gpus``), and ``status`` (see the ``statuses``
option). Blank optional values are missing values.

Times and units
---------------
``submit_time``, ``start_time``, ``end_time`` and ``deadline`` share one clock. Each is read
according to ``time_format`` (one value for all, or a dict by column):

- ``"number"``: relative times, a number in the column's unit (default s), used as written
  (a trace that starts at 1000 s keeps its first second-1000 arrival; negative submit
  times are dropped);
- ``"unix"``: seconds (or the column's unit) since 1970-01-01 UTC — calendar times;
- ``"iso"``: ``YYYY-MM-DD HH:MM:SS`` (or with a ``T``), without time zone — calendar times;
- any other text: a ``strptime`` pattern such as ``"%d/%m/%Y %H:%M"`` — calendar times
  (``%z`` offsets are converted to UTC);
- ``None`` (default): ``"number"`` when the column's first value is a number, else
  ``"iso"``.

Calendar times are re-based so that the earliest kept job arrives at 0 (the report's
``start_time`` holds that time). Calendar and relative times cannot be mixed.

``units`` maps a column to its unit: time columns and ``work`` take ``s``, ``ms``, ``us``,
``min``, ``h``, ``d`` (default ``s``); ``work`` may also be ``steps`` (training iterations
of a known job type, used as written). Durations become reference seconds as
``work × unit × speed`` (option ``speed``, default 1: the trace's GPUs taken as the reference
type). ``num_gpus``, ``min_gpus`` and ``max_gpus`` take ``count`` (default), ``percent``
(100 = one device, as Alibaba's ``plan_gpu``) or ``milli`` (1000 = one device); the result
must be a whole number. ``cpu`` takes ``cores`` (default), ``percent`` or ``milli``;
``mem_gb`` takes ``GB`` (default), ``MB``, ``KB``, ``B``, ``GiB``, ``MiB``, ``KiB``, ``TB``.

Other options: ``sep`` (one character, default ``","``), ``statuses`` (status values whose
jobs are kept, compared without case; default: all), ``speed``. Large files are read in
chunks with bounded memory (the input, possibly compressed, is never loaded whole).

Rows are dropped when their status is not selected, the submit time is negative or not
finite, the gang size is below 1, fractional or implausibly large, a bound is not a device
count, the elastic range does not contain the gang size (``min_gpus > num_gpus`` or
``max_gpus < num_gpus``, each counted under its own reason, :data:`BOUNDS_REASON`), or the
work (or ``end - start``) is missing, not positive or not finite.
"""

from __future__ import annotations

import math
import os
from abc import abstractmethod
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar

import numpy as np
import numpy.typing as npt

from clustersim.errors import TraceError
from clustersim.jobs import JobTable
from clustersim.traces.arrow import pa, pc
from clustersim.traces.base import (
    MAX_GPUS,
    BoolArray,
    ColumnParser,
    DelimitedText,
    FloatArray,
    IntArray,
    ParseReport,
    TraceReader,
    apply_checks,
    blank,
    build_table,
    check_options,
    checked_header,
    gpu_checks,
    head_lines,
    int_ids,
    is_numbers,
    numbers_of,
    set_jobs_read,
    to_datetime,
    to_float,
    trim,
)
from clustersim.traces.compressed import bytes_source, open_source, text_chunks
from clustersim.traces.limits import ReadLimits

#: Job-table columns a mapping may name, plus the helper columns ``start_time``,
#: ``end_time`` and ``status``.
FIELDS = (
    "job_id",
    "submit_time",
    "num_gpus",
    "work",
    "start_time",
    "end_time",
    "user",
    "vc",
    "job_type",
    "gpu_type",
    "priority",
    "deadline",
    "cpu",
    "mem_gb",
    "min_gpus",
    "max_gpus",
    "status",
)
TIME_FIELDS = ("submit_time", "start_time", "end_time", "deadline")
TEXT_FIELDS = ("user", "vc", "job_type", "gpu_type")
TIME_UNITS = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "min": 60.0, "h": 3600.0, "d": 86400.0}
COUNT_UNITS = {"count": 1.0, "percent": 0.01, "milli": 0.001}
CPU_UNITS = {"cores": 1.0, "percent": 0.01, "milli": 0.001}
MEM_UNITS = {
    "GB": 1.0,
    "MB": 1e-3,
    "KB": 1e-6,
    "B": 1e-9,
    "TB": 1e3,
    "GiB": 2**30 / 1e9,
    "MiB": 2**20 / 1e9,
    "KiB": 2**10 / 1e9,
}
#: Units each column accepts.
UNITS: dict[str, dict[str, float]] = {
    **{f: TIME_UNITS for f in TIME_FIELDS},
    "work": {**TIME_UNITS, "steps": 1.0, "iterations": 1.0},
    "num_gpus": COUNT_UNITS,
    "min_gpus": COUNT_UNITS,
    "max_gpus": COUNT_UNITS,
    "cpu": CPU_UNITS,
    "mem_gb": MEM_UNITS,
}
TIME_FORMATS = ("number", "unix", "iso")
#: Drop reason of a row whose elastic bound contradicts its gang size (``key``: ``min_gpus``
#: with ``side`` ``>``, or ``max_gpus`` with ``<``).
BOUNDS_REASON = "{key} {side} num_gpus: elastic bounds contradict the gang size"
SEPARATORS = (",", "\t", ";", "|")

_NOT_ISO = "not a time of the form YYYY-MM-DD HH:MM:SS"
_Values = TypeVar("_Values", FloatArray, npt.NDArray[np.datetime64])


# --------------------------------------------------------------------------------------------
# Helpers shared with the other chunked CSV readers


@dataclass
class Block:
    """A run of data rows of a delimited file, split into string columns.

    Attributes
    ----------
    lines : (m,) int64
        Line number of each row in the file.
    first_row : int
        0-based index of the block's first row among the file's data rows.
    cols : dict of str to pyarrow.StringArray
        Values by header name, as written.
    quoted : bool
        Whether some field may be wrapped in double quotes.
    """

    lines: IntArray
    first_row: int
    cols: dict[str, pa.Array]
    quoted: bool = True

    def column(self, name: str, text: bool = False) -> pa.Array:
        """Column ``name``, unwrapped from enclosing double quotes.

        Text columns (``text=True``) and quoted values are trimmed of surrounding spaces;
        numbers and times are trimmed by :class:`LenientParser` only when they need it.
        """
        values = self.cols[name]
        if is_numbers(values):
            return values
        if self.quoted:
            values = pc.replace_substring_regex(trim(values), r'^"(.*)"$', r"\1")
            text = True
        return trim(values) if text else values


class DelimitedChunks:
    """A header line and the data rows of a delimited file read in chunks.

    Parameters
    ----------
    chunks
        ``(first_line, text)`` pieces from :func:`~clustersim.traces.compressed.text_chunks`.
    path
        For errors.
    sep
        The field separator.
    limits
        Limits of the read (``max_header_fields``; default :class:`ReadLimits()`).

    Attributes
    ----------
    header_line : int
        Line number of the header.
    names : list of str
        Header names, trimmed (and unquoted, see :func:`unquote_name`).

    Raises
    ------
    TraceError
        If the file has no non-blank line.
    TraceLimitError
        If the header has more than ``limits.max_header_fields`` fields.
    """

    def __init__(
        self,
        chunks: Iterable[tuple[int, bytes]],
        path: str,
        sep: str,
        limits: ReadLimits | None = None,
    ) -> None:
        self.path = path
        self.sep = sep
        self._chunks = iter(chunks)
        for chunk in self._chunks:
            if not chunk[1].strip(b" \t\n"):  # blank lines only: no need to scan them
                continue
            text = DelimitedText(chunk[1], sep)
            if text:
                break
        else:
            raise TraceError(path, 0, "", "empty file")
        self._first = (text, chunk[0])
        self.header_line = text.first_line + chunk[0] - 1
        fields = checked_header(text.line_text(0), sep, path, self.header_line, limits)
        self.names = [unquote_name(c) for c in fields]

    def column_index(self, wanted: str, field: str) -> int:
        """Index of header column ``wanted`` (exact, else case-insensitive and unique).

        Raises
        ------
        TraceError
            At the header line, naming ``field``, when there is no such column or it is
            ambiguous.
        """
        hits = [i for i, n in enumerate(self.names) if n == wanted]
        if not hits:
            hits = [i for i, n in enumerate(self.names) if n.lower() == wanted.lower()]
        if len(hits) == 1:
            return hits[0]
        shown = ", ".join(repr(n) for n in self.names[:30])
        what = "appears more than once in" if hits else "is not in"
        raise TraceError(
            self.path,
            self.header_line,
            field,
            f"column {wanted!r} (for {field}) {what} the header; the header has: {shown}",
        )

    def find(self, wanted: str) -> int | None:
        """Index of header column ``wanted`` like :meth:`column_index`, or ``None``.

        Raises
        ------
        TraceError
            When the column appears more than once.
        """
        if not any(n.lower() == wanted.lower() for n in self.names):
            return None
        return self.column_index(wanted, wanted)

    def blocks(self, numbers: Mapping[str, bool] | None = None) -> Iterator[Block]:
        """The data rows, one block per chunk (the header is not a row).

        ``numbers`` (header name → whether empty values are allowed) names columns that may
        come as numbers (see :meth:`DelimitedText.columns`; spaces around them are ignored:
        :class:`LenientParser` trims them too).
        """
        keys = [f"{i}" for i in range(len(self.names))]
        where = {name: f"{i}" for i, name in enumerate(self.names)}  # the last one wins
        typed = {where[n]: optional for n, optional in (numbers or {}).items() if n in where}
        row = 0
        text, first_line = self._first
        start = 1
        while True:
            try:
                cols = text.columns(self.path, keys, start=start, numbers=typed, spaces=True)
            except TraceError as exc:
                field = exc.field
                if field.isdigit():  # the positional key of a column: name it
                    field = self.names[int(field)] or f"column {int(field) + 1}"
                raise _shifted(exc, first_line, field) from None
            lines = text.lines[start:] + (first_line - 1)
            if len(lines):
                by_name = {self.names[int(k)]: v for k, v in cols.items()}
                yield Block(lines, row, by_name, b'"' in text.data)
                row += len(lines)
            nxt = next(self._chunks, None)
            while nxt is not None and not nxt[1].strip(b" \t\n"):  # skip blank chunks
                nxt = next(self._chunks, None)
            if nxt is None:
                return
            first_line, data = nxt
            text, start = DelimitedText(data, self.sep), 0


def _shifted(exc: TraceError, first_line: int, field: str) -> TraceError:
    line = exc.line + first_line - 1 if exc.line else 0
    return TraceError(exc.path, line, field, exc.message)


def unquote_name(text: str) -> str:
    """A header name trimmed of spaces and of one pair of enclosing double quotes."""
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] == '"':
        text = text[1:-1].strip()
    return text


class LenientParser(ColumnParser):
    """A :class:`ColumnParser` that also reads optional columns (blank = missing).

    Unlike the base class, values with surrounding spaces are accepted (the column is
    trimmed and converted again when some value does not convert).
    """

    def numbers(self, values: pa.Array, name: str) -> FloatArray:
        """A required numeric column (see :meth:`ColumnParser.numbers`)."""
        return self._lenient(to_float, values, name, "not a number", optional=False)

    def timestamps(self, values: pa.Array, name: str) -> npt.NDArray[np.datetime64]:
        """A required time column (see :meth:`ColumnParser.timestamps`)."""
        return self._lenient(to_datetime, values, name, _NOT_ISO, optional=False)

    def optional_numbers(self, values: pa.Array, name: str) -> FloatArray:
        """Numbers as float64; blank values are ``nan``, other non-numbers are errors."""
        return self._lenient(to_float, values, name, "not a number", optional=True)

    def optional_timestamps(self, values: pa.Array, name: str) -> npt.NDArray[np.datetime64]:
        """``YYYY-MM-DD HH:MM:SS`` times; blank values are ``NaT``, others must parse."""
        return self._lenient(to_datetime, values, name, _NOT_ISO, optional=True)

    def _lenient(
        self,
        convert: Callable[[pa.Array], tuple[_Values, BoolArray]],
        values: pa.Array,
        name: str,
        what: str,
        optional: bool,
    ) -> _Values:
        """Convert a column with ``convert``; when some value fails, trim the column, convert
        it again and record the values that still fail (``what``: the error), blank ones
        only when not ``optional``. A column that came as numbers is used as it is."""
        if is_numbers(values):
            return numbers_of(values)  # type: ignore[return-value]
        out, bad = convert(values)
        if bad.any():
            values = pc.utf8_trim_whitespace(values)
            out, bad = convert(values)
            self._record(bad & ~blank(values) if optional else bad, values, name, what)
        return out

    def pattern_times(
        self, values: pa.Array, name: str, pattern: str, required: bool
    ) -> npt.NDArray[np.datetime64]:
        """Times in a ``strptime`` ``pattern``; blank values are ``NaT`` unless required."""
        values = pc.utf8_trim_whitespace(values)
        try:
            parsed = pc.strptime(values, format=pattern, unit="s", error_is_null=True)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
            raise TraceError(self.path, 0, name, f"bad time format {pattern!r}: {exc}") from None
        if pa.types.is_timestamp(parsed.type) and parsed.type.tz is not None:
            parsed = parsed.cast(pa.timestamp("s"))
        out = np.asarray(parsed.to_numpy(zero_copy_only=False), dtype="datetime64[s]")
        bad = np.isnat(out)
        if not required and bad.any():
            bad &= ~blank(values)
        self._record(bad, values, name, f"not a time of the form {pattern!r}")
        return out

    def integers(self, values: FloatArray, raw: pa.Array, name: str) -> None:
        """Record values of a numeric column that are not whole numbers (``nan`` is fine)."""
        with np.errstate(invalid="ignore"):
            frac = np.isfinite(values) & (np.floor(values) != values)
            frac |= np.isinf(values) | (np.abs(values) > 2**62)
        self._record(frac, raw, name, "not an integer")


class LineCollector:
    """Line numbers of rows by message, gathered over blocks and reported once."""

    def __init__(self) -> None:
        self._lines: dict[str, list[IntArray]] = {}

    def add(self, message: str, lines: IntArray) -> None:
        """Remember ``lines`` under ``message`` (nothing when empty)."""
        if len(lines):
            self._lines.setdefault(message, []).append(np.asarray(lines, dtype=np.int64))

    def messages(self) -> list[str]:
        """The messages seen so far, in first-seen order."""
        return list(self._lines)

    def warn(self, report: ParseReport, order: Iterable[str] = ()) -> None:
        """Add one warning per message, those in ``order`` first, then the rest."""
        for message in self._ordered(order):
            report.warn(message, np.concatenate(self._lines[message]))

    def drop(self, report: ParseReport, order: Iterable[str] = ()) -> None:
        """Add one drop reason per message, those in ``order`` first, then the rest."""
        for message in self._ordered(order):
            report.drop(message, np.concatenate(self._lines[message]))

    def _ordered(self, order: Iterable[str]) -> list[str]:
        seen = [m for m in order if m in self._lines]
        return seen + [m for m in self._lines if m not in seen]


def apply_drops(
    collector: LineCollector, lines: IntArray, checks: list[tuple[str, BoolArray]]
) -> BoolArray:
    """Like :func:`~clustersim.traces.base.drop_rows`, collecting into ``collector``."""
    return apply_checks(collector.add, lines, checks)


def status_drops(
    values: pa.Array, keep: tuple[str, ...] | None, what: str = "status"
) -> list[tuple[str, BoolArray]]:
    """One ``(reason, mask)`` check per status value outside ``keep`` (case-insensitive).

    ``keep=None`` keeps every status. Statuses are compared by their first word (Slurm
    writes ``CANCELLED by 123``).
    """
    if keep is None or len(values) == 0:
        return []
    encoded = pc.dictionary_encode(values)
    names = [str(v) for v in encoded.dictionary.to_pylist()]
    selected = np.array(
        [(n.strip().lower().split(" ") or [""])[0] in keep for n in names], dtype=bool
    )
    if selected.all():
        return []
    codes = np.asarray(encoded.indices.to_numpy(zero_copy_only=False), dtype=np.int64)
    checks = []
    for code in np.flatnonzero(~selected):
        checks.append((f"{what} {names[code].strip()!r} not selected", codes == code))
    return checks


def duplicate_lines(ids: list[pa.Array], lines: IntArray) -> IntArray:
    """Lines of rows whose id (from the concatenated ``ids``) appears more than once."""
    if not ids:
        return np.zeros(0, dtype=np.int64)
    values = pa.chunked_array(ids, type=pa.string()).combine_chunks()
    numbers = int_ids(values)
    if numbers is not None:  # numeric ids (the usual case): no hashing of strings
        if len(numbers) < 2 or bool(np.all(numbers[1:] > numbers[:-1])):
            return np.zeros(0, dtype=np.int64)  # ascending ids (the usual order): all distinct
        ordered = np.sort(numbers)
        repeated = ordered[1:][ordered[1:] == ordered[:-1]]
        if len(repeated) == 0:
            return np.zeros(0, dtype=np.int64)
        return lines[np.isin(numbers, repeated)]
    encoded = pc.dictionary_encode(values)
    if len(encoded.dictionary) == len(encoded):
        return np.zeros(0, dtype=np.int64)
    codes = np.asarray(encoded.indices.to_numpy(zero_copy_only=False), dtype=np.int64)
    counts = np.bincount(codes, minlength=len(encoded.dictionary))
    return lines[counts[codes] > 1]


def as_objects(parts: list[pa.Array], repeated: bool = False) -> pa.Array:
    """Concatenated string arrays, for :func:`~clustersim.traces.base.build_table` (which
    makes Python strings of them, see :func:`~clustersim.traces.base.arrow_objects`).

    With ``repeated`` (few distinct values, like user names), the array is dictionary-encoded,
    so that equal values share one ``str`` object.
    """
    if not parts:
        return pa.array([], type=pa.string())
    values = pa.chunked_array(parts, type=pa.string()).combine_chunks()
    return pc.dictionary_encode(values) if repeated else values


def check_speed(path: str, speed: Any) -> float:
    """The ``speed`` option as a positive float."""
    if (
        isinstance(speed, bool)
        or not isinstance(speed, int | float)
        or not math.isfinite(speed)
        or speed <= 0
    ):
        raise TraceError(path, 0, "speed", f"speed must be a positive number, got {speed!r}")
    return float(speed)


def check_statuses(path: str, statuses: Any, name: str = "statuses") -> tuple[str, ...] | None:
    """A statuses option as lower-case names (``None``: keep all)."""
    if statuses is None:
        return None
    if not isinstance(statuses, list | tuple | set | frozenset) or not all(
        isinstance(s, str) for s in statuses
    ):
        raise TraceError(path, 0, name, f"{name} must be a list of names")
    return tuple(s.strip().lower().split(" ")[0] for s in statuses)


def header_name_set(head: bytes) -> set[str]:
    """Lower-cased names of the comma-separated first line of a sniffing head (trimmed and
    unquoted, see :func:`unquote_name`); empty when the head has no non-blank line."""
    lines = head_lines(head, limit=1)
    if not lines:
        return set()
    return {unquote_name(c).lower() for c in lines[0].split(",")}


def read_blocks(
    chunks: DelimitedChunks,
    path: str,
    report: ParseReport,
    block: Callable[[Block], dict[str, Any]],
    numbers: Mapping[str, bool] | None = None,
) -> dict[str, list[Any]]:
    """Run ``block`` on every block of data rows and gather its outputs by key.

    Parameters
    ----------
    chunks
        The file.
    path
        For errors.
    report
        Receives :attr:`~clustersim.traces.base.ParseReport.jobs_read` (the data rows).
    block
        Turns one block into named pieces (arrays) of the kept rows.
    numbers
        Header columns that may come as numbers (see :meth:`DelimitedChunks.blocks`).

    Returns
    -------
    dict of str to list
        Per key, the pieces of every block that produced it, in file order.

    Raises
    ------
    TraceError
        What ``block`` raises, or when the file has a header but no data row.
    """
    parts: dict[str, list[Any]] = {}
    read = 0
    for one in chunks.blocks(numbers):
        read += len(one.lines)
        for key, value in block(one).items():
            parts.setdefault(key, []).append(value)
    set_jobs_read(report, path, read)
    return parts


def row_ids(values: pa.Array | None, first_row: int, rows: IntArray) -> pa.Array:
    """Job ids of the rows ``rows`` (indices into a block).

    ``values`` is the block's job-id column; without one (``None``) a row's id is its 0-based
    index among the file's data rows, as text (``first_row``: the block's first row's index).
    """
    if values is not None:
        return values.take(pa.array(rows))
    return pa.array((first_row + rows).astype(str), type=pa.string())


def kept_job_ids(parts: dict[str, list[Any]], report: ParseReport) -> pa.Array:
    """The ``job_id`` pieces gathered by :func:`read_blocks` as one array (see
    :func:`as_objects`).

    Ids that appear more than once are kept and warned about, at the ``lines`` pieces' lines.
    """
    lines = np.concatenate(parts["lines"])
    report.warn("job id appears more than once (kept)", duplicate_lines(parts["job_id"], lines))
    return as_objects(parts["job_id"])


class ChunkedCsvReader(TraceReader):
    """Base of the readers of delimited files read in chunks with bounded memory.

    Subclasses implement :meth:`_read`, which gets the file as ``(first_line, text)`` chunks;
    they override :meth:`parse` only to document their options.
    """

    def read(
        self, path: str | os.PathLike[str], *, limits: ReadLimits | None = None, **options: Any
    ) -> tuple[JobTable, ParseReport]:
        """Read a (possibly compressed) file in chunks (bounded memory) within ``limits``;
        options as for :meth:`parse`."""
        name = os.fspath(path)
        limits = limits or ReadLimits()
        with open_source(name, options.pop("member", None), limits, streamed=True) as source:
            report = ParseReport(format=self.name, path=name)
            where = source.info.describe()
            if where:
                report.assume(f"read the {where}")
            return self._read(text_chunks(source, name), name, report, options, limits)

    def parse(
        self, data: bytes, path: str, *, limits: ReadLimits | None = None, **options: Any
    ) -> tuple[JobTable, ParseReport]:
        """Parse a whole file held in memory (options: see the subclass)."""
        report = ParseReport(format=self.name, path=path)
        limits = limits or ReadLimits()
        with bytes_source(data, path, limits) as source:
            return self._read(text_chunks(source, path), path, report, options, limits)

    @abstractmethod
    def _read(
        self,
        chunks_in: Iterable[tuple[int, bytes]],
        path: str,
        report: ParseReport,
        options: dict[str, Any],
        limits: ReadLimits,
    ) -> tuple[JobTable, ParseReport]:
        """Check ``options`` and read the chunks into a table (headers within ``limits``);
        ``report`` is started."""


# --------------------------------------------------------------------------------------------
# The generic reader


@dataclass
class _Spec:
    """Validated options of one read."""

    columns: dict[str, str]  # field -> header name (the mapped or same-named column)
    units: dict[str, float]
    unit_names: dict[str, str]
    formats: dict[str, str | None]
    statuses: tuple[str, ...] | None
    speed: float
    sep: str
    steps: bool = False
    calendar: bool | None = None  # decided from the first block when formats are automatic
    resolved: dict[str, str] = field(default_factory=dict)  # field -> format used


#: Job-table columns read as plain numbers, with whether they may be blank.
_NUMBERS = {"num_gpus": False, "work": False, "cpu": True, "mem_gb": True}
_NUMBERS.update(min_gpus=True, max_gpus=True)


def _numeric_columns(spec: _Spec) -> dict[str, bool]:
    """Header columns that only numeric job-table columns read (see :data:`_NUMBERS`), with
    whether they may be blank."""
    fields: dict[str, list[str]] = {}
    for key, name in spec.columns.items():
        fields.setdefault(name, []).append(key)
    return {
        name: all(_NUMBERS[k] for k in keys)
        for name, keys in fields.items()
        if all(k in _NUMBERS for k in keys)
    }


class GenericCsvReader(ChunkedCsvReader):
    """Delimited text with a header and a user-given column mapping and units."""

    name: ClassVar[str] = "csv"
    description: ClassVar[str] = (
        "Generic CSV with a column mapping and units (options mapping, units, time_format; "
        "detected only when the header has submit_time, num_gpus and work)"
    )

    def sniff(self, head: bytes, filename: str) -> bool:
        """True when the first line is a header with the job-table names."""
        return {"submit_time", "num_gpus", "work"} <= header_name_set(head)

    def parse(
        self, data: bytes, path: str, *, limits: ReadLimits | None = None, **options: Any
    ) -> tuple[JobTable, ParseReport]:
        """Parse a whole file held in memory.

        Parameters
        ----------
        data, path, limits
            See :meth:`TraceReader.parse`.
        mapping : dict of str to str, optional
            Job-table column → header name (see the module docstring for the columns).
        units : dict of str to str, optional
            Column → unit.
        time_format : str or dict of str to str, optional
            ``"number"``, ``"unix"``, ``"iso"`` or a ``strptime`` pattern; per column or for
            all time columns.
        sep : str, optional
            The field separator (default ``","``).
        statuses : sequence of str, optional
            Status values whose jobs are kept (needs a ``status`` column).
        speed : float, optional
            Speed of the trace's GPUs relative to the reference type (default 1).
        """
        return super().parse(data, path, limits=limits, **options)

    # -- options -------------------------------------------------------------------------

    def _spec(self, path: str, options: dict[str, Any], chunks: DelimitedChunks) -> _Spec:
        mapping = options.get("mapping") or {}
        if not isinstance(mapping, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in mapping.items()
        ):
            raise TraceError(path, 0, "mapping", "mapping must map column names to header names")
        for key in mapping:
            if key not in FIELDS:
                raise TraceError(
                    path, 0, key, f"unknown job column in mapping; known: {', '.join(FIELDS)}"
                )
        columns: dict[str, str] = {}
        for key in FIELDS:
            if key in mapping:
                columns[key] = chunks.names[chunks.column_index(mapping[key], key)]
            else:
                found = chunks.find(key)
                if found is not None:
                    columns[key] = chunks.names[found]
        for key in ("submit_time", "num_gpus"):
            if key not in columns:
                raise TraceError(
                    path,
                    chunks.header_line,
                    key,
                    f"no column for {key}: map it with mapping={{{key!r}: 'header name'}}",
                )
        if "work" not in columns and not {"start_time", "end_time"} <= set(columns):
            raise TraceError(
                path,
                chunks.header_line,
                "work",
                "no column for work: map work, or both start_time and end_time",
            )
        if "work" in columns:  # start and end only stand in for a missing work column
            columns.pop("start_time", None)
            columns.pop("end_time", None)

        units_opt = options.get("units") or {}
        if not isinstance(units_opt, dict):
            raise TraceError(path, 0, "units", "units must map column names to unit names")
        units: dict[str, float] = {}
        unit_names: dict[str, str] = {}
        for key, unit in units_opt.items():
            if key not in UNITS:
                raise TraceError(
                    path, 0, key, f"no units for this column; units apply to {', '.join(UNITS)}"
                )
            if not isinstance(unit, str) or unit not in UNITS[key]:
                raise TraceError(
                    path, 0, key, f"unknown unit {unit!r}; choose one of {', '.join(UNITS[key])}"
                )
            units[key] = UNITS[key][unit]
            unit_names[key] = unit
        for key, table in UNITS.items():
            default = next(iter(table))
            units.setdefault(key, table[default])
            unit_names.setdefault(key, default)

        fmt = options.get("time_format")
        formats: dict[str, str | None] = {}
        for key in TIME_FIELDS:
            value = fmt.get(key) if isinstance(fmt, dict) else fmt
            if value is not None and not isinstance(value, str):
                raise TraceError(path, 0, "time_format", "time_format must be text or a dict")
            formats[key] = value
        if isinstance(fmt, dict):
            for key in fmt:
                if key not in TIME_FIELDS:
                    raise TraceError(
                        path, 0, key, f"time_format applies to {', '.join(TIME_FIELDS)} only"
                    )

        statuses = check_statuses(path, options.get("statuses"))
        if statuses is not None and "status" not in columns:
            raise TraceError(path, 0, "statuses", "statuses needs a status column (mapping)")
        return _Spec(
            columns=columns,
            units=units,
            unit_names=unit_names,
            formats=formats,
            statuses=statuses,
            speed=check_speed(path, options.get("speed", 1.0)),
            sep=chunks.sep,
            steps=unit_names["work"] in ("steps", "iterations"),
        )

    # -- reading -------------------------------------------------------------------------

    def _read(
        self,
        chunks_in: Iterable[tuple[int, bytes]],
        path: str,
        report: ParseReport,
        options: dict[str, Any],
        limits: ReadLimits,
    ) -> tuple[JobTable, ParseReport]:
        check_options(
            self, path, options, {"mapping", "units", "time_format", "sep", "statuses", "speed"}
        )
        sep = options.get("sep", ",")
        if sep not in SEPARATORS:
            raise TraceError(path, 0, "sep", f"sep must be one of {SEPARATORS!r}, got {sep!r}")
        chunks = DelimitedChunks(chunks_in, path, sep, limits)
        spec = self._spec(path, options, chunks)
        drops, warnings = LineCollector(), LineCollector()
        parts = read_blocks(
            chunks,
            path,
            report,
            lambda block: self._block(block, spec, path, drops, warnings),
            _numeric_columns(spec),
        )
        drops.drop(report)
        warnings.warn(report)
        return self._finish(path, report, spec, parts)

    def _times(
        self, parser: LenientParser, values: pa.Array, key: str, spec: _Spec, required: bool
    ) -> FloatArray:
        """A time column as float seconds (since 1970 for calendar times)."""
        fmt = spec.resolved.get(key)
        if fmt is None:
            fmt = spec.formats[key]
            if fmt is None:  # decide from the first non-blank value
                nonblank = values.filter(pc.invert(pa.array(blank(values))))
                if len(nonblank) == 0:
                    return np.full(len(values), np.nan)
                _, bad = to_float(nonblank[:1])
                fmt = "iso" if bad[0] else "number"
            spec.resolved[key] = fmt
            calendar = fmt != "number"
            if spec.calendar is None:
                spec.calendar = calendar
            elif spec.calendar != calendar:
                raise TraceError(
                    parser.path,
                    0,
                    key,
                    "time columns mix calendar times and relative numbers; give time_format",
                )
        unit = spec.units[key]
        if fmt in ("number", "unix"):
            if required:
                return parser.numbers(values, key) * unit
            return parser.optional_numbers(values, key) * unit
        if fmt == "iso":
            if required:
                stamps = parser.timestamps(values, key)
            else:
                stamps = parser.optional_timestamps(values, key)
        else:
            stamps = parser.pattern_times(values, key, fmt, required)
        out = stamps.astype("datetime64[s]").astype(np.int64).astype(np.float64)
        out[np.isnat(stamps)] = np.nan
        return out

    def _block(
        self,
        block: Block,
        spec: _Spec,
        path: str,
        drops: LineCollector,
        warnings: LineCollector,
    ) -> dict[str, Any]:
        cols = {
            key: block.column(name, text=key in TEXT_FIELDS or key in ("job_id", "status"))
            for key, name in spec.columns.items()
        }
        lines = block.lines
        parser = LenientParser(path, lines)
        submit = self._times(parser, cols["submit_time"], "submit_time", spec, True)
        gpus = parser.numbers(cols["num_gpus"], "num_gpus") * spec.units["num_gpus"]
        if "work" in cols:
            work = parser.numbers(cols["work"], "work") * spec.units["work"]
        else:
            start = self._times(parser, cols["start_time"], "start_time", spec, False)
            end = self._times(parser, cols["end_time"], "end_time", spec, False)
            work = end - start
        optional: dict[str, FloatArray] = {}
        for key in ("priority", "cpu", "mem_gb", "min_gpus", "max_gpus"):
            if key in cols:
                optional[key] = parser.optional_numbers(cols[key], key) * spec.units.get(key, 1.0)
        if "priority" in optional:
            parser.integers(optional["priority"], cols["priority"], "priority")
        if "deadline" in cols:
            optional["deadline"] = self._times(parser, cols["deadline"], "deadline", spec, False)
        parser.check()

        checks = status_drops(cols["status"], spec.statuses) if "status" in cols else []
        with np.errstate(invalid="ignore"):
            checks += [
                ("submit_time not finite", ~np.isfinite(submit)),
                ("submit_time < 0", (submit < 0) if not spec.calendar else np.isnan(submit)),
                *gpu_checks(gpus, "num_gpus"),
            ]
            if "work" not in cols:
                checks.append(("no start_time or end_time", np.isnan(work)))
            checks += [
                ("work <= 0", work <= 0),
                ("work not finite", ~np.isfinite(work)),
            ]
            for key in ("min_gpus", "max_gpus"):
                if key in optional:
                    value = optional[key]
                    given = ~np.isnan(value)
                    bad = given & ((value < 1) | (np.floor(value) != value) | (value > MAX_GPUS))
                    checks.append((f"{key} out of range", bad))
            # elastic bounds on either side of the gang size (docs/elastic.md), each its reason
            for key, side in (("min_gpus", ">"), ("max_gpus", "<")):
                if key in optional:
                    value = optional[key]
                    contra = value > gpus if side == ">" else value < gpus
                    checks.append((BOUNDS_REASON.format(key=key, side=side), contra))
        keep = apply_drops(drops, lines, checks)
        idx = np.flatnonzero(keep)
        out: dict[str, Any] = {
            "lines": lines[idx],
            "submit_time": submit[idx],
            "num_gpus": gpus[idx],
            "work": work[idx] * (1.0 if spec.steps else spec.speed),
        }
        out["job_id"] = row_ids(cols.get("job_id"), block.first_row, idx)
        for key in TEXT_FIELDS:
            if key in cols:
                out[key] = cols[key].take(pa.array(idx))
        for key, value in optional.items():
            out[key] = value[idx]
        return out

    def _finish(
        self, path: str, report: ParseReport, spec: _Spec, parts: dict[str, list[Any]]
    ) -> tuple[JobTable, ParseReport]:
        submit = np.concatenate(parts["submit_time"])
        job_id = kept_job_ids(parts, report)
        origin = 0.0
        if spec.calendar and len(submit):
            origin = float(submit.min())
            report.start_time = str(np.datetime64(math.floor(origin), "s"))
            report.assume(
                f"submit times re-based: t = 0 is the earliest kept submit time "
                f"{report.start_time} (times without a zone are used as written)"
            )
        elif len(submit):
            report.assume(
                f"submit times are relative numbers in {spec.unit_names['submit_time']}, "
                "converted to seconds and not re-based"
            )
        formats = ", ".join(f"{k}: {v}" for k, v in spec.resolved.items())
        report.assume(f"time formats: {formats}")
        mapped = ", ".join(f"{k} <- {v!r}" for k, v in spec.columns.items())
        report.assume(f"columns: {mapped}")
        if "job_id" not in spec.columns:
            report.assume("job_id is the 0-based index of the data row in the file")
        if spec.statuses is not None:
            report.assume(f"statuses kept: {', '.join(spec.statuses)} (compared without case)")
        if "work" not in spec.columns:
            report.assume("work = end_time - start_time")
        if spec.steps:
            report.assume("work in training steps, used as written")
        else:
            report.assume(
                f"work in {spec.unit_names['work']} x speed {spec.speed:g} = reference seconds "
                "(measured on GPUs taken as the reference type, P100, unless speed says else)"
            )
        columns: dict[str, Any] = {
            "job_id": job_id,
            "submit_time": submit - origin,
            "num_gpus": np.concatenate(parts["num_gpus"]).astype(np.int64),
            "work": np.concatenate(parts["work"]),
        }
        for key in TEXT_FIELDS:
            if key in parts:
                columns[key] = as_objects(parts[key], repeated=True)
        if "priority" in parts:
            prio = np.concatenate(parts["priority"])
            columns["priority"] = np.where(np.isnan(prio), 0, prio).astype(np.int64)
        for key in ("cpu", "mem_gb"):
            if key in parts:
                columns[key] = np.concatenate(parts[key])
        if "deadline" in parts:
            columns["deadline"] = np.concatenate(parts["deadline"]) - origin
        for key in ("min_gpus", "max_gpus"):
            if key in parts:
                value = np.concatenate(parts[key])
                columns[key] = np.where(np.isnan(value), columns["num_gpus"], value).astype(
                    np.int64
                )
        fields = {key: spec.columns.get(key, key) for key in columns}
        if "work" not in spec.columns:
            fields["work"] = "end_time - start_time"
        table = build_table(path, report, np.concatenate(parts["lines"]), fields, **columns)
        return table, report
