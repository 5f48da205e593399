"""Every trace reader, fed broken input, fails only with a TraceError — never a traceback."""

from __future__ import annotations

import gzip
import json
import tempfile
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from clustersim.errors import TraceError
from clustersim.jobs import JobTable
from clustersim.traces import READERS, ParseReport, read_trace
from clustersim.traces.base import HEAD_BYTES

SETTINGS = settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
#: A few real lines of each format, with the separator, the header lines to leave alone and
#: the indexes of its numeric fields.
SAMPLES = {
    "philly": ("philly/philly.csv", ",", 1, (1, 2, 3)),
    "gavel": ("gavel/0e4a51.trace", "\t", 0, (3, 4, 5, 6)),
    "gavel10": ("gavel/generated/gavel_synth_multigpu_lam900_n100.trace", "\t", 0, (5, 6, 7, 8, 9)),
    "shockwave": ("shockwave/shockwave_120jobs_100.trace", "\t", 0, (5, 6, 8, 9, 10, 11)),
}
HUGE = ["1e400", "-1e400", "9" * 400, "-" + "9" * 30, "inf", "-inf", "nan", "1e-400", "-0",
        "18446744073709551616", "1.7976931348623157e308", "0", "0.5", "-1"]  # fmt: skip
SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "traces"


def sample(kind: str, lines: int = 12) -> str:
    name = SAMPLES[kind][0]
    with (SHARED / name).open() as f:
        return "".join(next(f) for _ in range(lines))


@pytest.fixture(scope="module")
def scratch() -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as tmp:
        yield Path(tmp)


def outcome(call: Callable[[], tuple[JobTable, ParseReport]]) -> TraceError | None:
    """Run a read; check a success is a consistent result, return the TraceError if any."""
    try:
        result = call()
    except TraceError as err:
        assert isinstance(err.line, int) and err.line >= 0
        assert isinstance(err.field, str) and err.message
        assert err.path and err.path in str(err)
        return err
    jobs, report = result
    assert len(jobs) == report.jobs_kept > 0
    assert report.jobs_read == report.jobs_kept + report.jobs_dropped
    assert sum(t.count for t in report.drop_reasons.values()) == report.jobs_dropped
    assert (jobs.submit_time >= 0).all() and (jobs.work > 0).all() and (jobs.num_gpus >= 1).all()
    json.dumps(report.to_dict(), allow_nan=False)
    return None


def read_all(path: Path) -> list[TraceError | None]:
    """Every reader explicitly, then auto-detection."""
    results = [outcome(partial(reader.read, path)) for reader in READERS.values()]
    results.append(outcome(lambda: read_trace(path)))
    return results


def put(scratch: Path, data: bytes, name: str = "fuzz.txt") -> Path:
    path = scratch / name
    path.write_bytes(data)
    return path


@SETTINGS
@given(data=st.binary(max_size=3000))
def test_random_bytes(scratch: Path, data: bytes) -> None:
    read_all(put(scratch, data))
    read_all(put(scratch, gzip.compress(data), "fuzz.gz"))


@SETTINGS
@given(
    kind=st.sampled_from(sorted(SAMPLES)),
    ops=st.lists(
        st.tuples(
            st.sampled_from(["delete", "insert", "replace", "truncate", "duplicate"]),
            st.floats(0, 1),
            st.floats(0, 1),
            st.binary(max_size=20),
        ),
        min_size=1,
        max_size=4,
    ),
)
def test_mutated_real_files(scratch: Path, kind: str, ops: list) -> None:
    data = bytearray(sample(kind).encode())
    for op, a, b, blob in ops:
        i = int(a * len(data))
        j = min(len(data), i + int(b * 40))
        if op == "delete":
            del data[i:j]
        elif op == "insert":
            data[i:i] = blob
        elif op == "replace":
            data[i:j] = blob
        elif op == "truncate":
            data = data[:i]
        else:
            data[i:i] = data[i:j]
    read_all(put(scratch, bytes(data)))


@SETTINGS
@given(
    kind=st.sampled_from(sorted(SAMPLES)),
    encoding=st.sampled_from(["latin-1", "utf-16", "utf-32", "cp1252", "utf-8-sig"]),
    extra=st.text(alphabet="éüßçñ€–", min_size=1, max_size=5),
    where=st.floats(0, 1),
)
def test_wrong_encodings(scratch: Path, kind: str, encoding: str, extra: str, where: float) -> None:
    text = sample(kind)
    i = int(where * len(text))
    raw = (text[:i] + extra + text[i:]).encode(encoding, errors="replace")
    for err in read_all(put(scratch, raw)):
        if err is not None and encoding != "utf-8-sig" and "UTF-8" in err.message:
            assert err.line >= 1  # the bad byte is on a line


@SETTINGS
@given(
    kind=st.sampled_from(sorted(SAMPLES)),
    row=st.integers(0, 9),
    which=st.integers(0, 20),
    value=st.one_of(
        st.sampled_from(HUGE),
        st.integers(-(10**30), 10**30).map(str),
        st.text(
            alphabet=st.characters(exclude_characters="\n\r\t,", exclude_categories=["Cs"]),
            max_size=12,
        ),
    ),
)
def test_a_bad_field_is_reported_on_its_line(
    scratch: Path, kind: str, row: int, which: int, value: str
) -> None:
    """A bad value in one field fails at exactly that line, or the row is kept or dropped."""
    _, sep, header, numeric = SAMPLES[kind]
    lines = sample(kind).splitlines()
    k = header + row
    fields = lines[k].split(sep)
    col = numeric[which % len(numeric)] if which < 14 else which % len(fields)
    fields[col] = value
    lines[k] = sep.join(fields)
    path = put(scratch, ("\n".join(lines) + "\n").encode())
    reader = READERS["philly" if kind == "philly" else "gavel"]
    err = outcome(partial(reader.read, path))
    if err is not None:
        assert err.line == k + 1, str(err)
        # Only undecodable text is found before the line is split into fields.
        assert err.field or "NUL" in err.message or "UTF-8" in err.message, str(err)


@SETTINGS
@given(kind=st.sampled_from(sorted(SAMPLES)), cut=st.floats(0, 1))
def test_truncated_gzip(scratch: Path, kind: str, cut: float) -> None:
    data = gzip.compress(sample(kind, 40).encode())
    read_all(put(scratch, data[: int(cut * len(data))], "fuzz.gz"))


@SETTINGS
@given(kind=st.sampled_from(sorted(SAMPLES)), width=st.integers(1, 3 * HEAD_BYTES))
def test_huge_fields_and_lines(scratch: Path, kind: str, width: int) -> None:
    _, sep, header, _ = SAMPLES[kind]
    lines = sample(kind).splitlines()
    fields = lines[header].split(sep)
    fields[-1] = "7" * width
    lines[header] = sep.join(fields)
    read_all(put(scratch, ("\n".join(lines) + "\n").encode()))
