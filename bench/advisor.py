"""``make bench`` section ``advisor``: the capacity advisor on the workers (issue 17, point 7).

A study over three accelerator types (V100, P100 and K80 nodes of 8, 0-12 nodes each: 2,197
inventories) on a 10,000-job Philly window (the first 10,000 jobs of the shared trace, file
order: 30 days of arrivals) under ``tiresias``: minimise the capital cost subject to
``jct_p95_s <= 200,000`` s (about 2.3 days), 100 evaluations with successive halving (a
quarter of the jobs first), two candidates at a time.

1. The reference: every inventory of the coarse grid (0, 3, 6, 9 or 12 nodes of each type:
   125 inventories) simulated in full, in two processes; its optimum is the cheapest feasible
   one.
2. The study through the product: the integration tests' stack (PostgreSQL, Redis, gunicorn)
   with one Celery worker of two processes (``--concurrency 2``, as ``docker-compose.yml``),
   the window uploaded and parsed, the study created through the API and polled until it
   succeeds (the sensitivity runs included, the growth plan off). Wall time from the create
   request to the answer; evaluations per minute.

Targets: the study in at most :data:`TARGET_S` seconds; its recommendation's capital within
:data:`TARGET_GAP` of the coarse grid's optimum (it may be below it: the study searches the
fine grid).
"""

from __future__ import annotations

import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from bench.workers import PHILLY

TYPES = "v100:0-12,p100:0-12,k80:0-12"
COARSE = "v100:0-12:3,p100:0-12:3,k80:0-12:3"
POLICY = "tiresias"
BOUND_S = 200_000.0
JOBS = 10_000
BUDGET = 100
SEED = 0
TARGET_S = 300.0
TARGET_GAP = 0.05
STUDY_TIMEOUT_S = 1800.0


def _problem(types: str, prefix: float) -> Any:
    from clustersim import advisor as adv

    return adv.Problem(
        types=adv.parse_types(types),
        objectives=(adv.Objective("capital_usd"), adv.Objective("jct_p95_s")),
        constraints=(adv.Constraint("jct_p95_s", "<=", BOUND_S),),
        policies=(POLICY,),
        prefix=prefix,
    )


_JOBS: dict[str, Any] = {}


def _window() -> Any:
    if "jobs" not in _JOBS:
        from clustersim.traces import read_trace

        jobs, _ = read_trace(PHILLY)
        _JOBS["jobs"] = jobs.take(np.arange(JOBS))
    return _JOBS["jobs"]


def _coarse_one(counts: tuple[int, ...]) -> dict[str, Any]:
    from clustersim import advisor as adv

    ev = adv.evaluate(_problem(COARSE, 1.0), _window(), counts, with_why=False)
    return {"counts": counts, "feasible": ev.feasible, "capital": ev.metrics["capital_usd"]}


def coarse_optimum() -> tuple[dict[str, Any] | None, int, float]:
    """The cheapest feasible inventory of the coarse grid, the grid's size, wall seconds."""
    import multiprocessing as mp

    grid = list(_problem(COARSE, 1.0).grid())
    t0 = time.perf_counter()
    with ProcessPoolExecutor(2, mp_context=mp.get_context("spawn")) as pool:
        rows = list(pool.map(_coarse_one, grid, chunksize=4))
    wall = time.perf_counter() - t0
    feasible = [r for r in rows if r["feasible"]]
    best = min(feasible, key=lambda r: (r["capital"], r["counts"])) if feasible else None
    return best, len(grid), wall


def _write_window(path: Path) -> Path:
    with PHILLY.open() as src, path.open("w") as out:
        for i, line in enumerate(src):
            if i > JOBS:
                break
            out.write(line)
    return path


def study_on_workers() -> dict[str, Any]:
    from bench.product import _make_stack

    with tempfile.TemporaryDirectory(prefix="clustersim-bench-advisor-") as tmp:
        stack = _make_stack(Path(tmp), 2, 60, [])
        try:
            stack.up()
            w = stack.upload(_write_window(Path(tmp) / "philly-10k.csv"), "philly 10k")
            w = stack.poll(
                f"/api/v1/workloads/{w['id']}/",
                lambda x: x["status"] in ("ready", "failed"),
                300,
                0.5,
            )
            assert w["status"] == "ready", w
            body = {
                "name": "bench",
                "workload": w["id"],
                "policies": [{"name": POLICY}],
                "types": [
                    {"accelerator": t.accelerator, "max_nodes": t.max_nodes, "devices_per_node": 8}
                    for t in _problem(TYPES, 0.25).types
                ],
                "objectives": [{"metric": "capital_usd"}, {"metric": "jct_p95_s"}],
                "constraints": [{"metric": "jct_p95_s", "op": "<=", "bound": BOUND_S}],
                "budget": BUDGET,
                "batch": 2,
                "seed": SEED,
            }
            t0 = time.perf_counter()
            study = stack.post("/api/v1/studies/", body, 202)
            path = f"/api/v1/studies/{study['id']}/"
            done = stack.poll(
                path,
                lambda s: s["state"] in ("succeeded", "failed", "cancelled"),
                STUDY_TIMEOUT_S,
                1.0,
            )
            wall = time.perf_counter() - t0
            assert done["state"] == "succeeded", done
            answer = stack.get(f"{path}results/")
            rows = stack.get(f"{path}evaluations/")
        finally:
            stack.down()
    rec = None
    if answer["recommendation"] is not None:
        rec = answer["evaluations"][answer["recommendation"]]
    simulated = sum(1 for r in rows if (r["result"] or {}).get("status") in ("full", "pruned"))
    pruned = sum(1 for r in rows if (r["result"] or {}).get("status") == "pruned")
    return {
        "wall_s": wall,
        "evaluations": len(rows),
        "simulated": simulated,
        "pruned": pruned,
        "rec": rec,
    }


def bench_advisor() -> None:
    print("## Capacity advisor (issue 17): a study on two worker processes\n")
    best, n_grid, grid_wall = coarse_optimum()
    print(
        f"coarse grid: {n_grid} inventories simulated in full in {grid_wall:.1f} s wall"
        f" (2 processes); optimum: "
        + (f"{best['counts']} at ${best['capital']:,.0f}" if best else "none feasible")
    )
    out = study_on_workers()
    rec = out["rec"]
    per_min = out["simulated"] / (out["wall_s"] / 60.0)
    gap = None
    if rec is not None and best is not None:
        gap = rec["metrics"]["capital_usd"] / best["capital"] - 1.0
    print()
    print("| study | value | target |")
    print("|---|---|---|")
    print(f"| wall time, create to answer | {out['wall_s']:.1f} s | <= {TARGET_S:.0f} s |")
    print(
        f"| evaluations (rows, simulated, stopped early) | {out['evaluations']},"
        f" {out['simulated']}, {out['pruned']} | {BUDGET} in the search |"
    )
    print(f"| evaluations per minute | {per_min:.1f} | - |")
    if rec is not None:
        print(
            f"| recommendation | {tuple(rec['counts'])} at ${rec['metrics']['capital_usd']:,.0f},"
            f" p95 JCT {rec['metrics']['jct_p95_s']:,.0f} s | - |"
        )
    print(
        "| capital vs the coarse grid's optimum | "
        + ("-" if gap is None else f"{gap:+.1%}")
        + f" | <= +{TARGET_GAP:.0%} |"
    )
    print()
