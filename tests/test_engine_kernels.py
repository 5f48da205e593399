"""The engine's compiled bookkeeping (start, stop, reserve, event heaps) against naive models,
and against the plain-Python run of its source."""

from __future__ import annotations

import heapq
import math
from bisect import bisect_right
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clustersim import kernels
from clustersim.engine import EngineOptions, _Run, simulate
from clustersim.errors import SimulationError
from clustersim.kernels import CTR_HEAP, CTR_MARKS, CTR_RUN, CTR_STINTS, HEAP_FINISH, HEAP_MARK
from scheduling.base import SERVICE_EPS, Placement
from scheduling.placement import Spread
from scheduling.registry import make_placement, make_policy
from tests.simple import cluster, fixed_rates, jobs
from tests.test_kernels import naive_plan, plain_kernels


def test_the_kernels_mark_epsilon_is_the_policies() -> None:
    assert kernels.MARK_EPS == SERVICE_EPS


# ------------------------------------------------------------------------------ heaps
@st.composite
def heap_ops(draw: Any) -> list[tuple[str, float, int]]:
    ops = []
    for _ in range(draw(st.integers(1, 60))):
        op = draw(st.sampled_from(["push", "push", "push", "stop", "pop", "peek", "compact"]))
        ops.append((op, float(draw(st.integers(0, 20))), draw(st.integers(0, 5))))
    return ops


def run_heap(ops: list[tuple[str, float, int]], plain: bool) -> list[object]:
    """Replay ``ops`` on heap ``HEAP_MARK`` (the other one must stay untouched)."""
    k = kernels
    push, pop, peek, compact = (
        (f.py_func if plain else f) for f in (k.heap_push, k.heap_pop, k.heap_peek, k.heap_compact)
    )
    heap_t = np.zeros((2, 128))
    heap_je = np.zeros((2, 2, 128), dtype=np.int64)
    ctr = np.zeros(k.N_CTR, dtype=np.int64)
    epoch = np.zeros(6, dtype=np.int64)
    seen: list[object] = []
    for op, t, j in ops:
        if op == "push":
            push(heap_t, heap_je, ctr, HEAP_MARK, t, j, int(epoch[j]))
        elif op == "stop":
            epoch[j] += 1
        elif op == "pop" and ctr[CTR_MARKS]:
            seen.append(tuple(pop(heap_t, heap_je, ctr, HEAP_MARK)))
        elif op == "peek":
            seen.append(peek(heap_t, heap_je, ctr, HEAP_MARK, epoch))
            both = (k.next_times.py_func if plain else k.next_times)(heap_t, heap_je, ctr, epoch)
            assert both == (math.inf, seen[-1])  # the completion heap stays empty
        elif op == "compact":
            compact(heap_t, heap_je, ctr, HEAP_MARK, epoch)
    assert ctr[CTR_HEAP] == 0 and not heap_t[HEAP_FINISH].any()
    return seen


def naive_heap(ops: list[tuple[str, float, int]]) -> list[object]:
    """The same with :mod:`heapq`: compaction drops stale entries, peek drops stale tops."""
    heap: list[tuple[float, int, int]] = []
    epoch = [0] * 6
    seen: list[object] = []
    for op, t, j in ops:
        if op == "push":
            heapq.heappush(heap, (t, j, epoch[j]))
        elif op == "stop":
            epoch[j] += 1
        elif op == "pop" and heap:
            seen.append(heapq.heappop(heap))
        elif op == "peek":
            while heap and heap[0][2] != epoch[heap[0][1]]:
                heapq.heappop(heap)
            seen.append(heap[0][0] if heap else math.inf)
        elif op == "compact":
            heap = [e for e in heap if e[2] == epoch[e[1]]]
            heapq.heapify(heap)
    return seen


@settings(max_examples=300, deadline=None)
@given(ops=heap_ops())
def test_the_heaps_pop_in_tuple_order_and_drop_stale_entries(
    ops: list[tuple[str, float, int]],
) -> None:
    want = naive_heap(ops)
    assert run_heap(ops, plain=False) == want
    if kernels.COMPILED:
        assert run_heap(ops, plain=True) == want


