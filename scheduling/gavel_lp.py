"""Gavel's heterogeneity-aware policies: allocations from LPs, realised by Gavel's rounds.

Source: Narayanan et al., "Heterogeneity-Aware Cluster Scheduling Policies for Deep Learning
Workloads" (Gavel), OSDI'20, §4, and its public code (``scheduler/policies/*.py``, called from
``scheduler.py::_compute_allocation``). Each class below restates one of Gavel's
``*_perf`` policies: the same objective, constraints and normalisation, built as an LP
(:mod:`scheduling.allocation`) and solved by HiGHS instead of cvxpy/ECOS. The round mechanism,
the recomputation rule (only when the job set changed, at most every ``reset_interval_s``) and
the placement are :class:`scheduling.gavel.GavelRounds`, unchanged.

Inputs, as Gavel's ``_get_allocation_state`` gives them:

* throughputs ``thr[j, t]``: ``state.rate`` — the work units per second of the job's whole
  gang on each type from the performance model (:class:`clustersim.perf.JobRates`), so every
  catalog type works; under ``--gavel-compat`` these are Gavel's measured throughputs
  (steps/s), exactly what ``gavel-las``/``gavel-fifo`` run with;
* scale factors ``sf_j``: the gang size (``num_gpus``);
* priority weights ``w_j``: the job's ``priority``, values below 1 counted as 1 (as in
  ``gavel-las``; Gavel's traces carry weight 1);
* remaining steps ``R_j``: ``state.remaining``; time since start: ``now − submit_time``;
* ``cluster_spec``: ``state.capacity``.

As in Gavel's simulator for every ``*_perf`` policy, the types are visited in the fixed order
v100, p100, k80 (then the other types) each round, not shuffled (``GavelRounds.shuffle_types``).

Common departures from Gavel's code: HiGHS returns a vertex of the optimal face where ECOS
returns an interior point (each class says where the optimum is not unique and what we do;
``gavel-mmf`` and ``gavel-max-throughput`` take the centre of the optimal face under
``--compat gavel``, :func:`scheduling.allocation.optimal_face_centre`, and ``gavel-ftf`` the
centre of its optimal set, :func:`scheduling.centre.ftf_centre`);
types where a job has zero throughput are fixed at 0 (Gavel leaves them free); a solve that
does not end optimal falls back to :func:`scheduling.allocation.fallback_allocation` and is
counted (Gavel prints a warning and uses whatever ``x.value`` holds, crashing when it is
``None`` except in FTF, which also falls back to its isolated allocation).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Annotated, ClassVar, Literal

import numpy as np
import numpy.typing as npt

from clustersim.kernels import WF_OK, maxmin_simplex, water_fill
from scheduling.allocation import (
    BaseLP,
    LPModel,
    LPSolver,
    classes_among,
    fallback_allocation,
    interior_allocation,
    isolated_throughput,
    job_classes,
    maxmin_model,
    optimal_face_centre,
    proportional_throughput,
    solution_allocation,
)
from scheduling.base import CompatSpec, State
from scheduling.centre import ftf_centre
from scheduling.gavel import GavelRounds
from scheduling.params import NON_NEGATIVE, POSITIVE

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

#: Relative slack with which the second phase keeps the first phase's optimum.
PHASE2_SLACK = 1e-6
#: ``gavel-hierarchical`` solves its water filling on a dense simplex tableau
#: (:func:`clustersim.kernels.water_fill`) up to this many job classes (a tableau of about
#: ``2k × k (n_types + 2)`` entries), with HiGHS above; and allows it this many pivots per
#: level before handing the recomputation to HiGHS.
DENSE_MAX_CLASSES = 64
DENSE_MAX_PIVOTS = 2000


class GavelLP(GavelRounds):
    """Common part of the LP policies: inputs, solver counters, fallback. Like Gavel's
    ``*_perf`` policies they visit the types in Gavel's fixed order every round (no shuffle)."""

    shuffle_types = False

    def reset(self, rng: np.random.Generator) -> None:
        super().reset(rng)
        self._lp = LPSolver()
        self.dense_failures = 0  # LPs the dense simplex kernels left to HiGHS
        self._gid: IntArray = np.zeros(0, dtype=np.int64)  # class of every job (_classes)
        self._gid_of: tuple[object, object] | None = None  # the rates and jobs it is for

    def stats(self) -> dict[str, float]:
        return self._lp.stats()

    def _inputs(self, state: State, jobs: IntArray) -> tuple[FloatArray, FloatArray, FloatArray]:
        thr = np.asarray(state.rate[jobs], dtype=np.float64)
        sf = state.jobs.num_gpus[jobs].astype(np.float64)
        cap = state.capacity.astype(np.float64)
        return thr, sf, cap

    def _fallback(self, thr: FloatArray, sf: FloatArray, cap: FloatArray) -> FloatArray:
        self._lp.fallbacks += 1
        return fallback_allocation(thr, sf, cap)

    def _classes(
        self, state: State, jobs: IntArray, *columns: FloatArray
    ) -> tuple[IntArray, IntArray, FloatArray]:
        """``job_classes(*columns)`` of ``jobs``, where ``columns`` are per-job inputs that
        depend only on the job (rates, gang, weight): their classes over every job of the
        run are found once (the engine's rate matrix and job table do not change during a
        run; a state with other ones starts over), so a recomputation sorts integers, not
        rows (:func:`scheduling.allocation.classes_among`)."""
        key = (state.rate, state.jobs)
        if self._gid_of is None or any(a is not b for a, b in zip(self._gid_of, key, strict=True)):
            every = np.arange(len(state.rate), dtype=np.int64)
            self._gid = job_classes(*self._class_columns(state, every))[1]
            self._gid_of = key
        return classes_among(self._gid, jobs)

    def _class_columns(self, state: State, jobs: IntArray) -> tuple[FloatArray, ...]:
        """The per-job inputs that identify a class (see :meth:`_classes`)."""
        raise NotImplementedError

    def _maxmin(
        self,
        thr: FloatArray,
        sf: FloatArray,
        cap: FloatArray,
        coef: FloatArray,
        live: npt.NDArray[np.bool_],
        count: FloatArray | None = None,
    ) -> FloatArray | None:
        """Maximise ``z = min_j Σ_t coef[j,t] X[j,t]`` over the ``live`` rows under the base
        constraints (rows standing for ``count`` identical jobs each); then, with ``spread``,
        keep ``z`` within :data:`PHASE2_SLACK` of its optimum and maximise the sum of the
        same terms (each row weighted by the number of jobs it stands for) so that capacity
        the bottleneck does not need is used rather than left to the solver's choice of
        vertex. Returns the allocation or ``None`` (the caller falls back).

        The model is :func:`scheduling.allocation.maxmin_model` (built once: the second
        phase changes only the objective and the bound on ``z``)."""
        m = maxmin_model(thr, sf, cap, coef, live, count)
        centre = getattr(self, "centre", False)
        x0 = self._maxmin_dense(thr, sf, cap, coef, live, count) if centre else None
        if x0 is None:
            res = self._lp.solve(m)
            if res.x is None:
                return None
            x0 = res.x
            by_highs = True
        else:
            by_highs = False
        if centre:
            k, nt = thr.shape
            cnt = np.ones(k) if count is None else count
            xi = interior_allocation(thr, sf, cap, cnt)
            zi = 0.5 * float(np.min(np.sum(coef * xi, axis=1)[live]))
            wr = np.concatenate([np.ones(nt), cnt, cnt[live]])
            wv = np.append(np.repeat(cnt, nt), 1.0)
            v = optimal_face_centre(m, x0, np.append(xi.ravel(), zi), wr, wv)
            if v is not None:
                return solution_allocation(v, thr)
            if not by_highs:  # the vertex is the answer now: HiGHS's, as before
                res = self._lp.solve(m)
                if res.x is None:
                    return None
                x0 = res.x
        if not getattr(self, "spread", False):
            return solution_allocation(x0, thr)
        lb = m.lb.copy()
        lb[-1] = float(x0[-1]) * (1.0 - PHASE2_SLACK)
        weight = live * (np.ones(len(thr)) if count is None else count)
        c2 = np.concatenate([-(coef * weight[:, None]).ravel(), [0.0]])
        scale = float(np.abs(c2).max(initial=0.0))
        if scale > 0:
            c2 /= scale
        m2 = LPModel(c=c2, indptr=m.indptr, indices=m.indices, data=m.data, b=m.b, lb=lb, ub=m.ub)
        res2 = self._lp.solve(m2, warm=True, primal=True)
        return solution_allocation(x0 if res2.x is None else res2.x, thr)

    def _maxmin_dense(
        self,
        thr: FloatArray,
        sf: FloatArray,
        cap: FloatArray,
        coef: FloatArray,
        live: npt.NDArray[np.bool_],
        count: FloatArray | None,
    ) -> FloatArray | None:
        """An optimal vertex of the max-min LP of :meth:`_maxmin` from the dense simplex
        kernel (:func:`clustersim.kernels.maxmin_simplex`), where it only seeds the centre
        tie-break (the centre is a point of the optimal face, converged to rounding, not of
        the vertex it starts from); ``None`` above :data:`DENSE_MAX_CLASSES` classes or if
        the kernel fails (counted in ``dense_failures``): then HiGHS solves it."""
        k, nt = thr.shape
        if k > DENSE_MAX_CLASSES:
            return None
        use = sf if count is None else sf * count
        x = np.empty(k * nt + 1)
        t0 = time.perf_counter()
        status = maxmin_simplex(thr, coef, use, cap, live, DENSE_MAX_PIVOTS, x)
        self._lp.solver_s += time.perf_counter() - t0
        self._lp.solves += 1
        if status != WF_OK:
            self.dense_failures += 1
            return None
        return x


