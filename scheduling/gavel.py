"""Gavel's round-based mechanism and its two heterogeneity-agnostic baselines.

Source: Narayanan et al., "Heterogeneity-Aware Cluster Scheduling Policies for Deep Learning
Workloads" (Gavel), OSDI'20, and the simulator of its public code (``scheduler.py``,
``policies/fifo.py``, ``policies/max_min_fairness.py``). What that simulator does, rule by
rule, is written down in ``docs/gavel-fidelity.md``; these classes reproduce it inside our
engine so that results can be compared with Gavel's on identical inputs.

The mechanism (:class:`GavelRounds`): the engine calls the policy at every round end (rounds
of ``round_s``, 360 s by default; an idle cluster starts a round at the next arrival and a
round whose jobs have all finished ends there — ``rounds_only``). The policy keeps an
allocation ``X`` (fraction of time each job should spend on each accelerator type), recomputed
only when jobs arrived or left and at least ``reset_interval_s`` after the previous
recomputation. Each round, every (job, type) pair gets the priority ``X / (time the job ran on
the type since the recomputation / time all jobs ran there)`` (with Gavel's half-round credit),
types are visited in an order shuffled every round, jobs inside a type by decreasing
(priority, deficit, allocation), and jobs are placed greedily (smaller gangs backfill).
A pass (:func:`clustersim.kernels.gavel_pass`) costs time in proportion to the active jobs
and the jobs run since the last recomputation, not to the trace: the time all jobs ran on a
type is summed over the latter only, in job order, which gives numpy's sum over every job.

Departures from Gavel's simulator (kept on purpose, see the fidelity note):

* progress is continuous: Gavel runs ``int(rate × round)`` whole steps per round, so its rounds
  are shorter than ``round_s`` by less than one step;
* a multi-GPU job whose last round has fewer steps than GPUs simply finishes (Gavel counts it
  as a failed micro-task and drops the job after five);
* the time a job is credited for the first round after an idle gap is the time it ran (Gavel
  credits from the end of the last busy round);
* ``gavel-las`` uses the closed form of the max-min-fairness LP (below) instead of an LP
  solver's interior point.
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Mapping
from typing import Annotated, ClassVar

import numpy as np
import numpy.typing as npt

from clustersim.kernels import gavel_pass
from clustersim.perf import GAVEL_WORKERS, gavel_worker
from scheduling.base import CompatSpec, Decision, Policy, State
from scheduling.params import NON_NEGATIVE, POSITIVE

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

#: Gavel's own type list, in its order before shuffling (``scheduler.py``).
GAVEL_ORDER = ("v100", "p100", "k80")


class GavelRounds(Policy):
    """Gavel's round mechanism; subclasses provide :meth:`allocation`.

    Parameters
    ----------
    round_s
        Round length, s (Gavel: ``time_per_iteration``; 360 in the paper).
    reset_interval_s
        Minimum time between allocation recomputations, s (Gavel:
        ``minimum_time_between_allocation_resets``, 1920).
    seed
        Gavel's ``--seed``: the type order is shuffled by ``random.Random(seed + 5)`` every
        round, as in Gavel, so that runs can be compared draw for draw.
        A hyper-parameter, not the run's seed: the run's seed changes nothing here
        (``uses_seed`` is false), so an experiment runs a Gavel policy once whatever seeds it
        lists; to see other draws, give other values of this parameter.
    """

    citation = "Narayanan et al., Gavel, OSDI'20"
    preemptive = True
    rounds_only = True
    skip_unprioritised: ClassVar[bool] = False
    #: Gavel shuffles the type order every round only for policies whose name has neither
    #: "Perf" nor "Packing" (``scheduler.py::_schedule_jobs_on_workers``); the ``*_perf``
    #: policies visit v100, p100, k80 in that order every round.
    shuffle_types: ClassVar[bool] = True
    compat: ClassVar[Mapping[str, CompatSpec]] = {"gavel": CompatSpec()}

    def __init__(
        self,
        round_s: Annotated[float, POSITIVE] = 360.0,
        reset_interval_s: Annotated[float, NON_NEGATIVE] = 1920.0,
        seed: int = 0,
    ) -> None:
        self.round_s = round_s
        self.reset_interval_s = reset_interval_s
        self.seed = seed

    def reset(self, rng: np.random.Generator) -> None:
        self._shuffler = random.Random(self.seed + 5)
        self._last_reset = 0.0
        self._need = True
        self._prev_active: IntArray = np.zeros(0, dtype=np.int64)
        self._x: FloatArray | None = None  # (n, n_types) allocation of the last reset
        self._in_alloc: npt.NDArray[np.bool_] | None = None
        self._alloc_rows: IntArray = np.zeros(0, dtype=np.int64)  # jobs of the allocation
        self._deficit: FloatArray | None = None
        self._tt0: FloatArray | None = None  # credited time at the last reset
        self._base = 0.0  # half-round credit × jobs active at the last reset
        self._memo: tuple[tuple[float, int, int], Decision] | None = None
        self._order: list[tuple[str, int]] | None = None
        self._adj: FloatArray | None = None  # extra time Gavel credits after idle gaps
        # jobs run since the last reset (the rows where credited time and _tt0 may differ),
        # each once: the first _n_touched entries of _touched, flagged in _mark
        self._touched: IntArray = np.zeros(0, dtype=np.int64)
        self._n_touched = 0
        self._mark: npt.NDArray[np.int8] = np.zeros(0, dtype=np.int8)
        self._out: tuple[IntArray, IntArray, IntArray] | None = None  # gavel_pass's outputs
        self._round_start = 0.0
        self._round_end: float | None = None
        self._last_dispatch: tuple[float, IntArray, IntArray] | None = None  # when, jobs, types
        self._types: IntArray | None = None  # type visiting order when it is not shuffled
        self._failing: list[int] = []  # dispatched last pass with fewer steps than GPUs
        self._failures: dict[int, int] = {}
        self._in_steps: npt.NDArray[np.bool_] | None = None

    # ------------------------------------------------------------------ hooks
    def allocation(self, state: State, jobs: IntArray) -> FloatArray:
        """Time share of each of ``jobs`` on each type, (k, n_types)."""
        raise NotImplementedError

    # ------------------------------------------------------------------ mechanism
    def _type_order(self, state: State) -> list[tuple[str, int]]:
        """Types in the order a pass visits them (before any shuffle): Gavel's V100, P100,
        K80 on a cluster of Gavel's types; on any other cluster every type by decreasing peak
        FP16 rate (the catalog's ``fp16_tflops``; ties in catalog order), so that a job whose
        allocation leaves it a spare device takes the fastest one first, as on Gavel's."""
        if self._order is None:
            names = []
            for t, acc in enumerate(state.cluster.types):
                w = gavel_worker(acc)
                names.append((GAVEL_WORKERS[w] if w >= 0 else acc.name.lower(), t))
            if all(n in GAVEL_ORDER for n, _ in names):  # Gavel's own types: its order
                self._order = [(n, t) for g in GAVEL_ORDER for n, t in names if n == g]
            else:  # other types: fastest first by peak rate (Gavel's order is that too)
                peak = [float(acc.fp16_tflops or 0.0) for acc in state.cluster.types]
                self._order = sorted(names, key=lambda nt: -peak[nt[1]])
        return list(self._order)

    def _setup(self, state: State) -> None:
        """Allocate the per-job memory on the first pass (the engine's job count is known)."""
        n, nt = len(state.jobs), state.cluster.n_types
        self._x = np.zeros((n, nt))
        self._in_alloc = np.zeros(n, dtype=bool)
        self._deficit = np.zeros((n, nt))
        self._tt0 = np.zeros((n, nt))
        self._adj = np.zeros((n, nt))
        self._touched = np.zeros(n, dtype=np.int64)
        self._mark = np.zeros(n, dtype=np.int8)
        self._out = (
            np.zeros(n, dtype=np.int64),
            np.zeros(n, dtype=np.int64),
            np.zeros(n, dtype=np.int64),
        )

    def _credited(self, state: State, jobs: IntArray) -> FloatArray:
        """Time Gavel has credited ``jobs`` on each type: time held plus idle-gap credits,
        (k, n_types)."""
        assert self._adj is not None
        return state.type_time[jobs] + self._adj[jobs]

    def _settle(self, state: State) -> list[int]:
        """End the previous round as Gavel does; return jobs to drop after 5 failures.

        Gavel credits each job of a round with ``finish − round start``, where the round start
        is the end of the last *busy* round, so after an idle gap the first round is credited
        from before the gap; a ``k``-GPU job whose round has fewer than ``k`` steps fails, and
        is dropped after five failures in a row.
        """
        drop: list[int] = []
        if self._last_dispatch is None:
            return drop
        when, jobs, kinds = self._last_dispatch
        self._last_dispatch = None
        if self._round_end is not None:
            self._round_start = self._round_end
        self._round_end = state.now
        gap = when - self._round_start
        if gap > 0 and len(jobs):
            assert self._adj is not None
            self._adj[jobs, kinds] += gap  # each job once; each was touched when dispatched
        for j in self._failing:
            self._failures[j] = self._failures.get(j, 0) + 1
            self._need = True
            if self._failures[j] >= 5:
                drop.append(j)
        self._failing = []
        return drop

    def _recompute(self, state: State, active: IntArray) -> None:
        """Gavel's allocation reset: deficits of ``active`` updated, time counted from now."""
        assert self._x is not None and self._in_alloc is not None
        assert self._deficit is not None and self._tt0 is not None
        elapsed = state.now - self._last_reset
        received = self._credited(state, active) - self._tt0[active]
        should = self._x[active] * elapsed  # zero for jobs outside the old allocation
        self._deficit[active] += should - received
        # every other row of _tt0 already equals the credited time (those jobs did not run)
        rows = self._touched[: self._n_touched]
        self._tt0[rows] = self._credited(state, rows)
        self._mark[rows] = 0
        self._n_touched = 0
        self._base = float(self.round_s or 0.0) / 2.0 * len(active)
        self._last_reset = state.now
        self._x[self._alloc_rows] = 0.0
        self._in_alloc[self._alloc_rows] = False
        self._alloc_rows = active.copy()
        if len(active):
            self._x[active] = self.allocation(state, active)
            self._in_alloc[active] = True
        self._need = False

    def _pass(self, state: State, active: IntArray) -> Decision:
        """One scheduling pass of Gavel's loop: maybe recompute, then place jobs
        (:func:`clustersim.kernels.gavel_pass`)."""
        if self._x is None:
            self._setup(state)
        if self._need and (
            state.now - self._last_reset >= self.reset_interval_s or self._last_reset == 0
        ):
            self._recompute(state, active)
        assert self._x is not None and self._in_alloc is not None and self._out is not None
        assert self._deficit is not None and self._tt0 is not None and self._adj is not None
        if self._in_steps is None:  # work counted in steps: measured job types
            self._in_steps = state.jobs.job_type != ""
        if self.shuffle_types:
            types = [t for _, t in self._type_order(state)]
            self._shuffler.shuffle(types)  # draws depend only on the length: Gavel's shuffle
            order = np.array(types, dtype=np.int64)
        else:
            if self._types is None:
                self._types = np.array([t for _, t in self._type_order(state)], dtype=np.int64)
            order = self._types
        out_job, out_type, out_fail = self._out
        n_run, n_fail, self._n_touched = gavel_pass(
            active,
            order,
            state.type_time,
            self._adj,
            self._tt0,
            self._x,
            self._in_alloc,
            self._deficit,
            state.rate,
            state.jobs.num_gpus,
            state.capacity,
            state.remaining,
            self._in_steps,
            float(self.round_s or 0.0) / 2.0,
            self._base,
            self.skip_unprioritised,
            self._touched,
            self._n_touched,
            self._mark,
            out_job,
            out_type,
            out_fail,
        )
        # a gang whose last round has fewer steps than devices fails in Gavel: it holds its
        # slot this round but makes no progress
        self._failing = out_fail[:n_fail].tolist()
        run, kinds = out_job[:n_run].copy(), out_type[:n_run].copy()
        if n_run or n_fail:
            self._last_dispatch = (state.now, run, kinds)
        return Decision(run=run, types=kinds)

    def schedule(self, state: State) -> Decision:
        active = state.active
        key = (state.now, state.round_index, len(active))
        if self._memo is not None and self._memo[0] == key:
            return self._memo[1]  # same snapshot, same decision (no second draw)
        if not np.array_equal(active, self._prev_active):
            self._need = True  # jobs arrived or left since the last pass
            self._prev_active = active.copy()
        dropped = self._settle(state)
        if dropped:
            active = active[~np.isin(active, dropped)]
        d = self._pass(state, active)
        # Passes Gavel makes at the same instant when nothing runs: after a round of failing
        # gangs only, and — with nothing left to arrive — to force a recomputation.
        extra = 0
        while not len(d.run) and state.n_running == 0 and extra < 8:
            if self._failing:
                more = self._settle(state)
                dropped += more
                if more:
                    active = active[~np.isin(active, more)]
            elif state.pending == 0:
                self._last_reset = 0.0
            else:
                break
            d = self._pass(state, active)
            extra += 1
        if dropped:
            d.drop = np.array(sorted(dropped), dtype=np.int64)
        self._memo = (key, d)
        return d


class GavelFIFO(GavelRounds):
    """Gavel's heterogeneity-agnostic FIFO baseline (``fifo``), reproduced with its quirks.

    Source: Gavel (Narayanan et al., OSDI'20), ``policies/fifo.py`` in ``base`` mode. The
    policy keeps a map job → accelerator type across recomputations; a finished job's slot
    goes to the head of the queue if it fits; other queued jobs are mapped in arrival order.
    Gavel draws a random type for each (``random.Random(seed)``) but, through a loop variable
    that leaks, assigns the alphabetically last type that still had room when the list was
    built, and removes the *drawn* type from the list when the assigned one fills up. This is
    reproduced on purpose (``docs/gavel-fidelity.md`` §5.3): it is what Gavel's published
    FIFO numbers come from. Jobs without an allocation entry do not run.
    """

    name = "gavel-fifo"
    skip_unprioritised = True

    def reset(self, rng: np.random.Generator) -> None:
        super().reset(rng)
        self._rng = random.Random(self.seed)
        self._map: dict[int, int] = {}

    def allocation(self, state: State, jobs: IntArray) -> FloatArray:
        order = self._type_order(state)
        name_of = {t: name for name, t in order}
        available = {t: int(c) for t, c in enumerate(state.capacity)}
        num_gpus = state.jobs.num_gpus
        rate = state.rate
        live = set(jobs.tolist())
        queue = deque(j for j in sorted(live) if j not in self._map)
        for job in sorted(self._map):
            t = self._map[job]
            if job not in live:  # finished: the head of the queue may take its slot
                if queue:
                    head = queue[0]
                    if num_gpus[head] <= available[t] and rate[head, t] > 0:
                        queue.popleft()
                        self._map[head] = t
                        available[t] -= int(num_gpus[head])
                del self._map[job]
            else:
                available[t] -= int(num_gpus[job])
        types = sorted((t for t in available if available[t] > 0), key=lambda t: name_of[t])
        while queue and types:
            job = queue.popleft()
            g = int(num_gpus[job])
            fitting = [i for i, t in enumerate(types) if available[t] >= g]
            if not fitting:
                break
            drawn = self._rng.randrange(len(fitting))
            t = types[-1]  # Gavel's leaked loop variable, not the drawn type
            if rate[job, t] > 0:
                self._map[job] = t
                available[t] -= g
                if available[t] == 0:
                    types.pop(fitting[drawn])
        x = np.zeros((len(jobs), state.cluster.n_types))
        if self._map:  # every mapped job is live: find its row among `jobs`
            mapped = np.fromiter(self._map, dtype=np.int64, count=len(self._map))
            typ = np.fromiter(self._map.values(), dtype=np.int64, count=len(self._map))
            sorter = np.argsort(jobs, kind="stable")
            rows = sorter[np.searchsorted(jobs, mapped, sorter=sorter)]
            x[rows, typ] = 1.0
        return x


class GavelLAS(GavelRounds):
    """Gavel's heterogeneity-agnostic LAS baseline (``max_min_fairness``).

    Source: Gavel (Narayanan et al., OSDI'20, §4.1), ``policies/max_min_fairness.py``: the
    max-min-fairness LP over time shares with every throughput set to 1, i.e. maximise
    ``min_i sf_i X_i / w_i`` subject to ``Σ_i sf_i x_it <= N_t``, ``Σ_t x_it <= 1``. Its optimum
    is ``t* = min(min_i sf_i / w_i, N / Σ_i w_i)``; we take ``X_i = t* w_i / sf_i`` (unique when
    the cluster is over-subscribed: every job gets the same number of devices on average) and
    split it over types in proportion to their device counts. Gavel's LP solver returns an
    interior point of the optimal face instead, which differs from this only when the cluster
    is not over-subscribed (≤ 1.7 % on average JCT on the traces in the fidelity note).
    Weights ``w`` are the jobs' priorities (Gavel's priority weights; values below 1 count
    as 1).
    """

    name = "gavel-las"

    def allocation(self, state: State, jobs: IntArray) -> FloatArray:
        sf = state.jobs.num_gpus[jobs].astype(np.float64)
        w = np.maximum(state.jobs.priority[jobs].astype(np.float64), 1.0)
        cap = state.capacity.astype(np.float64)
        total = float(cap.sum())
        t_star = min(float((sf / w).min()), total / float(w.sum()))
        x_job = np.minimum(t_star * w / sf, 1.0)
        return x_job[:, None] * (cap / total)[None, :]
