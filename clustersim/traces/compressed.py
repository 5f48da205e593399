"""Compressed and archived trace files: open, choose the member, read in bounded chunks.

Every trace reader gets its bytes through :func:`open_source`, so every format can be read
from any of these containers (detected by their magic bytes, never by the file name):

- ``gzip`` (``.gz``), ``bzip2`` (``.bz2``) and ``xz`` (``.xz``): one compressed stream
  (concatenated gzip members are read as one file, like ``gunzip`` does);
- ``zip`` (``.zip``): one member of the archive;
- ``tar``, plain or gzip/bzip2/xz-compressed (``.tar``, ``.tar.gz``, ``.tgz``, ...): one
  regular file of the archive. Listing a compressed tar decompresses it once, and reading the
  member decompresses it again, so a ``.tar.gz`` costs two passes, three with format
  detection (memory stays bounded).

A member of an archive may itself be gzip/bzip2/xz-compressed (``traces.zip`` holding
``cluster_log.csv.gz``); it is decompressed too. Nesting goes no deeper.

Choosing the member
-------------------
Without ``member``, an archive must hold exactly one candidate file: directories, links and
the metadata that archivers add (``__MACOSX/``, ``._*`` and ``.DS_Store`` entries) are not
candidates. An archive with several candidates is an error whose message lists them. With
``member``, the file is the one with exactly that path in the archive, or else the only one
with that base name.

Streaming and limits
--------------------
:class:`Source` reads the decompressed bytes piece by piece, so a reader that consumes them in
chunks (:func:`text_chunks`, or the raw Philly JSON reader) holds only one chunk in memory,
however large the file. Damaged compressed data is reported as a
:class:`~clustersim.errors.TraceError` (line 0) whenever it is met, which may be late in a
large file. The decompressed size is limited (:class:`~clustersim.traces.limits.ReadLimits`):
a source never produces more than ``max_decompressed_bytes`` bytes, a compressed tar archive
is not decompressed past that size to list it, and :func:`text_chunks` stops at a line longer
than ``max_line_bytes``; each raises :class:`~clustersim.errors.TraceLimitError`. An archive
may hold at most :data:`~clustersim.traces.limits.MAX_ARCHIVE_MEMBERS` entries.
"""

from __future__ import annotations

import bz2
import contextlib
import io
import lzma
import os
import posixpath
import struct
import tarfile
import zipfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from types import TracebackType
from typing import IO, Any, Protocol

import numpy as np

from clustersim.errors import TraceError, TraceLimitError
from clustersim.traces.limits import MAX_ARCHIVE_MEMBERS, ReadLimits

#: Magic bytes of the single-stream compressors, by container name.
MAGIC: dict[str, bytes] = {
    "gzip": b"\x1f\x8b",
    "bzip2": b"BZh",
    "xz": b"\xfd7zXZ\x00",
}
_ZIP_MAGIC = (b"PK\x03\x04", b"PK\x05\x06", b"PK\x07\x08")
#: File-name suffixes the containers usually have; removed to get the name readers sniff.
SUFFIXES = (".gz", ".tgz", ".bz2", ".tbz2", ".xz", ".txz", ".zip", ".tar")
#: How many member names an error message lists.
LIST_MEMBERS = 20
#: Default size of the pieces :func:`text_chunks` reads, bytes.
CHUNK_BYTES = 8 * 1024 * 1024
#: Largest central directory of a zip archive read, bytes (about 1 kB an entry).
MAX_ZIP_DIRECTORY_BYTES = MAX_ARCHIVE_MEMBERS * 1024
_DECOMPRESSED = "max_decompressed_bytes"

_BOM = b"\xef\xbb\xbf"
#: What decompressors and archive readers raise on damaged data.
_DAMAGE = (
    OSError,
    EOFError,
    zlib.error,
    lzma.LZMAError,
    zipfile.BadZipFile,
    tarfile.TarError,
    struct.error,
    NotImplementedError,
    RuntimeError,
    ValueError,
)


class _Readable(Protocol):
    def read(self, size: int = -1, /) -> bytes: ...


class _Closable(Protocol):
    def close(self) -> None: ...


class _Stream(_Readable, _Closable, Protocol):
    pass


