"""Spot capacity: pools whose nodes the provider reclaims, with notice, and prices them low.

A physical model the engine calls through the same small interface as node failures
(:mod:`clustersim.failures`, whose event loop and checkpoint rule it reuses);
``docs/failures.md`` ("Spot capacity") is the user-facing account.

The model
---------
* **Spot pools.** A pool of the cluster spec marked ``spot: true`` is rented at its spot
  price (``spot_price_per_hour``, or ``spot_discount`` off the type's on-demand price): the
  cloud cost charges the device-hours held on its nodes at that price (:func:`cost`). Its
  nodes are reclaimed when a run turns reclaims on (``EngineOptions.spot``).
* **Reclaims.** By a rate: each spot node is reclaimed after an exponential time of mean
  ``spot_reclaim_hours`` and comes back after an exponential time of mean
  ``spot_return_hours``, alternately. By a trace: ``(node, reclaimed_at_s, returned_at_s)``
  rows replace the draws (:func:`read_trace_csv`, :func:`check_trace`). A reclaimed node's
  devices leave the cluster until it returns, and the jobs on it (the whole gang) go back to
  the queue, exactly as for a failure; a node down for a failure and reclaimed too comes back
  when both are over.
* **Notice.** The provider warns ``spot_notice_s`` before a reclaim. A job whose checkpoint
  write time (``checkpoint_overhead_s``, ``O``) fits in the notice (``0 < O <= notice``;
  a zero notice is no notice) checkpoints in the window and keeps all its progress: it pays
  only the restore delay when it starts again, like a preemption. With a shorter notice it
  rolls back to its last periodic checkpoint, as after a failure
  (:func:`clustersim.failures.roll_back`).
* **Checkpoints** are those of the failure model (a job progresses at ``I / (I + O)`` of its
  rate); with failures on too, both share them.

Randomness: node ``i``'s ``r``-th time to reclaim and time to return are drawn, vectorised
over nodes, from ``default_rng(SeedSequence(seed, spawn_key=(4, r)))`` (children 0, 1 are the
policy's and placement's, ``(2, r)`` the failures', ``(3,)`` the stragglers'), so a node's
reclaims depend on the seed, its index and its parameters only: the same for every policy of
a comparison, and independent of its hardware failures.

Sources of the defaults
-----------------------
* Notice: AWS gives a two-minute interruption notice to EC2 Spot Instances (Amazon EC2 User
  Guide, "Spot Instance interruption notices"); Google Cloud gives Spot and preemptible VMs
  30 seconds (Compute Engine documentation, "Spot VMs", "Preemption process"). Default
  :data:`DEFAULT_NOTICE_S` = 120 s, AWS's; set 30 for Google Cloud.
* Price: Google Cloud lists Spot VMs at 60 to 91 % off on-demand prices, AWS Spot at up to
  90 % off. Default :data:`DEFAULT_DISCOUNT` = 0.6, the low end (the conservative case).
* Reclaim rate: AWS's Spot Instance Advisor buckets instance types by the share of instances
  interrupted over the trailing month (< 5 %, 5-10 %, ..., > 20 %; GPU instance types are
  often in the top bucket). Default :data:`DEFAULT_RECLAIM_HOURS` = 720 h / 0.2 = 3,600 h,
  the top bucket's edge. **Assumption**: a constant rate per node, independent of load and
  between nodes (real reclaims come in waves, when the provider's capacity runs short).
* Return: no public figure; **assumption** :data:`DEFAULT_RETURN_HOURS` = 1 h.
* Alibaba's 2026 spot inventory (ASPLOS'26, ``shared/data/traces/alibaba-spot-2026/``) lists
  4,278 nodes and their GPUs, not reclaim times: it is a cluster, not a reclaim trace.

The engine's side (the only calls it makes)
-------------------------------------------
:meth:`SpotReclaims.rates` once before the run, :attr:`SpotReclaims.next_time` at each event,
:meth:`SpotReclaims.apply` when a reclaim or a return is due, :meth:`SpotReclaims.record` at
the end (:class:`SpotRecord`, kept as ``RunResult.spot``; :func:`summary` turns it into the
summary metrics, :func:`cost` prices spot device-hours for :func:`clustersim.metrics.summary`).
"""

