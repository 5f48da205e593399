"""Peak memory of a gunicorn worker receiving uploads: ``python -m bench.uploads``.

Issue 11, point 12: a 2 GB upload was read whole and spooled before the 256 MB check refused
it, and a 255 MB accepted upload peaked the worker at 862 MB. Target: gunicorn ≤ 400 MB
while receiving a 2 GB upload.

For each case this starts the production shape's web server alone (production settings,
``gunicorn --workers 1`` sync, as ``docker-compose.yml`` runs it) on a throwaway PostgreSQL
database and a private Redis (the parse task is enqueued there; no worker takes it), sends one
upload through the API with a streamed body, and reads the worker process's peak resident
memory (``VmHWM`` in ``/proc``) after the answer. Cases: an accepted upload of 255 MB that
compresses like a trace (CSV text), one of random bytes (the worst case: the compressed copy
is as large), and a 2 GB upload (refused: 413).

``CLUSTERSIM_BENCH_ROOT`` runs another checkout's code (to compare with the code before the
change); ``CLUSTERSIM_BENCH_UPLOAD_CASES`` picks cases (``text,random,huge``).
"""

from __future__ import annotations

import http.client
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

MB = 1_000_000
ROOT = Path(os.environ.get("CLUSTERSIM_BENCH_ROOT", Path(__file__).resolve().parents[1]))
PG = {"host": "127.0.0.1", "port": 5432, "user": "postgres"}
CHUNK = 1024 * 1024


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _text_chunks(n: int) -> Iterator[bytes]:
    """``n`` bytes of a Philly-like CSV (compresses about 5x, like real traces)."""
    rng = secrets.SystemRandom(7)
    sent = 0
    line = 0
    while sent < n:
        rows = []
        for _ in range(20000):
            line += 1
            rows.append(
                f"2017-10-{1 + line % 28:02d} {line % 24:02d}:{line % 60:02d}:{line % 59:02d},"
                f"{rng.randint(60, 900000)},{rng.choice((1, 1, 2, 4, 8))},"
                f"{rng.randint(60, 7200000)},{rng.getrandbits(24):06x}\n"
            )
        block = "".join(rows).encode()[: n - sent]
        sent += len(block)
        yield block


def _random_chunks(n: int) -> Iterator[bytes]:
    for i in range(0, n, CHUNK):
        yield os.urandom(min(CHUNK, n - i))


def _vm(pid: int, key: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) * 1024
    raise KeyError(key)


def _children(pid: int) -> list[int]:
    out = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True)
    return [int(x) for x in out.stdout.split()]


