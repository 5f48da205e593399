"""Job types for traces that have none, and speeds for turning durations into work.

Most public traces (Philly, Helios, Alibaba PAI and openb, GAIA) record how long a job ran but
not what it trained, so the performance model (:mod:`clustersim.perf`) treats those jobs as
*generic*: their ``work`` is in reference seconds and every accelerator type speeds them up by
the same roofline rule. :func:`assign_job_types` gives such jobs one of Gavel's measured job
types instead, so that per-model throughputs, scaling and co-location data apply.

The rule
--------
Gavel's job generator (Narayanan et al., OSDI'20; ``generate_job`` in ``scheduler/utils.py``
of stanford-futuredata/gavel) draws a job's type uniformly from its job table, independently
of its duration (drawn from a Philly-like distribution), and re-draws for a multi-GPU job
until the type supports distributed training. It then turns the duration into steps with the
measured throughput of that type on its reference worker (V100 in Gavel; P100, our reference
type, here). :func:`assign_job_types` reproduces that, with two rules:

``"duration"`` (default)
    Jobs are grouped by duration bucket (:data:`DEFAULT_BUCKETS_S`: up to 10 min, 1 h, 4 h,
    1 day, longer) and gang size; within each group the job types are dealt out in exact
    proportion to their weights (largest-remainder rounding, ties broken at random) and then
    shuffled. With the default mapping (every bucket: all job types, equal weights) this is
    Gavel's uniform, duration-independent mix, matched within every duration bucket instead
    of only on average.
``"uniform"``
    Every job draws its type independently (Gavel's own ``random.choice``) from the
    candidates of its bucket.

Candidates for a job on ``n > 1`` devices are the job types measured at some scale factor
above 1 (ResNet-18/50, Transformer, LM: the types Gavel allows to be distributed); if a
bucket has none, every candidate is allowed (noted). A type whose rate on the reference
placement is 0 or unknown for that gang size is never chosen.

``mapping`` overrides the candidates: ``{upper bound of the bucket in reference seconds:
candidates}``, where candidates are a list of job types (equal weights) or a ``{job type:
weight}`` dict; a job falls in the first bucket whose bound is at least its duration (use
``math.inf`` for the last). Jobs longer than the largest bound keep their empty job type.

Work
----
An assigned job's ``work`` is converted from reference seconds to training steps (the unit of
measured job types, see :mod:`clustersim.jobs`) with the job type's rate on the reference
placement of its gang: ``num_gpus`` :data:`~clustersim.perf.REFERENCE_TYPE` (P100) devices,
consolidated on nodes of :data:`~clustersim.perf.REFERENCE_NODE_DEVICES` joined by
:data:`~clustersim.perf.REFERENCE_NETWORK_GBS`, as the performance model computes it. The
scale factor is ``num_gpus``. So the job takes exactly as long on P100 as before; on other
types it now runs at its job type's measured (or extrapolated) speed.

Only jobs whose ``job_type`` is ``""`` are touched. Randomness comes from
``numpy.random.default_rng(numpy.random.SeedSequence(seed))``: the same jobs and seed give the
same types in any process.

Reference speeds
----------------
:func:`reference_speed` is the speed of an accelerator type relative to the reference type for
a job without a measured job type, by the performance model's default roofline rule (the mean
fitted compute-bound fraction, see :mod:`clustersim.perf`). Trace readers use it to turn a
duration measured on a known type into reference seconds
(``work = duration × reference_speed(type)``).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from clustersim.catalog import Catalog, load_catalog
from clustersim.errors import ClustersimError
from clustersim.jobs import JobTable
from clustersim.perf import (
    GAVEL_WORKERS,
    REFERENCE_INTRA_GBS,
    REFERENCE_NETWORK_GBS,
    REFERENCE_NODE_DEVICES,
    REFERENCE_TYPE,
    PerformanceModel,
    ThroughputTable,
    fit_compute_fractions,
    gavel_worker,
    time_factor,
)
from clustersim.spec import cluster_from_spec

FloatArray = npt.NDArray[np.float64]

#: Upper bounds (reference seconds) of the default duration buckets of the ``"duration"`` rule.
DEFAULT_BUCKETS_S: tuple[float, ...] = (600.0, 3600.0, 4 * 3600.0, 24 * 3600.0, math.inf)
#: The rules :func:`assign_job_types` knows.
RULES: tuple[str, ...] = ("duration", "uniform")

Candidates = Sequence[str] | Mapping[str, float]


# --------------------------------------------------------------------------------------------
# Reference speeds


@functools.lru_cache(maxsize=4)
def _generic_fraction(throughputs: str | None) -> float:
    """Mean fitted compute-bound fraction of the table (the perf model's generic default)."""
    fits = fit_compute_fractions(ThroughputTable.load(throughputs))
    return float(np.nanmean(fits)) if np.isfinite(fits).any() else 0.5


def reference_speed(
    name: str, catalog: Catalog | None = None, compute_fraction: float | None = None
) -> float | None:
    """Speed of accelerator type ``name`` relative to the reference type, for generic jobs.

    Parameters
    ----------
    name
        A catalog name or alias (any case), e.g. ``"T4"``, ``"V100M32"``.
    catalog
        Where to look ``name`` up; default :func:`~clustersim.catalog.load_catalog`.
    compute_fraction
        Compute-bound fraction of a step on P100; default: the performance model's default
        (the mean fitted fraction of Gavel's table).

    Returns
    -------
    float or None
        1.0 for the reference type (and its aliases), the roofline speed
        ``1 / time_factor(f, fp16_tflops, memory_bw_tbs)`` otherwise; ``None`` when the name
        is not in the catalog or the type has neither figure.
    """
    acc = (catalog or load_catalog()).resolve(name)
    if acc is None:
        return None
    if gavel_worker(acc) == GAVEL_WORKERS.index("p100"):
        return 1.0
    flops = float(acc.fp16_tflops) if acc.fp16_tflops > 0 else math.nan
    bw = float(acc.memory_bw_tbs) if acc.memory_bw_tbs > 0 else math.nan
    f = _generic_fraction(None) if compute_fraction is None else float(compute_fraction)
    phi = float(time_factor(f, flops, bw))
    return 1.0 / phi if phi == phi and phi > 0 else None


# --------------------------------------------------------------------------------------------
# Assigning job types


def assign_job_types(
    jobs: JobTable,
    seed: int = 0,
    rule: str = "duration",
    mapping: Mapping[float, Candidates] | None = None,
    model: PerformanceModel | None = None,
) -> tuple[JobTable, list[str]]:
    """Give jobs without a job type one of Gavel's measured job types (module docstring).

    Parameters
    ----------
    jobs
        The workload; only rows whose ``job_type`` is ``""`` change. Their ``work`` must be in
        reference seconds.
    seed
        Seed of the ``numpy.random.SeedSequence`` behind every random choice.
    rule
        ``"duration"`` (balanced mix within duration buckets) or ``"uniform"`` (independent
        draws).
    mapping
        ``{bucket upper bound (s): candidates}``; candidates a list of job types or a
        ``{job type: weight}`` dict. Default: every measured job type, equal weights, in the
        buckets :data:`DEFAULT_BUCKETS_S` (``"duration"``) or one bucket (``"uniform"``).
    model
        Performance model whose throughput table and calibration convert work to steps;
        default ``PerformanceModel()``.

    Returns
    -------
    jobs : JobTable
        A new table (same order) with job types assigned and their work in steps.
    notes : list of str
        The assumptions made, for a report.

    Raises
    ------
    ClustersimError
        On an unknown rule, a malformed mapping, or a job type not in the throughput table.
    """
    if rule not in RULES:
        raise ClustersimError(f"unknown job-type rule {rule!r}; choose one of {', '.join(RULES)}")
    model = model or PerformanceModel()
    table = ThroughputTable.load(model.throughputs)
    bounds, cands = _buckets(mapping, rule, table)
    notes: list[str] = []
    empty = np.flatnonzero(np.asarray(jobs.job_type == "", dtype=bool))
    if len(empty) == 0:
        notes.append("every job has a job type: none assigned")
        return jobs, notes

    sizes = jobs.num_gpus[empty]
    duration = jobs.work[empty]
    names = sorted({t for c in cands for t in c})
    distributed = {
        t: bool(np.any(~np.isnan(table.consolidated[:, table.index(t), table.scale_factors > 1])))
        for t in names
    }
    uniq_sizes = np.unique(sizes)
    rates = _reference_rates(names, uniq_sizes, model)  # (len(names), len(uniq_sizes))
    col = {int(s): k for k, s in enumerate(uniq_sizes)}
    row = {t: i for i, t in enumerate(names)}

    rng = np.random.default_rng(np.random.SeedSequence(seed))
    bucket = np.searchsorted(np.asarray(bounds), duration, side="left")
    new_type = np.full(len(empty), "", dtype=object)
    new_rate = np.full(len(empty), np.nan)
    relaxed = 0
    for b, weights in enumerate(cands):
        for size in uniq_sizes.tolist():
            sel = np.flatnonzero((bucket == b) & (sizes == size))
            if len(sel) == 0:
                continue
            r = np.array([rates[row[t], col[size]] for t in weights])
            w = np.array(list(weights.values()), dtype=np.float64)
            ok = np.isfinite(r) & (r > 0)
            if size > 1:
                dist = np.array([distributed[t] for t in weights]) & ok
                if dist.any():
                    ok = dist
                elif ok.any():
                    relaxed += len(sel)
            if not ok.any():
                continue
            types = [t for t, keep in zip(weights, ok, strict=True) if keep]
            p = w[ok] / w[ok].sum()
            if rule == "uniform":
                pick = rng.choice(len(types), size=len(sel), p=p)
            else:
                pick = rng.permutation(
                    np.repeat(np.arange(len(types)), _apportion(len(sel), p, rng))
                )
            new_type[sel] = np.array(types, dtype=object)[pick]
            new_rate[sel] = r[ok][pick]

    done = new_type != ""
    job_type = jobs.job_type.copy()
    work = jobs.work.copy()
    job_type[empty[done]] = new_type[done]
    work[empty[done]] = duration[done] * new_rate[done]
    out = jobs.replace(job_type=job_type, work=work)

    counts = dict(zip(*np.unique(new_type[done].astype(str), return_counts=True), strict=True))
    desc = (
        "balanced mix per duration bucket and gang size"
        if rule == "duration"
        else "independent draws"
    )
    notes.append(
        f"job types assigned to {int(done.sum())} of {len(empty)} jobs without one "
        f"(rule {rule!r}: {desc}, seed {seed}; {len(counts)} distinct types)"
    )
    edges = ", ".join("inf" if math.isinf(x) else f"{x:g}" for x in bounds)
    notes.append(
        f"duration buckets (upper bounds, reference s): {edges}; candidates per bucket: "
        + "; ".join(str(len(c)) for c in cands)
    )
    notes.append(
        "work converted from reference seconds to steps with each type's rate on the "
        f"reference placement ({REFERENCE_TYPE}, scale factor = num_gpus): the duration on "
        f"{REFERENCE_TYPE} is unchanged"
    )
    if relaxed:
        notes.append(
            f"{relaxed} multi-GPU jobs fell in a bucket without a distributed job type: "
            "drawn from all its candidates"
        )
    left = int((~done).sum())
    if left:
        notes.append(
            f"{left} jobs kept no job type (longer than the last bucket, or no candidate runs "
            "at their gang size)"
        )
    return out, notes


def _buckets(
    mapping: Mapping[float, Candidates] | None, rule: str, table: ThroughputTable
) -> tuple[list[float], list[dict[str, float]]]:
    """Sorted bucket bounds and, per bucket, ``{job type: weight}``; validates ``mapping``."""
    if mapping is None:
        every = dict.fromkeys(table.job_types, 1.0)
        edges = DEFAULT_BUCKETS_S if rule == "duration" else (math.inf,)
        return list(edges), [dict(every) for _ in edges]
    if not isinstance(mapping, Mapping) or not mapping:
        raise ClustersimError("job-type mapping must be a non-empty {upper bound: candidates} dict")
    items: list[tuple[float, dict[str, float]]] = []
    for key, value in mapping.items():
        try:
            bound = float(key)
        except (TypeError, ValueError):
            raise ClustersimError(
                f"job-type mapping: bucket bound {key!r} is not a number"
            ) from None
        if not bound > 0:
            raise ClustersimError(f"job-type mapping: bucket bound {key!r} must be positive")
        items.append((bound, _weights(value, key, table)))
    items.sort(key=lambda kv: kv[0])
    bounds = [b for b, _ in items]
    if len(set(bounds)) != len(bounds):
        raise ClustersimError("job-type mapping: two buckets have the same bound")
    return bounds, [w for _, w in items]


def _weights(value: Any, key: Any, table: ThroughputTable) -> dict[str, float]:
    if isinstance(value, str) or not isinstance(value, Mapping | Sequence):
        raise ClustersimError(
            f"job-type mapping [{key!r}]: candidates must be a list of job types or a "
            "{job type: weight} dict"
        )
    pairs = list(value.items()) if isinstance(value, Mapping) else [(t, 1.0) for t in value]
    if not pairs:
        raise ClustersimError(f"job-type mapping [{key!r}]: no candidates")
    out: dict[str, float] = {}
    for t, w in pairs:
        if not isinstance(t, str) or table.index(t) < 0:
            raise ClustersimError(
                f"job-type mapping [{key!r}]: {t!r} is not a measured job type "
                f"(known: {', '.join(table.job_types)})"
            )
        try:
            weight = float(w)
        except (TypeError, ValueError):
            weight = math.nan
        if not (math.isfinite(weight) and weight > 0):
            raise ClustersimError(f"job-type mapping [{key!r}]: weight of {t!r} must be > 0")
        out[t] = out.get(t, 0.0) + weight
    return out


def _apportion(n: int, p: FloatArray, rng: np.random.Generator) -> npt.NDArray[np.int64]:
    """Split ``n`` into counts proportional to ``p`` (largest remainder, random ties)."""
    exact = n * p
    counts = np.floor(exact).astype(np.int64)
    short = n - int(counts.sum())
    if short > 0:
        frac = exact - counts
        order = np.lexsort((rng.random(len(p)), -frac))
        counts[order[:short]] += 1
    return counts


def _reference_rates(
    names: list[str], sizes: npt.NDArray[np.int64], model: PerformanceModel
) -> FloatArray:
    """(types, sizes) steps/s of each job type's gang on the reference placement."""
    nt, ns = len(names), len(sizes)
    biggest = int(sizes.max()) if ns else 1
    cluster = cluster_from_spec(
        {
            "name": "reference placement",
            "pools": [
                {
                    "name": "reference",
                    "accelerator": REFERENCE_TYPE,
                    "nodes": max(1, -(-biggest // REFERENCE_NODE_DEVICES)),
                    "devices_per_node": REFERENCE_NODE_DEVICES,
                    "intra_gbs": REFERENCE_INTRA_GBS,
                    "nic_gbps": REFERENCE_NETWORK_GBS * 8.0,
                }
            ],
        }
    )
    probe = JobTable.from_columns(
        job_id=np.arange(nt * ns),
        submit_time=np.zeros(nt * ns),
        num_gpus=np.tile(sizes, nt),
        work=np.ones(nt * ns),
        job_type=np.repeat(np.array(names, dtype=object), ns),
    )
    rates = model.prepare(probe, cluster).rate[:, 0]
    return np.asarray(rates, dtype=np.float64).reshape(nt, ns)
