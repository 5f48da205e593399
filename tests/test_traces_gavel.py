"""The Gavel / Shockwave ``.trace`` reader."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest

from clustersim.errors import TraceError
from clustersim.traces import detect_format, read_trace
from clustersim.traces.base import LineTally

FIXTURES = Path(__file__).parent / "fixtures" / "traces"

#: Every real Gavel-format trace, relative to shared/data/traces, with its field count.
REAL = [
    ("gavel/0e4a51.trace", 7),
    ("gavel/2869ce.trace", 7),
    ("gavel/generated/gavel_philly_ed69ec_951jobs.trace", 10),
    ("gavel/generated/gavel_synth_multigpu_lam900_n100.trace", 10),
    ("gavel/generated/gavel_synth_multigpu_lam900_n500.trace", 10),
    ("gavel/generated/gavel_synth_multigpu_lam900_n2000.trace", 10),
    ("gavel/generated/gavel_synth_multigpu_lam900_n8000.trace", 10),
    ("gavel/generated/gavel_synth_single_lam600_n500.trace", 10),
    ("shockwave/shockwave_120jobs_100.trace", 12),
    ("shockwave/shockwave_220jobs_100.trace", 12),
    ("shockwave/shockwave_460jobs_100.trace", 12),
    ("shockwave/shockwave_900jobs_100.trace", 12),
    ("shockwave/shockwave_900jobs_1000.trace", 12),
]
#: Where each layout keeps the fields the table uses.
POS = {
    7: {"total_steps": 4, "arrival_time": 5, "scale_factor": 6},
    10: {"total_steps": 5, "scale_factor": 6, "arrival_time": 9},
    12: {"total_steps": 5, "scale_factor": 6, "arrival_time": 11},
}


def raw_lines(path: Path) -> list[list[str]]:
    return [line.split("\t") for line in path.read_text().split("\n") if line]


def error_of(path: Path, format: str | None = "gavel") -> TraceError:
    with pytest.raises(TraceError) as info:
        read_trace(path, format=format)
    return info.value


def write(tmp_path: Path, text: str, name: str = "t.trace") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


# --- the real traces --------------------------------------------------------------------------


def test_the_two_gavel_traces_have_their_documented_job_counts(shared_data: Path) -> None:
    jobs, _ = read_trace(shared_data / "traces" / "gavel" / "0e4a51.trace")
    assert len(jobs) == 1_181
    jobs, _ = read_trace(shared_data / "traces" / "gavel" / "2869ce.trace")
    assert len(jobs) == 533


@pytest.mark.parametrize(("name", "nfields"), REAL)
def test_every_real_trace_parses_completely(shared_data: Path, name: str, nfields: int) -> None:
    path = shared_data / "traces" / name
    raw = raw_lines(path)
    assert {len(r) for r in raw} == {nfields}
    jobs, report = read_trace(path)
    assert report.format == "gavel"
    assert len(jobs) == report.jobs_read == report.jobs_kept == len(raw)
    assert report.drop_reasons == {} and report.warnings == []
    assert report.start_time is None
    assert f"({nfields} fields)" in report.assumptions[0]
    assert detect_format(path) == "gavel"


@pytest.mark.parametrize(("name", "nfields"), REAL)
def test_rows_match_the_raw_text(shared_data: Path, name: str, nfields: int) -> None:
    path = shared_data / "traces" / name
    raw = raw_lines(path)
    jobs, _ = read_trace(path)
    pos = POS[nfields]
    # Gavel traces are in arrival order, so the table keeps the file order.
    assert list(jobs.job_id) == [str(i) for i in range(len(raw))]
    for i in sorted({0, 1, len(raw) // 2, len(raw) - 1}):
        fields = raw[i]
        assert jobs.job_type[i] == fields[0]
        assert jobs.work[i] == float(fields[pos["total_steps"]])
        assert jobs.num_gpus[i] == int(fields[pos["scale_factor"]])
        assert jobs.submit_time[i] == float(fields[pos["arrival_time"]])
        assert jobs.priority[i] == 1
        assert np.isnan(jobs.deadline[i])
        assert jobs.user[i] == "" and jobs.vc[i] == ""


def test_spot_values_of_the_old_trace(shared_data: Path) -> None:
    jobs, _ = read_trace(shared_data / "traces" / "gavel" / "0e4a51.trace")
    assert jobs.job_type[0] == "Transformer (batch size 128)"
    assert (jobs.work[0], jobs.submit_time[0], jobs.num_gpus[0]) == (95121.0, 0.0, 1)
    assert jobs.job_type[1] == "Recommendation (batch size 8192)"
    assert (jobs.work[1], jobs.submit_time[1]) == (10000.0, 6.0)
    assert set(np.unique(jobs.num_gpus)) == {1, 2, 4, 8}


def test_it_reads_gzip_input(shared_data: Path, tmp_path: Path) -> None:
    src = shared_data / "traces" / "shockwave" / "shockwave_120jobs_100.trace"
    gz = tmp_path / "s.trace.gz"
    gz.write_bytes(gzip.compress(src.read_bytes()))
    plain, _ = read_trace(src)
    jobs, report = read_trace(gz)
    assert report.format == "gavel"
    assert np.array_equal(jobs.work, plain.work)
    assert np.array_equal(jobs.job_type, plain.job_type)


def test_explicit_wrong_format_is_a_trace_error(shared_data: Path) -> None:
    err = error_of(shared_data / "traces" / "gavel" / "0e4a51.trace", format="philly")
    assert (err.line, err.field) == (1, "timestamp")


# --- the three layouts, on fixtures -----------------------------------------------------------


def test_old_layout_drops_unusable_jobs_and_defaults_the_priority() -> None:
    jobs, report = read_trace(FIXTURES / "gavel_old_7.trace")
    assert report.jobs_read == 5 and len(jobs) == 3
    assert report.drop_reasons == {
        "total_steps <= 0": LineTally(1, [3]),
        "scale_factor < 1": LineTally(1, [4]),
    }
    assert list(jobs.job_id) == ["0", "1", "4"]
    assert list(jobs.submit_time) == [0.0, 6.0, 8.0]
    assert list(jobs.num_gpus) == [1, 4, 2]
    assert list(jobs.priority) == [1, 1, 1]
    assert jobs.job_type[1] == "Transformer (batch size 128)"


def test_current_layout_keeps_the_first_arrival_and_ranks_fractional_weights() -> None:
    jobs, report = read_trace(FIXTURES / "gavel_current_10.trace")
    assert list(jobs.submit_time) == [10.0, 100.0, 129.0]  # not re-based
    assert list(jobs.job_id) == ["0", "2", "1"]
    # weights 1, 2.5, 0.5 in table order → ranks 2, 3, 1
    assert list(jobs.priority) == [2, 3, 1]
    assert any("rank of the weight" in a and "0.5, 1, 2.5" in a for a in report.assumptions)
    # the SLO of job 1 cannot become a deadline without a duration
    assert np.all(np.isnan(jobs.deadline))
    assert any("SLO" in w and "line 2" in w for w in report.warnings)
    assert any("not in arrival order" in w and "line 3" in w for w in report.warnings)


def test_shockwave_layout_turns_slo_into_a_deadline() -> None:
    jobs, report = read_trace(FIXTURES / "shockwave_12.trace")
    assert list(jobs.job_id) == ["0", "2", "1"]  # line 3 arrives before line 2
    assert list(jobs.submit_time) == [0.0, 40.0, 55.0]
    assert list(jobs.priority) == [1, 1, 2]
    assert jobs.deadline[2] == 55 + 1.5 * 3338
    assert np.isnan(jobs.deadline[0]) and np.isnan(jobs.deadline[1])
    assert any("accordion: 1, gns: 1, static: 1" in a for a in report.assumptions)
    assert report.warnings == [
        "jobs not in arrival order (arrival_time smaller than on the line before; the table "
        "orders jobs by arrival, Gavel replays them in file order): 1 row (line 3)"
    ]


def test_unsorted_and_negative_arrivals() -> None:
    jobs, report = read_trace(FIXTURES / "gavel_unsorted.trace")
    assert report.drop_reasons == {"arrival_time < 0": LineTally(1, [4])}
    assert list(jobs.job_id) == ["0", "2", "1"]
    assert any("line 3" in w for w in report.warnings)


def test_a_non_numeric_field_names_its_line_and_field() -> None:
    err = error_of(FIXTURES / "gavel_bad_number.trace")
    assert (err.line, err.field) == (3, "total_steps")
    assert "many" in err.message


def test_a_wrong_field_count_names_its_line_and_field() -> None:
    err = error_of(FIXTURES / "gavel_wrong_fields.trace")
    assert (err.line, err.field) == (5, "scale_factor")


def test_an_unknown_layout_is_a_trace_error(tmp_path: Path) -> None:
    err = error_of(write(tmp_path, "a\tb\tc\n"))
    assert err.line == 1 and "7, 10 or 12" in err.message


def test_an_empty_file_is_a_trace_error() -> None:
    assert error_of(FIXTURES / "empty.trace").line == 0
    assert error_of(FIXTURES / "empty.trace", format=None).line == 0


def test_an_empty_job_type_is_a_trace_error(tmp_path: Path) -> None:
    err = error_of(write(tmp_path, "A3C\tc\t-n\t1\t5\t0\t1\n \tc\t-n\t1\t5\t0\t1\n"))
    assert (err.line, err.field) == (2, "job_type")


def test_job_type_is_kept_exactly_and_blank_lines_are_skipped(tmp_path: Path) -> None:
    text = "\n A3C \tc\t-n\t1\t5\t0\t1\n\n\t\t\nLM\tc\t-n\t1\t5.5\t3\t1\n"
    jobs, report = read_trace(write(tmp_path, text))
    assert list(jobs.job_type) == [" A3C ", "LM"]
    assert list(jobs.job_id) == ["0", "1"]
    assert any("total_steps is not an integer" in w and "line 5" in w for w in report.warnings)


def test_every_error_reports_the_earliest_line(tmp_path: Path) -> None:
    text = "A3C\tc\t-n\t1\t5\t0\t1\nA3C\tc\t-n\t1\t5\t0\tx\nA3C\tc\t-n\tyes\t5\t0\t1\n"
    err = error_of(write(tmp_path, text))
    assert (err.line, err.field) == (2, "scale_factor")
