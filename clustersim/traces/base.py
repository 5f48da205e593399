"""The trace-reader framework: parse reports, the reader base class and text helpers.

A trace reader turns one file format into a :class:`~clustersim.jobs.JobTable` plus a
:class:`ParseReport` saying what it read, what it dropped and why, and which assumptions it
made. Readers are small subclasses of :class:`TraceReader`, registered in
:data:`clustersim.traces.READERS`.

Error rule
----------
Every failure is a :class:`~clustersim.errors.TraceError` carrying the path, the 1-based line
number (0 when the problem is not on one line) and the field name. Readers tell two kinds of bad
input apart:

*Structural* problems mean the file is not (or no longer) in the format, so any reading of it
would be a guess. They raise on the first offending line:

- the file cannot be opened, is not valid gzip (or another container), is not UTF-8 text or
  contains NUL bytes;
- a required header column is missing;
- a line has the wrong number of fields;
- a required field is empty or does not parse (not a number, not a timestamp, ``nan``);
- the file is empty, or no row survives the row checks below.

*Row-level* problems are values that parse but that the simulator cannot use, and that are
known to occur in real traces (zero-length jobs, jobs that asked for no GPU, overflowing
numbers). The row is dropped and counted under one reason in :attr:`ParseReport.drop_reasons`
(a row failing several checks is counted once, under the first reason its reader checks);
the rest of the file is kept. Suspicious but usable values are kept and counted in
:attr:`ParseReport.warnings`.

Limits
------
Readers read their input in bounded pieces, within the limits of a
:class:`~clustersim.traces.limits.ReadLimits` (decompressed bytes, line length, header fields,
rows;
see :mod:`clustersim.traces.limits`): input past one fails with a
:class:`~clustersim.errors.TraceLimitError` naming the limit, its value and how to raise it.

Value ranges
------------
Whatever a reader keeps must be a job the simulator can run and report in finite numbers.
:func:`build_table` checks every kept row against these bounds and fails the file at the
first row outside them (a :class:`~clustersim.errors.TraceError` naming the line and the
trace's field); readers drop the values known to occur in real traces (non-finite numbers,
zero-length jobs) before that, as described above:

- ``submit_time``: finite, ``0 <= t <=`` :data:`MAX_TIME_S` (100 years);
- ``work``: finite, ``0 < w <=`` :data:`MAX_WORK` (``1e12``: 31,700 years in reference
  seconds, or 10^12 training steps);
- ``num_gpus``, ``min_gpus``, ``max_gpus``: ``1 <= min_gpus <= num_gpus <= max_gpus <=``
  :data:`MAX_GPUS`;
- ``deadline``: none (``nan``) or finite with ``|deadline| <=`` :data:`MAX_TIME_S` ``+``
  :data:`MAX_WORK`;
- ``cpu``: unknown (``nan``) or finite in ``[0,`` :data:`MAX_CPU` ``]`` cores;
  ``mem_gb``: unknown or finite in ``[0,`` :data:`MAX_MEM_GB` ``]``;
- ``priority``: ``|priority| <=`` :data:`MAX_PRIORITY` (``2**53``, exact in JSON numbers).

Text handling
-------------
Input may be compressed or archived (gzip, bzip2, xz, zip, tar, tar.gz; detected by magic
bytes, not by name: see :mod:`clustersim.traces.compressed`; the ``member`` option picks a
file in an archive). Text must be UTF-8 (a leading byte-order mark is ignored); ``\\r\\n``
and lone ``\\r`` line ends count as one line end, like an editor counts them. Lines that are
empty or hold only spaces and tabs are skipped everywhere (they still count for line numbers).
Delimited formats are parsed without quoting: a quote character is an ordinary character, so a
record is exactly one line and line numbers are exact.
"""

from __future__ import annotations

import io
import math
import os
import re
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from clustersim.errors import ClustersimError, TraceError
from clustersim.jobs import JobTable
from clustersim.traces.arrow import is_arrow_array, pa, pacsv, pc
from clustersim.traces.compressed import (
    long_line,
    open_source,
    read_start,
    text_chunks,
    too_many_rows,
)
from clustersim.traces.limits import ReadLimits

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]
ObjArray = npt.NDArray[np.object_]

#: How many line numbers a drop reason or a warning keeps.
FIRST_LINES = 5
#: Bytes of a file that :meth:`TraceReader.sniff` sees.
HEAD_BYTES = 64 * 1024
#: Gang sizes above this are treated as garbage (a row-level drop), which also keeps the
#: float-to-int64 conversion exact.
MAX_GPUS = 1_000_000
#: Latest submit time a job table holds, s (100 years).
MAX_TIME_S = 100 * 365.25 * 86400
#: Most work a job may have: reference seconds (31,700 years) or training steps.
MAX_WORK = 1e12
#: Most host CPU cores a job may ask for.
MAX_CPU = 1e7
#: Most host memory a job may ask for, GB.
MAX_MEM_GB = 1e9
#: Largest priority (in magnitude): integers up to this are exact in float64 and JSON.
MAX_PRIORITY = 2**53

_BOM = b"\xef\xbb\xbf"


@dataclass
class LineTally:
    """How many rows something happened to, and the first few of their line numbers.

    Attributes
    ----------
    count : int
        Number of rows.
    first_lines : list of int
        1-based line numbers of the first (up to :data:`FIRST_LINES`) rows, ascending.
    """

    count: int = 0
    first_lines: list[int] = field(default_factory=list)

    def add(self, lines: npt.ArrayLike) -> None:
        """Count the rows on ``lines`` (a 1-D sequence of 1-based line numbers)."""
        arr = np.asarray(lines, dtype=np.int64).ravel()
        self.count += len(arr)
        merged = sorted({*self.first_lines, *(int(x) for x in np.sort(arr)[:FIRST_LINES])})
        self.first_lines = merged[:FIRST_LINES]

    def to_dict(self) -> dict[str, Any]:
        """``{"count": int, "first_lines": [int, ...]}``."""
        return {"count": self.count, "first_lines": list(self.first_lines)}


