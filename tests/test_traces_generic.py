"""The generic CSV reader (format ``"csv"``): column mapping, units and time formats."""

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
JOBS = FIXTURES / "generic_jobs.csv"
CANONICAL = FIXTURES / "generic_canonical.csv"
MAPPING = {
    "job_id": "id",
    "submit_time": "arrival_h",
    "num_gpus": "gpus",
    "work": "runtime_min",
    "user": "who",
    "vc": "team",
    "job_type": "kind",
    "status": "state",
}
UNITS = {"submit_time": "h", "work": "min"}
SETTINGS = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def read_jobs(**options: object) -> tuple:
    return read_trace(JOBS, "csv", sep=";", mapping=MAPPING, units=UNITS, **options)


def error_of(path: Path, **options: object) -> TraceError:
    with pytest.raises(TraceError) as info:
        read_trace(path, "csv", **options)
    return info.value


def write(tmp_path: Path, text: str, name: str = "jobs.csv") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_it_maps_columns_and_converts_units() -> None:
    jobs, report = read_jobs()
    assert report.format == "csv"
    assert (report.jobs_read, report.jobs_kept, report.jobs_dropped) == (5, 3, 2)
    assert list(jobs.job_id) == ["b", "a", "e"]
    assert list(jobs.submit_time) == [0, 1800, 10800]
    assert list(jobs.work) == [3600, 1800, 900]
    assert list(jobs.num_gpus) == [1, 2, 1]
    assert list(jobs.user) == ["bob", "alice", "erin"]
    assert list(jobs.vc) == ["prod", "research", "research"]
    assert list(jobs.job_type) == ["", "ResNet-50", "BERT"]
    assert report.drop_reasons == {
        "num_gpus < 1": LineTally(1, [4]),
        "work <= 0": LineTally(1, [5]),
    }
    assert report.start_time is None
    assert any("relative numbers in h" in a for a in report.assumptions)
    assert any("job_id <- 'id'" in a for a in report.assumptions)


def test_statuses_filter_on_the_mapped_status_column() -> None:
    jobs, report = read_jobs(statuses=["OK"])
    assert list(jobs.job_id) == ["b", "a"]
    assert report.drop_reasons["status 'failed' not selected"] == LineTally(1, [6])


def test_speed_scales_durations_but_not_steps() -> None:
    jobs, _ = read_jobs(speed=2)
    assert list(jobs.work) == [7200, 3600, 1800]
    jobs, report = read_trace(
        JOBS, "csv", sep=";", mapping=MAPPING, units={"submit_time": "h", "work": "steps"}
    )
    assert list(jobs.work) == [60, 30, 15]
    assert any("training steps" in a for a in report.assumptions)


def test_a_canonical_header_is_detected_and_needs_no_mapping() -> None:
    assert detect_format(CANONICAL) == "csv"
    jobs, report = read_trace(CANONICAL)
    assert list(jobs.job_id) == ["x2", "x1"]
    assert list(jobs.submit_time) == [0, 3600]
    assert report.start_time == "2021-03-04T09:00:00"
    assert jobs.deadline[1] == 3 * 3600 and np.isnan(jobs.deadline[0])
    assert list(jobs.priority) == [0, 1]


def test_other_headers_are_not_detected() -> None:
    with pytest.raises(TraceError, match="unrecognised"):
        read_trace(JOBS)


def test_work_may_come_from_start_and_end_times(tmp_path: Path) -> None:
    text = (
        "submitted,started,ended,n\n"
        "03/04/2021 10:00,03/04/2021 10:05,03/04/2021 11:05,2\n"
        "03/04/2021 09:00,03/04/2021 09:00,,1\n"
    )
    jobs, report = read_trace(
        write(tmp_path, text),
        "csv",
        mapping={"submit_time": "submitted", "start_time": "started", "end_time": "ended"}
        | {"num_gpus": "n"},
        time_format="%m/%d/%Y %H:%M",
    )
    assert list(jobs.work) == [3600] and list(jobs.submit_time) == [0]
    assert report.drop_reasons == {"no start_time or end_time": LineTally(1, [3])}
    assert report.start_time == "2021-03-04T10:00:00"


def test_unix_times_are_calendar_times(tmp_path: Path) -> None:
    text = "t,g,w\n1600000060000,1,5\n1600000000000,2,5\n"
    jobs, report = read_trace(
        write(tmp_path, text),
        "csv",
        mapping={"submit_time": "t", "num_gpus": "g", "work": "w"},
        units={"submit_time": "ms"},
        time_format="unix",
    )
    assert list(jobs.submit_time) == [0, 60]
    assert report.start_time == "2020-09-13T12:26:40"