@settings(max_examples=200, deadline=None)
@given(
    marks=st.lists(st.sampled_from([0.0, 1.0, 5.0, 9.5, 30.0]), max_size=4, unique=True),
    att=st.floats(0.0, 40.0),
    nd=st.integers(1, 8),
)
def test_the_next_mark_is_the_first_above_the_service_with_its_margin(
    marks: list[float], att: float, nd: int
) -> None:
    ms = np.array(sorted(marks))
    for fn in (kernels.push_mark, getattr(kernels.push_mark, "py_func", None)):
        if fn is None:
            continue
        heap_t = np.zeros((2, 4))
        heap_je = np.zeros((2, 2, 4), dtype=np.int64)
        ctr = np.zeros(kernels.N_CTR, dtype=np.int64)
        fn(ms, heap_t, heap_je, ctr, 3, 10.0, att, nd, 7)
        q = bisect_right(sorted(marks), att + SERVICE_EPS)
        if q == len(marks):
            assert ctr[CTR_MARKS] == 0
        else:
            assert ctr[CTR_MARKS] == 1
            assert heap_t[HEAP_MARK, 0] == 10.0 + (ms[q] - att) / nd
            assert heap_je[HEAP_MARK, :, 0].tolist() == [3, 7]


# ------------------------------------------------------------------------------ decisions
@st.composite
def bookkeeping(draw: Any) -> dict[str, Any]:
    """A cluster of 1-6 nodes of one or two types, up to 10 long jobs, and a few decisions
    (preemptive: every job to run in priority order; greedy: queued jobs to start)."""
    n_nodes = draw(st.integers(1, 6))
    nodes = [
        (draw(st.sampled_from("AB")), draw(st.sampled_from([1, 2, 4, 8]))) for _ in range(n_nodes)
    ]
    n = draw(st.integers(1, 10))
    rows = [(0.0, draw(st.sampled_from([1, 1, 2, 3, 4, 8])), 1e9) for _ in range(n)]
    steps = [
        (
            float(draw(st.integers(1, 30))),
            draw(st.permutations(range(n)))[: draw(st.integers(0, n))],
        )
        for _ in range(draw(st.integers(1, 6)))
    ]
    return {
        "nodes": nodes,
        "racks": [draw(st.integers(0, 1)) for _ in range(n_nodes)],
        "rows": rows,
        "speed": [draw(st.sampled_from([0.5, 1.0, 2.0])) for _ in range(2)],
        "restore": draw(st.sampled_from([0.0, 1.5])),
        "steps": steps,
        "preemptive": draw(st.booleans()),
        "where": draw(st.sampled_from(["consolidate", "spread"])),
        "marks": draw(st.sampled_from([(), (3.0,), (2.0, 50.0)])),
    }


def new_run(sc: dict[str, Any]) -> _Run:
    cl = cluster(sc["nodes"], racks=sc["racks"])
    t = jobs(sc["rows"])
    rates = fixed_rates(t, cl, speed=sc["speed"][: cl.n_types], restore_s=sc["restore"])
    policy = make_policy("las" if sc["preemptive"] else "fifo")
    policy.service_marks = sc["marks"]
    run = _Run(t, cl, policy, make_placement(sc["where"]), rates, EngineOptions())
    run.is_active[:] = True
    return run


