"""The compiled kernels against naive loops and against the plain-Python run of their source."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clustersim import engine, kernels
from clustersim.engine import simulate
from clustersim.kernels import BAD_INACTIVE, BAD_TWICE, best_fit_node, plan_preemptive
from scheduling import las, placement, tiresias
from scheduling.base import SERVICE_EPS
from scheduling.registry import make_placement, make_policy
from tests.simple import cluster, fixed_rates, jobs, yarn_reference
from tests.test_engine_reference import PARAMS, scenarios


@pytest.fixture(autouse=True, scope="module")
def compiled_kernels() -> Iterator[None]:
    """The kernels are compiled here, so that calling one calls numba's code (a process starts
    with their plain-Python source); the other tests find the switch as it was."""
    if not kernels.COMPILED:
        pytest.fail("numba is a pinned dependency: the compiled kernels must be in use")
    was = kernels.compiled_in_use()
    assert kernels.use_compiled()
    yield
    kernels.use_compiled(was)


def naive_plan(
    run: list[int],
    nds: list[int],
    types: list[int],
    rate: np.ndarray,
    cap: list[int],
    blocking: bool,
    alloc_type: list[int],
    alloc_n: list[int],
) -> tuple[list[tuple[int, int, int]], list[int], list[int]]:
    """(start, kept, stop) the way the engine's docstring says, one job at a time."""
    left = list(cap)
    start: list[tuple[int, int, int]] = []
    kept: list[int] = []
    for j, d, want in zip(run, nds, types, strict=True):
        cur = alloc_type[j]
        if want >= 0:
            t = want if rate[j, want] > 0 else -1
        elif cur >= 0 and alloc_n[j] == d and left[cur] >= d:
            t = cur
        else:
            ok = [k for k in range(len(left)) if rate[j, k] > 0 and left[k] >= d]
            t = max(ok, key=lambda k: (rate[j, k], -k)) if ok else -1
        if t < 0 or left[t] < d:
            if blocking:
                break
            continue
        left[t] -= d
        if cur == t and alloc_n[j] == d:
            kept.append(j)
        else:
            start.append((j, t, d))
        if not any(left):
            break
    stop = sorted(j for j in range(len(alloc_type)) if alloc_type[j] >= 0 and j not in kept)
    return start, kept, stop


def call(fn: Any, run: np.ndarray, nds: np.ndarray, types: np.ndarray, **st: Any) -> tuple:
    n = len(st["gang"])
    out = [np.full(max(len(run), 1), -7, dtype=np.int64) for _ in range(4)]
    stop = np.full(max(len(st["running_jobs"]), 1), -7, dtype=np.int64)
    mark = np.zeros(n, dtype=np.int8)
    got = fn(
        run,
        nds,
        types,
        st["gang"],
        st["rate"],
        st["cap"].copy(),
        st["blocking"],
        st["running"],
        st["alloc_n"],
        st["alloc_type"],
        st["is_active"],
        st["running_jobs"],
        mark,
        *out,
        stop,
    )
    assert not mark.any(), "the scratch flags must be left clear"
    n_go, n_kept, n_stop, bad, why = got
    start = list(
        zip(out[0][:n_go].tolist(), out[1][:n_go].tolist(), out[2][:n_go].tolist(), strict=True)
    )
    return start, out[3][:n_kept].tolist(), stop[:n_stop].tolist(), bad, why


@st.composite
def decisions(draw: Any) -> dict[str, Any]:
    n_types = draw(st.integers(1, 3))
    n = draw(st.integers(1, 40))
    gang = np.array(draw(st.lists(st.integers(1, 8), min_size=n, max_size=n)), dtype=np.int64)
    rate = np.array(
        draw(
            st.lists(
                st.lists(st.sampled_from([0.0, 0.5, 1.0, 2.0]), min_size=n_types, max_size=n_types),
                min_size=n,
                max_size=n,
            )
        ),
        dtype=np.float64,
    ).reshape(n, n_types)
    cap = np.array(draw(st.lists(st.integers(0, 16), min_size=n_types, max_size=n_types)))
    # some jobs run, within capacity, on a type they can use
    alloc_type = np.full(n, -1, dtype=np.int64)
    alloc_n = np.zeros(n, dtype=np.int64)
    left = cap.copy()
    for j in draw(st.permutations(range(n)))[: draw(st.integers(0, n))]:
        for t in range(n_types):
            if rate[j, t] > 0 and left[t] >= gang[j]:
                alloc_type[j], alloc_n[j] = t, gang[j]
                left[t] -= gang[j]
                break
    running = alloc_type >= 0
    run = np.array(draw(st.permutations(range(n))), dtype=np.int64)
    run = run[: draw(st.integers(0, n))]
    # running jobs are always active; a decision may leave some of them out
    run = np.unique(np.concatenate([run, np.flatnonzero(running)[: draw(st.integers(0, n))]]))
    run = np.array(draw(st.permutations(run.tolist())), dtype=np.int64)
    ndev = draw(st.booleans())
    nds = np.array([draw(st.integers(1, 8)) for _ in run], dtype=np.int64) if ndev else None
    typed = draw(st.booleans())
    types = (
        np.array([draw(st.integers(-1, n_types - 1)) for _ in run], dtype=np.int64)
        if typed
        else None
    )
    return {
        "run": run,
        "nds": nds,
        "types": types,
        "gang": gang,
        "rate": rate,
        "cap": cap.astype(np.int64),
        "blocking": draw(st.booleans()),
        "running": running,
        "alloc_n": alloc_n,
        "alloc_type": alloc_type,
        "is_active": np.ones(n, dtype=bool),
        "running_jobs": np.flatnonzero(running).astype(np.int64)[::-1].copy(),
    }


