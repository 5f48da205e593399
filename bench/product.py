"""The whole product under load (issue 4, item 8): ``python -m bench product``.

Starts the production shape on loopback, from the integration tests' :class:`Stack`: a
throwaway PostgreSQL database, a private Celery queue on Redis, gunicorn (sync workers) and ONE
Celery worker with ``--concurrency 2`` (two prefork processes, as in ``docker-compose.yml``); no
beat (nothing is reaped in a healthy run). Then, all through the HTTP API with a token:

1. uploads the first 10,000 jobs of the shared Philly trace (file order: they span 52 days
   with bursts) and waits for the parse;
2. creates a cluster from the ``philly`` preset (560 P100, the cluster the trace ran on): the
   first 10k rows already queue in their bursts (FIFO's mean JCT grows from 3.4 h to 18 h
   between load 1 and 2), whereas a cluster sized to their mean load (128 GPUs) makes LAS
   take 60-90 s a run, which measures the engine's worst case rather than the product;
3. launches 4 policies (fifo, sjf, tiresias, las) × load factors (1, 1.5, 2) × seeds (0, 1,
   2) and polls the experiment until it is done: wall time, runs/minute and, from the run
   rows, each run's simulate time (``wall_s``) and claim-to-stored span. (With these
   deterministic policies and the default ``consolidate`` placement the seed changes nothing,
   so the experiment makes one run per point for the three seeds: 12 runs, not 36.);
4. runs 20 client threads (stdlib ``http.client``, a new connection a request, as gunicorn's
   sync workers close it anyway) in a closed loop without think time against four list and two
   detail endpoints: p50/p95/p99 per endpoint and overall, requests/s, server CPU a request.
   For comparison it also measures one client (service time) and 20 clients that wait 1 s
   after each response (dashboard-like polling).

Targets: the experiment in ≤ 2 minutes with two worker processes; API p95 ≤ 100 ms.

Every loop is bounded; the processes, the database and the Redis queue are removed at the end,
also after an error or SIGTERM. Knobs (environment): ``CLUSTERSIM_BENCH_WEB_WORKERS``
(gunicorn workers, default 3 as in ``docker-compose.yml``), ``CLUSTERSIM_BENCH_GUNICORN_ARGS``
(more gunicorn options, e.g. ``--worker-class gthread --threads 4``),
``CLUSTERSIM_BENCH_CONN_MAX_AGE`` (``DJANGO_CONN_MAX_AGE`` of the web server and worker,
default 60 as ``.env.example`` suggests), ``CLUSTERSIM_BENCH_JOBS`` (10000; 1000 makes the
experiment take seconds and leaves the API part the same), ``CLUSTERSIM_BENCH_CLIENTS`` (20),
``CLUSTERSIM_BENCH_API_S`` (10).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import http.client
import itertools
import os
import shlex
import signal
import statistics
import sys
import tempfile
import threading
import time
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from bench.workers import PHILLY

POLICIES = ("fifo", "sjf", "tiresias", "las")
LOAD_FACTORS = (1.0, 1.5, 2.0)
SEEDS = (0, 1, 2)
TARGET_EXPERIMENT_S = 120.0
TARGET_P95_MS = 100.0
EXPERIMENT_TIMEOUT_S = 900.0
PARSE_TIMEOUT_S = 120.0


def _env_int(name: str, default: int) -> int:
    return int(os.environ.get(name, default))


# -- the stack ------------------------------------------------------------------------------------


def _stack_module() -> Any:
    """``tests.django.test_integration`` (its conftest needs Django configured to import)."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.test")
    import django

    django.setup()
    from tests.django import test_integration

    return test_integration


