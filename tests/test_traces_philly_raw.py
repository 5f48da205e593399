"""The raw Philly ``cluster_job_log`` reader (streamed JSON)."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import clustersim.traces.philly_raw as philly_raw
from clustersim.errors import TraceError
from clustersim.traces import detect_format, read_trace
from clustersim.traces.base import LineTally

FIXTURES = Path(__file__).parent / "fixtures" / "traces"
SMALL = FIXTURES / "philly_raw_small.json"
SETTINGS = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
#: Seconds from 2017-10-01 00:00:00 (the earliest submit of the small fixture) to 2017-10-07
#: 01:11:39 (the README example's submit time).
README_SUBMIT = 6 * 86400 + 3600 + 11 * 60 + 39


def error_of(path: Path, **options: object) -> TraceError:
    with pytest.raises(TraceError) as info:
        read_trace(path, "philly_raw", **options)
    return info.value


def write(tmp_path: Path, text: str | bytes, name: str = "log.json") -> Path:
    path = tmp_path / name
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return path


def job(jobid: object = "j", submit: str = "2017-10-01 00:00:00", **extra: object) -> dict:
    out: dict = {
        "status": "Pass",
        "vc": "vc",
        "jobid": jobid,
        "attempts": [
            {
                "start_time": "2017-10-01 00:00:10",
                "end_time": "2017-10-01 00:01:10",
                "detail": [{"ip": "m1", "gpus": ["gpu0"]}],
            }
        ],
        "submitted_time": submit,
        "user": "u",
    }
    out.update(extra)
    return out


# --- the documented fixture -------------------------------------------------------------------


def test_it_detects_the_raw_log_and_json_lines() -> None:
    assert detect_format(SMALL) == "philly_raw"
    assert detect_format(FIXTURES / "philly_raw_lines.jsonl") == "philly_raw"


def test_it_maps_jobs_to_the_table() -> None:
    jobs, report = read_trace(SMALL)
    assert report.format == "philly_raw"
    assert (report.jobs_read, report.jobs_kept, report.jobs_dropped) == (15, 7, 8)
    by_id = {(j, s): i for i, (j, s) in enumerate(zip(jobs.job_id, jobs.submit_time, strict=True))}
    readme = by_id[("application_1506638472019_14199", README_SUBMIT)]
    assert jobs.work[readme] == 74 + 193_182  # both attempts are charged
    assert jobs.num_gpus[readme] == 8
    assert (jobs.user[readme], jobs.vc[readme]) == ("ce2f4c", "ee9e8c")
    assert list(jobs.job_id) == [
        "j01",
        "j02",
        "j03",
        "j12",
        "j01",
        "j13",
        "application_1506638472019_14199",
    ]
    assert list(jobs.submit_time) == [0, 600, 1200, 7200, 10800, 14400, README_SUBMIT]
    assert list(jobs.work) == [3600, 600, 600 + 900, 600, 1800, 600, 193_256]
    assert list(jobs.num_gpus) == [2, 4, 1, 2, 1, 1, 8]
    assert jobs.vc[3] == "" and jobs.user[3] == "u4"
    assert report.start_time == "2017-10-01T00:00:00"
    assert report.time_span_s == README_SUBMIT


def test_it_drops_unusable_jobs_with_their_lines() -> None:
    _, report = read_trace(SMALL)
    assert report.drop_reasons == {
        "no submitted_time": LineTally(1, [12]),
        "status 'Running' not selected": LineTally(1, [11]),
        "no attempts": LineTally(1, [5]),
        "still running when the log was taken (last attempt has no end_time)": LineTally(1, [7]),
        "no attempt with both start_time and end_time": LineTally(1, [6]),
        "end_time before start_time": LineTally(1, [8]),
        "zero run time": LineTally(1, [9]),
        "no GPU in the attempt's detail": LineTally(1, [10]),
    }
    assert list(report.drop_reasons)[:2] == ["no submitted_time", "status 'Running' not selected"]


def test_it_warns_about_suspicious_jobs_it_keeps() -> None:
    _, report = read_trace(SMALL)
    assert report.warnings == [
        "attempts without start_time or end_time ignored: 1 row (line 13)",
        "attempts ending before they start ignored: 1 row (line 15)",
        "first attempt starts before submitted_time (kept): 1 row (line 13)",
        "job id appears more than once (kept): 2 rows (line 2, 14)",
    ]


def test_it_records_its_assumptions() -> None:
    _, report = read_trace(SMALL)
    text = " ".join(report.assumptions)
    assert "2017-10-01T00:00:00" in text
    assert "Killed and Failed jobs are simulated for the time they actually ran" in text
    assert "Running: 1" in text and "sum of the run times" in text and "P100" in text


def test_the_last_attempt_only_can_be_charged() -> None:
    jobs, report = read_trace(SMALL, work="last")
    assert list(jobs.work) == [3600, 600, 900, 600, 1800, 600, 193_182]
    assert not any("ending before they start" in w for w in report.warnings)
    assert any("job's last complete attempt" in a for a in report.assumptions)


def test_statuses_choose_what_happens_to_killed_and_failed_jobs() -> None:
    jobs, report = read_trace(SMALL, statuses=["pass"])
    assert list(jobs.job_id) == ["j01", "j12", "j01", "application_1506638472019_14199"]
    assert report.drop_reasons["status 'Killed' not selected"] == LineTally(2, [3, 15])
    assert report.drop_reasons["status 'Failed' not selected"] == LineTally(1, [4])
    assert any("killed and failed jobs are dropped" in a for a in report.assumptions)
    jobs, _ = read_trace(SMALL, statuses=("Pass", "Running"))
    assert "j10" in set(jobs.job_id)


def test_speed_scales_work_to_reference_seconds() -> None:
    jobs, report = read_trace(SMALL, speed=2.0)
    assert jobs.work[0] == 7200
    assert any("speed 2" in a for a in report.assumptions)


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"work": "mean"}, "work"),
        ({"statuses": "Pass"}, "statuses"),
        ({"speed": 0}, "speed"),
        ({"speed": float("nan")}, "speed"),
        ({"rebase": False}, "rebase"),
    ],
)
def test_bad_options_are_trace_errors(options: dict, field: str) -> None:
    err = error_of(SMALL, **options)
    assert (err.line, err.field) == (0, field)


def test_json_lines_are_read_too() -> None:
    jobs, report = read_trace(FIXTURES / "philly_raw_lines.jsonl")
    assert list(jobs.job_id) == ["j01", "j02", "j03"]
    assert report.jobs_read == 3


def test_gang_changes_between_attempts_are_a_warning(tmp_path: Path) -> None:
    first = job()["attempts"][0]
    second = {**first, "detail": [{"ip": "m2", "gpus": ["gpu0", "gpu1"]}]}
    path = write(tmp_path, json.dumps([job(attempts=[first, second])]))
    jobs, report = read_trace(path)
    assert jobs.num_gpus[0] == 2 and jobs.work[0] == 120
    assert report.warnings == [
        "GPU count differs between attempts (the last complete attempt's count used): "
        "1 row (line 1)"
    ]


# --- malformed input --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "line", "field", "words"),
    [
        ("philly_raw_bad_type.json", 3, "attempts", "expected a list, found a string"),
        ("philly_raw_bad_time.json", 4, "submitted_time", "2017-10-32 00:00:00"),
        ("philly_raw_missing_key.json", 2, "jobid", "missing key"),
        ("philly_raw_truncated.json", 16, "", "truncated"),
        ("philly_raw_bad_syntax.json", 3, "", "at line 48 column"),
    ],
)
def test_a_bad_job_fails_at_the_line_its_object_starts(
    name: str, line: int, field: str, words: str
) -> None:
    err = error_of(FIXTURES / name)
    assert (err.line, err.field) == (line, field), str(err)
    assert words in err.message


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        ("", 0, "empty file"),
        ("  \n\n", 0, "empty file"),
        ("[]", 0, "no jobs"),
        ("\n\n42\n", 3, "expected '['"),
        ('[\n"job"\n]', 2, "expected a job object, found a string"),
        ("[\n" + json.dumps(job()) + "\n", 3, "before the job list is closed"),
        ("[\n" + json.dumps(job()) + ",\n", 3, "ends inside the job list"),
        ("[\n" + json.dumps(job()) + "\n]\n]", 4, "after the end of the job list"),
        ("[\n" + json.dumps(job()) + "\n" + json.dumps(job()) + "]", 3, "expected ',' or ']'"),
        ("[" + json.dumps(job(attempts=[{"detail": [1]}])) + "]", 1, "machine object"),
        ("[" + json.dumps(job(attempts=[{"detail": {}}])) + "]", 1, "expected a list"),
        ("[" + json.dumps(job(attempts=[7])) + "]", 1, "attempt object"),
        ("[" + json.dumps(job(submitted_time=1507000000)) + "]", 1, "time string"),
        ("[" + json.dumps(job(jobid=["x"])) + "]", 1, "expected a string"),
        ("[" + "[" * 100_000 + "]" * 100_000 + "]", 1, "nested too deeply"),
        ('[{"jobid": 1' + "9" * 5000 + "}]", 1, "invalid JSON value"),
    ],
)
def test_structural_problems_are_trace_errors(
    tmp_path: Path, text: str, line: int, words: str
) -> None:
    err = error_of(write(tmp_path, text))
    assert err.line == line, str(err)
    assert words in err.message, str(err)


def test_binary_and_non_utf8_input_names_the_line(tmp_path: Path) -> None:
    body = "[\n" + json.dumps(job()) + ",\n"
    err = error_of(write(tmp_path, body.encode() + b'{"jobid": "caf\xe9"}]'))
    assert err.line == 3 and "UTF-8" in err.message
    err = error_of(write(tmp_path, body.encode() + b"\x00\x01]"))
    assert err.line == 3 and "NUL" in err.message


def test_crlf_and_a_byte_order_mark_keep_line_numbers(tmp_path: Path) -> None:
    text = SMALL.read_text().replace("\n", "\r\n")
    jobs, report = read_trace(write(tmp_path, b"\xef\xbb\xbf" + text.encode()))
    assert report.drop_reasons["no attempts"] == LineTally(1, [5])
    assert len(jobs) == 7


def test_window_boundaries_do_not_change_the_result(monkeypatch: pytest.MonkeyPatch) -> None:
    whole = read_trace(SMALL)
    err = error_of(FIXTURES / "philly_raw_bad_syntax.json")
    monkeypatch.setattr(philly_raw, "BLOCK_CHARS", 7)
    jobs, report = read_trace(SMALL)
    assert list(jobs.job_id) == list(whole[0].job_id)
    assert report.to_dict() == whole[1].to_dict()
    small_err = error_of(FIXTURES / "philly_raw_bad_syntax.json")
    assert (small_err.line, small_err.field) == (err.line, err.field)
    assert "at line 48" in small_err.message


def test_it_streams_from_gzip_and_zip(tmp_path: Path) -> None:
    whole, _ = read_trace(SMALL)
    gz = write(tmp_path, gzip.compress(SMALL.read_bytes()), "cluster_job_log.gz")
    with zipfile.ZipFile(tmp_path / "trace.zip", "w", zipfile.ZIP_DEFLATED) as zf:
        zf.write(SMALL, "trace-data/cluster_job_log")
    for path in (gz, tmp_path / "trace.zip"):
        jobs, report = read_trace(path)
        assert report.format == "philly_raw"
        assert list(jobs.job_id) == list(whole.job_id)
    _, report = read_trace(tmp_path / "trace.zip")
    assert "member 'trace-data/cluster_job_log' of a zip archive" in report.assumptions[0]


def test_memory_stays_bounded_on_a_large_log(tmp_path: Path) -> None:
    """An 80 MB log: the parser's peak memory grows by far less than the file size."""
    path = tmp_path / "cluster_job_log"
    detail = [{"ip": f"m{k}", "gpus": [f"gpu{i}" for i in range(8)]} for k in range(16)]
    attempt = {"start_time": "2017-10-01 00:01:00", "end_time": "2017-10-01 01:01:00"}
    template = json.dumps(
        job("JOBID", attempts=[{**attempt, "detail": detail}, {**attempt, "detail": detail}]),
        indent=4,
    )
    count = 0
    with path.open("w") as f:
        f.write("[\n")
        while f.tell() < 80_000_000:
            part = ",\n".join(template.replace("JOBID", f"job{count + i}") for i in range(100))
            f.write(part if count == 0 else ",\n" + part)
            count += 100
        f.write("\n]\n")
    size = path.stat().st_size
    code = (
        "import resource, sys\n"
        "from clustersim.traces import read_trace\n"
        "before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "jobs, _ = read_trace(sys.argv[1])\n"
        "after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "print(len(jobs), (after - before) * 1024)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(path)], capture_output=True, text=True, check=True
    )
    jobs, growth = (int(x) for x in out.stdout.split())
    assert jobs == count
    assert growth < size / 5, f"peak memory grew by {growth / 1e6:.1f} MB for {size / 1e6} MB"


