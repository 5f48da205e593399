"""Least attained service (preemptive, quantum-based)."""

from __future__ import annotations

from typing import Annotated

import numpy as np

from clustersim.kernels import compiled_in_use, least_first
from scheduling.base import EMPTY, Decision, Policy, State
from scheduling.params import POSITIVE


class LAS(Policy):
    """Run the jobs that have received the least service so far.

    Service is device-seconds (devices held × time held). Pure LAS degenerates into processor
    sharing; like practical LAS schedulers (and Gavel's round-based LAS) decisions are
    revisited at arrivals, completions and every ``quantum_s`` seconds, so jobs run in time
    slices of at most one quantum when they contend. Ties go to the earlier arrival.
    Source: Rai et al., "Analysis of LAS scheduling", SIGMETRICS'03; used for DL jobs by
    Tiresias (NSDI'19) and as Gavel's heterogeneity-agnostic max-min fairness baseline.

    The policy keeps its previous order between calls only to sort the next one from it
    (:func:`clustersim.kernels.least_first`); the order depends on the state alone.

    Parameters
    ----------
    quantum_s
        Seconds between re-evaluations when nothing else happens.
    """

    name = "las"
    citation = "Rai et al., SIGMETRICS'03; Gu et al., Tiresias, NSDI'19"
    preemptive = True
    # per-run memory: the previous order (the next one is sorted from it) and scratch
    _order = EMPTY
    _k = 0
    _mark = np.zeros(0, dtype=np.int8)

    def __init__(self, quantum_s: Annotated[float, POSITIVE] = 360.0) -> None:
        self.quantum_s = quantum_s
        self.round_s = quantum_s

    def reset(self, rng: np.random.Generator) -> None:
        self._order = EMPTY
        self._k = 0

    def schedule(self, state: State) -> Decision:
        if not compiled_in_use():  # a short run: numpy's sort beats the kernel's Python
            a = state.active
            return Decision(run=a[np.argsort(state.attained[a], kind="stable")])
        n = len(state.running)
        if len(self._order) != n:
            self._order = np.zeros(n, dtype=np.int64)
            self._k = 0
            self._mark = np.zeros(n, dtype=np.int8)
        self._k = least_first(state.active, state.attained, self._order, self._k, self._mark)
        return Decision(run=self._order[: self._k].copy())
