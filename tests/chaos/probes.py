"""Chaos probes: the real stack under lost workers, brokers and databases, and hostile uploads.

Each probe disturbs a running :class:`ChaosStack` (gunicorn, one Celery worker with two
prefork slots and beat, on a private PostgreSQL and a private Redis that the probe may kill)
and then asserts the end state the product owes its users (issue 11):

* every run and workload the probe made ends in a final state (none is left ``queued``,
  ``running``, ``pending`` or ``parsing`` :data:`SETTLE_S` after the disturbance ended);
* with the right result: a run's summary equals that of the same scenario run undisturbed
  (the stack's reference run), an upload's job count that of the same file parsed
  undisturbed, a hostile upload fails with a reason;
* nothing is duplicated: one experiment or workload per request a retrying client meant
  once, one set of result artefacts per run, one job table per workload;
* the worker is alive: its main process still runs and it parses (and simulates) new work.

The probes are plain functions raising :class:`AssertionError`: ``tests/chaos/test_chaos.py``
runs the short ones in ``make test``, ``bench/chaos.py`` the long ones in ``make bench``. Each
returns what it measured (for the benchmark's table).

What is specific to the product's configuration is in two places: :data:`WORKERS` (the
Celery workers: queues and slots) and :data:`CHAOS_ENV` (the processes' settings).
"""

from __future__ import annotations

import gzip
import json
import signal
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.harness import PHILLY_SAMPLE, PrivateServices, Stack, long_trace

MiB = 1024**2
GiB = 1024**3

#: An object not final this long (seconds) after its disturbance ended is stuck.
SETTLE_S = 90.0
#: Jobs of the trace the simulation probes run (each run takes a few seconds on the tiny
#: cluster, so that a worker or broker can be lost while runs are in flight).
LONG_JOBS = 25_000
FINAL_RUN_STATES = ("succeeded", "failed", "cancelled")
FINAL_WORKLOAD_STATES = ("ready", "failed")
TINY_CLUSTER = {"pools": [{"accelerator": "P100", "nodes": 4}]}

#: The processes' environment beside :class:`~tests.harness.Stack`'s (short heartbeat, stale
#: timeout and reaper period: a lost worker is noticed within seconds).
CHAOS_ENV = {
    # a parse that never ends shows within a probe (the default is 900 s)
    "CLUSTERSIM_PARSE_SOFT_TIME_LIMIT_S": "30",
    "CLUSTERSIM_PARSE_HARD_TIME_LIMIT_S": "40",
    # the readers' caps, low enough that the probes' uploads cross them at once
    "CLUSTERSIM_TRACE_MAX_DECOMPRESSED_BYTES": str(256 * MiB),
    "CLUSTERSIM_TRACE_MAX_HEADER_FIELDS": "10000",
    # the sweeper acts well within a probe's 90 s (the default is every 30 s)
    "CLUSTERSIM_SWEEP_EVERY_S": "1",
    # the probes send hundreds of requests from a few clients
    "CLUSTERSIM_THROTTLE_ANON": "off",
    "CLUSTERSIM_THROTTLE_USER": "off",
    "CLUSTERSIM_THROTTLE_EXPENSIVE": "off",
}


@dataclass(frozen=True)
class WorkerGroup:
    """One Celery worker process of the stack: the roles (queues) it serves, comma-separated
    (blank: all three), and its prefork slots."""

    role: str
    roles: str = ""
    concurrency: int = 2


#: The stack's Celery workers, as the production shape runs them (``docker-compose.yml``: a
#: worker per queue): the one place that says which queues are served, by how many slots.
WORKERS = (
    WorkerGroup("sim", "sim", 2),
    WorkerGroup("parse", "parse", 1),
    WorkerGroup("housekeeping", "housekeeping", 1),
)


