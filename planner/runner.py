"""The run state machine and the work of one run, independent of Celery's plumbing.

Transitions (all conditional updates on the row; the row is the truth)::

    queued ──claim──▶ running ──store──▶ succeeded
      │                 │ ├──fail───▶ failed        (bad input, time limit, internal error)
      │                 │ ├──cancel─▶ cancelled     (user; the worker notices at its next beat)
      │                 │ └──release▶ queued        (transient error: the task retries it)
      │                 └──reap───▶ queued          (heartbeat stale: worker lost; re-enqueued)
      └──cancel──▶ cancelled

``attempts`` is incremented by every claim and is the fencing token: progress, heartbeat and
results are written only ``WHERE state = 'running' AND attempts = <mine>``. A task whose row
was cancelled, reaped or claimed again finds that its write touched no row and stops, so a
redelivered task never produces a second result. A run claimed ``CLUSTERSIM_RUN_MAX_ATTEMPTS``
times without finishing is failed with the reason.

Which queued runs have a message on the way is :mod:`planner.dispatch`'s business
(``dispatched_at``); a run put back in the queue here is left for it to send.
"""

from __future__ import annotations

import dataclasses
import io
import json
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.db import connections, transaction
from django.db.models import Count, Q
from django.utils import timezone

from clustersim.errors import ClustersimError
from planner.models import (
    ACTIVE_STATES,
    Artefact,
    Experiment,
    Run,
    RunState,
)

log = logging.getLogger(__name__)


class LostClaim(Exception):
    """The row is no longer this attempt's (cancelled, reaped or claimed again)."""


def _now() -> Any:
    return timezone.now()


def _stale_before() -> Any:
    return _now() - timedelta(seconds=settings.CLUSTERSIM_STALE_AFTER_S)


def _claimable() -> Q:
    return Q(state=RunState.QUEUED) | Q(state=RunState.RUNNING, heartbeat__lt=_stale_before())


def claim(run_id: int, worker: str) -> int | None:
    """Take the run for this worker; the attempt number, or ``None`` if it is not ours to run.

    A queued run is claimable, and so is a running one whose heartbeat went stale (its worker
    died; the broker redelivered the message). The update is a compare-and-swap on
    ``attempts``, so two deliveries of one task cannot both win.
    """
    row = (
        Run.objects.filter(pk=run_id)
        .filter(_claimable())
        .values("state", "attempts", "error")
        .first()
    )
    if row is None:
        return None
    max_attempts = settings.CLUSTERSIM_RUN_MAX_ATTEMPTS
    base = Run.objects.filter(pk=run_id, state=row["state"], attempts=row["attempts"])
    now = _now()
    if row["attempts"] >= max_attempts:
        last = row["error"] or "the worker was lost each time"
        if base.update(
            state=RunState.FAILED,
            finished_at=now,
            error=f"gave up after {row['attempts']} attempts; the last: {last}"[:5000],
        ):
            refresh_experiment(_experiment_of(run_id))
        return None
    won = base.update(
        state=RunState.RUNNING,
        attempts=row["attempts"] + 1,
        worker=worker[:255],
        heartbeat=now,
        started_at=now,
        progress=0.0,
    )
    if not won:
        return None
    Experiment.objects.filter(runs__pk=run_id, state=Experiment.State.QUEUED).update(
        state=Experiment.State.RUNNING
    )
    return int(row["attempts"]) + 1


def _experiment_of(run_id: int) -> int:
    return int(Run.objects.values_list("experiment_id", flat=True).get(pk=run_id))


