"""Power states of nodes and power caps of devices: a model the engine calls (issue 14).

Two parts, as for co-location (:mod:`clustersim.colocation`):

* the **model**: what a node draws in each state and what a device does under a power cap.
  A node is *on* (each device busy or idle), *off* (draws nothing: DESIGN §3.6) or *waking*
  (switched on, not yet usable: it draws its idle power for the kind's wake-up latency). A
  busy device capped at a fraction ``f`` of its busy power draws ``f × busy_w`` and runs at
  ``throughput(f)`` of its uncapped rate (:class:`PowerProfile`, defaults per accelerator
  kind in :data:`KIND_PROFILES`, sources in ``docs/power.md``);
* the **mechanism** (:class:`PowerModel`), which the engine builds when the policy declares
  ``power`` (a :class:`PowerConfig`) and calls at a few points of its loop:

  ========================  ================================================================
  ``start(eng)``            once, at the first event: all nodes on and idle; with a budget,
                            nodes are switched off (highest index first) until the idle
                            draw fits it
  ``next_time``             the model's next event (a wake-up completes, an idle node
                            reaches the switch-off threshold); the engine's clock stops there
  ``advance(eng)``          at that time: completes wake-ups (their devices become free) and
                            switches off nodes idle too long; true when devices became free
                            (the engine then asks the policy)
  ``after_decision(eng,d)`` after each decision: caps the jobs that started in it
                            (``Decision.power_cap``) and wakes off nodes for the jobs of
                            ``d.run`` that could not start
  ``settle(eng)``           after each event batch: idle timers of nodes
  ``view(eng)``             what a policy sees (:class:`PowerView`, ``State.power``)
  ``trace(eng)``            at the end: the :class:`PowerTrace` stored in the result
  ========================  ================================================================

  Off and waking nodes are hidden from placement by holding their devices out of the free
  counts (``node_free`` 0, type ``free`` lowered): they are never busy, and a policy sees
  only the devices it can use now. Nothing is recorded per event: the trace holds the
  intervals nodes spent off or waking and the cap of each capped stint, and
  :func:`state_power_w` turns them, with the result's timeline and stints, into exact power
  per segment. A run without the model costs nothing extra and its numbers are unchanged.

Sources and departures (details and numbers: ``docs/power.md``)
----------------------------------------------------------------
* Switching off idle nodes after a threshold and waking them on demand is the scheme of
  Slurm's power saving (``SuspendTime``/``ResumeTimeout``) and of PowerNap's motivation
  (Meisner, Gold, Wenisch, ASPLOS'09: idle servers draw a large share of peak; full
  shutdown costs minutes of wake-up). A node is switched off at once (no shutdown latency:
  an assumption) and draws its idle power while waking (an assumption).
* The throughput-vs-power curves are Zeus's measurements (You, Chung, Chowdhury, NSDI'23;
  the power-limit sweeps of its artefact, :data:`ZEUS_CURVES`): for each power limit, the
  median over the measured training configurations of the draw and of the throughput, both
  relative to the same configuration at the maximum limit. The V100's curve serves every GPU
  and NPU that Zeus did not measure (an assumption: newer generations differ), the P100's the
  P100; one curve per accelerator type, not per job type (Zeus profiles each job; we do not).
* A cap holds for a stint: set when a job starts, kept until it stops (as Zeus sets one
  power limit per job run).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Protocol

import numpy as np
import numpy.typing as npt

from clustersim.cluster import AcceleratorType, Cluster
from clustersim.colocation import EngineView as CoLocEngineView
from clustersim.colocation import rerate
from clustersim.errors import SimulationError
from clustersim.kernels import (
    JB_RUNNING,
    JF_CRATE,
    JF_LAST_START,
    JI_ALLOC_N,
    JI_ALLOC_TYPE,
    JI_GANG,
    NODE_FREE,
    TYPE_FREE,
)

if TYPE_CHECKING:
    from clustersim.result import RunResult
    from scheduling.base import Decision

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

#: Node states (``PowerTrace.state``).
ON, OFF, WAKING = 0, 1, 2
#: Power states of :func:`state_power_w` (last axis).
BUSY, IDLE, WAKE = 0, 1, 2
STATE_NAMES = ("busy", "idle", "wake")
#: Jobs of a decision that could not start for which nodes may be woken, at most.
WAKE_LOOKAHEAD = 64


@dataclass(frozen=True)
class PowerProfile:
    """Power behaviour of one accelerator kind.

    Attributes
    ----------
    wake_s
        Seconds from switching a node on until its devices can be used.
    min_cap
        Lowest power cap, as a fraction of ``busy_w`` (1.0: the kind cannot be capped).
    cap_points, tput_points
        The throughput-vs-power curve: at a cap of ``cap_points[i] × busy_w`` a device runs
        at ``tput_points[i]`` of its uncapped rate (ascending; linear in between).
    source
        Where the numbers come from, assumptions marked.
    """

    wake_s: float
    min_cap: float
    cap_points: tuple[float, ...] = (1.0,)
    tput_points: tuple[float, ...] = (1.0,)
    source: str = ""

    def throughput(self, cap: FloatArray | float) -> FloatArray:
        """Fraction of the uncapped rate at cap fraction(s) ``cap`` (clipped to
        ``[min_cap, 1]``)."""
        c = np.clip(np.asarray(cap, dtype=np.float64), self.min_cap, 1.0)
        return np.asarray(np.interp(c, self.cap_points, self.tput_points), dtype=np.float64)


#: Zeus's power-limit sweeps (You, Chung, Chowdhury, "Zeus: Understanding and Optimizing GPU
#: Energy Consumption of DNN Training", NSDI'23), from the paper's artefact
#: (github.com/ml-energy/zeus, ``examples/research_reproducibility/zeus_nsdi23/trace/
#: summary_power_{v100,p100}.csv``, Apache License 2.0; numbers only, see
#: ``clustersim/data/NOTICE.md``): time per epoch and average power of six DNN training
#: workloads over their batch sizes and optimisers (V100: 68 configurations, limits 100-250 W
#: in steps of 25 W; P100: 45, 125-250 W) at each power limit. A point is, for one limit, the
#: median over configurations of the average power over the same configuration's at the
#: highest limit (the cap: the draw as a fraction of the uncapped draw ``busy_w``) and the
#: median of the throughput over its throughput at the highest limit. The P100's sweep
#: barely slows it (its draw at 225 W and 250 W is the same: one point). Keyed by the prefix
#: of the accelerator type's name.
ZEUS_CURVES: dict[str, tuple[tuple[float, ...], tuple[float, ...]]] = {
    "V100": (
        (0.508, 0.591, 0.682, 0.781, 0.867, 0.945, 1.0),
        (0.725, 0.853, 0.899, 0.941, 0.965, 0.987, 1.0),
    ),
    "P100": (
        (0.815, 0.934, 0.969, 0.995, 1.0),
        (0.944, 0.965, 0.984, 0.995, 1.0),
    ),
}
_GPU_CURVE = ZEUS_CURVES["V100"]
_ZEUS = "Zeus (NSDI'23) power-limit sweeps, medians over its measured configurations (ZEUS_CURVES)"
#: Defaults per accelerator kind (``AcceleratorType.kind``); sources in ``docs/power.md``.
KIND_PROFILES: dict[str, PowerProfile] = {
    "gpu": PowerProfile(
        wake_s=300.0,
        min_cap=_GPU_CURVE[0][0],
        cap_points=_GPU_CURVE[0],
        tput_points=_GPU_CURVE[1],
        source=f"{_ZEUS}: the V100's; [assumed] for GPUs Zeus did not measure; lowest cap the "
        "V100's draw at its lowest limit (100 of 250 W); wake-up 5 min [assumed] (a GPU "
        "server's boot, PowerNap ASPLOS'09: minutes)",
    ),
    "npu": PowerProfile(
        wake_s=300.0,
        min_cap=_GPU_CURVE[0][0],
        cap_points=_GPU_CURVE[0],
        tput_points=_GPU_CURVE[1],
        source="[assumed] the V100's Zeus curve (no published power-limit sweep of Gaudi)",
    ),
    "tpu": PowerProfile(
        wake_s=600.0,
        min_cap=1.0,
        source="[assumed] TPUs expose no user power limit: not cappable; wake-up 10 min "
        "(a TPU host and its slice brought up)",
    ),
    "edge": PowerProfile(
        wake_s=30.0,
        min_cap=0.25,
        cap_points=(0.25, *_GPU_CURVE[0]),
        tput_points=(0.40, *_GPU_CURVE[1]),
        source="[assumed] Jetson power modes (e.g. Orin 15/30/50/60 W) read as caps on the "
        "gpu curve, extended to 0.25; wake-up 30 s (a Jetson boot)",
    ),
}


def profile_of(acc: AcceleratorType) -> PowerProfile:
    """The power profile of an accelerator type: its kind's (gpu for an unknown kind), with
    the curve Zeus measured on it when it is one of :data:`ZEUS_CURVES` (a GPU whose name
    starts with the key)."""
    base = KIND_PROFILES.get(acc.kind, KIND_PROFILES["gpu"])
    if acc.kind == "gpu":
        for key, (caps, tput) in ZEUS_CURVES.items():
            if acc.name.upper().startswith(key):
                return replace(
                    base,
                    min_cap=caps[0],
                    cap_points=caps,
                    tput_points=tput,
                    source=f"{_ZEUS}: the {key}'s; wake-up as gpu",
                )
    return base


@dataclass(frozen=True)
class PowerConfig:
    """What a policy asks of the power model (``Policy.power``).

    Attributes
    ----------
    idle_off_s
        Switch off a node idle (no device held) for longer than this many seconds; ``None``:
        never (except to meet the budget at the start).
    budget_w
        Cluster-wide IT power budget, W (devices and node overhead, before PUE); ``None``:
        none. The model wakes a node only if its idle draw fits in the budget; keeping starts
        inside it is the policy's part (:class:`PowerView`).
    budget_field
        Name of the parameter the budget came from, for error messages.
    """

    idle_off_s: float | None = None
    budget_w: float | None = None
    budget_field: str = "budget_kw"


def node_idle_w(cluster: Cluster) -> FloatArray:
    """(n_nodes,) what each node draws on with every device idle: devices × ``idle_w`` +
    overhead, W."""
    idle = np.array([t.idle_w for t in cluster.types], dtype=np.float64)
    if not cluster.n_nodes:
        return np.zeros(0)
    return np.asarray(
        cluster.node_devices * idle[cluster.node_type] + cluster.node_overhead_w, dtype=np.float64
    )


def budget_problem(budget_w: float, cluster: Cluster, name: str = "budget_kw") -> str | None:
    """Why ``budget_w`` cannot work on ``cluster`` (below the idle draw of its smallest node,
    so no node could ever be on), naming the parameter ``name``; ``None`` when it can."""
    idle = node_idle_w(cluster)
    if not len(idle):
        return None
    low = float(idle.min())
    if budget_w < low:
        node = int(np.argmin(idle))
        return (
            f"{name}: {budget_w / 1000:g} kW is below the idle draw of one node of cluster "
            f"{cluster.name!r} ({low / 1000:g} kW for node {node}, "
            f"{int(cluster.node_devices[node])} × {cluster.types[cluster.node_type[node]].name})"
            "; no node could be switched on"
        )
    return None


@dataclass(eq=False)
class PowerTrace:
    """What the power model adds to a :class:`~clustersim.result.RunResult`.

    Attributes
    ----------
    node, state : (k,) int64
        Intervals nodes spent not on: node index and state (``OFF`` or ``WAKING``).
    start, end : (k,) float64
        The intervals' bounds, s (event times of the run, so segment boundaries).
    cap_job : (c,) int64
        Jobs of the capped stints.
    cap_start : (c,) float64
        When each capped stint began (matches ``Stints.start`` of its rows).
    cap : (c,) float64
        Cap of the stint, fraction of ``busy_w``.
    end_idle_w : (n_regions,) float64
        IT power of each region with every device idle and nodes as they were at the end
        (for cost horizons past the run).
    budget_w : float or None
        The budget of the run, W.
    """

    node: IntArray
    state: IntArray
    start: FloatArray
    end: FloatArray
    cap_job: IntArray
    cap_start: FloatArray
    cap: FloatArray
    end_idle_w: FloatArray
    budget_w: float | None = None

    def node_hours(self, state: int) -> float:
        """Node-hours spent in ``state`` (``OFF`` or ``WAKING``)."""
        m = self.state == state
        return float((self.end[m] - self.start[m]).sum()) / 3600.0


class EngineView(CoLocEngineView, Protocol):
    """The parts of the engine's state :class:`PowerModel` works on (``clustersim.engine``):
    those co-location's :func:`~clustersim.colocation.rerate` needs, and the node and type
    counts."""

    nodes_i: IntArray
    types_i: IntArray
    busy: FloatArray

    def running_jobs(self) -> IntArray: ...


class PowerModel:
    """The engine's power mechanism (module doc).

    Parameters
    ----------
    config
        What the policy asked for.
    cluster
        The inventory.
    n
        Jobs of the run.

    Raises
    ------
    SimulationError
        A budget below the idle draw of one node (naming ``config.budget_field``).
    """

    def __init__(self, config: PowerConfig, cluster: Cluster, n: int) -> None:
        if config.budget_w is not None:
            problem = budget_problem(config.budget_w, cluster, config.budget_field)
            if problem:
                raise SimulationError(problem)
        self.cfg = config
        self.cluster = cluster
        nn = cluster.n_nodes
        self.profiles = tuple(profile_of(t) for t in cluster.types)
        self.busy_w = np.array([t.busy_w for t in cluster.types], dtype=np.float64)
        self.idle_w = np.array([t.idle_w for t in cluster.types], dtype=np.float64)
        self.min_cap = np.array([p.min_cap for p in self.profiles], dtype=np.float64)
        self.wake_s = np.array([p.wake_s for p in self.profiles], dtype=np.float64)
        self.node_w = node_idle_w(cluster)
        self.state = np.zeros(nn, dtype=np.int64)
        self.since = np.zeros(nn)  # start of the current off/waking interval
        self.idle_since = np.full(nn, np.inf)
        self.wake_done = np.full(nn, np.inf)
        self.floor_w = float(self.node_w.sum())  # idle draw of nodes not off
        self.cap = np.ones(n)
        self.saving_w = np.zeros(n)  # running job: W its cap saves against busy_w
        self.next_time = np.inf
        self._iv: list[tuple[int, int, float, float]] = []
        self._caps: list[tuple[int, float, float]] = []

    # ------------------------------------------------------------------ what policies see
    def view(self, eng: EngineView) -> PowerView:
        return PowerView(self, eng)

    def it_power_w(self, eng: EngineView) -> float:
        """IT power now, W: idle draw of nodes not off, plus what busy devices draw above
        idle (at their caps)."""
        busy_t = eng.busy.reshape(len(self.busy_w), -1).sum(axis=1)
        extra = float(busy_t @ (self.busy_w - self.idle_w))
        r = eng.running_jobs()
        return self.floor_w + extra - (float(self.saving_w[r].sum()) if len(r) else 0.0)

    # ------------------------------------------------------------------ engine calls
    def start(self, eng: EngineView) -> None:
        """At the first event: every node on and idle; with a budget, switch off nodes from
        the highest index down until their idle draw fits."""
        self.idle_since[:] = eng.now
        budget = self.cfg.budget_w
        if budget is not None and self.floor_w > budget:
            for node in range(self.cluster.n_nodes - 1, -1, -1):
                if self.floor_w <= budget:
                    break
                self._switch_off(eng, node)
        self._plan_next()

    def advance(self, eng: EngineView) -> bool:
        """At ``next_time``: complete due wake-ups and switch off nodes idle too long; true
        when devices became free."""
        now = eng.now
        woke = np.flatnonzero((self.state == WAKING) & (self.wake_done <= now))
        for node in woke.tolist():
            self._close(node, now)
            self.state[node] = ON
            self.wake_done[node] = np.inf
            d = int(self.cluster.node_devices[node])
            eng.nodes_i[NODE_FREE, node] = d
            eng.types_i[TYPE_FREE, self.cluster.node_type[node]] += d
            self.idle_since[node] = now
        thr = self.cfg.idle_off_s
        if thr is not None:
            due = np.flatnonzero((self.state == ON) & (self.idle_since + thr <= now))
            for node in due.tolist():
                self._switch_off(eng, node)
        self._plan_next()
        return len(woke) > 0

    def settle(self, eng: EngineView) -> None:
        """After an event batch: a node on with every device free is idle since now (if it
        was not already); one holding a device is not idle."""
        idle = (self.state == ON) & (eng.nodes_i[NODE_FREE] == self.cluster.node_devices)
        self.idle_since[idle & np.isinf(self.idle_since)] = eng.now
        self.idle_since[~idle] = np.inf
        self._plan_next()

    def after_decision(self, eng: EngineView, d: Decision) -> None:
        """Cap the jobs that started in this decision and wake nodes for the jobs of its
        ``run`` that could not start."""
        run = np.asarray(d.run, dtype=np.int64)
        if not len(run):
            return
        running = eng.jb[JB_RUNNING]
        on = running[run]
        started = on & (eng.jf[JF_LAST_START, run] == eng.now) & (eng.ji[JI_ALLOC_N, run] > 0)
        if started.any():
            caps = (
                np.ones(len(run))
                if d.power_cap is None
                else np.asarray(d.power_cap, dtype=np.float64)
            )
            if len(caps) != len(run):
                raise SimulationError("power_cap must have one entry per job of run")
            self._cap(eng, run[started], caps[started])
        if (self.state == OFF).any():
            types = None if d.types is None else np.asarray(d.types, dtype=np.int64)[~on]
            self._wake_for(eng, run[~on], types)

    def trace(self, eng: EngineView) -> PowerTrace:
        """The intervals and caps of the run, open intervals closed at ``eng.now``."""
        end = eng.now
        iv = list(self._iv)
        for node in np.flatnonzero(self.state != ON).tolist():
            iv.append((node, int(self.state[node]), float(self.since[node]), end))
        iv.sort(key=lambda x: (x[2], x[0]))
        arr = np.array(iv, dtype=np.float64).reshape(-1, 4)
        caps = np.array(self._caps, dtype=np.float64).reshape(-1, 3)
        off = self.state == OFF
        nr = len(self.cluster.regions)
        end_idle = np.bincount(
            self.cluster.node_region[~off], weights=self.node_w[~off], minlength=nr
        ).astype(np.float64)
        return PowerTrace(
            node=arr[:, 0].astype(np.int64),
            state=arr[:, 1].astype(np.int64),
            start=arr[:, 2].copy(),
            end=arr[:, 3].copy(),
            cap_job=caps[:, 0].astype(np.int64),
            cap_start=caps[:, 1].copy(),
            cap=caps[:, 2].copy(),
            end_idle_w=end_idle,
            budget_w=self.cfg.budget_w,
        )

    # ------------------------------------------------------------------ internals
    def _plan_next(self) -> None:
        t = float(self.wake_done.min()) if len(self.wake_done) else np.inf
        thr = self.cfg.idle_off_s
        if thr is not None:
            idle = self.idle_since[self.state == ON]
            if len(idle):
                t = min(t, float(idle.min()) + thr)
        self.next_time = t

    def _close(self, node: int, now: float) -> None:
        self._iv.append((node, int(self.state[node]), float(self.since[node]), now))
        self.since[node] = now

    def _switch_off(self, eng: EngineView, node: int) -> None:
        d = int(self.cluster.node_devices[node])
        if int(eng.nodes_i[NODE_FREE, node]) != d or self.state[node] != ON:
            return  # only a whole idle node that is on
        eng.nodes_i[NODE_FREE, node] = 0
        eng.types_i[TYPE_FREE, self.cluster.node_type[node]] -= d
        self.state[node] = OFF
        self.since[node] = eng.now
        self.idle_since[node] = np.inf
        self.floor_w -= float(self.node_w[node])

    def _wake(self, eng: EngineView, node: int) -> None:
        self._close(node, eng.now)
        self.state[node] = WAKING
        self.wake_done[node] = eng.now + self.wake_s[self.cluster.node_type[node]]
        self.floor_w += float(self.node_w[node])

    def _cap(self, eng: EngineView, js: IntArray, caps: FloatArray) -> None:
        """Jobs ``js`` just started: run at ``throughput(cap)`` of their rate, drawing
        ``cap × busy_w`` per device."""
        t = eng.ji[JI_ALLOC_TYPE, js]
        c = np.where(np.isfinite(caps), caps, 1.0)
        c = np.clip(c, self.min_cap[t], 1.0)
        self.cap[js] = c
        self.saving_w[js] = eng.ji[JI_ALLOC_N, js] * self.busy_w[t] * (1.0 - c)
        low = c < 1.0
        if not low.any():
            return
        jl, tl, cl = js[low], t[low], c[low]
        factor = np.array(
            [
                float(self.profiles[k].throughput(x))
                for k, x in zip(tl.tolist(), cl.tolist(), strict=True)
            ]
        )
        rerate(eng, jl, eng.jf[JF_CRATE, jl] * factor)
        for j, x in zip(jl.tolist(), cl.tolist(), strict=True):
            self._caps.append((j, eng.now, x))

    def _wake_for(self, eng: EngineView, waiting: IntArray, types: IntArray | None) -> None:
        """Wake off nodes, fewest first (most devices, then lowest index), for the first
        :data:`WAKE_LOOKAHEAD` jobs of ``waiting`` (in order) that free and waking devices
        cannot hold, on the fastest type that can, within the budget."""
        cl = self.cluster
        nt = cl.n_types
        ntype = cl.node_type
        avail = eng.types_i[TYPE_FREE].astype(np.int64).copy()
        waking = self.state == WAKING
        avail += np.bincount(ntype[waking], weights=cl.node_devices[waking], minlength=nt).astype(
            np.int64
        )
        budget = self.cfg.budget_w
        power = self.it_power_w(eng) if budget is not None else 0.0
        for k, j in enumerate(waiting[:WAKE_LOOKAHEAD].tolist()):
            off = self.state == OFF
            if not off.any():
                return
            n = int(eng.ji[JI_GANG, j])
            rate = eng.rate[j]
            want = int(types[k]) if types is not None and types[k] >= 0 else -1
            order = [want] if want >= 0 else np.argsort(-rate, kind="stable").tolist()
            for t in order:
                if rate[t] <= 0:
                    continue
                if avail[t] >= n:
                    avail[t] -= n
                    break
                cand = np.flatnonzero(off & (ntype == t))
                if avail[t] + int(cl.node_devices[cand].sum()) < n:
                    continue
                cand = cand[np.lexsort((cand, -cl.node_devices[cand]))]
                need = n - avail[t]
                take = []
                for node in cand.tolist():
                    if need <= 0:
                        break
                    take.append(node)
                    need -= int(cl.node_devices[node])
                extra = float(self.node_w[take].sum())
                if budget is not None and power + extra > budget:
                    continue
                for node in take:
                    self._wake(eng, node)
                power += extra
                avail[t] += int(cl.node_devices[take].sum()) - n
                break


@dataclass(eq=False)
class PowerView:
    """What a policy sees of the power model (``State.power``); read only.

    Attributes
    ----------
    budget_w : float or None
        The cluster-wide IT power budget, W.
    busy_w, idle_w, min_cap : (n_types,) float64
        Each type's busy and idle draw per device (W) and lowest cap (fraction of busy_w).
    """

    model: PowerModel = field(repr=False)
    eng: EngineView = field(repr=False)

    @property
    def budget_w(self) -> float | None:
        return self.model.cfg.budget_w

    @property
    def busy_w(self) -> FloatArray:
        return self.model.busy_w

    @property
    def idle_w(self) -> FloatArray:
        return self.model.idle_w

    @property
    def min_cap(self) -> FloatArray:
        return self.model.min_cap

    def it_power_w(self) -> float:
        """IT power drawn now, W."""
        return self.model.it_power_w(self.eng)

    def cap_of(self, jobs: IntArray) -> FloatArray:
        """(m,) the cap of each running job's stint (1.0: uncapped)."""
        return np.asarray(self.model.cap[jobs], dtype=np.float64)

    def throughput(self, t: int, cap: FloatArray | float) -> FloatArray:
        """Fraction of the uncapped rate on type ``t`` at cap fraction(s) ``cap``."""
        return self.model.profiles[t].throughput(cap)


