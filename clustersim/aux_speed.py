"""CPU and memory sensitivity: how fast a job runs on the cores and memory it was given.

The model, its sources and what it leaves out are in ``docs/synergy-fidelity.md``; this
module holds its three parts. It is a plugin of the engine (:class:`AuxSpeed`): the engine
builds it only when a decision sets CPU/memory allocations (``Decision.aux``, today only the
Synergy policies, :mod:`scheduling.synergy`) and calls :meth:`AuxSpeed.after_decision`
after such a decision; every other run is untouched.

Profiles (:func:`profiles`, :class:`Sensitivity`)
-------------------------------------------------
Synergy (Mohan et al., OSDI'22) profiles each model's throughput on a grid of CPU cores and
host memory per GPU. Its simulator (msr-fiddle/synergy, ``simulator/models/<model>_1.py``,
MIT licence) ships the grid for ten models: rows 1, 2, 3, 4, 5, 6, 9, 12, 24 cores per GPU,
columns 20.83, 62.5, 125, 187.5, 250 GB per GPU, throughput normalised to 1 at the
GPU-proportional share of its servers (3 cores, 62.5 GB per GPU), and per model the *ideal*
allocation (the smallest that reaches the best throughput) with its speedup. They are in
``clustersim/data/synergy_profiles.json`` (notice: ``clustersim/data/NOTICE.md``).

A job has a profile when its ``job_type`` is one of the ten names (``res18``, ``alexnet``,
...; :func:`assign_synergy_models` gives jobs without a type one, as Synergy's simulator
does) or a Gavel job type of the same family (``ResNet-18 (batch size 32)`` is ``res18``,
``ResNet-50`` ``res50``, ``Transformer`` ``transformer``, ``LM`` ``lstm``).

Throughput at an allocation
---------------------------
``T(c, m)``: bilinear interpolation of the grid at ``c`` cores and ``m`` GB per device,
clamped to the grid's edges above and below in memory and above in CPU; below one core per
device it falls linearly to 0 at 0 cores (a data loader with no core makes no progress).

The multiplier (:meth:`Sensitivity.multiplier`)
-----------------------------------------------
A job's rate in the job table is its rate at its *demand* (the ``cpu``/``mem_gb`` columns,
per device). Given ``c`` cores and ``m`` GB per device it runs ``T(c, m) / T(demand)`` times
as fast (a job without a demand is referred to Synergy's GPU-proportional share, 3 cores and
62.5 GB per device, where ``T`` is 1). A job without a profile runs ``min(1, c / cpu_demand,
m / mem_demand)`` times as fast: never faster than at its demand, proportionally slower
below it (no data says more; stated in the fidelity note).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources as importlib_resources
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from clustersim.resources import SYNERGY_CPU_PER_GPU, SYNERGY_MEM_PER_GPU, per_device_demand

if TYPE_CHECKING:
    from clustersim.jobs import JobTable

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]

#: Gavel job-type families with a Synergy profile of the same model.
GAVEL_FAMILIES = {
    "ResNet-18": "res18",
    "ResNet-50": "res50",
    "Transformer": "transformer",
    "LM": "lstm",
}

#: Synergy's model classes, in the order its model zoo lists them (``jobs/model_zoo.py``).
TASK_MODELS = {
    "image": ("alexnet", "res18", "res50", "mobilenet", "shufflenet"),
    "language": ("gnmt", "transformer", "lstm"),
    "speech": ("m5", "deepspeech"),
}

#: The class split (image, language, speech percent) of Synergy's simulator runs
#: (``simulator/runner.py``, ``class_split``).
DEFAULT_SPLIT = (20, 70, 10)


@dataclass(frozen=True)
class Profiles:
    """Synergy's profiles (module doc).

    Attributes
    ----------
    names : tuple of str, length P
        Model names.
    cpu_grid : (9,) float64
        Cores per GPU of the grid's rows.
    mem_grid : (5,) float64
        GB per GPU of the grid's columns.
    tput : (P, 9, 5) float64
        Normalised throughput (1 at 3 cores, 62.5 GB per GPU).
    ideal_cpu, ideal_mem, speedup : (P,) float64
        Ideal cores and GB per GPU and the throughput there.
    """

    names: tuple[str, ...]
    cpu_grid: FloatArray
    mem_grid: FloatArray
    tput: FloatArray
    ideal_cpu: FloatArray
    ideal_mem: FloatArray
    speedup: FloatArray

    def index(self, job_types: Any) -> IntArray:
        """(n,) int64: the profile of each job type (module doc), -1 where none."""
        jt = np.asarray(job_types, dtype=object)
        uniq, inv = np.unique(jt.astype(str), return_inverse=True)
        look = {n: i for i, n in enumerate(self.names)}
        out = np.full(len(uniq), -1, dtype=np.int64)
        for k, name in enumerate(uniq.tolist()):
            fam = name.split(" (", 1)[0].strip()
            key = name if name in look else GAVEL_FAMILIES.get(fam, "")
            out[k] = look.get(key, -1)
        return out[inv.reshape(-1)]

    def throughput(self, p: IntArray, cpu: FloatArray, mem: FloatArray) -> FloatArray:
        """(m,) float64: ``T(cpu, mem)`` of profiles ``p`` (each >= 0) at ``cpu`` cores and
        ``mem`` GB per device (module doc)."""
        cg, mg = self.cpu_grid, self.mem_grid
        c = np.asarray(cpu, dtype=np.float64)
        m = np.clip(np.asarray(mem, dtype=np.float64), mg[0], mg[-1])
        cc = np.clip(c, cg[0], cg[-1])
        i = np.clip(np.searchsorted(cg, cc, side="right") - 1, 0, len(cg) - 2)
        k = np.clip(np.searchsorted(mg, m, side="right") - 1, 0, len(mg) - 2)
        fc = (cc - cg[i]) / (cg[i + 1] - cg[i])
        fm = (m - mg[k]) / (mg[k + 1] - mg[k])
        t = self.tput
        lo = t[p, i, k] * (1 - fm) + t[p, i, k + 1] * fm
        hi = t[p, i + 1, k] * (1 - fm) + t[p, i + 1, k + 1] * fm
        out = lo * (1 - fc) + hi * fc
        below = c < cg[0]  # under one core: linearly to 0
        return np.where(below, out * np.maximum(c, 0.0) / cg[0], out)


@lru_cache(maxsize=1)
def profiles() -> Profiles:
    """Synergy's profiles, read once from ``clustersim/data/synergy_profiles.json``."""
    text = (
        importlib_resources.files("clustersim")
        .joinpath("data/synergy_profiles.json")
        .read_text(encoding="utf-8")
    )
    d = json.loads(text)
    models = d["models"]
    names = tuple(models)
    return Profiles(
        names=names,
        cpu_grid=np.asarray(d["cpu_per_gpu_rows"], dtype=np.float64),
        mem_grid=np.asarray(d["mem_gb_per_gpu_cols"], dtype=np.float64),
        tput=np.asarray([models[n]["tput"] for n in names], dtype=np.float64),
        ideal_cpu=np.asarray([models[n]["cpu_per_gpu"] for n in names], dtype=np.float64),
        ideal_mem=np.asarray([models[n]["mem_gb_per_gpu"] for n in names], dtype=np.float64),
        speedup=np.asarray([models[n]["speedup"] for n in names], dtype=np.float64),
    )


