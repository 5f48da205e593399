"""``--compat pollux``: the engine's decision steps and first-start delay on hand-worked
traces, the simulator's rules against their restatement (tests/pollux_reference.py), the
mode's checks, and short runs of its three policies on a Pollux workload
(docs/pollux-fidelity.md)."""

from __future__ import annotations

import csv
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clustersim.compat import prepare
from clustersim.engine import EngineOptions, simulate
from clustersim.errors import ClustersimError
from clustersim.goodput import MODELS, load, profile_dir
from clustersim.kernels import optimus_allocate
from clustersim.traces import read_trace
from clustersim.traces.pollux import GRID_REPLICAS, trace_batch
from scheduling.optimus import predicted_step_time
from scheduling.registry import make_policy
from tests import pollux_reference as ref
from tests.simple import cluster, fixed_rates, jobs

WORKLOADS = profile_dir().parents[1] / "traces" / "pollux"
needs_data = pytest.mark.skipif(
    not (profile_dir() / "cifar10").is_dir() or not WORKLOADS.is_dir(),
    reason="shared/data with Pollux's profiles and workloads is not beside the repository",
)


def _run(options: EngineOptions) -> np.ndarray:
    # one device; A at 10 s (100 s of work), B at 70 s (50 s), C at 240 s (10 s), FIFO
    t = jobs([(10.0, 1, 100.0), (70.0, 1, 50.0), (240.0, 1, 10.0)])
    cl = cluster([("T0", 1)])
    r = simulate(t, cl, make_policy("fifo"), rates=fixed_rates(t, cl), options=options)
    return np.stack([r.first_start, r.finish])


def test_without_steps_jobs_start_at_events() -> None:
    # A 10 -> 110; B waits for A: 110 -> 160; C 240 -> 250
    got = _run(EngineOptions())
    assert got.tolist() == [[10.0, 110.0, 240.0], [110.0, 160.0, 250.0]]


def test_with_steps_the_policy_decides_on_them_only() -> None:
    # steps every 60 s from 60: A (at 10) is seen at 60 and runs 60 -> 160; B (at 70) finds
    # the device busy at 120, A frees it at 160 but nothing starts before the step at 180:
    # B 180 -> 230; C arrives on the step at 240 and is seen there: 240 -> 250
    got = _run(EngineOptions(decision_grid_s=60.0))
    assert got.tolist() == [[60.0, 180.0, 240.0], [160.0, 230.0, 250.0]]
    assert [ref.first_decision(s) for s in (10.0, 70.0, 240.0)] == [60.0, 120.0, 240.0]


def test_first_starts_stall_for_the_re_scale_delay() -> None:
    # + 30 s on every first start: A 60, stalls to 90, ends 190; B waits through the steps at
    # 120 and 180 (A busy) and starts at 240 with C, first in line: stalls to 270, ends 320;
    # C starts at the step at 360 (B busy at 300), stalls to 390, ends 400
    got = _run(EngineOptions(decision_grid_s=60.0, goodput_trace_batch=True, goodput_start_s=30))
    assert got.tolist() == [[60.0, 240.0, 360.0], [190.0, 320.0, 400.0]]


def test_a_first_start_delay_counts_as_time_held() -> None:
    t = jobs([(10.0, 1, 100.0)])
    cl = cluster([("T0", 1)])
    opt = EngineOptions(decision_grid_s=60.0, goodput_trace_batch=True, goodput_start_s=30)
    r = simulate(t, cl, make_policy("fifo"), rates=fixed_rates(t, cl), options=opt)
    # held from 60 to 190: 130 device-seconds, 100 of them computing
    assert r.device_time.sum() == pytest.approx(130.0)


def test_a_bad_step_is_refused() -> None:
    t = jobs([(0.0, 1, 1.0)])
    cl = cluster([("T0", 1)])
    with pytest.raises(Exception, match="decision_grid_s"):
        simulate(t, cl, make_policy("fifo"), options=EngineOptions(decision_grid_s=-1.0))