@settings(max_examples=400, deadline=None)
@given(dec=decisions())
def test_the_plan_is_what_the_loop_takes(dec: dict[str, Any]) -> None:
    run, nds, types = dec.pop("run"), dec.pop("nds"), dec.pop("types")
    empty = np.zeros(0, dtype=np.int64)
    got = call(
        plan_preemptive,
        run,
        empty if nds is None else nds,
        empty if types is None else types,
        **dec,
    )
    start, kept, stop = naive_plan(
        run.tolist(),
        dec["gang"][run].tolist() if nds is None else nds.tolist(),
        [-1] * len(run) if types is None else types.tolist(),
        dec["rate"],
        dec["cap"].tolist(),
        dec["blocking"],
        dec["alloc_type"].tolist(),
        dec["alloc_n"].tolist(),
    )
    assert got == (start, kept, stop, -1, 0)
    # the compiled kernel and the plain-Python run of its source agree
    if kernels.COMPILED:
        plain = call(
            plan_preemptive.py_func,
            run,
            empty if nds is None else nds,
            empty if types is None else types,
            **dec,
        )
        assert plain == got


def one_type(gang: list[int], cap: int, running: list[int]) -> dict[str, Any]:
    n = len(gang)
    alloc_n = np.zeros(n, dtype=np.int64)
    alloc_n[running] = np.array(gang, dtype=np.int64)[running]
    return {
        "gang": np.array(gang, dtype=np.int64),
        "rate": np.ones((n, 1)),
        "cap": np.array([cap], dtype=np.int64),
        "blocking": False,
        "running": alloc_n > 0,
        "alloc_n": alloc_n,
        "alloc_type": np.where(alloc_n > 0, 0, -1).astype(np.int64),
        "is_active": np.ones(n, dtype=bool),
        "running_jobs": np.array(running, dtype=np.int64),
    }


def test_a_long_queue_of_small_jobs_behind_a_big_one() -> None:
    # 20 devices: five 3-device jobs, an 8-device misfit, then 2-device jobs fill the gap of 5
    # twice over (2 + 2) and a 1-device job far down the queue takes the last device
    gang = [3] * 5 + [8] + [2] * 1000 + [1] * 3
    empty = np.zeros(0, dtype=np.int64)
    run = np.arange(len(gang), dtype=np.int64)
    start, kept, stop, bad, _ = call(plan_preemptive, run, empty, empty, **one_type(gang, 20, []))
    assert [s[0] for s in start] == [0, 1, 2, 3, 4, 6, 7, 1006]
    assert (kept, stop, bad) == ([], [], -1)


def test_running_jobs_left_out_or_resized_stop_and_restart() -> None:
    # jobs 0 and 1 run on 2 devices each; the decision lists 2 first, then 1 with 1 device
    st_ = one_type([2, 2, 3], 4, [0, 1])
    empty = np.zeros(0, dtype=np.int64)
    run = np.array([2, 1], dtype=np.int64)
    start, kept, stop, bad, _ = call(plan_preemptive, run, np.array([3, 1]), empty, **st_)
    assert start == [(2, 0, 3), (1, 0, 1)]
    assert (kept, stop, bad) == ([], [0, 1], -1)


@pytest.mark.parametrize(
    ("run", "active", "want"),
    [
        ([0, 1, 0], [True, True], (0, BAD_TWICE)),
        ([0, 1], [True, False], (1, BAD_INACTIVE)),
    ],
)
def test_a_job_listed_twice_or_not_active_is_reported(
    run: list[int], active: list[bool], want: tuple[int, int]
) -> None:
    st_ = one_type([1, 1], 4, [])
    st_["is_active"] = np.array(active)
    empty = np.zeros(0, dtype=np.int64)
    *_, bad, why = call(plan_preemptive, np.array(run, dtype=np.int64), empty, empty, **st_)
    assert (bad, why) == want


@settings(max_examples=300, deadline=None)
@given(
    free=st.lists(st.integers(0, 8), min_size=1, max_size=30),
    nd=st.integers(1, 8),
    subset=st.booleans(),
)
def test_best_fit_is_the_fullest_node_that_holds_the_gang(
    free: list[int], nd: int, subset: bool
) -> None:
    f = np.array(free, dtype=np.int64)
    nodes = np.arange(0, len(f), 2, dtype=np.int64) if subset else np.zeros(0, dtype=np.int64)
    cand = nodes.tolist() if subset else list(range(len(f)))
    fits = [(free[c], i) for i, c in enumerate(cand) if free[c] >= nd]
    want = min(fits)[1] if fits else -1
    assert best_fit_node(f, nodes, nd) == want
    if kernels.COMPILED:
        assert best_fit_node.py_func(f, nodes, nd) == want