class Model:
    """What the engine's docstrings say a decision does, one job at a time in plain Python."""

    def __init__(self, run: _Run, sc: dict[str, Any]) -> None:
        self.cl = run.cluster
        self.rate = run.rate
        self.gang = run.jobs.num_gpus.tolist()
        self.restore = sc["restore"]
        self.where = sc["where"]
        self.blocking = run.policy.blocking
        self.marks = list(sc["marks"])
        n, nt = len(self.gang), self.cl.n_types
        self.node_free = self.cl.node_devices.tolist()
        self.free = run.capacity.tolist()
        self.cap = run.capacity.tolist()
        self.placed: dict[int, tuple[int, int, list[int], list[int]]] = {}  # t, nd, nodes, counts
        self.order: list[int] = []
        self.f = {
            k: [v] * n
            for k, v in [
                ("remaining", 1e9),
                ("attained", 0.0),
                ("executed", 0.0),
                ("first", math.nan),
                ("last", math.nan),
                ("stall", 0.0),
                ("r", 0.0),
                ("rem0", 0.0),
                ("exe0", 0.0),
                ("att0", 0.0),
            ]
        }
        self.i = {k: [0] * n for k in ("pre", "mig", "max_nodes")}
        self.last_nodes: list[list[int] | None] = [None] * n
        self.type_time = np.zeros((n, nt))
        self.device_time = np.zeros((n, nt))
        self.stints: list[tuple[int, int, int, float, float]] = []
        self.mark_due: dict[int, float] = {}

    def stop(self, j: int, now: float) -> None:
        t, nd, nodes, counts = self.placed.pop(j)
        f = self.f
        dt = now - f["last"][j]
        f["executed"][j] = f["exe0"][j] + dt
        f["attained"][j] = f["att0"][j] + dt * nd
        self.type_time[j, t] += dt
        self.device_time[j, t] += dt * nd
        f["remaining"][j] = f["rem0"][j] - f["r"][j] * max(now - f["stall"][j], 0.0)
        for node, c in zip(nodes, counts, strict=True):
            self.node_free[node] += c
            self.stints.append((j, node, c, f["last"][j], now))
        self.free[t] += nd
        self.order.remove(j)
        self.mark_due.pop(j, None)

    def place(self, t: int, nd: int) -> tuple[list[int], list[int]]:
        cand = [k for k in np.flatnonzero(self.cl.node_type == t).tolist() if self.node_free[k] > 0]
        if self.where == "spread":
            got = Spread().place(self.cl, np.array(self.node_free), np.array(cand), nd)
            assert got is not None
            return got[0].tolist(), got[1].tolist()
        fits = [(self.node_free[k], k) for k in cand if self.node_free[k] >= nd]
        if fits:
            return [min(fits)[1]], [nd]
        nodes, counts, left = [], [], nd
        for _, k in sorted((-self.node_free[k], k) for k in cand):
            if left == 0:
                break
            c = min(left, self.node_free[k])
            nodes.append(k)
            counts.append(c)
            left -= c
        return nodes, counts

    def start(self, j: int, t: int, nd: int, now: float) -> None:
        nodes, counts = self.place(t, nd)
        for node, c in zip(nodes, counts, strict=True):
            self.node_free[node] -= c
        self.free[t] -= nd
        f = self.f
        resumed = not math.isnan(f["first"][j])
        if resumed and self.last_nodes[j] != nodes:
            self.i["mig"][j] += 1
        if not resumed:
            f["first"][j] = now
        self.last_nodes[j] = nodes
        self.i["max_nodes"][j] = max(self.i["max_nodes"][j], len(nodes))
        f["stall"][j] = now + self.restore if resumed else now
        f["last"][j] = now
        f["r"][j] = float(self.rate[j, t])
        f["rem0"][j] = f["remaining"][j]
        f["exe0"][j] = f["executed"][j]
        f["att0"][j] = f["attained"][j]
        self.placed[j] = (t, nd, nodes, counts)
        self.order.append(j)
        q = bisect_right(self.marks, f["attained"][j] + SERVICE_EPS)
        if q < len(self.marks):
            self.mark_due[j] = now + (self.marks[q] - f["attained"][j]) / nd

    def preemptive(self, run: list[int], now: float) -> None:
        alloc_type = [self.placed[j][0] if j in self.placed else -1 for j in range(len(self.gang))]
        alloc_n = [self.placed[j][1] if j in self.placed else 0 for j in range(len(self.gang))]
        nds = [self.gang[j] for j in run]
        starts, kept, stop = naive_plan(
            run, nds, [-1] * len(run), self.rate, self.cap, False, alloc_type, alloc_n
        )
        for j in stop:
            self.i["pre"][j] += 1
            self.stop(j, now)
        self.order = list(kept)
        for j, t, nd in starts:
            self.start(j, t, nd, now)

    def greedy(self, run: list[int], now: float) -> None:
        for j in run:
            if j in self.placed:
                continue
            if max(self.free) == 0:
                break
            nd = self.gang[j]
            ok = [k for k in range(len(self.free)) if self.rate[j, k] > 0 and self.free[k] >= nd]
            if not ok:
                if self.blocking:
                    break
                continue
            self.start(j, max(ok, key=lambda k: (self.rate[j, k], -k)), nd, now)


def replay(sc: dict[str, Any]) -> tuple[_Run, list[dict[str, object]]]:
    run = new_run(sc)
    seen = []
    now = 0.0
    for dt, order in sc["steps"]:
        now += dt
        run.now = now
        d = np.array(order, dtype=np.int64)
        if sc["preemptive"]:
            run._apply_preemptive(d, None, None)
        else:  # device counts given, or each job's gang by default: the same
            run._apply_greedy(d, None, run.jobs.num_gpus[d] if len(seen) % 2 else None)
        seen.append(snapshot(run))
    return run, seen