@dataclass(frozen=True)
class SourceInfo:
    """Where a trace's bytes come from.

    Attributes
    ----------
    path : str
        The file, as given by the caller.
    layers : tuple of str
        Containers from the outside in, e.g. ``("zip", "gzip")``; ``()`` for a plain file.
    member : str or None
        Path of the member inside an archive, else ``None``.
    name : str
        Base name of the data itself (the member's, or the file's) without container
        suffixes such as ``.gz``: what :meth:`~clustersim.traces.base.TraceReader.sniff` sees.
    """

    path: str
    layers: tuple[str, ...] = ()
    member: str | None = None
    name: str = ""

    def describe(self) -> str:
        """One line for parse reports, e.g. ``"member 'a.csv' of a zip archive"``;
        ``""`` for a plain file."""
        if not self.layers:
            return ""
        if self.member is None:
            return f"{'-'.join(self.layers)}-compressed file"
        outer = [k for k in self.layers if k not in ("zip", "tar")]
        archive = "zip" if "zip" in self.layers else "tar"
        wrapped = self.layers.index(archive)
        kind = "-".join([*outer[:wrapped], archive])
        inner = outer[wrapped:]
        text = f"member {self.member!r} of a {kind} archive"
        return text + (f" ({'-'.join(inner)}-compressed)" if inner else "")


class Source:
    """The decompressed bytes of a trace file, read piece by piece.

    Use as a context manager; :meth:`read` raises :class:`TraceError` (line 0) on damaged
    compressed data, and :class:`~clustersim.errors.TraceLimitError` once the content passes
    ``limits.max_decompressed_bytes``. Create with :func:`open_source`.

    Attributes
    ----------
    info : SourceInfo
        What was opened.
    limits : ReadLimits
        The limits of this read.
    """

    def __init__(
        self,
        stream: _Readable,
        info: SourceInfo,
        closers: list[_Closable],
        limits: ReadLimits | None = None,
        byte_limit: str = _DECOMPRESSED,
    ) -> None:
        self._stream = stream
        self.info = info
        self._closers = closers
        self.limits = limits or ReadLimits()
        self._byte_limit = byte_limit
        self._produced = 0

    def read(self, size: int = -1) -> bytes:
        """Up to ``size`` bytes (all the rest when negative); ``b""`` at the end.

        Raises
        ------
        TraceLimitError
            When the content read so far passes ``limits.max_decompressed_bytes`` (no more
            than one byte past it is ever decompressed).
        """
        if size < 0:
            parts = []
            while part := self.read(CHUNK_BYTES):
                parts.append(part)
            return b"".join(parts)
        cap = int(getattr(self.limits, self._byte_limit))
        want = min(size, cap - self._produced + 1)
        try:
            parts = []
            while want > 0:  # some decompressors return short reads before the end
                part = self._stream.read(want)
                if not part:
                    break
                parts.append(part)
                want -= len(part)
        except TraceError:
            raise
        except _DAMAGE as exc:
            raise _damaged(self.info, exc) from None
        out = parts[0] if len(parts) == 1 else b"".join(parts)
        self._produced += len(out)
        if self._produced > cap:
            raise too_large(self.info, self.limits, self._byte_limit)
        return out

    def close(self) -> None:
        """Close every file this source opened (idempotent)."""
        _close_all(self._closers)
        self._closers = []

    def __enter__(self) -> Source:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def too_large(info: SourceInfo, limits: ReadLimits, byte_limit: str = _DECOMPRESSED) -> TraceError:
    """The error for content over the byte limit ``byte_limit`` (an attribute of
    :class:`ReadLimits`: ``max_decompressed_bytes``, or ``max_streamed_bytes`` for a reader
    that streams)."""
    what = "decompressed content" if info.layers else "file"
    return limits.exceeded(byte_limit, info.path, 0, "", f"{what} larger than the limit")


class TruncatedError(TraceError):
    """Compressed data that ends early (a :class:`TraceError` at line 0)."""


def _damaged(info: SourceInfo, exc: BaseException) -> TraceError:
    kind = "/".join(info.layers) or "trace"
    cls = TruncatedError if isinstance(exc, EOFError) else TraceError
    return cls(info.path, 0, "", f"not a valid {kind} file: {exc or type(exc).__name__}")


def _compression(head: bytes) -> str | None:
    for kind, magic in MAGIC.items():
        if head.startswith(magic):
            return kind
    return None


