"""Benchmark workers, each run in a fresh spawned process by :mod:`bench.__main__`."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"
PHILLY = SHARED / "traces" / "philly" / "philly.csv"


def philly_run(
    args: tuple[str, int | None, str] | tuple[str, int | None, str, float],
) -> dict[str, Any]:
    """Simulate the Philly trace (its first ``n_jobs`` jobs, at a load factor if given:
    submit times divided by it) under one policy on one preset."""
    policy_name, n_jobs, preset_name = args[:3]
    load = float(args[3]) if len(args) > 3 else 1.0
    import numpy as np

    from bench.parse import _peak_mb
    from clustersim.engine import simulate
    from clustersim.metrics import summary
    from clustersim.perf import PerformanceModel
    from clustersim.presets import preset
    from clustersim.traces import read_trace
    from clustersim.transform import scale_load
    from scheduling.registry import make_policy

    t0 = time.perf_counter()
    jobs, _ = read_trace(PHILLY)
    t_parse = time.perf_counter() - t0
    if n_jobs is not None:
        jobs = jobs.take(np.arange(min(n_jobs, len(jobs))))
    if load != 1.0:
        jobs = scale_load(jobs, load).jobs
    cluster = preset(preset_name)
    t1 = time.perf_counter()
    c1 = time.process_time()
    rates = PerformanceModel().prepare(jobs, cluster)
    result = simulate(jobs, cluster, make_policy(policy_name), rates=rates)
    wall = time.perf_counter() - t1
    cpu = time.process_time() - c1
    s = summary(result)
    return {
        "policy": policy_name,
        "load": load,
        "jobs": len(jobs),
        "parse_s": t_parse,
        "wall_s": wall,
        "cpu_s": cpu,
        "events": result.events,
        "events_per_s": result.events / cpu,
        "peak_mb": _peak_mb(),
        "completed": s["jobs_completed"],
        "jct_mean_h": (s["jct_mean_s"] or 0) / 3600,
        "preemptions": s["preemptions"],
    }


def gavel_vs_port(args: tuple[str, str, str]) -> dict[str, Any]:
    trace, policy, gavel_policy = args
    import numpy as np

    sys.path.insert(0, str(ROOT))
    from clustersim.engine import EngineOptions, simulate
    from clustersim.perf import PerformanceModel
    from clustersim.spec import cluster_from_shorthand
    from clustersim.traces import read_trace
    from scheduling.registry import make_policy
    from tests import gavel_reference as gavel

    spec = "v100:8,p100:8,k80:8"
    path = SHARED / "traces" / trace
    t0 = time.perf_counter()
    jobs, _ = read_trace(path)
    cluster = cluster_from_shorthand(spec)
    rates = PerformanceModel(restore_s=0, placement_aware=False).prepare(jobs, cluster)
    r = simulate(
        jobs,
        cluster,
        make_policy(policy),
        rates=rates,
        options=EngineOptions(whole_steps_per_round=True),
    )
    ours_s = time.perf_counter() - t0
    done = np.isfinite(r.finish)
    ours = float(np.mean(r.finish[done] - jobs.submit_time[done]))
    t0 = time.perf_counter()
    theirs = gavel.simulate(
        gavel.parse_trace(path),
        gavel.parse_cluster(spec),
        gavel.load_throughputs(SHARED / "throughput" / "gavel" / "simulation_throughputs.json"),
        policy=gavel_policy,
        seed=0,
    )
    port_s = time.perf_counter() - t0
    return {
        "trace": Path(trace).name,
        "policy": policy,
        "ours_h": ours / 3600,
        "gavel_h": theirs.average_jct / 3600,
        "diff_pct": 100 * (ours / theirs.average_jct - 1),
        "ours_s": ours_s,
        "port_s": port_s,
    }
