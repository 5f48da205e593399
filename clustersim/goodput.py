"""Pollux's goodput model: throughput × statistical efficiency, from Pollux's profiles.

Qiao et al., "Pollux: Co-adaptive Cluster Scheduling for Goodput-Optimized Deep Learning",
OSDI'21. The rules are those of the authors' simulator (petuum/adaptdl, ``simulator/``),
restated in ``docs/pollux-fidelity.md`` (sections 2 and 5); this module is our code.

Data
----
One folder per model under :func:`profile_dir` (``shared/data/throughput/pollux/<model>/``,
Apache-2.0, read at run time, nothing is shipped): ``placements.csv`` (step and sync time
per placement and local batch), ``scalability.csv`` (the same per node and replica count),
``validation-<B>.csv`` (per epoch: ``progress``, ``iteration``, ``grad_sqr``, ``grad_var``
when training with total batch ``B``). ``CLUSTERSIM_POLLUX_PROFILES`` names another folder.

Units
-----
*Progress* is counted as Pollux counts it: steps of the model's smallest profiled batch
(``init_bsz``) worth of statistical progress. A job is done when its progress reaches
:attr:`Application.total_progress` (the end of its last epoch). *Goodput* is progress per
second: ``gain / step_total`` with ``gain = (var + sqr) / (var / scale + sqr)``,
``scale = batch / init_bsz`` (so goodput = throughput × efficiency, efficiency = gain /
scale) and ``step_total = step + accum × (step − sync)`` seconds on a T4.

A *placement* is a tuple of GPUs per node (``(4, 2)``: 6 GPUs on two nodes). Profiles are
from 4-GPU nodes; a placement with more than 4 GPUs on a node is evaluated as the same
replicas consolidated on 4-GPU nodes (at least as many nodes as it spans).
"""

from __future__ import annotations

import csv
import functools
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    from clustersim.cluster import Cluster
    from clustersim.jobs import JobTable

FloatArray = npt.NDArray[np.float64]

#: Epochs trained and largest local batch (None: the profiled maximum) per model
#: (``APPLICATIONS`` of the reference's ``applications.py``).
MODELS: dict[str, tuple[int, int | None]] = {
    "bert": (2, None),
    "cifar10": (100, None),
    "deepspeech2": (80, None),
    "imagenet": (90, None),
    "ncf": (10, None),
    "yolov3": (50, 8),
}
#: Models Pollux's simulator runs with a fixed total batch size (and on one replica).
FIXED_BATCH: dict[str, int] = {"ncf": 32768}
#: GPUs per node of the profiles' testbed (g4dn.12xlarge, four T4 each).
NODE_GPUS = 4
#: Total batch sizes the batch-size search tries (geometric, as the reference's ``optimize``).
BATCH_CANDIDATES = 50
#: Accelerator type of the profiles.
PROFILE_TYPE = "T4"
_EPS = 1e-8


def profile_dir() -> Path:
    """Folder of the Pollux profiles: ``$CLUSTERSIM_POLLUX_PROFILES``, else
    ``shared/data/throughput/pollux`` beside the repository."""
    env = os.environ.get("CLUSTERSIM_POLLUX_PROFILES")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[2] / "shared" / "data" / "throughput" / "pollux"


def consolidated(replicas: int, node_gpus: int = NODE_GPUS) -> tuple[int, ...]:
    """``replicas`` GPUs on as few nodes of ``node_gpus`` as possible, fullest first."""
    full, rest = divmod(int(replicas), node_gpus)
    return (node_gpus,) * full + ((rest,) if rest else ())


@dataclass(frozen=True)
class Config:
    """A job's configuration on a placement: goodput (progress/s on T4), the atomic (per
    GPU, per pass) batch and the gradient-accumulation steps; total batch =
    ``replicas × atomic × (accum + 1)``."""

    goodput: float
    atomic: int
    accum: int
    batch: int


