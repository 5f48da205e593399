"""Synthetic workloads: arrival processes, Gavel's generator, fitted models, determinism."""

from __future__ import annotations

import dataclasses
import json
import math
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from clustersim.cli import main
from clustersim.errors import ClustersimError
from clustersim.jobs import JobTable
from clustersim.perf import PerformanceModel, ThroughputTable
from clustersim.presets import preset
from clustersim.synth import (
    GAVEL_SIZE_PROBS,
    MAX_QUANTILES,
    ArrivalProcess,
    DurationDist,
    WorkloadModel,
    fit_workload,
    gavel_model,
    generate,
    generate_with_notes,
    reference_durations,
    write_jobs_csv,
)
from clustersim.traces import read_trace

ROOT = Path(__file__).resolve().parents[1]


def _rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence(seed))


def _table(sizes: np.ndarray, work: np.ndarray, submit: np.ndarray | None = None) -> JobTable:
    n = len(sizes)
    return JobTable.from_columns(
        job_id=np.arange(n),
        submit_time=np.arange(n, dtype=float) * 60.0 if submit is None else submit,
        num_gpus=sizes,
        work=work,
    )


def _same(a: JobTable, b: JobTable) -> bool:
    return all(
        np.array_equal(x, y, equal_nan=x.dtype.kind == "f")
        for x, y in zip(a.columns().values(), b.columns().values(), strict=True)
    )


# -- arrivals ---------------------------------------------------------------------------------


def test_poisson_interarrival_mean_and_spread_match_the_rate() -> None:
    times = ArrivalProcess.poisson(12.0).sample(_rng(7), n_jobs=20_000)
    gaps = np.diff(np.r_[0.0, times])
    assert len(times) == 20_000
    assert (gaps > 0).all()
    assert gaps.mean() == pytest.approx(300.0, rel=0.02)  # 3600 / 12
    assert gaps.std() / gaps.mean() == pytest.approx(1.0, abs=0.03)  # exponential: CV 1


def test_poisson_count_over_a_horizon_is_rate_times_time() -> None:
    times = ArrivalProcess.poisson(60.0).sample(_rng(3), horizon_s=100 * 3600.0)
    assert (times < 100 * 3600.0).all()
    assert abs(len(times) - 6000) < 4 * math.sqrt(6000)


def test_both_stop_conditions_take_whichever_comes_first() -> None:
    proc = ArrivalProcess.poisson(60.0)
    assert len(proc.sample(_rng(1), n_jobs=10, horizon_s=1e9)) == 10
    assert (proc.sample(_rng(1), n_jobs=10**6, horizon_s=3600.0) < 3600.0).all()


def test_too_many_arrivals_are_refused_not_truncated(monkeypatch: pytest.MonkeyPatch) -> None:
    import clustersim.synth as synth

    monkeypatch.setattr(synth, "MAX_JOBS", 100)
    proc = ArrivalProcess.poisson(3600.0)  # one a second
    assert len(proc.sample(_rng(0), horizon_s=50.0)) < 100
    with pytest.raises(ClustersimError, match="more than 100 arrivals"):
        proc.sample(_rng(0), horizon_s=1000.0)


def test_a_sinusoidal_day_peaks_at_its_peak_hour() -> None:
    proc = ArrivalProcess(kind="diurnal", rate_per_hour=30.0, amplitude=0.8, peak_hour=15.0)
    times = proc.sample(_rng(11), horizon_s=400 * 86400.0)
    hours = np.floor(np.mod(times / 3600.0, 24.0)).astype(int)
    counts = np.bincount(hours, minlength=24)
    assert len(times) / 400 / 24 == pytest.approx(30.0, rel=0.02)
    assert int(np.argmax(counts)) in (14, 15)
    assert int(np.argmin(counts)) in (2, 3)
    expected = 1.0 + 0.8 * np.cos(2 * np.pi * (np.arange(24) + 0.5 - 15.0) / 24)
    np.testing.assert_allclose(counts / counts.mean(), expected, atol=0.06)


def test_an_hourly_profile_sends_nothing_in_its_empty_hours() -> None:
    profile = [0.0] * 8 + [1.0] * 10 + [0.0] * 6  # 08:00-18:00 only
    proc = ArrivalProcess(kind="diurnal", rate_per_hour=5.0, hourly=tuple(profile), start_hour=6)
    times = proc.sample(_rng(2), n_jobs=5000)
    hours = np.floor(np.mod(6.0 + times / 3600.0, 24.0))
    assert ((hours >= 8) & (hours < 18)).all()
    days = times[-1] / 86400.0
    assert 5000 / days / 24 == pytest.approx(5.0, rel=0.05)  # still 5 jobs/h over a day