from __future__ import annotations

import csv
import heapq
import io
import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from clustersim.cluster import Cluster
from clustersim.errors import ClustersimError, SimulationError
from clustersim.failures import (
    CHECKPOINT_INTERVAL_S,
    CHECKPOINT_OVERHEAD_S,
    EngineView,
    FailureOptions,
    NodeFailures,
    roll_back,
    useful_time,
)
from clustersim.kernels import JF_RESTORE, NODE_DEVICES

if TYPE_CHECKING:
    from clustersim.result import RunResult

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

#: Default share off the on-demand price of a spot pool that gives no price (module doc).
DEFAULT_DISCOUNT = 0.6
#: Default mean hours between two reclaims of one spot node (module doc).
DEFAULT_RECLAIM_HOURS = 720.0 / 0.2
#: [assumed] Default mean hours until a reclaimed node's capacity returns.
DEFAULT_RETURN_HOURS = 1.0
#: Default notice before a reclaim, s: AWS's two minutes (Google Cloud gives 30 s).
DEFAULT_NOTICE_S = 120.0
#: Longest notice a pool may give, s (an hour is no longer a spot market's warning).
MAX_NOTICE_S = 3600.0
#: Spawn-key prefix of the reclaim draws under ``SeedSequence(seed)`` (0: policy,
#: 1: placement, 2: failures, 3: stragglers).
SEED_CHILD = 4
#: Most rows a reclaim trace may have (an experiment stores it).
MAX_TRACE_ROWS = 100_000
#: The columns of a reclaim trace, in a CSV header and in an API row.
TRACE_COLUMNS = ("node", "reclaimed_at_s", "returned_at_s")

_EMPTY_I = np.zeros(0, dtype=np.int64)


@dataclass(frozen=True)
class SpotOptions:
    """Turns spot reclaims on for a run (``EngineOptions.spot``).

    Attributes
    ----------
    trace
        Reclaims to replay instead of drawing them: ``(node, reclaimed_at_s, returned_at_s)``
        rows (every node a spot node, a node's intervals disjoint). ``None`` (the default):
        each spot node is reclaimed at its pool's rate.
    checkpoint_interval_s, checkpoint_overhead_s
        The jobs' checkpoints (one value or one per job), as in
        :class:`~clustersim.failures.FailureOptions`; ``None``: the failure options' when
        failures are on too, else the defaults (3600 s, 60 s). With failures on they must be
        left out or equal to the failure options' (a job has one checkpoint cadence).
    """

    trace: Sequence[tuple[int, float, float]] | None = None
    checkpoint_interval_s: float | FloatArray | None = None
    checkpoint_overhead_s: float | FloatArray | None = None

    @property
    def draws(self) -> bool:
        """Whether reclaims are drawn at random (so the seed matters)."""
        return self.trace is None


def node_parameters(cluster: Cluster) -> tuple[BoolArray, FloatArray, FloatArray, FloatArray]:
    """Each node's spot data: whether it is spot, and its mean hours to a reclaim, mean hours
    to return and notice (s), ``nan`` for on-demand nodes.

    Returns
    -------
    spot : (n_nodes,) bool
    reclaim_h, return_h, notice_s : (n_nodes,) float64
    """
    n = cluster.n_nodes
    spot = cluster.node_spot

    def col(a: FloatArray) -> FloatArray:
        a = np.asarray(a, dtype=np.float64)
        return a.copy() if len(a) == n else np.full(n, np.nan)

    return (
        spot,
        col(cluster.node_spot_reclaim_h),
        col(cluster.node_spot_return_h),
        col(cluster.node_spot_notice_s),
    )


