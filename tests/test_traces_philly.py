"""The trace-reader framework and the processed Philly CSV reader."""

from __future__ import annotations

import csv
import gzip
import json
from datetime import datetime
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from clustersim.errors import TraceError
from clustersim.traces import READERS, detect_format, formats, get_reader, read_trace
from clustersim.traces.base import FIRST_LINES, LineTally, ParseReport, to_datetime

FIXTURES = Path(__file__).parent / "fixtures" / "traces"
HEADER = "timestamp,duration,num_gpus,gpu_time,cluster\n"


@pytest.fixture(scope="module")
def philly_csv(shared_data: Path) -> Path:
    return shared_data / "traces" / "philly" / "philly.csv"


@pytest.fixture(scope="module")
def philly(philly_csv: Path) -> tuple:
    return read_trace(philly_csv)


@pytest.fixture(scope="module")
def raw_rows(philly_csv: Path) -> list[dict[str, str]]:
    with philly_csv.open() as f:
        return list(csv.DictReader(f))


def write(tmp_path: Path, text: str | bytes, name: str = "t.csv") -> Path:
    path = tmp_path / name
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return path


def error_of(path: Path, format: str | None = "philly") -> TraceError:
    with pytest.raises(TraceError) as info:
        read_trace(path, format=format)
    return info.value


# --- the real trace ---------------------------------------------------------------------------


def test_it_reads_every_job_of_the_real_trace(philly: tuple) -> None:
    jobs, report = philly
    assert len(jobs) == 82_247
    assert (report.jobs_read, report.jobs_kept, report.jobs_dropped) == (82_247, 82_247, 0)
    assert report.drop_reasons == {}
    assert report.warnings == []
    assert report.format == "philly"


def test_it_rebases_submit_times_to_the_first_arrival(philly: tuple) -> None:
    jobs, report = philly
    assert jobs.submit_time[0] == 0.0
    assert np.all(np.diff(jobs.submit_time) >= 0)
    assert report.start_time == "2017-09-04T10:30:41"
    assert report.time_span_s == jobs.submit_time[-1]
    assert any("2017-09-04T10:30:41" in a for a in report.assumptions)
    assert any("P100" in a and "no job types" in a for a in report.assumptions)


@pytest.mark.parametrize("row", [0, 1, 2, 1000, 54_321, 82_246])
def test_rows_match_the_raw_text(philly: tuple, raw_rows: list[dict[str, str]], row: int) -> None:
    jobs, report = philly
    raw = raw_rows
    assert len(raw) == 82_247
    start = datetime.fromisoformat(report.start_time)
    want = raw[row]
    i = int(np.flatnonzero(jobs.job_id == str(row))[0])
    submit = (datetime.strptime(want["timestamp"], "%Y-%m-%d %H:%M:%S") - start).total_seconds()
    assert jobs.submit_time[i] == submit
    assert jobs.work[i] == float(want["duration"])
    assert jobs.num_gpus[i] == int(want["num_gpus"])
    assert jobs.vc[i] == want["cluster"]
    assert jobs.user[i] == "" and jobs.job_type[i] == "" and jobs.gpu_type[i] == ""


def test_it_detects_the_format(philly_csv: Path) -> None:
    assert detect_format(philly_csv) == "philly"


def test_it_reads_gzip_input_transparently(philly: tuple, philly_csv: Path, tmp_path: Path) -> None:
    gz = write(tmp_path, gzip.compress(philly_csv.read_bytes()), "philly.csv.gz")
    jobs, report = read_trace(gz)
    assert report.format == "philly"
    assert np.array_equal(jobs.submit_time, philly[0].submit_time)
    assert np.array_equal(jobs.job_id, philly[0].job_id)


def test_explicit_wrong_format_is_a_trace_error(philly_csv: Path) -> None:
    err = error_of(philly_csv, format="gavel")
    assert err.line == 1
    assert str(philly_csv) in str(err)


def test_unknown_format_lists_the_known_ones(philly_csv: Path) -> None:
    err = error_of(philly_csv, format="nope")
    assert err.field == "format"
    for name in READERS:
        assert name in err.message


# --- fixtures with defects --------------------------------------------------------------------


def test_it_drops_and_counts_unusable_rows() -> None:
    jobs, report = read_trace(FIXTURES / "philly_small.csv")
    assert report.jobs_read == 7  # the blank line 5 is skipped
    assert report.jobs_kept == len(jobs) == 4
    assert report.jobs_dropped == 3
    assert report.drop_reasons["duration <= 0"] == LineTally(2, [4, 6])
    assert report.drop_reasons["num_gpus <= 0"] == LineTally(1, [7])
    assert len(report.warnings) == 1
    assert "gpu_time" in report.warnings[0] and "line 8" in report.warnings[0]
    assert list(jobs.job_id) == ["1", "0", "5", "6"]
    assert list(jobs.submit_time) == [0.0, 2932.0, 13617.0, 86400.0]
    assert list(jobs.num_gpus) == [2, 1, 4, 8]
    assert list(jobs.vc) == ["6214e9", "11cb48", "11cb48", ""]
    assert report.start_time == "2017-10-09T06:13:03"