def snapshot(run: _Run) -> dict[str, object]:
    k = int(run.ctr[CTR_STINTS])
    return {
        "jf": run.jf.tobytes(),
        "ji": run.ji.tobytes(),
        "jb": run.jb.tobytes(),
        "nodes": run.nodes_i.tobytes(),
        "types": run.types_i.tobytes(),
        "tt": run.type_time.tobytes() + run.device_time.tobytes(),
        "stints": run.st_i[:, :k].tobytes() + run.st_f[:, :k].tobytes(),
        "order": run.running_jobs().tolist(),
        "heaps": (run.ctr[CTR_HEAP], run.ctr[CTR_MARKS], run.heap_t.tobytes()),
    }


@settings(max_examples=250, deadline=None)
@given(sc=bookkeeping())
def test_decisions_do_what_the_naive_model_does(sc: dict[str, Any]) -> None:
    run = new_run(sc)
    model = Model(run, sc)
    now = 0.0
    for dt, order in sc["steps"]:
        now += dt
        run.now = now
        d = np.array(order, dtype=np.int64)
        if sc["preemptive"]:
            run._apply_preemptive(d, None, None)
            model.preemptive(order, now)
        else:  # device counts given, or each job's gang by default: the same
            run._apply_greedy(d, None, run.jobs.num_gpus[d] if dt % 2 else None)
            model.greedy(order, now)
        assert run.running_jobs().tolist() == model.order
        assert run.node_free.tolist() == model.node_free
        assert run.free.tolist() == model.free
        for j in range(run.n):
            t, nd, nodes, counts = model.placed.get(j, (-1, 0, [], []))
            assert (run.alloc_type[j], run.alloc_n[j], run.running[j]) == (t, nd, nd > 0)
            o, k = run.ji[kernels.JI_SLOT, j], run.ji[kernels.JI_PLACED, j]
            if nd:
                assert run.slots[0, o : o + k].tolist() == nodes
                assert run.slots[1, o : o + k].tolist() == counts
        f = model.f
        for field, row in [
            ("remaining", kernels.JF_REMAINING),
            ("attained", kernels.JF_ATTAINED),
            ("executed", kernels.JF_EXECUTED),
            ("first", kernels.JF_FIRST_START),
            ("last", kernels.JF_LAST_START),
        ]:
            ran = [j in model.placed or not math.isnan(f["first"][j]) for j in range(run.n)]
            got = [x for x, r in zip(run.jf[row].tolist(), ran, strict=True) if r]
            want = [x for x, r in zip(f[field], ran, strict=True) if r]
            assert np.array_equal(got, want, equal_nan=True), field
        for field, irow in [
            ("pre", kernels.JI_PREEMPTIONS),
            ("mig", kernels.JI_MIGRATIONS),
            ("max_nodes", kernels.JI_MAX_NODES),
        ]:
            assert run.ji[irow].tolist() == model.i[field], field
        assert run.type_time.tobytes() == model.type_time.tobytes()
        assert run.device_time.tobytes() == model.device_time.tobytes()
        k = int(run.ctr[CTR_STINTS])
        got_st = list(zip(*run.st_i[:, :k].tolist(), *run.st_f[:, :k].tolist(), strict=True))
        assert got_st == model.stints
        # the heaps: the next completion and the next service mark of a running job
        fins = [f["stall"][j] + f["remaining"][j] / f["r"][j] for j in model.placed]
        t_fin = kernels.heap_peek(run.heap_t, run.heap_je, run.ctr, HEAP_FINISH, run.epoch)
        assert t_fin == (min(fins) if fins else math.inf)
        t_mark = kernels.heap_peek(run.heap_t, run.heap_je, run.ctr, HEAP_MARK, run.epoch)
        assert t_mark == min(model.mark_due.values(), default=math.inf)


@settings(max_examples=60, deadline=None)
@given(sc=bookkeeping())
def test_decisions_are_the_same_without_numba(sc: dict[str, Any]) -> None:
    if not kernels.COMPILED:
        return
    _, fast = replay(sc)
    with plain_kernels():
        _, plain = replay(sc)
    assert plain == fast


