"""Gavel's heterogeneity-aware LP policies: the restatement in tests/gavel_reference.py checked
by hand and against the average JCTs that Gavel's own simulator printed.

The hand-worked instances are solved on paper in the comments. The reference numbers in
``tests/fixtures/gavel/gavel_runs.json`` come from running Gavel's driver unmodified (provenance
in the file and in docs/gavel-fidelity.md, section 20). With CVXPY + ECOS as the LP back end the
restatement reproduced every one of those runs to 1e-7 (done outside this suite: CVXPY is not a
dependency); here it runs with its two dependency-free back ends, ``barrier`` (central path,
i.e. a point inside the optimal face, like ECOS) and ``highs`` (a vertex).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from tests import gavel_reference as gavel
from tests.gavel_reference import (
    TraceJob,
    _AlloX,
    _FinishTimeFairnessPerf,
    _MaxMinFairnessPerf,
    _MaxSumThroughputPerf,
    isolated_throughputs,
    proportional_throughputs,
)

FIXTURE = Path(__file__).parent / "fixtures" / "gavel" / "gavel_runs.json"
BACKENDS = ("highs", "barrier")


def gavel_run(trace: str, policy: str, cluster: str = "8:8:8", seed: int = 0) -> dict:
    runs = json.loads(FIXTURE.read_text())["runs"]
    (run,) = [
        r
        for r in runs
        if (r["trace"], r["policy"], r["cluster"], r["seed"]) == (trace, policy, cluster, seed)
    ]
    return run


def check_base_constraints(alloc, scale_factors, cluster) -> None:  # type: ignore[no-untyped-def]
    for job, row in alloc.items():
        assert all(v >= 0 for v in row.values())
        assert sum(row.values()) <= 1 + 1e-7, job
    for t, n in cluster.items():
        assert sum(scale_factors[j] * alloc[j][t] for j in alloc) <= n + 1e-7, t


# ---------------------------------------------------------------------------------------------
# Reference throughputs (ProportionalPolicy, IsolatedPolicy)
# ---------------------------------------------------------------------------------------------


def test_proportional_and_isolated_throughputs_by_hand() -> None:
    # types (k80, v100) with 2 GPUs each, N = 4; job A (1 GPU) runs 1 / 2 steps/s, B (2 GPUs) 1 / 1
    rates = np.array([[1.0, 2.0], [1.0, 1.0]])
    workers = np.array([2.0, 2.0])
    sfs = np.array([1.0, 2.0])
    # proportional share N_j / N = 1/2 of each type, scale factor ignored: 1.5 and 1.0
    np.testing.assert_allclose(proportional_throughputs(rates, workers), [1.5, 1.0])
    # isolated: (N_j / m) / sf = 1 / sf per type; A's row (1, 1) sums to 2 -> (1/2, 1/2) -> 1.5;
    # B's row (1/2, 1/2) sums to 1 -> kept -> 1.0
    np.testing.assert_allclose(isolated_throughputs(rates, sfs, workers), [1.5, 1.0])


# ---------------------------------------------------------------------------------------------
# max_min_fairness_perf
# ---------------------------------------------------------------------------------------------

MMF_RATES = {0: {"k80": 1.0, "v100": 2.0}, 1: {"k80": 1.0, "v100": 1.0}}
ONE_EACH = {"k80": 1, "v100": 1}


@pytest.mark.parametrize("backend", BACKENDS)
def test_max_min_fairness_perf_by_hand(backend: str) -> None:
    # p_A = (1 + 2) / 2 = 1.5, p_B = 1, so c_A = (2/3, 4/3), c_B = (1, 1). B's value x_Bk + x_Bv is
    # at most 1 (its row), and A reaches 4/3 > 1 on the V100 while B takes the K80: optimum 1.
    alloc = _MaxMinFairnessPerf(backend).get_allocation(
        MMF_RATES, {0: 1, 1: 1}, {0: 1, 1: 1}, ONE_EACH
    )
    check_base_constraints(alloc, {0: 1, 1: 1}, ONE_EACH)
    value_a = 2 / 3 * alloc[0]["k80"] + 4 / 3 * alloc[0]["v100"]
    value_b = alloc[1]["k80"] + alloc[1]["v100"]
    assert min(value_a, value_b) == pytest.approx(1.0, abs=1e-6)


def test_max_min_fairness_perf_central_point_is_inside_the_optimal_face() -> None:
    # Every allocation with value_B = 1 and value_A >= 1 is optimal; the central path does not stop
    # at a corner of that face: A gets strictly more than the minimum and B uses both types.
    alloc = _MaxMinFairnessPerf("barrier").get_allocation(
        MMF_RATES, {0: 1, 1: 1}, {0: 1, 1: 1}, ONE_EACH
    )
    value_a = 2 / 3 * alloc[0]["k80"] + 4 / 3 * alloc[0]["v100"]
    assert 1.0 + 1e-3 < value_a < 4 / 3 - 1e-3
    assert min(alloc[1].values()) > 1e-3


@pytest.mark.parametrize("backend", BACKENDS)
def test_max_min_fairness_perf_priority_weight_divides_the_objective(backend: str) -> None:
    # w_B = 2 halves B's coefficients: B's value is at most 1/2, A easily gets 1/2: optimum 1/2
    alloc = _MaxMinFairnessPerf(backend).get_allocation(
        MMF_RATES, {0: 1, 1: 1}, {0: 1, 1: 2}, ONE_EACH
    )
    value_a = 2 / 3 * alloc[0]["k80"] + 4 / 3 * alloc[0]["v100"]
    value_b = 0.5 * (alloc[1]["k80"] + alloc[1]["v100"])
    assert min(value_a, value_b) == pytest.approx(0.5, abs=1e-6)


# ---------------------------------------------------------------------------------------------
# max_sum_throughput_perf
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
def test_max_sum_throughput_perf_by_hand(backend: str) -> None:
    # A: 1 (k80) / 3 (v100), B: 2 / 2, one GPU each. Raw steps/s are summed (no normalisation):
    # A on the V100 and B on the K80 give 3 + 2 = 5; every other allocation gives less.
    rates = {0: {"k80": 1.0, "v100": 3.0}, 1: {"k80": 2.0, "v100": 2.0}}
    alloc = _MaxSumThroughputPerf(backend).get_allocation(rates, {0: 1, 1: 1}, ONE_EACH)
    check_base_constraints(alloc, {0: 1, 1: 1}, ONE_EACH)
    assert alloc[0]["v100"] == pytest.approx(1.0, abs=1e-5)
    assert alloc[1]["k80"] == pytest.approx(1.0, abs=1e-5)
    assert alloc[0]["k80"] + alloc[1]["v100"] == pytest.approx(0.0, abs=1e-5)


# ---------------------------------------------------------------------------------------------
# finish_time_fairness_perf
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
def test_finish_time_fairness_perf_by_hand(backend: str) -> None:
    # One V100, two 1-GPU jobs at 1 step/s with 100 steps left; A arrived 100 s ago, B just now.
    # Isolated share 1/2 -> q = 0.5, E = 0 + 100 / 0.5 = 200 for both (first call: C = 0).
    # rho_A = (100 + 100 / a) / 200, rho_B = (100 / (1 - a)) / 200; equal when a^2 + a - 1 = 0:
    # a = (sqrt 5 - 1) / 2, rho = (3 + sqrt 5) / 4.
    policy = _FinishTimeFairnessPerf(backend)
    alloc = policy.get_allocation(
        {0: {"v100": 1.0}, 1: {"v100": 1.0}},
        {0: 1, 1: 1},
        {0: 100.0, 1: 0.0},
        {0: 100, 1: 100},
        {"v100": 1},
    )
    a = alloc[0]["v100"]
    assert a == pytest.approx((math.sqrt(5) - 1) / 2, abs=1e-5)
    assert alloc[1]["v100"] == pytest.approx(1 - a, abs=1e-5)
    assert (100 + 100 / a) / 200 == pytest.approx((3 + math.sqrt(5)) / 4, abs=1e-5)


def test_finish_time_fairness_accumulates_isolated_time_between_calls() -> None:
    # Second call: A went from 100 to 40 steps left; its isolated rate at the first call was 0.5,
    # so C_A = 60 / 0.5 = 120; B did nothing, C_B = 0.
    policy = _FinishTimeFairnessPerf("highs")
    rates = {0: {"v100": 1.0}, 1: {"v100": 1.0}}
    policy.get_allocation(rates, {0: 1, 1: 1}, {0: 100.0, 1: 0.0}, {0: 100, 1: 100}, {"v100": 1})
    policy.get_allocation(rates, {0: 1, 1: 1}, {0: 460.0, 1: 360.0}, {0: 40, 1: 100}, {"v100": 1})
    assert policy.cumulative_isolated_time == {0: pytest.approx(120.0), 1: 0.0}


# ---------------------------------------------------------------------------------------------
# The simulator loop for these policies
# ---------------------------------------------------------------------------------------------

TOY = {
    "v100": {("A", 1): 2.0, ("B", 1): 1.0},
    "p100": {("A", 1): 1.0, ("B", 1): 1.0},
    "k80": {("A", 1): 0.5, ("B", 1): 1.0},
}


@pytest.mark.parametrize(
    "policy", ["max_min_fairness_perf", "finish_time_fairness_perf", "max_sum_throughput_perf"]
)
def test_perf_policies_never_shuffle_the_worker_types(policy: str) -> None:
    # 'Perf' in the policy's name: the type order is the fixed (v100, p100, k80), so the seed has
    # no effect -- Gavel printed identical numbers for seeds 0 and 1 (fixture)
    jobs = [TraceJob("A" if i % 2 else "B", 3000 + 500 * i, 1, 400.0 * i) for i in range(8)]
    cluster = {"v100": 1, "p100": 1, "k80": 1}
    runs = [
        gavel.simulate(jobs, cluster, TOY, policy=policy, seed=s, lp_backend="highs").jct
        for s in (0, 1, 2)
    ]
    assert runs[0] == runs[1] == runs[2]
    assert (
        gavel_run("shockwave_120jobs_100", policy)["average_jct_s"]
        == gavel_run("shockwave_120jobs_100", policy, seed=1)["average_jct_s"]
    )


# ---------------------------------------------------------------------------------------------
# Against Gavel's printed numbers
# ---------------------------------------------------------------------------------------------


def restated(shared_data, trace: str, policy: str, backend: str, cluster: str = "8:8:8") -> float:  # type: ignore[no-untyped-def]
    directory = "shockwave" if trace.startswith("shockwave") else "gavel/generated"
    return gavel.simulate(
        gavel.parse_trace(shared_data / "traces" / directory / f"{trace}.trace"),
        gavel.parse_cluster(cluster),
        gavel.load_throughputs(
            shared_data / "throughput" / "gavel" / "simulation_throughputs.json"
        ),
        policy=policy,
        seed=0,
        lp_backend=backend,
    ).average_jct


@pytest.mark.parametrize(
    ("trace", "policy", "tolerance"),
    [
        # measured: -0.13 %, -0.56 %, +0.62 % (docs/gavel-fidelity.md, section 20)
        ("shockwave_120jobs_100", "max_min_fairness_perf", 0.005),
        ("shockwave_120jobs_100", "max_sum_throughput_perf", 0.01),
        ("gavel_synth_multigpu_lam900_n100", "max_sum_throughput_perf", 0.01),
    ],
)
def test_central_point_restatement_is_close_to_gavels_printed_jct(
    shared_data, trace, policy, tolerance
) -> None:  # type: ignore[no-untyped-def]
    theirs = gavel_run(trace, policy)["average_jct_s"]
    mine = restated(shared_data, trace, policy, "barrier")
    assert abs(mine / theirs - 1) < tolerance, (mine, theirs)


def test_a_vertex_solution_misses_gavel_by_more_than_5_percent(shared_data) -> None:  # type: ignore[no-untyped-def]
    # The rule that matters for the 5 % target: the LP's optimal face is large, Gavel (ECOS) returns
    # a point inside it, a simplex vertex is a different schedule. Measured +10.9 % here.
    theirs = gavel_run("gavel_synth_multigpu_lam900_n100", "max_sum_throughput_perf")[
        "average_jct_s"
    ]
    vertex = restated(
        shared_data, "gavel_synth_multigpu_lam900_n100", "max_sum_throughput_perf", "highs"
    )
    assert vertex / theirs - 1 > 0.05, (vertex, theirs)


def test_fixture_records_gavels_runs_with_provenance() -> None:
    doc = json.loads(FIXTURE.read_text())
    assert "c4fa4009" in doc["provenance"] and "ECOS" in doc["provenance"]
    policies = {r["policy"] for r in doc["runs"]}
    assert {
        "max_min_fairness_perf",
        "finish_time_fairness_perf",
        "max_sum_throughput_perf",
        "gandiva",
        "allox",
    } <= policies
    # the LAS run of Part I, reproduced by the agnostic restatement with CVXPY + ECOS (24,726.5 s)
    assert gavel_run("shockwave_120jobs_100", "max_min_fairness")["average_jct_s"] == pytest.approx(
        24726.464
    )


# ---------------------------------------------------------------------------------------------
# allox (no LP: a min-cost matching, deterministic -- reproduced exactly)
# ---------------------------------------------------------------------------------------------


def test_allox_by_hand() -> None:
    # One V100; A waited 100 s and has 100 steps left, B just arrived with 10 (both 1 step/s).
    # Costs k * R / r + s for queue positions k = 1, 2 (k counts from the back of the queue):
    # A: 200, 300; B: 10, 20. Cheapest matching: A at k = 1 and B at k = 2 (220 < 310), so B runs
    # first and only B gets the device.
    policy = _AlloX(alpha=1.0)
    rates = {0: {"v100": 1.0}, 1: {"v100": 1.0}}
    alloc = policy.get_allocation(
        rates, {0: 1, 1: 1}, {0: 100.0, 1: 0.0}, {0: 100, 1: 10}, {"v100": 1}
    )
    assert alloc == {0: {"v100": 0.0}, 1: {"v100": 1.0}}
    # next call: B holds its device until it finishes, nothing is free, A keeps waiting
    alloc = policy.get_allocation(
        rates, {0: 1, 1: 1}, {0: 460.0, 1: 360.0}, {0: 100, 1: 5}, {"v100": 1}
    )
    assert alloc == {0: {"v100": 0.0}, 1: {"v100": 1.0}}


def test_allox_alpha_keeps_only_the_oldest_jobs() -> None:
    # alpha = 0 keeps max(int(0 * 2), 1 free device) = 1 job: the oldest, A, whatever its cost
    alloc = _AlloX(alpha=0.0).get_allocation(
        {0: {"v100": 1.0}, 1: {"v100": 1.0}},
        {0: 1, 1: 1},
        {0: 100.0, 1: 0.0},
        {0: 100, 1: 10},
        {"v100": 1},
    )
    assert alloc == {0: {"v100": 1.0}, 1: {"v100": 0.0}}


def test_allox_rejects_multi_gpu_jobs_like_gavel() -> None:
    with pytest.raises(AssertionError, match="scale factor 1"):
        _AlloX().get_allocation({0: {"v100": 1.0}}, {0: 2}, {0: 0.0}, {0: 10}, {"v100": 2})


@pytest.mark.parametrize("cluster", ["8:8:8", "8:4:12", "4:4:4"])
def test_allox_restatement_reproduces_gavels_printed_jct(shared_data, cluster: str) -> None:  # type: ignore[no-untyped-def]
    theirs = gavel_run("gavel_synth_single_lam600_n500", "allox", cluster)["average_jct_s"]
    mine = restated(shared_data, "gavel_synth_single_lam600_n500", "allox", "highs", cluster)
    assert mine == pytest.approx(theirs, rel=1e-7)  # Gavel prints three decimals


# ---------------------------------------------------------------------------------------------
# clustersim's policies (--compat gavel) against Gavel's printed numbers, where they agree
# (docs/gavel-fidelity.md, section 22, lists every input, including those outside 5 %)
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("trace", "policy", "gavel_policy", "cluster"),
    [
        # measured (centre tie-break, the --compat gavel default): +0.04 %, -0.07 %, +0.02 %,
        # +0.00 %
        ("shockwave_120jobs_100", "gavel-mmf", "max_min_fairness_perf", "8:8:8"),
        ("shockwave_120jobs_100", "gavel-mmf", "max_min_fairness_perf", "8:4:12"),
        ("shockwave_120jobs_100", "gavel-mmf", "max_min_fairness_perf", "4:4:4"),
        ("shockwave_220jobs_100", "gavel-mmf", "max_min_fairness_perf", "8:8:8"),
        # measured: +0.35 %, +0.16 %, -0.12 %, +0.11 %
        ("gavel_synth_multigpu_lam900_n100", "gavel-mmf", "max_min_fairness_perf", "8:8:8"),
        ("gavel_synth_multigpu_lam900_n100", "gavel-mmf", "max_min_fairness_perf", "8:4:12"),
        ("gavel_synth_multigpu_lam900_n100", "gavel-mmf", "max_min_fairness_perf", "4:4:4"),
        ("gavel_synth_single_lam600_n500", "gavel-mmf", "max_min_fairness_perf", "8:8:8"),
        # measured: -0.16 %, +0.08 %, -0.80 %, -0.36 %, -0.02 %, +0.48 %, -0.37 %, +0.82 %
        ("shockwave_120jobs_100", "gavel-max-throughput", "max_sum_throughput_perf", "8:8:8"),
        ("shockwave_120jobs_100", "gavel-max-throughput", "max_sum_throughput_perf", "8:4:12"),
        ("shockwave_120jobs_100", "gavel-max-throughput", "max_sum_throughput_perf", "4:4:4"),
        ("shockwave_220jobs_100", "gavel-max-throughput", "max_sum_throughput_perf", "8:8:8"),
        (
            "gavel_synth_single_lam600_n500",
            "gavel-max-throughput",
            "max_sum_throughput_perf",
            "8:8:8",
        ),
        (
            "gavel_synth_multigpu_lam900_n100",
            "gavel-max-throughput",
            "max_sum_throughput_perf",
            "8:8:8",
        ),
        (
            "gavel_synth_multigpu_lam900_n100",
            "gavel-max-throughput",
            "max_sum_throughput_perf",
            "8:4:12",
        ),
        (
            "gavel_synth_multigpu_lam900_n100",
            "gavel-max-throughput",
            "max_sum_throughput_perf",
            "4:4:4",
        ),
        # measured: +0.15 %, +0.40 %
        ("gavel_synth_single_lam600_n500", "allox", "allox", "8:8:8"),
        ("gavel_synth_single_lam600_n500", "allox", "allox", "8:4:12"),
        # gavel-ftf with the centre (the --compat gavel default), every FTF input of the
        # fixture (docs/gavel-fidelity.md, section 22b); measured: -0.56 %, +2.09 %, +4.00 %,
        # -0.19 %, -0.67 %, +3.33 %, +0.74 %, and -9.44 % on shockwave_120jobs_100 at 8:4:12
        ("shockwave_120jobs_100", "gavel-ftf", "finish_time_fairness_perf", "8:8:8"),
        ("gavel_synth_multigpu_lam900_n100", "gavel-ftf", "finish_time_fairness_perf", "8:8:8"),
        ("shockwave_220jobs_100", "gavel-ftf", "finish_time_fairness_perf", "8:8:8"),
        ("gavel_synth_single_lam600_n500", "gavel-ftf", "finish_time_fairness_perf", "8:8:8"),
        ("gavel_synth_multigpu_lam900_n100", "gavel-ftf", "finish_time_fairness_perf", "8:4:12"),
        ("shockwave_120jobs_100", "gavel-ftf", "finish_time_fairness_perf", "4:4:4"),
        ("gavel_synth_multigpu_lam900_n100", "gavel-ftf", "finish_time_fairness_perf", "4:4:4"),
    ],
)
def test_our_policy_is_within_5_percent_of_gavels_printed_jct(
    shared_data, trace, policy, gavel_policy, cluster
) -> None:  # type: ignore[no-untyped-def]
    from tests.test_gavel_fidelity import ours

    directory = "shockwave" if trace.startswith("shockwave") else "gavel/generated"
    v100, p100, k80 = cluster.split(":")
    mine = ours(
        shared_data / "traces" / directory / f"{trace}.trace",
        policy,
        f"v100:{v100},p100:{p100},k80:{k80}",
        0,
    )
    theirs = gavel_run(trace, gavel_policy, cluster)["average_jct_s"]
    assert abs(mine / theirs - 1) < 0.05, (mine, theirs)


def test_ftf_on_its_one_known_miss_stays_within_10_percent(shared_data) -> None:  # type: ignore[no-untyped-def]
    """``shockwave_120jobs_100`` at 8:4:12 under ``gavel-ftf``: measured −9.44 %, outside the
    5 % target. On this input Gavel's own problem, rescaled by a constant (which changes
    nothing mathematically), gives ECOS answers from +0.0 % to −7.5 % (docs/gavel-fidelity.md,
    section 22b), so no fixed tie-break rule can promise 5 %. This bounds it at 10 % so that
    a regression shows."""
    from tests.test_gavel_fidelity import ours

    path = shared_data / "traces" / "shockwave" / "shockwave_120jobs_100.trace"
    mine = ours(path, "gavel-ftf", "v100:8,p100:4,k80:12", 0)
    theirs = gavel_run("shockwave_120jobs_100", "finish_time_fairness_perf", "8:4:12")
    assert abs(mine / theirs["average_jct_s"] - 1) < 0.10, (mine, theirs)


# ---------------------------------------------------------------------------------------------
# gavel-mmf-packed (--compat gavel) against Gavel's max_min_fairness_packed
# (docs/gavel-fidelity.md, section 23). Gavel's packed LP cannot run a trace with jobs of
# different scale factors (its objective reshape assumes every job is in as many combinations),
# so its inputs are single-GPU: the 500-job generated trace, and shockwave_120jobs_100 with
# every scale factor set to 1 (fixture names ``shockwave_120jobs_100_sf1`` and likewise 220).
# ---------------------------------------------------------------------------------------------


def packed_trace(shared_data: Path, trace: str, tmp_path: Path) -> Path:
    if not trace.endswith("_sf1"):
        return shared_data / "traces" / "gavel" / "generated" / f"{trace}.trace"
    src = shared_data / "traces" / "shockwave" / f"{trace.removesuffix('_sf1')}.trace"
    lines = []
    for line in src.read_text().splitlines():
        fields = line.split("\t")
        fields[6] = "1"  # field 7, the scale factor
        lines.append("\t".join(fields))
    out = tmp_path / f"{trace}.trace"
    out.write_text("\n".join(lines) + "\n")
    return out


@pytest.mark.parametrize(
    ("trace", "cluster", "seed"),
    [
        # measured (centre, the --compat gavel default, on gavel-gandiva's rounds): +0.22 %,
        # -1.03 %; +0.04 %, +2.16 %, +0.35 %, +0.04 % (seed 1: Gavel never shuffles the types for
        # a 'Packing' policy and prints the same number); -2.57 %. The 500-job trace at 8:4:12
        # measured +0.23 % and at seed 1 +0.22 %. The 500-job rows take about half a minute
        # each (many co-location pairs, so large centre problems): they are marked ``long``
        # and run by ``make fidelity``, not ``make test``.
        *(
            pytest.param("gavel_synth_single_lam600_n500", c, s, marks=pytest.mark.long)
            for c, s in (("8:8:8", 0), ("4:4:4", 0), ("8:4:12", 0), ("8:8:8", 1))
        ),
        ("shockwave_120jobs_100_sf1", "8:8:8", 0),
        ("shockwave_120jobs_100_sf1", "8:4:12", 0),
        ("shockwave_120jobs_100_sf1", "4:4:4", 0),
        ("shockwave_120jobs_100_sf1", "8:8:8", 1),
        ("shockwave_220jobs_100_sf1", "8:8:8", 0),
    ],
)
def test_mmf_packed_is_within_5_percent_of_gavels_printed_jct(
    shared_data: Path, tmp_path: Path, trace: str, cluster: str, seed: int
) -> None:
    from tests.test_gavel_fidelity import ours

    v100, p100, k80 = cluster.split(":")
    path = packed_trace(shared_data, trace, tmp_path)
    mine = ours(path, "gavel-mmf-packed", f"v100:{v100},p100:{p100},k80:{k80}", seed)
    theirs = gavel_run(trace, "max_min_fairness_packed", cluster, seed)["average_jct_s"]
    assert abs(mine / theirs - 1) < 0.05, (mine, theirs)


# ---------------------------------------------------------------------------------------------
# gavel-gandiva (packing: random pairs time-sliced by Gavel's rounds) against every `gandiva`
# run of the fixture, seeds included (docs/gavel-fidelity.md, section 18)
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("trace", "cluster", "seed"),
    [
        # measured (branch gandivafid): 9 of the 10 to Gavel's printed digit (3 decimals), the
        # first one +0.003 s of 24,163.749 s
        ("shockwave_120jobs_100", "8:8:8", 0),
        ("gavel_synth_multigpu_lam900_n100", "8:8:8", 0),
        ("shockwave_220jobs_100", "8:8:8", 0),
        ("gavel_synth_single_lam600_n500", "8:8:8", 0),
        ("shockwave_120jobs_100", "8:4:12", 0),
        ("gavel_synth_multigpu_lam900_n100", "8:4:12", 0),
        ("shockwave_120jobs_100", "4:4:4", 0),
        ("gavel_synth_multigpu_lam900_n100", "4:4:4", 0),
        # Gavel's --seed 1 (other random pairs)
        ("shockwave_120jobs_100", "8:8:8", 1),
        ("gavel_synth_multigpu_lam900_n100", "8:8:8", 1),
    ],
)
def test_gavel_gandiva_reproduces_gavels_printed_jct(
    shared_data, trace: str, cluster: str, seed: int
) -> None:  # type: ignore[no-untyped-def]
    from tests.test_gavel_fidelity import ours

    directory = "shockwave" if trace.startswith("shockwave") else "gavel/generated"
    v100, p100, k80 = cluster.split(":")
    mine = ours(
        shared_data / "traces" / directory / f"{trace}.trace",
        "gavel-gandiva",
        f"v100:{v100},p100:{p100},k80:{k80}",
        seed,
    )
    theirs = gavel_run(trace, "gandiva", cluster, seed)["average_jct_s"]
    # the target is 5 %; the bound is far tighter so that any change of rule shows
    assert abs(mine / theirs - 1) < 1e-4, (mine, theirs)
