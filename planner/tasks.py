"""Celery tasks. Each takes primary keys only and delegates to a plain function.

Every task is idempotent: the function it calls claims its row with a conditional update and
does nothing when the row is not (or no longer) claimable, so a redelivered or duplicated
message is harmless. ``acks_late`` with ``reject_on_worker_lost`` (settings) means a message
whose worker died is delivered again; retries happen only for :data:`TRANSIENT_ERRORS`.

Queues (``CELERY_TASK_ROUTES``): ``simulate_run`` on ``<prefix>.sim``; ``parse_workload`` on
``<prefix>.parse``; the reaper, the sweeper and the dispatcher on ``<prefix>.housekeeping``.
"""

from __future__ import annotations

import logging
import os
import socket

from celery import Task, shared_task
from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.db import InterfaceError, OperationalError, connection

from planner import dispatch, parsing, runner, studies
from planner.models import Experiment, Run
from planner.resources import memory_limit

log = logging.getLogger(__name__)

#: Errors worth retrying: the database or the broker went away for a moment.
TRANSIENT_ERRORS: tuple[type[BaseException], ...] = (OperationalError, InterfaceError)

#: Housekeeping tasks are short; one that hangs must not hold its worker.
HOUSEKEEPING = {"soft_time_limit": 120, "time_limit": 150}


def _worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


@shared_task(
    bind=True,
    name="planner.parse_workload",
    autoretry_for=TRANSIENT_ERRORS,
    retry_backoff=2,
    max_retries=5,
    soft_time_limit=settings.CLUSTERSIM_PARSE_SOFT_TIME_LIMIT_S,
    time_limit=settings.CLUSTERSIM_PARSE_HARD_TIME_LIMIT_S,
)
def parse_workload(self: Task, workload_id: int) -> str:
    """Parse an uploaded trace or build a workload (see :func:`planner.parsing.parse_workload`)
    within ``CLUSTERSIM_PARSE_MAX_MEMORY_BYTES`` of memory.

    Whatever stops the parse, the workload does not stay ``parsing``: a time limit, running
    out of memory or any other error fails it with the reason (the worker lives on); a
    transient database error gives it back for the retry (after the last one, for the sweeper
    to send again).
    """
    last_try = self.request.retries >= (self.max_retries or 0)
    try:
        with memory_limit(settings.CLUSTERSIM_PARSE_MAX_MEMORY_BYTES):
            return parsing.parse_workload(workload_id)
    except TRANSIENT_ERRORS as exc:
        why = f"transient error, will retry: {exc}"
        if last_try:
            why = f"transient error, retries exhausted; queued again: {exc}"
        _give_back(workload_id, why, last_try)
        raise
    except SoftTimeLimitExceeded:
        reason = (
            f"parsing took longer than the time limit "
            f"({settings.CLUSTERSIM_PARSE_SOFT_TIME_LIMIT_S} s)"
        )
    except MemoryError:
        limit = settings.CLUSTERSIM_PARSE_MAX_MEMORY_BYTES
        bound = f"{limit / 2**30:.3g} GiB" if limit > 0 else "the memory available"
        reason = (
            f"parsing needed more memory than its bound of {bound} "
            "(CLUSTERSIM_PARSE_MAX_MEMORY_BYTES): the file is too large or expands too much"
        )
    except Exception as exc:
        log.exception("workload %s: parse failed", workload_id)
        reason = f"internal error: {type(exc).__name__}: {exc}"
    _reset_connection()
    parsing.fail_workload(workload_id, reason)
    log.warning("workload %s failed: %s", workload_id, reason)
    return "failed"


def _reset_connection() -> None:
    """Drop a database connection an interrupted query may have left mid-protocol (not inside
    a transaction of the caller's, e.g. a test's)."""
    if not connection.in_atomic_block:
        connection.close()


