"""Pollux (Qiao et al., OSDI'21): device counts that maximise the p-mean of goodput speedups."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Annotated, ClassVar

import numpy as np

from clustersim.goodput import NODE_GPUS, JobGoodput, consolidated
from scheduling.base import (
    EMPTY,
    CompatSpec,
    Decision,
    FloatArray,
    IntArray,
    Policy,
    State,
)
from scheduling.params import NON_NEGATIVE, POSITIVE

#: Added to every speedup before the power mean (the reference's), so a job given nothing
#: weighs ``0.001 ** p`` and the objective is finite.
EPS = 1e-3
#: Most devices the reference lets one job have.
MAX_REPLICAS = 64


class Pollux(Policy):
    """Re-decide every ``interval_s`` the device count of every active job so that the
    power mean (exponent ``p``) of the jobs' speedups is largest.

    Per decision, for each job on its home type (current type, else the fastest that holds
    its smallest gang):

    * **speedup** of ``n`` devices = goodput on ``n`` devices consolidated on 4-GPU nodes,
      at the job's current epoch and best batch size (:mod:`clustersim.goodput`), over its
      goodput on its fair share ``ceil(G / J)`` (``G`` devices of the type, ``J`` jobs
      planned on it), times ``nodes / G`` (the reference's constant). Jobs of a model
      without a Pollux profile use the performance model's rate (``State.rate_on``) and
      efficiency 1;
    * **restart penalty**: a job given another count than it holds has its speedup
      multiplied by ``max(age − restart_s × restarts, 0) / (age + restart_s)``;
    * **allowed counts**: 0 (paused) or ``[min_gpus, max_gpus]`` of the job table, capped
      (profiled models) at ``min(max(2 × most devices it has held, 1), 64, max_batch /
      min_local_batch)`` (``ncf``: 1), never below ``min_gpus``;
    * **objective**: ``(Σ (speedup + 0.001)^p / J)^(1/p)`` (``p = 0``: geometric mean).

    **Search**: the objective is a monotone function of a sum of per-job terms under one
    capacity constraint per type, so the best device counts are found exactly by dynamic
    programming over (jobs, devices used): ``O(J × G × counts)``. Counts, not nodes, are
    chosen; the engine's placement strategy places them (docs/pollux-fidelity.md, section 6,
    has this and the other departures from the reference's genetic algorithm).

    Every restart and resize pays ``restart_s`` (the reference's 30-s re-scale delay), as
    the policy's ``resume_s`` (``--compat pollux`` charges it on first starts too). The
    engine rates running profiled jobs by their goodput (``goodput = True``,
    :class:`clustersim.goodput.GoodputRates`). A restart, for the penalty, is every start
    of a job on another count than it held at the previous decision once it has run (a
    resume after a pause included).

    ``--compat pollux`` (docs/pollux-fidelity.md) sets ``linear_unseen``: a job that has not
    run yet plans with a speedup linear in its devices, ``n / ceil(G / J)``, as the
    reference's jobs do before their first throughput fit.
    """

    name = "pollux"
    citation = (
        "Qiao et al., Pollux: Co-adaptive Cluster Scheduling for Goodput-Optimized Deep "
        "Learning, OSDI'21"
    )
    preemptive = True
    goodput: ClassVar[bool] = True
    compat: ClassVar[Mapping[str, CompatSpec]] = {
        "pollux": CompatSpec(
            params={"linear_unseen": True},
            elastic="1-64",
        )
    }

    def __init__(
        self,
        interval_s: Annotated[float, POSITIVE] = 60.0,
        p: float = -1.0,
        restart_s: Annotated[float, NON_NEGATIVE] = 30.0,
        linear_unseen: bool = False,
    ) -> None:
        if not math.isfinite(p):
            raise ValueError("p: must be a finite number")
        self.interval_s = interval_s
        self.p = p
        self.restart_s = restart_s
        self.linear_unseen = linear_unseen
        self._model: JobGoodput | None = None
        self._seen: dict[int, int] = {}
        self._restarts: dict[int, int] = {}
        self._last: dict[int, int] = {}

    @property
    def resume_s(self) -> float:  # type: ignore[override]
        """Delay of every (re)start and resize: ``restart_s``."""
        return self.restart_s

    def reset(self, rng: np.random.Generator) -> None:
        self._model = None
        self._seen = {}
        self._restarts = {}
        self._last = {}

    def terms(self, speedup: FloatArray) -> FloatArray:
        """Per-job cost whose sum the search minimises (monotone in the p-mean)."""
        if self.p == 0:
            return -np.log(np.maximum(speedup, EPS))
        v = (speedup + EPS) ** self.p
        return v if self.p < 0 else -v

    def p_mean(self, speedup: FloatArray) -> float:
        """The objective of speedups (one per job)."""
        if self.p == 0:
            return float(np.exp(np.mean(np.log(np.maximum(speedup, EPS)))))
        return float(np.mean((speedup + EPS) ** self.p) ** (1.0 / self.p))

    def schedule(self, state: State) -> Decision:
        wake = state.now + self.interval_s
        a = state.active
        if not len(a):
            return Decision(run=EMPTY, wake_at=wake)
        if self._model is None:
            self._model = JobGoodput(state.jobs, state.cluster)
        self.observe(state, a)
        # a job not running goes home to its fastest type that can hold its smallest gang
        fits = state.capacity[None, :] >= state.jobs.min_gpus[a, None]
        best = np.argmax(np.where(fits, state.rate[a], -1.0), axis=1)
        home = np.where(state.running[a], state.alloc_type[a], best)
        ok = state.rate[a, home] > 0
        ok &= state.jobs.min_gpus[a] <= state.capacity[home]
        a, home = a[ok], home[ok]
        runs, ndevs, types = [], [], []
        node_count = np.bincount(state.cluster.node_type, minlength=state.cluster.n_types)
        for t in np.unique(home).tolist():
            js = a[home == t]
            alloc = self.allocate(state, js, t, int(state.capacity[t]), int(node_count[t]))
            got = alloc > 0
            runs.append(js[got])
            ndevs.append(alloc[got])
            types.append(np.full(int(got.sum()), t, dtype=np.int64))
        run = np.concatenate(runs) if runs else EMPTY
        ndev = np.concatenate(ndevs) if ndevs else EMPTY
        typ = np.concatenate(types) if types else EMPTY
        keep = state.running[run]
        order = np.concatenate([np.flatnonzero(keep), np.flatnonzero(~keep)])
        return Decision(run=run[order], ndev=ndev[order], types=typ[order], wake_at=wake)

    def observe(self, state: State, a: IntArray) -> None:
        """Learn from the state what the previous decisions did: the most devices each job
        has held (exploration cap) and how often a job that had run was started again on
        another count than it held at the previous decision, 0 (paused) included
        (restarts). Idempotent for one state, so a decision depends on the state."""
        held = np.where(state.running[a], state.alloc_n[a], 0)
        for j, n in zip(a.tolist(), held.tolist(), strict=True):
            last = self._last.get(j)
            if last is None and n <= 0:
                continue  # never run yet
            if n > 0 and last is not None and last != n:
                self._restarts[j] = self._restarts.get(j, 0) + 1
            self._last[j] = n
            if n > 0:
                self._seen[j] = max(self._seen.get(j, 0), n)

    def speedups(
        self, state: State, js: IntArray, t: int, capacity: int, nodes: int
    ) -> tuple[FloatArray, IntArray, IntArray]:
        """``(speedup, lo, hi)``: ``speedup[i, n]`` of job ``js[i]`` on ``n`` devices of
        type ``t`` (restart penalty included), and its allowed counts ``{0} ∪ [lo, hi]``."""
        assert self._model is not None
        model = self._model
        jobs = state.jobs
        m = len(js)
        fair = max(1, math.ceil(capacity / m))
        lo = jobs.min_gpus[js].astype(np.int64)
        hi = np.minimum(jobs.max_gpus[js], capacity).astype(np.int64)
        speed = np.zeros((m, capacity + 1))
        remaining = state.remaining
        scale = nodes / capacity if capacity else 0.0
        for i, j in enumerate(js.tolist()):
            app = model.apps.get(j)
            if self.linear_unseen and j not in self._seen:
                # not run yet: no throughput fit, speedup linear in the replicas (the
                # reference's), capped as a profiled job's first allocation is
                if app is not None:
                    hi[i] = max(lo[i], min(hi[i], 1))
                good = np.arange(hi[i] + 1, dtype=np.float64)
                base = float(fair)
            elif app is not None:
                cap = (
                    1
                    if app.fixed_batch is not None
                    else min(
                        max(2 * self._seen.get(j, 0), 1),
                        MAX_REPLICAS,
                        int(app.max_bsz // app.min_local),
                    )
                )
                hi[i] = max(lo[i], min(hi[i], cap))
                ep = model.epoch(j, float(remaining[j]))
                good = np.array(
                    [app.best(consolidated(n, NODE_GPUS), ep).goodput for n in range(hi[i] + 1)]
                )
                base = app.best(consolidated(fair, NODE_GPUS), ep).goodput
                if base <= 0:
                    base = float(
                        max(app.best(consolidated(n), ep).goodput for n in range(1, fair + 1))
                    )
            else:
                ns = np.arange(hi[i] + 1, dtype=np.int64)
                good = state.rate_on(np.full(len(ns), j), np.full(len(ns), t), ns)
                base = float(state.rate_on(np.array([j]), np.array([t]), np.array([fair]))[0])
            if base <= 0:
                base = float(good.max()) or 1.0
            speed[i, : hi[i] + 1] = good / base * scale
            held = int(state.alloc_n[j]) if state.running[j] else 0
            age = max(state.now - float(jobs.submit_time[j]), 0.0)
            factor = restart_factor(age, self._restarts.get(j, 0), self.restart_s)
            change = np.arange(capacity + 1) != held
            speed[i] = np.where(change, speed[i] * factor, speed[i])
        return speed, lo, hi

    def allocate(self, state: State, js: IntArray, t: int, capacity: int, nodes: int) -> IntArray:
        """Device counts of jobs ``js`` on type ``t`` that maximise the p-mean (exact DP)."""
        speed, lo, hi = self.speedups(state, js, t, capacity, nodes)
        return best_counts(self.terms(speed), lo, hi, capacity)


def restart_factor(age: float, restarts: int, restart_s: float) -> float:
    """The reference's restart penalty: ``max(age − restart_s × restarts, 0) / (age +
    restart_s)`` (1 without a restart cost)."""
    if restart_s <= 0:
        return 1.0
    return max(age - restart_s * restarts, 0.0) / (age + restart_s)


def best_counts(cost: FloatArray, lo: IntArray, hi: IntArray, capacity: int) -> IntArray:
    """Counts ``n_i ∈ {0} ∪ [lo_i, hi_i]`` with ``Σ n_i ≤ capacity`` minimising
    ``Σ cost[i, n_i]`` (dynamic programming over devices used; ties to fewer devices for
    earlier jobs). ``cost`` is (m, capacity + 1)."""
    m = len(lo)
    inf = np.inf
    best = np.full(capacity + 1, inf)
    best[0] = 0.0
    choice = np.zeros((m, capacity + 1), dtype=np.int64)
    for i in range(m):
        new = best + cost[i, 0]  # n = 0
        pick = np.zeros(capacity + 1, dtype=np.int64)
        for n in range(max(int(lo[i]), 1), min(int(hi[i]), capacity) + 1):
            cand = np.full(capacity + 1, inf)
            cand[n:] = best[:-n] + cost[i, n]
            with np.errstate(invalid="ignore"):
                thr = np.where(np.isfinite(new), new - 1e-12 * np.abs(new), np.inf)
            better = cand < thr
            new = np.where(better, cand, new)
            pick = np.where(better, n, pick)
        best = new
        choice[i] = pick
    g = int(np.argmin(best))
    out = np.zeros(m, dtype=np.int64)
    for i in range(m - 1, -1, -1):
        out[i] = choice[i, g]
        g -= int(out[i])
    return out
