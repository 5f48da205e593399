"""The chart pages: they render containers that point at the chart endpoints, for owners only."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.test import Client

from dashboard import charts
from tests.django.formdata import external_assets

pytestmark = pytest.mark.django_db


def chart_urls(html: str) -> list[str]:
    return re.findall(r'data-chart="([^"]+)"', html)


def test_the_experiment_page_lays_out_every_chart_once_runs_are_done(
    web: Client, experiment: Any
) -> None:
    html = web.get(f"/experiments/{experiment.pk}/").content.decode()
    urls = chart_urls(html)
    expected = {
        f"/charts/experiments/{experiment.pk}/{n}/"
        for n in charts.experiment_chart_names()
        # the Gavel trace names no users nor VCs: no breakdown or fairness view by them
        if not n.startswith(("groups-", "fairshare-", "rho-"))
    }
    assert set(urls) == expected
    assert "/vendor/plotly-" in html and external_assets(html) == []
    assert 'data-chart-param="config"' in html  # two load factors: a configuration chooser
    assert "/compare/?runs=" in html
    assert "data-reload-when-done" not in html


def test_a_running_experiment_shows_progress_and_reloads_when_done(
    web: Client, owner: Any, make_experiment: Any
) -> None:
    exp = make_experiment(owner, name="queued")
    html = web.get(f"/experiments/{exp.pk}/").content.decode()
    assert chart_urls(html) == []
    assert "data-reload-when-done" in html and "Charts appear here when they finish" in html
    assert "/vendor/plotly-" not in html  # no chart, no 4.8 MB script


def test_an_experiment_whose_runs_all_failed_says_what_to_do(
    web: Client, owner: Any, make_experiment: Any
) -> None:
    from planner.models import Run

    exp = make_experiment(owner, name="broken")
    Run.objects.filter(experiment=exp).update(state="failed", error="KeyError: boom")
    html = web.get(f"/experiments/{exp.pk}/").content.decode()
    assert "No run succeeded" in html and "launch a new experiment" in html


def test_the_run_page_has_a_summary_a_gantt_window_and_the_run_charts(
    web: Client, experiment: Any
) -> None:
    run = experiment.runs.first()
    r = web.get(f"/runs/{run.pk}/")
    html = r.content.decode()
    assert r.status_code == 200
    assert set(chart_urls(html)) == {
        f"/charts/runs/{run.pk}/{n}/"
        for n in charts.RUN_CHARTS
        if not n.startswith("groups-") and n not in charts.MODEL_RUN_CHARTS
    }
    assert 'name="from_h"' in html and 'name="to_h"' in html
    assert "Mean JCT" in html and "Carbon" in html
    assert f"/compare/?runs={run.pk}," in html


def test_the_run_page_counts_the_jobs_no_device_can_hold(web: Client, experiment: Any) -> None:
    from planner.models import Run

    run = experiment.runs.first()
    Run.objects.filter(pk=run.pk).update(summary={**run.summary, "jobs_fit_nowhere": 7})
    html = web.get(f"/runs/{run.pk}/").content.decode()
    row = re.search(
        r"Jobs no device can hold \(dropped\).*?<td class=\"num\">([^<]*)</td>", html, re.S
    )
    assert row is not None and row.group(1) == "7"


def test_the_run_summary_names_both_waits_and_both_costs(web: Client, experiment: Any) -> None:
    html = web.get(f"/runs/{experiment.runs.first().pk}/").content.decode()
    for label in (
        "Mean total wait",
        "Mean first-start delay",
        "p99 first-start delay",
        "Owned cost over the horizon",
        "Cloud cost (on-demand, device-hours held)",
        "Cost horizon",
        "Owned cost: amortised capital over the horizon",
    ):
        assert label in html, label
    assert "queueing delay</" not in html.lower()  # no row is called just "queueing delay"


def test_the_compare_page_is_a_shareable_url_of_run_ids(web: Client, experiment: Any) -> None:
    ids = list(experiment.runs.values_list("pk", flat=True))
    # the picker's checkboxes send runs=1&runs=2: redirect to the short link
    r = web.get("/compare/", {"runs": [str(i) for i in ids[:3]]})
    assert r.status_code == 302 and r["Location"] == f"/compare/?runs={ids[0]},{ids[1]},{ids[2]}"
    html = web.get(r["Location"]).content.decode()
    by_group = ("fairshare-", "rho-")  # the Gavel trace names no users nor VCs
    shown = [n for n in charts.compare_chart_names() if not n.startswith(by_group)]
    assert len(chart_urls(html)) == len(shown)
    assert all(u.endswith(f"?runs={ids[0]},{ids[1]},{ids[2]}") for u in chart_urls(html))
    assert "format=csv" in html  # export links keep the query
    assert web.get("/compare/").status_code == 200  # no runs yet: the picker


def test_cluster_and_workload_pages_lay_out_their_charts(web: Client, experiment: Any) -> None:
    run = experiment.runs.first()
    html = web.get(f"/clusters/{run.cluster_id}/").content.decode()
    assert len(chart_urls(html)) == len(charts.CLUSTER_CHARTS)
    html = web.get(f"/workloads/{run.workload_id}/").content.decode()
    assert len(chart_urls(html)) == len(charts.WORKLOAD_CHARTS)


def test_the_cluster_page_says_when_a_constant_carbon_intensity_is_used(
    web: Client, owner: Any, make_cluster: Any
) -> None:
    from tests.django.conftest import SMALL_SPEC

    plain = make_cluster(owner, name="plain")
    html = web.get(f"/clusters/{plain.pk}/").content.decode()
    assert "Region <strong>default</strong> has no carbon zone" in html
    assert "a constant default of 400 g CO₂e/kWh is used" in html
    custom = {**SMALL_SPEC, "regions": [{"name": "lab", "carbon_g_per_kwh": 250}]}
    html = web.get(f"/clusters/{make_cluster(owner, name='lab', spec=custom).pk}/").content.decode()
    assert "a constant default of 250 g CO₂e/kWh is used" in html
    zoned = {**SMALL_SPEC, "regions": [{"name": "ca", "carbon_zone": "US-CAL-CISO"}]}
    html = web.get(f"/clusters/{make_cluster(owner, name='ca', spec=zoned).pk}/").content.decode()
    assert 'id="carbon-constant"' not in html


def test_the_home_page_offers_the_quick_links(web: Client, experiment: Any) -> None:
    html = web.get("/").content.decode()
    for link in ("/clusters/new/", "/workloads/upload/", "/experiments/new/", "/compare/"):
        assert f'href="{link}"' in html
    assert experiment.name in html


@pytest.mark.parametrize("page", ["runs", "experiments", "clusters", "workloads"])
def test_chart_pages_of_others_are_not_found(
    web: Client, other_web: Client, client: Client, experiment: Any, page: str
) -> None:
    run = experiment.runs.first()
    pk = {
        "runs": run.pk,
        "experiments": experiment.pk,
        "clusters": run.cluster_id,
        "workloads": run.workload_id,
    }[page]
    url = f"/{page}/{pk}/"
    assert web.get(url).status_code == 200
    assert other_web.get(url).status_code == 404
    assert client.get(url).status_code == 302  # anonymous: sign in first
    assert other_web.get(f"/compare/?runs={run.pk}").status_code == 404
