"""End to end through real processes: gunicorn, a Celery worker and beat, PostgreSQL, Redis.

A throwaway PostgreSQL database and a private Celery queue keep the run isolated. With
``CLUSTERSIM_REQUIRE_SERVICES=1`` (CI) a missing Redis or PostgreSQL fails these tests;
otherwise they are skipped.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.django.conftest import PHILLY_SAMPLE, ROOT

pytestmark = [pytest.mark.integration, pytest.mark.slow]

PG = {"host": "127.0.0.1", "port": 5432, "user": "postgres"}
REDIS = ("127.0.0.1", 6379)
BIN = Path(sys.executable).parent


def _missing_services() -> list[str]:
    import psycopg
    import redis

    missing = []
    try:
        redis.Redis(*REDIS, socket_connect_timeout=2).ping()
    except Exception as exc:
        missing.append(f"Redis at {REDIS[0]}:{REDIS[1]} ({exc})")
    try:
        psycopg.connect(dbname="postgres", connect_timeout=3, **PG).close()
    except Exception as exc:
        missing.append(f"PostgreSQL at {PG['host']}:{PG['port']} ({exc})")
    return missing


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Stack:
    """Throwaway database, queue, web server, worker(s) and beat."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.db = f"clustersim_it_{os.getpid()}_{uuid.uuid4().hex[:8]}"
        self.port = _free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "config.settings.production",
            "DJANGO_SECRET_KEY": secrets.token_urlsafe(50),
            "DJANGO_ALLOWED_HOSTS": "127.0.0.1,localhost",
            "DJANGO_SECURE_SSL_REDIRECT": "false",
            "DJANGO_SECURE_COOKIES": "false",
            "DATABASE_URL": f"postgres://postgres@127.0.0.1:5432/{self.db}",
            "REDIS_URL": "redis://127.0.0.1:6379/0",
            "CLUSTERSIM_CELERY_QUEUE": f"clustersim-it-{uuid.uuid4().hex[:8]}",
            "CLUSTERSIM_VAR_DIR": str(tmp / "var"),
            "CLUSTERSIM_HEARTBEAT_S": "0.5",
            "CLUSTERSIM_STALE_AFTER_S": "4",
            "CLUSTERSIM_REAPER_EVERY_S": "1",
            "CLUSTERSIM_BROKER_VISIBILITY_TIMEOUT": "3600",
            "DJANGO_LOG_LEVEL": "WARNING",
        }
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.token = ""

    # -- processes ---------------------------------------------------------------------------
    def manage(self, *args: str) -> str:
        out = subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=ROOT,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert out.returncode == 0, out.stderr[-3000:]
        return out.stdout.strip()

    def start(
        self, name: str, *cmd: str, env: dict[str, str] | None = None
    ) -> subprocess.Popen[bytes]:
        log = (self.tmp / f"{name}.log").open("wb")
        proc = subprocess.Popen(
            cmd,
            cwd=ROOT,
            env={**self.env, **(env or {})},
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.procs[name] = proc
        return proc

    def start_worker(
        self, name: str, roles: str = "", concurrency: int = 1
    ) -> subprocess.Popen[bytes]:
        """A worker serving the queues of ``roles`` (``sim``, ``parse``, ``housekeeping``,
        comma-separated; blank: all three) of this stack's private queue prefix."""
        return self.start(
            name,
            str(BIN / "celery"),
            "-A",
            "config",
            "worker",
            "--concurrency",
            str(concurrency),
            "--without-gossip",
            "--without-mingle",
            "--loglevel",
            "INFO",
            "-n",
            f"{name}@%h",
            env={"CLUSTERSIM_WORKER_QUEUES": roles},
        )

    def kill(self, name: str, sig: int = signal.SIGTERM) -> None:
        proc = self.procs.pop(name)
        if proc.poll() is None:
            os.killpg(proc.pid, sig)  # the whole group: the main process and its pool
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)

    def log(self, name: str) -> str:
        path = self.tmp / f"{name}.log"
        return path.read_text(errors="replace")[-4000:] if path.exists() else ""

    def up(self, workers: dict[str, str] | None = None) -> None:
        """Database, web server, beat and the ``workers`` (name → roles; default: one worker
        serving every queue)."""
        import psycopg

        with psycopg.connect(dbname="postgres", autocommit=True, **PG) as conn:
            conn.execute(f'CREATE DATABASE "{self.db}"')
        self.manage("migrate", "--noinput")
        self.token = self.manage("planner", "token", "it-owner", "--create-user")
        self.start(
            "web",
            str(BIN / "gunicorn"),
            "config.wsgi:application",
            "--bind",
            f"127.0.0.1:{self.port}",
            "--workers",
            "2",
        )
        self.start(
            "beat",
            str(BIN / "celery"),
            "-A",
            "config",
            "beat",
            "--loglevel",
            "INFO",
            "--schedule",
            str(self.tmp / "beat-schedule"),
        )
        for name, roles in (workers or {"worker1": ""}).items():
            self.start_worker(name, roles)
        deadline = time.monotonic() + 30
        while True:
            try:
                self.get("/api/v1/policies/")
                break
            except (urllib.error.URLError, ConnectionError):
                assert time.monotonic() < deadline, self.log("web")
                time.sleep(0.3)

    def down(self) -> None:
        import psycopg

        for name in list(self.procs):
            self.kill(name)
        with psycopg.connect(dbname="postgres", autocommit=True, **PG) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{self.db}" WITH (FORCE)')

    # -- HTTP --------------------------------------------------------------------------------
    def request(
        self,
        method: str,
        path: str,
        body: bytes | None = None,
        ctype: str | None = None,
        token: str = "",
    ) -> tuple[int, bytes, dict[str, str]]:
        req = urllib.request.Request(self.base + path, data=body, method=method)
        req.add_header("Authorization", f"Token {token or self.token}")
        if ctype:
            req.add_header("Content-Type", ctype)
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                return r.status, r.read(), dict(r.headers)
        except urllib.error.HTTPError as e:
            return e.code, e.read(), dict(e.headers)

    def get(self, path: str, token: str = "") -> Any:
        status, body, _ = self.request("GET", path, token=token)
        assert status == 200, (path, status, body[:500])
        return json.loads(body)

    def post(self, path: str, data: dict[str, Any], expect: int, token: str = "") -> Any:
        body = json.dumps(data).encode()
        status, answer, _ = self.request("POST", path, body, "application/json", token)
        assert status == expect, (path, status, answer[:1000])
        return json.loads(answer)

    def upload(self, path: Path, name: str) -> Any:
        boundary = uuid.uuid4().hex
        disposition = "Content-Disposition: form-data"
        parts = [
            f'--{boundary}\r\n{disposition}; name="name"\r\n\r\n{name}\r\n'.encode(),
            (
                f'--{boundary}\r\n{disposition}; name="file"; '
                f'filename="{path.name}"\r\nContent-Type: text/csv\r\n\r\n'
            ).encode()
            + path.read_bytes()
            + b"\r\n",
            f"--{boundary}--\r\n".encode(),
        ]
        status, body, _ = self.request(
            "POST",
            "/api/v1/workloads/",
            b"".join(parts),
            f"multipart/form-data; boundary={boundary}",
        )
        assert status == 202, body[:1000]
        return json.loads(body)

    def wait(self, path: str, done: Any, timeout: float, what: str = "") -> Any:
        deadline = time.monotonic() + timeout
        while True:
            obj = self.get(path)
            if done(obj):
                return obj
            if time.monotonic() > deadline:
                names = sorted({*self.procs, "worker1", "worker2", "beat"} - {"web"})
                logs = "\n".join(f"--- {n}\n{self.log(n)}" for n in names)
                pytest.fail(f"timed out waiting for {what or path}: {obj}\n{logs}")
            time.sleep(0.25)

    def sql(self, query: str, *params: Any) -> list[tuple[Any, ...]]:
        import psycopg

        with psycopg.connect(dbname=self.db, **PG) as conn:
            return list(conn.execute(query, params).fetchall())


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    missing = _missing_services()
    if missing:
        message = "integration services missing: " + "; ".join(missing)
        if os.environ.get("CLUSTERSIM_REQUIRE_SERVICES") == "1":
            pytest.fail(message + " (CLUSTERSIM_REQUIRE_SERVICES=1)")
        pytest.skip(message)
    s = Stack(tmp_path_factory.mktemp("stack"))
    try:
        s.up()
        yield s
    finally:
        s.down()


def _long_trace(path: Path, n: int) -> Path:
    """A Philly-format trace that keeps a small cluster busy for a while (FIFO)."""
    rng = np.random.default_rng(7)
    t0 = dt.datetime(2017, 10, 1)
    gaps = np.cumsum(rng.exponential(60.0, n)).astype(int)
    durations = rng.integers(60, 20000, n)
    gpus = rng.choice([1, 1, 1, 2, 4, 8], n)
    lines = ["timestamp,duration,num_gpus,gpu_time,cluster"]
    for t, d, g in zip(gaps.tolist(), durations.tolist(), gpus.tolist(), strict=True):
        stamp = (t0 + dt.timedelta(seconds=t)).strftime("%Y-%m-%d %H:%M:%S")
        lines.append(f"{stamp},{d},{g},{d * g},c1")
    path.write_text("\n".join(lines) + "\n")
    return path


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
    trace = _long_trace(tmp_path / "long.csv", 25_000)
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
            "policies": [{"name": "fifo"}],
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
    trace = _long_trace(tmp_path / "long.csv", 25_000)
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
            "policies": [{"name": "fifo"}],
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