@dataclass(eq=False)
class SpotRecord:
    """What spot reclaims did in one run (``RunResult.spot``).

    Attributes
    ----------
    node, reclaimed, returned : (f,) int64, float64, float64
        Each reclaim: the node, when it was taken and when it came back (``returned`` may be
        past the end of the run, ``inf`` never for drawn reclaims).
    restarts : (n,) int64
        Times each job was stopped by a reclaim.
    saved_by_notice : (n,) int64
        Of those, the times its checkpoint fitted in the notice (nothing lost).
    lost_work : (n,) float64
        Work units each job redid after reclaims without enough notice.
    lost_wall_s, lost_device_s : (n,) float64
        The computing time that work took, wall seconds and device-seconds (as in
        :class:`~clustersim.failures.FailureRecord`).
    interval_s, overhead_s, restore_s : (n,) float64
        Each job's checkpoint interval and overhead, and its restore delay.
    end : float
        When the run ended.
    devices : (f,) int64
        Devices of each reclaimed node.
    """

    node: IntArray
    reclaimed: FloatArray
    returned: FloatArray
    restarts: IntArray
    saved_by_notice: IntArray
    lost_work: FloatArray
    lost_wall_s: FloatArray
    lost_device_s: FloatArray
    interval_s: FloatArray
    overhead_s: FloatArray
    restore_s: FloatArray
    end: float
    devices: IntArray = field(default_factory=lambda: _EMPTY_I)


class SpotReclaims(NodeFailures):
    """The engine's spot mechanism (module doc): the failure model's event loop
    (:meth:`NodeFailures.apply`) with its own reclaim timelines, its own counters and the
    notice rule.

    Parameters
    ----------
    cluster
        The inventory (spot pools and their reclaim parameters: :func:`node_parameters`).
    n_jobs
        Jobs of the run.
    options
        The trace, if any, and the checkpoint knobs.
    seed
        The run's root seed.
    start
        When the reclaim clocks start (the run's first submit), s.
    failures
        The run's node failures, if on: the two share the nodes' up/down state and the jobs'
        checkpoints.

    Raises
    ------
    ClustersimError
        For a trace row naming a node that is not spot, or checkpoint knobs that differ from
        the failure options'.
    """

    def __init__(
        self,
        cluster: Cluster,
        n_jobs: int,
        options: SpotOptions,
        seed: int,
        start: float,
        failures: NodeFailures | None = None,
    ) -> None:
        given = {
            "checkpoint_interval_s": options.checkpoint_interval_s,
            "checkpoint_overhead_s": options.checkpoint_overhead_s,
        }
        if failures is not None:
            self.interval, self.overhead = failures.interval, failures.overhead
            for name, mine in zip(given, (self.interval, self.overhead), strict=True):
                v = given[name]
                if v is not None and not np.array_equal(np.broadcast_to(v, mine.shape), mine):
                    raise ClustersimError(
                        f"spot.{name}: differs from the failure options' (a job has one"
                        " checkpoint cadence; give it once)"
                    )
            self.outages = failures.outages
        else:
            ckpt = FailureOptions(
                checkpoint_interval_s=(
                    CHECKPOINT_INTERVAL_S
                    if options.checkpoint_interval_s is None
                    else options.checkpoint_interval_s
                ),
                checkpoint_overhead_s=(
                    CHECKPOINT_OVERHEAD_S
                    if options.checkpoint_overhead_s is None
                    else options.checkpoint_overhead_s
                ),
            )
            self.interval, self.overhead = ckpt.per_job(n_jobs)
            self.outages = np.zeros(cluster.n_nodes, dtype=np.int64)
        self._shares_checkpoints = failures is not None
        self.cycle = self.interval + self.overhead
        n_nodes = cluster.n_nodes
        self._n_nodes = n_nodes
        spot, reclaim_h, return_h, notice_s = node_parameters(cluster)
        self.notice = notice_s
        self._heap: list[tuple[float, int, int]] = []  # (time, node, 1 = reclaim / 0 = return)
        self._seed = seed
        self._rounds: list[tuple[FloatArray, FloatArray]] = []
        self._cycle = np.zeros(n_nodes, dtype=np.int64)
        self._down_at = np.full(n_nodes, np.nan)
        self._scripted = options.trace is not None
        self._log: list[tuple[int, float, float, int, float]] = []
        self._kills = np.zeros(n_nodes, dtype=np.int64)
        self._kill_lost = np.zeros(n_nodes)
        self.restarts = np.zeros(n_jobs, dtype=np.int64)
        self.saved = np.zeros(n_jobs, dtype=np.int64)
        self.lost_work = np.zeros(n_jobs)
        self.lost_wall = np.zeros(n_jobs)
        self.lost_dev = np.zeros(n_jobs)
        if options.trace is not None:
            rows = check_trace(options.trace)
            check_trace_nodes(rows, cluster)
            for node, down, up in rows:
                self._heap.append((down, node, 1))
                self._heap.append((up, node, 0))
            heapq.heapify(self._heap)
        else:
            self._reclaim_s = np.where(spot, reclaim_h, 1.0) * 3600.0
            self._return_s = np.where(spot, return_h, 1.0) * 3600.0
            up0, _ = self._round(0)
            for node in np.flatnonzero(spot).tolist():
                self._heap.append((start + float(up0[node]), node, 1))
            heapq.heapify(self._heap)
        self._start = start
        self.next_time = max(self._heap[0][0], start) if self._heap else math.inf

    def _round(self, r: int) -> tuple[FloatArray, FloatArray]:
        """Every node's ``r``-th time to reclaim and time to return (s), drawn once."""
        while len(self._rounds) <= r:
            k = len(self._rounds)
            rng = np.random.default_rng(
                np.random.SeedSequence(self._seed, spawn_key=(SEED_CHILD, k))
            )
            up = self._reclaim_s * rng.standard_exponential(self._n_nodes)
            back = self._return_s * rng.standard_exponential(self._n_nodes)
            self._rounds.append((up, back))
        return self._rounds[r]

    # ------------------------------------------------------------------ engine calls
    def rates(self, rates: Any) -> Any:
        """The run's rates with checkpointing's cost (already applied by the failures when
        they are on too)."""
        return rates if self._shares_checkpoints else super().rates(rates)

    def _kill(self, eng: EngineView, node: int) -> tuple[int, float]:
        """Stop the jobs on ``node``: those whose checkpoint fits in the node's notice keep
        all their progress, the others roll back to their last checkpoint. Returns the jobs
        killed and the device-seconds of computing lost."""
        out = roll_back(eng, node, self.interval, self.overhead, notice_s=float(self.notice[node]))
        if out is None:
            return 0, 0.0
        victims, lost, lost_wall, devices, kept = out
        self.restarts[victims] += 1
        self.saved[victims] += kept.astype(np.int64)
        self.lost_work[victims] += lost
        self.lost_wall[victims] += lost_wall
        self.lost_dev[victims] += lost_wall * devices
        return len(victims), float((lost_wall * devices).sum())

    def record(self, eng: EngineView, end: float) -> SpotRecord:  # type: ignore[override]
        """What reclaims did, for ``RunResult.spot``."""
        nodes, down, up, _, _ = self._intervals()
        return SpotRecord(
            node=nodes,
            reclaimed=down,
            returned=up,
            restarts=self.restarts.copy(),
            saved_by_notice=self.saved.copy(),
            lost_work=self.lost_work.copy(),
            lost_wall_s=self.lost_wall.copy(),
            lost_device_s=self.lost_dev.copy(),
            interval_s=self.interval.copy(),
            overhead_s=self.overhead.copy(),
            restore_s=eng.jf[JF_RESTORE].copy(),
            end=float(end),
            devices=eng.nodes_i[NODE_DEVICES, nodes].copy(),
        )


