"""Network contention and stragglers from the API and the experiment form (issue 14).

An experiment's ``network`` object turns network contention on for every run
(``docs/network.md``), its ``stragglers`` object slow nodes (``docs/failures.md``); the
runner hands the engine ``NetworkOptions`` / ``StragglerOptions``, and the summaries gain
each model's metrics. Bad values are refused naming the field, and so are combinations the
engine refuses (co-location, the power model, ``compat`` gavel): when the experiment is
created, not at run time. Slow nodes drawn from a share depend on the seed.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.core.exceptions import ValidationError

from planner.models import Experiment

pytestmark = pytest.mark.django_db

NETWORK_KEYS = {"network_lost_job_hours", "uplink_utilisation_mean", "uplink_utilisation_max"}
STRAGGLER_KEYS = {"slow_nodes", "jobs_slowed", "straggler_device_hours"}


def _grid(cluster: int, workload: int, **kw: Any) -> dict[str, Any]:
    return {
        "name": "knobs",
        "clusters": [cluster],
        "workloads": [workload],
        "policies": [{"name": "fifo"}],
        "seeds": [0, 1],
        **kw,
    }


def _post(api: Any, body: dict[str, Any]) -> Any:
    return api.post("/api/v1/experiments/", body, format="json")


# -- the API: accepted and stored --------------------------------------------------------------


def test_the_api_turns_network_contention_on_with_its_defaults(
    api: Any, owner: Any, make_cluster: Any, make_workload: Any
) -> None:
    c, w = make_cluster(owner), make_workload(owner)
    r = _post(api, _grid(c.pk, w.pk, network={}))
    assert r.status_code == 202, r.json()
    assert r.json()["network"] == {"share_nics": True}
    assert r.json()["stragglers"] is None
    # contention draws nothing: FIFO with consolidate still runs once for both seeds
    assert r.json()["runs_total"] == 1
    assert Experiment.objects.get().network == {"share_nics": True}
    r = _post(api, _grid(c.pk, w.pk, name="uplinks", network={"share_nics": False}))
    assert r.status_code == 202, r.json()
    assert Experiment.objects.get(name="uplinks").network == {"share_nics": False}


def test_the_api_stores_straggler_settings_and_repeats_drawn_slow_nodes_per_seed(
    api: Any, owner: Any, make_cluster: Any, make_workload: Any
) -> None:
    c, w = make_cluster(owner), make_workload(owner)
    r = _post(api, _grid(c.pk, w.pk, stragglers={"share": 0.25}))
    assert r.status_code == 202, r.json()
    # stored with the defaults filled in, so a re-run repeats it exactly
    assert r.json()["stragglers"] == {"share": 0.25, "speed": 0.5, "avoid": False}
    assert r.json()["network"] is None
    # a share drawn from the seed makes the run depend on it: one run per seed
    assert r.json()["runs_total"] == 2
    runs = api.get(f"/api/v1/runs/?experiment={r.json()['id']}").json()["results"]
    assert sorted(x["seed"] for x in runs) == [0, 1]
    assert not any(x["seed_independent"] for x in runs)


@pytest.mark.parametrize("share", [0, 1])
def test_a_share_of_none_or_all_the_nodes_draws_nothing(
    api: Any, owner: Any, make_cluster: Any, make_workload: Any, share: float
) -> None:
    c, w = make_cluster(owner), make_workload(owner)
    body = _grid(c.pk, w.pk, stragglers={"share": share, "speed": 0.8, "avoid": True})
    r = _post(api, body)
    assert r.status_code == 202, r.json()
    assert r.json()["runs_total"] == 1
    assert r.json()["stragglers"] == {"share": float(share), "speed": 0.8, "avoid": True}


# -- the API: 400s naming the field --------------------------------------------------------------


@pytest.mark.parametrize(
    ("settings", "key"),
    [
        ({"share": -0.1}, "share"),
        ({"share": 1.5}, "share"),
        ({"share": "many"}, "share"),
        ({"share": 0.1, "speed": 0}, "speed"),
        ({"share": 0.1, "speed": 1.2}, "speed"),
        ({"share": 0.1, "avoid": "maybe"}, "avoid"),
        ({"speed": 0.5}, "share"),
        ({"share": 0.1, "slow_share": 0.1}, "slow_share"),
    ],
)
def test_the_api_refuses_a_bad_straggler_setting_naming_it(
    api: Any,
    owner: Any,
    make_cluster: Any,
    make_workload: Any,
    settings: dict[str, Any],
    key: str,
) -> None:
    c, w = make_cluster(owner), make_workload(owner)
    r = _post(api, _grid(c.pk, w.pk, stragglers=settings))
    assert r.status_code == 400
    assert list(r.json()["stragglers"]) == [key]
    assert not Experiment.objects.exists()


@pytest.mark.parametrize("settings", [{"share_nics": "yes please"}, {"oversub": 4}, [1]])
def test_the_api_refuses_bad_network_settings_naming_the_field(
    api: Any, owner: Any, make_cluster: Any, make_workload: Any, settings: Any
) -> None:
    c, w = make_cluster(owner), make_workload(owner)
    r = _post(api, _grid(c.pk, w.pk, network=settings))
    assert r.status_code == 400
    assert "network" in r.json()
    assert not Experiment.objects.exists()


@pytest.mark.parametrize("model", ["network", "stragglers"])
@pytest.mark.parametrize(
    ("policy", "compat", "what"),
    [
        ("gandiva", "", "co-location"),
        ("power-down", "", "the power model"),
        ("gavel-fifo", "gavel", "whole-step rounds"),
    ],
)
def test_the_api_refuses_what_the_engine_does_not_combine_with_the_model(
    api: Any,
    owner: Any,
    make_cluster: Any,
    make_workload: Any,
    model: str,
    policy: str,
    compat: str,
    what: str,
) -> None:
    c, w = make_cluster(owner), make_workload(owner)
    settings = {"network": {}, "stragglers": {"share": 0.25}}[model]
    body = _grid(c.pk, w.pk, policies=[{"name": policy}], compat=compat, **{model: settings})
    r = _post(api, body)
    assert r.status_code == 400, r.json()
    (message,) = r.json()[model]
    assert message.startswith(f"{model}: ") and what in message and repr(policy) in message
    assert not Experiment.objects.exists()
    # without the model the same grid is fine
    ok = _post(api, _grid(c.pk, w.pk, policies=[{"name": policy}], compat=compat))
    assert ok.status_code == 202, ok.json()


def test_the_service_refuses_bad_settings_naming_the_key(
    owner: Any, make_cluster: Any, make_workload: Any
) -> None:
    from planner import services

    c, w = make_cluster(owner), make_workload(owner)
    grid = {"name": "x", "clusters": [c], "workloads": [w], "policies": [{"name": "fifo"}]}
    with pytest.raises(ValidationError, match=r"stragglers\.share: must be between 0 and 1"):
        services.create_experiment(owner, stragglers={"share": 2.0}, enqueue=False, **grid)
    with pytest.raises(ValidationError, match=r"stragglers\.speed: must be > 0 and <= 1"):
        services.create_experiment(
            owner, stragglers={"share": 0.1, "speed": 0}, enqueue=False, **grid
        )
    with pytest.raises(ValidationError, match=r"network\.share_nics: must be true or false"):
        services.create_experiment(owner, network={"share_nics": 1}, enqueue=False, **grid)
    assert not Experiment.objects.exists()


# -- a run through the runner --------------------------------------------------------------------


def test_a_run_with_both_models_reports_their_metrics_as_the_library_does(
    api: Any,
    owner: Any,
    make_cluster: Any,
    make_workload: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    from clustersim.compat import prepare
    from clustersim.engine import EngineOptions, simulate
    from clustersim.metrics import summary
    from clustersim.network import NetworkOptions
    from clustersim.spec import cluster_from_spec
    from clustersim.stragglers import StragglerOptions
    from clustersim.traces import read_trace
    from tests.django.conftest import GAVEL_TRACE, SMALL_SPEC

    c, w = make_cluster(owner), make_workload(owner)
    stragglers = {"share": 0.5, "speed": 0.5}
    with django_capture_on_commit_callbacks(execute=True):
        r = _post(api, _grid(c.pk, w.pk, seeds=[3], network={}, stragglers=stragglers))
    assert r.status_code == 202, r.json()
    (run,) = api.get(f"/api/v1/runs/?experiment={r.json()['id']}").json()["results"]
    assert run["state"] == "succeeded", run["error"]
    got = api.get(f"/api/v1/runs/{run['id']}/summary/").json()
    assert set(got) >= NETWORK_KEYS | STRAGGLER_KEYS
    # half of the 4 nodes are slow, and some jobs ran on them
    assert got["slow_nodes"] == 2 and got["jobs_slowed"] > 0
    assert got["straggler_device_hours"] > 0
    # jobs of 8 devices span two 4-device nodes (of one pool's rack): they share NICs
    assert got["network_lost_job_hours"] > 0
    assert 0 <= got["uplink_utilisation_mean"] <= got["uplink_utilisation_max"] <= 1
    # the runner passed exactly these options: the library gives the same numbers
    cluster = cluster_from_spec(SMALL_SPEC)
    jobs, _ = read_trace(GAVEL_TRACE, None)
    p = prepare(jobs, cluster, "fifo", {}, "consolidate")
    options = EngineOptions(
        seed=3,
        network=NetworkOptions(share_nics=True),
        stragglers=StragglerOptions(share=0.5, speed=0.5, avoid=False),
        **p.engine,
    )
    want = summary(simulate(p.jobs, cluster, p.policy, p.placement, rates=p.rates, options=options))
    for key in NETWORK_KEYS | STRAGGLER_KEYS:
        assert got[key] == pytest.approx(want[key]), key


def test_a_run_without_the_models_has_none_of_their_metrics(finished_run: Any) -> None:
    assert finished_run.summary is not None
    assert not (NETWORK_KEYS | STRAGGLER_KEYS) & set(finished_run.summary)


# -- the form --------------------------------------------------------------------------------------


def _form(c: Any, w: Any, **kw: Any) -> dict[str, Any]:
    return {
        "name": "web-knobs",
        "clusters": [c.pk],
        "workloads": [w.pk],
        "policies": ["fifo"],
        "load_factors": "1",
        "seeds": "0, 1",
        "placement": "",
        "compat": "",
        **kw,
    }


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("slow_share", "1.5", "stragglers.share: must be between 0 and 1, not 1.5"),
        ("slow_speed", "0", "stragglers.speed: must be > 0 and <= 1, not 0"),
    ],
)
def test_the_form_shows_a_bad_straggler_setting_next_to_its_field(
    web: Any,
    owner: Any,
    make_cluster: Any,
    make_workload: Any,
    field: str,
    value: str,
    message: str,
) -> None:
    c, w = make_cluster(owner), make_workload(owner)
    data = _form(c, w, stragglers="on", **{"slow_share": "0.25", field: value})
    r = web.post("/experiments/new/", data)
    assert r.status_code == 200
    assert r.context["form"].errors == {field: [message]}
    assert not Experiment.objects.exists()


def test_the_form_wants_a_share_with_stragglers_on_and_none_with_them_off(
    web: Any, owner: Any, make_cluster: Any, make_workload: Any
) -> None:
    c, w = make_cluster(owner), make_workload(owner)
    r = web.post("/experiments/new/", _form(c, w, stragglers="on"))
    assert r.status_code == 200
    assert "required" in r.context["form"].errors["slow_share"][0]
    r = web.post("/experiments/new/", _form(c, w, slow_share="0.2", avoid_slow="on"))
    assert r.status_code == 200
    errors = r.context["form"].errors
    assert "only with stragglers on" in errors["slow_share"][0]
    assert "only with stragglers on" in errors["avoid_slow"][0]
    assert not Experiment.objects.exists()


@pytest.mark.parametrize("model", ["network", "stragglers"])
def test_the_form_refuses_a_co_locating_policy_with_the_model_under_its_box(
    web: Any, owner: Any, make_cluster: Any, make_workload: Any, model: str
) -> None:
    c, w = make_cluster(owner), make_workload(owner)
    data = _form(c, w, policies=["gandiva"], **{model: "on"}, slow_share="0.25")
    if model == "network":
        data.pop("slow_share")
    r = web.post("/experiments/new/", data)
    assert r.status_code == 200
    (message,) = r.context["form"].errors[model]
    assert "co-location" in message and "'gandiva'" in message
    assert not Experiment.objects.exists()


def test_the_form_turns_both_models_on_and_the_pages_say_so(
    web: Any,
    owner: Any,
    make_cluster: Any,
    make_workload: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    c, w = make_cluster(owner), make_workload(owner)
    data = _form(c, w, network="on", stragglers="on", slow_share="0.5", avoid_slow="on", seeds="0")
    with django_capture_on_commit_callbacks(execute=True):
        r = web.post("/experiments/new/", data)
    assert r.status_code == 302, r.content.decode()[-2000:]
    exp = Experiment.objects.get()
    assert exp.network == {"share_nics": True}
    assert exp.stragglers == {"share": 0.5, "speed": 0.5, "avoid": True}
    page = web.get(r["Location"]).content.decode()
    assert "network contention on" in page and "stragglers on" in page
    assert "avoided when possible" in page
    run = exp.runs.get()
    assert run.state == "succeeded", run.error
    run_page = web.get(f"/runs/{run.pk}/").content.decode()
    assert "Time lost to network contention" in run_page
    assert "Rack uplink utilisation (busiest rack)" in run_page
    assert "Device time lost to slow nodes" in run_page
    assert "Goodput" not in run_page  # failures were off
    # a re-run starts from the same settings
    form = web.get(f"/experiments/new/?from={exp.pk}").context["form"]
    assert form.initial["network"] is True and form.initial["stragglers"] is True
    assert form.initial["slow_share"] == 0.5 and form.initial["avoid_slow"] is True


def test_the_form_counts_runs_per_seed_with_drawn_slow_nodes(
    web: Any, owner: Any, make_cluster: Any, make_workload: Any
) -> None:
    c, w = make_cluster(owner), make_workload(owner)
    r = web.post("/experiments/new/", _form(c, w, stragglers="on", slow_share="0.25"))
    assert r.status_code == 302
    exp = Experiment.objects.get()
    assert exp.runs_total == 2 and not exp.runs.filter(seed_independent=True).exists()


def test_run_tables_show_the_models_rows_only_for_runs_that_have_them() -> None:
    from dashboard.pages import summary_rows

    plain = {"jobs_total": 3}
    keys = {r["key"] for r in summary_rows([plain])}
    assert not keys & (NETWORK_KEYS | STRAGGLER_KEYS)
    net = {"network_lost_job_hours": 1.5, "uplink_utilisation_mean": 0.2}
    rows = {r["key"]: r for r in summary_rows([plain, net])}
    assert set(rows) >= NETWORK_KEYS and not set(rows) & STRAGGLER_KEYS
    assert rows["uplink_utilisation_mean"]["values"] == [None, pytest.approx(20.0)]
    slow = {"slow_nodes": 2, "jobs_slowed": 5, "straggler_device_hours": 0.5}
    assert {r["key"] for r in summary_rows([slow])} >= STRAGGLER_KEYS


def test_the_form_sets_share_nics_and_a_re_run_keeps_it(
    web: Any, owner: Any, make_cluster: Any, make_workload: Any
) -> None:
    c, w = make_cluster(owner), make_workload(owner)
    r = web.post("/experiments/new/", _form(c, w, network="on", share_nics="false"))
    assert r.status_code == 302, r.content.decode()[-2000:]
    exp = Experiment.objects.get()
    assert exp.network == {"share_nics": False}
    page = web.get(r["Location"]).content.decode()
    assert "network contention on</strong>: rack uplinks shared" in page
    form = web.get(f"/experiments/new/?from={exp.pk}").context["form"]
    assert form.initial["share_nics"] == "false"
    # blank: the default, NICs shared
    r = web.post("/experiments/new/", _form(c, w, name="shared", network="on", share_nics=""))
    assert r.status_code == 302
    assert Experiment.objects.get(name="shared").network == {"share_nics": True}


def test_the_form_puts_share_nics_errors_under_the_field(
    web: Any, owner: Any, make_cluster: Any, make_workload: Any
) -> None:
    c, w = make_cluster(owner), make_workload(owner)
    r = web.post("/experiments/new/", _form(c, w, share_nics="false"))
    assert r.status_code == 200
    (message,) = r.context["form"].errors["share_nics"]
    assert "only with network contention on" in message
    r = web.post("/experiments/new/", _form(c, w, network="on", share_nics="maybe"))
    assert r.status_code == 200
    assert "share_nics" in r.context["form"].errors
    assert not Experiment.objects.exists()
