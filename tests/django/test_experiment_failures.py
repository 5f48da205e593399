"""Node failures from the API and the experiment form (issue 14, item 4; docs/failures.md).

An experiment's ``failures`` object turns failures on for every run: the runner hands the
engine ``FailureOptions`` (with the MTBF / repair overrides applied to every node), the
summaries gain the failure metrics, and since drawn failures depend on the seed every run is
repeated per seed. Bad values are refused naming the field, never replaced by a default.
"""

from __future__ import annotations

from typing import Any

import pytest

from planner.models import Experiment

pytestmark = pytest.mark.django_db

FAILURE_KEYS = {
    "node_failures",
    "device_hours_down",
    "restarts",
    "jobs_restarted",
    "lost_work_device_hours",
    "checkpoint_device_hours",
    "goodput",
    "effective_training_time_ratio",
}


def _grid(cluster: int, workload: int, **kw: Any) -> dict[str, Any]:
    return {
        "name": "flaky",
        "clusters": [cluster],
        "workloads": [workload],
        "policies": [{"name": "fifo"}],
        "seeds": [0, 1],
        **kw,
    }


# -- the API ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("mtbf_hours", 0),
        ("mtbf_hours", -5),
        ("repair_hours", 0),
        ("repair_hours", -0.5),
        ("checkpoint_interval_s", 0),
    ],
)
def test_the_api_refuses_a_failure_setting_that_is_not_positive(
    api: Any, owner: Any, make_cluster: Any, make_workload: Any, key: str, value: float
) -> None:
    c, w = make_cluster(owner), make_workload(owner)
    r = api.post("/api/v1/experiments/", _grid(c.pk, w.pk, failures={key: value}), format="json")
    assert r.status_code == 400
    assert r.json()["failures"] == {key: ["must be above 0"]}
    assert not Experiment.objects.exists()


def test_the_api_refuses_a_negative_checkpoint_overhead_and_an_unknown_setting(
    api: Any, owner: Any, make_cluster: Any, make_workload: Any
) -> None:
    c, w = make_cluster(owner), make_workload(owner)
    bad = {"checkpoint_overhead_s": -1}
    r = api.post("/api/v1/experiments/", _grid(c.pk, w.pk, failures=bad), format="json")
    assert r.status_code == 400
    assert "checkpoint_overhead_s" in r.json()["failures"]
    typo = {"mtbf_hour": 10}
    r = api.post("/api/v1/experiments/", _grid(c.pk, w.pk, failures=typo), format="json")
    assert r.status_code == 400
    assert "mtbf_hour" in r.json()["failures"]
    assert not Experiment.objects.exists()


def test_with_failures_on_every_run_is_repeated_per_seed(
    api: Any, owner: Any, make_cluster: Any, make_workload: Any
) -> None:
    c, w = make_cluster(owner), make_workload(owner)
    # FIFO with consolidate draws nothing: without failures one run stands for both seeds
    off = api.post("/api/v1/experiments/", _grid(c.pk, w.pk), format="json")
    assert off.status_code == 202, off.json()
    assert off.json()["runs_total"] == 1 and off.json()["failures"] is None
    # drawn failures depend on the seed: one run per seed, none marked seed_independent
    on = api.post(
        "/api/v1/experiments/", _grid(c.pk, w.pk, failures={"mtbf_hours": 10}), format="json"
    )
    assert on.status_code == 202, on.json()
    assert on.json()["runs_total"] == 2
    # stored with the defaults filled in (docs/failures.md), so a re-run repeats it exactly
    assert on.json()["failures"] == {
        "checkpoint_interval_s": 3600.0,
        "checkpoint_overhead_s": 60.0,
        "mtbf_hours": 10.0,
        "repair_hours": None,
    }
    runs = api.get(f"/api/v1/runs/?experiment={on.json()['id']}").json()["results"]
    assert sorted(r["seed"] for r in runs) == [0, 1]
    assert not any(r["seed_independent"] for r in runs)