def _give_back(workload_id: int, reason: str, last_try: bool) -> None:
    import time

    for i in range(5):
        try:
            parsing.release_workload(workload_id, reason, last_try=last_try)
            return
        except TRANSIENT_ERRORS:
            time.sleep(0.2 * (i + 1))
    # still unreachable: the workload stays "parsing" until the sweeper fails it


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

    Once the run is claimed, the user's next queued run is dispatched (a fair share of the
    simulation queue, :mod:`planner.dispatch`). After its last retry a transient error gives
    the run back to the dispatcher (it is sent again once the database answers).
    """
    last_try = self.request.retries >= (self.max_retries or 0)
    outcome = runner.execute_run(
        run_id, worker=_worker_name(), last_try=last_try, on_claim=_dispatch_after_claim
    )
    log.info("run %s: %s", run_id, outcome)
    return outcome


def _dispatch_after_claim(run: Run) -> None:
    """The user has one message fewer in flight: send the next (never fails the run)."""
    if simulate_run.app.conf.task_always_eager:
        dispatch.dispatch([run.owner_id])
        return
    try:
        dispatch.dispatch([run.owner_id])
    except Exception:  # the sweeper dispatches too
        log.exception("run %s: dispatching the next run failed", run.pk)


@shared_task(
    name="planner.dispatch_runs", autoretry_for=TRANSIENT_ERRORS, max_retries=3, **HOUSEKEEPING
)
def dispatch_runs(user_id: int | None = None) -> int:
    """Send queued runs to the simulation queue, a fair share per user (:mod:`planner.dispatch`).

    Returns the number of messages sent.
    """
    return dispatch.dispatch(None if user_id is None else [user_id])


@shared_task(
    name="planner.launch_experiment", autoretry_for=TRANSIENT_ERRORS, max_retries=5, **HOUSEKEEPING
)
def launch_experiment(experiment_id: int) -> int:
    """Dispatch the experiment's owner's queued runs (kept for messages sent before the
    dispatcher existed; new experiments are dispatched directly).

    The final step (marking the experiment done) is taken by whichever run ends last, see
    :func:`planner.runner.refresh_experiment`.
    """
    owner = Experiment.objects.filter(pk=experiment_id).values_list("owner_id", flat=True).first()
    sent = dispatch.dispatch([owner]) if owner is not None else 0
    runner.refresh_experiment(experiment_id)
    return sent


@shared_task(
    name="planner.reap_stale_runs", autoretry_for=TRANSIENT_ERRORS, max_retries=3, **HOUSEKEEPING
)
def reap_stale_runs() -> dict[str, list[int]]:
    """Periodic (beat): requeue or fail runs whose worker stopped beating, and dispatch."""
    out = runner.reap_stale_runs()
    if out["requeued"] or out["failed"]:
        log.warning("reaper: %s", out)
    if out["requeued"]:
        dispatch.dispatch(
            set(Run.objects.filter(pk__in=out["requeued"]).values_list("owner_id", flat=True))
        )
    return out


@shared_task(name="planner.sweep", autoretry_for=TRANSIENT_ERRORS, max_retries=3, **HOUSEKEEPING)
def sweep() -> dict[str, list[int]]:
    """Periodic (beat): fail parses whose worker is gone, send again the messages that look
    lost, dispatch (:func:`planner.dispatch.sweep`); the same for studies
    (:func:`planner.studies.sweep`)."""
    out = dispatch.sweep()
    out.update(studies.sweep())
    if any(out.values()):
        log.warning("sweeper: %s", out)
    return out


@shared_task(
    name="planner.advance_study",
    autoretry_for=TRANSIENT_ERRORS,
    retry_backoff=2,
    max_retries=5,
    soft_time_limit=settings.CLUSTERSIM_RUN_SOFT_TIME_LIMIT_S,
    time_limit=settings.CLUSTERSIM_RUN_HARD_TIME_LIMIT_S,
)
def advance_study(study_id: int) -> str:
    """Ask a study's next batch, or move it to its next phase (:func:`planner.studies.advance`)."""
    outcome = studies.advance(study_id)
    log.info("study %s: %s", study_id, outcome)
    return outcome


@shared_task(
    name="planner.evaluate_candidate",
    autoretry_for=TRANSIENT_ERRORS,
    retry_backoff=2,
    max_retries=5,
    soft_time_limit=settings.CLUSTERSIM_RUN_SOFT_TIME_LIMIT_S,
    time_limit=settings.CLUSTERSIM_RUN_HARD_TIME_LIMIT_S,
)
def evaluate_candidate(evaluation_id: int) -> str:
    """Simulate one candidate of a study (:func:`planner.studies.evaluate`)."""
    outcome = studies.evaluate(evaluation_id, _worker_name())
    log.info("study evaluation %s: %s", evaluation_id, outcome)
    return outcome
