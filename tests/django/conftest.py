"""Fixtures of the Django tests: three users (owner, other, anonymous) and small objects.

The dashboard tests share ``web``/``other_web`` (signed-in test clients), ``fresh_cache``
(chart answers are cached), ``finish`` and ``experiment`` (a finished grid of runs).

Unit tests run on in-memory SQLite with Celery in eager mode (tasks run in-process when the
transaction's on-commit callbacks run). The integration tests (``test_integration.py``) start
real processes against PostgreSQL and Redis instead.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

ROOT = Path(__file__).resolve().parents[2]
GAVEL_TRACE = ROOT / "clustersim/data/demo/gavel_synth_multigpu_n100.trace"
PHILLY_SAMPLE = ROOT / "clustersim/data/demo/philly_sample.csv"
SMALL_SPEC = {
    "name": "small",
    "pools": [
        {"name": "v100", "accelerator": "V100", "nodes": 2, "devices_per_node": 4},
        {"name": "k80", "accelerator": "K80", "nodes": 2, "devices_per_node": 4},
    ],
}


#: A user-defined accelerator type (the API's body for one).
ACCELERATOR = {
    "name": "MyChip",
    "fp16_tflops": 100,
    "memory_gb": 32,
    "memory_bw_tbs": 1.0,
    "busy_w": 300,
    "price_per_hour": 2.0,
    "release_year": 2024,
}


@pytest.fixture(autouse=True)
def _fresh_throttle_counts() -> Iterator[None]:
    """Rate-limit and sign-in counters start empty in every test (api/throttling.py)."""
    from django.core.cache import caches

    caches["throttle"].clear()
    yield


@pytest.fixture
def owner(django_user_model: Any) -> Any:
    return django_user_model.objects.create_user("alice", password="alice-password")


@pytest.fixture
def other(django_user_model: Any) -> Any:
    return django_user_model.objects.create_user("mallory", password="mallory-password")


def _client(user: Any | None) -> APIClient:
    client = APIClient()
    if user is not None:
        token, _ = Token.objects.get_or_create(user=user)
        client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    return client


@pytest.fixture
def api(owner: Any) -> APIClient:
    """The owner's API client (token authentication)."""
    return _client(owner)


@pytest.fixture
def other_api(other: Any) -> APIClient:
    return _client(other)


@pytest.fixture
def anon_api() -> APIClient:
    return _client(None)


def _web(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def web(owner: Any) -> Client:
    """The owner's browser session (a test client signed in)."""
    return _web(owner)


@pytest.fixture
def other_web(other: Any) -> Client:
    """Another user's browser session (a client of its own, so both can be used at once)."""
    return _web(other)


@pytest.fixture
def fresh_cache() -> Iterator[None]:
    """An empty cache before and after the test (chart answers are cached)."""
    from django.core.cache import cache

    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def make_cluster() -> Any:
    from planner import services
    from planner.models import Cluster

    def make(owner: Any, name: str = "small", spec: dict[str, Any] | None = None) -> Cluster:
        spec = spec or SMALL_SPEC
        total, types = services.cluster_summary(spec, owner)
        return Cluster.objects.create(
            owner=owner, name=name, spec=spec, total_devices=total, device_types=types
        )

    return make


@pytest.fixture
def make_accelerator() -> Any:
    """A user-defined accelerator type of ``owner`` (fields overridable)."""
    from planner.models import AcceleratorType

    def make(owner: Any, name: str = "MyChip", **fields: Any) -> AcceleratorType:
        return AcceleratorType.objects.create(
            owner=owner, **{**ACCELERATOR, "name": name, **fields}
        )

    return make


@pytest.fixture
def make_workload() -> Any:
    """A parsed workload (the Gavel demo trace, 100 jobs) unless ``parse=False``."""
    from planner import parsing, services
    from planner.models import Workload

    def make(
        owner: Any, path: Path = GAVEL_TRACE, name: str = "gavel", parse: bool = True
    ) -> Workload:
        w = services.create_workload(
            owner, name=name, filename=path.name, raw=path.read_bytes(), enqueue=False
        )
        if parse:
            parsing.parse_workload(w.pk)
            w.refresh_from_db()
        return w

    return make


@pytest.fixture
def make_experiment(make_cluster: Any, make_workload: Any) -> Any:
    """An experiment of queued runs (not started) unless ``run=True`` (run synchronously)."""
    from planner import runner, services

    def make(
        owner: Any,
        policies: tuple[str, ...] = ("fifo",),
        load_factors: tuple[float, ...] = (1.0,),
        seeds: tuple[int, ...] = (0,),
        run: bool = False,
        **kw: Any,
    ) -> Any:
        cluster = kw.pop("cluster", None) or make_cluster(owner)
        workload = kw.pop("workload", None) or make_workload(owner)
        exp = services.create_experiment(
            owner,
            name=kw.pop("name", "exp"),
            clusters=[cluster],
            workloads=[workload],
            policies=[{"name": p, "params": {}} for p in policies],
            load_factors=load_factors,
            seeds=seeds,
            enqueue=False,
            **kw,
        )
        if run:
            for pk in exp.runs.values_list("pk", flat=True):
                runner.execute_run(pk, worker="test")
            exp.refresh_from_db()
        return exp

    return make


@pytest.fixture
def finished_run(owner: Any, make_experiment: Any) -> Any:
    exp = make_experiment(owner, run=True)
    return exp.runs.get()


#: Simulation outcomes by (policy, placement, load, seed), computed once per test session:
#: each test gets fresh rows, stored through the runner's own claim/store path.
_OUTCOMES: dict[tuple[str, str, float, int], Any] = {}


def _finish(exp: Any) -> Any:
    from planner import runner

    for run in exp.runs.select_related("cluster", "workload", "experiment", "owner"):
        attempt = runner.claim(run.pk, "test")
        key = (run.policy, run.placement, run.load_factor, run.seed)
        if key not in _OUTCOMES:
            with runner.Heartbeat(run.pk, attempt, threaded=False) as beat:
                _OUTCOMES[key] = runner.simulate_run(run, beat)
        assert runner.store(run, attempt, _OUTCOMES[key])
    runner.refresh_experiment(exp.pk)
    exp.refresh_from_db()
    return exp


@pytest.fixture
def finish() -> Any:
    """Run an experiment's queued runs to success, simulating each (policy, placement, load,
    seed) of the Gavel demo trace once per test session (faster than
    ``make_experiment(run=True)``)."""
    return _finish


@pytest.fixture
def experiment(owner: Any, make_experiment: Any, finish: Any) -> Any:
    """The owner's finished grid: fifo and las × load factors 1 and 2 × seeds 0 and 1 on the
    Gavel demo trace (eight runs), with the random placement so that the seeds matter."""
    exp = make_experiment(
        owner,
        policies=("fifo", "las"),
        load_factors=(1.0, 2.0),
        seeds=(0, 1),
        placement="random",
        name="grid",
    )
    return finish(exp)
