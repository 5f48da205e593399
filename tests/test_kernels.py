"""The compiled kernels against naive loops and against the plain-Python run of their source."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clustersim import engine, kernels
from clustersim.engine import simulate
from clustersim.kernels import BAD_INACTIVE, BAD_TWICE, best_fit_node, plan_preemptive
from scheduling import placement, tiresias
from scheduling.registry import make_placement, make_policy
from tests.simple import cluster, fixed_rates, jobs
from tests.test_engine_reference import PARAMS, scenarios


def naive_plan(
    run: list[int],
    nds: list[int],
    types: list[int],
    rate: np.ndarray,
    cap: list[int],
    blocking: bool,
    alloc_type: list[int],
    alloc_n: list[int],
) -> tuple[list[tuple[int, int, int]], list[int], list[int]]:
    """(start, kept, stop) the way the engine's docstring says, one job at a time."""
    left = list(cap)
    start: list[tuple[int, int, int]] = []
    kept: list[int] = []
    for j, d, want in zip(run, nds, types, strict=True):
        cur = alloc_type[j]
        if want >= 0:
            t = want if rate[j, want] > 0 else -1
        elif cur >= 0 and alloc_n[j] == d and left[cur] >= d:
            t = cur
        else:
            ok = [k for k in range(len(left)) if rate[j, k] > 0 and left[k] >= d]
            t = max(ok, key=lambda k: (rate[j, k], -k)) if ok else -1
        if t < 0 or left[t] < d:
            if blocking:
                break
            continue
        left[t] -= d
        if cur == t and alloc_n[j] == d:
            kept.append(j)
        else:
            start.append((j, t, d))
        if not any(left):
            break
    stop = sorted(j for j in range(len(alloc_type)) if alloc_type[j] >= 0 and j not in kept)
    return start, kept, stop


def call(fn: Any, run: np.ndarray, nds: np.ndarray, types: np.ndarray, **st: Any) -> tuple:
    n = len(st["gang"])
    out = [np.full(max(len(run), 1), -7, dtype=np.int64) for _ in range(4)]
    stop = np.full(max(len(st["running_jobs"]), 1), -7, dtype=np.int64)
    mark = np.zeros(n, dtype=np.int8)
    got = fn(
        run,
        nds,
        types,
        st["gang"],
        st["rate"],
        st["cap"].copy(),
        st["blocking"],
        st["running"],
        st["alloc_n"],
        st["alloc_type"],
        st["is_active"],
        st["running_jobs"],
        mark,
        *out,
        stop,
    )
    assert not mark.any(), "the scratch flags must be left clear"
    n_go, n_kept, n_stop, bad, why = got
    start = list(
        zip(out[0][:n_go].tolist(), out[1][:n_go].tolist(), out[2][:n_go].tolist(), strict=True)
    )
    return start, out[3][:n_kept].tolist(), stop[:n_stop].tolist(), bad, why


@st.composite
def decisions(draw: Any) -> dict[str, Any]:
    n_types = draw(st.integers(1, 3))
    n = draw(st.integers(1, 40))
    gang = np.array(draw(st.lists(st.integers(1, 8), min_size=n, max_size=n)), dtype=np.int64)
    rate = np.array(
        draw(
            st.lists(
                st.lists(st.sampled_from([0.0, 0.5, 1.0, 2.0]), min_size=n_types, max_size=n_types),
                min_size=n,
                max_size=n,
            )
        ),
        dtype=np.float64,
    ).reshape(n, n_types)
    cap = np.array(draw(st.lists(st.integers(0, 16), min_size=n_types, max_size=n_types)))
    # some jobs run, within capacity, on a type they can use
    alloc_type = np.full(n, -1, dtype=np.int64)
    alloc_n = np.zeros(n, dtype=np.int64)
    left = cap.copy()
    for j in draw(st.permutations(range(n)))[: draw(st.integers(0, n))]:
        for t in range(n_types):
            if rate[j, t] > 0 and left[t] >= gang[j]:
                alloc_type[j], alloc_n[j] = t, gang[j]
                left[t] -= gang[j]
                break
    running = alloc_type >= 0
    run = np.array(draw(st.permutations(range(n))), dtype=np.int64)
    run = run[: draw(st.integers(0, n))]
    # running jobs are always active; a decision may leave some of them out
    run = np.unique(np.concatenate([run, np.flatnonzero(running)[: draw(st.integers(0, n))]]))
    run = np.array(draw(st.permutations(run.tolist())), dtype=np.int64)
    ndev = draw(st.booleans())
    nds = np.array([draw(st.integers(1, 8)) for _ in run], dtype=np.int64) if ndev else None
    typed = draw(st.booleans())
    types = (
        np.array([draw(st.integers(-1, n_types - 1)) for _ in run], dtype=np.int64)
        if typed
        else None
    )
    return {
        "run": run,
        "nds": nds,
        "types": types,
        "gang": gang,
        "rate": rate,
        "cap": cap.astype(np.int64),
        "blocking": draw(st.booleans()),
        "running": running,
        "alloc_n": alloc_n,
        "alloc_type": alloc_type,
        "is_active": np.ones(n, dtype=bool),
        "running_jobs": np.flatnonzero(running).astype(np.int64)[::-1].copy(),
    }