class Sensitivity:
    """Each job's profile and demand, and its speed at an allocation (module doc).

    Attributes
    ----------
    prof : (n,) int64
        Profile of each job (-1: none).
    cpu_d, mem_d : (n,) float64
        Demand per device (cores, GB; 0 where unknown).
    """

    def __init__(self, jobs: JobTable) -> None:
        self.p = profiles()
        self.prof = self.p.index(jobs.job_type)
        self.cpu_d, self.mem_d = per_device_demand(jobs)
        has = self.prof >= 0
        ref_c = np.where(self.cpu_d > 0, self.cpu_d, SYNERGY_CPU_PER_GPU)
        ref_m = np.where(self.mem_d > 0, self.mem_d, SYNERGY_MEM_PER_GPU)
        self._ref = np.ones(len(jobs))
        if has.any():
            self._ref[has] = self.p.throughput(self.prof[has], ref_c[has], ref_m[has])
        self._ref = np.where(self._ref > 0, self._ref, 1.0)
        self._memo: dict[tuple[int, float, float, float, float], float] = {}

    def ideal(self, js: IntArray) -> tuple[FloatArray, FloatArray]:
        """(m,), (m,) cores and GB per device each job would like: its profile's ideal, or
        its demand when it has no profile."""
        p = self.prof[js]
        has = p >= 0
        pp = np.where(has, p, 0)
        c = np.where(has, self.p.ideal_cpu[pp], self.cpu_d[js])
        m = np.where(has, self.p.ideal_mem[pp], self.mem_d[js])
        return c, m

    def multiplier(self, js: IntArray, cpu: FloatArray, mem: FloatArray) -> FloatArray:
        """(m,) float64: how many times its table rate job ``js[i]`` runs at ``cpu[i]`` cores
        and ``mem[i]`` GB per device (module doc)."""
        js = np.asarray(js, dtype=np.int64)
        cpu = np.asarray(cpu, dtype=np.float64)
        mem = np.asarray(mem, dtype=np.float64)
        p = self.prof[js]
        has = p >= 0
        out = np.ones(len(js))
        if has.any():
            out[has] = self.p.throughput(p[has], cpu[has], mem[has]) / self._ref[js[has]]
        no = ~has
        if no.any():
            with np.errstate(divide="ignore", invalid="ignore"):
                fc = np.where(self.cpu_d[js] > 0, cpu / self.cpu_d[js], 1.0)
                fm = np.where(self.mem_d[js] > 0, mem / self.mem_d[js], 1.0)
            out[no] = np.minimum(1.0, np.minimum(fc, fm))[no]
        return out

    def multiplier_few(self, js: IntArray, cpu: FloatArray, mem: FloatArray) -> FloatArray:
        """:meth:`multiplier` for a few jobs at a time (a decision's starts): each distinct
        (profile, cores, GB, demand) is computed once per run and remembered."""
        memo = self._memo
        out = np.empty(len(js))
        miss: list[int] = []
        keys = list(
            zip(
                self.prof[js].tolist(),
                cpu.tolist(),
                mem.tolist(),
                self.cpu_d[js].tolist(),
                self.mem_d[js].tolist(),
                strict=True,
            )
        )
        for i, k in enumerate(keys):
            v = memo.get(k)
            if v is None:
                miss.append(i)
            else:
                out[i] = v
        if miss:
            mi = np.asarray(miss, dtype=np.int64)
            got = self.multiplier(js[mi], cpu[mi], mem[mi])
            out[mi] = got
            for i, v in zip(miss, got.tolist(), strict=True):
                memo[keys[i]] = v
        return out


