"""AFS (Hwang et al., NSDI'21): elastic sharing that weighs short jobs against efficiency."""

from __future__ import annotations

from clustersim.kernels import afs_allocate
from scheduling.base import IntArray
from scheduling.elastic_base import ElasticPolicy, Table


class AFS(ElasticPolicy):
    """Hand out devices one unit at a time; each unit to the winner of a pairwise tournament
    in which the shorter job keeps priority only when a unit helps it relatively more.

    The rule (AFS-L, the variant that knows job lengths), per decision, repeated until no
    unit can be given. A job's next *unit* is its ``min_gpus`` devices while it holds none,
    else one device; ``W_j(n)`` is its rate on ``n`` consolidated devices of its type
    (:mod:`clustersim.elastic`), ``l_j`` its remaining work, ``a_j`` the devices it was given
    so far, ``u_j`` its next unit.

    1. The candidates are the jobs whose next unit fits (within ``max_gpus``, free on their
       type) and makes them faster, ``W(a + u) > W(a)``.
    2. A tournament over the candidates in submit order: the first is the leader, and each
       next candidate plays the leader; the winner leads on.
    3. In a match, ``S`` is the job with the shorter remaining time ``l / W(a)`` (``inf``
       for a job holding nothing; ties: the earlier job) and ``O`` the other. If ``S``
       holds nothing (so neither does), the one that would finish first on its first unit,
       ``l / W(u)``, wins (ties: the earlier job).
    4. Otherwise ``S`` wins if its relative gain exceeds ``O``'s::

           (W_S(a_S + u_S) - W_S(a_S)) / W_S(a_S)  >  (W_O(a_O + u_O) - W_O(a_O)) / W_O(a_O + u_O)

       else ``O`` wins (ties go to ``O``). A job holding nothing has the gain 1 as ``O``,
       so it takes its first unit from any job that the unit would not more than double.
    5. The tournament's winner gets its unit.

    Rule 4 is what the two jobs' summed completion times say when the unit goes to ``S``
    (it finishes in ``T1 = l_S / W_S(a + u)``) or to ``O`` (``S`` finishes in ``T2 = l_S /
    W_S(a)``), assuming ``S`` finishes first and that ``O`` then runs on ``a_O + u_O``
    devices (the contested unit comes back to it, nothing more: the paper's apathy about
    the future): ``O`` gains ``W_O(a_O + u_O) T2 − W_O(a_O) T1 − W_O(a_O + u_O)(T2 − T1)``
    work, which outweighs ``S``'s loss ``T2 − T1`` exactly when rule 4 picks ``O``. So
    lengths only decide who is ``S``; the gains decide the rest. With linear scaling the
    devices are split roughly evenly (``S`` on ``a`` keeps a unit against ``O`` on ``b``
    only while ``a <= b``), not given to the shortest job.

    Where it departs from AFS-L as published and the public implementation we compared
    with (``docs/elastic.md``, "AFS-L, rule by rule"): units of ``min_gpus`` for jobs that
    hold nothing (AFS-L hands out single GPUs; our jobs have a smallest gang); a unit that
    makes nobody faster is kept idle instead of handed to a job up to its demand (our
    performance model slows a job that leaves a node); ties of rule 3 go to the earlier job.
    Remaining work is exact (AFS-L's assumption; AFS-P is not implemented). CoDDL's placement
    and cheap re-adjustments are not modelled: each resize pays the checkpoint/restore
    delay. Decisions are revisited at arrivals, completions and every ``interval_s``.
    Heterogeneous types are handled as in :class:`scheduling.optimus.Optimus` (each job on its
    home type). The loop is compiled: :func:`clustersim.kernels.afs_allocate`; a unit costs
    O(log) while jobs that hold nothing are waiting and no holder scales super-linearly,
    else a tournament over the candidates.
    """

    name = "afs"
    citation = (
        "Hwang et al., Elastic Resource Sharing for Distributed Deep Learning, NSDI'21 (AFS-L)"
    )

    def allocate(self, table: Table, left: IntArray) -> IntArray:
        return afs_allocate(table.home, table.lo, table.hi, table.rate, table.remaining, left)