def _make_stack(tmp: Path, web_workers: int, conn_max_age: int, web_args: list[str]) -> Any:
    tests = _stack_module()
    base: Any = tests.Stack

    class ProductStack(base):
        """The tests' stack with production timings, more web workers, a 2-process worker."""

        db: str
        env: dict[str, str]

        def __init__(self) -> None:
            super().__init__(tmp)
            # own names, so that anything left behind is recognisably the benchmark's
            self.db = self.db.replace("clustersim_it_", "clustersim_bench_")
            self.env["DATABASE_URL"] = f"postgres://postgres@127.0.0.1:5432/{self.db}"
            self.env["CLUSTERSIM_CELERY_QUEUE"] = f"clustersim-bench-{uuid.uuid4().hex[:8]}"
            # the tests' short heartbeat / reaper timings are for killing workers quickly
            for key in ("CLUSTERSIM_HEARTBEAT_S", "CLUSTERSIM_STALE_AFTER_S"):
                self.env.pop(key, None)
            self.env["DJANGO_CONN_MAX_AGE"] = str(conn_max_age)
            # the load test is one user's 20 closed-loop clients: far past the per-user rate
            # limit, which it does not measure
            self.env["CLUSTERSIM_THROTTLE_USER"] = "off"
            self.env["OMP_NUM_THREADS"] = "1"
            self.env["OPENBLAS_NUM_THREADS"] = "1"
            self.queue = self.env["CLUSTERSIM_CELERY_QUEUE"]
            self.backend_cpu: dict[int, float] = {}  # PostgreSQL backend pid -> CPU s

        def up(self) -> None:
            import psycopg

            with psycopg.connect(dbname="postgres", autocommit=True, **tests.PG) as conn:
                conn.execute(f'CREATE DATABASE "{self.db}"')
            self.manage("migrate", "--noinput")
            self.token = self.manage("planner", "token", "bench", "--create-user")
            (self.tmp / "var" / "static").mkdir(parents=True, exist_ok=True)  # whitenoise's root
            bin_dir = Path(sys.executable).parent
            self.start(
                "web",
                str(bin_dir / "gunicorn"),
                "config.wsgi:application",
                "--bind",
                f"127.0.0.1:{self.port}",
                "--workers",
                str(web_workers),
                *web_args,
            )
            self.start(
                "worker",
                str(bin_dir / "celery"),
                "-A",
                "config",
                "worker",
                "--concurrency",
                "2",
                "--without-gossip",
                "--without-mingle",
                "--loglevel",
                "INFO",
                "-n",
                "bench@%h",
            )
            deadline = time.monotonic() + 60
            while True:
                try:
                    self.get("/api/v1/policies/")
                    break
                except (OSError, ConnectionError) as exc:
                    if time.monotonic() > deadline:
                        raise RuntimeError(f"web server not up: {self.log('web')}") from exc
                    time.sleep(0.3)

        def down(self) -> None:
            try:
                super().down()
            finally:
                self.drop_queue()

        def drop_queue(self) -> None:
            import redis

            host, port = tests.REDIS
            r = redis.Redis(host=host, port=port, socket_connect_timeout=2)
            keys = list(r.scan_iter(match=f"*{self.queue}*", count=1000))
            if keys:
                r.delete(*keys)

        def poll(self, path: str, done: Callable[[Any], bool], timeout: float, every: float) -> Any:
            deadline = time.monotonic() + timeout
            while True:
                obj = self.get(path)
                if done(obj):
                    return obj
                if time.monotonic() > deadline:
                    raise TimeoutError(
                        f"timed out after {timeout:.0f} s waiting for {path}: {str(obj)[:500]}\n"
                        f"--- worker\n{self.log('worker')}"
                    )
                time.sleep(every)

        def cpu_s(self) -> dict[str, float]:
            """CPU seconds used so far by each started program (all its processes) and by the
            PostgreSQL backends of this database. A backend that has exited counts with the
            CPU it had when last seen (Django reopens its connection after CONN_MAX_AGE):
            :class:`CpuMeter` calls this every half second."""
            sessions = {p.pid: name for name, p in self.procs.items()}
            out = dict.fromkeys([*self.procs, "postgres"], 0.0)
            for pid, sid, cpu in _proc_cpu():
                if sid in sessions:
                    out[sessions[sid]] += cpu
                elif _is_backend_of(pid, self.db):
                    self.backend_cpu[pid] = cpu
            out["postgres"] = sum(self.backend_cpu.values())
            return out

    return ProductStack()


_TICK = os.sysconf("SC_CLK_TCK")


