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
    assert p.stats()["lp_solves"] == 2  # one raise LP, one bottleneck LP


def test_hierarchical_by_vc_with_one_vc_is_plain_fairness() -> None:
    x = allocate(GavelHierarchical(entity="vc"), hier_state())
    np.testing.assert_allclose(x, [[2 / 3]] * 3, atol=1e-6)


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
