"""A Kueue quota above the cluster is a 400 (API) or a form error naming
``policies[i].params.queues``; nothing is stored. The other options of the production
schedulers are ordinary policy parameters, checked the same way."""

from __future__ import annotations

from typing import Any

import pytest

from planner.models import Experiment, Run

pytestmark = pytest.mark.django_db


def _body(c: Any, w: Any, params: dict[str, Any], name: str = "kubernetes") -> dict[str, Any]:
    return {
        "name": "k",
        "clusters": [c.pk],
        "workloads": [w.pk],
        "policies": [{"name": "fifo"}, {"name": name, "params": params}],
    }


def test_the_api_answers_400_naming_queues_for_a_quota_above_the_cluster(
    api: Any, owner: Any, make_cluster: Any, make_workload: Any
) -> None:
    # the small cluster has 8 V100 (2 nodes of 4)
    c, w = make_cluster(owner), make_workload(owner)
    r = api.post("/api/v1/experiments/", _body(c, w, {"queues": "a:V100=9"}), format="json")
    assert r.status_code == 400, r.content
    text = str(r.json())
    assert "policies[1].params.queues: ClusterQueue 'a' has a nominal quota of 9 V100" in text
    assert "above the cluster's 8" in text
    assert not Experiment.objects.exists() and not Run.objects.exists()


@pytest.mark.parametrize(
    ("name", "params", "field"),
    [
        ("kubernetes", {"queueing": "LIFO"}, "queueing"),
        ("kubernetes", {"queues": "a:V100"}, "queues"),
        ("slurm", {"overestimate": 0.5}, "overestimate"),
        ("yarn-capacity", {"queues": "a=60/100,b=30/100"}, "queues"),
    ],
)
def test_bad_scheduler_options_are_400s_naming_the_parameter(
    api: Any, owner: Any, make_cluster: Any, make_workload: Any, name: str, params: Any, field: str
) -> None:
    c, w = make_cluster(owner), make_workload(owner)
    r = api.post("/api/v1/experiments/", _body(c, w, params, name), format="json")
    assert r.status_code == 400, r.content
    text = str(r.json())
    # a value of the wrong kind: "policies[1].params.<field>: ..."; a value the policy's
    # constructor refuses (a malformed spec): "policies[1].params: <field>: ..."
    assert f"policies[1].params.{field}:" in text or f"policies[1].params: {field}:" in text


def test_quotas_that_fit_are_accepted(
    api: Any, owner: Any, make_cluster: Any, make_workload: Any
) -> None:
    c, w = make_cluster(owner), make_workload(owner)
    params = {"queues": "a@c:V100=4+4,K80=8;b@c:V100=4", "reclaim_within_cohort": "Any"}
    r = api.post("/api/v1/experiments/", _body(c, w, params), format="json")
    assert r.status_code == 202, r.content


def test_the_web_form_shows_the_same_error(
    web: Any, owner: Any, make_cluster: Any, make_workload: Any
) -> None:
    c, w = make_cluster(owner), make_workload(owner)
    data = {
        "name": "web",
        "clusters": [c.pk],
        "workloads": [w.pk],
        "policies": ["kubernetes"],
        "params": '{"kubernetes": {"queues": "a:V100=9"}}',
        "load_factors": "1",
        "seeds": "0",
    }
    r = web.post("/experiments/new/", data)
    assert r.status_code == 200
    assert "kubernetes.queues: ClusterQueue" in r.content.decode()
    assert not Experiment.objects.exists()