class AuxSpeed:
    """The engine's sensitivity mechanism: after a decision that sets allocations, running
    jobs go on at their table rate × :meth:`Sensitivity.multiplier` of their allocation.

    The engine calls :meth:`after_decision` with the jobs of such a decision. A job's current
    rate already carries the multiplier applied last (``_after``); a job restarted since has a
    fresh rate from the performance model, and gets the whole multiplier.
    """

    def __init__(self, jobs: JobTable) -> None:
        self.sens = Sensitivity(jobs)
        n = len(jobs)
        self._applied = np.ones(n)
        self._after = np.full(n, np.nan)  # rate right after our last re-rate
        self.rerates = 0

    def after_decision(self, eng: Any, run: IntArray) -> None:
        """Re-rate the running jobs of ``run`` whose allocation changes their speed."""
        from clustersim.colocation import rerate
        from clustersim.kernels import JB_RUNNING, JF_CRATE, JI_ALLOC_N

        aux = eng.aux
        run = np.asarray(run, dtype=np.int64)
        js = run[eng.jb[JB_RUNNING, run] & (eng.ji[JI_ALLOC_N, run] > 0)]
        if not len(js):
            return
        mult = self.sens.multiplier_few(js, aux.cpu_dev[js], aux.mem_dev[js])
        crate = eng.jf[JF_CRATE, js]
        fresh = crate != self._after[js]  # restarted since (or never re-rated)
        old = np.where(fresh, 1.0, self._applied[js])
        factor = mult / old
        change = np.abs(factor - 1.0) > 1e-12
        self._applied[js] = mult
        self._after[js] = crate
        if change.any():
            jc = js[change]
            new = crate[change] * factor[change]
            rerate(eng, jc, new)
            self._after[jc] = eng.jf[JF_CRATE, jc]
            self.rerates += int(change.sum())


def parse_split(text: str) -> tuple[float, float, float]:
    """``"I,L,S"`` percent of image, language and speech models (each >= 0, sum > 0).

    Raises
    ------
    ClustersimError
        Naming the value and the form expected.
    """
    from clustersim.errors import ClustersimError

    parts = text.split(",")
    try:
        vals = [float(p) for p in parts]
    except ValueError:
        vals = []
    if len(vals) != 3 or any(not np.isfinite(v) or v < 0 for v in vals) or sum(vals) <= 0:
        raise ClustersimError(
            f"Synergy model split {text!r}: expected I,L,S, three percentages (image,"
            " language, speech) not all zero, e.g. 20,70,10"
        )
    return vals[0], vals[1], vals[2]


def assign_synergy_models(
    jobs: JobTable, split: tuple[float, float, float] = DEFAULT_SPLIT
) -> JobTable:
    """``jobs`` with a Synergy model as ``job_type`` for every job that has none.

    Synergy's simulator gives each trace job a model as it generates it (``jobs/model_zoo.py``,
    ``ModelAssignment.OVERALL``): the class (image, language, speech) furthest below its share
    of ``split`` among the jobs so far (ties to the first class; all classes tie at the first
    job), then that class's models in turn. Jobs are taken in submit order (the table's);
    jobs that already have a type are skipped and do not count.
    """
    jt = np.asarray(jobs.job_type, dtype=object)
    empty = np.flatnonzero(jt == "")
    if not len(empty):
        return jobs
    classes = list(TASK_MODELS)
    pct = [float(s) / 100.0 for s in split]
    count = [0, 0, 0]
    nxt = [0, 0, 0]
    pick = np.empty(len(empty), dtype=object)
    for total in range(len(empty)):  # jobs assigned so far
        prio = [pct[k] - count[k] / total for k in range(3)] if total else [0.0, 0.0, 0.0]
        best = max(range(3), key=lambda k: (prio[k], -k))
        models = TASK_MODELS[classes[best]]
        pick[total] = models[nxt[best] % len(models)]
        nxt[best] += 1
        count[best] += 1
    out = jt.copy()
    out[empty] = pick
    return jobs.replace(job_type=out)


__all__ = [
    "DEFAULT_SPLIT",
    "AuxSpeed",
    "Profiles",
    "Sensitivity",
    "assign_synergy_models",
    "parse_split",
    "profiles",
]
