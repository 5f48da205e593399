"""A planner's afternoon in a real browser: sign in, build a cluster, upload a trace, launch an
experiment, watch it finish, read every chart, drill into a run and compare runs.

Every page must draw all its charts with no JavaScript error in the console and without a
single request leaving the server (plotly.js included). Figures below the fold are drawn
lazily, when scrolled near, so each page is scrolled through to its bottom before its charts
are read. Screenshots of each page are saved under ``artifacts/screenshots/``.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from planner.models import Run
from tests.browser.conftest import Console
from tests.django.conftest import PHILLY_SAMPLE

INVENTORY = Path(__file__).resolve().parents[1] / "fixtures" / "inventory"

pytestmark = [pytest.mark.browser, pytest.mark.slow]


#: Scroll to the bottom a viewport at a time, letting the page's IntersectionObserver see
#: every chart container pass by; then back to the top (for the screenshots).
SCROLL_THROUGH = """async () => {
  const frame = () => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
  for (let y = 0; ; y += window.innerHeight) {
    window.scrollTo(0, y);
    await frame();
    if (window.scrollY + window.innerHeight >= document.documentElement.scrollHeight - 1) break;
  }
}"""


def first_screen_drawn(page: Any, timeout_ms: int = 60_000) -> None:
    """Wait for the page's signal that the charts of the first screen are drawn."""
    page.wait_for_selector("body[data-charts-visible=done]", state="attached", timeout=timeout_ms)


def charts_drawn(page: Any, timeout_ms: int = 60_000) -> dict[str, str]:
    """Wait until the first screen is drawn, scroll through the page so its lazily drawn
    charts render too, and wait until every chart container settled; their states by id."""
    first_screen_drawn(page, timeout_ms)
    # a chart whose data arrive after the scroll went past it waits to be scrolled near
    # again (lazy drawing): scroll through until every chart settled
    deadline = time.monotonic() + timeout_ms / 1000
    while True:
        page.evaluate(SCROLL_THROUGH)
        left_ms = max(1.0, 1000 * (deadline - time.monotonic()))
        try:
            page.wait_for_selector(
                "body[data-charts=done]", state="attached", timeout=min(5000.0, left_ms)
            )
            break
        except PlaywrightTimeout:
            if time.monotonic() >= deadline:
                raise
    page.evaluate("window.scrollTo(0, 0)")
    states = page.eval_on_selector_all(
        "[data-chart]", "els => Object.fromEntries(els.map(e => [e.id, e.dataset.state]))"
    )
    return dict(states)


def all_ready(states: dict[str, str], allowed_empty: tuple[str, ...] = ()) -> None:
    assert states, "the page has no charts"
    bad = {k: v for k, v in states.items() if v != "ready" and k not in allowed_empty}
    assert not bad, f"charts not drawn: {bad}"
    assert all(states[k] in ("ready", "empty") for k in allowed_empty if k in states)


def plots(page: Any) -> int:
    return int(page.eval_on_selector_all(".js-plotly-plot", "els => els.length"))


def shot(page: Any, folder: Path, name: str) -> None:
    page.screenshot(path=str(folder / f"{name}.png"), full_page=True)


def sign_in(page: Any, base: str, user_model: Any, name: str) -> None:
    """Create user ``name`` and sign in through the login form (every page asks first)."""
    user_model.objects.create_user(name, password=f"{name}-password")
    page.goto(f"{base}/")
    assert "/accounts/login/" in page.url
    page.fill("#id_username", name)
    page.fill("#id_password", f"{name}-password")
    page.click("main button[type=submit]")
    page.wait_for_url(f"{base}/")


