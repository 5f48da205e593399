"""docker-compose.yml: no Docker engine here, so check its structure and that every command
names things that exist in the project."""

from __future__ import annotations

import importlib
import shlex
from typing import Any

import pytest
import yaml

from tests.django.conftest import ROOT

EXPECTED = {
    "postgres",
    "redis",
    "web",
    "worker",
    "parse-worker",
    "housekeeping-worker",
    "beat",
}
#: the Celery worker services and the queue roles each serves
WORKERS = {"worker": ["sim"], "parse-worker": ["parse"], "housekeeping-worker": ["housekeeping"]}


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def _command(service: dict[str, Any]) -> list[str]:
    cmd = service.get("command", "")
    return cmd if isinstance(cmd, list) else shlex.split(cmd)


def test_it_has_the_production_services(compose: dict[str, Any]) -> None:
    assert set(compose["services"]) == EXPECTED


def test_every_service_has_a_health_check(compose: dict[str, Any]) -> None:
    for name, service in compose["services"].items():
        assert service.get("healthcheck", {}).get("test"), name


def test_app_services_build_the_project_image(compose: dict[str, Any]) -> None:
    for name in ("web", *WORKERS, "beat"):
        service = compose["services"][name]
        assert service["build"] == "."
        assert (ROOT / "Dockerfile").is_file()
        env = service["environment"]
        assert env["DJANGO_SETTINGS_MODULE"] == "config.settings.production"
        assert env["DATABASE_URL"].startswith("postgres://")
        assert env["REDIS_URL"].startswith("redis://redis:")
        assert set(service["depends_on"]) == {"postgres", "redis"}
    assert (ROOT / ".env.example").is_file()


def test_the_worker_can_be_scaled(compose: dict[str, Any]) -> None:
    worker = compose["services"]["worker"]
    assert "container_name" not in worker
    assert "ports" not in worker


def test_web_runs_migrations_static_files_and_gunicorn(compose: dict[str, Any]) -> None:
    cmd = " ".join(_command(compose["services"]["web"]))
    assert "manage.py migrate" in cmd
    assert "manage.py collectstatic" in cmd
    assert (ROOT / "manage.py").is_file()
    target = cmd.split("gunicorn", 1)[1].split()[0]
    module, attr = target.split(":")
    assert callable(getattr(importlib.import_module(module), attr))


@pytest.mark.parametrize("name", [*WORKERS, "beat"])
def test_celery_services_name_the_project_app(compose: dict[str, Any], name: str) -> None:
    args = _command(compose["services"][name])
    assert args[0] == "celery"
    app_module = args[args.index("-A") + 1]
    app = importlib.import_module(app_module).celery_app
    assert app.main == "clustersim"
    assert args[args.index("-A") + 2] == ("beat" if name == "beat" else "worker")


def test_each_queue_has_a_worker_service_of_its_own(compose: dict[str, Any]) -> None:
    from django.conf import settings

    from config.celery import worker_queues

    served = []
    for name, roles in WORKERS.items():
        service = compose["services"][name]
        assert service["environment"]["CLUSTERSIM_WORKER_QUEUES"] == ",".join(roles)
        worker_queues(roles, settings.CLUSTERSIM_QUEUES)  # known roles
        # the health check pings this worker by the name it was given
        node = _command(service)[_command(service).index("-n") + 1].split("@")[0]
        assert f"-d {node}@" in " ".join(service["healthcheck"]["test"])
        served += roles
    assert sorted(served) == sorted(settings.CLUSTERSIM_QUEUES)
    # the web app and beat only send: they serve no queue
    for name in ("web", "beat"):
        assert "CLUSTERSIM_WORKER_QUEUES" not in compose["services"][name]["environment"]


def test_the_beat_schedule_names_registered_tasks() -> None:
    from django.conf import settings

    from config.celery import app

    app.loader.import_default_modules()
    for entry in settings.CELERY_BEAT_SCHEDULE.values():
        assert entry["task"] in app.tasks


def test_the_dockerfile_copies_every_package() -> None:
    text = (ROOT / "Dockerfile").read_text()
    for name in (
        "clustersim",
        "scheduling",
        "config",
        "planner",
        "api",
        "dashboard",
        "templates",
        "static",
        "manage.py",
    ):
        assert f"COPY {name}" in text