class GavelMMF(GavelLP):
    """Gavel's heterogeneity-aware max-min fairness (``max_min_fairness_perf``).

    Source: Gavel (Narayanan et al., OSDI'20, §4.1), ``MaxMinFairnessPolicyWithPerf``:
    maximise ``min_j Σ_t thr[j,t] · sf_j · X[j,t] / (w_j · prop_j)`` under the base
    constraints, where ``prop_j = Σ_t thr[j,t] · cap_t / Σ cap`` is the job's throughput when
    its time is spread over types in proportion to their sizes (Gavel's ``ProportionalPolicy``)
    and ``w_j`` its priority weight. Jobs with no throughput anywhere take no part.

    Departure: the max-min LP is degenerate — only the bottleneck jobs are pinned at the
    optimum. ECOS returns an interior point of that face, HiGHS a vertex that may leave
    devices idle. With ``spread`` (default) a second LP keeps the optimal level (to
    ``1e-6`` relative) and maximises the sum of the normalised throughputs, so spare capacity
    goes to the jobs that gain most from it; that answer may still have ties (equal
    coefficients) which HiGHS breaks by its vertex choice. ``spread=False`` keeps the single
    LP (one solve per recomputation). ``centre=True`` (the ``--compat gavel`` default) instead
    returns the analytic centre of the optimal face
    (:func:`scheduling.allocation.optimal_face_centre`), near where ECOS stops: within 1 % of
    Gavel's average JCT on every recorded run (docs/gavel-fidelity.md §22a); it takes
    precedence over ``spread``.
    """

    name = "gavel-mmf"
    compat: ClassVar[Mapping[str, CompatSpec]] = {"gavel": CompatSpec(params={"centre": True})}

    def __init__(
        self,
        round_s: Annotated[float, POSITIVE] = 360.0,
        reset_interval_s: Annotated[float, NON_NEGATIVE] = 1920.0,
        seed: int = 0,
        spread: bool = True,
        centre: bool = False,
    ) -> None:
        super().__init__(round_s=round_s, reset_interval_s=reset_interval_s, seed=seed)
        self.spread = spread
        self.centre = centre
        self.compiled_kernels = centre  # the centre's Newton kernel

    def allocation(self, state: State, jobs: IntArray) -> FloatArray:
        thr, sf, cap = self._inputs(state, jobs)
        prop = proportional_throughput(thr, cap)  # over every job, as Gavel (same bits)
        first, inv, count = self._classes(state, jobs)
        # the rest is row by row: computed for one job of each class only
        thr_c, sf_c, prop_c = thr[first], sf[first], prop[first]
        w_c = np.maximum(state.jobs.priority[jobs[first]].astype(np.float64), 1.0)
        live = prop_c > 0
        if not live.any():
            return np.zeros_like(thr)
        coef = np.zeros_like(thr_c)
        coef[live] = thr_c[live] * (sf_c[live] / (w_c[live] * prop_c[live]))[:, None]
        x = self._maxmin(thr_c, sf_c, cap, coef, live, count)
        return self._fallback(thr, sf, cap) if x is None else x[inv]

    def _class_columns(self, state: State, jobs: IntArray) -> tuple[FloatArray, ...]:
        thr, sf, _ = self._inputs(state, jobs)
        return thr, sf, np.maximum(state.jobs.priority[jobs].astype(np.float64), 1.0)