# ---------------------------------------------------------------------- reclaim traces


def _check_rows(
    rows: Sequence[tuple[Any, Any, Any]], name: Callable[[int, str], str]
) -> list[tuple[int, float, float]]:
    """Reclaim rows validated: ``name(i, column)`` names row ``i``'s field in an error."""
    if len(rows) > MAX_TRACE_ROWS:
        raise ClustersimError(f"{name(MAX_TRACE_ROWS, 'node')}: at most {MAX_TRACE_ROWS} rows")
    out: list[tuple[int, float, float]] = []
    for i, (node, down, up) in enumerate(rows):
        if (
            isinstance(node, bool)
            or not isinstance(node, int | float)
            or not math.isfinite(node)
            or node != int(node)
        ):
            raise ClustersimError(f"{name(i, 'node')}: must be a node index (an integer)")
        if node < 0:
            raise ClustersimError(f"{name(i, 'node')}: must be >= 0, not {node:g}")
        times = []
        for col, v in (("reclaimed_at_s", down), ("returned_at_s", up)):
            if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
                raise ClustersimError(f"{name(i, col)}: must be a finite number of seconds")
            times.append(float(v))
        if times[0] < 0:
            raise ClustersimError(f"{name(i, 'reclaimed_at_s')}: must be >= 0, not {times[0]:g}")
        if times[1] <= times[0]:
            raise ClustersimError(
                f"{name(i, 'returned_at_s')}: must be after reclaimed_at_s ({times[0]:g})"
            )
        out.append((int(node), times[0], times[1]))
    order = sorted(range(len(out)), key=lambda i: (out[i][0], out[i][1]))
    for a, b in itertools.pairwise(order):
        if out[a][0] == out[b][0] and out[b][1] < out[a][2]:
            raise ClustersimError(
                f"{name(b, 'reclaimed_at_s')}: node {out[b][0]} is still reclaimed then"
                f" (until {out[a][2]:g} s, by row {a})"
            )
    return out


