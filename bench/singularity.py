"""``make bench`` section ``singularity``: the cost of ``singularity`` on full Philly (issue 15).

The full Philly trace (82,247 jobs, read as :mod:`bench.workers` reads it) on the ``philly``
preset (560 P100), consolidate placement, default restore delays, under ``singularity`` with
its defaults (splice overhead 0.03, ``max_splice`` 4, tiers from the trace's priorities); for
comparison (no target) with ``max_splice`` 1 (no splicing: preemptive tiers only) and the
default on the first 2,000 jobs. Each run is its own spawned process; CPU seconds
(``time.process_time``) from the performance model's preparation to the result (numba loaded
before the clock), peak memory its own (``VmHWM``). Target: the default on the full trace
≤ :data:`TARGET_CPU_S` CPU seconds.
"""

from __future__ import annotations

import time
from typing import Any

#: Largest CPU time of a full-Philly run (s).
TARGET_CPU_S = 60.0

#: (label, params, first N jobs or None)
ROWS: tuple[tuple[str, dict[str, Any], int | None], ...] = (
    ("singularity", {}, 2_000),
    ("singularity", {}, None),
    ("singularity, max_splice 1", {"max_splice": 1}, None),
)


def singularity_run(row: tuple[str, dict[str, Any], int | None]) -> dict[str, Any]:
    """One row of :data:`ROWS` (run in a fresh spawned process)."""
    label, params, n_jobs = row
    import hashlib

    import numpy as np

    from bench.parse import _peak_mb
    from bench.workers import PHILLY
    from clustersim.engine import simulate
    from clustersim.kernels import use_compiled
    from clustersim.metrics import summary
    from clustersim.perf import PerformanceModel
    from clustersim.presets import preset
    from clustersim.traces import read_trace
    from scheduling.registry import make_policy

    jobs, _ = read_trace(PHILLY)
    if n_jobs is not None:
        jobs = jobs.take(np.arange(min(n_jobs, len(jobs))))
    cluster = preset("philly")
    use_compiled()
    c0 = time.process_time()
    rates = PerformanceModel().prepare(jobs, cluster)
    result = simulate(jobs, cluster, make_policy("singularity", **params), rates=rates)
    cpu = time.process_time() - c0
    s = summary(result)
    return {
        "label": label,
        "jobs": len(jobs),
        "cpu_s": cpu,
        "peak_mb": _peak_mb(),
        "events": result.events,
        "completed": s["jobs_completed"],
        "jct_mean_s": s["jct_mean_s"] or 0.0,
        "resizes": int(result.resizes.sum()),
        "preemptions": int(result.preemptions.sum()),
        "hash": hashlib.sha1(result.finish.tobytes()).hexdigest()[:16],
    }


def bench_singularity() -> None:
    from bench.__main__ import _in_process, table

    print("## singularity on the Philly trace, `philly` preset (560 P100), one process each")
    print(f"target: full trace ≤ {TARGET_CPU_S:g} CPU s; finish-time hash: sha1, 16 hex\n")
    rows = [_in_process(singularity_run, row) for row in ROWS]
    for r, (_, params, n) in zip(rows, ROWS, strict=True):
        # the target is the default policy's on the full trace; the rest are for comparison
        headline = n is None and not params
        r["met"] = ("yes" if r["cpu_s"] <= TARGET_CPU_S else "NO") if headline else ""
    cols = [
        ("label", "label                    ", ""),
        ("jobs", "  jobs", ","),
        ("cpu_s", " cpu s", ".2f"),
        ("peak_mb", "peak MB", ",.0f"),
        ("events", " events", ","),
        ("completed", "completed", ","),
        ("jct_mean_s", "JCT mean s", ",.0f"),
        ("resizes", "resizes", ","),
        ("preemptions", "preemptions", ","),
        ("hash", "hash            ", ""),
        ("met", "met", ""),
    ]
    print(table(rows, cols))
    print()