def _decompressor(kind: str, raw: Any) -> _Stream:
    """A decompressing reader over ``raw`` (any object with ``read``; typeshed wants files)."""
    if kind == "gzip":
        import gzip

        return gzip.GzipFile(fileobj=raw, mode="rb")
    if kind == "bzip2":
        return bz2.BZ2File(raw, mode="rb")
    return lzma.LZMAFile(raw, mode="rb")


def _is_tar(head: bytes) -> bool:
    """A POSIX/GNU tar header (``ustar`` magic at offset 257 and a valid checksum), or the
    all-zero end block that an empty archive starts with."""
    if len(head) >= 512 and not head[:512].strip(b"\x00"):
        return True
    if len(head) < 512 or head[257:262] != b"ustar":
        return False
    try:
        stored = int(head[148:156].split(b"\x00", 1)[0].strip() or b"-1", 8)
    except ValueError:
        return False
    computed = sum(head[:148]) + 8 * 32 + sum(head[156:512])
    return stored == computed


def _is_junk(name: str) -> bool:
    base = posixpath.basename(name.rstrip("/"))
    return name.startswith("__MACOSX/") or base.startswith("._") or base == ".DS_Store"


def _strip_suffixes(name: str) -> str:
    lower = name.lower()
    changed = True
    while changed:
        changed = False
        for suffix in SUFFIXES:
            if lower.endswith(suffix) and len(lower) > len(suffix):
                name, lower = name[: -len(suffix)], lower[: -len(suffix)]
                changed = True
    return name


def data_name(path: str, member: str | None = None) -> str:
    """Base name of the data without container suffixes (``a.csv.gz`` → ``a.csv``)."""
    return _strip_suffixes(posixpath.basename(member) if member else os.path.basename(path))


def _choose(path: str, kind: str, names: list[str], member: str | None) -> str:
    """The member to read, by the rules in the module docstring."""
    candidates = [n for n in names if not _is_junk(n)]
    listing = ", ".join(repr(n) for n in candidates[:LIST_MEMBERS])
    if len(candidates) > LIST_MEMBERS:
        listing += f", ... ({len(candidates) - LIST_MEMBERS} more)"
    if member is not None:
        if member in names:
            return member
        same_base = [n for n in candidates if posixpath.basename(n) == member]
        if len(same_base) == 1:
            return same_base[0]
        holds = f"it holds: {listing}" if candidates else "it holds no file"
        raise TraceError(path, 0, "member", f"no file {member!r} in the {kind} archive; {holds}")
    if len(candidates) == 1:
        return candidates[0]
    if not candidates:
        raise TraceError(path, 0, "", f"the {kind} archive holds no file")
    raise TraceError(
        path,
        0,
        "member",
        f"the {kind} archive holds {len(candidates)} files; choose one with member=: {listing}",
    )


class _Prefixed:
    """A stream with some already-read bytes put back in front."""

    def __init__(self, prefix: bytes, stream: _Readable) -> None:
        self._prefix = prefix
        self._stream = stream

    def read(self, size: int = -1) -> bytes:
        if self._prefix:
            if size < 0:
                out, self._prefix = self._prefix + self._stream.read(), b""
                return out
            out, self._prefix = self._prefix[:size], self._prefix[size:]
            return out
        return self._stream.read(size)


