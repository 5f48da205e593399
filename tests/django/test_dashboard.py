"""Server-rendered pages: sign in, upload, clusters, experiments and their progress."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from tests.django.conftest import GAVEL_TRACE

pytestmark = pytest.mark.django_db


PAGES = [
    "/",
    "/workloads/upload/",
    "/clusters/new/",
    "/experiments/new/",
]


@pytest.mark.parametrize("url", PAGES)
def test_pages_need_a_signed_in_user(client: Any, url: str) -> None:
    r = client.get(url)
    assert r.status_code == 302 and r["Location"].startswith("/accounts/login/")


@pytest.mark.parametrize("url", PAGES)
def test_pages_render_for_a_signed_in_user(web: Any, url: str) -> None:
    assert web.get(url).status_code == 200


def test_a_user_signs_in_with_the_form(client: Any, owner: Any) -> None:
    r = client.post("/accounts/login/", {"username": "alice", "password": "alice-password"})
    assert r.status_code == 302 and r["Location"] == "/"
    assert b"alice" in client.get("/").content


def test_uploading_through_the_form_shows_the_parse_report(
    web: Any, django_capture_on_commit_callbacks: Any
) -> None:
    upload = SimpleUploadedFile(GAVEL_TRACE.name, GAVEL_TRACE.read_bytes())
    with django_capture_on_commit_callbacks(execute=True):
        r = web.post("/workloads/upload/", {"file": upload, "name": "g", "format": ""})
    assert r.status_code == 302
    page = web.get(r["Location"])
    assert b"Parse report" in page.content and b"gavel" in page.content
    fragment = web.get(r["Location"] + "status/")
    assert fragment["X-Poll-Done"] == "1"


def test_the_upload_form_answers_json_to_the_progress_script(web: Any) -> None:
    upload = SimpleUploadedFile(GAVEL_TRACE.name, GAVEL_TRACE.read_bytes())
    r = web.post("/workloads/upload/", {"file": upload}, HTTP_X_REQUESTED_WITH="XMLHttpRequest")
    assert r.status_code == 202 and r.json()["url"].startswith("/workloads/")
    r = web.post("/workloads/upload/", {}, HTTP_X_REQUESTED_WITH="XMLHttpRequest")
    assert r.status_code == 400 and "file" in r.json()["errors"]


def test_a_cluster_is_created_from_a_preset_or_a_spec(web: Any) -> None:
    r = web.post("/clusters/new/", {"name": "p", "preset": "gavel-testbed", "spec": ""})
    assert r.status_code == 302
    assert b"108 devices" in web.get(r["Location"]).content
    spec = '{"pools": [{"accelerator": "T4", "nodes": 2, "devices_per_node": 4}]}'
    r = web.post("/clusters/new/", {"name": "s", "preset": "", "spec": spec})
    assert r.status_code == 302
    r = web.post(r["Location"] + "clone/")
    assert r.status_code == 302 and b"cloned from" in web.get(r["Location"]).content


@pytest.mark.parametrize(
    ("data", "error"),
    [
        ({"preset": "", "spec": ""}, "exactly one"),
        ({"preset": "", "spec": "{not json"}, "not valid JSON"),
        ({"preset": "", "spec": '{"pools": [{"accelerator": "Z9", "nodes": 1}]}'}, "Z9"),
    ],
)
def test_the_cluster_form_reports_errors(web: Any, data: dict[str, str], error: str) -> None:
    r = web.post("/clusters/new/", {"name": "x", **data})
    assert r.status_code == 200
    shown = re.findall(r'<ul class="errorlist[^"]*"[^>]*>(.*?)</ul>', r.content.decode(), re.S)
    assert sum(error in block for block in shown) == 1  # said once, not twice


def test_an_experiment_is_launched_and_watched(
    web: Any,
    owner: Any,
    make_cluster: Any,
    make_workload: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    c, w = make_cluster(owner), make_workload(owner)
    data = {
        "name": "web",
        "clusters": [c.pk],
        "workloads": [w.pk],
        "policies": ["fifo", "las"],
        "params": '{"las": {"quantum_s": 600}}',
        "load_factors": "1, 2",
        "seeds": "0",
        "placement": "consolidate",
    }
    with django_capture_on_commit_callbacks(execute=True):
        r = web.post("/experiments/new/", data)
    assert r.status_code == 302, r.content.decode()[-2000:]
    page = web.get(r["Location"])
    assert page.status_code == 200 and b"succeeded" in page.content
    fragment = web.get(r["Location"] + "progress/")
    assert fragment["X-Poll-Done"] == "1" and b"100.0 %" in fragment.content


def test_the_experiment_form_sets_the_cost_horizon(
    web: Any,
    owner: Any,
    make_cluster: Any,
    make_workload: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    from planner.models import Experiment

    c, w = make_cluster(owner), make_workload(owner)
    data = {
        "name": "horizon",
        "clusters": [c.pk],
        "workloads": [w.pk],
        "policies": ["fifo"],
        "load_factors": "1",
        "seeds": "0",
        "cost_horizon_hours": "48",
    }
    assert b"Cost horizon (hours)" in web.get("/experiments/new/").content
    with django_capture_on_commit_callbacks(execute=True):
        r = web.post("/experiments/new/", data)
    assert r.status_code == 302, r.content.decode()[-2000:]
    exp = Experiment.objects.get(name="horizon")
    assert exp.cost_horizon_hours == 48.0
    assert exp.runs.get().summary["horizon_s"] == 48 * 3600.0
    page = web.get(r["Location"]).content.decode()
    assert "owned-cost horizon 48 h" in page
    for chart in ("bars-wait_mean_s", "bars-cost_owned_usd", "bars-cost_cloud_usd"):
        assert chart in page
    r = web.post("/experiments/new/", {**data, "name": "zero", "cost_horizon_hours": "0"})
    assert r.status_code == 200 and "more than 0 hours" in r.content.decode()


def test_the_experiment_form_reports_bad_numbers(web: Any, owner: Any, make_cluster: Any) -> None:
    r = web.post("/experiments/new/", {"name": "x", "load_factors": "1, fast", "seeds": "-1"})
    text = r.content.decode()
    assert r.status_code == 200 and "comma-separated numbers" in text and "non-negative" in text


def test_a_running_experiment_can_be_cancelled_from_its_page(
    web: Any, owner: Any, make_experiment: Any
) -> None:
    exp = make_experiment(owner)
    fragment = web.get(f"/experiments/{exp.pk}/progress/")
    assert fragment["X-Poll-Done"] == "0" and b"Cancel" in fragment.content
    r = web.post(f"/experiments/{exp.pk}/cancel/")
    assert r.status_code == 302
    assert b"cancelled" in web.get(r["Location"]).content


def test_another_users_pages_are_404(other_web: Any, owner: Any, make_experiment: Any) -> None:
    exp = make_experiment(owner)
    run = exp.runs.get()
    for url in (
        f"/experiments/{exp.pk}/",
        f"/experiments/{exp.pk}/progress/",
        f"/workloads/{run.workload_id}/",
        f"/workloads/{run.workload_id}/status/",
        f"/clusters/{run.cluster_id}/",
    ):
        assert other_web.get(url).status_code == 404, url
    assert other_web.post(f"/experiments/{exp.pk}/cancel/").status_code == 404
    assert other_web.post(f"/clusters/{run.cluster_id}/clone/").status_code == 404
    assert exp.runs.get().state == "queued"


def test_static_assets_are_local(web: Any) -> None:
    page = web.get("/").content.decode()
    assert "/static/dashboard/site.css" in page and "/static/dashboard/poll.js" in page
    assert "http://" not in page and "https://" not in page