def test_a_missing_column_names_the_header_line_and_column() -> None:
    err = error_of(FIXTURES / "philly_missing_column.csv")
    assert (err.line, err.field) == (1, "num_gpus")


def test_a_non_numeric_value_names_its_line_and_field() -> None:
    err = error_of(FIXTURES / "philly_bad_number.csv")
    assert (err.line, err.field) == (3, "duration")
    assert "abc" in err.message


def test_a_short_line_names_its_line_and_first_missing_field() -> None:
    err = error_of(FIXTURES / "philly_wrong_fields.csv")
    assert (err.line, err.field) == (5, "cluster")
    assert "expected 5" in err.message


def test_a_long_line_is_a_trace_error(tmp_path: Path) -> None:
    err = error_of(write(tmp_path, HEADER + "2017-10-09 07:01:55,6,1,6,a,extra\n"))
    assert (err.line, err.field) == (2, "")


def test_a_file_without_a_valid_job_is_a_trace_error() -> None:
    err = error_of(FIXTURES / "philly_no_valid_job.csv")
    assert err.line == 0
    assert "no valid job" in err.message and "duration <= 0: 2" in err.message


@pytest.mark.parametrize("text", ["", "\n\n  \n", HEADER, HEADER + "\n\n"])
def test_an_empty_file_is_a_trace_error(tmp_path: Path, text: str) -> None:
    err = error_of(write(tmp_path, text))
    assert err.line == 0


def test_the_empty_fixture_is_a_trace_error_also_when_detecting() -> None:
    assert error_of(FIXTURES / "empty.csv", format=None).line == 0


def test_the_earliest_bad_line_wins_across_columns(tmp_path: Path) -> None:
    rows = [
        "2017-10-09 07:01:55,6,1,6,a",
        "2017-10-09 07:01:55,6,x,6,a",
        "2017-10-09 7:1:55,6,1,6,a",
    ]
    err = error_of(write(tmp_path, HEADER + "\n".join(rows) + "\n"))
    assert (err.line, err.field) == (3, "num_gpus")
    rows[0] = "2017-02-30 07:01:55,6,1,6,a"
    err = error_of(write(tmp_path, HEADER + "\n".join(rows) + "\n"))
    assert (err.line, err.field) == (2, "timestamp")


@pytest.mark.parametrize(
    ("value", "field"),
    [("", "duration"), ("nan", "duration"), (" 5", "duration"), ("0x10", "duration")],
)
def test_unparseable_numbers_are_errors(tmp_path: Path, value: str, field: str) -> None:
    path = write(
        tmp_path, HEADER + "2017-10-09 07:01:55,6,1,6,a\n" + f"2017-10-09 07:01:56,{value},1,6,a\n"
    )
    err = error_of(path)
    assert (err.line, err.field) == (3, field)


@pytest.mark.parametrize(
    "stamp", ["2017-02-30 00:00:00", "2017-10-09 24:00:00", "2017-10-09 07:01", "yesterday"]
)
def test_impossible_timestamps_are_errors(tmp_path: Path, stamp: str) -> None:
    err = error_of(write(tmp_path, HEADER + f"{stamp},6,1,6,a\n"))
    assert (err.line, err.field) == (2, "timestamp")


def test_iso_t_separator_is_accepted(tmp_path: Path) -> None:
    _, report = read_trace(write(tmp_path, HEADER + "2017-10-09T07:01:55,6,1,6,a\n"))
    assert report.start_time == "2017-10-09T07:01:55"


@pytest.mark.parametrize(
    ("duration", "gpus", "reason"),
    [
        ("1e400", "1", "duration not finite"),
        ("inf", "1", "duration not finite"),
        ("5", "1.5", "num_gpus not an integer"),
        ("5", "-2", "num_gpus <= 0"),
        ("5", "1e30", "num_gpus > 1000000"),
    ],
)
def test_unusable_values_are_dropped(tmp_path: Path, duration: str, gpus: str, reason: str) -> None:
    text = HEADER + "2017-10-09 07:01:55,6,1,6,a\n" + f"2017-10-09 07:01:56,{duration},{gpus},,a\n"
    jobs, report = read_trace(write(tmp_path, text))
    assert len(jobs) == 1
    assert report.drop_reasons == {reason: LineTally(1, [3])}