@pytest.mark.parametrize(
    "kwargs",
    [
        {"kind": "weekly"},
        {"rate_per_hour": 0.0},
        {"rate_per_hour": math.inf},
        {"amplitude": 1.5},
        {"peak_hour": 25.0},
        {"kind": "diurnal", "hourly": (1.0,) * 23},
        {"kind": "diurnal", "hourly": (0.0,) * 24},
    ],
)
def test_bad_arrival_processes_are_refused(kwargs: dict) -> None:
    with pytest.raises(ClustersimError):
        ArrivalProcess(**kwargs)


# -- Gavel's generator ------------------------------------------------------------------------


def test_gavel_model_reproduces_the_papers_distributions() -> None:
    model = gavel_model()
    jobs = generate(model, n_jobs=20_000, seed=5)
    sizes, counts = np.unique(jobs.num_gpus, return_counts=True)
    assert sizes.tolist() == [1, 2, 4, 8]
    np.testing.assert_allclose(counts / 20_000, GAVEL_SIZE_PROBS, atol=0.01)
    minutes = np.log10(reference_durations(jobs) / 60.0)
    assert minutes.min() >= 1.5 - 1e-6 and minutes.max() <= 4.0 + 1e-6
    assert (minutes > 3.0).mean() == pytest.approx(0.2, abs=0.01)
    types = ThroughputTable.load(None)
    assert set(jobs.job_type) == set(types.job_types)  # 26 types, uniform
    multi = jobs.num_gpus > 1
    distributed = {
        t
        for t in types.job_types
        if np.any(~np.isnan(types.consolidated[:, types.index(t), types.scale_factors > 1]))
    }
    assert set(jobs.job_type[multi]) <= distributed
    assert np.diff(np.r_[0.0, jobs.submit_time]).mean() == pytest.approx(900.0, rel=0.03)


def test_job_types_do_not_change_the_duration_on_the_reference_type() -> None:
    typed = generate(gavel_model(), n_jobs=300, seed=9)
    generic = generate(dataclasses.replace(gavel_model(), job_types=None), n_jobs=300, seed=9)
    assert (generic.job_type == "").all()
    np.testing.assert_array_equal(typed.submit_time, generic.submit_time)
    np.testing.assert_array_equal(typed.num_gpus, generic.num_gpus)
    np.testing.assert_allclose(reference_durations(typed), generic.work, rtol=1e-9)


def test_single_gpu_gavel_model_has_only_one_gpu_jobs() -> None:
    jobs = generate(gavel_model(multi_gpu=False), duration_s=86400.0 * 3, seed=1)
    assert (jobs.num_gpus == 1).all()
    assert jobs.submit_time.max() < 86400.0 * 3


def test_the_log10_mixture_mean_is_exact() -> None:
    dist = gavel_model().durations[0]
    # 60 * E[10^U(a,b)] = 60 (10^b - 10^a) / (ln 10 (b - a)), mixed 0.8 / 0.2
    expected = 60 * (
        0.8 * (10**3 - 10**1.5) / (math.log(10) * 1.5) + 0.2 * (10**4 - 10**3) / math.log(10)
    )
    assert dist.mean_s() == pytest.approx(expected, rel=1e-12)
    assert dist.sample(_rng(4), 200_000).mean() == pytest.approx(expected, rel=0.02)


# -- determinism ------------------------------------------------------------------------------


def test_the_same_seed_gives_the_same_table_and_another_seed_does_not() -> None:
    model = gavel_model()
    a = generate(model, n_jobs=500, seed=42)
    b = generate(model, n_jobs=500, seed=42)
    c = generate(model, n_jobs=500, seed=43)
    assert _same(a, b)
    assert not np.array_equal(a.submit_time, c.submit_time)


_DIGEST = (
    "import hashlib, numpy as np\n"
    "from clustersim.synth import gavel_model, generate\n"
    "j = generate(gavel_model(), n_jobs=400, seed=3)\n"
    "h = hashlib.sha256()\n"
    "for a in (j.submit_time, j.num_gpus, j.work):\n"
    "    h.update(np.ascontiguousarray(a).tobytes())\n"
    "h.update('|'.join(j.job_type).encode())\n"
    "print(h.hexdigest())\n"
)


def test_generation_is_identical_in_another_process(capsys: pytest.CaptureFixture) -> None:
    exec(_DIGEST, {})
    here = capsys.readouterr().out
    there = subprocess.run(
        [sys.executable, "-c", _DIGEST],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONHASHSEED": "12345", "PATH": ""},
        cwd=ROOT,
    ).stdout
    assert here == there and len(here.strip()) == 64


