"""The elastic rule of an experiment from the API and the form, through the runner, and the
run page's device count of resized jobs (issue 15, ``docs/elastic.md``).

An experiment's ``elastic`` rule (``x0.5-x2``, ...) sets the device-count bounds of every
run's rigid jobs before the run (:func:`clustersim.elastic.apply_elastic`); a bad rule is a
400 naming the field.
"""

from __future__ import annotations

from itertools import pairwise
from typing import Any

import pytest
from django.core.exceptions import ValidationError

from planner.models import Experiment, RunState

pytestmark = pytest.mark.django_db


def _grid(cluster: int, workload: int, **kw: Any) -> dict[str, Any]:
    return {
        "name": "elastic",
        "clusters": [cluster],
        "workloads": [workload],
        "policies": [{"name": "optimus"}],
        **kw,
    }


def _post(api: Any, body: dict[str, Any]) -> Any:
    return api.post("/api/v1/experiments/", body, format="json")


def test_the_api_stores_the_rule_normalised_and_blank_by_default(
    api: Any, owner: Any, make_cluster: Any, make_workload: Any
) -> None:
    c, w = make_cluster(owner), make_workload(owner)
    r = _post(api, _grid(c.pk, w.pk, elastic=" X0.5-x2 "))
    assert r.status_code == 202, r.json()
    assert r.json()["elastic"] == "x0.5-x2"
    assert Experiment.objects.get().elastic == "x0.5-x2"
    r = _post(api, _grid(c.pk, w.pk, name="rigid"))
    assert r.status_code == 202 and r.json()["elastic"] == ""
    r = _post(api, _grid(c.pk, w.pk, name="none", elastic="none"))
    assert r.json()["elastic"] == ""


@pytest.mark.parametrize("rule", ["x2", "x0-x2", "x3-x1", "0-4", "lots", "x0.5-x0.5"])
def test_the_api_refuses_a_bad_rule_naming_the_field(
    api: Any, owner: Any, make_cluster: Any, make_workload: Any, rule: str
) -> None:
    c, w = make_cluster(owner), make_workload(owner)
    r = _post(api, _grid(c.pk, w.pk, elastic=rule))
    assert r.status_code == 400
    assert list(r.json()) == ["elastic"]
    assert "elastic rule" in r.json()["elastic"][0]
    assert not Experiment.objects.exists()


def test_the_service_refuses_a_bad_rule_naming_it(owner: Any, make_experiment: Any) -> None:
    with pytest.raises(ValidationError) as exc:
        make_experiment(owner, elastic="x9-x1")
    (message,) = exc.value.messages
    assert message.startswith("elastic: elastic rule 'x9-x1'")


def test_a_run_applies_the_rule_as_the_library_does_and_shows_the_device_counts(
    web: Any, owner: Any, make_experiment: Any
) -> None:
    from clustersim.compat import prepare
    from clustersim.elastic import apply_elastic
    from clustersim.engine import EngineOptions, simulate
    from clustersim.metrics import summary
    from clustersim.spec import cluster_from_spec
    from clustersim.traces import read_trace
    from tests.django.conftest import GAVEL_TRACE, SMALL_SPEC

    exp = make_experiment(owner, policies=("optimus", "fifo"), elastic="x0.5-x2", run=True)
    run = exp.runs.get(policy="optimus")
    assert run.state == RunState.SUCCEEDED, run.error
    cluster = cluster_from_spec(SMALL_SPEC)
    jobs, _ = read_trace(GAVEL_TRACE, None)
    jobs, _ = apply_elastic(jobs, "x0.5-x2", cluster)
    p = prepare(jobs, cluster, "optimus", {}, "consolidate")
    want = simulate(
        p.jobs, cluster, p.policy, p.placement, rates=p.rates, options=EngineOptions(**p.engine)
    )
    assert run.summary["resizes"] == summary(want)["resizes"] > 0
    assert run.summary["jct_mean_s"] == pytest.approx(summary(want)["jct_mean_s"])
    # the run page shows the chart; fifo's run (never resizes) does not
    assert f"/charts/runs/{run.pk}/devices/" in web.get(f"/runs/{run.pk}/").content.decode()
    rigid = exp.runs.get(policy="fifo")
    assert f"/charts/runs/{rigid.pk}/devices/" not in web.get(f"/runs/{rigid.pk}/").content.decode()
    assert "empty" in web.get(f"/charts/runs/{rigid.pk}/devices/").json()
    answer = web.get(f"/charts/runs/{run.pk}/devices/").json()
    lines = answer["figure"]["data"]
    assert 0 < len(lines) <= 12
    # the most resized job's line: its counts within its bounds, 0 only when it holds nothing
    j = int(want.resizes.argmax())
    top = lines[0]
    assert top["name"] == f"job {want.jobs.job_id[j]}"
    held = [n for n in top["y"] if n > 0]
    assert min(held) >= want.jobs.min_gpus[j] and max(held) <= want.jobs.max_gpus[j]
    # and it changes count between two positive values as often as the job was resized
    ys = top["y"]
    assert sum(1 for a, b in pairwise(ys) if a > 0 and b > 0) == want.resizes[j]
    csv = web.get(f"/charts/runs/{run.pk}/devices/?format=csv").content.decode()
    assert csv.splitlines()[0] == "job,job_id,t_s,devices"


def _form(c: Any, w: Any, **kw: Any) -> dict[str, Any]:
    return {
        "name": "web-elastic",
        "clusters": [c.pk],
        "workloads": [w.pk],
        "policies": ["optimus"],
        "load_factors": "1",
        "seeds": "0",
        **kw,
    }


def test_the_form_stores_the_rule_shows_a_bad_one_under_it_and_a_re_run_keeps_it(
    web: Any, owner: Any, make_cluster: Any, make_workload: Any
) -> None:
    c, w = make_cluster(owner), make_workload(owner)
    r = web.post("/experiments/new/", _form(c, w, elastic="x2-x1"))
    assert r.status_code == 200
    (message,) = r.context["form"].errors["elastic"]
    assert "elastic rule 'x2-x1'" in message
    assert not Experiment.objects.exists()
    r = web.post("/experiments/new/", _form(c, w, elastic="1-X1"))
    assert r.status_code == 302, r.context["form"].errors
    exp = Experiment.objects.get()
    assert exp.elastic == "1-x1"
    form = web.get(f"/experiments/new/?from={exp.pk}").context["form"]
    assert form.initial["elastic"] == "1-x1"
