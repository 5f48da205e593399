"""Queues, the fair-share dispatcher and the per-user limit of queued runs (issue 11, points
6 and 7).

``broker`` sends real messages to Celery's in-memory transport, which nothing consumes: a test
reads what the dispatcher sent, in order, from the queues.
"""

from __future__ import annotations

from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest
from django.conf import settings as django_settings

from planner import dispatch, runner, services
from planner.models import Experiment, Run, RunState

pytestmark = pytest.mark.django_db


class Broker:
    """The in-memory transport's queues, read in order."""

    def __init__(self, app: Any) -> None:
        self.app = app

    def take(self, role: str) -> list[tuple[str, list[Any]]]:
        """Every message waiting in the queue of ``role``: (task name, args), first in first."""
        out = []
        name = django_settings.CLUSTERSIM_QUEUES[role]
        with self.app.connection_for_read() as conn, conn.channel() as channel:
            channel.queue_declare(queue=name)
            while (message := channel.basic_get(queue=name, no_ack=True)) is not None:
                out.append((message.headers["task"], message.decode()[0]))
        return out

    def purge(self) -> None:
        for role in django_settings.CLUSTERSIM_QUEUES:
            self.take(role)


@pytest.fixture
def broker() -> Iterator[Broker]:
    from config.celery import app

    eager = app.conf.task_always_eager
    app.conf.task_always_eager = False
    b = Broker(app)
    b.purge()
    try:
        yield b
    finally:
        b.purge()
        app.conf.task_always_eager = eager


def _sent(broker: Broker) -> list[int]:
    return [args[0] for task, args in broker.take("sim") if task == "planner.simulate_run"]


# -- point 6: queues -------------------------------------------------------------------------


def test_each_task_goes_to_its_queue() -> None:
    from config.celery import app

    app.loader.import_default_modules()
    prefix = django_settings.CLUSTERSIM_CELERY_QUEUE
    routes = {
        "planner.simulate_run": "sim",
        "planner.parse_workload": "parse",
        "planner.reap_stale_runs": "housekeeping",
        "planner.sweep": "housekeeping",
        "planner.dispatch_runs": "housekeeping",
        "planner.launch_experiment": "housekeeping",
    }
    for task, role in routes.items():
        assert task in app.tasks
        assert app.amqp.router.route({}, task)["queue"].name == f"{prefix}.{role}"
    # beat's periodic tasks are all housekeeping
    for entry in django_settings.CELERY_BEAT_SCHEDULE.values():
        assert routes[entry["task"]] == "housekeeping"


def test_a_worker_serves_the_queues_of_its_roles(settings: Any) -> None:
    from celery.app.amqp import Queues
    from django.core.exceptions import ImproperlyConfigured

    from config.celery import _serve_roles

    def worker(roles: list[str]) -> set[str]:
        settings.CLUSTERSIM_WORKER_QUEUES = roles
        queues = Queues(django_settings.CELERY_TASK_QUEUES)
        _serve_roles(
            "w@host", SimpleNamespace(app=SimpleNamespace(amqp=SimpleNamespace(queues=queues)))
        )
        return set(queues.consume_from)

    q = django_settings.CLUSTERSIM_QUEUES
    assert worker([]) == set(q.values())  # no roles: all three (or celery worker -Q)
    assert worker(["sim"]) == {q["sim"]}
    assert worker(["parse", "housekeeping"]) == {q["parse"], q["housekeeping"]}
    with pytest.raises(ImproperlyConfigured, match="unknown role"):
        worker(["simulation"])


# -- point 7: fair share -----------------------------------------------------------------------


def _queued(owner: Any, make_experiment: Any, n: int, **kw: Any) -> Experiment:
    # the random placement draws from the seed: one run per seed
    return make_experiment(owner, seeds=tuple(range(n)), placement="random", **kw)


def _in_flight(owner: Any) -> int:
    return Run.objects.filter(
        owner=owner, state=RunState.QUEUED, dispatched_at__isnull=False
    ).count()


