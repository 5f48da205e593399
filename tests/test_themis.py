"""Themis (Mahajan et al., NSDI'20): ρ, the fairness knob, the partial-allocation auction
and hand-worked traces (``scheduling/themis.py``)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from clustersim.engine import simulate
from scheduling.base import Decision, State
from scheduling.params import policy_errors
from scheduling.themis import (
    EXACT_LIMIT,
    Menu,
    Themis,
    bidder_count,
    finish_time_fairness,
    pa_auction,
)
from tests.simple import cluster, fixed_rates, jobs

# ---------------------------------------------------------------------------- ρ


def test_rho_is_shared_time_over_independent_time() -> None:
    # an app 100 s old with 50 device-seconds left, holding 1 device, whose time alone on
    # its 1/N share is 300 s: T_shared = 100 + 50/1 = 150, ρ = 150/300 = 0.5
    assert finish_time_fairness(100.0, 50.0, 50.0, 1.0, 300.0) == pytest.approx(0.5)
    # with 4 devices the work would take 12.5 s, but its longest job needs 50 s alone
    assert finish_time_fairness(100.0, 50.0, 50.0, 4.0, 300.0) == pytest.approx(0.5)
    # 200 device-seconds over 4 devices = 50 s; the longest job 20 s: (10 + 50) / 60 = 1
    assert finish_time_fairness(10.0, 200.0, 20.0, 4.0, 60.0) == pytest.approx(1.0)
    # nothing held: it never finishes
    assert finish_time_fairness(0.0, 1.0, 1.0, 0.0, 1.0) == np.inf


# ---------------------------------------------------------------------------- the knob


@pytest.mark.parametrize(
    ("apps", "knob", "bidders"),
    [(4, 0.0, 4), (4, 1.0, 1), (4, 0.5, 2), (5, 0.5, 3), (3, 0.8, 1), (10, 0.8, 2), (0, 0.5, 0)],
)
def test_the_knob_leaves_out_the_fraction_f_of_apps(apps: int, knob: float, bidders: int) -> None:
    # ceil((1 - f) × apps), at least one: f = 0 every app bids, f = 1 only the worst
    assert bidder_count(apps, knob) == bidders


class _Counting(Themis):
    """Themis that records how many apps bid in each auction."""

    def reset(self, rng: np.random.Generator) -> None:
        super().reset(rng)
        self.counts: list[int] = []

    def schedule(self, state: State) -> Decision:
        before = self.auctions
        d = super().schedule(state)
        if self.auctions != before:
            self.counts.append(len(self.last_bidders))
        return d


def _three_users():  # type: ignore[no-untyped-def]
    return jobs([(0, 1, 100), (0, 1, 100), (0, 1, 100)], user=["a", "b", "c"])


@pytest.mark.parametrize(("knob", "first"), [(0.0, 3), (0.5, 2), (1.0, 1)])
def test_the_knob_sets_how_many_apps_bid_in_a_run(knob: float, first: int) -> None:
    cl = cluster([("A", 1)])
    t = _three_users()
    pol = _Counting(fairness_knob=knob, lease_s=50.0)
    simulate(t, cl, pol, rates=fixed_rates(t, cl))
    assert pol.counts[0] == first


@pytest.mark.parametrize(("grouping", "apps"), [("user", 2), ("vc", 1), ("job", 3)])
def test_apps_group_jobs_by_user_vc_or_job(grouping: str, apps: int) -> None:
    cl = cluster([("A", 1)])
    t = jobs([(0, 1, 100), (0, 1, 100), (0, 1, 100)], user=["u", "u", "v"], vc=["x"] * 3)
    pol = _Counting(fairness_knob=0.0, lease_s=50.0, app=grouping)  # type: ignore[arg-type]
    simulate(t, cl, pol, rates=fixed_rates(t, cl))
    assert pol.counts[0] == apps  # f = 0: every app bids


def test_jobs_without_a_user_are_apps_of_their_own() -> None:
    cl = cluster([("A", 1)])
    t = jobs([(0, 1, 100), (0, 1, 100), (0, 1, 100)], user=["", "", "v"])
    pol = _Counting(fairness_knob=0.0, lease_s=50.0)
    simulate(t, cl, pol, rates=fixed_rates(t, cl))
    assert pol.counts[0] == 3  # not two apps, "v" and "the unknown user"


def test_jobs_without_a_user_fall_back_to_their_vc() -> None:
    cl = cluster([("A", 1)])
    t = jobs([(0, 1, 100), (0, 1, 100), (0, 1, 100)], user=["", "", "v"], vc=["x", "x", "y"])
    pol = _Counting(fairness_knob=0.0, lease_s=50.0)
    simulate(t, cl, pol, rates=fixed_rates(t, cl))
    assert pol.counts[0] == 2  # the vc "x" (j0, j1) and the user "v" (j2)


# ---------------------------------------------------------------------------- the auction


def _menu(devices: list[list[int]], value: list[list[float]]) -> Menu:
    return Menu(np.array(devices, dtype=np.int64), np.array(value, dtype=np.float64))


def test_the_auction_on_a_hand_worked_instance() -> None:
    # Two GPUs of one type. App v (bids first): one 1-GPU job, valuation 1/ρ = 1/6 with
    # nothing, 1 with one GPU. App u: two 1-GPU jobs, 1/3.5 with nothing, 1 with one GPU,
    # 2 with two. Products: (v 1, u 1) = 1; (v 0, u 2) = 2/6; (v 1, u 0) = 1/3.5: the
    # proportionally fair allocation gives each one GPU.
    v = _menu([[0, 1]], [[1 / 6, 1.0]])
    u = _menu([[0, 1, 2]], [[1 / 3.5, 1.0, 2.0]])
    pick, keep = pa_auction([v, u], np.array([2]))
    assert pick == [(0, 1), (0, 1)]
    # hidden payments: without v, u would take both GPUs (value 2): v keeps 1/2 of its
    # bundle; without u, v still gets its one GPU (value 1): u keeps all of its bundle
    np.testing.assert_allclose(keep, [0.5, 1.0])


def _brute_force(menus: list[Menu], offered: np.ndarray, skip: int = -1):  # type: ignore[no-untyped-def]
    """Every combination of bundles, the obvious way: the best product of valuations."""
    choices = []
    for a, m in enumerate(menus):
        opts = [(0, 0)]
        if a != skip:
            nt, kk = m.devices.shape
            opts += [(t, k) for t in range(nt) for k in range(1, kk)]
        choices.append(opts)
    best, best_pick = -math.inf, None
    for combo in itertools.product(*choices):
        use = np.zeros(len(offered), dtype=np.int64)
        for m, (t, k) in zip(menus, combo, strict=True):
            use[t] += m.devices[t, k]
        if (use > offered).any():
            continue
        pairs = enumerate(zip(menus, combo, strict=True))
        val = sum(math.log(m.value[t, k]) for a, (m, (t, k)) in pairs if a != skip)
        if val > best:
            best, best_pick = val, combo
    return best, best_pick


def _random_menus(rng: np.random.Generator, n: int, nt: int, kmax: int) -> list[Menu]:
    menus = []
    for _ in range(n):
        k = int(rng.integers(1, kmax + 1))
        gangs = rng.choice([1, 2, 4], size=k)
        dev = np.zeros((nt, k + 1), dtype=np.int64)
        dev[:, 1:] = np.cumsum(gangs)[None, :]
        val = np.empty((nt, k + 1))
        val[:, 0] = rng.uniform(0.1, 0.5)
        val[:, 1:] = val[:, :1] + np.cumsum(rng.uniform(0.01, 1.0, (nt, k)), axis=1)
        menus.append(Menu(dev, val))
    return menus


@pytest.mark.parametrize("seed", range(25))
def test_the_auction_maximises_the_product_like_brute_force(seed: int) -> None:
    rng = np.random.default_rng(seed)
    nt = int(rng.integers(1, 3))
    menus = _random_menus(rng, int(rng.integers(1, 4)), nt, 3)
    offered = rng.integers(1, 7, size=nt)
    pick, keep = pa_auction(menus, offered)
    use = np.zeros(nt, dtype=np.int64)
    for m, (t, k) in zip(menus, pick, strict=True):
        use[t] += m.devices[t, k]
    assert (use <= offered).all()
    best, _ = _brute_force(menus, offered)
    got = sum(math.log(m.value[t, k]) for m, (t, k) in zip(menus, pick, strict=True))
    assert got == pytest.approx(best, abs=1e-12)
    # hidden payments against the brute-force optimum without each bidder
    for a in range(len(menus)):
        others = got - math.log(menus[a].value[pick[a]])
        without, _ = _brute_force(menus, offered, skip=a)
        assert keep[a] == pytest.approx(min(1.0, math.exp(others - without)))
        assert 0.0 <= keep[a] <= 1.0


@pytest.mark.parametrize("nt", [1, 2])
@pytest.mark.parametrize("seed", range(6))
def test_a_mid_sized_auction_is_solved_exactly_by_dynamic_programming(seed: int, nt: int) -> None:
    # more combinations than the enumeration takes (> EXACT_LIMIT), a small device grid
    rng = np.random.default_rng(50 + seed)
    offered = rng.integers(3, 8, size=nt)
    menus: list[Menu] = []
    while math.prod(len(m.options(offered)) for m in menus) <= EXACT_LIMIT:
        menus += _random_menus(rng, 1, nt, 4)
    assert math.prod(len(m.options(offered)) for m in menus) < 40 * EXACT_LIMIT
    pick, keep = pa_auction(menus, offered)
    best, _ = _brute_force(menus, offered)
    got = sum(math.log(m.value[t, k]) for m, (t, k) in zip(menus, pick, strict=True))
    assert got == pytest.approx(best, abs=1e-9)
    for a in range(len(menus)):
        others = got - math.log(menus[a].value[pick[a]])
        without, _ = _brute_force(menus, offered, skip=a)
        assert keep[a] == pytest.approx(min(1.0, math.exp(others - without)))


def test_a_large_auction_is_greedy_and_stays_within_the_offer() -> None:
    rng = np.random.default_rng(3)
    menus = _random_menus(rng, 12, 3, 6)
    offered = np.array([5, 9, 3])
    assert math.prod(len(m.options(offered)) for m in menus) > EXACT_LIMIT
    pick, keep = pa_auction(menus, offered)
    use = np.zeros(3, dtype=np.int64)
    for m, (t, k) in zip(menus, pick, strict=True):
        use[t] += m.devices[t, k]
    assert (use <= offered).all()
    assert ((keep >= 0) & (keep <= 1)).all()
    assert sum(k > 0 for _, k in pick) >= 3  # it hands devices out


# ---------------------------------------------------------------------------- traces


def test_with_f_1_the_worst_app_takes_each_lease() -> None:
    # One GPU, lease 100 s, f = 1 (only the worst app bids). Users u (j0) and v (j1), one
    # 1-GPU job of 150 s each, both at t = 0. N = 2: each app's 1/N share is 0.5 GPU, so
    # T_independent = 150 / 0.5 = 300 s.
    # t=0: nobody holds anything; both are valued as waiting a lease then running at the
    #      share: ρ = (0 + 100 + 300) / 300 for both; the tie goes to u -> j0 runs.
    # t=100: u held the GPU: ρ_u = (100 + 50) / 300 = 0.5; v: (100 + 100 + 300) / 300
    #      = 1.67 -> v bids and wins: j0 is suspended, j1 runs (50 s left).
    # t=200: u holds nothing: (200 + 100 + max(50 / 0.5, 50)) / 300 = 1.33; v held:
    #      (200 + 50) / 300 = 0.83 -> u wins: j0 runs its last 50 s, ends at 250.
    # t=250: j0 finished mid-lease; the freed GPU is offered at once: j1 runs, ends at 300.
    cl = cluster([("A", 1)])
    t = jobs([(0, 1, 150), (0, 1, 150)], user=["u", "v"])
    r = simulate(t, cl, Themis(fairness_knob=1.0, lease_s=100.0), rates=fixed_rates(t, cl))
    np.testing.assert_allclose(r.finish, [250.0, 300.0])
    np.testing.assert_allclose(r.first_start, [0.0, 100.0])
    assert r.preemptions.tolist() == [1, 1]


def test_with_f_0_the_partial_allocation_splits_the_gpus() -> None:
    # Two GPUs, lease 1000 s, f = 0 (both apps bid). User u: j0, j1 (1 GPU, 200 s each);
    # user v: j2 (1 GPU, 200 s). N = 2, shares 1 GPU each: T_id(u) = 400, T_id(v) = 200.
    # t=0: ρ with nothing (a lease of waiting, then the share): u (1000 + 400) / 400 = 3.5,
    #      v (1000 + 200) / 200 = 6 -> v bids first. Valuations 1/ρ are those of
    #      test_the_auction_on_a_hand_worked_instance: PF gives one GPU each; u keeps its
    #      GPU (c = 1) and runs j0; v keeps half a GPU, i.e. none, and the leftover GPU goes
    #      to the worst app, v: j2 runs.
    # t=200: j0 and j2 end; the two free GPUs are offered: only u wants one -> j1 runs to 400.
    cl = cluster([("A", 2)])
    t = jobs([(0, 1, 200), (0, 1, 200), (0, 1, 200)], user=["u", "u", "v"])
    r = simulate(t, cl, Themis(fairness_knob=0.0, lease_s=1000.0), rates=fixed_rates(t, cl))
    np.testing.assert_allclose(r.finish, [200.0, 400.0, 200.0])


@pytest.mark.parametrize(
    ("knob", "finish"), [(0.5, [200, 400, 700, 600]), (1.0, [200, 400, 300, 900])]
)
def test_only_the_worst_apps_bid_and_leftovers_go_to_the_others_first(
    knob: float, finish: list[float]
) -> None:
    # Two GPUs, lease 1000 s. User u: j0, j1 (1 GPU, 200 s each); v: j2 (1 GPU, 300 s);
    # w: j3 (1 GPU, 600 s); all at t = 0. N = 3 apps: a 1/N share is 2/3 GPU, so
    # T_id(u) = 400 / (2/3) = 600, T_id(v) = 300 / (2/3) = 450, T_id(w) = 600 / (2/3) = 900.
    # t=0, ρ with nothing (a lease of waiting, then the share): v (1000 + 450) / 450 = 3.22,
    #   u (1000 + 600) / 600 = 2.67, w (1000 + 900) / 900 = 2.11.
    # f = 0.5: ceil(0.5 × 3) = 2 bidders, v and u. Valuations 1/ρ: v 1/3.22 = 0.31 with
    #   nothing, 450 / 300 = 1.5 with one GPU; u 0.375, 600 / 400 = 1.5 with one GPU,
    #   600 / 200 = 3 with two. Products: one each 2.25, u both 0.93, v alone 0.56 -> one
    #   each. Hidden payments: without v, u would take both (3): v keeps 1.5 / 3 = 1/2 GPU,
    #   i.e. none; without u, v still gets one: u keeps its GPU (j0). The leftover GPU goes
    #   first to the app that did not bid, w: j3 runs, v waits.
    #   t=200: j0 ends; the freed GPU is offered to the apps wanting one, u and v (N still 3;
    #   T_id(u) is now 200 / (2/3) = 300 for its one active job): ρ u (200 + 1000 + 300) /
    #   300 = 5, v (200 + 1000 + 450) / 450 = 3.67; ceil(0.5 × 2) = 1 bidder, u: j1 runs
    #   to 400.
    #   t=400: j1 ends; v alone wants the GPU: j2 runs, 400 + 300 = 700. j3 ends at 600.
    # f = 1: only the worst, v, bids: it takes one GPU (alone, it keeps all of it); the
    #   leftover goes to the non-bidders worst first, u (2.67 > 2.11): j0.
    #   t=200: j0 ends; u and w want it: ρ u 5 (as above), w (200 + 1000 + 900) / 900 = 2.33:
    #   u bids alone, j1 runs to 400.
    #   t=300: j2 ends; w alone wants it: j3 runs, 300 + 600 = 900.
    cl = cluster([("A", 2)])
    t = jobs([(0, 1, 200), (0, 1, 200), (0, 1, 300), (0, 1, 600)], user=["u", "u", "v", "w"])
    pol = Themis(fairness_knob=knob, lease_s=1000.0)
    r = simulate(t, cl, pol, rates=fixed_rates(t, cl))
    np.testing.assert_allclose(r.finish, finish)


def test_valuations_follow_the_rates_on_a_mixed_cluster() -> None:
    # One device of a slow type A (speed 1) and one of a fast type B (speed 2). One job of
    # 200 units: on B it needs 100 s (ρ smaller), so its bid prefers B.
    cl = cluster([("A", 1), ("B", 1)])
    t = jobs([(0, 1, 200)], user=["u"])
    r = simulate(t, cl, Themis(), rates=fixed_rates(t, cl, speed=[1.0, 2.0]))
    np.testing.assert_allclose(r.finish, [100.0])
    assert r.type_time[0].tolist() == [0.0, 100.0]


# ---------------------------------------------------------------------------- invariants


class _WorkConserving(Themis):
    """Themis that checks every decision leaves no device idle that a waiting job could
    use."""

    def schedule(self, state: State) -> Decision:
        d = super().schedule(state)
        assert d.types is not None
        g = state.jobs.num_gpus
        used = np.bincount(d.types, weights=g[d.run], minlength=len(state.capacity))
        room = state.capacity - used
        assert (room >= 0).all()
        waiting = np.setdiff1d(state.active, d.run)
        for j in waiting.tolist():
            fits = (state.rate[j] > 0) & (room >= g[j])
            assert not fits.any(), f"job {j} waits while {room} devices are idle"
        return d


@pytest.mark.parametrize("knob", [0.0, 0.5, 1.0])
@pytest.mark.parametrize("grouping", ["user", "job"])
def test_no_device_idles_while_a_job_that_fits_waits(knob: float, grouping: str) -> None:
    rng = np.random.default_rng(4)
    n = 40
    submit = np.sort(rng.uniform(0, 300, n)).round(1)
    gpus = rng.choice([1, 1, 2, 4], n)
    work = rng.uniform(10, 400, n).round(1)
    t = jobs(
        list(zip(submit.tolist(), gpus.tolist(), work.tolist(), strict=True)),
        user=[f"u{i}" for i in rng.integers(0, 4, n)],
    )
    cl = cluster([("A", 4), ("B", 4), ("B", 2)])
    pol = _WorkConserving(fairness_knob=knob, lease_s=60.0, app=grouping)  # type: ignore[arg-type]
    r = simulate(t, cl, pol, rates=fixed_rates(t, cl, speed=[1.0, 1.5]))
    assert np.isfinite(r.finish).all()


@pytest.mark.parametrize(
    ("params", "named"),
    [
        ({"fairness_knob": 1.5}, "fairness_knob"),
        ({"fairness_knob": -0.1}, "fairness_knob"),
        ({"lease_s": 0}, "lease_s"),
        ({"app": "team"}, "app"),
    ],
)
def test_out_of_range_parameters_are_refused_by_name(params: dict, named: str) -> None:  # type: ignore[type-arg]
    errors = policy_errors("themis", params, "policies[0]")
    assert errors and named in errors[0], errors
