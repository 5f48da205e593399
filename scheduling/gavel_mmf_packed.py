"""Gavel's max-min fairness with space sharing: ``gavel-mmf-packed``.

Source: Narayanan et al., Gavel, OSDI'20, §3.1 ("space sharing": the allocation is over job
*combinations*, a pair's throughputs are the co-located ones) and §4.1, and its public code
(``policies/max_min_fairness.py``, ``MaxMinFairnessPolicyWithPacking.get_allocation``, the
one the scheduler calls). The LP, over every combination ``c`` — each job alone, and each
pair of jobs with the same scale factor — and type ``t``:

    maximise  min_j  Σ_{c ∋ j} Σ_t  r_j(c, t) · sf_j / (w_j · p_j) · X[c, t]
    s.t.      X ≥ 0,   Σ_c sf_c X[c, t] ≤ N_t  (a pair's gang counted once),
              Σ_{c ∋ j} Σ_t X[c, t] ≤ 1  for every job j,

with ``r_j(c, t)`` job ``j``'s rate in combination ``c`` on ``t`` (its isolated rate alone,
its co-located rate in a pair: :mod:`clustersim.colocation`), ``w_j`` its priority weight and
``p_j`` its proportional throughput (isolated rates, as :class:`scheduling.gavel_lp.GavelMMF`).
The allocation is then realised by Gavel's rounds over combinations
(:class:`scheduling.gavel_packing.GavelGandiva`'s pass: a pair runs on one gang, the lower
job index hosting the other).

How it is solved: jobs with identical inputs (isolated rates, scale factor, weight, job type)
form classes, and the LP is written over classes and pairs of classes — one variable for a
class's per-job share alone on each type, one for the total time of all pairs between two
classes on each type. By the symmetry of the LP in identical jobs (see
:func:`scheduling.allocation.job_classes`) this has the same optimum, and the answer is spread
evenly over the concrete jobs and pairs of each class, as an interior-point solver treats them.

Departures from Gavel's code: the LP is solved by HiGHS (a vertex), not ECOS (an interior
point): where the optimum is not unique (spare capacity, ties between pair classes) the chosen
optimal allocation may differ, so JCTs may differ even though the fairness level is the same.
``centre=True`` (the ``--compat gavel`` default) returns instead the analytic centre of the
optimal face of the per-job problem (rows and variables weighted by the jobs and concrete pairs
they stand for), near ECOS's point: every pair then has a small positive share, as in Gavel,
which matters because Gavel's rounds give a never-run entry priority ``allocation × 1e9``.
Pairs whose co-located rate is 0 on a type (not measured, or Gavel's measured 0) get no time
there (Gavel leaves such entries to the solver, which gains nothing from them). Gavel's other
packing rules (priority entries, deficits) are those of
:class:`scheduling.gavel_packing.GavelGandiva` (an entry for every pair of active jobs with the
same scale factor), with its departures. Gavel's code stops with a CVXPY reshape error as soon
as the active jobs mix scale factors (its objective assumes every job is in as many
combinations); here pairs are simply formed inside each scale-factor group. Against Gavel's
runs (single-GPU inputs only, for that reason): −2.6 % to +2.2 % average JCT under ``--compat
gavel`` (docs/gavel-fidelity.md, section 23).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, ClassVar

import numpy as np

from scheduling.allocation import (
    LPModel,
    LPSolver,
    csc_arrays,
    fallback_allocation,
    job_classes,
    optimal_face_centre,
    proportional_throughput,
)
from scheduling.base import CompatSpec, State
from scheduling.gavel import FloatArray, IntArray
from scheduling.gavel_packing import GavelGandiva, Key
from scheduling.params import NON_NEGATIVE, POSITIVE

#: A class pair's share below this is treated as none (solver round-off).
TINY = 1e-9


class GavelMMFPacked(GavelGandiva):
    """Gavel's heterogeneity-aware max-min fairness over job combinations (module doc).

    Parameters
    ----------
    round_s, reset_interval_s
        As :class:`scheduling.gavel.GavelRounds`.
    seed
        Accepted for symmetry with the other Gavel policies; nothing here is random.
    centre
        Return the analytic centre of the LP's optimal face (near where ECOS stops) instead of
        HiGHS's vertex; the ``--compat gavel`` default (docs/gavel-fidelity.md, section 23).
    """

    name = "gavel-mmf-packed"
    citation = "Narayanan et al., Gavel, OSDI'20 (space sharing, max-min fairness)"
    colocates = True
    shuffle_types = False
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

    def reset(self, rng: np.random.Generator) -> None:
        super().reset(rng)
        self._lp = LPSolver()

    def stats(self) -> dict[str, float]:
        return self._lp.stats()

    def _shares(self, state: State, active: IntArray) -> dict[Key, FloatArray]:
        k, nt = len(active), state.cluster.n_types
        if k == 0:
            return {}
        thr = state.rate[active].astype(np.float64)
        sf = state.jobs.num_gpus[active].astype(np.float64)
        cap = state.capacity.astype(np.float64)
        w = np.maximum(state.jobs.priority[active].astype(np.float64), 1.0)
        jt = (
            np.full(k, -1.0)
            if state.colocation is None
            else state.colocation.job_type[active].astype(np.float64)
        )
        first, inv, count = job_classes(thr, sf, w, jt)
        g = len(first)
        rep = active[first]
        prop = proportional_throughput(thr[first], cap)
        live = prop > 0
        base = np.zeros(g)
        base[live] = sf[first][live] / (w[first][live] * prop[live])
        # class pairs that can share on some type: factors (g, g, nt), 0 where they cannot
        ia, ib = np.triu_indices(g)
        keep = (sf[first][ia] == sf[first][ib]) & ((ia != ib) | (count[ia] >= 2))
        ia, ib = ia[keep], ib[keep]
        nP = len(ia)
        fa = np.zeros((nP, nt))
        fb = np.zeros((nP, nt))
        if nP and state.colocation is not None:
            for t in range(nt):
                tt = np.full(nP, t, dtype=np.int64)
                fa[:, t], fb[:, t] = state.colocation.factors(rep[ia], rep[ib], tt)
        usable = (fa > 0).any(axis=1)
        ia, ib, fa, fb = ia[usable], ib[usable], fa[usable], fb[usable]
        nP = len(ia)
        x = self._solve(thr[first], sf[first], cap, count, base, live, ia, ib, fa, fb)
        out: dict[Key, FloatArray] = {}
        if x is None:
            xs = fallback_allocation(thr, sf, cap)
            for i, j in enumerate(active.tolist()):
                out[(j, -1)] = xs[i]
            return out
        s_c, y_p = x[: g * nt].reshape(g, nt), x[g * nt : g * nt + nP * nt].reshape(nP, nt)
        members = [active[inv == c] for c in range(g)]
        for i, j in enumerate(active.tolist()):
            out[(j, -1)] = s_c[inv[i]].copy()
        for p in range(nP):
            if y_p[p].max() <= TINY:
                continue
            a_jobs, b_jobs = members[ia[p]], members[ib[p]]
            if ia[p] == ib[p]:
                a_idx, b_idx = np.triu_indices(len(a_jobs), 1)
                pairs = np.column_stack([a_jobs[a_idx], a_jobs[b_idx]])
            else:
                pairs = np.array(np.meshgrid(a_jobs, b_jobs, indexing="ij")).reshape(2, -1).T
            each = y_p[p] / len(pairs)
            for a, b in pairs.tolist():
                out[(min(a, b), max(a, b))] = each.copy()
        return out

    def _solve(
        self,
        thr: FloatArray,
        sf: FloatArray,
        cap: FloatArray,
        count: FloatArray,
        base: FloatArray,
        live: np.ndarray,
        ia: IntArray,
        ib: IntArray,
        fa: FloatArray,
        fb: FloatArray,
    ) -> FloatArray | None:
        """The class-level LP (module doc); variables ``s`` (g × nt, a job's share alone),
        ``y`` (nP × nt, all pairs of a class pair together) and ``z``."""
        g, nt = thr.shape
        nP = len(ia)
        ns, ny = g * nt, nP * nt
        nv = ns + ny + 1
        rows: list[IntArray] = []
        cols: list[IntArray] = []
        vals: list[FloatArray] = []

        def add(r: IntArray, c: IntArray, v: FloatArray) -> None:
            rows.append(np.asarray(r, dtype=np.int64))
            cols.append(np.asarray(c, dtype=np.int64))
            vals.append(np.asarray(v, dtype=np.float64))

        sc = np.arange(ns).reshape(g, nt)
        yc = ns + np.arange(ny).reshape(nP, nt)
        tt = np.broadcast_to(np.arange(nt), (g, nt))
        # capacity rows 0..nt-1
        add(tt.ravel(), sc.ravel(), np.repeat(count * sf, nt))
        if nP:
            add(np.broadcast_to(np.arange(nt), (nP, nt)).ravel(), yc.ravel(), np.repeat(sf[ia], nt))
        # job rows nt..nt+g-1: a job's share alone, plus its part of its class pairs
        jr = nt + np.arange(g)
        add(np.repeat(jr, nt), sc.ravel(), np.ones(ns))
        same = ia == ib
        if nP:
            per_a = np.where(same, 2.0, 1.0) / count[ia]
            add(np.repeat(jr[ia], nt), yc.ravel(), np.repeat(per_a, nt))
            other = ~same
            add(
                np.repeat(jr[ib[other]], nt),
                yc[other].ravel(),
                np.repeat(1.0 / count[ib[other]], nt),
            )
        # max-min rows (live classes): z - Σ coef·v <= 0
        lv = np.flatnonzero(live)
        mrow = np.full(g, -1, dtype=np.int64)
        mrow[lv] = nt + g + np.arange(len(lv))
        coef_s = thr * base[:, None]
        add(np.repeat(mrow[lv], nt), sc[lv].ravel(), -coef_s[lv].ravel())
        if nP:
            # a pair's time y counts per job of class a as y · per_a, at rate fa · thr_a
            ca = -(fa * thr[ia] * base[ia, None]) * per_a[:, None]
            ok = live[ia]
            add(np.repeat(mrow[ia[ok]], nt), yc[ok].ravel(), ca[ok].ravel())
            other = (~same) & live[ib]
            cb = -(fb * thr[ib] * base[ib, None]) / count[ib][:, None]
            add(np.repeat(mrow[ib[other]], nt), yc[other].ravel(), cb[other].ravel())
        add(mrow[lv], np.full(len(lv), nv - 1), np.ones(len(lv)))
        n_rows = nt + g + len(lv)
        b = np.zeros(n_rows)
        b[:nt] = cap
        b[nt : nt + g] = 1.0
        c = np.zeros(nv)
        c[-1] = -1.0
        lb = np.zeros(nv)
        ub = np.full(nv, np.inf)
        ub[:ns] = np.where(thr.ravel() > 0, 1.0, 0.0)
        if nP:
            ub[ns : ns + ny] = np.where((fa > 0).ravel(), np.inf, 0.0)
        indptr, indices, data = csc_arrays(
            np.concatenate(rows), np.concatenate(cols), np.concatenate(vals), nv
        )
        m = LPModel(c=c, indptr=indptr, indices=indices, data=data, b=b, lb=lb, ub=ub)
        # with the centre, any optimal vertex seeds it: the dense kernel's (HiGHS's if it
        # declines); without, the vertex is the answer: HiGHS's, as always
        dense = self._lp.solve_dense(m) if self.centre else None
        res = self._lp.solve(m) if dense is None else dense
        if res.x is None:
            self._lp.fallbacks += 1
            return None
        if self.centre:
            # the centre of the per-job problem Gavel gives ECOS: a class row or variable
            # stands for `count` job rows / variables, a class pair's y for its concrete pairs
            npairs = np.where(ia == ib, count[ia] * (count[ia] - 1) / 2, count[ia] * count[ib])
            wr = np.concatenate([np.ones(nt), count, count[lv]])
            wv = np.concatenate([np.repeat(count, nt), np.repeat(npairs, nt), [1.0]])
            v = optimal_face_centre(m, res.x, self._interior(m, res.x, nt + g), wr, wv)
            if v is not None:
                return np.clip(v, 0.0, None)
            if dense is not None:  # the vertex is the answer now: HiGHS's, as before
                res = self._lp.solve(m)
                if res.x is None:
                    self._lp.fallbacks += 1
                    return None
        x_opt = res.x
        assert x_opt is not None  # (checked above)
        return np.clip(x_opt, 0.0, None)

    @staticmethod
    def _interior(m: LPModel, x_opt: FloatArray, nb: int) -> FloatArray:
        """A point strictly inside the LP's rows (every free share equal, the capacity and
        job rows — the first ``nb`` — at most half full, ``z`` half the smallest live class's
        value). A type without capacity has no interior: the centre then fails and the caller
        keeps the vertex."""
        a = m.matrix()
        nv = len(m.c)
        free = m.ub > m.lb
        v = np.where(free, 1.0, 0.0)
        v[-1] = 0.0
        act, bound = a[:nb] @ v, m.b[:nb]
        pos = bound > 0
        v *= 0.5 / max(float(np.max(act[pos] / bound[pos], initial=0.0)), 1e-300)
        gain = -(a[nb:] @ v)  # Σ coef·v per max-min row
        v[nv - 1] = 0.5 * float(np.min(gain)) if gain.size else 0.0
        return np.where(free, v, x_opt)
