"""Gavel's LP policies (scheduling/gavel_lp.py) on instances solved on paper, invariants on
random instances, fallbacks, parameters, and runs through the engine.

The paper instance (all policies): two types A and B with one device each, two one-device
jobs, job 0 runs at 3 steps/s on A and 1 on B, job 1 at 1 on A and cannot run on B:

    thr = [[3, 1],
           [1, 0]]          X = [[a0, b0], [a1, 0]],  a0 + a1 <= 1,  a0 + b0 <= 1,  a1 <= 1.
"""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clustersim.engine import simulate
from clustersim.metrics import summary
from scheduling.allocation import check_allocation
from scheduling.gavel_lp import (
    GavelFIFOHet,
    GavelFTF,
    GavelHierarchical,
    GavelLP,
    GavelMakespan,
    GavelMaxThroughput,
    GavelMinCost,
    GavelMinCostSLO,
    GavelMMF,
)
from scheduling.params import policy_errors
from scheduling.registry import POLICIES, make_policy
from tests.simple import FixedRates, acc, cluster, jobs

THR = np.array([[3.0, 1.0], [1.0, 0.0]])
NAN = float("nan")


def fake_state(
    thr: np.ndarray = THR,
    gpus: tuple[int, ...] = (1, 1),
    cap: tuple[int, ...] = (1, 1),
    remaining: tuple[float, ...] = (3.0, 1.0),
    deadline: tuple[float, ...] | None = None,
    priority: tuple[int, ...] | None = None,
    prices: tuple[float, ...] = (1.0, 1.0),
    now: float = 0.0,
    users: tuple[str, ...] | None = None,
) -> Any:
    k, nt = thr.shape
    names = [chr(ord("A") + t) for t in range(nt)]
    cl = cluster([(n, c) for n, c in zip(names, cap, strict=True)])
    cl = dataclasses.replace(
        cl, types=tuple(acc(n, price=p) for n, p in zip(names, prices[:nt], strict=True))
    )
    table = SimpleNamespace(
        num_gpus=np.array(gpus, dtype=np.int64),
        priority=np.array(priority or (0,) * k, dtype=np.int64),
        deadline=np.array(deadline or (NAN,) * k, dtype=np.float64),
        submit_time=np.zeros(k),
        user=np.array(users or ("",) * k, dtype=object),
        vc=np.array(("",) * k, dtype=object),
    )
    return SimpleNamespace(
        rate=thr,
        jobs=table,
        capacity=np.array(cap, dtype=np.int64),
        cluster=cl,
        now=now,
        remaining=np.array(remaining, dtype=np.float64),
    )


def allocate(policy: GavelLP | GavelFIFOHet, state: Any) -> np.ndarray:
    policy.reset(np.random.default_rng(0))
    return policy.allocation(state, np.arange(len(state.rate), dtype=np.int64))


# ---------------------------------------------------------------- hand-worked instances


@pytest.mark.parametrize("spread", [True, False])
def test_mmf_on_paper(spread: bool) -> None:
    # proportional throughputs (time split 1:1 over A and B): p0 = 2, p1 = 1/2, so the
    # normalised throughputs are f0 = (3 a0 + b0)/2 and f1 = a1/(1/2) = 2 a1.
    # f1 >= z needs a1 >= z/2, so a0 <= 1 - z/2, b0 <= 1 - a0 and f0 <= (1 + 2 a0)/2.
    # Equal at a0 = 1/2: f0 = f1 = 1; any larger z breaks one of them: X unique.
    # (the second phase of ``spread`` keeps the level to 1e-6 relative: X to about 1e-6)
    x = allocate(GavelMMF(spread=spread), fake_state())
    np.testing.assert_allclose(x, [[0.5, 0.5], [0.5, 0.0]], atol=1e-5)


def test_mmf_priority_weight_halves_a_jobs_claim() -> None:
    # weight 2 on job 1: maximise min(f0, f1 / 2) -> (1 + 2 a0)/2 = (1 - a0) -> a0 = 1/4
    x = allocate(GavelMMF(), fake_state(priority=(1, 2)))
    np.testing.assert_allclose(x, [[0.25, 0.75], [0.75, 0.0]], atol=1e-5)


def test_mmf_spread_uses_capacity_the_bottleneck_leaves() -> None:
    # job 1 alone can run only on A; job 0 (gang of 2) cannot fit anywhere (one device per
    # type), so job 1 is the only live job... give job 0 throughput 0 everywhere instead:
    thr = np.array([[0.0, 0.0], [1.0, 1.0], [2.0, 2.0]])
    st = fake_state(thr=thr, gpus=(1, 1, 1), remaining=(1.0, 1.0, 1.0))
    x = allocate(GavelMMF(), st)
    assert x[0].tolist() == [0.0, 0.0]  # never on a zero-throughput type
    np.testing.assert_allclose(x[1:].sum(axis=1), [1.0, 1.0], atol=1e-7)


def test_max_throughput_on_paper() -> None:
    # maximise 3 a0 + b0 + a1 with b0 = 1 - a0 and a1 = 1 - a0: 2 + a0 -> a0 = 1, objective 3
    x = allocate(GavelMaxThroughput(), fake_state())
    np.testing.assert_allclose(x, [[1.0, 0.0], [0.0, 0.0]], atol=1e-9)


def test_min_cost_on_paper() -> None:
    # A costs 3, B costs 1: maximise (3/3) a0 + (1/1) b0 + (1/3) a1 = (a0 + b0) + a1/3;
    # a0 + b0 <= 1 and a1 <= 1 - a0, so the optimum 4/3 needs b0 = 1, a1 = 1: unique
    x = allocate(GavelMinCost(), fake_state(prices=(3.0, 1.0)))
    np.testing.assert_allclose(x, [[0.0, 1.0], [1.0, 0.0]], atol=1e-9)


def test_min_cost_slo_on_paper() -> None:
    # job 0 needs 2000 steps in 1000 s: 3 a0 + b0 >= 2; with b0 = 1 - a0 that is a0 >= 1/2;
    # the objective (a0 + b0) + a1/3 with a1 = 1 - a0 prefers the smallest a0: a0 = 1/2
    p = GavelMinCostSLO()
    st = fake_state(prices=(3.0, 1.0), remaining=(2000.0, 1.0), deadline=(1000.0, NAN))
    x = allocate(p, st)
    np.testing.assert_allclose(x, [[0.5, 0.5], [0.5, 0.0]], atol=1e-7)
    assert p.stats()["lp_fallbacks"] == 0


