"""Spot capacity from the API, the experiment form and the cluster editor (issue 14, item 4;
docs/failures.md, "Spot capacity").

A cluster's pools may be ``spot: true`` (priced at their spot price, reclaimed at their rate);
an experiment's ``spot`` object turns the reclaims on for every run, drawn or replayed from a
trace. Bad values are refused naming the field (and a trace's row), never replaced.
"""

from __future__ import annotations

from typing import Any

import pytest

from planner.models import Experiment
from tests.django.test_cluster_editing import _editor_data

pytestmark = pytest.mark.django_db

SPOT_SPEC = {
    "name": "half-spot",
    "pools": [
        {"name": "v100", "accelerator": "V100", "nodes": 2, "devices_per_node": 4},
        {
            "name": "v100-spot",
            "accelerator": "V100",
            "nodes": 2,
            "devices_per_node": 4,
            "spot": True,
            "spot_discount": 0.7,
            "spot_notice_s": 0,
        },
    ],
}
SPOT_KEYS = {
    "spot_reclaims",
    "spot_device_hours_reclaimed",
    "spot_restarts",
    "spot_jobs_restarted",
    "spot_restarts_saved_by_notice",
    "spot_lost_work_device_hours",
    "goodput",
    "effective_training_time_ratio",
}
#: Reclaims of the two spot nodes (nodes 2 and 3) while the Gavel demo trace keeps them busy.
TRACE = [
    {"node": 2, "reclaimed_at_s": 40000, "returned_at_s": 43600},
    {"node": 3, "reclaimed_at_s": 40000, "returned_at_s": 90000},
]


def _grid(cluster: int, workload: int, **kw: Any) -> dict[str, Any]:
    return {
        "name": "spotty",
        "clusters": [cluster],
        "workloads": [workload],
        "policies": [{"name": "fifo"}],
        "seeds": [0, 1],
        **kw,
    }


# -- the API ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("row", "index", "message"),
    [
        ({"node": 2, "reclaimed_at_s": 100, "returned_at_s": 50}, 1, "must be after"),
        ({"node": 2, "reclaimed_at_s": 40100, "returned_at_s": 40200}, 1, "still reclaimed"),
    ],
)
def test_the_api_refuses_a_bad_trace_row_naming_it(
    api: Any,
    owner: Any,
    make_cluster: Any,
    make_workload: Any,
    row: dict[str, Any],
    index: int,
    message: str,
) -> None:
    c, w = make_cluster(owner, spec=SPOT_SPEC), make_workload(owner)
    spot = {"trace": [TRACE[0], row]}
    r = api.post("/api/v1/experiments/", _grid(c.pk, w.pk, spot=spot), format="json")
    assert r.status_code == 400, r.json()
    (got,) = r.json()["spot"]
    assert got.startswith(f"spot.trace[{index}].") and message in got
    assert not Experiment.objects.exists()


def test_the_api_refuses_a_mistyped_row_and_an_unknown_setting(
    api: Any, owner: Any, make_cluster: Any, make_workload: Any
) -> None:
    c, w = make_cluster(owner, spec=SPOT_SPEC), make_workload(owner)
    bad = {"trace": [TRACE[0], {"node": "two", "reclaimed_at_s": 1, "returned_at_s": 2}]}
    r = api.post("/api/v1/experiments/", _grid(c.pk, w.pk, spot=bad), format="json")
    assert r.status_code == 400
    assert "node" in r.json()["spot"]["trace"]["1"]
    r = api.post("/api/v1/experiments/", _grid(c.pk, w.pk, spot={"notice": 3}), format="json")
    assert r.status_code == 400 and "notice" in r.json()["spot"]
    assert not Experiment.objects.exists()


def test_the_api_refuses_a_trace_naming_an_on_demand_node(
    api: Any, owner: Any, make_cluster: Any, make_workload: Any
) -> None:
    c, w = make_cluster(owner, spec=SPOT_SPEC), make_workload(owner)
    spot = {"trace": [{"node": 0, "reclaimed_at_s": 10, "returned_at_s": 20}]}
    r = api.post("/api/v1/experiments/", _grid(c.pk, w.pk, spot=spot), format="json")
    assert r.status_code == 400
    (got,) = r.json()["spot"]
    assert "node 0 is not in a spot pool of cluster 'half-spot'" in got


def test_the_api_refuses_spot_checkpoints_other_than_the_failures(
    api: Any, owner: Any, make_cluster: Any, make_workload: Any
) -> None:
    c, w = make_cluster(owner, spec=SPOT_SPEC), make_workload(owner)
    body = _grid(c.pk, w.pk, spot={"checkpoint_interval_s": 600}, failures={})
    r = api.post("/api/v1/experiments/", body, format="json")
    assert r.status_code == 400
    assert "spot.checkpoint_interval_s" in r.json()["spot"][0]


