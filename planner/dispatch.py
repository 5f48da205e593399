"""Sending work to the queues: the fair-share run dispatcher and the sweeper of lost messages.

The database is the queue of record; broker messages only wake workers up. Nothing here needs
the broker to be reachable when an object is created: what could not be sent is sent later.

Runs
    A queued run is either *waiting* (``dispatched_at`` null: only the database knows it) or
    *sent* (``dispatched_at`` set: a ``simulate_run`` message is on its way). :func:`dispatch`
    keeps at most ``CLUSTERSIM_DISPATCH_PER_USER`` sent-and-not-started runs per user and sends
    the others as runs start, round-robin across users, so a user's first run waits behind a
    few messages of each other user, never behind another user's 500. It runs after an
    experiment is created or re-run, after each claim (a worker took one of the user's runs:
    there is room again), and from the reaper and the sweeper.

Workloads
    A pending workload's parse message is sent on commit (:func:`send_workload`);
    ``dispatched_at`` null means it was not sent (the broker was away) and the sweeper sends it.

The sweeper (:func:`sweep`, periodic on the housekeeping queue)
    - fails workloads ``parsing`` for longer than the parse's hard time limit (its worker was
      killed or died: nothing else would ever end them);
    - sends again the messages of pending workloads and queued runs that look lost: sent more
      than ``CLUSTERSIM_STALE_AFTER_S`` ago and not taken although the queue is empty, or
      although something sent after them has started (queues are first in, first out), or
      sent more than ``CLUSTERSIM_RESEND_AFTER_S`` ago whatever the queue holds. A duplicate is
      harmless: claims are conditional;
    - dispatches.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import Count, Max, Q
from django.utils import timezone

from planner.models import Run, RunState, Workload, WorkloadStatus

log = logging.getLogger(__name__)

_local = threading.local()


def _eager() -> bool:
    from config.celery import app

    return bool(app.conf.task_always_eager)


def broker_errors() -> tuple[type[BaseException], ...]:
    """What a publish raises when the broker cannot be reached."""
    from kombu.exceptions import OperationalError as BrokerUnavailable

    return (BrokerUnavailable, ConnectionError, TimeoutError)


def _send(task: Any, arg: int) -> bool:
    """Publish ``task(arg)``; ``False`` (logged) if the broker cannot be reached.

    In eager mode (tests) the task runs here and its exceptions propagate.
    """
    if _eager():
        task.apply_async((arg,))
        return True
    try:
        task.apply_async((arg,))
    except broker_errors() as exc:
        log.warning("could not send %s(%s), the sweeper will: %s", task.name, arg, exc)
        return False
    return True


# -- workloads -----------------------------------------------------------------------------------


def send_workload(workload_id: int) -> bool:
    """Send the pending workload's parse message; ``False`` if the broker is away (it stays
    pending with ``dispatched_at`` null, and the sweeper sends it)."""
    from planner.tasks import parse_workload

    stamp = timezone.now()
    mine = Workload.objects.filter(pk=workload_id, status=WorkloadStatus.PENDING)
    mine.update(dispatched_at=stamp)
    if _send(parse_workload, workload_id):
        return True
    mine.filter(dispatched_at=stamp).update(dispatched_at=None)
    return False


def fail_abandoned_parses() -> list[int]:
    """Fail workloads parsing for longer than the hard time limit (their worker is gone)."""
    limit = settings.CLUSTERSIM_PARSE_HARD_TIME_LIMIT_S
    before = timezone.now() - timedelta(seconds=limit)
    failed = []
    for pk in Workload.objects.filter(
        status=WorkloadStatus.PARSING, parse_started__lt=before
    ).values_list("pk", flat=True):
        if Workload.objects.filter(
            pk=pk, status=WorkloadStatus.PARSING, parse_started__lt=before
        ).update(
            status=WorkloadStatus.FAILED,
            error=(
                "parsing stopped without a result: its worker was lost (killed, out of memory, "
                f"or past the hard time limit of {limit} s)"
            ),
            parsed_at=timezone.now(),
        ):
            failed.append(pk)
    return failed


def resend_lost_workloads() -> list[int]:
    """Send again the parse messages of pending workloads that look lost (or were never sent)."""
    now = timezone.now()
    grace = now - timedelta(seconds=settings.CLUSTERSIM_STALE_AFTER_S)
    pending = Workload.objects.filter(status=WorkloadStatus.PENDING)
    unsent = Q(dispatched_at__isnull=True, created__lt=grace)
    sent = pending.filter(dispatched_at__lt=grace)
    lost = Q(pk__in=[])
    if sent.exists():
        frontier = Workload.objects.filter(
            status=WorkloadStatus.PARSING, parse_started__lt=grace
        ).aggregate(t=Max("dispatched_at"))["t"]
        lost = _lost_condition("parse", frontier, now)
    resent = []
    for pk, stamp in pending.filter(unsent | (Q(dispatched_at__lt=grace) & lost)).values_list(
        "pk", "dispatched_at"
    ):
        # one sweeper sends it: the stamp it saw is a compare-and-swap token
        if Workload.objects.filter(
            pk=pk, status=WorkloadStatus.PENDING, dispatched_at=stamp
        ).update(dispatched_at=None) and send_workload(pk):
            resent.append(pk)
    return resent


# -- runs ----------------------------------------------------------------------------------------


def dispatch(user_ids: Iterable[int] | None = None) -> int:
    """Send queued runs of these users (``None``: every user) up to each user's allowance of
    ``CLUSTERSIM_DISPATCH_PER_USER`` sent-and-not-started runs; the number of messages sent.

    Safe to call concurrently and repeatedly: on PostgreSQL the users' rows are locked while
    their runs are counted and marked (one dispatcher per user at a time, exact allowance);
    SQLite serialises writers anyway. In eager mode (tests) a run executed inside a send asks
    for a dispatch again; that request is folded into this call's next pass instead of
    recursing.
    """
    if getattr(_local, "active", False):
        _local.again = True
        return 0
    _local.active = True
    users = None if user_ids is None else sorted(set(user_ids))
    sent = 0
    try:
        while True:
            _local.again = False
            n = _dispatch_once(users)
            sent += n
            if not (_local.again and n):
                return sent
            users = None
    finally:
        _local.active = False


def _dispatch_once(users: list[int] | None) -> int:
    from planner.tasks import simulate_run

    per_user = max(1, int(settings.CLUSTERSIM_DISPATCH_PER_USER))
    waiting = Run.objects.filter(state=RunState.QUEUED, dispatched_at__isnull=True)
    if users is not None:
        waiting = waiting.filter(owner_id__in=users)
    owners = sorted(set(waiting.order_by().values_list("owner_id", flat=True).distinct()))
    if not owners:
        return 0
    stamp = timezone.now()
    picks: list[list[int]] = []
    with transaction.atomic():
        # one dispatcher per user at a time: count and mark under the users' row locks (taken
        # in key order, so two dispatchers cannot deadlock)
        User = get_user_model()
        list(
            User.objects.select_for_update()
            .filter(pk__in=owners)
            .order_by("pk")
            .values_list("pk", flat=True)
        )
        in_flight = dict(
            Run.objects.filter(
                owner_id__in=owners, state=RunState.QUEUED, dispatched_at__isnull=False
            )
            .order_by()
            .values_list("owner_id")
            .annotate(n=Count("id"))
            .values_list("owner_id", "n")
        )
        for uid in owners:
            room = per_user - in_flight.get(uid, 0)
            if room <= 0:
                continue
            ids = list(
                Run.objects.filter(owner_id=uid, state=RunState.QUEUED, dispatched_at__isnull=True)
                .order_by("pk")
                .values_list("pk", flat=True)[:room]
            )
            if ids:
                picks.append(ids)
        chosen = [pk for ids in picks for pk in ids]
        if not chosen:
            return 0
        Run.objects.filter(pk__in=chosen, state=RunState.QUEUED, dispatched_at__isnull=True).update(
            dispatched_at=stamp
        )
    # round-robin: each user's first run, then each user's second, ...
    order = [ids[i] for i in range(max(map(len, picks))) for ids in picks if i < len(ids)]
    for n, pk in enumerate(order):
        if not _send(simulate_run, pk):
            # the broker is away: the rest wait in the database for the next dispatch
            Run.objects.filter(pk__in=order[n:], state=RunState.QUEUED, dispatched_at=stamp).update(
                dispatched_at=None
            )
            return n
    return len(order)


def resend_lost_runs() -> list[int]:
    """Put queued runs whose message looks lost back to waiting (the dispatcher sends them)."""
    now = timezone.now()
    grace = now - timedelta(seconds=settings.CLUSTERSIM_STALE_AFTER_S)
    sent = Run.objects.filter(state=RunState.QUEUED, dispatched_at__lt=grace)
    if not sent.exists():
        return []
    frontier = Run.objects.filter(state=RunState.RUNNING, started_at__lt=grace).aggregate(
        t=Max("dispatched_at")
    )["t"]
    lost = list(
        sent.filter(_lost_condition("sim", frontier, now)).values_list("pk", "dispatched_at")
    )
    resent = []
    for pk, stamp in lost:
        if Run.objects.filter(pk=pk, state=RunState.QUEUED, dispatched_at=stamp).update(
            dispatched_at=None, error="its queue message was lost; sent again"
        ):
            resent.append(pk)
    return resent


def _lost_condition(role: str, frontier: Any, now: Any) -> Q:
    """Which of the messages sent more than the grace period ago count as lost: all of them
    when the queue is empty; those sent before something that has started (``frontier``);
    those older than ``CLUSTERSIM_RESEND_AFTER_S`` in any case."""
    if queue_length(role) == 0:
        return Q()
    cond = Q(dispatched_at__lt=now - timedelta(seconds=settings.CLUSTERSIM_RESEND_AFTER_S))
    if frontier is not None:
        cond |= Q(dispatched_at__lt=frontier)
    return cond


def queue_length(role: str) -> int | None:
    """Messages waiting in the queue of ``role`` (``sim``, ``parse``, ``housekeeping``), as the
    broker counts them (not those a worker has taken); ``None`` if it cannot be asked."""
    from config.celery import app

    if _eager():
        return None
    name = settings.CLUSTERSIM_QUEUES[role]
    try:
        with app.connection_for_read() as conn:
            conn.ensure_connection(max_retries=1)
            with conn.channel() as channel:
                return int(channel.queue_declare(queue=name, passive=False).message_count)
    except Exception as exc:  # any broker trouble: fall back to the time-based rule
        log.warning("could not count the messages in %s: %s", name, exc)
        return None


def sweep() -> dict[str, list[int]]:
    """The periodic sweep (see the module's docstring); what it did, for logs and tests."""
    out = {
        "workloads_failed": fail_abandoned_parses(),
        "workloads_resent": resend_lost_workloads(),
        "runs_resent": resend_lost_runs(),
    }
    dispatch()
    return out