def test_min_cost_slo_infeasible_falls_back_to_no_slos_and_counts_it() -> None:
    # 4000 steps in 1000 s needs 4 steps/s > 3, the most job 0 can get: Gavel drops the SLO
    # rows and solves min-cost alone (the answer of test_min_cost_on_paper)
    p = GavelMinCostSLO()
    st = fake_state(prices=(3.0, 1.0), remaining=(4000.0, 1.0), deadline=(1000.0, NAN))
    x = allocate(p, st)
    np.testing.assert_allclose(x, [[0.0, 1.0], [1.0, 0.0]], atol=1e-9)
    assert p.stats() == {
        "lp_solves": 2.0,
        "lp_solver_s": pytest.approx(p.stats()["lp_solver_s"]),
        "lp_fallbacks": 1.0,
    }


def test_min_cost_slo_ignores_passed_deadlines() -> None:
    p = GavelMinCostSLO()
    st = fake_state(prices=(3.0, 1.0), remaining=(4000.0, 1.0), deadline=(10.0, NAN), now=20.0)
    np.testing.assert_allclose(allocate(p, st), [[0.0, 1.0], [1.0, 0.0]], atol=1e-9)
    assert p.stats()["lp_solves"] == 1 and p.stats()["lp_fallbacks"] == 0


@pytest.mark.parametrize("spread", [True, False])
def test_makespan_on_paper(spread: bool) -> None:
    # remaining 3 and 1 steps; z = 1/T: 3 a0 + b0 >= 3 z and a1 >= z.
    # b0 = 1 - a0, a1 = 1 - a0: z = min((1 + 2 a0)/3, 1 - a0), equal at a0 = 2/5: z = 3/5,
    # T = 5/3 s; both rows are tight so X is unique
    x = allocate(GavelMakespan(spread=spread), fake_state())
    np.testing.assert_allclose(x, [[0.4, 0.6], [0.6, 0.0]], atol=1e-5)


def test_makespan_groups_jobs_of_one_class_with_close_remaining_work() -> None:
    # two identical jobs (1 GPU, 2 steps/s on the one type, one device) with 100 and 102
    # steps left. Exact: x0 + x1 <= 1 and 2 x0 / 100 = 2 x1 / 102 at the optimum, so
    # x0 = 100/202, x1 = 102/202, makespan 202 / 2 = 101 s. group_tol 0.05: 100 and 102 fall
    # in one band (floor(ln R / ln 1.05) = 94 for both), solved as one row of two jobs with
    # R = 102: x = 1/2 each, makespan 102 / (2 x 1/2) = 102 s <= 1.05 x 101 s.
    thr = np.array([[2.0], [2.0]])
    st = fake_state(thr=thr, cap=(1,), remaining=(100.0, 102.0), prices=(1.0,))
    exact = allocate(GavelMakespan(group_tol=0.0, spread=False), st)
    np.testing.assert_allclose(exact, [[100 / 202], [102 / 202]], atol=1e-9)
    grouped = allocate(GavelMakespan(group_tol=0.05, spread=False), st)
    np.testing.assert_allclose(grouped, [[0.5], [0.5]], atol=1e-9)
    # remaining 100 and 120 are bands apart: one row each, the exact answer
    st2 = fake_state(thr=thr, cap=(1,), remaining=(100.0, 120.0), prices=(1.0,))
    np.testing.assert_allclose(
        allocate(GavelMakespan(group_tol=0.05, spread=False), st2),
        [[100 / 220], [120 / 220]],
        atol=1e-9,
    )


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**31 - 1), st.sampled_from([0.01, 0.05, 0.2]))
def test_makespan_of_grouped_rows_is_within_the_tolerance_of_the_optimum(
    seed: int, tol: float
) -> None:
    # jobs of three classes (throughput rows) with random remaining work: the makespan of
    # the grouped allocation is at most (1 + tol) times the exact one, and it is feasible
    rng = np.random.default_rng(seed)
    k = int(rng.integers(2, 25))
    rows = np.array([[3.0, 1.0], [2.0, 2.0], [1.0, 0.5]])
    cls = rng.integers(0, 3, size=k)
    thr = rows[cls]
    gpus = tuple(int(g) for g in np.array([1, 2, 1])[cls])
    rem = tuple(float(r) for r in rng.uniform(10.0, 1000.0, size=k))
    state = fake_state(thr=thr, gpus=gpus, cap=(4, 4), remaining=rem)

    def makespan(x: np.ndarray) -> float:
        return float(np.max(np.array(rem) / np.einsum("jt,jt->j", thr, x)))

    exact = allocate(GavelMakespan(group_tol=0.0, spread=False), state)
    grouped = allocate(GavelMakespan(group_tol=tol, spread=False), state)
    assert (
        check_allocation(grouped, thr, np.array(gpus, dtype=np.float64), np.array([4.0, 4.0])) == []
    )
    assert makespan(grouped) <= (1 + tol) * makespan(exact) * (1 + 1e-7)


def test_ftf_on_paper() -> None:
    # isolated allocation: half of each device to each job -> iso0 = (3 + 1)/2 = 2,
    # iso1 = 1/2; with no time elapsed rho0 = (3/(3 a0 + b0)) / (3/2) = 2/(1 + 2 a0) and
    # rho1 = (1/a1) / 2 = 1/(2 (1 - a0)): equal at a0 = 1/2, rho* = 1, X unique.
    # Bisection stops within rel_tol of rho*: X within about rel_tol of the optimum.
    x = allocate(GavelFTF(rel_tol=1e-6), fake_state())
    np.testing.assert_allclose(x, [[0.5, 0.5], [0.5, 0.0]], atol=1e-4)


def test_ftf_counts_isolated_time_earned_between_recomputations() -> None:
    p = GavelFTF()
    allocate(p, fake_state())  # first call: remaining (3, 1), iso (2, 1/2)
    st = fake_state(remaining=(1.0, 1.0))
    p.allocation(st, np.arange(2, dtype=np.int64))
    # job 0 did 2 steps at an isolated throughput of 2: one second of isolated time earned
    assert p._cum_iso == {0: pytest.approx(1.0), 1: 0.0}


