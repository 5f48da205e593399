"""``make bench`` section ``synergy``: Synergy and DRF on full Philly (issue 15, point 7).

The full Philly trace (82,247 jobs) on the ``philly`` preset with its nodes given Synergy's
per-GPU share of cores and memory (3 cores and 62.5 GB per GPU, ``docs/resources.md``), every
job a Synergy model by its simulator's rule (:func:`clustersim.aux_speed.assign_synergy_models`,
20/70/10) and the ``synergy`` demand rule (the proportional share). Rows: ``synergy``
(Synergy-TUNE over SRTF), its GPU-proportional baseline (``allocation=proportional``),
``synergy-fair`` and ``drf``. Target (issue 15): ``drf`` and ``synergy`` ≤ :data:`TARGET_S`
CPU seconds and ≤ :data:`TARGET_MB` MB on one core.

Each run is its own spawned process pinned to one core; CPU seconds (``time.process_time``)
from the performance model's preparation to the result (trace parsing and the model
assignment excluded), peak memory its own (``VmHWM``).
"""

from __future__ import annotations

import os
import time
from typing import Any

from bench.workers import PHILLY

#: Largest CPU time of a row (s) and peak memory (MB), issue 15.
TARGET_S = 10.0
TARGET_MB = 1024.0

#: (label, policy, params)
ROWS: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("synergy (TUNE, srtf)", "synergy", {}),
    ("synergy proportional", "synergy", {"allocation": "proportional"}),
    ("synergy-fair", "synergy-fair", {}),
    ("drf", "drf", {}),
)


def synergy_cluster_spec() -> dict[str, Any]:
    """The ``philly`` preset with 3 cores and 62.5 GB per GPU on every node."""
    from clustersim.presets import philly_spec
    from clustersim.resources import SYNERGY_CPU_PER_GPU, SYNERGY_MEM_PER_GPU

    spec = philly_spec()
    for pool in spec["pools"]:
        g = int(pool["devices_per_node"])
        pool["cpu_cores"] = int(SYNERGY_CPU_PER_GPU * g)
        pool["host_mem_gb"] = SYNERGY_MEM_PER_GPU * g
    return spec


def synergy_run(row: tuple[str, str, dict[str, Any]]) -> dict[str, Any]:
    """One row of :data:`ROWS` (run in a fresh spawned process)."""
    label, policy, params = row
    try:
        cpus = sorted(os.sched_getaffinity(0))
        os.sched_setaffinity(0, {cpus[-1]})
    except (AttributeError, OSError):
        pass
    from bench.parse import _peak_mb
    from clustersim.aux_speed import assign_synergy_models
    from clustersim.engine import simulate
    from clustersim.kernels import use_compiled
    from clustersim.metrics import summary
    from clustersim.perf import PerformanceModel
    from clustersim.resources import apply_demand
    from clustersim.spec import cluster_from_spec
    from clustersim.traces import read_trace
    from scheduling.registry import make_policy

    jobs, _ = read_trace(PHILLY)
    cluster = cluster_from_spec(synergy_cluster_spec())
    jobs = apply_demand(assign_synergy_models(jobs), "synergy")
    use_compiled()
    t0 = time.process_time()
    rates = PerformanceModel().prepare(jobs, cluster)
    result = simulate(jobs, cluster, make_policy(policy, **params), rates=rates)
    cpu = time.process_time() - t0
    s = summary(result)
    return {
        "label": label,
        "jobs": len(jobs),
        "cpu_s": cpu,
        "peak_mb": _peak_mb(),
        "completed": s["jobs_completed"],
        "jct_mean_h": (s["jct_mean_s"] or 0.0) / 3600.0,
        "cpu_util": s.get("cpu_utilisation"),
        "cutbacks": result.policy_stats.get("synergy_cutbacks"),
    }


def _cell(v: Any, spec: str) -> str:
    return "-" if v is None else format(v, spec)


def bench_synergy(run: Any) -> None:
    """Print the section; ``run(fn, args)`` runs ``fn(args)`` in a fresh process."""
    print("## Synergy and DRF on full Philly (issue 15)\n")
    if not PHILLY.exists():
        print(f"{PHILLY} not found (the shared reference data): skipped\n")
        return
    print(
        f"target: drf and synergy ≤ {TARGET_S:g} CPU s and ≤ {TARGET_MB:g} MB on one core;"
        " philly preset with 3 cores and 62.5 GB per GPU, Synergy models 20/70/10,"
        " demand rule synergy"
    )
    print()
    head = (
        f"{'run':<24} | {'jobs':>6} | {'CPU s':>6} | {'peak MB':>7} | {'done':>6} |"
        f" {'mean JCT h':>10} | {'CPU util':>8} | {'cut-backs':>9} | target"
    )
    print(head)
    print("-" * len(head))
    for row in ROWS:
        r = run(synergy_run, row)
        ok = r["cpu_s"] <= TARGET_S and r["peak_mb"] <= TARGET_MB
        print(
            f"{r['label']:<24} | {r['jobs']:>6} | {r['cpu_s']:>6.2f} | {r['peak_mb']:>7.0f} |"
            f" {r['completed']:>6} | {r['jct_mean_h']:>10.3f} | {_cell(r['cpu_util'], '.3f'):>8} |"
            f" {_cell(r['cutbacks'], '.0f'):>9} | {'met' if ok else 'MISSED'}"
        )
    print()