# --- fuzz -------------------------------------------------------------------------------------

JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**30), 10**30)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=25)
    | st.sampled_from(["None", "", "2017-10-01 00:00:00", "2017-02-30 00:00:00", "1e400"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=8,
)
KEYS = ["status", "vc", "jobid", "submitted_time", "user", "attempts"]
ATTEMPT_KEYS = ["start_time", "end_time", "detail"]


def check(path: Path, expect_line: int | None = None) -> None:
    """A read either succeeds consistently or raises a TraceError with a line number."""
    try:
        jobs, report = read_trace(path, "philly_raw")
    except TraceError as err:
        assert isinstance(err.line, int) and err.line >= 0 and err.message
        if expect_line is not None and err.line != 0:
            assert err.line == expect_line, str(err)
        return
    assert len(jobs) == report.jobs_kept == report.jobs_read - report.jobs_dropped
    assert (jobs.work > 0).all() and (jobs.num_gpus >= 1).all()
    json.dumps(report.to_dict(), allow_nan=False)


@SETTINGS
@given(
    row=st.integers(0, 13),
    key=st.sampled_from(KEYS + [f"attempts.{k}" for k in ATTEMPT_KEYS]),
    value=JSON_VALUES,
)
def test_fuzz_a_wrong_value_fails_at_its_job(
    tmp_path: Path, row: int, key: str, value: object
) -> None:
    lines = SMALL.read_text().split("\n")
    obj = json.loads(lines[1 + row].rstrip(","))
    if key.startswith("attempts."):
        if not obj["attempts"]:
            return
        obj["attempts"][0][key.split(".")[1]] = value
    else:
        obj[key] = value
    lines[1 + row] = json.dumps(obj) + ","
    check(write(tmp_path, "\n".join(lines)), expect_line=2 + row)


@SETTINGS
@given(
    ops=st.lists(
        st.tuples(
            st.sampled_from(["delete", "insert", "truncate", "duplicate"]),
            st.floats(0, 1),
            st.integers(0, 60),
            st.binary(max_size=12) | st.sampled_from([b"{", b"}", b"[", b"]", b",", b'"', b"\\"]),
        ),
        min_size=1,
        max_size=4,
    ),
    compress=st.booleans(),
)
def test_fuzz_mutated_logs(tmp_path: Path, ops: list, compress: bool) -> None:
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
    raw = gzip.compress(bytes(data)) if compress else bytes(data)
    check(write(tmp_path, raw))


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
