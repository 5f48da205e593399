"""The ``pollux`` policy: hand-worked speedup cases, the search against exhaustive search,
and an end-to-end run on profiled jobs (docs/pollux-fidelity.md)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clustersim.engine import simulate
from clustersim.goodput import consolidated, load
from clustersim.jobs import JobTable
from scheduling.pollux import Pollux, best_counts, restart_factor
from scheduling.registry import make_placement
from tests.simple import cluster

# speedups of two jobs on 0..4 devices (A scales well, B does not)
A = [0.0, 1.0, 1.8, 2.4, 2.8]
B = [0.0, 1.0, 1.2, 1.3, 1.35]


def counts(p: float, speed: list[list[float]], capacity: int = 4) -> list[int]:
    policy = Pollux(p=p)
    cost = policy.terms(np.array(speed))
    lo, hi = np.ones(len(speed), dtype=np.int64), np.full(len(speed), capacity)
    return best_counts(cost, lo, hi, capacity).tolist()


def test_the_fair_mean_splits_the_devices_evenly() -> None:
    # p = -1: 1/(s_A + .001) + 1/(s_B + .001) is smallest at (2, 2):
    # (1, 3): 0.9990 + 0.7686 = 1.7677; (2, 2): 0.5552 + 0.8326 = 1.3878;
    # (3, 1): 0.4165 + 0.9990 = 1.4155
    assert counts(-1.0, [A, B]) == [2, 2]
    assert Pollux(p=-1.0).p_mean(np.array([1.8, 1.2])) == pytest.approx(2 / 1.3878, abs=1e-4)


def test_the_arithmetic_mean_gives_the_devices_to_the_job_that_scales() -> None:
    # p = 1: s_A + s_B is largest at (3, 1): 3.4 > (2, 2) 3.0 > (4, 0) 2.8
    assert counts(1.0, [A, B]) == [3, 1]


def test_the_restart_penalty_keeps_the_current_allocation() -> None:
    # A holds 3 and B 1, both 60 s old with no restart: a change multiplies the speedup by
    # 60 / 90. Moving to (2, 2): 1/(1.8 * 2/3 + .001) + 1/(1.2 * 2/3 + .001) = 2.081 > 1.4155
    f = restart_factor(60.0, 0, 30.0)
    assert f == pytest.approx(2 / 3)
    held = (3, 1)
    speed = [
        [s * (1 if n == held[i] else f) for n, s in enumerate(row)] for i, row in enumerate([A, B])
    ]
    assert counts(-1.0, speed) == [3, 1]
    # without the penalty it would move
    assert counts(-1.0, [A, B]) == [2, 2]


def test_restarts_eat_the_age_credit() -> None:
    assert restart_factor(60.0, 2, 30.0) == 0.0
    assert restart_factor(90.0, 1, 30.0) == pytest.approx(60 / 120)
    assert restart_factor(10.0, 5, 0.0) == 1.0


def test_a_job_given_nothing_dominates_the_fair_mean() -> None:
    # three jobs, two devices: the third gets nothing whatever; with p = -1 the two devices
    # go one each rather than both to A (1/2.801 + 1000 > 1/1.001 + 1/1.001 + ...)
    assert counts(-1.0, [A, B, B], capacity=2) in ([1, 1, 0], [1, 0, 1], [0, 1, 1])


@settings(max_examples=150, deadline=None)
@given(
    st.integers(1, 4),
    st.integers(1, 7),
    st.sampled_from([-2.0, -1.0, 0.0, 0.5, 1.0]),
    st.data(),
)
def test_the_search_reaches_the_exhaustive_optimum(m: int, cap: int, p: float, data) -> None:  # type: ignore[no-untyped-def]
    # the search's gap against enumerating every count vector on tiny instances: zero
    speed = np.array(
        [
            np.concatenate(
                [[0.0], np.cumsum(data.draw(st.lists(st.floats(0, 2), min_size=cap, max_size=cap)))]
            )
            for _ in range(m)
        ]
    )
    lo = np.array([data.draw(st.integers(1, cap)) for _ in range(m)], dtype=np.int64)
    hi = np.array([data.draw(st.integers(int(x), cap)) for x in lo], dtype=np.int64)
    policy = Pollux(p=p)
    cost = policy.terms(speed)
    got = best_counts(cost, lo, hi, cap)
    assert got.sum() <= cap
    assert all(n == 0 or lo[i] <= n <= hi[i] for i, n in enumerate(got.tolist()))
    best = min(
        sum(cost[i, n] for i, n in enumerate(c))
        for c in itertools.product(*[[0, *range(int(lo[i]), int(hi[i]) + 1)] for i in range(m)])
        if sum(c) <= cap
    )
    assert sum(cost[i, n] for i, n in enumerate(got.tolist())) == pytest.approx(best, abs=1e-9)


def profiled_jobs(rows: list[tuple[float, str, float]]) -> JobTable:
    return JobTable.from_columns(
        job_id=[f"j{i}" for i in range(len(rows))],
        submit_time=[r[0] for r in rows],
        num_gpus=[1] * len(rows),
        min_gpus=[1] * len(rows),
        max_gpus=[16] * len(rows),
        work=[r[2] for r in rows],
        job_type=[r[1] for r in rows],
    )


def test_profiled_jobs_grow_and_finish_at_their_goodput() -> None:
    cl = cluster([("T4", 4), ("T4", 4)])
    table = profiled_jobs([(0.0, "cifar10", 3600.0), (0.0, "bert", 3600.0)])
    res = simulate(table, cl, Pollux(), make_placement("consolidate"))
    assert np.all(np.isfinite(res.finish))
    assert res.resizes.sum() > 0  # they grew past one device (exploration doubles)
    # no job can beat its best goodput on up to 8 GPUs at any epoch (T4: factor 1)
    for j, name in enumerate(["cifar10", "bert"]):
        app = load(name)
        assert app is not None
        top = max(
            app.best(consolidated(n), e).goodput for n in range(1, 9) for e in range(app.max_epochs)
        )
        assert res.finish[j] >= app.total_progress / top


def test_a_gang_larger_than_its_fastest_type_goes_to_a_type_that_holds_it() -> None:
    # T0 is twice as fast but has 2 devices; a rigid 3-device job of 30 units (no Pollux
    # profile: the performance model's rate, efficiency 1) runs on T1's devices. At 0 its age
    # is 0, so the restart penalty makes every count worth nothing; at the next interval (60)
    # it starts: 60-90. (It once waited for ever for T0.)
    from clustersim.engine import simulate
    from scheduling.registry import make_policy
    from tests.simple import cluster, fixed_rates, jobs

    cl = cluster([("T0", 2), ("T1", 4)])
    t = jobs([(0.0, 3, 30.0)])
    r = simulate(t, cl, make_policy("pollux"), rates=fixed_rates(t, cl, speed=[2.0, 1.0]))
    assert r.finish.tolist() == [90.0]
    assert r.stints.node.tolist() == [1] and r.stints.devices.tolist() == [3]