#: Stint rows :func:`state_power_w` handles at a time.
_STINT_CHUNK = 1 << 20


def state_power_w(result: RunResult) -> FloatArray:
    """(s, n_regions, 3) IT power (W, before PUE) of each region in each segment of the
    timeline, by state: ``BUSY`` (busy devices at their caps, with their share of their
    nodes' overhead), ``IDLE`` (idle devices of nodes on, with their share) and ``WAKE``
    (nodes waking: their idle draw). Off nodes draw nothing.

    A node's overhead is shared equally by its devices, each share going with its device's
    state. Stint and interval bounds are event times, hence segment boundaries. Without the
    model (``result.power`` ``None``) nothing is off, waking or capped, and the states add
    up to the power :mod:`clustersim.metrics` has always counted.
    """
    cl = result.cluster
    seg_t = np.asarray(result.seg_t, dtype=np.float64)
    s = max(len(seg_t) - 1, 0)
    nr = len(cl.regions)
    out = np.zeros((s, nr, 3))
    if s == 0:
        return out
    busy_w = np.array([t.busy_w for t in cl.types], dtype=np.float64)
    idle_w = np.array([t.idle_w for t in cl.types], dtype=np.float64)
    busy = np.asarray(result.seg_busy, dtype=np.float64).reshape(s, cl.n_types, nr)
    dev_busy_w = np.einsum("str,t->sr", busy, busy_w)
    dev_busy_idle_w = np.einsum("str,t->sr", busy, idle_w)
    share = np.zeros(cl.n_nodes)
    has = cl.node_devices > 0
    share[has] = cl.node_overhead_w[has] / cl.node_devices[has]

    def spread(start: FloatArray, end: FloatArray, region: IntArray, w: FloatArray) -> FloatArray:
        """(s, nr) the sum of ``w`` over the intervals covering each segment."""
        diff = np.zeros((s + 1, nr))
        add(diff, start, end, region, w)
        return np.asarray(np.cumsum(diff, axis=0)[:s], dtype=np.float64)

    def add(
        diff: FloatArray, start: FloatArray, end: FloatArray, region: IntArray, w: FloatArray
    ) -> None:
        i0 = np.searchsorted(seg_t, start, side="left")
        i1 = np.searchsorted(seg_t, end, side="left")
        np.add.at(diff, (np.minimum(i0, s), region), w)
        np.add.at(diff, (np.minimum(i1, s), region), -w)

    st = result.stints
    tr = result.power
    caps_of: dict[tuple[int, float], float] = {}
    if tr is not None:
        # each capped stint's rows: same job, same start
        caps_of = {
            (int(j), float(t)): float(c)
            for j, t, c in zip(tr.cap_job, tr.cap_start, tr.cap, strict=True)
        }
    # the stints in chunks, so that a run of millions of stints (a time-slicing policy on a
    # long trace) needs no per-stint temporaries of its whole length; every addition is made
    # in the same order as over the whole table at once
    d_share = np.zeros((s + 1, nr))
    d_saving = np.zeros((s + 1, nr))
    for a in range(0, len(st.devices), _STINT_CHUNK):
        b = a + _STINT_CHUNK
        held = st.devices[a:b] > 0
        node = st.node[a:b][held]
        dev = st.devices[a:b][held].astype(np.float64)
        region = cl.node_region[node]
        start, end = st.start[a:b][held], st.end[a:b][held]
        add(d_share, start, end, region, dev * share[node])
        if caps_of:
            caps = np.array(
                [
                    caps_of.get((int(j), float(t)), 1.0)
                    for j, t in zip(st.job[a:b][held], start, strict=True)
                ]
            )
            add(d_saving, start, end, region, dev * busy_w[cl.node_type[node]] * (1.0 - caps))
    busy_share = np.asarray(np.cumsum(d_share, axis=0)[:s], dtype=np.float64)
    saving = np.asarray(np.cumsum(d_saving, axis=0)[:s], dtype=np.float64)
    not_on = np.zeros((s, nr))
    waking = np.zeros((s, nr))
    if tr is not None:
        nw = node_idle_w(cl)
        w = nw[tr.node]
        r = cl.node_region[tr.node]
        not_on = spread(tr.start, tr.end, r, w)
        wk = tr.state == WAKING
        waking = spread(tr.start[wk], tr.end[wk], r[wk], w[wk])
    all_idle = np.bincount(cl.node_region, weights=node_idle_w(cl), minlength=nr)
    out[:, :, BUSY] = dev_busy_w - saving + busy_share
    out[:, :, IDLE] = all_idle[None, :] - not_on - dev_busy_idle_w - busy_share
    out[:, :, WAKE] = waking
    return out
