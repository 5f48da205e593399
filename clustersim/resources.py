"""Auxiliary resources: host CPU cores and memory next to the accelerators.

The whole model, its sources and what it leaves out are in ``docs/resources.md``; this module
holds its three parts.

Capacity
--------
Each node has ``cpu_cores`` and ``host_mem_gb`` (:attr:`clustersim.cluster.Cluster.node_cpu`,
:attr:`~clustersim.cluster.Cluster.node_mem`); a node whose spec gives none has no limit
(``inf``) on that resource.

Demand (:func:`parse_rule`, :func:`apply_demand`)
-------------------------------------------------
The job table's ``cpu`` (cores) and ``mem_gb`` (GB) columns are a job's demand for its whole
gang, ``nan`` when unknown. The Alibaba PAI 2020, openb 2023 and Helios readers fill them
(Helios CPU only); for the other jobs a *rule* gives a demand:

* ``none`` (the default): jobs without a demand ask for nothing (those with one keep it);
* ``per-gpu:C,M``: ``C`` cores and ``M`` GB per device of the gang (``num_gpus``);
* ``synergy``: ``per-gpu:3,62.5``, the GPU-proportional share of the servers of Synergy's
  simulator (msr-fiddle/synergy, ``simulator/configs/default_cluster.ini``: 8 GPUs, 24 CPU
  cores, 500 GB per server), the allocation Synergy (Mohan et al., OSDI'22) compares with;
* ``proportional``: each node type's own GPU-proportional share, the smallest over the
  cluster's nodes with a limit (``min cpu_cores / devices``, ``min host_mem_gb / devices``),
  so a job fits the per-device share of any node;
* ``ignore``: every demand is dropped, the trace's too (the engine then never looks at CPU or
  memory, as before this model).

A rule fills each column separately: a Helios job keeps its ``cpu`` and takes the rule's
memory.

Accounting (:class:`AuxModel`)
------------------------------
A job's demand is split evenly over its devices: a job of ``cpu`` cores on ``g`` devices
needs ``cpu / g`` cores per device, so ``c × cpu / g`` on a node where it holds ``c``
devices (the per-node share is proportional to the devices it takes there). An elastic job
resized to ``n`` devices needs ``n × cpu / g`` (its per-device share stays). The engine
starts a job on a node only where that share fits the node's free cores and memory: the
placement strategy sees, for each node, the devices the job could take there (the free
devices, capped by free cores and memory over the per-device share), so every strategy
keeps its own rule and never over-commits. Runs where no job has a demand, or no node a
limit, do not build the model at all and take the engine's compiled fast path unchanged.

The allocation is kept apart from the demand (:attr:`AuxModel.cpu_dev`,
:attr:`AuxModel.mem_dev`, per device, initialised to the demand): a later policy such as
Synergy may give a job more or less than it asks for by writing them before the job starts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from clustersim.errors import ClustersimError

if TYPE_CHECKING:
    from clustersim.cluster import Cluster
    from clustersim.jobs import JobTable

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]

SYNERGY_CPU_PER_GPU = 24.0 / 8.0
"""Cores per GPU of Synergy's simulated servers (24 cores, 8 GPUs)."""
SYNERGY_MEM_PER_GPU = 500.0 / 8.0
"""GB of host memory per GPU of Synergy's simulated servers (500 GB, 8 GPUs)."""

RULES = ("none", "ignore", "synergy", "proportional", "per-gpu:C,M")
"""The rule forms (``docs/resources.md``)."""

_PER_GPU = re.compile(r"^per-gpu:(\d+(?:\.\d*)?|\.\d+),(\d+(?:\.\d*)?|\.\d+)$")
_EPS = 1e-9  # relative slack on capacity comparisons (float sums of fractional demands)


@dataclass(frozen=True)
class DemandRule:
    """A parsed demand rule (module doc).

    Attributes
    ----------
    text
        The rule as given.
    kind
        ``"none"``, ``"ignore"``, ``"per-gpu"`` or ``"proportional"`` (``synergy`` is
        ``per-gpu``).
    cpu_per_gpu, mem_per_gpu
        Cores and GB per device for ``per-gpu``.
    """

    text: str
    kind: str
    cpu_per_gpu: float = 0.0
    mem_per_gpu: float = 0.0


def parse_rule(text: str | None) -> DemandRule:
    """Parse a demand rule; ``None`` or ``""`` is ``none``.

    Raises
    ------
    ClustersimError
        Naming the rule and the forms accepted.
    """
    t = (text or "none").strip().lower()
    if t in ("none", "ignore", "proportional"):
        return DemandRule(t, t)
    if t == "synergy":
        return DemandRule(t, "per-gpu", SYNERGY_CPU_PER_GPU, SYNERGY_MEM_PER_GPU)
    m = _PER_GPU.match(t)
    if m:
        return DemandRule(t, "per-gpu", float(m.group(1)), float(m.group(2)))
    raise ClustersimError(
        f"CPU/memory demand rule {text!r}: expected one of none, ignore, synergy, proportional "
        "or per-gpu:C,M (C cores and M GB per device, e.g. per-gpu:4,32)"
    )


