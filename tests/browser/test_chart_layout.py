"""Chart layout with many runs: the experiment and compare pages at 16 and at 40 runs.

Each page is drawn in chromium and every Plotly figure is measured from the boxes of the text
it rendered (titles, axis titles, tick labels, legend entries, annotations; rotated labels as
rotated rectangles): no two may overlap, none may stick out of its chart (a clipped right
axis), each plot area keeps a minimum height, and a legend never takes more than a fixed
share of its chart.

Runs are simulated in-process (no Celery) and stored through the runner's own claim/store
path, so the pages read real result artefacts.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from tests.browser.conftest import Console
from tests.browser.test_dashboard_browser import charts_drawn, shot, sign_in

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
#: Smallest plot area (inside the axes) of any chart, px.
MIN_PLOT_HEIGHT = 150
#: Largest share of a chart's height its legend may take.
MAX_LEGEND_SHARE = 0.35
#: Two text boxes may touch by this much (px) without counting as overlapping.
TOLERANCE = 1.5

SMALL = {
    "name": "small",
    "pools": [
        {"name": "v100", "accelerator": "V100", "nodes": 2, "devices_per_node": 4},
        {"name": "k80", "accelerator": "K80", "nodes": 2, "devices_per_node": 4},
    ],
}
#: Another cluster, in a region with hourly carbon data (so timelines get a right axis).
ZONED = {
    "name": "heterogeneous California",
    "pools": [
        {"name": "a100", "accelerator": "A100", "nodes": 1, "devices_per_node": 8},
        {"name": "k80", "accelerator": "K80", "nodes": 2, "devices_per_node": 4},
    ],
    "regions": [{"name": "california", "carbon_zone": "US-CAL-CISO"}],
}

#: Measured Gavel job types (so the allocation-by-type chart stacks named types).
JOB_TYPES = (
    "ResNet-18 (batch size 64)",
    "ResNet-50 (batch size 64)",
    "Transformer (batch size 128)",
    "LM (batch size 20)",
    "A3C",
    "CycleGAN",
    "Recommendation (batch size 2048)",
)


def users_trace(n: int = 120, users: int = 14) -> bytes:
    """A CSV trace of ``n`` jobs of ``users`` users (Philly-like hashed names) in three
    virtual clusters, with Gavel job types: the fairness charts list 10 users and "4 others"."""
    lines = ["submit_time,num_gpus,work,job_type,user,vc"]
    for i in range(n):
        gpus = (1, 1, 2, 4, 1, 8)[i % 6]
        work = 600 + (i * 37 % 20) * 300
        user = f"user-{(i * 5) % users:02d}-7f04ca3e"
        lines.append(f"{i * 45},{gpus},{work},{JOB_TYPES[i % len(JOB_TYPES)]},{user},vc-{i % 3}")
    return ("\n".join(lines) + "\n").encode()


#: A function of ``[minPlot, maxLegend, tol]``: per figure, what is wrong with its layout.
MEASURE = (Path(__file__).parent / "measure_layout.js").read_text()


def finished_experiment(
    owner: Any,
    name: str,
    specs: list[dict[str, Any]],
    policies: list[str],
    loads: list[float],
    seeds: list[int],
) -> Any:
    """An experiment of ``len(specs) × len(policies) × len(loads) × len(seeds)`` runs on
    :func:`users_trace` (120 jobs of 14 users, so the per-user fairness charts are drawn too)
    with the random placement, each simulated and stored as a worker would."""
    from planner import parsing, runner, services
    from planner.models import Workload

    workload = Workload.objects.filter(owner=owner, name="users").first()
    if workload is None:
        workload = services.create_workload(
            owner, name="users", filename="users.csv", raw=users_trace(), enqueue=False
        )
        parsing.parse_workload(workload.pk)
        workload.refresh_from_db()
    clusters = [services.create_cluster(owner, s["name"], s) for s in specs]
    exp = services.create_experiment(
        owner,
        name=name,
        clusters=clusters,
        workloads=[workload],
        policies=[{"name": p, "params": {}} for p in policies],
        load_factors=loads,
        seeds=seeds,
        placement="random",  # so that the seeds matter: one run per seed
        enqueue=False,
    )
    for run in exp.runs.select_related("cluster", "workload", "experiment", "owner"):
        attempt = runner.claim(run.pk, "test")
        with runner.Heartbeat(run.pk, attempt, threaded=False) as beat:
            outcome = runner.simulate_run(run, beat)
        assert runner.store(run, attempt, outcome)
    runner.refresh_experiment(exp.pk)
    exp.refresh_from_db()
    return exp


def layout_problems(page: Any) -> dict[str, list[str]]:
    measured = page.evaluate(MEASURE, [MIN_PLOT_HEIGHT, MAX_LEGEND_SHARE, TOLERANCE])
    assert measured, "no Plotly figure on the page"
    assert all(m["texts"] > 3 for m in measured), measured  # the measure found the labels
    return {
        m["id"]: m["problems"] + ([f"... and {m['more']} more"] if m["more"] else [])
        for m in measured
        if m["problems"]
    }


def check_pages(pg: Any, base: str, exp: Any, screenshots: Path, tag: str) -> float:
    """Draw the experiment page and the comparison of all its runs; assert their layout.
    Seconds spent drawing and measuring."""
    started = time.monotonic()
    pg.goto(f"{base}/experiments/{exp.pk}/")
    states = charts_drawn(pg)
    assert states and all(s in ("ready", "empty") for s in states.values()), states
    new_views = ("fairshare-user", "rho-user", "fairshare-vc", "rho-vc", "typealloc")
    assert all(states.get(f"chart-{v}") == "ready" for v in new_views), states
    bad = {f"experiment: {k}": v for k, v in layout_problems(pg).items()}
    shot(pg, screenshots, f"layout-{tag}-experiment")

    ids = ",".join(str(pk) for pk in exp.runs.order_by("pk").values_list("pk", flat=True))
    pg.goto(f"{base}/compare/?runs={ids}")
    states = charts_drawn(pg)
    assert states and all(s == "ready" for s in states.values()), states
    assert all(f"chart-{v}" in states for v in new_views), states
    bad.update({f"compare: {k}": v for k, v in layout_problems(pg).items()})
    shot(pg, screenshots, f"layout-{tag}-compare")
    n = exp.runs.count()
    assert not bad, f"{n} runs:\n" + "\n".join(f"{k}: {v}" for k, v in bad.items())
    return time.monotonic() - started


@pytest.mark.django_db(transaction=True)
def test_sixteen_runs_draw_without_overlapping_text(
    page: tuple[Any, Console], live_server: Any, django_user_model: Any, screenshots: Path
) -> None:
    pg, console = page
    sign_in(pg, live_server.url, django_user_model, "sixteen")
    owner = django_user_model.objects.get(username="sixteen")
    exp = finished_experiment(
        owner, "sixteen runs", [SMALL], ["fifo", "las", "srtf", "tiresias"], [1.0, 2.0], [0, 1]
    )
    assert exp.runs.filter(state="succeeded").count() == 16
    drawn_s = check_pages(pg, live_server.url, exp, screenshots, "16")
    assert console.errors == [], console.errors
    print(f"16 runs: both pages drawn and measured in {drawn_s:.1f} s")


@pytest.mark.django_db(transaction=True)
def test_forty_runs_draw_without_overlapping_text(
    page: tuple[Any, Console], live_server: Any, django_user_model: Any, screenshots: Path
) -> None:
    pg, console = page
    sign_in(pg, live_server.url, django_user_model, "forty")
    owner = django_user_model.objects.get(username="forty")
    exp = finished_experiment(
        owner,
        "forty runs",
        [SMALL, ZONED],
        ["fifo", "las", "srtf", "tiresias", "sjf"],
        [1.0, 2.0],
        [0, 1],
    )
    assert exp.runs.filter(state="succeeded").count() == 40
    drawn_s = check_pages(pg, live_server.url, exp, screenshots, "40")
    assert console.errors == [], console.errors
    print(f"40 runs: both pages drawn and measured in {drawn_s:.1f} s")


#: Policies of many families for the many-policies check (those registered are used).
MANY_POLICIES = (
    "fifo",
    "las",
    "tiresias",
    "gavel-fifo",
    "gavel-las",
    "gavel-mmf",
    "gavel-ftf",
    "gavel-max-throughput",
    "gavel-makespan",
    "gavel-fifo-het",
    "gavel-hierarchical",
    "allox",
    "gandiva-fair",
    "themis",
    "gandiva",
)


@pytest.mark.django_db(transaction=True)
def test_a_dozen_policies_draw_without_overlapping_text(
    page: tuple[Any, Console], live_server: Any, django_user_model: Any, screenshots: Path
) -> None:
    """One run per policy of a dozen or more (more policies than a legend names), one config:
    every chart of both pages, the fairness and allocation views included, still fits."""
    from scheduling.registry import POLICIES

    policies = [p for p in MANY_POLICIES if p in POLICIES]
    assert len(policies) >= 12, policies
    pg, console = page
    sign_in(pg, live_server.url, django_user_model, "many")
    owner = django_user_model.objects.get(username="many")
    exp = finished_experiment(owner, "many policies", [SMALL], policies, [1.0], [0])
    assert exp.runs.filter(state="succeeded").count() == len(policies)
    drawn_s = check_pages(pg, live_server.url, exp, screenshots, "policies")
    assert console.errors == [], console.errors
    print(f"{len(policies)} policies: both pages drawn and measured in {drawn_s:.1f} s")