@needs_data
@pytest.mark.parametrize("name", sorted(MODELS))
def test_the_fixed_batch_rule_is_the_simulators(name: str) -> None:
    app = load(name)
    assert app is not None
    for r in range(1, 65):
        for b in [*app.sizes.tolist(), float(app.sizes[0]) * 3, float(app.sizes[-1]) - 1]:
            want = ref.fixed_batch_config(r, b, app.init_bsz, app.max_bsz, app.max_local)
            assert app.fixed(r, b) == want, (r, b)


@needs_data
@pytest.mark.parametrize("name", sorted(MODELS))
def test_optimus_predicts_step_times_as_the_simulator(name: str) -> None:
    app = load(name)
    assert app is not None
    for b in app.sizes.tolist():
        for r in (1, 2, 3, 4, 5, 8, 12, 16):
            atomic, accum = ref.optimus_config(r, b, app.max_bsz, app.max_local)
            nodes = (4,) * (r // 4) + ((r % 4,) if r % 4 else ())
            step, sync = app.step_time(nodes, float(atomic))
            want = float(step) + (float(step) - float(sync)) * accum
            got = predicted_step_time(app, r, b)
            assert got == pytest.approx(want, rel=1e-12, nan_ok=True), (r, b)


@settings(max_examples=150, deadline=None)
@given(
    st.integers(1, 6),
    st.integers(1, 12),
    st.data(),
)
def test_optimus_hands_out_devices_as_the_simulator(m: int, gpus: int, data) -> None:  # type: ignore[no-untyped-def]
    top = 6
    steps = [
        [math.inf, *data.draw(st.lists(st.floats(0.05, 5.0), min_size=top, max_size=top))]
        for _ in range(m)
    ]
    remaining = data.draw(st.lists(st.floats(1.0, 1e4), min_size=m, max_size=m))
    hi = data.draw(st.lists(st.integers(1, top), min_size=m, max_size=m))
    want = ref.optimus_greedy(remaining, lambda i, n: steps[i][n], hi, gpus)
    rate = np.array([[0.0] + [1.0 / s for s in row[1:]] for row in steps])
    for i, h in enumerate(hi):
        rate[i, h + 1 :] = 0.0
    got = optimus_allocate(
        np.zeros(m, dtype=np.int64),
        np.ones(m, dtype=np.int64),
        np.array(hi, dtype=np.int64),
        rate,
        np.array(remaining),
        np.arange(m, dtype=np.int64),
        np.array([gpus], dtype=np.int64),
    )
    assert got.tolist() == want


@needs_data
@pytest.mark.parametrize("n", [1, 2, 3])
def test_the_batch_size_of_every_workload_row_is_recovered(n: int) -> None:
    path = WORKLOADS / f"workload-{n}.csv"
    table, _ = read_trace(path)
    with path.open(newline="") as f:
        rows = {r["name"]: float(r["batch_size"]) for r in csv.DictReader(f)}
    for j in range(len(table)):
        got = trace_batch(str(table.job_type[j]), int(table.num_gpus[j]), float(table.work[j]))
        assert got == rows[str(table.job_id[j])]
    assert math.isnan(trace_batch("cifar10", 3, 100.0))  # not on the grid
    assert 3 not in GRID_REPLICAS


def _t4(nodes: int = 16, per_node: int = 4):  # type: ignore[no-untyped-def]
    return cluster([("T4", per_node)] * nodes)


def _profiled(rows: list[tuple[float, str, int, int]]):  # type: ignore[no-untyped-def]
    """A Pollux workload table from ``(time, application, replicas, batch)`` rows."""
    from clustersim.traces.pollux import PolluxReader

    text = "name,time,application,num_replicas,batch_size\n" + "".join(
        f"{a}-{i},{t},{a},{r},{b}\n" for i, (t, a, r, b) in enumerate(rows)
    )
    table, _ = PolluxReader().parse(text.encode(), "w.csv")
    return table


@needs_data
def test_the_mode_sets_the_simulators_bounds_per_policy() -> None:
    t = _profiled([(0, "cifar10", 4, 512), (5, "ncf", 1, 32768)])
    cl = _t4()
    p = prepare(t, cl, "pollux", compat="pollux")
    assert p.jobs.min_gpus.tolist() == [1, 1] and p.jobs.max_gpus.tolist() == [64, 64]
    assert p.engine == {
        "whole_steps_per_round": False,
        "decision_grid_s": 60.0,
        "goodput_start_s": 30.0,
    }
    assert p.policy.resume_s == 30.0
    q = prepare(t, cl, "tiresias", compat="pollux")
    assert q.jobs.min_gpus.tolist() == [4, 1] and q.jobs.max_gpus.tolist() == [4, 1]
    assert q.engine["goodput_trace_batch"] is True
    assert q.rates.restore_s.tolist() == [30.0, 30.0]
    o = prepare(t, cl, "optimus", compat="pollux")
    assert o.policy.params() == {"interval_s": 600.0, "profiles": True}
    # optimus caps each job at batch // smallest local batch (cifar10: 512 // 32), ncf 1
    app = load("cifar10")
    assert app is not None
    assert ref.optimus_max_replicas(512, app.min_local, False) == 16


@needs_data
@pytest.mark.parametrize(
    ("table", "cl", "message"),
    [
        (lambda: jobs([(0.0, 1, 10.0)]), lambda: _t4(), "not one of the profiled models"),
        (
            lambda: _profiled([(0, "cifar10", 4, 512)]),
            lambda: cluster([("T4", 4), ("V100", 4)]),
            "2 accelerator types",
        ),
        (lambda: _profiled([(0, "cifar10", 4, 512)]), lambda: _t4(2, 8), "at most 4 a node"),
    ],
)
def test_the_mode_refuses_what_the_simulator_cannot_run(table, cl, message) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ClustersimError, match=message):
        prepare(table(), cl(), "pollux", compat="pollux")


