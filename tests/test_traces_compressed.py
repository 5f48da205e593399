"""Compressed and archived traces: gzip, bzip2, xz, zip, tar, tar.gz, and chunked text."""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import tarfile
import zipfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from clustersim.errors import TraceError
from clustersim.traces import detect_format, read_trace
from clustersim.traces.base import load_bytes, read_head
from clustersim.traces.compressed import (
    SourceInfo,
    bytes_source,
    data_name,
    open_source,
    text_chunks,
)

FIXTURES = Path(__file__).parent / "fixtures" / "traces"
PHILLY = FIXTURES / "philly_small.csv"
GAVEL = FIXTURES / "gavel_current_10.trace"
HELIOS = FIXTURES / "helios_small.csv"
SETTINGS = settings(
    max_examples=50,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def make_zip(path: Path, members: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return path


def make_tar(path: Path, members: dict[str, bytes], mode: str = "w:gz") -> Path:
    with tarfile.open(path, mode) as tf:  # type: ignore[call-overload]
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return path


def error_of(path: Path, format: str | None = None, **options: object) -> TraceError:
    with pytest.raises(TraceError) as info:
        read_trace(path, format, **options)
    return info.value


WRAPPERS: dict[str, Callable[[Path, Path], Path]] = {
    "gz": lambda src, d: _put(d / f"{src.name}.gz", gzip.compress(src.read_bytes())),
    "bz2": lambda src, d: _put(d / f"{src.name}.bz2", bz2.compress(src.read_bytes())),
    "xz": lambda src, d: _put(d / f"{src.name}.xz", lzma.compress(src.read_bytes())),
    "zip": lambda src, d: make_zip(d / "trace.zip", {f"data/{src.name}": src.read_bytes()}),
    "tar": lambda src, d: make_tar(d / "trace.tar", {src.name: src.read_bytes()}, "w"),
    "tar.gz": lambda src, d: make_tar(d / "trace.tar.gz", {src.name: src.read_bytes()}),
    "tgz": lambda src, d: make_tar(d / "trace.tgz", {src.name: src.read_bytes()}),
    "tar.xz": lambda src, d: make_tar(d / "t.tar.xz", {src.name: src.read_bytes()}, "w:xz"),
    "zip of gz": lambda src, d: make_zip(
        d / "t.zip", {f"{src.name}.gz": gzip.compress(src.read_bytes())}
    ),
}


def _put(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


@pytest.mark.parametrize("wrapper", sorted(WRAPPERS))
@pytest.mark.parametrize(
    ("source", "format"), [(PHILLY, "philly"), (GAVEL, "gavel"), (HELIOS, "helios")]
)
def test_every_container_reads_like_the_plain_file(
    tmp_path: Path, wrapper: str, source: Path, format: str
) -> None:
    plain_jobs, plain = read_trace(source)
    path = WRAPPERS[wrapper](source, tmp_path)
    assert detect_format(path) == format
    jobs, report = read_trace(path)
    assert report.format == format
    assert np.array_equal(jobs.job_id, plain_jobs.job_id)
    assert np.array_equal(jobs.work, plain_jobs.work)
    assert report.drop_reasons == plain.drop_reasons
    assert load_bytes(path) == source.read_bytes()


def test_several_members_are_listed_and_member_chooses(tmp_path: Path) -> None:
    path = make_zip(
        tmp_path / "all.zip",
        {"Venus/cluster_log.csv": HELIOS.read_bytes(), "Earth/cluster_log.csv": b"x", "a/": b""},
    )
    err = error_of(path)
    assert (err.line, err.field) == (0, "member")
    assert "'Venus/cluster_log.csv', 'Earth/cluster_log.csv'" in err.message
    assert "2 files" in err.message
    jobs, report = read_trace(path, member="Venus/cluster_log.csv")
    assert report.format == "helios" and len(jobs) == 5
    assert "member 'Venus/cluster_log.csv' of a zip archive" in report.assumptions[0]
    err = error_of(path, member="cluster_log.csv")  # the base name is not unique
    assert err.field == "member" and "no file 'cluster_log.csv'" in err.message


def test_member_may_be_a_unique_base_name(tmp_path: Path) -> None:
    path = make_tar(
        tmp_path / "t.tgz", {"x/philly.csv": PHILLY.read_bytes(), "x/readme.txt": b"hello"}
    )
    jobs, report = read_trace(path, member="philly.csv")
    assert report.format == "philly" and len(jobs) == 4
    err = error_of(path, member="nope.csv")
    assert "it holds: 'x/philly.csv', 'x/readme.txt'" in err.message


def test_archiver_metadata_is_not_a_candidate(tmp_path: Path) -> None:
    path = make_zip(
        tmp_path / "mac.zip",
        {
            "philly.csv": PHILLY.read_bytes(),
            "__MACOSX/._philly.csv": b"\x00\x05\x16\x07",
            ".DS_Store": b"\x00",
        },
    )
    assert read_trace(path)[1].format == "philly"


def test_long_member_lists_are_shortened(tmp_path: Path) -> None:
    path = make_zip(tmp_path / "many.zip", {f"f{i:02d}.csv": b"x" for i in range(25)})
    err = error_of(path)
    assert "25 files" in err.message and "(5 more)" in err.message and "'f19.csv'" in err.message


@pytest.mark.parametrize(
    ("make", "words"),
    [
        (lambda d: make_zip(d / "empty.zip", {}), "holds no file"),
        (lambda d: make_tar(d / "empty.tgz", {}), "holds no file"),
        (lambda d: _put(d / "t.zip", b"PK\x03\x04" + b"\x00" * 40), "not a valid zip"),
        (lambda d: _put(d / "t.bz2", b"BZh9" + b"\x00" * 40), "not a valid bzip2"),
        (lambda d: _put(d / "t.xz", b"\xfd7zXZ\x00" + b"\x00" * 40), "not a valid xz"),
        (lambda d: _put(d / "t.gz", gzip.compress(PHILLY.read_bytes())[:-30]), "gzip"),
        (
            lambda d: _put(
                d / "t.tgz", make_tar(d / "x.tgz", {"a": PHILLY.read_bytes()}).read_bytes()[:60]
            ),
            "not a valid",
        ),
    ],
)
def test_broken_or_empty_containers_are_trace_errors(
    tmp_path: Path, make: Callable[[Path], Path], words: str
) -> None:
    err = error_of(make(tmp_path), "philly")
    assert err.line == 0 and words in err.message, str(err)
    err = error_of(make(tmp_path))
    assert err.line == 0


def test_a_corrupted_zip_member_is_a_trace_error(tmp_path: Path) -> None:
    data = bytearray(
        make_zip(tmp_path / "a.zip", {"philly.csv": PHILLY.read_bytes() * 50}).read_bytes()
    )
    data[60] ^= 0xFF  # inside the deflated data: a CRC or inflate error
    err = error_of(_put(tmp_path / "b.zip", bytes(data)), "philly")
    assert err.line == 0 and "zip" in err.message


def test_member_on_a_plain_file_is_an_error() -> None:
    err = error_of(PHILLY, member="x")
    assert (err.line, err.field) == (0, "member")


def test_sniffing_sees_the_decompressed_head_and_the_member_name(tmp_path: Path) -> None:
    path = make_zip(
        tmp_path / "t.zip", {"deep/dir/0e4a51.trace.gz": gzip.compress(GAVEL.read_bytes())}
    )
    assert read_head(path, 10) == GAVEL.read_bytes()[:10]
    with open_source(path) as src:
        assert src.info == SourceInfo(
            str(path), ("zip", "gzip"), "deep/dir/0e4a51.trace.gz", "0e4a51.trace"
        )
        assert src.info.describe() == (
            "member 'deep/dir/0e4a51.trace.gz' of a zip archive (gzip-compressed)"
        )
    tgz = make_tar(tmp_path / "t.tgz", {"a.csv": b"x"})
    with open_source(tgz) as src:
        assert src.info.describe() == "member 'a.csv' of a gzip-tar archive"
    assert data_name("x/cluster_log.csv.tar.gz") == "cluster_log.csv"


# --- text in chunks ---------------------------------------------------------------------------


def chunks_of(data: bytes, size: int) -> list[tuple[int, bytes]]:
    with bytes_source(data, "t") as src:
        return list(text_chunks(src, "t", size))


@pytest.mark.parametrize("size", [1, 2, 3, 5, 64])
def test_chunks_end_at_line_ends_and_keep_line_numbers(size: int) -> None:
    data = b"\xef\xbb\xbfa,b\r\nc,d\re\n\nf\r\r\ng"
    pieces = chunks_of(data, size)
    assert b"".join(p for _, p in pieces) == b"a,b\nc,d\ne\n\nf\n\ng"
    for first, piece in pieces:
        whole = b"a,b\nc,d\ne\n\nf\n\ng".split(b"\n")
        assert piece.split(b"\n")[0] == whole[first - 1]
    assert all(p.endswith(b"\n") for _, p in pieces[:-1])


@pytest.mark.parametrize("size", [1, 4, 1000])
@pytest.mark.parametrize(
    ("data", "line", "words"),
    [
        (b"a\nb\nc\xff\n", 3, "not UTF-8 text (byte 0xff at column 2)"),
        (b"a\r\nb\r\n\x00", 3, "NUL"),
        (b"\xef\xbb", 1, "not UTF-8"),
    ],
)
def test_chunk_errors_name_the_file_line(size: int, data: bytes, line: int, words: str) -> None:
    with pytest.raises(TraceError) as info:
        chunks_of(data, size)
    assert info.value.line == line and words in info.value.message


def test_an_empty_source_gives_no_chunks() -> None:
    assert chunks_of(b"", 10) == []
    assert chunks_of(b"\xef\xbb\xbf", 10) == []


# --- fuzz -------------------------------------------------------------------------------------


@SETTINGS
@given(
    kind=st.sampled_from(["zip", "tar.gz", "tar", "gz", "zip of gz"]),
    cut=st.floats(0, 1),
    flips=st.lists(st.tuples(st.floats(0, 1), st.integers(1, 255)), max_size=3),
    reader=st.sampled_from([None, "philly", "helios", "philly_raw", "csv"]),
)
def test_fuzz_damaged_archives_only_raise_trace_errors(
    tmp_path: Path, kind: str, cut: float, flips: list, reader: str | None
) -> None:
    data = bytearray(WRAPPERS[kind](PHILLY, tmp_path).read_bytes())
    for where, bits in flips:
        data[int(where * (len(data) - 1))] ^= bits
    path = _put(
        tmp_path / f"fuzz.{kind.replace(' ', '')}", bytes(data[: max(1, int(cut * len(data)))])
    )
    try:
        jobs, report = read_trace(path, reader)
    except TraceError as err:
        assert isinstance(err.line, int) and err.line >= 0 and err.message
        assert "\n" not in str(err)
        return
    assert len(jobs) == report.jobs_kept > 0
