"""Themis's compiled kernels (:func:`kernels.themis_bundles`, :func:`kernels.pa_exact`)
against the plain numpy and Python code they replace, compiled and as plain Python."""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clustersim import kernels
from clustersim.engine import simulate
from clustersim.spec import cluster_from_shorthand
from clustersim.synth import gavel_model, generate
from scheduling import themis
from scheduling.registry import make_policy
from scheduling.themis import EXACT_LIMIT, Menu, Themis, finish_time_fairness, pa_auction


@pytest.fixture(autouse=True, scope="module")
def compiled_kernels() -> Iterator[None]:
    if not kernels.COMPILED:
        pytest.fail("numba is a pinned dependency: the compiled kernels must be in use")
    was = kernels.compiled_in_use()
    assert kernels.use_compiled()
    yield
    kernels.use_compiled(was)


# ------------------------------------------------------------------------- the bundles


def _bundles_reference(
    crow: np.ndarray, capp: np.ndarray, bidders: list[int], g: np.ndarray,
    sigma: np.ndarray, offered: np.ndarray,
) -> list[tuple[np.ndarray, np.ndarray, list[np.ndarray]]]:  # fmt: skip
    """Each bidder's menu the way the policy built it with numpy, one bidder at a time:
    (devices, capacity, jobs per type)."""
    nt = len(offered)
    gf = g.astype(np.float64)
    total_off = int(offered.sum())
    out = []
    for a in bidders:
        lo, hi = np.searchsorted(capp, [a, a + 1])
        rows = crow[lo:hi]
        rows = rows[np.cumsum(g[rows]) - g[rows] < total_off]
        kmax = len(rows)
        devs = np.full((nt, kmax + 1), total_off + 1, dtype=np.int64)
        capv = np.zeros((nt, kmax + 1))
        per_type = []
        for t in range(nt):
            ok = rows[(sigma[rows, t] > 0) & (g[rows] <= offered[t])]
            c = np.cumsum(g[ok])
            ok, c = ok[c <= offered[t]], c[c <= offered[t]]
            per_type.append(ok)
            devs[t, 0] = 0
            devs[t, 1 : len(ok) + 1] = c
            capv[t, 1 : len(ok) + 1] = np.cumsum(gf[ok] * sigma[ok, t])
        out.append((devs, capv, per_type))
    return out


@settings(max_examples=200, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), compiled=st.booleans())
def test_the_bundles_are_the_numpy_menus(seed: int, compiled: bool) -> None:
    """Random candidates (gangs too big for a type, types a job cannot run on, offers
    smaller than the queue): the kernel's menus are the numpy ones, bit for bit."""
    rng = np.random.default_rng(seed)
    m, nt, n_apps = int(rng.integers(1, 25)), int(rng.integers(1, 4)), int(rng.integers(1, 6))
    g = rng.choice([1, 1, 2, 4, 8], m).astype(np.int64)
    sigma = rng.uniform(0.1, 1.0, (m, nt)) * (rng.random((m, nt)) < 0.8)
    app = rng.integers(0, n_apps, m)
    running = rng.random(m) < 0.3
    cand = np.flatnonzero(rng.random(m) < 0.8)
    if not len(cand):
        cand = np.zeros(1, dtype=np.int64)
    crow = cand[np.argsort(app[cand] * 2 + ~running[cand], kind="stable")]
    capp = app[crow]
    offered = rng.integers(0, 12, nt).astype(np.int64)
    offered[0] = max(offered[0], 1)
    bidders = np.unique(capp)[: int(rng.integers(1, n_apps + 1))].astype(np.int64)
    want = _bundles_reference(crow, capp, bidders.tolist(), g, sigma, offered)
    lo, hi = np.searchsorted(capp, bidders), np.searchsorted(capp, bidders + 1)
    kk = max(min(int((hi - lo).max()), int(offered.sum())), 1)
    nb = len(bidders)
    devs = np.empty((nb, nt, kk + 1), dtype=np.int64)
    capv = np.empty((nb, nt, kk + 1))
    members = np.empty((nb, nt, kk), dtype=np.int64)
    kmax = np.empty(nb, dtype=np.int64)
    count = np.empty((nb, nt), dtype=np.int64)
    fn = kernels.themis_bundles if compiled else kernels.themis_bundles.py_func
    fn(crow, lo, hi, g, sigma, offered, devs, capv, members, kmax, count)
    for b, (d, c, per_type) in enumerate(want):
        w = d.shape[1]
        assert kmax[b] == w - 1
        assert (devs[b, :, :w] == d).all()
        assert (devs[b, :, w:] == offered.sum() + 1).all()  # padding: never offered
        assert capv[b, :, :w].tobytes() == c.tobytes()
        for t in range(nt):
            assert members[b, t, : count[b, t]].tolist() == per_type[t].tolist()


