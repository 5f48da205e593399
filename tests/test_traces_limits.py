"""Reading limits: decompression bombs, long lines, wide headers, huge archives, the
bounded head of format detection, and the environment variables that set the limits."""

from __future__ import annotations

import bz2
import contextlib
import gzip
import io
import lzma
import tarfile
import zipfile
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clustersim.cli import main
from clustersim.errors import ClustersimError, TraceError, TraceLimitError
from clustersim.traces import READERS, ReadLimits, detect_format, read_trace
from clustersim.traces.base import DelimitedText, header_names
from clustersim.traces.compressed import long_line
from clustersim.traces.limits import ENVIRONMENT, MAX_ARCHIVE_MEMBERS

FIXTURES = Path(__file__).parent / "fixtures" / "traces"
PHILLY = FIXTURES / "philly_small.csv"
HELIOS = FIXTURES / "helios_small.csv"
PHILLY_ROW = PHILLY.read_bytes().splitlines(keepends=True)[1]
HEADER = PHILLY.read_bytes().splitlines(keepends=True)[0]
SMALL = ReadLimits(max_decompressed_bytes=256 * 1024, max_streamed_bytes=256 * 1024)
#: The readers that read in chunks: bounded by ``max_streamed_bytes``.
STREAMED = {"csv", "helios", "philly_raw"}


def gzip_stream(path: Path, pieces: Callable[[], bytes], total: int) -> Path:
    """Write ``total`` bytes made of ``pieces()`` to a gzip file, streaming (nothing large
    held in memory)."""
    with gzip.open(path, "wb", compresslevel=6) as out:
        written = 0
        while written < total:
            piece = pieces()
            out.write(piece)
            written += len(piece)
    return path


def limit_error(path: Path, format: str | None = None, **kwargs: object) -> TraceLimitError:
    with pytest.raises(TraceLimitError) as info:
        read_trace(path, format, **kwargs)  # type: ignore[arg-type]
    return info.value


# --------------------------------------------------------------------------------------------
# Decompression bombs