@settings(max_examples=200, deadline=None)
@given(
    n=st.integers(1, 12),
    what=st.integers(0, 7),
    capped=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_sync_brings_running_jobs_to_now_as_the_formulas_say(
    n: int, what: int, capped: bool, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    now = 100.0
    f = {
        "cap": np.where(rng.random(n) < 0.5, rng.uniform(50, 150, n), np.inf),
        "base_t": rng.uniform(0, 90, n),
        "stall": rng.uniform(0, 110, n),
        "alloc_n": rng.integers(1, 9, n),
        "exe0": rng.uniform(0, 50, n),
        "att0": rng.uniform(0, 50, n),
        "round_rem": rng.uniform(100, 200, n),
        "crate": rng.uniform(0.1, 2, n),
        "share": rng.uniform(0, 100, n),
    }
    jobs_ = rng.permutation(n)[: rng.integers(0, n + 1)].astype(np.int64)
    outs = [np.full(n, -1.0) for _ in range(3)]
    sync = kernels.sync_running
    args = [f[k] for k in ("cap", "base_t", "stall", "alloc_n", "exe0", "att0")]
    args += [f[k] for k in ("round_rem", "crate", "share")]
    sync(jobs_, what, now, capped, *args, *outs)
    executed, attained, remaining = outs
    upto = np.minimum(now, f["cap"]) if capped else np.full(n, now)
    dt = upto - f["base_t"]
    rem = f["round_rem"] - f["crate"] * np.maximum(upto - f["stall"], 0.0)
    if capped:
        done = upto >= f["cap"]
        rem[done] = (f["round_rem"] - f["share"])[done]
    want = {
        kernels.SYNC_EXECUTED: (executed, f["exe0"] + dt),
        kernels.SYNC_ATTAINED: (attained, f["att0"] + dt * f["alloc_n"]),
        kernels.SYNC_REMAINING: (remaining, rem),
    }
    untouched = np.setdiff1d(np.arange(n), jobs_)
    for bit, (got, formula) in want.items():
        expected = formula[jobs_] if what & bit else np.full(len(jobs_), -1.0)
        assert got[jobs_].tolist() == expected.tolist()  # bit for bit
        assert (got[untouched] == -1.0).all()
    if kernels.COMPILED:
        plain = [np.full(n, -1.0) for _ in range(3)]
        sync.py_func(jobs_, what, now, capped, *args, *plain)
        assert [p.tolist() for p in plain] == [o.tolist() for o in outs]


@contextmanager
def plain_kernels() -> Iterator[None]:
    """Run every kernel the engine, the policies and the placements call as plain Python."""
    assert kernels.use_compiled(False) is False
    try:
        yield
    finally:
        assert kernels.use_compiled()


def test_the_switch_calls_the_compiled_or_the_plain_code() -> None:
    """Every kernel the engine, the policies and the placements call is one object whose
    call goes to numba's dispatcher or to the source, as the switch says."""
    seen = {
        name
        for module in (engine, tiresias, placement, las)
        for name, value in vars(module).items()
        if isinstance(value, kernels.Kernel)
    }
    assert seen >= {
        "decide_greedy",
        "decide_preemptive",
        "least_first",
        "queued_head",
        "reserve_and_start",
        "sync_packed",
        "tiresias_order",
    }
    for name, kernel in kernels.kernels().items():
        assert getattr(kernels, name) is kernel
        assert type(kernel).__call__ is kernel.dispatcher  # compiled here (fixture)
    with plain_kernels():
        assert not kernels.compiled_in_use()
        for kernel in kernels.kernels().values():
            assert type(kernel).__call__ is kernel.py_func
    assert kernels.compiled_in_use()


@settings(max_examples=60, deadline=None)
@given(sc=scenarios())
def test_the_engine_gives_the_same_results_without_numba(sc: Any) -> None:
    """The library works with numpy alone: the kernels' plain-Python source gives the same
    run, bit for bit."""
    if not kernels.COMPILED:
        pytest.fail("numba is a pinned dependency: the compiled kernels must be in use")
    t, cl, speed, restore, name = sc
    params = PARAMS.get(name, {})
    rates = fixed_rates(t, cl, speed=speed, restore_s=restore)
    fast = simulate(t, cl, make_policy(name, **params), rates=rates)
    with plain_kernels():
        plain = simulate(t, cl, make_policy(name, **params), rates=rates)
    assert plain.finish.tobytes() == fast.finish.tobytes()
    assert plain.preemptions.tolist() == fast.preemptions.tolist()
    assert plain.stints.node.tolist() == fast.stints.node.tolist()
    assert plain.attained.tobytes() == fast.attained.tobytes()


class _NaiveQueues:
    """Tiresias's queues as plain lists, one decision at a time (the rules of
    :func:`kernels.tiresias_order`, written the slow, obvious way)."""

    def __init__(self, thr: list[float], knob: float, sim: bool) -> None:
        self.thr, self.knob, self.sim = thr, knob, sim
        self.q: list[list[tuple[int, int]]] = [[] for _ in range(len(thr) + 1)]  # (job, block)
        self.off: dict[int, float] = {}
        self.lp: dict[int, float] = {}

    def step(self, active, running, attained, gang, elapsed):  # type: ignore[no-untyped-def]
        act = set(active.tolist())
        for qi, lst in enumerate(self.q):
            lst = [(j, b) for j, b in lst if j in act]
            run = [j for j, b in lst if b == 0]
            wait = [j for j, b in lst if b == 1]
            self.q[qi] = [(j, 0) for j in run if running[j]] + [(j, 0) for j in wait if running[j]]
            self.q[qi] += [(j, 1) for j in run if not running[j]]
            self.q[qi] += [(j, 1) for j in wait if not running[j]]
        seen = {j for lst in self.q for j, _ in lst}
        if self.knob > 0 and elapsed > 0:
            for lst in self.q:
                for j, b in lst:
                    if b == 1 and attained[j] - self.off[j] > 1e-6:
                        self.lp[j] += elapsed
        for j in active.tolist():
            if j not in seen:
                self.off[j], self.lp[j] = 0.0, 0.0
                self.q[0].append((j, 1))
        where = {j: qi for qi, lst in enumerate(self.q) for j, _ in lst}
        for j in active.tolist():
            qi, s = where[j], attained[j] - self.off[j]
            to = qi
            if running[j]:
                while to < len(self.thr) and s + 1e-6 >= self.thr[to]:
                    to += 1
                    if self.sim:
                        break
            elif self.knob > 0 and qi > 0 and s > 1e-6:
                due = s / gang[j] * self.knob
                if self.lp[j] + 1e-6 >= (np.floor(due) if self.sim else due):
                    to, self.off[j], self.lp[j] = 0, float(attained[j]), 0.0
            if to != qi:
                self.q[qi] = [(k, b) for k, b in self.q[qi] if k != j]
                self.q[to].append((j, 1))
        return [j for lst in self.q for b0 in (0, 1) for j, b in lst if b == b0]


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**16),
    knob=st.sampled_from([0.0, 0.5, 2.0]),
    sim=st.booleans(),
    compiled=st.booleans(),
    devices=st.integers(1, 12),
)
def test_tiresias_order_keeps_the_queues_of_a_naive_list_model(
    seed: int, knob: float, sim: bool, compiled: bool, devices: int
) -> None:
    """Random histories (arrivals, departures, running sets, service) through the kernel and
    through plain lists: the same order after every decision, up to where ``devices`` are
    all counted (the kernel stops listing there)."""
    rng = np.random.default_rng(seed)
    n, thr = 30, np.array([3.0, 8.0])
    fn = (
        kernels.tiresias_order
        if compiled
        else getattr(kernels.tiresias_order, "py_func", kernels.tiresias_order)
    )
    mem = np.zeros((8, n), dtype=np.int64)
    mem[kernels.TQ_QID] = kernels.TIRESIAS_UNSEEN
    mem[kernels.TQ_NXT] = mem[kernels.TQ_PRV] = -1
    ends = np.full(4 * 3 + 3 + 1, -1, dtype=np.int64)
    ends[12:14] = 0
    fmem = np.zeros((2, n))
    flags = kernels.TQ_SIM if sim else 0
    gang = rng.integers(1, 4, n).astype(np.int64)
    submit = np.arange(n, dtype=np.float64)
    attained = np.zeros(n)
    gone = np.zeros(n, dtype=bool)
    naive = _NaiveQueues(thr.tolist(), knob, sim)
    arrived = 0
    for _ in range(25):
        arrived = min(n, arrived + int(rng.integers(0, 4)))
        gone[:arrived] |= rng.random(arrived) < 0.05
        active = np.flatnonzero(~gone[:arrived]).astype(np.int64)
        is_active = np.zeros(n, dtype=bool)
        is_active[active] = True
        running = np.zeros(n, dtype=bool)
        running[active[rng.random(len(active)) < 0.4]] = True
        attained[running] += rng.choice([0.5, 1.0, 3.0, 5.0], int(running.sum()))
        elapsed = float(rng.choice([0.0, 1.0, 4.0]))
        k, _ = fn(
            rng.permutation(np.flatnonzero(running)).astype(np.int64), is_active, running,
            attained, gang, submit, np.ones((n, 1)), np.where(running, 0, -1).astype(np.int64),
            np.array([devices], dtype=np.int64), float(arrived - 1), elapsed, thr, knob, flags,
            mem, ends, fmem,
        )  # fmt: skip
        want, left = [], devices
        for j in naive.step(active, running, attained, gang, elapsed):
            want.append(j)
            if gang[j] <= left:
                left -= int(gang[j])
                if left == 0:
                    break
        assert mem[kernels.TQ_ORDER, :k].tolist() == want
        assert not mem[kernels.TQ_MARK].any()


