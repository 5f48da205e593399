"""Node failures and restarts from checkpoints (DESIGN §3.3, "Stragglers and failures").

A physical model the engine calls through a small interface, like co-location
(:mod:`clustersim.colocation`); the engine stays the loop and the clock. ``docs/failures.md``
is the user-facing account (model, knobs, defaults and their sources, simplifications).

The model
---------
* **Nodes fail and are repaired.** Each node alternates up and down. Its times to failure are
  Weibull with shape ``k`` (``k = 1``: exponential, a constant failure rate) and mean
  ``mtbf`` (the scale is ``mtbf / Γ(1 + 1/k)``); its repair times are exponential with mean
  ``repair``. Both come from the cluster spec per pool (``mtbf_hours``, ``repair_hours``,
  ``failure_shape``), else from per-type defaults (:func:`node_parameters`). Every node is
  up when the run starts (its first submit).
* **A failed node's devices leave the cluster until it is repaired**: they are neither free
  nor part of the capacity policies see (``State.capacity`` shrinks and grows back).
* **Jobs on a failed node are killed** (every job holding a device there, the whole gang,
  and a co-located guest of such a job) and go back to the queue. A killed job loses the
  progress made since its last checkpoint; its next start pays its usual restore delay.
* **Checkpoints.** A running job checkpoints every ``checkpoint_interval_s`` seconds of
  computing, and each checkpoint takes ``checkpoint_overhead_s`` with no progress. The engine
  sees this as a rate: a job progresses at ``I / (I + O)`` of its rate (``I`` the interval,
  ``O`` the overhead), exact at every checkpoint. Checkpoint ``c`` of a stint completes
  ``c (I + O)`` seconds after the stint's restore stall ends; a kill at ``τ`` seconds after
  that keeps the work of the ``floor(τ / (I + O))`` checkpoints done. A suspension (a
  preemption) saves the job's state, as without failures, and so restarts the cycle.

Randomness: node ``i``'s ``r``-th time to failure and repair time are drawn, vectorised over
nodes, from ``default_rng(SeedSequence(seed, spawn_key=(2, r)))`` (the engine's policy and
placement streams are the children 0 and 1 of ``SeedSequence(seed)``), so a node's timeline
depends on the seed, its own index and its parameters only: not on the policy, not on what
ran on it, not on the process. Runs of several policies with one seed therefore see the same
failures (common random numbers), which is what a what-if comparison wants.

The engine's side (the only calls it makes)
-------------------------------------------
:meth:`NodeFailures.rates` once before the run (checkpoint overhead as a rate),
:attr:`NodeFailures.next_time` at each event, :meth:`NodeFailures.apply` when an event of
this module is due, :meth:`NodeFailures.record` at the end (:class:`FailureRecord`, kept as
``RunResult.failures``; :func:`summary` turns it into the summary metrics).

Sources of the defaults
-----------------------
* Dubey et al., "The Llama 3 Herd of Models" (Meta, 2024, arXiv:2407.21783), §3.3.4: 419
  unexpected job interruptions in a 54-day snapshot of pre-training on 16,384 H100 GPUs,
  about 78 % of them hardware. As a per-device rate: 419 / (16,384 × 54 × 24 GPU-h) =
  1.97e-5 per GPU-hour, i.e. a device MTBF of about 50,700 h and an 8-GPU node MTBF of
  about 6,300 h (264 days). :data:`DEVICE_MTBF_HOURS`.
* Kokolis et al., "Revisiting Reliability in Large-Scale Machine Learning Research Clusters"
  (Meta, HPCA 2025, arXiv:2410.21680): a far higher rate on two A100 research clusters
  (a job of 8 GPUs fails about every 47 days, about 1,130 h, all failure kinds); their
  Effective Training Time Ratio is the metric of that name here.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Protocol

import numpy as np
import numpy.typing as npt

from clustersim.cluster import Cluster
from clustersim.errors import ClustersimError, SimulationError
from clustersim.kernels import (
    CTR_RUN,
    JF_CAP,
    JF_CRATE,
    JF_REMAINING,
    JF_RESTORE,
    JF_ROUND_REM,
    JF_STALL,
    JI_ALLOC_N,
    JI_PLACED,
    JI_SLOT,
    NODE_DEVICES,
    NODE_FREE,
    NODE_TYPE,
    TYPE_CAPACITY,
    TYPE_FREE,
)
from clustersim.perf import JobRates

if TYPE_CHECKING:
    from clustersim.result import RunResult

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

#: Mean time between failures of one data-centre accelerator, h: Llama 3's 419 unexpected
#: interruptions in 54 days on 16,384 H100s (module doc). A node of ``d`` devices fails
#: ``d`` times as often.
DEVICE_MTBF_HOURS = 16_384 * 54 * 24 / 419
#: [assumed] Mean time between drop-outs of an edge device (kind ``"edge"``), h: a device
#: that goes offline about once a day (federated-learning clients come and go with their
#: owners' use; no published rate fits a planning tool better).
EDGE_MTBF_HOURS = 24.0
#: [assumed] Mean repair time of a failed node, h, when the pool gives none and its
#: availability is 1: a reboot or re-image takes hours, a part swap days; one day between.
REPAIR_HOURS = 24.0
#: [assumed] Default checkpoint interval, s (of a job's computing): hourly, the usual
#: order of magnitude for training jobs; see ``docs/failures.md`` for Young's rule.
CHECKPOINT_INTERVAL_S = 3600.0
#: [assumed] Default time one checkpoint costs a job, s (state written to storage, no
#: progress meanwhile).
CHECKPOINT_OVERHEAD_S = 60.0
#: Spawn-key prefix of the failure draws under ``SeedSequence(seed)`` (0: policy, 1: placement).
SEED_CHILD = 2

_EMPTY_I = np.zeros(0, dtype=np.int64)
_EMPTY_F = np.zeros(0)


def node_parameters(cluster: Cluster) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Each node's failure parameters: the spec's where given, else the defaults.

    Defaults: MTBF = :data:`DEVICE_MTBF_HOURS` / devices of the node for data-centre kinds
    (GPU, NPU, TPU alike: an assumption, the published rate is for H100s),
    :data:`EDGE_MTBF_HOURS` for edge devices; repair = ``mtbf × (1 − a) / a`` for a node of
    availability ``a < 1`` (so it is online that share of the time in the long run), else
    :data:`REPAIR_HOURS`; Weibull shape 1 (exponential).

    Returns
    -------
    mtbf_h, repair_h, shape : (n_nodes,) float64
    """
    n = cluster.n_nodes

    def given(a: FloatArray) -> FloatArray:
        a = np.asarray(a, dtype=np.float64)
        return a.copy() if len(a) == n else np.full(n, np.nan)

    mtbf, repair, shape = (
        given(a) for a in (cluster.node_mtbf_h, cluster.node_repair_h, cluster.node_failure_shape)
    )
    edge = np.array([t.kind == "edge" for t in cluster.types], dtype=bool)[cluster.node_type]
    default_mtbf = np.where(
        edge, EDGE_MTBF_HOURS, DEVICE_MTBF_HOURS / np.maximum(cluster.node_devices, 1)
    )
    mtbf = np.where(np.isnan(mtbf), default_mtbf, mtbf)
    avail = np.asarray(cluster.node_availability, dtype=np.float64)
    if len(avail) != n:
        avail = np.ones(n)
    from_avail = mtbf * (1.0 - avail) / np.maximum(avail, 1e-12)
    repair = np.where(np.isnan(repair), np.where(avail < 1.0, from_avail, REPAIR_HOURS), repair)
    shape = np.where(np.isnan(shape), 1.0, shape)
    return mtbf, repair, shape


