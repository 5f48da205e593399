"""The JSON chart endpoints on their own: content, units, colours, downsampling, ownership.

One finished experiment (two policies × two load factors × two seeds on the Gavel demo
trace) serves most tests; downsampling is checked on a run whose stored results are made
larger than any display limit.
"""

from __future__ import annotations

import io
import json
import re
from typing import Any

import numpy as np
import pandas as pd
import pytest
from django.test import Client

from dashboard import charts
from dashboard.gantt import MAX_GANTT_ROWS
from dashboard.plotting import MAX_CDF_POINTS, MAX_TIMELINE_POINTS, cdf_points, pareto_mask
from planner.models import Artefact, Run
from tests.django.conftest import SMALL_SPEC
from tests.django.formdata import external_assets

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_cache")]

UNIT = re.compile(r"\[[^\]]+\]$")


def experiment_urls(exp: Any) -> list[str]:
    return [f"/charts/experiments/{exp.pk}/{n}/" for n in charts.experiment_chart_names()]


def run_urls(run: Any) -> list[str]:
    return [f"/charts/runs/{run.pk}/{n}/" for n in charts.RUN_CHARTS]


def workload_urls(w: Any) -> list[str]:
    return [f"/charts/workloads/{w.pk}/{n}/" for n in charts.WORKLOAD_CHARTS]


def cluster_urls(c: Any) -> list[str]:
    return [f"/charts/clusters/{c.pk}/{n}/" for n in charts.CLUSTER_CHARTS]


def compare_urls(runs: list[Any]) -> list[str]:
    ids = ",".join(str(r.pk) for r in runs)
    return [f"/charts/compare/{n}/?runs={ids}" for n in charts.compare_chart_names()]


def all_urls(exp: Any) -> list[str]:
    runs = list(exp.runs.all())
    return [
        *experiment_urls(exp),
        *run_urls(runs[0]),
        *workload_urls(runs[0].workload),
        *cluster_urls(runs[0].cluster),
        *compare_urls(runs[:3]),
    ]


def get_json(client: Client, url: str) -> dict[str, Any]:
    r = client.get(url)
    assert r.status_code == 200, (url, r.status_code, r.content[:300])
    assert r["Content-Type"] == "application/json"
    return dict(json.loads(r.content))