def proportional_share(cluster: Cluster) -> tuple[float, float]:
    """Cores and GB per device of the ``proportional`` rule: the smallest per-device share
    over the nodes with a limit (0 for a resource no node limits)."""
    dev = np.maximum(cluster.node_devices, 1).astype(np.float64)
    out = []
    for cap in (cluster.node_cpu, cluster.node_mem):
        per = cap / dev
        per = per[np.isfinite(per)]
        out.append(float(per.min()) if len(per) else 0.0)
    return out[0], out[1]


def apply_demand(
    jobs: JobTable, rule: str | DemandRule | None, cluster: Cluster | None = None
) -> JobTable:
    """``jobs`` with the ``cpu``/``mem_gb`` demands the rule gives (module doc).

    Parameters
    ----------
    jobs
        The workload.
    rule
        A rule (text or parsed).
    cluster
        Needed by ``proportional``.

    Returns
    -------
    JobTable
        The same table when the rule changes nothing.
    """
    r = rule if isinstance(rule, DemandRule) else parse_rule(rule)
    if r.kind == "none":
        return jobs
    n = len(jobs)
    if r.kind == "ignore":
        if np.isnan(jobs.cpu).all() and np.isnan(jobs.mem_gb).all():
            return jobs
        return jobs.replace(cpu=np.full(n, np.nan), mem_gb=np.full(n, np.nan))
    if r.kind == "proportional":
        if cluster is None:
            raise ClustersimError("the proportional CPU/memory rule needs the cluster")
        cpu_g, mem_g = proportional_share(cluster)
    else:
        cpu_g, mem_g = r.cpu_per_gpu, r.mem_per_gpu
    gpus = jobs.num_gpus.astype(np.float64)
    cpu = np.where(np.isnan(jobs.cpu), cpu_g * gpus, jobs.cpu)
    mem = np.where(np.isnan(jobs.mem_gb), mem_g * gpus, jobs.mem_gb)
    return jobs.replace(cpu=cpu, mem_gb=mem)


def per_device_demand(jobs: JobTable) -> tuple[FloatArray, FloatArray]:
    """(n,) cores and (n,) GB per device of each job's demand (0 where unknown)."""
    g = np.maximum(jobs.num_gpus, 1).astype(np.float64)
    cpu = np.nan_to_num(np.asarray(jobs.cpu, dtype=np.float64), nan=0.0) / g
    mem = np.nan_to_num(np.asarray(jobs.mem_gb, dtype=np.float64), nan=0.0) / g
    return cpu, mem


def is_active(jobs: JobTable, cluster: Cluster) -> bool:
    """Whether CPU or memory can hold a job of ``jobs`` back on ``cluster``: some job has a
    demand for a resource some node limits."""
    cpu, mem = per_device_demand(jobs)
    return bool(
        (np.isfinite(cluster.node_cpu).any() and (cpu > 0).any())
        or (np.isfinite(cluster.node_mem).any() and (mem > 0).any())
    )


def exceeds_every_node(jobs: JobTable, cluster: Cluster) -> npt.NDArray[np.bool_]:
    """(n,) bool: jobs whose CPU or memory demand no placement can meet even on the empty
    cluster: on no accelerator type can the nodes together give ``min_gpus`` devices whose
    per-device share of cores and memory fits each node (:meth:`AuxModel.never_fits`, with
    every type taken as able to run every job: the performance model is not consulted, so
    a job the engine would also refuse for its type is not flagged here). All ``False`` when
    the model would be off (:func:`is_active`)."""
    n = len(jobs)
    if not is_active(jobs, cluster):
        return np.zeros(n, dtype=bool)
    anywhere = np.ones((n, cluster.n_types))
    return AuxModel(jobs, cluster).never_fits(jobs, cluster, anywhere)


def _room(free: FloatArray, per_dev: float) -> FloatArray:
    """Devices whose per-device share ``per_dev`` fits in ``free`` (floats; inf if 0)."""
    if per_dev <= 0.0:
        return np.full(len(free), np.inf)
    return np.floor(free / per_dev + _EPS)