def test_fifo_het_takes_each_jobs_fastest_free_type_in_order() -> None:
    # job 0 takes A (3 > 1); A is then full; job 1 can only use B, where it has throughput
    # 0: skipped (Gavel's fifo_perf)
    x = allocate(GavelFIFOHet(), fake_state())
    assert x.tolist() == [[1.0, 0.0], [0.0, 0.0]]


def test_fifo_het_stops_at_the_first_job_that_fits_nowhere() -> None:
    thr = np.array([[1.0, 2.0], [1.0, 1.0], [5.0, 5.0]])
    x = allocate(GavelFIFOHet(), fake_state(thr=thr, gpus=(1, 2, 1), remaining=(1, 1, 1)))
    # job 0 -> B; job 1 (gang 2) fits nowhere: FIFO stops, job 2 waits although A is free
    assert x.tolist() == [[0.0, 1.0], [0.0, 0.0], [0.0, 0.0]]


def hier_state() -> Any:
    # one type with 2 devices, every throughput 1 (so normalised throughput = time share);
    # user u has jobs 0 and 1, user v job 2
    return fake_state(
        thr=np.ones((3, 1)), gpus=(1, 1, 1), cap=(2,), remaining=(1, 1, 1), users=("u", "u", "v")
    )


def test_hierarchical_fairness_on_paper() -> None:
    # weights: u's jobs 1/2 each, v's job 1; maximise z with x_j >= z w_j:
    # z/2 + z/2 + z <= 2 -> z = 1: x = (1/2, 1/2, 1), the cluster is full, all frozen.
    # (plain max-min fairness would give every job 2/3)
    x = allocate(GavelHierarchical(entity="user"), hier_state())
    np.testing.assert_allclose(x, [[0.5], [0.5], [1.0]], atol=1e-7)
    np.testing.assert_allclose(allocate(GavelMMF(), hier_state()), [[2 / 3]] * 3, atol=1e-5)


def test_hierarchical_fifo_within_users_on_paper() -> None:
    # weights: job 0 (u's first) 1, job 1 0, job 2 1 -> x0 = x2 = 1 (row sums), frozen;
    # next iteration job 1 gets u's weight but no capacity is left: x1 = 0
    x = allocate(GavelHierarchical(entity="user", within="fifo"), hier_state())
    np.testing.assert_allclose(x, [[1.0], [0.0], [1.0]], atol=1e-7)


def test_hierarchical_fifo_stopped_after_one_iteration_keeps_its_allocation() -> None:
    p = GavelHierarchical(entity="user", within="fifo", max_iterations=1)
    np.testing.assert_allclose(allocate(p, hier_state()), [[1.0], [0.0], [1.0]], atol=1e-7)
    assert p.stats()["lp_solves"] == 1  # one LP per level (bottlenecks from its duals)


def test_hierarchical_by_vc_with_one_vc_is_plain_fairness() -> None:
    x = allocate(GavelHierarchical(entity="vc"), hier_state())
    np.testing.assert_allclose(x, [[2 / 3]] * 3, atol=1e-6)


def normalised(x: np.ndarray, thr: np.ndarray, cap: np.ndarray) -> np.ndarray:
    prop = thr @ (cap / cap.sum())
    f = np.einsum("jt,jt->j", thr, x)
    return np.divide(f, prop, out=np.zeros_like(f), where=prop > 0)


def test_hierarchical_levels_on_paper_with_a_job_that_cannot_use_its_share() -> None:
    # Types A, B with one device each; u has jobs 0 and 1, v has job 2. Job 0 runs only on
    # A (throughput 1 there, 0 on B), jobs 1 and 2 run at 1 on both. Proportional
    # throughputs: job 0 1/2, jobs 1 and 2 1, so f0 = 2 a0, f1 = a1 + b1, f2 = a2 + b2.
    # Level 1, weights 1/2, 1/2, 1: f0 = z/2, f1 = z/2, f2 = z; capacity a0 + a1 + a2 +
    # b1 + b2 <= 2 with a0 = z/4: z/4 + z/2 + z = 2 -> z = 8/7, and nothing binds a single
    # job (row sums: f2 = 8/7 needs a2 + b2 = 8/7 > 1!) -- so the row sum of job 2 binds
    # first: f2 <= 1 -> z = 1 with f = (1/2, 1/2, 1), capacity used 1/4 + 1/2 + 1 = 7/4.
    # Job 2 is frozen (row sum); level 2: u's jobs keep weights 1/2 each, raise by z':
    # f0 = (1 + z')/2, f1 = (1 + z')/2, a0 = f0/2, capacity f0/2 + f1 + 1 <= 2 ->
    # 3 (1 + z')/4 = 1 -> z' = 1/3: f = (2/3, 2/3, 1), the cluster full.
    thr = np.array([[1.0, 0.0], [1.0, 1.0], [1.0, 1.0]])
    cap = np.array([1.0, 1.0])
    state = fake_state(
        thr=thr, gpus=(1, 1, 1), cap=(1, 1), remaining=(1, 1, 1), users=("u", "u", "v")
    )
    for fill in ("_water_fill", "_water_fill_highs", "_water_fill_two_lps"):
        p = GavelHierarchical(entity="user")
        p.reset(np.random.default_rng(0))
        p._water_fill = getattr(p, fill)  # type: ignore[method-assign]
        x = p.allocation(state, np.arange(3, dtype=np.int64))
        np.testing.assert_allclose(normalised(x, thr, cap), [2 / 3, 2 / 3, 1.0], atol=1e-6)