class GavelMaxThroughput(GavelLP):
    """Gavel's throughput maximisation (``max_sum_throughput_perf``).

    Source: Gavel (OSDI'20, §4.2), ``ThroughputSumWithPerf`` →
    ``ThroughputNormalizedByCostSumWithPerfSLOs`` with no costs and no SLOs: maximise
    ``Σ_j Σ_t thr[j,t] · X[j,t]`` under the base constraints. As in Gavel's code the
    throughputs are *not* normalised (its ``scale = 1 / throughputs.sum(axis=1)`` is computed
    and unused), so jobs with more steps per second weigh more; the paper's text normalises.

    Departure: ties between different jobs with equal objective coefficients are broken by
    HiGHS's vertex choice (ECOS would split the time between them). Identical jobs (same
    rates, same gang) are solved as one class (:func:`scheduling.allocation.job_classes`) and
    get identical rows, as under ECOS; with SLO rows (``gavel-min-cost-slo``) jobs differ by
    their deadlines and are solved one row each. ``centre=True`` (the ``--compat gavel``
    default) breaks the ties ECOS's way, at the analytic centre of the optimal face
    (:func:`scheduling.allocation.optimal_face_centre`; not with SLO rows).
    """

    name = "gavel-max-throughput"
    compat: ClassVar[Mapping[str, CompatSpec]] = {"gavel": CompatSpec(params={"centre": True})}

    def __init__(
        self,
        round_s: Annotated[float, POSITIVE] = 360.0,
        reset_interval_s: Annotated[float, NON_NEGATIVE] = 1920.0,
        seed: int = 0,
        centre: bool = False,
    ) -> None:
        super().__init__(round_s=round_s, reset_interval_s=reset_interval_s, seed=seed)
        self.centre = centre
        self.compiled_kernels = centre  # the centre's Newton kernel

    def _cost(self, state: State) -> FloatArray:
        return np.ones(state.cluster.n_types)

    def allocation(self, state: State, jobs: IntArray) -> FloatArray:
        thr, sf, cap = self._inputs(state, jobs)
        slo = self._slo_need(state, jobs)
        if slo is None:  # symmetric in identical jobs: solve over classes
            first, inv, count = job_classes(thr, sf)
        else:
            first = inv = np.arange(len(jobs), dtype=np.int64)
            count = np.ones(len(jobs))
        lp = BaseLP(thr[first], sf[first], cap, count=count)
        c = -(lp.thr / self._cost(state)[None, :] * count[:, None]).ravel()
        scale = float(np.abs(c).max(initial=0.0))
        if scale == 0:
            return np.zeros_like(thr)
        c /= scale
        if slo is not None:
            need, has = slo
            plain = lp.model(c)  # before the SLO rows
            lp.add_job_rows(-lp.thr, -need, which=np.flatnonzero(has))
            res = self._lp.solve(lp.model(c))
            if res.x is not None:
                return lp.allocation(res.x)[inv]
            self._lp.fallbacks += 1  # Gavel: "No allocation possible with provided SLOs!"
            res = self._lp.solve(plain)
            if res.x is None:  # counted once already
                return fallback_allocation(thr, sf, cap)
        else:
            m0 = lp.model(c)
            # with the centre, any optimal vertex seeds it: the dense kernel's (HiGHS's if
            # it declines); without, the vertex is the answer: HiGHS's, as always
            dense = self._lp.solve_dense(m0) if self.centre else None
            res = self._lp.solve(m0) if dense is None else dense
            if res.x is not None and self.centre:
                nt = lp.thr.shape[1]
                xi = interior_allocation(lp.thr, lp.sf, cap, count)
                wr = np.concatenate([np.ones(nt), count])
                v = optimal_face_centre(m0, res.x, xi.ravel(), wr, np.repeat(count, nt))
                if v is not None:
                    return lp.allocation(v)[inv]
                if dense is not None:  # the vertex is the answer now: HiGHS's, as before
                    res = self._lp.solve(m0)
        if res.x is not None:
            return lp.allocation(res.x)[inv]
        return self._fallback(thr, sf, cap)

    def _slo_need(
        self, state: State, jobs: IntArray
    ) -> tuple[FloatArray, npt.NDArray[np.bool_]] | None:
        """Per job, the throughput its SLO needs and whether it has one (``None``: no SLOs)."""
        return None


class GavelMinCost(GavelMaxThroughput):
    """Gavel's cost policy (``max_sum_throughput_normalized_by_cost_perf``).

    Source: Gavel (OSDI'20, §4.2 "minimize cost"), ``ThroughputNormalizedByCostSumWithPerf``:
    maximise ``Σ_j Σ_t thr[j,t] / cost_t · X[j,t]`` (throughput per dollar) under the base
    constraints. ``cost_t`` is the catalog's on-demand ``price_per_hour`` of the type (Gavel
    reads spot prices from a directory; without one it uses cost 1 for every type — then the
    policy is ``gavel-max-throughput``). If some type has no positive price, every type costs
    1 (documented departure: division by zero otherwise).
    """

    name = "gavel-min-cost"

    def _cost(self, state: State) -> FloatArray:
        price = np.array([t.price_per_hour for t in state.cluster.types], dtype=np.float64)
        if not np.all(price > 0):
            return np.ones_like(price)
        return price