@dataclass(eq=False)
class Application:
    """One profiled model (see the module doc)."""

    name: str
    max_epochs: int
    sizes: FloatArray  # (B,) profiled total batch sizes, ascending
    progress: FloatArray  # (B, E) progress at the end of each epoch
    iteration: FloatArray  # (B, E) iterations at the end of each epoch
    grad_sqr: FloatArray  # (B, E)
    grad_var: FloatArray  # (B, E)
    placements: dict[tuple[int, ...], FloatArray]  # canonical placement -> (3, k) bsz/step/sync
    points: FloatArray  # (p, 3) nodes, replicas, local_bsz for the 3-D interpolation
    values: FloatArray  # (p, 2) step, sync
    lines: dict[tuple[int, int], FloatArray]  # (nodes, replicas) -> (3, k) of those points
    min_local: int
    max_local: int
    fixed_batch: int | None = None
    _interp: object | None = field(default=None, repr=False)

    @property
    def init_bsz(self) -> float:
        """Smallest profiled total batch size (progress is counted in its steps)."""
        return float(self.sizes[0])

    @property
    def max_bsz(self) -> float:
        """Largest profiled total batch size."""
        return float(self.sizes[-1])

    @functools.cached_property
    def boundaries(self) -> FloatArray:
        """``(max_epochs + 1,)`` progress at the start of each epoch and at the end: 0, then
        the smallest progress over the batch sizes at the end of each epoch."""
        ends = self.progress[:, : self.max_epochs].min(axis=0)
        return np.concatenate([[0.0], ends])

    @property
    def total_progress(self) -> float:
        """Progress at which the job is done (end of its last epoch)."""
        return float(self.boundaries[-1])

    def epoch(self, progress: float) -> int:
        """Epoch a job with ``progress`` is in (epochs whose end it has reached), at most
        ``max_epochs − 1``."""
        e = int(np.searchsorted(self.boundaries[1:], progress, side="right"))
        return min(e, self.max_epochs - 1)

    def grad_stats(self, batch: float | FloatArray, epoch: int) -> tuple[FloatArray, FloatArray]:
        """``(grad_sqr, grad_var)`` at total ``batch`` in ``epoch``: linear in the batch
        between the profiled sizes around it (clipped to the profiled range)."""
        b = np.clip(np.asarray(batch, dtype=np.float64), self.sizes[0], self.sizes[-1])
        sqr = np.interp(b, self.sizes, self.grad_sqr[:, epoch])
        var = np.interp(b, self.sizes, self.grad_var[:, epoch])
        return sqr, var

    def iterations(self, batch: float, epoch: int) -> float:
        """Iterations at total ``batch`` by the end of ``epoch``: linear in the batch between
        the profiled sizes around it (the reference's ``get_iteration``)."""
        b = min(max(float(batch), float(self.sizes[0])), float(self.sizes[-1]))
        return float(np.interp(b, self.sizes, self.iteration[:, epoch]))

    def gain(self, batch: float | FloatArray, epoch: int) -> FloatArray:
        """Statistical progress per step of total ``batch`` relative to one step of
        ``init_bsz``: ``(var + sqr) / (var / scale + sqr)`` (1 where not positive)."""
        sqr, var = self.grad_stats(batch, epoch)
        scale = np.asarray(batch, dtype=np.float64) / self.init_bsz
        den = var / scale + sqr
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(den > 0, (var + sqr) / np.where(den > 0, den, 1.0), 1.0)

    def efficiency(self, batch: float | FloatArray, epoch: int) -> FloatArray:
        """Statistical efficiency of total ``batch``: ``gain / scale`` (1 at ``init_bsz``)."""
        return self.gain(batch, epoch) / (np.asarray(batch, dtype=np.float64) / self.init_bsz)

    def step_time(
        self, placement: tuple[int, ...], local_bsz: float | FloatArray
    ) -> tuple[FloatArray, FloatArray]:
        """``(step, sync)`` seconds of one step on T4 at ``local_bsz`` (per GPU): linear in
        the local batch on a profiled placement (up to rotation), else piecewise linear in
        (nodes ≤ 16, replicas, local batch) over all profiled points; ``nan`` outside.

        Where the profiles hold points of the same node and replica count, the interpolation
        is taken along them (linear in the local batch): the 3-D one agrees there on the
        profiled points, and Qhull's point location is very slow on such degenerate lines
        (seconds per query)."""
        key = _canonical(_normal(placement))
        x = np.asarray(local_bsz, dtype=np.float64)
        rows = self.placements.get(key)
        if rows is not None:
            inside = (x >= rows[0, 0] - 1e-9) & (x <= rows[0, -1] + 1e-9)
            step = np.where(inside, np.interp(x, rows[0], rows[1]), np.nan)
            sync = np.where(inside, np.interp(x, rows[0], rows[2]), np.nan)
            return step, sync
        line = self.lines.get((min(len(key), 16), sum(key)))
        if line is not None:
            inside = (x >= line[0, 0] - 1e-9) & (x <= line[0, -1] + 1e-9)
            step = np.where(inside, np.interp(x, line[0], line[1]), np.nan)
            sync = np.where(inside, np.interp(x, line[0], line[2]), np.nan)
            return step, sync
        q = np.stack(
            [
                np.full(x.shape, min(len(key), 16), dtype=np.float64),
                np.full(x.shape, sum(key), dtype=np.float64),
                x,
            ],
            axis=-1,
        ).reshape(-1, 3)
        out = self._interpolate(q).reshape(*x.shape, 2)
        return out[..., 0], out[..., 1]

    def _interpolate(self, q: FloatArray) -> FloatArray:
        """Piecewise-linear interpolation of (step, sync) at points ``q`` (k, 3) over the
        Delaunay triangulation of :attr:`points` (what scipy's ``LinearNDInterpolator``
        computes; ``nan`` outside the hull). The containing simplex is found by testing all
        of them at once: Qhull's walk is very slow on these degenerate point sets."""
        if self._interp is None:
            from scipy.spatial import Delaunay

            self._interp = Delaunay(self.points)
        tri = self._interp
        t = tri.transform  # type: ignore[attr-defined]
        simplices = tri.simplices  # type: ignore[attr-defined]
        out = np.full((len(q), 2), np.nan)
        for i, pt in enumerate(q):
            c = np.einsum("sij,sj->si", t[:, :3, :], pt - t[:, 3, :])
            bary = np.concatenate([c, 1.0 - c.sum(axis=1, keepdims=True)], axis=1)
            inside = np.flatnonzero(np.all(bary >= -1e-9, axis=1))
            if len(inside):
                s = int(inside[0])
                out[i] = bary[s] @ self.values[simplices[s]]
        return out

    def best(self, placement: tuple[int, ...], epoch: int) -> Config:
        """The configuration of highest goodput on ``placement`` in ``epoch``: the
        reference's batch-size search (50 total batch sizes geometric between
        ``max(init_bsz, min_local × R)`` and ``max_bsz``, gradient accumulation above
        ``max_local``) evaluated on the profiles; a model with a fixed batch
        (:data:`FIXED_BATCH`) keeps it. Goodput 0 when nothing is valid."""
        return _best(self, _normal(placement), epoch)

    def fixed(self, replicas: int, batch: float) -> tuple[int, int]:
        """``(atomic, accum)`` of a job run at total ``batch`` on ``replicas`` GPUs, as the
        reference's ``Job.update_local_bsz`` sets them for a fixed batch size: local batch
        ``ceil(batch / R)``, accumulation above ``max_local`` (at least one step on one
        replica when ``batch > init_bsz``), atomic batch ``ceil(local / (accum + 1))``
        capped at ``floor(max_bsz / (R × (accum + 1)))``."""
        r = int(replicas)
        local = math.ceil(batch / r - _EPS)
        accum = math.ceil(local / self.max_local - _EPS) - 1
        if r == 1 and batch > self.init_bsz:
            accum = max(1, accum)
        atomic = math.ceil(local / (accum + 1) - _EPS)
        atomic = min(atomic, int(self.max_bsz / (r * (accum + 1))))
        return atomic, accum

    def goodput(self, placement: tuple[int, ...], epoch: int, atomic: int, accum: int) -> float:
        """Progress per second (T4) of a given configuration (``nan`` off the profiles)."""
        placement = _normal(placement)
        r = sum(placement)
        batch = r * atomic * (accum + 1)
        step, sync = self.step_time(placement, float(atomic))
        total = float(step) + accum * (float(step) - float(sync))
        return float(self.gain(float(batch), epoch)) / total