def repeated_rows(n_bytes: int) -> bytes:
    return HEADER + PHILLY_ROW * (n_bytes // len(PHILLY_ROW))


@pytest.mark.parametrize("format", [None, "philly", "csv", "helios", "philly_raw"])
def test_a_gzip_bomb_of_blank_lines_stops_at_the_decompressed_limit(
    tmp_path: Path, format: str | None
) -> None:
    bomb = gzip_stream(tmp_path / "bomb.csv.gz", lambda: b"\n" * (1 << 20), 4 << 20)
    exc = limit_error(bomb, format, limits=SMALL)
    limit = "max_streamed_bytes" if format in STREAMED else "max_decompressed_bytes"
    assert exc.limit == limit
    assert exc.value == 256 * 1024
    assert exc.path == str(bomb)
    assert "decompressed content larger than the limit of 256 KiB" in exc.message
    assert f"CLUSTERSIM_TRACE_{limit.upper()}" in exc.message


@pytest.mark.parametrize("format", ["philly", "csv", "philly_raw"])
def test_only_the_readers_that_stream_read_past_the_decompressed_limit(
    tmp_path: Path, format: str
) -> None:
    """A reader holding the whole text stops at ``max_decompressed_bytes``; one that reads in
    chunks (its memory bounded by the row limit) reads on to ``max_streamed_bytes``."""
    if format == "philly_raw":
        job = (
            b'{"status": "Pass", "vc": "vc1", "jobid": "j%d", "user": "u", '
            b'"submitted_time": "2017-10-03 08:00:00", "attempts": [{"start_time": '
            b'"2017-10-03 08:01:00", "end_time": "2017-10-03 09:00:00", "detail": '
            b'[{"ip": "m1", "gpus": ["gpu0"]}]}]}'
        )
        data = b"[" + b",".join(job % i for i in range(4000)) + b"]"
    elif format == "csv":
        data = b"submit_time,num_gpus,work\n" + b"0,1,10\n" * 100_000
    else:
        data = repeated_rows(1 << 20)
    trace = tmp_path / "trace.gz"
    trace.write_bytes(gzip.compress(data))
    limits = ReadLimits(max_decompressed_bytes=len(data) // 2)
    if format in STREAMED:
        read_trace(trace, format, limits=limits)  # no limit met
        exc = limit_error(trace, format, limits=replace(limits, max_streamed_bytes=len(data) // 2))
        assert exc.limit == "max_streamed_bytes"
    else:
        assert limit_error(trace, format, limits=limits).limit == "max_decompressed_bytes"


@pytest.mark.parametrize("format", [None, "philly", "csv"])
def test_a_gzip_bomb_of_one_repeating_line_stops_at_the_decompressed_limit(
    tmp_path: Path, format: str | None
) -> None:
    pieces = iter([HEADER, *[PHILLY_ROW * 20_000] * 1000])
    bomb = gzip_stream(tmp_path / "bomb.csv.gz", pieces.__next__, 2 << 20)
    exc = limit_error(bomb, format, limits=SMALL)
    assert exc.limit == ("max_streamed_bytes" if format in STREAMED else "max_decompressed_bytes")


def test_a_gzip_bomb_of_zeros_fails_at_once(tmp_path: Path) -> None:
    zeros = gzip_stream(tmp_path / "zeros.csv.gz", lambda: bytes(1 << 20), 8 << 20)
    with pytest.raises(TraceError, match="the tar archive holds no file"):  # a tar's end
        read_trace(zeros, limits=SMALL)
    pieces = iter([HEADER, *[bytes(1 << 20)] * 10])
    bomb = gzip_stream(tmp_path / "bomb.csv.gz", pieces.__next__, 8 << 20)
    with pytest.raises(TraceError, match="line longer than the limit") as info:
        read_trace(bomb, "philly")
    assert info.value.line == 2
    bomb.write_bytes(gzip.compress(HEADER + bytes(4096) + b"\n" + PHILLY_ROW * 1000))
    with pytest.raises(TraceError, match="NUL byte") as info:
        read_trace(bomb, "philly")
    assert info.value.line == 2


def _compress(kind: str, data: bytes, path: Path) -> Path:
    if kind == "bzip2":
        path.write_bytes(bz2.compress(data))
    elif kind == "xz":
        path.write_bytes(lzma.compress(data))
    elif kind == "zip":
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
            zf.writestr("philly.csv", data)
    else:
        with tarfile.open(path, "w:gz") as tf:
            info = tarfile.TarInfo("philly.csv")
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return path


@pytest.mark.parametrize("kind", ["bzip2", "xz", "zip", "tar.gz"])
def test_every_container_stops_at_the_decompressed_limit(tmp_path: Path, kind: str) -> None:
    bomb = _compress(kind, repeated_rows(1 << 20), tmp_path / f"bomb.{kind}")
    exc = limit_error(bomb, "philly", limits=SMALL)
    assert exc.limit == "max_decompressed_bytes"
    # the same file is read under a limit it fits in
    jobs, _ = read_trace(bomb, "philly", limits=ReadLimits(max_decompressed_bytes=2 << 20))
    assert len(jobs) == (1 << 20) // len(PHILLY_ROW)


def test_a_compressed_tar_is_not_listed_past_the_limit(tmp_path: Path) -> None:
    """Listing a tar.gz decompresses it: a big member before the chosen one is not read
    past the limit either."""
    archive = tmp_path / "two.tar.gz"
    with tarfile.open(archive, "w:gz") as tf:
        for name, data in (("big.bin", b"\n" * (1 << 20)), ("philly.csv", PHILLY.read_bytes())):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    exc = limit_error(archive, "philly", member="philly.csv", limits=SMALL)
    assert exc.limit == "max_decompressed_bytes"
    jobs, _ = read_trace(archive, "philly", member="philly.csv")
    assert len(jobs) > 0


def test_a_plain_file_over_the_limit_is_refused_before_it_is_read(tmp_path: Path) -> None:
    path = tmp_path / "big.csv"
    path.write_bytes(repeated_rows(1 << 20))
    for format in ("philly", "csv", None):
        exc = limit_error(path, format, limits=SMALL)
        assert exc.limit == (
            "max_streamed_bytes" if format in STREAMED else "max_decompressed_bytes"
        )
        assert "file larger than the limit of 256 KiB" in exc.message


def test_a_zip_of_too_many_entries_is_refused_before_its_directory_is_read(
    tmp_path: Path,
) -> None:
    path = tmp_path / "many.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as zf:
        zf.writestr("philly.csv", PHILLY.read_bytes())
        for i in range(MAX_ARCHIVE_MEMBERS):
            zf.writestr(f"d/{i}", b"")
    exc = limit_error(path, "philly", member="philly.csv")
    assert exc.limit == "max_archive_members"
    assert "more than 10,000 entries" in exc.message


def test_a_tar_of_too_many_entries_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "many.tar"
    with tarfile.open(path, "w") as tf:
        for i in range(MAX_ARCHIVE_MEMBERS + 1):
            tf.addfile(tarfile.TarInfo(f"d/{i}"), io.BytesIO(b""))
    exc = limit_error(path, "philly", member="d/1")
    assert exc.limit == "max_archive_members"


# --------------------------------------------------------------------------------------------
# Long lines


@pytest.mark.parametrize("gzipped", [False, True])
@pytest.mark.parametrize("format", ["philly", "csv", "helios"])
def test_a_line_over_the_limit_fails_at_its_line(
    tmp_path: Path, format: str, gzipped: bool
) -> None:
    source = HELIOS if format == "helios" else PHILLY
    rows = source.read_bytes().splitlines(keepends=True)
    data = b"".join([*rows[:3], b"x" * 5000 + b"\n", *rows[3:]])
    path = tmp_path / "long.csv"
    path.write_bytes(data)
    if gzipped:
        path = tmp_path / "long.csv.gz"
        path.write_bytes(gzip.compress(data))
    limits = ReadLimits(max_line_bytes=4096)
    exc = limit_error(path, format, limits=limits, **({"mapping": {}} if format == "csv" else {}))
    assert exc.limit == "max_line_bytes"
    assert exc.line == 4
    assert "line longer than the limit of 4 KiB (max_line_bytes=4096" in exc.message
    assert str(exc).startswith(f"{path}:4: ")


def test_a_file_without_line_ends_stops_at_the_line_limit(tmp_path: Path) -> None:
    """One endless line is not gathered in memory: it fails once it passes the limit."""
    bomb = gzip_stream(tmp_path / "one.csv.gz", lambda: b"a," * (1 << 19), 64 << 20)
    for format in ("philly", "csv"):
        exc = limit_error(bomb, format, limits=ReadLimits(max_line_bytes=1 << 20))
        assert (exc.limit, exc.line) == ("max_line_bytes", 1)


def test_a_philly_json_job_object_over_the_line_limit_fails_at_its_line(tmp_path: Path) -> None:
    job = (
        '{"status": "Pass", "vc": "v", "jobid": "j%d", "submitted_time": "2017-10-07 01:11:39", '
        '"user": "u", "attempts": [{"start_time": "2017-10-07 01:12:09", '
        '"end_time": "2017-10-07 01:13:23", "detail": [{"ip": "m1", "gpus": ["gpu0"%s]}]}]}'
    )
    big = job % (2, ', "gpu1"' * 2000)
    path = tmp_path / "log.json"
    path.write_text("[\n" + job % (1, "") + ",\n" + big + "\n]\n")
    exc = limit_error(path, "philly_raw", limits=ReadLimits(max_line_bytes=4096))
    assert (exc.limit, exc.line) == ("max_line_bytes", 3)
    jobs, _ = read_trace(path, "philly_raw")  # within the default limit
    assert len(jobs) == 2


def _long_line_reference(data: bytes, limit: int) -> int:
    start = 0
    for line in data.split(b"\n"):
        if len(line) > limit:
            return start
        start += len(line) + 1
    return -1


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.integers(0, 40), max_size=30).map(
        lambda sizes: b"\n".join(b"a" * k for k in sizes)
    ),
    st.integers(1, 25),
)
def test_long_line_finds_the_first_line_over_the_limit(data: bytes, limit: int) -> None:
    assert long_line(data, limit) == _long_line_reference(data, limit)


# --------------------------------------------------------------------------------------------
# Wide headers


def test_a_header_of_a_million_columns_is_refused_at_once(tmp_path: Path) -> None:
    header = ",".join(f"c{i}" for i in range(1_000_000)).encode()
    path = tmp_path / "wide.csv"
    path.write_bytes(header + b"\n" + b"1," * 999_999 + b"1\n")
    # over the default line limit (1 MiB) ...
    exc = limit_error(path, "philly")
    assert (exc.limit, exc.line) == ("max_line_bytes", 1)
    # ... and over the header-field limit when lines may be longer
    for format in ("philly", "tiresias", "alibaba-openb", "csv", "helios"):
        exc = limit_error(path, format, limits=ReadLimits(max_line_bytes=64 << 20))
        assert (exc.limit, exc.line) == ("max_header_fields", 1)
        assert "header has 1,000,000 fields, more than the limit of 10,000 fields" in exc.message


def test_a_wide_header_within_a_raised_limit_still_names_its_duplicates() -> None:
    names = [f"c{i}" for i in range(50_000)] + ["timestamp", "duration", "num_gpus"]
    names[7] = names[123] = "c7"
    names[40_000] = "zz"
    names.append("zz")
    text = DelimitedText((",".join(names) + "\n").encode(), ",")
    limits = ReadLimits(max_header_fields=100_000)
    with pytest.raises(TraceError) as info:
        header_names(text, "wide.csv", ("timestamp",), limits)
    assert (info.value.line, info.value.field) == (1, "c7")
    assert "'c7', 'zz'" in info.value.message
    with pytest.raises(TraceLimitError):
        header_names(text, "wide.csv", ("timestamp",), ReadLimits(max_header_fields=50_000))


# --------------------------------------------------------------------------------------------
# Rows


@pytest.mark.parametrize("gzipped", [False, True])
@pytest.mark.parametrize("format", ["philly", "csv", "tiresias"])
def test_a_file_of_more_rows_than_the_limit_fails_at_the_first_row_over_it(
    tmp_path: Path, format: str, gzipped: bool
) -> None:
    source = FIXTURES / ("tiresias_small.csv" if format == "tiresias" else "philly_small.csv")
    header, row = source.read_bytes().splitlines(keepends=True)[:2]
    kwargs: dict[str, object] = {"mapping": {}} if format == "csv" else {}
    for rows, trailing in ((999, True), (999, False), (1000, True)):
        data = header + row * rows
        data = data if trailing else data.rstrip(b"\n")
        path = tmp_path / ("rows.csv.gz" if gzipped else "rows.csv")
        path.write_bytes(gzip.compress(data) if gzipped else data)
        limits = ReadLimits(max_rows=1000)
        if rows + 1 <= 1000:
            if format != "csv":
                jobs, _ = read_trace(path, format, limits=limits)
                assert len(jobs) == rows
            continue
        exc = limit_error(path, format, limits=limits, **kwargs)
        assert (exc.limit, exc.line) == ("max_rows", 1001)
        assert "more rows than the limit of 1,000 rows (max_rows=1000" in exc.message


def test_a_philly_json_log_of_more_jobs_than_the_limit_fails_at_the_first_job_over_it() -> None:
    path = FIXTURES / "philly_raw_lines.jsonl"
    n = len(path.read_text().splitlines())
    read_trace(path, "philly_raw", limits=ReadLimits(max_rows=n))
    exc = limit_error(path, "philly_raw", limits=ReadLimits(max_rows=2))
    assert (exc.limit, exc.line) == ("max_rows", 3)


# --------------------------------------------------------------------------------------------
# Format detection reads a bounded head


def test_detection_skips_leading_blank_lines_in_bounded_memory(tmp_path: Path) -> None:
    path = tmp_path / "late.csv.gz"
    path.write_bytes(gzip.compress(b"\n \t\r\n" * 100_000 + PHILLY.read_bytes()))
    assert detect_format(path) == "philly"
    jobs, report = read_trace(path)
    assert report.format == "philly" and len(jobs) > 0


def test_detection_of_a_blank_file_says_empty_and_of_a_long_blank_one_names_the_limit(
    tmp_path: Path,
) -> None:
    path = tmp_path / "blank.csv.gz"
    path.write_bytes(gzip.compress(b"\n" * 100_000))
    with pytest.raises(TraceError, match="empty file"):
        detect_format(path)
    with pytest.raises(TraceLimitError) as info:
        detect_format(path, limits=ReadLimits(max_decompressed_bytes=50_000))
    assert info.value.limit == "max_decompressed_bytes"
    with pytest.raises(TraceLimitError) as info:
        detect_format(path, limits=ReadLimits(max_rows=50_000))
    assert (info.value.limit, info.value.line) == ("max_rows", 50_001)


# --------------------------------------------------------------------------------------------
# Configuration


def test_limits_must_be_positive_integers() -> None:
    for bad in (0, -1, 1.5, True, "10"):
        with pytest.raises(ValueError, match="max_line_bytes must be a positive integer"):
            ReadLimits(max_line_bytes=bad)  # type: ignore[arg-type]


def test_limits_come_from_the_environment() -> None:
    env = {ENVIRONMENT["max_line_bytes"]: "2048", ENVIRONMENT["max_header_fields"]: " 7 "}
    assert ReadLimits.from_env(env) == ReadLimits(max_line_bytes=2048, max_header_fields=7)
    assert ReadLimits.from_env({}) == ReadLimits()
    with pytest.raises(ClustersimError, match="CLUSTERSIM_TRACE_MAX_LINE_BYTES='0'"):
        ReadLimits.from_env({ENVIRONMENT["max_line_bytes"]: "0"})
    with pytest.raises(ClustersimError, match="is not a positive integer"):
        ReadLimits.from_env({ENVIRONMENT["max_decompressed_bytes"]: "1GB"})


def test_the_command_line_reads_the_limits_from_the_environment(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["inspect", str(PHILLY)]) == 0
    capsys.readouterr()
    monkeypatch.setenv("CLUSTERSIM_TRACE_MAX_DECOMPRESSED_BYTES", "100")
    assert main(["inspect", str(PHILLY)]) == 2
    err = capsys.readouterr().err
    assert "file larger than the limit of 100 bytes" in err
    assert "CLUSTERSIM_TRACE_MAX_DECOMPRESSED_BYTES" in err


def test_every_reader_accepts_limits() -> None:
    data = PHILLY.read_bytes()
    for reader in READERS.values():
        with contextlib.suppress(TraceError):  # not its format: only the keyword matters
            reader.parse(data, "x.csv", limits=ReadLimits())