class GavelMinCostSLO(GavelMinCost):
    """Gavel's cost policy with SLOs (``max_sum_throughput_normalized_by_cost_perf_SLOs``).

    Source: ``ThroughputNormalizedByCostSumWithPerfSLOs``: :class:`GavelMinCost` plus, for each
    job with a deadline, ``Σ_t thr[j,t] · X[j,t] >= R_j / (deadline_j − now)``. When that LP
    has no solution Gavel solves again without the SLO rows; so do we, and count it as a
    fallback (``lp_fallbacks``). A job whose deadline has passed gets no row (Gavel's row has
    a negative right-hand side, which is always met). Our jobs carry an absolute deadline;
    Gavel's is ``SLO × duration`` after arrival.
    """

    name = "gavel-min-cost-slo"

    def _slo_need(
        self, state: State, jobs: IntArray
    ) -> tuple[FloatArray, npt.NDArray[np.bool_]] | None:
        left = state.jobs.deadline[jobs] - state.now
        has = np.isfinite(left) & (left > 0)
        if not has.any():
            return None
        need = np.asarray(state.remaining[jobs], dtype=np.float64) / np.where(has, left, 1.0)
        return np.where(has, need, 0.0), has


class GavelMakespan(GavelLP):
    """Gavel's makespan minimisation (``min_total_duration_perf``).

    Source: Gavel (OSDI'20, §4.2), ``MinTotalDurationPolicyWithPerf``: the smallest ``T`` such
    that every job can finish its remaining steps by ``T``, ``Σ_t thr[j,t] · X[j,t] >= R_j / T``,
    under the base constraints. Gavel bisects on ``T`` (from ``[100, 10⁶]`` s, widening tenfold
    when nothing is feasible) with a feasibility problem per step, stopping within 5 %, and
    returns the feasible point ECOS found at the last feasible ``T``. Substituting ``z = 1/T``
    makes the problem one LP (maximise ``z`` subject to ``Σ_t thr·X − R_j z >= 0``), which we
    solve exactly: our ``T`` is the optimum, Gavel's up to 5 % above it.

    Departure: Gavel's answer is an interior point of a feasible set with some slack; ours is
    the optimum followed (``spread``, default) by the same second phase as :class:`GavelMMF`,
    maximising ``Σ_j Σ_t thr·X / R_j`` at the optimal ``z`` so spare capacity is used.

    Size: every job has its own row (``R_j`` differs), so on a long queue the LP has as many
    rows as active jobs (over a thousand at times on the full Philly trace). With
    ``group_tol > 0`` the jobs of one class (same throughputs and gang) whose remaining work
    lies in one band ``[(1+tol)^i, (1+tol)^(i+1))`` are solved as one row standing for all of
    them, with the band's largest ``R``; each gets that row's allocation. Averaging an optimal
    allocation over a band's jobs shows the grouped LP's makespan is within a factor
    ``1 + group_tol`` of the optimum (Gavel's bisection stops within 5 %); ``0`` solves every
    job on its own row. The default ``0.05`` is Gavel's own tolerance; ``--compat gavel``
    keeps one row per job.
    """

    name = "gavel-makespan"
    compat: ClassVar[Mapping[str, CompatSpec]] = {"gavel": CompatSpec(params={"group_tol": 0.0})}

    def __init__(
        self,
        round_s: Annotated[float, POSITIVE] = 360.0,
        reset_interval_s: Annotated[float, NON_NEGATIVE] = 1920.0,
        seed: int = 0,
        spread: bool = True,
        group_tol: Annotated[float, NON_NEGATIVE] = 0.05,
    ) -> None:
        super().__init__(round_s=round_s, reset_interval_s=reset_interval_s, seed=seed)
        self.spread = spread
        self.group_tol = group_tol

    def allocation(self, state: State, jobs: IntArray) -> FloatArray:
        thr, sf, cap = self._inputs(state, jobs)
        rem = np.asarray(state.remaining[jobs], dtype=np.float64)
        live = (rem > 0) & (thr.max(axis=1) > 0)
        if not live.any():
            return np.zeros_like(thr)
        if self.group_tol > 0:
            cls = self._classes(state, jobs)[1]
            # the band of each live job's remaining work (-1: not live), within its class
            band = np.full(len(jobs), -1, dtype=np.int64)
            band[live] = np.floor(np.log(rem[live]) / np.log1p(self.group_tol)).astype(np.int64)
            _, rows, inv, n_row = np.unique(
                np.column_stack([cls, band]),
                axis=0,
                return_index=True,
                return_inverse=True,
                return_counts=True,
            )
            inv = inv.reshape(-1)
            r_row = np.zeros(len(rows))
            np.maximum.at(r_row, inv, np.where(live, rem, 0.0))
            thr_r, sf_r, live_r = thr[rows], sf[rows], live[rows]
            coef = np.zeros_like(thr_r)
            coef[live_r] = thr_r[live_r] / r_row[live_r, None]
            x = self._maxmin(thr_r, sf_r, cap, coef, live_r, n_row.astype(np.float64))
            return self._fallback(thr, sf, cap) if x is None else x[inv]
        coef = np.zeros_like(thr)
        coef[live] = thr[live] / rem[live, None]
        x = self._maxmin(thr, sf, cap, coef, live)
        return self._fallback(thr, sf, cap) if x is None else x

    def _class_columns(self, state: State, jobs: IntArray) -> tuple[FloatArray, ...]:
        thr, sf, _ = self._inputs(state, jobs)
        return thr, sf


