"""The product's real processes on loopback, for the integration and chaos tests and benchmarks.

:class:`Stack` runs gunicorn, Celery worker(s) and beat from a throwaway PostgreSQL database
and a Redis broker, and talks to them over HTTP with an API token. Where the database and the
broker come from is a *services* object:

* :class:`SharedServices`: the machine's PostgreSQL (127.0.0.1:5432) and Redis (6379), with a
  throwaway database and a private Celery queue; nothing is stopped, restarted or flushed
  (``tests/django/test_integration.py``, ``bench/product.py``);
* :class:`PrivateServices`: a :class:`PrivatePostgres` cluster (``initdb`` into a temporary
  directory) and a :class:`PrivateRedis` (``--save '' --appendonly no``) on ports of their own,
  started by the test, which may stop, kill and restart them (``tests/chaos``,
  ``bench/chaos.py``).

The Celery worker's command line is built in one place, :meth:`Stack.worker_command`; the
queues a worker serves are its *roles* (``sim``, ``parse``, ``housekeeping``, comma-separated;
blank: all three), given to it as ``CLUSTERSIM_WORKER_QUEUES`` (see the README's "Queues and
workers"); the defaults are the class attributes :attr:`Stack.worker_roles` and
:attr:`Stack.worker_concurrency`.
"""

from __future__ import annotations

import contextlib
import glob
import json
import os
import pwd
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
PHILLY_SAMPLE = ROOT / "clustersim/data/demo/philly_sample.csv"

PG: dict[str, Any] = {"host": "127.0.0.1", "port": 5432, "user": "postgres"}
REDIS = ("127.0.0.1", 6379)

#: Set by CI: missing services or binaries fail the tests instead of skipping them.
REQUIRE_SERVICES = os.environ.get("CLUSTERSIM_REQUIRE_SERVICES") == "1"


def require(missing: list[str], what: str) -> None:
    """Skip the test when ``missing`` names anything (``what`` says what is missing), or fail
    it under ``CLUSTERSIM_REQUIRE_SERVICES=1`` (CI)."""
    import pytest

    if not missing:
        return
    message = f"{what} missing: " + "; ".join(missing)
    if REQUIRE_SERVICES:
        pytest.fail(message + " (CLUSTERSIM_REQUIRE_SERVICES=1)")
    pytest.skip(message)