def _proc_cpu() -> Iterator[tuple[int, int, float]]:
    """(pid, session id, CPU seconds incl. reaped children) of every process."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        # after the command: state ppid pgrp session ... utime(12) stime cutime cstime
        yield int(entry), int(fields[3]), sum(int(x) for x in fields[11:15]) / _TICK


def _is_backend_of(pid: int, db: str) -> bool:
    """Whether the process is a PostgreSQL backend connected to ``db`` (by its title)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            title = fh.read(512)
    except OSError:
        return False
    return title.startswith(b"postgres: ") and f" {db} ".encode() in title


def _machine_busy_s() -> tuple[float, float]:
    """(busy CPU seconds, all CPU seconds) of the machine since boot."""
    with open("/proc/stat") as fh:
        values = [int(x) for x in fh.readline().split()[1:]]
    idle = values[3] + values[4]
    return (sum(values) - idle) / _TICK, sum(values) / _TICK


class CpuMeter:
    """Machine, web server, worker and benchmark-client CPU over a phase."""

    def __init__(self, stack: Any) -> None:
        self.stack = stack

    def __enter__(self) -> CpuMeter:
        self.t0 = time.monotonic()
        self.m0 = _machine_busy_s()
        self.s0 = self.stack.cpu_s()
        self.c0 = sum(os.times()[:2])
        self.load0 = os.getloadavg()[0]
        self.done = threading.Event()
        # sample the PostgreSQL backends while they live (see ProductStack.cpu_s)
        self.sampler = threading.Thread(target=self._sample, daemon=True)
        self.sampler.start()
        return self

    def _sample(self) -> None:
        while not self.done.wait(0.5):
            self.stack.cpu_s()

    def __exit__(self, *exc: object) -> None:
        self.done.set()
        self.sampler.join(timeout=10)
        self.wall = time.monotonic() - self.t0
        m1 = _machine_busy_s()
        self.machine_busy = m1[0] - self.m0[0]
        self.machine_total = m1[1] - self.m0[1]
        s1 = self.stack.cpu_s()
        self.web = s1.get("web", 0.0) - self.s0.get("web", 0.0)
        self.worker = s1.get("worker", 0.0) - self.s0.get("worker", 0.0)
        self.postgres = s1.get("postgres", 0.0) - self.s0.get("postgres", 0.0)
        self.client = sum(os.times()[:2]) - self.c0
        self.load1 = os.getloadavg()[0]

    def line(self) -> str:
        cores = os.cpu_count() or 1
        other = self.machine_busy - self.web - self.worker - self.postgres - self.client
        return (
            f"CPU over {self.wall:.1f} s on {cores} cores: machine busy "
            f"{self.machine_busy / max(self.machine_total, 1e-9) * 100:.0f} % = "
            f"{self.machine_busy:.1f} cpu-s: web {self.web:.1f} + worker {self.worker:.1f} + "
            f"PostgreSQL {self.postgres:.1f} + bench client {self.client:.1f} + other "
            f"{other:.1f} (Redis, kernel, other users' processes); load average "
            f"{self.load0:.2f} → {self.load1:.2f}"
        )


# -- the experiment -------------------------------------------------------------------------------


def _trace(path: Path, n: int) -> Path:
    """The first ``n`` jobs of the shared Philly trace (file order), with the header."""
    with PHILLY.open() as src, path.open("w") as out:
        for i, line in enumerate(src):
            if i > n:
                break
            out.write(line)
    return path


def _ts(value: str | None) -> float:
    return dt.datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp() if value else 0.0


