"""What the elastic policies (``afs``, ``optimus``) share: the planning table and the decision.

Both hand out devices one at a time to the active jobs, then run every job that got at least
its ``min_gpus`` on the count it got (``Decision.ndev``), on its *home* type: the type it runs
on now, else its fastest type among those with at least ``min_gpus`` devices. Each type's
devices are handed out separately, so a decision never asks for more devices of a type than
exist. Both re-decide at arrivals and completions
and every ``interval_s`` (``Decision.wake_at``). The model of elasticity, resizes and their
cost: :mod:`clustersim.elastic` and ``docs/elastic.md``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

import numpy as np

from scheduling.base import EMPTY, Decision, FloatArray, IntArray, Policy, State
from scheduling.params import POSITIVE


@dataclass
class Table:
    """The active jobs an elastic policy may allocate to, with their planning rates.

    Attributes
    ----------
    jobs : (m,) int64
        Global indices, in submit order.
    home : (m,) int64
        Home type of each job.
    lo, hi : (m,) int64
        Fewest and most devices the job may get (``min_gpus``; ``max_gpus`` capped by its
        home type's capacity).
    rate : (m, K + 1) float64
        ``rate[i, n]``: work units/s of job ``i`` on ``n`` devices of its home type,
        consolidated (:meth:`scheduling.base.State.rate_on`); 0 for ``n = 0`` and past ``hi``.
    remaining : (m,) float64
        Work left (oracle).
    """

    jobs: IntArray
    home: IntArray
    lo: IntArray
    hi: IntArray
    rate: FloatArray
    remaining: FloatArray


def planning_table(state: State) -> Table:
    """The :class:`Table` of the active jobs that can run on their home type."""
    a = state.active
    # a job not running goes home to its fastest type that can hold its smallest gang
    fits = state.capacity[None, :] >= state.jobs.min_gpus[a, None]
    best = np.argmax(np.where(fits, state.rate[a], -1.0), axis=1)
    home = np.where(state.running[a], state.alloc_type[a], best)
    ok = state.rate[a, home] > 0
    lo = state.jobs.min_gpus[a]
    hi = np.minimum(state.jobs.max_gpus[a], state.capacity[home])
    ok &= lo <= hi
    a, home, lo, hi = a[ok], home[ok], lo[ok], hi[ok]
    rate = state.rate_table(a, home, hi)
    return Table(
        jobs=a, home=home, lo=lo, hi=hi, rate=rate, remaining=state.remaining[a].astype(float)
    )


class ElasticPolicy(Policy):
    """Base of the greedy elastic policies: :meth:`allocate` is the rule, the rest is shared.

    Parameters
    ----------
    interval_s
        Re-decide at least this often (seconds), besides at arrivals and completions.
    """

    preemptive = True
    compiled_kernels = True  # the allocation loops (clustersim.kernels) are slow as Python

    def __init__(self, interval_s: Annotated[float, POSITIVE] = 600.0) -> None:
        self.interval_s = interval_s

    def allocate(self, table: Table, left: IntArray) -> IntArray:
        """Devices for each job of ``table`` (0 or within ``[lo, hi]``); ``left`` (n_types,)
        is what each type has to give, used up in place."""
        raise NotImplementedError

    def table(self, state: State) -> Table:
        """The planning table of this decision (:func:`planning_table`)."""
        return planning_table(state)

    def schedule(self, state: State) -> Decision:
        wake = state.now + self.interval_s
        table = self.table(state)
        if not len(table.jobs):
            return Decision(run=EMPTY, wake_at=wake)
        alloc = self.allocate(table, state.capacity.astype(np.int64).copy())
        got = alloc > 0
        # running jobs first (they keep their place), then starts; submit order within each
        keep = state.running[table.jobs] & got
        order = np.concatenate([np.flatnonzero(keep), np.flatnonzero(got & ~keep)])
        return Decision(
            run=table.jobs[order],
            ndev=alloc[order].astype(np.int64),
            types=table.home[order].astype(np.int64),
            wake_at=wake,
        )


def time_left(remaining: FloatArray, rate: FloatArray) -> FloatArray:
    """``remaining / rate``, ``inf`` where the rate is 0."""
    with np.errstate(divide="ignore"):
        return np.where(rate > 0, remaining / np.where(rate > 0, rate, 1.0), np.inf)
