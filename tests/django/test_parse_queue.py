"""Uploads never wait behind simulations (issue 12, point 8): every way a workload is made
(an upload, a synthetic or a derived workload; over the API or the web app) sends its one
message to the parse queue, never to the simulation queue; a worker that would serve both
says so when it starts. The timing under load, with real workers: ``tests/chaos``."""

from __future__ import annotations

import logging
from types import SimpleNamespace
from typing import Any

import pytest
from django.conf import settings as django_settings
from django.core.files.uploadedfile import SimpleUploadedFile

from tests.django.conftest import PHILLY_SAMPLE
from tests.django.test_dispatch import Broker, broker  # noqa: F401  (the fixture)

pytestmark = pytest.mark.django_db


def _only_parse(broker: Broker, workload_id: int) -> None:  # noqa: F811
    assert broker.take("sim") == []
    assert broker.take("housekeeping") == []
    assert broker.take("parse") == [("planner.parse_workload", [workload_id])]


def test_an_api_upload_goes_to_the_parse_queue(
    api: Any,
    broker: Broker,  # noqa: F811
    django_capture_on_commit_callbacks: Any,
) -> None:
    upload = SimpleUploadedFile(PHILLY_SAMPLE.name, PHILLY_SAMPLE.read_bytes())
    with django_capture_on_commit_callbacks(execute=True):
        r = api.post("/api/v1/workloads/", {"file": upload}, format="multipart")
    assert r.status_code == 202, r.content
    _only_parse(broker, r.json()["id"])


def test_synthetic_and_derived_workloads_go_to_the_parse_queue(
    api: Any,
    owner: Any,
    make_workload: Any,
    broker: Broker,  # noqa: F811
    django_capture_on_commit_callbacks: Any,
) -> None:
    parent = make_workload(owner)
    with django_capture_on_commit_callbacks(execute=True):
        r = api.post("/api/v1/workloads/synthetic/", {"recipe": {"jobs": 10}}, format="json")
    assert r.status_code == 202, r.content
    _only_parse(broker, r.json()["id"])
    with django_capture_on_commit_callbacks(execute=True):
        steps = [{"op": "scale", "factor": 2}]
        r = api.post(f"/api/v1/workloads/{parent.pk}/derive/", {"steps": steps}, format="json")
    assert r.status_code == 202, r.content
    _only_parse(broker, r.json()["id"])


def test_the_web_apps_forms_go_to_the_parse_queue(
    web: Any,
    owner: Any,
    make_workload: Any,
    broker: Broker,  # noqa: F811
    django_capture_on_commit_callbacks: Any,
) -> None:
    from planner.models import Workload

    parent = make_workload(owner)
    upload = SimpleUploadedFile(PHILLY_SAMPLE.name, PHILLY_SAMPLE.read_bytes())
    with django_capture_on_commit_callbacks(execute=True):
        assert web.post("/workloads/upload/", {"file": upload, "name": "u"}).status_code == 302
    _only_parse(broker, Workload.objects.get(name="u").pk)
    with django_capture_on_commit_callbacks(execute=True):
        form = {"name": "s", "model": "gavel", "jobs": 10, "duration_model": "lognormal"}
        r = web.post("/workloads/synthetic/", form)
    assert r.status_code == 302, r.content.decode()[-1500:]
    _only_parse(broker, Workload.objects.get(name="s").pk)
    with django_capture_on_commit_callbacks(execute=True):
        form = {"name": "d", "load_factor": 2, "cap_mode": "cap", "rebase_keep": "time_of_day"}
        r = web.post(f"/workloads/{parent.pk}/derive/", form)
    assert r.status_code == 302, r.content.decode()[-1500:]
    _only_parse(broker, Workload.objects.get(name="d").pk)


@pytest.mark.parametrize(
    ("roles", "warned"),
    [
        ([], True),  # no roles: all three queues
        (["sim", "parse"], True),
        (["sim"], False),
        (["parse", "housekeeping"], False),
    ],
)
def test_a_worker_serving_simulations_and_parsing_says_uploads_will_wait(
    settings: Any, caplog: pytest.LogCaptureFixture, roles: list[str], warned: bool
) -> None:
    from celery.app.amqp import Queues

    from config.celery import _serve_roles

    settings.CLUSTERSIM_WORKER_QUEUES = roles
    queues = Queues(django_settings.CELERY_TASK_QUEUES)
    instance = SimpleNamespace(app=SimpleNamespace(amqp=SimpleNamespace(queues=queues)))
    with caplog.at_level(logging.WARNING, logger="config.celery"):
        _serve_roles("w@host", instance)
    said = [r.getMessage() for r in caplog.records if "upload waits" in r.getMessage()]
    assert bool(said) == warned, said
