"""``make bench`` section ``hetero``: heterogeneity-aware and fair policies (issue 13, point 10).

Every policy of :data:`POLICIES` that the registry holds (the others get a "not registered"
line) on

- Gavel's generated multi-GPU traces of 2,000 and 8,000 jobs
  (``shared/data/traces/gavel/generated/gavel_synth_multigpu_lam900_n{2000,8000}.trace``) on
  ``v100:8,p100:8,k80:8``, in Gavel's compatibility mode (``--compat gavel``) where the policy
  has one, else in the full model (column ``mode``);
- the full Philly trace (82,247 jobs) on the ``philly-hetero-560`` preset (560 GPUs: V100,
  P100, K80), full model.

Each run is its own spawned process pinned to one core (``sched_setaffinity``), so its wall
time is one core's and its peak memory (``VmHWM``) its own. The process first runs the same
policy, untimed, on the trace's first :data:`WARM_UP_JOBS` jobs (a Celery worker's steady
state: numba's kernels loaded from its cache, scipy's solver wrapper called once). Reported:
CPU seconds (``time.process_time``, the column the targets are judged on: a shared machine's
load stretches wall time, not CPU time) and wall seconds from the policy's preparation
(rates, compatibility checks) to the result, trace parsing excluded;
the LP counters the allocation layer puts in the summary (``lp_solves``, ``lp_solver_s``,
``lp_fallbacks``; "-" when the policy solves no LP or the summary lacks them); peak MB; mean
JCT of completed jobs.

Targets (issue 13): ``gavel-mmf`` ≤ 1 s on 2,000 jobs and ≤ 3 s on 8,000 jobs; every policy at
least 20× faster than Gavel's own simulator on the same trace (14 s for
``max_min_fairness_perf`` and 48 s for ``finish_time_fairness_perf`` on 2,000 jobs, 55 s and
155.7 s on 8,000 jobs, see :data:`GAVEL_S`; the FTF figure is the target of the FTF-objective
policies, the other of the rest);
full Philly ≤ 120 s and ≤ 2 GB per policy.

Environment (for a quick partial run): ``BENCH_HETERO_POLICIES`` (comma-separated policy names,
instead of :data:`POLICIES`) and ``BENCH_HETERO_TRACES`` (comma-separated keys of
:data:`TRACES`).
"""

from __future__ import annotations

import os
import time
from typing import Any

import numpy as np

from bench.workers import PHILLY, SHARED

#: The policies of the section, in print order (issue 13's families).
POLICIES = (
    "gavel-mmf",
    "gavel-ftf",
    "gavel-max-throughput",
    "gavel-makespan",
    "gavel-min-cost",
    "gavel-min-cost-slo",
    "gavel-fifo-het",
    "gavel-hierarchical",
    "gavel-gandiva",
    "gandiva",
    "themis",
    "allox",
    "gandiva-fair",
    "gavel-mmf-packed",
)

GAVEL_CLUSTER = "v100:8,p100:8,k80:8"
#: Jobs of the untimed warm-up run before each timed run (see :func:`hetero_run`).
WARM_UP_JOBS = 100
GENERATED = SHARED / "traces" / "gavel" / "generated"

#: key → (trace path, cluster: shorthand or ``preset:<name>``, label)
TRACES = {
    "gavel-2000": (
        GENERATED / "gavel_synth_multigpu_lam900_n2000.trace",
        GAVEL_CLUSTER,
        "Gavel's generated multi-GPU trace, 2,000 jobs",
    ),
    "gavel-8000": (
        GENERATED / "gavel_synth_multigpu_lam900_n8000.trace",
        GAVEL_CLUSTER,
        "Gavel's generated multi-GPU trace, 8,000 jobs",
    ),
    "philly": (PHILLY, "preset:philly-hetero-560", "The full Philly trace, 82,247 jobs"),
}

