"""Workload transformations: hand-checked cases and invariants."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from clustersim.errors import ClustersimError
from clustersim.jobs import JobTable
from clustersim.spec import cluster_from_shorthand
from clustersim.traces import read_trace
from clustersim.transform import (
    cap_demand,
    format_time,
    parse_time,
    rebase_time,
    sample,
    scale_load,
    time_window,
)

START = "2017-09-04T10:30:41"  # a Monday


def _jobs(n: int = 10, **extra: object) -> JobTable:
    """Job i submitted at 100 i s, one GPU, work 1000 + i."""
    cols: dict[str, object] = {
        "job_id": [f"j{i}" for i in range(n)],
        "submit_time": np.arange(n) * 100.0,
        "num_gpus": np.ones(n, dtype=int),
        "work": 1000.0 + np.arange(n),
    }
    cols.update(extra)
    return JobTable.from_columns(**cols)


# -- time window ------------------------------------------------------------------------------


def test_a_window_in_seconds_keeps_only_jobs_inside_and_rebases() -> None:
    jobs = _jobs(deadline=np.arange(10) * 100.0 + 50.0)
    out, notes, start = time_window(jobs, 250.0, 600.0, start_time=START)
    assert out.job_id.tolist() == ["j3", "j4", "j5"]  # submitted at 300, 400, 500
    np.testing.assert_array_equal(out.submit_time, [50.0, 150.0, 250.0])
    np.testing.assert_array_equal(out.deadline - out.submit_time, [50.0] * 3)
    assert start == "2017-09-04T10:34:51"  # + 250 s
    assert "kept 3 of 10 jobs (3 submitted before, 4 at or after its end)" in notes[0]
    assert len(jobs) == 10 and jobs.submit_time[3] == 300.0  # input untouched


def test_a_window_can_keep_times_and_be_open_on_one_side() -> None:
    out, _, start = time_window(_jobs(), 250.0, rebase=False)
    np.testing.assert_array_equal(out.submit_time, np.arange(3, 10) * 100.0)
    assert start is None
    out, _, _ = time_window(_jobs(), end_s=300.0)
    assert out.job_id.tolist() == ["j0", "j1", "j2"]
    np.testing.assert_array_equal(out.submit_time, [0.0, 100.0, 200.0])


def test_a_calendar_window_uses_the_trace_start() -> None:
    day = 86400.0
    jobs = _jobs(5, submit_time=np.array([0.0, 0.5, 1.0, 1.5, 2.5]) * day)
    out, notes, start = time_window(
        jobs, start="2017-09-05T00:00:00", end="2017-09-06", start_time=START
    )
    lo = (parse_time("2017-09-05") - parse_time(START)).total_seconds()
    assert lo == 48559.0
    assert out.job_id.tolist() == ["j2", "j3"]  # 10:30:41 and 22:30:41 on the 5th
    np.testing.assert_allclose(out.submit_time, np.array([1.0, 1.5]) * day - lo)
    assert start == "2017-09-05T00:00:00"
    assert "2017-09-05T00:00:00 to 2017-09-06T00:00:00" in notes[0]


def test_the_real_philly_trace_windows_by_calendar(shared_data: Path) -> None:
    jobs, report = read_trace(shared_data / "traces" / "philly" / "philly.csv")
    out, _, start = time_window(
        jobs, start="2017-10-23", end="2017-10-30", start_time=report.start_time
    )
    assert start == "2017-10-23T00:00:00"
    assert 0 < len(out) < len(jobs)
    assert out.submit_time.min() >= 0 and out.submit_time.max() < 7 * 86400


@pytest.mark.parametrize(
    ("args", "kwargs", "match"),
    [
        ((0.0,), {"start": "2017-09-05"}, "not both"),
        ((), {"start": "2017-09-05"}, "needs the trace's start_time"),
        ((500.0, 500.0), {}, "empty time window"),
        ((5000.0,), {}, "leaves no job"),
        ((), {"start": "yesterday", "start_time": START}, "not an ISO 8601"),
    ],
)
def test_bad_windows_are_refused(args: tuple, kwargs: dict, match: str) -> None:
    with pytest.raises(ClustersimError, match=match):
        time_window(_jobs(), *args, **kwargs)


# -- load scaling -----------------------------------------------------------------------------


def test_load_factor_two_halves_the_span_and_keeps_the_rest() -> None:
    jobs = _jobs(deadline=np.arange(10) * 100.0 + 70.0)
    out, notes, start = scale_load(jobs, 2.0, start_time=START)
    span = jobs.submit_time[-1] - jobs.submit_time[0]
    assert out.submit_time[-1] - out.submit_time[0] == span / 2
    np.testing.assert_array_equal(out.submit_time, jobs.submit_time / 2)
    np.testing.assert_array_equal(out.work, jobs.work)
    np.testing.assert_array_equal(out.num_gpus, jobs.num_gpus)
    np.testing.assert_array_equal(out.deadline - out.submit_time, 70.0)
    assert start == START
    assert "span 900 s -> 450 s" in notes[0]


def test_a_load_below_one_spreads_arrivals_out() -> None:
    out, _, _ = scale_load(_jobs(), 0.5)
    assert out.submit_time[-1] == 1800.0


@pytest.mark.parametrize("factor", [0.0, -1.0, float("nan"), float("inf")])
def test_bad_load_factors_are_refused(factor: float) -> None:
    with pytest.raises(ClustersimError, match="load factor"):
        scale_load(_jobs(), factor)


# -- sampling ---------------------------------------------------------------------------------


def test_sampling_is_seeded_sorted_and_without_replacement() -> None:
    jobs = _jobs(1000)
    a, notes, _ = sample(jobs, fraction=0.25, seed=3)
    b, _, _ = sample(jobs, n=250, seed=3)
    c, _, _ = sample(jobs, n=250, seed=4)
    assert len(a) == 250
    assert a.job_id.tolist() == b.job_id.tolist()
    assert a.job_id.tolist() != c.job_id.tolist()
    assert len(set(a.job_id)) == 250 and set(a.job_id) <= set(jobs.job_id)
    assert (np.diff(a.submit_time) >= 0).all()
    assert "sampled 250 of 1,000 jobs" in notes[0] and "scale the load by 4" in notes[0]


def test_a_tiny_fraction_keeps_at_least_one_job() -> None:
    assert len(sample(_jobs(10), fraction=0.001).jobs) == 1


@pytest.mark.parametrize(
    "kwargs", [{}, {"fraction": 0.5, "n": 2}, {"fraction": 0.0}, {"fraction": 1.5}, {"n": 11}]
)
def test_bad_samples_are_refused(kwargs: dict) -> None:
    with pytest.raises(ClustersimError):
        sample(_jobs(10), **kwargs)


# -- capping ----------------------------------------------------------------------------------


def _cap_jobs() -> JobTable:
    return JobTable.from_columns(
        job_id=["small", "fits", "big", "p100-ok", "p100-big", "h100", "typed", "elastic"],
        submit_time=np.arange(8.0),
        num_gpus=[1, 8, 16, 4, 6, 2, 12, 2],
        work=[10.0, 10.0, 10.0, 10.0, 12.0, 10.0, 500.0, 10.0],
        gpu_type=["", "", "", "p100", "P100", "H100", "", ""],
        job_type=[""] * 6 + ["ResNet-18 (batch size 16)", ""],
        min_gpus=[1, 8, 16, 4, 6, 2, 12, 1],
        max_gpus=[1, 8, 16, 4, 6, 2, 12, 64],
    )


def test_capping_fits_every_gang_into_its_type() -> None:
    cluster = cluster_from_shorthand("v100:8,p100:4")  # largest type: 8 devices
    out, notes, _ = cap_demand(_cap_jobs(), cluster)
    assert out.num_gpus.tolist() == [1, 8, 8, 4, 4, 2, 8, 2]
    np.testing.assert_allclose(out.work, [10, 10, 20, 10, 18, 10, 500, 10])  # GPU-time kept
    assert out.max_gpus.tolist() == [1, 8, 8, 4, 4, 2, 8, 8]
    assert out.min_gpus.tolist() == [1, 8, 8, 4, 4, 2, 8, 1]
    text = "\n".join(notes)
    assert "1 jobs require a type the cluster lacks (H100)" in text
    assert "1 elastic jobs: max_gpus capped" in text
    assert "3 jobs ask for more devices" in text and "largest ask 16" in text
    assert "big, p100-big, typed" in text


def test_capping_can_keep_work_or_drop_the_jobs() -> None:
    cluster = cluster_from_shorthand("v100:8,p100:4")
    kept, _, _ = cap_demand(_cap_jobs(), cluster, work="keep")
    assert kept.work[2] == 10.0
    dropped, notes, _ = cap_demand(_cap_jobs(), cluster, mode="drop")
    assert dropped.job_id.tolist() == ["small", "fits", "p100-ok", "h100", "elastic"]
    assert "3 jobs ask for more devices" in notes[-1] and notes[-1].endswith("dropped")


def test_nothing_is_capped_when_everything_fits() -> None:
    jobs = _jobs()
    out, notes, _ = cap_demand(jobs, cluster_from_shorthand("v100:8"))
    assert out is jobs
    assert "nothing capped" in notes[-1]


def _limited_cluster():  # type: ignore[no-untyped-def]
    """Two V100 nodes of 4 devices, 8 cores and 64 GB; one K80 node of 4, 32 cores, no limit
    on memory."""
    from clustersim.spec import cluster_from_spec

    return cluster_from_spec(
        {
            "pools": [
                {
                    "accelerator": "V100",
                    "nodes": 2,
                    "devices_per_node": 4,
                    "cpu_cores": 8,
                    "host_mem_gb": 64,
                },
                {"accelerator": "K80", "nodes": 1, "devices_per_node": 4, "cpu_cores": 32},
            ]
        }
    )


def test_jobs_whose_cpu_or_memory_exceeds_every_node_are_dropped() -> None:
    from clustersim.transform import AUX_MISFIT_REASON, drop_aux_misfits

    # per device: a 2 cores (fits anywhere); b 10 cores (no V100 node: 8 < 10; a K80 node
    # holds 3 of them (floor(32 / 10)) < 4 devices asked); c 10 cores on 2 devices: the K80
    # node holds 3 >= 2, kept; d 100 GB per device: no V100 node (64 GB), but K80 has no
    # memory limit, kept; e 40 cores on 1 device: no node has 40 cores, dropped; f unknown.
    jobs = JobTable.from_columns(
        job_id=["a", "b", "c", "d", "e", "f"],
        submit_time=np.arange(6.0),
        num_gpus=[4, 4, 2, 1, 1, 4],
        work=np.full(6, 10.0),
        cpu=[8.0, 40.0, 20.0, 1.0, 40.0, np.nan],
        mem_gb=[np.nan, np.nan, np.nan, 100.0, np.nan, np.nan],
    )
    out, notes, start = drop_aux_misfits(jobs, _limited_cluster(), start_time="2020-01-01T00:00:00")
    assert out.job_id.tolist() == ["a", "c", "d", "f"]
    assert start == "2020-01-01T00:00:00"
    (note,) = notes
    assert note.startswith("2 jobs ask for more CPU or memory per device") and "b, e" in note
    assert "largest node: 32 cores, 64 GB" in note
    assert AUX_MISFIT_REASON == "CPU or memory demand exceeds every node"
    # no limits in the cluster, or no demands: nothing dropped, the same table
    assert drop_aux_misfits(jobs, cluster_from_shorthand("v100:8")).jobs is jobs
    plain = jobs.replace(cpu=np.full(6, np.nan), mem_gb=np.full(6, np.nan))
    assert drop_aux_misfits(plain, _limited_cluster()).jobs is plain
    with pytest.raises(ClustersimError, match="no job"):
        drop_aux_misfits(jobs.take(np.array([1, 4])), _limited_cluster())


def test_capping_a_gang_keeps_its_cpu_and_memory_per_device() -> None:
    # 16 GPUs with 64 cores and 160 GB capped to the 8 devices of the largest type: 32 cores
    # and 80 GB (4 and 10 per device, as before); an unknown demand stays unknown
    jobs = JobTable.from_columns(
        job_id=["big", "small"],
        submit_time=[0.0, 1.0],
        num_gpus=[16, 2],
        work=[10.0, 10.0],
        cpu=[64.0, np.nan],
        mem_gb=[160.0, 4.0],
    )
    out, _, _ = cap_demand(jobs, cluster_from_shorthand("v100:8"))
    assert out.num_gpus.tolist() == [8, 2]
    assert out.cpu[0] == 32.0 and np.isnan(out.cpu[1])
    assert out.mem_gb.tolist() == [80.0, 4.0]


def test_capping_philly_to_its_preset_reports_counts(shared_data: Path) -> None:
    from clustersim.presets import preset

    jobs, _ = read_trace(shared_data / "traces" / "philly" / "philly.csv")
    small = preset("gavel-testbed")  # 36 devices per type
    out, notes, _ = cap_demand(jobs, small)
    over = int((jobs.num_gpus > 36).sum())
    assert over > 0
    assert out.num_gpus.max() == 36
    assert f"{over:,} jobs ask for more devices" in notes[-1]
    gpu_time = (jobs.num_gpus * jobs.work).sum()
    assert (out.num_gpus * out.work).sum() == pytest.approx(gpu_time, rel=1e-12)


def test_bad_cap_options_are_refused() -> None:
    c = cluster_from_shorthand("v100:8")
    with pytest.raises(ClustersimError, match="cap mode"):
        cap_demand(_jobs(), c, mode="shrink")
    with pytest.raises(ClustersimError, match="work rule"):
        cap_demand(_jobs(), c, work="double")
    with pytest.raises(ClustersimError, match="leaves no job"):
        cap_demand(_jobs(num_gpus=np.full(10, 9)), c, mode="drop")


# -- re-basing --------------------------------------------------------------------------------


def test_rebasing_keeps_the_time_of_day_or_the_weekday() -> None:
    jobs = _jobs()
    out, notes, start = rebase_time(jobs, "2023-06-01", start_time=START)
    assert out is jobs
    assert start == "2023-06-01T10:30:41"
    assert "carbon_start='2023-06-01T10:30:41'" in notes[-1]
    assert rebase_time(jobs, "2023-06-01T12:00", start_time=START).start_time == (
        "2023-06-02T10:30:41"  # the first 10:30:41 at or after noon
    )
    _, _, start = rebase_time(jobs, "2023-06-01", start_time=START, keep="weekday")
    assert start == "2023-06-05T10:30:41"  # 2023-06-05 is a Monday like 2017-09-04
    assert parse_time(start).weekday() == parse_time(START).weekday()
    _, _, start = rebase_time(jobs, "2023-06-01T03:00:00+02:00", start_time=START, keep="none")
    assert start == "2023-06-01T01:00:00"


def test_rebasing_a_trace_without_calendar_uses_the_start_as_is() -> None:
    _, notes, start = rebase_time(_jobs(), "2023-02-01T06:00:00Z")
    assert start == "2023-02-01T06:00:00"
    assert "no calendar start" in notes[0]


def test_bad_rebase_requests_are_refused() -> None:
    with pytest.raises(ClustersimError, match="rebase keep"):
        rebase_time(_jobs(), "2023-01-01", keep="month")
    with pytest.raises(ClustersimError, match="ISO 8601"):
        rebase_time(_jobs(), "June")


def test_transformations_chain_with_their_start_time() -> None:
    jobs = _jobs(100)
    out, _, start = time_window(jobs, 1000.0, 5000.0, start_time=START)
    out, _, start = scale_load(out, 2.0, start_time=start)
    out, _, start = sample(out, n=10, seed=1, start_time=start)
    out, _, start = rebase_time(out, "2023-07-01", start_time=start)
    assert len(out) == 10 and out.submit_time.max() < 2000.0
    assert start == "2023-07-01T10:47:21"  # 10:30:41 + 1000 s
    assert format_time(parse_time(start)) == start


def test_gpu_sharing_requests_survive_every_transformation() -> None:
    # job i asks for (i + 1) / 10 of a GPU (job 9: a whole one)
    jobs = _jobs(10, gpu_fraction=(np.arange(10) + 1) / 10)
    out, _, _ = time_window(jobs, 300.0, 800.0)  # jobs 3..7, re-based
    assert out.gpu_fraction.tolist() == [0.4, 0.5, 0.6, 0.7, 0.8]
    out, _, _ = scale_load(out, 2.0)
    assert out.gpu_fraction.tolist() == [0.4, 0.5, 0.6, 0.7, 0.8]
    out, _, _ = cap_demand(out, cluster_from_shorthand("v100:1"))
    assert out.gpu_fraction.tolist() == [0.4, 0.5, 0.6, 0.7, 0.8]
    out, _, _ = sample(out, n=2, seed=0)
    assert set(out.gpu_fraction.tolist()) <= {0.4, 0.5, 0.6, 0.7, 0.8}
    back = {j: f for j, f in zip(out.job_id, out.gpu_fraction, strict=True)}
    assert all(back[j] == (int(j[1:]) + 1) / 10 for j in back)


@pytest.mark.parametrize("bad", [0.0, -0.5, 1.5, np.nan])
def test_a_gpu_fraction_outside_zero_one_is_refused(bad: float) -> None:
    with pytest.raises(ClustersimError, match="gpu_fraction"):
        _jobs(2, gpu_fraction=[1.0, bad])
