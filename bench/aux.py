"""``make bench`` section ``aux``: what the CPU and memory time series of a run cost (issue 15,
``docs/resources.md``).

The Philly trace (its first 2,000 jobs, and all 82,247) on the ``philly`` preset with every
node given 3 cores and 62.5 GB per GPU and the ``synergy`` demand rule (the demands never
bind, so the run is the one without them, only through the checked path), under
``tiresias``. Measured in CPU seconds (``time.process_time``, best of 5) after the run: the
worker's ``timeseries(result, max_points=2000)`` with the model on, the same without the CPU
and memory series (the result with ``aux=None``), and :func:`clustersim.metrics.aux_series`
alone. The simulation itself is not timed here (``docs/resources.md`` has its numbers).
Each row runs in its own spawned process pinned to one core.
"""

from __future__ import annotations

import dataclasses
import os
import time
from typing import Any

from bench.workers import PHILLY

#: Rows: jobs (``None``: the whole trace).
ROWS: tuple[int | None, ...] = (2000, None)
REPEAT = 5


def _best(fn: Any) -> float:
    best = float("inf")
    for _ in range(REPEAT):
        c0 = time.process_time()
        fn()
        best = min(best, time.process_time() - c0)
    return best


def aux_row(n_jobs: int | None) -> dict[str, Any]:
    """One row of :data:`ROWS` (run in a fresh spawned process)."""
    import numpy as np

    try:
        cpus = sorted(os.sched_getaffinity(0))
        os.sched_setaffinity(0, {cpus[-1]})
    except (AttributeError, OSError):
        pass
    from clustersim.compat import prepare
    from clustersim.engine import EngineOptions, simulate
    from clustersim.metrics import _bin_edges, aux_series, timeseries
    from clustersim.presets import preset
    from clustersim.resources import apply_demand
    from clustersim.spec import cluster_from_spec, cluster_to_spec
    from clustersim.traces import read_trace

    jobs, _ = read_trace(PHILLY)
    if n_jobs is not None:
        jobs = jobs.take(np.arange(min(n_jobs, len(jobs))))
    spec = cluster_to_spec(preset("philly"))
    for pool in spec["pools"]:
        per_node = int(pool.get("devices_per_node", 8))
        pool["cpu_cores"] = 3 * per_node
        pool["host_mem_gb"] = 62.5 * per_node
    cluster = cluster_from_spec(spec)
    jobs = apply_demand(jobs, "synergy", cluster)
    p = prepare(jobs, cluster, "tiresias", {}, None)
    result = simulate(
        p.jobs, cluster, p.policy, p.placement, rates=p.rates, options=EngineOptions(**p.engine)
    )
    assert result.aux is not None
    plain = dataclasses.replace(result, aux=None)
    edges = _bin_edges(np.asarray(result.seg_t, dtype=np.float64), 2000)
    return {
        "jobs": len(jobs),
        "stints": len(result.stints),
        "with_s": _best(lambda: timeseries(result, max_points=2000)),
        "without_s": _best(lambda: timeseries(plain, max_points=2000)),
        "aux_s": _best(lambda: aux_series(result, edges)),
    }


def bench_aux(in_process: Any) -> None:
    print("## CPU and memory over time (issue 15): cost of the series after a run\n")
    print("| jobs | stints | timeseries, CPU s | without CPU/memory | aux_series alone |")
    print("|---|---|---|---|---|")
    for n in ROWS:
        r = in_process(aux_row, n)
        print(
            f"| {r['jobs']:,} | {r['stints']:,} | {r['with_s']:.4f} | {r['without_s']:.4f} |"
            f" {r['aux_s']:.4f} |"
        )
    print()