@dataclass(frozen=True)
class FailureOptions:
    """Turns failures on for a run (``EngineOptions.failures``); the scenario's knobs.

    Attributes
    ----------
    checkpoint_interval_s
        Seconds of computing between two checkpoints of a job (> 0): one value for every job,
        or one per job (n,).
    checkpoint_overhead_s
        Seconds one checkpoint costs (>= 0), one value or one per job (n,).
    schedule
        Scripted failures instead of random ones: ``(node, down_at, up_at)`` triples (s,
        ``down_at < up_at``, a node's intervals disjoint), e.g. a replayed failure log. ``None``
        (the default): every node fails at random as the cluster's parameters say.
    """

    checkpoint_interval_s: float | FloatArray = CHECKPOINT_INTERVAL_S
    checkpoint_overhead_s: float | FloatArray = CHECKPOINT_OVERHEAD_S
    schedule: Sequence[tuple[int, float, float]] | None = None

    @property
    def draws(self) -> bool:
        """Whether failures are drawn at random (so the seed matters)."""
        return self.schedule is None

    def per_job(self, n: int) -> tuple[FloatArray, FloatArray]:
        """The interval and overhead of each of ``n`` jobs, validated.

        Raises
        ------
        ClustersimError
            Naming the option, for an interval that is not a positive finite number, an
            overhead that is negative or not finite, or an array of the wrong length.
        """
        out = []
        for name, low_open in (("checkpoint_interval_s", True), ("checkpoint_overhead_s", False)):
            a = np.asarray(getattr(self, name), dtype=np.float64)
            if a.ndim == 0:
                a = np.full(n, float(a))
            if a.shape != (n,):
                raise ClustersimError(f"{name}: want one value or {n}, got shape {a.shape}")
            bad = ~np.isfinite(a) | ((a <= 0) if low_open else (a < 0))
            if bad.any():
                want = "> 0" if low_open else ">= 0"
                raise ClustersimError(f"{name}: must be a finite number {want}, not {a[bad][0]:g}")
            out.append(a)
        return out[0], out[1]


