"""Limits on what the trace readers read, so that no input can exhaust a worker.

An upload limit bounds only the size of the file as stored: a gzip file of 11 MB can hold
11 GiB of text, and a line or a header of ten million fields costs time and memory however
small the file. Every reader therefore reads its input in bounded pieces and stops, with a
:class:`~clustersim.errors.TraceLimitError` naming the file, the line (where there is one)
and the limit, as soon as the input passes one of these limits:

``max_decompressed_bytes`` (default 384 MiB)
    Bytes of the decompressed content (of the archive member that is read, and, for a
    compressed tar archive, of the archive itself, which must be decompressed to list it;
    a plain file's size). It bounds the time any reader spends, and the memory of the readers
    that hold the whole text (all but ``csv``, ``helios`` and ``philly_raw``, which read in
    chunks). Readers that hold the text need up to about 4.5 bytes of memory per byte of it
    (measured with Philly CSVs of 400-byte rows: 2.3 GB peak for 0.5 GiB, 1.75 GB for 372
    MiB), so that 384 MiB keeps a parse task under 2 GB. It is 1.5 times the web app's default
    upload limit (256 MB), and above the public job tables (Helios' largest cluster log and
    Alibaba PAI 2020's task table are 120 to 250 MB of text), so that they may be uploaded
    compressed.
``max_streamed_bytes`` (default 16 GiB)
    Bytes of the decompressed content for the readers that read it in chunks (``csv``,
    ``helios`` and ``philly_raw``): their memory is bounded by ``max_rows``, not by the
    size of the text, so that this limit only bounds the time spent reading (the raw Philly
    ``cluster_job_log``, which ``philly_raw`` must accept, is 6.6 GB; it streams at several
    tens of MB a second, well within the parse task's time limit).
``max_line_bytes`` (default 1 MiB)
    Bytes of one line (line end excluded) of a line-based format, and characters of one job
    object of the Philly JSON log (whose objects may all share one line). Rows of the public
    traces are under 1 kB and Philly job objects under 100 kB.
``max_header_fields`` (default 10,000)
    Fields of a header line. The public traces have at most a dozen columns.
``max_rows`` (default 2,500,000)
    Lines of a line-based format (the header and blank lines count), or job objects of the
    Philly JSON log. Parsing costs about 150 to 650 bytes a row (by format, see ``make
    bench``; 2.49 million Alibaba openb pods peak at 1.8 GB), so that a file of short rows (a
    gzip of one repeated line, or 256 MB of ``0,1,1``) cannot grow a parse task past 2 GB
    before it meets the byte limit. The largest public job tables hold under 2 million rows
    (Helios' Saturn cluster log, Alibaba PAI 2020's job and task tables).

Archives also may not hold more than :data:`MAX_ARCHIVE_MEMBERS` entries (a fixed bound: an
archive of a trace holds a handful of files).

Callers pass a :class:`ReadLimits` as ``read_trace(path, format, limits=...)``; the command
line reads them from the environment variables named in :data:`ENVIRONMENT` (which the web
app's settings use too), and the messages say so.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, fields

from clustersim.errors import ClustersimError, TraceLimitError

#: Default of :attr:`ReadLimits.max_decompressed_bytes`: 384 MiB.
MAX_DECOMPRESSED_BYTES = 384 << 20
#: Default of :attr:`ReadLimits.max_streamed_bytes`: 16 GiB.
MAX_STREAMED_BYTES = 16 << 30
#: Default of :attr:`ReadLimits.max_line_bytes`: 1 MiB.
MAX_LINE_BYTES = 1 << 20
#: Default of :attr:`ReadLimits.max_header_fields`.
MAX_HEADER_FIELDS = 10_000
#: Default of :attr:`ReadLimits.max_rows`.
MAX_ROWS = 2_500_000
#: Most entries (files, folders, links) a zip or tar archive may hold.
MAX_ARCHIVE_MEMBERS = 10_000

#: Environment variable (and web-app setting) of each limit.
ENVIRONMENT = {
    "max_decompressed_bytes": "CLUSTERSIM_TRACE_MAX_DECOMPRESSED_BYTES",
    "max_streamed_bytes": "CLUSTERSIM_TRACE_MAX_STREAMED_BYTES",
    "max_line_bytes": "CLUSTERSIM_TRACE_MAX_LINE_BYTES",
    "max_header_fields": "CLUSTERSIM_TRACE_MAX_HEADER_FIELDS",
    "max_rows": "CLUSTERSIM_TRACE_MAX_ROWS",
}


@dataclass(frozen=True)
class ReadLimits:
    """Limits on one read of a trace (see the module docstring for what each bounds).

    Attributes
    ----------
    max_decompressed_bytes : int
        Most bytes of decompressed content (default 384 MiB).
    max_streamed_bytes : int
        Most bytes of decompressed content for the readers that read in chunks (default
        16 GiB).
    max_line_bytes : int
        Most bytes of one line (and characters of one Philly JSON job object; default 1 MiB).
    max_header_fields : int
        Most fields of a header line (default 10,000).
    max_rows : int
        Most lines of a line-based file, or job objects of a Philly JSON log (default
        2,500,000).

    Raises
    ------
    ValueError
        If a limit is not a positive integer.
    """

    max_decompressed_bytes: int = MAX_DECOMPRESSED_BYTES
    max_streamed_bytes: int = MAX_STREAMED_BYTES
    max_line_bytes: int = MAX_LINE_BYTES
    max_header_fields: int = MAX_HEADER_FIELDS
    max_rows: int = MAX_ROWS

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"ReadLimits.{f.name} must be a positive integer, not {value!r}")

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> ReadLimits:
        """The limits given by the environment variables of :data:`ENVIRONMENT` (defaults for
        those not set).

        Raises
        ------
        ClustersimError
            If a variable is set to something other than a positive integer.
        """
        env = os.environ if environ is None else environ
        values: dict[str, int] = {}
        for name, var in ENVIRONMENT.items():
            text = env.get(var)
            if text is None or not text.strip():
                continue
            try:
                values[name] = int(text.strip().replace("_", ""))
            except ValueError:
                values[name] = 0
            if values[name] < 1:
                raise ClustersimError(
                    f"environment variable {var}={text!r} is not a positive integer"
                )
        return cls(**values)

    def exceeded(self, limit: str, path: str, line: int, field: str, what: str) -> TraceLimitError:
        """The error for input over ``limit`` (an attribute name).

        Parameters
        ----------
        limit
            ``"max_decompressed_bytes"``, ``"max_streamed_bytes"``, ``"max_line_bytes"``,
            ``"max_header_fields"`` or ``"max_rows"``.
        path, line, field
            Where (as for :class:`~clustersim.errors.TraceError`).
        what
            What is too large, e.g. ``"line longer than the limit"``.
        """
        value = int(getattr(self, limit))
        message = (
            f"{what} of {describe(limit, value)} ({limit}={value}; raise it with the "
            f"{ENVIRONMENT[limit]} setting, or ReadLimits({limit}=...) in Python)"
        )
        return TraceLimitError(path, line, field, message, limit, value)


def describe(limit: str, value: int) -> str:
    """A limit's value for people: bytes in binary units (``"1 GiB"``), counts as numbers."""
    if limit == "max_header_fields":
        return f"{value:,} fields"
    if limit == "max_rows":
        return f"{value:,} rows"
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if value >= size:
            amount = value / size
            text = f"{amount:.0f}" if amount == int(amount) else f"{amount:.1f}"
            return f"{text} {unit}"
    return f"{value} bytes"