@settings(max_examples=400, deadline=None)
@given(dec=decisions())
def test_the_plan_is_what_the_loop_takes(dec: dict[str, Any]) -> None:
    run, nds, types = dec.pop("run"), dec.pop("nds"), dec.pop("types")
    empty = np.zeros(0, dtype=np.int64)
    got = call(
        plan_preemptive,
        run,
        empty if nds is None else nds,
        empty if types is None else types,
        **dec,
    )
    start, kept, stop = naive_plan(
        run.tolist(),
        dec["gang"][run].tolist() if nds is None else nds.tolist(),
        [-1] * len(run) if types is None else types.tolist(),
        dec["rate"],
        dec["cap"].tolist(),
        dec["blocking"],
        dec["alloc_type"].tolist(),
        dec["alloc_n"].tolist(),
    )
    assert got == (start, kept, stop, -1, 0)
    # the compiled kernel and the plain-Python run of its source agree
    if kernels.COMPILED:
        plain = call(
            plan_preemptive.py_func,
            run,
            empty if nds is None else nds,
            empty if types is None else types,
            **dec,
        )
        assert plain == got


def one_type(gang: list[int], cap: int, running: list[int]) -> dict[str, Any]:
    n = len(gang)
    alloc_n = np.zeros(n, dtype=np.int64)
    alloc_n[running] = np.array(gang, dtype=np.int64)[running]
    return {
        "gang": np.array(gang, dtype=np.int64),
        "rate": np.ones((n, 1)),
        "cap": np.array([cap], dtype=np.int64),
        "blocking": False,
        "running": alloc_n > 0,
        "alloc_n": alloc_n,
        "alloc_type": np.where(alloc_n > 0, 0, -1).astype(np.int64),
        "is_active": np.ones(n, dtype=bool),
        "running_jobs": np.array(running, dtype=np.int64),
    }


def test_a_long_queue_of_small_jobs_behind_a_big_one() -> None:
    # 20 devices: five 3-device jobs, an 8-device misfit, then 2-device jobs fill the gap of 5
    # twice over (2 + 2) and a 1-device job far down the queue takes the last device
    gang = [3] * 5 + [8] + [2] * 1000 + [1] * 3
    empty = np.zeros(0, dtype=np.int64)
    run = np.arange(len(gang), dtype=np.int64)
    start, kept, stop, bad, _ = call(plan_preemptive, run, empty, empty, **one_type(gang, 20, []))
    assert [s[0] for s in start] == [0, 1, 2, 3, 4, 6, 7, 1006]
    assert (kept, stop, bad) == ([], [], -1)


def test_running_jobs_left_out_or_resized_stop_and_restart() -> None:
    # jobs 0 and 1 run on 2 devices each; the decision lists 2 first, then 1 with 1 device
    st_ = one_type([2, 2, 3], 4, [0, 1])
    empty = np.zeros(0, dtype=np.int64)
    run = np.array([2, 1], dtype=np.int64)
    start, kept, stop, bad, _ = call(plan_preemptive, run, np.array([3, 1]), empty, **st_)
    assert start == [(2, 0, 3), (1, 0, 1)]
    assert (kept, stop, bad) == ([], [0, 1], -1)