class CheckpointedRates(JobRates):
    """The rates of jobs that checkpoint: those of ``inner`` times each job's ``factor``.

    Built by :func:`checkpointed`; the wrapped rates are left as they are.
    """

    inner: JobRates
    factor: FloatArray

    def placement_rate(
        self, jobs: IntArray, types: IntArray, ndev: IntArray, link_gbs: FloatArray
    ) -> FloatArray:
        base = self.inner.placement_rate(jobs, types, ndev, link_gbs)
        return np.asarray(base, dtype=np.float64) * self.factor[np.asarray(jobs)]


def checkpointed(rates: JobRates, factor: FloatArray) -> CheckpointedRates:
    """``rates`` with every job's rate times its ``factor`` (n,) float64."""
    values = {f.name: getattr(rates, f.name) for f in fields(rates)}
    values["rate"] = np.asarray(rates.rate, dtype=np.float64) * factor[:, None]
    out = CheckpointedRates(**values)
    object.__setattr__(out, "inner", rates)
    object.__setattr__(out, "factor", np.asarray(factor, dtype=np.float64))
    return out


@dataclass(eq=False)
class FailureRecord:
    """What failures did in one run (``RunResult.failures``).

    Attributes
    ----------
    node, down, up : (f,) int64, float64, float64
        Each failure: the node, when it went down and when it came back (``up`` may be past
        the end of the run; ``inf`` never for drawn failures).
    restarts : (n,) int64
        Times each job was killed by a failure.
    lost_work : (n,) float64
        Work units each job redid (done since its last checkpoint when killed).
    lost_wall_s, lost_device_s : (n,) float64
        Computing time that work took (``lost_work`` over the job's rate without
        checkpointing; the checkpoint writing of that time is counted with all checkpoint
        writing), wall seconds and device-seconds.
    interval_s, overhead_s, restore_s : (n,) float64
        Each job's checkpoint interval and overhead, and its restore delay.
    end : float
        When the run ended.
    killed : (f,) int64
        Jobs each failure killed (empty for a record built by hand).
    lost_device_s_at : (f,) float64
        Device-seconds of computing each failure's kills threw away (their ``lost_device_s``
        added at that failure; empty for a record built by hand).
    """

    node: IntArray
    down: FloatArray
    up: FloatArray
    restarts: IntArray
    lost_work: FloatArray
    lost_wall_s: FloatArray
    lost_device_s: FloatArray
    interval_s: FloatArray
    overhead_s: FloatArray
    restore_s: FloatArray
    end: float
    devices: IntArray = field(default_factory=lambda: _EMPTY_I)
    killed: IntArray = field(default_factory=lambda: _EMPTY_I)
    lost_device_s_at: FloatArray = field(default_factory=lambda: _EMPTY_F)