def _fill_in_order_reference(nodes: np.ndarray, f: np.ndarray, nd: int) -> tuple[list, list]:
    cum = np.cumsum(f)
    k = int(np.searchsorted(cum, nd)) + 1
    counts = f[:k].copy()
    counts[-1] -= int(cum[k - 1]) - nd
    return nodes[:k].tolist(), counts.tolist()


@settings(max_examples=300, deadline=None)
@given(
    free=st.lists(st.integers(0, 8), min_size=1, max_size=30),
    seed=st.integers(0, 2**16),
)
def test_largest_first_takes_the_freest_nodes_then_the_lowest_index(
    free: list[int], seed: int
) -> None:
    f = np.array(free, dtype=np.int64)
    rng = np.random.default_rng(seed)
    nodes = rng.permutation(len(f))[: rng.integers(1, len(f) + 1)].astype(np.int64)
    total = int(f[nodes].sum())
    if total == 0:
        return
    nd = int(rng.integers(1, total + 1))
    order = np.lexsort((nodes, -f[nodes]))  # what the strategy promises
    want = _fill_in_order_reference(nodes[order], f[nodes][order], nd)
    got = kernels.take_largest_first(f, nodes, nd)
    assert (got[0].tolist(), got[1].tolist()) == want
    assert int(got[1].sum()) == nd
    if kernels.COMPILED:
        plain = kernels.take_largest_first.py_func(f, nodes, nd)
        assert (plain[0].tolist(), plain[1].tolist()) == want


def test_take_nodes_applies_a_valid_placement_and_refuses_an_invalid_one() -> None:
    node_free = np.array([4, 2, 8], dtype=np.int64)
    busy = np.zeros(2)
    group = np.array([0, 1, 1], dtype=np.int64)
    ntype = np.array([0, 0, 1], dtype=np.int64)
    take = kernels.take_nodes
    # wrong total, more than a node has, a node of another type: nothing changes
    for nodes, counts in [([0, 1], [4, 1]), ([0, 1], [5, 1]), ([0, 2], [4, 2])]:
        ok = take(node_free, busy, group, ntype, np.array(nodes), np.array(counts), 0, 6)
        assert not ok
        assert node_free.tolist() == [4, 2, 8] and busy.tolist() == [0, 0]
    assert take(node_free, busy, group, ntype, np.array([0, 1]), np.array([4, 2]), 0, 6)
    assert node_free.tolist() == [0, 0, 8] and busy.tolist() == [4.0, 2.0]


@pytest.mark.parametrize(
    ("nodes", "nd", "want"),
    [
        ([1], 1, np.inf),  # one device: no link
        ([1], 4, 300.0),  # one node: its intra-node link
        ([0, 1], 4, 100 / 8),  # one rack: the slowest NIC
        ([0, 2], 4, 200 / 8 / 3),  # two racks: slowest NIC over the worst oversubscription
    ],
)
def test_link_is_the_slowest_one_the_placement_crosses(
    nodes: list[int], nd: int, want: float
) -> None:
    intra = np.array([600.0, 300.0, 600.0])
    nic = np.array([200.0, 100.0, 400.0])
    rack = np.array([0, 0, 1], dtype=np.int64)
    oversub = np.array([1.0, 3.0])
    got = kernels.link_gbs(np.array(nodes, dtype=np.int64), nd, intra, nic, rack, oversub)
    assert got == pytest.approx(want)


