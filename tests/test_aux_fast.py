"""The CPU/memory fast paths (issue 15, the speed of ``drf`` and ``synergy`` on full Philly)
against the code they replace, bit for bit, on random small traces with CPU and memory
limits:

* the engine's compiled start of a CPU/memory-limited job under ``consolidate``
  (:func:`clustersim.kernels.aux_place_consolidate`, :func:`clustersim.kernels.aux_refresh`)
  against its general Python loop (``clustersim.engine.AUX_REFERENCE = True``:
  :meth:`clustersim.resources.AuxModel.room`, the strategy, ``took``);
* the engine's compiled write of a decision's allocations when nothing needs checking
  (:func:`clustersim.kernels.aux_set_quick`) against its Python checks (also behind
  ``AUX_REFERENCE``);
* ``drf``'s compiled filling (:func:`clustersim.kernels.drf_fill`) against
  :class:`tests.reference_aux.ReferenceDRF`, the Python heap before it;
* ``synergy``'s compiled starts of a round (:func:`clustersim.kernels.synergy_starts`,
  :func:`clustersim.kernels.synergy_place`) against
  :class:`tests.reference_aux.ReferenceSynergy` (and ``ReferenceSynergyFair``), the Python
  allocation before them (with :func:`tests.reference_aux.reference_synergy_place` patched in
  for the cut-back step's placements too).

Each comparison runs the whole old path against the whole new one and compares finish and
start times, attained service, preemptions, the timelines, every stint row, the CPU/memory
allocations and their changes, and the policy's counters. Demands and capacities are
fractional (cores like 2.7 per device, nodes of 13.5 cores) so that the float sums and the
``floor(free / share + 1e-9)`` caps are exercised, not only whole numbers.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import scheduling.synergy
from clustersim import engine, kernels
from clustersim.aux_speed import assign_synergy_models
from clustersim.engine import simulate
from clustersim.jobs import JobTable
from clustersim.result import RunResult
from scheduling.registry import make_placement, make_policy
from tests.reference_aux import (
    ReferenceDRF,
    ReferenceSynergy,
    ReferenceSynergyFair,
    reference_greedy_fit,
    reference_synergy_place,
)
from tests.simple import cluster, fixed_rates, jobs

SEEDS = range(10)


def _trace(seed: int) -> tuple[JobTable, Any]:
    """Random jobs (gangs of 1 to 8, users of a few, fractional CPU and memory demands, some
    unknown) on a small cluster whose nodes have fractional cores and memory, loaded so that
    cores or memory, not only devices, hold jobs back part of the time."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(15, 45))
    span = float(rng.choice([2000.0, 8000.0, 20000.0]))
    submit = np.sort(rng.uniform(0, span, n)).round(1)
    gpus = rng.choice([1, 1, 1, 2, 2, 4, 8], n)
    work = rng.uniform(300, 15000, n).round(1)
    cpu = gpus * rng.choice([0.0, 1.5, 2.7, 4.0, 6.25], n)
    mem = gpus * rng.choice([0.0, 10.0, 31.3, 62.5, 90.0], n)
    cpu[rng.random(n) < 0.15] = np.nan  # unknown: the rule below fills some
    users = rng.choice(["ann", "bob", "cy", "dee", ""], n).tolist()
    t = jobs(
        list(zip(submit.tolist(), gpus.tolist(), work.tolist(), strict=True)),
        cpu=cpu.tolist(),
        mem_gb=mem.tolist(),
        user=users,
        vc=rng.choice(["a", "b"], n).tolist(),
    )
    t = assign_synergy_models(t)
    layouts = [
        [("A", 8), ("A", 8), ("A", 4), ("A", 4)],
        [("A", 8), ("A", 4), ("B", 8), ("B", 2)],
        [("A", 4), ("A", 4), ("A", 4)],
    ]
    cl = cluster(layouts[seed % len(layouts)])
    k = cl.n_nodes
    per_dev_c = rng.choice([1.5, 2.7, 3.0, 5.0], k)
    per_dev_m = rng.choice([20.0, 62.5, 77.7], k)
    cpu_cap = (cl.node_devices * per_dev_c).astype(np.float64)
    mem_cap = (cl.node_devices * per_dev_m).astype(np.float64)
    if seed % 4 == 3:
        mem_cap[:] = np.inf  # one resource unlimited
    cl = dataclasses.replace(cl, node_cpu_cores=cpu_cap, node_host_mem_gb=mem_cap)
    return t, cl


def _run(t: JobTable, cl: Any, policy: str, params: dict[str, Any], reference: bool) -> RunResult:
    pol = make_policy(policy, **params)
    if reference:
        old = {
            "drf": ReferenceDRF,
            "synergy": ReferenceSynergy,
            "synergy-fair": ReferenceSynergyFair,
        }
        if policy in old:
            pol = old[policy](**params)
    return simulate(t, cl, pol, make_placement("consolidate"), rates=fixed_rates(t, cl))


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
        "drop_reason",
    ):
        x, y = np.asarray(getattr(a, name)), np.asarray(getattr(b, name))
        assert x.dtype == y.dtype and x.tobytes() == y.tobytes(), name
    for name in ("job", "node", "devices", "start", "end"):
        x, y = getattr(a.stints, name), getattr(b.stints, name)
        assert x.tobytes() == y.tobytes(), f"stints.{name}"
    assert a.aux is not None and b.aux is not None
    for name in ("cpu_dev", "mem_dev", "changes"):
        x, y = getattr(a.aux, name), getattr(b.aux, name)
        assert x.shape == y.shape and x.tobytes() == y.tobytes(), f"aux.{name}"
    assert a.aux.never_fit == b.aux.never_fit
    assert a.events == b.events
    assert a.policy_stats == b.policy_stats


