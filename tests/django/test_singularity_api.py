"""singularity's parameters through the API: a bad one is a 400 naming it, good ones stored."""

from __future__ import annotations

from typing import Any

import pytest

from planner.models import Experiment, Run

pytestmark = pytest.mark.django_db


def _body(cluster: int, workload: int, params: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": "s",
        "clusters": [cluster],
        "workloads": [workload],
        "policies": [{"name": "singularity", "params": params}],
    }


@pytest.mark.parametrize(
    ("params", "named"),
    [
        ({"max_splice": 0}, "policies[0].params.max_splice: "),
        ({"max_splice": 2.5}, "policies[0].params.max_splice: "),
        ({"splice_overhead": -0.1}, "policies[0].params.splice_overhead: "),
        ({"splice_overhead": 1.0}, "policies[0].params: splice_overhead: "),  # the constructor's
        ({"tiers": "yes"}, "policies[0].params.tiers: "),
        ({"restore_s": -5}, "policies[0].params.restore_s: "),
    ],
)
def test_a_bad_parameter_is_a_400_naming_it(
    api: Any, owner: Any, make_cluster: Any, make_workload: Any, params: Any, named: str
) -> None:
    c, w = make_cluster(owner), make_workload(owner)
    r = api.post("/api/v1/experiments/", _body(c.pk, w.pk, params), format="json")
    assert r.status_code == 400, r.content
    (message,) = r.json()["policies"]
    assert message.startswith(named), message
    assert not Experiment.objects.exists() and not Run.objects.exists()


def test_good_parameters_are_stored(
    api: Any, owner: Any, make_cluster: Any, make_workload: Any
) -> None:
    c, w = make_cluster(owner), make_workload(owner)
    params = {"splice_overhead": 0.05, "max_splice": 2, "tiers": False, "restore_s": None}
    r = api.post("/api/v1/experiments/", _body(c.pk, w.pk, params), format="json")
    assert r.status_code == 202, r.content
    stored = Run.objects.get(policy="singularity").params
    assert stored["max_splice"] == 2 and stored["tiers"] is False
    assert stored["splice_overhead"] == 0.05


def test_the_catalogue_shows_the_citation_and_parameters(api: Any) -> None:
    r = api.get("/api/v1/policies/")
    assert r.status_code == 200
    body = r.json()
    items = body["results"] if isinstance(body, dict) and "results" in body else body
    (entry,) = [p for p in items if p["name"] == "singularity"]
    assert "Shukla et al." in entry["citation"] and "2202.07848" in entry["citation"]
    names = [p["name"] for p in entry["parameters"]]
    assert names == ["splice_overhead", "max_splice", "tiers", "interval_s", "restore_s"]
    assert entry["preemptive"] is True
