"""Network contention (clustersim/network.py), the comm-aware placement and comm-wait."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from clustersim.cli import main
from clustersim.engine import EngineOptions, simulate
from clustersim.errors import SimulationError
from clustersim.failures import FailureOptions
from clustersim.metrics import summary
from clustersim.network import NetworkOptions, NetworkView, max_min_share
from clustersim.perf import JobRates, RateTables
from clustersim.presets import preset
from clustersim.synth import gavel_model, generate
from scheduling.base import Placement
from scheduling.comm_wait import CommWait
from scheduling.params import policy_errors
from scheduling.placement import CommAware
from scheduling.registry import make_placement, make_policy
from tests import simple

NET = EngineOptions(network=NetworkOptions())


class Pinned(Placement):
    """Places the k-th multi-node gang of a run on the k-th (nodes, counts) of ``plans``."""

    name = "pinned"

    def __init__(self, plans: list[tuple[list[int], list[int]]]) -> None:
        self.plans = plans

    def reset(self, rng: np.random.Generator) -> None:
        self.k = 0

    def choose(self, cluster, free, candidates, f, ndev):  # type: ignore[no-untyped-def]
        nodes, counts = self.plans[self.k]
        self.k += 1
        return np.array(nodes, dtype=np.int64), np.array(counts, dtype=np.int64)


def two_racks(oversub: float = 4.0, nodes_per_rack: int = 4):  # type: ignore[no-untyped-def]
    """Two racks of ``nodes_per_rack`` 4-device nodes, 100 Gbit/s NICs (12.5 GB/s)."""
    racks = [0] * nodes_per_rack + [1] * nodes_per_rack
    cl = simple.cluster([("V", 4)] * (2 * nodes_per_rack), racks=racks)
    return dataclasses.replace(cl, rack_oversub=np.array([oversub, oversub]))


def ring_rates(n: int, compute_s: float = 0.1, grad_gb: float = 1.25) -> JobRates:
    """Every job a 2-device data-parallel gang: rate = 2 / (c + 2·(2−1)/2 · G / L) steps/s,
    i.e. 2 / (0.1 + 1.25 / L): 10 at L = 12.5 GB/s, 20/3 at 6.25, 4 at 3.125."""
    tables = RateTables(
        group=np.zeros(n, dtype=np.int64),
        norm=np.ones(n),
        allowed=np.ones((n, 1), dtype=bool),
        log2_sf=np.array([1.0]),
        compute_s=np.full((1, 1, 1), compute_s),
        grad_gb=np.full((1, 1, 1), grad_gb),
        slot_ok=np.ones((1, 1, 1), dtype=bool),
    )
    return JobRates(rate=np.full((n, 1), 10.0), restore_s=np.zeros(n), tables=tables)


# ----------------------------------------------------------------------------- max-min share


def test_max_min_share_by_hand() -> None:
    # links: 0 (cap 10), 1 (cap 4). Job 0 crosses both, job 1 only link 0, job 2 only link 1.
    # Link 1 fills first: 4 / 2 users = 2 each (jobs 0 and 2 freeze at 2). Link 0 then has
    # 10 − 2 = 8 left for job 1 alone, capped by its demand 5.
    job_of = np.array([0, 0, 1, 2])
    link_of = np.array([0, 1, 0, 1])
    x = max_min_share(job_of, link_of, np.array([10.0, 4.0]), np.array([np.inf, 5.0, np.inf]))
    np.testing.assert_allclose(x, [2.0, 5.0, 2.0])
    # without the demand job 1 takes the 8 left on link 0
    x = max_min_share(job_of, link_of, np.array([10.0, 4.0]), np.full(3, np.inf))
    np.testing.assert_allclose(x, [2.0, 8.0, 2.0])


@pytest.mark.parametrize("seed", range(20))
def test_max_min_share_is_feasible_and_max_min_fair(seed: int) -> None:
    rng = np.random.default_rng(seed)
    m, n_links = int(rng.integers(1, 12)), int(rng.integers(1, 6))
    pairs = np.unique(
        rng.integers(0, m, size=3 * m) * n_links + rng.integers(0, n_links, size=3 * m)
    )
    job_of, link_of = pairs // n_links, pairs % n_links
    cap = rng.uniform(1.0, 20.0, n_links)
    demand = np.where(rng.random(m) < 0.3, rng.uniform(0.5, 10.0, m), np.inf)
    x = max_min_share(job_of, link_of, cap, demand)
    load = np.bincount(link_of, weights=x[job_of], minlength=n_links)
    assert (load <= cap * (1 + 1e-9)).all()  # no link carries more than its capacity
    assert (x <= demand * (1 + 1e-9)).all()  # no job more than it can use
    full = load >= cap * (1 - 1e-9)
    for j in range(m):  # each job is at its demand, or has a full link where it is largest
        links = link_of[job_of == j]
        if not len(links):
            assert x[j] == demand[j]
            continue
        if x[j] >= demand[j] * (1 - 1e-9):
            continue
        assert any(
            full[lk] and x[j] >= x[job_of[link_of == lk]].max() * (1 - 1e-9) for lk in links
        ), (j, x)


@pytest.mark.parametrize("compiled", [False, True])
@pytest.mark.parametrize("seed", range(10))
def test_the_share_kernel_matches_the_numpy_reference(seed: int, compiled: bool) -> None:
    # random placements of m jobs on 12 nodes in 3 racks; the kernel's shares against
    # max_min_share over the (job, link) pairs built here from the placements
    from clustersim import kernels
    from clustersim.kernels import JI_PLACED, JI_SLOT, N_JI, network_shares

    rng = np.random.default_rng(seed)
    n_nodes, n_racks, m = 12, 3, int(rng.integers(1, 9))
    rack = np.sort(rng.integers(0, n_racks, n_nodes))
    nic = rng.choice([12.5, 25.0, 50.0], n_nodes)
    oversub = rng.choice([1.0, 2.0, 4.0], n_racks)
    cap = np.concatenate([np.bincount(rack, weights=nic, minlength=n_racks) / oversub, nic])
    ji = np.zeros((N_JI, m), dtype=np.int64)
    placements = [rng.choice(n_nodes, int(rng.integers(2, 5)), replace=False) for _ in range(m)]
    ji[JI_PLACED] = [len(p) for p in placements]
    ji[JI_SLOT, 1:] = np.cumsum(ji[JI_PLACED])[:-1]
    slots = np.zeros((2, int(ji[JI_PLACED].sum())), dtype=np.int64)
    slots[0] = np.concatenate(placements)
    b, static, demand = np.empty(m), np.empty(m), np.empty(m)
    up_j, up_r = np.empty(slots.shape[1], dtype=np.int64), np.empty(slots.shape[1], dtype=np.int64)
    was = kernels.compiled_in_use()
    kernels.use_compiled(compiled)
    try:
        k = network_shares(
            np.arange(m), ji, slots, nic, rack, oversub, cap, True, b, static, demand, up_j, up_r
        )
    finally:
        kernels.use_compiled(was)
    job_of, link_of = [], []
    for i, p in enumerate(placements):
        racks = np.unique(rack[p])
        if len(racks) > 1:
            job_of += [i] * len(racks)
            link_of += racks.tolist()
            assert static[i] == pytest.approx(nic[p].min() / oversub[racks].max())
        else:
            assert static[i] == nic[p].min()
        job_of += [i] * len(p)
        link_of += (n_racks + p).tolist()
    want = max_min_share(np.array(job_of), np.array(link_of), cap, demand)
    np.testing.assert_allclose(b, want, rtol=1e-12)
    np.testing.assert_array_equal(demand, [nic[p].min() for p in placements])
    assert k == sum(len(np.unique(rack[p])) for p in placements if len(np.unique(rack[p])) > 1)


# ----------------------------------------------------------------------------- the engine


def test_two_jobs_sharing_an_oversubscribed_uplink_by_hand() -> None:
    # Two racks of 4 nodes, NICs 12.5 GB/s, oversubscription 4: each uplink carries
    # 4 × 12.5 / 4 = 12.5 GB/s. Job A (40 steps) on nodes 0 and 4, job B (100 steps) on nodes
    # 1 and 5: both cross both uplinks, no NIC is shared.
    # 0–6 s: each gets 12.5 / 2 = 6.25 GB/s → 2 / (0.1 + 1.25/6.25) = 20/3 steps/s;
    #        A finishes at 40 / (20/3) = 6 s, B has 100 − 40 = 60 steps left.
    # 6 s on: B alone gets min(NIC 12.5, uplink 12.5) = 12.5 → 10 steps/s → done at 12 s.
    # Without the model both run at the static NIC / oversub = 3.125 GB/s → 4 steps/s:
    # A at 40 / 4 = 10 s, B at 100 / 4 = 25 s.
    cl, jb = two_racks(), simple.jobs([(0.0, 2, 40.0), (0.0, 2, 100.0)])
    plans = [([0, 4], [1, 1]), ([1, 5], [1, 1])]
    off = simulate(jb, cl, make_policy("fifo"), Pinned(plans), rates=ring_rates(2))
    on = simulate(jb, cl, make_policy("fifo"), Pinned(plans), rates=ring_rates(2), options=NET)
    np.testing.assert_allclose(off.finish, [10.0, 25.0])
    np.testing.assert_allclose(on.finish, [6.0, 12.0])
    assert off.network is None
    rec = on.network
    assert rec is not None
    # lost: each job at 20/3 instead of 10 (its NIC whole) for 6 s: (1 − 2/3) × 6 = 2 s each
    np.testing.assert_allclose(rec.lost_s, [2.0, 2.0])
    # each uplink: 12.5 GB/s for 0–6 s (2 × 6.25) and 6–12 s (B alone at 12.5): 150 GB,
    # over capacity 12.5 × 12 s: utilisation 1
    np.testing.assert_allclose(rec.uplink_cap, [12.5, 12.5])
    np.testing.assert_allclose(rec.uplink_gb, [150.0, 150.0])
    np.testing.assert_allclose(rec.uplink_utilisation, [1.0, 1.0])
    s = summary(on)
    assert s["network_lost_job_hours"] == pytest.approx(4.0 / 3600.0)
    assert s["uplink_utilisation_max"] == pytest.approx(1.0)
    assert "network_lost_job_hours" not in summary(off)


def test_jobs_sharing_a_nic_split_it() -> None:
    # One rack (non-blocking uplink 2 × 12.5 / 1 = 25 GB/s, never crossed). Job A on nodes 0
    # and 1, job B on nodes 0 and 1 too: both NICs carry both rings, 12.5 / 2 = 6.25 each →
    # 20/3 steps/s; A (20 steps) done at 3 s, B (50) then alone at 10 steps/s:
    # 50 − 20 = 30 steps more, 3 s → 6 s. Without NIC sharing both run at 10: 2 s and 5 s.
    cl = simple.cluster([("V", 4)] * 2, racks=[0, 0])
    jb = simple.jobs([(0.0, 2, 20.0), (0.0, 2, 50.0)])
    plans = [([0, 1], [1, 1]), ([0, 1], [1, 1])]
    on = simulate(jb, cl, make_policy("fifo"), Pinned(plans), rates=ring_rates(2), options=NET)
    np.testing.assert_allclose(on.finish, [3.0, 6.0])
    no_nics = EngineOptions(network=NetworkOptions(share_nics=False))
    off = simulate(jb, cl, make_policy("fifo"), Pinned(plans), rates=ring_rates(2), options=no_nics)
    np.testing.assert_allclose(off.finish, [2.0, 5.0])


def test_a_restart_is_rated_from_its_new_placement() -> None:
    # A's second gang is placed on one rack after a preemption: it must not keep the factor
    # of its first, cross-rack placement. Same scenario as above, but B arrives at 3 s and
    # preempts nothing (fifo): A alone 0–3 s at 10 steps/s (30 steps), then both at 20/3:
    # A's last 10 steps take 1.5 s → 4.5 s; B did 10 by then, 90 left at 10/s → 13.5 s.
    cl, jb = two_racks(), simple.jobs([(0.0, 2, 40.0), (3.0, 2, 100.0)])
    plans = [([0, 4], [1, 1]), ([1, 5], [1, 1])]
    on = simulate(jb, cl, make_policy("fifo"), Pinned(plans), rates=ring_rates(2), options=NET)
    np.testing.assert_allclose(on.finish, [4.5, 13.5])


def _busy_run(options: EngineOptions, placement: str = "spread", policy: str = "las"):  # type: ignore[no-untyped-def]
    cl = preset("gavel-testbed")
    cl = dataclasses.replace(
        cl,
        node_rack=np.arange(cl.n_nodes) % 3,
        rack_oversub=np.array([2.0, 4.0, 8.0]),
    )
    jb = generate(gavel_model(), n_jobs=60, seed=3)
    return simulate(jb, cl, make_policy(policy), make_placement(placement), options=options)


def test_no_uplink_ever_carries_more_than_its_capacity() -> None:
    r = _busy_run(NET)
    rec = r.network
    assert rec is not None and rec.recomputes > 1 and rec.rerates > 0
    assert (rec.load <= rec.uplink_cap[None, :] * (1 + 1e-9)).all()
    assert (rec.load > 0).any()
    assert (rec.lost_s >= 0).all() and rec.lost_s.sum() > 0


def test_contention_is_deterministic() -> None:
    a, b = _busy_run(NET), _busy_run(NET)
    np.testing.assert_array_equal(a.finish, b.finish)
    assert a.network is not None and b.network is not None
    np.testing.assert_array_equal(a.network.lost_s, b.network.lost_s)
    np.testing.assert_array_equal(a.network.load, b.network.load)


def test_contention_is_the_same_without_numba() -> None:
    from clustersim import kernels
    from tests.test_kernels import plain_kernels

    was = kernels.compiled_in_use()
    kernels.use_compiled()
    try:
        fast = _busy_run(NET)
    finally:
        kernels.use_compiled(was)
    with plain_kernels():
        plain = _busy_run(NET)
    assert fast.network is not None and plain.network is not None
    assert fast.finish.tobytes() == plain.finish.tobytes()
    assert fast.network.lost_s.tobytes() == plain.network.lost_s.tobytes()
    assert fast.network.uplink_gb.tobytes() == plain.network.uplink_gb.tobytes()


def test_with_nothing_shared_the_model_changes_nothing() -> None:
    # one rack and NICs not shared: every share is the NIC, the static link
    cl = preset("gavel-testbed")
    cl = dataclasses.replace(
        cl, node_rack=np.zeros(cl.n_nodes, dtype=np.int64), rack_oversub=np.ones(1)
    )
    jb = generate(gavel_model(), n_jobs=40, seed=1)
    opt = EngineOptions(network=NetworkOptions(share_nics=False))
    off = simulate(jb, cl, make_policy("fifo"), make_placement("spread"))
    on = simulate(jb, cl, make_policy("fifo"), make_placement("spread"), options=opt)
    np.testing.assert_array_equal(off.finish, on.finish)
    assert on.network is not None and on.network.recomputes > 1  # the model did run


def test_contention_and_failures_run_together() -> None:
    r = _busy_run(dataclasses.replace(NET, failures=FailureOptions()))
    assert r.network is not None and r.failures is not None
    assert r.completed.sum() > 0


@pytest.mark.parametrize(
    ("policy", "options"),
    [
        ("gandiva", NET),  # co-locates
        ("power-down", NET),
        ("gavel-las", dataclasses.replace(NET, whole_steps_per_round=True)),
    ],
)
def test_unsupported_combinations_are_refused(policy: str, options: EngineOptions) -> None:
    cl = preset("gavel-testbed")
    jb = generate(gavel_model(), n_jobs=5, seed=0)
    with pytest.raises(SimulationError, match="network contention"):
        simulate(jb, cl, make_policy(policy), options=options)


def test_the_command_line_reports_network_metrics(capsys: pytest.CaptureFixture[str]) -> None:
    from tests.test_failures import GAVEL_DEMO

    args = ["run", "--preset", "gavel-testbed", "--trace", str(GAVEL_DEMO), "--network"]
    assert main([*args, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert "network_lost_job_hours" in out and "uplink_utilisation_mean" in out
    assert main(args) == 0
    assert "time lost to contention" in capsys.readouterr().out


# ----------------------------------------------------------------------------- comm-aware


def test_comm_aware_takes_the_idle_uplinks_over_the_freest_racks() -> None:
    # three racks of two 4-device nodes: racks 0 and 1 have 3 free devices each, rack 2 two
    # nodes of 1. A gang of 4 must cross racks. Topology takes the freest racks (0 and 1);
    # with rack 1's uplink loaded (12.5 of 12.5 GB/s, 3 jobs), comm-aware ranks rack 1 last:
    # shares min(12.5, max(12.5 − 0, 12.5/1)) = 12.5 on racks 0 and 2, and
    # max(0, 12.5 / 4) = 3.125 on rack 1 → racks 0 then 2.
    cl = simple.cluster([("V", 4)] * 6, racks=[0, 0, 1, 1, 2, 2])
    cl = dataclasses.replace(cl, rack_oversub=np.full(3, 2.0))
    free = np.array([3, 0, 3, 0, 1, 1], dtype=np.int64)
    cand = np.flatnonzero(free)
    topo = make_placement("topology").place(cl, free, cand, 4)
    assert topo is not None and set(cl.node_rack[topo[0]].tolist()) == {0, 1}
    ca = CommAware()
    view = NetworkView(
        np.full(3, 12.5), np.array([0.0, 12.5, 0.0]), np.array([0, 3, 0]), np.zeros(1, dtype=int)
    )
    ca.bind_network(view)
    got = ca.place(cl, free, cand, 4)
    assert got is not None
    assert got[0].tolist() == [0, 4] and got[1].tolist() == [3, 1]
    # without the network model: the static rule, NIC / oversubscription, prefers low ratios
    cl2 = dataclasses.replace(cl, rack_oversub=np.array([2.0, 8.0, 2.0]))
    ca.bind_network(None)
    got = ca.place(cl2, free, cand, 4)
    assert got is not None and set(cl2.node_rack[got[0]].tolist()) == {0, 2}


def test_comm_aware_takes_the_fewest_racks_that_give_the_best_bandwidth() -> None:
    # idle uplinks of 25, 25 and 9.4 GB/s (NICs 12.5): a gang of 8 with 2, 1 and 6 devices
    # free per rack must use rack 2 (racks 0 and 1 hold 3), so it gets min(12.5, 9.4) = 9.4
    # however it is placed; the fewest racks giving that are rack 2 (6) and rack 0 (2), not
    # all three (which ranking racks by bandwidth alone would take)
    cl = simple.cluster([("V", 4)] * 6, racks=[0, 0, 1, 1, 2, 2])
    free = np.array([2, 0, 1, 0, 4, 2], dtype=np.int64)
    ca = CommAware()
    cap = np.array([25.0, 25.0, 9.4])
    ca.bind_network(NetworkView(cap, np.zeros(3), np.zeros(3, dtype=int), np.zeros(1, dtype=int)))
    got = ca.place(cl, free, np.flatnonzero(free), 8)
    assert got is not None
    assert sorted(cl.node_rack[got[0]].tolist()) == [0, 2, 2] and got[1].sum() == 8


def test_comm_aware_keeps_a_gang_in_one_node_or_one_rack_when_it_can() -> None:
    cl = simple.cluster([("V", 4)] * 4, racks=[0, 0, 1, 1])
    ca = CommAware()
    free = np.array([4, 3, 3, 3], dtype=np.int64)  # racks: 7 and 6 free
    got = ca.place(cl, free, np.arange(4), 2)
    assert got is not None and got[0].tolist() == [1]  # best fit node
    got = ca.place(cl, free, np.arange(4), 6)
    assert got is not None and set(cl.node_rack[got[0]].tolist()) == {1}  # best fit rack


@pytest.mark.parametrize("policy", ["fifo", "las"])
def test_comm_aware_loses_less_than_topology_under_contention(policy: str) -> None:
    # 12 four-device nodes in 4 racks of 3, uplinks oversubscribed 1, 2, 4 and 8; 80 generic
    # gangs of 2–8 devices over 3,000 s. Measured when written (lost job-seconds): fifo 4,160
    # topology vs 3,108 comm-aware, las 1,991 vs 1,878.
    cl = simple.cluster([("V", 4)] * 12, racks=[0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3])
    cl = dataclasses.replace(cl, rack_oversub=np.array([1.0, 2.0, 4.0, 8.0]))
    rng = np.random.default_rng(0)
    submit = np.sort(rng.uniform(0, 3000, 80))
    gang = rng.choice([2, 4, 6, 8], 80)
    work = rng.uniform(200, 2000, 80)
    jb = simple.jobs(list(zip(submit.tolist(), gang.tolist(), work.tolist(), strict=True)))
    lost = {}
    for where in ("topology", "comm-aware"):
        r = simulate(jb, cl, make_policy(policy), make_placement(where), options=NET)
        assert r.network is not None and (r.max_nodes > 1).any()
        lost[where] = r.network.lost_s.sum()
    assert 0 < lost["comm-aware"] < lost["topology"]


# ----------------------------------------------------------------------------- comm-wait


def test_comm_wait_holds_a_heavy_gang_until_a_rack_can_take_it() -> None:
    # Two racks of one 4-device node. Job 0 (3 devices, ends at 10 s) takes node 0, job 1
    # (3 devices, from 0.5 s to 30.5 s) node 1: one device is free in each rack. Job 2, a
    # ResNet-50 gang of 2 (gradient 25.6 M × 4 B = 0.102 GB ≥ 0.1 GB: heavy), arrives at
    # 1 s: two devices are free, but only across the racks, so it is held until job 0 ends
    # at 10 s and node 0 can take it whole. With a 5 s limit it goes at 1 + 5 = 6 s, across
    # the racks. A light model (LM, 14 M parameters: 0.056 GB) is never held: 1 s.
    cl = simple.cluster([("V", 4)] * 2, racks=[0, 1])
    rows = [(0.0, 3, 10.0), (0.5, 3, 30.0), (1.0, 2, 100.0)]
    heavy = simple.jobs(rows, job_type=["", "", "ResNet-50 (batch size 32)"])
    rates = JobRates(rate=np.ones((3, 1)), restore_s=np.zeros(3))
    pol = CommWait(base="fifo", max_wait_s=5.0)
    r = simulate(heavy, cl, pol, rates=rates)
    np.testing.assert_allclose(r.first_start, [0.0, 0.5, 6.0])
    assert pol.stats()["comm_wait_holds"] >= 1
    r = simulate(heavy, cl, CommWait(base="fifo", max_wait_s=100.0), rates=rates)
    np.testing.assert_allclose(r.first_start, [0.0, 0.5, 10.0])
    light = simple.jobs(rows, job_type=["", "", "LM (batch size 20)"])
    r = simulate(light, cl, CommWait(base="fifo", max_wait_s=100.0), rates=rates)
    np.testing.assert_allclose(r.first_start, [0.0, 0.5, 1.0])
    r = simulate(heavy, cl, make_policy("fifo"), rates=rates)  # fifo alone: at once
    np.testing.assert_allclose(r.first_start, [0.0, 0.5, 1.0])


@pytest.mark.parametrize(("param", "value"), [("heavy_gb", -1.0), ("max_wait_s", -5.0)])
def test_comm_wait_refuses_out_of_range_parameters_by_name(param: str, value: float) -> None:
    (error,) = policy_errors("comm-wait", {param: value}, "policies[0]")
    assert f"policies[0].params.{param}" in error


def test_uplink_series_gives_each_racks_utilisation_over_time_by_hand() -> None:
    # The trace of test_two_jobs_sharing_an_oversubscribed_uplink_by_hand: both uplinks
    # (12.5 GB/s) carry 2 × 6.25 = 12.5 GB/s over 0–6 s and B's 12.5 GB/s over 6–12 s:
    # utilisation 1 in both segments, both racks.
    from clustersim.metrics import model_records, uplink_series

    cl, jb = two_racks(), simple.jobs([(0.0, 2, 40.0), (0.0, 2, 100.0)])
    plans = [([0, 4], [1, 1]), ([1, 5], [1, 1])]
    on = simulate(jb, cl, make_policy("fifo"), Pinned(plans), rates=ring_rates(2), options=NET)
    up = uplink_series(on)
    assert up["t_s"] == pytest.approx([0.0, 6.0])
    assert up["dt_s"] == pytest.approx([6.0, 6.0])
    assert up["utilisation"] == [[1.0, 1.0], [1.0, 1.0]]
    assert up["mean"] == pytest.approx([1.0, 1.0])
    assert up["capacity_gb_s"] == [12.5, 12.5]
    assert uplink_series(on, max_points=1)["utilisation"] == [[1.0], [1.0]]
    assert set(model_records(on)) == {"uplinks"}
    json.dumps(model_records(on), allow_nan=False)


def test_uplink_series_of_half_loaded_uplinks() -> None:
    # Oversubscription 2: each uplink carries 4 × 12.5 / 2 = 25 GB/s. A on nodes 0 and 1
    # (one rack: no uplink) runs 40 steps at 10/s: 0–4 s. B on nodes 2 and 4 crosses both
    # uplinks alone and gets its whole NIC, 12.5 GB/s: 100 steps at 10/s, 0–10 s. The shares
    # are recomputed at 0, 4 (A ends) and 10 s (B ends): both uplinks at 12.5 / 25 = 0.5
    # over [0, 4) and [4, 10).
    from clustersim.metrics import uplink_series

    cl, jb = two_racks(oversub=2.0), simple.jobs([(0.0, 2, 40.0), (0.0, 2, 100.0)])
    plans = [([0, 1], [1, 1]), ([2, 4], [1, 1])]
    on = simulate(jb, cl, make_policy("fifo"), Pinned(plans), rates=ring_rates(2), options=NET)
    np.testing.assert_allclose(on.finish, [4.0, 10.0])
    up = uplink_series(on)
    assert up["t_s"] == pytest.approx([0.0, 4.0])
    assert up["dt_s"] == pytest.approx([4.0, 6.0])
    np.testing.assert_allclose(up["utilisation"], [[0.5, 0.5], [0.5, 0.5]])
    assert up["capacity_gb_s"] == [25.0, 25.0]
    assert up["mean"] == pytest.approx([0.5, 0.5])
    assert uplink_series(simulate(jb, cl, make_policy("fifo")))["t_s"] == []
