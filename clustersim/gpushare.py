"""GPU sharing in the simulation engine: fractional devices, interference, fragmentation.

A job of the job table whose ``gpu_fraction`` is below 1 (one device, e.g. an openb pod with
``gpu_milli`` 460, or a MIG slice, see :data:`MIG_PROFILES`) asks for that share of one GPU;
several such jobs share a device. This module is the engine's GPU-sharing model, behind a
small interface the engine calls (``docs/gpu-sharing.md`` says what is modelled and what is
simplified):

* **capacity** (:meth:`GpuShare.room`, :meth:`GpuShare.took`, :meth:`GpuShare.refresh`):
  each GPU has 1000 milli; a share goes to one GPU with at least that much left, whole GPUs
  only to GPUs with nothing allocated, and a job's host CPU and memory (the job table's
  ``cpu`` and ``mem_gb``, split evenly over its devices) must fit the node's free CPU and
  memory. So no GPU ever holds more than 1000 milli and no node's CPU or memory is
  over-committed. The engine's free-device counts (``NODE_FREE``, ``TYPE_FREE``) are kept,
  for sharing runs, as *the GPUs with some milli left*: a necessary condition for every
  job, so the engine's decision kernels never start a job the model then refuses; the
  exact check is :meth:`room`, which the placement sees. Busy devices (utilisation, power)
  count each GPU with something allocated once.
* **interference** (:meth:`GpuShare.settle`): a job alone on its GPU runs at its rate (the
  trace's duration was measured at its share); with ``k`` jobs on the GPU each runs at
  ``1 / (1 + β (k − 1))`` of it. ``β`` (:attr:`GpuShareOptions.interference`) defaults to
  :data:`GAVEL_PAIR_BETA`, fitted to Gavel's measured co-location pairs (module constant
  doc). Whole-GPU jobs never share a device and keep their rate.
* **fragmentation over time** (:meth:`GpuShare.record`): after every event batch that
  changed an allocation, the cluster's fragmentation rate as the FGD paper defines it
  (:func:`clustersim.sharing.node_frag` against the workload's typical pods: expected idle
  GPU milli a typical job could not use, over all idle milli); only the nodes that changed
  are measured anew.
* **FGD placements** (:meth:`GpuShare.choose`): the placements of the FGD paper
  (:data:`clustersim.sharing.PLACEMENTS`) score the candidate nodes for the job being
  placed with the study's own kernel (:func:`clustersim.sharing._place_all`, one job), so a
  simulation run and the placement study choose alike.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from clustersim import sharing
from clustersim.errors import ClustersimError, SimulationError
from clustersim.kernels import CTR_RUN, CTR_STINTS, JF_CRATE, NODE_FREE, TYPE_FREE

if TYPE_CHECKING:
    from clustersim.cluster import Cluster
    from clustersim.jobs import JobTable

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]

MILLI = sharing.MILLI
#: Interference coefficient fitted to Gavel's measured co-location pairs: in Gavel's
#: throughput file (Narayanan et al., OSDI'20; ``clustersim/data/gavel_throughputs.json``), the
#: median job of the 636 measured V100 pairs of one-GPU jobs keeps 0.68 of its isolated rate
#: next to one other job; ``1 / (1 + β) = 0.68`` gives ``β ≈ 0.47``. It is an upper-end
#: estimate for fractional sharing (Gavel's pairs each use the whole GPU); set it lower, or
#: 0 for isolated shares (MIG, or ideal share-limited MPS), with ``GpuShareOptions``.
GAVEL_PAIR_BETA = 0.47
#: Unlimited host CPU (milli) or memory (MiB) of a node whose spec gives none.
_UNLIMITED = 1 << 60
#: MIG profiles by device (NVIDIA's MIG user guide, "Supported MIG profiles"): name →
#: (compute slices of 7, memory GB). A slice is modelled as ``round(1000 g / 7)`` milli.
MIG_PROFILES: dict[str, dict[str, tuple[int, int]]] = {
    "A100-40GB": {
        "1g.5gb": (1, 5),
        "2g.10gb": (2, 10),
        "3g.20gb": (3, 20),
        "4g.20gb": (4, 20),
        "7g.40gb": (7, 40),
    },
    "A100-80GB": {
        "1g.10gb": (1, 10),
        "2g.20gb": (2, 20),
        "3g.40gb": (3, 40),
        "4g.40gb": (4, 40),
        "7g.80gb": (7, 80),
    },
    "H100": {
        "1g.10gb": (1, 10),
        "1g.20gb": (1, 20),
        "2g.20gb": (2, 20),
        "3g.40gb": (3, 40),
        "4g.40gb": (4, 40),
        "7g.80gb": (7, 80),
    },
}


def mig_milli(profile: str) -> int:
    """Milli-GPU of a MIG profile name (``"3g.20gb"`` → 429): its compute slices of 7."""
    g = int(profile.split("g.", 1)[0])
    return round(MILLI * g / 7)


def mig_devices(profile: str) -> list[str]:
    """The devices (keys of :data:`MIG_PROFILES`) that offer ``profile``."""
    return [d for d, ps in MIG_PROFILES.items() if profile in ps]


@dataclass(frozen=True)
class GpuShareOptions:
    """Knobs of the GPU-sharing model.

    Attributes
    ----------
    interference
        ``β``: a job sharing its GPU with ``k − 1`` others runs at ``1 / (1 + β (k − 1))``
        of its rate (>= 0; 0: shares are isolated).
    """

    interference: float = GAVEL_PAIR_BETA

    def __post_init__(self) -> None:
        if not (self.interference >= 0 and np.isfinite(self.interference)):
            raise ClustersimError(
                f"gpushare interference must be a finite number >= 0, not {self.interference!r}"
            )


def job_milli(jobs: JobTable) -> IntArray:
    """(n,) milli-GPU per device each job asks for: ``round(1000 × gpu_fraction)`` for a
    one-device job below a whole GPU, 1000 otherwise."""
    frac = np.asarray(jobs.gpu_fraction, dtype=np.float64)
    share = (jobs.num_gpus == 1) & (frac < 1.0)
    milli = np.where(share, np.clip(np.round(frac * MILLI), 1, MILLI - 1), MILLI)
    return milli.astype(np.int64)


@dataclass(frozen=True)
class GpuShareRecord:
    """What the GPU-sharing model adds to a run's result.

    Attributes
    ----------
    t : (m,) float64
        Times after which an allocation had changed (event batches).
    frag, idle, allocated : (m,) float64
        Cluster fragmented GPU milli (FGD's measure), idle GPU milli and allocated GPU milli
        after each of them; the fragmentation rate is ``frag / idle``.
    node_mean_milli : (nodes, width) float64
        Time-averaged allocated milli of each GPU of each node (0 beyond a node's GPUs),
        over ``t[0]`` to the end: the per-node GPU-share map.
    node_peak_milli : (nodes, width) int64
        Most milli ever allocated on each GPU (never above 1000).
    shared_jobs : int
        Jobs that asked for a share of a GPU.
    rerates : int
        Times a job's rate changed because its GPU's co-tenants changed.
    interference : float
        The ``β`` used.
    """

    t: FloatArray
    frag: FloatArray
    idle: FloatArray
    allocated: FloatArray
    node_mean_milli: FloatArray
    node_peak_milli: IntArray
    shared_jobs: int
    rerates: int
    interference: float

    def frag_rate(self) -> FloatArray:
        """Fragmented share of the idle GPU milli after each change (0 when none is idle)."""
        return np.divide(self.frag, self.idle, out=np.zeros_like(self.frag), where=self.idle > 0)


class GpuShare:
    """The engine's GPU-sharing model for one run (module doc)."""

    def __init__(self, jobs: JobTable, cluster: Cluster, options: GpuShareOptions) -> None:
        self.options = options
        n = len(jobs)
        self.n = n
        self.milli = job_milli(jobs)
        self.gang = np.asarray(jobs.num_gpus, dtype=np.int64)
        self.is_share = self.milli < MILLI
        cpu = np.nan_to_num(np.asarray(jobs.cpu, dtype=np.float64) * 1000.0, nan=0.0)
        mem = np.nan_to_num(np.asarray(jobs.mem_gb, dtype=np.float64) * 1024.0, nan=0.0)
        self.cpu = np.ceil(cpu).astype(np.int64)  # whole job, milli-CPU
        self.mem = np.ceil(mem).astype(np.int64)  # whole job, MiB
        n_nodes = len(cluster.node_type)
        self.n_nodes = n_nodes
        devices = np.asarray(cluster.node_devices, dtype=np.int64)
        self.ng = devices.copy()
        width = max(int(devices.max()) if n_nodes else 1, 1)
        if width > 62:
            raise SimulationError(f"GPU sharing: a node has {width} GPUs; at most 62 are supported")
        self.width = width
        self.gl = np.zeros((n_nodes, width), dtype=np.int64)
        self.real = np.arange(width)[None, :] < devices[:, None]
        self.gl[self.real] = MILLI
        node_cpu, node_mem = cluster.node_cpu, cluster.node_mem
        self.cpu_cap = np.where(
            np.isfinite(node_cpu), np.floor(node_cpu * 1000.0), _UNLIMITED
        ).astype(np.int64)
        self.mem_cap = np.where(
            np.isfinite(node_mem), np.floor(node_mem * 1024.0), _UNLIMITED
        ).astype(np.int64)
        self.cpu_left = self.cpu_cap.copy()
        self.mem_left = self.mem_cap.copy()
        self.node_type = np.asarray(cluster.node_type, dtype=np.int64)
        self.node_group = self.node_type * len(cluster.regions) + np.asarray(
            cluster.node_region, dtype=np.int64
        )
        self.n_types = cluster.n_types
        # the FGD measure: typical jobs of this workload, nodes as the study sees them
        type_names = tuple(t.name for t in cluster.types)
        self.nodes = sharing.Nodes(
            names=tuple(f"{i:08d}" for i in range(n_nodes)),
            cpu=self.cpu_cap,
            mem=self.mem_cap,
            gpus=devices,
            model=np.where(devices > 0, self.node_type, -1).astype(np.int64),
            models=type_names,
        )
        # a job's type constraint by the cluster's name for the type (aliases resolved)
        canon: dict[str, str] = {}
        for s in set(jobs.gpu_type.tolist()):
            i = cluster.type_index(str(s)) if s else -1
            canon[str(s)] = type_names[i] if i >= 0 else str(s)
        spec = tuple(canon[str(s)] for s in jobs.gpu_type)
        pods = sharing.Pods(
            names=tuple(str(s) for s in jobs.job_id),
            cpu=self.cpu,
            mem=self.mem,
            gpus=self.gang,
            milli=self.milli,
            spec=spec,
            created=np.asarray(jobs.submit_time, dtype=np.float64),
        )
        self.typical = sharing.typical_pods(pods)
        self.t_access = np.ascontiguousarray(sharing._access_matrix(self.nodes, self.typical.spec))
        self.frag = sharing.node_frags(self.nodes, self.typical, self.gl, self.cpu_left)
        # gpu-clustering's kinds per node: 0 shares, k k whole GPUs
        self.kind = np.where(self.is_share, 0, np.minimum(self.gang, width)).astype(np.int64)
        self.aff = np.zeros((n_nodes, width + 1), dtype=np.int64)
        # who holds what: job j's k-th node is row off[j] + k of h_node, h_mask (its GPUs,
        # bit g: GPU g), h_cpu, h_mem; h_count[j] rows are in use (room for a node a device)
        span = np.minimum(np.maximum(self.gang, 1), max(n_nodes, 1))
        self.off = np.zeros(n, dtype=np.int64)
        self.off[1:] = np.cumsum(span)[:-1]
        rows = int(span.sum())
        self.h_node = np.zeros(rows, dtype=np.int64)
        self.h_mask = np.zeros(rows, dtype=np.int64)
        self.h_cpu = np.zeros(rows, dtype=np.int64)
        self.h_mem = np.zeros(rows, dtype=np.int64)
        self.h_count = np.zeros(n, dtype=np.int64)
        self.h_gpu = np.full(n, -1, dtype=np.int64)  # a share's GPU: node * width + index
        self.holding = np.zeros(n, dtype=bool)
        self.factor = np.ones(n)
        self.rerates = 0
        self._pick: tuple[int, int, int] | None = None  # (job, node, GPU mask) chosen by FGD
        self._job = -1
        self._dirty = True
        self._quick: tuple[int, int, int] = (-1, -1, -1)
        # the record
        self._t: list[float] = []
        self._frag: list[float] = []
        self._idle: list[float] = []
        self._alloc: list[float] = []
        self._acc = np.zeros((n_nodes, width))
        self._held_milli = np.zeros((n_nodes, width))  # allocated milli since the last record
        self._acc_t = np.nan
        self._t0 = np.nan
        self.peak = np.zeros((n_nodes, width), dtype=np.int64)
        self._kernel: Any = None

    # ------------------------------------------------------------------ capacity
    def _per_dev(self, j: int) -> tuple[int, int]:
        g = max(int(self.gang[j]), 1)
        return -(-int(self.cpu[j]) // g), -(-int(self.mem[j]) // g)

    def room(self, j: int, node_free: IntArray) -> IntArray:
        """(nodes,) devices job ``j`` could take on each node now: GPUs with its share left
        (a share) or fully free GPUs (whole GPUs), capped by the free CPU and memory over its
        per-device demand."""
        self._job = j
        self._pick = None
        if self.is_share[j]:
            fit = (self.gl >= self.milli[j]).sum(axis=1)
        else:
            fit = ((self.gl == MILLI) & self.real).sum(axis=1)
        c, m = self._per_dev(j)
        if c > 0:
            fit = np.minimum(fit, self.cpu_left // c)
        if m > 0:
            fit = np.minimum(fit, self.mem_left // m)
        return np.maximum(fit, 0).astype(np.int64)

    def took(self, j: int, nodes: IntArray, counts: IntArray) -> None:
        """Job ``j`` starts on ``counts`` devices of ``nodes``: take its share or whole GPUs
        (the GPU an FGD placement chose, else the fitting GPU with the least milli left for
        a share, the first fully free GPUs for whole ones), its CPU and memory."""
        c_dev, m_dev = self._per_dev(j)
        milli = int(self.milli[j])
        o = int(self.off[j])
        touched = nodes.tolist()
        for k, (n, c) in enumerate(zip(touched, counts.tolist(), strict=True)):
            gl = self.gl[n]
            mask = 0
            if self.is_share[j]:
                pick = self._pick
                if pick is not None and pick[0] == j and pick[1] == n and pick[2]:
                    g = int(pick[2]).bit_length() - 1
                else:
                    ok = np.flatnonzero(gl >= milli)
                    g = int(ok[np.argmin(gl[ok])])
                if gl[g] < milli:
                    raise SimulationError(f"GPU sharing: GPU {g} of node {n} has no room")
                gl[g] -= milli
                mask = 1 << g
                self.h_gpu[j] = n * self.width + g
            else:
                free = np.flatnonzero((gl == MILLI) & self.real[n])[:c]
                if len(free) < c:
                    raise SimulationError(f"GPU sharing: node {n} has no {c} free GPUs")
                gl[free] = 0
                for g in free.tolist():
                    mask |= 1 << g
            cpu, mem = c_dev * c, m_dev * c
            if cpu > self.cpu_left[n] or mem > self.mem_left[n]:
                raise SimulationError(f"GPU sharing: node {n} has not the CPU or memory")
            self.cpu_left[n] -= cpu
            self.mem_left[n] -= mem
            self.aff[n, self.kind[j]] += 1
            self.h_node[o + k], self.h_mask[o + k] = n, mask
            self.h_cpu[o + k], self.h_mem[o + k] = cpu, mem
            np.maximum(self.peak[n], MILLI - gl, out=self.peak[n], where=self.real[n])
        self.h_count[j] = len(touched)
        self.holding[j] = True
        self._touch(touched)
        self._pick = None

    def _release(self, j: int) -> list[int]:
        milli = int(self.milli[j])
        touched = []
        o = int(self.off[j])
        for k in range(int(self.h_count[j])):
            n, mask = int(self.h_node[o + k]), int(self.h_mask[o + k])
            cpu, mem = int(self.h_cpu[o + k]), int(self.h_mem[o + k])
            for g in range(self.width):
                if mask >> g & 1:
                    self.gl[n, g] += milli if self.is_share[j] else MILLI
            self.cpu_left[n] += cpu
            self.mem_left[n] += mem
            self.aff[n, self.kind[j]] -= 1
            touched.append(n)
        self.holding[j] = False
        self.h_count[j] = 0
        self.h_gpu[j] = -1
        self.factor[j] = 1.0  # a restart begins at the engine's rate
        return touched

    def _touch(self, nodes: list[int]) -> None:
        for n in set(nodes):
            self.frag[n] = sharing._node_frag(
                int(self.cpu_left[n]),
                self.gl[n],
                int(self.ng[n]),
                self.typical.cpu,
                self.typical.milli,
                self.typical.gpus,
                self.typical.prob,
                self.t_access[n],
            )
        self._dirty = True

    def never_fits(self, rate: FloatArray) -> npt.NDArray[np.bool_]:
        """(n,) jobs no placement can ever hold on an empty cluster, on any type they can
        run on (``rate`` > 0, (n, types)): a share needs one node of the type with a GPU and
        the job's CPU and memory; whole GPUs need, summed over the type's nodes, ``gang``
        devices that each node's GPUs, CPU and memory hold."""
        out = np.ones(self.n, dtype=bool)
        c_dev = -(-self.cpu // np.maximum(self.gang, 1))
        m_dev = -(-self.mem // np.maximum(self.gang, 1))
        for t in range(self.n_types):
            nodes = np.flatnonzero((self.node_type == t) & (self.ng > 0))
            on_t = rate[:, t] > 0
            if not len(nodes) or not on_t.any():
                continue
            js = np.flatnonzero(on_t & out)
            ng = self.ng[nodes][None, :]
            cpu, mem = self.cpu_cap[nodes][None, :], self.mem_cap[nodes][None, :]
            c, m = c_dev[js][:, None], m_dev[js][:, None]
            per = np.minimum(ng, np.where(c > 0, cpu // np.maximum(c, 1), ng))
            per = np.minimum(per, np.where(m > 0, mem // np.maximum(m, 1), ng))
            out[js] = per.sum(axis=1) < self.gang[js]
        return out

    def refresh(self, eng: Any) -> None:
        """Release the jobs that stopped since the last call and write the engine's free and
        busy device counts from the GPUs' milli (module doc)."""
        stopped = np.flatnonzero(self.holding & ~eng.running)
        touched: list[int] = []
        for j in stopped.tolist():
            touched += self._release(j)
        if touched:
            self._touch(touched)
        self.write_counts(eng)

    def write_counts(self, eng: Any) -> None:
        """The engine's ``NODE_FREE`` (GPUs with milli left), ``TYPE_FREE`` and busy devices
        (GPUs with something allocated) from the model's state."""
        left = (self.gl > 0).sum(axis=1)
        used = ((self.gl < MILLI) & self.real).sum(axis=1)
        eng.nodes_i[NODE_FREE] = left
        eng.types_i[TYPE_FREE] = np.bincount(self.node_type, weights=left, minlength=self.n_types)
        eng.busy[:] = np.bincount(self.node_group, weights=used, minlength=len(eng.busy))

    # ------------------------------------------------------------------ interference
    def factors(self, js: IntArray) -> FloatArray:
        """(len(js),) rate factor of running jobs ``js``: ``1 / (1 + β (k − 1))`` with ``k``
        the jobs on the job's GPU (1 for whole-GPU jobs)."""
        out = np.ones(len(js))
        share = js[self.is_share[js] & self.holding[js]]
        if not len(share):
            return out
        _, inv, cnt = np.unique(self.h_gpu[share], return_inverse=True, return_counts=True)
        k = cnt[inv]
        out[self.is_share[js] & self.holding[js]] = 1.0 / (
            1.0 + self.options.interference * (k - 1)
        )
        return out

    def settle(self, eng: Any) -> None:
        """After an event batch: when jobs started or stopped, release the stopped, re-rate
        the jobs whose GPU's co-tenants changed, write the engine's counts, and record the
        fragmentation."""
        from clustersim.colocation import rerate

        quick = (int(eng.ctr[CTR_STINTS]), int(eng.ctr[CTR_RUN]), id(eng.st_i))
        now = float(eng.now)
        if self._t0 != self._t0:
            self._t0 = self._acc_t = now
        if quick == self._quick and not self._dirty:
            return
        self._quick = quick
        self.refresh(eng)
        run = np.asarray(eng.running_jobs(), dtype=np.int64)
        run = run[self.holding[run] & self.is_share[run]]
        if len(run):
            f = self.factors(run)
            change = f != self.factor[run]
            if change.any():
                js = run[change]
                ratio = f[change] / self.factor[js]
                rerate(eng, js, eng.jf[JF_CRATE, js] * ratio)
                self.factor[js] = f[change]
                self.rerates += int(change.sum())
        if self._dirty:
            self._acc += self._held_milli * (now - self._acc_t)
            self._held_milli = ((MILLI - self.gl) * self.real).astype(np.float64)
            self._acc_t = now
            idle = float(self.gl[self.real].sum())
            self._t.append(now)
            self._frag.append(float(self.frag.sum()))
            self._idle.append(idle)
            self._alloc.append(float(self.real.sum()) * MILLI - idle)
            self._dirty = False

    # ------------------------------------------------------------------ FGD placements
    def choose(
        self,
        code: int,
        candidates: IntArray,
        f: IntArray,
        ndev: int,
        uniforms: FloatArray,
    ) -> tuple[IntArray, IntArray] | None:
        """Place the job last asked about (:meth:`room`) by the FGD-paper placement ``code``
        (an index of :data:`clustersim.sharing.PLACEMENTS`) on one of ``candidates`` (whose
        room is ``f``): the study's kernel scores them for this one job. ``None``: the job
        does not fit one node (the caller spreads it)."""
        j = self._job
        if j < 0 or not (f >= ndev).any():
            return None
        cand = np.ascontiguousarray(candidates[f >= ndev], dtype=np.int64)
        milli = int(self.milli[j])
        whole = not self.is_share[j]
        c_dev, m_dev = self._per_dev(j)
        if self._kernel is None:
            self._kernel = sharing._kernel(True)
        one = np.ones(1, dtype=np.int64)
        out_node = np.full(1, -1, dtype=np.int64)
        out_gpus = np.zeros(1, dtype=np.int64)
        self._kernel(
            code,
            one * c_dev * ndev, one * m_dev * ndev, one * ndev,
            one * (MILLI if whole else milli), np.zeros(1, dtype=np.int64), one * self.kind[j],
            self.cpu_left[cand], self.mem_left[cand], self.cpu_cap[cand],
            np.ascontiguousarray(self.gl[cand]), self.ng[cand],
            np.ones((len(cand), 1), dtype=np.bool_), np.ascontiguousarray(self.aff[cand]),
            self.typical.cpu, self.typical.milli, self.typical.gpus, self.typical.prob,
            np.ascontiguousarray(self.t_access[cand]), self.frag[cand], uniforms,
            out_node, out_gpus, np.zeros(1, dtype=np.int64), np.zeros(1),
            np.zeros(1, dtype=np.int64),
        )  # fmt: skip
        k = int(out_node[0])
        if k < 0:
            return None
        n = int(cand[k])
        self._pick = (j, n, int(out_gpus[0]))
        return np.array([n], dtype=np.int64), np.array([ndev], dtype=np.int64)

    # ------------------------------------------------------------------ result
    def record(self, end: float) -> GpuShareRecord:
        """The run's GPU-sharing record (:class:`GpuShareRecord`), closed at ``end``."""
        if self._acc_t == self._acc_t:
            self._acc += self._held_milli * (end - self._acc_t)
            self._acc_t = end
        span = end - self._t0 if self._t0 == self._t0 else 0.0
        mean = self._acc / span if span > 0 else np.zeros_like(self._acc)
        return GpuShareRecord(
            t=np.array(self._t),
            frag=np.array(self._frag),
            idle=np.array(self._idle),
            allocated=np.array(self._alloc),
            node_mean_milli=mean,
            node_peak_milli=self.peak.copy(),
            shared_jobs=int(self.is_share.sum()),
            rerates=self.rerates,
            interference=self.options.interference,
        )


def check_engine(
    colocates: bool, power: bool, goodput: bool, outages: bool, network: bool, elastic: bool
) -> None:
    """Raise :class:`SimulationError` for the engine features GPU sharing does not combine
    with (docs/gpu-sharing.md)."""
    for on, what in (
        (colocates, "co-location"),
        (power, "the power model"),
        (goodput, "goodput rates"),
        (outages, "node failures or spot reclaims"),
        (network, "network contention"),
        (elastic, "elastic jobs"),
    ):
        if on:
            raise SimulationError(f"GPU sharing does not support {what}")
