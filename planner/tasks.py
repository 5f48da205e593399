"""Celery tasks. Each takes primary keys only and delegates to a plain function.

Every task is idempotent: the function it calls claims its row with a conditional update and
does nothing when the row is not (or no longer) claimable, so a redelivered message is harmless.
``acks_late`` with ``reject_on_worker_lost`` (settings) means a message whose worker died is
delivered again; retries happen only for :data:`TRANSIENT_ERRORS`.
"""

from __future__ import annotations

import logging
import os
import socket

from celery import Task, group, shared_task
from django.conf import settings
from django.db import InterfaceError, OperationalError

from planner import parsing, runner
from planner.models import Run

log = logging.getLogger(__name__)

#: Errors worth retrying: the database or the broker went away for a moment.
TRANSIENT_ERRORS: tuple[type[BaseException], ...] = (OperationalError, InterfaceError)


def _worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


@shared_task(
    name="planner.parse_workload",
    autoretry_for=TRANSIENT_ERRORS,
    retry_backoff=2,
    max_retries=5,
    soft_time_limit=settings.CLUSTERSIM_PARSE_SOFT_TIME_LIMIT_S,
    time_limit=settings.CLUSTERSIM_PARSE_HARD_TIME_LIMIT_S,
)
def parse_workload(workload_id: int) -> str:
    """Parse an uploaded trace (see :func:`planner.parsing.parse_workload`)."""
    return parsing.parse_workload(workload_id)


@shared_task(
    bind=True,
    name="planner.simulate_run",
    autoretry_for=TRANSIENT_ERRORS,
    retry_backoff=2,
    max_retries=5,
    soft_time_limit=settings.CLUSTERSIM_RUN_SOFT_TIME_LIMIT_S,
    time_limit=settings.CLUSTERSIM_RUN_HARD_TIME_LIMIT_S,
)
def simulate_run(self: Task, run_id: int) -> str:
    """Simulate one run (see :func:`planner.runner.execute_run`).

    On its last retry a transient error fails the run with the reason rather than giving it
    back to a queue that no message will take it from again.
    """
    last_try = self.request.retries >= (self.max_retries or 0)
    outcome = runner.execute_run(run_id, worker=_worker_name(), last_try=last_try)
    log.info("run %s: %s", run_id, outcome)
    return outcome


@shared_task(name="planner.launch_experiment", autoretry_for=TRANSIENT_ERRORS, max_retries=5)
def launch_experiment(experiment_id: int) -> int:
    """Fan the experiment's queued runs out as a group of ``simulate_run`` tasks.

    The final step (marking the experiment done) is taken by whichever run ends last, see
    :func:`planner.runner.refresh_experiment`.
    """
    ids = list(
        Run.objects.filter(experiment_id=experiment_id, state="queued").values_list("pk", flat=True)
    )
    if ids:
        group(simulate_run.si(pk) for pk in ids).apply_async()
    runner.refresh_experiment(experiment_id)
    return len(ids)


@shared_task(name="planner.reap_stale_runs", autoretry_for=TRANSIENT_ERRORS, max_retries=3)
def reap_stale_runs() -> dict[str, list[int]]:
    """Periodic (beat): requeue or fail runs whose worker stopped beating."""
    out = runner.reap_stale_runs()
    for pk in out["requeued"]:
        simulate_run.delay(pk)
    if out["requeued"] or out["failed"]:
        log.warning("reaper: %s", out)
    return out
