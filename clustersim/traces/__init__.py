"""Trace readers: public cluster traces → :class:`~clustersim.jobs.JobTable` (DESIGN §3.2).

>>> from clustersim.traces import read_trace
>>> jobs, report = read_trace("philly.csv")            # doctest: +SKIP
>>> jobs, report = read_trace("0e4a51.trace.gz", format="gavel")  # doctest: +SKIP

Every reader returns the table and a :class:`ParseReport`; every failure is a
:class:`~clustersim.errors.TraceError` naming the file, line and field (see
:mod:`clustersim.traces.base` for which problems fail the file and which only drop a row).
Reading is bounded by a :class:`ReadLimits` (decompressed bytes, line length, header fields,
rows;
see :mod:`clustersim.traces.limits`):

>>> limits = ReadLimits(max_line_bytes=4 << 20)
>>> jobs, report = read_trace("big.csv.gz", limits=limits)  # doctest: +SKIP

Adding a format
---------------
1. Write ``clustersim/traces/<format>.py`` with one :class:`TraceReader` subclass: ``name``,
   ``description``, ``sniff`` (never raises, looks only at the head bytes) and ``parse``
   (use :class:`~clustersim.traces.base.DelimitedText` and
   :class:`~clustersim.traces.base.ColumnParser` for delimited text: they are vectorised
   and give exact line numbers).
2. Add one line to :data:`READERS` below. Its position is its priority in auto-detection:
   specific formats before generic ones.
3. Add ``tests/test_traces_<format>.py`` and the reader to the fuzz battery's list.
"""

from __future__ import annotations

import os
from typing import Any

from clustersim.errors import TraceError
from clustersim.jobs import JobTable
from clustersim.traces.alibaba_openb import AlibabaOpenbReader
from clustersim.traces.alibaba_pai import AlibabaPaiReader
from clustersim.traces.base import HEAD_BYTES, ParseReport, TraceReader
from clustersim.traces.compressed import sniff_input
from clustersim.traces.gaia import GaiaReader
from clustersim.traces.gavel import GavelReader
from clustersim.traces.generic import GenericCsvReader
from clustersim.traces.helios import HeliosReader
from clustersim.traces.limits import ReadLimits
from clustersim.traces.philly import PhillyReader
from clustersim.traces.philly_raw import PhillyRawReader
from clustersim.traces.pollux import PolluxReader
from clustersim.traces.synergy import SynergyReader
from clustersim.traces.tiresias import TiresiasReader

__all__ = [
    "READERS",
    "ParseReport",
    "ReadLimits",
    "TraceReader",
    "detect_format",
    "formats",
    "get_reader",
    "read_trace",
]

#: Registered readers by name, in auto-detection order.
READERS: dict[str, TraceReader] = {
    reader.name: reader
    for reader in (
        PhillyReader(),
        PhillyRawReader(),
        GavelReader(),
        HeliosReader(),
        AlibabaPaiReader(),
        AlibabaOpenbReader(),
        PolluxReader(),
        TiresiasReader(),
        SynergyReader(),
        GaiaReader(),
        GenericCsvReader(),  # generic: keep last
    )
}


def formats() -> dict[str, str]:
    """Registered format names with their one-line descriptions, in detection order."""
    return {name: reader.description for name, reader in READERS.items()}


def get_reader(format: str, path: str = "") -> TraceReader:
    """The reader registered as ``format``.

    Raises
    ------
    TraceError
        If no reader has that name (the message lists the known ones).
    """
    try:
        return READERS[format]
    except (KeyError, TypeError):
        raise TraceError(
            path, 0, "format", f"unknown format {format!r}; known formats: {_known()}"
        ) from None


def detect_format(
    path: str | os.PathLike[str], member: str | None = None, limits: ReadLimits | None = None
) -> str:
    """Name of the first registered reader whose ``sniff`` accepts the file.

    Compressed files and archives are sniffed on their decompressed content; ``member``
    chooses the file inside a zip or tar archive. Only a bounded head is read: leading blank
    lines are skipped (in constant memory, up to ``limits.max_decompressed_bytes``) and
    readers sniff the first :data:`~clustersim.traces.base.HEAD_BYTES` after them.

    Raises
    ------
    TraceError
        If the file cannot be read, is blank, or no reader recognises it.
    TraceLimitError
        If blank lines go on past ``limits.max_decompressed_bytes``.
    """
    name = os.fspath(path)
    head, base = sniff_input(name, HEAD_BYTES, member, limits)
    if not head:
        raise TraceError(name, 0, "", "empty file")
    for reader in READERS.values():
        if reader.sniff(head, base):
            return reader.name
    raise TraceError(name, 0, "format", f"unrecognised trace format; choose one of: {_known()}")


def read_trace(
    path: str | os.PathLike[str],
    format: str | None = None,
    *,
    limits: ReadLimits | None = None,
    **options: Any,
) -> tuple[JobTable, ParseReport]:
    """Read a trace file (plain, compressed or in a zip/tar archive) into a job table.

    Parameters
    ----------
    path
        The file.
    format
        Registered reader name (see :func:`formats`); ``None`` detects it from the content.
    limits
        Limits of the read: decompressed bytes, line length, header fields, rows (default
        :class:`ReadLimits()`; see :mod:`clustersim.traces.limits`).
    **options
        Passed to the reader; every reader accepts ``member``, the file to read inside a zip
        or tar archive (default: the archive's only file).

    Returns
    -------
    jobs : JobTable
        The kept jobs, sorted by submit time.
    report : ParseReport
        Counts, drop reasons, warnings and assumptions.

    Raises
    ------
    TraceError
        If the format is unknown or cannot be detected, or the file is not valid in it.
    TraceLimitError
        If the file passes one of the ``limits`` (the message names it and how to raise it).
    """
    name = os.fspath(path)
    if format is not None:
        reader = get_reader(format, name)
    else:
        reader = READERS[detect_format(name, options.get("member"), limits)]
    return reader.read(name, limits=limits, **options)


def _known() -> str:
    return ", ".join(READERS)
