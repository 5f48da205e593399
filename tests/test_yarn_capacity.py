"""YARN's CapacityScheduler (``scheduling.yarn_capacity``): hand-worked traces of elasticity,
maximum capacity, queue order and preemption, and the queue specification's checks. Every
rate is 1 work unit per second (work is seconds) and resumes cost nothing."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from clustersim.engine import simulate
from clustersim.result import DROP_REJECTED
from scheduling.params import policy_errors
from scheduling.registry import make_policy
from scheduling.yarn_capacity import YarnCapacity, parse_queues
from tests.simple import cluster, fixed_rates, jobs


def _run(devices: int, rows: list[tuple[float, int, float]], vcs: list[str], **p: Any) -> Any:
    cl = cluster([("G", devices)])
    table = jobs(rows, vc=vcs)
    return simulate(table, cl, make_policy("yarn-capacity", **p), rates=fixed_rates(table, cl))


def _finish(
    devices: int, rows: list[tuple[float, int, float]], vcs: list[str], **p: Any
) -> list[float]:
    return [float(x) for x in _run(devices, rows, vcs, **p).finish]


# Four devices; queues a and b, 50 % each (2 devices guaranteed), maximum 100 %.
# A1 (a, 4 devices, 100 s) at 0 takes the whole idle cluster (elasticity). B1 (b, 2 devices,
# 50 s) at 10: b is below its guarantee and B1 stays within it, but nothing is free: b is
# starved. After wait_s = 15 s (at 25) A1, of the queue above its guarantee, is suspended and
# B1 runs 25-75. A1 (75 s left) needs 4 devices: it resumes when B1 ends, 75-150.
TWO = [(0.0, 4, 100.0), (10.0, 2, 50.0)]
TWO_VC = ["a", "b"]
HALVES = "a=50/100,b=50/100"


def test_a_starved_queue_preempts_the_queue_above_its_guarantee_after_the_wait() -> None:
    r = _run(4, TWO, TWO_VC, queues=HALVES)
    assert r.finish.tolist() == [150.0, 75.0]
    assert r.preemptions.tolist() == [1, 0]


def test_without_a_wait_the_preemption_is_at_once() -> None:
    # B1 runs 10-60; A1 has 90 s left and resumes at 60: 150
    assert _finish(4, TWO, TWO_VC, queues=HALVES, wait_s=0.0) == [150.0, 60.0]


def test_without_preemption_the_starved_queue_waits_for_the_elastic_one() -> None:
    assert _finish(4, TWO, TWO_VC, queues=HALVES, preemption=False) == [100.0, 150.0]


def test_a_queue_never_grows_past_its_maximum() -> None:
    # a may use 50 % (2 devices) at most: its two 2-device jobs run one after the other,
    # although the cluster has room for both
    rows = [(0.0, 2, 100.0), (0.0, 2, 100.0)]
    assert _finish(4, rows, ["a", "a"], queues="a=50/50,b=50/100") == [100.0, 200.0]
    assert _finish(4, rows, ["a", "a"], queues="a=50/100,b=50/100") == [100.0, 100.0]


def test_free_devices_go_to_the_queue_least_served_relative_to_its_guarantee() -> None:
    # a 75 % (3 devices), b 25 % (1): six one-device jobs at 0, four devices. Used/guarantee:
    # a 0 = b 0 -> a (a1, 1/3); b 0 -> b (b1, 1/1); a 1/3 -> a2 (2/3); a 2/3 -> a3 (1); the
    # cluster is full. a4 and b2 run 100-200.
    vcs = ["a", "a", "a", "a", "b", "b"]
    rows = [(0.0, 1, 100.0)] * 6
    got = _finish(4, rows, vcs, queues="a=75/100,b=25/100")
    assert got == [100.0, 100.0, 100.0, 200.0, 100.0, 200.0]


def test_a_job_of_an_unknown_queue_is_refused_at_submission() -> None:
    r = _run(4, [(0.0, 1, 10.0), (0.0, 1, 10.0)], ["a", "zz"], queues="a=100/100")
    assert r.finish[0] == 10.0
    assert r.drop_reason[1] == DROP_REJECTED


def test_the_default_is_one_equal_queue_per_virtual_cluster() -> None:
    _, leaves = parse_queues("", ["y", "x", "y"])
    assert [q.path for q in leaves] == ["x", "y"]
    assert [q.abs_capacity for q in leaves] == [0.5, 0.5]


def test_nested_queues_multiply_along_their_path() -> None:
    _, leaves = parse_queues("eng=60/100,eng.ml=70/100,eng.web=30/60,research=40/100")
    got = {q.path: (q.abs_capacity, q.abs_maximum) for q in leaves}
    assert got["eng.ml"] == pytest.approx((0.42, 1.0))
    assert got["eng.web"] == pytest.approx((0.18, 0.6))
    assert got["research"] == pytest.approx((0.4, 1.0))


@pytest.mark.parametrize(
    ("spec", "says"),
    [
        ("a=60/100,b=30/100", "sum to 90 %"),
        ("a=50", "sum to 50 %"),
        ("a=120/100,b=0/100", "capacity <= maximum <= 100"),
        ("a=60/50,b=40/100", "capacity <= maximum"),
        ("a.b=100/100", "comes before its parent"),
        ("a", "path=capacity/maximum"),
        ("a=x/100", "percentages"),
        ("a=50/100,a=50/100", "listed twice"),
    ],
)
def test_a_bad_queue_spec_is_refused_naming_queues(spec: str, says: str) -> None:
    errors = " ".join(policy_errors("yarn-capacity", {"queues": spec}, "policies[0]"))
    assert "queues" in errors and says in errors


# ---------------------------------------------------------------- the compiled grouping


class _NumpyYarn(YarnCapacity):
    """The pending jobs grouped in numpy and Python (the reference of the kernel)."""

    use_kernel = False


def _random_trace(seed: int) -> tuple[Any, Any]:
    rng = np.random.default_rng(seed)
    n = 150
    rows = [
        (float(t), int(g), float(w))
        for t, g, w in zip(
            np.sort(rng.uniform(0, 2000, n)),
            rng.choice([1, 1, 2, 4, 8], n),
            rng.uniform(10, 900, n),
            strict=True,
        )
    ]
    vcs = rng.choice(["a", "b", "c", "d"], n).tolist()
    prio = rng.choice([0, 0, 0, 1, 5], n).tolist()
    return jobs(rows, vc=vcs, priority=prio), cluster([("G", 8), ("G", 4), ("H", 4)])


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize(
    "params",
    [
        {},
        {"wait_s": 0.0},
        {"preemption": False},
        {"queues": "x=60/100,x.a=50/100,x.b=50/80,y=40/100,y.c=70/100,y.d=30/50"},
    ],
)
def test_the_grouping_kernel_decides_as_the_numpy_path(seed: int, params: Any) -> None:
    """Same finish times (bit for bit), stints and statistics with the kernel (compiled and
    plain) as with the numpy path, on random traces with priorities, over two types of
    different speeds."""
    from clustersim import kernels

    t, cl = _random_trace(seed)
    speed = fixed_rates(t, cl, speed=[1.0, 2.0])
    ref = simulate(t, cl, _NumpyYarn(**params), rates=speed)
    for compiled in (False, True):
        was = kernels.compiled_in_use()
        kernels.use_compiled(compiled)
        try:
            got = simulate(t, cl, make_policy("yarn-capacity", **params), rates=speed)
        finally:
            kernels.use_compiled(was)
        assert np.array_equal(got.finish, ref.finish, equal_nan=True)
        assert got.stints.job.tolist() == ref.stints.job.tolist()
        assert got.stints.node.tolist() == ref.stints.node.tolist()
        assert got.policy_stats == ref.policy_stats
