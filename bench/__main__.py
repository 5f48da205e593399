"""``make bench``: simulator performance on the full Philly trace, printed as tables.

Each measurement runs in a fresh process (so peak memory is that run's own) on one core.
Targets (issue "Simulation core"): each full-Philly run ≤ 10 s wall time and ≤ 1 GB peak
memory; cost close to linear in the number of jobs.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import resource
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PHILLY = ROOT.parent / "shared" / "data" / "traces" / "philly" / "philly.csv"


def _one(args: tuple[str, int | None, str]) -> dict[str, Any]:
    policy_name, n_jobs, preset_name = args
    from clustersim.engine import simulate
    from clustersim.metrics import summary
    from clustersim.perf import PerformanceModel
    from clustersim.presets import preset
    from clustersim.traces import read_trace
    from scheduling.registry import make_policy

    t0 = time.perf_counter()
    jobs, _ = read_trace(PHILLY)
    t_parse = time.perf_counter() - t0
    if n_jobs is not None:
        jobs = jobs.take(slice_first(len(jobs), n_jobs))
    cluster = preset(preset_name)
    t1 = time.perf_counter()
    rates = PerformanceModel().prepare(jobs, cluster)
    result = simulate(jobs, cluster, make_policy(policy_name), rates=rates)
    wall = time.perf_counter() - t1
    s = summary(result)
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {
        "policy": policy_name,
        "jobs": len(jobs),
        "parse_s": t_parse,
        "wall_s": wall,
        "events": result.events,
        "events_per_s": result.events / wall,
        "peak_mb": rss_mb,
        "completed": s["jobs_completed"],
        "jct_mean_h": (s["jct_mean_s"] or 0) / 3600,
    }


def slice_first(n: int, k: int) -> list[int]:
    return list(range(min(n, k)))


def run(args: tuple[str, int | None, str]) -> dict[str, Any]:
    ctx = mp.get_context("spawn")
    with ctx.Pool(1) as pool:
        return pool.apply(_one, (args,))


def table(rows: list[dict[str, Any]], cols: list[tuple[str, str, str]]) -> str:
    head = " | ".join(f"{h:>{len(h)}}" for _, h, _ in cols)
    lines = [head, "-" * len(head)]
    for r in rows:
        lines.append(" | ".join(f"{format(r[k], f):>{len(h)}}" for k, h, f in cols))
    return "\n".join(lines)


def main() -> int:
    if not PHILLY.exists():
        print(f"bench: {PHILLY} not found (the shared reference data)", file=sys.stderr)
        return 2
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    cols = [
        ("policy", "policy    ", ""),
        ("jobs", "  jobs", ","),
        ("parse_s", "parse s", ".2f"),
        ("wall_s", "sim wall s", ".2f"),
        ("events", " events", ","),
        ("events_per_s", "events/s", ",.0f"),
        ("peak_mb", "peak MB", ",.0f"),
        ("completed", "completed", ","),
        ("jct_mean_h", "JCT mean h", ".2f"),
    ]
    print("Full Philly trace (82,247 jobs) on the `philly` preset, one process each")
    rows = [run((p, None, "philly")) for p in ("fifo", "srtf", "tiresias")]
    print(table(rows, cols))
    print()
    print("Scaling (FIFO and Tiresias, first N jobs)")
    rows = []
    for p in ("fifo", "tiresias"):
        for n in (10_000, 40_000, 82_247):
            rows.append(run((p, n, "philly")))
    for r in rows:
        r["us_per_job"] = r["wall_s"] / r["jobs"] * 1e6
    print(table(rows, [*cols[:2], cols[3], cols[4], ("us_per_job", "µs/job", ".1f"), cols[6]]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
