"""Least attained service (preemptive, quantum-based)."""

from __future__ import annotations

from typing import Annotated

import numpy as np

from scheduling.base import Decision, Policy, State
from scheduling.params import POSITIVE


class LAS(Policy):
    """Run the jobs that have received the least service so far.

    Service is device-seconds (devices held × time held). Pure LAS degenerates into processor
    sharing; like practical LAS schedulers (and Gavel's round-based LAS) decisions are
    revisited at arrivals, completions and every ``quantum_s`` seconds, so jobs run in time
    slices of at most one quantum when they contend. Ties go to the earlier arrival.
    Source: Rai et al., "Analysis of LAS scheduling", SIGMETRICS'03; used for DL jobs by
    Tiresias (NSDI'19) and as Gavel's heterogeneity-agnostic max-min fairness baseline.

    Parameters
    ----------
    quantum_s
        Seconds between re-evaluations when nothing else happens.
    """

    name = "las"
    citation = "Rai et al., SIGMETRICS'03; Gu et al., Tiresias, NSDI'19"
    preemptive = True

    def __init__(self, quantum_s: Annotated[float, POSITIVE] = 360.0) -> None:
        self.quantum_s = quantum_s
        self.round_s = quantum_s

    def schedule(self, state: State) -> Decision:
        a = state.active
        return Decision(run=a[np.argsort(state.attained[a], kind="stable")])