def check_trace(rows: Sequence[Any], where: str = "spot.trace") -> list[tuple[int, float, float]]:
    """A reclaim trace given as rows, validated, sorted by node and time.

    A row is an object ``{"node", "reclaimed_at_s", "returned_at_s"}`` (the API's form) or a
    ``(node, reclaimed_at_s, returned_at_s)`` triple (Python's): ``node`` a node index
    (>= 0), the times finite seconds, ``0 <= reclaimed_at_s < returned_at_s``, a node's
    intervals disjoint. Whether each node is spot is :func:`check_trace_nodes`' part.

    Raises
    ------
    ClustersimError
        Naming the row and field, ``spot.trace[3].returned_at_s: must be after ...``.
    """
    if not isinstance(rows, list | tuple):
        raise ClustersimError(f"{where}: want a list of reclaims")

    def name(i: int, col: str) -> str:
        return f"{where}[{i}].{col}"

    triples: list[tuple[Any, Any, Any]] = []
    for i, row in enumerate(rows):
        if isinstance(row, dict):
            for key in row:
                if key not in TRACE_COLUMNS:
                    raise ClustersimError(
                        f"{where}[{i}].{key}: unknown field (known: {', '.join(TRACE_COLUMNS)})"
                    )
            for key in TRACE_COLUMNS:
                if key not in row:
                    raise ClustersimError(f"{name(i, key)}: is required")
            triples.append((row["node"], row["reclaimed_at_s"], row["returned_at_s"]))
        elif isinstance(row, list | tuple) and len(row) == 3:
            triples.append((row[0], row[1], row[2]))
        else:
            raise ClustersimError(f"{where}[{i}]: want {{{', '.join(TRACE_COLUMNS)}}}")
    return sorted(_check_rows(triples, name))


def read_trace_csv(source: str | Path) -> list[tuple[int, float, float]]:
    """A reclaim trace from a CSV file (a path) with the header
    ``node,reclaimed_at_s,returned_at_s`` (any order; blank lines skipped).

    Raises
    ------
    ClustersimError
        Naming the file, the line (1 = the header) and the column.
    """
    path = Path(source)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise ClustersimError(f"{path}: cannot read the reclaim trace ({exc})") from None
    return parse_trace_csv(text, str(path))


def parse_trace_csv(text: str, path: str = "spot trace") -> list[tuple[int, float, float]]:
    """A reclaim trace from CSV text (:func:`read_trace_csv`); errors start with ``path``."""
    reader = csv.reader(io.StringIO(text))
    header: list[str] | None = None
    lines: list[int] = []
    rows: list[tuple[Any, Any, Any]] = []
    for record in reader:
        if not any(cell.strip() for cell in record):
            continue
        if header is None:
            header = [c.strip() for c in record]
            missing = [c for c in TRACE_COLUMNS if c not in header]
            extra = [c for c in header if c not in TRACE_COLUMNS]
            if missing or extra or len(header) != 3:
                raise ClustersimError(
                    f"{path} line {reader.line_num}: want the header"
                    f" {','.join(TRACE_COLUMNS)}, got {','.join(header)!r}"
                )
            continue
        if len(record) != 3:
            raise ClustersimError(
                f"{path} line {reader.line_num}: want 3 fields, got {len(record)}"
            )
        values: dict[str, Any] = {}
        for col, cell in zip(header, record, strict=True):
            try:
                values[col] = float(cell)
            except ValueError:
                raise ClustersimError(
                    f"{path} line {reader.line_num}: {col}: not a number: {cell.strip()!r}"
                ) from None
        lines.append(reader.line_num)
        rows.append((values["node"], values["reclaimed_at_s"], values["returned_at_s"]))
    if header is None:
        raise ClustersimError(f"{path}: empty reclaim trace (want a header line)")
    return sorted(_check_rows(rows, lambda i, col: f"{path} line {lines[i]}: {col}"))