# -- fitting ----------------------------------------------------------------------------------


def test_fit_recovers_sizes_and_lognormal_durations_per_bucket() -> None:
    rng = _rng(8)
    sizes = np.r_[np.ones(6000, dtype=int), np.full(3000, 4), np.full(1000, 16)]
    mu = np.select([sizes == 1, sizes == 4], [7.0, 9.0], 11.0)
    work = np.exp(mu + 0.5 * rng.standard_normal(len(sizes)))
    model = fit_workload(_table(sizes, work))
    assert model.sizes.tolist() == [1, 4, 16]
    np.testing.assert_allclose(model.size_probs, [0.6, 0.3, 0.1])
    assert model.bucket_bounds.tolist() == [1, 4, 16]
    for dist, m in zip(model.durations, (7.0, 9.0, 11.0), strict=True):
        assert dist.kind == "lognormal"
        assert dist.params[0] == pytest.approx(m, abs=0.05)
        assert dist.params[1] == pytest.approx(0.5, abs=0.045)  # 4 standard errors
    assert model.arrival.kind == "poisson"
    assert model.arrival.rate_per_hour == pytest.approx(60.0)  # one job a minute
    assert model.job_types is None


def test_small_buckets_fall_back_on_the_fit_of_all_jobs() -> None:
    sizes = np.r_[np.ones(100, dtype=int), np.full(3, 8)]
    work = np.r_[np.full(100, 100.0), np.full(3, 1e6)]
    model = fit_workload(_table(sizes, work), min_bucket_jobs=30)
    pooled = model.durations[-1]
    logs = np.log(work)
    assert pooled.params == pytest.approx((logs.mean(), logs.std()))
    assert any("fewer than 30 jobs" in n and "3 jobs" in n for n in model.notes)


def test_empirical_durations_stay_within_the_observed_range() -> None:
    rng = _rng(1)
    work = np.exp(rng.uniform(3, 12, 5000))
    model = fit_workload(_table(np.ones(5000, dtype=int), work), duration="empirical")
    dist = model.durations[0]
    assert dist.kind == "empirical"
    assert len(dist.quantiles) == MAX_QUANTILES
    assert dist.quantiles[0] == pytest.approx(work.min())
    assert dist.quantiles[-1] == pytest.approx(work.max())
    draws = dist.sample(_rng(2), 50_000)
    assert draws.min() >= work.min() and draws.max() <= work.max()
    assert np.median(draws) == pytest.approx(np.median(work), rel=0.05)
    assert draws.mean() == pytest.approx(dist.mean_s(), rel=0.03)


def test_a_diurnal_fit_follows_the_calendar_hour_of_submission() -> None:
    # jobs only between 10:00 and 11:00 UTC on 30 days; t=0 is 09:00
    days = np.repeat(np.arange(30), 10) * 86400.0
    submit = days + 3600.0 + np.tile(np.linspace(0, 3500, 10), 30)
    jobs = _table(np.ones(300, dtype=int), np.full(300, 600.0), submit)
    model = fit_workload(jobs, start_time="2023-03-01T09:00:00", diurnal=True)
    arr = model.arrival
    assert arr.kind == "diurnal" and arr.start_hour == pytest.approx(9.0)
    assert arr.hourly is not None
    assert np.flatnonzero(arr.hourly).tolist() == [10]
    times = arr.sample(_rng(0), n_jobs=200)
    assert (np.floor(np.mod(9.0 + times / 3600.0, 24.0)) == 10).all()


def test_fitting_gavels_own_output_recovers_its_parameters() -> None:
    jobs = generate(gavel_model(), n_jobs=8000, seed=12)
    model = fit_workload(jobs)
    np.testing.assert_allclose(model.size_probs, GAVEL_SIZE_PROBS, atol=0.015)
    # E[ln d] = ln 60 + ln 10 * (0.8 * 2.25 + 0.2 * 3.5) for Gavel's mixture
    mu = math.log(60) + math.log(10) * 2.5
    assert model.durations[0].params[0] == pytest.approx(mu, abs=0.05)
    assert model.job_types is not None and len(model.job_types) == 26
    assert model.typed_fraction == 1.0
    assert model.arrival.rate_per_hour == pytest.approx(4.0, rel=0.05)


