"""The CPU/memory demand rule of an experiment from the API and the form, through the runner,
and the run page's CPU and memory utilisation next to the GPUs' (issue 15,
``docs/resources.md``).

An experiment's ``aux_demand`` rule (``synergy``, ``per-gpu:C,M``, ...) gives every run's jobs
without a CPU or memory demand one before the run (:func:`clustersim.resources.apply_demand`);
a bad rule is a 400 naming the field.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.core.exceptions import ValidationError

from planner.models import Experiment, RunState

pytestmark = pytest.mark.django_db

#: Two pools of 2 nodes × 4 devices; V100 nodes have 5 cores, K80 nodes 2, no memory limit.
#: Under ``per-gpu:3,0`` (3 cores per device) a V100 node holds 1 device (floor(5 / 3)), a
#: K80 node none (floor(2 / 3)): 2 devices in all, so the Gavel demo trace's 4-GPU jobs can
#: never be placed (2 < 4) and are dropped with their own reason; its 1- and 2-GPU jobs run.
LIMITED_SPEC = {
    "name": "limited",
    "pools": [
        {
            "name": "v100",
            "accelerator": "V100",
            "nodes": 2,
            "devices_per_node": 4,
            "cpu_cores": 5,
        },
        {"name": "k80", "accelerator": "K80", "nodes": 2, "devices_per_node": 4, "cpu_cores": 2},
    ],
}


def _grid(cluster: int, workload: int, **kw: Any) -> dict[str, Any]:
    return {
        "name": "aux",
        "clusters": [cluster],
        "workloads": [workload],
        "policies": [{"name": "fifo"}],
        **kw,
    }


def _post(api: Any, body: dict[str, Any]) -> Any:
    return api.post("/api/v1/experiments/", body, format="json")


def test_the_api_stores_the_rule_normalised_and_blank_by_default(
    api: Any, owner: Any, make_cluster: Any, make_workload: Any
) -> None:
    c, w = make_cluster(owner), make_workload(owner)
    r = _post(api, _grid(c.pk, w.pk, aux_demand=" Per-GPU:4,32 "))
    assert r.status_code == 202, r.json()
    assert r.json()["aux_demand"] == "per-gpu:4,32"
    assert Experiment.objects.get().aux_demand == "per-gpu:4,32"
    r = _post(api, _grid(c.pk, w.pk, name="plain"))
    assert r.status_code == 202 and r.json()["aux_demand"] == ""
    r = _post(api, _grid(c.pk, w.pk, name="none", aux_demand="none"))
    assert r.json()["aux_demand"] == ""
    r = _post(api, _grid(c.pk, w.pk, name="synergy", aux_demand="SYNERGY"))
    assert r.json()["aux_demand"] == "synergy"
    got = api.get(f"/api/v1/experiments/{r.json()['id']}/").json()
    assert got["aux_demand"] == "synergy"


@pytest.mark.parametrize("rule", ["per-gpu:4", "per-gpu:-1,2", "per-gpu:a,b", "lots", "drf"])
def test_the_api_refuses_a_bad_rule_naming_the_field(
    api: Any, owner: Any, make_cluster: Any, make_workload: Any, rule: str
) -> None:
    c, w = make_cluster(owner), make_workload(owner)
    r = _post(api, _grid(c.pk, w.pk, aux_demand=rule))
    assert r.status_code == 400
    assert list(r.json()) == ["aux_demand"]
    assert "CPU/memory demand rule" in r.json()["aux_demand"][0]
    assert not Experiment.objects.exists()


def test_the_api_refuses_demands_with_a_co_locating_policy_naming_the_field(
    api: Any, owner: Any, make_cluster: Any, make_workload: Any
) -> None:
    c, w = make_cluster(owner), make_workload(owner)
    body = _grid(c.pk, w.pk, aux_demand="synergy", policies=[{"name": "gandiva"}])
    r = _post(api, body)
    assert r.status_code == 400, r.json()
    assert list(r.json()) == ["aux_demand"]
    assert "'gandiva'" in r.json()["aux_demand"][0]
    # dropping every demand is fine with it
    r = _post(api, {**body, "aux_demand": "ignore"})
    assert r.status_code == 202, r.json()


def test_the_service_refuses_a_bad_rule_naming_it(owner: Any, make_experiment: Any) -> None:
    with pytest.raises(ValidationError) as exc:
        make_experiment(owner, aux_demand="per-gpu:1")
    (message,) = exc.value.messages
    assert message.startswith("aux_demand: CPU/memory demand rule 'per-gpu:1'")


def test_a_run_applies_the_rule_counts_the_jobs_no_node_holds_and_shows_cpu_over_time(
    web: Any, owner: Any, make_cluster: Any, make_experiment: Any
) -> None:
    from clustersim.compat import prepare
    from clustersim.engine import EngineOptions, simulate
    from clustersim.metrics import summary
    from clustersim.resources import apply_demand
    from clustersim.spec import cluster_from_spec
    from clustersim.traces import read_trace
    from tests.django.conftest import GAVEL_TRACE

    limited = make_cluster(owner, name="limited", spec=LIMITED_SPEC)
    exp = make_experiment(owner, cluster=limited, aux_demand="per-gpu:3,0", run=True)
    run = exp.runs.get()
    assert run.state == RunState.SUCCEEDED, run.error
    cluster = cluster_from_spec(LIMITED_SPEC)
    jobs, _ = read_trace(GAVEL_TRACE, None)
    jobs = apply_demand(jobs, "per-gpu:3,0", cluster)
    p = prepare(jobs, cluster, "fifo", {}, "consolidate")
    want = simulate(
        p.jobs, cluster, p.policy, p.placement, rates=p.rates, options=EngineOptions(**p.engine)
    )
    # the 4-GPU jobs (22 of the 100) are dropped as no node holds their cores (LIMITED_SPEC)
    four = int((jobs.num_gpus == 4).sum())
    assert four == 22
    assert run.summary["jobs_aux_too_large"] == four == summary(want)["jobs_aux_too_large"]
    assert run.summary["jobs_dropped"] >= four
    assert run.summary["cpu_utilisation"] == pytest.approx(summary(want)["cpu_utilisation"])
    assert run.summary["mem_utilisation"] is None  # no node limits memory
    # the experiment page names the rule; the run page has the chart and the summary rows
    assert "per-gpu:3,0" in web.get(f"/experiments/{exp.pk}/").content.decode()
    page = web.get(f"/runs/{run.pk}/").content.decode()
    assert f"/charts/runs/{run.pk}/resources/" in page
    assert "CPU utilisation" in page and "exceeds every node" in page
    answer = web.get(f"/charts/runs/{run.pk}/resources/").json()
    lines = {t["name"]: t for t in answer["figure"]["data"]}
    assert list(lines) == ["GPUs", "CPU cores"]  # memory unlimited: no line
    # 3 cores per device on nodes of 5 and 2: at most 2 devices' 6 of the 14 cores are held
    # (the chart rounds to 4 digits), and the queue keeps both busy at some point
    assert max(lines["CPU cores"]["y"]) == pytest.approx(100.0 * 6 / 14, abs=0.01)
    csv = web.get(f"/charts/runs/{run.pk}/resources/?format=csv").content.decode()
    assert csv.splitlines()[0] == "t_s,dt_s,utilisation,cpu_utilisation"


def test_a_run_without_limits_has_no_resource_chart(
    web: Any, owner: Any, make_experiment: Any
) -> None:
    exp = make_experiment(owner, aux_demand="synergy", run=True)  # SMALL_SPEC: no limits
    run = exp.runs.get()
    assert run.state == RunState.SUCCEEDED, run.error
    assert "cpu_utilisation" not in run.summary
    assert f"/charts/runs/{run.pk}/resources/" not in web.get(f"/runs/{run.pk}/").content.decode()
    assert "empty" in web.get(f"/charts/runs/{run.pk}/resources/").json()


def _form(c: Any, w: Any, **kw: Any) -> dict[str, Any]:
    return {
        "name": "web-aux",
        "clusters": [c.pk],
        "workloads": [w.pk],
        "policies": ["drf"],
        "load_factors": "1",
        "seeds": "0",
        **kw,
    }


def test_the_form_stores_the_rule_shows_a_bad_one_under_it_and_a_re_run_keeps_it(
    web: Any, owner: Any, make_cluster: Any, make_workload: Any
) -> None:
    c, w = make_cluster(owner), make_workload(owner)
    r = web.post("/experiments/new/", _form(c, w, aux_demand="per-gpu:x"))
    assert r.status_code == 200
    (message,) = r.context["form"].errors["aux_demand"]
    assert "CPU/memory demand rule 'per-gpu:x'" in message
    r = web.post("/experiments/new/", _form(c, w, aux_demand="synergy", policies=["gandiva"]))
    assert r.status_code == 200
    (message,) = r.context["form"].errors["aux_demand"]
    assert "'gandiva'" in message
    assert not Experiment.objects.exists()
    r = web.post("/experiments/new/", _form(c, w, aux_demand="Synergy"))
    assert r.status_code == 302, r.context["form"].errors
    exp = Experiment.objects.get()
    assert exp.aux_demand == "synergy"
    form = web.get(f"/experiments/new/?from={exp.pk}").context["form"]
    assert form.initial["aux_demand"] == "synergy"


# -- the parse report -----------------------------------------------------------------------


def test_the_parse_report_counts_rows_whose_elastic_bounds_contradict_the_gang_size(
    tmp_path: Any, api: Any, web: Any, owner: Any, make_workload: Any
) -> None:
    # line 2 kept (2 GPUs in [1, 4]); lines 3 and 5: min_gpus 3 > 2; line 4: max_gpus 1 < 2
    path = tmp_path / "bounds.csv"
    path.write_text(
        "submit_time,num_gpus,work,cpu,min_gpus,max_gpus\n"
        "0,2,100,8,1,4\n1,2,100,8,3,4\n2,2,100,8,1,1\n3,2,100,8,3,\n"
    )
    w = make_workload(owner, path=path, name="bounds")
    assert w.status == "ready", w.error
    report = api.get(f"/api/v1/workloads/{w.pk}/").json()["report"]
    assert (report["jobs_read"], report["jobs_kept"], report["jobs_dropped"]) == (4, 1, 3)
    reasons = {k: v["count"] for k, v in report["drop_reasons"].items()}
    assert reasons == {
        "min_gpus > num_gpus: elastic bounds contradict the gang size": 2,
        "max_gpus < num_gpus: elastic bounds contradict the gang size": 1,
    }
    page = web.get(f"/workloads/{w.pk}/").content.decode()
    assert "max_gpus &lt; num_gpus: elastic bounds contradict the gang size: 1" in page


def test_a_workload_capped_to_a_cluster_counts_the_jobs_whose_cpu_no_node_holds(
    tmp_path: Any, web: Any, owner: Any, make_workload: Any, make_cluster: Any
) -> None:
    from planner import parsing, services

    # LIMITED_SPEC: V100 nodes of 5 cores, K80 nodes of 2. Per device: line 2, 4 cores (a
    # V100 node holds 1: two nodes, 2 devices >= 1), kept; line 3, 2 devices of 3 cores
    # (1 per V100 node: 2 >= 2), kept; line 4, 2 devices of 6 cores (no node has 6), and
    # line 5, 4 devices of 3 cores (2 < 4), dropped; line 6, no demand, kept.
    path = tmp_path / "cpu.csv"
    path.write_text(
        "submit_time,num_gpus,work,cpu\n0,1,100,4\n1,2,100,6\n2,2,100,12\n3,4,100,12\n4,1,100,\n"
    )
    parent = make_workload(owner, path=path, name="cpu")
    assert parent.status == "ready", parent.error
    assert parent.report["drop_reasons"] == {}  # the upload knows no cluster
    limited = make_cluster(owner, name="limited", spec=LIMITED_SPEC)
    w = services.derive_workload(
        owner, parent, "fits", [{"op": "cap", "cluster": limited.pk}], enqueue=False
    )
    assert parsing.parse_workload(w.pk) == "ready"
    w.refresh_from_db()
    assert (w.report["jobs_read"], w.report["jobs_kept"], w.report["jobs_dropped"]) == (5, 3, 2)
    assert w.report["drop_reasons"] == {
        "CPU or memory demand exceeds every node": {"count": 2, "first_lines": []}
    }
    assert any("2 jobs ask for more CPU or memory" in a for a in w.report["assumptions"])
    page = web.get(f"/workloads/{w.pk}/").content.decode()
    assert "CPU or memory demand exceeds every node: 2" in page


@pytest.mark.parametrize(
    ("policy", "words"),
    [
        ("drf", ("Ghodsi", "Dominant Resource Fairness", "NSDI'11")),
        ("afs", ("Hwang", "Elastic Resource Sharing for Distributed Deep Learning", "NSDI'21")),
        ("optimus", ("Peng", "Optimus", "EuroSys'18")),
        ("pollux", ("Qiao", "Pollux", "OSDI'21")),
    ],
)
def test_the_catalogue_cites_the_paper_of_each_elastic_and_multi_resource_policy(
    api: Any, policy: str, words: tuple[str, ...]
) -> None:
    r = api.get("/api/v1/policies/")
    assert r.status_code == 200
    body = r.json()
    entries = {p["name"]: p for p in (body["results"] if isinstance(body, dict) else body)}
    citation = entries[policy]["citation"]
    assert all(w in citation for w in words), citation


def test_a_run_where_no_job_fits_any_node_succeeds_and_counts_them_all(
    web: Any, owner: Any, make_cluster: Any, make_experiment: Any
) -> None:
    # 100 cores per device: no node of LIMITED_SPEC (5 and 2 cores) holds one device
    limited = make_cluster(owner, name="limited", spec=LIMITED_SPEC)
    exp = make_experiment(owner, cluster=limited, aux_demand="per-gpu:100,0", run=True)
    run = exp.runs.get()
    assert run.state == RunState.SUCCEEDED, run.error
    assert run.summary["jobs_aux_too_large"] == run.summary["jobs_dropped"] == 100
    assert run.summary["jobs_completed"] == 0
    assert web.get(f"/runs/{run.pk}/").status_code == 200
    assert "empty" in web.get(f"/charts/runs/{run.pk}/resources/").json()
