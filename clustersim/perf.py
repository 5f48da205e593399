"""Performance model (DESIGN §3.3): how fast a job runs on a given placement.

INTERFACE STUB — implemented by the performance-model work. The engine relies on exactly
this API.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from clustersim.cluster import Cluster
from clustersim.jobs import JobTable

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


@dataclass(eq=False)
class JobRates:
    """Per-job performance data prepared for one (jobs, cluster) pair.

    Attributes
    ----------
    rate : (n, n_types) float64
        Work units / s of the job's full gang (``num_gpus`` devices) consolidated on as few
        nodes as possible, on each type; 0 where it cannot run there (type constraint,
        memory, no measurement and no extrapolation possible).
    restore_s : (n,) float64
        Checkpoint + restore delay paid on every resume after a preemption or migration, s.
    """

    rate: FloatArray
    restore_s: FloatArray

    def placement_rate(
        self, jobs: IntArray, types: IntArray, ndev: IntArray, link_gbs: FloatArray
    ) -> FloatArray:
        """Work units / s of jobs on a concrete placement (vectorised).

        Parameters
        ----------
        jobs, types, ndev : (m,) int64
            Global job index, accelerator type index, devices held.
        link_gbs : (m,) float64
            Bandwidth (GB/s) of the slowest link the placement crosses: ``inf`` for one
            device, the intra-node interconnect for a one-node placement, else the NIC or
            oversubscribed rack uplink.
        """
        raise NotImplementedError


class PerformanceModel:
    """Builds :class:`JobRates`; holds the measured tables and the extrapolation rule."""

    def prepare(self, jobs: JobTable, cluster: Cluster) -> JobRates:
        raise NotImplementedError