def open_source(
    path: str | os.PathLike[str],
    member: str | None = None,
    limits: ReadLimits | None = None,
    *,
    streamed: bool = False,
) -> Source:
    """Open a trace file for reading its decompressed bytes.

    Parameters
    ----------
    path
        The file: plain, compressed or an archive (see the module docstring).
    member
        The file to read inside a zip or tar archive (default: its only file).
    limits
        Limits of the read (default :class:`ReadLimits()`).
    streamed
        The reader holds only a bounded piece of the content at a time (its memory is bounded
        by ``limits.max_rows`` instead): ``limits.max_streamed_bytes`` bounds the content
        instead of ``limits.max_decompressed_bytes``.

    Returns
    -------
    Source
        A context manager with a ``read(size)`` method.

    Raises
    ------
    TraceError
        If the file cannot be opened, its container is damaged, ``member`` is given for a
        file that is not an archive or is not in it, or the archive does not hold exactly one
        candidate file and no ``member`` was given.
    TraceLimitError
        If a plain file is larger than the byte limit (``limits.max_decompressed_bytes``, or
        ``max_streamed_bytes`` when ``streamed``), an archive holds more than
        :data:`~clustersim.traces.limits.MAX_ARCHIVE_MEMBERS` entries, or a compressed tar
        archive decompresses to more than the byte limit.
    """
    name = os.fspath(path)
    limits = limits or ReadLimits()
    try:
        raw = open(name, "rb")  # noqa: SIM115 - closed by the Source
    except OSError as exc:
        raise TraceError(name, 0, "", f"cannot read file: {exc.strerror or exc}") from None
    closers: list[_Closable] = [raw]
    layers: list[str] = []
    byte_limit = "max_streamed_bytes" if streamed else _DECOMPRESSED
    try:
        return _open(raw, name, member, closers, layers, limits, byte_limit)
    except TraceError:
        _close_all(closers)
        raise
    except _DAMAGE as exc:
        _close_all(closers)
        raise _damaged(SourceInfo(name, tuple(layers), None, data_name(name)), exc) from None


def _close_all(closers: list[_Closable]) -> None:
    for closer in reversed(closers):
        with contextlib.suppress(*_DAMAGE):
            closer.close()


def _open(
    raw: IO[bytes],
    name: str,
    member: str | None,
    closers: list[_Closable],
    layers: list[str],
    limits: ReadLimits,
    byte_limit: str,
) -> Source:
    """Open the containers of ``raw``, appending their names to ``layers`` as it goes."""
    head = raw.read(512)
    raw.seek(0)
    stream: _Readable
    if head.startswith(_ZIP_MAGIC):
        layers.append("zip")
        _check_zip_directory(raw, name, limits)
        try:
            archive = zipfile.ZipFile(raw)
        except _DAMAGE as exc:
            raise TraceError(name, 0, "", f"not a valid zip file: {exc}") from None
        closers.append(archive)
        infos = [i for i in archive.infolist() if not i.is_dir()]
        chosen = _choose(name, "zip", [i.filename for i in infos], member)
        try:
            member_stream = archive.open(chosen)
        except _DAMAGE as exc:
            raise TraceError(
                name, 0, "member", f"cannot read {chosen!r} in the zip archive: {exc}"
            ) from None
        closers.append(member_stream)
        stream = member_stream
        inner_name: str | None = chosen
    else:
        kind = _compression(head)
        inner_head = head
        if kind is not None:
            probe = _decompressor(kind, raw)
            try:
                inner_head = probe.read(512)
            except _DAMAGE:
                inner_head = b""  # reported when the data is read
            probe.close()
            raw.seek(0)
        if _is_tar(inner_head):
            if kind is not None:
                layers.append(kind)
            layers.append("tar")
            info = SourceInfo(name, tuple(layers), None, data_name(name))
            tar_stream: Any = raw
            if kind is not None:
                tar_stream = _decompressor(kind, raw)
                closers.append(tar_stream)
            capped = _Capped(tar_stream, info, limits, byte_limit)
            try:
                archive_t = tarfile.open(fileobj=capped, mode="r:")  # type: ignore[call-overload]  # noqa: SIM115
                closers.append(archive_t)
                files = _tar_files(archive_t, name)
            except TraceError:
                raise
            except _DAMAGE as exc:
                what = f"{kind}-compressed tar" if kind else "tar"
                raise TraceError(name, 0, "", f"not a valid {what} file: {exc}") from None
            chosen = _choose(name, "tar", [m.name for m in files], member)
            extracted = archive_t.extractfile(next(m for m in files if m.name == chosen))
            assert extracted is not None  # regular files always extract
            stream = extracted
            inner_name = chosen
        else:
            if member is not None:
                raise TraceError(
                    name, 0, "member", "member given, but the file is not a zip or tar archive"
                )
            if kind is None:
                info = SourceInfo(name, (), None, data_name(name))
                if os.fstat(raw.fileno()).st_size > getattr(limits, byte_limit):
                    raise too_large(info, limits, byte_limit)  # before anything is read
                return Source(raw, info, closers, limits, byte_limit)
            layers.append(kind)
            decompressed = _decompressor(kind, raw)
            closers.append(decompressed)
            return Source(
                decompressed,
                SourceInfo(name, tuple(layers), None, data_name(name)),
                closers,
                limits,
                byte_limit,
            )
    # Inside an archive: the member may be compressed itself.
    first = stream.read(6)
    stream = _Prefixed(first, stream)
    inner_kind = _compression(first)
    if inner_kind is not None:
        layers.append(inner_kind)
        stream = _decompressor(inner_kind, stream)
    return Source(
        stream,
        SourceInfo(name, tuple(layers), inner_name, data_name(name, inner_name)),
        closers,
        limits,
        byte_limit,
    )


