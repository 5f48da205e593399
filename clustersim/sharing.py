"""GPU-sharing placement study: the placements of the FGD paper on a snapshot cluster.

Weng et al., "Beware of Fragmentation: Scheduling GPU-Sharing Workloads with Fragmentation
Gradient Descent" (USENIX ATC'23) place pods that ask for CPU, memory and either a share of
one GPU (``gpu_milli`` < 1000 on one device) or whole GPUs, one after the other, on a fixed
set of nodes, never removing any, and compare placement policies by how much of the cluster's
GPU capacity they manage to hand out before pods start to fail. This module is that study,
framework-free: :func:`load_nodes` and :func:`load_pods` read the openb node and pod lists,
:func:`typical_pods` derives the workload's "typical pods" distribution, :func:`node_frag`
measures one node's GPU fragmentation against it, :func:`arrival_order` and
:func:`inflation_order` make the sequence of pods to place, and :func:`place` places them under
one of :data:`PLACEMENTS`, recording the allocated GPU share and the fragmentation after every
pod. docs/fgd-fidelity.md states, rule by rule, what the reference simulator does and where we
follow it.

The inner loop (every node scored for every pod) is :func:`_place_all`, plain Python over
numpy arrays, compiled by numba when it is installed (as in :mod:`clustersim.kernels`); the
two give the same results.
"""

from __future__ import annotations

import csv
import math
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from clustersim.errors import ClustersimError

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]

#: One whole GPU in milli-GPU.
MILLI = 1000
#: The largest node the scores normalise by (the reference's constants): 128 CPUs, 8 GPUs.
MAX_SPEC_CPU = 128_000
MAX_SPEC_GPU = 8_000
#: Placement policy names, in the order their integer codes are given to the kernel.
PLACEMENTS: tuple[str, ...] = (
    "fgd",
    "best-fit",
    "dot-product",
    "gpu-packing",
    "gpu-clustering",
    "random-fit",
)
#: Which placements draw random numbers (the others give the same result for every seed).
USES_SEED = frozenset({"random-fit"})
#: Share of pods, by count, the typical-pod distribution covers (the reference's 95 %).
TYPICAL_COVERAGE = 0.95
#: Workload size the inflation experiment tops the pod list up to, in cluster GPU capacity.
DEFAULT_TUNE = 1.3


# --------------------------------------------------------------------------- data model


@dataclass(frozen=True)
class Nodes:
    """Nodes sorted by name (the reference breaks score ties by the smaller node name, so the
    lower index wins here). ``gpus`` is the GPU count; ``model`` indexes ``models`` (-1: none)."""

    names: tuple[str, ...]
    cpu: IntArray  # milli-CPU
    mem: IntArray  # MiB
    gpus: IntArray
    model: IntArray
    models: tuple[str, ...]

    def __len__(self) -> int:
        return len(self.names)

    @property
    def total_gpu_milli(self) -> int:
        return int(self.gpus.sum()) * MILLI

    @property
    def max_gpus(self) -> int:
        return int(self.gpus.max()) if len(self.gpus) else 0


@dataclass(frozen=True)
class Pods:
    """Pod requests: ``gpus`` whole GPUs of ``milli`` each (1000), or one GPU share
    (``gpus`` 1, ``milli`` < 1000), or no GPU (both 0). ``spec`` is the set of GPU models
    the pod accepts ('' for any), as the trace's ``gpu_spec`` ('|'-separated)."""

    names: tuple[str, ...]
    cpu: IntArray
    mem: IntArray
    gpus: IntArray
    milli: IntArray
    spec: tuple[str, ...]
    created: FloatArray
    dropped: dict[str, int] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.names)

    def take(self, idx: IntArray) -> Pods:
        """The pods at ``idx``, in that order (an index may repeat)."""
        return Pods(
            names=tuple(self.names[i] for i in idx),
            cpu=self.cpu[idx],
            mem=self.mem[idx],
            gpus=self.gpus[idx],
            milli=self.milli[idx],
            spec=tuple(self.spec[i] for i in idx),
            created=self.created[idx],
            dropped=dict(self.dropped),
        )

    @property
    def gpu_milli_total(self) -> IntArray:
        return self.gpus * self.milli