@dataclass
class ParseReport:
    """What a reader did with one file.

    Attributes
    ----------
    format : str
        Registry name of the reader.
    path : str
        The file, as given by the caller.
    jobs_read : int
        Job rows found in the file.
    jobs_kept : int
        Rows in the returned table.
    jobs_dropped : int
        Rows dropped (``jobs_read - jobs_kept``).
    drop_reasons : dict of str to LineTally
        Why rows were dropped: reason → count and first line numbers. Counts sum to
        ``jobs_dropped``.
    warnings : list of str
        Data-quality warnings about kept data, each with a row count and the first line
        numbers.
    assumptions : list of str
        Interpretations the reader made (units, defaults, ignored fields, time origin).
    time_span_s : float
        Last minus first submit time of the kept jobs, s.
    start_time : str or None
        Calendar time (ISO 8601) of ``submit_time == 0`` when the trace has calendar times,
        else ``None``.
    """

    format: str
    path: str
    jobs_read: int = 0
    jobs_kept: int = 0
    jobs_dropped: int = 0
    drop_reasons: dict[str, LineTally] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    assumptions: list[str] = field(default_factory=list)
    time_span_s: float = 0.0
    start_time: str | None = None

    def drop(self, reason: str, lines: npt.ArrayLike) -> None:
        """Record rows on ``lines`` as dropped for ``reason`` (no-op when empty)."""
        arr = np.asarray(lines, dtype=np.int64).ravel()
        if len(arr):
            self.drop_reasons.setdefault(reason, LineTally()).add(arr)

    def warn(self, message: str, lines: npt.ArrayLike | None = None) -> None:
        """Add a warning; with ``lines``, append the row count and first line numbers.

        Nothing is added when ``lines`` is given but empty.
        """
        if lines is None:
            self.warnings.append(message)
            return
        arr = np.asarray(lines, dtype=np.int64).ravel()
        if len(arr):
            self.warnings.append(f"{message}: {_rows_text(arr)}")

    def assume(self, text: str) -> None:
        """Record an assumption."""
        self.assumptions.append(text)

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON-compatible builtins (str, int, float, None, list, dict)."""
        return {
            "format": self.format,
            "path": self.path,
            "jobs_read": int(self.jobs_read),
            "jobs_kept": int(self.jobs_kept),
            "jobs_dropped": int(self.jobs_dropped),
            "drop_reasons": {k: v.to_dict() for k, v in self.drop_reasons.items()},
            "warnings": list(self.warnings),
            "assumptions": list(self.assumptions),
            "time_span_s": float(self.time_span_s),
            "start_time": self.start_time,
        }


def _rows_text(lines: IntArray) -> str:
    first = ", ".join(str(int(x)) for x in np.sort(lines)[:FIRST_LINES])
    more = ", ..." if len(lines) > FIRST_LINES else ""
    noun = "row" if len(lines) == 1 else "rows"
    return f"{len(lines)} {noun} (line {first}{more})"


class TraceReader(ABC):
    """Base class of the trace readers: one subclass per file format.

    Subclasses set :attr:`name` and :attr:`description` and implement :meth:`sniff` and
    :meth:`parse`. :meth:`read` loads the file (decompressing it and checking that it is
    UTF-8 text) and hands the bytes to :meth:`parse`. A reader for files too big for memory
    overrides :meth:`read` instead.

    Readers hold no per-file state: one instance serves every call.
    """

    #: Registry name, e.g. ``"philly"``.
    name: ClassVar[str]
    #: One line for users choosing a format.
    description: ClassVar[str]

    @abstractmethod
    def sniff(self, head: bytes, filename: str) -> bool:
        """Whether a file looks like this format.

        Parameters
        ----------
        head
            The first (up to :data:`HEAD_BYTES`) bytes of the file, decompressed; may end in
            the middle of a line or of a UTF-8 sequence, and may be anything at all.
        filename
            The file's base name without a ``.gz`` suffix.

        Returns
        -------
        bool
            True when the reader is confident it can read the file. Must not raise.
        """

    @abstractmethod
    def parse(
        self, data: bytes, path: str, *, limits: ReadLimits | None = None, **options: Any
    ) -> tuple[JobTable, ParseReport]:
        """Parse a whole file.

        Parameters
        ----------
        data
            The file's content as UTF-8 text bytes, already checked by :func:`check_text`
            (no NUL bytes, no byte-order mark, ``\\n`` line ends).
        path
            Name used in errors and in the report.
        limits
            Limits of the read (default :class:`ReadLimits()`); :meth:`read` has checked
            the content's size and line lengths already, ``parse`` checks the rest (header
            fields, the Philly JSON log's job objects).
        **options
            Reader-specific options.

        Raises
        ------
        TraceError
            On any input the reader cannot use (see the module docstring for the rule).
        """

    def read(
        self, path: str | os.PathLike[str], *, limits: ReadLimits | None = None, **options: Any
    ) -> tuple[JobTable, ParseReport]:
        """Read a trace file (plain, compressed or in an archive).

        Parameters
        ----------
        path
            The file.
        limits
            Limits of the read (default :class:`ReadLimits()`).
        **options
            Reader-specific options, passed to :meth:`parse`; ``member`` (the file to read
            inside a zip or tar archive) is taken out first.

        Returns
        -------
        jobs : JobTable
            The kept jobs, sorted by submit time.
        report : ParseReport
            What was read, dropped, warned about and assumed.

        Raises
        ------
        TraceError
            If the file cannot be read or is not valid in this format.
        TraceLimitError
            If it passes one of the ``limits``.
        """
        name = os.fspath(path)
        member = options.pop("member", None)
        data = load_text(name, member, limits)
        return self.parse(data, name, limits=limits, **options)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"


# --------------------------------------------------------------------------------------------
# Loading bytes


def load_text(
    path: str | os.PathLike[str], member: str | None = None, limits: ReadLimits | None = None
) -> bytes:
    """The whole decompressed content of ``path`` as checked text (see :func:`check_text`),
    read in bounded pieces within ``limits``.

    Compressed files and archives (gzip, bzip2, xz, zip, tar and compressed tar; see
    :mod:`clustersim.traces.compressed`) are recognised by their magic bytes. A plain file is
    read in one piece once its size is known to be within the limit; compressed content is
    checked piece by piece as it is decompressed (:func:`text_chunks`), so that a
    decompression bomb stops at the limit, and binary data or a long line at the first piece
    that holds it.

    Parameters
    ----------
    path
        The file.
    member
        The file to read inside a zip or tar archive (default: its only file).
    limits
        Limits of the read (default :class:`ReadLimits()`).

    Raises
    ------
    TraceError
        If the file cannot be opened, is a broken compressed stream or archive, the archive
        member cannot be chosen, or the content is not text (see :func:`check_text`).
    TraceLimitError
        If the content is larger than ``limits.max_decompressed_bytes``, has a line longer
        than ``limits.max_line_bytes`` or more lines than ``limits.max_rows``.
    """
    limits = limits or ReadLimits()
    name = os.fspath(path)
    with open_source(name, member, limits) as source:
        if not source.info.layers:  # its size is within the limit (see open_source)
            whole = _read_plain(name)
            if whole is not None and len(whole) <= limits.max_decompressed_bytes:
                data = check_text(whole, name)
                del whole
                check_line_lengths(data, name, limits)
                check_row_count(data, name, limits)
                return data
        out = io.BytesIO()
        for _, piece in text_chunks(source, name, limits=limits):
            out.write(piece)
            del piece
        return out.getvalue()  # the buffer itself, not a copy


def load_bytes(path: str | os.PathLike[str], member: str | None = None) -> bytes:
    """The whole decompressed content of ``path`` (not checked as text), within the default
    :class:`ReadLimits`'s size.

    Parameters
    ----------
    path
        The file.
    member
        The file to read inside a zip or tar archive (default: its only file).

    Raises
    ------
    TraceError
        If the file cannot be opened, is a broken compressed stream or archive, or the
        archive member cannot be chosen.
    TraceLimitError
        If the content is larger than the default ``max_decompressed_bytes``.
    """
    with open_source(path, member) as source:
        return source.read()


def check_line_lengths(data: bytes, path: str, limits: ReadLimits, first_line: int = 1) -> None:
    """Raise :class:`TraceLimitError` at the first line of ``data`` (normalised text whose first
    line is line ``first_line``) longer than ``limits.max_line_bytes``."""
    at = long_line(data, limits.max_line_bytes)
    if at >= 0:
        raise limits.exceeded(
            "max_line_bytes",
            path,
            first_line + data.count(b"\n", 0, at),
            "",
            "line longer than the limit",
        )


def check_row_count(data: bytes, path: str, limits: ReadLimits) -> None:
    """Raise :class:`TraceLimitError` when ``data`` (normalised text) has more lines than
    ``limits.max_rows``, at the first line over it."""
    if len(data) > limits.max_rows:
        buf = np.frombuffer(data, dtype=np.uint8)
        step = 1 << 26  # bounded temporaries; numpy counts 3x faster than bytes.count
        ends = sum(
            int(np.count_nonzero(buf[i : i + step] == ord("\n"))) for i in range(0, len(buf), step)
        )
        lines = ends + (0 if data.endswith(b"\n") else 1)
        if lines > limits.max_rows:
            raise too_many_rows(limits, path, limits.max_rows + 1)


def _read_plain(path: str | os.PathLike[str]) -> bytes | None:
    """The content of a plain file, read in one piece (``None`` if that fails; the caller
    then reads it through its source, which reports the error). Through the source, which
    has read the head already, the content would be copied once more after it is read."""
    try:
        with open(path, "rb", buffering=0) as raw:
            return raw.readall()
    except OSError:  # pragma: no cover - the file went away since it was opened
        return None


def read_head(
    path: str | os.PathLike[str], size: int = HEAD_BYTES, member: str | None = None
) -> bytes:
    """Up to the first ``size`` bytes of ``path`` (decompressed), for sniffing.

    A truncated compressed stream gives what could be decompressed; the full read reports it.

    Raises
    ------
    TraceError
        If the file cannot be opened, its compressed data is broken, or the archive member
        cannot be chosen.
    """
    return read_start(path, size, member)


def check_text(data: bytes, path: str) -> bytes:
    """Check that ``data`` is UTF-8 text and normalise it.

    Returns the bytes without a leading byte-order mark and with ``\\r\\n`` and lone ``\\r``
    line ends replaced by ``\\n``.

    Raises
    ------
    TraceError
        At the line of the first NUL byte or invalid UTF-8 sequence.
    """
    if data.startswith(_BOM):
        data = data[len(_BOM) :]
    if b"\r" in data:
        data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    nul = data.find(b"\x00")
    if nul >= 0:
        raise TraceError(
            path, data.count(b"\n", 0, nul) + 1, "", "binary content (NUL byte): not a text trace"
        )
    try:
        if not data.isascii():  # ASCII is UTF-8; isascii() copies nothing
            data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        col = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise TraceError(
            path, line, "", f"not UTF-8 text (byte 0x{data[exc.start]:02x} at column {col})"
        ) from None
    return data


# --------------------------------------------------------------------------------------------
# Delimited text


class DelimitedText:
    """The non-blank lines of a delimited text file, with line numbers and field counts.

    Scanning is vectorised (numpy over the bytes); it assumes unquoted fields, so each line
    is one record.

    Parameters
    ----------
    data
        Text checked by :func:`check_text`.
    sep
        The one-character field separator.

    Attributes
    ----------
    lines : (m,) int64
        1-based line numbers of the non-blank lines.
    nfields : (m,) int64
        Number of fields on each non-blank line.
    """

    def __init__(self, data: bytes, sep: str) -> None:
        if len(sep) != 1:
            raise ValueError("sep must be one character")
        self.data = data
        self.sep = sep
        self._nfields: IntArray | None = None
        self._scanned = False
        self._lines: IntArray | None = None
        #: Whether the first line is surely not blank (it starts with another character).
        self._first_plain = bool(data) and data[:1] not in (b"\n", b" ", b"\t")

    @property
    def lines(self) -> IntArray:
        """(m,) int64: 1-based line numbers of the non-blank lines."""
        if self._lines is None:
            count = _simple_line_count(self.data)
            if count is not None:
                # Every line is a record, so the line numbers are 1..count and the offsets
                # and field counts are only computed if something asks for them.
                self._lines = np.arange(1, count + 1, dtype=np.int64)
            else:
                self._scan()
        assert self._lines is not None
        return self._lines

    def __bool__(self) -> bool:
        """Whether there is a non-blank line (no scan when the first line is not blank)."""
        return self._first_plain or len(self.lines) > 0

    @property
    def first_line(self) -> int:
        """Line number of the first non-blank line (no scan when it is line 1).

        Raises
        ------
        IndexError
            When every line is blank.
        """
        return 1 if self._first_plain else int(self.lines[0])

    def _scan(self) -> None:
        """Locate the non-blank lines (offsets and line numbers) of the whole buffer."""
        if self._scanned:
            return
        data = self.data
        buf = np.frombuffer(data, dtype=np.uint8)
        newlines = np.flatnonzero(buf == ord("\n"))
        starts = np.concatenate(([0], newlines + 1)).astype(np.int64)
        ends = np.concatenate((newlines, [len(data)])).astype(np.int64)
        if len(data) == 0 or data.endswith(b"\n"):
            starts, ends = starts[:-1], ends[:-1]  # no line after the final newline
        blank = ends == starts
        # Lines that start with a space or tab may hold nothing else: check those few one by
        # one (rare in real traces).
        maybe = np.flatnonzero(~blank)
        maybe = maybe[np.isin(buf[starts[maybe]], (ord(" "), ord("\t")))]
        for i in maybe:
            if not data[starts[i] : ends[i]].strip(b" \t"):
                blank[i] = True
        keep = np.flatnonzero(~blank)
        self._starts = starts[keep]
        self._ends = ends[keep]
        self._lines = (keep + 1).astype(np.int64)
        self._scanned = True

    @property
    def nfields(self) -> IntArray:
        """(m,) int64: number of fields on each non-blank line."""
        if self._nfields is None:
            self._scan()
            buf = np.frombuffer(self.data, dtype=np.uint8)
            seps = np.flatnonzero(buf == ord(self.sep))
            self._nfields = (
                np.searchsorted(seps, self._ends) - np.searchsorted(seps, self._starts) + 1
            ).astype(np.int64)
        return self._nfields

    def __len__(self) -> int:
        return len(self.lines)

    def line_text(self, i: int) -> str:
        """Text of the ``i``-th non-blank line (0-based index into :attr:`lines`)."""
        if not self._scanned and i == 0 and self._first_plain:
            end = self.data.find(b"\n")
            return self.data[: end if end >= 0 else len(self.data)].decode("utf-8")
        self._scan()
        return self.data[self._starts[i] : self._ends[i]].decode("utf-8")

    def fields(self, i: int) -> list[str]:
        """Fields of the ``i``-th non-blank line."""
        return self.line_text(i).split(self.sep)

    def check_field_count(self, path: str, names: list[str], start: int = 0) -> None:
        """Check that the lines from index ``start`` on have ``len(names)`` fields.

        Raises
        ------
        TraceError
            At the first line with another count; the field is the first missing one, or
            ``""`` when the line has too many.
        """
        n = len(names)
        bad = np.flatnonzero(self.nfields[start:] != n)
        if len(bad) == 0:
            return
        i = start + int(bad[0])
        got = int(self.nfields[i])
        what = {",": "comma", "\t": "tab", ";": "semicolon"}.get(self.sep, repr(self.sep))
        raise TraceError(
            path,
            int(self.lines[i]),
            names[got] if got < n else "",
            f"expected {n} {what}-separated fields, found {got}",
        )

    def columns(
        self,
        path: str,
        names: list[str],
        start: int = 0,
        numbers: Mapping[str, bool] | None = None,
        spaces: bool = False,
        skip: Collection[str] = (),
    ) -> dict[str, pa.Array]:
        """The lines from index ``start`` on, split into string columns.

        Parameters
        ----------
        path
            For errors.
        names
            Column names, one per field (duplicates: the last one wins).
        start
            Index of the first line to include (1 to skip a header).
        numbers
            Numeric columns (name → whether empty values are allowed) that may come as
            float64 arrays instead (see :func:`is_numbers`): when the whole file is read in
            one go and every value of them is a number (empty ones, where allowed, are
            nulls). Numbers are read as :func:`to_float` reads them, but without surrounding
            spaces: only files without spaces and tabs qualify, unless ``spaces``.
        spaces
            Whether spaces around numbers may be ignored (the caller trims numbers anyway).
        skip
            Columns the caller does not use: left out of the result (their fields are still
            counted).

        Returns
        -------
        dict of str to pyarrow.StringArray
            ``len(self) - start`` values per column (but those of ``skip``); value ``k`` is
            from line ``self.lines[start + k]``.

        Raises
        ------
        TraceError
            If a line has the wrong number of fields.
        """
        if not self._scanned:
            if numbers and (spaces or (b" " not in self.data and b"\t" not in self.data)):
                where = {name: i for i, name in enumerate(names)}  # the last one wins
                typed = {where[c]: optional for c, optional in numbers.items() if c in where}
                fast = self._columns_plain(names, start, typed, skip)
                if fast is not None:
                    return fast
            fast = self._columns_plain(names, start, None, skip)
            if fast is not None:
                return fast
        self._scan()
        m = len(self) - start
        self.check_field_count(path, names, start)
        if m <= 0:
            return {name: pa.array([], type=pa.string()) for name in names if name not in skip}
        starts, ends = self._starts[start:], self._ends[start:]
        if np.all(starts[1:] == ends[:-1] + 1):
            body = self.data[starts[0] : ends[-1]]  # contiguous: one slice
        else:
            body = b"\n".join(self.data[s:e] for s, e in zip(starts, ends, strict=True))
        positional = [f"f{i}" for i in range(len(names))]
        longest = int((ends - starts).max())
        try:
            table = self._read_csv(body, positional, longest, None, _used(names, skip))
        except (pa.ArrowException, OverflowError) as exc:  # pragma: no cover - defensive
            raise TraceError(path, 0, "", f"cannot split the file into fields: {exc}") from None
        if table.num_rows != m:  # cannot happen with unquoted single-line records
            raise TraceError(path, 0, "", f"internal error: parsed {table.num_rows} of {m} rows")
        pieces = _take_apart(table)
        del table
        return _combined(pieces, names, skip)

    def _columns_plain(
        self,
        names: list[str],
        start: int,
        numbers: dict[int, bool] | None = None,
        skip: Collection[str] = (),
    ) -> dict[str, pa.Array] | None:
        """:meth:`columns` when every line is a record, split by pyarrow in one go; ``None``
        when some line may be blank, or pyarrow refuses the body (e.g. a wrong field count),
        so that the line-by-line path handles the file.

        Blank lines at the end (a file ending in an empty line) are left out. Whether the
        other lines include a blank one need not be checked first when there are two or more
        fields and the separator is not whitespace: pyarrow then skips empty lines, so the
        row count does not match, and refuses lines of spaces and tabs (too few fields).

        ``numbers`` (column index → whether empty values are allowed) asks for float64
        columns; ``None`` unless every such value is a number (not ``nan``), or empty where
        allowed. Columns named in ``skip`` are not converted.
        """
        data = self.data
        if not self._first_plain:
            return None
        if (
            self._lines is None
            and (len(names) < 2 or self.sep in " \t")
            and (len(self.lines) == 0 or self._scanned)  # the exact check found blank lines
        ):
            return None
        end = _end_of_last_record(data)
        count = data.count(b"\n", 0, end) + 1
        offset = 0
        for _ in range(start):
            offset = data.find(b"\n", offset, end) + 1
            if offset <= 0:
                return None
        if end <= offset:
            return None
        positional = [f"f{i}" for i in range(len(names))]
        used = _used(names, skip)
        try:
            table = self._read_csv(
                pa.py_buffer(memoryview(data)[offset:end]), positional, 0, numbers, used
            )
        except (pa.ArrowException, OverflowError, ValueError):
            return None
        if table.num_rows != count - start or table.num_columns != len(used):
            return None
        for i, optional in (numbers or {}).items():
            if positional[i] in used and not _all_numbers(table.column(positional[i]), optional):
                return None
        if self._lines is None:
            self._lines = np.arange(1, count + 1, dtype=np.int64)  # confirmed by pyarrow
        pieces = _take_apart(table)
        del table
        return _combined(pieces, names, skip)

    def _read_csv(
        self,
        body: bytes | pa.Buffer,
        positional: list[str],
        longest: int,
        numbers: dict[int, bool] | None = None,
        used: list[str] | None = None,
    ) -> pa.Table:
        """Split ``body`` (non-blank lines, all with the right field count) with pyarrow;
        columns ``numbers`` (by index) as float64 (empty values null); only the columns
        ``used`` (positional names ``f<i>``; default all)."""
        types = {c: pa.string() for c in positional}
        for i in numbers or {}:
            types[positional[i]] = pa.float64()
        # Blocks of a few MB, split and converted one after the other on this thread: each
        # block's tokens are still in the CPU cache when they are converted, which costs
        # less CPU time than one block for the whole body, even counting the copying of the
        # columns' pieces together afterwards. A block holds at least one whole line (a
        # longer line makes pyarrow refuse the body: the fast path then leaves the file to
        # the line-by-line path, which knows the longest line).
        return pacsv.read_csv(
            pa.BufferReader(body),
            read_options=pacsv.ReadOptions(
                column_names=positional,
                use_threads=False,
                block_size=min(max(_BLOCK_BYTES, 2 * longest + 64), 1 << 30),
            ),
            parse_options=pacsv.ParseOptions(
                delimiter=self.sep,
                quote_char=False,
                double_quote=False,
                escape_char=False,
                newlines_in_values=False,
                # An empty line would otherwise be a row of empty values: skipped, it makes the
                # row count differ (see _columns_plain). The line-by-line path has none.
                ignore_empty_lines=True,
            ),
            convert_options=pacsv.ConvertOptions(
                column_types=types,
                include_columns=used if used is not None and len(used) < len(positional) else [],
                null_values=[""] if numbers else [],
                strings_can_be_null=False,
                quoted_strings_can_be_null=False,
                check_utf8=False,  # the text was checked when it was loaded
            ),
        )


def _used(names: list[str], skip: Collection[str]) -> list[str]:
    """Positional names (``f<i>``) of the columns not in ``skip``."""
    return [f"f{i}" for i, name in enumerate(names) if name not in skip]


#: Block size of :meth:`DelimitedText._read_csv`.
_BLOCK_BYTES = 4 << 20


def _end_of_last_record(data: bytes) -> int:
    """Where the last line that is not blank ends (its line end or the end of ``data``)."""
    end = len(data)
    while end > 0:  # back over trailing spaces, tabs and line ends, 4 kB at a time
        low = max(0, end - 4096)
        kept = len(data[low:end].rstrip(b" \t\n"))
        if kept:
            end = low + kept
            break
        end = low
    newline = data.find(b"\n", end)
    return len(data) if newline < 0 else newline


def _one_chunk(values: pa.ChunkedArray) -> pa.Array:
    """A chunked column as one array (without a copy when it has one chunk)."""
    return values.chunk(0) if values.num_chunks == 1 else values.combine_chunks()


def _all_numbers(values: pa.ChunkedArray, optional: bool) -> bool:
    """Whether a float64 column read by pyarrow holds only numbers (not ``nan``), and no
    null (empty value) unless ``optional``."""
    return (optional or not values.null_count) and not pc.any(pc.is_nan(values)).as_py()


def _take_apart(table: pa.Table) -> dict[str, pa.ChunkedArray]:
    """The columns of ``table`` by name."""
    return dict(zip(table.column_names, table.columns, strict=True))


def _combined(
    pieces: dict[str, pa.ChunkedArray], names: list[str], skip: Collection[str]
) -> dict[str, pa.Array]:
    """The columns of a table read by :meth:`DelimitedText._read_csv` (``pieces``, by
    positional name ``f<i>``; emptied) as single arrays, by ``names`` (duplicates: the last
    one wins; ``skip``: left out).

    Each column's pieces are let go as soon as they are copied together, so that the memory
    they held serves the next column (when the caller holds no other reference to them).
    """
    out: dict[str, pa.Array] = {}
    for i, name in enumerate(names):
        column = pieces.pop(f"f{i}", None)
        if column is not None and name not in skip:
            out[name] = _one_chunk(column)
        del column
    return out


def _simple_line_count(data: bytes) -> int | None:
    """The number of lines of ``data`` when it surely has no blank line (no line is empty or
    starts with a space or tab), else ``None`` (also when in doubt)."""
    if not data or data[:1] in (b"\n", b" ", b"\t"):
        return None
    buf = np.frombuffer(data, dtype=np.uint8)
    newline = buf == ord("\n")
    # In doubt when a line end is followed by a byte <= " " (a line end, space, tab, ...).
    if (newline[:-1] & (buf[1:] <= ord(" "))).any():
        return None
    return int(np.count_nonzero(newline)) + (0 if data.endswith(b"\n") else 1)


def sniff_header(head: bytes, required: tuple[str, ...], sep: str = ",") -> bool:
    """Whether the first line of a sniffing head is a header holding the ``required`` columns.

    Parameters
    ----------
    head
        The head given to :meth:`TraceReader.sniff` (any bytes).
    required
        Lower-case column names that must all appear.
    sep
        The field separator.

    Returns
    -------
    bool
        True when the first non-blank line, split at ``sep``, trimmed and lower-cased, names
        every column of ``required`` (in any order, among others). Never raises.
    """
    lines = head_lines(head, limit=1)
    if not lines:
        return False
    names = {c.strip().lower() for c in lines[0].split(sep)}
    return set(required) <= names


def header_fields(text: DelimitedText, path: str, limits: ReadLimits | None = None) -> list[str]:
    """The fields of a delimited file's header (its first non-blank line), as written.

    Raises
    ------
    TraceError
        If the file has no non-blank line (``"empty file"``, line 0).
    TraceLimitError
        At the header line when it has more than ``limits.max_header_fields`` fields
        (counted before the line is split).
    """
    if not text:
        raise TraceError(path, 0, "", "empty file")
    return checked_header(text.line_text(0), text.sep, path, text.first_line, limits)


def checked_header(
    line: str, sep: str, path: str, line_number: int, limits: ReadLimits | None = None
) -> list[str]:
    """A header line split at ``sep``, once its field count is known to be within
    ``limits.max_header_fields`` (else :class:`TraceLimitError` at ``line_number``)."""
    limits = limits or ReadLimits()
    if line.count(sep) >= limits.max_header_fields:
        raise limits.exceeded(
            "max_header_fields",
            path,
            line_number,
            "",
            f"header has {line.count(sep) + 1:,} fields, more than the limit",
        )
    return line.split(sep)


def header_names(
    text: DelimitedText,
    path: str,
    required: tuple[str, ...],
    limits: ReadLimits | None = None,
) -> list[str]:
    """The column names of a delimited file's header line, checked.

    Parameters
    ----------
    text
        The file; its first non-blank line is the header.
    path
        For errors.
    required
        Lower-case columns the header must have (shown as written in the error).
    limits
        Limits of the read (``max_header_fields``; default :class:`ReadLimits()`).

    Returns
    -------
    list of str
        One name per header field, trimmed and lower-cased.

    Raises
    ------
    TraceError
        If the file has no non-blank line (``"empty file"``, line 0), or at the header line
        when a required column is missing (naming the first missing one, in ``required``
        order) or a column appears twice (naming the alphabetically first such column).
    TraceLimitError
        At the header line when it has more than ``limits.max_header_fields`` fields.
    """
    names = [c.strip().lower() for c in header_fields(text, path, limits)]
    line = text.first_line
    present = set(names)
    for col in required:
        if col not in present:
            raise TraceError(path, line, col, f"missing column (header must include {required})")
    if len(present) < len(names):
        counts = Counter(names)
        dupes = sorted(c for c, k in counts.items() if c and k > 1)
        if dupes:
            shown = ", ".join(repr(c) for c in dupes[:10])
            more = f" and {len(dupes) - 10} more" if len(dupes) > 10 else ""
            raise TraceError(
                path, line, dupes[0], f"column appears twice in the header ({shown}{more})"
            )
    return names


def data_columns(
    text: DelimitedText,
    path: str,
    names: list[str],
    report: ParseReport,
    numbers: Mapping[str, bool] | None = None,
) -> tuple[dict[str, pa.Array], IntArray]:
    """The data rows below a delimited file's header line, by column name.

    Parameters
    ----------
    text, path
        As for :func:`header_names`.
    names
        The header's column names (see :func:`header_names`).
    report
        Receives :attr:`ParseReport.jobs_read` (the number of data rows).
    numbers
        Numeric columns that may come as numbers (see :meth:`DelimitedText.columns`).

    Returns
    -------
    cols : dict of str to pyarrow.StringArray
        Each column's values as written, one per data row.
    lines : (m,) int64
        Line number of each data row.

    Raises
    ------
    TraceError
        If a data row has the wrong number of fields, or the file has no data row.
    """
    cols = text.columns(path, names, start=1, numbers=numbers)
    lines = text.lines[1:]
    set_jobs_read(report, path, len(lines))
    return cols, lines


def read_header_table(
    data: bytes,
    path: str,
    required: tuple[str, ...],
    report: ParseReport,
    sep: str = ",",
    numbers: Mapping[str, bool] | None = None,
    limits: ReadLimits | None = None,
) -> tuple[dict[str, pa.Array], IntArray]:
    """Split a delimited file with a header line into columns named by the header.

    :func:`header_names` then :func:`data_columns` on ``DelimitedText(data, sep)``.

    Parameters
    ----------
    data
        Text checked by :func:`check_text`.
    path
        For errors.
    required
        Lower-case columns the header must have.
    report
        Receives :attr:`ParseReport.jobs_read`.
    sep
        The one-character field separator.
    numbers
        Numeric columns that may come as numbers (see :meth:`DelimitedText.columns`).
    limits
        Limits of the read (``max_header_fields``).

    Returns
    -------
    cols : dict of str to pyarrow.StringArray
        Values by lower-cased header name, one per data row.
    lines : (m,) int64
        Line number of each data row.

    Raises
    ------
    TraceError
        If the file is empty, the header lacks a required column or repeats one, a data row
        has the wrong number of fields, or there is no data row.
    """
    text = DelimitedText(data, sep)
    return data_columns(text, path, header_names(text, path, required, limits), report, numbers)


#: Files up to this size may be read by :func:`small_rows`, without pyarrow. Importing pyarrow
#: (and pandas, which its conversions import) takes a few tenths of a second once per process;
#: reading a file of this size in pure Python takes under 10 ms (a few ms more than pyarrow,
#: once imported, needs).
SMALL_BYTES = 256 * 1024
#: A number as :func:`small_columns` converts it (plain decimal; anything else, like
#: ``inf`` or surrounding spaces, leaves the file to pyarrow).
_PLAIN_NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
#: Bytes that pyarrow and Python might trim differently (control characters but tab).
_ODD_BYTES = re.compile(rb"[\x00-\x08\x0b-\x1f\x7f]")


def small_rows(data: bytes, sep: str) -> tuple[IntArray, list[list[str]]] | None:
    """The non-blank lines of a small, plain file split at ``sep``, in pure Python (no
    pyarrow import); ``None`` unless the file is at most :data:`SMALL_BYTES` of ASCII without
    control characters (but tabs), so that the caller takes the pyarrow path.

    Blank lines (empty, or only spaces and tabs) are skipped and counted as lines, as
    :class:`DelimitedText` does.

    Returns
    -------
    lines : (m,) int64
        1-based line number of each non-blank line.
    rows : list of list of str
        Its fields, as written.
    """
    if len(data) > SMALL_BYTES or not data.isascii() or _ODD_BYTES.search(data):
        return None
    kept = [(i + 1, row) for i, row in enumerate(data.decode("ascii").split("\n"))]
    kept = [(i, row) for i, row in kept if row.strip(" \t")]
    lines = np.array([i for i, _ in kept], dtype=np.int64)
    return lines, [row.split(sep) for _, row in kept]


def small_columns(
    names: Sequence[str],
    rows: list[list[str]],
    required: Collection[str] = (),
    numbers: Collection[str] = (),
) -> tuple[dict[str, ObjArray], dict[str, FloatArray]] | None:
    """Columns of :func:`small_rows`' rows as :class:`ColumnParser` would convert them, or
    ``None`` when it might not (the caller then takes the pyarrow path, which reads the file
    or reports its first problem): when a row has another field count than ``names``, a
    ``required`` value is blank, or a value of ``numbers`` is not a plain decimal number
    (see :data:`_PLAIN_NUMBER`; ``inf``, ``nan``, surrounding spaces and empty values are
    left to pyarrow).

    Parameters
    ----------
    names
        One distinct name per field.
    rows
        The data rows (not a header).
    required
        Columns whose values must not be blank.
    numbers
        Columns to convert to float64 (as :meth:`ColumnParser.numbers` does).

    Returns
    -------
    text : dict of str to (m,) object
        Every column's values as written (Python strings).
    values : dict of str to (m,) float64
        The ``numbers`` columns.
    """
    if not rows or len(set(names)) != len(names) or any(len(r) != len(names) for r in rows):
        return None
    columns = [np.array(col, dtype=object) for col in zip(*rows, strict=True)]
    text = dict(zip(names, columns, strict=True))
    if any(not v.strip() for name in required for v in text[name]):
        return None
    match = _PLAIN_NUMBER.fullmatch
    if any(match(v) is None for name in numbers for v in text[name]):
        return None
    values = {name: np.array([float(v) for v in text[name]], dtype=np.float64) for name in numbers}
    return text, values


def small_header_table(
    data: bytes,
    path: str,
    required: tuple[str, ...],
    report: ParseReport,
    numbers: Collection[str] = (),
    sep: str = ",",
    limits: ReadLimits | None = None,
) -> tuple[dict[str, ObjArray], dict[str, FloatArray], IntArray] | None:
    """:func:`read_header_table` and the conversions of :class:`ColumnParser` for a small,
    plain file, in pure Python (no pyarrow import).

    :func:`small_rows`, the header's names checked (every ``required`` column, none
    repeated), then :func:`small_columns`; ``None`` when either gives ``None`` or the
    header has one of those problems, so that the caller takes the pyarrow path, which
    reads the file the same way or reports its first problem.

    Parameters
    ----------
    data, path, required, report, sep, limits
        As for :func:`read_header_table`; ``report`` receives :attr:`ParseReport.jobs_read`
        only when the file is read (a header over ``limits.max_header_fields`` is left to
        the pyarrow path, which reports it).
    numbers
        Columns to convert to float64 (as :meth:`ColumnParser.numbers` would).

    Returns
    -------
    text : dict of str to (m,) object
        Every column's values as written (Python strings), by lower-cased header name.
    values : dict of str to (m,) float64
        The ``numbers`` columns.
    lines : (m,) int64
        Line number of each data row.
    """
    split = small_rows(data, sep)
    if split is None or len(split[1]) < 2:
        return None
    lines, rows = split
    if len(rows[0]) > (limits or ReadLimits()).max_header_fields:
        return None
    names = [c.strip().lower() for c in rows[0]]
    if any(c not in names for c in required):
        return None
    columns = small_columns(names, rows[1:], required, numbers)
    if columns is None:
        return None
    report.jobs_read = len(rows) - 1
    return *columns, lines[1:]


def small_trimmed(values: ObjArray, rows: IntArray) -> ObjArray:
    """:func:`trimmed_text` of a column read by :func:`small_header_table`."""
    return np.array([v.strip() for v in values[rows]], dtype=object)


def set_jobs_read(report: ParseReport, path: str, count: int) -> None:
    """Set :attr:`ParseReport.jobs_read` to ``count``.

    Raises
    ------
    TraceError
        When ``count`` is 0: the file holds a header but no job.
    """
    report.jobs_read = count
    if count == 0:
        raise TraceError(path, 0, "", "no jobs in the file (header only)")


# --------------------------------------------------------------------------------------------
# Column conversion

#: What a number looks like (used only to locate values pyarrow refused to convert).
_NUMBER = (
    r"^[+-]?(?:(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
    r"|[iI][nN][fF](?:[iI][nN][iI][tT][yY])?)$"
)
_TIME_TEXT = "YYYY-MM-DD HH:MM:SS"


class ColumnParser:
    """Converts string columns of one table, remembering the first bad value of each.

    The conversions are vectorised. Call :meth:`check` after converting every required
    column: it raises at the earliest line with a bad value (the first-converted column on a
    tie), so the user sees the first problem in the file, not the first problem in the first
    column.

    Parameters
    ----------
    path
        For errors.
    lines : (m,) int64
        Line number of each row.
    """

    def __init__(self, path: str, lines: IntArray) -> None:
        self.path = path
        self.lines = lines
        self._first: list[tuple[int, int, str, str]] = []

    def _record(self, bad: BoolArray, values: pa.Array, name: str, what: str) -> None:
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            text = str(values[i].as_py())
            msg = "empty" if not text.strip() else f"{what}: {_clip(text)!r}"
            self._first.append((int(self.lines[i]), len(self._first), name, msg))

    def numbers(self, values: pa.Array, name: str) -> FloatArray:
        """A required numeric column as float64.

        Numbers are decimal, optionally signed, with an optional exponent; ``inf`` and
        overflowing values become ``±inf`` (readers drop those rows). Empty values,
        surrounding spaces and anything else (including ``nan``) are errors.
        """
        if is_numbers(values):
            return numbers_of(values)
        out, bad = to_float(values)
        self._record(bad, values, name, "not a number")
        return out

    def timestamps(self, values: pa.Array, name: str) -> npt.NDArray[np.datetime64]:
        """A required column of naive calendar times ``YYYY-MM-DD HH:MM:SS``.

        A ``T`` may replace the space. Impossible dates and times (February 30, 24:00:00,
        leap seconds) are errors.

        Returns
        -------
        (m,) datetime64[s]
        """
        out, bad = to_datetime(values)
        self._record(bad, values, name, f"not a time of the form {_TIME_TEXT}")
        return out

    def text(self, values: pa.Array, name: str) -> ObjArray:
        """A required text column (values kept exactly as written); blank values are errors."""
        self._record(blank(values), values, name, "empty")
        return np.asarray(values.to_numpy(zero_copy_only=False), dtype=object)

    def required(self, values: pa.Array, name: str) -> None:
        """Check a required text column without converting it: blank values are errors."""
        self._record(blank(values), values, name, "empty")

    def check(self) -> None:
        """Raise :class:`TraceError` at the earliest bad value found so far, if any."""
        if self._first:
            line, _, name, msg = min(self._first)
            raise TraceError(self.path, line, name, msg)


def is_numbers(values: pa.Array) -> bool:
    """Whether a column came as numbers (see :meth:`DelimitedText.columns`), not as text."""
    return bool(pa.types.is_floating(values.type))


def numbers_of(values: pa.Array) -> FloatArray:
    """A column that came as numbers, as a writable float64 array (nulls: ``nan``)."""
    out = values.to_numpy(zero_copy_only=False)
    if out.dtype != np.float64 or not out.flags.writeable:  # a view of pyarrow's memory
        out = np.array(out, dtype=np.float64)
    return out


def blank(values: pa.Array) -> BoolArray:
    """(m,) bool: values that are empty or only whitespace."""
    if _edges_plain(values, allow_empty=False):
        return np.zeros(len(values), dtype=bool)
    trimmed = pc.utf8_trim_whitespace(values)
    return np.asarray(pc.equal(trimmed, "").to_numpy(zero_copy_only=False), dtype=bool)


def no_blank(values: pa.Array) -> bool:
    """True when surely no value is empty or only whitespace (no string is copied); ``False``
    when in doubt."""
    return _edges_plain(values, allow_empty=False)


def trim(values: pa.Array) -> pa.Array:
    """``values`` without surrounding whitespace (``values`` itself when no value has any)."""
    if _edges_plain(values, allow_empty=True):
        return values
    return pc.utf8_trim_whitespace(values)


def string_offsets(values: pa.Array) -> npt.NDArray[np.integer[Any]]:
    """(m + 1,) The offsets of a string array's values into its data buffer (a view)."""
    buf = values.buffers()[1]
    width = np.int64 if pa.types.is_large_string(values.type) else np.int32
    if buf is None:
        return np.zeros(len(values) + 1, dtype=width)
    offsets: npt.NDArray[np.integer[Any]] = np.frombuffer(buf, dtype=width)
    return offsets[values.offset : values.offset + len(values) + 1]


