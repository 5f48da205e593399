"""The centre tie-break (:func:`scheduling.allocation.optimal_face_centre`) on LPs solved on
paper: when an LP has a whole optimal edge, the centre is a point inside it, not a vertex."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clustersim import kernels
from scheduling.allocation import (
    BaseLP,
    LPModel,
    LPSolver,
    interior_allocation,
    maxmin_model,
    optimal_face_centre,
)
from scheduling.gavel_lp import GavelMaxThroughput, GavelMMF
from tests.test_gavel_lp import allocate, fake_state


@pytest.mark.parametrize(("w", "expected"), [((1.0, 1.0), 0.5), ((2.0, 1.0), 2.0 / 3.0)])
def test_centre_of_an_optimal_edge(w: tuple[float, float], expected: float) -> None:
    # Two jobs, two types, one device each, every throughput 1: maximise Σ X. The optimum 2
    # is reached on the whole edge X = [[a, 1-a], [1-a, a]], 0 <= a <= 1 (both devices and
    # both row sums full). With equal weights the barrier on that edge is
    # 2 (log a + log(1-a)): maximal at the midpoint a = 1/2. To see the weights act, weigh
    # X00 and X11 by w0 and X01 and X10 by w1: then the
    # barrier is 2 w0 log a + 2 w1 log(1-a), maximal at a = w0 / (w0 + w1): 1/2 and 2/3.
    lp = BaseLP(np.ones((2, 2)), np.ones(2), np.ones(2))
    m = lp.model(-np.ones(4))
    res = LPSolver().solve(m)
    assert res.x is not None
    wv = np.array([w[0], w[1], w[1], w[0]])
    v = optimal_face_centre(m, res.x, np.full(4, 0.25), weight_vars=wv)
    assert v is not None
    a = expected
    np.testing.assert_allclose(v.reshape(2, 2), [[a, 1 - a], [1 - a, a]], atol=1e-4)
    assert v.sum() == pytest.approx(2.0, rel=1e-5)  # still optimal


def test_max_throughput_centre_splits_a_tie_the_vertex_does_not() -> None:
    # Job 0 (1 device) and job 1 (2 devices), throughput 1 everywhere, 2 devices of each type:
    # Σ X is 2 at most (row sums); it is reached whenever a0 + a1 = 1 and b0 + b1 = 1 with
    # a0 + 2 b0 <= 2 and a1 + 2 b1 <= 2, i.e. 1 <= a0 + 2 b0 <= 2: a whole face. Swapping the
    # two types maps the face onto itself (a0 -> 1 - a0, b0 -> 1 - b0), so its centre is the
    # fixed point a0 = b0 = 1/2.
    thr = np.ones((2, 2))
    state = fake_state(thr=thr, gpus=(1, 2), cap=(2, 2))
    x = allocate(GavelMaxThroughput(centre=True), state)
    np.testing.assert_allclose(x, 0.5, atol=1e-4)
    vertex = allocate(GavelMaxThroughput(), state)
    assert vertex.sum() == pytest.approx(2.0)
    assert np.abs(vertex - 0.5).max() > 0.1  # HiGHS stops at a vertex of that face


def test_mmf_centre_on_paper() -> None:
    # Throughput 1 everywhere, job 0 on 1 device, job 1 on 2, 2 devices of each type:
    # proportional throughput 1 each, so the level is z = min(a0 + a1, 2 (b0 + b1)) (job 0's
    # row X = (a0, a1), job 1's (b0, b1)). z <= 1 by job 0's row sum and z = 1 is reachable:
    # the optimal face is a0 + a1 = 1, 1/2 <= b0 + b1 <= 1, a0 + 2 b0 <= 2, a1 + 2 b1 <= 2.
    # Its centre is symmetric under swapping the types (a0 = 1/2, b0 = b1 = b) and maximises
    # 2 log b + log(1 - 2b) + 2 log(3/2 - 2b) + log(4b - 1) (the non-negativity of b0, b1,
    # job 1's row sum, the two capacities, job 1's max-min row): the derivative
    # 2/b - 2/(1 - 2b) - 4/(3/2 - 2b) + 4/(4b - 1) vanishes at b = 3/8
    # (16/3 - 8 - 16/3 + 8 = 0).
    thr = np.ones((2, 2))
    state = fake_state(thr=thr, gpus=(1, 2), cap=(2, 2))
    x = allocate(GavelMMF(centre=True), state)
    np.testing.assert_allclose(x, [[0.5, 0.5], [0.375, 0.375]], atol=1e-4)


def naive_centre(
    m: LPModel, x_opt: np.ndarray, x_int: np.ndarray, wr: np.ndarray, wv: np.ndarray
) -> np.ndarray | None:
    """The centre restated with dense numpy and ``np.linalg.solve``, step for step as
    :func:`scheduling.allocation.optimal_face_centre` documents it: the barrier of the
    ``tol``-relaxed optimal face, damped Newton steps from ``x_opt + θ (x_int - x_opt)``, a
    ratio test then backtracking (full steps once the decrement is below 0.1), stop at a half
    Newton decrement of ``1e-24`` or when it stops falling."""
    a = m.matrix().toarray()
    free = m.ub > m.lb
    fval = float(m.c @ x_opt)
    tol = 1e-6 * max(1.0, abs(fval))
    gap = float(m.c @ x_int) - fval
    theta = 0.5 if gap <= 0 else min(0.5, 0.5 * tol / gap)
    v = np.where(free, x_opt + theta * (x_int - x_opt), x_opt)
    aa = np.vstack([a[:, free], m.c[free]])
    bb = np.append(m.b - a[:, ~free] @ v[~free], fval + tol - m.c[~free] @ v[~free])
    w = np.append(wr, 1.0)
    bar = np.isfinite(m.lb[free])
    lbi, wvi = m.lb[free][bar], wv[free][bar]

    def value(u: np.ndarray) -> float:
        s, d = bb - aa @ u, u[bar] - lbi
        if s.min() <= 0 or (d.size and d.min() <= 0):
            return np.inf
        return float(-(w * np.log(s)).sum() - (wvi * np.log(d)).sum())

    u = v[free]
    f0 = value(u)
    if not np.isfinite(f0):
        return None
    last = np.inf
    for _ in range(60):
        s, d = bb - aa @ u, u[bar] - lbi
        grad = aa.T @ (w / s)
        grad[bar] -= wvi / d
        hess = aa.T @ np.diag(w / s**2) @ aa
        hess[np.flatnonzero(bar), np.flatnonzero(bar)] += wvi / d**2
        step = -np.linalg.solve(hess, grad)
        dec = float(-grad @ step)
        if dec / 2 <= 1e-24 or (last < 0.1 and dec >= last):
            break
        last = dec
        ds, sv = aa @ step, step[bar]
        t = min(1.0, 0.99 * min((s[ds > 0] / ds[ds > 0]).min(initial=np.inf),
                                (d[sv < 0] / -sv[sv < 0]).min(initial=np.inf)))  # fmt: skip
        pure = dec < 0.1 and t == 1.0  # full Newton steps near the centre
        while not pure and value(u + t * step) > f0 - 0.25 * t * dec and t >= 1e-6:
            t *= 0.5
        if t < 1e-6:
            break
        u = u + t * step
        f0 = value(u)
    out = v.copy()
    out[free] = u
    return out


def _random_maxmin(seed: int) -> tuple[LPModel, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A random max-min LP (a recomputation of ``gavel-mmf``), its HiGHS vertex, an interior
    point and random weights."""
    rng = np.random.default_rng(seed)
    k, nt = int(rng.integers(1, 7)), int(rng.integers(1, 4))
    thr = np.where(rng.random((k, nt)) < 0.8, rng.choice([0.5, 1.0, 2.0, 3.7], (k, nt)), 0.0)
    thr[thr.sum(axis=1) == 0, 0] = 1.0
    sf = rng.choice([1.0, 2.0, 4.0], k)
    cap = rng.integers(1, 9, nt).astype(np.float64)
    count = rng.integers(1, 4, k).astype(np.float64)
    coef = thr * sf[:, None]
    live = np.ones(k, dtype=bool)
    m = maxmin_model(thr, sf, cap, coef, live, count)
    res = LPSolver().solve(m)
    assert res.x is not None
    xi = interior_allocation(thr, sf, cap, count)
    zi = 0.5 * float(np.min(np.sum(coef * xi, axis=1)))
    wr = np.concatenate([np.ones(nt), count, count])
    wv = np.append(np.repeat(count, nt), 1.0)
    return m, res.x, np.append(xi.ravel(), zi), wr, wv


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_the_kernel_is_the_dense_newton_iteration(seed: int) -> None:
    """On random max-min LPs the compiled kernel, its plain-Python source and the dense numpy
    restatement reach the same centre (the first two bit for bit), and it is optimal."""
    m, x_opt, x_int, wr, wv = _random_maxmin(seed)
    was = kernels.compiled_in_use()
    try:
        assert kernels.use_compiled()
        got = optimal_face_centre(m, x_opt, x_int, wr, wv)
        kernels.use_compiled(False)
        plain = optimal_face_centre(m, x_opt, x_int, wr, wv)
    finally:
        kernels.use_compiled(was)
    want = naive_centre(m, x_opt, x_int, wr, wv)
    assert (got is None) == (want is None) == (plain is None)
    if got is None:
        return
    assert got.tolist() == plain.tolist()
    # both converged to rounding: the same point up to rounding
    np.testing.assert_allclose(got, want, atol=1e-8)
    assert m.c @ got <= m.c @ x_opt + 1e-6 * max(1.0, abs(m.c @ x_opt)) + 1e-12
    assert np.all(m.matrix() @ got <= m.b + 1e-9)
