"""API behaviour per endpoint (permissions are in test_permissions.py)."""

from __future__ import annotations

import gzip
import io
from typing import Any

import pandas as pd
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.django.conftest import ACCELERATOR, GAVEL_TRACE, PHILLY_SAMPLE
from tests.django.formdata import external_assets

pytestmark = pytest.mark.django_db


# -- accelerators -----------------------------------------------------------------------------

ACC = ACCELERATOR


def test_it_creates_an_accelerator_type_and_clusters_can_use_it(api: Any) -> None:
    r = api.post("/api/v1/accelerators/", ACC, format="json")
    assert r.status_code == 201, r.json()
    spec = {"pools": [{"accelerator": "MyChip", "nodes": 2, "devices_per_node": 4}]}
    r = api.post("/api/v1/clusters/", {"name": "mine", "spec": spec}, format="json")
    assert r.status_code == 201, r.json()
    assert r.json()["total_devices"] == 8
    assert r.json()["device_types"] == ["MyChip"]


def test_it_rejects_a_duplicate_or_invalid_accelerator(api: Any) -> None:
    assert api.post("/api/v1/accelerators/", ACC, format="json").status_code == 201
    r = api.post("/api/v1/accelerators/", ACC, format="json")
    assert r.status_code == 409 and "name" in r.json()  # a conflict with the one stored
    r = api.post("/api/v1/accelerators/", {**ACC, "name": "x", "busy_w": -1}, format="json")
    assert r.status_code == 400 and "busy_w" in r.json()


def test_another_users_accelerator_is_not_used_for_my_cluster(api: Any, other_api: Any) -> None:
    assert other_api.post("/api/v1/accelerators/", ACC, format="json").status_code == 201
    spec = {"pools": [{"accelerator": "MyChip", "nodes": 1}]}
    r = api.post("/api/v1/clusters/", {"name": "x", "spec": spec}, format="json")
    assert r.status_code == 400
    assert "MyChip" in str(r.json())


def test_the_builtin_catalog_lists_known_types(api: Any) -> None:
    names = {t["name"] for t in api.get("/api/v1/catalog/accelerators/").json()}
    assert {"K80", "P100", "T4"} <= names


def test_the_builtin_catalog_gives_each_price_its_source_date_and_capital(api: Any) -> None:
    types = {t["name"]: t for t in api.get("/api/v1/catalog/accelerators/").json()}
    v100 = types["V100-SXM2-16GB"]
    assert v100["price_per_hour"] == 2.48 and v100["price_source"].startswith("Google Cloud")
    assert v100["purchase_usd"] == 11500 and v100["amortisation_years"] == 4
    assert all(t["price_source"] and len(t["price_date"]) == 10 for t in types.values())


def test_an_accelerator_type_takes_a_purchase_price_and_an_amortisation(api: Any) -> None:
    body = {**ACC, "purchase_usd": 20000, "amortisation_years": 5}
    r = api.post("/api/v1/accelerators/", body, format="json")
    assert r.status_code == 201, r.json()
    assert (r.json()["purchase_usd"], r.json()["amortisation_years"]) == (20000, 5)
    from planner.models import AcceleratorType

    spec = AcceleratorType.objects.get(pk=r.json()["id"]).to_spec()
    assert (spec["purchase_usd"], spec["amortisation_years"]) == (20000, 5)
    # both are optional: no purchase price (the rule applies) and 4 years
    r = api.post("/api/v1/accelerators/", {**ACC, "name": "Plain"}, format="json")
    assert (r.json()["purchase_usd"], r.json()["amortisation_years"]) == (None, 4.0)


@pytest.mark.parametrize(("key", "value"), [("purchase_usd", -1), ("amortisation_years", 0)])
def test_it_rejects_impossible_capital_values(api: Any, key: str, value: float) -> None:
    r = api.post("/api/v1/accelerators/", {**ACC, key: value}, format="json")
    assert r.status_code == 400 and key in r.json()


# -- clusters ---------------------------------------------------------------------------------


def test_it_rejects_an_invalid_spec_naming_the_field(api: Any) -> None:
    spec = {"pools": [{"accelerator": "V100", "nodes": -1}]}
    r = api.post("/api/v1/clusters/", {"name": "bad", "spec": spec}, format="json")
    assert r.status_code == 400
    assert "pools[0].nodes" in str(r.json()["spec"])


