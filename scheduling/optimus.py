"""Optimus (Peng et al., EuroSys'18): marginal-gain greedy allocation of devices."""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from typing import Annotated, ClassVar

import numpy as np

from clustersim.goodput import JobGoodput
from clustersim.kernels import optimus_allocate
from scheduling.base import CompatSpec, IntArray, State
from scheduling.elastic_base import ElasticPolicy, Table, planning_table, time_left
from scheduling.params import POSITIVE


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

    ``profiles=True`` (set by ``--compat pollux``) is the Optimus of Pollux's simulator
    (petuum/adaptdl ``simulator/optimus.py``, docs/pollux-fidelity.md): jobs of Pollux's
    profiled models run at their trace's batch size ``B``; each active job gets one device
    in submit order while devices remain, then the marginal gain is ``remaining iterations
    × (step time on n − step time on n + 1)``, with the step time of ``n`` devices
    consolidated on 4-device nodes from the profiles and the remaining iterations those
    from the job's current epoch to its last at ``B``; a job gets at most ``B`` / its
    model's smallest local batch devices (``ncf``: 1).
    """

    compat: ClassVar[Mapping[str, CompatSpec]] = {
        "pollux": CompatSpec(
            params={"profiles": True},
            placements=("freest",),
            elastic="1-64",
            engine={"goodput_trace_batch": True},
        )
    }

    def __init__(
        self, interval_s: Annotated[float, POSITIVE] = 600.0, profiles: bool = False
    ) -> None:
        super().__init__(interval_s)
        self.profiles = profiles
        self._model: JobGoodput | None = None

    def reset(self, rng: np.random.Generator) -> None:
        self._model = None

    def params(self) -> dict[str, object]:
        return {"interval_s": self.interval_s, "profiles": self.profiles}

    def table(self, state: State) -> Table:
        table = planning_table(state)
        if not self.profiles or not len(table.jobs):
            return table
        if self._model is None:
            self._model = JobGoodput(state.jobs, state.cluster, trace_batch=True)
        return profile_table(self._model, table)

    name = "optimus"
    citation = (
        "Peng et al., Optimus: An Efficient Dynamic Resource Scheduler for Deep Learning "
        "Clusters, EuroSys'18"
    )

    def allocate(self, table: Table, left: IntArray) -> IntArray:
        if self.profiles:  # the reference's: one device each in submit order
            order = np.arange(len(table.jobs), dtype=np.int64)
        else:
            first = time_left(table.remaining, table.rate[np.arange(len(table.jobs)), table.lo])
            order = np.argsort(first, kind="stable").astype(np.int64)
        return optimus_allocate(
            table.home, table.lo, table.hi, table.rate, table.remaining, order, left
        )


def profile_table(model: JobGoodput, table: Table) -> Table:
    """``table`` with Pollux's simulator's Optimus model for profiled jobs: rate = 1 / step
    time at the trace's batch (so ``remaining × (1/rate(n) − 1/rate(n+1))`` is the step
    time gained times the remaining iterations), remaining = iterations left, at most
    ``batch // min_local`` devices (``ncf``: 1)."""
    rate = table.rate.copy()
    remaining = table.remaining.copy()
    hi = table.hi.copy()
    for i, j in enumerate(table.jobs.tolist()):
        app = model.apps.get(j)
        batch = model.batch.get(j)
        if app is None or batch is None:
            continue
        cap = 1 if app.fixed_batch is not None else int(batch // app.min_local)
        hi[i] = max(table.lo[i], min(hi[i], cap))
        rate[i, :] = 0.0
        for n in range(1, hi[i] + 1):
            t = predicted_step_time(app, n, batch)
            rate[i, n] = 1.0 / t if t > 0 and math.isfinite(t) else 0.0
        epoch = model.epoch(j, float(table.remaining[i]))
        last = app.max_epochs - 1
        remaining[i] = (
            app.iterations(batch, last) - app.iterations(batch, epoch) if last > epoch else 1.0
        )
    return Table(
        jobs=table.jobs, home=table.home, lo=table.lo, hi=hi, rate=rate, remaining=remaining
    )


@functools.lru_cache(maxsize=65536)
def predicted_step_time(app: object, replicas: int, batch: float) -> float:
    """Seconds per iteration (with accumulation) of ``replicas`` devices consolidated on
    4-device nodes at total ``batch``, as the reference's ``OptimusPolicy.predict_step_time``
    computes it (on one replica at least one accumulation step)."""
    from clustersim.goodput import NODE_GPUS, Application, consolidated

    assert isinstance(app, Application)
    local = math.ceil(batch / replicas - 1e-8)
    accum = math.ceil(local / app.max_local - 1e-8) - 1
    if replicas == 1:
        accum = max(1, accum)
    atomic = math.ceil(local / (accum + 1) - 1e-8)
    atomic = min(atomic, int(app.max_bsz / (replicas * (accum + 1))))
    step, sync = app.step_time(consolidated(replicas, NODE_GPUS), float(atomic))
    return float(step) + (float(step) - float(sync)) * accum
