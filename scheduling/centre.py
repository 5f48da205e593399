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
``n × n`` dense solve besides the ``k`` small blocks. The iteration is the compiled kernel
:func:`clustersim.kernels.ftf_centre_newton` (a few dozen jobs and types make each step a few
hundred operations, which numpy's per-call costs would dominate); the tests check it against
a dense numpy restatement.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from clustersim.kernels import ftf_centre_newton

FloatArray = npt.NDArray[np.float64]

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
    x = np.array(start, dtype=np.float64)
    if k == 0:
        return x
    a = level * np.asarray(denom, dtype=np.float64) - np.asarray(since, dtype=np.float64)
    out = np.empty((k, n))
    ok = ftf_centre_newton(
        thr,
        np.asarray(sf, dtype=np.float64),
        np.asarray(cap, dtype=np.float64),
        np.asarray(rem, dtype=np.float64),
        a,
        1.0 + cone_weight,
        x,
        int(max_iter),
        out,
    )
    return out if ok else None