@settings(max_examples=100, deadline=None)
@given(sc=bookkeeping(), at=st.integers(0, 40))
def test_completions_are_the_due_jobs_ascending_each_stopped_as_finished(
    sc: dict[str, Any], at: int
) -> None:
    sc["rows"] = [
        (0.0, g, float(w)) for (_, g, _), w in zip(sc["rows"], range(3, 99, 7), strict=False)
    ]
    sc["preemptive"] = True
    for plain in (False, True):
        if plain and not kernels.COMPILED:
            continue
        run = new_run(sc)
        run.now = 0.0
        run._apply_preemptive(np.arange(run.n, dtype=np.int64), None, None)
        before = {j: float(run.fin[j]) for j in run.running_jobs().tolist()}
        stints = int(run.ctr[CTR_STINTS])
        if plain:
            with plain_kernels():
                k = run._complete_due(float(at))
        else:
            k = run._complete_due(float(at))
        due = sorted(j for j, f in before.items() if f <= at + 1e-9 + 1e-12 * at)
        assert run._done[:k].tolist() == due
        assert run.st_i[0, stints : run.ctr[CTR_STINTS]].tolist() == [
            j for j in due for _ in range(int(run.ji[kernels.JI_PLACED, j]))
        ]
        for j in range(run.n):
            if j in due:
                assert run.finish[j] == at and run.remaining[j] == 0.0
                assert not run.running[j] and not run.is_active[j]
            else:
                assert math.isnan(run.finish[j]) and run.is_active[j]
        assert sorted(run.running_jobs().tolist()) == sorted(set(before) - set(due))


@settings(max_examples=150, deadline=None)
@given(
    starts=st.lists(
        st.tuples(st.integers(0, 3), st.integers(0, 1), st.sampled_from([1, 2, 4])), max_size=12
    ),
    links=st.lists(st.sampled_from([10.0, 37.5, math.inf]), min_size=12, max_size=12),
)
def test_placement_rates_are_cached_by_job_type_devices_and_link(
    starts: list[tuple[int, int, int]], links: list[float]
) -> None:
    """:func:`kernels.start_rates` against a dict: a one-device job on one device runs at its
    consolidated rate; any other start hits the cache only on an equal key."""
    n = 4
    rate = np.arange(1.0, 1.0 + 2 * n).reshape(n, 2)
    ji = np.zeros((kernels.N_JI, n), dtype=np.int64)
    ji[kernels.JI_GANG] = [1, 2, 4, 1]
    ji[kernels.JI_RC_HEAD] = -1
    rc_i = np.zeros((3, 64), dtype=np.int64)
    rc_f = np.zeros((2, 64))
    cache: dict[tuple[int, int, int, float], float] = {}
    nodes_i = np.zeros((6, 1), dtype=np.int64)
    nodes_f = np.zeros((2, 1))
    for step, (j, t, nd) in enumerate(starts):
        # one start per call; its link is set through a one-node placement's intra link
        nodes_f[0, 0] = links[step]
        s_i = np.array([[j], [t], [nd], [0], [1]], dtype=np.int64)
        s_nc = np.array([[0], [nd]], dtype=np.int64)
        got = []
        for fn in (kernels.start_rates, getattr(kernels.start_rates, "py_func", None)):
            if fn is None:
                continue
            s_f = np.zeros((2, 1))
            ctr = np.zeros(kernels.N_CTR, dtype=np.int64)
            ctr[kernels.CTR_STARTS] = 1
            misses = fn(ji, rate, rc_i, rc_f, nodes_i, nodes_f, np.ones(1), s_i, s_nc, s_f, ctr)
            got.append((misses, s_f[1, 0]))
        one = nd == 1 and ji[kernels.JI_GANG, j] == 1
        key = (j, t, nd, links[step] if nd > 1 else math.inf)
        if one:
            want = (0, rate[j, t])
        elif key in cache:
            want = (0, cache[key])
        else:
            want = (1, math.nan)
            # the engine adds a miss to the job's chain
            e = len(cache)
            cache[key] = 100.0 + step
            rc_i[:, e] = [ji[kernels.JI_RC_HEAD, j], t, nd]
            rc_f[:, e] = [key[3], 100.0 + step]
            ji[kernels.JI_RC_HEAD, j] = e
        for g in got:
            assert g[0] == want[0]
            assert g[1] == want[1] or (math.isnan(g[1]) and math.isnan(want[1]))


def test_run_order_is_kept_in_priority_order_then_the_started_jobs() -> None:
    sc = {
        "nodes": [("A", 4)],
        "racks": [0],
        "rows": [(0.0, 1, 1e9)] * 5,
        "speed": [1.0, 1.0],
        "restore": 0.0,
        "steps": [],
        "preemptive": True,
        "where": "consolidate",
        "marks": (),
    }
    run = new_run(sc)
    run.now = 1.0
    run._apply_preemptive(np.array([3, 1, 0], dtype=np.int64), None, None)
    assert run.running_jobs().tolist() == [3, 1, 0]
    run.now = 2.0
    run._apply_preemptive(np.array([4, 0, 3, 2, 1], dtype=np.int64), None, None)
    # kept: 0 and 3 (priority order), then started: 4 and 2; job 1 is suspended
    assert run.running_jobs().tolist() == [0, 3, 4, 2]
    assert run.preemptions.tolist() == [0, 1, 0, 0, 0]
    assert run.ctr[CTR_RUN] == 4