@functools.lru_cache(maxsize=4096)
def _best(app: Application, placement: tuple[int, ...], epoch: int) -> Config:
    atomic, accum, total_batch, total, ok = _candidates(app, placement)
    if not ok.any():
        return Config(0.0, 0, 0, 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        good = np.where(ok, app.gain(total_batch, epoch) / np.where(ok, total, 1.0), 0.0)
    i = int(np.argmax(good))
    if good[i] <= 0:
        return Config(0.0, 0, 0, 0)
    return Config(float(good[i]), int(atomic[i]), int(accum[i]), int(total_batch[i]))


@functools.lru_cache(maxsize=1024)
def _candidates(
    app: Application, placement: tuple[int, ...]
) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray, npt.NDArray[np.bool_]]:
    """The batch-size search's candidates on ``placement`` (they do not depend on the
    epoch): atomic batch, accumulation steps, total batch, seconds per step, validity."""
    r = sum(placement)
    empty = np.zeros(0)
    if r == 0:
        return empty, empty, empty, empty, np.zeros(0, dtype=bool)
    if app.fixed_batch is not None:
        batch = np.array([float(app.fixed_batch)])
        local = np.ceil(batch / r - _EPS)
        accum = np.ceil(local / app.max_local - _EPS) - 1
        if r == 1 and app.fixed_batch > app.init_bsz:
            accum = np.maximum(accum, 1)
        atomic = np.ceil(local / (accum + 1) - _EPS)
        atomic = np.minimum(atomic, np.floor(app.max_bsz / (r * (accum + 1))))
    else:
        lo = max(app.init_bsz, app.min_local * r)
        if lo > app.max_bsz:
            return empty, empty, empty, empty, np.zeros(0, dtype=bool)
        batch = np.geomspace(lo, app.max_bsz, BATCH_CANDIDATES)
        local = batch / r
        accum = np.ceil(local / app.max_local - _EPS) - 1
        accum = np.where((r == 1) & (local > app.init_bsz + _EPS), np.maximum(accum, 1), accum)
        atomic = np.ceil(local / (accum + 1) - _EPS)
    total_batch = r * atomic * (accum + 1)
    ok = (atomic >= app.min_local) & (atomic <= app.max_local)
    step = np.full(len(atomic), np.nan)
    sync = np.full(len(atomic), np.nan)
    if ok.any():  # only valid atomic batches are looked up (each distinct one once)
        u, inv = np.unique(atomic[ok], return_inverse=True)
        st, sy = app.step_time(placement, u)
        step[ok], sync[ok] = np.asarray(st)[inv], np.asarray(sy)[inv]
    total = step + accum * (step - sync)
    ok &= np.isfinite(total) & (total > 0)
    return atomic, accum, total_batch, total, ok