def axes(layout: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {k: v for k, v in layout.items() if re.fullmatch(r"[xy]axis\d*", k)}


def assert_units(url: str, payload: dict[str, Any]) -> None:
    """Every numeric axis says its unit; categorical and date axes say what they list."""
    for name, ax in axes(payload["figure"]["layout"]).items():
        title = ax["title"]["text"]
        assert title, (url, name)
        if ax.get("type") not in ("category", "date"):
            assert UNIT.search(title), f"{url}: {name} title {title!r} has no [unit]"


# -- content -------------------------------------------------------------------------------


def test_every_chart_answers_a_figure_or_a_table_with_units(web: Client, experiment: Any) -> None:
    for url in all_urls(experiment):
        payload = get_json(web, url)
        assert payload["title"]
        if "empty" in payload:
            continue
        assert ("figure" in payload) != ("table" in payload), url
        if "figure" in payload:
            fig = payload["figure"]
            assert fig["data"], url
            assert_units(url, payload)
        else:
            columns = payload["table"]["columns"]
            assert payload["table"]["rows"], url
            assert all(c["label"] for c in columns)


def test_the_experiment_page_charts_are_all_drawn_for_a_finished_grid(
    web: Client, experiment: Any
) -> None:
    from dashboard.pages import trace_groups

    assert trace_groups(experiment.workloads.get().summary) == []  # no users, no VCs
    per_group = ("/groups-", "/fairshare-", "/rho-")  # by user or VC: the trace names none
    urls = [u for u in experiment_urls(experiment) if not any(g in u for g in per_group)]
    empty = {u: get_json(web, u).get("empty") for u in urls}
    assert not any(empty.values()), {u: e for u, e in empty.items() if e}


def test_the_metric_table_has_mean_and_spread_for_every_cell(web: Client, experiment: Any) -> None:
    table = get_json(web, f"/charts/experiments/{experiment.pk}/table/")["table"]
    rows = table["rows"]
    assert len(rows) == 2 * 2  # policies × load factors; seeds are pooled into mean ± sd
    assert {r["policy"] for r in rows} == {"fifo", "las"}
    assert all(r["seeds"] == 2 for r in rows)
    keys = {c["key"] for c in table["columns"]}
    assert {"jct_mean_s", "jct_p99_s", "carbon_kg", "jain_index"} <= keys
    assert {"wait_mean_s", "queue_delay_mean_s", "cost_owned_usd", "cost_cloud_usd"} <= keys
    mean, sd = rows[0]["jct_mean_s"]
    assert mean > 0 and sd is not None and sd >= 0
    units = {c["key"]: c.get("unit") for c in table["columns"]}
    assert units["utilisation"] == "%" and units["carbon_kg"] == "kg CO₂e"


def test_the_table_says_which_wait_and_which_cost_each_column_is(
    web: Client, experiment: Any
) -> None:
    columns = get_json(web, f"/charts/experiments/{experiment.pk}/table/")["table"]["columns"]
    label = {c["key"]: c.get("help", c["label"]) for c in columns}
    short = {c["key"]: c["label"] for c in columns}
    # headers stay short; the full definition is the header's tooltip
    assert short["wait_mean_s"] == "Mean total wait" and short["cost_cloud_usd"].startswith("Cloud")
    assert all(len(h) <= 24 for h in short.values()), short
    assert "first-start" in label["queue_delay_mean_s"]
    assert "total wait" in label["wait_mean_s"].lower()
    assert "owned" in label["cost_owned_usd"].lower() and "horizon" in label["cost_owned_usd"]
    assert "cloud" in label["cost_cloud_usd"].lower()
    assert "cost_usd" not in label  # the alias is not charted twice


def test_the_cost_pareto_charts_name_their_cost(web: Client, experiment: Any) -> None:
    owned = get_json(web, f"/charts/experiments/{experiment.pk}/pareto-cost/")["figure"]
    cloud = get_json(web, f"/charts/experiments/{experiment.pk}/pareto-cloud/")["figure"]
    assert "owned cost" in owned["layout"]["xaxis"]["title"]["text"].lower()
    assert "cloud cost" in cloud["layout"]["xaxis"]["title"]["text"].lower()


def test_bars_carry_error_bars_over_seeds(web: Client, experiment: Any) -> None:
    fig = get_json(web, f"/charts/experiments/{experiment.pk}/bars-jct_mean_s/")["figure"]
    assert [t["name"] for t in fig["data"]] == ["fifo", "las"]
    for trace in fig["data"]:
        assert len(trace["x"]) == 2  # one bar per load factor
        assert trace["error_y"]["visible"] and len(trace["error_y"]["array"]) == 2
    assert fig["layout"]["yaxis"]["title"]["text"].startswith("Mean JCT [")


def test_each_policy_keeps_its_colour_across_the_experiment_charts(
    web: Client, experiment: Any
) -> None:
    seen: dict[str, set[str]] = {}
    for url in experiment_urls(experiment):
        payload = get_json(web, url)
        for trace in payload.get("figure", {}).get("data", []):
            colour = trace.get("marker", {}).get("color") or trace.get("line", {}).get("color")
            name = str(trace.get("name", "")).split(" (")[0]
            if name in ("fifo", "las") and isinstance(colour, str):
                seen.setdefault(name, set()).add(colour)
        for row in payload.get("table", {}).get("rows", []):
            seen.setdefault(row["policy"], set()).add(row["colour"])
    assert seen["fifo"] and seen["las"]
    assert len(seen["fifo"]) == 1 and len(seen["las"]) == 1
    assert seen["fifo"] != seen["las"]


def test_pareto_marks_the_non_dominated_configurations(web: Client, experiment: Any) -> None:
    for axis_name in ("cost", "carbon"):
        url = f"/charts/experiments/{experiment.pk}/pareto-{axis_name}/"
        fig = get_json(web, url)["figure"]
        front = [t for t in fig["data"] if t.get("legendgroup") == "front"]
        assert front and all(t["marker"]["symbol"] == "circle-open" for t in front)
        export = pd.read_csv(io.StringIO(web.get(url + "?format=csv").content.decode()))
        assert export["non_dominated"].any()
        assert len(export) == 4


def test_pareto_mask_keeps_only_points_nobody_beats() -> None:
    x = [1.0, 2.0, 3.0, 2.0, np.nan]
    y = [5.0, 2.0, 1.0, 3.0, 0.0]
    assert pareto_mask(x, y).tolist() == [True, True, True, False, False]


def test_timelines_leave_out_a_constant_carbon_intensity_and_say_it(
    web: Client, experiment: Any
) -> None:
    # the small cluster's region has no carbon zone: 400 g/kWh at every hour
    for kind in ("utilisation", "queue"):
        payload = get_json(web, f"/charts/experiments/{experiment.pk}/timeline-{kind}/")
        fig = payload["figure"]
        assert [t for t in fig["data"] if t.get("yaxis") == "y2"] == []
        assert "yaxis2" not in fig["layout"]
        assert not any("carbon" in str(t.get("name", "")) for t in fig["data"])
        assert "constant 400 g CO₂e/kWh" in payload["note"]
        assert all(len(t["x"]) <= MAX_TIMELINE_POINTS for t in fig["data"])


def test_timelines_overlay_hourly_carbon_intensity_on_a_second_axis(
    web: Client, owner: Any, make_cluster: Any, make_experiment: Any
) -> None:
    spec = {**SMALL_SPEC, "regions": [{"name": "california", "carbon_zone": "US-CAL-CISO"}]}
    exp = make_experiment(owner, cluster=make_cluster(owner, spec=spec), run=True)
    run = exp.runs.get()
    for url in (
        f"/charts/experiments/{exp.pk}/timeline-utilisation/",
        f"/charts/runs/{run.pk}/timeline-queue/",
        f"/charts/compare/timeline-utilisation/?runs={run.pk}",
    ):
        payload = get_json(web, url)
        fig = payload["figure"]
        carbon = [t for t in fig["data"] if t.get("yaxis") == "y2"]
        assert len(carbon) == 1 and carbon[0]["name"] == "carbon intensity"
        assert max(carbon[0]["y"]) > min(carbon[0]["y"])  # California's hours differ
        assert fig["layout"]["yaxis2"]["title"]["text"] == "Carbon intensity [g CO₂e/kWh]"
        assert "right axis" in payload["note"]


def test_a_configuration_is_chosen_with_a_query_parameter(web: Client, experiment: Any) -> None:
    run = experiment.runs.get(policy="fifo", load_factor=2.0, seed=0)
    key = f"{run.cluster_id}:{run.workload_id}:2"
    fig = get_json(web, f"/charts/experiments/{experiment.pk}/cdf/?config={key}")["figure"]
    assert "load ×2" in fig["layout"]["title"]["text"]
    payload = get_json(web, f"/charts/experiments/{experiment.pk}/cdf/?config=9:9:9")
    assert "Unknown configuration" in payload["empty"]


def test_jct_against_load_factor_has_one_point_per_load(web: Client, experiment: Any) -> None:
    fig = get_json(web, f"/charts/experiments/{experiment.pk}/load/")["figure"]
    assert all(t["x"] == [1.0, 2.0] for t in fig["data"])
    assert fig["layout"]["xaxis"]["title"]["text"] == "Load factor [× trace arrival rate]"


def test_jct_against_load_factor_starts_at_zero_so_small_differences_stay_small(
    web: Client, experiment: Any
) -> None:
    fig = get_json(web, f"/charts/experiments/{experiment.pk}/load/")["figure"]
    means = [y for t in fig["data"] for y in t["y"]]
    assert max(means) / min(means) < 50  # a linear axis (a log one spans decades)
    assert fig["layout"]["yaxis"].get("type", "linear") == "linear"
    assert fig["layout"]["yaxis"]["rangemode"] == "tozero"


def test_the_run_charts_show_gantt_fairness_and_the_slowest_jobs(
    web: Client, experiment: Any
) -> None:
    run = experiment.runs.first()
    gantt = get_json(web, f"/charts/runs/{run.pk}/gantt/")["figure"]
    assert gantt["data"][0]["name"] == "waiting" and gantt["data"][0]["orientation"] == "h"
    window = get_json(web, f"/charts/runs/{run.pk}/gantt/?from_h=0&to_h=0.5")["figure"]
    assert window["layout"]["xaxis"]["range"][0] == 0
    bad = get_json(web, f"/charts/runs/{run.pk}/gantt/?from_h=2&to_h=1")
    assert "window is empty" in bad["empty"]
    assert web.get(f"/charts/runs/{run.pk}/gantt/?from_h=abc").status_code == 404
    ftf = get_json(web, f"/charts/runs/{run.pk}/ftf/")["figure"]
    assert ftf["layout"]["xaxis"]["type"] == "log"
    slowest = get_json(web, f"/charts/runs/{run.pk}/slowest/")["table"]
    jct = [row["jct"] for row in slowest["rows"]]
    assert jct == sorted(jct, reverse=True) and len(jct) == 25


def test_the_workload_charts_describe_the_trace(web: Client, experiment: Any) -> None:
    w = experiment.workloads.get()
    gpus = get_json(web, f"/charts/workloads/{w.pk}/gpus/")["figure"]
    assert sum(gpus["data"][0]["y"]) == 100
    duration = get_json(web, f"/charts/workloads/{w.pk}/duration/")["figure"]
    assert duration["data"][0]["y"][-1] == 100.0
    arrivals = get_json(web, f"/charts/workloads/{w.pk}/arrivals/")
    assert "figure" in arrivals or "empty" in arrivals
    users = get_json(web, f"/charts/workloads/{w.pk}/users/")
    assert "names no users" in users.get("empty", "") or "figure" in users


def test_the_cluster_charts_cover_devices_power_cost_and_carbon(
    web: Client, owner: Any, make_cluster: Any
) -> None:
    from clustersim.presets import preset_spec

    c = make_cluster(owner, name="edge", spec=preset_spec("mixed-cloud-edge"))
    devices = get_json(web, f"/charts/clusters/{c.pk}/devices/")["figure"]
    assert sum(t["y"][0] for t in devices["data"]) == c.total_devices
    racks = get_json(web, f"/charts/clusters/{c.pk}/racks/")["figure"]
    assert set(racks["data"][0]["x"]) <= {"dc-west", "dc-eu", "edge-rack", "jetson-rack"} | set(
        racks["data"][0]["x"]
    )
    assert "dc-west" in {x for t in racks["data"] for x in t["x"]}
    carbon = get_json(web, f"/charts/clusters/{c.pk}/carbon/")["figure"]
    means = [t for t in carbon["data"] if str(t.get("name", "")).endswith("daily mean")]
    assert len(means) == 2 and len(means[0]["x"]) == 365
    cost = get_json(web, f"/charts/clusters/{c.pk}/cost/")
    assert "USD per hour" in cost["figure"]["layout"]["title"]["text"]


# -- downsampling ------------------------------------------------------------------------------


def test_cdf_points_keep_the_extremes_within_the_limit() -> None:
    values = np.random.default_rng(0).exponential(3600.0, size=50_000)
    x, y = cdf_points(values)
    assert len(x) <= MAX_CDF_POINTS
    assert x[0] == values.min() and x[-1] == values.max() and y[-1] == 1.0


@pytest.fixture
def big_run(experiment: Any) -> Any:
    """A succeeded run whose stored results exceed every display limit (30k jobs, 12k bins)."""
    run = experiment.runs.first()
    rng = np.random.default_rng(1)
    n = 30_000
    submit = np.sort(rng.uniform(0, 86_400 * 7, n))
    start = submit + rng.exponential(600, n)
    finish = start + rng.exponential(3600, n)
    frame = pd.DataFrame(
        {
            "job_id": [f"j{i}" for i in range(n)],
            "submit": submit,
            "first_start": start,
            "finish": finish,
            "jct": finish - submit,
            "queue_delay": start - submit,
            "num_gpus": rng.choice([1, 2, 4, 8], n),
            "job_type": "",
            "user": [f"u{i % 40}" for i in range(n)],
            "vc": "",
            "attained_gpu_s": finish - start,
            "preemptions": 0,
            "migrations": 0,
            "drop_reason": "",
            "ftf_rho": rng.uniform(0.5, 3.0, n),
        }
    )
    buf = io.BytesIO()
    frame.to_parquet(buf, index=False)
    per_job = Artefact.build(run.owner, Artefact.Kind.PER_JOB, buf.getvalue(), compress=False)
    per_job.save()
    m = 12_000
    series = {
        "t_s": (np.arange(m) * 60.0).tolist(),
        "dt_s": [60.0] * m,
        "utilisation": rng.uniform(0, 1, m).tolist(),
        "queued": rng.integers(0, 50, m).astype(float).tolist(),
        "running": rng.integers(0, 50, m).astype(float).tolist(),
        "power_kw": [10.0] * m,
        "carbon_rate_kg_per_h": [4.0] * m,
        "carbon_intensity_g_per_kwh": rng.uniform(100, 500, m).tolist(),
    }
    ts = Artefact.build(run.owner, Artefact.Kind.TIMESERIES, json.dumps(series).encode())
    ts.save()
    # no stints: they would describe other jobs (large stints: test_dashboard_gantt.py)
    Run.objects.filter(pk=run.pk).update(per_job=per_job, timeseries=ts, stints=None)
    run.refresh_from_db()
    return run


def test_large_runs_are_downsampled_for_display_but_exported_in_full(
    web: Client, big_run: Any
) -> None:
    url = f"/charts/compare/cdf/?runs={big_run.pk}"
    curve = get_json(web, url)["figure"]["data"][0]
    assert len(curve["x"]) <= MAX_CDF_POINTS and curve["y"][-1] == 100.0
    export = pd.read_csv(io.StringIO(web.get(url + "&format=csv").content.decode()))
    assert len(export) == 30_000
    timeline = get_json(web, f"/charts/runs/{big_run.pk}/timeline-utilisation/")["figure"]
    assert all(len(t["x"]) <= MAX_TIMELINE_POINTS for t in timeline["data"])
    full = json.loads(
        web.get(f"/charts/runs/{big_run.pk}/timeline-utilisation/?format=json").content
    )
    assert len(full) == 12_000
    gantt = get_json(web, f"/charts/runs/{big_run.pk}/gantt/?from_h=0&to_h=168")["figure"]
    assert sum(len(t["y"]) for t in gantt["data"] if t["name"] == "waiting") <= MAX_GANTT_ROWS


def test_an_experiment_chart_is_small_and_cached(web: Client, experiment: Any) -> None:
    url = f"/charts/experiments/{experiment.pk}/cdf/"
    first = web.get(url)
    assert first["X-Chart-Cache"] == "miss" and len(first.content) < 1_000_000
    assert web.get(url)["X-Chart-Cache"] == "hit"
    # a change of the stored results is a new cache entry, never a stale answer
    run = experiment.runs.first()
    Run.objects.filter(pk=run.pk).update(state="failed")
    assert web.get(url)["X-Chart-Cache"] == "miss"


# -- exports -----------------------------------------------------------------------------------


def test_every_chart_exports_its_data_as_csv_and_json(web: Client, experiment: Any) -> None:
    for url in all_urls(experiment):
        sep = "&" if "?" in url else "?"
        csv = web.get(f"{url}{sep}format=csv")
        assert csv.status_code == 200 and csv["Content-Type"].startswith("text/csv"), url
        assert "attachment" in csv["Content-Disposition"]
        data = web.get(f"{url}{sep}format=json")
        assert data.status_code == 200
        assert isinstance(json.loads(data.content), list), url
    assert web.get(f"/charts/experiments/{experiment.pk}/table/?format=xml").status_code == 400


# -- ownership ------------------------------------------------------------------------------------


def test_charts_are_the_owners_only(
    web: Client, other_web: Client, client: Client, experiment: Any
) -> None:
    for url in all_urls(experiment):
        assert web.get(url).status_code == 200, url
        assert other_web.get(url).status_code == 404, url
        assert client.get(url).status_code == 404, url  # anonymous
        sep = "&" if "?" in url else "?"
        assert other_web.get(f"{url}{sep}format=csv").status_code == 404, url


def test_a_comparison_including_someone_elses_run_is_not_found(
    web: Client, other: Any, experiment: Any, make_experiment: Any
) -> None:
    theirs = make_experiment(other, name="theirs").runs.first()
    mine = experiment.runs.first()
    assert web.get(f"/charts/compare/cdf/?runs={mine.pk},{theirs.pk}").status_code == 404
    assert web.get(f"/compare/?runs={mine.pk},{theirs.pk}").status_code == 404
    assert web.get("/charts/compare/cdf/?runs=").status_code == 404
    assert web.get("/charts/compare/nope/?runs=1").status_code == 404


# -- empty states -------------------------------------------------------------------------------


def test_charts_of_an_unfinished_experiment_say_what_to_do(
    web: Client, owner: Any, make_experiment: Any
) -> None:
    exp = make_experiment(owner, name="queued")  # runs queued, never started
    for url in experiment_urls(exp):
        payload = get_json(web, url)
        assert "No finished runs yet" in payload["empty"], url
    run = exp.runs.first()
    for url in run_urls(run):
        assert "charts appear once it has succeeded" in get_json(web, url)["empty"]


def test_a_single_load_factor_explains_how_to_see_saturation(
    web: Client, owner: Any, make_experiment: Any
) -> None:
    exp = make_experiment(owner, run=True, name="one-load")
    payload = get_json(web, f"/charts/experiments/{exp.pk}/load/")
    assert "several" in payload["empty"]


# -- plotly.js -----------------------------------------------------------------------------------


def test_plotly_js_is_served_from_the_installed_package(client: Client) -> None:
    version = charts.plotly_version()
    r = client.get(f"/vendor/plotly-{version}.min.js")
    assert r.status_code == 200 and r["Content-Type"].startswith("text/javascript")
    assert b"plotly" in r.content[:2000].lower()
    assert "immutable" in r["Cache-Control"]
    packed = client.get(f"/vendor/plotly-{version}.min.js", HTTP_ACCEPT_ENCODING="gzip")
    assert packed["Content-Encoding"] == "gzip" and len(packed.content) < len(r.content) / 2
    assert client.get("/vendor/plotly-0.0.1.min.js").status_code == 404


def test_pages_load_plotly_js_deferred_from_the_app(web: Client, experiment: Any) -> None:
    html = web.get(f"/experiments/{experiment.pk}/").content.decode()
    assert f'<script src="/vendor/plotly-{charts.plotly_version()}.min.js" defer>' in html
    assert external_assets(html) == []