def check_trace_nodes(
    rows: Sequence[tuple[int, float, float]], cluster: Cluster, where: str = "spot.trace"
) -> None:
    """Refuse a reclaim of a node that the cluster does not have or that is not spot.

    Raises
    ------
    ClustersimError
        ``spot.trace: node 5 is not in a spot pool of cluster 'c' (its spot nodes: 0-3)``.
    """
    spot = cluster.node_spot
    for node, _, _ in rows:
        if node >= cluster.n_nodes or not spot[node]:
            idx = np.flatnonzero(spot)
            nodes = f"{idx[0]}-{idx[-1]}" if len(idx) else "none"
            what = "not in a spot pool" if node < cluster.n_nodes else "not a node"
            raise ClustersimError(
                f"{where}: node {node} is {what} of cluster {cluster.name!r}"
                f" ({cluster.n_nodes} nodes; spot nodes: {nodes})"
            )


# ---------------------------------------------------------------------- metrics


def summary(result: RunResult) -> dict[str, float | int | None]:
    """The spot metrics of a run with reclaims on (definitions: ``docs/failures.md``).

    Returns
    -------
    dict
        ``spot_reclaims`` (reclaims that began before the run ended),
        ``spot_device_hours_reclaimed`` (devices × time reclaimed, within the run),
        ``spot_restarts`` (job stops by a reclaim), ``spot_jobs_restarted``,
        ``spot_restarts_saved_by_notice`` (of those, the ones whose checkpoint fitted in the
        notice), ``spot_lost_work_device_hours``; and ``checkpoint_device_hours``,
        ``goodput`` and ``effective_training_time_ratio`` as with failures, counting the work
        lost to reclaims and to failures (when those are on too) together.
    """
    rec = result.spot
    if rec is None:
        return {}
    lost_dev = rec.lost_device_s.copy()
    lost_wall = rec.lost_wall_s.copy()
    if result.failures is not None:
        lost_dev += result.failures.lost_device_s
        lost_wall += result.failures.lost_wall_s
    shared = useful_time(result, rec.interval_s, rec.overhead_s, rec.restore_s, lost_dev, lost_wall)
    down_s = np.minimum(rec.returned, rec.end) - np.minimum(rec.reclaimed, rec.end)
    return {
        "spot_reclaims": int(np.count_nonzero(rec.reclaimed <= rec.end)),
        "spot_device_hours_reclaimed": float((down_s * rec.devices).sum()) / 3600.0,
        "spot_restarts": int(rec.restarts.sum()),
        "spot_jobs_restarted": int(np.count_nonzero(rec.restarts)),
        "spot_restarts_saved_by_notice": int(rec.saved_by_notice.sum()),
        "spot_lost_work_device_hours": float(rec.lost_device_s.sum()) / 3600.0,
        **shared,
    }


def cost(result: RunResult, window: tuple[float, float]) -> tuple[float, float, float]:
    """Device time held on spot nodes within ``window`` and what it costs.

    From the stints (devices × time on each node, clipped to the window, the interval the
    cloud cost counts). Returns ``(device_hours, usd_at_spot_price, usd_at_on_demand_price)``.
    """
    cl = result.cluster
    spot = cl.node_spot
    if not spot.any():
        return 0.0, 0.0, 0.0
    st = result.stints
    on = spot[st.node]
    span = np.clip(st.end[on], *window) - np.clip(st.start[on], *window)
    dev_s = span * st.devices[on]
    nodes = st.node[on]
    spot_price = np.asarray(cl.node_spot_price, dtype=np.float64)[nodes]
    demand = np.array([t.price_per_hour for t in cl.types], dtype=np.float64)
    on_demand = demand[cl.node_type[nodes]]
    return (
        float(dev_s.sum()) / 3600.0,
        float((dev_s * spot_price).sum()) / 3600.0,
        float((dev_s * on_demand).sum()) / 3600.0,
    )