def run_experiment(stack: Any, jobs: int, tmp: Path) -> dict[str, Any]:
    trace = _trace(tmp / f"philly-first-{jobs}.csv", jobs)
    t0 = time.monotonic()
    w = stack.upload(trace, f"philly first {jobs}")
    w = stack.poll(
        f"/api/v1/workloads/{w['id']}/",
        lambda x: x["status"] in ("ready", "failed"),
        PARSE_TIMEOUT_S,
        0.2,
    )
    if w["status"] != "ready":
        raise RuntimeError(f"parse failed: {w['error']}")
    parse_s = time.monotonic() - t0
    cluster = stack.post("/api/v1/clusters/from-preset/", {"preset": "philly"}, 201)
    body = {
        "name": "bench",
        "clusters": [cluster["id"]],
        "workloads": [w["id"]],
        "policies": [{"name": p} for p in POLICIES],
        "load_factors": list(LOAD_FACTORS),
        "seeds": list(SEEDS),
    }
    with CpuMeter(stack) as cpu:
        t1 = time.monotonic()
        exp = stack.post("/api/v1/experiments/", body, 202)
        try:
            exp = stack.poll(
                f"/api/v1/experiments/{exp['id']}/",
                lambda e: e["state"] in ("succeeded", "failed", "cancelled"),
                EXPERIMENT_TIMEOUT_S,
                0.5,
            )
        except BaseException:
            with contextlib.suppress(Exception):
                stack.post(f"/api/v1/experiments/{exp['id']}/cancel/", {}, 200)
            raise
        polled_s = time.monotonic() - t1
    runs = stack.get(f"/api/v1/runs/?experiment={exp['id']}&page_size=500")["results"]
    # lists leave the summary metrics out; /compare/ lines them up for up to 200 runs
    for i in range(0, len(runs), 200):
        chunk = runs[i : i + 200]
        ids = ",".join(str(r["id"]) for r in chunk)
        metrics = stack.get(f"/api/v1/compare/?runs={ids}")["metrics"]
        jct = metrics.get("jct_mean_s") or [None] * len(chunk)
        for r, value in zip(chunk, jct, strict=True):
            r["jct_mean_s"] = value
    return {
        "workload": w,
        "cluster": cluster,
        "experiment": exp,
        "runs": runs,
        "parse_s": parse_s,
        "polled_s": polled_s,
        "cpu": cpu,
    }


def _mean(xs: list[float]) -> float:
    return statistics.fmean(xs) if xs else float("nan")


def experiment_tables(out: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    exp, runs = out["experiment"], out["runs"]
    created, finished = _ts(exp["created"]), _ts(exp["finished_at"])
    wall = finished - created if finished else out["polled_s"]
    spans, sims, queue_waits = [], [], []
    by_worker: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for r in runs:
        start, end = _ts(r["started_at"]), _ts(r["finished_at"])
        spans.append(end - start)
        sims.append(float(r["wall_s"] or 0.0))
        queue_waits.append(start - created)
        by_worker[r["worker"]].append((start, end))
    # time a worker process spent between runs (Celery hand-over, bookkeeping, idle at the end)
    gaps = []
    for intervals in by_worker.values():
        intervals.sort()
        gaps += [b[0] - a[1] for a, b in itertools.pairwise(intervals)]
    succeeded = sum(r["state"] == "succeeded" for r in runs)
    first_start = min(_ts(r["started_at"]) for r in runs) - created
    last_two = sorted(_ts(r["finished_at"]) for r in runs)[-2:]
    summary = {
        "runs": len(runs),
        "succeeded": succeeded,
        "state": exp["state"],
        "wall_s": wall,
        "polled_s": out["polled_s"],
        "runs_per_min": succeeded / wall * 60 if wall > 0 else float("nan"),
        "simulate_sum_s": sum(sims),
        "span_sum_s": sum(spans),
        "overhead_sum_s": sum(spans) - sum(sims),
        "gap_sum_s": sum(gaps),
        "first_start_s": first_start,
        "tail_s": (last_two[-1] - last_two[0]) if len(last_two) == 2 else 0.0,
        "processes": len(by_worker),
        "busy_pct": sum(spans) / (max(len(by_worker), 1) * wall) * 100 if wall > 0 else 0.0,
        "parse_s": out["parse_s"],
        "target": "met" if wall <= TARGET_EXPERIMENT_S and succeeded == len(runs) else "MISSED",
    }
    groups: dict[tuple[str, float], list[dict[str, Any]]] = defaultdict(list)
    for r in runs:
        groups[(r["policy"], float(r["load_factor"]))].append(r)
    rows = []
    for (policy, lf), rs in sorted(
        groups.items(), key=lambda kv: (POLICIES.index(kv[0][0]), kv[0][1])
    ):
        sim = [float(r["wall_s"] or 0.0) for r in rs]
        span = [_ts(r["finished_at"]) - _ts(r["started_at"]) for r in rs]
        jct = [r["jct_mean_s"] or 0.0 for r in rs]
        rows.append(
            {
                "policy": policy,
                "load": lf,
                "n": len(rs),
                "sim_mean": _mean(sim),
                "sim_max": max(sim),
                "span_mean": _mean(span),
                "overhead_mean": _mean(span) - _mean(sim),
                "events": int(_mean([float(r["events"] or 0) for r in rs])),
                "jct_h": _mean(jct) / 3600,
            }
        )
    return summary, rows


# -- API latency ------------------------------------------------------------------------------


def _get(port: int, path: str, headers: dict[str, str]) -> tuple[int, int]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("GET", path, headers=headers)
        resp = conn.getresponse()
        body = resp.read()
        return resp.status, len(body)
    finally:
        conn.close()


def load(
    stack: Any,
    endpoints: dict[str, str],
    clients: int,
    seconds: float,
    think_s: float = 0.0,
    warmup_s: float = 2.0,
) -> tuple[dict[str, Any], CpuMeter]:
    """Closed loop: each client thread requests the endpoints in turn, waiting ``think_s``
    after each response. Latencies (ms) of 200 responses per endpoint, errors, sizes."""
    headers = {"Authorization": f"Token {stack.token}", "Accept": "application/json"}
    names = list(endpoints)
    samples: dict[str, list[float]] = {n: [] for n in names}
    sizes: dict[str, int] = dict.fromkeys(names, 0)
    errors: dict[str, int] = dict.fromkeys(names, 0)
    lock = threading.Lock()
    record = threading.Event()
    stop = threading.Event()

    def client(i: int) -> None:
        k = i
        while not stop.is_set():
            name = names[k % len(names)]
            k += 1
            t = time.perf_counter()
            try:
                status, size = _get(stack.port, endpoints[name], headers)
            except OSError:
                status, size = 0, 0
            ms = (time.perf_counter() - t) * 1000
            if record.is_set() and not stop.is_set():
                with lock:
                    if status == 200:
                        samples[name].append(ms)
                        sizes[name] = size
                    else:
                        errors[name] += 1
            if think_s:
                stop.wait(think_s)

    threads = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(clients)]
    for th in threads:
        th.start()
    time.sleep(warmup_s)
    with CpuMeter(stack) as cpu:
        record.set()
        time.sleep(seconds)
        stop.set()
    for th in threads:
        th.join(timeout=60)
    return {"samples": samples, "errors": errors, "sizes": sizes}, cpu