@settings(max_examples=60, deadline=None)
@given(
    k=st.integers(1, 8),
    nt=st.integers(1, 3),
    seed=st.integers(0, 10_000),
    within=st.sampled_from(["fairness", "fifo"]),
)
def test_hierarchical_one_lp_per_level_matches_the_two_lp_water_filling(
    k: int, nt: int, seed: int, within: str
) -> None:
    # The fast paths (one warm-started LP per level, bottlenecks from its duals: on the
    # dense simplex kernel and in HiGHS) and the straightforward one (an LP per level from
    # scratch, then the bottleneck LP) reach the same water-filling levels: every job's
    # normalised throughput agrees to within the bottleneck LP's slack (it freezes a job
    # that cannot rise by slack relative, the duals one that cannot rise at all; near level
    # 0 by slack absolute). Allocations may differ where the LP's optimum is not unique.
    rng = np.random.default_rng(seed)
    thr = rng.choice([0.0, 0.5, 1.0, 2.0, 3.0], size=(k, nt))
    thr[rng.random(k) < 0.5] = rng.choice([1.0, 2.0], size=nt)  # some identical jobs
    gpus = tuple(int(g) for g in rng.choice([1, 1, 2, 4], size=k))
    cap = tuple(int(c) for c in rng.integers(1, 5, size=nt))
    users = tuple(str(u) for u in rng.choice(["u", "v", "w"], size=k))
    prio = tuple(int(q) for q in rng.choice([0, 1, 2], size=k))
    state = fake_state(
        thr=thr,
        gpus=gpus,
        cap=cap,
        remaining=(1.0,) * k,
        users=users,
        priority=prio,
        prices=(1.0,) * nt,
    )
    out = {}
    for fill in ("_water_fill", "_water_fill_highs", "_water_fill_two_lps"):
        p = GavelHierarchical(entity="user", within=within, slack=1e-5)
        p.reset(np.random.default_rng(0))
        p._water_fill = getattr(p, fill)  # type: ignore[method-assign]
        x = p.allocation(state, np.arange(k, dtype=np.int64))
        assert check_allocation(x, thr, np.array(gpus, float), np.array(cap, float)) == []
        assert p.stats()["lp_fallbacks"] == 0
        assert p.dense_failures == 0
        out[fill] = x
    live = thr @ np.array(cap, float) > 0
    capf = np.array(cap, float)
    ref = normalised(out["_water_fill_two_lps"], thr, capf)[live]
    for fill in ("_water_fill", "_water_fill_highs"):
        fast = normalised(out[fill], thr, capf)[live]
        np.testing.assert_allclose(fast, ref, rtol=1e-4, atol=1e-7)


def hier_random_state(seed: int, k: int, nt: int) -> tuple[Any, np.ndarray]:
    """A random hierarchical instance (as the hypothesis test above draws them)."""
    rng = np.random.default_rng(seed)
    thr = rng.choice([0.0, 0.5, 1.0, 2.0, 3.0], size=(k, nt))
    thr[rng.random(k) < 0.5] = rng.choice([1.0, 2.0], size=nt)
    state = fake_state(
        thr=thr,
        gpus=tuple(int(g) for g in rng.choice([1, 1, 2, 4], size=k)),
        cap=tuple(int(c) for c in rng.integers(1, 5, size=nt)),
        remaining=(1.0,) * k,
        users=tuple(str(u) for u in rng.choice(["u", "v", "w"], size=k)),
        priority=tuple(int(q) for q in rng.choice([0, 1, 2], size=k)),
        prices=(1.0,) * nt,
    )
    return state, thr


@pytest.mark.parametrize("within", ["fairness", "fifo"])
def test_hierarchical_dense_kernel_compiled_matches_its_python_source(within: str) -> None:
    # The water filling's simplex kernel gives the same allocation, bit for bit, compiled
    # and as plain Python (the same operations in the same order).
    from clustersim import kernels

    was = kernels.compiled_in_use()
    out: dict[bool, list[np.ndarray]] = {}
    try:
        for compiled in (False, True):
            if compiled and not kernels.use_compiled():
                pytest.skip("numba not installed")  # (the product pins it)
            if not compiled:
                kernels.use_compiled(False)
            xs = []
            for seed in range(25):
                state, _ = hier_random_state(seed, 2 + seed % 9, 1 + seed % 3)
                p = GavelHierarchical(entity="user", within=within)
                xs.append(allocate(p, state))
                assert p.dense_failures == 0
            out[compiled] = xs
    finally:
        kernels.use_compiled(was)
    for a, b in zip(out[False], out[True], strict=True):
        assert np.array_equal(a, b)


def test_hierarchical_dense_kernel_hands_over_to_highs(monkeypatch: pytest.MonkeyPatch) -> None:
    # The kernel's checked fallback: a pivot limit it cannot meet (0) sends every
    # recomputation to HiGHS's warm-started path, counted; so do more classes than the
    # dense tableau takes (not counted: by design). Same levels either way.
    import scheduling.gavel_lp as gl

    thr = np.array([[1.0, 0.0], [1.0, 1.0], [1.0, 1.0]])
    state = fake_state(
        thr=thr, gpus=(1, 1, 1), cap=(1, 1), remaining=(1, 1, 1), users=("u", "u", "v")
    )
    cap = np.array([1.0, 1.0])
    p = GavelHierarchical(entity="user")
    x = allocate(p, state)
    assert p.dense_failures == 0 and p.stats()["lp_solves"] == 2  # two levels (on paper above)
    monkeypatch.setattr(gl, "DENSE_MAX_PIVOTS", 0)
    q = GavelHierarchical(entity="user")
    y = allocate(q, state)
    assert q.dense_failures == 1 and q.stats()["lp_fallbacks"] == 0
    monkeypatch.setattr(gl, "DENSE_MAX_PIVOTS", 2000)
    monkeypatch.setattr(gl, "DENSE_MAX_CLASSES", 1)
    r = GavelHierarchical(entity="user")
    z = allocate(r, state)
    assert r.dense_failures == 0
    for alloc in (x, y, z):
        np.testing.assert_allclose(normalised(alloc, thr, cap), [2 / 3, 2 / 3, 1.0], atol=1e-6)


# ---------------------------------------------------------------- invariants


LP_POLICIES = [
    GavelMMF,
    GavelMaxThroughput,
    GavelMinCost,
    GavelMinCostSLO,
    GavelMakespan,
    GavelFTF,
    GavelHierarchical,
]


@settings(max_examples=30, deadline=None)
@given(
    k=st.integers(1, 6),
    seed=st.integers(0, 10_000),
    which=st.sampled_from(range(len(LP_POLICIES))),
)
def test_allocations_keep_the_base_constraints(k: int, seed: int, which: int) -> None:
    rng = np.random.default_rng(seed)
    thr = rng.integers(0, 4, (k, 3)).astype(float)
    gpus = tuple(int(g) for g in rng.choice([1, 2, 4], k))
    cap = (4, 2, 1)
    deadline = tuple(float(d) for d in np.where(rng.random(k) < 0.5, rng.uniform(1, 50, k), NAN))
    st_ = fake_state(
        thr=thr,
        gpus=gpus,
        cap=cap,
        remaining=tuple(float(r) for r in rng.uniform(1, 100, k)),
        deadline=deadline,
        prices=(3.0, 2.0, 1.0),
    )
    x = allocate(LP_POLICIES[which](), st_)
    assert check_allocation(x, thr, np.array(gpus, float), np.array(cap, float)) == []


