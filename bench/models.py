"""``make bench`` section ``models``: what the models of issue 14 cost (point 7).

* The full Philly trace (82,247 jobs) on the ``philly`` preset (560 P100 in racks of 16
  servers, uplinks oversubscribed 4:1) under ``tiresias``: without the models, with node
  failures (:mod:`clustersim.failures`, the documented defaults: MTBF from the Llama 3
  report, checkpoints every hour), with network contention (:mod:`clustersim.network`), and
  with both. Target: both models together at most 2× the wall time of the run without them
  (:data:`MODEL_RATIO`).
* A year-long carbon-shifting run: the full Philly trace with its arrivals stretched over
  one year (:func:`clustersim.transform.scale_load`, factor :data:`YEAR_LOAD`) on the same
  cluster placed in the ``US-CAL-CISO`` carbon zone (hourly intensity of 2023), under
  ``fifo`` and under ``carbon-wait`` (half the jobs deferrable, 6 h of slack) and
  ``carbon-suspend``. Target: ≤ :data:`CARBON_TARGET_S` seconds.

Each run is its own spawned process pinned to one core, wall seconds from the performance
model's preparation to the result (trace parsing excluded), peak memory its own (``VmHWM``).
The ratio of a model row is against the row without models measured in the same section, one
after the other on the same core (the machine is shared: ratios are steadier than seconds).
"""

from __future__ import annotations

import os
import time
from typing import Any

from bench.workers import PHILLY

#: Largest wall time of the run with failures and network contention, over the plain run.
MODEL_RATIO = 2.0
#: Largest wall time of the year-long carbon-shifting run (s).
CARBON_TARGET_S = 30.0
#: Philly's arrivals span 9,408,690 s (109 days): divided by this factor they span a year.
YEAR_LOAD = 9_408_690 / (365 * 86_400)
#: The zone of the carbon runs (one of the shipped series, 2023).
ZONE = "US-CAL-CISO"

#: (label, policy, params, failures, network, carbon)
ROWS: tuple[tuple[str, str, dict[str, Any], bool, bool, bool], ...] = (
    ("tiresias", "tiresias", {}, False, False, False),
    ("tiresias + failures", "tiresias", {}, True, False, False),
    ("tiresias + network", "tiresias", {}, False, True, False),
    ("tiresias + failures + network", "tiresias", {}, True, True, False),
    ("fifo, one year", "fifo", {}, False, False, True),
    ("carbon-wait, one year", "carbon-wait", {"deferrable_share": 0.5}, False, False, True),
    ("carbon-suspend, one year", "carbon-suspend", {"deferrable_share": 0.5}, False, False, True),
)


def _pin_one_core() -> None:
    try:
        cpus = sorted(os.sched_getaffinity(0))
        os.sched_setaffinity(0, {cpus[-1]})
    except (AttributeError, OSError):
        pass


def models_run(row: tuple[str, str, dict[str, Any], bool, bool, bool]) -> dict[str, Any]:
    """One row of :data:`ROWS` (run in a fresh spawned process)."""
    label, policy, params, failures, network, carbon = row
    _pin_one_core()
    from bench.parse import _peak_mb
    from clustersim.carbon import DEFAULT_START
    from clustersim.engine import EngineOptions, simulate
    from clustersim.failures import FailureOptions
    from clustersim.kernels import use_compiled
    from clustersim.metrics import summary
    from clustersim.network import NetworkOptions
    from clustersim.perf import PerformanceModel
    from clustersim.presets import philly_spec
    from clustersim.spec import cluster_from_spec
    from clustersim.traces import read_trace
    from clustersim.transform import scale_load
    from scheduling.registry import make_policy

    jobs, _ = read_trace(PHILLY)
    spec = philly_spec()
    if carbon:
        jobs = scale_load(jobs, YEAR_LOAD).jobs
        spec = {**spec, "regions": [{"name": "philly", "carbon_zone": ZONE}]}
    cluster = cluster_from_spec(spec)
    opts = EngineOptions(
        failures=FailureOptions() if failures else None,
        network=NetworkOptions() if network else None,
    )
    use_compiled()
    t0 = time.perf_counter()
    rates = PerformanceModel().prepare(jobs, cluster)
    result = simulate(jobs, cluster, make_policy(policy, **params), rates=rates, options=opts)
    wall = time.perf_counter() - t0
    s = summary(result, carbon_start=DEFAULT_START)
    return {
        "label": label,
        "jobs": len(jobs),
        "wall_s": wall,
        "peak_mb": _peak_mb(),
        "completed": s["jobs_completed"],
        "jct_mean_h": (s["jct_mean_s"] or 0.0) / 3600.0,
        "carbon_t": s["carbon_kg"] / 1000.0,
        "restarts": s.get("restarts"),
        "lost_h": s.get("network_lost_job_hours"),
        "carbon": carbon,
        "models": failures or network,
    }


def _fmt(v: Any, spec: str) -> str:
    return "-" if v is None else format(v, spec)


COLS = [
    ("label", "run                          ", ""),
    ("jobs", "  jobs", ","),
    ("wall_s", " wall s", ".2f"),
    ("ratio", " vs plain", ".2f"),
    ("peak_mb", "peak MB", ",.0f"),
    ("completed", "completed", ","),
    ("jct_mean_h", "JCT mean h", ".2f"),
    ("carbon_t", "t CO2e", ".1f"),
    ("restarts", "restarts", ",.0f"),
    ("lost_h", "comm. lost job-h", ",.0f"),
    ("target", "target   ", ""),
    ("met", "met", ""),
]


def judge(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each row with its ratio to the plain run and whether it meets its target."""
    plain = next((r["wall_s"] for r in rows if not r["models"] and not r["carbon"]), None)
    out = []
    for r in rows:
        r = dict(r)
        if r["carbon"]:
            r["ratio"] = None
            shifting = r["label"].startswith("carbon")
            r["target"] = f"≤ {CARBON_TARGET_S:g} s" if shifting else "-"
            r["met"] = ("yes" if r["wall_s"] <= CARBON_TARGET_S else "NO") if shifting else "-"
        else:
            r["ratio"] = None if plain is None else r["wall_s"] / plain
            both = "failures + network" in r["label"]
            r["target"] = f"≤ {MODEL_RATIO:g}×" if both else "-"
            ok = r["ratio"] is not None and r["ratio"] <= MODEL_RATIO
            r["met"] = ("yes" if ok else "NO") if both else "-"
        out.append(r)
    return out


def table(rows: list[dict[str, Any]]) -> str:
    head = " | ".join(h for _, h, _ in COLS)
    lines = [head, "-" * len(head)]
    for r in rows:
        cells = []
        for k, h, f in COLS:
            v = r.get(k)
            text = v if isinstance(v, str) else _fmt(v, f)
            cells.append(f"{text:>{len(h)}}")
        lines.append(" | ".join(cells))
    return "\n".join(lines)


def bench_models(run: Any) -> None:
    """Print the section; ``run(fn, args)`` runs ``fn(args)`` in a fresh process."""
    print("## The models of issue 14: failures, network contention, carbon shifting\n")
    if not PHILLY.exists():
        print(f"{PHILLY} not found (the shared reference data): skipped\n")
        return
    print(
        f"targets: tiresias + failures + network ≤ {MODEL_RATIO:g}× the plain run; a year-long"
        f" carbon-shifting run ≤ {CARBON_TARGET_S:g} s (Philly stretched to a year, zone {ZONE})"
    )
    print()
    rows = judge([run(models_run, row) for row in ROWS])
    print(table(rows))
    print()
