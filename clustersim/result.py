"""What the engine returns: per-job outcomes and an exact piecewise-constant timeline.

The engine never writes files or prints; :mod:`clustersim.metrics` turns a :class:`RunResult`
into the summary metrics and bounded-size time series.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from clustersim.cluster import Cluster
from clustersim.jobs import JobTable

if TYPE_CHECKING:
    from clustersim.failures import FailureRecord
    from clustersim.gpushare import GpuShareRecord
    from clustersim.network import NetworkRecord
    from clustersim.power import PowerTrace
    from clustersim.resources import AuxRecord
    from clustersim.spot import SpotRecord
    from clustersim.stragglers import StragglerRecord

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

#: Why a job never ran (``RunResult.drop_reason``); ``""`` for jobs that were not dropped.
DROP_TOO_LARGE = "demand exceeds cluster"
DROP_NO_TYPE = "no accelerator type can run it"
#: A type could run it but no device can hold it (memory or framework; :mod:`clustersim.fit`).
DROP_NO_FIT = "no device can hold it (memory or framework)"
#: Devices could hold it, but no placement meets its CPU or memory demand even on the empty
#: cluster (:mod:`clustersim.resources`).
DROP_AUX = "CPU or memory demand exceeds every node"
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
    resizes : (n,) int64
        Restarts of a running elastic job on another device count within one decision
        (:mod:`clustersim.elastic`); each paid the restore delay and is counted here, not as
        a preemption or a migration. Zeros for a result built by hand.
    max_nodes : (n,) int64
        Most nodes any placement of the job spanned.
    seg_t : (s + 1,) float64
        Boundaries of the timeline segments, ascending; segment ``i`` is
        ``[seg_t[i], seg_t[i+1])``. The first is the first submit, the last the last event.
    seg_busy : (s, n_types, n_regions) float64
        Devices held (busy) in each segment, by accelerator type and region.
    seg_queued, seg_running : (s,) int64
        Jobs waiting / holding devices in each segment.
    ref_gpu_s : (n,) float64
        Each job's whole work in reference GPU-seconds: the device-seconds its full gang needs
        on the reference placement (:attr:`clustersim.perf.JobRates.ref_gpu_s`), whatever
        type it ran on. The engine copies it from the rates of the run. Left out (a result
        built by hand, or rates built by hand), it is ``num_gpus × work``: ``work`` read as
        reference seconds of the whole gang, which is what it is for every job without a
        measured job type. ``nan`` where undefined (the metrics count it 0).
    stints : Stints
        Device placements over time (for Gantt views).
    events : int
        Event batches processed by the engine.
    wall_s : float
        Wall-clock seconds the engine took (informational; not part of determinism checks).
    policy_stats : dict of str to float
        Counters the policy reports (:meth:`scheduling.base.Policy.stats`), e.g. the LP
        policies' ``lp_solves``, ``lp_solver_s`` (wall seconds, informational like
        ``wall_s``) and ``lp_fallbacks``; empty for policies that report none.
    power : PowerTrace or None
        With the power model (a policy that declares ``power``): the intervals nodes spent
        off or waking and the caps of capped stints (:class:`clustersim.power.PowerTrace`);
        ``None`` without it (nodes never power down, no device is capped).
    network : NetworkRecord or None
        With network contention on (``EngineOptions.network``): time lost to contention
        and uplink traffic (:class:`clustersim.network.NetworkRecord`); ``None`` without it.
    spot : SpotRecord or None
        With spot reclaims on (``EngineOptions.spot``): the reclaims, the jobs they stopped
        and the work lost (:class:`clustersim.spot.SpotRecord`); ``None`` without them.
    aux : AuxRecord or None
        When jobs' CPU and memory demands could hold jobs back (:mod:`clustersim.resources`):
        each job's per-device allocation and each node's capacity
        (:class:`clustersim.resources.AuxRecord`); ``None`` otherwise.
    gpushare : GpuShareRecord or None
        With GPU sharing on (:mod:`clustersim.gpushare`): fragmentation over time and the
        per-node GPU-share map (:class:`clustersim.gpushare.GpuShareRecord`); ``None``
        otherwise.
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
    ref_gpu_s: FloatArray = field(default_factory=lambda: np.zeros(0))
    stints: Stints = field(default_factory=_no_stints)
    events: int = 0
    wall_s: float = 0.0
    notes: list[str] = field(default_factory=list)
    policy_stats: dict[str, float] = field(default_factory=dict)
    power: PowerTrace | None = None
    failures: FailureRecord | None = None
    stragglers: StragglerRecord | None = None
    network: NetworkRecord | None = None
    spot: SpotRecord | None = None
    resizes: IntArray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    aux: AuxRecord | None = None
    gpushare: GpuShareRecord | None = None

    def __post_init__(self) -> None:
        n = len(self.jobs)
        if len(self.resizes) == 0:
            self.resizes = np.zeros(n, dtype=np.int64)
        ref = np.asarray(self.ref_gpu_s, dtype=np.float64)
        if ref.size == 0 and n:
            ref = self.jobs.num_gpus * self.jobs.work
        if ref.shape != (n,):
            raise ValueError(f"ref_gpu_s has shape {ref.shape}, want {(n,)}")
        self.ref_gpu_s = ref

    @property
    def completed(self) -> npt.NDArray[np.bool_]:
        return np.isfinite(self.finish)

    @property
    def dropped(self) -> npt.NDArray[np.bool_]:
        return self.drop_reason != ""
