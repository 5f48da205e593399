"""A bad policy parameter is a 400 (API) or a form error naming it; nothing is stored."""

from __future__ import annotations

from typing import Any

import pytest

from planner.models import Experiment, Run

pytestmark = pytest.mark.django_db


def _body(cluster: int, workload: int, policies: list[dict[str, Any]]) -> dict[str, Any]:
    return {"name": "p", "clusters": [cluster], "workloads": [workload], "policies": policies}


@pytest.mark.parametrize(
    ("policies", "named"),
    [
        ([{"name": "las", "params": {"quantum_s": "<img src=x onerror=alert(1)>"}}], "quantum_s"),
        ([{"name": "fifo"}, {"name": "las", "params": {"quantum_s": -1}}], "quantum_s"),
        ([{"name": "tiresias", "params": {"timing": "sometimes"}}], "timing"),
        ([{"name": "tiresias", "params": {"thresholds": [1, None]}}], "thresholds"),
        ([{"name": "gavel-fifo", "params": {"seed": 0.5}}], "seed"),
        ([{"name": "fifo", "params": {"backfill": "false"}}], "backfill"),
    ],
)
def test_the_api_answers_400_naming_the_parameter(
    api: Any, owner: Any, make_cluster: Any, make_workload: Any, policies: Any, named: str
) -> None:
    c, w = make_cluster(owner), make_workload(owner)
    r = api.post("/api/v1/experiments/", _body(c.pk, w.pk, policies), format="json")
    assert r.status_code == 400, r.content
    (message,) = r.json()["policies"]
    index = len(policies) - 1
    assert message.startswith(f"policies[{index}].params.{named}: "), message
    assert not Experiment.objects.exists() and not Run.objects.exists()


def test_good_parameters_are_stored_normalised(
    api: Any, owner: Any, make_cluster: Any, make_workload: Any
) -> None:
    c, w = make_cluster(owner), make_workload(owner)
    policies = [
        {"name": "las", "params": {"quantum_s": 600}},
        {"name": "tiresias", "params": {"thresholds": [1000, 5000], "timing": "simulator"}},
    ]
    r = api.post("/api/v1/experiments/", _body(c.pk, w.pk, policies), format="json")
    assert r.status_code == 202, r.content
    params = dict(Run.objects.values_list("policy", "params"))
    assert params == {
        "las": {"quantum_s": 600.0},
        "tiresias": {"thresholds": [1000.0, 5000.0], "timing": "simulator"},
    }


def test_the_web_form_shows_the_same_error(
    web: Any, owner: Any, make_cluster: Any, make_workload: Any
) -> None:
    c, w = make_cluster(owner), make_workload(owner)
    data = {
        "name": "web",
        "clusters": [c.pk],
        "workloads": [w.pk],
        "policies": ["las"],
        "params": '{"las": {"quantum_s": "<img src=x onerror=alert(1)>"}}',
        "load_factors": "1",
        "seeds": "0",
    }
    r = web.post("/experiments/new/", data)
    assert r.status_code == 200
    text = r.content.decode()
    # the form's terms: the policy by name, not its index in a list the form does not show
    assert "las.quantum_s: must be a number" in text
    assert "<img src=x" not in text  # shown escaped
    assert not Experiment.objects.exists()


def test_the_catalogue_says_types_choices_and_minimums(api: Any) -> None:
    policies = {p["name"]: p for p in api.get("/api/v1/policies/").json()}
    las = {p["name"]: p for p in policies["las"]["parameters"]}
    assert las["quantum_s"]["type"] == "float"
    assert (las["quantum_s"]["minimum"], las["quantum_s"]["exclusive_minimum"]) == (0.0, True)
    tiresias = {p["name"]: p for p in policies["tiresias"]["parameters"]}
    assert tiresias["timing"]["choices"] == ["exact", "simulator", "simulator-py2"]
    assert tiresias["promote_knob"]["type"] == "float | None"
    assert tiresias["thresholds"]["type"] == "tuple[float, ...]"
    gavel = {p["name"]: p for p in policies["gavel-fifo"]["parameters"]}
    assert gavel["seed"]["minimum"] is None and gavel["seed"]["choices"] is None