def test_the_mode_refuses_a_restore_delay_and_other_policies() -> None:
    t = jobs([(0.0, 1, 1.0)])
    with pytest.raises(ClustersimError, match="fixes the checkpoint/restore delay at 30 s"):
        prepare(t, _t4(), "pollux", compat="pollux", restore_s=5.0)
    with pytest.raises(ClustersimError, match="does not cover policy 'fifo'"):
        prepare(t, _t4(), "fifo", compat="pollux")


@needs_data
@pytest.mark.parametrize("policy", ["pollux", "tiresias", "optimus"])
def test_the_policies_run_on_the_steps_of_the_simulator(policy: str) -> None:
    table, _ = read_trace(WORKLOADS / "workload-1.csv")
    first = np.argsort(table.submit_time, kind="stable")[:16]
    t = table.take(first)
    cl = _t4()
    p = prepare(t, cl, policy, compat="pollux")
    r = simulate(
        p.jobs,
        cl,
        p.policy,
        placement=p.placement,
        rates=p.rates,
        options=EngineOptions(**p.engine),
    )
    assert np.isfinite(r.finish).all()
    # every job starts on a step, not before the first step after its submission, and
    # stalls 30 s before it computes: it cannot finish within 30 s of its first start
    assert (r.first_start % 60 == 0).all()
    assert (r.first_start >= [ref.first_decision(s) for s in p.jobs.submit_time]).all()
    assert (r.finish - r.first_start > 30).all()
    # never more devices than the cluster has
    assert r.seg_busy.sum(axis=(1, 2)).max() <= 64


def test_every_reallocation_after_the_first_start_is_a_restart() -> None:
    # the simulator counts a restart on every reallocation but the first start, a resume
    # after a pause included; the policy learns them from the states it sees
    from types import SimpleNamespace

    from scheduling.pollux import Pollux

    policy = Pollux()
    a = np.array([0])
    seen = []
    for running, n in [(False, 0), (True, 2), (False, 0), (True, 2), (True, 4), (True, 4)]:
        state = SimpleNamespace(running=np.array([running]), alloc_n=np.array([n]))
        policy.observe(state, a)  # type: ignore[arg-type]
        seen.append((policy._restarts.get(0, 0), policy._seen.get(0, 0)))
    # waiting: nothing; first start on 2: no restart; paused; resumed on 2: 1; resized to 4:
    # 2; kept: 2
    assert seen == [(0, 0), (0, 2), (0, 2), (1, 2), (2, 4), (2, 4)]