def _stats(xs: list[float], seconds: float) -> dict[str, float]:
    xs = sorted(xs)

    def pct(p: float) -> float:
        return xs[min(len(xs) - 1, int(p / 100 * len(xs)))] if xs else float("nan")

    return {
        "n": len(xs),
        "rps": len(xs) / seconds,
        "mean": _mean(xs),
        "p50": pct(50),
        "p95": pct(95),
        "p99": pct(99),
        "max": xs[-1] if xs else float("nan"),
    }


def latency_rows(result: dict[str, Any], seconds: float) -> list[dict[str, Any]]:
    rows = []
    everything: list[float] = []
    for name, xs in result["samples"].items():
        everything += xs
        row = {"endpoint": name, "errors": result["errors"][name], "bytes": result["sizes"][name]}
        rows.append({**row, **_stats(xs, seconds)})
    total = {"endpoint": "all", "errors": sum(result["errors"].values()), "bytes": ""}
    rows.append({**total, **_stats(everything, seconds)})
    for row in rows:
        good = row["n"] and row["p95"] <= TARGET_P95_MS and not row["errors"]
        row["ok"] = "ok" if good else "MISSED"
    return rows


# -- output -----------------------------------------------------------------------------------


def table(rows: list[dict[str, Any]], cols: list[tuple[str, str, str]]) -> str:
    head = " | ".join(h for _, h, _ in cols)
    lines = [head, "-" * len(head)]
    for r in rows:
        cells = []
        for k, h, f in cols:
            v = r[k]
            text = format(v, f) if not isinstance(v, str) else v
            cells.append(
                f"{text:<{len(h)}}" if k in ("policy", "endpoint") else f"{text:>{len(h)}}"
            )
        lines.append(" | ".join(cells))
    return "\n".join(lines)


