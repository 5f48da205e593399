"""Checks of the Gavel test oracle (tests/gavel_reference.py) against hand-worked cases.

Every expected number below is derived by hand from Gavel's round rules (docs/gavel-fidelity.md):
a round ends when the slowest scheduled job has run min(int(rate * 360), remaining) steps; jobs
arriving during a round are admitted at its end; the allocation is recomputed only when a job
arrived/finished *and* (1920 s passed since the last recomputation, or that recomputation was at
time 0, or nothing runs and no arrival is left); time on a worker type is shared by priority
allocation / (time received since the reset / total time on the type).
"""

from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np
import pytest

from tests.gavel_reference import (
    GavelSimulator,
    TraceJob,
    _FifoBase,
    _MaxMinFairnessAgnostic,
    load_throughputs,
    parse_cluster,
    parse_trace,
    parse_trace_line,
    simulate,
)

# Toy throughput tables (steps/s of the whole job) so that the arithmetic stays readable.
TOY = {
    "v100": {("A", 1): 1.0, ("B", 2): 10.0},
    "p100": {("A", 1): 1.0, ("B", 2): 10.0},
    "k80": {("A", 1): 1.0, ("B", 2): 10.0},
}


def job(steps: int, arrival: float, kind: str = "A", sf: int = 1) -> TraceJob:
    return TraceJob(kind, steps, sf, arrival)


# ---------------------------------------------------------------------------------------------
# Parsing
# ---------------------------------------------------------------------------------------------


def test_parse_the_three_trace_variants():
    seven = "ResNet-18 (batch size 32)\tpython3 main.py\t--num_steps\t1\t4000\t12.5\t2"
    ten = "LM (batch size 5)\tpython3 main.py\tlm\t--steps\t1\t1000\t4\t1\t-1.000000\t90\n"
    twelve = "A3C\tpython3 main.py\trl\t--max-steps\t0\t25832\t1\tgns\t1\t-1.000000\t1418\t7\n"
    assert parse_trace_line(seven) == TraceJob("ResNet-18 (batch size 32)", 4000, 2, 12.5)
    assert parse_trace_line(ten) == TraceJob("LM (batch size 5)", 1000, 4, 90.0, 1.0)
    assert parse_trace_line(twelve) == TraceJob("A3C", 25832, 1, 7.0, 1.0)
    with pytest.raises(ValueError, match="7, 10 or 12"):
        parse_trace_line("a\tb\tc")


def test_parse_cluster_both_spellings():
    assert parse_cluster("v100:8,p100:8,k80:8") == {"v100": 8, "p100": 8, "k80": 8}
    assert parse_cluster("25:0:0") == {"v100": 25, "p100": 0, "k80": 0}


def test_parse_real_files(shared_data: Path):
    sw = parse_trace(shared_data / "traces/shockwave/shockwave_120jobs_100.trace")
    gv = parse_trace(shared_data / "traces/gavel/generated/gavel_synth_multigpu_lam900_n100.trace")
    old = parse_trace(shared_data / "traces/gavel/2869ce.trace")
    assert (len(sw), len(gv), len(old)) == (120, 100, 533)
    assert sw[0] == TraceJob("LM (batch size 10)", 134583, 1, 0.0, 1.0)
    tput = load_throughputs(shared_data / "throughput/gavel/simulation_throughputs.json")
    assert tput["v100"][("A3C", 1)] == pytest.approx(7.176, abs=1e-3)
    assert tput["k80"][("ResNet-50 (batch size 128)", 2)] == 0.0


# ---------------------------------------------------------------------------------------------
# Hand-worked cases
# ---------------------------------------------------------------------------------------------


def test_single_job_runs_in_whole_rounds_and_finishes_mid_round():
    # 1000 steps at 1 step/s, one V100: rounds [0,360) 360 steps, [360,720) 360 steps,
    # then min(360, 280) = 280 steps -> finishes at 720 + 280 = 1000 (mid-round).
    res = simulate([job(1000, 0.0)], {"v100": 1}, TOY, policy="fifo")
    assert res.jct == [1000.0]
    assert res.average_jct == 1000.0
    assert res.makespan == 1000.0
    assert res.num_rounds == 3