#: Policies whose objective is finish-time fairness (Gavel's 48 s figure applies).
FTF_POLICIES = frozenset({"gavel-ftf", "themis"})
#: Gavel's simulator on v100:8,p100:8,k80:8, wall seconds: (trace key, FTF?) → s. The issue
#: quotes 14 s and 48 s for 2,000 jobs and 55 s for 8,000 jobs without naming the policy of
#: the last (it is ``max_min_fairness_perf``'s: we measured 50.5 s). For FTF on 8,000 jobs the
#: figure is ours: ``finish_time_fairness_perf`` took 155.7 s of CPU on one core
#: (docs/gavel-fidelity.md, "Gavel's wall time on the issue's benchmark traces").
GAVEL_S = {
    ("gavel-2000", False): 14.0,
    ("gavel-2000", True): 48.0,
    ("gavel-8000", False): 55.0,
    ("gavel-8000", True): 155.7,
}
SPEEDUP = 20.0
#: Gavel's policy of the same name or mechanism, for the column of Gavel's measured times.
GAVEL_POLICY = {
    "gavel-mmf": "max_min_fairness_perf",
    "gavel-ftf": "finish_time_fairness_perf",
    "gavel-max-throughput": "max_sum_throughput_perf",
    "gavel-makespan": "min_total_duration_perf",
    "gavel-min-cost": "max_sum_throughput_normalized_by_cost_perf",
    "gavel-fifo-het": "fifo_perf",
    "gavel-hierarchical": "max_min_fairness_water_filling_perf",
    "gavel-gandiva": "gandiva",
}
#: Gavel's simulator (commit c4fa4009, CVXPY 1.9.3 + ECOS, GLPK_MI from cvxopt for the water
#: filling) measured on this machine kind on 2026-11-24, one core (taskset), quiet: CPU seconds
#: (user + system, including its ~1.5 s of start-up) by (trace key, Gavel policy). The machine
#: was faster that day than when the issue's figures were taken (max_min_fairness_perf 7.9 s
#: against 13.1 s and the issue's 14 s), so this column is the like-for-like ratio.
#: Missing: policies Gavel's simulator cannot run on these traces (allox and the SLO variant
#: stop on multi-GPU jobs; max_min_fairness_packed on mixed scale factors).
GAVEL_MEASURED_S: dict[tuple[str, str], float] = {
    ("gavel-2000", "max_min_fairness_perf"): 7.88,
    ("gavel-2000", "finish_time_fairness_perf"): 24.45,
    ("gavel-2000", "max_sum_throughput_perf"): 7.61,
    ("gavel-2000", "min_total_duration_perf"): 31.07,
    ("gavel-2000", "max_sum_throughput_normalized_by_cost_perf"): 7.36,
    ("gavel-2000", "fifo_perf"): 5.65,
    ("gavel-2000", "gandiva"): 15.30,
    ("gavel-2000", "max_min_fairness_water_filling_perf"): 35.45,
    ("gavel-8000", "max_min_fairness_perf"): 29.04,
    ("gavel-8000", "finish_time_fairness_perf"): 96.62,
    ("gavel-8000", "max_sum_throughput_perf"): 28.47,
    ("gavel-8000", "min_total_duration_perf"): 120.23,
    ("gavel-8000", "max_sum_throughput_normalized_by_cost_perf"): 28.90,
    ("gavel-8000", "fifo_perf"): 20.14,
    ("gavel-8000", "gandiva"): 63.89,
    ("gavel-8000", "max_min_fairness_water_filling_perf"): 138.4,
}


def gavel_measured(trace: str, policy: str) -> float | None:
    """Gavel's simulator's CPU seconds for this trace and policy, measured (see above)."""
    name = GAVEL_POLICY.get(policy)
    return None if name is None else GAVEL_MEASURED_S.get((trace, name))