@pytest.mark.parametrize(
    ("run", "active", "want"),
    [
        ([0, 1, 0], [True, True], (0, BAD_TWICE)),
        ([0, 1], [True, False], (1, BAD_INACTIVE)),
    ],
)
def test_a_job_listed_twice_or_not_active_is_reported(
    run: list[int], active: list[bool], want: tuple[int, int]
) -> None:
    st_ = one_type([1, 1], 4, [])
    st_["is_active"] = np.array(active)
    empty = np.zeros(0, dtype=np.int64)
    *_, bad, why = call(plan_preemptive, np.array(run, dtype=np.int64), empty, empty, **st_)
    assert (bad, why) == want


@settings(max_examples=300, deadline=None)
@given(
    free=st.lists(st.integers(0, 8), min_size=1, max_size=30),
    nd=st.integers(1, 8),
    subset=st.booleans(),
)
def test_best_fit_is_the_fullest_node_that_holds_the_gang(
    free: list[int], nd: int, subset: bool
) -> None:
    f = np.array(free, dtype=np.int64)
    nodes = np.arange(0, len(f), 2, dtype=np.int64) if subset else np.zeros(0, dtype=np.int64)
    cand = nodes.tolist() if subset else list(range(len(f)))
    fits = [(free[c], i) for i, c in enumerate(cand) if free[c] >= nd]
    want = min(fits)[1] if fits else -1
    assert best_fit_node(f, nodes, nd) == want
    if kernels.COMPILED:
        assert best_fit_node.py_func(f, nodes, nd) == want