class _Capped:
    """A seekable stream (a tar archive's, maybe decompressed) that may not be read or
    sought past ``cap`` bytes: listing a compressed tar archive decompresses it, and tarfile
    reads some headers (long names, pax records) whole."""

    def __init__(self, stream: Any, info: SourceInfo, limits: ReadLimits, byte_limit: str) -> None:
        self._stream = stream
        self._cap = int(getattr(limits, byte_limit))
        self._info = info
        self._limits = limits
        self._byte_limit = byte_limit

    def read(self, size: int = -1) -> bytes:
        room = self._cap - self._stream.tell()
        if size < 0 or size > room:
            out: bytes = self._stream.read(room + 1)
            if len(out) > room:
                raise too_large(self._info, self._limits, self._byte_limit)
            return out
        data: bytes = self._stream.read(size)
        return data

    def seek(self, offset: int, whence: int = 0) -> int:
        if whence == 0 and offset > self._cap:
            raise too_large(self._info, self._limits, self._byte_limit)
        pos: int = self._stream.seek(offset, whence)
        return pos

    def tell(self) -> int:
        pos: int = self._stream.tell()
        return pos


def _tar_files(archive: tarfile.TarFile, name: str) -> list[tarfile.TarInfo]:
    """The regular files of a tar archive, listed one header at a time.

    Raises
    ------
    TraceLimitError
        When the archive holds more than :data:`MAX_ARCHIVE_MEMBERS` entries.
    """
    files = []
    for count, entry in enumerate(archive, 1):
        if count > MAX_ARCHIVE_MEMBERS:
            raise _too_many(name, "tar")
        if entry.isreg():
            files.append(entry)
    return files


def _too_many(name: str, kind: str) -> TraceLimitError:
    return TraceLimitError(
        name,
        0,
        "",
        f"the {kind} archive holds more than {MAX_ARCHIVE_MEMBERS:,} entries "
        "(a fixed limit: put the trace in an archive of its own)",
        "max_archive_members",
        MAX_ARCHIVE_MEMBERS,
    )


def _check_zip_directory(raw: IO[bytes], name: str, limits: ReadLimits) -> None:
    """Refuse a zip archive whose central directory lists more than
    :data:`MAX_ARCHIVE_MEMBERS` entries or is larger than :data:`MAX_ZIP_DIRECTORY_BYTES`
    (``zipfile`` reads the whole directory into objects before any entry can be chosen).
    A damaged archive is left for ``zipfile`` to report."""
    end_record = getattr(zipfile, "_EndRecData", None)
    if end_record is None:  # pragma: no cover - every CPython 3 has it
        return
    try:
        record = end_record(raw)
    except _DAMAGE:
        record = None
    raw.seek(0)
    if not record:
        return
    entries = record[getattr(zipfile, "_ECD_ENTRIES_TOTAL", 4)]
    size = record[getattr(zipfile, "_ECD_SIZE", 5)]
    if entries > MAX_ARCHIVE_MEMBERS or size > MAX_ZIP_DIRECTORY_BYTES:
        raise _too_many(name, "zip")


def sniff_input(
    path: str | os.PathLike[str],
    size: int,
    member: str | None = None,
    limits: ReadLimits | None = None,
) -> tuple[bytes, str]:
    """The head for sniffing and the data's name (:attr:`SourceInfo.name`).

    The head is up to ``size`` decompressed bytes from the start of the first line that is
    not blank (leading blank lines, and a byte-order mark, are skipped in bounded memory;
    bytes that :meth:`bytes.strip` removes count as blank). It is ``b""`` when the whole
    file is blank. Truncated compressed data gives what could be read before its end (the
    full read reports it), unless nothing but blanks came before it.

    Raises
    ------
    TraceError
        If the file cannot be opened, its compressed data is damaged, or an archive's member
        cannot be chosen.
    TraceLimitError
        If the blank lines go on past ``limits.max_decompressed_bytes`` bytes or (counting
        ``\\r`` and ``\\n`` each as a line end) ``limits.max_rows`` lines.
    """
    with open_source(path, member, limits) as src:
        return _sniff_head(src, size), src.info.name


