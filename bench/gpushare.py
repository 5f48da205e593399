"""``make bench`` section ``gpushare``: GPU sharing in the engine (issue 16, point 6).

The full openb default trace (``shared/data/traces/alibaba-gpu-2023/openb_pod_list_default.csv``,
6,203 GPU pods of which 2,573 ask for a share of one GPU) on the ``alibaba-openb-2023`` preset
under ``fifo`` with each of the FGD paper's placements, GPU sharing on (default interference).
Each run is its own spawned process; it first runs the same placement, untimed, on the
trace's first 200 jobs (numba's kernels loaded from its cache). Reported: CPU seconds of the
simulation (``time.process_time``; trace parsing excluded), peak resident memory of the
process (``ru_maxrss``), mean JCT and the time-averaged fragmentation rate (FGD's measure,
weighted by the time between changes). Target (issue 16): ``fgd`` ≤ 30 s.
"""

from __future__ import annotations

import resource
import time
from typing import Any

import numpy as np

from bench.workers import SHARED

TRACE = SHARED / "traces" / "alibaba-gpu-2023" / "openb_pod_list_default.csv"
PLACEMENTS = ("fgd", "best-fit", "dot-product", "gpu-packing", "gpu-clustering", "random-fit")
TARGET_S = {"fgd": 30.0}


def run_one(name: str) -> dict[str, Any]:
    """One placement on the full trace, in this (fresh) process."""
    from clustersim.engine import simulate
    from clustersim.presets import preset
    from clustersim.traces import read_trace
    from scheduling.registry import make_placement, make_policy

    jobs, _ = read_trace(str(TRACE))
    cl = preset("alibaba-openb-2023")
    simulate(jobs.take(np.arange(200)), cl, make_policy("fifo"), make_placement(name), seed=0)
    t0 = time.process_time()
    r = simulate(jobs, cl, make_policy("fifo"), make_placement(name), seed=0)
    cpu = time.process_time() - t0
    rec = r.gpushare
    assert rec is not None
    dt = np.diff(np.append(rec.t, r.seg_t[-1]))
    frag = float((rec.frag_rate() * dt).sum() / dt.sum()) if dt.sum() > 0 else 0.0
    done = r.completed
    return {
        "placement": name,
        "cpu_s": cpu,
        "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "completed": int(done.sum()),
        "mean_jct_h": float(np.mean(r.finish[done] - jobs.submit_time[done]) / 3600),
        "frag_rate": frag,
        "peak_milli": int(rec.node_peak_milli.max()),
    }


def bench_gpushare(in_process: Any) -> None:
    if not TRACE.exists():
        print(f"(gpushare: {TRACE} not found; section skipped)\n")
        return
    print(
        "| placement | CPU s | target | peak MB | completed | mean JCT h | frag rate | max milli |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for name in PLACEMENTS:
        row = in_process(run_one, name)
        target = TARGET_S.get(name)
        goal = f"≤ {target:g} s" if target else "-"
        print(
            f"| {name} | {row['cpu_s']:.2f} | {goal} | "
            f"{row['peak_mb']:.0f} | {row['completed']} | {row['mean_jct_h']:.2f} | "
            f"{row['frag_rate']:.3f} | {row['peak_milli']} |"
        )
    print()