class ChaosStack(Stack):
    """The production shape on private services: a worker per queue (:data:`WORKERS`), and beat.

    Workers run with an address-space cap (:attr:`worker_max_address_space`) so that a probe
    can never take the shared machine's memory: it is a safety net above the product's own
    bound (a parse task must stay under 2 GB), not the bound under test.
    """

    worker_groups: tuple[WorkerGroup, ...] = WORKERS
    worker_max_address_space = 4 * GiB

    def __init__(
        self, tmp: Path, services: PrivateServices, env: dict[str, str] | None = None
    ) -> None:
        super().__init__(tmp, services, {**CHAOS_ENV, **(env or {})})
        self.private = services
        self.generation = 1
        self.cluster = 0
        self.long = 0  # workload ids
        self.small = 0
        self.small_jobs = 0
        self.reference: dict[int, dict[str, Any]] = {}  # workload id -> undisturbed summary
        self.twins: list[int] = []  # clusters of the tiny cluster's spec, the first is it

    # -- set-up and clean-up ---------------------------------------------------------------
    def up(self) -> None:
        super().up()
        self.cluster = self.post("/api/v1/clusters/", {"name": "tiny", "spec": TINY_CLUSTER}, 201)[
            "id"
        ]
        self.twins = [self.cluster]
        long = self.upload(long_trace(self.tmp / "long.csv", LONG_JOBS), "long")
        small = self.upload(PHILLY_SAMPLE, "small")
        self.long, self.small = long["id"], small["id"]
        for wid in (self.long, self.small):
            w = self.wait(f"/api/v1/workloads/{wid}/", _final_workload, SETTLE_S, "parse")
            assert w["status"] == "ready", w
            if wid == self.small:
                self.small_jobs = int(w["report"]["jobs_kept"])
        _, runs = self.experiment("reference", [self.long, self.small])
        rows = self.settle_runs(runs)
        for run_id, state, _, error in rows:
            assert state == "succeeded", (run_id, state, error)
        for run_id, workload, summary in self.sql(
            "SELECT id, workload_id, summary FROM planner_run WHERE id = ANY(%s)", runs
        ):
            assert summary, run_id
            self.reference[workload] = summary

    def down(self) -> None:
        self.private.ensure_up()
        super().down()

    def execute(self, query: str, *params: Any) -> int:
        with self.services.connect(self.db) as conn:
            return int(conn.execute(query, params).rowcount)

    def ensure_up(self) -> None:
        """Services, web server, beat and one worker running (a probe may have left any
        of them stopped)."""
        self.private.ensure_up()
        for name, start in (("web", self.start_web), ("beat", self.start_beat)):
            proc = self.procs.get(name)
            if proc is None or proc.poll() is not None:
                self.procs.pop(name, None)
                start()
        if not any(p.poll() is None for p in self.workers().values()):
            self.restart_workers()
        self.wait_web()

    def reset(self) -> None:
        """After a probe: kill the workers, empty the broker and end whatever the probe left
        active, so that the next probe starts on an idle stack."""
        self.private.ensure_up()
        for name in self.workers():
            self.kill(name, signal.SIGKILL)
        self.private.redis.client().flushall()
        reason = "chaos: reset after the probe"
        self.execute(
            "UPDATE planner_run SET state = 'cancelled', error = %s, finished_at = now() "
            "WHERE state IN ('queued', 'running')",
            reason,
        )
        self.execute(
            "UPDATE planner_experiment SET state = 'cancelled', finished_at = now() "
            "WHERE state IN ('queued', 'running')"
        )
        self.execute(
            "UPDATE planner_workload SET status = 'failed', error = %s "
            "WHERE status IN ('pending', 'parsing')",
            reason,
        )
        self.ensure_up()

    def start_workers(self) -> list[str]:
        names = []
        for group in self.worker_groups:
            name = f"worker-{group.role}-{self.generation}"
            self.start_worker(name, group.roles, group.concurrency)
            names.append(name)
        return names

    def restart_workers(self, sig: int = signal.SIGTERM) -> list[str]:
        """Stop every worker with ``sig`` (each one's whole process group) and start new
        ones; their names."""
        for name in self.workers():
            self.kill(name, sig)
        self.generation += 1
        return self.start_workers()

    # -- making work ------------------------------------------------------------------------
    def experiment(
        self,
        name: str,
        workloads: list[int],
        runs: int = 1,
        *,
        same_work: bool = True,
        cluster: int | None = None,
        token: str | None = None,
    ) -> tuple[int, list[int]]:
        """Create an experiment of ``runs`` FIFO runs of each workload; its id and its runs'
        ids.

        ``same_work``: every run of a workload is the same work (so its summary is the
        reference run's): one run on each of ``runs`` clusters of the tiny cluster's spec
        (:meth:`twin_clusters`); seeds would not do, as a configuration that does not depend
        on the seed is run once for all seeds. Otherwise ``runs`` seeds of the random
        placement on one cluster (``cluster``, default the tiny one)."""
        exp = self.post(
            "/api/v1/experiments/",
            self.experiment_body(name, workloads, runs, same_work=same_work, cluster=cluster),
            202,
            token,
        )
        return exp["id"], self.runs_of(exp["id"])

    def experiment_body(
        self,
        name: str,
        workloads: list[int],
        runs: int = 1,
        *,
        same_work: bool = True,
        cluster: int | None = None,
    ) -> dict[str, Any]:
        body: dict[str, Any] = {
            "name": name,
            "workloads": workloads,
            "policies": [{"name": "fifo"}],
            "seeds": [0],
        }
        if same_work and runs > 1:
            assert cluster is None, "runs of the same work use the tiny cluster's twins"
            body["clusters"] = self.twin_clusters(runs)
        else:
            body["clusters"] = [cluster or self.cluster]
            if runs > 1:  # the random placement draws from the seed: one run per seed
                body.update(seeds=list(range(runs)), placement="random")
        return body

    def twin_clusters(self, n: int) -> list[int]:
        """``n`` clusters of the tiny cluster's spec, the tiny cluster first (made once)."""
        while len(self.twins) < n:
            name = f"tiny-twin-{len(self.twins)}"
            self.twins.append(
                self.post("/api/v1/clusters/", {"name": name, "spec": TINY_CLUSTER}, 201)["id"]
            )
        return self.twins[:n]

    def runs_of(self, experiment: int) -> list[int]:
        rows = self.sql(
            "SELECT id FROM planner_run WHERE experiment_id = %s ORDER BY id", experiment
        )
        return [r[0] for r in rows]

    def wait_running(self, runs: list[int], n: int, timeout: float = 60) -> list[int]:
        """Wait until ``n`` of ``runs`` are simulating (running, some progress); their ids."""
        deadline = time.monotonic() + timeout
        while True:
            rows = self.sql(
                "SELECT id FROM planner_run WHERE id = ANY(%s) AND state = 'running' "
                "AND progress > 0",
                runs,
            )
            if len(rows) >= n:
                return [r[0] for r in rows]
            if time.monotonic() > deadline:
                raise AssertionError(f"{n} runs never ran: {self.run_rows(runs)}\n{self.logs()}")
            time.sleep(0.1)

    def run_rows(self, runs: list[int]) -> list[tuple[Any, ...]]:
        """``(id, state, attempts, error)`` of each run."""
        return self.sql(
            "SELECT id, state, attempts, error FROM planner_run WHERE id = ANY(%s) ORDER BY id",
            runs,
        )

    # -- the end state ----------------------------------------------------------------------
    def settle_runs(self, runs: list[int], timeout: float = SETTLE_S) -> list[tuple[Any, ...]]:
        """Wait until every run is final; stuck ones fail with their rows and the logs."""
        deadline = time.monotonic() + timeout
        while True:
            rows = self.run_rows(runs)
            active = [r for r in rows if r[1] not in FINAL_RUN_STATES]
            if not active:
                return rows
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"{len(active)} of {len(rows)} runs stuck {timeout:.0f} s after the "
                    f"disturbance: {_rows_text(active)}\n{self.logs()}"
                )
            time.sleep(0.25)

    def check_runs(self, runs: list[int], timeout: float = SETTLE_S) -> list[tuple[Any, ...]]:
        """Every run final and succeeded with the reference summary, one result each; their
        experiments final."""
        rows = self.settle_runs(runs, timeout)
        bad = [r for r in rows if r[1] != "succeeded"]
        assert not bad, f"runs not succeeded: {_rows_text(bad)}"
        for run_id, workload, summary in self.sql(
            "SELECT id, workload_id, summary FROM planner_run WHERE id = ANY(%s)", runs
        ):
            assert summary == self.reference[workload], (
                f"run {run_id}: a summary unlike the undisturbed run's: "
                f"{_dict_diff(summary, self.reference[workload])}"
            )
        counts: dict[int, dict[str, int]] = {r: {} for r in runs}
        for filename, kind, n in self.sql(
            "SELECT filename, kind, count(*) FROM planner_artefact "
            "WHERE filename LIKE %s GROUP BY filename, kind",
            "run-%",
        ):
            run_id = int(filename.split("-")[1])
            if run_id in counts:
                counts[run_id][kind] = counts[run_id].get(kind, 0) + n
        want = {"per_job": 1, "stints": 1, "timeseries": 1}
        dupes = {r: c for r, c in counts.items() if c != want}
        assert not dupes, f"result artefacts per run should be {want}: {dupes}"
        states = self.sql(
            "SELECT DISTINCT e.id, e.state FROM planner_experiment e "
            "JOIN planner_run r ON r.experiment_id = e.id WHERE r.id = ANY(%s)",
            runs,
        )
        assert all(s == "succeeded" for _, s in states), f"experiments not final: {states}"
        return rows

    def settle_workloads(
        self, workloads: list[int], timeout: float = SETTLE_S
    ) -> dict[int, tuple[Any, ...]]:
        """Wait until every workload is final; ``id -> (status, error, report, description)``."""
        deadline = time.monotonic() + timeout
        while True:
            rows = {
                r[0]: r[1:]
                for r in self.sql(
                    "SELECT id, status, error, report, description FROM planner_workload "
                    "WHERE id = ANY(%s)",
                    workloads,
                )
            }
            active = {k: v[:2] for k, v in rows.items() if v[0] not in FINAL_WORKLOAD_STATES}
            if not active:
                return rows
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"{len(active)} of {len(rows)} workloads stuck {timeout:.0f} s after the "
                    f"disturbance: {active}\n{self.logs()}"
                )
            time.sleep(0.25)

    def check_small_uploads(self, workloads: list[int], timeout: float = SETTLE_S) -> None:
        """Each workload (an upload of the small trace) ready with its jobs, one job table."""
        rows = self.settle_workloads(workloads, timeout)
        for wid, (status, error, report, _) in rows.items():
            assert status == "ready", f"workload {wid} {status}: {error}"
            assert report["jobs_kept"] == self.small_jobs, (wid, report)
        tables = dict(
            self.sql(
                "SELECT w.id, count(a.id) FROM planner_workload w LEFT JOIN planner_artefact a "
                "ON a.filename = 'workload-' || w.id || '-jobs.parquet' "
                "WHERE w.id = ANY(%s) GROUP BY w.id",
                workloads,
            )
        )
        assert all(n == 1 for n in tables.values()), f"job tables per workload: {tables}"

    def check_alive(self) -> None:
        """Every worker's main process still runs."""
        for name, proc in self.workers().items():
            assert proc.poll() is None, (
                f"worker {name} exited with status {proc.returncode}:\n{self.log(name)}"
            )
        assert self.workers(), "no worker"

    def check_serving(self, simulate: bool = False) -> None:
        """The worker is alive and does new work: an upload is parsed (and, with
        ``simulate``, a run simulated) with the right result."""
        self.check_alive()
        w = self.upload(PHILLY_SAMPLE, f"after-{uuid.uuid4().hex[:6]}")
        self.check_small_uploads([w["id"]])
        if simulate:
            _, runs = self.experiment("after", [self.small])
            self.check_runs(runs)
        self.check_alive()