# ------------------------------------------------------------------------- the auction


def _exact_reference(
    menus: list[Menu], offered: np.ndarray
) -> tuple[list[tuple[int, int]], float] | None:
    """The enumeration the policy did in Python before the kernel: the bundles maximising
    the sum of log-valuations and that sum; ``None`` beyond EXACT_LIMIT combinations."""
    opts = [m.options(offered) for m in menus]
    if math.prod(len(o) for o in opts) > EXACT_LIMIT:
        return None
    logs = [[math.log(m.value[t, k]) for t, k in o] for m, o in zip(menus, opts, strict=True)]
    devs = [[(t, int(m.devices[t, k])) for t, k in o] for m, o in zip(menus, opts, strict=True)]
    room = [int(x) for x in offered]
    best, best_val = None, -math.inf
    for combo in itertools.product(*(range(len(o) - 1, -1, -1) for o in opts)):
        val = sum(logs[a][i] for a, i in enumerate(combo))
        if val <= best_val + 1e-12:
            continue
        use = [0] * len(room)
        for a, i in enumerate(combo):
            t, d = devs[a][i]
            use[t] += d
        if all(u <= r for u, r in zip(use, room, strict=True)):
            best, best_val = combo, val
    assert best is not None
    return [opts[a][i] for a, i in enumerate(best)], float(
        sum(logs[a][i] for a, i in enumerate(best))
    )


def _tied_menus(rng: np.random.Generator, n: int, nt: int, total: int) -> list[Menu]:
    """Menus whose valuations repeat (ties everywhere) and some of whose bundles cannot be
    formed (more devices than offered)."""
    menus = []
    for _ in range(n):
        k = int(rng.integers(1, 5))
        dev = np.zeros((nt, k + 1), dtype=np.int64)
        dev[:, 1:] = np.cumsum(rng.choice([1, 2, 4], (nt, k)), axis=1)
        dev[:, 1:][rng.random((nt, k)) < 0.2] = total + 1
        val = rng.choice([0.25, 0.5, 1.0, 2.0], (nt, k + 1))
        val[:, 0] = val[0, 0]
        menus.append(Menu(dev, val))
    return menus


@settings(max_examples=300, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), compiled=st.booleans())
def test_the_exact_auction_is_the_python_enumeration(seed: int, compiled: bool) -> None:
    """Same bundles (ties broken alike), same log-welfare with and without each bidder, bit
    for bit; no answer beyond the limit."""
    rng = np.random.default_rng(seed)
    n, nt = int(rng.integers(1, 6)), int(rng.integers(1, 4))
    offered = rng.integers(0, 9, nt).astype(np.int64)
    total = int(offered.sum())
    menus = _tied_menus(rng, n, nt, total)
    k1 = max(m.devices.shape[1] for m in menus)
    devices = np.full((n, nt, k1), total + 1, dtype=np.int64)
    value = np.ones((n, nt, k1))
    for a, m in enumerate(menus):
        devices[a, :, : m.devices.shape[1]] = m.devices
        value[a, :, : m.devices.shape[1]] = m.value
    pick = np.zeros((n, 2), dtype=np.int64)
    logs, without = np.zeros(n), np.zeros(n)
    fn = kernels.pa_exact if compiled else kernels.pa_exact.py_func
    done = fn(devices, value, offered, EXACT_LIMIT, pick, logs, without)
    want = _exact_reference(menus, offered)
    assert done == (want is not None)
    if want is None:
        return
    assert [tuple(p) for p in pick.tolist()] == want[0]
    assert logs.tolist() == [
        math.log(m.value[t, k]) for m, (t, k) in zip(menus, want[0], strict=True)
    ]
    for a in range(n):
        alt = _exact_reference(menus[:a] + menus[a + 1 :], offered)
        assert alt is not None
        assert without[a] == alt[1]


