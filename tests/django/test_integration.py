"""End to end through real processes: gunicorn, a Celery worker and beat, PostgreSQL, Redis.

A throwaway PostgreSQL database and a private Celery queue keep the run isolated. With
``CLUSTERSIM_REQUIRE_SERVICES=1`` (CI) a missing Redis or PostgreSQL fails these tests;
otherwise they are skipped.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.django.conftest import PHILLY_SAMPLE
from tests.harness import PG, REDIS, SharedServices, Stack, long_trace, require

pytestmark = [pytest.mark.integration, pytest.mark.slow]

__all__ = ["PG", "REDIS", "Stack"]  # bench/product.py builds on this module's stack


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    require(SharedServices().missing(), "integration services")
    s = Stack(tmp_path_factory.mktemp("stack"))
    try:
        s.up()
        yield s
    finally:
        s.down()


def _ready(w: dict[str, Any]) -> bool:
    return w["status"] in ("ready", "failed")


def _experiment_done(e: dict[str, Any]) -> bool:
    return e["state"] in ("succeeded", "failed", "cancelled")


def test_upload_parse_experiment_results_through_the_api(stack: Stack) -> None:
    w = stack.upload(PHILLY_SAMPLE, "philly sample")
    assert w["status"] == "pending"
    w = stack.wait(f"/api/v1/workloads/{w['id']}/", _ready, 60, "parse")
    assert w["status"] == "ready", w["error"]
    assert w["report"]["jobs_kept"] == 2406
    assert w["summary"]["jobs"] == 2406

    cluster = stack.post("/api/v1/clusters/from-preset/", {"preset": "philly"}, 201)
    exp = stack.post(
        "/api/v1/experiments/",
        {
            "name": "it",
            "clusters": [cluster["id"]],
            "workloads": [w["id"]],
            "policies": [{"name": "fifo"}, {"name": "tiresias"}],
            "load_factors": [1, 2],
            "seeds": [0],
        },
        202,
    )
    assert exp["runs_total"] == 4
    exp = stack.wait(f"/api/v1/experiments/{exp['id']}/", _experiment_done, 120, "experiment")
    assert exp["state"] == "succeeded", exp
    assert exp["run_counts"]["succeeded"] == 4

    runs = stack.get(f"/api/v1/runs/?experiment={exp['id']}")["results"]
    assert len(runs) == 4
    assert all(run["attempts"] == 1 and "summary" not in run for run in runs)  # a light list
    # the summaries side by side
    metrics = stack.get(f"/api/v1/compare/?runs={','.join(str(r['id']) for r in runs)}")["metrics"]
    assert metrics["jobs_completed"] == [2406] * 4
    # load factor 2 halves the inter-arrival times: the same jobs arrive in half the span
    pairs = zip(runs, metrics["window_s"], strict=True)
    window = {(r["policy"], r["load_factor"]): w for r, w in pairs}
    assert window[("fifo", 2.0)] < window[("fifo", 1.0)]

    rid = runs[0]["id"]
    summary = stack.get(f"/api/v1/runs/{rid}/summary/")
    assert summary["jobs_total"] == 2406
    status, body, headers = stack.request("GET", f"/api/v1/runs/{rid}/jobs/?as=csv")
    assert status == 200 and headers["Content-Type"].startswith("text/csv")
    assert body.decode().count("\n") == 2407
    status, body, _ = stack.request("GET", f"/api/v1/runs/{rid}/jobs/?as=parquet")
    assert status == 200 and body[:4] == b"PAR1"
    series = stack.get(f"/api/v1/runs/{rid}/timeseries/")["series"]
    assert len(series["t_s"]) == len(series["utilisation"]) > 0
    ids = ",".join(str(r["id"]) for r in runs)
    compare = stack.get(f"/api/v1/compare/?runs={ids}")
    assert len(compare["metrics"]["jct_mean_s"]) == 4


def test_a_worker_killed_mid_run_leaves_the_run_retried_once_to_success(
    stack: Stack, tmp_path: Path
) -> None:
    trace = long_trace(tmp_path / "long.csv", 25_000)
    w = stack.upload(trace, "long")
    w = stack.wait(f"/api/v1/workloads/{w['id']}/", _ready, 60, "parse")
    assert w["status"] == "ready", w["error"]
    cluster = stack.post(
        "/api/v1/clusters/",
        {"name": "tiny", "spec": {"pools": [{"accelerator": "P100", "nodes": 4}]}},
        201,
    )
    exp = stack.post(
        "/api/v1/experiments/",
        {
            "name": "kill",
            "clusters": [cluster["id"]],
            "workloads": [w["id"]],
            # srtf: some 20 s on this machine, so that the run is still running when the
            # test acts (FIFO takes about a second)
            "policies": [{"name": "srtf"}],
        },
        202,
    )
    run_id = stack.get(f"/api/v1/runs/?experiment={exp['id']}")["results"][0]["id"]
    run = stack.wait(
        f"/api/v1/runs/{run_id}/",
        lambda r: r["state"] != "queued" and r["progress"] > 0,
        60,
        "the run to make progress",
    )
    assert run["state"] == "running", run
    stack.kill("worker1", signal.SIGKILL)
    stack.start_worker("worker2")
    run = stack.wait(f"/api/v1/runs/{run_id}/", lambda r: r["state"] != "running", 60, "reaper")
    run = stack.wait(
        f"/api/v1/runs/{run_id}/",
        lambda r: r["state"] in ("succeeded", "failed", "cancelled"),
        120,
        "the retried run",
    )
    assert run["state"] == "succeeded", run
    assert run["attempts"] == 2
    assert run["summary"]["jobs_total"] == 25_000
    # exactly one result: one per-job artefact, one time series and one stints table
    rows = stack.sql(
        "SELECT kind, count(*) FROM planner_artefact WHERE filename LIKE %s GROUP BY kind",
        f"run-{run_id}-%",
    )
    assert sorted(rows) == [("per_job", 1), ("stints", 1), ("timeseries", 1)]
    exp = stack.wait(f"/api/v1/experiments/{exp['id']}/", _experiment_done, 30, "experiment")
    assert exp["state"] == "succeeded"


def test_cancelling_a_running_run_stops_the_worker(stack: Stack, tmp_path: Path) -> None:
    trace = long_trace(tmp_path / "long.csv", 25_000)
    w = stack.wait(f"/api/v1/workloads/{stack.upload(trace, 'long2')['id']}/", _ready, 60)
    cluster = stack.post(
        "/api/v1/clusters/",
        {"name": "tiny2", "spec": {"pools": [{"accelerator": "P100", "nodes": 4}]}},
        201,
    )
    exp = stack.post(
        "/api/v1/experiments/",
        {
            "name": "cancel",
            "clusters": [cluster["id"]],
            "workloads": [w["id"]],
            # srtf: some 20 s on this machine, so that the run is still running when the
            # test acts (FIFO takes about a second)
            "policies": [{"name": "srtf"}],
        },
        202,
    )
    run_id = stack.get(f"/api/v1/runs/?experiment={exp['id']}")["results"][0]["id"]
    stack.wait(f"/api/v1/runs/{run_id}/", lambda r: r["progress"] > 0, 60, "progress")
    run = stack.post(f"/api/v1/runs/{run_id}/cancel/", {}, 200)
    assert run["state"] == "cancelled"
    exp = stack.get(f"/api/v1/experiments/{exp['id']}/")
    assert exp["state"] == "cancelled"
    # the worker notices at its next heartbeat and takes the next task
    deadline = time.monotonic() + 15
    while f"run {run_id}: lost" not in stack.log("worker2") + stack.log("worker1"):
        assert time.monotonic() < deadline, stack.log("worker2")
        time.sleep(0.3)
    assert stack.get(f"/api/v1/runs/{run_id}/")["state"] == "cancelled"


def test_a_study_on_real_workers_survives_a_killed_worker(stack: Stack) -> None:
    """Two worker processes evaluate a study's candidates; one worker is killed mid-study;
    the study finishes on another, keeps every evaluation finished before the kill, and its
    evaluations equal an uninterrupted in-process search of the same problem."""
    from clustersim import advisor as adv
    from clustersim.traces import read_trace

    w = stack.upload(PHILLY_SAMPLE, "study sample")
    w = stack.wait(f"/api/v1/workloads/{w['id']}/", _ready, 60, "parse")
    assert w["status"] == "ready", w["error"]
    body = {
        "name": "what to buy",
        "workload": w["id"],
        "policies": [{"name": "fifo"}],
        "types": [
            {"accelerator": "v100", "max_nodes": 6, "devices_per_node": 8},
            {"accelerator": "k80", "max_nodes": 6, "devices_per_node": 8},
        ],
        "objectives": [{"metric": "capital_usd"}, {"metric": "jct_p95_s"}],
        # the sample's long jobs: p95 JCT of 1.1-1.6 million s on these inventories
        "constraints": [{"metric": "jct_p95_s", "op": "<=", "bound": 1_500_000}],
        "budget": 10,
        "batch": 2,
        "seed": 5,
    }
    study = stack.post("/api/v1/studies/", body, 202)
    path = f"/api/v1/studies/{study['id']}/"

    def done_rows() -> dict[int, Any]:
        rows = stack.get(f"{path}evaluations/")
        return {r["id"]: r["result"] for r in rows if r["state"] == "done"}

    deadline = time.monotonic() + 90
    while len(done_rows()) < 2:
        assert time.monotonic() < deadline, "no evaluation finished"
        time.sleep(0.5)
    before = done_rows()
    # kill every worker of the stack mid-study (earlier tests may have replaced worker1)
    alive = sorted(n for n in stack.worker_names if n in stack.procs)
    assert alive
    for name in alive:
        stack.kill(name, signal.SIGKILL)
    stack.start_worker("study-worker", concurrency=2)
    final = stack.wait(
        path, lambda s: s["state"] in ("succeeded", "failed", "cancelled"), 240, "the study"
    )
    assert final["state"] == "succeeded", final
    after = done_rows()
    for pk, result in before.items():  # no finished evaluation lost or redone
        assert after[pk] == result
    answer = stack.get(f"{path}results/")
    assert not answer["partial"] and answer["recommendation"] is not None

    # the same problem searched in this process, uninterrupted: the same evaluations
    jobs, _ = read_trace(PHILLY_SAMPLE)
    problem = adv.Problem.from_dict(final["problem"])
    _, local = adv.advise(problem, jobs, budget=10, seed=5, batch=2)
    got = [(tuple(e["counts"]), e["status"]) for e in answer["evaluations"]]
    assert got == [(e.counts, e.status) for e in local.evaluations]
    rec = answer["evaluations"][answer["recommendation"]]
    assert tuple(rec["counts"]) == local.recommendation.counts  # type: ignore[union-attr]
    assert rec["metrics"]["jct_p95_s"] == pytest.approx(
        local.recommendation.metrics["jct_p95_s"],  # type: ignore[union-attr]
        rel=1e-9,
    )