def _normal(placement: tuple[int, ...]) -> tuple[int, ...]:
    """Drop empty nodes; a node of more than :data:`NODE_GPUS` GPUs is re-expressed as the
    replicas consolidated on 4-GPU nodes, at least as many nodes as the placement spans."""
    p = tuple(int(c) for c in placement if c)
    if any(c > NODE_GPUS for c in p):
        r = sum(p)
        nodes = max(len(p), math.ceil(r / NODE_GPUS))
        base, extra = divmod(r, nodes)
        p = tuple(base + (i < extra) for i in range(nodes))
    return p


def _canonical(placement: tuple[int, ...]) -> tuple[int, ...]:
    """The lexicographically smallest rotation (how the profiles are keyed)."""
    if not placement:
        return placement
    return min(placement[i:] + placement[:i] for i in range(len(placement)))


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


@functools.lru_cache(maxsize=16)
def load(name: str, directory: str | None = None) -> Application | None:
    """The profiled model ``name`` (``None`` when it is not one of :data:`MODELS` or its
    folder is missing)."""
    if name not in MODELS:
        return None
    base = Path(directory) if directory else profile_dir()
    base = base / name
    if not (base / "placements.csv").is_file():
        return None
    epochs, max_local = MODELS[name]
    val: dict[int, list[dict[str, str]]] = {}
    for p in base.glob("validation-*.csv"):
        val[int(p.stem.rsplit("-", 1)[1])] = _rows(p)
    sizes = sorted(val)
    n_ep = min(len(v) for v in val.values())

    def col(c: str) -> FloatArray:
        return np.array([[float(r[c]) for r in val[b][:n_ep]] for b in sizes])

    by_place: dict[tuple[int, ...], list[tuple[float, float, float]]] = {}
    for r in _rows(base / "placements.csv"):
        key = tuple(int(ch) for ch in r["placement"])
        by_place.setdefault(key, []).append(
            (float(r["local_bsz"]), float(r["step_time"]), float(r["sync_time"]))
        )
    placements = {k: np.array(sorted(v)).T for k, v in by_place.items()}
    # 3-D points: per (nodes, replicas, local_bsz) means of the placements, then scalability
    groups: dict[tuple[int, int, float], list[tuple[float, float]]] = {}
    for k, v in by_place.items():
        for bsz, step, sync in v:
            groups.setdefault((len(k), sum(k), bsz), []).append((step, sync))
    pts = [(*g, *np.mean(np.array(s), axis=0)) for g, s in groups.items()]
    for r in _rows(base / "scalability.csv"):
        pts.append(
            (
                float(r["num_nodes"]),
                float(r["num_replicas"]),
                float(r["local_bsz"]),
                float(r["step_time"]),
                float(r["sync_time"]),
            )
        )
    arr = np.array(pts, dtype=np.float64)
    by_line: dict[tuple[int, int], dict[float, list[tuple[float, float]]]] = {}
    for nodes, reps, bsz, step, sync in pts:
        by_line.setdefault((int(nodes), int(reps)), {}).setdefault(bsz, []).append((step, sync))
    lines = {
        k: np.array([(b, *np.mean(np.array(v[b]), axis=0)) for b in sorted(v)]).T
        for k, v in by_line.items()
    }
    all_local = np.concatenate([v[0] for v in placements.values()])
    return Application(
        name=name,
        max_epochs=epochs,
        sizes=np.array(sizes, dtype=np.float64),
        progress=col("progress"),
        iteration=col("iteration"),
        grad_sqr=col("grad_sqr"),
        grad_var=col("grad_var"),
        placements=placements,
        points=arr[:, :3],
        values=arr[:, 3:],
        lines=lines,
        min_local=int(all_local.min()),
        max_local=int(max_local if max_local is not None else all_local.max()),
        fixed_batch=FIXED_BATCH.get(name),
    )