def test_the_public_auction_pads_menus_of_different_lengths() -> None:
    """Menus of different widths: the padding is never offered."""
    short = Menu(np.array([[0, 1]]), np.array([[0.5, 1.0]]))
    long = Menu(np.array([[0, 1, 2, 3]]), np.array([[0.5, 1.0, 1.5, 1.8]]))
    pick, keep = pa_auction([short, long], np.array([3]))
    assert pick == [(0, 1), (0, 2)]
    assert keep.shape == (2,)


# ------------------------------------------------------------------------- whole runs


@pytest.mark.slow
@pytest.mark.parametrize("dp_limit", [themis.DP_LIMIT, 0])
def test_themis_runs_are_the_same_without_numba(
    dp_limit: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Contended runs with f = 0 (every auction path: enumeration, dynamic programme, and,
    with no room for the programme, greedy): the same finish times, bit for bit, compiled
    and as plain Python."""
    monkeypatch.setattr(themis, "DP_LIMIT", dp_limit)
    cluster = cluster_from_shorthand("v100:4,p100:4,k80:4")
    t = generate(gavel_model(), n_jobs=30, seed=0)
    policy = {"fairness_knob": 0.0, "lease_s": 300.0}
    fast = simulate(t, cluster, make_policy("themis", **policy))
    monkeypatch.setattr(kernels, "COMPILE_FROM_JOBS", 10**9)
    monkeypatch.setattr(kernels, "COMPILE_AFTER_EVENTS", 10**9)
    kernels.use_compiled(False)
    try:
        plain = simulate(t, cluster, make_policy("themis", **policy))
    finally:
        assert kernels.use_compiled()
    assert plain.finish.tobytes() == fast.finish.tobytes()
    assert plain.attained.tobytes() == fast.attained.tobytes()


# ------------------------------------------------------------------------- the apps


def _apps_reference(
    active: np.ndarray, app_of: np.ndarray, gang: np.ndarray, remaining: np.ndarray,
    work: np.ndarray, submit: np.ndarray, alloc_type: np.ndarray, running: np.ndarray,
    cand: np.ndarray, best: np.ndarray, sigma: np.ndarray, cap: np.ndarray, now: float,
    lease_s: float,
) -> dict[str, np.ndarray]:  # fmt: skip
    """The per-app figures the way the policy computed them with numpy."""
    g = gang[active].astype(np.float64)
    left_t = remaining[active] / best
    total_t = work[active] / best
    held = np.zeros(len(active))
    ri = np.flatnonzero(running)
    held[ri] = g[ri] * sigma[ri, alloc_type[active[ri]]]
    apps, app = np.unique(app_of[active], return_inverse=True)
    n_all = len(apps)

    def per_app(w: np.ndarray) -> np.ndarray:
        return np.bincount(app, weights=w, minlength=n_all).astype(np.float64)

    gangs = per_app(g)
    n_app = len(np.flatnonzero(gangs > 0))
    w_left, w_total = per_app(left_t * g), per_app(total_t * g)
    longest, longest_total = np.zeros(n_all), np.zeros(n_all)
    np.maximum.at(longest, app, left_t)
    np.maximum.at(longest_total, app, total_t)
    start = np.full(n_all, np.inf)
    np.minimum.at(start, app, submit[active])
    worth = per_app(g * (sigma @ cap))
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.minimum(worth / np.maximum(gangs, 1.0) / n_app, gangs)
        t_id = np.maximum(np.maximum(w_total / share, longest_total), 1e-9)
    elapsed = now - start
    prev_cap = per_app(held)
    wanting = np.flatnonzero(np.bincount(app[cand], minlength=n_all))
    rho = finish_time_fairness(
        elapsed[wanting], w_left[wanting], longest[wanting], prev_cap[wanting], t_id[wanting]
    )
    idle = finish_time_fairness(
        elapsed[wanting] + lease_s, w_left[wanting], longest[wanting], share[wanting],
        t_id[wanting],
    )  # fmt: skip
    crow = np.flatnonzero(cand)
    crow = crow[np.argsort(app[crow] * 2 + ~running[crow], kind="stable")]
    return {
        "app": app, "apps": apps, "elapsed": elapsed, "w_left": w_left, "longest": longest,
        "t_id": t_id, "share": share, "held": prev_cap, "wanting": wanting,
        "rho_now": np.where(prev_cap[wanting] > 0, rho, idle), "crow": crow,
    }  # fmt: skip


@settings(max_examples=200, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), compiled=st.booleans(), boundary=st.booleans())
def test_the_apps_figures_are_the_numpy_ones(seed: int, compiled: bool, boundary: bool) -> None:
    """Random jobs, apps, rates (some zero), running and waiting jobs: every per-app figure,
    the wanting apps, their ρ and the candidates' order are the numpy ones, bit for bit; the
    valuations are 1 / ρ with each bundle."""
    rng = np.random.default_rng(seed)
    n, nt = int(rng.integers(1, 30)), int(rng.integers(1, 4))
    gang = rng.choice([1, 2, 4, 8], n).astype(np.int64)
    remaining = rng.uniform(0.0, 1e4, n)
    work = remaining + rng.uniform(0.0, 1e4, n)
    submit = np.sort(rng.uniform(0.0, 1e4, n))
    rate = rng.uniform(0.1, 3.0, (n, nt)) * (rng.random((n, nt)) < 0.8)
    rate[:, 0] = np.maximum(rate[:, 0], 0.05)  # every job runs somewhere
    app_of = rng.integers(0, max(n // 2, 1), n).astype(np.int64)
    active = np.flatnonzero(rng.random(n) < 0.8).astype(np.int64)
    if not len(active):
        active = np.zeros(1, dtype=np.int64)
    k = len(active)
    running = rng.random(k) < 0.4
    alloc_type = np.full(n, -1, dtype=np.int64)
    alloc_type[active[running]] = rng.integers(0, nt, int(running.sum()))
    cand = np.ones(k, dtype=bool) if boundary else ~running
    if not cand.any():
        cand[0] = True
    best = rate[active].max(axis=1)
    sigma = rate[active] / best[:, None]
    cap = rng.integers(1, 9, nt).astype(np.float64)
    now, lease_s = float(submit.max() + rng.uniform(0, 100)), 600.0
    want = _apps_reference(
        active, app_of, gang, remaining, work, submit, alloc_type, running, cand, best, sigma,
        cap, now, lease_s,
    )  # fmt: skip
    app, apps, wanting, crow, lo, hi = (np.empty(k, dtype=np.int64) for _ in range(6))
    stats, rho_now = np.empty((kernels.N_THEMIS_STATS, k)), np.empty(k)
    fn = kernels.themis_apps if compiled else kernels.themis_apps.py_func
    n_all, n_want = fn(
        active, app_of, gang, remaining, work, submit, alloc_type, running, cand, best, sigma,
        sigma @ cap, now, lease_s, boundary, app, apps, stats, wanting, rho_now, crow, lo, hi,
    )  # fmt: skip
    assert app.tolist() == want["app"].tolist()
    assert apps[:n_all].tolist() == want["apps"].tolist()
    for row, name in [
        (kernels.TS_ELAPSED, "elapsed"),
        (kernels.TS_W_LEFT, "w_left"),
        (kernels.TS_LONGEST, "longest"),
        (kernels.TS_T_ID, "t_id"),
        (kernels.TS_SHARE, "share"),
    ]:
        assert stats[row, :n_all].tobytes() == want[name].tobytes(), name
    kept = np.zeros(n_all) if boundary else want["held"]
    assert stats[kernels.TS_KEPT, :n_all].tobytes() == kept.tobytes()
    assert wanting[:n_want].tolist() == want["wanting"].tolist()
    assert rho_now[:n_want].tobytes() == want["rho_now"].tobytes()
    assert crow[: hi[n_all - 1]].tolist() == want["crow"].tolist()
    capp = app[crow[: hi[n_all - 1]]]
    for a in range(n_all):
        assert (capp[lo[a] : hi[a]] == a).all()
    # the valuations of some bundles of the wanting apps
    bidders = wanting[:n_want]
    total = 10
    devices = rng.integers(0, total + 2, (n_want, nt, 4)).astype(np.int64)
    devices[:, :, 0] = 0
    capacity = rng.uniform(0.0, 6.0, (n_want, nt, 4))
    capacity[:, :, 0] = 0.0
    value = np.empty((n_want, nt, 4))
    fv = kernels.themis_values if compiled else kernels.themis_values.py_func
    fv(bidders, stats, lease_s, total, devices, capacity, value)
    at = bidders[:, None, None]
    c = stats[kernels.TS_KEPT][at] + capacity
    st_ = {name: stats[row][at] for name, row in [("e", 0), ("w", 1), ("l", 2), ("t", 3), ("s", 4)]}
    r = finish_time_fairness(st_["e"], st_["w"], st_["l"], c, st_["t"])
    idle = finish_time_fairness(st_["e"] + lease_s, st_["w"], st_["l"], st_["s"], st_["t"])
    val = 1.0 / np.where(c > 0, r, idle)
    val = np.where(devices > total, val[:, :1, :1], val)
    assert value.tobytes() == val.tobytes()


# ------------------------------------------------------------------------- the leftovers


def _leftovers_reference(
    order: np.ndarray, n_bid: int, app: np.ndarray, crow: np.ndarray, taken: np.ndarray,
    active: np.ndarray, gang: np.ndarray, rate: np.ndarray, alloc_type: np.ndarray,
    running: np.ndarray, room: np.ndarray,
) -> tuple[list[int], list[int]]:  # fmt: skip
    """The leftover pass the way the policy did it with numpy and :meth:`Themis._fill`."""
    state = SimpleNamespace(jobs=SimpleNamespace(num_gpus=gang), rate=rate, alloc_type=alloc_type)
    g = gang[active]
    capp = app[crow]
    n_all = int(app.max()) + 1
    out_r: list[int] = []
    out_t: list[int] = []
    for group in (order[n_bid:], order):
        if not room.any():
            break
        rank = np.full(n_all, len(group), dtype=np.int64)
        rank[group] = np.arange(len(group))
        left = crow[~taken[crow] & (rank[capp] < len(group))]
        left = left[g[left] <= room.max()]
        if not len(left):
            continue
        left = left[np.argsort(rank[app[left]], kind="stable")]
        rows, types = Themis._fill(state, active, left, room, running)  # type: ignore[arg-type]
        out_r += rows.tolist()
        out_t += types.tolist()
        taken[rows] = True
    return out_r, out_t


@settings(max_examples=200, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), compiled=st.booleans())
def test_the_leftovers_are_the_numpy_pass(seed: int, compiled: bool) -> None:
    """Random candidates, some taken by the auction, running jobs whose type is full, types
    a job cannot run on: the kernel starts what the numpy pass started, in its order."""
    rng = np.random.default_rng(seed)
    n, nt = int(rng.integers(1, 25)), int(rng.integers(1, 4))
    gang = rng.choice([1, 1, 2, 4, 8], n).astype(np.int64)
    rate = rng.choice([0.0, 0.5, 1.0, 2.0], (n, nt))
    active = np.flatnonzero(rng.random(n) < 0.8).astype(np.int64)
    if not len(active):
        active = np.zeros(1, dtype=np.int64)
    k = len(active)
    running = rng.random(k) < 0.3
    alloc_type = np.full(n, -1, dtype=np.int64)
    alloc_type[active[running]] = rng.integers(0, nt, int(running.sum()))
    _, app = np.unique(rng.integers(0, 6, k), return_inverse=True)
    app = app.astype(np.int64)
    n_all = int(app.max()) + 1
    cand = np.flatnonzero(rng.random(k) < 0.8)
    crow = cand[np.argsort(app[cand] * 2 + ~running[cand], kind="stable")].astype(np.int64)
    lo = np.searchsorted(app[crow], np.arange(n_all)).astype(np.int64)
    hi = np.searchsorted(app[crow], np.arange(n_all) + 1).astype(np.int64)
    order = rng.permutation(np.unique(app[crow])).astype(np.int64)
    n_bid = int(rng.integers(0, len(order) + 1))
    taken = rng.random(k) < 0.2
    room = rng.integers(0, 9, nt).astype(np.int64)
    want_taken, want_room = taken.copy(), room.copy()
    want = _leftovers_reference(
        order, n_bid, app, crow, want_taken, active, gang, rate, alloc_type, running, want_room
    )
    out_r, out_t = np.empty(k, dtype=np.int64), np.empty(k, dtype=np.int64)
    fn = kernels.themis_leftovers if compiled else kernels.themis_leftovers.py_func
    m = fn(order, n_bid, lo, hi, crow, taken, active, gang, rate, alloc_type, running, room,
           out_r, out_t)  # fmt: skip
    assert (out_r[:m].tolist(), out_t[:m].tolist()) == want
    assert room.tolist() == want_room.tolist()
    assert taken.tolist() == want_taken.tolist()