def _edges_plain(values: pa.Array, allow_empty: bool) -> bool:
    """Whether no value of a string array starts or ends with whitespace, and (unless
    ``allow_empty``) none is empty; ``False`` when in doubt.

    Looks at the first and last byte of each value only: every whitespace character is
    ASCII at most ``0x20`` or a multi-byte UTF-8 sequence (bytes ``>= 0x80``), so values whose
    edge bytes are printable ASCII have nothing to trim. When every byte of the values is
    printable ASCII (the usual case), so are the edge bytes, and they need not be picked out.
    """
    n = len(values)
    if n == 0:
        return True
    if values.null_count or not (
        pa.types.is_string(values.type) or pa.types.is_large_string(values.type)
    ):
        return False
    offsets = string_offsets(values)
    starts, ends = offsets[:-1], offsets[1:]
    empty = ends == starts
    some_empty = bool(empty.any())
    if some_empty and not allow_empty:
        return False
    if int(offsets[-1]) == int(offsets[0]):  # every value empty
        return True
    data = np.frombuffer(values.buffers()[2], dtype=np.uint8)
    text = data[int(offsets[0]) : int(offsets[-1])]
    if int(text.min()) >= 0x21 and int(text.max()) < 0x80:
        return True
    if some_empty:
        starts, ends = starts[~empty], ends[~empty]
    first, last = data[starts], data[ends - 1]
    return bool(((first - np.uint8(0x21) < 0x5F) & (last - np.uint8(0x21) < 0x5F)).all())