RUN_COLS = [
    ("policy", "policy  ", ""),
    ("load", "load", ".1f"),
    ("n", "runs", "d"),
    ("sim_mean", "simulate s", ".2f"),
    ("sim_max", "max s", ".2f"),
    ("span_mean", "run span s", ".2f"),
    ("overhead_mean", "overhead s", ".2f"),
    ("events", "events", ","),
    ("jct_h", "JCT mean h", ".2f"),
]

EXP_COLS = [
    ("runs", "runs", "d"),
    ("succeeded", "ok", "d"),
    ("wall_s", "wall s", ".1f"),
    ("runs_per_min", "runs/min", ".1f"),
    ("simulate_sum_s", "Σ simulate s", ".1f"),
    ("span_sum_s", "Σ run span s", ".1f"),
    ("overhead_sum_s", "Σ overhead s", ".1f"),
    ("gap_sum_s", "Σ gaps s", ".1f"),
    ("first_start_s", "1st start s", ".2f"),
    ("tail_s", "tail s", ".1f"),
    ("busy_pct", "busy %", ".0f"),
    ("worker_cpu_s", "worker cpu s", ".1f"),
    ("target", "≤120 s", ""),
]

API_COLS = [
    ("endpoint", "endpoint                     ", ""),
    ("n", "    n", ","),
    ("errors", "errors", ","),
    ("rps", "req/s", ".1f"),
    ("bytes", "bytes", ""),
    ("mean", "mean ms", ".1f"),
    ("p50", "p50 ms", ".1f"),
    ("p95", "p95 ms", ".1f"),
    ("p99", "p99 ms", ".1f"),
    ("max", "max ms", ".1f"),
    ("ok", "p95≤100", ""),
]

BASE_COLS = [
    ("endpoint", "endpoint                     ", ""),
    ("n1", "1 client: n", ","),
    ("p50_1", "p50 ms", ".1f"),
    ("p95_1", "p95 ms", ".1f"),
    ("rps_t", "paced: req/s", ".1f"),
    ("p50_t", "p50 ms", ".1f"),
    ("p95_t", "p95 ms", ".1f"),
    ("p99_t", "p99 ms", ".1f"),
]


def bench_product() -> None:
    jobs = _env_int("CLUSTERSIM_BENCH_JOBS", 10_000)
    web_workers = _env_int("CLUSTERSIM_BENCH_WEB_WORKERS", 3)
    web_args = shlex.split(os.environ.get("CLUSTERSIM_BENCH_GUNICORN_ARGS", ""))
    conn_max_age = _env_int("CLUSTERSIM_BENCH_CONN_MAX_AGE", 60)
    clients = _env_int("CLUSTERSIM_BENCH_CLIENTS", 20)
    api_s = float(_env_int("CLUSTERSIM_BENCH_API_S", 10))

    missing = _stack_module()._missing_services()
    if missing:
        print("## Product benchmark skipped: " + "; ".join(missing) + "\n")
        return

    def on_term(signum: int, frame: Any) -> None:
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, on_term)
    with tempfile.TemporaryDirectory(prefix="clustersim-bench-") as tmp_name:
        tmp = Path(tmp_name)
        stack = _make_stack(tmp, web_workers, conn_max_age, web_args)
        try:
            stack.up()
            _report(stack, jobs, web_workers, web_args, conn_max_age, clients, api_s, tmp)
        except BaseException:
            for name in ("web", "worker"):
                print(f"--- {name} log (tail)\n{stack.log(name)}", file=sys.stderr)
            raise
        finally:
            stack.down()
            signal.signal(signal.SIGTERM, previous)