def test_the_dispatcher_sends_a_few_runs_per_user_and_the_rest_as_runs_start(
    owner: Any, make_experiment: Any, broker: Broker, settings: Any
) -> None:
    settings.CLUSTERSIM_DISPATCH_PER_USER = 2
    exp = _queued(owner, make_experiment, 40)
    ids = list(exp.runs.order_by("pk").values_list("pk", flat=True))
    assert dispatch.dispatch() == 2
    assert _sent(broker) == ids[:2]
    assert dispatch.dispatch() == 0  # again (a redelivered trigger): nothing more
    assert _sent(broker) == []
    # a worker takes one (claim): the next is sent, and only one
    runner.claim(ids[0], "w")
    assert dispatch.dispatch([owner.pk]) == 1
    assert _sent(broker) == [ids[2]]
    assert _in_flight(owner) == 2


def test_another_users_first_run_is_not_behind_the_first_users_hundreds(
    owner: Any, other: Any, make_experiment: Any, broker: Broker, settings: Any
) -> None:
    settings.CLUSTERSIM_DISPATCH_PER_USER = 2
    big = _queued(owner, make_experiment, 300)
    assert dispatch.dispatch() == 2
    big_ids = list(big.runs.order_by("pk").values_list("pk", flat=True))
    assert _sent(broker) == big_ids[:2]
    small = make_experiment(other)
    (mine,) = small.runs.values_list("pk", flat=True)
    assert dispatch.dispatch([other.pk]) == 1
    # in the simulation queue: the first user's two, then the other user's one; as the
    # first user's runs start, theirs are sent after it
    runner.claim(big_ids[0], "w")
    dispatch.dispatch([owner.pk])
    assert _sent(broker) == [mine, big_ids[2]]


def test_a_pass_over_several_users_is_round_robin(
    owner: Any, other: Any, make_experiment: Any, broker: Broker, settings: Any
) -> None:
    settings.CLUSTERSIM_DISPATCH_PER_USER = 3
    a = list(_queued(owner, make_experiment, 5).runs.order_by("pk").values_list("pk", flat=True))
    b = list(_queued(other, make_experiment, 5).runs.order_by("pk").values_list("pk", flat=True))
    assert dispatch.dispatch() == 6
    assert _sent(broker) == [a[0], b[0], a[1], b[1], a[2], b[2]]


def test_dispatching_while_the_broker_is_down_sends_nothing_and_loses_nothing(
    owner: Any, make_experiment: Any, monkeypatch: Any
) -> None:
    from kombu.exceptions import OperationalError as BrokerDown

    from config.celery import app
    from planner.tasks import simulate_run

    exp = _queued(owner, make_experiment, 3)

    def refused(*args: Any, **kwargs: Any) -> None:
        raise BrokerDown("Error 111 connecting to 127.0.0.1:6379. Connection refused.")

    monkeypatch.setattr(simulate_run, "apply_async", refused)
    app.conf.task_always_eager = False
    try:
        assert dispatch.dispatch() == 0
    finally:
        app.conf.task_always_eager = True
    assert not exp.runs.filter(dispatched_at__isnull=False).exists()


def test_requeued_and_reaped_runs_wait_for_the_dispatcher(
    owner: Any, make_experiment: Any, broker: Broker
) -> None:
    from datetime import timedelta

    from django.utils import timezone

    exp = _queued(owner, make_experiment, 2)
    first, second = exp.runs.order_by("pk")
    dispatch.dispatch()
    broker.purge()
    runner.claim(first.pk, "w")
    Run.objects.filter(pk=first.pk).update(heartbeat=timezone.now() - timedelta(hours=1))
    assert runner.reap_stale_runs()["requeued"] == [first.pk]
    assert Run.objects.get(pk=first.pk).dispatched_at is None
    runner.cancel_runs(Run.objects.filter(pk=second.pk))
    runner.requeue_runs(Run.objects.filter(pk=second.pk))
    assert Run.objects.get(pk=second.pk).dispatched_at is None
    assert dispatch.dispatch() == 2
    assert _sent(broker) == [first.pk, second.pk]


def test_each_claim_dispatches_the_users_next_run(
    owner: Any, make_experiment: Any, settings: Any
) -> None:
    """Eager end to end: one message per user at a time, and every run still ends."""
    from planner.tasks import launch_experiment

    settings.CLUSTERSIM_DISPATCH_PER_USER = 1
    exp = _queued(owner, make_experiment, 5)
    assert launch_experiment.delay(exp.pk).get() == 5
    assert set(exp.runs.values_list("state", flat=True)) == {RunState.SUCCEEDED}
    assert Experiment.objects.get(pk=exp.pk).state == Experiment.State.SUCCEEDED


