"""Renaming a workload (page and API), deriving from its page, and re-running an experiment
with changes (the create form prefilled from it)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from planner.models import Experiment, Workload
from tests.django.formdata import posted

pytestmark = pytest.mark.django_db


def test_a_workload_is_renamed_on_its_page(web: Any, owner: Any, make_workload: Any) -> None:
    w = make_workload(owner)
    page = web.get(f"/workloads/{w.pk}/").content.decode()
    assert f'action="/workloads/{w.pk}/edit/"' in page
    r = web.post(
        f"/workloads/{w.pk}/edit/", {"rename-name": "Q3 trace", "rename-description": "from Philly"}
    )
    assert r.status_code == 302
    w.refresh_from_db()
    assert (w.name, w.description) == ("Q3 trace", "from Philly")
    assert w.jobs_id is not None  # the parse result is untouched


def test_a_blank_name_is_refused(web: Any, owner: Any, make_workload: Any) -> None:
    w = make_workload(owner)
    r = web.post(f"/workloads/{w.pk}/edit/", {"rename-name": ""})
    assert r.status_code == 400 and b"This field is required" in r.content
    w.refresh_from_db()
    assert w.name == "gavel"


def test_nobody_renames_another_users_workload(
    other_web: Any, other_api: Any, owner: Any, make_workload: Any
) -> None:
    w = make_workload(owner)
    assert other_web.post(f"/workloads/{w.pk}/edit/", {"rename-name": "x"}).status_code == 404
    r = other_api.patch(f"/api/v1/workloads/{w.pk}/", {"name": "x"}, format="json")
    assert r.status_code == 404
    w.refresh_from_db()
    assert w.name == "gavel"


def test_a_workload_is_renamed_over_the_api(api: Any, owner: Any, make_workload: Any) -> None:
    w = make_workload(owner)
    r = api.patch(f"/api/v1/workloads/{w.pk}/", {"name": "Q3 trace"}, format="json")
    assert r.status_code == 200 and r.json()["name"] == "Q3 trace"
    assert Workload.objects.get(pk=w.pk).name == "Q3 trace"


def test_the_workload_page_reaches_the_derive_form(
    web: Any, owner: Any, make_workload: Any
) -> None:
    w = make_workload(owner)
    page = web.get(f"/workloads/{w.pk}/").content.decode()
    assert 'href="#derive"' in page and 'id="derive"' in page
    assert f'action="/workloads/{w.pk}/derive/"' in page


# -- re-run with changes -----------------------------------------------------------------------


def test_rerun_with_changes_prefills_the_form_from_the_experiment(
    web: Any, owner: Any, make_experiment: Any
) -> None:
    exp = make_experiment(
        owner,
        policies=("fifo", "las"),
        load_factors=(1.0, 1.5),
        seeds=(0, 7),
        placement="spread",
        cost_horizon_hours=720.0,
        name="q3",
    )
    Experiment.objects.filter(pk=exp.pk).update(
        policies=[{"name": "fifo", "params": {}}, {"name": "las", "params": {"quantum_s": 600}}]
    )
    page = web.get(f"/experiments/{exp.pk}/").content.decode()
    assert f'href="/experiments/new/?from={exp.pk}"' in page
    form = web.get(f"/experiments/new/?from={exp.pk}").context["form"]
    assert form.initial == {
        "name": "q3 (re-run)",
        "clusters": [exp.clusters.get().pk],
        "workloads": [exp.workloads.get().pk],
        "policies": ["fifo", "las"],
        "params": json.dumps({"las": {"quantum_s": 600}}),
        "load_factors": "1, 1.5",
        "seeds": "0, 7",
        "placement": "spread",
        "compat": "",
        "cost_horizon_hours": 720.0,
    }
    # change the load factors and launch
    data = {**posted(form), "load_factors": "2"}
    r = web.post("/experiments/new/", data)
    new = Experiment.objects.exclude(pk=exp.pk).get()
    assert r.status_code == 302
    assert (new.name, new.load_factors, new.seeds, new.placement, new.cost_horizon_hours) == (
        "q3 (re-run)",
        [2.0],
        [0, 7],
        "spread",
        720.0,
    )
    assert new.policies[1] == {"name": "las", "params": {"quantum_s": 600.0}}
    # fifo and las under spread placement draw nothing from the seed: one run each
    assert new.runs.count() == 2


def test_rerun_of_another_users_experiment_is_404(
    other_web: Any, owner: Any, make_experiment: Any
) -> None:
    exp = make_experiment(owner)
    assert other_web.get(f"/experiments/new/?from={exp.pk}").status_code == 404