class GavelFTF(GavelLP):
    """Gavel's finish-time fairness (``finish_time_fairness_perf``, Themis's objective).

    Source: Gavel (OSDI'20, §4.1), ``FinishTimeFairnessPolicyWithPerf``: minimise
    ``max_j ρ_j`` with ``ρ_j = (t_j + R_j / (thr_j · X_j)) / (c_j + R_j / iso_j)``, where ``t_j``
    is the time since the job arrived, ``iso_j`` its throughput under Gavel's isolated
    allocation (``1/k`` of every type), and ``c_j`` the isolated time already "earned":
    at each recomputation ``c_j += (R_j(previous) − R_j(now)) / iso_j(previous)``. Gavel's
    priority weights are unused there ("TODO"), and so here.

    ``ρ`` is not linear in ``X`` (Gavel hands cvxpy an ``inv_pos``); for a fixed level ``ρ`` the
    condition ``ρ_j <= ρ`` is the linear ``thr_j · X_j >= R_j / (ρ c'_j − t_j)`` (``c'_j`` the
    denominator), so we bisect on ``ρ`` with an LP feasibility test per step (each feasible
    answer also lowers the upper end to its own ``max_j ρ_j``), until the bracket is within
    ``rel_tol`` (relative), and keep the allocation of the best feasible level; that LP
    maximises ``Σ thr·X / iso`` (spare capacity is used, as in :class:`GavelMMF`'s spread).

    Departure: the optimum is far from unique (only the jobs at the maximum ``ρ`` are pinned)
    and Gavel's ECOS returns a point inside the optimal set, our LP a vertex of it. With
    ``centre=True`` (the ``--compat gavel`` default) the bisection runs to ``1e-7`` relative
    and the answer is :func:`scheduling.centre.ftf_centre` at a level ``1e-6`` above the best
    one found: the analytic centre of the optimal set of the cone program CVXPY builds for
    ECOS, approached from inside (docs/gavel-fidelity.md §16, §22b). Without it ours is
    within ``rel_tol`` (default 1e-3, about 15 LPs per recomputation) of the optimal ``ρ``.
    """

    name = "gavel-ftf"
    compat: ClassVar[Mapping[str, CompatSpec]] = {"gavel": CompatSpec(params={"centre": True})}

    #: Bisection tolerance (relative) when the centre is taken.
    CENTRE_REL_TOL = 1e-7
    #: The centre is taken at this level above the best level found (relative).
    CENTRE_LEVEL = 1e-6

    def __init__(
        self,
        round_s: Annotated[float, POSITIVE] = 360.0,
        reset_interval_s: Annotated[float, NON_NEGATIVE] = 1920.0,
        seed: int = 0,
        rel_tol: Annotated[float, POSITIVE] = 1e-3,
        centre: bool = False,
    ) -> None:
        super().__init__(round_s=round_s, reset_interval_s=reset_interval_s, seed=seed)
        if not 0 < rel_tol < 1:
            raise ValueError(f"rel_tol: must be above 0 and below 1; got {rel_tol!r}")
        self.rel_tol = rel_tol
        self.centre = centre
        self.compiled_kernels = centre  # the centre's Newton kernel

    def reset(self, rng: np.random.Generator) -> None:
        super().reset(rng)
        self._cum_iso: dict[int, float] = {}
        self._prev: dict[int, tuple[float, float]] = {}  # job -> (remaining, iso throughput)

    def allocation(self, state: State, jobs: IntArray) -> FloatArray:
        thr, sf, cap = self._inputs(state, jobs)
        rem = np.asarray(state.remaining[jobs], dtype=np.float64)
        since = state.now - state.jobs.submit_time[jobs]
        iso = isolated_throughput(thr, sf, cap)
        cum = np.zeros(len(jobs))
        for i, j in enumerate(jobs.tolist()):
            earned = self._cum_iso.get(j, 0.0)
            if j in self._prev:
                r0, iso0 = self._prev[j]
                if iso0 > 0:
                    earned += (r0 - rem[i]) / iso0
            self._cum_iso[j] = earned
            cum[i] = earned
        self._prev = {j: (float(rem[i]), float(iso[i])) for i, j in enumerate(jobs.tolist())}
        live = (rem > 0) & (iso > 0)
        if not live.any():
            return np.zeros_like(thr)
        denom = cum + np.where(live, rem / np.where(iso > 0, iso, 1.0), np.inf)
        idx = np.flatnonzero(live)
        lp = BaseLP(thr, sf, cap)
        lp.add_job_rows(-thr, 0.0, which=idx)  # right-hand sides set per level below
        base = lp.model(np.zeros(lp.nv))
        n_base = lp.nt + lp.k
        cost = np.zeros(lp.nv)
        cost[: lp.nx] = -(thr / np.where(iso > 0, iso, 1.0)[:, None] * live[:, None]).ravel()
        cost /= max(float(np.abs(cost).max(initial=0.0)), 1e-300)
        base.c = cost

        def level_of(x: FloatArray) -> float:
            y = np.einsum("jt,jt->j", thr[idx], x[idx])
            with np.errstate(divide="ignore"):
                return float(np.max((since[idx] + rem[idx] / y) / denom[idx]))

        loaded = [False]  # whether HiGHS holds this recomputation's matrix

        def feasible(rho: float) -> FloatArray | None:
            slack = rho * denom[idx] - since[idx]
            if np.any(slack <= 0):
                return None
            base.b = base.b.copy()
            base.b[n_base:] = -rem[idx] / slack
            # warm only once this matrix is loaded: the previous recomputation's model can
            # have the same shape but other coefficients, which a warm solve would keep
            res = self._lp.solve(base, warm=loaded[0])
            loaded[0] = True
            return lp.allocation(res.x) if res.x is not None else None

        # lower bound: a job can do no better than its whole time on its best type
        best = thr.max(axis=1)
        lo = float(np.max((since[idx] + rem[idx] / best[idx]) / denom[idx]))
        hi = max(lo, 1e-9) * 2.0
        x_hi = feasible(hi)
        grow = 0
        while x_hi is None and grow < 60:
            lo, hi = hi, hi * 4.0
            x_hi = feasible(hi)
            grow += 1
        if x_hi is None:
            return self._fallback(thr, sf, cap)
        x_lo = feasible(lo)
        if x_lo is not None:  # the bound is attained
            hi, x_hi = lo, x_lo
        tol = self.CENTRE_REL_TOL if self.centre else self.rel_tol
        hi = min(hi, level_of(x_hi))
        while hi - lo > tol * hi:
            mid = 0.5 * (lo + hi)
            x_mid = feasible(mid)
            if x_mid is None:
                lo = mid
            else:
                hi, x_hi = min(mid, level_of(x_mid)), x_mid
        if self.centre and live.all():
            x_c = self._centre(thr, sf, cap, rem, since, denom, x_hi)
            if x_c is not None:
                return x_c
        return x_hi

    def _centre(
        self,
        thr: FloatArray,
        sf: FloatArray,
        cap: FloatArray,
        rem: FloatArray,
        since: FloatArray,
        denom: FloatArray,
        x_hi: FloatArray,
    ) -> FloatArray | None:
        """:func:`scheduling.centre.ftf_centre` from the LP's answer ``x_hi``: its level plus
        :data:`CENTRE_LEVEL` (relative), started a quarter of that towards a strictly
        interior point; every entry is a variable, as in Gavel's problem. ``None`` if it
        fails (the caller keeps ``x_hi``)."""
        # the LP's answer, clipped by HiGHS's tolerances, scaled back inside the constraints
        use = sf @ x_hi
        shrink = min(
            1.0,
            float(np.min(cap / np.maximum(use, 1e-300))),
            1.0 / max(float(x_hi.sum(axis=1).max()), 1e-300),
        )
        x_v = x_hi * shrink
        y = np.einsum("jt,jt->j", thr, x_v)
        if np.any(y <= 0):
            return None
        level = float(np.max((since + rem / y) / denom)) * (1.0 + self.CENTRE_LEVEL)
        k = len(sf)
        x_in = (cap[None, :] / k) / sf[:, None]
        x_in = 0.5 * x_in / np.maximum(x_in.sum(axis=1), 1.0)[:, None]
        theta = 0.25 * self.CENTRE_LEVEL
        x = ftf_centre(thr, sf, cap, rem, since, denom, level, (1 - theta) * x_v + theta * x_in)
        return None if x is None else solution_allocation(x.ravel(), thr)