class Heartbeat:
    """Writes progress and the heartbeat at most every ``CLUSTERSIM_HEARTBEAT_S`` seconds.

    In a worker (``CLUSTERSIM_HEARTBEAT_THREAD``, the default) a background thread does the
    writing, so the heartbeat shows that the process is alive however rarely the engine calls
    back; the engine-side calls only record progress and check a flag. Without the thread
    (tests, single-threaded callers) the calls write themselves, rate-limited.

    Raises :class:`LostClaim` when a write finds the row no longer ours, which is how a
    running simulation learns that it was cancelled (or reaped and claimed again).
    """

    def __init__(self, run_id: int, attempt: int, *, threaded: bool | None = None) -> None:
        self.run_id = run_id
        self.attempt = attempt
        self.every = float(settings.CLUSTERSIM_HEARTBEAT_S)
        self.threaded = settings.CLUSTERSIM_HEARTBEAT_THREAD if threaded is None else threaded
        self.last = time.monotonic()
        self.progress = 0.0
        self.lost = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def write(self) -> bool:
        """One conditional write of progress and heartbeat; ``False`` if the claim is lost.

        A transient database error skips this beat (the next one tries again) rather than
        stopping a simulation that may have run for minutes; if the database stays away,
        the beats go stale and the reaper requeues the run.
        """
        from planner.tasks import TRANSIENT_ERRORS

        try:
            return bool(
                Run.objects.filter(
                    pk=self.run_id, state=RunState.RUNNING, attempts=self.attempt
                ).update(progress=round(min(max(self.progress, 0.0), 1.0), 4), heartbeat=_now())
            )
        except TRANSIENT_ERRORS as exc:
            log.warning("run %s: heartbeat skipped: %s", self.run_id, exc)
            return True

    def __call__(self, progress: float, *, force: bool = False) -> None:
        self.progress = progress
        if self.lost.is_set():
            raise LostClaim(f"run {self.run_id} attempt {self.attempt} lost its claim")
        t = time.monotonic()
        if not force and (self.threaded or t - self.last < self.every):
            return
        self.last = t
        if not self.write():
            self.lost.set()
            raise LostClaim(f"run {self.run_id} attempt {self.attempt} lost its claim")

    def _loop(self) -> None:
        try:
            while not self._stop.wait(max(self.every, 0.2)):
                if not self.write():
                    self.lost.set()
                    return
        except Exception:  # the reaper requeues the run if beats stop for good
            log.exception("run %s: heartbeat write failed", self.run_id)
        finally:
            connections.close_all()  # this thread's own connection

    def __enter__(self) -> Heartbeat:
        if self.threaded:
            self._thread = threading.Thread(
                target=self._loop, name=f"heartbeat-run-{self.run_id}", daemon=True
            )
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)


@dataclass
class Outcome:
    summary: dict[str, Any]
    per_job: bytes
    timeseries: bytes
    events: int
    wall_s: float
    #: the device stints (Parquet, :func:`stints_parquet`); ``None``: not recorded
    stints: bytes | None = None


def stints_parquet(result: Any) -> bytes:
    """The run's device stints as zstd Parquet, sorted by start (then node).

    Columns: ``clustersim.metrics.stints_frame``'s (``job_id, node, rack, accel_type,
    devices, start, end``) plus ``job``, the row of the job in the per-job table (job ids
    need not be unique in a trace), and ``node_devices``, the devices of that node (so the
    artefact stays readable if the cluster is edited later).
    """
    import numpy as np

    from clustersim.metrics import stints_frame

    frame = stints_frame(result)
    st = result.stints
    rows = st.job[np.lexsort((st.node, st.start))]  # stints_frame's order
    ids = result.jobs.job_id.astype(str)
    if not np.array_equal(ids[rows], frame["job_id"].to_numpy(dtype=str)):
        # stints_frame changed its order: find each row by its id (first row of a repeated id)
        first: dict[str, int] = {}
        for i, job_id in enumerate(ids.tolist()):
            first.setdefault(job_id, i)
        rows = np.array([first[j] for j in frame["job_id"].tolist()], dtype=np.int64)
    frame.insert(0, "job", rows.astype(np.int64))
    nodes = frame["node"].to_numpy(dtype=np.int64)
    frame.insert(3, "node_devices", result.cluster.node_devices[nodes].astype(np.int64))
    buf = io.BytesIO()
    frame.to_parquet(buf, index=False, compression="zstd")
    return buf.getvalue()