@pytest.mark.parametrize(
    ("rewalk", "finish"),
    [
        # re-walked in arrival order: at 10 (A done) B, ahead of C in queue 0, fits the 4
        # devices and C is preempted; B 10 -> 20, C resumes at 20 with 90 left: 110
        (True, [10.0, 20.0, 110.0]),
        # Tiresias's own order keeps running C ahead of waiting B: C 0 -> 100, B 100 -> 110
        (False, [10.0, 110.0, 100.0]),
    ],
)
def test_the_simulators_tiresias_rewalks_its_queue(rewalk: bool, finish: list[float]) -> None:
    # 4 devices; at 0: A 2 GPUs 10 s, B 4 GPUs 10 s, C 2 GPUs 100 s; one queue in effect
    t = jobs([(0.0, 2, 10.0), (0.0, 4, 10.0), (0.0, 2, 100.0)])
    cl = cluster([("T0", 4)])
    policy = make_policy("tiresias", thresholds=(1e9,), rewalk=rewalk)
    r = simulate(t, cl, policy, rates=fixed_rates(t, cl))
    assert r.finish.tolist() == finish


@pytest.mark.parametrize(
    ("policy", "params"),
    [
        ("tiresias", {"thresholds": (50.0,), "rewalk": True}),
        ("optimus", {"profiles": True}),
        ("pollux", {"linear_unseen": True}),
    ],
)
@pytest.mark.parametrize("steps", [0.0, 60.0])
def test_the_modes_variants_keep_the_battery_invariants(
    policy: str, params: dict[str, object], steps: float
) -> None:
    # the conformance battery's random traces and clusters, with the mode's parameters:
    # every job finishes, no type is over-allocated, the same run twice is the same
    from tests.test_policy_conformance import CLUSTERS, random_trace

    for cl in CLUSTERS.values():
        t = random_trace(3)
        t = t.replace(min_gpus=np.ones(len(t), dtype=np.int64)) if policy != "tiresias" else t
        opt = EngineOptions(decision_grid_s=steps, goodput_trace_batch=True, goodput_start_s=30)
        runs = [
            simulate(t, cl, make_policy(policy, **params), rates=fixed_rates(t, cl), options=opt)
            for _ in range(2)
        ]
        r = runs[0]
        ok = r.drop_reason == ""
        assert np.isfinite(r.finish[ok]).all()
        cap = cl.devices_per_type()
        assert (r.seg_busy.sum(axis=2) <= cap[None, :]).all()
        assert np.array_equal(r.finish, runs[1].finish, equal_nan=True)


def test_freest_first_takes_the_freest_nodes_even_for_a_small_gang() -> None:
    # free devices [2, 4, 3, 4]: 2 devices go to node 1 (the freest, lowest index among the
    # two with 4), where consolidate would take node 0 (the fullest that holds them); 6 go
    # 4 on node 1, then 2 on node 3 (next freest, 4 free)
    from scheduling.registry import make_placement

    cl = cluster([("T0", 4)] * 4)
    free = np.array([2, 4, 3, 4], dtype=np.int64)
    cand = np.arange(4, dtype=np.int64)
    nodes, counts = make_placement("freest").place(cl, free, cand, 2)  # type: ignore[misc]
    assert (nodes.tolist(), counts.tolist()) == ([1], [2])
    nodes, counts = make_placement("consolidate").place(cl, free, cand, 2)  # type: ignore[misc]
    assert (nodes.tolist(), counts.tolist()) == ([0], [2])
    nodes, counts = make_placement("freest").place(cl, free, cand, 6)  # type: ignore[misc]
    assert (nodes.tolist(), counts.tolist()) == ([1, 3], [4, 2])