def free_port() -> int:
    """A TCP port nobody listens on right now (the OS picks it)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_for(check: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(0.1)


def _stop_group(proc: subprocess.Popen[bytes], sig: int, timeout: float = 20) -> None:
    """Send ``sig`` to the process group of ``proc`` (it leads a session); SIGKILL on timeout."""
    if proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, sig)
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)


# -- the machine's services -------------------------------------------------------------------


class SharedServices:
    """The machine's PostgreSQL and Redis: a throwaway database, never anything destructive."""

    redis_url = f"redis://{REDIS[0]}:{REDIS[1]}/0"

    def missing(self) -> list[str]:
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

    def database_url(self, db: str) -> str:
        return f"postgres://{PG['user']}@{PG['host']}:{PG['port']}/{db}"

    def connect(self, db: str = "postgres", **kwargs: Any) -> Any:
        import psycopg

        return psycopg.connect(dbname=db, connect_timeout=5, **PG, **kwargs)

    def create_database(self, db: str) -> None:
        with self.connect(autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{db}"')

    def drop_database(self, db: str) -> None:
        with self.connect(autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)')


# -- private services ---------------------------------------------------------------------------


def _binary(name: str) -> str | None:
    """``name`` on PATH, else in Debian's ``/usr/lib/postgresql/<version>/bin``."""
    found = shutil.which(name)
    if found:
        return found
    candidates = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    return candidates[-1] if candidates else None


def missing_binaries() -> list[str]:
    """The programs :class:`PrivateServices` needs that this machine lacks."""
    return [b for b in ("redis-server", "initdb", "postgres") if _binary(b) is None]


class PrivateRedis:
    """A ``redis-server`` of our own on its own port, holding nothing on disk.

    :meth:`kill` and :meth:`start` again give an empty broker on the same port: every queued
    message (and every unacknowledged one) is gone, as after a restart without persistence.
    """

    def __init__(self, workdir: Path) -> None:
        self.dir = workdir
        self.dir.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.proc: subprocess.Popen[bytes] | None = None
        self.starts = 0

    def start(self) -> None:
        assert self.proc is None or self.proc.poll() is not None, "redis is running"
        self.starts += 1
        log = (self.dir / "redis.log").open("ab")
        self.proc = subprocess.Popen(
            [
                str(_binary("redis-server")),
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(self.dir),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        _wait_for(self.ping, 15, f"redis-server on port {self.port}")

    def ping(self) -> bool:
        import redis

        try:
            return bool(redis.Redis(port=self.port, socket_connect_timeout=0.5).ping())
        except redis.RedisError:
            return False

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self) -> None:
        """SIGKILL: no shutdown, nothing saved (nothing would be anyway)."""
        if self.proc is not None:
            _stop_group(self.proc, signal.SIGKILL)

    def restart_empty(self) -> None:
        self.kill()
        self.start()

    def client(self) -> Any:
        import redis

        return redis.Redis(port=self.port, socket_connect_timeout=2)

    def stop(self) -> None:
        if self.proc is not None:
            _stop_group(self.proc, signal.SIGTERM)


class PrivatePostgres:
    """A PostgreSQL cluster of our own: ``initdb`` into a temporary directory, its own port.

    PostgreSQL refuses to run as root; when we are root the cluster belongs to (and its
    programs run as) the ``postgres`` user, through ``setpriv``. The data directory lives
    outside pytest's temporary directories (those are private to the current user). Trust
    authentication on loopback; durability is off (``fsync=off``): nothing here must survive
    a crash of the machine, only of the server, which :meth:`stop` with ``"immediate"``
    simulates.
    """

    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="clustersim-pg-"))
        self.data = self.dir / "data"
        self.sockets = self.dir / "sockets"
        self.sockets.mkdir()
        self.port = free_port()
        self.user = "postgres"  # the cluster's superuser role
        self.proc: subprocess.Popen[bytes] | None = None
        self._as: list[str] = []
        if os.geteuid() == 0:
            owner = self._unprivileged_user()
            entry = pwd.getpwnam(owner)
            for path in (self.dir, self.sockets):
                os.chown(path, entry.pw_uid, entry.pw_gid)
            self._as = [
                str(shutil.which("setpriv") or "/usr/bin/setpriv"),
                f"--reuid={entry.pw_uid}",
                f"--regid={entry.pw_gid}",
                "--clear-groups",
            ]
        out = subprocess.run(
            [
                *self._as,
                str(_binary("initdb")),
                "-D",
                str(self.data),
                "-U",
                self.user,
                "-A",
                "trust",
                "-E",
                "UTF8",
                "--no-sync",
                "--no-instructions",
            ],
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "LC_ALL": "C.UTF-8", "LANG": "C.UTF-8"},
        )
        if out.returncode != 0:
            raise RuntimeError(f"initdb failed: {out.stdout[-2000:]}{out.stderr[-2000:]}")

    @staticmethod
    def _unprivileged_user() -> str:
        for name in ("postgres", "nobody"):
            with contextlib.suppress(KeyError):
                pwd.getpwnam(name)
                return name
        raise RuntimeError("running as root and neither user 'postgres' nor 'nobody' exists")

    def start(self) -> None:
        assert self.proc is None or self.proc.poll() is not None, "postgres is running"
        log = (self.dir / "postgres.log").open("ab")
        self.proc = subprocess.Popen(
            [
                *self._as,
                str(_binary("postgres")),
                "-D",
                str(self.data),
                "-p",
                str(self.port),
                "-k",
                str(self.sockets),
                "-c",
                "listen_addresses=127.0.0.1",
                "-c",
                "fsync=off",
                "-c",
                "synchronous_commit=off",
                "-c",
                "full_page_writes=off",
                "-c",
                "max_connections=200",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        _wait_for(self.accepting, 60, f"postgres on port {self.port}")

    def accepting(self) -> bool:
        import psycopg

        if self.proc is None or self.proc.poll() is not None:
            raise RuntimeError(f"postgres exited: {self.log()}")
        try:
            self.connect(connect_timeout=1).close()
        except psycopg.OperationalError:
            return False
        return True

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, mode: str = "fast") -> None:
        """Stop the server: ``fast`` (SIGINT: sessions terminated, clean shutdown) or
        ``immediate`` (SIGQUIT: like a crash; the next start recovers from the WAL)."""
        if self.proc is None or self.proc.poll() is not None:
            return
        sig = {"fast": signal.SIGINT, "immediate": signal.SIGQUIT}[mode]
        self.proc.send_signal(sig)  # the postmaster stops its children itself
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            _stop_group(self.proc, signal.SIGKILL)

    def log(self) -> str:
        path = self.dir / "postgres.log"
        return path.read_text(errors="replace")[-3000:] if path.exists() else ""

    def database_url(self, db: str) -> str:
        return f"postgres://{self.user}@127.0.0.1:{self.port}/{db}"

    def connect(self, db: str = "postgres", connect_timeout: int = 5, **kwargs: Any) -> Any:
        import psycopg

        return psycopg.connect(
            host="127.0.0.1",
            port=self.port,
            user=self.user,
            dbname=db,
            connect_timeout=connect_timeout,
            **kwargs,
        )

    def destroy(self) -> None:
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


class PrivateServices:
    """A :class:`PrivatePostgres` and a :class:`PrivateRedis`, both ours to break."""

    def __init__(self, pg: PrivatePostgres, redis: PrivateRedis) -> None:
        self.pg = pg
        self.redis = redis

    @property
    def redis_url(self) -> str:
        return self.redis.url

    def missing(self) -> list[str]:
        return []

    def ensure_up(self) -> None:
        if not self.pg.running:
            self.pg.start()
        if not self.redis.running:
            self.redis.start()

    def database_url(self, db: str) -> str:
        return self.pg.database_url(db)

    def connect(self, db: str = "postgres", **kwargs: Any) -> Any:
        return self.pg.connect(db, **kwargs)

    def create_database(self, db: str) -> None:
        with self.connect(autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{db}"')

    def drop_database(self, db: str) -> None:
        if not self.pg.running:
            return  # the whole cluster goes with its directory
        with self.connect(autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)')


# -- memory of process trees ------------------------------------------------------------------


def _status_kb(pid: int, field: str) -> int:
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


def session_pids(sid: int) -> list[int]:
    """The live processes of session ``sid`` (a started program and everything it forked)."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[3]) == sid:  # stat fields after the name: state ppid pgrp session ...
            out.append(int(entry))
    return out


class MemorySampler:
    """Samples the peak resident memory (``VmHWM``) of every process of some sessions.

    A thread reads ``/proc`` every ``every`` seconds; :meth:`peak_mib` gives the highest
    ``VmHWM`` read of any one process of a session (MiB). A process that grows and dies
    between two samples is missed only for the part of its growth after the last sample.
    """

    def __init__(self, sessions: dict[str, int], every: float = 0.05) -> None:
        self.sessions = sessions
        self.every = every
        self.peak_kb: dict[tuple[str, int], int] = {}
        self.total_kb: dict[str, int] = dict.fromkeys(sessions, 0)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _sample(self) -> None:
        for name, sid in self.sessions.items():
            total = 0
            for pid in session_pids(sid):
                hwm = _status_kb(pid, "VmHWM")
                total += _status_kb(pid, "VmRSS")
                key = (name, pid)
                self.peak_kb[key] = max(self.peak_kb.get(key, 0), hwm)
            self.total_kb[name] = max(self.total_kb[name], total)

    def _loop(self) -> None:
        while not self._stop.wait(self.every):
            self._sample()

    def __enter__(self) -> MemorySampler:
        self._sample()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self._sample()

    def peak_mib(self, name: str) -> float:
        """The highest ``VmHWM`` of any one process of ``name`` (MiB)."""
        values = [kb for (n, _), kb in self.peak_kb.items() if n == name]
        return max(values, default=0) / 1024

    def total_mib(self, name: str) -> float:
        """The highest sum of ``VmRSS`` over the processes of ``name`` at one sample (MiB)."""
        return self.total_kb[name] / 1024


# -- the stack ----------------------------------------------------------------------------------


class Stack:
    """Throwaway database, queue, web server, worker(s) and beat on loopback.

    ``services`` gives the database server and the broker (default: the machine's, see
    :class:`SharedServices`); ``env`` is added to (and overrides) the processes' environment.
    """

    #: Roles (queues) the workers serve, comma-separated; blank: all three.
    worker_roles = ""
    #: Prefork processes of each worker (``--concurrency``).
    worker_concurrency = 1
    #: Per-process address-space cap of the workers (``ulimit -v``), bytes; ``None``: none.
    worker_max_address_space: int | None = None
    web_workers = 2

    def __init__(
        self,
        tmp: Path,
        services: SharedServices | PrivateServices | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        self.tmp = tmp
        self.services = services or SharedServices()
        self.db = f"clustersim_it_{os.getpid()}_{uuid.uuid4().hex[:8]}"
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "config.settings.production",
            "DJANGO_SECRET_KEY": secrets.token_urlsafe(50),
            "DJANGO_ALLOWED_HOSTS": "127.0.0.1,localhost",
            "DJANGO_SECURE_SSL_REDIRECT": "false",
            "DJANGO_SECURE_COOKIES": "false",
            "DATABASE_URL": self.services.database_url(self.db),
            "REDIS_URL": self.services.redis_url,
            "CLUSTERSIM_CELERY_QUEUE": f"clustersim-it-{uuid.uuid4().hex[:8]}",
            "CLUSTERSIM_VAR_DIR": str(tmp / "var"),
            "CLUSTERSIM_HEARTBEAT_S": "0.5",
            "CLUSTERSIM_STALE_AFTER_S": "4",
            "CLUSTERSIM_REAPER_EVERY_S": "1",
            "CLUSTERSIM_BROKER_VISIBILITY_TIMEOUT": "3600",
            "DJANGO_LOG_LEVEL": "WARNING",
            "PYTHONPATH": os.pathsep.join(
                p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p
            ),
            **(env or {}),
        }
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.worker_names: set[str] = set()
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
        self,
        name: str,
        *cmd: str,
        max_address_space: int | None = None,
        env: dict[str, str] | None = None,
    ) -> subprocess.Popen[bytes]:
        """Start ``cmd`` as ``name`` in a session of its own, logging to ``<tmp>/<name>.log``."""
        if max_address_space is not None:
            kib = str(max_address_space // 1024)
            cmd = ("/bin/sh", "-c", 'ulimit -v "$0" && exec "$@"', kib, *cmd)
        log = (self.tmp / f"{name}.log").open("ab")
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

    def worker_command(self, name: str, concurrency: int) -> list[str]:
        """The one place the Celery worker's command line is built."""
        cmd = [
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
        ]
        return cmd

    def start_worker(
        self,
        name: str = "worker1",
        roles: str | None = None,
        concurrency: int | None = None,
    ) -> subprocess.Popen[bytes]:
        """A worker ``name`` serving the queues of ``roles`` (default :attr:`worker_roles`)
        of this stack's private queue prefix."""
        cmd = self.worker_command(
            name, self.worker_concurrency if concurrency is None else concurrency
        )
        roles = self.worker_roles if roles is None else roles
        self.worker_names.add(name)
        return self.start(
            name,
            *cmd,
            max_address_space=self.worker_max_address_space,
            env={"CLUSTERSIM_WORKER_QUEUES": roles},
        )

    def start_workers(self) -> list[str]:
        """Start the stack's Celery workers (here one, ``worker1``); their names."""
        self.start_worker("worker1")
        return ["worker1"]

    def start_web(self) -> subprocess.Popen[bytes]:
        return self.start(
            "web",
            str(BIN / "gunicorn"),
            "config.wsgi:application",
            "--bind",
            f"127.0.0.1:{self.port}",
            "--workers",
            str(self.web_workers),
        )

    def start_beat(self) -> subprocess.Popen[bytes]:
        return self.start(
            "beat",
            str(BIN / "celery"),
            "-A",
            "config",
            "beat",
            "--loglevel",
            "INFO",
            "--schedule",
            str(self.tmp / f"beat-schedule-{uuid.uuid4().hex[:6]}"),
        )

    def kill(self, name: str, sig: int = signal.SIGTERM) -> None:
        """Stop ``name``'s whole process group (the main process and its pool)."""
        proc = self.procs.pop(name)
        _stop_group(proc, sig)

    def workers(self) -> dict[str, subprocess.Popen[bytes]]:
        return {n: p for n, p in self.procs.items() if n in self.worker_names}

    def log(self, name: str, tail: int = 4000) -> str:
        path = self.tmp / f"{name}.log"
        return path.read_text(errors="replace")[-tail:] if path.exists() else ""

    def logs(self, tail: int = 1500) -> str:
        """The end of the log of each worker and beat (running or exited, not stopped by us),
        without the reaper's routine lines."""
        out = []
        for name, proc in sorted(self.procs.items()):
            if name == "web":
                continue
            lines = self.log(name, 200_000).splitlines()
            kept = "\n".join(x for x in lines if "reap_stale_runs" not in x)
            state = "running" if proc.poll() is None else f"EXITED with status {proc.returncode}"
            out.append(f"--- {name} ({state})\n{kept[-tail:]}")
        return "\n".join(out)

    def wait_web(self, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while True:
            try:
                self.get("/api/v1/policies/")
                return
            except (urllib.error.URLError, ConnectionError, AssertionError):
                assert time.monotonic() < deadline, self.log("web")
                time.sleep(0.3)

    def up(self, workers: dict[str, str] | None = None) -> None:
        """Database, web server, beat and the workers: ``workers`` (name → roles), or
        :meth:`start_workers`'."""
        self.services.create_database(self.db)
        self.manage("migrate", "--noinput")
        self.token = self.manage("planner", "token", "it-owner", "--create-user")
        self.start_web()
        self.start_beat()
        if workers is None:
            self.start_workers()
        else:
            for name, roles in workers.items():
                self.start_worker(name, roles)
        self.wait_web()

    def down(self) -> None:
        for name in list(self.procs):
            self.kill(name)
        self.services.drop_database(self.db)

    # -- HTTP --------------------------------------------------------------------------------
    def request(
        self,
        method: str,
        path: str,
        body: bytes | None = None,
        ctype: str | None = None,
        token: str | None = None,
    ) -> tuple[int, bytes, dict[str, str]]:
        req = urllib.request.Request(self.base + path, data=body, method=method)
        req.add_header("Authorization", f"Token {token or self.token}")
        if ctype:
            req.add_header("Content-Type", ctype)
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                return r.status, r.read(), dict(r.headers)
        except urllib.error.HTTPError as e:
            return e.code, e.read(), dict(e.headers)

    def get(self, path: str, token: str | None = None) -> Any:
        status, body, _ = self.request("GET", path, token=token)
        assert status == 200, (path, status, body[:500])
        return json.loads(body)

    def post(self, path: str, data: dict[str, Any], expect: int, token: str | None = None) -> Any:
        status, body, _ = self.request(
            "POST", path, json.dumps(data).encode(), "application/json", token
        )
        assert status == expect, (path, status, body[:1000])
        return json.loads(body)

    def patch(self, path: str, data: dict[str, Any]) -> tuple[int, bytes]:
        status, body, _ = self.request("PATCH", path, json.dumps(data).encode(), "application/json")
        return status, body

    @staticmethod
    def multipart(content: bytes, filename: str, name: str) -> tuple[bytes, str]:
        """A workload upload form: the body and its content type."""
        boundary = uuid.uuid4().hex
        disposition = "Content-Disposition: form-data"
        body = b"".join(
            [
                f'--{boundary}\r\n{disposition}; name="name"\r\n\r\n{name}\r\n'.encode(),
                (
                    f'--{boundary}\r\n{disposition}; name="file"; '
                    f'filename="{filename}"\r\nContent-Type: application/octet-stream\r\n\r\n'
                ).encode(),
                content,
                f"\r\n--{boundary}--\r\n".encode(),
            ]
        )
        return body, f"multipart/form-data; boundary={boundary}"

    def try_upload(
        self, content: bytes, filename: str, name: str, token: str | None = None
    ) -> tuple[int, bytes]:
        body, ctype = self.multipart(content, filename, name)
        status, answer, _ = self.request("POST", "/api/v1/workloads/", body, ctype, token)
        return status, answer

    def upload(self, path: Path, name: str) -> Any:
        status, body = self.try_upload(path.read_bytes(), path.name, name)
        assert status == 202, body[:1000]
        return json.loads(body)

    def wait(self, path: str, done: Any, timeout: float, what: str = "") -> Any:
        deadline = time.monotonic() + timeout
        while True:
            obj = self.get(path)
            if done(obj):
                return obj
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what or path}: {obj}\n{self.logs()}")
            time.sleep(0.25)

    def sql(self, query: str, *params: Any) -> list[tuple[Any, ...]]:
        with self.services.connect(self.db) as conn:
            return list(conn.execute(query, params).fetchall())


def long_trace(path: Path, n: int) -> Path:
    """A Philly-format trace of ``n`` jobs that overloads a small cluster (4 P100 nodes)."""
    import datetime as dt

    import numpy as np

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