@dataclass(frozen=True)
class AuxRecord:
    """What a run with the model on adds to its result (:attr:`RunResult.aux`).

    Attributes
    ----------
    cpu_dev, mem_dev : (n,) float64
        Cores and GB per device each job was allocated (its demand, unless a policy changed
        it).
    node_cpu, node_mem : (n_nodes,) float64
        Each node's cores and GB, ``inf`` where unlimited.
    never_fit : int
        Jobs dropped because no placement could meet their CPU or memory demand.
    changes : (4, k) float64
        Allocations decisions set (``Decision.aux``), in order: rows time, job, cores per
        device, GB per device. A job's allocation at time ``t`` is its last change at or
        before ``t``, else its demand (``cpu_dev``/``mem_dev`` hold the last).
    """

    cpu_dev: FloatArray
    mem_dev: FloatArray
    node_cpu: FloatArray
    node_mem: FloatArray
    never_fit: int
    changes: FloatArray = field(default_factory=lambda: np.zeros((4, 0)))


class AuxModel:
    """CPU and memory bookkeeping of one run (module doc); built by :meth:`build`.

    The engine calls :meth:`refresh` when a decision starts placing jobs (the free cores and
    memory of every node, from the jobs holding devices), :meth:`room` to cap the free
    devices a placement strategy may use for a job, and :meth:`took` after each start.

    Attributes
    ----------
    cpu_dev, mem_dev : (n,) float64
        Allocation per device of each job (cores, GB); the demand unless a policy changes it.
    cpu_cap, mem_cap : (n_nodes,) float64
        Node capacities (``inf``: unlimited).
    cpu_free, mem_free : (n_nodes,) float64
        Free cores and GB of each node, valid after :meth:`refresh`.
    """

    def __init__(self, jobs: JobTable, cluster: Cluster) -> None:
        self.cpu_dev, self.mem_dev = per_device_demand(jobs)
        self.cpu_cap = cluster.node_cpu.copy()
        self.mem_cap = cluster.node_mem.copy()
        self.cpu_free = self.cpu_cap.copy()
        self.mem_free = self.mem_cap.copy()
        self.never_fit = 0
        self.job = -1  # the job of the latest room() call, and the free devices it saw
        self.node_free: IntArray = np.zeros(0, dtype=np.int64)
        self._changes: list[FloatArray] = []

    @classmethod
    def build(cls, jobs: JobTable, cluster: Cluster) -> AuxModel | None:
        """The model for a run, or ``None`` when CPU and memory can hold no job back
        (:func:`is_active`): the engine then runs exactly as without the model."""
        return cls(jobs, cluster) if is_active(jobs, cluster) else None

    def never_fits(
        self, jobs: JobTable, cluster: Cluster, rate: FloatArray
    ) -> npt.NDArray[np.bool_]:
        """(n,) bool: jobs no placement can hold, even on an empty cluster: on every type
        they can run on, the nodes together cannot give ``min_gpus`` devices whose share of
        cores and memory fits each node."""
        n = len(jobs)
        ok = np.zeros(n, dtype=bool)
        dev = cluster.node_devices.astype(np.float64)
        for t in range(cluster.n_types):
            on_t = cluster.node_type == t
            if not on_t.any():
                continue
            # distinct node shapes of the type, with their counts
            shapes, counts = np.unique(
                np.stack([dev[on_t], self.cpu_cap[on_t], self.mem_cap[on_t]], axis=1),
                axis=0,
                return_counts=True,
            )
            can = rate[:, t] > 0
            total = np.zeros(n)
            for (d, c, m), k in zip(shapes.tolist(), counts.tolist(), strict=True):
                with np.errstate(divide="ignore", invalid="ignore"):
                    by_cpu = np.where(self.cpu_dev > 0, np.floor(c / self.cpu_dev + _EPS), np.inf)
                    by_mem = np.where(self.mem_dev > 0, np.floor(m / self.mem_dev + _EPS), np.inf)
                total += k * np.minimum(d, np.minimum(by_cpu, by_mem))
            ok |= can & (total >= jobs.min_gpus)
        return ~ok

    def refresh(
        self,
        running: IntArray,
        slots: IntArray,
        slot: IntArray,
        placed: IntArray,
        pending: tuple[IntArray, IntArray, IntArray],
    ) -> None:
        """Free cores and memory of every node now, from the jobs holding devices.

        Parameters
        ----------
        running : (r,) int64
            The running jobs.
        slots : (2, s) int64
            The engine's placement slots (rows node, devices).
        slot, placed : (n,) int64
            Each job's slot offset and the nodes of its placement.
        pending : ((p,), (p,), (p,)) int64
            Starts reserved in this decision and not yet running: job, node, devices.
        """
        k = placed[running]
        if len(running) and k.sum():
            off = np.repeat(slot[running] - np.cumsum(k) + k, k) + np.arange(int(k.sum()))
            jobs = np.repeat(running, k)
            nodes, devs = slots[0, off], slots[1, off].astype(np.float64)
        else:
            jobs = nodes = np.zeros(0, dtype=np.int64)
            devs = np.zeros(0)
        pj, pn, pd = pending
        jobs = np.concatenate([jobs, pj])
        nodes = np.concatenate([nodes, pn])
        devs = np.concatenate([devs, pd.astype(np.float64)])
        m = len(self.cpu_cap)
        self.cpu_free = self.cpu_cap - np.bincount(
            nodes, weights=devs * self.cpu_dev[jobs], minlength=m
        )
        self.mem_free = self.mem_cap - np.bincount(
            nodes, weights=devs * self.mem_dev[jobs], minlength=m
        )

    def room(self, j: int, node_free: IntArray) -> IntArray:
        """(n_nodes,) int64: devices job ``j`` could take on each node: its free devices,
        capped by the node's free cores and memory over the job's per-device share.

        Remembers ``j`` and ``node_free`` (:attr:`job`, :attr:`node_free`) for a placement
        strategy that scores nodes by what is allocated on them (``bind_resources``)."""
        self.job, self.node_free = j, node_free
        cap = np.minimum(
            _room(self.cpu_free, float(self.cpu_dev[j])),
            _room(self.mem_free, float(self.mem_dev[j])),
        )
        return np.minimum(node_free, np.clip(cap, 0, np.iinfo(np.int32).max)).astype(np.int64)

    def took(self, j: int, nodes: IntArray, counts: IntArray) -> None:
        """Job ``j`` was given ``counts`` devices on ``nodes``: charge its share there."""
        self.cpu_free[nodes] -= counts * self.cpu_dev[j]
        self.mem_free[nodes] -= counts * self.mem_dev[j]

    def record(self) -> AuxRecord:
        """The run's :class:`AuxRecord`."""
        return AuxRecord(
            cpu_dev=self.cpu_dev.copy(),
            mem_dev=self.mem_dev.copy(),
            node_cpu=self.cpu_cap.copy(),
            node_mem=self.mem_cap.copy(),
            never_fit=self.never_fit,
            changes=np.concatenate([np.zeros((4, 0)), *self._changes], axis=1),
        )

    def set_alloc(self, now: float, js: IntArray, cpu: FloatArray, mem: FloatArray) -> None:
        """Set the allocation per device of jobs ``js`` (the caller checked it fits) and
        log the change (:attr:`AuxRecord.changes`)."""
        self.cpu_dev[js] = cpu
        self.mem_dev[js] = mem
        self.log_alloc(now, js, cpu, mem)

    def log_alloc(self, now: float, js: IntArray, cpu: FloatArray, mem: FloatArray) -> None:
        """Log allocations already written (:attr:`AuxRecord.changes`)."""
        self._changes.append(np.stack([np.full(len(js), now), js.astype(np.float64), cpu, mem]))