def test_spot_with_a_power_model_policy_is_refused_when_the_experiment_is_created(
    api: Any, owner: Any, make_cluster: Any, make_workload: Any
) -> None:
    c, w = make_cluster(owner, spec=SPOT_SPEC), make_workload(owner)
    body = _grid(c.pk, w.pk, spot={})
    body["policies"] = [{"name": "power-down"}]
    r = api.post("/api/v1/experiments/", body, format="json")
    assert r.status_code == 400, r.json()
    (message,) = r.json()["spot"]
    assert message.startswith("spot: ") and "power model" in message
    assert not Experiment.objects.exists()


def test_drawn_reclaims_repeat_every_run_per_seed_and_a_trace_does_not(
    api: Any, owner: Any, make_cluster: Any, make_workload: Any
) -> None:
    c, w = make_cluster(owner, spec=SPOT_SPEC), make_workload(owner)
    drawn = api.post("/api/v1/experiments/", _grid(c.pk, w.pk, spot={}), format="json")
    assert drawn.status_code == 202, drawn.json()
    assert drawn.json()["runs_total"] == 2
    assert drawn.json()["spot"] == {
        "trace": None,
        "checkpoint_interval_s": 3600.0,
        "checkpoint_overhead_s": 60.0,
    }
    replay = api.post(
        "/api/v1/experiments/", _grid(c.pk, w.pk, spot={"trace": TRACE}), format="json"
    )
    assert replay.status_code == 202, replay.json()
    assert replay.json()["runs_total"] == 1  # FIFO, consolidate and a trace draw nothing
    assert replay.json()["spot"]["trace"][1] == {
        "node": 3,
        "reclaimed_at_s": 40000.0,
        "returned_at_s": 90000.0,
    }