class EngineView(Protocol):
    """The parts of the engine's state :class:`NodeFailures` works on (``clustersim.engine``)."""

    now: float
    jf: FloatArray
    ji: IntArray
    slots: IntArray
    nodes_i: IntArray
    types_i: IntArray
    run_order: IntArray
    ctr: IntArray

    def _stop(self, js: IntArray, completed: bool) -> None: ...

    def _before_kill(self) -> None: ...


class NodeFailures:
    """The engine's failure mechanism (module doc).

    Parameters
    ----------
    cluster
        The inventory (failure parameters per node: :func:`node_parameters`).
    n_jobs
        Jobs of the run.
    options
        The scenario's checkpoint knobs and an optional scripted schedule.
    seed
        The run's root seed.
    start
        When the failure clocks start (the run's first submit), s.
    """

    def __init__(
        self, cluster: Cluster, n_jobs: int, options: FailureOptions, seed: int, start: float
    ) -> None:
        self.interval, self.overhead = options.per_job(n_jobs)
        self.cycle = self.interval + self.overhead
        n_nodes = cluster.n_nodes
        self._n_nodes = n_nodes
        self._heap: list[tuple[float, int, int]] = []  # (time, node, 1 = down / 0 = up)
        self._seed = seed
        self._rounds: list[tuple[FloatArray, FloatArray]] = []
        self._cycle = np.zeros(n_nodes, dtype=np.int64)
        self._down_at = np.full(n_nodes, np.nan)
        self._scripted = options.schedule is not None
        self._log: list[tuple[int, float, float, int, float]] = []
        # what the current downtime of each node killed: jobs, device-seconds lost
        self._kills = np.zeros(n_nodes, dtype=np.int64)
        self._kill_lost = np.zeros(n_nodes)
        #: Outages under way per node (a failure, a spot reclaim: :mod:`clustersim.spot`
        #: shares this array): a node is down while its count is above zero.
        self.outages = np.zeros(n_nodes, dtype=np.int64)
        self.restarts = np.zeros(n_jobs, dtype=np.int64)
        self.lost_work = np.zeros(n_jobs)
        self.lost_wall = np.zeros(n_jobs)
        self.lost_dev = np.zeros(n_jobs)
        if options.schedule is not None:
            for item in sorted(_checked_schedule(options.schedule, n_nodes)):
                node, down, up = item
                heapq.heappush(self._heap, (down, node, 1))
                heapq.heappush(self._heap, (up, node, 0))
        else:
            mtbf, repair, shape = node_parameters(cluster)
            self._scale_s = mtbf * 3600.0 / np.array([math.gamma(1.0 + 1.0 / k) for k in shape])
            self._repair_s = repair * 3600.0
            self._shape = shape
            up0, _ = self._round(0)
            for node, t in enumerate((start + up0).tolist()):
                self._heap.append((t, node, 1))
            heapq.heapify(self._heap)
        self._start = start
        #: When the next failure or repair is due (s): the engine's only per-event read.
        #: Scripted events before the run starts happen at its start.
        self.next_time = max(self._heap[0][0], start) if self._heap else math.inf

    def _round(self, r: int) -> tuple[FloatArray, FloatArray]:
        """Every node's ``r``-th time to failure and repair time (s), drawn once."""
        while len(self._rounds) <= r:
            k = len(self._rounds)
            rng = np.random.default_rng(
                np.random.SeedSequence(self._seed, spawn_key=(SEED_CHILD, k))
            )
            up = self._scale_s * rng.weibull(self._shape)
            rep = self._repair_s * rng.standard_exponential(self._n_nodes)
            self._rounds.append((up, rep))
        return self._rounds[r]

    # ------------------------------------------------------------------ engine calls
    def rates(self, rates: JobRates) -> JobRates:
        """The run's rates with checkpointing's cost: each job at ``I / (I + O)``."""
        if not self.overhead.any():
            return rates
        return checkpointed(rates, self.interval / self.cycle)

    def apply(self, eng: EngineView, t: float) -> bool:
        """Take down and bring back the nodes whose events are due by ``t``, killing the jobs
        on failing nodes. Returns whether anything a policy sees changed."""
        heap = self._heap
        types_i, nodes_i = eng.types_i, eng.nodes_i
        changed = False
        while heap and heap[0][0] <= t:
            when, node, down = heapq.heappop(heap)
            ty, dev = int(nodes_i[NODE_TYPE, node]), int(nodes_i[NODE_DEVICES, node])
            outages = self.outages
            if down:
                if not outages[node]:  # up until now (not down for another cause)
                    self._kills[node], self._kill_lost[node] = self._kill(eng, node)
                    if nodes_i[NODE_FREE, node] != dev:
                        raise SimulationError(f"node {node} still holds devices after its outage")
                    nodes_i[NODE_FREE, node] = 0
                    types_i[TYPE_FREE, ty] -= dev
                    types_i[TYPE_CAPACITY, ty] -= dev
                else:  # already down for another cause: this outage kills nothing
                    self._kills[node], self._kill_lost[node] = 0, 0.0
                outages[node] += 1
                self._down_at[node] = when
                if not self._scripted:
                    _, rep = self._round(int(self._cycle[node]))
                    heapq.heappush(heap, (when + float(rep[node]), node, 0))
            else:
                outages[node] -= 1
                if not outages[node]:  # back (no other outage under way)
                    nodes_i[NODE_FREE, node] = dev
                    types_i[TYPE_FREE, ty] += dev
                    types_i[TYPE_CAPACITY, ty] += dev
                self._log.append(
                    (
                        node,
                        float(self._down_at[node]),
                        when,
                        int(self._kills[node]),
                        float(self._kill_lost[node]),
                    )
                )
                self._down_at[node] = np.nan
                if not self._scripted:
                    self._cycle[node] += 1
                    up, _ = self._round(int(self._cycle[node]))
                    heapq.heappush(heap, (when + float(up[node]), node, 1))
            changed = True
        self.next_time = max(heap[0][0], self._start) if heap else math.inf
        return changed

    def _kill(self, eng: EngineView, node: int) -> tuple[int, float]:
        """Stop the jobs holding devices on ``node`` and roll each back to its last
        checkpoint (:func:`roll_back`). Returns the jobs killed and the device-seconds of
        computing lost."""
        out = roll_back(eng, node, self.interval, self.overhead)
        if out is None:
            return 0, 0.0
        victims, lost, lost_wall, devices, _ = out
        self.restarts[victims] += 1
        self.lost_work[victims] += lost
        self.lost_wall[victims] += lost_wall
        self.lost_dev[victims] += lost_wall * devices
        return len(victims), float((lost_wall * devices).sum())

    def _intervals(self) -> tuple[IntArray, FloatArray, FloatArray, IntArray, FloatArray]:
        """Every outage of this cause: node, start, end (nodes still down at the end listed
        with their scheduled end, or ``inf``), jobs it killed and device-seconds of computing
        they lost, in order of start."""
        log = list(self._log)
        pending = {node: when for when, node, down in self._heap if not down}
        for node in np.flatnonzero(~np.isnan(self._down_at)).tolist():
            log.append(
                (
                    node,
                    float(self._down_at[node]),
                    pending.get(node, math.inf),
                    int(self._kills[node]),
                    float(self._kill_lost[node]),
                )
            )
        log.sort(key=lambda x: (x[1], x[0]))
        arr = np.array(log, dtype=np.float64).reshape(-1, 5)
        return (
            arr[:, 0].astype(np.int64),
            arr[:, 1].copy(),
            arr[:, 2].copy(),
            arr[:, 3].astype(np.int64),
            arr[:, 4].copy(),
        )

    def record(self, eng: EngineView, end: float) -> FailureRecord:
        """What failures did, for ``RunResult.failures`` (nodes still down at ``end`` are
        listed with their scheduled repair, or ``inf``)."""
        nodes, down, up, killed, lost_at = self._intervals()
        return FailureRecord(
            node=nodes,
            down=down,
            up=up,
            restarts=self.restarts.copy(),
            lost_work=self.lost_work.copy(),
            lost_wall_s=self.lost_wall.copy(),
            lost_device_s=self.lost_dev.copy(),
            interval_s=self.interval.copy(),
            overhead_s=self.overhead.copy(),
            restore_s=eng.jf[JF_RESTORE].copy(),
            end=float(end),
            devices=eng.nodes_i[NODE_DEVICES, nodes].copy(),
            killed=killed,
            lost_device_s_at=lost_at,
        )