def simulate_run(run: Run, beat: Heartbeat) -> Outcome:
    """Simulate one run's scenario (no database writes except through ``beat``)."""
    from clustersim.carbon import DEFAULT_START
    from clustersim.compat import prepare
    from clustersim.engine import EngineOptions, simulate
    from clustersim.metrics import model_records, per_job_frame, summary, timeseries
    from clustersim.spec import cluster_from_spec
    from planner.jobtable import from_parquet, scale_load

    workload = run.workload
    if workload.jobs_id is None:
        raise ClustersimError(f"workload {workload.pk} has no parsed job table")
    jobs = scale_load(
        from_parquet(Artefact.objects.get(pk=workload.jobs_id).read()), run.load_factor
    )
    cluster = cluster_from_spec(run.cluster.effective_spec())
    failures = None
    if run.experiment.failures is not None:  # node failures (clustersim.failures)
        from clustersim.failures import from_settings

        failures, cluster = from_settings(run.experiment.failures, cluster)
    network = None
    if run.experiment.network is not None:  # network contention (clustersim.network)
        from clustersim.network import from_settings as network_options

        network = network_options(run.experiment.network)
    stragglers = None
    if run.experiment.stragglers is not None:  # slow nodes (clustersim.stragglers)
        from clustersim.stragglers import from_settings as straggler_options

        stragglers = straggler_options(run.experiment.stragglers)
    spot = None
    if run.experiment.spot is not None:  # spot reclaims (clustersim.spot)
        from clustersim.spot import from_settings as spot_options

        spot = spot_options(run.experiment.spot)
        if failures is not None:  # the jobs' checkpoints are the failures' (equal, checked)
            spot = dataclasses.replace(spot, checkpoint_interval_s=None, checkpoint_overhead_s=None)
    if run.experiment.elastic:  # device-count bounds of the rigid jobs (clustersim.elastic)
        from clustersim.elastic import apply_elastic

        jobs, _ = apply_elastic(jobs, run.experiment.elastic, cluster)
    if run.experiment.aux_demand:  # CPU/memory demands of the jobs without (resources)
        from clustersim.resources import apply_demand

        jobs = apply_demand(jobs, run.experiment.aux_demand, cluster)
    compat = run.experiment.compat or None
    prepared = prepare(
        jobs, cluster, run.policy, _params(run.params), run.placement or None, compat=compat
    )
    jobs, rates = prepared.jobs, prepared.rates
    until = run.experiment.until_s
    # a rebased workload (planner.recipes) says which calendar hours its t = 0 falls on
    carbon_start = (workload.report or {}).get("carbon_start") or DEFAULT_START
    options = EngineOptions(
        carbon_start=carbon_start,
        seed=run.seed,
        until=float("inf") if until is None else until,
        progress=lambda p: beat(p.fraction),
        progress_every=max(1, min(2000, len(jobs) // 50)),
        failures=failures,
        network=network,
        stragglers=stragglers,
        spot=spot,
        **prepared.engine,
    )
    t0 = time.perf_counter()
    result = simulate(
        jobs, cluster, prepared.policy, prepared.placement, rates=rates, options=options
    )
    beat(1.0, force=True)
    hours = run.experiment.cost_horizon_hours
    horizon_s = None if hours is None else hours * 3600.0
    out = dict(summary(result, carbon_start=carbon_start, horizon_s=horizon_s))
    out["jobs_extrapolated"] = int(rates.extrapolated.sum())
    buf = io.BytesIO()
    per_job_frame(result).to_parquet(buf, index=False, compression="zstd")
    # the timeline's lists, plus what the optional models did (dashboard.results.MODELS_KEY)
    stored: dict[str, Any] = dict(timeseries(result, max_points=2000, carbon_start=carbon_start))
    models = model_records(result)
    if models:
        stored["models"] = models
    series = json.dumps(stored, allow_nan=False).encode()
    return Outcome(
        summary=out,
        per_job=buf.getvalue(),
        timeseries=series,
        events=int(result.events),
        wall_s=time.perf_counter() - t0,
        stints=stints_parquet(result),
    )


def _params(params: dict[str, Any]) -> dict[str, Any]:
    """JSON lists become tuples (policies take tuples, e.g. Tiresias thresholds)."""
    return {k: tuple(v) if isinstance(v, list) else v for k, v in (params or {}).items()}


def store(run: Run, attempt: int, outcome: Outcome) -> bool:
    """Write the results if the row is still this attempt's; ``False`` (nothing written) if not."""
    with transaction.atomic():
        per_job = Artefact.build_parquet(
            run.owner, Artefact.Kind.PER_JOB, outcome.per_job, f"run-{run.pk}-jobs.parquet"
        )
        series = Artefact.build(
            run.owner,
            Artefact.Kind.TIMESERIES,
            outcome.timeseries,
            filename=f"run-{run.pk}-timeseries.json",
            content_type="application/json",
        )
        stints = None
        if outcome.stints is not None:
            stints = Artefact.build_parquet(
                run.owner, Artefact.Kind.STINTS, outcome.stints, f"run-{run.pk}-stints.parquet"
            )
            stints.save()
        per_job.save()
        series.save()
        n = Run.objects.filter(pk=run.pk, state=RunState.RUNNING, attempts=attempt).update(
            state=RunState.SUCCEEDED,
            progress=1.0,
            finished_at=_now(),
            heartbeat=_now(),
            summary=outcome.summary,
            per_job=per_job,
            timeseries=series,
            stints=stints,
            events=outcome.events,
            wall_s=outcome.wall_s,
            error="",
        )
        if n == 0:
            transaction.set_rollback(True)
            return False
    return True


def fail(run_id: int, attempt: int, reason: str) -> bool:
    """Mark this attempt's run failed with ``reason``."""
    return bool(
        Run.objects.filter(pk=run_id, state=RunState.RUNNING, attempts=attempt).update(
            state=RunState.FAILED, finished_at=_now(), error=reason[:5000]
        )
    )


def release(run_id: int, attempt: int, reason: str, *, last_try: bool = False) -> bool:
    """Give the run back to the queue (a transient error).

    Before the task's last retry the caller retries the task, and the attempt is given back
    too: ``CLUSTERSIM_RUN_MAX_ATTEMPTS`` counts workers lost in the middle of a run, not
    database hiccups (the task's own ``max_retries`` bounds those), so a run that met a few
    locked tables is not failed as if its worker kept dying. The retry's claim gets the same
    attempt number, which is safe: this attempt has stopped. ``dispatched_at`` is now: the
    retry is the message on its way.

    After the last retry (``last_try``) no message will come: the run waits for the dispatcher
    (``dispatched_at`` null) and keeps the attempt, so a run whose every try meets the error
    is failed after ``CLUSTERSIM_RUN_MAX_ATTEMPTS`` rounds with this reason, not retried for
    ever, while one that met an outage of a minute runs again once the database is back.
    """
    return bool(
        Run.objects.filter(pk=run_id, state=RunState.RUNNING, attempts=attempt).update(
            state=RunState.QUEUED,
            worker="",
            error=reason[:5000],
            attempts=attempt if last_try else attempt - 1,
            dispatched_at=None if last_try else _now(),
        )
    )


def execute_run(
    run_id: int,
    worker: str = "",
    *,
    last_try: bool = False,
    on_claim: Callable[[Run], None] | None = None,
) -> str:
    """Claim, simulate and store one run. Returns what happened (for logs and tests).

    Errors a user can cause (bad spec, unknown policy, bad parameters: ``ClustersimError``)
    fail the run with the simulator's message; any other error fails it as an "internal
    error" naming the exception (a bug, logged with its traceback); transient database
    errors propagate (the task retries them) after giving the run back to the queue
    (:func:`release`; after the task's ``last_try`` for the dispatcher to send again).
    ``on_claim`` is called with the run once it is claimed (the task dispatches the user's
    next run then).
    """
    from planner.tasks import TRANSIENT_ERRORS

    attempt = claim(run_id, worker)
    if attempt is None:
        # a redelivered task, or the retry of one whose final step met a transient error
        # after the results were stored: make sure the experiment's state caught up
        refresh_experiment(_experiment_of(run_id))
        return "skipped"
    run = Run.objects.select_related("cluster", "workload", "experiment", "owner").get(pk=run_id)
    if on_claim is not None:
        on_claim(run)
    try:
        with Heartbeat(run_id, attempt) as beat:
            outcome = simulate_run(run, beat)
    except LostClaim:
        log.info("run %s: stopped (cancelled or taken over)", run_id)
        refresh_experiment(run.experiment_id)
        return "lost"
    except SoftTimeLimitExceeded:
        fail(
            run_id,
            attempt,
            f"time limit exceeded ({settings.CLUSTERSIM_RUN_SOFT_TIME_LIMIT_S} s)",
        )
        refresh_experiment(run.experiment_id)
        return "failed"
    except TRANSIENT_ERRORS as exc:
        _release_for_retry(run_id, attempt, f"transient error, will retry: {exc}", last_try)
        raise
    except ClustersimError as exc:  # what the user can fix, said in the simulator's words
        fail(run_id, attempt, str(exc))
        refresh_experiment(run.experiment_id)
        return "failed"
    except Exception as exc:
        log.exception("run %s failed", run_id)
        fail(run_id, attempt, f"internal error: {type(exc).__name__}: {exc}")
        refresh_experiment(run.experiment_id)
        return "failed"
    try:
        stored = store(run, attempt, outcome)
    except TRANSIENT_ERRORS as exc:  # nothing was stored (one transaction): run it again
        _release_for_retry(
            run_id, attempt, f"transient error while storing, will retry: {exc}", last_try
        )
        raise
    refresh_experiment(run.experiment_id)
    return "succeeded" if stored else "lost"


def _release_for_retry(
    run_id: int, attempt: int, reason: str, last_try: bool = False, tries: int = 5
) -> None:
    """Give the run back to the queue so the task's retry can claim it again (after the
    task's ``last_try``, for the dispatcher to send again: see :func:`release`).

    The database may still be unavailable for a moment, so this tries a few times; if every
    try fails, the reaper requeues the run once its heartbeat has gone stale.
    """
    from planner.tasks import TRANSIENT_ERRORS

    if last_try:
        reason = reason.replace(", will retry", ", retries exhausted; queued again")
    for i in range(tries):
        try:
            release(run_id, attempt, reason, last_try=last_try)
            return
        except TRANSIENT_ERRORS:
            time.sleep(0.2 * (i + 1))


def refresh_experiment(experiment_id: int) -> str:
    """Bring the experiment's state in line with its runs; the final step of a fan-out.

    Whichever run ends last moves the experiment to its final state; the conditional update
    makes that happen exactly once. Returns the state.
    """
    counts = dict(
        Run.objects.filter(experiment_id=experiment_id)
        .values_list("state")
        .annotate(n=Count("id"))
        .values_list("state", "n")
    )
    active = sum(counts.get(s, 0) for s in ACTIVE_STATES)
    exp = Experiment.objects.filter(pk=experiment_id)
    if active:
        if counts.get(RunState.RUNNING, 0) or sum(counts.values()) > active:
            exp.filter(state=Experiment.State.QUEUED).update(state=Experiment.State.RUNNING)
        else:
            exp.filter(state=Experiment.State.RUNNING).update(state=Experiment.State.QUEUED)
        return str(exp.values_list("state", flat=True).first())
    if counts.get(RunState.FAILED, 0):
        final = Experiment.State.FAILED
    elif counts.get(RunState.CANCELLED, 0):
        final = Experiment.State.CANCELLED
    else:
        final = Experiment.State.SUCCEEDED
    exp.filter(state__in=(Experiment.State.QUEUED, Experiment.State.RUNNING)).update(
        state=final, finished_at=_now()
    )
    return str(exp.values_list("state", flat=True).first())


def cancel_runs(runs: Any, reason: str = "cancelled by user") -> int:
    """Cancel the active runs among ``runs`` (a queryset); running ones stop at their next beat."""
    ids = list(runs.filter(state__in=ACTIVE_STATES).values_list("pk", flat=True))
    if not ids:
        return 0
    n = Run.objects.filter(pk__in=ids, state__in=ACTIVE_STATES).update(
        state=RunState.CANCELLED, finished_at=_now(), error=reason
    )
    for exp_id in set(Run.objects.filter(pk__in=ids).values_list("experiment_id", flat=True)):
        refresh_experiment(exp_id)
    return n


def requeue_runs(runs: Any) -> list[int]:
    """Put failed or cancelled runs back in the queue (a re-run) for the dispatcher to send."""
    ids = list(
        runs.filter(state__in=(RunState.FAILED, RunState.CANCELLED)).values_list("pk", flat=True)
    )
    Run.objects.filter(pk__in=ids, state__in=(RunState.FAILED, RunState.CANCELLED)).update(
        state=RunState.QUEUED,
        attempts=0,
        progress=0.0,
        error="",
        worker="",
        heartbeat=None,
        started_at=None,
        finished_at=None,
        queued_at=_now(),
        dispatched_at=None,
        summary=None,
        per_job=None,
        timeseries=None,
        stints=None,
    )
    for exp_id in set(Run.objects.filter(pk__in=ids).values_list("experiment_id", flat=True)):
        Experiment.objects.filter(pk=exp_id).update(state=Experiment.State.QUEUED, finished_at=None)
        refresh_experiment(exp_id)
    return ids


def reap_stale_runs() -> dict[str, list[int]]:
    """Requeue (or, after the last attempt, fail) running rows whose heartbeat went stale.

    Returns the ids requeued and failed; the requeued ones wait for the dispatcher.
    """
    stale_after = settings.CLUSTERSIM_STALE_AFTER_S
    max_attempts = settings.CLUSTERSIM_RUN_MAX_ATTEMPTS
    rows = Run.objects.filter(state=RunState.RUNNING, heartbeat__lt=_stale_before()).values_list(
        "pk", "attempts", "experiment_id"
    )
    requeued: list[int] = []
    failed: list[int] = []
    for pk, attempts, exp_id in rows:
        base = Run.objects.filter(pk=pk, state=RunState.RUNNING, attempts=attempts)
        lost = f"attempt {attempts} lost its worker (no heartbeat for {stale_after:g} s)"
        if attempts >= max_attempts:
            if base.filter(heartbeat__lt=_stale_before()).update(
                state=RunState.FAILED,
                finished_at=_now(),
                error=f"{lost}; gave up after {attempts} attempts",
            ):
                failed.append(pk)
                refresh_experiment(exp_id)
        elif base.filter(heartbeat__lt=_stale_before()).update(
            state=RunState.QUEUED, worker="", error=f"{lost}; requeued", dispatched_at=None
        ):
            requeued.append(pk)
    return {"requeued": requeued, "failed": failed}