@pytest.mark.django_db(transaction=True)
def test_a_planner_compares_policies_end_to_end(
    page: tuple[Any, Console],
    live_server: Any,
    celery_worker: Any,
    django_user_model: Any,
    screenshots: Path,
) -> None:
    pg, console = page
    base = live_server.url
    sign_in(pg, base, django_user_model, "planner")
    assert pg.locator("nav.quick .card").count() == 4
    shot(pg, screenshots, "01-home-empty")

    # a cluster from a preset
    pg.click("text=1. Create a cluster")
    pg.fill("#id_name", "Gavel testbed")
    pg.select_option("#id_preset", "gavel-testbed")
    pg.click("main form button[type=submit]")
    pg.wait_for_url(f"{base}/clusters/*/")
    all_ready(charts_drawn(pg))
    assert pg.locator("#chart-carbon .js-plotly-plot").count() == 1
    shot(pg, screenshots, "02-cluster")

    # a trace through the upload form (progress bar, then parsing in the worker)
    pg.goto(f"{base}/workloads/upload/")
    pg.set_input_files("#id_file", str(PHILLY_SAMPLE))
    pg.fill("#id_name", "Philly sample")
    pg.click("#upload-form button[type=submit]")
    pg.wait_for_url(f"{base}/workloads/*/")
    states = charts_drawn(pg)  # the page reloads itself once parsing is done
    all_ready(states, allowed_empty=("chart-users",))  # the sample trace names no users
    assert pg.locator(".state.ready").count() >= 1
    shot(pg, screenshots, "03-workload")

    # an experiment: two policies at two loads
    pg.goto(f"{base}/experiments/new/")
    pg.fill("#id_name", "FIFO vs Tiresias")
    pg.check("input[name=clusters]")
    pg.check("input[name=workloads]")
    pg.check("input[name=policies][value=fifo]")
    pg.check("input[name=policies][value=tiresias]")
    pg.fill("#id_load_factors", "1, 2")
    pg.fill("#id_seeds", "0")
    pg.click("main form button[type=submit]")
    pg.wait_for_url(f"{base}/experiments/*/")
    exp_url = pg.url
    shot(pg, screenshots, "04-experiment-progress")
    started = time.monotonic()
    states = charts_drawn(pg, timeout_ms=120_000)  # polls progress, reloads when done
    all_ready(states)
    # 27 Plotly figures and two tables (the metrics; as run today vs the other policy); the
    # Philly sample names virtual clusters (JCT, fair share and ρ by VC) but no users
    assert len(states) == 29 and plots(pg) == 27
    for name in ("groups", "fairshare", "rho"):
        assert f"chart-{name}-vc" in states and f"chart-{name}-user" not in states
    assert "chart-typealloc" in states
    runs = list(Run.objects.values_list("pk", "policy", "load_factor", "state", "error"))
    assert all(r[3] == "succeeded" for r in runs), runs  # with the reasons if not
    assert pg.locator("#chart-table tbody tr, #chart-table tr").count() >= 5
    shot(pg, screenshots, "05-experiment")
    simulated_s = time.monotonic() - started

    # another configuration for the CDF and timelines; the URL keeps the choice
    select = pg.locator("select[data-chart-param=config]")
    options = select.locator("option").all_inner_texts()
    assert any("×2" in o for o in options)
    select.select_option(label=next(o for o in options if "×2" in o))
    pg.wait_for_function(
        "() => document.querySelector('#chart-cdf .gtitle')?.textContent.includes('×2')"
    )
    assert "config=" in pg.url

    # the page again, warm: the first screen quickly on loopback; the figures far below the
    # fold wait until the page is scrolled to them, but their exports work already (a PNG
    # draws its chart first)
    t0 = time.monotonic()
    pg.goto(exp_url)
    first_screen_drawn(pg)
    first_s = time.monotonic() - t0
    bottom = pg.locator("#chart-bars-ftf_rho_max")
    assert pg.locator("body[data-charts=done]").count() == 0
    assert bottom.get_attribute("data-state") == "loading"
    assert "format=csv" in (bottom.locator("a[data-export=csv]").get_attribute("href") or "")
    with pg.expect_download() as download:
        bottom.locator("a.png").click()
    assert download.value.suggested_filename.endswith(".png")
    assert bottom.get_attribute("data-state") == "ready"
    all_ready(charts_drawn(pg))
    assert plots(pg) == 27
    assert pg.evaluate("window.clustersimCharts.all.then(() => true)")
    warm_s = time.monotonic() - t0
    assert warm_s < 10, f"experiment page took {warm_s:.1f} s to draw its charts"

    # a run: Gantt, placement by node, fairness, timelines, slowest jobs; then a narrower
    # window for both time-window views
    pg.locator("details.runs summary").click()
    pg.locator("details.runs a[href^='/runs/']").first.click()
    pg.wait_for_url(f"{base}/runs/*/")
    all_ready(charts_drawn(pg))
    assert pg.locator("#chart-gantt .js-plotly-plot, #chart-placement .js-plotly-plot").count() == 2
    pg.fill("input[name=from_h]", "0")
    pg.fill("input[name=to_h]", "6")
    pg.click("form[data-chart-target] button[type=submit]")
    for chart in ("chart-gantt", "chart-placement"):
        pg.wait_for_function(
            f"() => document.querySelector('#{chart}').dataset.state === 'ready'"
            f" && document.querySelector('#{chart}').dataset.chart.includes('to_h=6')"
        )
    assert "0–6 h" in (pg.locator("#chart-placement .gtitle").text_content() or "")
    assert "to_h=6" in pg.url
    shot(pg, screenshots, "06-run")

    # compare runs side by side; the address is the share link
    pg.click("text=Compare with other runs of the experiment")
    pg.wait_for_url(f"{base}/compare/?runs=*")
    all_ready(charts_drawn(pg))
    assert pg.locator("table.compare th a[href^='/runs/']").count() == 4
    shot(pg, screenshots, "07-compare")

    # exports: CSV of a chart's data downloads
    with pg.expect_download() as download:
        pg.locator("#chart-cdf a[data-export=csv]").click()
    assert download.value.suggested_filename.endswith(".csv")

    pg.goto(f"{base}/")
    assert pg.locator("text=FIFO vs Tiresias").count() == 1
    shot(pg, screenshots, "08-home")

    assert console.errors == [], console.errors
    assert console.foreign == [], f"requests left the server: {console.foreign}"
    print(
        f"experiment simulated and drawn in {simulated_s:.1f} s; warm page: first screen "
        f"{first_s:.2f} s, every chart (scrolled) {warm_s:.2f} s"
    )