def roll_back(
    eng: EngineView,
    node: int,
    interval: FloatArray,
    overhead: FloatArray,
    notice_s: float | None = None,
) -> tuple[IntArray, FloatArray, FloatArray, FloatArray, BoolArray] | None:
    """Stop the jobs holding devices on ``node`` and roll each back to its last checkpoint.

    Checkpoint ``c`` of a stint is done ``c (I + O)`` s after its restore stall ends (the
    job progresses at its checkpointed rate throughout), so a job killed ``τ`` s after
    that keeps ``crate × floor(τ / (I + O)) × (I + O)`` work units of the stint and
    redoes the rest. With a ``notice_s`` (a spot reclaim, :mod:`clustersim.spot`), a job
    whose checkpoint write time ``O`` is at most the notice (a notice of 0 is none)
    checkpoints in the notice window and keeps all its progress.

    Parameters
    ----------
    interval, overhead : (n,) float64
        Each job's checkpoint interval ``I`` and overhead ``O``.

    Returns
    -------
    None when no job held a device on the node, else ``(victims, lost, lost_wall,
    devices, kept)``: the jobs stopped (k,) int64, the work each lost, the computing time
    that work took (s, without checkpoint writing), each one's devices, and whether each
    kept all its progress (k,) bool.
    """
    k = int(eng.ctr[CTR_RUN])
    if not k:
        return None
    ji, jf = eng.ji, eng.jf
    run = eng.run_order[:k]
    held = ji[JI_ALLOC_N, run] > 0  # co-located guests hold no device (nor slot)
    run = run[held]
    placed = ji[JI_PLACED, run]
    if not len(run):
        return None
    first = ji[JI_SLOT, run]
    rows = np.repeat(first - np.cumsum(placed) + placed, placed) + np.arange(placed.sum())
    on = eng.slots[0, rows] == node
    victims = np.unique(np.repeat(run, placed)[on])
    if not len(victims):
        return None
    # where each stint's checkpoints are, before co-location re-bases the hosts' stints
    rr = jf[JF_ROUND_REM, victims].copy()
    upto = np.minimum(eng.now, jf[JF_CAP, victims])
    tau = np.maximum(upto - jf[JF_STALL, victims], 0.0)
    cyc = interval[victims] + overhead[victims]
    done_cycles = np.floor(tau / cyc)
    crate = jf[JF_CRATE, victims].copy()
    saved = crate * done_cycles * cyc
    devices = ji[JI_ALLOC_N, victims].astype(np.float64)
    eng._before_kill()  # co-located guests stop first
    eng._stop(victims, completed=False)
    progress = np.maximum(rr - jf[JF_REMAINING, victims], 0.0)
    if notice_s is not None and notice_s > 0:
        kept = overhead[victims] <= notice_s
        saved = np.where(kept, progress, np.minimum(saved, progress))
    else:
        kept = np.zeros(len(victims), dtype=bool)
        saved = np.minimum(saved, progress)
    lost = progress - saved
    jf[JF_REMAINING, victims] = rr - saved
    # the computing that work took: the time since the last checkpoint less its share
    # of checkpoint writing (which `summary` counts with all checkpoint writing)
    raw = crate * cyc / interval[victims]  # the rate without checkpointing
    lost_wall = np.where(raw > 0, lost / np.where(raw > 0, raw, 1.0), 0.0)
    return victims, lost, lost_wall, devices, kept