def test_a_run_with_failures_reports_the_failure_metrics(
    api: Any,
    owner: Any,
    make_cluster: Any,
    make_workload: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    from clustersim.compat import prepare
    from clustersim.engine import EngineOptions, simulate
    from clustersim.failures import FailureOptions
    from clustersim.metrics import summary
    from clustersim.spec import cluster_from_spec
    from clustersim.traces import read_trace
    from tests.django.conftest import GAVEL_TRACE, SMALL_SPEC

    c, w = make_cluster(owner), make_workload(owner)
    failures = {"mtbf_hours": 10, "repair_hours": 2, "checkpoint_interval_s": 1800}
    with django_capture_on_commit_callbacks(execute=True):
        r = api.post(
            "/api/v1/experiments/",
            _grid(c.pk, w.pk, seeds=[0], failures=failures),
            format="json",
        )
    assert r.status_code == 202, r.json()
    (run,) = api.get(f"/api/v1/runs/?experiment={r.json()['id']}").json()["results"]
    assert run["state"] == "succeeded", run["error"]
    got = api.get(f"/api/v1/runs/{run['id']}/summary/").json()
    assert set(got) >= FAILURE_KEYS
    # 4 nodes with a 10-hour MTBF over a run of days: nodes fail and jobs restart
    assert got["node_failures"] > 0 and got["restarts"] > 0
    assert 0 < got["goodput"] < 1 and 0 < got["effective_training_time_ratio"] < 1
    # the runner passed exactly these options: the library gives the same numbers
    cluster = cluster_from_spec(SMALL_SPEC)
    n = cluster.n_nodes
    import dataclasses

    import numpy as np

    cluster = dataclasses.replace(
        cluster, node_mtbf_h=np.full(n, 10.0), node_repair_h=np.full(n, 2.0)
    )
    jobs, _ = read_trace(GAVEL_TRACE, None)
    p = prepare(jobs, cluster, "fifo", {}, "consolidate")
    opts = FailureOptions(checkpoint_interval_s=1800.0, checkpoint_overhead_s=60.0)
    result = simulate(
        p.jobs,
        cluster,
        p.policy,
        p.placement,
        rates=p.rates,
        options=EngineOptions(seed=0, failures=opts, **p.engine),
    )
    want = summary(result)
    for key in FAILURE_KEYS:
        assert got[key] == pytest.approx(want[key]), key


def test_a_run_without_failures_has_no_failure_metrics(finished_run: Any) -> None:
    assert finished_run.summary is not None
    assert not FAILURE_KEYS & set(finished_run.summary)


# -- the form --------------------------------------------------------------------------------


def _form(c: Any, w: Any, **kw: Any) -> dict[str, Any]:
    return {
        "name": "web-flaky",
        "clusters": [c.pk],
        "workloads": [w.pk],
        "policies": ["fifo"],
        "load_factors": "1",
        "seeds": "0, 1",
        "placement": "",
        "compat": "",
        **kw,
    }


@pytest.mark.parametrize("key", ["mtbf_hours", "repair_hours", "checkpoint_interval_s"])
def test_the_form_shows_a_setting_that_is_not_positive_next_to_its_field(
    web: Any, owner: Any, make_cluster: Any, make_workload: Any, key: str
) -> None:
    c, w = make_cluster(owner), make_workload(owner)
    r = web.post("/experiments/new/", _form(c, w, failures="on", **{key: "0"}))
    assert r.status_code == 200
    assert r.context["form"].errors == {key: [f"failures.{key}: must be a finite number > 0"]}
    assert not Experiment.objects.exists()


def test_the_form_refuses_failure_settings_with_failures_off(
    web: Any, owner: Any, make_cluster: Any, make_workload: Any
) -> None:
    c, w = make_cluster(owner), make_workload(owner)
    r = web.post("/experiments/new/", _form(c, w, mtbf_hours="100"))
    assert r.status_code == 200
    assert "only with node failures on" in r.context["form"].errors["mtbf_hours"][0]
    assert not Experiment.objects.exists()


def test_the_form_turns_failures_on_and_the_pages_say_so(
    web: Any,
    owner: Any,
    make_cluster: Any,
    make_workload: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    c, w = make_cluster(owner), make_workload(owner)
    data = _form(c, w, failures="on", mtbf_hours="10", repair_hours="2", seeds="0")
    with django_capture_on_commit_callbacks(execute=True):
        r = web.post("/experiments/new/", data)
    assert r.status_code == 302, r.content.decode()[-2000:]
    exp = Experiment.objects.get()
    assert exp.failures == {
        "checkpoint_interval_s": 3600.0,
        "checkpoint_overhead_s": 60.0,
        "mtbf_hours": 10.0,
        "repair_hours": 2.0,
    }
    page = web.get(r["Location"]).content.decode()
    assert "node failures on" in page and "MTBF 10 h" in page
    run = exp.runs.get()
    run_page = web.get(f"/runs/{run.pk}/").content.decode()
    assert "Goodput (useful / held device time)" in run_page
    assert "Effective training time ratio" in run_page
    # a re-run starts from the same settings
    form = web.get(f"/experiments/new/?from={exp.pk}").context["form"]
    assert form.initial["failures"] is True and form.initial["mtbf_hours"] == 10.0


def test_the_form_counts_runs_per_seed_with_failures_on(
    web: Any, owner: Any, make_cluster: Any, make_workload: Any
) -> None:
    c, w = make_cluster(owner), make_workload(owner)
    r = web.post("/experiments/new/", _form(c, w, failures="on"))
    assert r.status_code == 302
    exp = Experiment.objects.get()
    assert exp.runs_total == 2 and not exp.runs.filter(seed_independent=True).exists()


def test_failures_with_a_power_model_policy_are_refused_when_the_experiment_is_created(
    api: Any, owner: Any, make_cluster: Any, make_workload: Any
) -> None:
    # the engine refuses failures with the power model (clustersim.failures.check_engine):
    # the API says so at once, under `failures`, instead of failing every run
    c, w = make_cluster(owner), make_workload(owner)
    body = {
        "name": "power",
        "clusters": [c.pk],
        "workloads": [w.pk],
        "policies": [{"name": "power-down"}],
        "failures": {},
    }
    r = api.post("/api/v1/experiments/", body, format="json")
    assert r.status_code == 400, r.json()
    (message,) = r.json()["failures"]
    assert message.startswith("failures: ") and "power model" in message
    assert "'power-down'" in message
    assert not Experiment.objects.exists()
