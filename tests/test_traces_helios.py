"""The Helios ``cluster_log.csv`` reader."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import clustersim.traces.compressed as compressed
from clustersim.errors import TraceError
from clustersim.traces import detect_format, read_trace
from clustersim.traces.base import LineTally

FIXTURES = Path(__file__).parent / "fixtures" / "traces"
SMALL = FIXTURES / "helios_small.csv"
HEADER = (
    "job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,duration,queue"
)
SETTINGS = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def error_of(path: Path, **options: object) -> TraceError:
    with pytest.raises(TraceError) as info:
        read_trace(path, "helios", **options)
    return info.value


def write(tmp_path: Path, text: str | bytes, name: str = "cluster_log.csv") -> Path:
    path = tmp_path / name
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return path


def test_it_detects_the_format() -> None:
    assert detect_format(SMALL) == "helios"


def test_it_maps_gpu_jobs_to_the_table() -> None:
    jobs, report = read_trace(SMALL)
    assert report.format == "helios"
    assert (report.jobs_read, report.jobs_kept, report.jobs_dropped) == (10, 5, 5)
    assert list(jobs.job_id) == ["1001", "1002", "1005", "1006", "1009"]
    assert list(jobs.submit_time) == [0, 300, 1200, 1800, 3000]
    assert list(jobs.work) == [3600, 100, 600, 500, 600]
    assert list(jobs.num_gpus) == [1, 8, 16, 4, 2]
    assert list(jobs.user) == ["u1", "u2", "u2", "u4", "u5"]
    assert list(jobs.vc) == ["vc1", "vc1", "vc1", "vc3", "vc1"]
    assert list(jobs.cpu) == [4, 32, 64, 16, 1]
    assert report.start_time == "2020-04-01T00:00:00"
    assert report.time_span_s == 3000


def test_it_drops_cpu_jobs_and_unusable_rows_with_reasons() -> None:
    _, report = read_trace(SMALL)
    assert report.drop_reasons == {
        "state 'SUSPENDED' not selected": LineTally(1, [9]),
        "CPU-only job (gpu_num = 0)": LineTally(1, [4]),
        "gpu_num not an integer": LineTally(1, [12]),
        "never started (no duration or start_time/end_time)": LineTally(1, [5]),
        "duration = 0": LineTally(1, [10]),
    }


def test_it_warns_about_inconsistent_rows() -> None:
    _, report = read_trace(SMALL)
    assert report.warnings == [
        "duration differs from end_time - start_time by more than 1 s (duration used): "
        "1 row (line 8)",
        "start_time before submit_time (kept): 1 row (line 11)",
        "more than 8 GPUs per node (kept): 1 row (line 6)",
    ]
    assert any("NODE_FAIL are simulated" in a for a in report.assumptions)


def test_states_choose_which_jobs_are_kept() -> None:
    jobs, report = read_trace(SMALL, states=["completed"])
    assert list(jobs.job_id) == ["1001", "1005"]
    assert report.drop_reasons["state 'FAILED' not selected"] == LineTally(1, [3])
    assert "state 'CANCELLED' not selected" in report.drop_reasons
    assert any("cancelled and failed jobs are dropped" in a for a in report.assumptions)


def test_speed_scales_work() -> None:
    jobs, _ = read_trace(SMALL, speed=0.5)
    assert jobs.work[0] == 1800


def test_duration_may_come_from_start_and_end(tmp_path: Path) -> None:
    text = (
        "state,gpu_num,submit_time,start_time,end_time\n"
        "COMPLETED,2,2020-04-01 00:00:00,2020-04-01 00:01:00,2020-04-01 00:11:00\n"
        "CANCELLED by 42,1,2020-04-01 00:00:30,2020-04-01 00:01:00,2020-04-01 00:00:00\n"
    )
    jobs, report = read_trace(write(tmp_path, text))
    assert report.format == "helios"
    assert list(jobs.work) == [600] and list(jobs.job_id) == ["0"]
    assert report.drop_reasons == {"duration < 0 (end before start)": LineTally(1, [3])}
    assert any("no job_id column" in a for a in report.assumptions)


def test_spaces_and_quotes_around_values_are_accepted(tmp_path: Path) -> None:
    text = (
        HEADER + "\n"
        '"7", u1 ,vc1, 2 ,4,1, COMPLETED ,"2020-04-01 00:00:00",2020-04-01 00:00:10,'
        "2020-04-01 01:00:10, 3600 ,10\n"
    )
    jobs, _ = read_trace(write(tmp_path, text))
    assert (jobs.job_id[0], jobs.user[0], jobs.num_gpus[0], jobs.work[0]) == ("7", "u1", 2, 3600)


def test_duplicate_job_ids_are_a_warning(tmp_path: Path) -> None:
    rows = SMALL.read_text().splitlines()
    text = "\n".join([*rows[:3], rows[1]]) + "\n"
    _, report = read_trace(write(tmp_path, text))
    assert "job id appears more than once (kept): 2 rows (line 2, 4)" in report.warnings


@pytest.mark.parametrize(
    ("name", "line", "field"),
    [("helios_missing_column.csv", 1, "gpu_num"), ("helios_bad_time.csv", 3, "submit_time")],
)
def test_structural_problems_name_line_and_field(name: str, line: int, field: str) -> None:
    err = error_of(FIXTURES / name)
    assert (err.line, err.field) == (line, field), str(err)


@pytest.mark.parametrize(
    ("text", "line", "field", "words"),
    [
        ("", 0, "", "empty file"),
        (HEADER + "\n", 0, "", "header only"),
        (HEADER + "\n1,u,v,1,1,1,,2020-04-01 00:00:00,,,5,\n", 2, "state", "empty"),
        (HEADER + "\n1,u,v,x,1,1,OK,2020-04-01 00:00:00,,,5,\n", 2, "gpu_num", "not a number"),
        (HEADER + "\n1,u,v,1,1,1,OK,2020-04-01 00:00:00,,,5\n", 2, "queue", "expected 12"),
        (HEADER + "\n1,u,v,1,1,1,OK,2020-04-01 00:00:00,soon,,5,\n", 2, "start_time", "time"),
        (
            "gpu_num,state,submit_time\n1,COMPLETED,2020-04-01 00:00:00\n",
            1,
            "duration",
            "not in the header",
        ),
    ],
)
def test_malformed_files_are_trace_errors(
    tmp_path: Path, text: str, line: int, field: str, words: str
) -> None:
    err = error_of(write(tmp_path, text))
    assert (err.line, err.field) == (line, field), str(err)
    assert words in err.message


def test_all_rows_dropped_is_an_error(tmp_path: Path) -> None:
    rows = SMALL.read_text().splitlines()
    err = error_of(write(tmp_path, "\n".join([rows[0], rows[3]]) + "\n"))
    assert err.line == 0 and "CPU-only" in err.message


def test_options_are_checked(tmp_path: Path) -> None:
    assert error_of(SMALL, states="COMPLETED").field == "states"
    assert error_of(SMALL, speed=-1).field == "speed"
    assert error_of(SMALL, mapping={}).field == "mapping"


def test_chunk_boundaries_do_not_change_the_result(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rows = SMALL.read_text().splitlines()
    text = "\r\n".join([rows[0]] + rows[1:] * 40) + "\r\n"
    path = write(tmp_path, text)
    whole_jobs, whole = read_trace(path)
    bad = write(tmp_path, text.replace("2020-04-01 00:51:00", "2020-04-01 00:61:00"), "b.csv")
    whole_err = error_of(bad)
    monkeypatch.setattr(compressed, "CHUNK_BYTES", 61)
    jobs, report = read_trace(path)
    assert report.to_dict() == whole.to_dict()
    assert np.array_equal(jobs.work, whole_jobs.work)
    assert np.array_equal(jobs.job_id, whole_jobs.job_id)
    err = error_of(bad)
    assert (err.line, err.field, err.message) == (
        whole_err.line,
        whole_err.field,
        whole_err.message,
    )
    assert err.line == 12


# --- fuzz -------------------------------------------------------------------------------------


def check(path: Path, expect_line: int | None = None) -> None:
    try:
        jobs, report = read_trace(path, "helios")
    except TraceError as err:
        assert isinstance(err.line, int) and err.line >= 0 and err.message
        if expect_line is not None:
            assert err.line in (0, expect_line), str(err)
        return
    assert len(jobs) == report.jobs_kept == report.jobs_read - report.jobs_dropped
    assert sum(t.count for t in report.drop_reasons.values()) == report.jobs_dropped
    assert (jobs.work > 0).all() and (jobs.num_gpus >= 1).all() and (jobs.submit_time >= 0).all()
    json.dumps(report.to_dict(), allow_nan=False)


@SETTINGS
@given(
    row=st.integers(1, 11),
    col=st.integers(0, 11),
    value=st.sampled_from(
        ["1e400", "-1e400", "nan", "inf", "9" * 400, "-0", "", "2020-02-30 00:00:00"]
    )
    | st.integers(-(10**30), 10**30).map(str)
    | st.text(
        alphabet=st.characters(exclude_characters="\n\r,", exclude_categories=["Cs"]), max_size=20
    ),
)
def test_fuzz_a_bad_field_is_reported_on_its_line(
    tmp_path: Path, row: int, col: int, value: str
) -> None:
    lines = SMALL.read_text().split("\n")
    if not lines[row]:
        return
    fields = lines[row].split(",")
    fields[col] = value
    lines[row] = ",".join(fields)
    check(write(tmp_path, "\n".join(lines)), expect_line=row + 1)


@SETTINGS
@given(
    ops=st.lists(
        st.tuples(
            st.sampled_from(["delete", "insert", "truncate", "duplicate"]),
            st.floats(0, 1),
            st.integers(0, 40),
            st.binary(max_size=10) | st.sampled_from([b",", b"\n", b'"', b"\r", b"\x00"]),
        ),
        min_size=1,
        max_size=4,
    )
)
def test_fuzz_mutated_files(tmp_path: Path, ops: list) -> None:
    data = bytearray(SMALL.read_bytes())
    for op, where, width, blob in ops:
        i = int(where * len(data))
        if op == "delete":
            del data[i : i + width]
        elif op == "insert":
            data[i:i] = blob
        elif op == "truncate":
            data = data[:i]
        else:
            data[i:i] = data[i : i + width]
    check(write(tmp_path, bytes(data)))


@SETTINGS
@given(
    encoding=st.sampled_from(["latin-1", "utf-16", "utf-32", "cp1252", "utf-8-sig"]),
    extra=st.text(alphabet="éüßçñ€–", min_size=1, max_size=4),
    where=st.floats(0, 1),
)
def test_fuzz_wrong_encodings(tmp_path: Path, encoding: str, extra: str, where: float) -> None:
    text = SMALL.read_text()
    i = int(where * len(text))
    check(write(tmp_path, (text[:i] + extra + text[i:]).encode(encoding, errors="replace")))