@pytest.mark.parametrize("policy", ["fifo", "srtf", "tiresias", "las"])
@pytest.mark.parametrize("where", ["consolidate", "topology", "spread"])
def test_multi_node_placements_are_the_same_without_numba(policy: str, where: str) -> None:
    rng = np.random.default_rng(7)
    rows = [
        (float(t), int(g), float(d))
        for t, g, d in zip(
            np.sort(rng.uniform(0, 400, 60)),
            rng.choice([1, 2, 3, 4, 6, 8], 60),
            rng.uniform(5, 200, 60),
            strict=True,
        )
    ]
    t = jobs(rows)
    cl = cluster([("A", 4)] * 6 + [("B", 8)] * 2, racks=[0, 0, 0, 1, 1, 1, 2, 2])
    params = PARAMS.get(policy, {})

    def run() -> Any:
        rates = fixed_rates(t, cl, speed=[1.0, 2.0], restore_s=1.0)
        return simulate(t, cl, make_policy(policy, **params), make_placement(where), rates=rates)

    fast = run()
    assert (fast.max_nodes > 1).any(), "the trace must need multi-node placements"
    with plain_kernels():
        plain = run()
    assert plain.finish.tobytes() == fast.finish.tobytes()
    assert plain.stints.node.tolist() == fast.stints.node.tolist()
    assert plain.stints.devices.tolist() == fast.stints.devices.tolist()


def test_warm_up_compiles_every_kernel() -> None:
    """``make install`` and the Docker build call warm_up so no user waits for numba: in a
    fresh process, it must call (so compile or load) every kernel that the engine, the
    policies and the placements call (the kernels only other kernels call are compiled into
    their callers)."""
    if not kernels.COMPILED:
        pytest.fail("numba is a pinned dependency: the compiled kernels must be in use")
    code = (
        "from clustersim import engine, kernels\n"
        "from clustersim import colocation, network\n"
        "from scheduling import allocation, centre, gandiva, gandiva_fair, gavel, gavel_packing\n"
        "from scheduling import gavel_lp, las, placement, themis, tiresias\n"
        "engine.warm_up()\n"
        "mods = (engine, colocation, network, placement, tiresias, gavel, las, allocation,\n"
        "        centre, gandiva, gandiva_fair, gavel_packing, themis, gavel_lp)\n"
        "ks = {k for m in mods for k in dir(m) if hasattr(getattr(m, k), 'py_func')}\n"
        "print(len(ks), sorted(k for k in ks if not getattr(kernels, k).signatures))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=300
    ).stdout.split(maxsplit=1)
    assert int(out[0]) >= 13
    assert out[1].strip() == "[]"


def test_kernels_still_compile_where_no_cache_directory_is_usable(tmp_path: Path) -> None:
    """numba refuses ``cache=True`` when neither ``NUMBA_CACHE_DIR``, ``__pycache__`` next to
    the source nor the user's cache directory can be created; the kernels then compile in each
    process instead of failing the import. (Files stand where the directories would go, so
    this holds even for root, who ignores permissions.)"""
    (tmp_path / "kernels_copy.py").write_text(Path(kernels.__file__).read_text())
    (tmp_path / "__pycache__").write_text("not a directory")
    (tmp_path / "cache").write_text("not a directory")
    code = (
        "import sys, numpy as np\n"
        f"sys.path.insert(0, {str(tmp_path)!r})\n"
        "import kernels_copy as k\n"
        "on = k.use_compiled()\n"
        "fit = k.best_fit_node(np.array([3, 1, 2]), np.zeros(0, dtype=np.int64), 2)\n"
        "print(on, fit, len(k.best_fit_node.signatures))\n"
    )
    env = {**os.environ, "HOME": str(tmp_path / "cache"), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    env.pop("NUMBA_CACHE_DIR", None)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "2", "1"]


