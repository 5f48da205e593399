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
    from clustersim.kernels import use_compiled
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
    use_compiled()  # import numba before the clock starts, as before it was imported lazily
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
    """Our ``policy`` under ``--compat gavel`` against our port of Gavel's simulator
    (``tests/gavel_reference.py``) running ``gavel_policy`` on one trace: average JCT, and CPU
    seconds of each from reading the trace to the result (ours with numba imported before the
    clock starts, as in the Philly runs)."""
    trace, policy, gavel_policy = args
    import numpy as np

    sys.path.insert(0, str(ROOT))
    from clustersim.compat import prepare
    from clustersim.engine import EngineOptions, simulate
    from clustersim.kernels import use_compiled
    from clustersim.spec import cluster_from_shorthand
    from clustersim.traces import read_trace
    from tests import gavel_reference as gavel

    spec = "v100:8,p100:8,k80:8"
    path = SHARED / "traces" / trace
    use_compiled()
    t0 = time.process_time()
    jobs, _ = read_trace(path)
    cluster = cluster_from_shorthand(spec)
    p = prepare(jobs, cluster, policy, compat="gavel")
    r = simulate(
        p.jobs, cluster, p.policy, p.placement, rates=p.rates, options=EngineOptions(**p.engine)
    )
    ours_s = time.process_time() - t0
    done = np.isfinite(r.finish)
    ours = float(np.mean(r.finish[done] - jobs.submit_time[done]))
    t0 = time.process_time()
    theirs = gavel.simulate(
        gavel.parse_trace(path),
        gavel.parse_cluster(spec),
        gavel.load_throughputs(SHARED / "throughput" / "gavel" / "simulation_throughputs.json"),
        policy=gavel_policy,
        seed=0,
    )
    port_s = time.process_time() - t0
    return {
        "trace": Path(trace).name,
        "jobs": len(jobs),
        "policy": policy,
        "gavel_policy": gavel_policy,
        "ours_h": ours / 3600,
        "gavel_h": theirs.average_jct / 3600,
        "diff_pct": 100 * (ours / theirs.average_jct - 1),
        "ours_s": ours_s,
        "port_s": port_s,
        "port_ratio": port_s / ours_s,
    }


def _tiresias_workload(name: str) -> tuple[Any, list[tuple[str, int, int, int]]]:
    """A workload in the Tiresias simulator's terms: its own ``60_job.csv``, or ``philly-N-xF``:
    the first N Philly jobs of at most 64 GPUs, submit times from 0 divided by F, whole
    seconds (as the simulator reads them)."""
    import numpy as np

    from clustersim.jobs import JobTable
    from clustersim.traces import read_trace

    if name == "60_job":
        jobs, _ = read_trace(SHARED / "traces" / "tiresias" / "60_job.csv")
    else:
        _, n, f = name.split("-")
        src, _ = read_trace(PHILLY)
        keep = np.flatnonzero((src.num_gpus <= 64) & (src.work >= 1))[: int(n)]
        src = src.take(keep)
        submit = np.trunc((src.submit_time - src.submit_time[0]) / float(f[1:]))
        jobs = JobTable.from_columns(
            job_id=[str(i) for i in range(len(src))],
            submit_time=submit,
            num_gpus=src.num_gpus,
            work=np.trunc(src.work),
        )
    rows = [
        (str(i), int(g), int(s), int(w))
        for i, g, s, w in zip(jobs.job_id, jobs.num_gpus, jobs.submit_time, jobs.work, strict=True)
    ]
    return jobs, rows


#: The Tiresias simulator's cluster_spec.csv: 1 switch × 16 nodes × 4 GPUs.
TIRESIAS_64 = {
    "name": "tiresias-64",
    "pools": [{"name": "p100", "accelerator": "P100", "nodes": 16, "devices_per_node": 4}],
}


def tiresias_vs_reference(args: tuple[str, str]) -> dict[str, Any]:
    """Our ``policy`` under ``--compat tiresias`` against the restatement of the Tiresias
    simulator (``tests/tiresias_reference.py``) on one workload: average JCT and wall time."""
    name, policy = args
    import numpy as np

    sys.path.insert(0, str(ROOT))
    from clustersim import kernels
    from clustersim.compat import prepare
    from clustersim.engine import EngineOptions, simulate
    from clustersim.spec import cluster_from_spec
    from tests import tiresias_reference as ref

    kernels.use_compiled()  # numba's import and cache load stay outside the clock, as above
    jobs, rows = _tiresias_workload(name)
    cluster = cluster_from_spec(TIRESIAS_64)
    t0 = time.perf_counter()
    p = prepare(jobs, cluster, policy, compat="tiresias")
    r = simulate(p.jobs, cluster, p.policy, p.placement, rates=p.rates, options=EngineOptions())
    ours_s = time.perf_counter() - t0
    done = np.isfinite(r.finish)
    ours = float(np.mean(r.finish[done] - p.jobs.submit_time[done]))
    spec = ref.Spec(1, 16, 4)
    t0 = time.perf_counter()
    if policy == "fifo":
        theirs = ref.average_jct(ref.fifo(ref.load(rows), spec, "yarn"))
    else:
        theirs = ref.average_jct(ref.dlas_gpu(ref.load(rows), spec, py3_division=True))
    ref_s = time.perf_counter() - t0
    return {
        "trace": name,
        "jobs": len(rows),
        "policy": policy,
        "ours_h": ours / 3600,
        "ref_h": theirs / 3600,
        "diff_pct": 100 * (ours / theirs - 1),
        "ours_s": ours_s,
        "ref_s": ref_s,
        "speedup": ref_s / ours_s,
    }
