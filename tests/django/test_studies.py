"""Capacity-planning studies through the API (planner/studies.py, api/studies.py).

Celery runs eagerly here (the whole study runs inside the create request's on-commit); the
real-worker path, with a worker killed mid-study, is in ``tests/integration``.
"""

from __future__ import annotations

from typing import Any

import pytest

from planner import studies
from planner.models import Experiment, Study, StudyEvaluation

pytestmark = pytest.mark.django_db

#: A small problem on the Gavel demo workload (100 jobs): V100 and K80 nodes of 4 devices.
BODY: dict[str, Any] = {
    "name": "buy",
    "policies": [{"name": "fifo"}],
    "types": [
        {"accelerator": "v100", "max_nodes": 3, "devices_per_node": 4},
        {"accelerator": "k80", "max_nodes": 3, "devices_per_node": 4},
    ],
    "objectives": [{"metric": "capital_usd"}, {"metric": "jct_p95_s"}],
    "constraints": [{"metric": "jct_p95_s", "op": "<=", "bound": 400_000}],
    "budget": 20,
}


@pytest.fixture
def workload(owner: Any, make_workload: Any) -> Any:
    return make_workload(owner)


@pytest.fixture(autouse=True)
def _on_commit(django_capture_on_commit_callbacks: Any) -> None:
    """Requests run their on-commit callbacks (the study's first advance) as a commit would."""
    global _capture
    _capture = django_capture_on_commit_callbacks


_capture: Any = None


def _committing(call: Any, *args: Any, **kw: Any) -> Any:
    with _capture(execute=True):
        return call(*args, **kw)


def _create(api: Any, workload: Any, **changes: Any) -> Any:
    body = {**BODY, "workload": workload.pk, **changes}
    return _committing(api.post, "/api/v1/studies/", body, format="json")


def test_a_study_runs_to_an_answer(api: Any, workload: Any) -> None:
    r = _create(api, workload, growth=[1.5])
    assert r.status_code == 202, r.content
    pk = r.json()["id"]
    study = Study.objects.get(pk=pk)
    assert study.state == Study.State.SUCCEEDED, study.error
    # 16 candidates <= 20 evaluations: exhaustive; the empty one is settled unsimulated
    rows = StudyEvaluation.objects.filter(study=study, kind="search")
    assert rows.count() == 16
    assert rows.filter(result__status="empty").count() == 1
    got = api.get(f"/api/v1/studies/{pk}/").json()
    assert got["progress"]["simulated"] == 15 and got["progress"]["fraction"] == 1.0
    res = api.get(f"/api/v1/studies/{pk}/results/").json()
    assert res["exhaustive"] and not res["partial"] and not res["infeasible"]
    rec = res["evaluations"][res["recommendation"]]
    # the recommendation is the cheapest feasible candidate of the exhaustive grid
    feasible = [e for e in res["evaluations"] if e["feasible"]]
    assert rec["metrics"]["capital_usd"] == min(e["metrics"]["capital_usd"] for e in feasible)
    assert res["front"] and res["recommendation"] in res["front"]
    assert res["sensitivity"] and all("capital_usd_change" in s for s in res["sensitivity"])
    assert res["growth"][0]["load_factor"] == 1.5
    assert res["inventory"][0]["accelerator"] == "v100"


def test_apply_makes_a_cluster_and_an_experiment(
    api: Any, workload: Any, make_cluster: Any, owner: Any
) -> None:
    base = make_cluster(owner, name="base")
    r = _create(api, workload, base_cluster=base.pk, budget=6, constraints=[])
    pk = r.json()["id"]
    assert Study.objects.get(pk=pk).state == Study.State.SUCCEEDED
    made = api.post(f"/api/v1/studies/{pk}/apply/")
    assert made.status_code == 201, made.content
    exp = Experiment.objects.get(pk=made.json()["experiment"])
    assert set(exp.clusters.values_list("pk", flat=True)) == {made.json()["cluster"], base.pk}
    assert [p["name"] for p in exp.policies] == ["fifo"]