def test_round_ends_with_slowest_job_and_arrivals_wait_for_round_end():
    # v100:2. t=0: jobs 0 (100 steps) and 1 (200 steps) both run; they finish at 100 and 200,
    # so the round ends at 200. Job 2 arrives at 150 but is admitted only at 200; the first
    # allocation was computed at t=0, so a new one is computed at once (last reset at time 0).
    # FIFO gives job 2 a V100: it runs 200 -> 250. JCTs 100, 200, 100.
    jobs = [job(100, 0.0), job(200, 0.0), job(50, 150.0)]
    res = simulate(jobs, {"v100": 2}, TOY, policy="fifo")
    assert res.jct == [100.0, 200.0, 100.0]
    assert res.average_jct == pytest.approx(400.0 / 3)
    assert res.makespan == 250.0


def test_fifo_new_job_waits_for_allocation_reset_even_if_gpu_idles():
    # v100:1, jobs 0 (720 steps, t=0), 1 (360 steps, t=100), 2 (360 steps, t=5000).
    # t=0    reset #1 (time 0): FIFO allocates job 0 -> v100. Job 0 runs 0-360.
    # t=360  job 1 admitted; last reset was at time 0 -> reset #2 (last_reset := 360); the V100
    #        is still held by job 0, so job 1 gets allocation 0 (FIFO skips priority-0 jobs).
    #        Job 0 runs 360-720 and completes (JCT 720).
    # t=720  360 s < 1920 s since the last reset -> no new allocation: job 1 cannot run, the
    #        GPU idles. Job 2 is still queued, so the clock jumps to its arrival.
    # t=5000 job 2 admitted; 4640 s >= 1920 s -> reset #3: job 1 replaces completed job 0 on
    #        the V100 (job 2 stays unallocated). Job 1 runs 5000-5360 (JCT 5260).
    # t=5360 no reset (360 s); nothing runs; nothing left to arrive -> Gavel forces a reset on
    #        the next pass (same time): job 2 allocated, runs 5360-5720 (JCT 720).
    jobs = [job(720, 0.0), job(360, 100.0), job(360, 5000.0)]
    res = simulate(jobs, {"v100": 1}, TOY, policy="fifo")
    assert res.jct == [720.0, 5260.0, 720.0]
    assert res.average_jct == pytest.approx((720 + 5260 + 720) / 3)
    assert res.num_allocation_resets == 4


def test_fifo_idle_cluster_forces_reset():
    # v100:1, jobs 0 (720 steps, t=0) and 1 (360 steps, t=100). As above until t=720, where no
    # arrival is left and nothing runs: the reset is forced and job 1 runs 720-1080.
    res = simulate([job(720, 0.0), job(360, 100.0)], {"v100": 1}, TOY, policy="fifo")
    assert res.jct == [720.0, 980.0]
    assert res.average_jct == 850.0


@pytest.mark.parametrize(
    ("seed", "expected"),
    [
        # random.Random(0).randrange(2) == 1: the drawn entry is 'v100', which is removed from
        # the list of free types; jobs 1 and 2 then get the K80s. All finish in round 1.
        (0, [360.0, 360.0, 360.0]),
        # random.Random(1).randrange(2) == 0: job 0 is still put on the V100 (the leaked loop
        # variable), but 'k80' is removed from the list, leaving only the full V100: jobs 1
        # and 2 get nothing although two K80s idle. At t=360 (reset, last one at time 0) job 1
        # replaces job 0 on the V100 and job 2 gets a K80; both run 360-720.
        (1, [360.0, 720.0, 720.0]),
    ],
)
def test_fifo_worker_type_choice_reproduces_gavel_bug(seed, expected):
    jobs = [job(360, 0.0), job(360, 0.0), job(360, 0.0)]
    sim = GavelSimulator(
        jobs, {"v100": 1, "k80": 2}, TOY, policy="fifo", seed=seed, record_rounds=True
    )
    res = sim.run()
    assert res.jct == expected
    assert sim.rounds[0][1][0] == "v100"  # job 0 always lands on the alphabetically last type


