"""Optimus (Peng et al., EuroSys'18): marginal-gain greedy allocation of devices."""

from __future__ import annotations

import numpy as np

from clustersim.kernels import optimus_allocate
from scheduling.base import IntArray
from scheduling.elastic_base import ElasticPolicy, Table, time_left


class Optimus(ElasticPolicy):
    """Give each next device to the job whose remaining time it shortens the most.

    The rule, per decision:

    1. every active job, shortest remaining time on its ``min_gpus`` first, gets its
       ``min_gpus`` devices while they are free (a job that does not fit waits);
    2. then, one device at a time, the job with the largest reduction of its remaining time
       ``remaining × (1 / rate(n) − 1 / rate(n + 1))`` gets one more device (up to its
       ``max_gpus``), until no device is left or no job would get faster; ties go to the
       earlier job. The gains are kept in a heap (only the job that got a device changes
       its gain), compiled: :func:`clustersim.kernels.optimus_allocate`.

    ``rate(n)`` is the performance model's rate on ``n`` consolidated devices of the job's
    type (ring all-reduce over the type's links; :mod:`clustersim.elastic`), so the greedy
    sees diminishing and, past a node, sharply lower returns. Decisions are revisited at
    arrivals, completions and every ``interval_s`` (600 s: the paper's scheduling interval
    of 10 minutes); each change of a running job's device count is a resize that pays the
    checkpoint/restore delay.

    Where it departs from the paper: Optimus fits each job's remaining epochs online from its
    training-loss curve (an online convergence fit) and its speed from a fitted
    parameter-server performance model, and allocates parameter servers and workers; here the
    remaining work is known exactly (an oracle, as in SRTF) and the speed is the performance
    model's data-parallel all-reduce rate, so one kind of resource, devices, is allocated.
    Optimus's first step gives each job one worker and one server; here each job's
    ``min_gpus`` (in shortest-remaining-time order when they do not all fit). Placement is
    the engine's placement strategy, not Optimus's server-balancing placement. On a cluster
    of several accelerator types each job is planned on its home type (current type, else
    fastest), which the paper, on one type, does not need. Rigid jobs (``min_gpus =
    max_gpus``) are only ever started or suspended whole.
    """

    name = "optimus"
    citation = (
        "Peng et al., Optimus: An Efficient Dynamic Resource Scheduler for Deep Learning "
        "Clusters, EuroSys'18"
    )

    def allocate(self, table: Table, left: IntArray) -> IntArray:
        first = time_left(table.remaining, table.rate[np.arange(len(table.jobs)), table.lo])
        order = np.argsort(first, kind="stable").astype(np.int64)
        return optimus_allocate(
            table.home, table.lo, table.hi, table.rate, table.remaining, order, left
        )
