"""Readers of research-simulator workloads: Pollux/Sia, Tiresias, Synergy and GAIA."""

from __future__ import annotations

import csv
import json
import math
import tempfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from clustersim.errors import TraceError
from clustersim.jobtypes import reference_speed
from clustersim.traces import READERS, detect_format, read_trace
from clustersim.traces.base import LineTally
from clustersim.traces.pollux import GRID_REPLICAS, POLLUX_JCT_S, grid_jct, pollux_jct
from clustersim.traces.synergy import ITERATION_TIME_S

FIXTURES = Path(__file__).parent / "fixtures" / "traces"
FORMATS = ("pollux", "tiresias", "synergy", "gaia")
#: Every real file of these formats, relative to shared/data/traces, with its job count.
REAL = [
    ("pollux/workload-1.csv", "pollux", 160),
    ("pollux/workload-2.csv", "pollux", 160),
    ("pollux/workload-3.csv", "pollux", 160),
    ("tiresias/60_job.csv", "tiresias", 60),
    ("tiresias/tf_job.csv", "tiresias", 2),
    ("synergy/static_100job_6_3_1100.0.csv", "synergy", 100),
    ("synergy/test_trace.csv", "synergy", 8),
    ("gaia/pai-100k.csv", "gaia", 99_998),
]
FUZZ = settings(
    max_examples=50,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def error_of(path: Path, format: str | None, **options: object) -> TraceError:
    with pytest.raises(TraceError) as info:
        read_trace(path, format=format, **options)
    return info.value


def write(tmp_path: Path, text: str, name: str = "t.csv") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def rows(path: Path) -> list[dict[str, str]]:
    with path.open() as f:
        return list(csv.DictReader(f))


# --- every real file -------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "format", "count"), REAL)
def test_real_files_are_detected_and_read_completely(
    shared_data: Path, name: str, format: str, count: int
) -> None:
    path = shared_data / "traces" / name
    assert detect_format(path) == format
    _, report = read_trace(path)
    assert (report.format, report.jobs_read, report.jobs_kept) == (format, count, count)
    assert report.drop_reasons == {}
    json.dumps(report.to_dict(), allow_nan=False)


def test_research_readers_claim_no_other_file(shared_data: Path) -> None:
    real = {name for name, _, _ in REAL}
    others = [
        p
        for p in (shared_data / "traces").rglob("*")
        if p.is_file()
        and p.suffix in (".csv", ".trace", ".header")
        and str(p.relative_to(shared_data / "traces")) not in real
    ]
    assert len(others) > 20
    for path in others:
        head = path.read_bytes()[:65536]
        for fmt in FORMATS:
            assert not READERS[fmt].sniff(head, path.name), (fmt, path)


# --- Pollux / Sia ----------------------------------------------------------------------------


def test_pollux_workload_spot_values(shared_data: Path) -> None:
    path = shared_data / "traces" / "pollux" / "workload-1.csv"
    jobs, report = read_trace(path)
    raw = rows(path)
    t4 = reference_speed("T4") or 0
    assert t4 == pytest.approx(0.508, abs=1e-3)
    for r in raw[:40]:
        i = int(np.flatnonzero(jobs.job_id == r["name"])[0])
        assert jobs.submit_time[i] == float(r["time"])
        assert jobs.num_gpus[i] == int(r["num_replicas"])
        assert jobs.job_type[i] == r["application"]
        jct, how = grid_jct(r["application"], float(r["num_replicas"]), float(r["batch_size"]))
        assert how == 0 and jobs.work[i] == pytest.approx(jct * t4)
    # cifar10-0: 6 replicas, batch 2048: 854.2 s on T4 (Pollux's profiles).
    assert jobs.work[0] == pytest.approx(854.2 * t4)
    assert report.warnings == []
    assert any("Pollux's application profiles" in a for a in report.assumptions)


def test_pollux_table_matches_the_profiles(shared_data: Path) -> None:
    """The embedded JCT grid is what Pollux's rule computes from its profiles."""
    profiles = shared_data / "throughput" / "pollux"
    for app, (sizes, grid) in POLLUX_JCT_S.items():
        assert len(grid) == len(GRID_REPLICAS)
        for r, row in zip(GRID_REPLICAS, grid, strict=True):
            for b, value in zip(sizes, row, strict=True):
                want = pollux_jct(profiles, app, r, b)
                if math.isnan(want):
                    assert math.isnan(value), (app, r, b)
                else:
                    assert value == pytest.approx(want, abs=0.051), (app, r, b)


def test_pollux_fixture_drops_and_interpolates() -> None:
    jobs, report = read_trace(FIXTURES / "pollux_small.csv")
    assert report.jobs_read == 7
    assert report.drop_reasons == {
        "num_replicas < 1": LineTally(1, [7]),
        "application has no Pollux profile (give work_s)": LineTally(1, [5]),
        "batch_size outside the application's profiled range": LineTally(1, [6]),
    }
    assert list(jobs.job_id) == ["cifar10-0", "ncf-1", "cifar10-2", "imagenet-6"]
    assert any("interpolated: 1 row (line 4)" in w for w in report.warnings)
    # bert with 4 replicas and batch 12 (local batch 3 < 4) is not a configuration Pollux runs.
    # cifar10 with 10 replicas and batch 3000: bilinear in log2 between 8/12 and 2048/4096.
    sizes, grid = POLLUX_JCT_S["cifar10"]
    tx = (math.log2(10) - 3) / (math.log2(12) - 3)
    ty = (math.log2(3000) - 11) / 1
    corners = np.log([[grid[4][4], grid[4][5]], [grid[5][4], grid[5][5]]])
    want = math.exp(
        (1 - tx) * (1 - ty) * corners[0, 0]
        + (1 - tx) * ty * corners[0, 1]
        + tx * (1 - ty) * corners[1, 0]
        + tx * ty * corners[1, 1]
    )
    assert sizes[4:6] == (2048, 4096)
    assert jobs.work[2] == pytest.approx(want * (reference_speed("T4") or 0))
    assert jobs.work[3] == pytest.approx(
        POLLUX_JCT_S["imagenet"][1][-1][5] * (reference_speed("T4") or 0)
    )


def test_pollux_nearest_grid_point_when_corners_are_missing() -> None:
    value, how = grid_jct("bert", 5, 24)  # corners (4, 24) and (6, 24) exist, (4|6, 12) do not
    assert how == 2 and value in {x for row in POLLUX_JCT_S["bert"][1] for x in row}
    assert math.isnan(grid_jct("nope", 1, 1)[0])
    assert math.isnan(grid_jct("bert", 1, 1000)[0])  # batch above the profiled range


def test_pollux_work_option(tmp_path: Path) -> None:
    jobs, report = read_trace(FIXTURES / "pollux_small.csv", work_s={"gpt": 500, "ncf": 7})
    assert list(jobs.job_id) == ["cifar10-0", "ncf-1", "cifar10-2", "gpt-3", "imagenet-6"]
    assert jobs.work[1] == 7.0 and jobs.work[3] == 500.0
    assert any("work_s" in a and "gpt, ncf" in a for a in report.assumptions)
    assert error_of(FIXTURES / "pollux_small.csv", None, work_s={"gpt": -1}).field == "work_s"
    assert error_of(FIXTURES / "pollux_small.csv", None, work_s=5).field == "work_s"


def test_pollux_errors() -> None:
    err = error_of(FIXTURES / "pollux_bad_number.csv", None)
    assert (err.line, err.field) == (3, "time") and "1e3x" in err.message


# --- Tiresias --------------------------------------------------------------------------------


def test_tiresias_spot_values(shared_data: Path) -> None:
    path = shared_data / "traces" / "tiresias" / "60_job.csv"
    jobs, report = read_trace(path)
    for r in rows(path):
        i = int(np.flatnonzero(jobs.job_id == r["job_id"])[0])
        assert jobs.num_gpus[i] == int(r["num_gpu"])
        assert jobs.submit_time[i] == float(r["submit_time"])
        assert jobs.work[i] == float(r["duration"])
        assert jobs.job_type[i] == r["model_name"]
    assert jobs.job_type[1] == "vgg11" and jobs.num_gpus[1] == 8 and jobs.work[1] == 147.0
    assert any("iterations, interval" in a for a in report.assumptions)


def test_tiresias_tf_job_layout_warns_about_the_repeated_job(shared_data: Path) -> None:
    jobs, report = read_trace(shared_data / "traces" / "tiresias" / "tf_job.csv")
    assert list(jobs.job_id) == ["10", "10"] and list(jobs.num_gpus) == [12, 12]
    assert list(jobs.work) == [20.0, 20.0] and list(jobs.submit_time) == [11.0, 11.0]
    assert report.warnings == [
        "job_id appears more than once (rows kept as separate jobs): 1 row (line 3)"
    ]


def test_tiresias_fixture() -> None:
    jobs, report = read_trace(FIXTURES / "tiresias_small.csv")
    assert report.drop_reasons == {
        "duration <= 0": LineTally(1, [4]),
        "num_gpu < 1": LineTally(1, [5]),
        "submit_time < 0": LineTally(1, [6]),
    }
    assert list(jobs.job_id) == ["0", "1", "1"]
    assert len(report.warnings) == 1 and "(line 7)" in report.warnings[0]


def test_tiresias_errors(tmp_path: Path) -> None:
    err = error_of(FIXTURES / "tiresias_missing_column.csv", "tiresias")
    assert (err.line, err.field) == (1, "num_gpu")
    err = error_of(write(tmp_path, "job_id,num_gpu,submit_time,duration\n1,1,0,x\n"), None)
    assert (err.line, err.field) == (2, "duration")
    jobs, report = read_trace(write(tmp_path, "job_id,num_gpu,submit_time,duration\n1,1,0,5\n"))
    assert list(jobs.job_type) == [""] and any("no model_name" in a for a in report.assumptions)


# --- Synergy ---------------------------------------------------------------------------------


def test_synergy_spot_values(shared_data: Path) -> None:
    path = shared_data / "traces" / "synergy" / "static_100job_6_3_1100.0.csv"
    jobs, report = read_trace(path)
    v100 = reference_speed("V100") or 0
    assert v100 == pytest.approx(1.409, abs=1e-3)
    lines = path.read_text().splitlines()
    for line in lines:
        job_id, model, arrival, iters, gpus = line.split(",")
        i = int(np.flatnonzero(jobs.job_id == job_id)[0])
        assert jobs.job_type[i] == model and jobs.num_gpus[i] == int(gpus)
        assert jobs.submit_time[i] == float(arrival)
        assert jobs.work[i] == pytest.approx(int(iters) * ITERATION_TIME_S[model] * v100)
    assert any("seconds" in a for a in report.assumptions)


def test_synergy_arrival_in_hours(shared_data: Path) -> None:
    path = shared_data / "traces" / "synergy" / "test_trace.csv"
    jobs, report = read_trace(path, arrival_unit="h")
    assert jobs.submit_time[0] == pytest.approx(0.123 * 3600)
    assert any("arrival in hours" in a for a in report.assumptions)
    assert error_of(path, None, arrival_unit="min").field == "arrival_unit"


def test_synergy_fixture_and_iteration_time_option() -> None:
    jobs, report = read_trace(FIXTURES / "synergy_small.csv")
    assert report.drop_reasons == {
        "num_iters <= 0": LineTally(1, [4]),
        "model has no iteration time (give iteration_time_s)": LineTally(1, [3]),
    }
    assert list(jobs.job_id) == ["0", "1", "4"]
    jobs, _ = read_trace(FIXTURES / "synergy_small.csv", iteration_time_s={"bert": 2.0})
    assert list(jobs.job_id) == ["0", "1", "2", "4"]
    assert jobs.work[2] == pytest.approx(1000 * 2.0 * (reference_speed("V100") or 0))
    err = error_of(FIXTURES / "synergy_small.csv", None, iteration_time_s={"bert": 0})
    assert err.field == "iteration_time_s"


def test_synergy_errors() -> None:
    err = error_of(FIXTURES / "synergy_wrong_fields.csv", "synergy")
    assert (err.line, err.field) == (2, "gpu_demand")


# --- GAIA ------------------------------------------------------------------------------------


def test_gaia_spot_values(shared_data: Path) -> None:
    path = shared_data / "traces" / "gaia" / "pai-100k.csv"
    jobs, report = read_trace(path)
    assert report.start_time == "2023-01-01T00:00:00"
    assert jobs.job_id[1] == "1"
    assert jobs.submit_time[1] == pytest.approx(0.5769444444444503 * 3600)
    assert jobs.work[1] == pytest.approx(25.129444444444445 * 3600)
    assert (jobs.num_gpus == 1).all() and jobs.cpu.max() == 400.0
    assert jobs.submit_time[-1] == pytest.approx(8759.450277777776 * 3600)


def test_gaia_options() -> None:
    path = FIXTURES / "gaia_small.csv"
    jobs, report = read_trace(path, cpus_per_gpu=8, start_time=None)
    assert report.start_time is None
    assert list(jobs.num_gpus) == [1, 2, 50]
    assert report.drop_reasons == {
        "length <= 0": LineTally(1, [4]),
        "cpus not positive and finite": LineTally(1, [5]),
    }
    _, report = read_trace(path, start_time="2023-06-01T00:00")
    assert report.start_time == "2023-06-01T00:00:00"
    assert error_of(path, None, start_time="June").field == "start_time"
    assert error_of(path, None, start_time="2023-06-01T00:00+02:00").field == "start_time"
    assert error_of(path, None, cpus_per_gpu=0).field == "cpus_per_gpu"


def test_gaia_errors() -> None:
    err = error_of(FIXTURES / "gaia_bad_number.csv", None)
    assert (err.line, err.field) == (3, "length")


# --- fuzz ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def scratch() -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as tmp:
        yield Path(tmp)


#: Sample file, header lines and numeric field indexes of each format.
SAMPLES = {
    "pollux": ("pollux/workload-1.csv", 1, (1, 3, 4)),
    "tiresias": ("tiresias/60_job.csv", 1, (1, 2, 5)),
    "synergy": ("synergy/static_100job_6_3_1100.0.csv", 0, (2, 3, 4)),
    "gaia": ("gaia/pai-100k.csv", 1, (0, 1, 2)),
}


def sample(shared_data: Path, kind: str) -> list[str]:
    return (shared_data / "traces" / SAMPLES[kind][0]).read_text().splitlines()[:12]


def outcome(path: Path, format: str) -> TraceError | None:
    try:
        jobs, report = read_trace(path, format=format)
    except TraceError as err:
        assert isinstance(err.line, int) and err.line >= 0
        assert isinstance(err.field, str) and err.message and err.path in str(err)
        return err
    assert len(jobs) == report.jobs_kept > 0
    assert report.jobs_read == report.jobs_kept + report.jobs_dropped
    assert sum(t.count for t in report.drop_reasons.values()) == report.jobs_dropped
    assert (jobs.work > 0).all() and np.isfinite(jobs.work).all() and (jobs.num_gpus >= 1).all()
    assert (jobs.submit_time >= 0).all()
    json.dumps(report.to_dict(), allow_nan=False)
    return None


@FUZZ
@given(
    kind=st.sampled_from(FORMATS),
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
def test_mutated_files_fail_only_with_trace_errors(
    shared_data: Path, scratch: Path, kind: str, ops: list
) -> None:
    data = bytearray(("\n".join(sample(shared_data, kind)) + "\n").encode())
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
    path = scratch / "fuzz.csv"
    path.write_bytes(bytes(data))
    outcome(path, kind)


@FUZZ
@given(
    kind=st.sampled_from(FORMATS),
    row=st.integers(0, 9),
    which=st.integers(0, 20),
    value=st.one_of(
        st.sampled_from(["1e400", "-1e400", "nan", "inf", "-1", "0", "0.5", "9" * 400, "", " 5"]),
        st.integers(-(10**30), 10**30).map(str),
        st.text(
            alphabet=st.characters(exclude_characters="\n\r,", exclude_categories=["Cs"]),
            max_size=12,
        ),
    ),
)
def test_a_bad_field_is_reported_on_its_line(
    shared_data: Path, scratch: Path, kind: str, row: int, which: int, value: str
) -> None:
    _, header, numeric = SAMPLES[kind]
    lines = sample(shared_data, kind)
    k = header + row
    fields = lines[k].split(",")
    col = numeric[which % len(numeric)] if which < 14 else which % len(fields)
    fields[col] = value
    lines[k] = ",".join(fields)
    path = scratch / "field.csv"
    path.write_text("\n".join(lines) + "\n")
    err = outcome(path, kind)
    if err is not None:
        assert err.line == k + 1, str(err)
        assert err.field or "NUL" in err.message, str(err)