def _checked_schedule(
    schedule: Sequence[tuple[int, float, float]], n_nodes: int
) -> list[tuple[int, float, float]]:
    """The scripted failures as ``(down_at, node, up_at)``-sortable triples, validated.

    Raises
    ------
    ClustersimError
        Naming ``schedule[i]`` for an unknown node, a bad time, or overlapping downtimes.
    """
    items: list[tuple[int, float, float]] = []
    for i, item in enumerate(schedule):
        try:
            node, down, up = int(item[0]), float(item[1]), float(item[2])
        except (TypeError, ValueError, IndexError):
            raise ClustersimError(f"schedule[{i}]: want (node, down_at, up_at)") from None
        if not 0 <= node < n_nodes:
            raise ClustersimError(f"schedule[{i}]: no node {node} (the cluster has {n_nodes})")
        if not (math.isfinite(down) and up > down):
            raise ClustersimError(f"schedule[{i}]: want a finite down_at before up_at")
        items.append((node, down, up))
    items.sort()
    for a, b in itertools.pairwise(items):
        if a[0] == b[0] and b[1] < a[2]:
            raise ClustersimError(f"schedule: node {a[0]}'s downtimes overlap")
    return items


def summary(result: RunResult) -> dict[str, float | int | None]:
    """The failure metrics of a run with failures on (definitions: ``docs/failures.md``).

    From ``result.failures`` and the stints: a stint's *held* device-seconds are its
    devices × its length; its restore stall (a resumed stint) is the first
    ``min(restore_s, length)`` s; the rest is *computing*, of which ``O / (I + O)`` went to
    checkpoints. *Useful* = held − stalls − checkpoints − lost (computing redone after a
    failure).

    Returns
    -------
    dict
        ``node_failures``, ``device_hours_down`` (devices × downtime within the run),
        ``restarts`` (job kills), ``jobs_restarted``, ``lost_work_device_hours``,
        ``checkpoint_device_hours``, ``goodput`` (useful / held device-seconds) and
        ``effective_training_time_ratio`` (over completed jobs: Σ useful wall seconds /
        Σ (finish − first start)); ratios ``None`` when undefined.
    """
    rec = result.failures
    if rec is None:
        return {}
    shared = useful_time(
        result, rec.interval_s, rec.overhead_s, rec.restore_s, rec.lost_device_s, rec.lost_wall_s
    )
    down_s = np.minimum(rec.up, rec.end) - np.minimum(rec.down, rec.end)
    return {
        "node_failures": int(np.count_nonzero(rec.down <= rec.end)),
        "device_hours_down": float((down_s * rec.devices).sum()) / 3600.0,
        "restarts": int(rec.restarts.sum()),
        "jobs_restarted": int(np.count_nonzero(rec.restarts)),
        "lost_work_device_hours": float(rec.lost_device_s.sum()) / 3600.0,
        **shared,
    }