def test_it_creates_a_cluster_from_a_preset_and_clones_it(api: Any) -> None:
    r = api.post("/api/v1/clusters/from-preset/", {"preset": "gavel-testbed"}, format="json")
    assert r.status_code == 201
    c = r.json()
    assert (c["preset"], c["total_devices"]) == ("gavel-testbed", 108)
    r = api.post(f"/api/v1/clusters/{c['id']}/clone/", {"name": "what-if"}, format="json")
    assert r.status_code == 201
    clone = r.json()
    assert (clone["name"], clone["parent"], clone["spec"]) == ("what-if", c["id"], c["spec"])
    v100 = [p for p in clone["spec"]["pools"] if p["accelerator"] == "V100-SXM2-16GB"]
    spec = {**clone["spec"], "pools": v100}  # 4 servers of 8 and one of 4
    r = api.patch(f"/api/v1/clusters/{clone['id']}/", {"spec": spec}, format="json")
    assert r.status_code == 200 and r.json()["total_devices"] == 36


def test_an_unknown_preset_is_a_400_listing_the_known_ones(api: Any) -> None:
    r = api.post("/api/v1/clusters/from-preset/", {"preset": "nope"}, format="json")
    assert r.status_code == 400 and "philly" in str(r.json())


def test_presets_list_their_specs(api: Any) -> None:
    presets = {p["name"]: p for p in api.get("/api/v1/presets/").json()}
    assert "pools" in presets["philly"]["spec"]


def test_clusters_filter_by_preset_and_paginate(api: Any, owner: Any, make_cluster: Any) -> None:
    for i in range(3):
        make_cluster(owner, name=f"c{i}")
    api.post("/api/v1/clusters/from-preset/", {"preset": "philly"}, format="json")
    assert api.get("/api/v1/clusters/?preset=philly").json()["count"] == 1
    page = api.get("/api/v1/clusters/?page_size=2").json()
    assert page["count"] == 4 and len(page["results"]) == 2 and page["next"]
    assert api.get("/api/v1/clusters/?name=c1").json()["count"] == 1


# -- workloads --------------------------------------------------------------------------------


def _upload(api: Any, content: bytes, filename: str, **extra: Any) -> Any:
    f = io.BytesIO(content)
    f.name = filename
    return api.post("/api/v1/workloads/", {"file": f, **extra}, format="multipart")


def test_an_upload_answers_202_and_is_parsed_after_commit(
    api: Any, django_capture_on_commit_callbacks: Any
) -> None:
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        r = _upload(api, PHILLY_SAMPLE.read_bytes(), "philly.csv", name="philly")
    assert r.status_code == 202
    assert r.json()["status"] == "pending"
    assert len(callbacks) == 1
    w = api.get(f"/api/v1/workloads/{r.json()['id']}/").json()
    assert w["status"] == "ready"
    assert (w["detected_format"], w["report"]["jobs_kept"]) == ("philly", 2406)
    assert w["report"]["path"] == "philly.csv"
    assert w["summary"]["jobs"] == 2406
    assert sum(b["jobs"] for b in w["summary"]["gpu_demand_histogram"]) == 2406


def test_a_gzip_upload_is_parsed(api: Any, django_capture_on_commit_callbacks: Any) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        r = _upload(api, gzip.compress(GAVEL_TRACE.read_bytes()), "x.trace.gz")
    assert api.get(f"/api/v1/workloads/{r.json()['id']}/").json()["status"] == "ready"


def test_a_bad_trace_fails_with_the_line_number(
    api: Any, django_capture_on_commit_callbacks: Any
) -> None:
    bad = b"timestamp,duration,num_gpus,gpu_time,cluster\n2017-10-01 00:00:00,abc,1,1,c\n"
    with django_capture_on_commit_callbacks(execute=True):
        r = _upload(api, bad, "bad.csv", format="philly")
    w = api.get(f"/api/v1/workloads/{r.json()['id']}/").json()
    assert w["status"] == "failed"
    assert w["report"]["error"]["line"] == 2
    assert "bad.csv:2" in w["error"]
    assert "/tmp" not in w["error"]


def test_an_unknown_format_or_empty_file_is_a_400(api: Any) -> None:
    assert _upload(api, b"x", "a.csv", format="nope").status_code == 400
    assert _upload(api, b"", "a.csv").status_code == 400


def test_workload_lists_leave_out_the_report(api: Any, owner: Any, make_workload: Any) -> None:
    make_workload(owner)
    item = api.get("/api/v1/workloads/?status=ready").json()["results"][0]
    assert "report" not in item and item["status"] == "ready"


# -- experiments and runs ---------------------------------------------------------------------


def _grid(cluster: int, workload: int, **kw: Any) -> dict[str, Any]:
    return {
        "name": "grid",
        "clusters": [cluster],
        "workloads": [workload],
        "policies": [
            {"name": "fifo"},
            {"name": "tiresias", "params": {"thresholds": [1000, 5000]}},
        ],
        "load_factors": [1, 1.5],
        "seeds": [0, 1],
        "placement": "random",  # drawn from the seed: one run per seed
        **kw,
    }