def test_units_for_gpus_cpu_and_memory(tmp_path: Path) -> None:
    text = "submit_time,num_gpus,work,cpu,mem_gb,min_gpus,max_gpus\n0,200,10,50,2048,100,\n"
    jobs, _ = read_trace(
        write(tmp_path, text),
        "csv",
        units={"num_gpus": "percent", "cpu": "percent", "mem_gb": "MiB", "min_gpus": "percent"},
    )
    assert (jobs.num_gpus[0], jobs.cpu[0], jobs.min_gpus[0], jobs.max_gpus[0]) == (2, 0.5, 1, 2)
    assert jobs.mem_gb[0] == pytest.approx(2048 * 2**20 / 1e9)


def test_fractional_and_out_of_range_rows_are_dropped(tmp_path: Path) -> None:
    text = "submit_time,num_gpus,work,min_gpus\n0,1.5,10,\n-1,1,10,\n1,2,10,3\n2,2,inf,\n3,2,10,1\n"
    jobs, report = read_trace(write(tmp_path, text), "csv")
    assert list(jobs.job_id) == ["4"] and list(jobs.min_gpus) == [1]
    assert report.drop_reasons == {
        "submit_time < 0": LineTally(1, [3]),
        "num_gpus not an integer": LineTally(1, [2]),
        "work not finite": LineTally(1, [5]),
        "min_gpus > num_gpus: elastic bounds contradict the gang size": LineTally(1, [4]),
    }


def test_elastic_bounds_that_contradict_the_gang_size_are_dropped_and_counted(
    tmp_path: Path,
) -> None:
    # line 2: 4 GPUs in [2, 8], kept; line 3: min 6 > 4; line 4: max 2 < 4; line 5: min 0 is
    # no device count (its own reason, checked first); line 6: min 8 > 4 and max 2 < 4,
    # counted once under the first check (min); line 7: blank bounds, rigid, kept.
    text = (
        "submit_time,num_gpus,work,min_gpus,max_gpus\n"
        "0,4,10,2,8\n1,4,10,6,8\n2,4,10,1,2\n3,4,10,0,4\n4,4,10,8,2\n5,4,10,,\n"
    )
    jobs, report = read_trace(write(tmp_path, text), "csv")
    assert list(jobs.job_id) == ["0", "5"]
    assert (list(jobs.min_gpus), list(jobs.max_gpus)) == ([2, 4], [8, 4])
    assert report.drop_reasons == {
        "min_gpus out of range": LineTally(1, [5]),
        "min_gpus > num_gpus: elastic bounds contradict the gang size": LineTally(2, [3, 6]),
        "max_gpus < num_gpus: elastic bounds contradict the gang size": LineTally(1, [4]),
    }
    assert (report.jobs_read, report.jobs_kept, report.jobs_dropped) == (6, 2, 4)


def test_quotes_and_spaces_around_values_are_accepted(tmp_path: Path) -> None:
    text = '"job_id", "submit_time" ,num_gpus,work\n"a", 2021-03-04 10:00:00 , "2" ,10\n'
    jobs, _ = read_trace(write(tmp_path, text), "csv")
    assert (jobs.job_id[0], jobs.num_gpus[0]) == ("a", 2)


@pytest.mark.parametrize(
    ("options", "line", "field", "words"),
    [
        ({"mapping": {"submit_time": "nope"}}, 1, "submit_time", "'nope' (for submit_time)"),
        ({"mapping": {"wall": "x"}}, 0, "wall", "unknown job column"),
        ({"mapping": "x"}, 0, "mapping", "mapping must map"),
        ({"units": {"work": "fortnight"}}, 0, "work", "unknown unit"),
        ({"units": {"user": "s"}}, 0, "user", "no units"),
        ({"time_format": 3}, 0, "time_format", "text or a dict"),
        ({"time_format": {"work": "iso"}}, 0, "work", "applies to"),
        ({"sep": "::"}, 0, "sep", "sep must be"),
        ({"statuses": ["ok"]}, 0, "statuses", "needs a status column"),
        ({"speed": "fast"}, 0, "speed", "positive number"),
        ({"member": "x"}, 0, "member", "not a zip or tar"),
        ({"columns": {}}, 0, "columns", "unknown option"),
    ],
)
def test_bad_options_are_trace_errors(options: dict, line: int, field: str, words: str) -> None:
    err = error_of(CANONICAL, **options)
    assert (err.line, err.field) == (line, field), str(err)
    assert words in err.message