def make_nodes(rows: list[tuple[str, int, int, int, str]]) -> Nodes:
    """Nodes from ``(name, cpu_milli, memory_mib, gpus, model)`` rows, sorted by name."""
    rows = sorted(rows, key=lambda r: r[0])
    models = tuple(sorted({r[4] for r in rows if r[4] and r[3] > 0}))
    code = {m: i for i, m in enumerate(models)}
    return Nodes(
        names=tuple(r[0] for r in rows),
        cpu=np.array([r[1] for r in rows], dtype=np.int64),
        mem=np.array([r[2] for r in rows], dtype=np.int64),
        gpus=np.array([r[3] for r in rows], dtype=np.int64),
        model=np.array([code.get(r[4], -1) if r[3] > 0 else -1 for r in rows], dtype=np.int64),
        models=models,
    )


def make_pods(rows: list[tuple[str, int, int, int, int, str, float]]) -> Pods:
    """Pods from ``(name, cpu_milli, memory_mib, num_gpu, gpu_milli, gpu_spec, created)``
    rows. Malformed requests are dropped and counted by reason (``Pods.dropped``): negative
    values, a share above one GPU, a share of more than one GPU, GPUs asked for with a zero
    share (the reference would treat such a pod as asking for no GPU)."""
    kept: list[tuple[str, int, int, int, int, str, float]] = []
    dropped: Counter[str] = Counter()
    for name, cpu, mem, ng, milli, spec, created in rows:
        if cpu < 0 or mem < 0 or ng < 0 or milli < 0:
            dropped["negative request"] += 1
        elif milli > MILLI:
            dropped["gpu_milli above 1000"] += 1
        elif ng > 1 and milli < MILLI:
            dropped["share of more than one GPU"] += 1
        elif ng > 0 and milli == 0:
            dropped["num_gpu without gpu_milli"] += 1
        else:
            kept.append((name, cpu, mem, ng, milli if ng > 0 else 0, spec, created))
    return Pods(
        names=tuple(r[0] for r in kept),
        cpu=np.array([r[1] for r in kept], dtype=np.int64),
        mem=np.array([r[2] for r in kept], dtype=np.int64),
        gpus=np.array([r[3] for r in kept], dtype=np.int64),
        milli=np.array([r[4] for r in kept], dtype=np.int64),
        spec=tuple(r[5] for r in kept),
        created=np.array([r[6] for r in kept], dtype=np.float64),
        dropped=dict(dropped),
    )


def _int(row: dict[str, str], key: str, path: Path, line: int) -> int:
    value = (row.get(key) or "").strip()
    try:
        return int(float(value)) if value else 0
    except ValueError:
        raise ClustersimError(f"{path}:{line}: {key} is not a number: {value!r}") from None


def _read(path: str | Path, needed: tuple[str, ...]) -> list[tuple[int, dict[str, str]]]:
    p = Path(path)
    with p.open(newline="") as fh:
        reader = csv.DictReader(fh)
        missing = [c for c in needed if c not in (reader.fieldnames or [])]
        if missing:
            raise ClustersimError(f"{p}: missing column(s) {', '.join(missing)}")
        return [(i + 2, row) for i, row in enumerate(reader)]


def load_nodes(path: str | Path) -> Nodes:
    """An openb node list (``sn, cpu_milli, memory_mib, gpu, model``)."""
    p = Path(path)
    rows = [
        (
            row["sn"],
            _int(row, "cpu_milli", p, n),
            _int(row, "memory_mib", p, n),
            _int(row, "gpu", p, n),
            (row.get("model") or "").strip(),
        )
        for n, row in _read(p, ("sn", "cpu_milli", "memory_mib", "gpu"))
    ]
    return make_nodes(rows)