def test_a_placement_listing_more_nodes_than_devices_is_refused() -> None:
    class Padded(Placement):
        name = "padded"

        def choose(self, cluster, free, candidates, f, ndev):  # type: ignore[no-untyped-def]
            nodes = np.array([candidates[0], candidates[0]], dtype=np.int64)
            return nodes, np.array([ndev, 0], dtype=np.int64)

    t = jobs([(0.0, 1, 10.0)])
    cl = cluster([("A", 2)])
    with pytest.raises(SimulationError, match="invalid placement"):
        simulate(t, cl, make_policy("fifo"), Padded(), rates=fixed_rates(t, cl))


@settings(max_examples=100, deadline=None)
@given(sc=bookkeeping(), dt=st.integers(0, 20))
def test_due_marks_wake_their_jobs_which_then_wait_for_the_next_mark(
    sc: dict[str, Any], dt: int
) -> None:
    sc["preemptive"] = True
    sc["marks"] = (2.0, 9.0, 50.0)
    got = []
    for plain in (False, True):
        if plain and not kernels.COMPILED:
            continue
        run, _ = replay(sc)
        model = Model(run, sc)
        now = 0.0
        for step, order in sc["steps"]:
            now += step
            model.preemptive(order, now)
        t = now + dt
        due_want = sorted((x, j) for j, x in model.mark_due.items() if x <= t)
        if plain:
            with plain_kernels():
                k = run._pop_marks(t)
        else:
            k = run._pop_marks(t)
        due = run._due[:, :k].tolist()
        assert due[0] == [j for _, j in due_want]  # in pop order: by time, then job
        assert due[1] == [int(run.epoch[j]) for _, j in due_want]
        run.now = t
        if plain:
            with plain_kernels():
                run._rearm_marks(k)
        else:
            run._rearm_marks(k)
        # the woken jobs wait for their next mark; the others keep theirs
        nxt = {j: x for j, x in model.mark_due.items() if x > t}
        f = model.f
        for _, j in due_want:
            nd = model.placed[j][1]
            att = f["att0"][j] + (t - f["last"][j]) * nd
            q = bisect_right(model.marks, att + SERVICE_EPS)
            if q < len(model.marks):
                nxt[j] = t + (model.marks[q] - att) / nd
        t_mark = kernels.heap_peek(run.heap_t, run.heap_je, run.ctr, HEAP_MARK, run.epoch)
        assert t_mark == min(nxt.values(), default=math.inf)
        got.append((due, t_mark))
    assert len(set(map(repr, got))) == 1


@settings(max_examples=100, deadline=None)
@given(n=st.integers(1, 12), k=st.integers(0, 12), what=st.integers(0, 7), seed=st.integers(0, 99))
def test_the_packed_sync_is_the_sync_of_the_rows(n: int, k: int, what: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    jf = rng.uniform(0, 100, (kernels.N_JF, n))
    jf[kernels.JF_CAP] = np.where(rng.random(n) < 0.5, jf[kernels.JF_CAP], np.inf)
    ji = rng.integers(1, 8, (kernels.N_JI, n))
    jobs_ = rng.permutation(n).astype(np.int64)
    k = min(k, n)
    want = jf.copy()
    rows = [kernels.JF_CAP, kernels.JF_BASE_T, kernels.JF_STALL]
    rest = [kernels.JF_EXE0, kernels.JF_ATT0, kernels.JF_ROUND_REM, kernels.JF_CRATE]
    outs = [kernels.JF_SHARE, kernels.JF_EXECUTED, kernels.JF_ATTAINED, kernels.JF_REMAINING]
    kernels.sync_running(
        jobs_[:k],
        what,
        60.0,
        True,
        *[want[r] for r in rows],
        ji[kernels.JI_ALLOC_N],
        *[want[r] for r in rest + outs],
    )
    for fn in (kernels.sync_packed, getattr(kernels.sync_packed, "py_func", None)):
        if fn is None:
            continue
        got = jf.copy()
        fn(jobs_, k, what, 60.0, True, got, ji)
        assert got.tobytes() == want.tobytes()
