"""The run state machine: claims, fencing, heartbeats, cancellation, the reaper."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import numpy as np
import pytest
from django.utils import timezone

from planner import runner
from planner.jobtable import from_parquet, scale_load, to_parquet
from planner.models import Artefact, Experiment, Run, RunState

pytestmark = pytest.mark.django_db


@pytest.fixture
def run(owner: Any, make_experiment: Any) -> Run:
    return make_experiment(owner).runs.get()


def test_a_run_is_claimed_once(run: Run) -> None:
    assert runner.claim(run.pk, "w1") == 1
    assert runner.claim(run.pk, "w2") is None  # a redelivered message finds it running
    run.refresh_from_db()
    assert (run.state, run.attempts, run.worker) == ("running", 1, "w1")
    assert run.experiment.state == "running"


def test_a_running_run_with_a_stale_heartbeat_can_be_claimed_again(run: Run, settings: Any) -> None:
    runner.claim(run.pk, "w1")
    Run.objects.filter(pk=run.pk).update(heartbeat=timezone.now() - timedelta(hours=1))
    assert runner.claim(run.pk, "w2") == 2


def test_it_gives_up_after_the_last_attempt(run: Run, settings: Any) -> None:
    settings.CLUSTERSIM_RUN_MAX_ATTEMPTS = 1
    runner.claim(run.pk, "w1")
    Run.objects.filter(pk=run.pk).update(heartbeat=timezone.now() - timedelta(hours=1))
    assert runner.claim(run.pk, "w2") is None
    run.refresh_from_db()
    assert run.state == "failed"
    assert "gave up after 1 attempts" in run.error
    assert Experiment.objects.get(pk=run.experiment_id).state == "failed"


def test_execute_run_stores_one_result(run: Run) -> None:
    assert runner.execute_run(run.pk, "w1") == "succeeded"
    run.refresh_from_db()
    assert run.state == "succeeded" and run.progress == 1.0
    assert run.summary["jobs_total"] == 100
    assert run.per_job is not None and run.timeseries is not None and run.stints is not None
    assert run.wall_s is not None and run.events and run.events > 0
    assert run.experiment.state == "succeeded" and run.experiment.finished_at
    # a redelivered task does nothing
    assert runner.execute_run(run.pk, "w2") == "skipped"
    assert Artefact.objects.filter(kind=Artefact.Kind.PER_JOB).count() == 1


def test_execute_run_stores_the_device_stints(owner: Any, make_experiment: Any) -> None:
    import io

    import pandas as pd

    run = make_experiment(owner, policies=("las",)).runs.get()
    assert runner.execute_run(run.pk, "w1") == "succeeded"
    run.refresh_from_db()
    art = run.stints
    assert art is not None and art.kind == Artefact.Kind.STINTS
    assert art.content_type == "application/vnd.apache.parquet" and art.encoding == ""
    stints = pd.read_parquet(io.BytesIO(art.read()))
    assert list(stints.columns) == [
        "job",
        "job_id",
        "node",
        "node_devices",
        "rack",
        "accel_type",
        "devices",
        "start",
        "end",
    ]
    jobs = pd.read_parquet(io.BytesIO(run.per_job.read()))
    # every stint names its job's row; together they make up the time each job held devices
    assert (stints["job_id"].to_numpy() == jobs["job_id"].to_numpy()[stints["job"]]).all()
    assert (stints["start"].diff().dropna() >= 0).all()  # sorted by start
    assert (stints["end"] >= stints["start"]).all()
    assert (stints["devices"] <= stints["node_devices"]).all()
    held = (stints["devices"] * (stints["end"] - stints["start"])).groupby(stints["job"]).sum()
    np.testing.assert_allclose(
        held.reindex(range(len(jobs)), fill_value=0.0), jobs["attained_gpu_s"], rtol=1e-6, atol=1e-3
    )
    # a preempted job has one stint per start: its preemptions plus one
    pre = jobs["preemptions"].to_numpy()
    assert pre.sum() > 0
    starts = stints.groupby("job")["start"].nunique().reindex(range(len(jobs)), fill_value=0)
    started = np.isfinite(jobs["first_start"].to_numpy())
    assert (starts.to_numpy()[started] >= pre[started] + 1).all()
    # a re-run drops the link (and writes new stints when it succeeds)
    Run.objects.filter(pk=run.pk).update(state=RunState.FAILED)
    runner.requeue_runs(Run.objects.filter(pk=run.pk))
    assert Run.objects.get(pk=run.pk).stints_id is None


def test_a_stale_attempt_cannot_store_its_result(run: Run) -> None:
    attempt = runner.claim(run.pk, "w1")
    assert attempt == 1
    outcome = runner.simulate_run(
        Run.objects.select_related("workload", "cluster", "experiment").get(pk=run.pk),
        runner.Heartbeat(run.pk, attempt),
    )
    Run.objects.filter(pk=run.pk).update(attempts=2)  # someone else claimed it meanwhile
    assert runner.store(run, attempt, outcome) is False
    assert not Artefact.objects.filter(kind=Artefact.Kind.PER_JOB).exists()
    assert not Artefact.objects.filter(kind=Artefact.Kind.STINTS).exists()


def test_a_transient_error_while_storing_gives_the_run_back_for_the_retry(
    run: Run, monkeypatch: Any
) -> None:
    from django.db import OperationalError

    real_store = runner.store

    def flaky_store(*args: Any, **kwargs: Any) -> bool:
        raise OperationalError("database table is locked")

    monkeypatch.setattr(runner, "store", flaky_store)
    with pytest.raises(OperationalError):
        runner.execute_run(run.pk, "w1")
    run.refresh_from_db()
    assert run.state == RunState.QUEUED and "while storing" in run.error
    assert run.per_job_id is None
    monkeypatch.setattr(runner, "store", real_store)
    assert runner.execute_run(run.pk, "w1") == "succeeded"  # the task's retry claims it again
    run.refresh_from_db()
    # a transient error does not use up one of the attempts (they count lost workers)
    assert run.state == RunState.SUCCEEDED and run.attempts == 1


def test_transient_errors_do_not_fail_a_run_as_if_its_worker_was_lost(
    run: Run, monkeypatch: Any, settings: Any
) -> None:
    from django.db import OperationalError

    settings.CLUSTERSIM_RUN_MAX_ATTEMPTS = 2
    real_store = runner.store
    calls = {"n": 0}

    def flaky_store(*args: Any, **kwargs: Any) -> bool:
        calls["n"] += 1
        if calls["n"] <= 3:
            raise OperationalError("database table is locked")
        return real_store(*args, **kwargs)

    monkeypatch.setattr(runner, "store", flaky_store)
    for _ in range(3):
        with pytest.raises(OperationalError):
            runner.execute_run(run.pk, "w1")
    assert runner.execute_run(run.pk, "w1") == "succeeded"
    run.refresh_from_db()
    assert run.state == RunState.SUCCEEDED and run.error == ""


def test_a_redelivered_task_repairs_an_experiment_left_behind(run: Run) -> None:
    assert runner.execute_run(run.pk, "w1") == "succeeded"
    # the final step of the first delivery failed after the results were stored
    Experiment.objects.filter(pk=run.experiment_id).update(state="running", finished_at=None)
    assert runner.execute_run(run.pk, "w2") == "skipped"
    assert Experiment.objects.get(pk=run.experiment_id).state == "succeeded"


def test_the_heartbeat_stops_a_cancelled_run(run: Run, settings: Any) -> None:
    settings.CLUSTERSIM_HEARTBEAT_S = 0.0
    attempt = runner.claim(run.pk, "w1")
    beat = runner.Heartbeat(run.pk, attempt)
    beat(0.5)
    assert Run.objects.get(pk=run.pk).progress == 0.5
    runner.cancel_runs(Run.objects.filter(pk=run.pk))
    with pytest.raises(runner.LostClaim):
        beat(0.6)


def test_cancelling_during_a_simulation_stops_it(run: Run, settings: Any, monkeypatch: Any) -> None:
    settings.CLUSTERSIM_HEARTBEAT_S = 0.0
    calls = {"n": 0}
    real = runner.Heartbeat.__call__

    def beat(self: runner.Heartbeat, progress: float, *, force: bool = False) -> None:
        calls["n"] += 1
        if calls["n"] == 5:
            runner.cancel_runs(Run.objects.filter(pk=self.run_id))
        real(self, progress, force=force)

    monkeypatch.setattr(runner.Heartbeat, "__call__", beat)
    assert runner.execute_run(run.pk, "w1") == "lost"
    run.refresh_from_db()
    assert run.state == "cancelled" and run.summary is None
    assert run.experiment.state == "cancelled"


def test_bad_parameters_fail_the_run_with_the_reason_in_plain_words(run: Run) -> None:
    Run.objects.filter(pk=run.pk).update(params={"no_such_param": 1})
    assert runner.execute_run(run.pk, "w1") == "failed"
    run.refresh_from_db()
    assert run.state == "failed"
    assert run.policy == "fifo"
    assert run.error == "fifo takes no parameter 'no_such_param'; it takes: backfill"


def test_the_reaper_requeues_runs_whose_worker_died(run: Run, settings: Any) -> None:
    runner.claim(run.pk, "w1")
    Run.objects.filter(pk=run.pk).update(heartbeat=timezone.now() - timedelta(hours=1))
    assert runner.reap_stale_runs() == {"requeued": [run.pk], "failed": []}
    run.refresh_from_db()
    assert run.state == "queued" and "lost its worker" in run.error
    assert runner.execute_run(run.pk, "w2") == "succeeded"
    assert Run.objects.get(pk=run.pk).attempts == 2


def test_the_reaper_fails_runs_out_of_attempts(run: Run, settings: Any) -> None:
    settings.CLUSTERSIM_RUN_MAX_ATTEMPTS = 1
    runner.claim(run.pk, "w1")
    Run.objects.filter(pk=run.pk).update(heartbeat=timezone.now() - timedelta(hours=1))
    assert runner.reap_stale_runs() == {"requeued": [], "failed": [run.pk]}
    run.refresh_from_db()
    assert run.state == "failed" and "gave up" in run.error


def test_the_reaper_leaves_live_runs_alone(run: Run) -> None:
    runner.claim(run.pk, "w1")
    assert runner.reap_stale_runs() == {"requeued": [], "failed": []}


def test_the_periodic_task_re_enqueues_what_it_requeued(run: Run) -> None:
    from planner.tasks import reap_stale_runs

    runner.claim(run.pk, "w1")
    Run.objects.filter(pk=run.pk).update(heartbeat=timezone.now() - timedelta(hours=1))
    reap_stale_runs.delay()  # eager: the requeued run is simulated right away
    assert Run.objects.get(pk=run.pk).state == "succeeded"


def test_rerun_requeues_failed_and_cancelled_runs(owner: Any, make_experiment: Any) -> None:
    exp = make_experiment(owner, seeds=(0, 1), placement="random")  # one run per seed
    first, second = exp.runs.order_by("pk")
    runner.cancel_runs(Run.objects.filter(pk=first.pk))
    assert runner.execute_run(second.pk, "w") == "succeeded"
    assert Experiment.objects.get(pk=exp.pk).state == "cancelled"
    assert runner.requeue_runs(exp.runs.all()) == [first.pk]
    assert Experiment.objects.get(pk=exp.pk).state == "running"
    assert runner.execute_run(first.pk, "w") == "succeeded"
    assert Experiment.objects.get(pk=exp.pk).state == "succeeded"


def test_the_task_runs_the_whole_experiment(owner: Any, make_experiment: Any) -> None:
    from planner.tasks import launch_experiment

    exp = make_experiment(owner, policies=("fifo", "tiresias"), load_factors=(1.0, 2.0))
    assert launch_experiment.delay(exp.pk).get() == 4
    assert set(exp.runs.values_list("state", flat=True)) == {RunState.SUCCEEDED}
    assert Experiment.objects.get(pk=exp.pk).state == "succeeded"


def test_load_factor_scales_arrival_rate_not_work(owner: Any, make_workload: Any) -> None:
    w = make_workload(owner)
    jobs = from_parquet(w.jobs.read())
    fast = scale_load(jobs, 2.0)
    np.testing.assert_allclose(fast.submit_time, jobs.submit_time / 2.0)
    np.testing.assert_array_equal(fast.work, jobs.work)
    with pytest.raises(ValueError):
        scale_load(jobs, 0.0)


def test_the_job_table_round_trips_through_parquet(owner: Any, make_workload: Any) -> None:
    jobs = from_parquet(make_workload(owner).jobs.read())
    again = from_parquet(to_parquet(jobs))
    for name in ("job_id", "submit_time", "num_gpus", "work", "job_type", "deadline"):
        np.testing.assert_array_equal(getattr(again, name), getattr(jobs, name))


def test_gpu_sharing_requests_round_trip_and_old_tables_read_as_whole_devices() -> None:
    import io

    import pandas as pd

    from clustersim.jobs import JobTable

    jobs = JobTable.from_columns(
        job_id=["a", "b"], submit_time=[0, 1], num_gpus=[1, 2], work=[5, 6], gpu_fraction=[0.46, 1]
    )
    assert from_parquet(to_parquet(jobs)).gpu_fraction.tolist() == [0.46, 1.0]
    # a table stored before the column existed
    frame = pd.read_parquet(io.BytesIO(to_parquet(jobs))).drop(columns=["gpu_fraction"])
    buf = io.BytesIO()
    frame.to_parquet(buf, index=False)
    old = from_parquet(buf.getvalue())
    assert old.gpu_fraction.tolist() == [1.0, 1.0] and old.work.tolist() == [5.0, 6.0]


@pytest.mark.django_db(transaction=True)
def test_the_heartbeat_thread_beats_and_notices_cancellation(
    owner: Any, make_experiment: Any, settings: Any
) -> None:
    import time

    settings.CLUSTERSIM_HEARTBEAT_S = 0.2
    run = make_experiment(owner).runs.get()
    attempt = runner.claim(run.pk, "w1")
    with runner.Heartbeat(run.pk, attempt, threaded=True) as beat:
        beat(0.25)  # records progress only; the thread writes it
        deadline = time.monotonic() + 10
        while Run.objects.get(pk=run.pk).progress != 0.25:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        runner.cancel_runs(Run.objects.filter(pk=run.pk))
        while not beat.lost.is_set():
            assert time.monotonic() < deadline
            time.sleep(0.05)
        with pytest.raises(runner.LostClaim):
            beat(0.3)


def test_after_the_last_retry_the_run_waits_for_the_dispatcher_and_runs_once_the_db_is_back(
    run: Run, monkeypatch: Any
) -> None:
    """A database outage longer than the task's retries: the run is neither failed nor left
    queued with no message on the way; the next dispatch sends it again."""
    from django.db import OperationalError

    from planner import dispatch
    from planner.tasks import simulate_run

    real_store = runner.store

    def locked(*args: Any, **kwargs: Any) -> bool:
        raise OperationalError("database table is locked")

    monkeypatch.setattr(runner, "store", locked)
    with pytest.raises(OperationalError):  # eager tasks propagate; a worker logs it
        simulate_run.apply(args=(run.pk,), retries=simulate_run.max_retries)
    run.refresh_from_db()
    assert (run.state, run.dispatched_at, run.attempts) == (RunState.QUEUED, None, 1)
    assert "retries exhausted" in run.error and "table is locked" in run.error
    monkeypatch.setattr(runner, "store", real_store)
    assert dispatch.dispatch() == 1  # eager: sent and run
    run.refresh_from_db()
    assert (run.state, run.attempts, run.error) == (RunState.SUCCEEDED, 2, "")
    assert Experiment.objects.get(pk=run.experiment_id).state == "succeeded"


def test_a_run_whose_every_try_meets_a_transient_error_fails_after_its_attempts(
    run: Run, monkeypatch: Any, settings: Any
) -> None:
    from django.db import OperationalError

    from planner import dispatch
    from planner.tasks import simulate_run

    settings.CLUSTERSIM_RUN_MAX_ATTEMPTS = 2

    def locked(*args: Any, **kwargs: Any) -> bool:
        raise OperationalError("database table is locked")

    monkeypatch.setattr(runner, "store", locked)
    for _ in range(2):
        with pytest.raises(OperationalError):
            simulate_run.apply(args=(run.pk,), retries=simulate_run.max_retries)
    assert dispatch.dispatch() == 1  # the claim gives up
    run.refresh_from_db()
    assert run.state == RunState.FAILED
    assert "gave up after 2 attempts" in run.error and "table is locked" in run.error
    assert Experiment.objects.get(pk=run.experiment_id).state == "failed"


def test_a_heartbeat_that_meets_a_transient_error_skips_that_beat(
    run: Run, settings: Any, monkeypatch: Any
) -> None:
    from django.db import OperationalError

    settings.CLUSTERSIM_HEARTBEAT_S = 0.0
    attempt = runner.claim(run.pk, "w1")
    beat = runner.Heartbeat(run.pk, attempt)
    real_update = type(Run.objects.all()).update

    def locked(self: Any, **kwargs: Any) -> int:
        raise OperationalError("database table is locked")

    monkeypatch.setattr(type(Run.objects.all()), "update", locked)
    beat(0.3)  # skipped, not raised: the simulation goes on
    monkeypatch.setattr(type(Run.objects.all()), "update", real_update)
    beat(0.4)
    assert Run.objects.get(pk=run.pk).progress == 0.4