def utilisation(
    record: AuxRecord,
    stint_job: IntArray,
    stint_node: IntArray,
    stint_devices: IntArray,
    stint_s: FloatArray,
    window_s: float,
    node_type: IntArray,
    n_types: int,
) -> dict[str, FloatArray | float | None]:
    """Time-averaged CPU and memory utilisation over a window.

    Allocated core-seconds (devices × per-device cores × time, over the stints) over the
    cores of the nodes with a limit × the window; likewise for memory. Unlimited nodes
    count in neither (their capacity is undefined).

    Returns
    -------
    dict
        ``cpu``, ``mem`` (float or ``None`` when no node limits it) and ``cpu_type``,
        ``mem_type`` ((n_types,) float64, ``nan`` where no node of the type limits it).
    """
    out: dict[str, FloatArray | float | None] = {}
    for key, per_dev, cap in (
        ("cpu", record.cpu_dev, record.node_cpu),
        ("mem", record.mem_dev, record.node_mem),
    ):
        lim = np.isfinite(cap[stint_node])
        used = stint_devices * per_dev[stint_job] * stint_s * lim
        cap_f = np.where(np.isfinite(cap), cap, 0.0)
        used_t = np.bincount(node_type[stint_node], weights=used, minlength=n_types)
        cap_t = np.bincount(node_type, weights=cap_f, minlength=n_types) * window_s
        total_cap = float(cap_t.sum())
        out[key] = float(used_t.sum()) / total_cap if total_cap > 0 else None
        with np.errstate(divide="ignore", invalid="ignore"):
            out[f"{key}_type"] = np.where(cap_t > 0, used_t / cap_t, np.nan)
    return out


def check_rule_text(text: str) -> str:
    """``text`` if it parses (for forms and the API), else raise :class:`ClustersimError`."""
    parse_rule(text)
    return text


__all__ = [
    "RULES",
    "AuxModel",
    "AuxRecord",
    "DemandRule",
    "apply_demand",
    "exceeds_every_node",
    "is_active",
    "parse_rule",
    "per_device_demand",
    "proportional_share",
    "utilisation",
]