@pytest.mark.parametrize("policy", ["fifo", "tiresias", "las", "gavel-fifo", "gavel-las"])
def test_runs_are_the_same_on_either_side_of_the_threshold(
    policy: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A small run keeps the plain-Python kernels, a run of COMPILE_FROM_JOBS jobs compiles
    them from its start, a small run that reaches COMPILE_AFTER_EVENTS event batches switches
    halfway: the same results bit for bit."""
    rng = np.random.default_rng(3)
    rows = [
        (float(t), int(g), float(d))
        for t, g, d in zip(
            np.sort(rng.uniform(0, 300, 40)),
            rng.choice([1, 2, 4], 40),
            rng.uniform(5, 120, 40),
            strict=True,
        )
    ]
    t = jobs(rows)
    cl = cluster([("A", 4)] * 2 + [("B", 4)], racks=[0, 0, 1])
    params = PARAMS.get(policy, {})

    def run() -> Any:
        rates = fixed_rates(t, cl, speed=[1.0, 2.0], restore_s=1.0)
        return simulate(t, cl, make_policy(policy, **params), make_placement("spread"), rates=rates)

    fast = run()
    runs = {}
    with plain_kernels():
        for name, from_jobs, after_events in [
            ("plain", len(t) + 1, fast.events + 1),
            ("from the start", len(t), fast.events + 1),
            ("halfway", len(t) + 1, max(fast.events // 2, 2)),
        ]:
            kernels.use_compiled(False)
            monkeypatch.setattr(kernels, "COMPILE_FROM_JOBS", from_jobs)
            monkeypatch.setattr(kernels, "COMPILE_AFTER_EVENTS", after_events)
            runs[name] = run()
            assert kernels.compiled_in_use() == (name != "plain"), name
    for name, other in runs.items():
        assert other.events == fast.events, name
        assert other.finish.tobytes() == fast.finish.tobytes(), name
        assert other.attained.tobytes() == fast.attained.tobytes(), name
        assert other.stints.node.tolist() == fast.stints.node.tolist(), name


def test_tiresias_kernel_and_policies_share_the_service_tolerance() -> None:
    assert kernels.TQ_EPS == SERVICE_EPS


@settings(max_examples=300, deadline=None)
@given(seed=st.integers(0, 2**16), compiled=st.booleans())
def test_yarn_nodes_is_the_simulators_scheme(seed: int, compiled: bool) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 12))
    cap = rng.choice([2, 4, 8], n).astype(np.int64)
    rack = rng.integers(0, 3, n).astype(np.int64)  # racks interleave in node order
    free = np.minimum(rng.integers(0, 9, n), cap).astype(np.int64)
    cand = np.flatnonzero(free > 0).astype(np.int64)
    nd = int(rng.integers(1, 20))
    fn = kernels.yarn_nodes if compiled else kernels.yarn_nodes.py_func
    out_n, out_c = np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64)
    k = fn(free, cand, rack, cap, nd, out_n, out_c)
    want = yarn_reference(free, cand, rack, cap, nd)
    got = None if k == 0 else (out_n[:k].tolist(), out_c[:k].tolist())
    assert got == (None if want is None else (list(want[0]), list(want[1])))


def _gavel_pass_reference(
    active: np.ndarray,
    order: np.ndarray,
    credited: np.ndarray,
    tt0: np.ndarray,
    x: np.ndarray,
    in_alloc: np.ndarray,
    deficit: np.ndarray,
    rate: np.ndarray,
    gang: np.ndarray,
    capacity: np.ndarray,
    remaining: np.ndarray,
    in_steps: np.ndarray,
    half: float,
    base: float,
    skip: bool,
) -> tuple[list[tuple[int, int]], list[int]]:
    """Gavel's pass the obvious way: totals over every job of the trace, one at a time in job
    order; priorities by the formulas; each type's candidates sorted on a key tuple."""
    n, nt = credited.shape
    total = []
    for t in range(nt):
        acc = 0.0
        for j in range(n):
            acc += float(credited[j, t] - tt0[j, t])
        total.append(base + acc)
    prio = {}
    for j in active.tolist():
        for t in range(nt):
            job_time = half + float(credited[j, t] - tt0[j, t])
            fraction = job_time / total[t] if total[t] > 0 else 0.0
            share = float(x[j, t])
            p = share / fraction if fraction > 0 else share * 1e9
            if share == 0 or rate[j, t] == 0 or not in_alloc[j]:
                p = 0.0
            prio[j, t] = p
    left = capacity.tolist()
    placed: list[tuple[int, int]] = []
    for t in order.tolist():
        cand = [
            j
            for j in active.tolist()
            if rate[j, t] > 0 and gang[j] <= left[t] and (not skip or prio[j, t] > 0)
        ]
        cand.sort(key=lambda j: (-prio[j, t], -deficit[j, t], -x[j, t], j))
        for j in cand:
            if left[t] == 0:
                break
            if gang[j] <= left[t] and j not in {p for p, _ in placed}:
                left[t] -= int(gang[j])
                placed.append((j, t))
    chosen = [(j, t) for j, t in placed if in_alloc[j]]
    fail = [j for j, _ in chosen if gang[j] > 1 and in_steps[j] and remaining[j] < gang[j]]
    return [(j, t) for j, t in chosen if j not in fail], fail


@settings(max_examples=300, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), compiled=st.booleans())
def test_gavel_pass_is_the_pass_over_every_job(seed: int, compiled: bool) -> None:
    """Random rounds states, with ties in priority, deficit and share: the kernel's placement
    and failing gangs are the reference's, its totals over the touched jobs are the totals
    over every job, and the touched jobs grow by those that run."""
    rng = np.random.default_rng(seed)
    n, nt = int(rng.integers(1, 25)), int(rng.integers(1, 4))
    active = np.flatnonzero(rng.random(n) < 0.7).astype(np.int64)
    touched_mask = rng.random(n) < 0.4
    type_time = rng.choice([0.0, 120.0, 360.0, 1000.5], (n, nt))
    adj = np.where(rng.random((n, nt)) < 0.2, rng.choice([30.0, 360.0], (n, nt)), 0.0)
    # rows outside the touched jobs have credited == tt0, as the policy keeps them
    gained = np.where(touched_mask[:, None], rng.choice([0.0, 360.0, 17.25], (n, nt)), 0.0)
    tt0 = np.maximum(type_time + adj - gained, 0.0)
    tt0[~touched_mask] = (type_time + adj)[~touched_mask]
    x = rng.choice([0.0, 0.25, 1 / 3, 1.0], (n, nt))
    in_alloc = rng.random(n) < 0.8
    deficit = rng.choice([-30.0, 0.0, 0.0, 45.5], (n, nt))
    rate = rng.choice([0.0, 1.0, 2.5], (n, nt))
    gang = rng.choice([1, 1, 2, 4], n).astype(np.int64)
    capacity = rng.integers(0, 9, nt).astype(np.int64)
    remaining = rng.choice([0.5, 1.0, 3.0, 100.0], n)
    in_steps = rng.random(n) < 0.5
    order = rng.permutation(nt).astype(np.int64)
    half = float(rng.choice([0.0, 180.0]))
    base = half * len(active)
    skip = bool(rng.random() < 0.5)
    touched = np.zeros(n, dtype=np.int64)
    before = rng.permutation(np.flatnonzero(touched_mask)).astype(np.int64)
    touched[: len(before)] = before
    mark = touched_mask.astype(np.int8)
    out = [np.full(n, -7, dtype=np.int64) for _ in range(3)]
    fn = kernels.gavel_pass if compiled else kernels.gavel_pass.py_func
    args = (active, order, type_time, adj, tt0, x, in_alloc, deficit, rate, gang, capacity)
    n_run, n_fail, n_touched = fn(
        *args, remaining, in_steps, half, base, skip, touched, len(before), mark, *out
    )
    run, fail = _gavel_pass_reference(
        active, order, type_time + adj, tt0, x, in_alloc, deficit, rate, gang, capacity,
        remaining, in_steps, half, base, skip,
    )  # fmt: skip
    assert list(zip(out[0][:n_run].tolist(), out[1][:n_run].tolist(), strict=True)) == run
    assert out[2][:n_fail].tolist() == fail
    now_touched = set(before.tolist()) | {j for j, _ in run}
    assert sorted(touched[:n_touched].tolist()) == sorted(now_touched)
    assert np.flatnonzero(mark).tolist() == sorted(now_touched)
    if compiled and kernels.COMPILED:  # the plain-Python run of the source agrees
        touched2, mark2 = touched.copy(), touched_mask.astype(np.int8)
        touched2[: len(before)] = before
        out2 = [np.full(n, -7, dtype=np.int64) for _ in range(3)]
        got = kernels.gavel_pass.py_func(
            *args, remaining, in_steps, half, base, skip, touched2, len(before), mark2, *out2
        )
        assert got == (n_run, n_fail, n_touched)
        for a, b in zip(out, out2, strict=True):
            assert a.tolist() == b.tolist()