def load_pods(path: str | Path) -> Pods:
    """An openb pod list (``name, cpu_milli, memory_mib, num_gpu, gpu_milli``, optionally
    ``gpu_spec`` and ``creation_time``)."""
    p = Path(path)
    rows = [
        (
            row["name"],
            _int(row, "cpu_milli", p, n),
            _int(row, "memory_mib", p, n),
            _int(row, "num_gpu", p, n),
            _int(row, "gpu_milli", p, n),
            (row.get("gpu_spec") or "").strip(),
            float(_int(row, "creation_time", p, n)),
        )
        for n, row in _read(p, ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli"))
    ]
    return make_pods(rows)


# --------------------------------------------------------------------------- typical pods


@dataclass(frozen=True)
class Typical:
    """The typical-pod distribution: request shapes and their probabilities (summing to 1)."""

    cpu: IntArray
    milli: IntArray
    gpus: IntArray
    spec: tuple[str, ...]
    prob: FloatArray

    def __len__(self) -> int:
        return len(self.prob)


def typical_pods(pods: Pods, coverage: float = TYPICAL_COVERAGE) -> Typical:
    """The most frequent request shapes (CPU, GPU share, GPU count, GPU models; memory is
    not part of a shape) that together cover at least ``coverage`` of the pods, most frequent
    first, their frequencies renormalised to sum to 1. Shapes of equal count are ordered by
    the larger CPU, then share, then count, then model string first."""
    counts = Counter(
        zip(
            pods.cpu.tolist(),
            pods.milli.tolist(),
            pods.gpus.tolist(),
            pods.spec,
            strict=True,
        )
    )
    total = sum(counts.values())
    shapes = sorted(counts.items(), key=lambda kv: (kv[1], kv[0]), reverse=True)
    chosen: list[tuple[tuple[int, int, int, str], int]] = []
    covered = 0
    for shape, count in shapes:
        if covered >= coverage * total:
            break
        chosen.append((shape, count))
        covered += count
    return Typical(
        cpu=np.array([s[0] for s, _ in chosen], dtype=np.int64),
        milli=np.array([s[1] for s, _ in chosen], dtype=np.int64),
        gpus=np.array([s[2] for s, _ in chosen], dtype=np.int64),
        spec=tuple(s[3] for s, _ in chosen),
        prob=np.array([c / covered for _, c in chosen], dtype=np.float64),
    )


def _spec_models(spec: str) -> set[str]:
    return {m for m in spec.split("|") if m}


def accessible(spec: str, model: str) -> bool:
    """A pod asking for GPU models ``spec`` may use a node of GPU model ``model``."""
    wanted = _spec_models(spec)
    if not wanted:
        return True
    return bool(model) and model in wanted


def _access_matrix(nodes: Nodes, specs: tuple[str, ...]) -> BoolArray:
    """(nodes, specs): whether each node's GPU model suits each spec."""
    out = np.ones((len(nodes), len(specs)), dtype=np.bool_)
    for j, spec in enumerate(specs):
        if _spec_models(spec):
            for i in range(len(nodes)):
                m = int(nodes.model[i])
                out[i, j] = accessible(spec, nodes.models[m] if m >= 0 else "")
    return out


# --------------------------------------------------------------------------- kernels


def _node_frag(
    cpu_left: int,
    gl: IntArray,
    ng: int,
    t_cpu: IntArray,
    t_milli: IntArray,
    t_gpus: IntArray,
    t_prob: FloatArray,
    t_access: BoolArray,
) -> float:
    """Expected fragmented GPU milli of one node (``gl``: milli left per GPU, ``ng`` GPUs)."""
    idle = 0
    for i in range(ng):
        idle += gl[i]
    frag = 0.0
    for t in range(len(t_prob)):
        m = t_milli[t]
        if m == 0 or not t_access[t]:
            frag += t_prob[t] * idle
            continue
        fit = 0
        small = 0
        for i in range(ng):
            if gl[i] >= m:
                fit += 1
            else:
                small += gl[i]
        if fit >= t_gpus[t] and cpu_left >= t_cpu[t]:
            frag += t_prob[t] * small
        else:
            frag += t_prob[t] * idle
    return frag


def _fgd_score(before: float, after: float) -> int:
    return int(100.0 / (1.0 + math.exp(-((before - after) / 1000.0))))


def _place_all(
    policy: int,
    p_cpu: IntArray,
    p_mem: IntArray,
    p_gpus: IntArray,
    p_milli: IntArray,
    p_spec: IntArray,
    p_aff: IntArray,
    cpu_left: IntArray,
    mem_left: IntArray,
    cpu_cap: IntArray,
    gl: IntArray,
    ng: IntArray,
    spec_ok: BoolArray,
    aff: IntArray,
    t_cpu: IntArray,
    t_milli: IntArray,
    t_gpus: IntArray,
    t_prob: FloatArray,
    t_access: BoolArray,
    frag: FloatArray,
    uniforms: FloatArray,
    out_node: IntArray,
    out_gpus: IntArray,
    out_alloc: IntArray,
    out_frag: FloatArray,
    out_idle: IntArray,
) -> None:
    """Place every pod in order (state arrays updated in place; see :func:`place`)."""
    n_nodes = len(cpu_left)
    width = gl.shape[1]
    tmp = np.zeros(width, dtype=np.int64)
    alloc = 0
    idle = 0
    total_frag = 0.0
    for n in range(n_nodes):
        for i in range(ng[n]):
            alloc += MILLI - gl[n, i]
            idle += gl[n, i]
        total_frag += frag[n]
    feasible = np.zeros(n_nodes, dtype=np.int64)
    for k in range(len(p_cpu)):
        cpu = p_cpu[k]
        mem = p_mem[k]
        want = p_gpus[k]
        milli = p_milli[k]
        share = want == 1 and milli < MILLI
        n_feasible = 0
        best_node = -1
        best_score = -(2**62)
        best_gpu = -1  # share pods: the GPU the score chose (FGD), else chosen below
        for n in range(n_nodes):
            if cpu_left[n] < cpu or mem_left[n] < mem:
                continue
            if milli > 0:
                if ng[n] == 0 or not spec_ok[n, p_spec[k]]:
                    continue
                fit = 0
                for i in range(ng[n]):
                    if gl[n, i] >= milli:
                        fit += 1
                if fit < want:
                    continue
            feasible[n_feasible] = n
            n_feasible += 1
            if policy == 5:  # random-fit scores after the filter
                continue
            score = 0
            gpu = -1
            gtot = 0
            for i in range(ng[n]):
                gtot += gl[n, i]
            if policy == 0:  # fgd
                before = frag[n]
                if share:
                    score = -1
                    for i in range(ng[n]):
                        if gl[n, i] < milli:
                            continue
                        seen = False
                        for j in range(i):
                            if gl[n, j] == gl[n, i]:
                                seen = True
                                break
                        if seen:  # same milli left as an earlier GPU: same score
                            continue
                        for j in range(width):
                            tmp[j] = gl[n, j]
                        tmp[i] -= milli
                        after = _node_frag(
                            cpu_left[n] - cpu,
                            tmp,
                            ng[n],
                            t_cpu,
                            t_milli,
                            t_gpus,
                            t_prob,
                            t_access[n],
                        )
                        s = _fgd_score(before, after)
                        if s > score:
                            score = s
                            gpu = i
                else:
                    for j in range(width):
                        tmp[j] = gl[n, j]
                    left = want
                    for i in range(ng[n]):
                        if left > 0 and tmp[i] == MILLI:
                            tmp[i] = 0
                            left -= 1
                    after = _node_frag(
                        cpu_left[n] - cpu, tmp, ng[n], t_cpu, t_milli, t_gpus, t_prob, t_access[n]
                    )
                    score = _fgd_score(before, after)
            elif policy == 1:  # best-fit
                s = (cpu_left[n] - cpu) / MAX_SPEC_CPU * 0.5
                s += (gtot - want * milli) / MAX_SPEC_GPU * 0.5
                score = int((1.0 - s) * 100)
            elif policy == 2:  # dot-product (one CPU and one total-GPU dimension, by max spec)
                dot = (cpu_left[n] / MAX_SPEC_CPU) * (cpu / MAX_SPEC_CPU)
                dot += (gtot / MAX_SPEC_GPU) * (want * milli / MAX_SPEC_GPU)
                score = int(100 * (1.0 - dot / 2))
            elif policy == 3:  # gpu-packing
                if milli > 0:
                    free = 0
                    for i in range(ng[n]):
                        if gl[n, i] == MILLI:
                            free += 1
                    if free == ng[n]:
                        score = max(33 - free, free)
                    elif share:  # the fitting GPU with the least milli left
                        pick = -1
                        for i in range(ng[n]):
                            if gl[n, i] >= milli and (pick == -1 or gl[n, i] < gl[n, pick]):
                                pick = i
                        if gl[n, pick] == MILLI:  # a fully free GPU of a used node
                            score = 49
                        else:  # a shared GPU: the less it has left, the better
                            score = max(100 - (gl[n, pick] * 100 // MILLI) // 10, 50)
                    else:  # whole GPUs on a used node
                        score = max(50 - want, 33)
            elif policy == 4 and milli > 0:  # gpu-clustering (CPU-only pods: 0 everywhere)
                base = 25 * (MAX_SPEC_GPU - gtot) // MAX_SPEC_GPU
                kinds = 0
                for a in range(aff.shape[1]):
                    if aff[n, a] > 0:
                        kinds += 1
                a = p_aff[k]
                if aff[n, a] > 0:
                    score = base + (75 if kinds == 1 else 50)
                else:
                    score = base + (25 if kinds == 0 else 0)
            if score > best_score:
                best_score = score
                best_node = n
                best_gpu = gpu
        if policy == 5 and n_feasible > 0:
            best_node = feasible[min(int(uniforms[2 * k] * n_feasible), n_feasible - 1)]
        out_node[k] = best_node
        if best_node >= 0:
            n = best_node
            mask = 0
            if milli > 0:
                if share:
                    g = best_gpu
                    if policy == 5:  # a uniformly drawn GPU among those that fit
                        fits = 0
                        for i in range(ng[n]):
                            if gl[n, i] >= milli:
                                fits += 1
                        pick = min(int(uniforms[2 * k + 1] * fits), fits - 1)
                        for i in range(ng[n]):
                            if gl[n, i] >= milli:
                                if pick == 0:
                                    g = i
                                    break
                                pick -= 1
                    elif policy != 0:  # the fitting GPU with the least milli left
                        g = -1
                        for i in range(ng[n]):
                            if gl[n, i] >= milli and (g == -1 or gl[n, i] < gl[n, g]):
                                g = i
                    gl[n, g] -= milli
                    mask = 1 << g
                else:  # whole GPUs: the first fully free ones
                    left = want
                    for i in range(ng[n]):
                        if left > 0 and gl[n, i] == MILLI:
                            gl[n, i] = 0
                            mask |= 1 << i
                            left -= 1
                alloc += want * milli
                idle -= want * milli
                aff[n, p_aff[k]] += 1
            cpu_left[n] -= cpu
            mem_left[n] -= mem
            out_gpus[k] = mask
            new = _node_frag(cpu_left[n], gl[n], ng[n], t_cpu, t_milli, t_gpus, t_prob, t_access[n])
            total_frag += new - frag[n]
            frag[n] = new
        else:
            out_gpus[k] = 0
        out_alloc[k] = alloc
        out_frag[k] = total_frag
        out_idle[k] = idle


_KERNELS: dict[str, Any] = {}


def _kernel(compiled: bool) -> Any:
    """:func:`_place_all`, numba-compiled when ``compiled`` and numba is installed."""
    if not compiled:
        return _place_all
    if "place_all" not in _KERNELS:
        try:
            import numba
        except ImportError:  # pragma: no cover - the product pins numba
            return _place_all
        jit = numba.njit(cache=True, nogil=True)
        frag_fn = jit(_node_frag)
        score_fn = jit(_fgd_score)
        import types

        namespace = dict(globals())
        namespace["_node_frag"] = frag_fn
        namespace["_fgd_score"] = score_fn
        copy = types.FunctionType(_place_all.__code__, namespace, "_place_all")
        _KERNELS["place_all"] = jit(copy)
    return _KERNELS["place_all"]


# --------------------------------------------------------------------------- orders


def arrival_order(pods: Pods) -> Pods:
    """The pods by creation time (then name): the trace's own arrival order."""
    idx = np.lexsort((np.array(pods.names), pods.created))
    return pods.take(idx.astype(np.int64))


def inflation_order(
    pods: Pods, capacity_milli: int, seed: int = 42, tune: float = DEFAULT_TUNE
) -> Pods:
    """The reference's workload for the inflation experiment: the pods by name, shuffled
    (``seed``), then topped up with pods drawn with replacement from the name-sorted list
    until the total GPU request would pass ``tune`` times the cluster's GPU capacity (or,
    when it already does, random pods removed until it does not). As in the reference, the
    top-up's stopping test adds the drawn pod's per-GPU share, not its total."""
    rng = np.random.default_rng(seed)
    by_name = np.argsort(np.array(pods.names), kind="stable").astype(np.int64)
    order = by_name[rng.permutation(len(by_name))]
    target = tune * capacity_milli
    total = int(pods.gpu_milli_total.sum())
    idx = list(order.tolist())
    if total > target:
        while total > target and idx:
            i = int(rng.integers(len(idx)))
            total -= int(pods.gpu_milli_total[idx[i]])
            del idx[i]
    elif len(by_name):
        while True:
            j = int(by_name[int(rng.integers(len(by_name)))])
            if total + int(pods.milli[j]) > target:
                break
            total += int(pods.gpu_milli_total[j])
            idx.append(j)
    return pods.take(np.array(idx, dtype=np.int64))


# --------------------------------------------------------------------------- the study


@dataclass(frozen=True)
class Placement:
    """One placement run: per pod placed (in order), its node (-1: failed), its GPUs (bit
    ``i`` set: GPU ``i`` of the node) and, after it, the cluster's allocated GPU milli,
    fragmented GPU milli and idle GPU milli. ``arrived`` is the GPU milli asked for so far
    (failed pods included)."""

    placement: str
    seed: int
    pods: Pods
    nodes: Nodes
    node: IntArray
    gpu_mask: IntArray
    allocated: IntArray
    fragmented: FloatArray
    idle: IntArray
    arrived: IntArray
    gpu_left: IntArray
    cpu_left: IntArray
    mem_left: IntArray

    @property
    def capacity(self) -> int:
        return self.nodes.total_gpu_milli

    @property
    def first_failure(self) -> int | None:
        """Index of the first pod that could not be placed (``None``: all placed)."""
        failed = np.flatnonzero(self.node < 0)
        return int(failed[0]) if len(failed) else None

    def allocated_share(self, k: int | None = None) -> float:
        """Allocated GPU share of the cluster after pod ``k`` (default: after the last)."""
        if len(self.allocated) == 0:
            return 0.0
        return float(self.allocated[-1 if k is None else k]) / self.capacity

    def frag_rate(self) -> FloatArray:
        """Fragmented share of the idle GPU milli after each pod (0 when nothing is idle)."""
        idle = self.idle.astype(np.float64)
        return np.divide(self.fragmented, idle, out=np.zeros_like(self.fragmented), where=idle > 0)

    def curve(self, points: range = range(0, 131)) -> dict[int, float]:
        """Allocated GPU share (%) by arrived GPU demand (% of capacity), as the reference's
        analysis samples it: the mean over the pods whose arrived demand rounds to each
        percentage, or to within one of it when none does."""
        return _discrete(
            self.arrived / self.capacity * 100, self.allocated / self.capacity * 100, points
        )

    def frag_curve(self, points: range = range(0, 131)) -> dict[int, float]:
        """Fragmentation rate (%) by arrived GPU demand (% of capacity), sampled as
        :meth:`curve`."""
        return _discrete(self.arrived / self.capacity * 100, self.frag_rate() * 100, points)

    def summary(self) -> dict[str, Any]:
        first = self.first_failure
        at_first = self.allocated_share(first - 1) if first else 0.0 if first == 0 else None
        curve = self.curve(range(0, 131, 10))
        return {
            "placement": self.placement,
            "seed": self.seed,
            "pods": len(self.pods),
            "placed": int((self.node >= 0).sum()),
            "failed": int((self.node < 0).sum()),
            "gpu_capacity": self.capacity // MILLI,
            "arrived_share": float(self.arrived[-1]) / self.capacity if len(self.arrived) else 0.0,
            "first_failure_pod": first,
            "allocated_share_at_first_failure": at_first,
            "unallocated_share_at_first_failure": None if at_first is None else 1.0 - at_first,
            "allocated_share_final": self.allocated_share(),
            "frag_rate_final": float(self.frag_rate()[-1]) if len(self.idle) else 0.0,
            "allocated_pct_by_arrived_pct": curve,
        }


def _discrete(x: FloatArray, y: FloatArray, points: range) -> dict[int, float]:
    rounded = np.round(x)
    out: dict[int, float] = {}
    for p in points:
        sel = rounded == p
        if not sel.any():
            sel = (rounded >= p - 1) & (rounded <= p + 1)
            if not sel.any():
                continue
        out[p] = round(float(y[sel].mean()), 2)
    return out


def place(
    nodes: Nodes,
    pods: Pods,
    placement: str = "fgd",
    seed: int = 0,
    typical: Typical | None = None,
    compiled: bool = True,
) -> Placement:
    """Place ``pods`` in order on empty ``nodes`` by ``placement`` (one of
    :data:`PLACEMENTS`); a pod that fits nowhere fails and the next one is tried. ``typical``
    (default: :func:`typical_pods` of ``pods``) is the distribution FGD and the fragmentation
    measure use; ``seed`` draws random-fit's choices."""
    if placement not in PLACEMENTS:
        raise ClustersimError(
            f"unknown placement {placement!r}; choose one of {', '.join(PLACEMENTS)}"
        )
    if typical is None:
        typical = typical_pods(pods)
    width = max(nodes.max_gpus, 1)
    if width > 62:
        raise ClustersimError(f"a node has {width} GPUs; at most 62 are supported")
    n = len(nodes)
    gl = np.zeros((n, width), dtype=np.int64)
    for i in range(n):
        gl[i, : nodes.gpus[i]] = MILLI
    specs = tuple(sorted(set(pods.spec) | {""}))
    spec_code = {s: i for i, s in enumerate(specs)}
    spec_ok = _access_matrix(nodes, specs)
    t_access = np.ascontiguousarray(_access_matrix(nodes, typical.spec))
    aff = np.zeros((n, width + 1), dtype=np.int64)  # 0: GPU shares, k: k whole GPUs
    p_aff = np.where((pods.gpus == 1) & (pods.milli < MILLI), 0, pods.gpus).astype(np.int64)
    cpu_left = nodes.cpu.copy()
    mem_left = nodes.mem.copy()
    frag = np.array(
        [
            _node_frag(
                int(cpu_left[i]),
                gl[i],
                int(nodes.gpus[i]),
                typical.cpu,
                typical.milli,
                typical.gpus,
                typical.prob,
                t_access[i],
            )
            for i in range(n)
        ],
        dtype=np.float64,
    )
    k = len(pods)
    uniforms = np.random.default_rng(seed).random(2 * k)
    out_node = np.full(k, -1, dtype=np.int64)
    out_gpus = np.zeros(k, dtype=np.int64)
    out_alloc = np.zeros(k, dtype=np.int64)
    out_frag = np.zeros(k, dtype=np.float64)
    out_idle = np.zeros(k, dtype=np.int64)
    kernel = _kernel(compiled)
    kernel(
        PLACEMENTS.index(placement),
        pods.cpu, pods.mem, pods.gpus, pods.milli,
        np.array([spec_code[s] for s in pods.spec], dtype=np.int64), p_aff,
        cpu_left, mem_left, nodes.cpu.copy(), gl, nodes.gpus.copy(), spec_ok, aff,
        typical.cpu, typical.milli, typical.gpus, typical.prob, t_access, frag, uniforms,
        out_node, out_gpus, out_alloc, out_frag, out_idle,
    )  # fmt: skip
    return Placement(
        placement=placement,
        seed=seed,
        pods=pods,
        nodes=nodes,
        node=out_node,
        gpu_mask=out_gpus,
        allocated=out_alloc,
        fragmented=out_frag,
        idle=out_idle,
        arrived=np.cumsum(pods.gpu_milli_total),
        gpu_left=gl,
        cpu_left=cpu_left,
        mem_left=mem_left,
    )


def study(
    nodes: Nodes,
    pods: Pods,
    placements: tuple[str, ...] = PLACEMENTS,
    seed: int = 42,
    order: str = "inflation",
    tune: float = DEFAULT_TUNE,
) -> list[Placement]:
    """The inflation experiment (or, with ``order="arrival"``, the trace in creation order)
    under each placement; the typical pods are those of the trace as given."""
    typical = typical_pods(pods)
    if order == "inflation":
        seq = inflation_order(pods, nodes.total_gpu_milli, seed=seed, tune=tune)
    elif order == "arrival":
        seq = arrival_order(pods)
    else:
        raise ClustersimError(f"unknown order {order!r}; choose inflation or arrival")
    return [place(nodes, seq, p, seed=seed, typical=typical) for p in placements]


def node_frags(
    nodes: Nodes, typical: Typical, gpu_left: IntArray, cpu_left: IntArray
) -> FloatArray:
    """Every node's fragmentation (expected idle GPU milli a typical pod could not use) for
    the milli left per GPU ``gpu_left`` (nodes × GPUs, 0 beyond a node's GPUs) and the free
    CPU ``cpu_left``."""
    access = _access_matrix(nodes, typical.spec)
    return np.array(
        [
            _node_frag(
                int(cpu_left[i]), gpu_left[i], int(nodes.gpus[i]), typical.cpu,
                typical.milli, typical.gpus, typical.prob, access[i],
            )
            for i in range(len(nodes))
        ],
        dtype=np.float64,
    )  # fmt: skip