def trimmed_text(values: pa.Array, rows: IntArray) -> ObjArray:
    """The values on ``rows`` (indices into ``values``) without surrounding whitespace.

    Returns
    -------
    (len(rows),) object
        Python strings.
    """
    return np.asarray(trimmed(values, rows).to_numpy(zero_copy_only=False), dtype=object)


def trimmed(values: pa.Array, rows: IntArray) -> pa.Array:
    """Like :func:`trimmed_text`, as a pyarrow string array (for :func:`build_table`, which
    makes Python strings of the values only once they are in submit order)."""
    return trim(values.take(pa.array(rows)))


def int_ids(values: pa.Array) -> IntArray | None:
    """The ids as int64 when every one is an integer written the usual way (the text of the
    number: no sign but ``-``, no leading zero), so that equal numbers are equal texts; else
    ``None``."""
    try:
        numbers = pc.cast(values, pa.int64())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    if not pc.all(pc.equal(pc.cast(numbers, pa.string()), values)).as_py():
        return None
    return np.asarray(numbers.to_numpy(zero_copy_only=False), dtype=np.int64)


def later_repeats(values: pa.Array) -> BoolArray:
    """(m,) bool: values equal to an earlier value (the first of each is not marked).

    ``values`` is a pyarrow array, or a sequence of Python strings (as
    :func:`small_header_table` reads them).
    """
    out = np.zeros(len(values), dtype=bool)
    if not is_arrow_array(values):
        seen: set[str] = set()
        for i, v in enumerate(values):
            if v in seen:
                out[i] = True
            seen.add(v)
        return out
    numbers = int_ids(values)
    if numbers is not None:  # numeric ids: no hashing of strings, ascending ones not sorted
        if len(numbers) < 2 or bool(np.all(numbers[1:] > numbers[:-1])):
            return out
        order = np.argsort(numbers, kind="stable")
        ordered = numbers[order]
        out[order[1:][ordered[1:] == ordered[:-1]]] = True
        return out
    enc = pc.dictionary_encode(values)
    if len(enc.dictionary) < len(values):
        code = np.asarray(enc.indices.to_numpy(zero_copy_only=False), dtype=np.int64)
        out[:] = True
        out[np.unique(code, return_index=True)[1]] = False
    return out


