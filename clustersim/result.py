"""What the engine returns: per-job outcomes and an exact piecewise-constant timeline.

The engine never writes files or prints; :mod:`clustersim.metrics` turns a :class:`RunResult`
into the summary metrics and bounded-size time series.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from clustersim.cluster import Cluster
from clustersim.jobs import JobTable

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

#: Why a job never ran (``RunResult.drop_reason``); ``""`` for jobs that were not dropped.
DROP_TOO_LARGE = "demand exceeds cluster"
DROP_NO_TYPE = "no accelerator type can run it"
#: A type could run it but no device can hold it (memory or framework; :mod:`clustersim.fit`).
DROP_NO_FIT = "no device can hold it (memory or framework)"
DROP_REJECTED = "rejected by admission"
DROP_UNFINISHED = "unfinished at end of simulation"
DROP_ABANDONED = "abandoned by the policy"


@dataclass(eq=False)
class Stints:
    """Who held which devices when: one row per job, node and uninterrupted stint.

    A stint is the time a job held one placement, from a (re)start to its completion,
    suspension, or the end of the simulation. A job placed on several nodes has one row per
    node. Rows are in the order the stints ended (ties by job index).

    Attributes
    ----------
    job : (k,) int64
        Row of the job in ``RunResult.jobs``.
    node : (k,) int64
        Node index in ``RunResult.cluster``.
    devices : (k,) int64
        Devices the job held on that node.
    start, end : (k,) float64
        When the stint began and ended, s.
    """

    job: IntArray
    node: IntArray
    devices: IntArray
    start: FloatArray
    end: FloatArray

    def __len__(self) -> int:
        return len(self.job)


def _no_stints() -> Stints:
    z = np.zeros(0, dtype=np.int64)
    return Stints(z, z, z, np.zeros(0), np.zeros(0))


@dataclass(eq=False)
class RunResult:
    """Outcome of one simulation.

    Per-job arrays have length ``n`` (rows of ``jobs``).

    Attributes
    ----------
    jobs, cluster
        The inputs.
    policy, placement : str
        Registry names used.
    seed : int
        The seed of the run.
    first_start : (n,) float64
        First time the job held devices; ``nan`` if never.
    finish : (n,) float64
        Completion time; ``nan`` if the job did not complete.
    drop_reason : (n,) object
        ``""`` or one of the ``DROP_*`` strings.
    attained : (n,) float64
        Device-seconds held (devices × wall time held), including restore delays.
    type_time : (n, n_types) float64
        Wall seconds held on each accelerator type.
    device_time : (n, n_types) float64
        Device-seconds held on each accelerator type.
    preemptions, migrations : (n,) int64
        Suspensions; restarts on a different type or node set after a suspension.
    max_nodes : (n,) int64
        Most nodes any placement of the job spanned.
    seg_t : (s + 1,) float64
        Boundaries of the timeline segments, ascending; segment ``i`` is
        ``[seg_t[i], seg_t[i+1])``. The first is the first submit, the last the last event.
    seg_busy : (s, n_types, n_regions) float64
        Devices held (busy) in each segment, by accelerator type and region.
    seg_queued, seg_running : (s,) int64
        Jobs waiting / holding devices in each segment.
    stints : Stints
        Device placements over time (for Gantt views).
    events : int
        Event batches processed by the engine.
    wall_s : float
        Wall-clock seconds the engine took (informational; not part of determinism checks).
    """

    jobs: JobTable
    cluster: Cluster
    policy: str
    placement: str
    seed: int
    first_start: FloatArray
    finish: FloatArray
    drop_reason: npt.NDArray[np.object_]
    attained: FloatArray
    type_time: FloatArray
    device_time: FloatArray
    preemptions: IntArray
    migrations: IntArray
    max_nodes: IntArray
    seg_t: FloatArray
    seg_busy: FloatArray
    seg_queued: IntArray
    seg_running: IntArray
    stints: Stints = field(default_factory=_no_stints)
    events: int = 0
    wall_s: float = 0.0
    notes: list[str] = field(default_factory=list)

    @property
    def completed(self) -> npt.NDArray[np.bool_]:
        return np.isfinite(self.finish)

    @property
    def dropped(self) -> npt.NDArray[np.bool_]:
        return self.drop_reason != ""