def test_an_experiment_answers_202_and_runs_its_grid(
    api: Any,
    owner: Any,
    make_cluster: Any,
    make_workload: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    c, w = make_cluster(owner), make_workload(owner)
    with django_capture_on_commit_callbacks(execute=True):
        r = api.post("/api/v1/experiments/", _grid(c.pk, w.pk), format="json")
    assert r.status_code == 202, r.json()
    assert r.json()["runs_total"] == 8 and r.json()["state"] == "queued"
    exp = api.get(f"/api/v1/experiments/{r.json()['id']}/").json()
    assert exp["state"] == "succeeded" and exp["progress"] == 1.0
    assert exp["run_counts"]["succeeded"] == 8
    runs = api.get(f"/api/v1/runs/?experiment={exp['id']}&policy=tiresias").json()
    assert runs["count"] == 4
    assert runs["results"][0]["params"] == {"thresholds": [1000, 5000]}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"policies": [{"name": "nope"}]}, "unknown policy"),
        ({"policies": [{"name": "las", "params": {"bogus": 1}}]}, "bogus"),
        ({"load_factors": [0]}, "greater than or equal"),
        ({"placement": "nowhere"}, "unknown placement"),
        ({"seeds": list(range(200))}, "at most"),
    ],
)
def test_it_rejects_a_bad_grid(
    api: Any, owner: Any, make_cluster: Any, make_workload: Any, change: Any, message: str
) -> None:
    c, w = make_cluster(owner), make_workload(owner)
    r = api.post("/api/v1/experiments/", _grid(c.pk, w.pk, **change), format="json")
    assert r.status_code == 400
    assert message in str(r.json())


def test_a_workload_still_parsing_cannot_be_used(
    api: Any, owner: Any, make_cluster: Any, make_workload: Any
) -> None:
    c, w = make_cluster(owner), make_workload(owner, parse=False)
    r = api.post("/api/v1/experiments/", _grid(c.pk, w.pk), format="json")
    assert r.status_code == 400 and "not parsed" in str(r.json())


