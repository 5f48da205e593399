"""The queues with real processes (issue 11, points 6 and 7): one worker per role, PostgreSQL
and Redis of the machine, a throwaway database and a private queue prefix (see
``tests.harness.Stack``).

- housekeeping is served while no worker serves the simulation queue: a SIGKILLed simulation
  worker's run goes back to "queued" although nothing else is running;
- fair share: another user's single run starts after at most a few of the first user's many
  queued runs, on one simulation slot;
- concurrent dispatchers on PostgreSQL keep exactly the per-user allowance in flight;
- an upload that expands past the parse's memory bound fails, and the worker lives on.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.django.conftest import ROOT
from tests.django.test_integration import _experiment_done, _ready
from tests.harness import SharedServices, Stack, require
from tests.harness import long_trace as _long_trace

pytestmark = [pytest.mark.integration, pytest.mark.slow]

PER_USER = 2
PARSE_MEMORY = 256 * 2**20


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    require(SharedServices().missing(), "integration services")
    s = Stack(tmp_path_factory.mktemp("queues"))
    s.env.update(
        {
            "CLUSTERSIM_SWEEP_EVERY_S": "1",
            "CLUSTERSIM_DISPATCH_PER_USER": str(PER_USER),
            "CLUSTERSIM_PARSE_MAX_MEMORY_BYTES": str(PARSE_MEMORY),
        }
    )
    try:
        # no simulation worker yet: each test starts the ones it needs
        s.up({"housekeeping": "parse,housekeeping"})
        yield s
    finally:
        s.down()
        _drop_queues(s.env["CLUSTERSIM_CELERY_QUEUE"])


def _drop_queues(prefix: str) -> None:
    """Delete this stack's private queues (and kombu's bindings of them) from Redis."""
    import redis

    r = redis.Redis(host="127.0.0.1", port=6379, socket_connect_timeout=2)
    keys = list(r.scan_iter(match=f"*{prefix}*", count=1000))
    if keys:
        r.delete(*keys)


def _poll(stack: Stack, path: str, done: Any, timeout: float, what: str, token: str = "") -> Any:
    deadline = time.monotonic() + timeout
    while True:
        obj = stack.get(path, token)
        if done(obj):
            return obj
        if time.monotonic() > deadline:
            logs = "\n".join(f"--- {n}\n{stack.log(n)}" for n in sorted(stack.procs))
            pytest.fail(f"timed out waiting for {what}: {obj}\n{logs}")
        time.sleep(0.2)


def _tiny_cluster(stack: Stack, name: str, token: str = "") -> Any:
    spec = {"pools": [{"accelerator": "P100", "nodes": 4}]}
    return stack.post("/api/v1/clusters/", {"name": name, "spec": spec}, 201, token)


@pytest.fixture(scope="module")
def long_workload(stack: Stack, tmp_path_factory: pytest.TempPathFactory) -> Any:
    trace = _long_trace(tmp_path_factory.mktemp("trace") / "long.csv", 25_000)
    w = stack.upload(trace, "long")
    w = _poll(stack, f"/api/v1/workloads/{w['id']}/", _ready, 120, "parse")
    assert w["status"] == "ready", w["error"]
    return w


def test_the_reaper_requeues_a_killed_workers_run_while_no_worker_serves_simulations(
    stack: Stack, long_workload: Any
) -> None:
    cluster = _tiny_cluster(stack, "reap")
    exp = stack.post(
        "/api/v1/experiments/",
        {
            "name": "reap",
            "clusters": [cluster["id"]],
            "workloads": [long_workload["id"]],
            "policies": [{"name": "fifo"}],
            "seeds": [0, 1, 2],
            "placement": "random",  # drawn from the seed: one run per seed
        },
        202,
    )
    stack.start_worker("sim1", "sim")
    runs = f"/api/v1/runs/?experiment={exp['id']}"
    running = _poll(
        stack,
        runs,
        lambda page: any(r["state"] == "running" and r["progress"] > 0 for r in page["results"]),
        90,
        "a run to make progress",
    )
    (victim,) = [r["id"] for r in running["results"] if r["state"] == "running"]
    stack.kill("sim1", signal.SIGKILL)
    killed = time.monotonic()
    # nothing serves the simulation queue now: only the housekeeping worker can requeue it
    run = _poll(
        stack, f"/api/v1/runs/{victim}/", lambda r: r["state"] == "queued", 60, "the reaper"
    )
    print(f"\nrequeued {time.monotonic() - killed:.1f} s after SIGKILL (stale after 4 s)")
    assert "lost its worker" in run["error"]
    # the queued runs wait in the database, at most the allowance sent per user
    sent = stack.sql(
        "SELECT count(*) FROM planner_run WHERE experiment_id = %s AND state = 'queued' "
        "AND dispatched_at IS NOT NULL",
        exp["id"],
    )[0][0]
    assert sent <= PER_USER
    stack.start_worker("sim2", "sim")
    done = _poll(stack, f"/api/v1/experiments/{exp['id']}/", _experiment_done, 300, "the rest")
    assert done["state"] == "succeeded", done
    assert stack.get(f"/api/v1/runs/{victim}/")["attempts"] == 2
    stack.kill("sim2")


def test_another_users_single_run_starts_after_a_few_of_the_first_users_many(
    stack: Stack, long_workload: Any
) -> None:
    other = stack.manage("planner", "token", "it-other", "--create-user")
    cluster = _tiny_cluster(stack, "fair")
    big = stack.post(
        "/api/v1/experiments/",
        {
            "name": "many",
            "clusters": [cluster["id"]],
            "workloads": [long_workload["id"]],
            "policies": [{"name": "fifo"}],
            "seeds": list(range(40)),
            "placement": "random",  # drawn from the seed: one run per seed
        },
        202,
    )
    stack.start_worker("sim3", "sim")
    _poll(
        stack,
        f"/api/v1/experiments/{big['id']}/",
        lambda e: e["run_counts"]["running"] == 1,
        60,
        "the first user's runs to start",
    )
    # the other user's own workload and cluster, and a one-run experiment
    w = _upload_as(stack, other, ROOT / "clustersim/data/demo/philly_sample.csv")
    w = _poll(stack, f"/api/v1/workloads/{w['id']}/", _ready, 60, "parse", other)
    c = _tiny_cluster(stack, "theirs", other)
    small = stack.post(
        "/api/v1/experiments/",
        {
            "name": "one",
            "clusters": [c["id"]],
            "workloads": [w["id"]],
            "policies": [{"name": "fifo"}],
        },
        202,
        other,
    )
    created = stack.sql("SELECT created FROM planner_experiment WHERE id = %s", small["id"])[0][0]
    done = _poll(
        stack, f"/api/v1/experiments/{small['id']}/", _experiment_done, 300, "one run", other
    )
    assert done["state"] == "succeeded", done
    started_before = stack.sql(
        "SELECT count(*) FROM planner_run r WHERE r.experiment_id = %s AND r.started_at > %s "
        "AND r.started_at < (SELECT started_at FROM planner_run WHERE experiment_id = %s)",
        big["id"],
        created,
        small["id"],
    )[0][0]
    queued_then = stack.get(f"/api/v1/experiments/{big['id']}/")["run_counts"]["queued"]
    print(f"\nthe first user's runs started before the other's one: {started_before}")
    # one slot: the first user's run in progress, then at most their allowance ahead
    assert started_before <= PER_USER
    assert queued_then > 20  # the first user's many were still waiting
    stack.post(f"/api/v1/experiments/{big['id']}/cancel/", {}, 200)
    stack.kill("sim3")


def _execute(stack: Stack, query: str, *params: Any) -> None:
    import psycopg

    from tests.django.test_integration import PG

    with psycopg.connect(dbname=stack.db, **PG) as conn:
        conn.execute(query, params)


def _upload_as(stack: Stack, token: str, path: Path) -> Any:
    import json
    import uuid

    boundary = uuid.uuid4().hex
    disposition = "Content-Disposition: form-data"
    body = (
        (
            f'--{boundary}\r\n{disposition}; name="file"; filename="{path.name}"\r\n'
            "Content-Type: text/csv\r\n\r\n"
        ).encode()
        + path.read_bytes()
        + f"\r\n--{boundary}--\r\n".encode()
    )
    status, answer, _ = stack.request(
        "POST", "/api/v1/workloads/", body, f"multipart/form-data; boundary={boundary}", token
    )
    assert status == 202, answer[:1000]
    return json.loads(answer)


def test_concurrent_dispatchers_keep_exactly_the_allowance_in_flight(
    stack: Stack, long_workload: Any
) -> None:
    import redis

    cluster = _tiny_cluster(stack, "race")
    exp = stack.post(
        "/api/v1/experiments/",
        {
            "name": "race",
            "clusters": [cluster["id"]],
            "workloads": [long_workload["id"]],
            "policies": [{"name": "fifo"}],
            "seeds": list(range(30)),
            "placement": "random",  # drawn from the seed: one run per seed
        },
        202,
    )
    queue = f"{stack.env['CLUSTERSIM_CELERY_QUEUE']}.sim"
    r = redis.Redis(host="127.0.0.1", port=6379)
    # no simulation worker: forget what was sent (this stack's private queue) and dispatch
    # from six processes at once
    r.delete(queue)
    _execute(
        stack, "UPDATE planner_run SET dispatched_at = NULL WHERE experiment_id = %s", exp["id"]
    )
    code = "from planner.dispatch import dispatch; print(dispatch())"
    procs = [
        subprocess.Popen(
            [sys.executable, "manage.py", "shell", "-c", code],
            cwd=ROOT,
            env=stack.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(6)
    ]
    sent = 0
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err[-2000:]
        sent += int(out.strip().splitlines()[-1])
    in_flight = stack.sql(
        "SELECT count(*) FROM planner_run WHERE experiment_id = %s AND state = 'queued' "
        "AND dispatched_at IS NOT NULL",
        exp["id"],
    )[0][0]
    # the sweeper (every second on the housekeeping worker) dispatches too: all together
    # they sent the allowance once
    assert in_flight == PER_USER
    assert sent <= PER_USER
    assert r.llen(queue) == PER_USER
    stack.post(f"/api/v1/experiments/{exp['id']}/cancel/", {}, 200)


def test_an_upload_that_expands_past_the_memory_bound_fails_and_the_worker_lives(
    stack: Stack, tmp_path: Path
) -> None:
    import gzip

    bomb = tmp_path / "bomb.csv.gz"
    with gzip.open(bomb, "wb", compresslevel=9) as fh:
        chunk = b" " * 2**20
        for _ in range(1024):  # 1 GiB of blanks, four times the bound, about 1 MB on disk
            fh.write(chunk)
    w = stack.upload(bomb, "bomb")
    w = _poll(stack, f"/api/v1/workloads/{w['id']}/", _ready, 120, "the bomb to fail")
    assert w["status"] == "failed", w
    print("\nthe bomb:", w["error"])
    assert stack.procs["housekeeping"].poll() is None  # the worker serving parse lives
    ok = stack.upload(ROOT / "clustersim/data/demo/philly_sample.csv", "after the bomb")
    ok = _poll(stack, f"/api/v1/workloads/{ok['id']}/", _ready, 60, "the next parse")
    assert ok["status"] == "ready", ok["error"]
