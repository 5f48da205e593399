"""Realising a fractional-time allocation round by round (Gavel/Themis style).

A round-based policy may answer with ``Decision.fractions``: for each active job, the fraction
of time it should spend on each accelerator type. This module turns that into the set of jobs
that run in the coming round, the way Gavel's scheduler does (Narayanan et al., OSDI'20, §5):
each (job, type) pair gets the priority ``fraction / share of time already received there``;
pairs are visited in decreasing priority and a job is given a type when that type still has
room for its whole gang. Jobs that keep their type keep their devices (the engine does not move
a running job whose type is unchanged).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from scheduling.base import Decision, State

FloatArray = npt.NDArray[np.float64]


def realise_fractions(state: State, fractions: FloatArray) -> Decision:
    """Pick the jobs (and their types) for the next round.

    Parameters
    ----------
    state
        Current state; ``fractions`` rows follow ``state.active``.
    fractions : (k, n_types) float64
        Target time share of each active job on each type (rows sum to at most 1).

    Returns
    -------
    Decision
        ``run`` in priority order with explicit ``types``.
    """
    active = state.active
    x = np.asarray(fractions, dtype=np.float64)
    k, n_types = len(active), state.cluster.n_types
    if x.shape != (k, n_types):
        raise ValueError(f"fractions have shape {x.shape}, want {(k, n_types)}")
    if k == 0:
        return Decision(run=np.zeros(0, dtype=np.int64), types=np.zeros(0, dtype=np.int64))
    # share of wall time (since arrival) already spent on each type
    age = np.maximum(state.now - state.jobs.submit_time[active], 1e-9)
    received = state.type_time[active] / age[:, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        prio = np.where(received > 0, x / received, np.where(x > 0, np.inf, 0.0))
    prio[x <= 0] = 0.0
    flat = np.argsort(-prio, axis=None, kind="stable")
    jobs_i, types_i = np.unravel_index(flat, prio.shape)
    left = state.capacity.copy()
    taken = np.zeros(k, dtype=bool)
    run: list[int] = []
    typ: list[int] = []
    demand = state.jobs.num_gpus[active]
    for i, t in zip(jobs_i.tolist(), types_i.tolist(), strict=True):
        if prio[i, t] <= 0:
            break
        if taken[i] or left[t] < demand[i]:
            continue
        taken[i] = True
        left[t] -= demand[i]
        run.append(int(active[i]))
        typ.append(t)
    return Decision(run=np.array(run, dtype=np.int64), types=np.array(typ, dtype=np.int64))
