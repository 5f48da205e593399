"""Shortest job first (non-preemptive, oracle durations)."""

from __future__ import annotations

import numpy as np

from scheduling.base import Decision, Policy, State


class SJF(Policy):
    """Start the queued job with the shortest oracle duration first; never preempt.

    The duration is the job's total work divided by its rate on its fastest accelerator
    type (an oracle the real scheduler would not have, as in the SJF baselines of Tiresias,
    NSDI'19, and Gandiva, OSDI'18). Jobs that do not fit are skipped (backfilling); ties go to
    the earlier arrival.
    """

    name = "sjf"
    citation = "Shortest-job-first baseline, e.g. Gu et al., Tiresias, NSDI'19 (§6)"
    preemptive = False

    def schedule(self, state: State) -> Decision:
        q = state.queued()
        best = state.rate[q].max(axis=1)
        with np.errstate(divide="ignore"):
            dur = np.where(best > 0, state.jobs.work[q] / best, np.inf)
        return Decision(run=q[np.argsort(dur, kind="stable")])