class GavelFIFOHet(GavelRounds):
    """Gavel's heterogeneity-aware FIFO (``fifo_perf``).

    Source: Gavel (OSDI'20), ``policies/fifo.py``, ``FIFOPolicy`` in ``perf`` mode: at every
    recomputation the map is rebuilt from scratch; jobs in arrival order each take, among the
    types (alphabetical by Gavel's name) that still have at least the job's gang free, the one
    with the highest throughput (first in that order on ties); a job whose best such type has
    zero throughput is skipped; the loop stops at the first job no type has room for (FIFO:
    no one jumps the queue). The allocation is 1 on the chosen type. No LP.
    """

    name = "gavel-fifo-het"
    skip_unprioritised = True
    shuffle_types = False  # "FIFO_Perf" has "Perf" in its name

    def allocation(self, state: State, jobs: IntArray) -> FloatArray:
        names = dict((t, n) for n, t in self._type_order(state))
        types = sorted(range(state.cluster.n_types), key=lambda t: names[t])
        avail = {t: int(state.capacity[t]) for t in types}
        open_types = [t for t in types if avail[t] > 0]
        x = np.zeros((len(jobs), state.cluster.n_types))
        rate, gpus = state.rate, state.jobs.num_gpus
        for i, j in enumerate(jobs.tolist()):
            if not open_types:
                break
            g = int(gpus[j])
            fit = [t for t in open_types if avail[t] >= g]
            if not fit:
                break
            best = max(fit, key=lambda t: (rate[j, t], -fit.index(t)))
            if rate[j, best] > 0:
                x[i, best] = 1.0
                avail[best] -= g
                if avail[best] == 0:
                    open_types.remove(best)
        return x