class Server:
    """gunicorn (one sync worker) with production settings on a throwaway database."""

    def __init__(self, tmp: Path, redis_port: int) -> None:
        self.db = f"clustersim_bench_up_{os.getpid()}_{uuid.uuid4().hex[:6]}"
        self.port = _free_port()
        self.tmp = tmp
        self.env = {
            **os.environ,
            "PYTHONPATH": str(ROOT),
            "DJANGO_SETTINGS_MODULE": "config.settings.production",
            "DJANGO_SECRET_KEY": secrets.token_urlsafe(50),
            "DJANGO_ALLOWED_HOSTS": "127.0.0.1,localhost",
            "DJANGO_SECURE_SSL_REDIRECT": "false",
            "DJANGO_SECURE_COOKIES": "false",
            "DATABASE_URL": f"postgres://postgres@127.0.0.1:5432/{self.db}",
            "REDIS_URL": f"redis://127.0.0.1:{redis_port}/0",
            "CLUSTERSIM_VAR_DIR": str(tmp / "var"),
            "DJANGO_LOG_LEVEL": "WARNING",
        }
        self.proc: subprocess.Popen[bytes] | None = None
        self.token = ""

    def manage(self, *args: str) -> str:
        out = subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=ROOT,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert out.returncode == 0, out.stderr[-3000:]
        return out.stdout.strip()

    def up(self) -> None:
        import psycopg

        with psycopg.connect(dbname="postgres", autocommit=True, **PG) as conn:
            conn.execute(f'CREATE DATABASE "{self.db}"')
        self.manage("migrate", "--noinput")
        self.token = self.manage("planner", "token", "bench", "--create-user")
        (self.tmp / "var" / "static").mkdir(parents=True, exist_ok=True)
        log = (self.tmp / "web.log").open("wb")
        self.proc = subprocess.Popen(
            [
                str(Path(sys.executable).parent / "gunicorn"),
                "config.wsgi:application",
                "--bind",
                f"127.0.0.1:{self.port}",
                "--workers",
                "1",
                "--timeout",
                "300",
            ],
            cwd=ROOT,
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        deadline = time.monotonic() + 60
        while True:
            try:
                c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
                c.request("GET", "/api/v1/policies/", headers=self.headers())
                if c.getresponse().status == 200:
                    break
            except OSError:
                pass
            assert time.monotonic() < deadline, (self.tmp / "web.log").read_text()[-3000:]
            time.sleep(0.3)

    def worker_pid(self) -> int:
        assert self.proc is not None
        (pid,) = _children(self.proc.pid)
        return pid

    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Token {self.token}"}

    def down(self) -> None:
        import psycopg

        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(timeout=30)
        with psycopg.connect(dbname="postgres", autocommit=True, **PG) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{self.db}" WITH (FORCE)')

    def upload(self, size: int, chunks: Iterator[bytes]) -> tuple[int, str, float]:
        """POST a multipart upload of ``size`` file bytes, streamed; status, body, seconds."""
        boundary = uuid.uuid4().hex
        head = (
            f'--{boundary}\r\nContent-Disposition: form-data; name="file"; '
            f'filename="upload.csv"\r\nContent-Type: text/csv\r\n\r\n'
        ).encode()
        tail = f"\r\n--{boundary}--\r\n".encode()
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=600)
        t0 = time.monotonic()
        conn.putrequest("POST", "/api/v1/workloads/")
        for k, v in self.headers().items():
            conn.putheader(k, v)
        conn.putheader("Content-Type", f"multipart/form-data; boundary={boundary}")
        conn.putheader("Content-Length", str(len(head) + size + len(tail)))
        conn.endheaders()
        try:
            conn.send(head)
            for chunk in chunks:
                conn.send(chunk)
            conn.send(tail)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server answered and closed before the body was sent: read its answer
        try:
            r = conn.getresponse()
            status, body = r.status, r.read().decode(errors="replace")
        except (ConnectionResetError, http.client.RemoteDisconnected) as exc:
            status, body = 0, f"no answer read: {exc!r}"
        return status, body, time.monotonic() - t0


CASES = {
    "text": (255 * MB, _text_chunks, "255 MB trace-like CSV (accepted)"),
    "random": (255 * MB, _random_chunks, "255 MB random bytes (accepted)"),
    "huge": (2000 * MB, _random_chunks, "2 GB (refused)"),
}


def measure(case: str, redis_port: int) -> dict[str, Any]:
    size, make, label = CASES[case]
    tmp = Path(tempfile.mkdtemp(prefix="clustersim-bench-up-"))
    server = Server(tmp, redis_port)
    try:
        server.up()
        pid = server.worker_pid()
        before = _vm(pid, "VmRSS")
        status, body, seconds = server.upload(size, make(size))
        peak = _vm(pid, "VmHWM")
        return {
            "case": label,
            "status": status,
            "answer": json.loads(body).get("detail", "") if body.startswith("{") else body,
            "seconds": seconds,
            "rss_before_mb": before / MB,
            "peak_mb": peak / MB,
        }
    finally:
        server.down()
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    cases = os.environ.get("CLUSTERSIM_BENCH_UPLOAD_CASES", "text,random,huge").split(",")
    redis_port = _free_port()
    redis = subprocess.Popen(
        ["redis-server", "--port", str(redis_port), "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        print(f"## Upload memory: gunicorn, 1 sync worker, production settings; code: {ROOT}\n")
        print("case | status | s | worker RSS before MB | worker peak RSS MB | answer")
        for case in cases:
            r = measure(case, redis_port)
            answer = str(r["answer"])[:90]
            print(
                f"{r['case']} | {r['status']} | {r['seconds']:.1f} | {r['rss_before_mb']:.0f} | "
                f"{r['peak_mb']:.0f} | {answer}",
                flush=True,
            )
    finally:
        redis.terminate()
        redis.wait(timeout=10)


if __name__ == "__main__":
    main()