@settings(max_examples=100, deadline=None)
@given(seed=st.integers(0, 2**16), compiled=st.booleans())
def test_sync_types_packed_is_the_numpy_update(seed: int, compiled: bool) -> None:
    """The time on each type and the device-time of running jobs, brought up to ``now`` (or
    to a whole-step round's cap), as the engine's numpy update did, bit for bit."""
    from clustersim.kernels import (
        JF_CAP,
        JF_TT_SYNCED,
        JI_ALLOC_N,
        JI_ALLOC_TYPE,
        N_JF,
        N_JI,
    )

    rng = np.random.default_rng(seed)
    n, nt = 12, 3
    jf, ji = np.zeros((N_JF, n)), np.zeros((N_JI, n), dtype=np.int64)
    jf[JF_CAP] = np.where(rng.random(n) < 0.3, rng.uniform(5, 15, n), np.inf)
    jf[JF_TT_SYNCED] = rng.uniform(0, 5, n)
    ji[JI_ALLOC_TYPE] = rng.integers(0, nt, n)
    ji[JI_ALLOC_N] = rng.integers(1, 9, n)
    order = rng.permutation(n).astype(np.int64)
    k, now = int(rng.integers(0, n + 1)), float(rng.uniform(5, 20))
    tt, dt_ = rng.uniform(0, 9, (n, nt)), rng.uniform(0, 9, (n, nt))
    want_tt, want_dt, want_sync = tt.copy(), dt_.copy(), jf[JF_TT_SYNCED].copy()
    j = order[:k]
    upto = np.minimum(now, jf[JF_CAP, j])
    d = upto - want_sync[j]
    t = ji[JI_ALLOC_TYPE, j]
    want_tt[j, t] += d
    want_dt[j, t] += d * ji[JI_ALLOC_N, j]
    want_sync[j] = upto
    fn = kernels.sync_types_packed if compiled else kernels.sync_types_packed.py_func
    fn(order, k, now, jf, ji, tt, dt_)
    assert tt.tobytes() == want_tt.tobytes() and dt_.tobytes() == want_dt.tobytes()
    assert jf[JF_TT_SYNCED].tobytes() == want_sync.tobytes()


@settings(max_examples=100, deadline=None)
@given(seed=st.integers(0, 2**16), compiled=st.booleans())
def test_rearm_whole_steps_is_the_numpy_round(seed: int, compiled: bool) -> None:
    """A whole-step round as the engine's numpy code started it: shares, caps, finishes,
    epochs and the completions pushed, bit for bit."""
    from clustersim import kernels as K

    rng = np.random.default_rng(seed)
    n, k, now, round_len = 10, int(rng.integers(0, 11)), float(rng.uniform(0, 50)), 360.0
    jf, ji = np.zeros((K.N_JF, n)), np.zeros((K.N_JI, n), dtype=np.int64)
    jf[K.JF_CRATE] = rng.uniform(0.01, 3, n)
    jf[K.JF_REMAINING] = np.where(
        rng.random(n) < 0.3, rng.uniform(0, 50, n), rng.uniform(0, 2e3, n)
    )
    jf[K.JF_STALL] = rng.uniform(0, 60, n)
    jf[K.JF_EXECUTED], jf[K.JF_ATTAINED] = rng.uniform(0, 9, n), rng.uniform(0, 9, n)
    ji[K.JI_EPOCH] = rng.integers(0, 5, n)
    order = rng.permutation(n).astype(np.int64)
    want_f, want_i = jf.copy(), ji.copy()
    j = order[:k]
    r, rem = want_f[K.JF_CRATE, j], want_f[K.JF_REMAINING, j]
    begin = np.maximum(now, want_f[K.JF_STALL, j])
    share = np.minimum(np.floor(r * round_len), rem)
    fin, cap = begin + rem / r, begin + share / r
    done = share >= rem
    cap[done] = fin[done]
    for row, v in ((K.JF_FIN, fin), (K.JF_CAP, cap), (K.JF_ROUND_REM, rem), (K.JF_SHARE, share)):
        want_f[row, j] = v
    want_f[K.JF_STALL, j] = begin
    want_f[K.JF_BASE_T, j] = want_f[K.JF_TT_SYNCED, j] = now
    want_f[K.JF_EXE0, j], want_f[K.JF_ATT0, j] = want_f[K.JF_EXECUTED, j], want_f[K.JF_ATTAINED, j]
    want_i[K.JI_EPOCH, j] += 1
    heap_t, heap_je = np.zeros((2, 16)), np.zeros((2, 2, 16), dtype=np.int64)
    ctr = np.zeros(K.N_CTR, dtype=np.int64)
    fn = K.rearm_whole_steps if compiled else K.rearm_whole_steps.py_func
    end = fn(order, k, now, round_len, jf, ji, heap_t, heap_je, ctr)
    assert jf.tobytes() == want_f.tobytes() and ji.tobytes() == want_i.tobytes()
    assert end == (cap.max() if k else -np.inf)
    pushed = sorted(
        zip(
            heap_t[0, : ctr[K.CTR_HEAP]].tolist(),
            heap_je[0, 0, : ctr[K.CTR_HEAP]].tolist(),
            strict=True,
        )
    )
    assert pushed == sorted(zip(fin[done].tolist(), j[done].tolist(), strict=True))


@settings(max_examples=100, deadline=None)
@given(
    seed=st.integers(0, 2**16),
    limit=st.integers(-1, 12),
    width=st.integers(0, 20),
    compiled=st.booleans(),
)
def test_queued_head_is_the_first_queued_jobs_in_order(
    seed: int, limit: int, width: int, compiled: bool
) -> None:
    """The head of the queue a greedy policy asks for (``State.queued(limit)``): the first
    ``limit`` listed jobs that are active and not running, in the listed order."""
    rng = np.random.default_rng(seed)
    n = 20
    a = np.sort(rng.choice(n, size=width, replace=False)).astype(np.int64)
    is_active, running = rng.random(n) < 0.7, rng.random(n) < 0.4
    fn = kernels.queued_head if compiled else kernels.queued_head.py_func
    got = fn(a, is_active, running, limit)
    want = [int(j) for j in a if is_active[j] and not running[j]][: max(limit, 0)]
    assert got.dtype == np.int64 and got.tolist() == want