@settings(max_examples=30, deadline=None)
@given(thr=st.lists(st.integers(1, 4), min_size=4, max_size=4))
def test_mmf_level_matches_a_grid_search(thr: list[int]) -> None:
    # brute force: the max-min level over a 1/40 grid of (a0, b0, a1, b1) never beats HiGHS's
    # and comes within the grid's resolution of it
    T = np.array(thr, dtype=float).reshape(2, 2)
    x = allocate(GavelMMF(spread=False), fake_state(thr=T))
    prop = T @ np.array([0.5, 0.5])
    level = float(((T * x).sum(axis=1) / prop).min())
    g = np.linspace(0, 1, 41)
    a0, b0, a1, b1 = np.meshgrid(g, g, g, g, indexing="ij", sparse=True)
    ok = (a0 + a1 <= 1) & (b0 + b1 <= 1) & (a0 + b0 <= 1) & (a1 + b1 <= 1)
    f = np.minimum((T[0, 0] * a0 + T[0, 1] * b0) / prop[0], (T[1, 0] * a1 + T[1, 1] * b1) / prop[1])
    best = float(np.where(ok, f, -np.inf).max())
    assert best <= level + 1e-9
    assert level - best <= 4 * max(T.max() / prop.min(), 1.0) / 40


def test_identical_jobs_get_identical_rows() -> None:
    # four identical jobs on 2 + 1 devices: how the 3 devices are shared among them is not
    # unique per job, but solving over job classes gives every job the same row whatever the
    # solver's vertex: each gets 2/4 of A and 1/4 of B (the whole cluster is used)
    thr = np.tile([[2.0, 1.0]], (4, 1))
    x = allocate(GavelMMF(), fake_state(thr=thr, gpus=(1,) * 4, cap=(2, 1), remaining=(1,) * 4))
    np.testing.assert_allclose(x, np.tile([[0.5, 0.25]], (4, 1)), atol=1e-9)


# ---------------------------------------------------------------- fallback and parameters


def test_failing_solver_falls_back_and_is_counted(monkeypatch: pytest.MonkeyPatch) -> None:
    p = GavelMMF()
    p.reset(np.random.default_rng(0))

    def broken(*args: object, **kw: object) -> object:
        raise RuntimeError("numerical trouble")

    monkeypatch.setattr(p._lp, "_core", broken)
    monkeypatch.setattr(p._lp, "_linprog", broken)
    st_ = fake_state()
    x = p.allocation(st_, np.arange(2, dtype=np.int64))
    # Gavel's isolated allocation without the type job 1 cannot use
    np.testing.assert_allclose(x, [[0.5, 0.5], [0.5, 0.0]])
    assert p.stats()["lp_fallbacks"] == 1 and p.stats()["lp_solves"] == 1


def test_a_run_reports_lp_counters_in_its_summary() -> None:
    cl = cluster([("A", 2), ("B", 2)])
    tab = jobs([(0.0, 1, 50.0), (0.0, 2, 80.0), (10.0, 1, 30.0)])
    rates = FixedRates(rate=np.array([[1.0, 0.5], [2.0, 1.0], [1.0, 1.0]]), restore_s=np.zeros(3))
    res = simulate(
        tab, cl, make_policy("gavel-mmf", round_s=10.0, reset_interval_s=0.0), rates=rates
    )
    s = summary(res)
    assert s["jobs_completed"] == 3
    assert isinstance(s["lp_solves"], int) and s["lp_solves"] >= 2
    assert s["lp_fallbacks"] == 0 and isinstance(s["lp_solver_s"], float)
    other = summary(simulate(tab, cl, make_policy("fifo"), rates=rates))
    assert (other["lp_solves"], other["lp_solver_s"], other["lp_fallbacks"]) == (0, 0.0, 0)


@pytest.mark.parametrize(
    ("name", "params", "bad"),
    [
        ("gavel-mmf", {"round_s": 0}, "round_s"),
        ("gavel-ftf", {"rel_tol": 0.0}, "rel_tol"),
        ("gavel-ftf", {"rel_tol": 2.0}, "rel_tol"),
        ("gavel-makespan", {"reset_interval_s": -1}, "reset_interval_s"),
        ("gavel-mmf", {"spread": "yes"}, "spread"),
        ("gavel-hierarchical", {"entity": "team"}, "entity"),
        ("gavel-hierarchical", {"within": "lifo"}, "within"),
        ("gavel-hierarchical", {"slack": 0}, "slack"),
        ("gavel-hierarchical", {"max_iterations": -1}, "max_iterations"),
        ("gavel-gandiva", {"round_s": -5}, "round_s"),
        ("gavel-mmf-packed", {"reset_interval_s": -1}, "reset_interval_s"),
        ("gavel-mmf-packed", {"seed": "x"}, "seed"),
    ],
)
def test_parameter_out_of_range_names_it(name: str, params: dict[str, object], bad: str) -> None:
    errors = policy_errors(name, params, "policies[0]")
    assert errors and bad in " ".join(errors)


@pytest.mark.parametrize(
    "name",
    [
        "gavel-fifo",
        "gavel-las",
        "gavel-mmf",
        "gavel-ftf",
        "gavel-max-throughput",
        "gavel-makespan",
        "gavel-min-cost",
        "gavel-min-cost-slo",
        "gavel-fifo-het",
        "gavel-hierarchical",
    ],
)
def test_only_the_agnostic_baselines_shuffle_the_type_order(name: str) -> None:
    # Gavel's scheduler shuffles the types each round only for policies without "Perf" in
    # their name (fifo, max_min_fairness); the *_perf ones visit v100, p100, k80 in order
    cls = POLICIES[name]
    assert cls.shuffle_types == (name in ("gavel-fifo", "gavel-las"))  # type: ignore[attr-defined]


# ---------------------------------------------------------------- a hand-worked trace


