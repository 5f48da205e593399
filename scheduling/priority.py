"""Strict priority (preemptive)."""

from __future__ import annotations

import numpy as np

from scheduling.base import Decision, Policy, State


class StrictPriority(Policy):
    """Run the highest-priority jobs; a higher-priority arrival preempts lower ones.

    Priorities come from the trace (``JobTable.priority``, larger is more important); ties go
    to the earlier arrival. This is the classic preemptive priority discipline of cluster
    managers such as Borg (Verma et al., EuroSys'15, §2.5: production jobs preempt batch).
    """

    name = "priority"
    citation = "Verma et al., Borg, EuroSys'15 (§2.5)"
    preemptive = True

    def schedule(self, state: State) -> Decision:
        a = state.active
        return Decision(run=a[np.argsort(-state.jobs.priority[a], kind="stable")])