CASES = [
    ("fifo", {}),
    ("srtf", {}),
    ("tiresias", {}),
    ("drf", {}),
    ("drf", {"preemptive": True}),
    ("synergy", {}),
    ("synergy", {"allocation": "proportional"}),
    ("synergy", {"allocation": "greedy", "base": "las"}),
    ("synergy-fair", {}),
]


def _compare(seed: int, policy: str, params: dict[str, Any], mp: pytest.MonkeyPatch) -> None:
    t, cl = _trace(seed)
    fast = _run(t, cl, policy, params, reference=False)
    mp.setattr(engine, "AUX_REFERENCE", True)
    mp.setattr(scheduling.synergy, "synergy_place", reference_synergy_place)
    mp.setattr(scheduling.synergy, "_greedy_fit", reference_greedy_fit)
    slow = _run(t, cl, policy, params, reference=True)
    _same(fast, slow)
    assert np.isfinite(fast.finish).sum() > 0  # the trace ran


@pytest.fixture
def compiled() -> Iterator[None]:
    if not kernels.COMPILED:
        pytest.fail("numba is a pinned dependency: the compiled kernels must be in use")
    was = kernels.compiled_in_use()
    kernels.use_compiled(True)
    yield
    kernels.use_compiled(was)


@pytest.fixture
def plain() -> Iterator[None]:
    was = kernels.compiled_in_use()
    kernels.use_compiled(False)
    yield
    kernels.use_compiled(was)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize(("policy", "params"), CASES)
def test_the_compiled_fast_paths_give_the_old_paths_results(
    seed: int, policy: str, params: dict[str, Any], compiled: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    _compare(seed, policy, params, monkeypatch)


@pytest.mark.parametrize("seed", range(3))  # the kernels' plain source: a few seeds suffice
@pytest.mark.parametrize(("policy", "params"), CASES)
def test_the_plain_python_kernels_give_the_old_paths_results(
    seed: int, policy: str, params: dict[str, Any], plain: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    _compare(seed, policy, params, monkeypatch)


def test_the_traces_exercise_cpu_memory_limits(monkeypatch: pytest.MonkeyPatch) -> None:
    """The comparison is not vacuous: in some traces jobs start later than without the
    limits (cores or memory hold them back), the engine's fast path is the one taken, and
    Synergy cuts jobs back (TUNE's step 3) in some."""
    calls = []
    fast = engine.aux_place_consolidate

    def counted(*args: Any) -> bool:
        calls.append(1)
        return bool(fast(*args))

    monkeypatch.setattr(engine, "aux_place_consolidate", counted)
    waited = 0
    cutbacks = 0.0
    for seed in SEEDS:
        t, cl = _trace(seed)
        r = _run(t, cl, "fifo", {}, reference=False)
        plain = dataclasses.replace(
            cl,
            node_cpu_cores=np.full(cl.n_nodes, np.inf),
            node_host_mem_gb=np.full(cl.n_nodes, np.inf),
        )
        r0 = _run(t, plain, "fifo", {}, reference=False)
        waited += int(np.nansum(r.first_start) > np.nansum(r0.first_start))
        cutbacks += _run(t, cl, "synergy", {}, reference=False).policy_stats["synergy_cutbacks"]
    assert waited >= 3
    assert len(calls) > 0
    assert cutbacks > 0  # Synergy's step 3, done in Python between compiled calls, is reached


@pytest.mark.parametrize("mode", ["compiled", "plain"])
def test_the_greedy_gpu_pass_is_the_python_one(mode: str) -> None:
    """Synergy's GPU pass (:func:`clustersim.kernels.greedy_fit`) against the Python it
    replaced, on random gangs (zeros included) and capacities, and by hand: gangs 4, 8, 2, 1
    into 7 take 4 (3 left), pass 8, take 2 (1 left), take 1: positions 0, 2, 3."""
    was = kernels.compiled_in_use()
    kernels.use_compiled(mode == "compiled")
    try:
        got = kernels.greedy_fit(np.array([4, 8, 2, 1], dtype=np.int64), 7)
        assert got.tolist() == [0, 2, 3]
        rng = np.random.default_rng(5)
        for _ in range(300):
            gang = rng.choice([0, 1, 1, 2, 4, 8, 16], int(rng.integers(0, 30))).astype(np.int64)
            cap = int(rng.integers(0, 40))
            want = reference_greedy_fit(gang, cap)
            have = kernels.greedy_fit(gang, cap)
            assert have.tolist() == want.tolist(), (gang.tolist(), cap)
    finally:
        kernels.use_compiled(was)
