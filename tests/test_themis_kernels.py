"""Themis's compiled kernels (:func:`kernels.themis_bundles`, :func:`kernels.pa_exact`)
against the plain numpy and Python code they replace, compiled and as plain Python."""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator

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
from scheduling.themis import EXACT_LIMIT, Menu, pa_auction


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