def index_ids(rows: IntArray) -> pa.Array:
    """Job ids that are row indices (``rows``, int) as text, a pyarrow string array for
    :func:`build_table` (cheaper than Python ints that the table turns into text)."""
    return pc.cast(pa.array(np.asarray(rows, dtype=np.int64)), pa.string())


def to_float(values: pa.Array) -> tuple[FloatArray, BoolArray]:
    """Convert a string column to float64.

    Returns
    -------
    numbers : (m,) float64
        ``nan`` where the value is not a number.
    bad : (m,) bool
        Values that are not numbers (empty, text, ``nan``).
    """
    try:
        out = _cast_float(values)
    except pa.ArrowInvalid:
        ok = np.asarray(
            pc.match_substring_regex(values, _NUMBER).to_numpy(zero_copy_only=False), dtype=bool
        )
        try:
            out = _cast_float(pc.if_else(pa.array(ok), values, "nan"))
        except pa.ArrowInvalid:  # pragma: no cover - pyarrow refused a number the regex took
            out = np.array([_float_or_nan(v) for v in values.to_pylist()], dtype=np.float64)
        out[~ok] = np.nan
    return out, np.isnan(out)


def _cast_float(values: pa.Array) -> FloatArray:
    arr = pc.cast(values, pa.float64()).to_numpy(zero_copy_only=False)
    return np.array(arr, dtype=np.float64)  # a writable copy