def useful_time(
    result: RunResult,
    interval_s: FloatArray,
    overhead_s: FloatArray,
    restore_s: FloatArray,
    lost_device_s: FloatArray,
    lost_wall_s: FloatArray,
) -> dict[str, float | None]:
    """``checkpoint_device_hours``, ``goodput`` and ``effective_training_time_ratio`` of a run
    whose jobs checkpoint (:func:`summary`), with the work lost per job given (n,) (that of
    failures, of spot reclaims, or both)."""
    st = result.stints
    j = st.job
    first_start = result.first_start
    span = st.end - st.start
    resumed = st.start > first_start[j]
    stall = np.where(resumed, np.minimum(restore_s[j], span), 0.0)
    computing = span - stall
    ckpt = computing * overhead_s[j] / (interval_s[j] + overhead_s[j])
    dev = st.devices.astype(np.float64)
    held_dev_s = float((span * dev).sum())
    ckpt_dev_s = float((ckpt * dev).sum())
    lost_dev_s = float(lost_device_s.sum())
    useful_dev_s = held_dev_s - float((stall * dev).sum()) - ckpt_dev_s - lost_dev_s
    # wall time per job: the first row of each (job, stint), whatever the nodes it spans
    useful_wall = np.zeros(len(first_start))
    if len(j):
        order = np.lexsort((st.start, j))
        js, ss = j[order], st.start[order]
        head = np.ones(len(j), dtype=bool)
        head[1:] = (js[1:] != js[:-1]) | (ss[1:] != ss[:-1])
        rows = order[head]
        np.add.at(useful_wall, j[rows], (computing - ckpt)[rows])
    useful_wall -= lost_wall_s
    done = np.isfinite(result.finish)
    lived = float((result.finish[done] - first_start[done]).sum())
    return {
        "checkpoint_device_hours": ckpt_dev_s / 3600.0,
        "goodput": useful_dev_s / held_dev_s if held_dev_s > 0 else None,
        "effective_training_time_ratio": (
            float(useful_wall[done].sum()) / lived if lived > 0 else None
        ),
    }