@pytest.mark.parametrize("spread", [True, False])
def test_mmf_trace_finishes_as_worked_by_hand(spread: bool) -> None:
    from scheduling.registry import make_policy
    from tests.simple import FixedRates, cluster, jobs

    # Types F and S, one device each. A (work 100) runs only on F (rate 1, 0 on S); B (work
    # 300) runs at rate 1 on both. Proportional throughputs: A (1·1 + 0·1)/2 = 0.5, B 1.
    # Normalised throughputs: A's 2a (a = A's share of F), B's X_BF + X_BS ≤ 1 (its row), so
    # the max-min level is 1, reached by every a in [0.5, 1] (B takes X_BF ≤ 1 − a on F and
    # the rest on S). The spread phase maximises 2a + X_BF + X_BS at that level:
    # a = 1, B on S (sum 3). Both then run alone every round: A ends at 100, and B, alone
    # from 100 on at rate 1 wherever it goes, at 300.
    cl = cluster([("F", 1), ("S", 1)])
    table = jobs([(0.0, 1, 100.0), (0.0, 1, 300.0)])
    rates = FixedRates(rate=np.array([[1.0, 0.0], [1.0, 1.0]]), restore_s=np.zeros(2))
    pol = make_policy("gavel-mmf", round_s=100.0, reset_interval_s=0.0, spread=spread)
    r = simulate(table, cl, pol, rates=rates)
    if spread:
        assert r.finish.tolist() == [100.0, 300.0]
    else:
        # one LP: HiGHS may stop at the other vertex, a = 0.5 with B half on F, half on S;
        # B still finishes at 300 (rate 1 everywhere) and A no later than 200 (half of F)
        assert r.finish[1] == 300.0 and 100.0 <= r.finish[0] <= 200.0


# ------------------------------------------------- hand-worked traces, one per LP policy
#
# Every trace below runs through the engine with fixed rates (work units per second per
# type, no restore cost), ``reset_interval_s = 0`` (the allocation is recomputed at the first
# round end after the job set changed) and Gavel's round mechanism: each round, every job's
# priority on a type is X / (its share of the time spent there since the recomputation, with
# half a round of credit), types are visited in catalog order (our type names are not Gavel's,
# so no v100/p100/k80 reordering), and on each type the jobs are placed by decreasing
# priority. A job with X = 0 on a type still fills a device left idle there (Gavel's
# scheduler skips priority-0 jobs only for FIFO). A job that ends mid-round leaves its device
# idle until the round ends, unless nothing else runs (then the round ends with it).


def _trace(
    name: str,
    types: list[tuple[str, int, float]],
    rows: list[tuple[float, int, float]],
    rate: list[list[float]],
    round_s: float,
    params: dict[str, Any] | None = None,
    **extra: Any,
) -> Any:
    """Run ``name`` on a cluster of ``(type, devices, price per hour)`` entries (one node
    each, catalog in that order) with the jobs ``(submit, gang, work)`` at fixed rates."""
    cl = cluster([(n, c) for n, c, _ in types])
    cl = dataclasses.replace(cl, types=tuple(acc(n, price=p) for n, _, p in types))
    table = jobs(rows, **extra)
    rates = FixedRates(rate=np.array(rate, dtype=np.float64), restore_s=np.zeros(len(rows)))
    pol = make_policy(name, round_s=round_s, reset_interval_s=0.0, **(params or {}))
    return simulate(table, cl, pol, rates=rates)


def test_max_throughput_trace_finishes_as_worked_by_hand() -> None:
    # Types F and S, one device each (visited F then S). Rates (F, S) and work:
    #   A (2, 1) 200,  B (1.5, 1) 300,  C (1, 0.25) 100.
    # t=0: maximise Σ thr·X. Over the matching polytope the optimum is a best assignment of
    #   jobs to devices: A-F + B-S = 2 + 1 = 3; A-F + C-S = 2.25; B-F + A-S = 2.5;
    #   B-F + C-S = 1.75; C-F + A-S = 2; C-F + B-S = 2 -> unique: A on F, B on S, C waits
    #   (max-throughput starves the job that is slow everywhere). A ends at 200 / 2 = 100.
    # t=100: {B, C}: B-F + C-S = 1.5 + 0.25 = 1.75 < C-F + B-S = 1 + 1 = 2 -> C on F, B stays
    #   on S. C ends at 100 + 100 / 1 = 200; B has done 200 of its 300 by then.
    # t=200: B alone: 1.5 b_F + b_S with b_F + b_S <= 1 -> b_F = 1: B moves to F and ends
    #   at 200 + 100 / 1.5 = 266.67.
    r = _trace(
        "gavel-max-throughput",
        [("F", 1, 1.0), ("S", 1, 1.0)],
        [(0.0, 1, 200.0), (0.0, 1, 300.0), (0.0, 1, 100.0)],
        [[2.0, 1.0], [1.5, 1.0], [1.0, 0.25]],
        round_s=100.0,
    )
    np.testing.assert_allclose(r.finish, [100.0, 200.0 + 100.0 / 1.5, 200.0], rtol=1e-12)
    np.testing.assert_allclose(r.type_time[1], [200.0 / 3.0, 200.0], rtol=1e-12)  # B: S, then F
    # The same jobs with S listed (so visited) first: the allocations are the same, but at
    # t=200 B, alone with X = 1 on F, is placed on S, the first type it can run on with a
    # device free (priority 0 there; Gavel's queue lists every job on every type, types in
    # order): it stays on S and ends at 200 + 100 / 1 = 300 while F idles.
    r = _trace(
        "gavel-max-throughput",
        [("S", 1, 1.0), ("F", 1, 1.0)],
        [(0.0, 1, 200.0), (0.0, 1, 300.0), (0.0, 1, 100.0)],
        [[1.0, 2.0], [1.0, 1.5], [0.25, 1.0]],
        round_s=100.0,
    )
    np.testing.assert_allclose(r.finish, [100.0, 300.0, 200.0], rtol=1e-12)