def _sniff_head(src: Source, size: int) -> bytes:
    out = bytearray()
    started = False
    first = True
    blank_lines = 0
    try:
        while len(out) < size:
            part = src.read(max(8192, min(1 << 16, size - len(out))))
            if not part:
                break
            if first:
                part = part.removeprefix(_BOM)
                first = False
            if not started:
                text = part.lstrip()
                if not text:  # blank so far: keep nothing
                    blank_lines += part.count(b"\n") + part.count(b"\r")
                    if blank_lines > src.limits.max_rows:
                        raise too_many_rows(src.limits, src.info.path, src.limits.max_rows + 1)
                    continue
                begin = len(part) - len(text)
                cut = max(part.rfind(b"\n", 0, begin), part.rfind(b"\r", 0, begin))
                part = part[cut + 1 :]
                started = True
            out += part[: size - len(out)]
    except TruncatedError:
        if not started:
            raise
    return bytes(out)


def load_all(path: str | os.PathLike[str], member: str | None = None) -> bytes:
    """The whole decompressed content of ``path`` (or of its archive ``member``), within the
    default :class:`ReadLimits`."""
    with open_source(path, member) as src:
        return src.read()


def read_start(
    path: str | os.PathLike[str],
    size: int,
    member: str | None = None,
    limits: ReadLimits | None = None,
) -> bytes:
    """Up to the first ``size`` decompressed bytes, for sniffing.

    Truncated compressed data gives what could be read before its end (the full read
    reports it).

    Raises
    ------
    TraceError
        If the file cannot be opened, its compressed data is damaged, or an archive's member
        cannot be chosen.
    """
    with open_source(path, member, limits) as src:
        return _head(src, size)


def _head(src: Source, size: int) -> bytes:
    out = bytearray()
    try:
        while len(out) < size:
            part = src.read(min(8192, size - len(out)))
            if not part:
                break
            out += part
    except TruncatedError:
        pass
    return bytes(out)


# --------------------------------------------------------------------------------------------
# Text in chunks