#: Absolute targets of gavel-mmf (issue 13), seconds by trace key.
MMF_TARGET_S = {"gavel-2000": 1.0, "gavel-8000": 3.0}
PHILLY_TARGET_S = 120.0
PHILLY_TARGET_MB = 2048.0


def gavel_seconds(trace: str, policy: str) -> float | None:
    """Gavel's own simulator's wall time for this trace (and objective), if known."""
    return GAVEL_S.get((trace, policy in FTF_POLICIES))


def target_s(trace: str, policy: str) -> float | None:
    """The largest CPU time that meets every target of this row (seconds)."""
    limits = []
    gavel = gavel_seconds(trace, policy)
    if gavel is not None:
        limits.append(gavel / SPEEDUP)
    if policy == "gavel-mmf" and trace in MMF_TARGET_S:
        limits.append(MMF_TARGET_S[trace])
    if trace == "philly":
        limits.append(PHILLY_TARGET_S)
    return min(limits) if limits else None


def _pin_one_core() -> None:
    try:
        cpus = sorted(os.sched_getaffinity(0))
        os.sched_setaffinity(0, {cpus[-1]})
    except (AttributeError, OSError):  # not Linux: the OMP/BLAS thread limits still apply
        pass


def hetero_run(args: tuple[str, str]) -> dict[str, Any]:
    """One policy on one trace of :data:`TRACES` (run in a fresh spawned process)."""
    trace_key, policy = args
    _pin_one_core()
    from bench.parse import _peak_mb
    from clustersim.compat import prepare
    from clustersim.engine import EngineOptions, simulate
    from clustersim.kernels import use_compiled
    from clustersim.metrics import summary
    from clustersim.presets import preset
    from clustersim.spec import cluster_from_shorthand
    from clustersim.traces import read_trace
    from scheduling.registry import POLICIES as REGISTRY

    path, where, _ = TRACES[trace_key]
    jobs, _ = read_trace(path)
    cluster = (
        preset(where.removeprefix("preset:"))
        if where.startswith("preset:")
        else cluster_from_shorthand(where)
    )
    compat = "gavel" if trace_key != "philly" and "gavel" in REGISTRY[policy].compat else None
    use_compiled()  # numba's import stays outside the clock, as in bench.workers
    # a worker's steady state: the same policy on the trace's first jobs, so that the lazy
    # first calls (numba loading each kernel from its cache, scipy's HiGHS wrapper) stay
    # outside the clock too
    head = jobs.take(np.arange(min(WARM_UP_JOBS, len(jobs))))
    w = prepare(head, cluster, policy, compat=compat)
    opts = EngineOptions(**w.engine)
    simulate(w.jobs, cluster, w.policy, w.placement, rates=w.rates, options=opts)
    t0 = time.perf_counter()
    c0 = time.process_time()
    p = prepare(jobs, cluster, policy, compat=compat)
    r = simulate(
        p.jobs, cluster, p.policy, p.placement, rates=p.rates, options=EngineOptions(**p.engine)
    )
    wall = time.perf_counter() - t0
    cpu = time.process_time() - c0
    s = summary(r)
    return {
        "trace": trace_key,
        "policy": policy,
        "mode": compat or "full",
        "jobs": len(jobs),
        "wall_s": wall,
        "cpu_s": cpu,
        "lp_solves": s.get("lp_solves"),
        "lp_solver_s": s.get("lp_solver_s"),
        "lp_fallbacks": s.get("lp_fallbacks"),
        "peak_mb": _peak_mb(),
        "completed": s["jobs_completed"],
        "jct_mean_h": (s["jct_mean_s"] or 0.0) / 3600.0,
    }


