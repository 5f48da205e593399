"""A power budget below one node's idle draw is a 400 (API) or a form error naming
``budget_kw``, never a silent default; nothing is stored."""

from __future__ import annotations

from typing import Any

import pytest

from planner.models import Experiment, Run

pytestmark = pytest.mark.django_db


def test_the_api_answers_400_naming_budget_kw(
    api: Any, owner: Any, make_cluster: Any, make_workload: Any
) -> None:
    c, w = make_cluster(owner), make_workload(owner)
    body = {
        "name": "p",
        "clusters": [c.pk],
        "workloads": [w.pk],
        "policies": [{"name": "fifo"}, {"name": "power-cap", "params": {"budget_kw": 0.001}}],
    }
    r = api.post("/api/v1/experiments/", body, format="json")
    assert r.status_code == 400, r.content
    text = str(r.json())
    assert "policies[1].params.budget_kw: 0.001 kW is below the idle draw of one node" in text
    assert not Experiment.objects.exists() and not Run.objects.exists()


def test_a_budget_that_fits_is_accepted(
    api: Any, owner: Any, make_cluster: Any, make_workload: Any
) -> None:
    c, w = make_cluster(owner), make_workload(owner)
    body = {
        "name": "p",
        "clusters": [c.pk],
        "workloads": [w.pk],
        "policies": [{"name": "power-cap", "params": {"budget_kw": 1000}}],
    }
    r = api.post("/api/v1/experiments/", body, format="json")
    assert r.status_code == 202, r.content
    assert list(Run.objects.values_list("params", flat=True)) == [{"budget_kw": 1000.0}]


def test_the_web_form_shows_the_same_error(
    web: Any, owner: Any, make_cluster: Any, make_workload: Any
) -> None:
    c, w = make_cluster(owner), make_workload(owner)
    data = {
        "name": "web",
        "clusters": [c.pk],
        "workloads": [w.pk],
        "policies": ["power-cap"],
        "params": '{"power-cap": {"budget_kw": 0.001}}',
        "load_factors": "1",
        "seeds": "0",
    }
    r = web.post("/experiments/new/", data)
    assert r.status_code == 200
    assert "power-cap.budget_kw: 0.001 kW is below the idle draw of one node" in r.content.decode()
    assert not Experiment.objects.exists()