# --------------------------------------------------------------------------------------------
# The engine plugin: running profiled jobs progress at their goodput


def type_factors(cluster: Cluster) -> FloatArray:
    """(n_types,) speed of each type relative to the profiles' T4 (1 where unknown)."""
    from clustersim.jobtypes import reference_speed

    t4 = reference_speed(PROFILE_TYPE) or 1.0
    out = np.ones(cluster.n_types)
    for t, name in enumerate(cluster.type_names):
        s = reference_speed(name)
        if s:
            out[t] = s / t4
    return out


class JobGoodput:
    """Each job's profiled model (if any) and how its work maps to Pollux's progress.

    A profiled job's work (any unit, e.g. the reference seconds a trace reader gave it) is
    taken to be proportional to its progress: ``progress = (1 − remaining / work) ×
    total_progress``. Jobs whose ``job_type`` is not a profiled model have no entry.

    With ``trace_batch`` every profiled job runs at the batch size of its Pollux workload
    row (recovered by :func:`clustersim.traces.pollux.trace_batch`; :class:`ClustersimError`
    naming a job whose batch cannot be recovered) instead of the best one: Pollux's
    simulator runs its baselines so.
    """

    def __init__(self, jobs: JobTable, cluster: Cluster, trace_batch: bool = False) -> None:
        self.apps: dict[int, Application] = {}
        for name in np.unique(jobs.job_type).tolist():
            app = load(str(name))
            if app is None:
                continue
            for j in np.flatnonzero(jobs.job_type == name).tolist():
                self.apps[j] = app
        self.profiled = np.array(sorted(self.apps), dtype=np.int64)
        self.work = jobs.work
        self.factor = type_factors(cluster)
        self.batch: dict[int, float] = {}
        if trace_batch:
            from clustersim.errors import ClustersimError
            from clustersim.traces.pollux import trace_batch as recover

            for j in self.profiled.tolist():
                b = recover(str(jobs.job_type[j]), int(jobs.num_gpus[j]), float(jobs.work[j]))
                if not math.isfinite(b):
                    raise ClustersimError(
                        f"job {jobs.job_id[j]!r}: its batch size cannot be recovered from its"
                        " work; run at the trace's batch size needs a job read from a Pollux"
                        " workload (num_replicas on Pollux's grid, batch_size profiled)"
                    )
                self.batch[j] = b

    def epoch(self, j: int, remaining: float) -> int:
        """Epoch job ``j`` is in with ``remaining`` work left."""
        app = self.apps[j]
        w = float(self.work[j])
        done = 1.0 - remaining / w if w > 0 else 1.0
        return app.epoch(max(done, 0.0) * app.total_progress)

    def rate(self, j: int, placement: tuple[int, ...], type_: int, remaining: float) -> float:
        """Work units/s of profiled job ``j`` on ``placement`` of type ``type_`` at its best
        batch size now (0 when the profiles hold no valid configuration there)."""
        app = self.apps[j]
        batch = self.batch.get(j)
        if batch is not None:
            epoch = self.epoch(j, remaining)
            atomic, accum = app.fixed(sum(placement), batch)
            g = app.goodput(placement, epoch, atomic, accum)
            if not g > 0:
                g = app.goodput(consolidated(sum(placement)), epoch, atomic, accum)
            g = g if g > 0 else 0.0
        else:
            cfg = app.best(_normal(placement), self.epoch(j, remaining))
            if cfg.goodput <= 0:
                cfg = app.best(consolidated(sum(placement)), self.epoch(j, remaining))
            g = cfg.goodput
        return g * self.factor[type_] * float(self.work[j]) / app.total_progress


