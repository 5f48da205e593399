"""The centre of the optimal set of Gavel's finish-time-fairness problem (a tie-break inside it).

Gavel's ``finish_time_fairness_perf`` minimises ``max_j ρ_j(X)`` with
``ρ_j = (s_j + R_j / y_j) / E_j`` and ``y_j = Σ_t thr[j, t] X[j, t]`` under the base constraints
(docs/gavel-fidelity.md §16). Only the jobs at the maximum are pinned at the optimum; every
other job may take any allocation that keeps its ``ρ_j`` below it, so the optimal set is large
and which point of it is used decides the schedule. Gavel hands the problem to CVXPY, which
rewrites it as a cone program for ECOS, an interior-point solver: a level variable ``τ`` with
``τ E_j >= s_j + R_j u_j`` (one linear inequality per job) and ``u_j y_j >= 1`` (one 3-dimensional
second-order cone per job, CVXPY's form of ``inv_pos``). ECOS stops near the end of the central
path of that cone program, inside the optimal set, not at a vertex.

:func:`ftf_centre` returns the point of the central path of that cone program at a given level
``τ`` slightly above the optimum ``ρ*``: the maximiser over ``X`` of the sum of the logs of every
linear slack (``X >= 0``, capacities, row sums, the per-job level rows) plus ``w`` times the
log of each cone's ``u_j y_j − 1``. ``w = 1/2``: a 3-dimensional second-order cone counts as
degree 1 in ECOS's centrality measure, as a linear slack does, while the standard barrier
``−log(det)`` has degree 2. The cone variables ``u_j`` are eliminated in closed form: for fixed
``X`` the best ``u_j`` leaves the per-job term ``(1 + w) log(a_j y_j − R_j) − log y_j`` (plus a
constant), ``a_j = τ E_j − s_j``, which is concave in ``y_j``. For ``τ`` fixed this is the point
where the central path crosses the level ``τ``; as ``τ → ρ*`` it tends to the analytic centre of
the optimal set.

Sources: the analytic centre and the central path (Boyd & Vandenberghe, *Convex
Optimization*, §8.5.3 and §11.2); ECOS (Domahidi, Chu & Boyd, ECC 2013) for the degree of a
second-order cone in its centrality measure; CVXPY's cone form of ``inv_pos`` read off
``Problem.get_problem_data``.

What it does not reproduce: ECOS is a primal-dual predictor-corrector method that takes long
steps and stops at a gap of 1e-8; its final point is *near* this centre but depends on its path
(equilibration, starting point, step lengths). Rescaling Gavel's own problem by a constant (for
example ``X`` counted in half shares) moves ECOS's answer by 0.01-0.08 (largest change of a
share), the same order as this centre's distance from it (per recorded run, median 0.001-0.06,
largest 0.1-0.3), and Gavel's average JCT by up to 7.5 % (docs/gavel-fidelity.md §16, §22b).

The Newton systems are solved in ``O(k n³)``: the Hessian is block-diagonal per job (``n × n``
blocks) plus one rank-one term per type (the capacity rows), so the Woodbury identity needs one
``n × n`` dense solve besides the ``k`` small blocks.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt
from numpy.linalg import _umath_linalg

FloatArray = npt.NDArray[np.float64]

#: numpy.linalg's ``inv`` and ``solve`` (vector right-hand side) without their per-call
#: argument checks: the same gufuncs under the same error state (a singular matrix raises
#: ``LinAlgError``), so the same bits; the Newton loop calls them on tiny matrices, where the
#: checks cost more than the arithmetic.


def _raise_singular(err: object, flag: object) -> None:
    raise np.linalg.LinAlgError("Singular matrix")


def _inv(a: FloatArray) -> FloatArray:
    with np.errstate(
        call=_raise_singular, invalid="call", over="ignore", divide="ignore", under="ignore"
    ):
        return _umath_linalg.inv(a, signature="d->d")


def _solve1(a: FloatArray, b: FloatArray) -> FloatArray:
    with np.errstate(
        call=_raise_singular, invalid="call", over="ignore", divide="ignore", under="ignore"
    ):
        return _umath_linalg.solve1(a, b, signature="dd->d")


#: Weight of each cone's ``log(u_j y_j − 1)`` relative to a linear slack's log (see above).
CONE_WEIGHT = 0.5


def ftf_centre(
    thr: FloatArray,
    sf: FloatArray,
    cap: FloatArray,
    rem: FloatArray,
    since: FloatArray,
    denom: FloatArray,
    level: float,
    start: FloatArray,
    cone_weight: float = CONE_WEIGHT,
    max_iter: int = 100,
) -> FloatArray | None:
    """Centre of ``{X : base constraints, ρ_j(X) <= level for every j}`` in the sense of the
    module docstring. Every entry of ``X`` is a variable, as in Gavel's problem (a type where
    the job's throughput is 0 still takes a share of capacity there; the caller drops it).

    Parameters
    ----------
    thr, sf, cap
        ``(k, n)`` throughputs, ``(k,)`` gang sizes, ``(n,)`` devices per type.
    rem, since, denom
        ``(k,)`` remaining work ``R_j > 0``, time since arrival ``s_j``, and ``E_j > 0``.
    level
        ``τ``; the set must have an interior (``level`` above the optimal ``ρ*``).
    start
        ``(k, n)`` a point strictly inside that set.
    cone_weight
        ``w`` of the module docstring.
    max_iter
        Cap on the damped Newton steps.

    Returns the centre (strictly inside the set), or ``None`` if ``start`` is not strictly
    inside or the iteration broke down (the caller then keeps another answer).
    """
    thr = np.asarray(thr, dtype=np.float64)
    k, n = thr.shape
    sf = np.asarray(sf, dtype=np.float64)
    sf2 = sf**2
    cap = np.asarray(cap, dtype=np.float64)
    rem = np.asarray(rem, dtype=np.float64)
    a = level * np.asarray(denom, dtype=np.float64) - np.asarray(since, dtype=np.float64)
    w1 = 1.0 + cone_weight
    diag = np.arange(n)
    outer = thr[:, :, None] * thr[:, None, :]
    x = np.array(start, dtype=np.float64)
    if k == 0:
        return x
    sf_row = sf2.reshape(1, k)  # tensordot(sf2, ·, axes=1) is this dot on (k, n·n)
    add, least, log = np.add.reduce, np.minimum.reduce, np.log

    def point(x: FloatArray) -> tuple[float, tuple[FloatArray, ...]]:
        """``−Φ`` (``+inf`` outside the set) and the slacks at ``x``, which the next Newton
        step reuses when ``x`` is accepted (the same expressions, so the same bits)."""
        # (ufunc reductions called directly: what ndarray.sum/min call, less overhead)
        y = add(thr * x, axis=1)
        s_cap = cap - sf @ x
        s_row = 1.0 - add(x, axis=1)
        g = a * y - rem
        at = (x, y, s_cap, s_row, g)
        if (
            least(x, axis=None) <= 0
            or least(s_cap) <= 0
            or least(s_row) <= 0
            or least(y) <= 0
            or least(g) <= 0
        ):
            return math.inf, at
        return -float(
            add(log(x), axis=None)
            + add(log(s_cap))
            + add(log(s_row))
            + w1 * add(log(g))
            - add(log(y))
        ), at

    f, at = point(x)
    if not math.isfinite(f):
        return None
    for _ in range(max_iter):
        x, y, s_cap, s_row, g = at
        grad = np.outer(sf, 1.0 / s_cap) + (1.0 / s_row)[:, None] - 1.0 / x
        grad -= (w1 * a / g - 1.0 / y)[:, None] * thr
        # Hessian = per-job blocks B_j + Σ_t (1 / s_cap_t²) u_t u_tᵀ, u_t = sf on column t
        blocks = (w1 * (a / g) ** 2 - 1.0 / y**2)[:, None, None] * outer
        blocks += (1.0 / s_row**2)[:, None, None]
        blocks[:, diag, diag] += 1.0 / x**2
        try:
            binv = _inv(blocks)
            cmat = np.diag(s_cap**2) + np.dot(sf_row, binv.reshape(k, n * n)).reshape(n, n)
            bg = np.matmul(binv, grad[:, :, None])[:, :, 0]
            corr = _solve1(cmat, sf @ bg)
        except np.linalg.LinAlgError:
            return None
        step = sf[:, None] * np.matmul(binv, corr) - bg
        dec = -float(np.sum(grad * step))
        if not math.isfinite(dec):
            return None
        if dec / 2.0 <= 1e-9:
            break
        # longest step keeping the linear slacks positive (the level rows are not linear in
        # the step, so the value is checked), then backtracking from the full step; a full
        # step that is accepted is lengthened while the value keeps falling: from a start
        # next to the boundary (the LP's vertex) Newton steps on -log only double the small
        # slacks, and doubling the step instead saves some of those iterations
        t_max = math.inf
        for cur, d in ((x, step), (s_cap, -(sf @ step)), (s_row, -step.sum(axis=1))):
            neg = d < 0
            if neg.any():
                t_max = min(t_max, 0.99 * float(np.minimum.reduce(cur[neg] / -d[neg])))
        t = min(1.0, t_max)
        while True:
            f1, at1 = point(x + t * step)
            if f1 <= f - 0.25 * t * dec:
                break
            t *= 0.5
            if t < 1e-10:
                break
        if t < 1e-10:
            break  # rounding: no further progress
        while t >= 1.0 and 2.0 * t <= t_max:
            f2, at2 = point(x + 2.0 * t * step)
            if not f2 < f1:
                break
            t, f1, at1 = 2.0 * t, f2, at2
        at = at1  # x + t * step and its slacks
        f = f1
    return at[0]
