"""Dashboard endpoints on full-Philly runs: server time and size of the experiment page's JSON.

Targets (issue "Dashboards"): for a finished experiment whose runs hold the full Philly trace
(82k jobs each), each JSON endpoint of the experiment page answers in ≤ 300 ms server time
and ≤ 1 MB.

:func:`dashboard_bench` configures Django with the test settings (in-memory SQLite, in this
process), parses the full trace, simulates a small grid for real (the dashboards read what
the runs stored), then requests every chart of the experiment page twice: *cold* (response
cache and decoded-artefact caches emptied, so the stored Parquet/JSON are read and the
figure is built) and *warm* (the cached response). ``python -m bench dashboard`` prints it.
"""

from __future__ import annotations

import os
import time
from typing import Any

from bench.__main__ import PHILLY

TARGET_MS = 300.0
TARGET_BYTES = 1_000_000


def _setup() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.test")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def _experiment(
    policies: tuple[str, ...], load_factors: tuple[float, ...], seeds: tuple[int, ...]
) -> Any:
    from django.contrib.auth import get_user_model

    from clustersim.presets import preset_spec
    from planner import parsing, runner, services
    from planner.models import Cluster

    user = get_user_model().objects.create_user("bench", password="bench-password")
    w = services.create_workload(
        user, name="philly", filename=PHILLY.name, raw=PHILLY.read_bytes(), enqueue=False
    )
    assert parsing.parse_workload(w.pk) == "ready"
    w.refresh_from_db()
    spec = preset_spec("philly")
    total, types = services.cluster_summary(spec, user)
    cluster = Cluster.objects.create(
        owner=user, name="philly", spec=spec, total_devices=total, device_types=types
    )
    exp = services.create_experiment(
        user,
        name="bench",
        clusters=[cluster],
        workloads=[w],
        policies=[{"name": p, "params": {}} for p in policies],
        load_factors=load_factors,
        seeds=seeds,
        enqueue=False,
    )
    for pk in exp.runs.values_list("pk", flat=True):
        assert runner.execute_run(pk, worker="bench") == "succeeded"
    exp.refresh_from_db()
    return user, exp


def _clear_caches() -> None:
    from django.core.cache import cache

    from dashboard import charts, results

    cache.clear()
    results._columns.cache_clear()
    results._series.cache_clear()
    charts._reference_duration.cache_clear()


def dashboard_bench(
    policies: tuple[str, ...] = ("fifo", "tiresias"),
    load_factors: tuple[float, ...] = (1.0,),
    seeds: tuple[int, ...] = (0,),
) -> list[dict[str, Any]]:
    """One row per experiment-page endpoint: cold/warm server ms, bytes, targets met."""
    _setup()
    from django.test import Client

    from dashboard.charts import experiment_chart_names

    t0 = time.perf_counter()
    user, exp = _experiment(policies, load_factors, seeds)
    setup_s = time.perf_counter() - t0
    jobs = exp.runs.first().summary["jobs_total"]
    client = Client(HTTP_HOST="127.0.0.1")  # an allowed host outside the test runner
    client.force_login(user)
    # one request first: a long-running server has imported its modules and warmed its
    # connection before it answers anyone; the per-endpoint times below exclude that
    assert client.get(f"/charts/experiments/{exp.pk}/load/").status_code == 200
    rows = []
    for name in experiment_chart_names():
        url = f"/charts/experiments/{exp.pk}/{name}/"
        _clear_caches()
        t = time.perf_counter()
        r = client.get(url)
        cold = (time.perf_counter() - t) * 1000
        assert r.status_code == 200 and r["X-Chart-Cache"] == "miss", (url, r.status_code)
        t = time.perf_counter()
        warm_r = client.get(url)
        warm = (time.perf_counter() - t) * 1000
        assert warm_r["X-Chart-Cache"] == "hit"
        size = len(r.content)
        rows.append(
            {
                "endpoint": name,
                "cold_ms": cold,
                "warm_ms": warm,
                "bytes": size,
                "ok": "yes" if cold <= TARGET_MS and size <= TARGET_BYTES else "NO",
                "runs": exp.runs.count(),
                "jobs": jobs,
                "setup_s": setup_s,
            }
        )
    return rows


def table(rows: list[dict[str, Any]]) -> str:
    head = f"{'endpoint':<28} {'cold ms':>8} {'warm ms':>8} {'KB':>8}  ≤300 ms & ≤1 MB"
    lines = [head, "-" * len(head)]
    for r in rows:
        lines.append(
            f"{r['endpoint']:<28} {r['cold_ms']:>8.1f} {r['warm_ms']:>8.1f} "
            f"{r['bytes'] / 1000:>8.1f}  {r['ok']}"
        )
    if rows:
        worst = max(r["cold_ms"] for r in rows)
        biggest = max(r["bytes"] for r in rows)
        lines.append(
            f"{rows[0]['runs']} runs × {rows[0]['jobs']:,} jobs (setup: parse + simulate "
            f"{rows[0]['setup_s']:.0f} s); slowest cold {worst:.0f} ms, largest "
            f"{biggest / 1000:.0f} KB"
        )
    return "\n".join(lines)


def report(_: object = None) -> str:
    """The table, for ``python -m bench dashboard`` (run in a fresh process)."""
    return table(dashboard_bench())


if __name__ == "__main__":
    print(report())