def test_a_fitted_model_generates_a_workload_like_its_trace(shared_data: Path) -> None:
    trace, _ = read_trace(shared_data / "traces" / "gavel" / "0e4a51.trace")
    model = fit_workload(trace)
    jobs = generate(model, n_jobs=len(trace), seed=0)
    assert set(np.unique(jobs.num_gpus)) <= set(np.unique(trace.num_gpus))
    assert set(jobs.job_type) <= set(trace.job_type)
    ref = np.log(reference_durations(trace))
    got = np.log(reference_durations(jobs))
    assert np.mean(got) == pytest.approx(np.mean(ref), abs=0.25)


def test_a_model_survives_a_json_round_trip() -> None:
    trace = generate(gavel_model(), n_jobs=2000, seed=1)
    for model in (
        gavel_model(),
        fit_workload(trace, duration="empirical", diurnal=True, start_time="2023-01-01T08:30"),
    ):
        back = WorkloadModel.from_dict(json.loads(json.dumps(model.to_dict())))
        assert _same(generate(model, n_jobs=300, seed=4), generate(back, n_jobs=300, seed=4))
    with pytest.raises(ClustersimError, match="bad workload model"):
        WorkloadModel.from_dict({"sizes": [1]})


@pytest.mark.parametrize(
    "call",
    [
        lambda m: generate(m, seed=1),
        lambda m: generate(m, n_jobs=0),
        lambda m: generate(m, n_jobs=2.5),
        lambda m: generate(m, duration_s=-1.0),
        lambda m: generate(m, duration_s=1e-6),
    ],
)
def test_bad_generation_requests_are_refused(call: Callable[[WorkloadModel], object]) -> None:
    with pytest.raises(ClustersimError):
        call(gavel_model())


def test_bad_models_and_fits_are_refused() -> None:
    one = _table(np.ones(1, dtype=int), np.ones(1))
    with pytest.raises(ClustersimError, match="at least 2 jobs"):
        fit_workload(one)
    two = _table(np.ones(2, dtype=int), np.ones(2), np.zeros(2))
    with pytest.raises(ClustersimError, match="different times"):
        fit_workload(two)
    with pytest.raises(ClustersimError, match="duration model"):
        fit_workload(_table(np.ones(5, dtype=int), np.ones(5)), duration="weibull")
    with pytest.raises(ClustersimError):
        DurationDist("lognormal", (1.0,))
    with pytest.raises(ClustersimError):
        DurationDist("empirical", quantiles=np.array([3.0, 1.0]))
    with pytest.raises(ClustersimError):
        WorkloadModel(
            sizes=np.array([1, 8]),
            size_probs=np.array([0.5, 0.5]),
            bucket_bounds=np.array([4]),
            durations=(DurationDist("lognormal", (5.0, 1.0)),),
        )


def test_notes_say_how_the_workload_was_drawn() -> None:
    _, notes = generate_with_notes(gavel_model(), n_jobs=50, seed=2)
    text = "\n".join(notes)
    assert "seed 2" in text and "Poisson" in text and "job types assigned" in text


# -- writing and the command line ---------------------------------------------------------------


def test_a_written_workload_reads_back_unchanged(tmp_path: Path) -> None:
    jobs = generate(gavel_model(), n_jobs=200, seed=6)
    path = tmp_path / "synth.csv"
    write_jobs_csv(jobs, str(path))
    back, report = read_trace(path)
    assert report.format == "csv" and report.jobs_dropped == 0
    assert _same(jobs, back)
    assert PerformanceModel().prepare(back, preset("gavel-testbed")).rate.shape == (200, 3)


def test_cli_synth_writes_a_trace_that_runs(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "w.csv"
    argv = ["synth", "--jobs", "40", "--arrival", "diurnal", "--rate", "6", "--seed", "3"]
    assert main([*argv, "--out", str(out)]) == 0
    assert "wrote 40 jobs" in capsys.readouterr().out
    jobs, _ = read_trace(out)
    assert len(jobs) == 40
    assert main(["run", "--preset", "gavel-testbed", "--trace", str(out), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["jobs_total"] == 40


def test_cli_synth_can_fit_a_trace(tmp_path: Path, shared_data: Path) -> None:
    out = tmp_path / "f.csv"
    trace = shared_data / "traces" / "gavel" / "2869ce.trace"
    argv = ["synth", "--fit", str(trace), "--duration-s", "86400", "--no-job-types"]
    assert main([*argv, "--out", str(out)]) == 0
    jobs, _ = read_trace(out)
    assert (jobs.job_type == "").all() and jobs.submit_time.max() < 86400


def test_cli_synth_needs_a_size(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["synth", "--out", str(tmp_path / "x.csv")]) == 2
    assert capsys.readouterr().err.startswith("error: give --jobs or --duration-s")
