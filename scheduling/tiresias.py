"""Tiresias: discretised two-dimensional least attained service."""

from __future__ import annotations

import numpy as np

from clustersim.kernels import stable_partition
from scheduling.base import SERVICE_EPS, Decision, FloatArray, IntArray, Policy, State


class Tiresias(Policy):
    """Discretised 2D-LAS (Gu et al., "Tiresias: A GPU Cluster Manager for Distributed Deep
    Learning", NSDI'19, §3.2).

    A job's attained service is two-dimensional: GPUs × time (device-seconds). Jobs are put in
    ``len(thresholds) + 1`` priority queues by comparing that service with ``thresholds``
    (queue 0 below the first threshold); lower queues run first and jobs inside a queue run
    in arrival order (the FIFO order the paper uses within a queue). A job that crosses a
    threshold while running is demoted at that instant: the thresholds are the policy's
    ``service_marks``, so the engine calls it again when the first running job reaches its
    next threshold. Jobs that do not fit are skipped.

    Defaults follow the Tiresias simulator's ``dlas-gpu`` mode: two queues split at 3,250
    GPU-seconds.

    Simplifications: the paper's starvation guard (promoting a job that waited longer than
    ``PROMOTEKNOB`` × its executed time back to the top queue) is not modelled, because it
    needs per-job memory outside the state snapshot; placement is whatever strategy the run
    uses (the paper's profile-guided consolidation is approximated by ``consolidate``).

    Parameters
    ----------
    thresholds
        Queue boundaries in device-seconds, ascending.
    """

    name = "tiresias"
    citation = "Gu et al., Tiresias, NSDI'19"
    preemptive = True

    def __init__(self, thresholds: tuple[float, ...] = (3250.0,)) -> None:
        self.thresholds = tuple(float(x) for x in thresholds)
        self.service_marks = self.thresholds
        self._edges = np.asarray(self.thresholds, dtype=np.float64)

    def params(self) -> dict[str, object]:
        return {"thresholds": self.thresholds}

    def _queue(self, att: FloatArray) -> IntArray:
        # a job within SERVICE_EPS of a threshold has crossed it (float round-off at the
        # wake-up instant must not leave it one queue too high)
        return np.searchsorted(self._edges, att + SERVICE_EPS, side="right")

    def schedule(self, state: State) -> Decision:
        a = state.active
        if len(self._edges) == 1:  # the default: two queues, one pass, no sort
            return Decision(
                run=stable_partition(a, state.attained, SERVICE_EPS, float(self._edges[0]))
            )
        att = state.attained[a]
        # active jobs are in arrival order already: a stable sort by queue keeps it inside
        # each queue (radix sort on small integers)
        queue = self._queue(att)
        key = queue.astype(np.uint8 if len(self._edges) < 255 else np.int64)
        return Decision(run=a[np.argsort(key, kind="stable")])