def test_min_cost_trace_finishes_as_worked_by_hand() -> None:
    # Types F ($3/h) and S ($1/h), one device each, visited F then S. Rates (F, S), work:
    #   A (4, 2) 400,  B (2, 1) 200.
    # Min-cost maximises Σ thr / price · X: A is worth 4/3 on F and 2 on S, B 2/3 and 1.
    # t=0: B-F + A-S = 2/3 + 2 = 8/3 beats A-F + B-S = 4/3 + 1 = 7/3 and A alone on S (2).
    #   Unique: with the duals 3/2 (row A), 2/3 (row B), 0 (column F), 1/2 (column S) the
    #   reduced costs of A-F (3/2 - 4/3 = 1/6) and B-S (2/3 + 1/2 - 1 = 1/6) are positive,
    #   so any optimum has a_F = b_S = 0 and then a_S = b_F = 1.
    #   B ends at 200 / 2 = 100; A has done 100 × 2 = 200 by then.
    # t=100: A alone: 4/3 a_F + 2 a_S -> a_S = 1; but F, visited first, is idle and A can
    #   run there, so Gavel's mechanism places it on F (priority 0 still fills an idle
    #   device): 200 / 4 = 50 s -> A ends at 150.
    types = [("F", 1, 3.0), ("S", 1, 1.0)]
    rows = [(0.0, 1, 400.0), (0.0, 1, 200.0)]
    rate = [[4.0, 2.0], [2.0, 1.0]]
    r = _trace("gavel-min-cost", types, rows, rate, round_s=100.0)
    np.testing.assert_allclose(r.finish, [150.0, 100.0], rtol=1e-12)
    np.testing.assert_allclose(r.type_time, [[50.0, 100.0], [100.0, 0.0]], rtol=1e-12)
    # gavel-max-throughput on the same instance (Σ thr·X): A-F + B-S = 4 + 1 = 5 beats
    # B-F + A-S = 2 + 2 = 4 (unique by the same argument, duals 5/2, 1, 3/2, 0): A ends at
    # 400 / 4 = 100, B (100 done on S) then moves to F: 100 / 2 -> 150. The price reverses
    # who gets the fast device.
    r = _trace("gavel-max-throughput", types, rows, rate, round_s=100.0)
    np.testing.assert_allclose(r.finish, [100.0, 150.0], rtol=1e-12)


def test_min_cost_slo_trace_finishes_as_worked_by_hand() -> None:
    # Types F ($3/h) and S ($1/h), one device each, visited F then S. Rates (F, S), work:
    #   A (4, 1) 600, no deadline;  B (2, 1) 300, deadline t = 200.
    # t=0: B's SLO row: 2 b_F + b_S >= 300 / 200 = 1.5; with b_S <= 1 - b_F that needs
    #   b_F >= 1/2. The objective (4/3 a_F + a_S + 2/3 b_F + b_S), with a_F <= 1 - b_F and
    #   a_S <= 1 - b_S at best, is 7/3 - 2/3 b_F: b_F = 1/2, then b_S = 1/2 (from both
    #   bounds), a_F = a_S = 1/2: X = 1/2 everywhere, unique.
    # Rounds of 100 s: in the first, each job's priority is (1/2) / (1/2) = 1 on both types
    #   (which job takes F is a tie); in the second the job that had F has priority
    #   (1/2) / (150/200) = 2/3 there and 2 on S, so they swap. Either way B gets 100 s on
    #   each: 200 + 100 = 300 -> B ends at 200, its deadline; A has done 400 + 100 = 500.
    # t=200: A alone: 4/3 a_F + a_S -> a_F = 1: 100 / 4 = 25 s -> A ends at 225.
    types = [("F", 1, 3.0), ("S", 1, 1.0)]
    rows = [(0.0, 1, 600.0), (0.0, 1, 300.0)]
    rate = [[4.0, 1.0], [2.0, 1.0]]
    deadline = [float("inf"), 200.0]
    r = _trace("gavel-min-cost-slo", types, rows, rate, 100.0, deadline=deadline)
    np.testing.assert_allclose(r.finish, [225.0, 200.0], rtol=1e-12)
    # Without the SLO row (gavel-min-cost): A on F, B on S. A ends at 600 / 4 = 150,
    # mid-round; at t=200 B (200 done) is alone and fills the idle F: 100 / 2 -> 250, past
    # its deadline.
    r = _trace("gavel-min-cost", types, rows, rate, 100.0, deadline=deadline)
    np.testing.assert_allclose(r.finish, [150.0, 250.0], rtol=1e-12)


def test_makespan_trace_finishes_as_worked_by_hand() -> None:
    # Types F and S, one device each. Rates (F, S), work: A (2, 1) 300,  B (3, 1) 400.
    # Makespan: maximise z = 1/T with 2 a_F + a_S >= 300 z and 3 b_F + b_S >= 400 z.
    # Giving A the share f of F (and 1 - f of S) and B the rest: z = min((1 + f) / 300,
    # (3 - 2f) / 400), equal at 400 + 400 f = 900 - 600 f: f = 1/2, z = 1/200. Both rows
    # are tight and each device is full, so the optimum is unique: X = 1/2 everywhere
    # (A alone on F gives z = min(2/300, 1/400), B alone on F min(1/300, 3/400): worse).
    # Rounds of 50 s: as in the SLO trace the two jobs take one type each and swap every
    # round (ties inside a pair of rounds go either way), so after 4 rounds each job has had
    # 100 s on each type: A 200 + 100 = 300, B 300 + 100 = 400: both end at T = 200.
    r = _trace(
        "gavel-makespan",
        [("F", 1, 1.0), ("S", 1, 1.0)],
        [(0.0, 1, 300.0), (0.0, 1, 400.0)],
        [[2.0, 1.0], [3.0, 1.0]],
        round_s=50.0,
    )
    np.testing.assert_allclose(r.finish, [200.0, 200.0], rtol=1e-12)
    np.testing.assert_allclose(r.type_time, [[100.0, 100.0], [100.0, 100.0]], rtol=1e-12)


def test_ftf_trace_finishes_as_worked_by_hand() -> None:
    # Types F and S, one device each. Rates (F, S), work: A (2, 1) 300,  B (3, 1) 200.
    # Isolated throughputs (half of each device): iso_A = 1.5, iso_B = 2. At t=0 nothing has
    # elapsed or been earned, so ρ_j = (R_j / rate_j) / (R_j / iso_j) = iso_j / rate_j: the
    # work cancels. With A's share f of F and 1 - f of S: ρ_A = 1.5 / (1 + f),
    # ρ_B = 2 / (3 - 2f); equal where 1.5 (3 - 2f) = 2 (1 + f): f = 1/2, ρ* = 1,
    # unique. The bisection stops at a level within rel_tol (1e-3) above ρ*, where the
    # second objective gives B a little more of F: shares within 2e-3 of 1/2, which does not
    # change what the rounds below do.
    # Rounds of 50 s: one type each, swapped in the second round: B does 150 + 50 = 200 and
    #   ends at 100; A has done 100 + 50 = 150.
    # t=100: A alone (it has earned 150 / 1.5 = 100 isolated seconds): its best is all of F
    #   (the smallest ρ, and the second objective's maximum): 150 / 2 = 75 s -> ends at 175.
    r = _trace(
        "gavel-ftf",
        [("F", 1, 1.0), ("S", 1, 1.0)],
        [(0.0, 1, 300.0), (0.0, 1, 200.0)],
        [[2.0, 1.0], [3.0, 1.0]],
        round_s=50.0,
    )
    np.testing.assert_allclose(r.finish, [175.0, 100.0], rtol=1e-12)
    np.testing.assert_allclose(r.type_time, [[125.0, 50.0], [50.0, 50.0]], rtol=1e-12)


