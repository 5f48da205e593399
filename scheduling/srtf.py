"""Shortest remaining time first (preemptive, oracle durations)."""

from __future__ import annotations

import numpy as np

from scheduling.base import Decision, Policy, State


class SRTF(Policy):
    """Run the jobs with the least remaining time; preempt longer ones for shorter arrivals.

    Remaining time is remaining work over the job's rate on its current type (running) or its
    fastest type (queued) — an oracle, as in the SRTF baseline of Tiresias (NSDI'19). Jobs
    that do not fit are skipped; ties go to the earlier arrival. Decisions are revisited at
    arrivals and completions only (a running job's remaining time only shrinks, so the order
    among known jobs cannot change in between).
    """

    name = "srtf"
    citation = "Shortest-remaining-time-first baseline, e.g. Gu et al., Tiresias, NSDI'19 (§6)"
    preemptive = True

    def schedule(self, state: State) -> Decision:
        a = state.active
        rem = state.remaining_time(a)
        return Decision(run=a[np.argsort(rem, kind="stable")])
