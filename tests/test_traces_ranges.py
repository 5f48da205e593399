"""Value ranges: every reader refuses, at its line and naming its field, a kept value the
simulator could not run or report in finite numbers (a work of 1e308 used to parse "ready"
and then fail every run with "Out of range float values are not JSON compliant")."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from clustersim.errors import TraceError
from clustersim.traces import read_trace
from clustersim.traces.base import MAX_TIME_S, MAX_WORK, ParseReport, build_table

FIXTURES = Path(__file__).parent / "fixtures" / "traces"


def with_value(tmp_path: Path, fixture: str, line: int, column: int, value: str) -> Path:
    """A copy of ``fixture`` whose field ``column`` (0-based) on ``line`` (1-based) is
    ``value``."""
    sep = "\t" if fixture.endswith(".trace") else ","
    lines = (FIXTURES / fixture).read_text().split("\n")
    fields = lines[line - 1].split(sep)
    fields[column] = value
    lines[line - 1] = sep.join(fields)
    path = tmp_path / fixture
    path.write_text("\n".join(lines))
    return path


CASES = [
    # (format, fixture, line, column, value, field named in the error)
    ("philly", "philly_small.csv", 3, 1, "1e308", "duration"),
    ("tiresias", "tiresias_small.csv", 3, 5, "1e300", "duration"),
    ("tiresias", "tiresias_small.csv", 2, 2, "1e12", "submit_time"),
    ("gavel", "gavel_current_10.trace", 2, 5, "1e300", "total_steps"),
    ("gavel", "gavel_current_10.trace", 3, 9, "1e200", "arrival_time"),
    ("synergy", "synergy_small.csv", 2, 3, "1e300", "num_iters"),
    ("gaia", "gaia_small.csv", 3, 1, "1e300", "length"),
    ("pollux", "pollux_small.csv", 3, 1, "1e300", "time"),
    ("alibaba-openb", "openb_small.csv", 3, 1, "1e300", "cpu_milli"),
    ("alibaba-openb", "openb_small.csv", 3, 2, "1e300", "memory_mib"),
    ("alibaba-pai", "pai_task_small.csv", 3, 5, "1e300", "end_time"),
    ("alibaba-pai", "pai_task_small.csv", 2, 6, "1e300", "plan_cpu"),
    ("helios", "helios_small.csv", 3, 10, "1e300", "duration"),
    ("csv", "generic_canonical.csv", 3, 3, "1e308", "work"),
]


@pytest.mark.parametrize(("format", "fixture", "line", "column", "value", "field"), CASES)
def test_an_absurd_value_fails_at_its_line_naming_its_field(
    tmp_path: Path, format: str, fixture: str, line: int, column: int, value: str, field: str
) -> None:
    read_trace(FIXTURES / fixture, format)  # the fixture itself is fine
    path = with_value(tmp_path, fixture, line, column, value)
    with pytest.raises(TraceError) as info:
        read_trace(path, format)
    exc = info.value
    assert (exc.line, exc.field) == (line, field)
    assert "is out of range" in exc.message


def test_a_philly_job_log_with_a_submit_time_centuries_later_fails_at_its_line(
    tmp_path: Path,
) -> None:
    lines = (FIXTURES / "philly_raw_lines.jsonl").read_text().splitlines()
    lines[1] = lines[1].replace('"submitted_time": "2017', '"submitted_time": "2417')
    path = tmp_path / "log.jsonl"
    path.write_text("\n".join(lines))
    with pytest.raises(TraceError) as info:
        read_trace(path, "philly_raw")
    assert (info.value.line, info.value.field) == (2, "submitted_time")
    assert "submit_time = " in info.value.message


def test_build_table_checks_every_numeric_column_and_reports_the_earliest_line() -> None:
    report = ParseReport(format="t", path="t.csv", jobs_read=3)
    good = {
        "job_id": np.array(["a", "b", "c"], dtype=object),
        "submit_time": np.array([0.0, 1.0, 2.0]),
        "num_gpus": np.array([1, 2, 3]),
        "work": np.array([1.0, 2.0, 3.0]),
    }
    build_table("t.csv", report, np.array([5, 9, 7]), **good)
    bad_cases = {
        "submit_time": np.array([0.0, MAX_TIME_S * 2, -1.0]),
        "work": np.array([1.0, MAX_WORK * 10, math.inf]),
        "deadline": np.array([math.nan, 1e300, -1e300]),
        "cpu": np.array([math.nan, -1.0, math.inf]),
        "mem_gb": np.array([1.0, 1e10, 1e300]),
        "priority": np.array([0, 2**60, -(2**60)]),
        "max_gpus": np.array([1, 2, 10**7]),
    }
    for name, values in bad_cases.items():
        columns = {**good, name: values}
        with pytest.raises(TraceError) as info:
            build_table("t.csv", report, np.array([5, 9, 7]), {"work": "runtime"}, **columns)
        # rows at lines 9 and 7 are out of range: the earliest line is named
        assert info.value.line == 7, name
        assert info.value.field == ("runtime" if name == "work" else name)
    with pytest.raises(TraceError, match=r"row 1 of the kept jobs") as info:
        build_table("t.csv", report, **{**good, "work": np.array([1.0, 1e300, 1.0])})
    assert info.value.line == 0
