"""``make bench``: performance and fidelity tables (not part of the test suite).

Each simulator measurement runs in a fresh process, so the peak memory reported is that run's
own. Targets (issue "Simulation core"): each full-Philly run ≤ 10 s wall time on one core and
≤ 1 GB peak memory; cost close to linear in the number of jobs; Gavel's baselines within 5 % of
Gavel's simulator (our port of it, ``tests/gavel_reference.py``). Issue "Core, second pass":
LAS ≤ 5 s and Tiresias ≤ 3 s on full Philly, and at load ×2 (submit times halved) LAS and
Tiresias cost at most 3× their load ×1 time. Parse throughput (issue "Workloads") comes from
:mod:`bench.parse`.

``python -m bench [sim|gavel|parse|dashboard|product ...]`` runs some sections only.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import sys
import time
from typing import Any

from bench.workers import PHILLY, gavel_vs_port, philly_run
from clustersim.engine import warm_up
from scheduling.registry import POLICIES


def _in_process(fn: Any, args: Any) -> dict[str, Any]:
    ctx = mp.get_context("spawn")
    with ctx.Pool(1) as pool:
        return pool.apply(fn, (args,))  # type: ignore[no-any-return]


def table(rows: list[dict[str, Any]], cols: list[tuple[str, str, str]]) -> str:
    head = " | ".join(h for _, h, _ in cols)
    lines = [head, "-" * len(head)]
    for r in rows:
        lines.append(" | ".join(f"{format(r[k], f):>{len(h)}}" for k, h, f in cols))
    return "\n".join(lines)


SIM_COLS = [
    ("policy", "    policy", ""),
    ("jobs", "  jobs", ","),
    ("wall_s", "wall s", ".2f"),
    ("cpu_s", " cpu s", ".2f"),
    ("events", " events", ","),
    ("events_per_s", "events/s", ",.0f"),
    ("peak_mb", "peak MB", ",.0f"),
    ("completed", "completed", ","),
    ("jct_mean_h", "JCT mean h", ".2f"),
    ("preemptions", "preemptions", ","),
]


def bench_sim() -> None:
    print("## Full Philly trace (82,247 jobs) on the `philly` preset (560 P100), one process each")
    print("target: ≤ 10 s wall, ≤ 1 GB peak memory per run\n")
    rows = [_in_process(philly_run, (p, None, "philly")) for p in ("fifo", "srtf", "tiresias")]
    print(table(rows, SIM_COLS))
    print(f"\n(parsing the trace, not included above: {rows[0]['parse_s']:.2f} s)\n")
    print("## The registry's other policies on the same trace (no target)\n")
    others = [p for p in sorted(POLICIES) if p not in ("fifo", "srtf", "tiresias")]
    print(table([_in_process(philly_run, (p, None, "philly")) for p in others], SIM_COLS))
    print()
    print("## Scaling: first N jobs of the Philly trace\n")
    rows = []
    for p in ("fifo", "srtf", "tiresias"):
        for n in (10_000, 40_000, 82_247):
            row = _in_process(philly_run, (p, n, "philly"))
            row["us_per_job"] = row["cpu_s"] / row["jobs"] * 1e6
            rows.append(row)
    cols = [*SIM_COLS[:4], SIM_COLS[4], ("us_per_job", "cpu µs/job", ".1f"), SIM_COLS[6]]
    print(table(rows, cols))
    print()
    print("## Load ×2: full Philly with submit times halved, against load ×1")
    print("target: LAS and Tiresias at ×2 cost ≤ 3× their ×1 cpu time (gavel-las: no target)\n")
    rows = []
    for p in ("las", "tiresias", "gavel-las"):
        one = _in_process(philly_run, (p, None, "philly", 1.0))
        two = _in_process(philly_run, (p, None, "philly", 2.0))
        two["ratio"] = two["cpu_s"] / one["cpu_s"]
        one["ratio"] = 1.0
        rows += [one, two]
    cols = [SIM_COLS[0], ("load", "load", ".0f"), *SIM_COLS[2:5], SIM_COLS[6], SIM_COLS[9]]
    print(table(rows, [*cols, ("ratio", "×2/×1 cpu", ".2f")]))
    print()


def bench_gavel() -> None:
    print("## Fidelity with Gavel's simulator (v100:8,p100:8,k80:8, 360 s rounds, seed 0)")
    print("ours: `--gavel-compat`; gavel: our port of its simulator; target |diff| < 5 %\n")
    rows = []
    for trace in (
        "shockwave/shockwave_120jobs_100.trace",
        "shockwave/shockwave_220jobs_100.trace",
        "gavel/generated/gavel_synth_multigpu_lam900_n100.trace",
        "gavel/generated/gavel_synth_multigpu_lam900_n500.trace",
    ):
        for ours, theirs in (("gavel-fifo", "fifo"), ("gavel-las", "max_min_fairness")):
            rows.append(_in_process(gavel_vs_port, (trace, ours, theirs)))
    cols = [
        ("trace", "trace                                  ", ""),
        ("policy", "policy    ", ""),
        ("ours_h", "ours JCT h", ".3f"),
        ("gavel_h", "gavel JCT h", ".3f"),
        ("diff_pct", "diff %", "+.2f"),
        ("ours_s", "ours s", ".2f"),
        ("port_s", "port s", ".2f"),
    ]
    print(table(rows, cols))
    print()


def bench_parse() -> None:
    from bench.parse import parse_bench
    from bench.parse import table as parse_table

    print("## Trace parsing throughput\n")
    print(parse_table(parse_bench()))
    print()


def bench_dashboard() -> None:
    from bench.dashboard import report

    print("## Dashboard on full-Philly runs: JSON endpoints, and pages in headless chromium")
    print("targets: each endpoint ≤ 300 ms server time (cold) and ≤ 1 MB; page interactive ≤ 2 s\n")
    print(_in_process(report, None))
    print()


SECTIONS = {
    "sim": bench_sim,
    "gavel": bench_gavel,
    "parse": bench_parse,
    "dashboard": bench_dashboard,
}


def bench_product() -> None:
    from bench.product import bench_product as run

    run()


SECTIONS["product"] = bench_product


def main(argv: list[str]) -> int:
    if not PHILLY.exists():
        print(f"bench: {PHILLY} not found (the shared reference data)", file=sys.stderr)
        return 2
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    # the kernels' on-disk cache is filled at install time; after an edit of
    # clustersim/kernels.py it is stale, and the first timed run would pay numba's compiler
    t0 = time.perf_counter()
    warm_up()
    took = time.perf_counter() - t0
    print(f"(engine kernels compiled or loaded from numba's cache: {took:.1f} s; each run")
    print(" below loads them from that cache in its own fresh process)\n")
    for name in argv or list(SECTIONS):
        SECTIONS[name]()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
