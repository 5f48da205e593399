"""Earliest deadline first (preemptive)."""

from __future__ import annotations

import numpy as np

from scheduling.base import Decision, Policy, State


class EDF(Policy):
    """Run the jobs with the earliest deadline; jobs without one come last in arrival order.

    Liu & Layland, "Scheduling Algorithms for Multiprogramming in a Hard-Real-Time
    Environment", JACM 1973. Applied to gang-scheduled DL jobs without admission control:
    jobs that miss their deadline keep running (deadline attainment is reported as a metric).
    """

    name = "edf"
    citation = "Liu & Layland, JACM 1973"
    preemptive = True

    def schedule(self, state: State) -> Decision:
        a = state.active
        dl = state.jobs.deadline[a]
        key = np.where(np.isnan(dl), np.inf, dl)
        return Decision(run=a[np.argsort(key, kind="stable")])