def test_an_infeasible_study_says_so_and_shows_the_closest(api: Any, workload: Any) -> None:
    r = _create(api, workload, constraints=[{"metric": "jct_p95_s", "op": "<=", "bound": 1}])
    res = api.get(f"/api/v1/studies/{r.json()['id']}/results/").json()
    assert res["infeasible"] and res["recommendation"] is None and res["closest"]
    assert api.post(f"/api/v1/studies/{r.json()['id']}/apply/").status_code == 400
    chart = api.get(f"/charts/studies/{r.json()['id']}/front/").json()
    names = {t["name"] for t in chart["figure"]["data"]}
    # every candidate broke the bound by far on its prefix: all stopped early
    assert names == {"stopped early (prefix)"}
    assert sum(len(t["x"]) for t in chart["figure"]["data"] if t["name"] != "Pareto front") >= 10


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"types": []}, "types"),
        ({"types": [{"accelerator": "nope", "max_nodes": 2}]}, "types[0].accelerator"),
        ({"types": [{"accelerator": "v100", "max_nodes": 0}]}, "types"),
        (
            {"types": [{"accelerator": "v100", "max_nodes": 2, "min_nodes": 3}]},
            "types[0].max_nodes",
        ),
        (
            {
                "constraints": [
                    {"metric": "jct_p95_s", "op": "<=", "bound": 10},
                    {"metric": "jct_p95_s", "op": ">=", "bound": 20},
                ]
            },
            "constraints[1]",
        ),
        ({"constraints": [{"metric": "bogus", "op": "<=", "bound": 1}]}, "constraints[0].metric"),
        ({"capital_budget_usd": 100.0}, "capital_budget_usd"),
        ({"objectives": [{"metric": "nope"}]}, "objectives[0].metric"),
        ({"budget": 0}, "budget"),
        ({"policies": [{"name": "nope"}]}, "policies"),
    ],
)
def test_bad_problems_are_400s_naming_the_field(
    api: Any, workload: Any, changes: dict[str, Any], field: str
) -> None:
    r = _create(api, workload, **changes)
    assert r.status_code == 400, r.content
    assert field in r.json(), r.json()
    assert not Study.objects.exists()


def test_a_type_without_a_price_is_a_400(
    api: Any, workload: Any, make_cluster: Any, owner: Any
) -> None:
    spec = {
        "name": "own",
        "accelerators": [
            {
                "name": "freebie",
                "fp16_tflops": 50,
                "memory_gb": 16,
                "memory_bw_tbs": 1,
                "busy_w": 200,
                "price_per_hour": 0,
                "release_year": 2024,
            }
        ],
        "pools": [{"accelerator": "freebie", "nodes": 1, "devices_per_node": 4}],
    }
    base = make_cluster(owner, name="own", spec=spec)
    r = _create(
        api, workload, base_cluster=base.pk, types=[{"accelerator": "freebie", "max_nodes": 2}]
    )
    assert r.status_code == 400 and "types[0].purchase_usd" in r.json(), r.content


def test_cancel_and_resume_keep_finished_evaluations(owner: Any, workload: Any) -> None:
    problem = studies.build_problem(
        types=BODY["types"], policies=BODY["policies"], constraints=BODY["constraints"]
    )
    with pytest.MonkeyPatch.context() as mp:
        # no messages: advance the study by hand, one batch at a time
        mp.setattr(studies, "send_advance", lambda pk: True)
        mp.setattr(studies, "_send_evaluation", lambda pk: True)
        study = studies.create_study(owner, name="s", workload=workload, problem=problem, budget=8)
        studies._advance_once(study.pk)
        first = list(study.evaluations.filter(state="pending").values_list("pk", flat=True))
        assert len(first) == 2
        for pk in first:
            assert studies.evaluate(pk, "w1") == "stored"
        assert studies.cancel(study)
        assert studies._advance_once(study.pk)[0] == "cancelled"
        studies._advance_once(study.pk)
        assert study.evaluations.filter(state="done").count() == 2
    assert _committing(studies.resume, study)
    study.refresh_from_db()
    # eager again: resuming ran the rest, and the first two rows are the same rows
    assert study.state == Study.State.SUCCEEDED
    assert set(first) <= set(study.evaluations.filter(state="done").values_list("pk", flat=True))


def test_a_stale_claim_is_taken_over_and_the_old_worker_cannot_store(
    owner: Any, workload: Any
) -> None:
    from datetime import timedelta

    from django.utils import timezone

    problem = studies.build_problem(types=BODY["types"], policies=BODY["policies"])
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(studies, "send_advance", lambda pk: True)
        mp.setattr(studies, "_send_evaluation", lambda pk: True)
        study = studies.create_study(owner, name="s", workload=workload, problem=problem, budget=4)
        studies._advance_once(study.pk)
        row = study.evaluations.filter(state="pending").first()
        # a worker claimed it and died: attempts 1, heartbeat long ago
        StudyEvaluation.objects.filter(pk=row.pk).update(
            state="running", attempts=1, heartbeat=timezone.now() - timedelta(hours=1)
        )
        assert row.pk in studies.sweep()["evaluations_resent"]
        assert studies.evaluate(row.pk, "w2") == "stored"
        row.refresh_from_db()
        assert row.attempts == 2 and row.worker == "w2" and row.state == "done"