def to_datetime(values: pa.Array) -> tuple[npt.NDArray[np.datetime64], BoolArray]:
    """Convert ``YYYY-MM-DD HH:MM:SS`` strings (or with a ``T``) to datetime64[s].

    Returns
    -------
    times : (m,) datetime64[s]
        ``NaT`` where the value is not such a time.
    bad : (m,) bool
        Values of another form, or impossible dates or times.
    """
    n = len(values)
    out = np.full(n, np.datetime64("NaT"), dtype="datetime64[s]")
    if n == 0:
        return out, np.zeros(0, dtype=bool)
    fast = _iso_times(values)
    if fast is not None:
        return fast, np.zeros(n, dtype=bool)
    offsets = string_offsets(values)
    buf = values.buffers()[2]
    data = np.frombuffer(buf, dtype=np.uint8) if buf is not None else np.zeros(0, np.uint8)
    rows = np.flatnonzero(np.diff(offsets) == 19)
    if len(rows) == n:  # the usual case: every value has the right length, back to back
        chars = data[offsets[0] : offsets[0] + 19 * n].reshape(n, 19)
    else:
        chars = data[offsets[rows].astype(np.int64)[:, None] + np.arange(19)]
    digits = chars[:, _TIME_DIGITS] - np.uint8(ord("0"))  # wraps around below "0"
    ok = np.all(digits <= 9, axis=1)
    ok &= (chars[:, 4] == ord("-")) & (chars[:, 7] == ord("-"))
    ok &= (chars[:, 10] == ord(" ")) | (chars[:, 10] == ord("T"))
    ok &= (chars[:, 13] == ord(":")) & (chars[:, 16] == ord(":"))
    d = digits.astype(np.int32)
    year = d[:, 0] * 1000 + d[:, 1] * 100 + d[:, 2] * 10 + d[:, 3]
    month, day = d[:, 4] * 10 + d[:, 5], d[:, 6] * 10 + d[:, 7]
    hour, minute, second = (
        d[:, 8] * 10 + d[:, 9],
        d[:, 10] * 10 + d[:, 11],
        d[:, 12] * 10 + d[:, 13],
    )
    leap = (year % 4 == 0) & ((year % 100 != 0) | (year % 400 == 0))
    month_days = _MONTH_DAYS[np.clip(month, 1, 12) - 1] + ((month == 2) & leap)
    ok &= (month >= 1) & (month <= 12) & (day >= 1) & (day <= month_days)
    ok &= (hour < 24) & (minute < 60) & (second < 60)
    days = _days_from_civil(year, month, day).astype(np.int64)
    seconds = days * 86400 + (hour * 3600 + minute * 60 + second)
    out[rows[ok]] = seconds[ok].astype("datetime64[s]")
    return out, np.isnat(out)


