"""Nothing stranded: parse failures of every kind, the sweeper, lost messages, the broker away,
edits racing a worker, the queues and the fair-share dispatcher (issue 11, points 3 to 7).

Tasks run eagerly (test settings) except where a test sends real messages: then ``broker``
switches to the in-memory transport (nothing consumes it; the test reads the queues).
"""

from __future__ import annotations

import io
import resource
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.db import OperationalError
from django.utils import timezone

from planner import dispatch, parsing, runner
from planner.models import Experiment, Run, RunState, Workload, WorkloadStatus
from tests.django.conftest import GAVEL_TRACE, PHILLY_SAMPLE

pytestmark = pytest.mark.django_db

HOUR = timedelta(hours=1)


def _pending(owner: Any, make_workload: Any) -> Workload:
    return make_workload(owner, path=PHILLY_SAMPLE, name="philly", parse=False)


def _reader(monkeypatch: Any, fake: Any) -> None:
    import clustersim.traces

    monkeypatch.setattr(clustersim.traces, "read_trace", fake)


# -- point 3: a parse never stays "parsing" ------------------------------------------------------


@pytest.mark.parametrize(
    ("error", "says"),
    [
        ("soft time limit", "longer than the time limit (900 s)"),
        ("memory", "more memory than its bound of 2 GiB"),
        ("bug", "internal error: RuntimeError: a bug in a reader"),
    ],
)
def test_whatever_stops_a_parse_fails_the_workload_with_the_reason(
    owner: Any, make_workload: Any, monkeypatch: Any, error: str, says: str
) -> None:
    from celery.exceptions import SoftTimeLimitExceeded

    from planner.tasks import parse_workload

    def stopped(*args: Any, **kwargs: Any) -> Any:
        if error == "soft time limit":
            raise SoftTimeLimitExceeded()
        if error == "memory":
            raise MemoryError()
        raise RuntimeError("a bug in a reader")

    w = _pending(owner, make_workload)
    _reader(monkeypatch, stopped)
    assert parse_workload.delay(w.pk).get() == "failed"
    w.refresh_from_db()
    assert w.status == WorkloadStatus.FAILED
    assert says in w.error
    assert w.parsed_at is not None


def test_a_parse_past_its_memory_bound_fails_and_the_process_keeps_its_limits(
    owner: Any, make_workload: Any, monkeypatch: Any, settings: Any
) -> None:
    """A real allocation past CLUSTERSIM_PARSE_MAX_MEMORY_BYTES: MemoryError in the task (not
    the kernel's OOM killer in the worker), the workload failed with the reason."""
    from clustersim.traces import read_trace
    from planner.tasks import parse_workload

    settings.CLUSTERSIM_PARSE_MAX_MEMORY_BYTES = 128 * 2**20
    held: list[bytearray] = []

    def hungry(*args: Any, **kwargs: Any) -> Any:
        for _ in range(16):  # 512 MiB in all: four times the bound
            held.append(bytearray(32 * 2**20))
        return read_trace(*args, **kwargs)

    before = resource.getrlimit(resource.RLIMIT_DATA)
    w = _pending(owner, make_workload)
    _reader(monkeypatch, hungry)
    try:
        assert parse_workload.delay(w.pk).get() == "failed"
    finally:
        held.clear()
    assert resource.getrlimit(resource.RLIMIT_DATA) == before
    w.refresh_from_db()
    assert w.status == WorkloadStatus.FAILED
    assert "more memory than its bound of 0.125 GiB" in w.error
    # within the bound, the same task parses as usual
    held_small: list[bytearray] = []

    def modest(*args: Any, **kwargs: Any) -> Any:
        held_small.append(bytearray(16 * 2**20))
        return read_trace(*args, **kwargs)

    w2 = _pending(owner, make_workload)
    _reader(monkeypatch, modest)
    assert parse_workload.delay(w2.pk).get() == "ready", Workload.objects.get(pk=w2.pk).error


def test_memory_limit_bounds_growth_and_restores_the_limit() -> None:
    from planner.resources import data_bytes, memory_limit

    before = resource.getrlimit(resource.RLIMIT_DATA)
    with memory_limit(64 * 2**20) as limit:
        assert limit is not None
        assert limit <= (data_bytes() or 0) + 64 * 2**20
        with pytest.raises(MemoryError):
            bytearray(256 * 2**20)
    assert resource.getrlimit(resource.RLIMIT_DATA) == before
    with memory_limit(0) as limit:
        assert limit is None