def test_crlf_bom_and_column_order_do_not_matter(tmp_path: Path) -> None:
    plain, _ = read_trace(FIXTURES / "philly_small.csv")
    raw = (FIXTURES / "philly_small.csv").read_text()
    crlf, _ = read_trace(write(tmp_path, b"\xef\xbb\xbf" + raw.replace("\n", "\r\n").encode()))
    assert np.array_equal(crlf.submit_time, plain.submit_time)
    assert np.array_equal(crlf.vc, plain.vc)
    reordered = "cluster,num_gpus,duration,timestamp\n" + "\n".join(
        ",".join(reversed([r[0], r[1], r[2], r[4]]))
        for r in (line.split(",") for line in raw.splitlines()[1:] if line)
    )
    jobs, _ = read_trace(write(tmp_path, reordered), format="philly")
    assert np.array_equal(jobs.work, plain.work)


def test_gpu_time_is_optional_and_warned_about_when_garbage(tmp_path: Path) -> None:
    text = HEADER + "2017-10-09 07:01:55,6,1,six,a\n2017-10-09 07:01:56,6,2,,\n"
    jobs, report = read_trace(write(tmp_path, text))
    assert len(jobs) == 2
    assert report.warnings == ["gpu_time is not a number: 1 row (line 2)"]
    jobs, report = read_trace(
        write(tmp_path, "timestamp,duration,num_gpus\n2017-10-09 07:01:55,6,1\n")
    )
    assert list(jobs.vc) == [""]


def test_not_utf8_names_the_line(tmp_path: Path) -> None:
    path = write(tmp_path, HEADER.encode() + b"2017-10-09 07:01:55,6,1,6,caf\xe9\n")
    err = error_of(path)
    assert err.line == 2 and "UTF-8" in err.message


def test_unknown_options_are_rejected(philly_csv: Path) -> None:
    with pytest.raises(TraceError, match="unknown option"):
        read_trace(philly_csv, rebase=False)


def test_a_missing_file_is_a_trace_error(tmp_path: Path) -> None:
    err = error_of(tmp_path / "nope.csv", format=None)
    assert err.line == 0 and "cannot read" in err.message


def test_a_broken_gzip_file_is_a_trace_error(tmp_path: Path) -> None:
    data = gzip.compress((FIXTURES / "philly_small.csv").read_bytes())
    err = error_of(write(tmp_path, data[: len(data) // 2], "t.csv.gz"))
    assert "gzip" in err.message


# --- the framework ----------------------------------------------------------------------------


def test_formats_lists_every_reader_with_a_description() -> None:
    listed = formats()
    assert list(listed) == list(READERS) and {"philly", "gavel"} <= set(listed)
    assert all(isinstance(d, str) and d for d in listed.values())
    assert get_reader("philly") is READERS["philly"]


def test_report_to_dict_is_json_compatible() -> None:
    _, report = read_trace(FIXTURES / "philly_small.csv")
    out = json.loads(json.dumps(report.to_dict()))
    assert out["jobs_dropped"] == 3
    assert out["drop_reasons"]["num_gpus <= 0"] == {"count": 1, "first_lines": [7]}
    assert set(out) == {
        "format",
        "path",
        "jobs_read",
        "jobs_kept",
        "jobs_dropped",
        "drop_reasons",
        "warnings",
        "assumptions",
        "time_span_s",
        "start_time",
    }


def test_report_keeps_the_first_line_numbers_of_a_reason() -> None:
    report = ParseReport(format="x", path="p")
    report.drop("bad", [30, 10, 20])
    report.drop("bad", [5, 7, 40, 1])
    assert report.drop_reasons["bad"] == LineTally(7, [1, 5, 7, 10, 20][:FIRST_LINES])
    report.warn("odd", np.arange(2, 10))
    assert report.warnings == ["odd: 8 rows (line 2, 3, 4, 5, 6, ...)"]
    report.warn("never", [])
    assert len(report.warnings) == 1


def test_timestamp_conversion_agrees_with_the_calendar() -> None:
    years = (1, 1600, 1900, 1969, 1970, 2000, 2017, 2024, 2100, 9999)
    values = [
        f"{y:04d}-{m:02d}-{d:02d} {h:02d}:59:59"
        for y in years
        for m in range(14)
        for d in (0, 1, 28, 29, 30, 31, 32)
        for h in (0, 23, 24)
    ]
    out, bad = to_datetime(pa.array(values))
    for value, got, is_bad in zip(values, out, bad, strict=True):
        try:
            want = datetime.strptime(value, "%Y-%m-%d %H:%M:%S")
        except ValueError:
            assert is_bad, value
        else:
            assert not is_bad and got == np.datetime64(want, "s"), value
