"""The finish-time-fairness centre (:func:`scheduling.centre.ftf_centre`, ``gavel-ftf``'s
``centre=True``) on instances solved on paper: where the optimum leaves a job's allocation
free, the answer is the centre of the allocations that keep the optimum, not a vertex."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clustersim import kernels
from scheduling.centre import ftf_centre
from scheduling.gavel_lp import GavelFTF
from tests.test_gavel_lp import allocate, fake_state


@pytest.mark.parametrize(("w", "expected"), [(0.0, 0.4), (0.5, 170 / 350), (1.0, 0.55)])
def test_free_job_sits_where_the_barrier_balances(w: float, expected: float) -> None:
    # One type with 2 devices, two 1-GPU jobs at 1 step/s, nothing waited (s = 0), E = 100
    # for both; A has R = 10 steps left, B R = 100. rho_B = (100 / x_B) / 100 = 1 / x_B >= 1,
    # so the optimum is rho* = 1 with B's whole time (x_B = 1, pinned); A is free as long as
    # rho_A = (10 / x_A) / 100 <= 1, i.e. x_A >= 0.1.
    # At level tau (a = tau E_A - s_A = 100 tau, ~100) A's barrier terms are log x_A (x >= 0),
    # log(1 - x_A) (row), log(2 - x_A - x_B) -> log(1 - x_A) (capacity, x_B -> 1) and, with
    # the cone variable eliminated, (1 + w) log(a x_A - R_A) - log x_A. Setting the derivative
    # to 0: 1/x - 2/(1 - x) + (1 + w) a / (a x - R) - 1/x = 0, so (1 + w) a (1 - x) =
    # 2 (a x - R) and x_A = ((1 + w) a + 2 R) / ((3 + w) a): 120/300 = 0.4 (w = 0),
    # 170/350 (w = 1/2, ECOS's weight) and 220/400 = 0.55 (w = 1).
    level = 1.0 + 1e-7
    start = np.array([[0.5], [1.0 - 0.5e-7]])  # strictly inside: rho_B = 1/(1 - 5e-8) < level
    x = ftf_centre(
        thr=np.ones((2, 1)),
        sf=np.ones(2),
        cap=np.array([2.0]),
        rem=np.array([10.0, 100.0]),
        since=np.zeros(2),
        denom=np.array([100.0, 100.0]),
        level=level,
        start=start,
        cone_weight=w,
    )
    assert x is not None
    assert x[0, 0] == pytest.approx(expected, abs=1e-4)
    assert x[1, 0] == pytest.approx(1.0, abs=1e-5)  # B stays pinned
    assert 100.0 / x[1, 0] / 100.0 < level  # and inside the level set


def test_start_outside_the_level_set_is_refused() -> None:
    # x_B = 1/2 gives rho_B = 2 > level 1.1: no centre from there (the caller keeps its vertex)
    x = ftf_centre(
        np.ones((2, 1)),
        np.ones(2),
        np.array([2.0]),
        np.array([10.0, 100.0]),
        np.zeros(2),
        np.array([100.0, 100.0]),
        level=1.1,
        start=np.array([[0.5], [0.5]]),
    )
    assert x is None


def test_policy_centre_splits_a_free_choice_of_type_evenly() -> None:
    # One 1-GPU job, two types (one device each) where it runs 2 steps/s, R = 100, nothing
    # waited. Isolated allocation: each device over 1 job = (1, 1), row scaled to (1/2, 1/2),
    # so iso = 2 and E = 100 / 2 = 50; rho = (100 / (2 (a + b))) / 50 = 1 / (a + b), minimal
    # (rho* = 1) whenever a + b = 1: a whole edge of optima. Swapping the two types maps it
    # onto itself, so its centre is a = b = 1/2; the LP alone stops at an end of the edge.
    state = fake_state(thr=np.array([[2.0, 2.0]]), gpus=(1,), cap=(1, 1), remaining=(100.0,))
    x = allocate(GavelFTF(centre=True), state)
    np.testing.assert_allclose(x, [[0.5, 0.5]], atol=1e-4)
    vertex = allocate(GavelFTF(), state)
    assert vertex.sum() == pytest.approx(1.0, abs=1e-3)  # also optimal
    assert np.abs(vertex - 0.5).max() > 0.1


def test_policy_centre_keeps_the_optimum_of_the_worked_example() -> None:
    # tests/test_gavel_lp.py::test_ftf_on_paper: X = [[1/2, 1/2], [1/2, 0]] is the unique
    # optimum (rho* = 1); the centre must find it too, job 1's zero-throughput type dropped.
    x = allocate(GavelFTF(centre=True), fake_state())
    np.testing.assert_allclose(x, [[0.5, 0.5], [0.5, 0.0]], atol=1e-4)


def test_centre_is_the_gavel_compat_default() -> None:
    assert GavelFTF.compat["gavel"].params == {"centre": True}
    assert GavelFTF().centre is False


def dense_ftf_centre(
    thr: np.ndarray,
    sf: np.ndarray,
    cap: np.ndarray,
    rem: np.ndarray,
    a: np.ndarray,
    w1: float,
    start: np.ndarray,
) -> np.ndarray | None:
    """The centre restated with the whole ``(k·n) × (k·n)`` Hessian and ``np.linalg.solve``
    (no Woodbury identity): the barrier ``−Σ log X − Σ log s_cap − Σ log s_row − w1 Σ log g
    + Σ log y`` (``g = a y − R``), damped Newton steps with the line search of
    :func:`scheduling.centre.ftf_centre`, stopping at a half decrement of ``1e-9``."""
    k, n = thr.shape

    def value(x: np.ndarray) -> float:
        y, s_cap, s_row = (thr * x).sum(1), cap - sf @ x, 1 - x.sum(1)
        g = a * y - rem
        if min(x.min(), s_cap.min(), s_row.min(), y.min(), g.min()) <= 0:
            return np.inf
        return float(-(np.log(x).sum() + np.log(s_cap).sum() + np.log(s_row).sum()
                       + w1 * np.log(g).sum() - np.log(y).sum()))  # fmt: skip

    x = start.copy()
    f = value(x)
    if not np.isfinite(f):
        return None
    for _ in range(100):
        y, s_cap, s_row = (thr * x).sum(1), cap - sf @ x, 1 - x.sum(1)
        g = a * y - rem
        grad = np.outer(sf, 1 / s_cap) + (1 / s_row)[:, None] - 1 / x
        grad -= (w1 * a / g - 1 / y)[:, None] * thr
        h = np.zeros((k, n, k, n))
        for j in range(k):
            h[j, :, j, :] = (w1 * (a[j] / g[j]) ** 2 - 1 / y[j] ** 2) * np.outer(thr[j], thr[j])
            h[j, :, j, :] += 1 / s_row[j] ** 2 + np.diag(1 / x[j] ** 2)
        for t in range(n):  # the capacity row of type t couples every job's entry on t
            h[:, t, :, t] += np.outer(sf, sf) / s_cap[t] ** 2
        step = -np.linalg.solve(h.reshape(k * n, k * n), grad.ravel()).reshape(k, n)
        dec = -float((grad * step).sum())
        if dec / 2 <= 1e-9:
            break
        limits = [x[step < 0] / -step[step < 0]]
        for cur, d in ((s_cap, -(sf @ step)), (s_row, -step.sum(1))):
            limits.append(cur[d < 0] / -d[d < 0])
        t_max = 0.99 * min(v.min(initial=np.inf) for v in limits)
        t = min(1.0, t_max)
        while value(x + t * step) > f - 0.25 * t * dec and t >= 1e-10:
            t *= 0.5
        if t < 1e-10:
            break
        f1 = value(x + t * step)
        while t >= 1 and 2 * t <= t_max and value(x + 2 * t * step) < f1:
            t *= 2
            f1 = value(x + t * step)
        x, f = x + t * step, f1
    return x


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_the_kernel_is_the_dense_newton_iteration(seed: int) -> None:
    """Random instances, started from a random interior point with the level above every
    job's ρ there: the compiled kernel, its plain-Python source and the dense restatement
    reach the same centre (the first two bit for bit)."""
    rng = np.random.default_rng(seed)
    k, n = int(rng.integers(1, 7)), int(rng.integers(1, 4))
    thr = rng.choice([0.5, 1.0, 2.0, 3.7], (k, n))
    sf = rng.choice([1.0, 2.0, 4.0], k)
    cap = rng.integers(1, 9, n).astype(np.float64) * 4
    rem = rng.uniform(10.0, 1000.0, k)
    since = rng.uniform(0.0, 500.0, k)
    denom = rng.uniform(50.0, 5000.0, k)
    start = rng.uniform(0.2, 1.0, (k, n)) * min(0.9 / n, float(cap.min()) / (n * sf.sum()))
    rho = (since + rem / (thr * start).sum(1)) / denom
    level = float(rho.max()) * float(rng.choice([1.0001, 1.1, 2.0]))
    args = (thr, sf, cap, rem, since, denom, level, start)
    was = kernels.compiled_in_use()
    try:
        assert kernels.use_compiled()
        got = ftf_centre(*args)
        kernels.use_compiled(False)
        plain = ftf_centre(*args)
    finally:
        kernels.use_compiled(was)
    want = dense_ftf_centre(thr, sf, cap, rem, level * denom - since, 1.5, start)
    assert got is not None and plain is not None and want is not None
    assert got.tolist() == plain.tolist()
    np.testing.assert_allclose(got, want, atol=1e-5)
    assert np.all((since + rem / (thr * got).sum(1)) / denom < level)