def test_a_run_with_a_reclaim_trace_reports_the_spot_metrics_and_prices(
    api: Any,
    owner: Any,
    make_cluster: Any,
    make_workload: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    from clustersim.compat import prepare
    from clustersim.engine import EngineOptions, simulate
    from clustersim.metrics import summary
    from clustersim.spec import cluster_from_spec
    from clustersim.spot import SpotOptions
    from clustersim.traces import read_trace
    from tests.django.conftest import GAVEL_TRACE

    c, w = make_cluster(owner, spec=SPOT_SPEC), make_workload(owner)
    spot = {"trace": TRACE, "checkpoint_interval_s": 1800}
    with django_capture_on_commit_callbacks(execute=True):
        r = api.post("/api/v1/experiments/", _grid(c.pk, w.pk, seeds=[0], spot=spot), format="json")
    assert r.status_code == 202, r.json()
    (run,) = api.get(f"/api/v1/runs/?experiment={r.json()['id']}").json()["results"]
    assert run["state"] == "succeeded", run["error"]
    got = api.get(f"/api/v1/runs/{run['id']}/summary/").json()
    assert set(got) >= SPOT_KEYS
    assert got["spot_reclaims"] == 2 and got["spot_restarts"] > 0
    assert "node_failures" not in got and "restarts" not in got
    assert got["cost_cloud_spot_usd"] < got["cost_cloud_usd"]
    # the runner passed exactly these options: the library gives the same numbers
    cluster = cluster_from_spec(SPOT_SPEC)
    jobs, _ = read_trace(GAVEL_TRACE, None)
    p = prepare(jobs, cluster, "fifo", {}, "consolidate")
    opts = SpotOptions(
        trace=[(r_["node"], r_["reclaimed_at_s"], r_["returned_at_s"]) for r_ in TRACE],
        checkpoint_interval_s=1800.0,
        checkpoint_overhead_s=60.0,
    )
    result = simulate(
        p.jobs,
        cluster,
        p.policy,
        p.placement,
        rates=p.rates,
        options=EngineOptions(seed=0, spot=opts, **p.engine),
    )
    want = summary(result)
    for key in SPOT_KEYS | {"cost_cloud_usd", "cost_cloud_spot_usd", "spot_savings_usd"}:
        assert got[key] == pytest.approx(want[key]), key


# -- the form --------------------------------------------------------------------------------


def _form(c: Any, w: Any, **kw: Any) -> dict[str, Any]:
    return {
        "name": "web-spotty",
        "clusters": [c.pk],
        "workloads": [w.pk],
        "policies": ["fifo"],
        "load_factors": "1",
        "seeds": "0",
        "placement": "",
        "compat": "",
        **kw,
    }


def test_the_form_shows_a_bad_trace_line_next_to_the_trace(
    web: Any, owner: Any, make_cluster: Any, make_workload: Any
) -> None:
    c, w = make_cluster(owner, spec=SPOT_SPEC), make_workload(owner)
    text = "node,reclaimed_at_s,returned_at_s\n2,100,50\n"
    r = web.post("/experiments/new/", _form(c, w, spot="on", spot_trace=text))
    assert r.status_code == 200
    (err,) = r.context["form"].errors["spot_trace"]
    assert err.startswith("reclaim trace line 2: returned_at_s: must be after")
    r = web.post("/experiments/new/", _form(c, w, spot_trace=text))
    assert "only with spot reclaims on" in r.context["form"].errors["spot_trace"][0]
    assert not Experiment.objects.exists()


def test_the_form_shows_an_on_demand_node_in_the_trace_next_to_it(
    web: Any, owner: Any, make_cluster: Any, make_workload: Any
) -> None:
    c, w = make_cluster(owner, spec=SPOT_SPEC), make_workload(owner)
    text = "node,reclaimed_at_s,returned_at_s\n1,100,500\n"
    r = web.post("/experiments/new/", _form(c, w, spot="on", spot_trace=text))
    assert r.status_code == 200
    assert "node 1 is not in a spot pool" in r.context["form"].errors["spot_trace"][0]


def test_the_form_turns_spot_on_with_a_trace_and_a_rerun_keeps_it(
    web: Any,
    owner: Any,
    make_cluster: Any,
    make_workload: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    c, w = make_cluster(owner, spec=SPOT_SPEC), make_workload(owner)
    text = "node,reclaimed_at_s,returned_at_s\n2,40000,43600\n"
    data = _form(c, w, spot="on", spot_trace=text, checkpoint_overhead_s="30")
    with django_capture_on_commit_callbacks(execute=True):
        r = web.post("/experiments/new/", data)
    assert r.status_code == 302, r.content.decode()[-2000:]
    exp = Experiment.objects.get()
    assert exp.spot == {
        "trace": [{"node": 2, "reclaimed_at_s": 40000.0, "returned_at_s": 43600.0}],
        "checkpoint_interval_s": 3600.0,
        "checkpoint_overhead_s": 30.0,
    }
    assert exp.failures is None
    page = web.get(r["Location"]).content.decode()
    assert "spot reclaims on" in page and "a trace of 1 reclaims" in page
    run = exp.runs.get()
    run_page = web.get(f"/runs/{run.pk}/").content.decode()
    assert "Spot reclaims" in run_page and "Job restarts after a reclaim" in run_page
    assert "Cloud cost: the spot device-hours at spot prices" in run_page
    assert "Node failures" not in run_page  # reclaims are not failures
    form = web.get(f"/experiments/new/?from={exp.pk}").context["form"]
    assert form.initial["spot"] is True and form.initial["spot_trace"] == text.strip()


# -- the cluster spec over the API and in the editor -----------------------------------------


def test_the_api_refuses_a_bad_spot_key_naming_it(api: Any) -> None:
    pool = {"accelerator": "V100", "nodes": 2, "spot": True, "spot_reclaim_hours": 0}
    r = api.post("/api/v1/clusters/", {"name": "bad", "spec": {"pools": [pool]}}, format="json")
    assert r.status_code == 400
    assert "pools[0].spot_reclaim_hours: must be > 0" in str(r.json()["spec"])
    pool = {"accelerator": "V100", "nodes": 2, "spot_notice_s": 30}
    r = api.post("/api/v1/clusters/", {"name": "bad", "spec": {"pools": [pool]}}, format="json")
    assert r.status_code == 400
    assert "pools[0].spot_notice_s: only for a spot pool" in str(r.json()["spec"])


def test_the_editor_shows_a_bad_notice_next_to_its_field_and_saves_a_spot_pool(
    web: Any, owner: Any, make_cluster: Any
) -> None:
    c = make_cluster(owner)
    bad = _editor_data(c, save="1", pools__0__spot="True", pools__0__spot_notice_s="-1")
    r = web.post(f"/clusters/{c.pk}/edit/", bad)
    assert r.status_code == 400
    html = r.content.decode()
    at = html.index('name="pools-0-spot_notice_s"')
    assert "pools[0].spot_notice_s: must be &gt;= 0" in html[at : at + 400]
    good = _editor_data(c, save="1", pools__0__spot="True", pools__0__spot_discount="0.5")
    assert web.post(f"/clusters/{c.pk}/edit/", good).status_code == 302
    c.refresh_from_db()
    assert c.spec["pools"][0]["spot"] is True and c.spec["pools"][0]["spot_discount"] == 0.5
    assert "spot" not in c.spec["pools"][1]