class GavelHierarchical(GavelLP):
    """Gavel's hierarchical policy: weighted max-min fairness across entities (users or
    virtual clusters), then fairness or FIFO inside each, by water filling.

    Source: Gavel (OSDI'20, §4.3 "hierarchical policies"), ``policies/
    max_min_fairness_water_filling.py`` (``MaxMinFairnessWaterFillingPolicyWithPerf`` with
    ``priority_reweighting_policies``). Each iteration gives every job a weight from its
    entity's weight (``within="fairness"``: split among the entity's not-yet-saturated jobs in
    proportion to their priority; ``within="fifo"``: all of it to the entity's earliest
    not-yet-saturated job, 0 to the others), then solves the max-min LP that raises every
    weighted job's normalised throughput (throughput / proportional throughput, as in
    :class:`GavelMMF`) above its level so far by ``z · w_j / sf_j``, keeping every job at
    least at its level; then finds the *bottleneck* jobs — those that cannot get more while the
    others keep theirs — and freezes them. It stops when every weighted job is frozen.

    Departures from Gavel's code: Gavel finds the bottleneck jobs with a MILP (GLPK_MI:
    maximise the number of jobs that can simultaneously exceed their level × 1.0001); we read
    them off the level's LP: a weighted job whose row has a positive dual (its share of the
    dual above ``slack``) is tight at every optimum, so it cannot get more while the others
    keep theirs (:meth:`_water_fill`: one LP per level, each solved from the previous level's
    optimum, on a dense simplex tableau in one compiled call,
    :func:`clustersim.kernels.water_fill`, up to :data:`DENSE_MAX_CLASSES` classes; else, or
    if it fails, kept in HiGHS and changed in place, :meth:`_water_fill_highs`). A
    bottleneck job the vertex leaves at dual 0 stays weighted and is found by the next level,
    which cannot rise. The
    ``linprog`` backend (and the tests, as the reference) uses the straightforward form,
    :meth:`_water_fill_two_lps`: each level's LP from scratch, then a bottleneck LP. Both reach
    the same levels to within ``slack`` relative; the allocation may differ where the optimum
    is not unique (docs/gavel-lp.md). Entities all weigh 1 (Gavel's
    experiments pass ``entity_weights``; our traces carry none). Gavel does not expose this
    policy in its simulator's policy list; the entity is the job's ``user`` or ``vc``
    (``entity``), jobs without one forming one entity together. ``max_iterations`` (0: until
    done, as Gavel) caps the water-filling levels per recomputation (one LP each; with
    hundreds of users a recomputation can need hundreds): the allocation of the last level is
    used, the jobs not yet frozen keeping the level reached.
    """

    name = "gavel-hierarchical"
    compiled_kernels = True  # the water filling's simplex (clustersim.kernels.water_fill)

    def __init__(
        self,
        round_s: Annotated[float, POSITIVE] = 360.0,
        reset_interval_s: Annotated[float, NON_NEGATIVE] = 1920.0,
        seed: int = 0,
        entity: Literal["user", "vc"] = "user",
        within: Literal["fairness", "fifo"] = "fairness",
        slack: Annotated[float, POSITIVE] = 1e-4,
        max_iterations: Annotated[int, NON_NEGATIVE] = 0,
    ) -> None:
        super().__init__(round_s=round_s, reset_interval_s=reset_interval_s, seed=seed)
        self.entity = entity
        self.within = within
        self.slack = slack
        self.max_iterations = max_iterations

    def _weights(
        self, ent: IntArray, prio: FloatArray, count: FloatArray, done: npt.NDArray[np.bool_]
    ) -> FloatArray:
        """Per-row weights of one iteration (Gavel's ``_compute_priority_weights``); a row
        stands for ``count`` identical jobs of one entity (``within="fairness"`` only)."""
        n_ent = int(ent.max()) + 1 if len(ent) else 0
        open_ = ~done
        if self.within == "fairness":
            total = np.bincount(ent, weights=prio * count * open_, minlength=n_ent)
            share = np.where(open_, prio / np.where(total[ent] > 0, total[ent], 1.0), 0.0)
            return share  # entity weight 1
        w = np.zeros(len(ent))
        idx = np.flatnonzero(open_)  # jobs are in arrival order: the first per entity
        _, first = np.unique(ent[idx], return_index=True)
        w[idx[first]] = 1.0
        return w

    def reset(self, rng: np.random.Generator) -> None:
        super().reset(rng)
        self._ent: IntArray = np.zeros(0, dtype=np.int64)
        self._ent_of: object = None

    def _entities(self, state: State) -> IntArray:
        """Every job's entity as an integer, in the sorted order of the labels (``str`` of
        the job's ``user`` or ``vc``), found once per run (the job table does not change
        during a run; another one starts over). Sorted order keeps the classes in the order
        the labels of the active jobs alone would give."""
        table = state.jobs
        if self._ent_of is not table:
            labels = np.asarray([str(v) for v in getattr(table, self.entity)])
            self._ent = np.unique(labels, return_inverse=True)[1].reshape(-1).astype(np.int64)
            self._ent_of = table
        return self._ent

    def _class_columns(self, state: State, jobs: IntArray) -> tuple[FloatArray, ...]:
        prio = np.maximum(state.jobs.priority[jobs].astype(np.float64), 1.0)
        ent = self._entities(state)[jobs].astype(np.float64)
        thr = np.asarray(state.rate[jobs], dtype=np.float64)
        return thr, state.jobs.num_gpus[jobs].astype(np.float64), prio, ent

    def allocation(self, state: State, jobs: IntArray) -> FloatArray:
        thr_j, sf_j, cap = self._inputs(state, jobs)
        if self.within == "fairness":  # symmetric in identical jobs of one entity
            first, inv, count = self._classes(state, jobs)
        else:  # FIFO order singles jobs out
            first = inv = np.arange(len(jobs), dtype=np.int64)
            count = np.ones(len(jobs))
        rep = jobs[first]
        thr, sf = thr_j[first], sf_j[first]
        prio = np.maximum(state.jobs.priority[rep].astype(np.float64), 1.0)
        ent = self._entities(state)[rep]
        prop = proportional_throughput(thr, cap)
        live = prop > 0
        if not live.any():
            return np.zeros_like(thr_j)
        coef = np.zeros_like(thr)
        coef[live] = thr[live] / prop[live, None]
        fill = self._water_fill if self._lp.backend == "core" else self._water_fill_two_lps
        x = fill(thr, sf, cap, count, prio, ent, coef, live)
        if x is None:
            return self._fallback(thr_j, sf_j, cap)
        return x[inv]

    def _iterations(self, k: int) -> int:
        return min(k + 1, self.max_iterations or k + 1)

    def _water_fill(
        self,
        thr: FloatArray,
        sf: FloatArray,
        cap: FloatArray,
        count: FloatArray,
        prio: FloatArray,
        ent: IntArray,
        coef: FloatArray,
        live: npt.NDArray[np.bool_],
    ) -> FloatArray | None:
        """The water filling on a dense simplex tableau in one compiled call
        (:func:`clustersim.kernels.water_fill`: the same LPs, levels, warm starts and
        dual-based bottlenecks as :meth:`_water_fill_highs`), for up to
        :data:`DENSE_MAX_CLASSES` job classes; above that, or if the kernel fails (pivot
        limit, numerical trouble; counted in ``dense_failures``), :meth:`_water_fill_highs`.
        Each level counts as one LP solve, the kernel's time as solver time."""
        k, nt = thr.shape
        if k > DENSE_MAX_CLASSES:
            return self._water_fill_highs(thr, sf, cap, count, prio, ent, coef, live)
        x = np.empty(k * nt)
        level = np.empty(k)
        stats = np.zeros(2, dtype=np.int64)
        t0 = time.perf_counter()
        status = water_fill(
            thr,
            coef,
            sf,
            cap,
            count,
            prio,
            ent.astype(np.int64),
            live,
            self.within == "fifo",
            float(self.slack),
            self._iterations(k),
            DENSE_MAX_PIVOTS,
            x,
            level,
            stats,
        )
        self._lp.solver_s += time.perf_counter() - t0
        if status != WF_OK:
            self.dense_failures += 1
            return self._water_fill_highs(thr, sf, cap, count, prio, ent, coef, live)
        self._lp.solves += int(stats[0])
        return solution_allocation(x, thr)

    def _water_fill_highs(
        self,
        thr: FloatArray,
        sf: FloatArray,
        cap: FloatArray,
        count: FloatArray,
        prio: FloatArray,
        ent: IntArray,
        coef: FloatArray,
        live: npt.NDArray[np.bool_],
    ) -> FloatArray | None:
        """The water filling with one LP per level, kept in HiGHS and changed in place.

        Variables ``X`` and the water line ``t``; one row per live job,
        ``f_j(X) >= base_j + a_j t`` with ``a_j = w_j / sf_j`` for the weighted jobs and 0
        for the others (``f_j`` its normalised throughput, ``base_j`` chosen so that the row
        reads ``f_j >= level_j`` at the previous level's ``t``), maximise ``t``. Between
        levels only the changed weights (``a_j``, one matrix entry each) and their
        right-hand sides change, so the previous optimum stays feasible and HiGHS goes on
        from its basis. The bottleneck jobs are those whose row has a positive dual: their
        shares ``a_j y_j`` of the level's dual sum to 1, and by complementary slackness a
        job with a share above :attr:`slack` is tight at every optimum (it cannot be raised
        while the others keep theirs). A degenerate vertex may leave a bottleneck job at
        share 0; it stays weighted, and the next level, which then cannot rise (``t``
        unchanged), finds it. ``None`` when the first LP fails."""
        k = len(thr)
        nt = thr.shape[1]
        live_idx = np.flatnonzero(live)
        row = np.zeros(k, dtype=np.int64)
        row[live_idx] = nt + k + np.arange(len(live_idx), dtype=np.int64)
        done = ~live  # frozen, or never weighted (no throughput anywhere)
        w = self._weights(ent, prio, count, done)
        act = (w > 0) & ~done
        a = np.where(act, w / sf, 0.0)
        lp = BaseLP(thr, sf, cap, n_extra=1, count=count)
        lp.add_job_rows(-coef, 0.0, which=live_idx, extra=a[:, None])
        c = np.zeros(lp.nv)
        c[-1] = -1.0
        self._lp.load(lp.model(c))
        level = np.zeros(k)  # normalised throughput reached so far (final once frozen)
        t_prev = 0.0
        sol: FloatArray | None = None
        zcol = lp.nx
        for it in range(self._iterations(k)):
            if it:
                w = self._weights(ent, prio, count, done)
                act = (w > 0) & ~done
                if not act.any():
                    break
                a_new = np.where(act, w / sf, 0.0)
                ch = live_idx[a_new[live_idx] != a[live_idx]]
                if len(ch):
                    self._lp.change_coeffs(row[ch], np.full(len(ch), zcol), a_new[ch])
                    self._lp.change_row_upper(row[ch], a_new[ch] * t_prev - level[ch])
                a = a_new
            res = self._lp.resolve(duals=True, primal=True)
            if res.x is None or res.row_dual is None:
                if sol is None:
                    return None
                self._lp.fallbacks += 1  # as Gavel: the previous level's allocation
                break
            sol = res.x
            t = float(sol[zcol])
            act_idx = np.flatnonzero(act)
            a_act = a[act_idx]
            level[act_idx] += (t - t_prev) * a_act
            t_prev = t
            share = -res.row_dual[row[act_idx]] * a_act
            stuck = share > self.slack
            if not stuck.any():  # (cannot happen: the shares sum to 1)
                stuck = share >= share.max()
            done[act_idx[stuck]] = True
        return None if sol is None else solution_allocation(sol, thr)

    def _water_fill_two_lps(
        self,
        thr: FloatArray,
        sf: FloatArray,
        cap: FloatArray,
        count: FloatArray,
        prio: FloatArray,
        ent: IntArray,
        coef: FloatArray,
        live: npt.NDArray[np.bool_],
    ) -> FloatArray | None:
        """The straightforward water filling (the ``linprog`` backend's, and the tests'
        reference for :meth:`_water_fill`): per level a max-min LP built from scratch, then
        the bottleneck LP — maximise ``Σ s_j`` with ``s_j ∈ [0, 1]`` and each weighted job
        above its level by ``slack · level · s_j`` — freezing the jobs with ``s_j < 1/2``."""
        k = len(thr)
        live_idx = np.flatnonzero(live)
        frozen = np.zeros(k, dtype=bool)
        level = np.zeros(k)  # normalised throughput reached so far (final once frozen)
        x: FloatArray | None = None
        for _ in range(self._iterations(k)):
            w = self._weights(ent, prio, count, frozen | ~live)
            act = (w > 0) & ~frozen & live
            if not act.any():
                break
            act_idx = np.flatnonzero(act)
            mult = np.zeros(k)
            mult[act] = sf[act] / w[act]
            # raise: z <= (f_j - level_j) · sf_j / w_j for weighted jobs, f_j >= level_j for all
            lp = BaseLP(thr, sf, cap, n_extra=1, count=count)
            lp.add_job_rows(
                -coef * mult[:, None], -level * mult, which=act_idx, extra=np.ones((k, 1))
            )
            lp.add_job_rows(-coef, -level, which=live_idx)
            c = np.zeros(lp.nv)
            c[-1] = -1.0
            res = self._lp.solve(lp.model(c))
            if res.x is None:
                if x is None:
                    return None
                self._lp.fallbacks += 1  # Gavel keeps the previous iteration's allocation
                break
            x = lp.allocation(res.x)
            level[act] += float(res.x[-1]) / mult[act]
            # bottlenecks: jobs that cannot exceed their level while the others keep theirs
            n = len(act_idx)
            lp2 = BaseLP(thr, sf, cap, n_extra=n, count=count)
            eps = self.slack * np.maximum(level[act_idx], 1.0)  # (absolute near level 0)
            lp2.add_job_rows(-coef, -level, which=act_idx, extra_each=eps)
            rest = np.setdiff1d(live_idx, act_idx)
            if len(rest):
                lp2.add_job_rows(-coef, -level, which=rest)
            ub = lp2.ub.copy()
            ub[lp2.nx :] = 1.0
            c2 = np.zeros(lp2.nv)
            c2[lp2.nx :] = -1.0
            res2 = self._lp.solve(lp2.model(c2, ub=ub))
            if res2.x is None:
                frozen[act_idx] = True  # Gavel: a failed MILP freezes every weighted job
                continue
            stuck = res2.x[lp2.nx :] < 0.5
            if not stuck.any():
                break
            frozen[act_idx[stuck]] = True
        return x
