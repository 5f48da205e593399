"""Delay a communication-heavy gang rather than spread it across racks."""

from __future__ import annotations

import dataclasses
from typing import Annotated

import numpy as np

from clustersim.jobs import JobTable
from clustersim.perf import DEFAULT_GENERIC_GRAD_GB, MODEL_PARAMETERS, family
from scheduling.base import Decision, State
from scheduling.params import NON_NEGATIVE
from scheduling.wrapped import PowerWrapper, gang_of


def gradient_gb(jobs: JobTable) -> np.ndarray:
    """(n,) gradient bytes (GB) each job all-reduces per iteration: parameters × 4 B of its
    model family (:data:`clustersim.perf.MODEL_PARAMETERS`), the performance model's
    nominal gradient for jobs without a known model."""
    out = np.full(len(jobs), DEFAULT_GENERIC_GRAD_GB)
    for jt in np.unique(np.asarray(jobs.job_type, dtype=str)).tolist():
        fam = MODEL_PARAMETERS.get(family(jt))
        if fam is not None:
            out[np.asarray(jobs.job_type, dtype=str) == jt] = fam[0] * 4.0 / 1e9
    return out


class CommWait(PowerWrapper):
    """Run ``base``; hold back a communication-heavy gang that no single rack can take now,
    for at most ``max_wait_s`` after its submission, rather than let it start across racks.

    Delay scheduling (Zaharia et al., "Delay Scheduling", EuroSys'10: a job waits a bounded
    time for a local slot rather than take a remote one) applied to the network locality of
    gangs, as Tiresias (Gu et al., NSDI'19, §4.2) consolidates jobs whose models are large
    (skewed tensors) and relaxes placement for the others, and as network-aware GPU
    schedulers (CASSINI, Rajasekaran et al., NSDI'24) avoid placements that share congested
    links. A job is *heavy* when its gradient (parameters × 4 B of its model, or the nominal
    model's for an unknown one) is at least ``heavy_gb`` and it asks for more than one
    device. A queued heavy job the base wants to start is held back when no rack has as
    many free devices of a type it can run on as it asks for, unless it has waited
    ``max_wait_s`` since its submission or no rack could ever hold it; the wrapper asks to
    be called again when the first held job's wait runs out. Departures: the test is on free
    devices per rack, not on the placement the strategy would choose; held jobs keep their
    place in the base's order (a job behind them may start, as in backfilling).

    Parameters
    ----------
    base
        Name of the policy that decides which jobs run (built with its defaults).
    heavy_gb
        Gradient size (GB) from which a gang counts as communication-heavy.
    max_wait_s
        Longest a heavy job is held back, counted from its submission (s).
    """

    name = "comm-wait"
    citation = (
        "Zaharia et al., Delay Scheduling, EuroSys'10; Gu et al., Tiresias, NSDI'19; "
        "Rajasekaran et al., CASSINI, NSDI'24"
    )

    def __init__(
        self,
        base: str = "fifo",
        heavy_gb: Annotated[float, NON_NEGATIVE] = 0.1,
        max_wait_s: Annotated[float, NON_NEGATIVE] = 1800.0,
    ) -> None:
        super().__init__(base)
        self.heavy_gb = float(heavy_gb)
        self.max_wait_s = float(max_wait_s)
        self._jobs: JobTable | None = None
        self._grad = np.zeros(0)
        self.held = 0

    def stats(self) -> dict[str, float]:
        return {**super().stats(), "comm_wait_holds": float(self.held)}

    def reset(self, rng: np.random.Generator) -> None:
        super().reset(rng)
        self._jobs, self.held = None, 0

    def shape(self, state: State, d: Decision) -> Decision:
        run = np.asarray(d.run, dtype=np.int64)
        if not len(run) or state.node_free is None:
            return d
        if self._jobs is not state.jobs:
            self._jobs, self._grad = state.jobs, gradient_gb(state.jobs)
        gang = gang_of(state, d)
        waited = state.now - state.jobs.submit_time[run]
        cand = (
            ~state.running[run]
            & (gang > 1)
            & (self._grad[run] >= self.heavy_gb)
            & (waited < self.max_wait_s)
        )
        if not cand.any():
            return d
        cl = state.cluster
        n_racks = len(cl.rack_oversub)
        key = cl.node_type * n_racks + cl.node_rack
        size = cl.n_types * n_racks
        free = np.bincount(key, weights=state.node_free, minlength=size).reshape(-1, n_racks)
        total = np.bincount(key, weights=cl.node_devices, minlength=size).reshape(-1, n_racks)
        idx = np.flatnonzero(cand)
        j = run[idx]
        can = state.rate[j] > 0  # (c, n_types)
        if d.types is not None:
            t = np.asarray(d.types, dtype=np.int64)[idx]
            can = can & (np.arange(cl.n_types)[None, :] == t[:, None])
        g = gang[idx][:, None]
        fits_now = (can & (free.max(axis=1)[None, :] >= g)).any(axis=1)
        fits_ever = (can & (total.max(axis=1)[None, :] >= g)).any(axis=1)
        hold = idx[~fits_now & fits_ever]
        if not len(hold):
            return d
        self.held += len(hold)
        keep = np.ones(len(run), dtype=bool)
        keep[hold] = False
        until = float((state.jobs.submit_time[run[hold]] + self.max_wait_s).min())
        wake = until if d.wake_at is None else min(until, float(d.wake_at))
        return dataclasses.replace(
            d,
            run=run[keep],
            types=None if d.types is None else np.asarray(d.types)[keep],
            ndev=None if d.ndev is None else np.asarray(d.ndev)[keep],
            wake_at=wake,
        )
