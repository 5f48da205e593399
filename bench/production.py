"""Section ``production`` of ``make bench`` (issue 16): full Philly under the production
schedulers, ``slurm``, ``kubernetes`` (with each kube-scheduler scoring placement) and
``yarn-capacity``, each in a fresh process: CPU seconds of the simulation (``process_time``)
and peak memory. Target: ≤ 10 s of CPU on one core and ≤ 1 GB each.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

#: (policy, placement) pairs measured; ``kubernetes`` also with the engine's default
#: placement, to separate Kueue's admission from the kube-scheduler's scoring.
RUNS = [
    ("slurm", "consolidate"),
    ("yarn-capacity", "consolidate"),
    ("kubernetes", "consolidate"),
    ("kubernetes", "k8s-least-allocated"),
    ("kubernetes", "k8s-most-allocated"),
]

COLS = [
    ("policy", "       policy", ""),
    ("placement", "          placement", ""),
    ("jobs", "  jobs", ","),
    ("cpu_s", " cpu s", ".2f"),
    ("peak_mb", "peak MB", ",.0f"),
    ("completed", "completed", ","),
    ("jct_mean_h", "JCT mean h", ".2f"),
    ("preemptions", "preemptions", ","),
]


def production_run(args: tuple[str, str, int | None]) -> dict[str, Any]:
    """Simulate the Philly trace (its first ``n`` jobs; ``None``: all) on the ``philly``
    preset under one policy and placement; CPU seconds of the simulation and peak memory."""
    policy_name, placement, n_jobs = args
    import numpy as np

    from bench.parse import _peak_mb
    from bench.workers import PHILLY
    from clustersim.engine import simulate
    from clustersim.kernels import use_compiled
    from clustersim.metrics import summary
    from clustersim.perf import PerformanceModel
    from clustersim.presets import preset
    from clustersim.traces import read_trace
    from scheduling.registry import make_placement, make_policy

    jobs, _ = read_trace(PHILLY)
    if n_jobs is not None:
        jobs = jobs.take(np.arange(min(n_jobs, len(jobs))))
    cluster = preset("philly")
    use_compiled()
    c0 = time.process_time()
    rates = PerformanceModel().prepare(jobs, cluster)
    result = simulate(
        jobs, cluster, make_policy(policy_name), make_placement(placement), rates=rates
    )
    cpu = time.process_time() - c0
    s = summary(result)
    return {
        "policy": policy_name,
        "placement": placement,
        "jobs": len(jobs),
        "cpu_s": cpu,
        "peak_mb": _peak_mb(),
        "completed": s["jobs_completed"],
        "jct_mean_h": (s["jct_mean_s"] or 0) / 3600,
        "preemptions": s["preemptions"],
        "stats": result.policy_stats,
    }


def bench_production(in_process: Callable[[Any, Any], dict[str, Any]]) -> None:
    from bench.__main__ import table

    print(
        "## Production schedulers on full Philly (82,247 jobs, `philly` preset), one process each"
    )
    print("target (issue 16): ≤ 10 s CPU on one core, ≤ 1 GB peak memory per run\n")
    rows = [in_process(production_run, (p, where, None)) for p, where in RUNS]
    print(table(rows, COLS))
    print()