def _iso_times(values: pa.Array) -> npt.NDArray[np.datetime64] | None:
    """:func:`to_datetime` of a column whose every value is a good time, by Arrow's ISO 8601
    parser; ``None`` when some value is not (or may not be) one.

    The parser accepts exactly the 19-character values of the form ``YYYY-MM-DD HH:MM:SS``
    (a space or a ``T`` in the middle, real dates and times, no leap second, no zone offset
    for a zone-less type; shorter forms such as ``YYYY-MM-DD`` have other lengths); anything
    else makes it raise.
    """
    if values.null_count or not bool(np.all(np.diff(string_offsets(values)) == 19)):
        return None
    try:
        stamps = pc.cast(values, pa.timestamp("s"))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    return np.array(stamps.to_numpy(zero_copy_only=False), dtype="datetime64[s]")


_TIME_DIGITS = [0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15, 17, 18]
_MONTH_DAYS = np.array([31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31], dtype=np.int32)


def _days_from_civil(year: np.ndarray, month: np.ndarray, day: np.ndarray) -> np.ndarray:
    """Days since 1970-01-01 of proleptic Gregorian dates (H. Hinnant's algorithm)."""
    y = year - (month <= 2)
    era = y // 400
    yoe = y - era * 400
    doy = (153 * np.where(month > 2, month - 3, month + 9) + 2) // 5 + day - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def _float_or_nan(value: object) -> float:
    try:
        return float(str(value))
    except ValueError:
        return float("nan")


def _clip(text: str, limit: int = 40) -> str:
    return text if len(text) <= limit else text[:limit] + "…"


# --------------------------------------------------------------------------------------------
# Row checks and building the table


def drop_rows(
    report: ParseReport, lines: IntArray, checks: list[tuple[str, BoolArray]]
) -> BoolArray:
    """Apply row-level checks in order; return the mask of rows to keep.

    :func:`apply_checks` with ``report`` receiving one drop reason per check that matched
    rows (a row counted under the first check it fails).
    """
    return apply_checks(report.drop, lines, checks)


def apply_checks(
    record: Callable[[str, IntArray], None], lines: IntArray, checks: list[tuple[str, BoolArray]]
) -> BoolArray:
    """Apply row-level checks in order, handing each failing row to ``record`` once.

    Parameters
    ----------
    record
        Called as ``record(reason, failed_lines)`` for each check that newly matched rows
        (never with an empty array).
    lines : (m,) int64
        Line numbers of the rows.
    checks
        ``(reason, bad)`` pairs, ``bad`` an (m,) bool mask. A row is counted under the first
        check it fails.

    Returns
    -------
    (m,) bool
        True for rows that pass every check.
    """
    keep = np.ones(len(lines), dtype=bool)
    for reason, bad in checks:
        hit = bad & keep
        if hit.any():
            record(reason, lines[hit])
            keep &= ~hit
    return keep


def gpu_counts(values: FloatArray) -> tuple[BoolArray, BoolArray, BoolArray]:
    """Row checks for a gang-size column held as floats.

    Returns
    -------
    below_one, not_integer, too_large : (m,) bool
        Rows with fewer than 1 device, a fractional (or non-finite) count, and more than
        :data:`MAX_GPUS` devices.
    """
    with np.errstate(invalid="ignore"):
        below = values < 1
        too_large = values > MAX_GPUS
        not_integer = ~np.isfinite(values) | (np.floor(values) != values)
    return below, not_integer & ~below & ~too_large, too_large & ~below


def gpu_checks(values: FloatArray, name: str, below: str = "< 1") -> list[tuple[str, BoolArray]]:
    """The three gang-size row checks of :func:`gpu_counts`, for :func:`drop_rows`.

    Parameters
    ----------
    values : (m,) float64
        The gang-size column.
    name
        The column's name in the trace, used in the reasons.
    below
        How the reason for fewer than one device reads after ``name`` (e.g. ``"<= 0"``).

    Returns
    -------
    list of (str, (m,) bool)
        ``(f"{name} {below}", ...)``, ``(f"{name} not an integer", ...)`` and
        ``(f"{name} > {MAX_GPUS}", ...)``, in that order.
    """
    below_one, not_integer, too_large = gpu_counts(values)
    return [
        (f"{name} {below}", below_one),
        (f"{name} not an integer", not_integer),
        (f"{name} > {MAX_GPUS}", too_large),
    ]


def build_table(
    path: str,
    report: ParseReport,
    lines: npt.ArrayLike | None = None,
    fields: Mapping[str, str] | None = None,
    **columns: Any,
) -> JobTable:
    """Build the table, finish the report's totals and time span, and check it is non-empty
    and every value is within range.

    Parameters
    ----------
    path
        For errors.
    report
        Receives the totals and the time span.
    lines : (n,) int, optional
        Line number of each row (in the order of the columns), for errors.
    fields
        Job-table column → the trace field (or expression) it comes from, for errors
        (default: the column's name).
    **columns
        The job table's columns (see :meth:`JobTable.from_columns`).

    Raises
    ------
    TraceError
        If no job is left; at the first line (the smallest line number) with a value out of
        the ranges in the module docstring, naming the trace's field; or (a reader bug) if
        the table rejects a column.
    """
    n = len(columns["submit_time"])
    report.jobs_kept = n
    report.jobs_dropped = report.jobs_read - n
    if n == 0:
        if report.jobs_read == 0:
            raise TraceError(path, 0, "", "no jobs in the file")
        reasons = ", ".join(f"{k}: {v.count}" for k, v in report.drop_reasons.items())
        raise TraceError(
            path, 0, "", f"no valid job: all {report.jobs_read} rows dropped ({reasons})"
        )
    check_ranges(path, columns, lines, fields)
    try:
        table = JobTable.from_columns(**_submit_sorted(columns))
    except ClustersimError as exc:
        raise TraceError(path, 0, "", str(exc)) from None
    report.time_span_s = float(table.submit_time[-1] - table.submit_time[0])
    return table