def test_an_experiment_prices_every_run_over_its_cost_horizon(
    api: Any,
    owner: Any,
    make_cluster: Any,
    make_workload: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    c, w = make_cluster(owner), make_workload(owner)
    grid = _grid(c.pk, w.pk, cost_horizon_hours=720, load_factors=[1, 2], seeds=[0])
    with django_capture_on_commit_callbacks(execute=True):
        r = api.post("/api/v1/experiments/", grid, format="json")
    assert r.status_code == 202, r.json()
    assert r.json()["cost_horizon_hours"] == 720
    summaries = [
        api.get(f"/api/v1/runs/{x['id']}/summary/").json()
        for x in api.get(f"/api/v1/runs/?experiment={r.json()['id']}").json()["results"]
    ]
    assert len(summaries) == 4
    assert {m["horizon_s"] for m in summaries} == {720 * 3600.0}
    # the same horizon and cluster: the same capital for every policy and load factor
    assert len({m["cost_owned_capital_usd"] for m in summaries}) == 1
    for m in summaries:
        assert m["cost_usd"] == m["cost_owned_usd"] > m["cost_owned_capital_usd"] > 0
        assert m["cost_cloud_usd"] > 0 and m["wait_mean_s"] >= 0


@pytest.mark.parametrize("hours", [0, -5])
def test_it_rejects_a_cost_horizon_that_is_not_positive(
    api: Any, owner: Any, make_cluster: Any, make_workload: Any, hours: float
) -> None:
    c, w = make_cluster(owner), make_workload(owner)
    grid = _grid(c.pk, w.pk, cost_horizon_hours=hours)
    r = api.post("/api/v1/experiments/", grid, format="json")
    assert r.status_code == 400 and "cost_horizon_hours" in r.json()


def test_without_a_cost_horizon_runs_use_the_arrival_span(
    api: Any, owner: Any, make_experiment: Any
) -> None:
    exp = make_experiment(owner, load_factors=(1.0, 2.0), run=True)
    assert api.get(f"/api/v1/experiments/{exp.pk}/").json()["cost_horizon_hours"] is None
    spans = {r.load_factor: r.summary["horizon_s"] for r in exp.runs.all()}
    # twice the load: arrivals twice as dense, half the span
    assert spans[2.0] == pytest.approx(spans[1.0] / 2)


def test_cancelling_an_experiment_cancels_its_queued_runs(
    api: Any, owner: Any, make_experiment: Any
) -> None:
    exp = make_experiment(owner, seeds=(0, 1, 2), placement="random")
    r = api.post(f"/api/v1/experiments/{exp.pk}/cancel/")
    assert r.status_code == 200 and r.json()["state"] == "cancelled"
    assert r.json()["run_counts"]["cancelled"] == 3
    assert api.post(f"/api/v1/experiments/{exp.pk}/rerun/").status_code == 202


def test_results_exist_once_a_run_succeeded(api: Any, owner: Any, make_experiment: Any) -> None:
    run = make_experiment(owner).runs.get()
    assert api.get(f"/api/v1/runs/{run.pk}/summary/").status_code == 404
    assert api.get(f"/api/v1/runs/{run.pk}/jobs/").status_code == 404


def test_run_results_download(api: Any, finished_run: Any) -> None:
    pk = finished_run.pk
    summary = api.get(f"/api/v1/runs/{pk}/summary/").json()
    assert summary["jobs_total"] == 100 and "jct_mean_s" in summary
    r = api.get(f"/api/v1/runs/{pk}/jobs/?as=csv")
    assert r["Content-Type"].startswith("text/csv")
    assert f"run-{pk}-jobs.csv" in r["Content-Disposition"]
    frame = pd.read_csv(io.BytesIO(r.content))
    assert len(frame) == 100 and "jct" in frame.columns
    r = api.get(f"/api/v1/runs/{pk}/jobs/?as=parquet")
    assert len(pd.read_parquet(io.BytesIO(r.content))) == 100
    assert api.get(f"/api/v1/runs/{pk}/jobs/?as=xlsx").status_code == 400
    series = api.get(f"/api/v1/runs/{pk}/timeseries/").json()["series"]
    assert len(series["t_s"]) == len(series["queued"]) > 0


def test_compare_lines_up_metrics_per_run(api: Any, owner: Any, make_experiment: Any) -> None:
    exp = make_experiment(owner, policies=("fifo", "tiresias"), run=True)
    ids = list(exp.runs.order_by("-pk").values_list("pk", flat=True))
    r = api.get(f"/api/v1/compare/?runs={ids[0]},{ids[1]}").json()
    assert [x["id"] for x in r["runs"]] == ids
    assert len(r["metrics"]["jct_mean_s"]) == 2
    assert api.get("/api/v1/compare/?runs=a,b").status_code == 400
    assert api.get("/api/v1/compare/").status_code == 400
    assert api.get(f"/api/v1/compare/?runs={ids[0]},999999").status_code == 404


def test_the_policy_catalogue_describes_parameters(api: Any) -> None:
    policies = {p["name"]: p for p in api.get("/api/v1/policies/").json()}
    assert {"fifo", "tiresias", "las"} <= set(policies)
    tiresias = policies["tiresias"]
    assert "NSDI" in tiresias["citation"]
    param, knob, timing, rewalk = tiresias["parameters"]
    assert (param["name"], param["default"], param["required"]) == (
        "thresholds",
        [3250.0, 7200.0],
        False,
    )
    assert param["type"].startswith("tuple")
    assert param["description"]
    assert (knob["name"], knob["default"], timing["default"]) == ("promote_knob", None, "exact")
    assert (rewalk["name"], rewalk["default"]) == ("rewalk", False)
    assert tiresias["compat"] == ["pollux", "tiresias"] and policies["gavel-las"]["compat"] == [
        "gavel"
    ]
    for p in policies.values():
        assert p["summary"] and p["citation"]
    assert {p["name"] for p in api.get("/api/v1/placements/").json()} >= {"consolidate"}


# -- query counts -------------------------------------------------------------------------------


def _queries(api: Any, url: str) -> int:
    with CaptureQueriesContext(connection) as ctx:
        assert api.get(url).status_code == 200
    return len(ctx.captured_queries)


@pytest.mark.parametrize(
    "url",
    [
        "/api/v1/experiments/",
        "/api/v1/runs/",
        "/api/v1/clusters/",
        "/api/v1/workloads/",
        "/api/v1/accelerators/",
    ],
)
def test_list_endpoints_use_a_constant_number_of_queries(
    api: Any, owner: Any, make_experiment: Any, make_accelerator: Any, url: str
) -> None:
    from planner.models import AcceleratorType

    def add() -> None:
        make_experiment(owner, seeds=(0, 1), placement="random")
        make_accelerator(owner, f"T{AcceleratorType.objects.count()}")

    add()
    few = _queries(api, url)
    for _ in range(4):
        add()
    assert _queries(api, url) == few
    assert few <= 5


def test_experiment_detail_is_a_constant_number_of_queries(
    api: Any, owner: Any, make_experiment: Any
) -> None:
    small = make_experiment(owner)
    big = make_experiment(owner, seeds=tuple(range(10)), placement="random")
    assert _queries(api, f"/api/v1/experiments/{small.pk}/") == _queries(
        api, f"/api/v1/experiments/{big.pk}/"
    )


def test_the_schema_and_docs_are_served(api: Any, client: Any) -> None:
    r = client.get("/api/schema/")
    assert r.status_code == 200 and b"/api/v1/experiments/" in r.content
    r = client.get("/api/docs/")
    assert r.status_code == 200
    assert b"swagger-ui" in r.content and external_assets(r.content.decode()) == []