def text_chunks(
    source: Source,
    path: str,
    chunk_bytes: int | None = None,
    limits: ReadLimits | None = None,
) -> Iterator[tuple[int, bytes]]:
    """The text of a source in pieces that end at line ends, checked and normalised.

    Each piece is checked and normalised like :func:`clustersim.traces.base.check_text`
    checks a whole file: a leading byte-order mark is removed from the first piece, ``\\r\\n``
    and lone ``\\r`` become ``\\n``, and NUL bytes or invalid UTF-8 raise :class:`TraceError`
    at their line. A line longer than ``chunk_bytes`` makes its piece longer; a line longer
    than ``max_line_bytes`` raises :class:`~clustersim.errors.TraceLimitError` at its line,
    before more than one piece past its start is read, and so does the first piece that
    goes past ``max_rows`` lines (at line ``max_rows + 1``).

    Parameters
    ----------
    source
        Opened with :func:`open_source`.
    path
        For errors.
    chunk_bytes
        Approximate size of the pieces (default :data:`CHUNK_BYTES`).
    limits
        The limits (default: the source's).

    Yields
    ------
    first_line : int
        1-based line number of the piece's first line.
    data : bytes
        The piece; every piece but the last ends with ``\\n``.
    """
    size = chunk_bytes or CHUNK_BYTES
    limits = limits or source.limits
    longest = limits.max_line_bytes
    line = 1
    carry: bytes | bytearray = b""  # the text read after the last line end so far
    started = False
    while True:
        block = source.read(size)
        eof = not block
        if not started:
            block = bytes(carry) + block if carry else block  # a few bytes at most
            carry = b""
            if len(block) < len(_BOM) and not eof:
                carry = block
                continue
            if block.startswith(_BOM):
                block = block[len(_BOM) :]
            started = True
        piece: bytes | bytearray
        if eof:
            piece, carry = carry + block, b""
        else:
            # Cut after the last line end of carry + block, but not at a final "\r" (its
            # "\n" may come next). Only that text is copied, once.
            limit = len(block) - 1 if block.endswith(b"\r") else len(block)
            cut = max(block.rfind(b"\n", 0, limit), block.rfind(b"\r", 0, limit))
            if cut >= 0:
                if carry:
                    piece = b"".join((carry, memoryview(block)[: cut + 1]))
                else:
                    piece = block if cut + 1 == len(block) else block[: cut + 1]
                carry = block[cut + 1 :]
            else:
                cut = max(carry.rfind(b"\n"), carry.rfind(b"\r"))
                if cut < 0:  # no line end yet: keep reading, unless the line is too long
                    if len(carry) + len(block) > longest + 1:  # + 1: a "\r" of "\r\n"
                        raise limits.exceeded(
                            "max_line_bytes", path, line, "", "line longer than the limit"
                        )
                    if not carry:
                        carry = block
                    else:
                        if isinstance(carry, bytes):
                            carry = bytearray(carry)  # grown in place from here on
                        carry += block
                    continue
                piece, carry = carry[: cut + 1], carry[cut + 1 :] + block
        if not isinstance(piece, bytes):
            piece = bytes(piece)
        piece = normalise_text(piece, path, line)
        long = long_line(piece, longest)
        if long >= 0:
            raise limits.exceeded(
                "max_line_bytes",
                path,
                line + piece.count(b"\n", 0, long),
                "",
                "line longer than the limit",
            )
        if piece:
            count = int(np.count_nonzero(np.frombuffer(piece, dtype=np.uint8) == ord("\n")))
            if line + count - piece.endswith(b"\n") > limits.max_rows:  # its last line
                raise too_many_rows(limits, path, limits.max_rows + 1)
            yield line, piece
            line += count
        if eof:
            return


def too_many_rows(limits: ReadLimits, path: str, line: int) -> TraceLimitError:
    """The error for the row at ``line``, past ``limits.max_rows``."""
    return limits.exceeded("max_rows", path, line, "", "more rows than the limit")


def long_line(data: bytes, limit: int) -> int:
    """Offset of the first line of ``data`` longer than ``limit`` bytes (its line end, a
    ``\\n``, not counted), or -1.

    Looks for a line end in consecutive windows of ``limit // 2 + 1`` bytes (a line of more
    than ``limit`` bytes holds a whole window) and measures only the lines around windows
    without one, so the cost is a few ``find`` calls per ``limit`` bytes.
    """
    n = len(data)
    if n <= limit:
        return -1
    window = limit // 2 + 1
    pos = 0
    while pos < n:
        end = min(pos + window, n)
        if data.find(b"\n", pos, end) >= 0:
            pos = end
            continue
        start = data.rfind(b"\n", 0, pos) + 1
        stop = data.find(b"\n", end)
        stop = n if stop < 0 else stop
        if stop - start > limit:
            return start
        pos = stop + 1
    return -1


def normalise_text(data: bytes, path: str, first_line: int = 1) -> bytes:
    """Replace ``\\r\\n`` and lone ``\\r`` by ``\\n``; check for NUL bytes and UTF-8.

    Parameters
    ----------
    data
        Text whose first line is line ``first_line`` of the file (no byte-order mark).
    path, first_line
        For errors.

    Raises
    ------
    TraceError
        At the line of the first NUL byte or invalid UTF-8 sequence.
    """
    if b"\r" in data:
        data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    nul = data.find(b"\x00")
    if nul >= 0:
        raise TraceError(
            path,
            first_line + data.count(b"\n", 0, nul),
            "",
            "binary content (NUL byte): not a text trace",
        )
    try:
        if not data.isascii():
            data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = first_line + data.count(b"\n", 0, exc.start)
        col = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise TraceError(
            path, line, "", f"not UTF-8 text (byte 0x{data[exc.start]:02x} at column {col})"
        ) from None
    return data


def bytes_source(data: bytes, path: str, limits: ReadLimits | None = None) -> Source:
    """A :class:`Source` over bytes already in memory (for ``parse(data, ...)``)."""
    return Source(io.BytesIO(data), SourceInfo(path, (), None, data_name(path)), [], limits)