def _final_workload(w: dict[str, Any]) -> bool:
    return w["status"] in FINAL_WORKLOAD_STATES


def _rows_text(rows: list[tuple[Any, ...]]) -> str:
    return "; ".join(
        f"run {i} {state} (attempts {attempts}){': ' + error[:200] if error else ''}"
        for i, state, attempts, error in rows
    )


def _dict_diff(got: dict[str, Any] | None, want: dict[str, Any]) -> dict[str, Any]:
    got = got or {}
    keys = sorted(set(got) | set(want))
    return {k: (got.get(k), want.get(k)) for k in keys if got.get(k) != want.get(k)}


# -- hostile inputs -----------------------------------------------------------------------------


def gzip_bomb(expanded: int, block: int = 64 * MiB) -> bytes:
    """A gzip file of blanks that expands to ``expanded`` bytes (rounded up to ``block``):
    one member compressing ``block`` blanks, repeated (about 1,000:1)."""
    member = gzip.compress(b" " * block, compresslevel=9, mtime=0)
    return member * -(-expanded // block)


def huge_header(columns: int) -> bytes:
    """A Philly CSV whose header has ``columns`` more (distinct) columns, and one row."""
    extra = ",".join(f"extra{i}" for i in range(columns))
    row = "2017-10-01 00:00:00,60,1,60,c1" + "," * columns
    return f"timestamp,duration,num_gpus,gpu_time,cluster,{extra}\n{row}\n".encode()


# -- the probes -------------------------------------------------------------------------------


def _timed(fn: Callable[[], object]) -> float:
    t0 = time.monotonic()
    fn()
    return time.monotonic() - t0


def probe_worker_sigkill(stack: ChaosStack, runs_n: int = 6) -> dict[str, Any]:
    """SIGKILL the worker (main process and pool) while two runs simulate and more wait;
    a new worker starts. Every run succeeds once, with the undisturbed result."""
    _, runs = stack.experiment("sigkill", [stack.long], runs_n)
    killed = stack.wait_running(runs, 2)
    stack.restart_workers(signal.SIGKILL)
    settle = _timed(lambda: stack.check_runs(runs))
    attempts = dict((r[0], r[2]) for r in stack.run_rows(runs))
    assert all(attempts[r] >= 2 for r in killed), f"killed runs not run again: {attempts}"
    stack.check_serving(simulate=True)
    return {"killed": killed, "settle_s": settle}


#: Seconds a small upload may take to be ready while every simulation slot is busy (issue 12,
#: point 8: "ready within seconds"; the parse worker needs well under one).
UPLOAD_READY_S = 5.0


def probe_upload_while_simulating(
    stack: ChaosStack,
    runs_n: int = 16,
    jobs: int = 120,
    workload: int | None = None,
    cluster: int | None = None,
    policy: str = "tiresias",
) -> dict[str, Any]:
    """Fill every simulation slot with an experiment of ``runs_n`` runs (of ``workload``,
    default the long trace, with ``policy``: Tiresias makes each run of the long trace last
    several seconds), then upload a ``jobs``-job trace. It is ready, with all its jobs,
    within :data:`UPLOAD_READY_S`, and before any of the runs that held the slots when it
    was sent has finished: parsing has a queue and a worker of its own and never waits for a
    simulation slot."""
    # one run per seed of the random placement: runs_n runs on one cluster
    body = stack.experiment_body(
        "busy", [workload or stack.long], runs_n, same_work=False, cluster=cluster
    )
    body["policies"] = [{"name": policy}]
    runs = stack.runs_of(stack.post("/api/v1/experiments/", body, 202)["id"])
    assert len(runs) == runs_n, runs
    slots = sum(g.concurrency for g in stack.worker_groups if "sim" in g.roles.split(","))
    busy = stack.wait_running(runs, slots)
    trace = long_trace(stack.tmp / f"small-{uuid.uuid4().hex[:6]}.csv", jobs)
    t0 = time.monotonic()
    wid = stack.upload(trace, "uploaded-while-busy")["id"]
    while True:
        (status, error, report), *_ = stack.sql(
            "SELECT status, error, report FROM planner_workload WHERE id = %s", wid
        )
        took = time.monotonic() - t0
        if status in FINAL_WORKLOAD_STATES or took > 10 * UPLOAD_READY_S:
            break
        time.sleep(0.05)
    states = dict(
        stack.sql("SELECT state, count(*) FROM planner_run WHERE id = ANY(%s) GROUP BY state", runs)
    )
    still = stack.sql(
        "SELECT count(*) FROM planner_run WHERE id = ANY(%s) AND state = 'running'", busy
    )[0][0]
    assert status == "ready", f"the upload is {status} after {took:.1f} s: {error}"
    assert report["jobs_kept"] == jobs, report
    assert took <= UPLOAD_READY_S, f"the upload took {took:.1f} s; runs: {states}"
    # it did not wait for a slot: the runs that held them then still do, the rest still wait
    assert still == len(busy), f"the upload waited for a simulation to end: {states}"
    assert states.get("queued", 0) == runs_n - len(busy), states
    return {"upload_ready_s": took, "runs": states, "slots": slots}


def probe_broker_restart(stack: ChaosStack, runs_n: int = 6) -> dict[str, Any]:
    """Restart Redis empty while two runs simulate and more runs and an upload wait in the
    queue: their messages are gone. Every run and the upload still end right."""
    _, runs = stack.experiment("broker-restart", [stack.long], runs_n)
    stack.wait_running(runs, 2)
    upload = stack.upload(PHILLY_SAMPLE, "queued-upload")["id"]
    stack.private.redis.restart_empty()
    settle = _timed(lambda: stack.check_runs(runs))
    stack.check_small_uploads([upload])
    stack.check_serving(simulate=True)
    return {"settle_s": settle}


def probe_create_while_broker_down(stack: ChaosStack, down_s: float = 3.0) -> dict[str, Any]:
    """Create an experiment and upload a trace while Redis is down, as a client that retries
    until it gets a 2xx: each request leaves exactly one object, which ends right."""
    tag = uuid.uuid4().hex[:6]
    exp_name, upload_name = f"created-while-down-{tag}", f"uploaded-while-down-{tag}"
    body = json.dumps(stack.experiment_body(exp_name, [stack.small])).encode()
    content = PHILLY_SAMPLE.read_bytes()

    def create() -> int:
        return stack.request("POST", "/api/v1/experiments/", body, "application/json")[0]

    def upload() -> int:
        return stack.try_upload(content, "philly.csv", upload_name)[0]

    stack.private.redis.kill()
    answers: dict[str, list[int]] = {"experiment": [create()], "upload": [upload()]}
    time.sleep(down_s)
    stack.private.redis.start()
    for what, send in (("experiment", create), ("upload", upload)):
        for _ in range(20):
            if 200 <= answers[what][-1] < 300:
                break
            time.sleep(1)
            answers[what].append(send())
        assert 200 <= answers[what][-1] < 300, f"{what}: answers {answers[what]}"
    exps = [r[0] for r in stack.sql("SELECT id FROM planner_experiment WHERE name = %s", exp_name)]
    workloads = [
        r[0] for r in stack.sql("SELECT id FROM planner_workload WHERE name = %s", upload_name)
    ]
    assert len(exps) == 1 and len(workloads) == 1, (
        f"a client retried until 2xx (answers {answers}) and got {len(exps)} experiments and "
        f"{len(workloads)} workloads: a failed request stored its object"
    )
    stack.check_runs(stack.runs_of(exps[0]))
    stack.check_small_uploads(workloads)
    stack.check_serving()
    return {"answers": answers}


def probe_edit_while_parsing(stack: ChaosStack, tries: int = 20) -> dict[str, Any]:
    """Upload, then PATCH the description again and again while the worker parses it: the
    edit and the parse result both survive (``tries`` uploads, four clients at a time)."""
    content = PHILLY_SAMPLE.read_bytes()
    tag = uuid.uuid4().hex[:6]

    def one(i: int) -> tuple[int, str]:
        status, body = stack.try_upload(content, "philly.csv", f"edit-{tag}-{i}")
        assert status == 202, body[:500]
        wid = json.loads(body)["id"]
        deadline = time.monotonic() + 15
        k = 0
        while True:
            k += 1
            status, body = stack.patch(f"/api/v1/workloads/{wid}/", {"description": f"edit {k}"})
            assert status == 200, body[:500]
            if json.loads(body)["status"] in FINAL_WORKLOAD_STATES:
                return wid, f"edit {k}"
            if time.monotonic() > deadline:
                return wid, f"edit {k}"
            time.sleep(0.01)

    with ThreadPoolExecutor(4) as pool:
        edited = dict(pool.map(one, range(tries)))
    rows = stack.settle_workloads(list(edited))
    lost = {w: rows[w][3] for w, d in edited.items() if rows[w][3] != d}
    assert not lost, f"edits lost (workload: description now): {lost}"
    stack.check_small_uploads(list(edited))
    stack.check_serving()
    return {"uploads": tries}


def probe_gzip_bomb(stack: ChaosStack, expanded: int = 5 * GiB) -> dict[str, Any]:
    """Upload a small gzip that expands to ``expanded`` bytes of blanks: it fails with a
    reason naming the limit, and the worker lives on."""
    bomb = gzip_bomb(expanded)
    status, body = stack.try_upload(bomb, "bomb.csv.gz", "bomb")
    assert status == 202, body[:500]
    wid = json.loads(body)["id"]
    status_, error, _, _ = stack.settle_workloads([wid])[wid]
    assert status_ == "failed", f"the bomb parsed: {status_}"
    assert _names_a_limit(error, ("decompress", "expand")), f"unclear reason: {error!r}"
    stack.check_serving()
    return {"upload_mb": len(bomb) / MiB, "error": error}


def probe_huge_header(
    stack: ChaosStack, columns: int = 100_000, uploads: int = 2
) -> dict[str, Any]:
    """Upload ``uploads`` traces whose header has ``columns`` columns, then a good one: the
    bad ones fail with a reason naming the limit; the good one parses; the worker lives on."""
    content = huge_header(columns)
    bad = []
    for i in range(uploads):
        status, body = stack.try_upload(content, "wide.csv", f"wide-{i}")
        assert status == 202, body[:500]
        bad.append(json.loads(body)["id"])
    good = stack.upload(PHILLY_SAMPLE, "after-wide")["id"]
    rows = stack.settle_workloads([*bad, good])
    for wid in bad:
        status, error, _, _ = rows[wid]
        assert status == "failed", f"workload {wid} with {columns} columns: {status}"
        assert _names_a_limit(error, ("header", "column", "field", "line")), repr(error)
    stack.check_small_uploads([good])
    stack.check_serving()
    return {"upload_mb": len(content) / MiB}


def probe_database_outage(
    stack: ChaosStack, outage_s: float = 20.0, runs_n: int = 20
) -> dict[str, Any]:
    """Stop PostgreSQL for ``outage_s`` while two runs simulate, more runs wait in the queue
    and an upload waits to be parsed; start it again. Everything ends right.

    Each waiting run's task meets the outage and retries with a random back-off; whether its
    retries run out within the outage is chance (about one in six for 20 s), hence many
    waiting runs."""
    _, runs = stack.experiment("db-outage", [stack.long], runs_n)
    stack.wait_running(runs, 2)
    upload = stack.upload(PHILLY_SAMPLE, "upload-before-outage")["id"]
    stack.private.pg.stop("fast")
    time.sleep(outage_s)
    stack.private.pg.start()
    settle = _timed(lambda: stack.check_runs(runs))
    stack.check_small_uploads([upload])
    stack.check_serving(simulate=True)
    return {"settle_s": settle}


def _names_a_limit(error: str, words: tuple[str, ...]) -> bool:
    """The reason says what was too big (one of ``words``) and that a limit was crossed."""
    text = error.lower()
    limit = any(w in text for w in ("limit", "too large", "too long", "too many", "exceed", "max"))
    return limit and any(w in text for w in words)