def test_fifo_het_trace_finishes_as_worked_by_hand() -> None:
    # Types F and S, one device each (alphabetical order: F, S). Rates (F, S), work:
    #   A (1, 0.5) 100,  B (2, 1) 200,  C (1, 1) 100, all at t = 0, in that order.
    # t=0: A takes its fastest free type, F; B the only one left, S; C finds none: FIFO stops
    #   there, and fifo_perf never places a job of priority 0, so C waits. A ends at 100.
    # t=100: the map is rebuilt from scratch: B (first in line) takes F (2 > 1) -- it moves
    #   from S -- and C takes S. B has 100 left at 2/s: ends at 150 (F then idles until the
    #   round ends); C ends at 100 + 100 = 200.
    r = _trace(
        "gavel-fifo-het",
        [("F", 1, 1.0), ("S", 1, 1.0)],
        [(0.0, 1, 100.0), (0.0, 1, 200.0), (0.0, 1, 100.0)],
        [[1.0, 0.5], [2.0, 1.0], [1.0, 1.0]],
        round_s=100.0,
    )
    np.testing.assert_allclose(r.finish, [100.0, 150.0, 200.0], rtol=1e-12)
    np.testing.assert_allclose(r.type_time[1], [50.0, 100.0], rtol=1e-12)
    assert r.first_start[2] == 100.0


def test_hierarchical_trace_finishes_as_worked_by_hand() -> None:
    # One type, two devices, every rate 1, rounds of 50 s. User u has A and B, user v has C;
    # 100 units of work each. Weights: u's 1 split over its two jobs, v's 1 to C, so the
    # water filling gives x = z (1/2, 1/2, 1) with z (1/2 + 1/2 + 1) <= 2: z = 1,
    # X = (1/2, 1/2, 1), the cluster full: unique (test_hierarchical_fairness_on_paper).
    # Rounds (half-round credit 25 s, 3 jobs: the type's total starts at 75 s):
    #   t=0:  priorities X / (25/75): C 3, A 1.5, B 1.5 -> C and A (A first by position;
    #         A and B are one class, so their rows are equal bit for bit).
    #   t=50: shares of the 175 s: C 75, A 75, B 25 -> C 7/3, A 7/6, B 3.5 -> B and C.
    #         C has done 100: ends at 100.
    #   t=100: {A, B}, one entity: X = (1, 1): both run their last 50 and end at 150.
    # (Plain max-min fairness gives every job 2/3 of a device: C would end later.)
    r = _trace(
        "gavel-hierarchical",
        [("A", 2, 1.0)],
        [(0.0, 1, 100.0)] * 3,
        [[1.0]] * 3,
        round_s=50.0,
        user=["u", "u", "v"],
    )
    np.testing.assert_allclose(r.finish, [150.0, 150.0, 100.0], rtol=1e-12)
    np.testing.assert_allclose(r.first_start, [0.0, 50.0, 0.0])


@pytest.mark.parametrize("seed", range(6))
def test_mmf_centre_is_the_same_from_the_dense_kernels_vertex_and_from_highs(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # With centre=True (the --compat gavel default) the max-min LP's vertex only seeds the
    # centre of the optimal face: the dense simplex kernel's vertex and HiGHS's (the kernel
    # refused by a pivot limit of 0, counted) give the same centre to rounding.
    import scheduling.gavel_lp as gl

    state, thr = hier_random_state(seed, 3 + seed, 1 + seed % 3)
    fast = GavelMMF(centre=True)
    x = allocate(fast, state)
    assert fast.dense_failures == 0
    monkeypatch.setattr(gl, "DENSE_MAX_PIVOTS", 0)
    slow = GavelMMF(centre=True)
    y = allocate(slow, state)
    assert slow.dense_failures == 1
    assert (fast.stats()["lp_solves"], slow.stats()["lp_solves"]) == (1, 2)  # tried, HiGHS
    np.testing.assert_allclose(x, y, atol=1e-9)
    assert check_allocation(x, thr, state.jobs.num_gpus.astype(float), state.capacity) == []


@pytest.mark.parametrize("name", ["gavel-hierarchical", "gavel-mmf", "gavel-max-throughput"])
def test_dense_kernels_give_the_same_run_compiled_and_as_plain_python(name: str) -> None:
    # The engine switches to the compiled kernels for these policies; without numba the
    # same kernels run as plain Python: the same run, bit for bit (three users, so the
    # hierarchical water filling has several levels).
    from clustersim import kernels
    from clustersim.perf import PerformanceModel
    from clustersim.spec import cluster_from_shorthand
    from clustersim.synth import gavel_model, generate

    cl = cluster_from_shorthand("v100:2,p100:2,k80:2")
    trace = generate(gavel_model(), n_jobs=40, seed=3)
    trace.user[:] = np.array(["u", "v", "w", "v"] * 10, dtype=object)
    rates = PerformanceModel().prepare(trace, cl)
    params = {} if name == "gavel-hierarchical" else {"centre": True}
    was = kernels.compiled_in_use()
    try:
        if not kernels.use_compiled():
            pytest.skip("numba not installed")  # (the product pins it)
        fast = simulate(trace, cl, make_policy(name, **params), rates=rates)
        kernels.use_compiled(False)
        slow_policy = make_policy(name, **params)
        slow_policy.compiled_kernels = False  # (else the engine switches back)
        slow = simulate(trace, cl, slow_policy, rates=rates)
        assert not kernels.compiled_in_use()  # the whole run was plain Python
    finally:
        kernels.use_compiled(was)
    assert fast.finish.tobytes() == slow.finish.tobytes()
