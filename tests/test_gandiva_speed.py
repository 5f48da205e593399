"""The fast paths of ``gandiva`` and ``gavel-gandiva`` (issue 13, their speed) against the code
they replace, bit for bit, on random small traces:

* the co-location mechanism's compiled detach and attach
  (:func:`clustersim.kernels.coloc_detach`, :func:`clustersim.kernels.coloc_attach`) against
  :class:`tests.reference_colocation.ReferenceCoLocator`, the numpy code before them;
* ``gandiva``'s fast paths (the compiled fill and migration check, the quiet decisions)
  and ``gavel-gandiva``'s compiled round against
  :class:`tests.reference_gandiva.ReferenceGandiva` and
  :class:`tests.reference_gandiva.ReferenceGavelGandiva`, the policies before them, with
  the reference co-location mechanism too: the whole old path against the whole new one.

Each run is compared whole: finish and start times, attained service, time per type,
preemptions, migrations, the timelines, every stint row and the policy's counters.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from clustersim import engine, kernels
from clustersim.compat import prepare
from clustersim.engine import EngineOptions, simulate
from clustersim.jobs import JobTable
from clustersim.perf import ThroughputTable
from clustersim.result import RunResult
from tests.reference_colocation import ReferenceCoLocator
from tests.reference_gandiva import ReferenceGandiva, ReferenceGavelGandiva
from tests.simple import cluster, jobs

SEEDS = range(12)


@pytest.fixture(params=[True, False], ids=["compiled", "plain"])
def kernel_mode(request: pytest.FixtureRequest) -> Iterator[bool]:
    """Each comparison with numba's kernels and with their plain-Python source."""
    if request.param and not kernels.COMPILED:
        pytest.fail("numba is a pinned dependency: the compiled kernels must be in use")
    was = kernels.compiled_in_use()
    kernels.use_compiled(request.param)
    yield request.param
    kernels.use_compiled(was)


def _trace(seed: int) -> tuple[JobTable, Any]:
    """Random jobs of Gavel's measured types (gangs of 1, 2 and 4, so that some pairs can
    form and some cannot) on a small mixed cluster, loaded enough to be oversubscribed part
    of the time and not the rest."""
    rng = np.random.default_rng(seed)
    types = list(ThroughputTable.load().job_types)
    n = int(rng.integers(8, 40))
    span = float(rng.choice([600.0, 3000.0, 12000.0]))
    submit = np.sort(rng.uniform(0, span, n)).round(1)
    gpus = rng.choice([1, 1, 1, 2, 2, 4], n)
    work = rng.uniform(200, 20000, n).round(1)
    kinds = rng.choice(types, n).tolist()
    t = jobs(list(zip(submit.tolist(), gpus.tolist(), work.tolist(), strict=True)), job_type=kinds)
    layouts = [
        [("V100", 2), ("V100", 2), ("K80", 2), ("K80", 2)],
        [("V100", 4), ("P100", 2), ("P100", 2), ("K80", 4)],
        [("V100", 2), ("V100", 1), ("V100", 1)],
    ]
    return t, cluster(layouts[seed % len(layouts)])


def _run(
    t: JobTable,
    cl: Any,
    policy: str,
    params: dict[str, Any],
    compat: str | None,
    reference: bool = False,
) -> RunResult:
    p = prepare(t, cl, policy, params=params, compat=compat)
    pol = p.policy
    if reference:
        old = ReferenceGandiva if policy == "gandiva" else ReferenceGavelGandiva
        pol = old(**pol.params())
    return simulate(p.jobs, cl, pol, p.placement, rates=p.rates, options=EngineOptions(**p.engine))


def _same(a: RunResult, b: RunResult) -> None:
    """Two runs identical to the bit."""
    for name in (
        "first_start",
        "finish",
        "attained",
        "type_time",
        "device_time",
        "preemptions",
        "migrations",
        "max_nodes",
        "seg_t",
        "seg_busy",
        "seg_queued",
        "seg_running",
    ):
        x, y = np.asarray(getattr(a, name)), np.asarray(getattr(b, name))
        assert x.dtype == y.dtype and x.tobytes() == y.tobytes(), name
    for name in ("job", "node", "devices", "start", "end"):
        x, y = getattr(a.stints, name), getattr(b.stints, name)
        assert x.tobytes() == y.tobytes(), f"stints.{name}"
    assert a.events == b.events
    assert a.policy_stats == b.policy_stats


CASES = [
    ("gandiva", {}, None),
    ("gandiva", {"quantum_s": 360.0}, None),
    ("gandiva", {"resume_s": None, "pack_threshold": 0.2}, None),
    ("gavel-gandiva", {}, "gavel"),
    ("gavel-gandiva", {"round_s": 120.0}, None),
]


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize(("policy", "params", "compat"), CASES)
def test_the_compiled_detach_and_attach_are_the_numpy_ones(
    seed: int,
    policy: str,
    params: dict[str, Any],
    compat: str | None,
    kernel_mode: bool,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    t, cl = _trace(seed)
    fast = _run(t, cl, policy, params, compat)
    monkeypatch.setattr(engine, "CoLocator", ReferenceCoLocator)
    slow = _run(t, cl, policy, params, compat)
    assert slow.policy_stats.get("colocations", 0.0) == fast.policy_stats.get("colocations", 0.0)
    _same(fast, slow)


GANDIVA = [
    {},
    {"quantum_s": 360.0},
    {"resume_s": None, "pack_threshold": 0.2},
    {"packing": False},
    {"migrate": False, "quantum_s": 30.0},
]


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("params", GANDIVA)
def test_gandiva_gives_what_it_gave_before_its_fast_paths(
    seed: int, params: dict[str, Any], kernel_mode: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    t, cl = _trace(seed)
    fast = _run(t, cl, "gandiva", params, None)
    monkeypatch.setattr(engine, "CoLocator", ReferenceCoLocator)
    slow = _run(t, cl, "gandiva", params, None, reference=True)
    _same(fast, slow)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize(("params", "compat"), [({}, "gavel"), ({"round_s": 120.0}, None)])
def test_gavel_gandiva_gives_what_it_gave_before_its_compiled_round(
    seed: int,
    params: dict[str, Any],
    compat: str | None,
    kernel_mode: bool,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    t, cl = _trace(seed)
    fast = _run(t, cl, "gavel-gandiva", params, compat)
    monkeypatch.setattr(engine, "CoLocator", ReferenceCoLocator)
    slow = _run(t, cl, "gavel-gandiva", params, compat, reference=True)
    _same(fast, slow)


def test_the_random_traces_exercise_pairs_and_migrations() -> None:
    """The comparisons above are worth something only if pairs form and end, and spread
    jobs move, on these traces (over the seeds: 79 pairs formed, 19 split, 8 moves)."""
    stats = [_run(*_trace(seed), "gandiva", {}, None).policy_stats for seed in SEEDS]
    assert sum(s["pairs_formed"] for s in stats) > 20
    assert sum(s["pairs_split"] for s in stats) > 0
    assert sum(s["locality_migrations"] for s in stats) > 0