#: The failure settings of a scenario as plain values (an experiment's ``failures`` object,
#: the CLI's flags): name, whether it may be null, least value, whether that bound is open.
SETTINGS: tuple[tuple[str, bool, float, bool], ...] = (
    ("checkpoint_interval_s", False, 0.0, True),
    ("checkpoint_overhead_s", False, 0.0, False),
    ("mtbf_hours", True, 0.0, True),
    ("repair_hours", True, 0.0, True),
)


def check_engine(colocates: bool, power: bool, whole_steps: bool) -> None:
    """Refuse what node failures cannot be combined with yet, as
    :func:`clustersim.network.check_engine` does for its model: the power model (a failed
    node's power state is not modelled). Co-location and whole-step rounds are fine.

    Raises
    ------
    SimulationError
        With the reason.
    """
    del colocates, whole_steps
    if power:
        raise SimulationError(
            "node failures and the power model cannot be combined yet (a failed node's power"
            " state is not modelled)"
        )


def check_settings(settings: object, where: str = "failures") -> dict[str, float | None]:
    """The failure settings of a scenario, validated, with the defaults filled in.

    ``settings`` is a mapping of :data:`SETTINGS`' keys: ``checkpoint_interval_s`` (> 0,
    default :data:`CHECKPOINT_INTERVAL_S`), ``checkpoint_overhead_s`` (>= 0, default
    :data:`CHECKPOINT_OVERHEAD_S`), ``mtbf_hours`` and ``repair_hours`` (> 0, or ``None``:
    each pool's own values, else the defaults). All finite numbers.

    Raises
    ------
    ClustersimError
        Naming the key as ``<where>.<key>`` (an unknown key, a value that is not a number, a
        value out of range); nothing falls back to a default silently.
    """
    if not isinstance(settings, dict):
        raise ClustersimError(f"{where}: want an object of failure settings")
    known = {name for name, *_ in SETTINGS}
    for key in settings:
        if key not in known:
            raise ClustersimError(f"{where}.{key}: unknown setting (known: {sorted(known)})")
    defaults = {
        "checkpoint_interval_s": CHECKPOINT_INTERVAL_S,
        "checkpoint_overhead_s": CHECKPOINT_OVERHEAD_S,
    }
    out: dict[str, float | None] = {}
    for name, nullable, low, open_ in SETTINGS:
        value = settings.get(name, defaults.get(name))
        if value is None:
            if not nullable:
                raise ClustersimError(f"{where}.{name}: must be a number, not null")
            out[name] = None
            continue
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ClustersimError(f"{where}.{name}: must be a number, not {value!r}")
        v = float(value)
        if not math.isfinite(v) or (v <= low if open_ else v < low):
            raise ClustersimError(
                f"{where}.{name}: must be a finite number {'>' if open_ else '>='} {low:g}"
            )
        out[name] = v
    return out


def from_settings(settings: object, cluster: Cluster) -> tuple[FailureOptions, Cluster]:
    """The run's :class:`FailureOptions` and its cluster from a scenario's failure settings
    (:func:`check_settings`): ``mtbf_hours`` / ``repair_hours``, when given, replace every
    node's values (a what-if without editing the spec)."""
    import dataclasses

    s = check_settings(settings)
    n = cluster.n_nodes
    if s["mtbf_hours"] is not None:
        cluster = dataclasses.replace(cluster, node_mtbf_h=np.full(n, s["mtbf_hours"]))
    if s["repair_hours"] is not None:
        cluster = dataclasses.replace(cluster, node_repair_h=np.full(n, s["repair_hours"]))
    options = FailureOptions(
        checkpoint_interval_s=float(s["checkpoint_interval_s"] or CHECKPOINT_INTERVAL_S),
        checkpoint_overhead_s=float(s["checkpoint_overhead_s"] or 0.0),
    )
    return options, cluster