@pytest.mark.parametrize(
    ("text", "options", "line", "field", "words"),
    [
        ("a,b\n1,2\n", {}, 1, "submit_time", "no column for submit_time"),
        ("submit_time,num_gpus\n1,2\n", {}, 1, "work", "no column for work"),
        ("submit_time,num_gpus,work\n", {}, 0, "", "header only"),
        ("submit_time,num_gpus,work\n1,2,x\n", {}, 2, "work", "not a number"),
        ("submit_time,num_gpus,work\n1,2\n", {}, 2, "work", "expected 3"),
        ("submit_time,num_gpus,work\n1,,3\n", {}, 2, "num_gpus", "empty"),
        ("submit_time,num_gpus,work\nyesterday,1,3\n", {}, 2, "submit_time", "not a time"),
        ("submit_time,num_gpus,work,priority\n1,1,3,0.5\n", {}, 2, "priority", "integer"),
        (
            "submit_time,num_gpus,work,deadline\n1,1,3,2021-01-01 00:00:00\n",
            {},
            0,
            "deadline",
            "mix calendar",
        ),
        (
            "submit_time,num_gpus,work\n1/2/2021,1,3\n",
            {"time_format": "%d/%m/%Y %H"},
            2,
            "submit_time",
            "not a time",
        ),
        ("submit_time,submit_time,num_gpus,work\n1,1,1,3\n", {}, 1, "submit_time", "more than"),
    ],
)
def test_malformed_files_are_trace_errors(
    tmp_path: Path, text: str, options: dict, line: int, field: str, words: str
) -> None:
    err = error_of(write(tmp_path, text), **options)
    assert (err.line, err.field) == (line, field), str(err)
    assert words in err.message


def test_chunk_boundaries_do_not_change_the_result(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rows = JOBS.read_text().splitlines()
    path = write(tmp_path, "\n".join([rows[0]] + rows[1:] * 50) + "\n")
    whole_jobs, whole = read_trace(path, "csv", sep=";", mapping=MAPPING, units=UNITS)
    monkeypatch.setattr(compressed, "CHUNK_BYTES", 50)
    jobs, report = read_trace(path, "csv", sep=";", mapping=MAPPING, units=UNITS)
    assert report.to_dict() == whole.to_dict()
    assert np.array_equal(jobs.job_id, whole_jobs.job_id)
    assert report.warnings == [
        "job id appears more than once (kept): 150 rows (line 2, 3, 6, 7, 8, ...)"
    ]


# --- fuzz -------------------------------------------------------------------------------------


@SETTINGS
@given(
    row=st.integers(1, 5),
    col=st.integers(0, 7),
    value=st.sampled_from(["1e400", "-1e400", "nan", "inf", "9" * 400, "-0", "", '"', "1e-400"])
    | st.integers(-(10**30), 10**30).map(str)
    | st.text(
        alphabet=st.characters(exclude_characters="\n\r;", exclude_categories=["Cs"]), max_size=20
    ),
)
def test_fuzz_a_bad_field_is_reported_on_its_line(
    tmp_path: Path, row: int, col: int, value: str
) -> None:
    lines = JOBS.read_text().split("\n")
    fields = lines[row].split(";")
    fields[col] = value
    lines[row] = ";".join(fields)
    path = write(tmp_path, "\n".join(lines))
    try:
        jobs, report = read_trace(path, "csv", sep=";", mapping=MAPPING, units=UNITS)
    except TraceError as err:
        assert err.line in (0, row + 1), str(err)
        return
    assert len(jobs) == report.jobs_kept and (jobs.work > 0).all()
    json.dumps(report.to_dict(), allow_nan=False)


@SETTINGS
@given(data=st.binary(max_size=400), header=st.booleans())
def test_fuzz_garbage_after_a_valid_header(tmp_path: Path, data: bytes, header: bool) -> None:
    path = tmp_path / "g.csv"
    path.write_bytes((b"submit_time,num_gpus,work\n" if header else b"") + data)
    try:
        jobs, report = read_trace(path, "csv", time_format="number")
    except TraceError as err:
        assert isinstance(err.line, int) and err.line >= 0 and err.message
        return
    assert len(jobs) == report.jobs_kept and (jobs.num_gpus >= 1).all()
