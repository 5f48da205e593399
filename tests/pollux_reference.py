"""The rules of Pollux's simulator that ``--compat pollux`` reproduces, restated plainly.

Pollux's simulator is petuum/adaptdl, branch ``osdi21-artifact``, directory ``simulator/``
(Apache-2.0). This module is our own slow, obvious restatement of the rules listed in
``docs/pollux-fidelity.md`` section 7 (no code of the simulator is copied); the tests
compare clustersim's fast implementation with it. Each function names the place of the
simulator whose rule it states.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

#: Seconds the simulator advances per step (``--interval``), and its re-scale delay.
STEP_S = 60.0
DELAY_S = 30.0


def first_decision(submit: float, step: float = STEP_S) -> float:
    """The step at which a job submitted at ``submit`` is first seen (``simulator.py``,
    ``Cluster.step``): the clock moves one step, then the policy is asked about the jobs
    submitted by then; the first step is at ``step``, not 0."""
    return max(1, math.ceil(submit / step)) * step


def fixed_batch_config(
    replicas: int, batch: float, init_bsz: float, max_bsz: float, max_local: int
) -> tuple[int, int]:
    """``(atomic, accum)`` of a job with a target total batch (``Job.update_local_bsz``):
    local batch ``B / R`` rounded up, gradient accumulation when that exceeds the largest
    local batch, at least one accumulation step for one replica above the initial batch,
    then the atomic batch rounded up and capped so that the total stays within the largest
    profiled batch."""
    local = math.ceil(batch / replicas - 1e-8)
    accum = math.ceil(local / max_local - 1e-8) - 1
    if replicas == 1 and batch > init_bsz:
        accum = max(1, accum)
    atomic = math.ceil(local / (accum + 1) - 1e-8)
    return min(atomic, int(max_bsz / (replicas * (accum + 1)))), accum


def optimus_config(replicas: int, batch: float, max_bsz: float, max_local: int) -> tuple[int, int]:
    """``(atomic, accum)`` Optimus's step-time prediction uses (``optimus.py``,
    ``predict_step_time``): as :func:`fixed_batch_config`, but one replica always gets an
    accumulation step, whatever the batch."""
    local = math.ceil(batch / replicas - 1e-8)
    accum = math.ceil(local / max_local - 1e-8) - 1
    if replicas == 1:
        accum = max(1, accum)
    atomic = math.ceil(local / (accum + 1) - 1e-8)
    return min(atomic, int(max_bsz / (replicas * (accum + 1)))), accum


def pollux_max_replicas(max_seen: int, max_bsz: float, min_local: int, ncf: bool) -> int:
    """Most replicas Pollux may give a job (``Cluster.get_pollux_job_info``): twice the
    most it has run on (at least 1), at most 64 and the largest batch over the smallest
    local batch; ncf one."""
    if ncf:
        return 1
    return min(max(2 * max_seen, 1), 64, int(max_bsz // min_local))


def optimus_max_replicas(batch: float, min_local: int, ncf: bool) -> int:
    """Most replicas Optimus may give a job (``Cluster.get_optimus_job_info``)."""
    return 1 if ncf else int(batch // min_local)


def optimus_greedy(
    remaining: Sequence[float],
    step_time: Callable[[int, int], float],
    max_replicas: Sequence[int],
    gpus: int,
) -> list[int]:
    """Replicas per job (``optimus.py``, ``OptimusPolicy.optimize``): in job order, one
    replica each while GPUs remain; then, one GPU at a time, the job with the largest
    ``remaining × (step_time(n) − step_time(n + 1))`` (the first such job on a tie) gets
    one more, while the largest gain is positive; a job at its maximum gains nothing."""
    n = len(remaining)
    alloc = [0] * n
    gain = [0.0] * n

    def update(i: int) -> None:
        if alloc[i] + 1 > max_replicas[i] or gpus < 1:
            gain[i] = 0.0
        else:
            gain[i] = (step_time(i, alloc[i]) - step_time(i, alloc[i] + 1)) * remaining[i]

    for i in range(n):
        if gpus < 1:
            continue
        alloc[i] = 1
        gpus -= 1
        update(i)
    while gpus > 0 and n and max(gain) > 0:
        i = max(range(n), key=lambda k: gain[k])
        alloc[i] += 1
        gpus -= 1
        update(i)
    return alloc
