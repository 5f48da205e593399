"""AFS (Hwang et al., NSDI'21): elastic sharing that weighs short jobs against efficiency."""

from __future__ import annotations

import numpy as np

from scheduling.base import IntArray
from scheduling.elastic_base import ElasticPolicy, Table, next_step, time_left


class AFS(ElasticPolicy):
    """Hand out devices one unit at a time: to the shortest job, unless another job gains more.

    The rule implemented (our statement of AFS-L, the variant that knows job lengths), per
    decision, repeated until no unit can be given: a job's next *unit* is its ``min_gpus``
    devices while it holds none, else one device; ``W_j(n)`` is its rate on ``n``
    consolidated devices of its type (:mod:`clustersim.elastic`), ``l_j`` its remaining
    work, ``a_j`` the devices it was given so far.

    1. ``A`` = the job that would finish first with its next unit: least
       ``l / W(a + unit)`` (ties: the earlier job).
    2. For every other job ``B`` that can take its unit, compare the two jobs' summed
       completion times if the unit goes to ``A`` or to ``B``, assuming that ``A`` finishes
       first and that ``B`` then also takes ``A``'s devices (rate ``R = W_B(min(a + b +
       unit_B, max_B))``)::

           to A:  T1 (2 - W_B(b) / R)            T1 = l_A / W_A(a + unit_A)
           to B:  T2 (2 - W_B(b + unit_B) / R)   T2 = l_A / W_A(a)     (inf when a = 0)

       (plus ``l_B / R`` in both). ``B`` gets the unit instead of ``A`` when the first
       exceeds the second, and of several such ``B`` the one with the largest difference.
    3. Otherwise ``A`` gets it, if it makes ``A`` faster; a unit that makes nobody faster is
       not given.

    So a job that holds nothing and is the shortest always gets its gang (short jobs first,
    as SRTF), with linear scaling the shortest job takes every device it can use (SRTF is
    optimal there, the paper's first observation), and with sub-linear scaling a longer job
    takes a device when its relative gain ``1 - W_B(b) / W_B(b + 1)`` outweighs what the
    device still adds to the shortest job: the paper's trade of short-job priority against
    resource efficiency. The rule compares the gain of a device against the jobs' remaining
    lengths through ``T1`` and ``T2`` (the shortest job's remaining time), and is apathetic
    about the future in that it credits ``B`` with nothing more than ``A``'s devices once
    ``A`` ends (no later arrivals, no other job's devices).

    Where it departs from the paper: AFS-L's pairwise comparison is derived here from the
    two-job completion-time sums stated above rather than copied from the paper's
    pseudocode, and is applied greedily against the currently shortest job. Remaining work
    is known exactly (AFS-L's assumption; the paper's AFS-P, which estimates lengths, is not
    implemented). CoDDL's placement and its cheap re-adjustments are not modelled: each
    resize pays the full checkpoint/restore delay. Decisions are revisited at arrivals,
    completions and every ``interval_s``. Heterogeneous types are handled as in
    :class:`scheduling.optimus.Optimus` (each job on its home type).
    """

    name = "afs"
    citation = (
        "Hwang et al., Elastic Resource Sharing for Distributed Deep Learning, NSDI'21 (AFS-L)"
    )

    def allocate(self, table: Table, left: IntArray) -> IntArray:
        m = len(table.jobs)
        rows = np.arange(m)
        alloc = np.zeros(m, dtype=np.int64)
        rem = table.remaining
        top = table.rate.shape[1] - 1
        while True:
            step, can = next_step(table, alloc, left)
            if not can.any():
                break
            now = table.rate[rows, alloc]
            nxt = table.rate[rows, np.minimum(alloc + step, top)]
            can &= nxt > now
            if not can.any():
                break
            t_next = np.where(can, time_left(rem, nxt), np.inf)
            a = int(np.argmin(t_next))
            t1 = t_next[a]
            t2 = time_left(rem[a : a + 1], now[a : a + 1])[0]
            pick = a
            if np.isfinite(t2):
                r_b = table.rate[rows, np.minimum(alloc[a] + alloc + step, table.hi)]
                with np.errstate(divide="ignore", invalid="ignore"):
                    d = t1 * (2.0 - now / r_b) - t2 * (2.0 - nxt / r_b)
                d = np.where(can & (r_b > 0) & (rows != a), d, -np.inf)
                b = int(np.argmax(d))
                if d[b] > 0:
                    pick = b
            alloc[pick] += step[pick]
            left[table.home[pick]] -= step[pick]
        return alloc