class GoodputRates:
    """Engine plugin (loaded when the policy sets ``goodput``): after every decision, every
    running profiled job is re-rated to its goodput on the placement it holds, at its
    progress now, with the best batch size there (:meth:`Application.best`). Efficiency
    therefore changes at decisions (every ``interval_s`` for ``pollux``), not in between.

    With ``start_s`` > 0 (engine option ``goodput_start_s``, ``--compat pollux``) every job
    started for the first time makes no progress for ``start_s`` seconds, as a resumed job
    does for its restore delay (Pollux's simulator charges its 30-s re-scale delay on first
    starts too). With ``trace_batch`` jobs run at their trace's batch size
    (:class:`JobGoodput`; engine option ``goodput_trace_batch``, ``--compat pollux``'s
    baselines)."""

    def __init__(
        self, jobs: JobTable, cluster: Cluster, trace_batch: bool = False, start_s: float = 0.0
    ) -> None:
        self.model = JobGoodput(jobs, cluster, trace_batch)
        self.start_s = float(start_s)
        self.rerates = 0

    def after_decision(self, eng: Any) -> None:
        from clustersim.colocation import rerate
        from clustersim.kernels import (
            JB_RUNNING,
            JF_CRATE,
            JF_FIRST_START,
            JF_REMAINING,
            JF_STALL,
            JI_ALLOC_TYPE,
            JI_PLACED,
            JI_SLOT,
        )

        start_s = self.start_s
        fresh = np.zeros(0, dtype=np.int64)
        if start_s > 0:
            run = eng.running_jobs()
            new_start = (eng.jf[JF_FIRST_START, run] == eng.now) & (
                eng.jf[JF_STALL, run] < eng.now + start_s
            )
            fresh = np.sort(run[new_start]).astype(np.int64)
        prof = self.model.profiled
        js = prof[eng.jb[JB_RUNNING, prof]] if len(prof) else prof
        if not len(js) and not len(fresh):
            return
        eng.sync("remaining")
        new = np.empty(len(js))
        for k, j in enumerate(js.tolist()):
            o, n = int(eng.ji[JI_SLOT, j]), int(eng.ji[JI_PLACED, j])
            placement = tuple(int(c) for c in eng.slots[1, o : o + n])
            t = int(eng.ji[JI_ALLOC_TYPE, j])
            r = self.model.rate(j, placement, t, float(eng.jf[JF_REMAINING, j]))
            new[k] = r if r > 0 else eng.jf[JF_CRATE, j]
        old = eng.jf[JF_CRATE, js]
        change = np.abs(new - old) > 1e-12 * np.maximum(np.abs(old), 1.0)
        if change.any():
            self.rerates += int(change.sum())
        pick = change | np.isin(js, fresh)
        rest = fresh[~np.isin(fresh, js)]
        todo = np.concatenate([js[pick], rest])
        rates = np.concatenate([new[pick], eng.jf[JF_CRATE, rest]])
        if len(fresh):
            eng.jf[JF_STALL, fresh] = eng.now + start_s
        if len(todo):
            rerate(eng, todo, rates)