def _fmt(value: Any, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def judge(row: dict[str, Any]) -> dict[str, Any]:
    """The row with its targets and whether it meets them (``met``: yes / NO / -)."""
    limit = target_s(row["trace"], row["policy"])
    gavel = gavel_seconds(row["trace"], row["policy"])
    ok = []
    if limit is not None:
        ok.append(row["cpu_s"] <= limit)
    if row["trace"] == "philly":
        ok.append(row["peak_mb"] <= PHILLY_TARGET_MB)
    measured = gavel_measured(row["trace"], row["policy"])
    return {
        **row,
        "gavel_x": None if gavel is None else gavel / row["cpu_s"],
        "gavel_m_s": measured,
        "gavel_m_x": None if measured is None else measured / row["cpu_s"],
        "target": "-" if limit is None else f"≤ {limit:g} s",
        "met": "-" if not ok else ("yes" if all(ok) else "NO"),
    }


COLS = [
    ("policy", "policy              ", ""),
    ("mode", "mode ", ""),
    ("jobs", "  jobs", ","),
    ("cpu_s", "  CPU s", ".2f"),
    ("wall_s", " wall s", ".2f"),
    ("lp_solves", "LP solves", ","),
    ("lp_solver_s", "solver s", ".2f"),
    ("lp_fallbacks", "fallbacks", ","),
    ("peak_mb", "peak MB", ",.0f"),
    ("jct_mean_h", "JCT mean h", ".2f"),
    ("gavel_x", "vs Gavel", ".0f"),
    ("gavel_m_s", "Gavel today s", ".1f"),
    ("gavel_m_x", "vs today", ".0f"),
    ("target", "target     ", ""),
    ("met", "met", ""),
]


def table(rows: list[dict[str, Any]]) -> str:
    head = " | ".join(h for _, h, _ in COLS)
    lines = [head, "-" * len(head)]
    for r in rows:
        cells = []
        for k, h, f in COLS:
            v = r.get(k)
            text = v if isinstance(v, str) else _fmt(v, f)
            if k in ("gavel_x", "gavel_m_x") and v is not None:
                text += "×"
            cells.append(f"{text:>{len(h)}}")
        lines.append(" | ".join(cells))
    return "\n".join(lines)


def _chosen(env: str, default: tuple[str, ...]) -> list[str]:
    raw = os.environ.get(env, "").strip()
    return [x.strip() for x in raw.split(",") if x.strip()] if raw else list(default)


def bench_hetero(run: Any) -> None:
    """Print the section; ``run(fn, args)`` runs ``fn(args)`` in a fresh process."""
    from scheduling.registry import POLICIES as REGISTRY

    policies = _chosen("BENCH_HETERO_POLICIES", POLICIES)
    traces = _chosen("BENCH_HETERO_TRACES", tuple(TRACES))
    present = [p for p in policies if p in REGISTRY]
    for p in policies:
        if p not in REGISTRY:
            print(f"{p}: not registered (skipped)")
    print()
    for key in traces:
        path, where, label = TRACES[key]
        print(f"## {label} ({path.name}) on {where.removeprefix('preset:')}, one core each")
        if key == "philly":
            print(
                f"target: ≤ {PHILLY_TARGET_S:g} s wall and ≤ {PHILLY_TARGET_MB:,.0f} MB per policy"
            )
        else:
            known = ", ".join(
                f"{s:g} s ({'FTF' if ftf else 'MMF and others'})"
                for (k, ftf), s in GAVEL_S.items()
                if k == key
            )
            mmf = MMF_TARGET_S.get(key)
            print(
                f"target: ≥ {SPEEDUP:g}× faster than Gavel's simulator ({known})"
                + (f"; gavel-mmf ≤ {mmf:g} s" if mmf else "")
            )
        print("LP columns: '-' where the policy solves no LP or does not report it")
        if key != "philly":
            print(
                "vs Gavel: against the issue's figure (the target); Gavel today: its simulator"
                " on the same policy, measured here (GAVEL_MEASURED_S), '-' where it has none"
            )
        print()
        if not path.exists():
            print(f"{path} not found (the shared reference data): skipped\n")
            continue
        rows = [judge(run(hetero_run, (key, p))) for p in present]
        print(table(rows))
        print()