def test_a_transient_error_gives_the_workload_back_to_the_retry(
    owner: Any, make_workload: Any, monkeypatch: Any
) -> None:
    from clustersim.traces import read_trace
    from planner.tasks import parse_workload

    calls = {"n": 0}

    def flaky(*args: Any, **kwargs: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == 1:
            raise OperationalError("server closed the connection unexpectedly")
        return read_trace(*args, **kwargs)

    from celery.exceptions import Retry

    w = _pending(owner, make_workload)
    _reader(monkeypatch, flaky)
    with pytest.raises(Retry):  # eager: the retry is ours to run
        parse_workload.delay(w.pk)
    w.refresh_from_db()
    assert w.status == WorkloadStatus.PENDING and "will retry" in w.error
    assert w.dispatched_at is not None  # the retry is the message on its way
    assert parse_workload.apply(args=(w.pk,), retries=1).get() == "ready"
    w.refresh_from_db()
    assert (w.status, calls["n"]) == (WorkloadStatus.READY, 2)
    assert w.parse_attempts == 1  # a database hiccup does not use up an attempt


def test_after_the_last_retry_the_workload_waits_for_the_sweeper_then_parses(
    owner: Any, make_workload: Any, monkeypatch: Any, settings: Any
) -> None:
    from clustersim.traces import read_trace
    from planner.tasks import parse_workload

    def down(*args: Any, **kwargs: Any) -> Any:
        raise OperationalError("the database system is starting up")

    w = _pending(owner, make_workload)
    _reader(monkeypatch, down)
    with pytest.raises(OperationalError):
        parse_workload.apply(args=(w.pk,), retries=parse_workload.max_retries)
    w.refresh_from_db()
    assert w.status == WorkloadStatus.PENDING and w.dispatched_at is None
    assert "retries exhausted" in w.error
    _reader(monkeypatch, read_trace)  # the database is back
    Workload.objects.filter(pk=w.pk).update(created=timezone.now() - HOUR)
    assert dispatch.sweep()["workloads_resent"] == [w.pk]
    w.refresh_from_db()
    assert w.status == WorkloadStatus.READY


def test_a_parse_that_always_meets_the_error_is_failed_after_the_last_attempt(
    owner: Any, make_workload: Any, monkeypatch: Any, settings: Any
) -> None:
    from planner.tasks import parse_workload

    settings.CLUSTERSIM_RUN_MAX_ATTEMPTS = 2

    def down(*args: Any, **kwargs: Any) -> Any:
        raise OperationalError("out of memory for query result")

    w = _pending(owner, make_workload)
    _reader(monkeypatch, down)
    for _ in range(2):
        with pytest.raises(OperationalError):
            parse_workload.apply(args=(w.pk,), retries=parse_workload.max_retries)
    assert parse_workload.apply(args=(w.pk,), retries=parse_workload.max_retries).get() == (
        "skipped"
    )
    w.refresh_from_db()
    assert w.status == WorkloadStatus.FAILED
    assert "gave up after 2 attempts" in w.error and "out of memory for query" in w.error


def test_the_sweeper_fails_a_parse_whose_worker_died(owner: Any, make_workload: Any) -> None:
    w = _pending(owner, make_workload)
    assert parsing.claim_workload(w.pk)
    assert dispatch.sweep()["workloads_failed"] == []  # still within its time limit
    Workload.objects.filter(pk=w.pk).update(parse_started=timezone.now() - HOUR)
    assert dispatch.sweep()["workloads_failed"] == [w.pk]
    w.refresh_from_db()
    assert w.status == WorkloadStatus.FAILED
    assert "its worker was lost" in w.error and "960 s" in w.error
    assert dispatch.sweep()["workloads_failed"] == []


def test_the_sweeper_sends_a_pending_workload_whose_message_was_lost(
    owner: Any, make_workload: Any
) -> None:
    w = _pending(owner, make_workload)
    Workload.objects.filter(pk=w.pk).update(dispatched_at=timezone.now())
    assert dispatch.sweep()["workloads_resent"] == []  # sent just now: not lost (yet)
    Workload.objects.filter(pk=w.pk).update(dispatched_at=timezone.now() - 2 * HOUR)
    assert dispatch.sweep()["workloads_resent"] == [w.pk]
    assert Workload.objects.get(pk=w.pk).status == WorkloadStatus.READY


# -- point 4: an edit saves only what it edits ---------------------------------------------------


def test_editing_a_workload_while_it_parses_keeps_the_parse_result(
    api: Any, owner: Any, make_workload: Any, monkeypatch: Any
) -> None:
    """The view reads the row, the worker stores its result, the view saves the edit."""
    from rest_framework.generics import GenericAPIView

    w = _pending(owner, make_workload)
    real = GenericAPIView.get_object

    def read_then_worker_finishes(self: Any) -> Any:
        obj = real(self)
        parsing.parse_workload(w.pk)  # the worker writes while the request holds `obj`
        return obj

    monkeypatch.setattr(GenericAPIView, "get_object", read_then_worker_finishes)
    r = api.patch(f"/api/v1/workloads/{w.pk}/", {"description": "Q3 jobs"}, format="json")
    assert r.status_code == 200
    assert (r.json()["status"], r.json()["description"]) == ("ready", "Q3 jobs")
    w.refresh_from_db()
    assert (w.status, w.description) == (WorkloadStatus.READY, "Q3 jobs")
    assert w.summary is not None and w.jobs_id is not None


def test_editing_a_clusters_name_does_not_write_back_its_spec(
    api: Any, owner: Any, make_cluster: Any, monkeypatch: Any
) -> None:
    from rest_framework.generics import GenericAPIView

    from planner.models import Cluster

    c = make_cluster(owner)
    real = GenericAPIView.get_object

    def read_then_changed(self: Any) -> Any:
        obj = real(self)
        Cluster.objects.filter(pk=c.pk).update(description="written meanwhile")
        return obj

    monkeypatch.setattr(GenericAPIView, "get_object", read_then_changed)
    r = api.patch(f"/api/v1/clusters/{c.pk}/", {"name": "renamed"}, format="json")
    assert r.status_code == 200
    c.refresh_from_db()
    assert (c.name, c.description) == ("renamed", "written meanwhile")


def test_the_admin_saves_only_the_changed_fields(owner: Any, make_workload: Any) -> None:
    from types import SimpleNamespace

    from django.contrib.admin.sites import site

    w = _pending(owner, make_workload)
    stale = Workload.objects.get(pk=w.pk)
    parsing.parse_workload(w.pk)  # the worker finishes after the admin page was loaded
    stale.description = "edited in the admin"
    form = SimpleNamespace(changed_data=["description"])
    site._registry[Workload].save_model(None, stale, form, True)
    w.refresh_from_db()
    assert (w.status, w.description) == (WorkloadStatus.READY, "edited in the admin")


# -- point 5: lost messages, the broker away -----------------------------------------------------


def test_the_sweeper_sends_again_a_queued_run_whose_message_was_lost(
    owner: Any, make_experiment: Any
) -> None:
    run = make_experiment(owner).runs.get()
    Run.objects.filter(pk=run.pk).update(dispatched_at=timezone.now())
    assert dispatch.sweep()["runs_resent"] == []
    assert Run.objects.get(pk=run.pk).state == RunState.QUEUED
    Run.objects.filter(pk=run.pk).update(dispatched_at=timezone.now() - 2 * HOUR)
    assert dispatch.sweep()["runs_resent"] == [run.pk]
    assert Run.objects.get(pk=run.pk).state == RunState.SUCCEEDED


def test_a_run_overtaken_by_a_later_one_counts_as_lost(
    owner: Any, make_experiment: Any, settings: Any
) -> None:
    """Queues are first in, first out: a run sent after this one started a while ago, so this
    one's message is gone (long before CLUSTERSIM_RESEND_AFTER_S)."""
    exp = make_experiment(owner, seeds=(0, 1), placement="random")  # one run per seed
    first, second = exp.runs.order_by("pk")
    now = timezone.now()
    Run.objects.filter(pk=first.pk).update(dispatched_at=now - timedelta(minutes=5))
    Run.objects.filter(pk=second.pk).update(dispatched_at=now - timedelta(minutes=4))
    runner.claim(second.pk, "w")
    assert dispatch.resend_lost_runs() == []  # it started just now: the first may follow
    Run.objects.filter(pk=second.pk).update(started_at=now - timedelta(minutes=3))
    assert dispatch.resend_lost_runs() == [first.pk]
    assert Run.objects.get(pk=first.pk).dispatched_at is None  # for the dispatcher to send


def test_a_run_whose_claim_met_a_database_outage_is_not_left_queued(
    owner: Any, make_experiment: Any, monkeypatch: Any
) -> None:
    """PostgreSQL away while the task retried: every try failed before claiming the run."""
    from planner.tasks import simulate_run

    run = make_experiment(owner).runs.get()
    real_claim = runner.claim

    def down(*args: Any, **kwargs: Any) -> Any:
        raise OperationalError("connection refused")

    monkeypatch.setattr(runner, "claim", down)
    Run.objects.filter(pk=run.pk).update(dispatched_at=timezone.now() - 2 * HOUR)
    with pytest.raises(OperationalError):  # the last retry
        simulate_run.apply(args=(run.pk,), retries=simulate_run.max_retries)
    assert Run.objects.get(pk=run.pk).state == RunState.QUEUED
    monkeypatch.setattr(runner, "claim", real_claim)  # the database is back
    assert dispatch.sweep()["runs_resent"] == [run.pk]
    assert Run.objects.get(pk=run.pk).state == RunState.SUCCEEDED


@pytest.fixture
def broker_down(settings: Any) -> Iterator[None]:
    """Celery not eager, its broker a Redis port where nothing listens (connections refused)."""
    import socket

    from config.celery import app

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # free, and nothing will listen on it
    saved = (app.conf.task_always_eager, app.conf.broker_url, app.conf.broker_transport_options)
    app.conf.task_always_eager = False
    app.conf.broker_url = f"redis://127.0.0.1:{port}/0"
    app.conf.broker_transport_options = {"socket_connect_timeout": 2}
    _reset_pools(app)
    try:
        yield
    finally:
        app.conf.task_always_eager, app.conf.broker_url, app.conf.broker_transport_options = saved
        _reset_pools(app)


def _reset_pools(app: Any) -> None:
    """Forget the connection and producer pools (kombu's registries and the app's), so that
    the next publish connects to the broker now configured."""
    import kombu.pools

    kombu.pools.reset()
    app._pool = None
    app.amqp._producer_pool = None


def test_creating_while_the_broker_is_down_stores_and_the_sweeper_starts_it_later(
    api: Any,
    owner: Any,
    make_cluster: Any,
    make_workload: Any,
    broker_down: None,
    django_capture_on_commit_callbacks: Any,
) -> None:
    from config.celery import app

    cluster, ready = make_cluster(owner), make_workload(owner)
    body = {
        "name": "while redis is down",
        "clusters": [cluster.pk],
        "workloads": [ready.pk],
        "policies": [{"name": "fifo"}],
        "seeds": [0, 1],
        "placement": "random",  # drawn from the seed: one run per seed
    }
    with django_capture_on_commit_callbacks(execute=True):
        r = api.post("/api/v1/experiments/", body, format="json")
        f = io.BytesIO(GAVEL_TRACE.read_bytes())
        f.name = "gavel.trace"
        u = api.post("/api/v1/workloads/", {"file": f}, format="multipart")
    # accepted and stored once, waiting in the database: nothing for a client to retry
    assert (r.status_code, u.status_code) == (202, 202)
    exp = Experiment.objects.get(pk=r.json()["id"])
    assert Experiment.objects.filter(owner=owner).count() == 1
    assert [(x.state, x.dispatched_at) for x in exp.runs.all()] == [(RunState.QUEUED, None)] * 2
    w = Workload.objects.get(pk=u.json()["id"])
    assert (w.status, w.dispatched_at) == (WorkloadStatus.PENDING, None)
    # the sweeper cannot send either while the broker is away, and loses nothing
    Workload.objects.filter(pk=w.pk).update(created=timezone.now() - HOUR)
    assert dispatch.sweep()["workloads_resent"] == []
    assert Workload.objects.get(pk=w.pk).dispatched_at is None
    assert not exp.runs.filter(dispatched_at__isnull=False).exists()
    # the broker is back (here: eager mode runs what is sent)
    app.conf.task_always_eager = True
    assert dispatch.sweep()["workloads_resent"] == [w.pk]
    assert Workload.objects.get(pk=w.pk).status == WorkloadStatus.READY
    assert set(exp.runs.values_list("state", flat=True)) == {RunState.SUCCEEDED}
    assert Experiment.objects.get(pk=exp.pk).state == Experiment.State.SUCCEEDED


def test_an_upload_form_while_the_broker_is_down_is_stored_for_the_sweeper(
    web: Any, owner: Any, broker_down: None, django_capture_on_commit_callbacks: Any
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        f = io.BytesIO(GAVEL_TRACE.read_bytes())
        f.name = "gavel.trace"
        r = web.post("/workloads/upload/", {"name": "g", "file": f, "format": ""})
    assert r.status_code == 302
    w = Workload.objects.get(owner=owner)
    assert (w.status, w.dispatched_at) == (WorkloadStatus.PENDING, None)