@settings(max_examples=200, deadline=None)
@given(
    n=st.integers(1, 12),
    what=st.integers(0, 7),
    capped=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_sync_brings_running_jobs_to_now_as_the_formulas_say(
    n: int, what: int, capped: bool, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    now = 100.0
    f = {
        "cap": np.where(rng.random(n) < 0.5, rng.uniform(50, 150, n), np.inf),
        "base_t": rng.uniform(0, 90, n),
        "stall": rng.uniform(0, 110, n),
        "alloc_n": rng.integers(1, 9, n),
        "exe0": rng.uniform(0, 50, n),
        "att0": rng.uniform(0, 50, n),
        "round_rem": rng.uniform(100, 200, n),
        "crate": rng.uniform(0.1, 2, n),
        "share": rng.uniform(0, 100, n),
    }
    jobs_ = rng.permutation(n)[: rng.integers(0, n + 1)].astype(np.int64)
    outs = [np.full(n, -1.0) for _ in range(3)]
    sync = kernels.sync_running
    args = [f[k] for k in ("cap", "base_t", "stall", "alloc_n", "exe0", "att0")]
    args += [f[k] for k in ("round_rem", "crate", "share")]
    sync(jobs_, what, now, capped, *args, *outs)
    executed, attained, remaining = outs
    upto = np.minimum(now, f["cap"]) if capped else np.full(n, now)
    dt = upto - f["base_t"]
    rem = f["round_rem"] - f["crate"] * np.maximum(upto - f["stall"], 0.0)
    if capped:
        done = upto >= f["cap"]
        rem[done] = (f["round_rem"] - f["share"])[done]
    want = {
        kernels.SYNC_EXECUTED: (executed, f["exe0"] + dt),
        kernels.SYNC_ATTAINED: (attained, f["att0"] + dt * f["alloc_n"]),
        kernels.SYNC_REMAINING: (remaining, rem),
    }
    untouched = np.setdiff1d(np.arange(n), jobs_)
    for bit, (got, formula) in want.items():
        expected = formula[jobs_] if what & bit else np.full(len(jobs_), -1.0)
        assert got[jobs_].tolist() == expected.tolist()  # bit for bit
        assert (got[untouched] == -1.0).all()
    if kernels.COMPILED:
        plain = [np.full(n, -1.0) for _ in range(3)]
        sync.py_func(jobs_, what, now, capped, *args, *plain)
        assert [p.tolist() for p in plain] == [o.tolist() for o in outs]


@contextmanager
def plain_kernels() -> Iterator[None]:
    """Run every kernel the engine, the policies and the placements call as plain Python,
    and the kernels these call in turn (compiled kernels are compiled already: they keep
    calling compiled code)."""
    with pytest.MonkeyPatch.context() as m:
        for module in (engine, tiresias, placement, kernels):
            for k in dir(kernels):
                kernel = getattr(kernels, k)
                if hasattr(kernel, "py_func") and hasattr(module, k):
                    m.setattr(module, k, kernel.py_func)
        yield


@settings(max_examples=60, deadline=None)
@given(sc=scenarios())
def test_the_engine_gives_the_same_results_without_numba(sc: Any) -> None:
    """The library works with numpy alone: the kernels' plain-Python source gives the same
    run, bit for bit."""
    if not kernels.COMPILED:
        pytest.fail("numba is a pinned dependency: the compiled kernels must be in use")
    t, cl, speed, restore, name = sc
    params = PARAMS.get(name, {})
    rates = fixed_rates(t, cl, speed=speed, restore_s=restore)
    fast = simulate(t, cl, make_policy(name, **params), rates=rates)
    with plain_kernels():
        plain = simulate(t, cl, make_policy(name, **params), rates=rates)
    assert plain.finish.tobytes() == fast.finish.tobytes()
    assert plain.preemptions.tolist() == fast.preemptions.tolist()
    assert plain.stints.node.tolist() == fast.stints.node.tolist()
    assert plain.attained.tobytes() == fast.attained.tobytes()


@settings(max_examples=200, deadline=None)
@given(
    values=st.lists(st.sampled_from([0.0, 1.0, 5.0 - 1e-6, 5.0 - 2e-6, 5.0, 9.0]), max_size=40),
    seed=st.integers(0, 2**16),
)
def test_stable_partition_is_the_two_masks_concatenated(values: list[float], seed: int) -> None:
    v = np.array(values)
    rng = np.random.default_rng(seed)
    idx = rng.permutation(len(v))[: rng.integers(0, len(v) + 1)].astype(np.int64)
    low = v[idx] + 1e-6 < 5.0
    want = np.concatenate([idx[low], idx[~low]]).tolist()
    assert kernels.stable_partition(idx, v, 1e-6, 5.0).tolist() == want
    if kernels.COMPILED:
        assert kernels.stable_partition.py_func(idx, v, 1e-6, 5.0).tolist() == want


def _fill_in_order_reference(nodes: np.ndarray, f: np.ndarray, nd: int) -> tuple[list, list]:
    cum = np.cumsum(f)
    k = int(np.searchsorted(cum, nd)) + 1
    counts = f[:k].copy()
    counts[-1] -= int(cum[k - 1]) - nd
    return nodes[:k].tolist(), counts.tolist()


@settings(max_examples=300, deadline=None)
@given(
    free=st.lists(st.integers(0, 8), min_size=1, max_size=30),
    seed=st.integers(0, 2**16),
)
def test_largest_first_takes_the_freest_nodes_then_the_lowest_index(
    free: list[int], seed: int
) -> None:
    f = np.array(free, dtype=np.int64)
    rng = np.random.default_rng(seed)
    nodes = rng.permutation(len(f))[: rng.integers(1, len(f) + 1)].astype(np.int64)
    total = int(f[nodes].sum())
    if total == 0:
        return
    nd = int(rng.integers(1, total + 1))
    order = np.lexsort((nodes, -f[nodes]))  # what the strategy promises
    want = _fill_in_order_reference(nodes[order], f[nodes][order], nd)
    got = kernels.take_largest_first(f, nodes, nd)
    assert (got[0].tolist(), got[1].tolist()) == want
    assert int(got[1].sum()) == nd
    if kernels.COMPILED:
        plain = kernels.take_largest_first.py_func(f, nodes, nd)
        assert (plain[0].tolist(), plain[1].tolist()) == want


def test_take_nodes_applies_a_valid_placement_and_refuses_an_invalid_one() -> None:
    node_free = np.array([4, 2, 8], dtype=np.int64)
    busy = np.zeros(2)
    group = np.array([0, 1, 1], dtype=np.int64)
    ntype = np.array([0, 0, 1], dtype=np.int64)
    take = kernels.take_nodes
    # wrong total, more than a node has, a node of another type: nothing changes
    for nodes, counts in [([0, 1], [4, 1]), ([0, 1], [5, 1]), ([0, 2], [4, 2])]:
        ok = take(node_free, busy, group, ntype, np.array(nodes), np.array(counts), 0, 6)
        assert not ok
        assert node_free.tolist() == [4, 2, 8] and busy.tolist() == [0, 0]
    assert take(node_free, busy, group, ntype, np.array([0, 1]), np.array([4, 2]), 0, 6)
    assert node_free.tolist() == [0, 0, 8] and busy.tolist() == [4.0, 2.0]


@pytest.mark.parametrize(
    ("nodes", "nd", "want"),
    [
        ([1], 1, np.inf),  # one device: no link
        ([1], 4, 300.0),  # one node: its intra-node link
        ([0, 1], 4, 100 / 8),  # one rack: the slowest NIC
        ([0, 2], 4, 200 / 8 / 3),  # two racks: slowest NIC over the worst oversubscription
    ],
)
def test_link_is_the_slowest_one_the_placement_crosses(
    nodes: list[int], nd: int, want: float
) -> None:
    intra = np.array([600.0, 300.0, 600.0])
    nic = np.array([200.0, 100.0, 400.0])
    rack = np.array([0, 0, 1], dtype=np.int64)
    oversub = np.array([1.0, 3.0])
    got = kernels.link_gbs(np.array(nodes, dtype=np.int64), nd, intra, nic, rack, oversub)
    assert got == pytest.approx(want)


@pytest.mark.parametrize("policy", ["fifo", "srtf", "tiresias", "las"])
@pytest.mark.parametrize("where", ["consolidate", "topology", "spread"])
def test_multi_node_placements_are_the_same_without_numba(policy: str, where: str) -> None:
    rng = np.random.default_rng(7)
    rows = [
        (float(t), int(g), float(d))
        for t, g, d in zip(
            np.sort(rng.uniform(0, 400, 60)),
            rng.choice([1, 2, 3, 4, 6, 8], 60),
            rng.uniform(5, 200, 60),
            strict=True,
        )
    ]
    t = jobs(rows)
    cl = cluster([("A", 4)] * 6 + [("B", 8)] * 2, racks=[0, 0, 0, 1, 1, 1, 2, 2])
    params = PARAMS.get(policy, {})

    def run() -> Any:
        rates = fixed_rates(t, cl, speed=[1.0, 2.0], restore_s=1.0)
        return simulate(t, cl, make_policy(policy, **params), make_placement(where), rates=rates)

    fast = run()
    assert (fast.max_nodes > 1).any(), "the trace must need multi-node placements"
    with plain_kernels():
        plain = run()
    assert plain.finish.tobytes() == fast.finish.tobytes()
    assert plain.stints.node.tolist() == fast.stints.node.tolist()
    assert plain.stints.devices.tolist() == fast.stints.devices.tolist()


def test_warm_up_compiles_every_kernel() -> None:
    """``make install`` and the Docker build call warm_up so no user waits for numba: in a
    fresh process, it must call (so compile or load) every kernel that the engine, the
    policies and the placements call (the kernels only other kernels call are compiled into
    their callers)."""
    if not kernels.COMPILED:
        pytest.fail("numba is a pinned dependency: the compiled kernels must be in use")
    code = (
        "from clustersim import engine, kernels\n"
        "from scheduling import placement, tiresias\n"
        "engine.warm_up()\n"
        "mods = (engine, placement, tiresias)\n"
        "ks = {k for m in mods for k in dir(m) if hasattr(getattr(m, k), 'py_func')}\n"
        "print(len(ks), sorted(k for k in ks if not getattr(kernels, k).signatures))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=300
    ).stdout.split(maxsplit=1)
    assert int(out[0]) >= 9
    assert out[1].strip() == "[]"


def test_kernels_still_compile_where_no_cache_directory_is_usable(tmp_path: Path) -> None:
    """numba refuses ``cache=True`` when neither ``NUMBA_CACHE_DIR``, ``__pycache__`` next to
    the source nor the user's cache directory can be created; the kernels then compile in each
    process instead of failing the import. (Files stand where the directories would go, so
    this holds even for root, who ignores permissions.)"""
    (tmp_path / "kernels_copy.py").write_text(Path(kernels.__file__).read_text())
    (tmp_path / "__pycache__").write_text("not a directory")
    (tmp_path / "cache").write_text("not a directory")
    code = (
        "import sys, numpy as np\n"
        f"sys.path.insert(0, {str(tmp_path)!r})\n"
        "import kernels_copy as k\n"
        "print(k.COMPILED, k.best_fit_node(np.array([3, 1, 2]), np.zeros(0, dtype=np.int64), 2))\n"
    )
    env = {**os.environ, "HOME": str(tmp_path / "cache"), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    env.pop("NUMBA_CACHE_DIR", None)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "2"]