def _report(
    stack: Any,
    jobs: int,
    web_workers: int,
    web_args: list[str],
    conn_max_age: int,
    clients: int,
    api_s: float,
    tmp: Path,
) -> None:
    grid = len(POLICIES) * len(LOAD_FACTORS) * len(SEEDS)
    print(
        f"## Product: {grid}-point experiment through the API and the real worker "
        f"({jobs:,} Philly jobs)"
    )
    print(
        f"gunicorn --workers {web_workers} {shlex.join(web_args) or '(sync workers)'}, "
        f"DJANGO_CONN_MAX_AGE={conn_max_age}; one Celery "
        "worker --concurrency 2 (2 processes); PostgreSQL + Redis on loopback; "
        f"cluster: `philly` preset (560 P100)\npolicies {', '.join(POLICIES)} × load factors "
        f"{', '.join(f'{f:g}' for f in LOAD_FACTORS)} × seeds "
        f"{', '.join(map(str, SEEDS))}; target ≤ {TARGET_EXPERIMENT_S:.0f} s\n"
    )
    out = run_experiment(stack, jobs, tmp)
    summary, rows = experiment_tables(out)
    summary["worker_cpu_s"] = out["cpu"].worker
    print(table(rows, RUN_COLS))
    print(
        "\n(simulate s: the engine alone, the run row's wall_s; run span: claim → results "
        "stored, the row's started_at → finished_at; overhead: span − simulate = loading "
        "the job table, the performance model, metrics, Parquet/JSON results and storing them)\n"
    )
    s = summary
    jobs_kept = out["workload"]["summary"]["jobs"]
    print(table([s], EXP_COLS))
    print(
        f"\n(wall: experiment created → finished_at, server clock; the client polled "
        f"{s['polled_s']:.1f} s; busy %: Σ run span / ({s['processes']} processes × wall); "
        f"gaps: between one process's runs; tail: the last two runs' end times apart; "
        f"worker cpu: the worker's processes' CPU time over the experiment (it grows, too, "
        f"when other processes share the cores); uploading and parsing the trace "
        f"({jobs_kept:,} jobs kept) took "
        f"{s['parse_s']:.1f} s, not included)"
    )
    print(out["cpu"].line())
    bad = [r for r in out["runs"] if r["state"] != "succeeded"]
    if bad:
        print(f"NOT SUCCEEDED: {len(bad)} runs; errors:")
        for err in sorted({f"{r['state']}: {r['error']}" for r in bad})[:5]:
            print(f"  {err[:300]}")
    print()

    exp_id = out["experiment"]["id"]
    run_id = out["runs"][len(out["runs"]) // 2]["id"]
    endpoints = {
        "GET /api/v1/runs/": "/api/v1/runs/",
        "GET /api/v1/experiments/": "/api/v1/experiments/",
        "GET /api/v1/clusters/": "/api/v1/clusters/",
        "GET /api/v1/workloads/": "/api/v1/workloads/",
        "GET /api/v1/runs/{id}/": f"/api/v1/runs/{run_id}/",
        "GET /api/v1/experiments/{id}/": f"/api/v1/experiments/{exp_id}/",
    }
    print(
        f"## API latency: {clients} client threads, closed loop without think time, "
        f"{api_s:.0f} s after a 2 s warm-up"
    )
    print(
        f"each thread requests the {len(endpoints)} endpoints in turn (a new connection each; "
        f"the runs list holds {len(out['runs'])} runs); target p95 ≤ "
        f"{TARGET_P95_MS:.0f} ms\n"
    )
    single, _ = load(stack, endpoints, 1, 3.0, warmup_s=1.0)
    paced, _ = load(stack, endpoints, clients, api_s, think_s=1.0)
    closed, cpu = load(stack, endpoints, clients, api_s)
    api_rows = latency_rows(closed, cpu.wall)
    print(table(api_rows, API_COLS))
    n = api_rows[-1]["n"]
    print(
        f"\n({n:,} requests in {cpu.wall:.1f} s; server CPU per request: web "
        f"{cpu.web / max(n, 1) * 1000:.1f} ms + PostgreSQL "
        f"{cpu.postgres / max(n, 1) * 1000:.1f} ms)"
    )
    print(cpu.line() + "\n")

    print(
        "For comparison (not the target's load): one client back to back (service time), "
        f"and {clients} clients that wait 1 s after each response (like the dashboard's "
        "polling)\n"
    )
    base = []
    for a, b in zip(latency_rows(single, 3.0), latency_rows(paced, api_s), strict=True):
        base.append(
            {
                "endpoint": a["endpoint"],
                "n1": a["n"],
                "p50_1": a["p50"],
                "p95_1": a["p95"],
                "rps_t": b["rps"],
                "p50_t": b["p50"],
                "p95_t": b["p95"],
                "p99_t": b["p99"],
            }
        )
    print(table(base, BASE_COLS))
    print()


if __name__ == "__main__":
    bench_product()