PERMISSIONS = [
    ("get", "/api/v1/studies/{pk}/", 200, 404),
    ("get", "/api/v1/studies/{pk}/results/", 200, 404),
    ("get", "/api/v1/studies/{pk}/evaluations/", 200, 404),
    ("post", "/api/v1/studies/{pk}/cancel/", 200, 404),
    ("post", "/api/v1/studies/{pk}/resume/", 400, 404),
    ("post", "/api/v1/studies/{pk}/apply/", 201, 404),
    ("delete", "/api/v1/studies/{pk}/", 204, 404),
]


@pytest.mark.parametrize(("method", "url", "mine", "theirs"), PERMISSIONS)
def test_permission_matrix(
    api: Any,
    other_api: Any,
    anon_api: Any,
    workload: Any,
    method: str,
    url: str,
    mine: int,
    theirs: int,
) -> None:
    pk = _create(api, workload, budget=4, constraints=[]).json()["id"]
    path = url.format(pk=pk)
    before = list(Study.objects.values_list("pk", "state"))
    assert getattr(anon_api, method)(path).status_code == 401
    assert getattr(other_api, method)(path).status_code == theirs
    assert list(Study.objects.values_list("pk", "state")) == before
    assert _committing(getattr(api, method), path).status_code == mine
    # lists and creation: the other user sees none of the owner's, and cannot use its workload
    assert other_api.get("/api/v1/studies/").json()["count"] == 0
    r = other_api.post("/api/v1/studies/", {**BODY, "workload": workload.pk}, format="json")
    assert r.status_code == 400 and "workload" in r.json()


def test_the_pages(web: Any, other_web: Any, api: Any, workload: Any) -> None:
    assert web.get("/studies/new/").status_code == 200
    r = _committing(
        web.post,
        "/studies/new/",
        {
            "name": "web",
            "workload": workload.pk,
            "policies": "fifo",
            "types": "v100:0-2@4,k80:0-2@4",
            "objectives": "cost_usd, jct_p95_s",
            "constraints": "jct_p95_s<=400000",
            "load_factor": 1,
            "growth": "1.5x1",
            "budget": 10,
            "seeds": "0",
            "seed": 0,
        },
    )
    assert r.status_code == 302, r.content.decode()[:2000]
    study = Study.objects.get(name="web")
    assert study.state == Study.State.SUCCEEDED
    page = web.get(f"/studies/{study.pk}/").content.decode()
    assert "Recommended" in page and "Sensitivity" in page and "Growth plan" in page
    chart = web.get(f"/charts/studies/{study.pk}/front/").json()
    assert chart["figure"]["data"] and "recommended" in {t["name"] for t in chart["figure"]["data"]}
    assert "capacity studies" in web.get("/").content.decode().lower()
    assert other_web.get(f"/studies/{study.pk}/").status_code == 404
    assert other_web.get(f"/charts/studies/{study.pk}/front/").status_code == 404
    made = web.post(f"/studies/{study.pk}/apply/")
    assert made.status_code == 302 and "/experiments/" in made["Location"]


def test_the_form_names_the_bad_field(web: Any, workload: Any) -> None:
    r = web.post(
        "/studies/new/",
        {
            "name": "bad",
            "workload": workload.pk,
            "policies": "fifo",
            "types": "v100:0-2@4,k80",
            "objectives": "cost_usd",
            "load_factor": 1,
            "budget": 10,
            "seeds": "0",
            "seed": 0,
        },
    )
    assert r.status_code == 200
    errors = r.context["form"].errors
    assert "types" in errors and "types[1]" in errors["types"][0]
    assert not Study.objects.exists()


def test_one_advance_goes_on_through_a_phase_change(owner: Any, workload: Any) -> None:
    """On real workers nothing but the last evaluation's advance follows a phase change: that
    one call must move on and ask the next phase's batch (no waiting for the sweeper)."""
    problem = studies.build_problem(
        types=BODY["types"], policies=BODY["policies"], constraints=BODY["constraints"]
    )
    sent: list[int] = []
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(studies, "_eager", lambda: False)
        mp.setattr(studies, "send_advance", lambda pk: True)
        mp.setattr(studies, "_send_evaluation", sent.append)
        study = studies.create_study(owner, name="s", workload=workload, problem=problem, budget=3)
        for _ in range(20):
            studies.advance(study.pk)
            study.refresh_from_db()
            if study.state != Study.State.RUNNING:
                break
            pending = list(study.evaluations.filter(state="pending").values_list("pk", flat=True))
            assert pending, f"advance left phase {study.phase} with nothing in flight"
            for pk in pending:
                assert studies.evaluate(pk, "w") == "stored"
    assert study.state == Study.State.SUCCEEDED
    assert study.evaluations.filter(kind="sensitivity").exists()
    assert sorted(sent) == sorted(
        study.evaluations.exclude(result__status__in=("empty", "static")).values_list(
            "pk", flat=True
        )
    )