@pytest.mark.parametrize(
    ("seed", "expected"),
    [
        # Free types sorted ['k80', 'p100', 'v100'], 2 GPUs each; every job goes to the last
        # entry of the list. random.Random(1).randrange(3) gives 0, 2: jobs 0, 1 -> v100, which
        # is then full and the entry at index 2 ('v100') is removed; jobs 2, 3 -> 'p100'.
        (1, {0: "v100", 1: "v100", 2: "p100", 3: "p100"}),
        # random.Random(2).randrange(3) gives 0, 0: jobs 0, 1 -> v100, then index 0 ('k80') is
        # removed while the full 'v100' stays last: jobs 2, 3 are also put on 'v100' (4 jobs
        # on 2 GPUs) although P100s and K80s are free.
        (2, {0: "v100", 1: "v100", 2: "v100", 3: "v100"}),
    ],
)
def test_fifo_allocation_follows_the_leaked_loop_variable(seed, expected):
    policy = _FifoBase(seed=seed)
    tput = {j: {"k80": 1.0, "p100": 1.0, "v100": 1.0} for j in range(4)}
    alloc = policy.get_allocation(
        tput, dict.fromkeys(range(4), 1), {"k80": 2, "p100": 2, "v100": 2}
    )
    got = {j: next(t for t, x in a.items() if x == 1.0) for j, a in alloc.items()}
    assert got == expected


def test_over_subscribed_fifo_type_is_time_sliced():
    # Seed 2 on k80:2,p100:2,v100:2 puts all four 720-step jobs on the two V100s (see above).
    # Priorities allocation / time share then rotate them: t=0 jobs 0, 1 run (ties -> job
    # order); t=360 jobs 2, 3 have 180/1080 of the V100 time vs 540/1080 -> they run; t=720
    # all four have 540/1440 -> jobs 0, 1 run and finish at 1080; the reset at 1080 (last
    # one at time 0) keeps jobs 2, 3 on the V100s, finishing at 1440.
    jobs = [job(720, 0.0) for _ in range(4)]
    res = simulate(jobs, {"v100": 2, "p100": 2, "k80": 2}, TOY, policy="fifo", seed=2)
    assert res.jct == [1080.0, 1080.0, 1440.0, 1440.0]


def test_las_time_slices_one_gpu_between_two_jobs():
    # v100:1, two 720-step jobs at t=0. LP: t* = 1/2, both get x = 0.5 (unique optimum).
    # Priority = x / (job time since reset / V100 time since reset); each job starts with
    # 180 s "credit" (half a round).
    # t=0    times 180/180 -> priorities equal, tie -> job 0 (job order). Runs 0-360.
    # t=360  job 0: 540/720 -> 0.667; job 1: 180/720 -> 2  => job 1 runs 360-720.
    # t=720  both 540/1080 -> 1, tie -> job 0 runs 720-1080 and completes (JCT 1080).
    # t=1080 reset (last one at time 0): job 1 alone, x = 1; runs 1080-1440 (JCT 1440).
    res = simulate([job(720, 0.0), job(720, 0.0)], {"v100": 1}, TOY, policy="max_min_fairness")
    assert res.jct == [pytest.approx(1080.0), pytest.approx(1440.0)]
    assert res.average_jct == pytest.approx(1260.0)


def test_multi_gpu_job_with_fewer_steps_than_gpus_fails_and_is_dropped():
    # v100:3. Job 0: type B, 2 GPUs, 10 steps/s -> 3600 steps per round; 3601 steps in total.
    # Job 1: type A, 1 GPU, 720 steps. FIFO puts both on V100s.
    # Round 1 (0-360): job 0 runs 3600, job 1 360 steps. Round 2: job 0 has 1 step left,
    # finishes it at 360.1, but 1 // 2 == 0 steps for its first GPU -> the micro-task "fails"
    # and nothing is credited; job 1 finishes at 720 (JCT 720). Rounds at 720, 720.1, ...:
    # job 0 fails 4 more times (0.1 s each) and is dropped after the 5th failure at 720.4,
    # without a completion time. Average JCT counts job 1 only.
    jobs = [job(3601, 0.0, "B", 2), job(720, 0.0)]
    res = simulate(jobs, {"v100": 3}, TOY, policy="fifo")
    assert res.jct == [None, 720.0]
    assert res.average_jct == 720.0
    assert res.makespan == pytest.approx(720.4)


def test_gpus_per_server_floor_drops_remainder():
    # 3 V100s in servers of 2 -> cluster_spec // 2 = 1 server -> only 2 GPUs registered.
    # FIFO: jobs 0, 1 take them (0-360); job 2 is allocated at the reset at t=360 (the last
    # one was at time 0) and runs 360-720.
    jobs = [job(360, 0.0), job(360, 0.0), job(360, 0.0)]
    res = simulate(jobs, {"v100": 3}, TOY, policy="fifo", gpus_per_server={"v100": 2})
    assert sorted(res.jct) == [360.0, 360.0, 720.0]