# ---------------------------------------------------------------------- scenario settings

#: The spot settings of a scenario (an experiment's ``spot`` object): the reclaim trace and
#: the checkpoint knobs (name, least value, whether that bound is open).
CHECKPOINT_SETTINGS: tuple[tuple[str, float, bool], ...] = (
    ("checkpoint_interval_s", 0.0, True),
    ("checkpoint_overhead_s", 0.0, False),
)


def check_engine(colocates: bool, power: bool, whole_steps: bool) -> None:
    """Refuse what spot reclaims cannot be combined with yet: what failures cannot
    (:func:`clustersim.failures.check_engine`: the power model, whose node power states a
    reclaimed node would break).

    Raises
    ------
    SimulationError
        With the reason.
    """
    del colocates, whole_steps
    if power:
        raise SimulationError(
            "spot reclaims and the power model cannot be combined yet (a reclaimed node's"
            " power state is not modelled)"
        )


def check_settings(settings: object, where: str = "spot") -> dict[str, Any]:
    """The spot settings of a scenario, validated, with the defaults filled in.

    ``settings`` is a mapping of ``trace`` (a list of reclaim rows, :func:`check_trace`, or
    ``None``: drawn at the spot pools' rates, the default), ``checkpoint_interval_s`` (> 0,
    default 3600) and ``checkpoint_overhead_s`` (>= 0, default 60).

    Raises
    ------
    ClustersimError
        Naming the key as ``<where>.<key>`` (and a trace row as ``<where>.trace[i].<field>``).
    """
    if not isinstance(settings, dict):
        raise ClustersimError(f"{where}: want an object of spot settings")
    known = {"trace", *(name for name, *_ in CHECKPOINT_SETTINGS)}
    for key in settings:
        if key not in known:
            raise ClustersimError(f"{where}.{key}: unknown setting (known: {sorted(known)})")
    defaults = {
        "checkpoint_interval_s": CHECKPOINT_INTERVAL_S,
        "checkpoint_overhead_s": CHECKPOINT_OVERHEAD_S,
    }
    out: dict[str, Any] = {}
    trace = settings.get("trace")
    out["trace"] = (
        None
        if trace is None
        else [
            dict(zip(TRACE_COLUMNS, row, strict=True))
            for row in check_trace(trace, f"{where}.trace")
        ]
    )
    for name, low, open_ in CHECKPOINT_SETTINGS:
        value = settings.get(name, defaults[name])
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ClustersimError(f"{where}.{name}: must be a number, not {value!r}")
        v = float(value)
        if not math.isfinite(v) or (v <= low if open_ else v < low):
            raise ClustersimError(
                f"{where}.{name}: must be a finite number {'>' if open_ else '>='} {low:g}"
            )
        out[name] = v
    return out


def check_against_failures(spot: dict[str, Any], failures: dict[str, Any] | None) -> None:
    """Refuse checkpoint knobs of the spot settings that differ from the failure settings'
    (both validated): a job has one checkpoint cadence.

    Raises
    ------
    ClustersimError
        Naming ``spot.<key>``.
    """
    if failures is None:
        return
    for name, *_ in CHECKPOINT_SETTINGS:
        if spot.get(name) != failures.get(name):
            raise ClustersimError(
                f"spot.{name}: {spot.get(name):g} differs from failures.{name}"
                f" ({failures.get(name):g}); a job has one checkpoint cadence"
            )


def from_settings(settings: object) -> SpotOptions:
    """The run's :class:`SpotOptions` from a scenario's spot settings (:func:`check_settings`)."""
    s = check_settings(settings)
    trace = None
    if s["trace"] is not None:
        trace = [(r["node"], r["reclaimed_at_s"], r["returned_at_s"]) for r in s["trace"]]
    return SpotOptions(
        trace=trace,
        checkpoint_interval_s=float(s["checkpoint_interval_s"]),
        checkpoint_overhead_s=float(s["checkpoint_overhead_s"]),
    )