# -- point 7: per-user limit of queued runs ----------------------------------------------------


def _experiment_body(make_cluster: Any, make_workload: Any, owner: Any, seeds: int) -> Any:
    return {
        "name": "grid",
        "clusters": [make_cluster(owner).pk],
        "workloads": [make_workload(owner).pk],
        "policies": [{"name": "fifo"}],
        "seeds": list(range(seeds)),
        "placement": "random",  # drawn from the seed: one run per seed
    }


def test_creating_past_the_limit_of_queued_runs_is_a_429_and_stores_nothing(
    api: Any, owner: Any, make_cluster: Any, make_workload: Any, settings: Any
) -> None:
    settings.CLUSTERSIM_MAX_QUEUED_RUNS_PER_USER = 5
    body = _experiment_body(make_cluster, make_workload, owner, 3)
    # enqueue nothing: the runs stay queued (no worker here)
    r = api.post("/api/v1/experiments/", body, format="json")
    assert r.status_code == 202
    r = api.post("/api/v1/experiments/", body, format="json")
    assert r.status_code == 429
    assert "at most 5 runs may be queued per user (you have 3)" in r.json()["detail"]
    assert Experiment.objects.filter(owner=owner).count() == 1
    assert Run.objects.filter(owner=owner).count() == 3
    # within the limit it is accepted
    r = api.post("/api/v1/experiments/", {**body, "seeds": [0, 1]}, format="json")
    assert r.status_code == 202


def test_the_limit_is_per_user(
    api: Any,
    other_api: Any,
    owner: Any,
    other: Any,
    make_cluster: Any,
    make_workload: Any,
    settings: Any,
) -> None:
    settings.CLUSTERSIM_MAX_QUEUED_RUNS_PER_USER = 3
    assert (
        api.post(
            "/api/v1/experiments/",
            _experiment_body(make_cluster, make_workload, owner, 3),
            format="json",
        ).status_code
        == 202
    )
    r = other_api.post(
        "/api/v1/experiments/",
        _experiment_body(make_cluster, make_workload, other, 3),
        format="json",
    )
    assert r.status_code == 202


def test_rerunning_past_the_limit_is_a_429_and_requeues_nothing(
    api: Any, owner: Any, make_experiment: Any, settings: Any
) -> None:
    settings.CLUSTERSIM_MAX_QUEUED_RUNS_PER_USER = 3
    done = make_experiment(owner, seeds=(0, 1), placement="random")
    runner.cancel_runs(done.runs.all())
    make_experiment(owner, seeds=(0, 1), placement="random", name="queued")  # two queued
    r = api.post(f"/api/v1/experiments/{done.pk}/rerun/")
    assert r.status_code == 429
    assert set(done.runs.values_list("state", flat=True)) == {RunState.CANCELLED}
    settings.CLUSTERSIM_MAX_QUEUED_RUNS_PER_USER = 4
    assert api.post(f"/api/v1/experiments/{done.pk}/rerun/").status_code == 202


def test_the_experiment_form_shows_the_limit_as_a_form_error(
    web: Any, owner: Any, make_cluster: Any, make_workload: Any, settings: Any
) -> None:
    settings.CLUSTERSIM_MAX_QUEUED_RUNS_PER_USER = 1
    cluster, workload = make_cluster(owner), make_workload(owner)
    data = {
        "name": "too many",
        "clusters": [cluster.pk],
        "workloads": [workload.pk],
        "policies": ["fifo"],
        "load_factors": "1",
        "seeds": "0, 1",
        "placement": "random",
        "compat": "",
    }
    r = web.post("/experiments/new/", data)
    assert r.status_code == 200
    assert "at most 1 runs may be queued per user" in r.content.decode()
    assert not Experiment.objects.filter(owner=owner).exists()


def test_the_limit_can_be_turned_off(owner: Any, settings: Any) -> None:
    settings.CLUSTERSIM_MAX_QUEUED_RUNS_PER_USER = 0
    services.check_queued_runs(owner.pk, 10**6)