def test_job_type_without_throughput_raises_keyerror():
    with pytest.raises(KeyError, match="no measured throughput"):
        simulate([job(10, 0.0, "Unknown")], {"v100": 1}, TOY)


def test_unsorted_arrivals_are_rejected():
    with pytest.raises(ValueError, match="non-decreasing"):
        simulate([job(10, 5.0), job(10, 1.0)], {"v100": 1}, TOY)


# ---------------------------------------------------------------------------------------------
# The max-min LP
# ---------------------------------------------------------------------------------------------


def test_agnostic_max_min_lp_oversubscribed_is_equal_gpu_share():
    # Objective min_i sf_i * X_i (X_i = sum_j x_ij). 6 jobs (sf 1,1,2,2,4,4) on 2+2 GPUs:
    # t* = min(min_i sf_i, N / m) = min(1, 4/6) = 2/3, so X_i = t*/sf_i, which uses all 4 GPUs
    # (unique optimum); with two equal-size types the analytic centre splits half/half.
    sfs = [1, 1, 2, 2, 4, 4]
    tput = {j: {"v100": 1.0, "k80": 1.0} for j in range(6)}
    alloc = _MaxMinFairnessAgnostic().get_allocation(
        tput, dict(enumerate(sfs)), dict.fromkeys(range(6), 1.0), {"v100": 2, "k80": 2}
    )
    for j, sf in enumerate(sfs):
        assert alloc[j]["v100"] == pytest.approx(4 / 6 / sf / 2, abs=1e-6)
        assert alloc[j]["k80"] == pytest.approx(4 / 6 / sf / 2, abs=1e-6)


def test_agnostic_max_min_lp_undersubscribed_gives_single_gpu_jobs_everything():
    sfs = [1, 1, 4]
    tput = {j: {"v100": 1.0, "p100": 1.0, "k80": 1.0} for j in range(3)}
    alloc = _MaxMinFairnessAgnostic().get_allocation(
        tput,
        dict(enumerate(sfs)),
        dict.fromkeys(range(3), 1.0),
        {"v100": 8, "p100": 8, "k80": 8},
    )
    totals = [sum(alloc[j].values()) for j in range(3)]
    assert totals[0] == pytest.approx(1.0, abs=1e-6)
    assert totals[1] == pytest.approx(1.0, abs=1e-6)
    assert 0.25 <= totals[2] <= 1.0  # any value in [t*/sf, 1] is optimal; we take the centre
    assert np.allclose([alloc[2][t] for t in ("v100", "p100", "k80")], totals[2] / 3, atol=1e-6)


# ---------------------------------------------------------------------------------------------
# Smoke runs on real traces (numbers are printed; run pytest -s to see them)
# ---------------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize(
    "trace",
    [
        "traces/shockwave/shockwave_120jobs_100.trace",
        "traces/gavel/generated/gavel_synth_multigpu_lam900_n100.trace",
    ],
)
@pytest.mark.parametrize("policy", ["fifo", "max_min_fairness"])
def test_smoke_real_traces(shared_data: Path, trace: str, policy: str):
    jobs = parse_trace(shared_data / trace)
    tput = load_throughputs(shared_data / "throughput/gavel/simulation_throughputs.json")
    cluster = parse_cluster("v100:8,p100:8,k80:8")
    started = time.perf_counter()
    res = simulate(jobs, cluster, tput, policy=policy, seed=0)
    elapsed = time.perf_counter() - started
    print(
        f"\n[gavel-reference] {Path(trace).name} {policy}: average JCT {res.average_jct:.1f} s "
        f"({res.average_jct_hours:.2f} h), makespan {res.makespan:.0f} s, "
        f"utilization {res.utilization:.3f}, rounds {res.num_rounds}, "
        f"dropped {sum(x is None for x in res.jct)}, {elapsed:.1f} s wall"
    )
    done = [x for x in res.jct if x is not None]
    assert len(done) >= 0.95 * len(jobs)
    assert math.isfinite(res.average_jct)
    # No job can beat running alone on its fastest type from its arrival.
    for spec, jct in zip(jobs, res.jct, strict=True):
        if jct is not None:
            best = max(tput[t][(spec.job_type, spec.scale_factor)] for t in cluster)
            assert jct >= spec.total_steps / best - 1e-6
    assert 0.0 < res.utilization <= 1.0