#: Per numeric job-table column: (lowest, highest, whether nan means "none", unit text).
_RANGES: dict[str, tuple[float, float, bool, str]] = {
    "submit_time": (0.0, MAX_TIME_S, False, "s"),
    "work": (0.0, MAX_WORK, False, "reference s or steps"),
    "num_gpus": (1, MAX_GPUS, False, "devices"),
    "min_gpus": (1, MAX_GPUS, False, "devices"),
    "max_gpus": (1, MAX_GPUS, False, "devices"),
    "deadline": (-(MAX_TIME_S + MAX_WORK), MAX_TIME_S + MAX_WORK, True, "s"),
    "cpu": (0.0, MAX_CPU, True, "cores"),
    "mem_gb": (0.0, MAX_MEM_GB, True, "GB"),
    "priority": (-MAX_PRIORITY, MAX_PRIORITY, False, ""),
}


def check_ranges(
    path: str,
    columns: Mapping[str, Any],
    lines: npt.ArrayLike | None = None,
    fields: Mapping[str, str] | None = None,
) -> None:
    """Check the numeric columns of a job table against the ranges in the module docstring.

    Parameters
    ----------
    path
        For errors.
    columns
        Job-table columns by name (those absent or ``None`` are not checked).
    lines : (n,) int, optional
        Line number of each row, for errors (without them, errors are at line 0 and name
        the row).
    fields
        Job-table column → trace field, for errors.

    Raises
    ------
    TraceError
        At the earliest line holding a value out of range (the first column, in the order
        above, on a tie), naming the trace's field.
    """
    at = None if lines is None else np.asarray(lines, dtype=np.int64)
    worst: tuple[int, int, str, str] | None = None
    for order, (name, (low, high, optional, unit)) in enumerate(_RANGES.items()):
        values = columns.get(name)
        if values is None:
            continue
        try:
            arr = np.asarray(values, dtype=np.float64)
        except (TypeError, ValueError):
            continue  # not numbers: the table reports it
        if arr.ndim != 1 or len(arr) == 0:
            continue
        lowest, highest = float(arr.min()), float(arr.max())  # nan when some value is nan
        if lowest >= low and highest <= high and (name != "work" or lowest > 0):
            continue
        with np.errstate(invalid="ignore"):
            bad = ~((arr >= low) & (arr <= high))
            if optional:
                bad &= ~np.isnan(arr)
            if name == "work":
                bad |= arr == 0
        if not bad.any():
            continue
        rows = np.flatnonzero(bad)
        if at is not None and len(at) == len(arr):
            row = int(rows[np.argmin(at[rows])])
            key = (int(at[row]), order)
        else:
            row = int(rows[0])
            key = (0, order)
        if worst is None or key < worst[:2]:
            worst = (*key, name, _range_text(name, arr[row], low, high, unit, row, at))
    if worst is not None:
        line, _, name, message = worst
        raise TraceError(path, line, (fields or {}).get(name, name), message)


def _range_text(
    name: str, value: float, low: float, high: float, unit: str, row: int, at: IntArray | None
) -> str:
    where = "" if at is not None and len(at) > row else f"; row {row} of the kept jobs"
    unit = f" {unit}" if unit else ""
    if name == "work":
        bounds = f"must be > 0 and <= {high:g}{unit}"
    elif low == -high:
        bounds = f"must be within ±{high:g}{unit}"
    else:
        bounds = f"must be within [{low:g}, {high:g}]{unit}"
    return f"{name} = {value:g} is out of range ({bounds}{where})"


def _submit_sorted(columns: dict[str, Any]) -> dict[str, Any]:
    """The columns for :meth:`JobTable.from_columns`, already in its (stable) submit order.

    The table sorts every column, its defaults too, unless they come sorted; sorting only the
    given ones first is cheaper and gives the same table. Text columns may be pyarrow arrays
    (see :func:`arrow_objects`): they are sorted before they become Python strings. Columns
    of unexpected shapes are left for the table to report.
    """
    try:
        key = np.asarray(columns["submit_time"], dtype=np.float64)
    except (KeyError, TypeError, ValueError):
        return columns
    n = len(key) if key.ndim == 1 else -1
    for values in columns.values():
        if values is None:
            continue
        if (not is_arrow_array(values) and np.ndim(values) != 1) or len(values) != n:
            return columns
    with np.errstate(invalid="ignore"):
        ordered = bool(np.all(key[1:] >= key[:-1]))
    order = None if ordered else np.argsort(key, kind="stable")
    out: dict[str, Any] = {}
    for name, values in columns.items():
        if is_arrow_array(values):
            if order is not None:
                values = values.take(pa.array(order))
            if not (name == "job_id" and _plain_strings(values)):
                values = arrow_objects(values)
        elif order is not None and values is not None:
            values = np.asarray(values)[order]
        out[name] = values
    return out


def _plain_strings(values: pa.Array) -> bool:
    """Whether ``values`` is a string array without nulls: the job table takes such job ids
    as they are (its elements are already ``str``), without a second pass over the values."""
    return values.null_count == 0 and (
        pa.types.is_string(values.type) or pa.types.is_large_string(values.type)
    )


def arrow_objects(values: pa.Array) -> ObjArray:
    """A pyarrow (string) array as an object array of Python values.

    A dictionary array's values become one Python object per distinct value (cheaper for
    repeated names, like users).
    """
    if pa.types.is_dictionary(values.type):
        names = np.asarray(values.dictionary.to_numpy(zero_copy_only=False), dtype=object)
        codes = np.asarray(values.indices.to_numpy(zero_copy_only=False), dtype=np.int64)
        return names[codes]
    return np.asarray(values.to_numpy(zero_copy_only=False), dtype=object)


def check_options(reader: TraceReader, path: str, options: dict[str, Any], known: set[str]) -> None:
    """Raise :class:`TraceError` naming any option ``reader`` does not accept."""
    unknown = sorted(set(options) - known)
    if unknown:
        accepted = ", ".join(sorted(known)) or "none"
        raise TraceError(
            path,
            0,
            unknown[0],
            f"unknown option(s) {', '.join(unknown)} for format {reader.name!r} "
            f"(accepted: {accepted})",
        )


def positive_option(value: Any, path: str, option: str, label: str | None = None) -> float:
    """A reader option (or one of its entries) that must be a positive finite number.

    Parameters
    ----------
    value
        The value given (anything ``float()`` accepts).
    path
        For errors.
    option
        The option's name: the error's field.
    label
        How the error names the value (default ``option``), e.g. ``"work_s['bert']"``.

    Raises
    ------
    TraceError
        ``"<label> must be a positive number"``, at line 0.
    """
    try:
        x = float(value)
    except (TypeError, ValueError):
        x = math.nan
    if not (math.isfinite(x) and x > 0):
        raise TraceError(path, 0, option, f"{label or option} must be a positive number")
    return x


def positive_map_option(value: Any, path: str, option: str, keys: str) -> dict[str, float]:
    """A reader option mapping names to positive numbers of seconds (``None``: empty).

    Parameters
    ----------
    value
        The value given: ``None`` or a mapping.
    path
        For errors.
    option
        The option's name.
    keys
        What the keys name, for the error (e.g. ``"model names"``).

    Returns
    -------
    dict of str to float
        The entries, keys as ``str``.

    Raises
    ------
    TraceError
        If ``value`` is not a mapping (``"<option> must map <keys> to seconds"``) or an entry
        is not a positive number (``"<option>[<key>] must be a positive number"``).
    """
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise TraceError(path, 0, option, f"{option} must map {keys} to seconds")
    return {str(k): positive_option(v, path, option, f"{option}[{k!r}]") for k, v in value.items()}


def name_list_option(value: Any, path: str, option: str, what: str) -> list[str] | None:
    """A reader option listing names (``None`` when not given).

    Parameters
    ----------
    value
        The value given: ``None`` or an iterable (not a string).
    path
        For errors.
    option
        The option's name.
    what
        What the names are, for the error (e.g. ``"pod phases"``).

    Returns
    -------
    list of str or None
        The names as ``str``, in the order given.

    Raises
    ------
    TraceError
        If ``value`` is a string or not iterable (``"<option> must be a list of <what>"``),
        or is empty (``"<option> is empty"``).
    """
    if value is None:
        return None
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise TraceError(path, 0, option, f"{option} must be a list of {what}")
    out = [str(v) for v in value]
    if not out:
        raise TraceError(path, 0, option, f"{option} is empty")
    return out


def head_lines(head: bytes, limit: int = 5) -> list[str]:
    """Up to ``limit`` complete non-blank lines of a sniffing head, decoded leniently.

    A last line cut off by the head size is included only when the head is the whole file
    (shorter than :data:`HEAD_BYTES`).
    """
    if head.startswith(_BOM):
        head = head[len(_BOM) :]
    text = head.decode("utf-8", errors="replace").replace("\r\n", "\n").replace("\r", "\n")
    parts = text.split("\n")
    if len(head) >= HEAD_BYTES and len(parts) > 1:
        parts = parts[:-1]
    return [p for p in parts if p.strip(" \t")][:limit]