@pytest.mark.django_db(transaction=True)
def test_a_planner_generates_derives_and_imports(
    page: tuple[Any, Console],
    live_server: Any,
    celery_worker: Any,
    django_user_model: Any,
    screenshots: Path,
) -> None:
    pg, console = page
    base = live_server.url
    sign_in(pg, base, django_user_model, "maker")

    # a synthetic workload: the page waits for the worker, then draws its charts
    pg.click("text=generate a synthetic workload")
    pg.fill("#id_name", "Poisson 200")
    pg.fill("#id_jobs", "200")
    pg.select_option("#id_arrival", "poisson")
    pg.fill("#id_rate_per_hour", "20")
    pg.click("#synthetic-form button[type=submit]")
    pg.wait_for_url(f"{base}/workloads/*/")
    all_ready(charts_drawn(pg), allowed_empty=("chart-users", "chart-vcs", "chart-warnings"))
    assert pg.locator("text=Synthetic workload").count() == 1
    shot(pg, screenshots, "10-synthetic-workload")

    # derived from it: half the jobs at twice the load
    synthetic_url = pg.url
    pg.click("#derive > summary")
    pg.fill("#id_sample_fraction", "0.5")
    pg.fill("#id_load_factor", "2")
    pg.click("#derive-form button[type=submit]")
    pg.wait_for_function(f"location.href !== {synthetic_url!r}")
    all_ready(charts_drawn(pg), allowed_empty=("chart-users", "chart-vcs", "chart-warnings"))
    assert pg.locator("a:text('Poisson 200')").count() == 1  # the parent, linked
    shot(pg, screenshots, "11-derived-workload")

    # a cluster from a Kubernetes node list, with an unmapped model reported
    pg.goto(f"{base}/clusters/new/")
    pg.click("text=Import a cluster from a node list")
    pg.set_input_files("#id_file", str(INVENTORY / "kubectl_nodes.json"))
    pg.click("#import-form button[type=submit]")
    pg.wait_for_url(f"{base}/clusters/*/")
    all_ready(charts_drawn(pg))
    assert pg.locator("#unmapped td code", has_text="NVIDIA-L40S").count() == 1
    shot(pg, screenshots, "12-imported-cluster")

    assert console.errors == [], console.errors
    assert console.foreign == [], f"requests left the server: {console.foreign}"


@pytest.mark.django_db(transaction=True)
def test_a_planner_asks_what_to_buy(
    page: tuple[Any, Console],
    live_server: Any,
    celery_worker: Any,
    django_user_model: Any,
    screenshots: Path,
) -> None:
    """A capacity study from the form to the answer (the worker evaluates the candidates),
    its front chart, and the one click that makes the recommendation a cluster."""
    from django.contrib.auth import get_user_model

    from planner import parsing, services

    pg, console = page
    base = live_server.url
    sign_in(pg, base, django_user_model, "buyer")
    owner = get_user_model().objects.get(username="buyer")
    w = services.create_workload(
        owner,
        name="philly sample",
        filename=PHILLY_SAMPLE.name,
        raw=PHILLY_SAMPLE.read_bytes(),
        enqueue=False,
    )
    parsing.parse_workload(w.pk)

    pg.click("text=Plan capacity")
    pg.fill("#id_name", "what to buy")
    pg.select_option("#id_workload", str(w.pk))
    # the sample's long jobs: p95 JCT of 1.1-1.6 million s on a few nodes of 8
    pg.fill("#id_types", "v100:0-6:3,k80:0-6:3")
    pg.fill("#id_constraints", "jct_p95_s<=1500000")
    pg.fill("#id_budget", "9")
    pg.click("main form button[type=submit]")
    pg.wait_for_url(f"{base}/studies/*/")
    from planner.models import Study

    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        study = Study.objects.get(name="what to buy")
        if study.state not in ("queued", "running"):
            break
        time.sleep(0.5)
    assert study.state == "succeeded", (study.state, study.phase, study.error)
    # the page reloads itself when the study is done
    pg.wait_for_selector("text=Recommended", timeout=30_000)
    all_ready(charts_drawn(pg))
    assert pg.locator("h2", has_text="Pareto front").count() == 1
    assert pg.locator("h3", has_text="Sensitivity").count() == 1
    shot(pg, screenshots, "20-capacity-study")

    pg.click("text=Make it a cluster and compare it with the base")
    pg.wait_for_url(f"{base}/experiments/*/")
    assert pg.locator("h1", has_text="what to buy: recommended").count() == 1
    assert console.errors == [], console.errors
    assert console.foreign == [], f"requests left the server: {console.foreign}"