@settings(max_examples=150, deadline=None)
@given(
    seed=st.integers(0, 2**16), n=st.integers(0, 200), ties=st.booleans(), compiled=st.booleans()
)
def test_least_first_is_the_stable_sort_whatever_the_previous_order(
    seed: int, n: int, ties: bool, compiled: bool
) -> None:
    """LAS's order: the active jobs by key, ties to the lower index, as a stable sort of the
    ascending active jobs gives it, from any previous order (jobs gone, jobs new, any
    shuffle; long shuffles take the merge sort)."""
    rng = np.random.default_rng(seed)
    key = rng.integers(0, 4, n).astype(float) if ties else rng.random(n) * 100
    active = np.flatnonzero(rng.random(n) < 0.8).astype(np.int64)
    prev = rng.permutation(n)[: int(rng.integers(0, n + 1))].astype(np.int64)
    order = np.full(n, -1, dtype=np.int64)
    order[: len(prev)] = prev
    mark = np.zeros(n, dtype=np.int8)
    fn = kernels.least_first if compiled else kernels.least_first.py_func
    k = fn(active, key, order, len(prev), mark)
    assert k == len(active)
    assert order[:k].tolist() == active[np.argsort(key[active], kind="stable")].tolist()
    assert not mark.any()
    # and again from that order, after some keys grew (the usual case between two calls)
    key[active[: len(active) // 2]] += rng.random(len(active) // 2) * 3
    k = fn(active, key, order, k, mark)
    assert order[:k].tolist() == active[np.argsort(key[active], kind="stable")].tolist()


def _gandiva_place_reference(
    types: list[int], orders: np.ndarray, ok: np.ndarray, ea: np.ndarray, eb: np.ndarray,
    gang: np.ndarray, left: list[int], n_jobs: int,
) -> list[tuple[int, int]]:  # fmt: skip
    """gavel-gandiva's placement as its numpy version did it: per type, the entries that can
    run there in the type's order; repeatedly the first whose jobs are free and whose gang
    fits, the search going on after it, until the type is full or none fits."""
    taken = np.zeros(n_jobs, dtype=bool)
    placed = []
    for t in types:
        cand = orders[t][ok[orders[t], t]]
        while left[t] > 0 and len(cand):
            a, b = ea[cand], eb[cand]
            free = ~taken[a] & ((b < 0) | ~taken[np.maximum(b, 0)]) & (gang[cand] <= left[t])
            i = int(np.argmax(free))
            if not free[i]:
                break
            e = int(cand[i])
            cand = cand[i + 1 :]
            left[t] -= int(gang[e])
            taken[ea[e]] = True
            if eb[e] >= 0:
                taken[eb[e]] = True
            placed.append((e, t))
    return placed


@settings(max_examples=300, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), compiled=st.booleans())
def test_gandiva_round_is_the_numpy_round(seed: int, compiled: bool) -> None:
    """Random entries (jobs and pairs of jobs, shared members, gangs that do not fit, tied
    priorities, deficits and allocations, types never run on): the kernel places what the
    numpy round placed (priorities, a full lexsort per type, the greedy pass), in its
    order, and leaves the same room."""
    rng = np.random.default_rng(seed)
    n_jobs, nt = int(rng.integers(1, 12)), int(rng.integers(1, 4))
    k = int(rng.integers(0, 30))
    ea = rng.integers(0, n_jobs, k).astype(np.int64)
    eb = np.where(rng.random(k) < 0.5, rng.integers(0, n_jobs, k), -1).astype(np.int64)
    eb[eb == ea] = -1
    gang = rng.choice([1, 1, 2, 4], k).astype(np.int64)
    ok = rng.random((k, nt)) < 0.8
    inside = rng.random(k) < 0.8
    ran = rng.choice([0.0, 180.0, 360.0, 540.0, 97.3], (k, nt))
    work = rng.choice([0.0, 720.0, 1800.0, 3600.0], nt)
    deficit = rng.choice([-90.0, 0.0, 45.5, 180.0], (k, nt))
    alloc = rng.choice([0.0, 0.125, 0.25, 1 / 3], (k, nt))
    types = rng.permutation(nt).astype(np.int64)
    left = rng.integers(0, 9, nt).astype(np.int64)
    # the numpy round (GavelGandiva._priorities and _place before the kernel)
    with np.errstate(divide="ignore", invalid="ignore"):
        frac = np.where(work[None, :] == 0.0, 0.0, ran / work[None, :])
        prio = np.where(frac > 0.0, alloc / frac, alloc * 1e9)
    prio[(alloc == 0.0) | ~ok | ~inside[:, None]] = 0.0
    pos = np.arange(k)
    orders = np.empty((nt, k), dtype=np.int64)
    for t in range(nt):
        orders[t] = np.lexsort((pos, -alloc[:, t], -deficit[:, t], -prio[:, t]))
    want = _gandiva_place_reference(types.tolist(), orders, ok, ea, eb, gang, left.tolist(), n_jobs)
    fn = kernels.gandiva_round if compiled else kernels.gandiva_round.py_func
    out_e, out_t = np.full(k, -1, dtype=np.int64), np.full(k, -1, dtype=np.int64)
    room, taken = left.copy(), np.zeros(n_jobs, dtype=bool)
    n = fn(types, ran, work, deficit, alloc, ok, inside, ea, eb, gang, room, taken, out_e, out_t)
    assert list(zip(out_e[:n].tolist(), out_t[:n].tolist(), strict=True)) == want
    used = np.zeros(nt, dtype=np.int64)
    for e, t in want:
        used[t] += gang[e]
    assert (room == left - used).all()
