"""Singularity (Shukla et al., 2022): transparent preemption and world-size-preserving resizing."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import numpy as np

from clustersim.elastic import SpliceConfig, splice_bounds, splice_counts
from scheduling.base import EMPTY, Decision, IntArray, Policy, State
from scheduling.params import NON_NEGATIVE, POSITIVE, Range

if TYPE_CHECKING:
    from clustersim.jobs import JobTable


class Singularity(Policy):
    """Every job is preemptible and elastic: it keeps its world size ``w`` (``num_gpus``) and
    runs on ``w / k`` devices, ``k`` of its ranks time-sliced on each (replica splicing);
    lower SLA tiers shrink, then stop, for higher ones; idle devices grow jobs back to ``w``.

    The rules, per decision (at arrivals, completions and every ``interval_s``):

    1. **Counts.** A job of world size ``w`` may hold ``0`` devices (transparently
       preempted) or a divisor ``d`` of ``w`` with ``w / d <= max_splice`` and ``d`` at least
       its ``min_gpus`` (rigid jobs: 1; a trace's or rule's bound is kept), never more than
       ``w`` (the world size is preserved; a larger ``max_gpus`` is not used). Its smallest
       count is ``lo``.
    2. **Tiers.** Jobs are taken tier by tier, highest first: the job table's ``priority``
       (larger = higher; e.g. 2 premium, 1 standard, 0 basic: the SLA tiers as we read the
       paper, docs/singularity.md) when ``tiers`` is on, else one tier. Within a tier,
       submit order. A tier gets only the devices the higher tiers left: so a lower-tier
       job is shrunk first and preempted (0 devices) only when even its ``lo`` no longer
       fits.
    3. **Admit small** (within a tier): each job in order gets its ``lo`` devices on its
       home type if they are free, else waits (later, smaller jobs may still start).
    4. **Grow back** (work-conserving, within a tier): each admitted job in order grows to the
       largest count it may hold within its current count plus the free devices of its
       type, so the earliest jobs return to ``w`` first; devices stay idle only when no
       allowed count of any job fits them.

    A job's *home* type is the type it runs on, else its fastest type with at least ``lo``
    devices. The engine rates a job on ``d < w`` devices at ``d / w`` of its ``w``-device rate
    on that placement times ``1 − splice_overhead``, and lets jobs shrink (``min_gpus``
    becomes each job's ``lo``: :func:`clustersim.elastic.splice`, through :attr:`splicing`).
    Each change of a running job's count is a resize and each stop a preemption; both pay
    the checkpoint/restore delay (``restore_s``, else the performance model's: 10 s plus the
    checkpoint at 0.05 GB/s, 30 s for jobs of unknown model).

    There is no public reference simulator of Singularity (nor public scheduler code): the
    rules above are our reading of the paper; where we simplify (docs/singularity.md): the
    SLA tiers are strict priorities from the job table, not per-VC guaranteed fractions;
    within a tier, jobs are admitted small before any grows (shrink to admit) in submit
    order; ``max_splice`` (our choice, default 4) stands in for the device-memory limit of
    splicing; spliced ranks' all-reduce is rated as ``w`` devices' over the placement's
    link; migration for defragmentation, cross-region placement and the paper's
    checkpoint-size numbers are not modelled.

    Parameters
    ----------
    splice_overhead
        Throughput a time-sliced job loses, a fraction in [0, 1) (default 0.03: summaries
        of the paper give a steady-state overhead below about 3 %).
    max_splice
        Most ranks one device time-slices, k (default 4; 1: no splicing, only preemption).
    tiers
        Take the job table's priority as the SLA tier (larger first); off: one tier.
    interval_s
        Re-decide at least this often, s, besides at arrivals and completions.
    restore_s
        Delay of every resume and resize, s; empty: the performance model's
        checkpoint/restore delay.
    """

    name = "singularity"
    citation = (
        "Shukla et al., Singularity: Planet-Scale, Preemptive and Elastic Scheduling of AI "
        "Workloads, arXiv:2202.07848, 2022"
    )
    preemptive = True

    def __init__(
        self,
        splice_overhead: Annotated[float, NON_NEGATIVE] = 0.03,
        max_splice: Annotated[int, Range(1.0)] = 4,
        tiers: bool = True,
        interval_s: Annotated[float, POSITIVE] = 600.0,
        restore_s: Annotated[float, NON_NEGATIVE] | None = None,
    ) -> None:
        if not 0.0 <= splice_overhead < 1.0:
            raise ValueError("splice_overhead: must be at least 0 and below 1")
        self.splice_overhead = splice_overhead
        self.max_splice = max_splice
        self.tiers = tiers
        self.interval_s = interval_s
        self.restore_s = restore_s
        self._counts: dict[tuple[int, int], IntArray] = {}
        self._lo_of: JobTable | None = None
        self._lo_all: IntArray = EMPTY

    @property
    def resume_s(self) -> float | None:  # type: ignore[override]
        """Delay of every resume and resize: ``restore_s`` (``None``: the model's)."""
        return self.restore_s

    @property
    def splicing(self) -> SpliceConfig:  # type: ignore[override]
        """What the engine needs for splicing (:func:`clustersim.elastic.splice`)."""
        return SpliceConfig(overhead=self.splice_overhead, max_splice=self.max_splice)

    def reset(self, rng: np.random.Generator) -> None:
        self._counts = {}
        self._lo_of, self._lo_all = None, EMPTY

    def counts(self, world: int, lo: int) -> IntArray:
        """Allowed positive counts of a job (rule 1) from ``lo`` up, ascending; memoised."""
        key = (world, lo)
        c = self._counts.get(key)
        if c is None:
            c = splice_counts(world, lo, self.max_splice)
            self._counts[key] = c
        return c

    def schedule(self, state: State) -> Decision:
        wake = state.now + self.interval_s
        a = state.active
        if not len(a):
            return Decision(run=EMPTY, wake_at=wake)
        jobs = state.jobs
        # each job's smallest count (rule 1), once per job table: the engine's table holds
        # them already as min_gpus (clustersim.elastic.splice); a view without it gets the same
        if self._lo_of is not jobs:
            self._lo_of, self._lo_all = jobs, splice_bounds(jobs, self.max_splice)
        lo = self._lo_all[a]
        fits = state.capacity[None, :] >= lo[:, None]
        best = np.argmax(np.where(fits, state.rate[a], -1.0), axis=1)
        home = np.where(state.running[a], state.alloc_type[a], best)
        ok = (state.rate[a, home] > 0) & (lo <= state.capacity[home])
        a, lo, home = a[ok], lo[ok], home[ok]
        if not len(a):
            return Decision(run=EMPTY, wake_at=wake)
        w = jobs.num_gpus[a].astype(np.int64)
        tier = jobs.priority[a] if self.tiers else np.zeros(len(a), dtype=np.int64)
        order = np.lexsort((a, -tier))  # tier high first, then submit order
        a, lo, home, w, tier = (x[order] for x in (a, lo, home, w, tier))
        left = state.capacity.astype(np.int64).copy()
        got = np.zeros(len(a), dtype=np.int64)
        cuts = np.flatnonzero(np.diff(tier)) + 1
        for s, e in zip([0, *cuts.tolist()], [*cuts.tolist(), len(a)], strict=True):
            for t in np.unique(home[s:e]).tolist():
                idx = s + np.flatnonzero(home[s:e] == t)
                take, left[t] = admit(lo[idx], int(left[t]))
                got[idx[take]] = lo[idx[take]]
                grow = idx[take & (lo[idx] < w[idx])]
                if len(grow) and left[t] > 0:
                    left[t] = self.grow(got, grow, w, lo, int(left[t]))
        run = got > 0
        keep = run & state.running[a]
        sel = np.concatenate([np.flatnonzero(keep), np.flatnonzero(run & ~keep)])
        return Decision(run=a[sel], ndev=got[sel], types=home[sel].astype(np.int64), wake_at=wake)

    def grow(self, got: IntArray, idx: IntArray, w: IntArray, lo: IntArray, left: int) -> int:
        """Rule 4: jobs ``idx`` (positions, in order) grow in ``got`` in place to the largest
        allowed count within ``got + left``; returns the devices left."""
        for i in idx.tolist():
            if left <= 0:
                break
            c = self.counts(int(w[i]), int(lo[i]))
            g = int(got[i])
            k = int(np.searchsorted(c, g + left, side="right")) - 1
            new = int(c[k])
            if new > g:
                left -= new - g
                got[i] = new
        return left


def admit(lo: IntArray, left: int) -> tuple[np.ndarray, int]:
    """Rule 3 on one type: which of the jobs needing ``lo`` devices each (in order) start,
    each while its ``lo`` fits in what is left (a job that does not fit waits, later ones may
    start); returns the mask and the devices left.

    Vectorised: take the longest prefix whose sum fits, skip the job after it, keep only the
    jobs that fit what is left, repeat. A skipped job's ``lo`` exceeds every later ``left``,
    so each round drops one value of ``lo`` for good: at most as many rounds as distinct
    values.
    """
    take = np.zeros(len(lo), dtype=bool)
    idx = np.arange(len(lo))
    while len(idx) and left > 0:
        idx = idx[lo[idx] <= left]
        if not len(idx):
            break
        cs = np.cumsum(lo[idx])
        k = int(np.searchsorted(cs, left, side="right"))
        take[idx[:k]] = True
        if k:
            left -= int(cs[k - 1])
        idx = idx[k + 1 :]
    return take, left
