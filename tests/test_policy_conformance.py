"""One battery every registered policy must pass (STYLE principle 3)."""

from __future__ import annotations

import copy
import dataclasses

import numpy as np
import pytest

from clustersim.engine import seed_matters, simulate
from scheduling.base import Decision, Policy, State
from scheduling.registry import PLACEMENTS, POLICIES, make_placement, make_policy
from tests.simple import cluster, fixed_rates, jobs, yarn_reference

ALL = sorted(POLICIES)


def random_trace(seed: int, n: int = 60, max_gpus: int = 4):  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(seed)
    submit = np.sort(rng.uniform(0, 200, n)).round(1)
    gpus = rng.choice([1, 1, 1, 2, 4, 8][: 3 + max_gpus // 2], n)
    work = rng.uniform(1, 120, n).round(1)
    prio = rng.integers(0, 3, n)
    deadline = np.where(rng.random(n) < 0.5, submit + rng.uniform(10, 400, n), np.nan)
    return jobs(
        list(zip(submit.tolist(), gpus.tolist(), work.tolist(), strict=True)),
        priority=prio,
        deadline=deadline,
    )


CLUSTERS = {
    "one-node": cluster([("A", 4)]),
    "two-racks": cluster([("A", 2), ("A", 2), ("A", 4), ("A", 4)], racks=[0, 0, 1, 1]),
    "hetero": cluster([("A", 4), ("B", 4), ("B", 2)], racks=[0, 1, 1]),
}


class Recorder(Policy):
    """Wraps a policy, checking every decision against the state it was given."""

    def __init__(self, inner: Policy) -> None:
        self.inner = inner
        self.name = inner.name  # type: ignore[misc]
        self.preemptive = inner.preemptive  # type: ignore[misc]
        self.blocking = inner.blocking
        self.round_s = inner.round_s
        self.rounds_only = inner.rounds_only  # type: ignore[misc]
        self.service_marks = inner.service_marks
        self.colocates = inner.colocates  # type: ignore[misc]
        self.power = inner.power  # the power model, for the policies that use it
        self.splicing = inner.splicing  # replica splicing (singularity)
        self.calls = 0

    def reset(self, rng: np.random.Generator) -> None:
        self.inner.reset(rng)

    def admit(self, state: State, arriving):  # type: ignore[no-untyped-def]
        return self.inner.admit(state, arriving)

    def schedule(self, state: State) -> Decision:
        self.calls += 1
        snap = {k: copy.deepcopy(getattr(state, k)) for k in _STATE_ARRAYS}
        d1 = self.inner.schedule(state)
        d2 = self.inner.schedule(state)
        # same snapshot -> same decision
        assert np.array_equal(d1.run, d2.run)
        assert (d1.wake_at is None) == (d2.wake_at is None)
        # the state was not mutated
        for k, v in snap.items():
            assert np.array_equal(getattr(state, k), v, equal_nan=True), f"policy mutated {k}"
        # only active jobs, each at most once
        assert np.isin(d1.run, state.active).all()
        assert len(np.unique(d1.run)) == len(d1.run)
        # co-located guests: active, not also run on devices of their own, hosts in the run
        if d1.colocate is not None and len(d1.colocate):
            assert self.colocates
            guests, hosts = d1.colocate[:, 0], d1.colocate[:, 1]
            assert np.isin(guests, state.active).all() and not np.isin(guests, d1.run).any()
            assert np.isin(hosts, d1.run).all()
        if not self.preemptive:
            assert not state.running[d1.run].any() or True
        return d1


_STATE_ARRAYS = (
    "active",
    "running",
    "alloc_type",
    "alloc_n",
    "remaining",
    "attained",
    "executed",
    "type_time",
    "free",
    "capacity",
    "first_start",
    "preemptions",
)


@pytest.mark.parametrize("name", ALL)
@pytest.mark.parametrize("cl_name", sorted(CLUSTERS))
def test_policy_runs_every_job_once_within_capacity(name: str, cl_name: str) -> None:
    cl = CLUSTERS[cl_name]
    t = random_trace(11)
    pol = Recorder(make_policy(name))
    r = simulate(t, cl, pol, rates=fixed_rates(t, cl, speed=np.linspace(1, 2, cl.n_types)))
    assert pol.calls > 0
    # never over-allocates: busy devices per type within capacity in every segment
    busy = r.seg_busy.sum(axis=2)
    assert (busy <= cl.devices_per_type()[None, :] + 1e-9).all()
    assert (busy >= -1e-9).all()
    # every feasible job finishes exactly once, never before it arrives
    done = np.isfinite(r.finish)
    assert done[r.drop_reason == ""].all()
    assert (r.first_start[done] >= t.submit_time[done]).all()
    assert (r.finish[done] > r.first_start[done]).all()
    # held time fits between first start and finish
    held = r.type_time.sum(axis=1)
    assert (held[done] <= r.finish[done] - r.first_start[done] + 1e-6).all()
    # work done equals work asked (rates do not depend on gang size here, but for a
    # splicing policy's time-sliced jobs: d / w of it, times 1 - overhead)
    speed = np.linspace(1, 2, cl.n_types)
    if pol.splicing is not None:
        work = _spliced_work_done(r, speed, pol.splicing.overhead)
    else:
        work = _work_done(r, speed)
    np.testing.assert_allclose(work[done], t.work[done], rtol=1e-9)
    _check_stints(r)


def _work_done(r, speed: np.ndarray) -> np.ndarray:  # type: ignore[no-untyped-def]
    """Work each job did at ``speed`` per type: time held × speed, and for the stints a power
    cap slowed (clustersim.power), × the kind's throughput at the cap."""
    plain = (r.type_time * speed).sum(axis=1)
    if r.power is None or not len(r.power.cap_job):
        return plain
    from clustersim.power import profile_of

    cl, st = r.cluster, r.stints
    cap = {
        (int(j), float(s)): float(c)
        for j, s, c in zip(r.power.cap_job, r.power.cap_start, r.power.cap, strict=True)
    }
    work = np.zeros(len(r.jobs))
    seen = set()
    for j, node, start, end in zip(st.job, st.node, st.start, st.end, strict=True):
        if (int(j), float(start)) in seen:
            continue  # one row per node of a stint: count the stint once
        seen.add((int(j), float(start)))
        t = int(cl.node_type[node])
        f = float(profile_of(cl.types[t]).throughput(cap.get((int(j), float(start)), 1.0)))
        work[j] += (end - start) * speed[t] * f
    return work


def _spliced_work_done(r, speed: np.ndarray, overhead: float) -> np.ndarray:  # type: ignore[no-untyped-def]
    """Work each job did at ``speed`` per type under replica splicing
    (clustersim.elastic.SplicedRates): a stint on ``d`` devices of a job of world size ``w``
    runs at ``speed × d / w × (1 − overhead)`` when ``d < w``, at ``speed`` otherwise."""
    st, cl = r.stints, r.cluster
    key = st.job * 1_000_003 + np.searchsorted(np.unique(st.start), st.start)
    _, first, inv = np.unique(key, return_index=True, return_inverse=True)
    d = np.bincount(inv, weights=st.devices)  # devices of each stint, over its nodes
    j = st.job[first]
    w = r.jobs.num_gpus[j]
    share = np.where(d < w, d / w * (1.0 - overhead), 1.0)
    rate = speed[cl.node_type[st.node[first]]] * share
    return np.bincount(j, weights=(st.end[first] - st.start[first]) * rate, minlength=len(r.jobs))


def _check_stints(r) -> None:  # type: ignore[no-untyped-def]
    """Stints add up to the held service, stay inside the job's life, never overcommit."""
    st, cl, t = r.stints, r.cluster, r.jobs
    assert len(st) > 0
    assert (st.end >= st.start).all()
    assert (st.start >= t.submit_time[st.job]).all()
    done = np.isfinite(r.finish[st.job])
    assert (st.end[done] <= r.finish[st.job][done] + 1e-9).all()
    assert (cl.node_devices[st.node] >= st.devices).all()
    held = np.bincount(st.job, weights=st.devices * (st.end - st.start), minlength=len(t))
    np.testing.assert_allclose(held, r.attained, rtol=1e-9, atol=1e-6)
    # sweep the stint boundaries: no node ever holds more than its devices
    ev_t = np.concatenate([st.start, st.end])
    ev_d = np.concatenate([st.devices, -st.devices])
    ev_n = np.concatenate([st.node, st.node])
    order = np.lexsort((ev_d, ev_t))  # releases before acquisitions at the same instant
    use = np.zeros(cl.n_nodes, dtype=np.int64)
    for i in order.tolist():
        use[ev_n[i]] += ev_d[i]
        assert use[ev_n[i]] <= cl.node_devices[ev_n[i]]


@pytest.mark.parametrize("name", ALL)
def test_policy_is_deterministic_for_a_seed(name: str) -> None:
    cl = CLUSTERS["hetero"]
    t = random_trace(5)
    a = simulate(
        t, cl, make_policy(name), make_placement("random"), rates=fixed_rates(t, cl), seed=9
    )
    b = simulate(
        t, cl, make_policy(name), make_placement("random"), rates=fixed_rates(t, cl), seed=9
    )
    assert np.array_equal(a.finish, b.finish, equal_nan=True)
    assert np.array_equal(a.seg_busy, b.seg_busy)


def _outcome(r) -> list[np.ndarray]:  # type: ignore[no-untyped-def]
    """Every per-job, per-stint and timeline array of a result (what "the same" compares)."""
    st = r.stints
    return [
        r.first_start,
        r.finish,
        r.attained,
        r.type_time,
        r.preemptions,
        r.migrations,
        r.seg_t,
        r.seg_busy,
        st.job,
        st.node,
        st.devices,
        st.start,
        st.end,
    ]


def _two_regions(cl):  # type: ignore[no-untyped-def]
    """``cl`` with each rack in a region of its own (constant 100 and 101 g/kWh)."""
    from clustersim.cluster import Region

    regions = tuple(Region(name=f"r{i}", pue=1.0, carbon_g_per_kwh=100.0 + i) for i in (0, 1))
    return dataclasses.replace(cl, node_region=cl.node_rack.copy(), regions=regions)


def _answers_per_seed(policy, placement: str, seeds=(0, 1, 2, 3)) -> int:  # type: ignore[no-untyped-def]
    """How many different results ``seeds`` give (all else equal) on a contended trace;
    a policy that steers jobs between regions gets two regions (one per rack)."""
    cl = CLUSTERS["two-racks"]
    if policy().steers_regions:
        cl = _two_regions(cl)
    t = random_trace(7, n=80)
    seen: list[list[np.ndarray]] = []
    for seed in seeds:
        r = simulate(
            t, cl, policy(), make_placement(placement), rates=fixed_rates(t, cl), seed=seed
        )
        out = _outcome(r)
        if not any(
            all(np.array_equal(a, b, equal_nan=True) for a, b in zip(out, o, strict=True))
            for o in seen
        ):
            seen.append(out)
    return len(seen)


@pytest.mark.parametrize("name", ALL)
def test_a_policy_depends_on_the_seed_exactly_when_it_says_so(name: str) -> None:
    cls = POLICIES[name]
    answers = _answers_per_seed(lambda: make_policy(name), "consolidate")
    if cls.uses_seed:
        assert answers > 1, f"{name} says it uses the seed, yet four seeds gave one answer"
    else:
        assert answers == 1, f"{name} says it ignores the seed, yet seeds changed its results"
        assert not seed_matters(cls, PLACEMENTS["consolidate"])


@pytest.mark.parametrize("name", sorted(PLACEMENTS))
def test_a_placement_depends_on_the_seed_exactly_when_it_says_so(name: str) -> None:
    cls = PLACEMENTS[name]
    answers = _answers_per_seed(lambda: make_policy("fifo"), name)
    assert (answers > 1) == cls.uses_seed, (name, answers)
    assert seed_matters(POLICIES["fifo"], cls) == cls.uses_seed


def test_the_random_placement_is_the_seeded_one_and_the_rest_are_not() -> None:
    # what the product promises (experiments collapse seeds on the others)
    assert [n for n, cls in sorted(PLACEMENTS.items()) if cls.uses_seed] == [
        "random",
        "random-fit",
    ]
    assert seed_matters(POLICIES["fifo"], PLACEMENTS["random"])
    assert seed_matters(POLICIES["fifo"], PLACEMENTS["random-fit"])
    assert not seed_matters(POLICIES["fifo"], PLACEMENTS["consolidate"])
    assert not seed_matters(POLICIES["fifo"])  # the default placement is consolidate


class _ShuffledFIFO(Policy):
    """A policy that draws from the run's generator without saying so (the battery's foil)."""

    name = "shuffled-fifo"

    def reset(self, rng: np.random.Generator) -> None:
        self._rng = rng

    def schedule(self, state: State) -> Decision:
        q = state.queued()
        return Decision(run=q[self._rng.permutation(len(q))])


def test_the_seed_check_catches_a_policy_that_draws_without_saying_so() -> None:
    assert not _ShuffledFIFO.uses_seed
    assert _answers_per_seed(_ShuffledFIFO, "consolidate") > 1


def _empty_state(cl):  # type: ignore[no-untyped-def]
    t = jobs([(0, 1, 1)])
    n, nt = 1, cl.n_types
    return State(
        now=0.0,
        jobs=t,
        cluster=cl,
        active=np.zeros(0, dtype=np.int64),
        running=np.zeros(n, bool),
        alloc_type=np.full(n, -1),
        alloc_n=np.zeros(n, np.int64),
        rate=np.ones((n, nt)),
        first_start=np.full(n, np.nan),
        last_start=np.full(n, np.nan),
        preemptions=np.zeros(n, np.int64),
        free=cl.devices_per_type(),
        capacity=cl.devices_per_type(),
        remaining=np.ones(n),
        attained=np.zeros(n),
        executed=np.zeros(n),
        type_time=np.zeros((n, nt)),
    )


@pytest.mark.parametrize("name", ALL)
def test_policy_copes_with_an_empty_queue(name: str) -> None:
    pol = make_policy(name)
    pol.reset(np.random.default_rng(0))
    d = pol.schedule(_empty_state(CLUSTERS["one-node"]))
    assert len(d.run) == 0


@pytest.mark.parametrize("name", ALL)
def test_policy_documents_its_source(name: str) -> None:
    cls = POLICIES[name]
    assert cls.citation and cls.__doc__ and len(cls.__doc__) > 80


@pytest.mark.parametrize("name", sorted(PLACEMENTS))
def test_placements_never_overcommit_a_node(name: str) -> None:
    cl = CLUSTERS["two-racks"]
    p = make_placement(name)
    p.reset(np.random.default_rng(0))
    rng = np.random.default_rng(1)
    for _ in range(200):
        free = rng.integers(0, 5, cl.n_nodes).clip(max=cl.node_devices)
        cand = np.flatnonzero(free > 0)
        nd = int(rng.integers(1, 9))
        got = p.place(cl, free, cand, nd)
        if free.sum() < nd:
            assert got is None
            continue
        if got is None:  # only a strategy that places in certain shapes may decline
            assert p.may_decline
            if p.yarn_rule:
                assert yarn_reference(free, cand, cl.node_rack, cl.node_devices, nd) is None
            continue
        nodes, counts = got
        assert counts.sum() == nd and (counts > 0).all()
        assert (counts <= free[nodes]).all() and len(np.unique(nodes)) == len(nodes)
        if p.best_fit_one_node and (free >= nd).any():
            # the promise the engine's fast path relies on: best fit, lowest index on ties
            best = int(np.flatnonzero(free == free[free >= nd].min())[0])
            assert nodes.tolist() == [best] and counts.tolist() == [nd]
        elif p.largest_first_across_nodes:
            # the other promise: the freest nodes first, lowest index on ties, each wholly
            order = np.lexsort((cand, -free[cand]))
            take = np.minimum(
                free[cand][order], nd - (np.cumsum(free[cand][order]) - free[cand][order])
            )
            used = take > 0
            assert nodes.tolist() == cand[order][used].tolist()
            assert counts.tolist() == take[used].tolist()
        if p.yarn_rule:
            want = yarn_reference(free, cand, cl.node_rack, cl.node_devices, nd)
            assert want is not None and (nodes.tolist(), counts.tolist()) == want
        if p.fills_in_node_order:
            # and this one: node by node in index order, each wholly until the last
            f = free[cand]
            take = np.minimum(f, nd - (np.cumsum(f) - f))
            used = take > 0
            assert nodes.tolist() == cand[used].tolist()
            assert counts.tolist() == take[used].tolist()


def test_consolidate_uses_one_node_when_it_can_and_topology_one_rack() -> None:
    cl = CLUSTERS["two-racks"]
    free = np.array([2, 2, 3, 4])
    cand = np.arange(4)
    nodes, _ = make_placement("consolidate").place(cl, free, cand, 3)  # type: ignore[misc]
    assert nodes.tolist() == [2]  # best fit: the node with 3 free
    nodes, _ = make_placement("topology").place(cl, free, cand, 4)  # type: ignore[misc]
    assert nodes.tolist() == [3]
    nodes, counts = make_placement("topology").place(cl, np.array([2, 2, 1, 1]), cand, 4)  # type: ignore[misc]
    assert sorted(nodes.tolist()) == [0, 1]  # rack 0 holds 4, rack 1 only 2
    nodes, counts = make_placement("spread").place(cl, free, cand, 4)  # type: ignore[misc]
    assert counts.tolist() == [1, 1, 1, 1]


@pytest.mark.parametrize("name", ALL)
def test_policy_runs_an_elastic_trace_within_capacity_and_bounds(name: str) -> None:
    """The same trace with bounds x0.5-x2 (clustersim.elastic): elastic policies resize,
    the others run gangs as before; nobody over-allocates or leaves the bounds."""
    from clustersim.elastic import apply_elastic

    cl = CLUSTERS["two-racks"]
    t, _ = apply_elastic(random_trace(5), "x0.5-x2", cl)
    r = simulate(t, cl, Recorder(make_policy(name)), rates=fixed_rates(t, cl))
    busy = r.seg_busy.sum(axis=2)
    assert (busy <= cl.devices_per_type()[None, :] + 1e-9).all()
    done = np.isfinite(r.finish)
    assert done[r.drop_reason == ""].all()
    st = r.stints
    key = st.job * 1_000_003 + np.searchsorted(np.unique(st.start), st.start)
    _, first, inv = np.unique(key, return_index=True, return_inverse=True)
    held = np.bincount(inv, weights=st.devices)
    j = st.job[first]
    assert (held >= t.min_gpus[j]).all() and (held <= t.max_gpus[j]).all()


def _aux_trace(seed: int):  # type: ignore[no-untyped-def]
    """``random_trace`` with CPU and memory demands: 0.5-3 cores and 1-6 GB per device."""
    t = random_trace(seed)
    rng = np.random.default_rng(seed + 100)
    g = t.num_gpus.astype(np.float64)
    return t.replace(
        cpu=(g * rng.uniform(0.5, 3.0, len(t))).round(2),
        mem_gb=(g * rng.uniform(1.0, 6.0, len(t))).round(2),
    )


#: two-racks with 4/4/8/8 cores and 16/16/32/32 GB: tight enough that CPU and memory bind
AUX_CLUSTER = dataclasses.replace(
    CLUSTERS["two-racks"],
    node_cpu_cores=np.array([4.0, 4.0, 8.0, 8.0]),
    node_host_mem_gb=np.array([16.0, 16.0, 32.0, 32.0]),
)


@pytest.mark.parametrize("name", ALL)
def test_policy_never_overcommits_cpu_or_memory(name: str) -> None:
    """On a cluster with core and memory limits, no node ever holds more cores or memory
    than it has (each stint charges devices × the job's per-device share there), and every
    job that can fit finishes. Co-locating policies refuse CPU/memory demands."""
    from clustersim.errors import SimulationError

    cl, t = AUX_CLUSTER, _aux_trace(7)
    pol = make_policy(name)
    if pol.colocates:
        with pytest.raises(SimulationError, match="co-location"):
            simulate(t, cl, pol, rates=fixed_rates(t, cl))
        return
    r = simulate(t, cl, Recorder(pol), rates=fixed_rates(t, cl))
    assert r.aux is not None
    done = np.isfinite(r.finish)
    assert done[r.drop_reason == ""].all()
    st = r.stints
    busy = (r.seg_busy.sum(axis=2) <= cl.devices_per_type()[None, :] + 1e-9).all()
    assert busy
    for per_dev, cap in ((r.aux.cpu_dev, cl.node_cpu), (r.aux.mem_dev, cl.node_mem)):
        amount = st.devices * per_dev[st.job]
        ev_t = np.concatenate([st.start, st.end])
        ev_a = np.concatenate([amount, -amount])
        ev_n = np.concatenate([st.node, st.node])
        order = np.lexsort((ev_a, ev_t))  # releases before acquisitions at one instant
        use = np.zeros(cl.n_nodes)
        for i in order.tolist():
            use[ev_n[i]] += ev_a[i]
            assert use[ev_n[i]] <= cap[ev_n[i]] + 1e-9, (name, ev_t[i], ev_n[i])


def _fractional_trace(seed: int, n: int = 40):  # type: ignore[no-untyped-def]
    """Jobs of which about half ask for a share (0.1-0.9) of one GPU."""
    rng = np.random.default_rng(seed)
    submit = np.sort(rng.uniform(0, 200, n)).round(1)
    frac = np.where(rng.random(n) < 0.5, rng.integers(1, 10, n) / 10, 1.0)
    gpus = np.where(frac < 1, 1, rng.choice([1, 1, 2, 4], n))
    work = rng.uniform(1, 120, n).round(1)
    return jobs(
        list(zip(submit.tolist(), gpus.tolist(), work.tolist(), strict=True)),
        priority=rng.integers(0, 3, n),
        gpu_fraction=frac,
        mem_gb=rng.uniform(1, 40, n).round(1),
    )


@pytest.mark.parametrize("name", ALL)
def test_on_fractional_devices_no_gpu_passes_1000_milli_nor_a_node_its_memory(
    name: str,
) -> None:
    # GPU sharing on (the fgd placement turns it on): a policy either runs with it, never
    # putting more than 1000 milli on a GPU nor more memory on a node than it has, or is
    # refused with a clear error when it needs an engine feature sharing does not support
    from clustersim.errors import SimulationError
    from clustersim.gpushare import MILLI

    cl = dataclasses.replace(
        CLUSTERS["two-racks"], node_host_mem_gb=np.array([64.0, 64.0, 128.0, 128.0])
    )
    t = _fractional_trace(5)
    pol = make_policy(name)
    try:
        r = simulate(t, cl, pol, make_placement("fgd"), rates=fixed_rates(t, cl), seed=3)
    except SimulationError as exc:
        assert "does not support" in str(exc), exc
        return
    rec = r.gpushare
    assert rec is not None
    assert rec.node_peak_milli.max() <= MILLI
    assert (rec.allocated <= cl.total_devices * MILLI).all()
    # memory: replay the stints; at every start the node's jobs' memory fits
    st = r.stints
    mem_dev = t.mem_gb / t.num_gpus
    for k in range(len(st.job)):
        n = st.node[k]
        on = (st.node == n) & (st.start <= st.start[k]) & (st.end > st.start[k])
        assert (mem_dev[st.job[on]] * st.devices[on]).sum() <= cl.node_mem[n] + 1e-6
