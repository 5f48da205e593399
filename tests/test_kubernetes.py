"""Kubernetes with Kueue (``scheduling.kubernetes``) and the kube-scheduler's scores
(``scheduling.kube_placement``): hand-worked traces of borrowing, borrowing limits, reclaim
preemption, queueing strategies and the order of heads; node choice under LeastAllocated
and MostAllocated; the quota checks. Every rate is 1 work unit per second (work is seconds)
and resumes cost nothing."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from clustersim.engine import simulate
from clustersim.result import DROP_REJECTED
from scheduling.kube_placement import balanced_scores, fit_scores, pod_sizes
from scheduling.kubernetes import Kubernetes, parse_queues
from scheduling.params import cluster_errors, policy_errors
from scheduling.registry import make_placement, make_policy
from tests.simple import cluster, fixed_rates, jobs


def _run(
    nodes: list[tuple[str, int]],
    rows: list[tuple[float, int, float]],
    vcs: list[str],
    placement: str = "consolidate",
    **p: Any,
) -> Any:
    cl = cluster(nodes)
    table = jobs(rows, vc=vcs)
    return simulate(
        table,
        cl,
        make_policy("kubernetes", **p),
        make_placement(placement),
        rates=fixed_rates(table, cl),
    )


def _finish(*a: Any, **p: Any) -> list[float]:
    return [float(x) for x in _run(*a, **p).finish]


# One node of 8 devices; ClusterQueues a and b in cohort c, nominal quota 4 each.
# A1 (a, 8 devices, 100 s) at 0: a's usage 0 + 8 > 4, so it borrows; the cohort's usage
# 0 + 8 <= 4 + 4: admitted, runs 0-100 on b's idle quota too. B1 (b, 4 devices, 50 s) at
# 10: b is within its nominal quota (0 + 4 <= 4) but the cohort is full (8 + 4 > 8).
NODE8 = [("G", 8)]
LEND = [(0.0, 8, 100.0), (10.0, 4, 50.0)]
LEND_VC = ["a", "b"]
HALVES = "a@c:G=4;b@c:G=4"


def test_a_queue_borrows_idle_quota_and_the_lender_waits_without_preemption() -> None:
    # reclaimWithinCohort: Never (Kueue's default): B1 waits for A1 to end: 100-150
    r = _run(NODE8, LEND, LEND_VC, queues=HALVES)
    assert r.finish.tolist() == [100.0, 150.0]
    assert r.preemptions.tolist() == [0, 0]
    assert r.policy_stats["admitted_borrowing"] == 1.0


def test_the_lender_reclaims_its_quota_when_reclaim_within_cohort_allows() -> None:
    # reclaimWithinCohort: Any: at 10 B1 evicts A1 (a borrows 8 > 4) and runs 10-60. A1 has
    # 90 s left; it needs 8 devices, the cohort holds 4 + 8 > 8 until B1 ends: 60-150.
    r = _run(NODE8, LEND, LEND_VC, queues=HALVES, reclaim_within_cohort="Any")
    assert r.finish.tolist() == [150.0, 60.0]
    assert r.preemptions.tolist() == [1, 0]
    assert r.policy_stats["preempted_to_reclaim"] == 1.0


def test_lower_priority_reclaims_only_from_lower_priority_workloads() -> None:
    # equal priorities: LowerPriority evicts nothing (as Never: 100, 150) ...
    same = _finish(NODE8, LEND, LEND_VC, queues=HALVES, reclaim_within_cohort="LowerPriority")
    assert same == [100.0, 150.0]
    # ... B1 of priority 1 over A1 of priority 0: as Any (150, 60)
    cl = cluster(NODE8)
    table = jobs(LEND, vc=LEND_VC, priority=[0, 1])
    pol = make_policy("kubernetes", queues=HALVES, reclaim_within_cohort="LowerPriority")
    r = simulate(table, cl, pol, rates=fixed_rates(table, cl))
    assert r.finish.tolist() == [150.0, 60.0]


def test_a_borrowing_limit_caps_what_a_queue_takes_from_its_cohort() -> None:
    # a may hold 4 + 2 devices: a1 (4 devices) runs 0-100; a2 (4) would take a to 8 > 6 and
    # waits for a1 although 4 devices are idle: 100-200. Without the limit both run 0-100.
    rows = [(0.0, 4, 100.0), (0.0, 4, 100.0)]
    assert _finish(NODE8, rows, ["a", "a"], queues="a@c:G=4+2;b@c:G=4") == [100.0, 200.0]
    assert _finish(NODE8, rows, ["a", "a"], queues="a@c:G=4;b@c:G=4") == [100.0, 100.0]


def test_a_queue_without_a_cohort_never_borrows() -> None:
    rows = [(0.0, 4, 100.0), (0.0, 4, 100.0)]
    assert _finish(NODE8, rows, ["a", "a"], queues="a:G=4;b:G=4") == [100.0, 200.0]


# One queue a of 4 devices on a node of 4. a1 (2 devices, 100 s) at 0 runs 0-100; a2 (4
# devices, 10 s) at 1 does not fit (2 + 4 > 4); a3 (2 devices, 10 s) at 2 does.
FIFO_ROWS = [(0.0, 2, 100.0), (1.0, 4, 10.0), (2.0, 2, 10.0)]


def test_strict_fifo_blocks_behind_the_head_and_best_effort_does_not() -> None:
    # StrictFIFO: a3 waits behind a2: a2 100-110, a3 110-120
    strict = _finish([("G", 4)], FIFO_ROWS, ["a"] * 3, queues="a:G=4", queueing="StrictFIFO")
    assert strict == [100.0, 110.0, 120.0]
    # BestEffortFIFO: a2 is set aside and a3 runs 2-12; a2 runs 100-110
    best = _finish([("G", 4)], FIFO_ROWS, ["a"] * 3, queues="a:G=4")
    assert best == [100.0, 110.0, 12.0]


def test_heads_that_do_not_borrow_are_admitted_before_those_that_do() -> None:
    # four devices, a and b 2 each in one cohort; a1, a2, b1 (2 devices, 100 s) all at 0.
    # a1 first (neither borrows; a1 is the older). Then a2 would borrow, b1 would not: b1.
    # The cohort is full: a2 runs 100-200 (in FIFO order it would have gone before b1).
    rows = [(0.0, 2, 100.0)] * 3
    got = _finish([("G", 4)], rows, ["a", "a", "b"], queues="a@c:G=2;b@c:G=2")
    assert got == [100.0, 200.0, 100.0]


def test_a_job_of_an_unknown_queue_is_refused_at_submission() -> None:
    r = _run([("G", 4)], [(0.0, 1, 10.0), (0.0, 1, 10.0)], ["a", "zz"], queues="a:G=4")
    assert r.finish[0] == 10.0
    assert r.drop_reason[1] == DROP_REJECTED


def test_the_default_is_one_queue_per_vc_with_equal_quotas_in_one_cohort() -> None:
    # five devices, VCs x and y: nominal 3 and 2 (the remainder to the first by name). x's
    # two 2-device jobs: x1 within 3, x2 borrows y's idle quota: both run 0-100.
    rows = [(0.0, 2, 100.0), (0.0, 2, 100.0)]
    assert _finish([("G", 5)], rows, ["x", "x"]) == [100.0, 100.0]
    pol = make_policy("kubernetes", queue_by="user")
    assert pol.params()["queue_by"] == "user"


# The kube-scheduler's node choice. Two nodes of 4 devices; k0 (1 device, 1000 s) at 0 goes
# to node 0 (a tie: the lowest index). k1 (1 device, 500 s) at 1:
#   LeastAllocated: node 0 (4 - 2) * 100 // 4 = 50, node 1 (4 - 1) * 100 // 4 = 75: node 1
#   MostAllocated:  node 0 2 * 100 // 4 = 50,       node 1 1 * 100 // 4 = 25:       node 0
# k2 (4 devices, 100 s) at 2 is one pod of 4: with LeastAllocated no node has 4 free (3 and
# 3) and it waits for k1 to end at 501: 501-601; with MostAllocated node 1 is empty: 2-102.
SCORE_ROWS = [(0.0, 1, 1000.0), (1.0, 1, 500.0), (2.0, 4, 100.0)]


def test_least_allocated_spreads_pods_and_most_allocated_packs_them() -> None:
    two = [("G", 4), ("G", 4)]
    least = _finish(two, SCORE_ROWS, ["a"] * 3, placement="k8s-least-allocated")
    most = _finish(two, SCORE_ROWS, ["a"] * 3, placement="k8s-most-allocated")
    assert least == [1000.0, 501.0, 601.0]
    assert most == [1000.0, 501.0, 102.0]


def test_a_gang_is_split_into_node_sized_pods() -> None:
    assert pod_sizes(2, 8) == [2]
    assert pod_sizes(16, 8) == [8, 8]
    assert pod_sizes(12, 8) == [6, 6]
    assert pod_sizes(7, 4) == [4, 3]
    # two pods of 6 on two empty nodes of 8: one on each
    cl = cluster([("G", 8), ("G", 8)])
    free = np.array([8, 8], dtype=np.int64)
    got = make_placement("k8s-most-allocated").place(cl, free, np.array([0, 1]), 12)
    assert got is not None
    assert got[0].tolist() == [0, 1] and got[1].tolist() == [6, 6]


def test_the_scores_are_the_kube_schedulers_integers() -> None:
    req, cap = np.array([2, 5, 0]), np.array([4, 4, 4])
    # least: (4-2)*100//4 = 50; requested above capacity: 0; (4-0)*100//4 = 100
    assert fit_scores(req, cap, most=False).tolist() == [50, 0, 100]
    # most: 2*100//4 = 50; min(5, 4)*100//4 = 100; 0
    assert fit_scores(req, cap, most=True).tolist() == [50, 100, 0]
    # balanced: |1.0 - 0.25| / 2 = 0.375 -> int(62.5) = 62; |0.5 - 0.75| / 2 -> 87
    got = balanced_scores([np.array([1.0, 0.5]), np.array([0.25, 0.75])])
    assert np.asarray(got).tolist() == [62, 87]


@pytest.mark.parametrize("name", ["k8s-least-allocated", "k8s-most-allocated"])
def test_balanced_allocation_breaks_the_tie_towards_even_cpu_and_memory(name: str) -> None:
    # Two nodes of 4 GPUs, 8 cores, 32 GB; each has 1 GPU in use; node 0 has 6 cores and 4 GB
    # in use, node 1 2 cores and 20 GB. The pod: 1 GPU, 2 cores, 4 GB. Requested after it:
    #   node 0: GPU 2/4, CPU 8000/8000 m, memory 8192/32768 MiB
    #   node 1: GPU 2/4, CPU 4000/8000 m, memory 24576/32768 MiB
    # LeastAllocated: node 0 (50 + 0 + 75) // 3 = 41, node 1 (50 + 50 + 25) // 3 = 41;
    # MostAllocated:  node 0 (50 + 100 + 25) // 3 = 58, node 1 (50 + 50 + 75) // 3 = 58.
    # A tie either way; BalancedAllocation: node 0 62, node 1 87: node 1.
    cl = cluster([("G", 4), ("G", 4)])
    aux = SimpleNamespace(
        job=0,
        node_free=np.array([3, 3], dtype=np.int64),
        cpu_cap=np.array([8.0, 8.0]),
        mem_cap=np.array([32.0, 32.0]),
        cpu_free=np.array([2.0, 6.0]),
        mem_free=np.array([28.0, 12.0]),
        cpu_dev=np.array([2.0]),
        mem_dev=np.array([4.0]),
    )
    p = make_placement(name)
    p.bind_resources(aux)
    got = p.place(cl, np.array([1, 3], dtype=np.int64), np.array([0, 1]), 1)
    assert got is not None and got[0].tolist() == [1]


def test_a_quota_above_the_cluster_is_refused_naming_queues() -> None:
    cl = cluster([("G", 8)])
    (msg,) = cluster_errors("kubernetes", {"queues": "a:G=9"}, cl, "policies[0].params")
    assert msg.startswith("policies[0].params.queues")
    assert "above the cluster's 8 G devices" in msg
    (msg,) = cluster_errors("kubernetes", {"queues": "a:H100=1"}, cl, "policies[0].params")
    assert "no accelerator type" in msg
    assert cluster_errors("kubernetes", {"queues": "a:G=8"}, cl, "p") == []


@pytest.mark.parametrize(
    ("spec", "says"),
    [
        ("a", "NAME[@COHORT]:FLAVOUR"),
        ("a@:G=4", "NAME[@COHORT]:FLAVOUR"),
        ("a:G", "FLAVOUR=NOMINAL"),
        ("a:G=x", "whole numbers"),
        ("a:G=-1", "zero or positive"),
        ("a:G=4+2", "needs a cohort"),
        ("a:G=1,G=2", "listed twice"),
        ("a:G=1;a:G=2", "listed twice"),
    ],
)
def test_a_bad_queue_spec_is_refused_naming_queues(spec: str, says: str) -> None:
    errors = " ".join(policy_errors("kubernetes", {"queues": spec}, "policies[0]"))
    assert "queues" in errors and says in errors


def test_bad_strategy_names_are_refused_naming_the_parameter() -> None:
    errors = " ".join(policy_errors("kubernetes", {"queueing": "LIFO"}, "policies[0]"))
    assert "policies[0].params.queueing" in errors


def test_the_spec_parses_cohorts_flavours_and_limits() -> None:
    (a, b) = parse_queues("a@c:V100=8+4,K80=2; b:V100=8")
    assert (a.name, a.cohort, a.flavours, a.nominal) == ("a", "c", ["V100", "K80"], [8, 2])
    assert a.borrow == [4.0, float("inf")]
    assert (b.cohort, b.borrow) == ("", [float("inf")])


@pytest.mark.parametrize("name", ["k8s-least-allocated", "k8s-most-allocated"])
def test_the_scoring_placements_run_with_cpu_and_memory_limits(name: str) -> None:
    """Through the engine with the CPU and memory model on: the strategy sees each node's
    free cores and memory (``bind_resources``), every job that fits finishes, and the
    engine accepts every placement (it checks them against the capped free devices)."""
    from tests.test_policy_conformance import AUX_CLUSTER, _aux_trace

    cl, t = AUX_CLUSTER, _aux_trace(7)
    p = make_placement(name)
    r = simulate(t, cl, make_policy("kubernetes"), p, rates=fixed_rates(t, cl))
    assert r.aux is not None
    assert np.isfinite(r.finish[r.drop_reason == ""]).all()
    assert p._aux is not None  # type: ignore[attr-defined]


class _NumpyKueue(Kubernetes):
    """The admission in numpy and Python, as the policy runs it with preemption."""

    use_kernel = False


def _random_trace(seed: int) -> tuple[Any, Any]:
    rng = np.random.default_rng(seed)
    n = 120
    rows = [
        (float(t), int(g), float(w))
        for t, g, w in zip(
            np.sort(rng.uniform(0, 2000, n)),
            rng.choice([1, 1, 2, 4, 8], n),
            rng.uniform(10, 600, n),
            strict=True,
        )
    ]
    vcs = rng.choice(["a", "b", "c"], n).tolist()
    prio = rng.choice([0, 0, 1], n).tolist()
    return jobs(rows, vc=vcs, priority=prio), cluster([("G", 8), ("G", 8), ("H", 4), ("H", 4)])


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize(
    "params",
    [
        {},
        {"queueing": "StrictFIFO"},
        {"queues": "a@c:G=6+2,H=2;b@c:G=6,H=4;c:G=4,H=2"},
        {"queues": "a@c:H=4,G=8;b@c:G=8+4;c@c:H=4", "queueing": "StrictFIFO"},
    ],
)
def test_the_admission_kernel_decides_as_the_numpy_path(seed: int, params: Any) -> None:
    """Same finish times and stints (jobs, nodes) with the kernel (compiled and plain) as with
    the numpy path, on random traces over two types with three queues."""
    from clustersim import kernels

    t, cl = _random_trace(seed)
    speed = fixed_rates(t, cl, speed=[1.0, 2.0])
    ref = simulate(t, cl, _NumpyKueue(**params), rates=speed)
    for compiled in (False, True):
        was = kernels.compiled_in_use()
        kernels.use_compiled(compiled)
        try:
            got = simulate(t, cl, make_policy("kubernetes", **params), rates=speed)
        finally:
            kernels.use_compiled(was)
        assert np.array_equal(got.finish, ref.finish, equal_nan=True)
        assert got.stints.node.tolist() == ref.stints.node.tolist()
        assert got.stints.job.tolist() == ref.stints.job.tolist()
        assert got.policy_stats == ref.policy_stats


def test_a_gang_whose_pods_find_no_node_waits_and_a_later_job_goes_first() -> None:
    # Two nodes of 4, one queue of 8. a1 and a2 (3 devices, 100 s) at 0: one pod each, on
    # node 0 then node 1 (MostAllocated: node 0 3 * 100 // 4 = 75 against 0, then node 1
    # the only one with room). Free: 1 + 1. a3 (2 devices, 10 s) at 1: the quota and the
    # devices (2 free) hold it, but its one pod of 2 finds no node: it waits; a4 (1 device,
    # 10 s) at 2 goes first (BestEffortFIFO): 2-12. a3 runs when a1 and a2 end: 100-110.
    rows = [(0.0, 3, 100.0), (0.0, 3, 100.0), (1.0, 2, 10.0), (2.0, 1, 10.0)]
    got = _finish(
        [("G", 4), ("G", 4)], rows, ["a"] * 4, placement="k8s-most-allocated", queues="a:G=8"
    )
    assert got == [100.0, 100.0, 110.0, 12.0]


@pytest.mark.parametrize("name", ["k8s-least-allocated", "k8s-most-allocated"])
def test_the_one_pod_shortcut_chooses_as_the_general_loop(name: str) -> None:
    from scheduling.registry import PLACEMENTS

    fast = make_placement(name)
    slow = type("Slow", (PLACEMENTS[name],), {"fast": False})()
    rng = np.random.default_rng(3)
    cl = cluster([("G", 8)] * 5 + [("G", 4)] * 3)
    for _ in range(300):
        free = rng.integers(0, cl.node_devices + 1).astype(np.int64)
        cands = np.flatnonzero(free > 0)
        nd = int(rng.integers(1, 9))
        a, b = fast.place(cl, free, cands, nd), slow.place(cl, free, cands, nd)
        if a is None or b is None:
            assert a is None and b is None
        else:
            assert a[0].tolist() == b[0].tolist() and a[1].tolist() == b[1].tolist()
