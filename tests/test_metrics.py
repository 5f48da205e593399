"""Summary metrics, time series and per-job tables on hand-built results with hand-worked values."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clustersim.carbon import load_zone
from clustersim.cluster import AcceleratorType, Cluster, Region
from clustersim.errors import ClustersimError
from clustersim.jobs import JobTable
from clustersim.metrics import per_job_frame, sanitize, start_shifts, summary, timeseries
from clustersim.result import DROP_TOO_LARGE, DROP_UNFINISHED, RunResult, Stints

H = 3600.0
NAN = float("nan")

REQUIRED = (
    "jobs_total",
    "jobs_completed",
    "jobs_dropped",
    "jct_mean_s",
    "jct_p50_s",
    "jct_p95_s",
    "jct_p99_s",
    "queue_delay_mean_s",
    "wait_mean_s",
    "wait_p50_s",
    "wait_p95_s",
    "wait_p99_s",
    "makespan_s",
    "utilisation",
    "jain_index",
    "ftf_rho_max",
    "cost_usd",
    "cost_owned_usd",
    "cost_owned_capital_usd",
    "cost_owned_energy_usd",
    "cost_cloud_usd",
    "horizon_s",
    "horizon_start_s",
    "work_per_dollar",
    "work_per_dollar_cloud",
    "energy_kwh",
    "carbon_kg",
    "preemptions",
)


#: A purchase price that amortises to exactly $1 per device-hour over 4 years.
ONE_DOLLAR_AN_HOUR = 4 * 8760.0


def accel(
    name: str = "V100-SXM2-16GB",
    busy_w: float = 300.0,
    idle_w: float = 50.0,
    price: float = 2.0,
    purchase: float | None = ONE_DOLLAR_AN_HOUR,
) -> AcceleratorType:
    return AcceleratorType(
        name=name,
        kind="gpu",
        fp16_tflops=100.0,
        memory_gb=16.0,
        memory_bw_tbs=0.9,
        busy_w=busy_w,
        idle_w=idle_w,
        price_per_hour=price,
        release_year=2017,
        purchase_usd=purchase,
    )


def make_cluster(
    node_type: Sequence[int] = (0,),
    node_devices: Sequence[int] = (2,),
    node_region: Sequence[int] | None = None,
    types: tuple[AcceleratorType, ...] | None = None,
    regions: tuple[Region, ...] | None = None,
    overhead_w: float = 100.0,
) -> Cluster:
    n = len(node_type)
    return Cluster(
        name="test",
        types=types or (accel(),),
        node_type=np.asarray(node_type, dtype=np.int64),
        node_devices=np.asarray(node_devices, dtype=np.int64),
        node_rack=np.zeros(n, dtype=np.int64),
        node_region=np.zeros(n, dtype=np.int64)
        if node_region is None
        else np.asarray(node_region, dtype=np.int64),
        node_intra_gbs=np.full(n, 300.0),
        node_nic_gbps=np.full(n, 100.0),
        node_overhead_w=np.full(n, overhead_w),
        rack_oversub=np.ones(1),
        regions=regions or (Region("home", pue=1.5, price_per_kwh=0.1, carbon_g_per_kwh=400.0),),
    )


def make_result(
    cluster: Cluster,
    *,
    submit: Sequence[float],
    gpus: Sequence[int],
    first_start: Sequence[float],
    finish: Sequence[float],
    device_time: Sequence[Sequence[float]],
    seg_t: Sequence[float],
    seg_busy: Sequence[Sequence[Sequence[float]]],
    seg_queued: Sequence[int],
    seg_running: Sequence[int],
    users: Sequence[str] | None = None,
    deadline: Sequence[float] | None = None,
    drop_reason: Sequence[str] | None = None,
    preemptions: Sequence[int] | None = None,
    work: Sequence[float] | None = None,
    ref_gpu_s: Sequence[float] | None = None,
) -> RunResult:
    n = len(submit)
    jobs = JobTable.from_columns(
        job_id=[f"j{i}" for i in range(n)],
        submit_time=np.asarray(submit, dtype=np.float64),
        num_gpus=np.asarray(gpus, dtype=np.int64),
        work=np.ones(n) if work is None else np.asarray(work, dtype=np.float64),
        user=list(users) if users is not None else [""] * n,
        deadline=np.asarray(deadline, dtype=np.float64) if deadline is not None else None,
    )
    dev = np.asarray(device_time, dtype=np.float64).reshape(n, cluster.n_types)
    return RunResult(
        jobs=jobs,
        cluster=cluster,
        policy="fifo",
        placement="packed",
        seed=0,
        first_start=np.asarray(first_start, dtype=np.float64),
        finish=np.asarray(finish, dtype=np.float64),
        drop_reason=np.array(list(drop_reason) if drop_reason else [""] * n, dtype=object),
        attained=dev.sum(axis=1),
        type_time=dev / np.asarray(gpus, dtype=np.float64)[:, None],
        device_time=dev,
        preemptions=np.asarray(preemptions or [0] * n, dtype=np.int64),
        migrations=np.zeros(n, dtype=np.int64),
        max_nodes=np.ones(n, dtype=np.int64),
        seg_t=np.asarray(seg_t, dtype=np.float64),
        seg_busy=np.asarray(seg_busy, dtype=np.float64).reshape(
            len(seg_t) - 1 if len(seg_t) else 0, cluster.n_types, len(cluster.regions)
        ),
        seg_queued=np.asarray(seg_queued, dtype=np.int64),
        seg_running=np.asarray(seg_running, dtype=np.int64),
        **({} if ref_gpu_s is None else {"ref_gpu_s": np.asarray(ref_gpu_s, dtype=np.float64)}),
    )


def two_jobs(**kw: object) -> RunResult:
    """2 devices on one node. Job 0 (1 GPU, alice) runs [0, 1 h); job 1 (2 GPUs, bob), submitted
    at 0 too, waits for it and runs [1 h, 2 h). Both have 2 h of work in reference seconds (the
    devices run twice as fast as the reference P100)."""
    args: dict[str, object] = dict(
        work=[2 * H, 2 * H],
        submit=[0.0, 0.0],
        gpus=[1, 2],
        first_start=[0.0, H],
        finish=[H, 2 * H],
        device_time=[[H], [2 * H]],
        seg_t=[0.0, H, 2 * H],
        seg_busy=[[[1.0]], [[2.0]]],
        seg_queued=[1, 0],
        seg_running=[1, 1],
        users=["alice", "bob"],
        deadline=[4000.0, 7000.0],
        preemptions=[0, 3],
    )
    args.update(kw)
    cluster = args.pop("cluster", None) or make_cluster()
    return make_result(cluster, **args)  # type: ignore[arg-type]


def test_summary_of_two_jobs_matches_hand_computation() -> None:
    m = summary(two_jobs())
    for key in REQUIRED:
        assert key in m
    assert (m["jobs_total"], m["jobs_completed"], m["jobs_dropped"]) == (2, 2, 0)
    assert m["jct_mean_s"] == pytest.approx(5400.0)
    assert m["jct_p50_s"] == pytest.approx(5400.0)
    assert m["jct_p95_s"] == pytest.approx(3600.0 + 0.95 * 3600.0)
    assert m["jct_p99_s"] == pytest.approx(3600.0 + 0.99 * 3600.0)
    assert m["queue_delay_mean_s"] == pytest.approx(1800.0)
    assert m["queue_delay_p50_s"] == pytest.approx(1800.0)
    assert m["jct_mean_s_gpus_1"] == pytest.approx(3600.0)
    assert m["jct_mean_s_gpus_2_4"] == pytest.approx(7200.0)
    assert m["jct_mean_s_gpus_5_8"] is None
    assert m["jct_mean_s_gpus_9_plus"] is None
    assert m["makespan_s"] == pytest.approx(7200.0)
    # busy device-seconds 1 h × 1 + 1 h × 2 = 3 device-hours over 2 devices × 2 h
    assert m["utilisation"] == pytest.approx(0.75)
    assert m["utilisation_v100_sxm2_16gb"] == pytest.approx(0.75)
    # power: (1×300 + 1×50 + 100) × 1.5 = 675 W, then (2×300 + 100) × 1.5 = 1050 W, 1 h each
    assert m["energy_kwh"] == pytest.approx(1.725)
    assert m["avg_power_kw"] == pytest.approx(0.8625)
    assert m["carbon_kg"] == pytest.approx(1.725 * 0.4)
    assert m["electricity_cost_usd"] == pytest.approx(0.1725)
    # Both jobs arrive at 0: the arrival span is 0, so the horizon is its 1 h floor.
    assert (m["horizon_start_s"], m["horizon_s"]) == (0.0, H)
    # owned: 2 devices × $1/h × 1 h capital + 0.675 kWh in the first hour × $0.1/kWh
    assert m["cost_owned_capital_usd"] == pytest.approx(2.0)
    assert m["cost_owned_energy_usd"] == pytest.approx(0.0675)
    assert m["cost_owned_usd"] == pytest.approx(2.0675)
    assert m["cost_usd"] == m["cost_owned_usd"]
    # cloud: $2/h × 3 busy device-hours
    assert m["cost_cloud_usd"] == pytest.approx(6.0)
    # capacity used: 3 device-hours; completed work: num_gpus × work = 1 × 2 h + 2 × 2 h = 6
    # reference GPU-hours, of which job 0's 2 by the horizon's end (1 h)
    assert m["busy_device_hours"] == pytest.approx(3.0)
    assert m["reference_gpu_hours_completed"] == pytest.approx(6.0)
    assert m["reference_gpu_hours_in_horizon"] == pytest.approx(2.0)
    assert m["work_per_dollar"] == pytest.approx(2.0 / 2.0675)
    assert m["work_per_dollar_cloud"] == pytest.approx(1.0)
    # job 0 holds its GPU from submit to finish (wait 0); job 1 waits 1 h, holds 1 h
    assert m["wait_mean_s"] == pytest.approx(1800.0)
    assert m["wait_p50_s"] == pytest.approx(1800.0)
    assert m["wait_p99_s"] == pytest.approx(0.99 * 3600.0)
    # alice got 1 h of 1 h demanded, bob 2 device-h of 4 device-h: x = 1, 0.5
    assert m["jain_index"] == pytest.approx(1.5**2 / (2 * 1.25))
    # job 0: N = 2 over [0, 1 h], isolated = 1 h × max(1, 2×1/2) -> ρ = 1.
    # job 1: N = 1.5 over [0, 2 h], isolated = 1 h × max(1, 1.5×2/2) = 1.5 h -> ρ = 4/3.
    assert m["ftf_rho_max"] == pytest.approx(4 / 3)
    assert m["ftf_rho_mean"] == pytest.approx(7 / 6)
    assert m["ftf_share_le_1"] == pytest.approx(0.5)
    assert m["deadline_met_share"] == pytest.approx(0.5)
    assert m["preemptions"] == 3
    assert m["migrations"] == 0
    # idle device-seconds while a job waits: 1 device × 1 h, over 4 device-hours
    assert m["idle_while_queued"] == pytest.approx(0.25)


def test_owned_cost_over_a_longer_horizon_pays_idle_power_after_the_run() -> None:
    m = summary(two_jobs(), horizon_s=3 * H)
    assert m["horizon_s"] == 3 * H
    # capital: 2 devices × $1/h × 3 h
    assert m["cost_owned_capital_usd"] == pytest.approx(6.0)
    # energy: 675 W for 1 h, 1050 W for 1 h, then idle (2 × 50 W + 100 W) × 1.5 = 300 W for 1 h
    assert m["cost_owned_energy_usd"] == pytest.approx((0.675 + 1.05 + 0.3) * 0.1)
    assert m["cost_owned_usd"] == pytest.approx(6.2025)
    # both jobs complete by 3 h: 6 reference GPU-hours of work over the owned cost
    assert m["reference_gpu_hours_in_horizon"] == pytest.approx(6.0)
    assert m["work_per_dollar"] == pytest.approx(6.0 / 6.2025)
    # the cloud cost does not depend on the horizon
    assert m["cost_cloud_usd"] == pytest.approx(6.0)
    assert m["energy_kwh"] == pytest.approx(1.725)


def test_a_run_longer_than_the_horizon_pays_only_the_part_inside() -> None:
    m = summary(two_jobs(), horizon_s=1.5 * H)
    assert m["cost_owned_capital_usd"] == pytest.approx(3.0)
    # 675 W for 1 h and 1050 W for the half hour left
    assert m["cost_owned_energy_usd"] == pytest.approx((0.675 + 0.525) * 0.1)
    assert m["reference_gpu_hours_in_horizon"] == pytest.approx(2.0)  # job 1 ends at 2 h


def test_the_default_horizon_is_the_arrival_span_with_a_one_hour_floor() -> None:
    late = two_jobs(submit=[0.0, 2 * H], first_start=[0.0, 2 * H], finish=[H, 3 * H])
    assert summary(late)["horizon_s"] == 2 * H
    soon = two_jobs(submit=[0.0, 0.5 * H], first_start=[0.0, H], finish=[H, 2 * H])
    assert summary(soon)["horizon_s"] == H
    assert summary(soon, horizon_s=7.0)["horizon_s"] == 7.0


@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan"), float("inf")])
def test_it_rejects_a_horizon_that_is_not_a_positive_length(bad: float) -> None:
    from clustersim.errors import ClustersimError

    with pytest.raises(ClustersimError, match="horizon"):
        summary(two_jobs(), horizon_s=bad)


def test_without_a_purchase_price_the_device_costs_its_price_times_the_rule_hours() -> None:
    from clustersim.cluster import PURCHASE_HOURS

    cluster = make_cluster(types=(accel(purchase=None),))
    m = summary(two_jobs(cluster=cluster))
    # 2 devices × ($2/h × 5,112.5 h) / (4 × 8760 h) × 1 h
    assert m["cost_owned_capital_usd"] == pytest.approx(2 * 2.0 * PURCHASE_HOURS / 35040.0)
    assert abs(PURCHASE_HOURS - 15000 / 2.934) < 0.1


def three_jobs_with_a_preemption() -> RunResult:
    """2 GPUs. Job 0 (2 GPUs, t=0) runs [0, 1 h), is preempted by job 2 (2 GPUs, t=1 h), which
    runs [1 h, 2 h); job 0 resumes [2 h, 3 h). Job 1 (1 GPU, t=0) runs [3 h, 4 h)."""
    return make_result(
        make_cluster(),
        submit=[0.0, 0.0, H],
        gpus=[2, 1, 2],
        first_start=[0.0, 3 * H, H],
        finish=[3 * H, 4 * H, 2 * H],
        device_time=[[4 * H], [H], [2 * H]],
        seg_t=[0.0, H, 2 * H, 3 * H, 4 * H],
        seg_busy=[[[2.0]], [[2.0]], [[2.0]], [[1.0]]],
        seg_queued=[1, 2, 1, 0],
        seg_running=[1, 1, 1, 1],
        preemptions=[1, 0, 0],
    )


def test_total_wait_counts_the_wait_after_a_preemption() -> None:
    m = summary(three_jobs_with_a_preemption())
    # first-start delays 0, 3 h and 0: job 0's hour off the GPUs is invisible here
    assert m["queue_delay_mean_s"] == pytest.approx(H)
    assert m["queue_delay_p50_s"] == pytest.approx(0.0)
    # waits = JCT - held: 3 h - 2 h, 4 h - 1 h, 1 h - 1 h
    assert m["wait_mean_s"] == pytest.approx(4 * H / 3)
    assert m["wait_p50_s"] == pytest.approx(H)
    assert m["wait_p95_s"] == pytest.approx(H + 0.9 * 2 * H)
    assert m["wait_p99_s"] == pytest.approx(H + 0.98 * 2 * H)
    frame = per_job_frame(three_jobs_with_a_preemption())
    assert frame["held"].tolist() == [2 * H, H, H]
    assert frame["wait"].tolist() == [H, 3 * H, 0.0]


def test_jain_is_one_for_equal_users_and_lower_for_unequal() -> None:
    equal = two_jobs(
        first_start=[0.0, 0.0],
        finish=[H, H],
        gpus=[1, 1],
        device_time=[[H], [H]],
        seg_t=[0.0, H],
        seg_busy=[[[2.0]]],
        seg_queued=[0],
        seg_running=[2],
    )
    assert summary(equal)["jain_index"] == pytest.approx(1.0)
    assert summary(two_jobs())["jain_index"] == pytest.approx(0.9)


def test_jobs_without_a_user_count_as_one_user_each() -> None:
    # Anonymous jobs are separate users: same values as alice/bob.
    assert summary(two_jobs(users=["", ""]))["jain_index"] == pytest.approx(0.9)
    # One named user owning both: a single user, index 1.
    assert summary(two_jobs(users=["carol", "carol"]))["jain_index"] == pytest.approx(1.0)


def test_carbon_follows_the_hourly_intensity_of_the_zone() -> None:
    start = "2023-01-01T00:30:00Z"
    region = Region("de", carbon_zone="DE", pue=1.5, price_per_kwh=0.1, carbon_g_per_kwh=1.0)
    result = two_jobs(cluster=make_cluster(regions=(region,)))
    m = summary(result, carbon_start=start)
    v = load_zone("DE").values
    # 675 W over 00:30-01:30 (half at hour 0, half at hour 1), 1050 W over 01:30-02:30.
    grams = 0.675 * (v[0] + v[1]) / 2 + 1.050 * (v[1] + v[2]) / 2
    assert m["carbon_kg"] == pytest.approx(grams / 1000.0)
    assert m["carbon_intensity_mean_g_per_kwh"] == pytest.approx(grams / 1.725)
    assert m["energy_kwh"] == pytest.approx(1.725)


def test_energy_and_carbon_are_summed_over_regions_and_types() -> None:
    cheap = accel("T4", busy_w=70.0, idle_w=10.0, price=0.5)
    cluster = make_cluster(
        node_type=[0, 1],
        node_devices=[2, 4],
        node_region=[0, 1],
        types=(accel(), cheap),
        regions=(
            Region("a", pue=1.0, carbon_g_per_kwh=100.0, price_per_kwh=0.2),
            Region("b", pue=2.0, carbon_g_per_kwh=500.0, price_per_kwh=0.1),
        ),
    )
    busy = np.zeros((1, 2, 2))
    busy[0, 0, 0] = 2.0  # both V100 (region a) busy
    busy[0, 1, 1] = 1.0  # one T4 (region b) busy
    result = make_result(
        cluster,
        submit=[0.0, 0.0],
        gpus=[2, 1],
        first_start=[0.0, 0.0],
        finish=[H, H],
        device_time=[[2 * H, 0.0], [0.0, H]],
        seg_t=[0.0, H],
        seg_busy=busy.tolist(),
        seg_queued=[0],
        seg_running=[2],
    )
    m = summary(result)
    region_a = (2 * 300.0 + 100.0) * 1.0  # W
    region_b = (70.0 + 3 * 10.0 + 100.0) * 2.0
    assert m["energy_kwh"] == pytest.approx((region_a + region_b) / 1000.0)
    assert m["carbon_kg"] == pytest.approx((region_a * 100.0 + region_b * 500.0) / 1e6)
    assert m["electricity_cost_usd"] == pytest.approx(region_a / 1000 * 0.2 + region_b / 1000 * 0.1)
    assert m["utilisation_v100_sxm2_16gb"] == pytest.approx(1.0)
    assert m["utilisation_t4"] == pytest.approx(0.25)
    assert m["utilisation"] == pytest.approx(0.5)
    # cloud: 2 V100 device-hours × $2 + 1 T4 device-hour × $0.5
    assert m["cost_cloud_usd"] == pytest.approx(2 * 2.0 + 1 * 0.5)
    # owned: all 6 devices × $1/h for the 1 h horizon, plus each region's energy at its price
    assert m["cost_owned_capital_usd"] == pytest.approx(6.0)
    assert m["cost_owned_energy_usd"] == pytest.approx(m["electricity_cost_usd"])


def test_unfinished_busy_time_stretches_the_window() -> None:
    # Job 1 is still running when the simulation ends at 3 h.
    result = two_jobs(
        finish=[H, NAN],
        seg_t=[0.0, H, 3 * H],
        device_time=[[H], [4 * H]],
        drop_reason=["", DROP_UNFINISHED],
    )
    m = summary(result)
    assert m["makespan_s"] == pytest.approx(H)
    assert m["window_s"] == pytest.approx(3 * H)
    assert m["utilisation"] == pytest.approx((H + 4 * H) / (2 * 3 * H))
    assert m["jobs_dropped"] == 1
    assert m["jct_mean_s_gpus_2_4"] is None


def json_safe(obj: object) -> bool:
    json.dumps(obj, allow_nan=False)
    return True


def test_empty_results_are_json_safe() -> None:
    dropped = make_result(
        make_cluster(),
        submit=[0.0, 5.0],
        gpus=[8, 8],
        first_start=[NAN, NAN],
        finish=[NAN, NAN],
        device_time=[[0.0], [0.0]],
        seg_t=[0.0, 5.0],
        seg_busy=[[[0.0]]],
        seg_queued=[0],
        seg_running=[0],
        drop_reason=[DROP_TOO_LARGE, DROP_TOO_LARGE],
        deadline=[10.0, NAN],
    )
    no_jobs = make_result(
        make_cluster(),
        submit=[],
        gpus=[],
        first_start=[],
        finish=[],
        device_time=[],
        seg_t=[],
        seg_busy=[],
        seg_queued=[],
        seg_running=[],
    )
    for result in (dropped, no_jobs):
        m = summary(result)
        assert json_safe(m)
        for key in REQUIRED:
            assert key in m
        assert m["jobs_completed"] == 0
        assert m["jct_mean_s"] is None
        assert m["makespan_s"] is None
        assert m["jain_index"] is None
        assert m["energy_kwh"] == 0.0
        assert m["cost_cloud_usd"] == 0.0
        assert m["work_per_dollar_cloud"] is None
        assert m["wait_mean_s"] is None
        # the owned cluster still costs its capital and idle power for the 1 h horizon:
        # 2 devices × $1 + (2 × 50 W + 100 W) × 1.5 for 1 h × $0.1/kWh
        assert m["horizon_s"] == H
        assert m["cost_owned_usd"] == pytest.approx(2.0 + 0.3 * 0.1)
        assert m["work_per_dollar"] == 0.0
        assert json_safe(timeseries(result))
        assert len(per_job_frame(result)) == len(result.jobs)
    assert summary(dropped)["deadline_met_share"] == 0.0


def test_summary_of_a_normal_run_is_json_safe_with_plain_types() -> None:
    m = summary(two_jobs())
    assert json_safe(m)
    assert all(v is None or type(v) in (int, float) for v in m.values())


def test_timeseries_keeps_exact_segments_when_they_fit() -> None:
    ts = timeseries(two_jobs())
    assert ts["t_s"] == [0.0, H]
    assert ts["dt_s"] == [H, H]
    assert ts["utilisation"] == [0.5, 1.0]
    assert ts["busy_v100_sxm2_16gb"] == [1.0, 2.0]
    assert ts["queued"] == [1.0, 0.0]
    assert ts["running"] == [1.0, 1.0]
    assert ts["power_kw"] == pytest.approx([0.675, 1.05])
    assert ts["carbon_rate_kg_per_h"] == pytest.approx([0.27, 0.42])
    assert ts["carbon_intensity_g_per_kwh"] == pytest.approx([400.0, 400.0])
    ts1 = timeseries(two_jobs(), max_points=1)
    assert ts1["busy_v100_sxm2_16gb"] == [1.5]


def random_result(seed: int, segments: int, zone: str = "") -> RunResult:
    rng = np.random.default_rng(seed)
    types = (accel("A100"), accel("K80", busy_w=150.0, idle_w=30.0, price=0.5))
    regions = (Region("x", carbon_zone=zone, pue=1.3), Region("y", pue=1.1))
    cluster = make_cluster(
        node_type=[0, 1, 1],
        node_devices=[8, 4, 4],
        node_region=[0, 0, 1],
        types=types,
        regions=regions,
    )
    cap = np.array([[8, 0], [4, 4]], dtype=np.float64)
    seg_t = np.concatenate(([0.0], np.cumsum(rng.exponential(600.0, size=segments))))
    busy = np.floor(rng.uniform(0, 1, size=(segments, 2, 2)) * (cap + 1))
    n = 12
    submit = np.sort(rng.uniform(0, seg_t[-1] / 2, size=n))
    submit[0] = 0.0
    gpus = rng.integers(1, 10, size=n)
    start = submit + rng.uniform(0, seg_t[-1] / 4, size=n)
    finish = np.where(
        rng.uniform(size=n) < 0.8,
        np.minimum(start + 1 + rng.exponential(seg_t[-1] / 4, size=n), seg_t[-1]),
        NAN,
    )
    run = np.nan_to_num(finish - start, nan=seg_t[-1] - start)
    dev = np.zeros((n, 2))
    dev[np.arange(n), rng.integers(0, 2, size=n)] = run * gpus
    return make_result(
        cluster,
        submit=submit.tolist(),
        gpus=gpus.tolist(),
        first_start=start.tolist(),
        finish=finish.tolist(),
        device_time=dev.tolist(),
        seg_t=seg_t.tolist(),
        seg_busy=busy.tolist(),
        seg_queued=rng.integers(0, 5, size=segments).tolist(),
        seg_running=rng.integers(1, 6, size=segments).tolist(),
        users=[f"u{u}" for u in rng.integers(0, 4, size=n)],
        drop_reason=["" if np.isfinite(f) else DROP_UNFINISHED for f in finish],
    )


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), segments=st.integers(1, 60))
def test_invariants_hold_on_random_runs(seed: int, segments: int) -> None:
    result = random_result(seed, segments)
    m = summary(result)
    assert json_safe(m)
    for key, value in m.items():
        if key.startswith("utilisation") and value is not None:
            assert 0.0 <= value <= 1.0 + 1e-12
    jain = m["jain_index"]
    assert jain is not None
    assert 0.0 < jain <= 1.0 + 1e-12
    assert m["ftf_share_le_1"] is None or 0.0 <= m["ftf_share_le_1"] <= 1.0
    assert m["energy_kwh"] is not None
    assert m["energy_kwh"] > 0


@pytest.mark.parametrize("zone", ["", "GB"])
def test_timeseries_is_bounded_and_preserves_integrals(zone: str) -> None:
    result = random_result(3, 2000, zone=zone)
    start = "2023-04-01T10:00:00Z"
    ts = timeseries(result, max_points=300, carbon_start=start)
    assert json_safe(ts)
    assert len(ts["t_s"]) <= 300
    assert {len(v) for v in ts.values()} == {len(ts["t_s"])}
    dt = np.asarray(ts["dt_s"])
    seg_dt = np.diff(result.seg_t)
    assert dt.sum() == pytest.approx(seg_dt.sum())
    for k, name in enumerate(("busy_a100", "busy_k80")):
        exact = (result.seg_busy[:, k, :].sum(axis=1) * seg_dt).sum()
        assert (np.asarray(ts[name]) * dt).sum() == pytest.approx(exact, rel=1e-9)
    exact_busy = (result.seg_busy.sum(axis=(1, 2)) * seg_dt).sum()
    util = np.asarray(ts["utilisation"]) * result.cluster.total_devices
    assert (util * dt).sum() == pytest.approx(exact_busy, rel=1e-9)
    queued = (result.seg_queued * seg_dt).sum()
    assert (np.asarray(ts["queued"]) * dt).sum() == pytest.approx(queued, rel=1e-9)
    # Energy and carbon of the series equal the summary's when the window is the timeline.
    m = summary(result, carbon_start=start)
    assert m["window_s"] == pytest.approx(seg_dt.sum())
    kwh = (np.asarray(ts["power_kw"]) * dt / 3600.0).sum()
    assert kwh == pytest.approx(m["energy_kwh"], rel=1e-9)
    kg = (np.asarray(ts["carbon_rate_kg_per_h"]) * dt / 3600.0).sum()
    assert kg == pytest.approx(m["carbon_kg"], rel=1e-9)
    assert all(v > 0 for v in ts["carbon_intensity_g_per_kwh"])


def test_per_job_frame_has_the_documented_columns() -> None:
    frame = per_job_frame(two_jobs())
    assert list(frame.columns) == [
        "job_id",
        "submit",
        "first_start",
        "finish",
        "jct",
        "queue_delay",
        "num_gpus",
        "job_type",
        "user",
        "vc",
        "attained_gpu_s",
        "preemptions",
        "migrations",
        "resizes",
        "drop_reason",
        "ftf_rho",
        "held",
        "wait",
        "ref_gpu_s",
    ]
    assert frame["ref_gpu_s"].tolist() == [2 * H, 4 * H]
    assert frame["jct"].tolist() == [H, 2 * H]
    assert frame["held"].tolist() == [H, H]
    assert frame["wait"].tolist() == [0.0, H]
    assert frame["queue_delay"].tolist() == [0.0, H]
    assert frame["ftf_rho"].tolist() == pytest.approx([1.0, 4 / 3])
    assert frame["attained_gpu_s"].tolist() == [H, 2 * H]


def test_type_names_are_sanitized_for_keys() -> None:
    assert sanitize("V100-SXM2-16GB") == "v100_sxm2_16gb"
    assert sanitize("TPU v5e (pod)") == "tpu_v5e_pod"


# -- through the engine --------------------------------------------------------------------------


def engine_run(policy: str, restore_s: float = 0.0, table: object = None) -> RunResult:
    """A (t=0, 1 GPU, 10 s), B (t=0, 2 GPUs, 4 s), C (t=1, 1 GPU, 3 s) on one 2-GPU node at
    1 work unit per second (tests/test_engine.py's hand-worked trace)."""
    from clustersim.engine import simulate
    from scheduling.registry import make_policy
    from tests.simple import cluster, fixed_rates, jobs

    t = table if table is not None else jobs([(0, 1, 10), (0, 2, 4), (1, 1, 3)])
    cl = cluster([("A", 2)])
    return simulate(t, cl, make_policy(policy), rates=fixed_rates(t, cl, restore_s=restore_s))  # type: ignore[arg-type]


def test_las_jobs_wait_after_preemption_though_their_first_start_delay_is_zero() -> None:
    # LAS: A 0-1; at 1 B preempts A and runs 1-5; then C 5-8 and A 5-14.
    r = engine_run("las")
    np.testing.assert_allclose(r.finish, [14, 5, 8])
    frame = per_job_frame(r)
    # first-start delays: A 0, B 1, C 4; waits: A 14 - 10 = 4, B 5 - 4 = 1, C 7 - 3 = 4
    assert frame["queue_delay"].tolist() == [0.0, 1.0, 4.0]
    assert frame["held"].tolist() == pytest.approx([10.0, 4.0, 3.0])
    assert frame["wait"].tolist() == pytest.approx([4.0, 1.0, 4.0])
    m = summary(r)
    assert m["queue_delay_mean_s"] == pytest.approx(5 / 3)
    assert m["wait_mean_s"] == pytest.approx(3.0)


def test_a_restore_delay_counts_as_holding_devices_not_as_waiting() -> None:
    # SRTF, restore 0.5 s: B 0-1, C preempts it 1-2, B resumes at 2, stalls to 2.5, ends 5.5
    from tests.simple import jobs

    r = engine_run("srtf", restore_s=0.5, table=jobs([(0, 1, 10), (0, 2, 4), (1, 2, 1)]))
    assert r.finish[1] == pytest.approx(5.5)
    frame = per_job_frame(r)
    # B held its GPUs 0-1 and 2-5.5 (4.5 s, the stall included): it waited 1 s, during 1-2
    assert frame["held"][1] == pytest.approx(4.5)
    assert frame["wait"][1] == pytest.approx(1.0)


def test_policies_on_the_same_workload_pay_the_same_owned_capital() -> None:
    from clustersim.cluster import PURCHASE_HOURS

    fifo, las = summary(engine_run("fifo")), summary(engine_run("las"))
    # FIFO ends at 17 s, LAS at 14 s: a cost over the makespan would differ by 17/14
    assert (fifo["makespan_s"], las["makespan_s"]) == (17.0, 14.0)
    # arrivals span 1 s -> the 1 h floor; 2 devices × $1/h × 5,112.5 h / (4 × 8760 h)
    capital = 2 * 1.0 * PURCHASE_HOURS / (4 * 8760.0)
    assert fifo["horizon_s"] == las["horizon_s"] == H
    assert fifo["cost_owned_capital_usd"] == las["cost_owned_capital_usd"]
    assert fifo["cost_owned_capital_usd"] == pytest.approx(capital)
    # same busy device-seconds (no restore delay), so the same energy and cost inside the hour
    assert fifo["cost_owned_usd"] == pytest.approx(las["cost_owned_usd"])
    assert fifo["cost_cloud_usd"] == pytest.approx(las["cost_cloud_usd"])
    assert fifo["cost_cloud_usd"] == pytest.approx(21 / 3600)  # 21 device-seconds at $1/h


# -- completed work in reference GPU-hours -------------------------------------------------------


def test_a_hand_built_result_reads_work_as_reference_seconds_of_the_whole_gang() -> None:
    # no ref_gpu_s given: num_gpus × work = 1 × 100 s and 2 × 30 s
    assert two_jobs(work=[100.0, 30.0]).ref_gpu_s.tolist() == [100.0, 60.0]
    m = summary(two_jobs(work=[100.0, 30.0]))
    assert m["reference_gpu_hours_completed"] == pytest.approx(160.0 / H)
    # an undefined reference work (nan) counts 0
    given = two_jobs(ref_gpu_s=[H, NAN])
    assert summary(given)["reference_gpu_hours_completed"] == pytest.approx(1.0)
    with pytest.raises(ValueError, match="ref_gpu_s"):
        two_jobs(ref_gpu_s=[H])


def catalog_cluster(*names: str, devices: int = 1) -> Cluster:
    """One node of ``devices`` devices per catalog type (32 GB/s inside, 100 Gbit/s NICs)."""
    from clustersim.catalog import load_catalog

    cat = load_catalog()
    n = len(names)
    return Cluster(
        name="test",
        types=tuple(cat.get(x) for x in names),
        node_type=np.arange(n, dtype=np.int64),
        node_devices=np.full(n, devices, dtype=np.int64),
        node_rack=np.zeros(n, dtype=np.int64),
        node_region=np.zeros(n, dtype=np.int64),
        node_intra_gbs=np.full(n, 32.0),
        node_nic_gbps=np.full(n, 100.0),
        node_overhead_w=np.zeros(n),
        rack_oversub=np.ones(1),
        regions=(Region("home", pue=1.0, price_per_kwh=0.1, carbon_g_per_kwh=400.0),),
    )


def run_with_model(policy: str, table: JobTable, cluster: Cluster) -> RunResult:
    """``table`` on ``cluster`` with the full performance model, consolidated placement."""
    from clustersim.engine import simulate
    from clustersim.perf import PerformanceModel
    from scheduling.registry import make_policy

    return simulate(table, cluster, make_policy(policy), perf=PerformanceModel())


def test_the_same_generic_jobs_complete_the_same_work_on_k80s_and_on_v100s() -> None:
    from clustersim.perf import PerformanceModel
    from tests.simple import jobs

    # reference seconds of the whole gang: 1 GPU × 1 h + 2 GPUs × 0.5 h = 2 reference GPU-hours
    table = jobs([(0, 1, H), (0, 2, 0.5 * H)])
    out = {}
    for name in ("K80", "V100-SXM2-16GB"):
        cl = catalog_cluster(name, devices=2)
        r = run_with_model("fifo", table, cl)
        assert r.completed.all()
        rate = PerformanceModel().prepare(table, cl).rate[:, 0]  # reference seconds per second
        out[name] = (summary(r), rate, cl.types[0].price_per_hour)
    (k80, k_rate, k_price), (v100, v_rate, v_price) = out.values()
    assert k80["reference_gpu_hours_completed"] == pytest.approx(2.0, rel=1e-12)
    assert v100["reference_gpu_hours_completed"] == pytest.approx(2.0, rel=1e-12)
    # the capacity used differs: the K80s are slower than the P100, the V100s faster
    assert k80["busy_device_hours"] > 2.0 > v100["busy_device_hours"]
    # one type: the cloud pays price × (1 h / r0 + 2 × 0.5 h / r1) device-hours for the
    # same 2 reference GPU-hours (it was 1 / price whatever the type)
    for m, rate, price in ((k80, k_rate, k_price), (v100, v_rate, v_price)):
        held = 1.0 / rate[0] + 1.0 / rate[1]
        assert m["busy_device_hours"] == pytest.approx(held, rel=1e-9)
        assert m["work_per_dollar_cloud"] == pytest.approx(2.0 / (price * held), rel=1e-9)
        assert m["work_per_dollar_cloud"] != pytest.approx(1.0 / price)


@pytest.mark.parametrize(
    ("job_type", "work", "want_h"),
    [
        # reference seconds: 1 × 2 h + 1 × 1 h
        ("", (2 * H, H), 3.0),
        # 30,000 steps at Gavel's 2.6194694075770055 steps/s on one P100
        ("ResNet-50 (batch size 64)", (20_000.0, 10_000.0), 30_000 / 2.6194694075770055 / H),
    ],
)
def test_policies_placing_the_same_jobs_on_different_types_complete_the_same_work(
    job_type: str, work: tuple[float, float], want_h: float
) -> None:
    from tests.simple import jobs

    # One K80 and one V100. FIFO starts the long job A first, on the faster V100, and B on
    # the K80; SRTF starts the short job B first, on the V100, and A on the K80.
    table = jobs([(0, 1, work[0]), (0, 1, work[1])], job_type=[job_type, job_type])
    cl = catalog_cluster("K80", "V100-SXM2-16GB")
    fifo, srtf = run_with_model("fifo", table, cl), run_with_model("srtf", table, cl)
    assert fifo.completed.all() and srtf.completed.all()
    assert np.argmax(fifo.type_time, axis=1).tolist() == [1, 0]
    assert np.argmax(srtf.type_time, axis=1).tolist() == [0, 1]
    a, b = summary(fifo), summary(srtf)
    assert a["busy_device_hours"] != pytest.approx(b["busy_device_hours"], rel=1e-3)
    assert a["reference_gpu_hours_completed"] == pytest.approx(want_h, rel=1e-12)
    assert b["reference_gpu_hours_completed"] == pytest.approx(want_h, rel=1e-12)


def test_timeseries_splits_power_by_state() -> None:
    # make_cluster: one node of 2 devices (busy 300 W, idle 50 W), node overhead 100 W (50 W
    # a device, going with its device's state), PUE 1.5.
    # 0–1 h: 1 busy, 1 idle: busy (300 + 50) × 1.5 = 525 W, idle (50 + 50) × 1.5 = 150 W.
    # 1–2 h: 2 busy: (600 + 100) × 1.5 = 1050 W, idle 0. Nothing wakes (no power model).
    # The stints say which devices were busy when (the overhead shares follow them).
    result = dataclasses.replace(
        two_jobs(),
        stints=Stints(
            job=np.array([0, 1]),
            node=np.array([0, 0]),
            devices=np.array([1, 2]),
            start=np.array([0.0, H]),
            end=np.array([H, 2 * H]),
        ),
    )
    ts = timeseries(result)
    assert ts["power_busy_kw"] == pytest.approx([0.525, 1.05])
    assert ts["power_idle_kw"] == pytest.approx([0.15, 0.0])
    assert ts["power_wake_kw"] == pytest.approx([0.0, 0.0])
    parts = np.add(np.add(ts["power_busy_kw"], ts["power_idle_kw"]), ts["power_wake_kw"])
    assert parts == pytest.approx(ts["power_kw"])
    # one bin: the time-weighted averages, (525 + 1050) / 2 and (150 + 0) / 2
    ts1 = timeseries(result, max_points=1)
    assert ts1["power_busy_kw"] == pytest.approx([0.7875])
    assert ts1["power_idle_kw"] == pytest.approx([0.075])


def test_start_shifts_lists_the_jobs_started_later_than_in_the_baseline() -> None:
    # job 0 the same; job 1 an hour later; job 2 half a second later (under tol 1 s); job 3
    # earlier; job 4 never started in the run; job 5 never in the baseline
    run = np.array([0.0, 2 * H, 10.5, 5.0, NAN, 7.0])
    base = np.array([0.0, H, 10.0, 50.0, 3.0, NAN])
    rows, delay = start_shifts(run, base)
    assert rows.tolist() == [1]
    assert delay.tolist() == [H]
    rows, delay = start_shifts(run, base, tol_s=0.1)
    assert rows.tolist() == [1, 2]
    assert delay.tolist() == [H, 0.5]
    with pytest.raises(ClustersimError, match="not the same jobs"):
        start_shifts(run, base[:3])
