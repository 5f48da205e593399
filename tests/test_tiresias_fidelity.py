"""``--compat tiresias`` against the restatement of the Tiresias simulator.

The restatement (``tests/tiresias_reference.py``) is checked by hand-worked traces here; the
engine in compatibility mode must then give every job the same completion time on random
traces, contended and not, for ``fifo`` (``yarn`` and ``first-fit`` placement) and
``tiresias`` (with and without the starvation knob). ``docs/tiresias-fidelity.md`` states
the rules.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from clustersim.compat import prepare
from clustersim.engine import EngineOptions, simulate
from clustersim.errors import ClustersimError
from clustersim.jobs import JobTable
from clustersim.traces import read_trace
from tests import tiresias_reference as ref
from tests.simple import cluster

# ---------------------------------------------------------------- the restatement, by hand


def _jct(jobs: list[ref.Job]) -> dict[str, float]:
    return {j.job_id: j.jct for j in jobs}


def test_reference_fifo_yarn_waits_for_a_node_that_count_does_not_need() -> None:
    # 1 switch × 2 nodes × 4 GPUs. a, b (3 GPUs, 10 s) at 0 take node 0 and node 1, one GPU
    # left on each. c (2 GPUs, 5 s) at 1: two GPUs are free, but on two nodes. yarn: c waits
    # until 10 (first node with room: node 0), and d (1 GPU, 3 s, t=2) waits behind it (strict
    # FIFO), then takes node 0 as well: c 10-15, d 10-13. count: c runs 1-6; d waits for it
    # (nothing free) and runs 6-9.
    spec = ref.Spec(1, 2, 4)
    rows = [("a", 3, 0, 10), ("b", 3, 0, 10), ("c", 2, 1, 5), ("d", 1, 2, 3)]
    assert _jct(ref.fifo(ref.load(rows), spec, "yarn")) == {"a": 10, "b": 10, "c": 14, "d": 11}
    assert _jct(ref.fifo(ref.load(rows), spec, "count")) == {"a": 10, "b": 10, "c": 5, "d": 7}


def test_reference_yarn_takes_whole_idle_nodes_of_one_switch() -> None:
    # 2 switches × 2 nodes × 4 GPUs. a (1 GPU, 100 s) on switch 0 node 0. b (6 GPUs, 10 s):
    # one idle node (switch 0 node 1) and 2 GPUs of another node of the same switch (node 0,
    # 3 free): b runs at 0 on switch 0. c (8 GPUs, 10 s, t=1) needs two idle nodes of one
    # switch: switch 1, c 1-11. h (8 GPUs, 10 s, t=2): switch 0 never has two idle nodes
    # (a holds node 0 until 100); it waits for switch 1: h 11-21.
    spec = ref.Spec(2, 2, 4)
    rows = [("a", 1, 0, 100), ("b", 6, 0, 10), ("c", 8, 1, 10), ("h", 8, 2, 10)]
    out = _jct(ref.fifo(ref.load(rows), spec, "yarn"))
    assert out == {"a": 100, "b": 10, "c": 10, "h": 19}


def test_reference_dlas_demotion_check_times_py2_and_py3() -> None:
    # 4 GPUs, queue limits 3,250 and 7,200 GPU-s. A (4 GPUs, 2,000 s) and B (1 GPU, 100 s)
    # at 0: A runs, B waits behind it in queue 0. A crosses 3,250 GPU-s at 812.5 s; nothing
    # else happens before 2,000, so only the simulator's own check can demote it. Under
    # Python 3 the check is at ceil(3,250 / 4) = 813: A drops to queue 1 and B preempts it,
    # B 813-913, A 913-2,100. Under Python 2 it is at floor(812.5) = 812, before the
    # crossing (3,248 GPU-s); the next is (3,250 - 812) // 4 = 609 s later, at 1,421 (the
    # executed *time* taken from a GPU-time limit): B 1,421-1,521, A 1,521-2,100.
    spec = ref.Spec(1, 1, 4)
    rows = [("A", 4, 0, 2000), ("B", 1, 0, 100)]
    py3 = ref.dlas_gpu(ref.load(rows), spec, py3_division=True)
    assert _jct(py3) == {"A": 2100, "B": 913}
    py2 = ref.dlas_gpu(ref.load(rows), spec)
    assert _jct(py2) == {"A": 2100, "B": 1521}
    assert [j.preempt for j in py2] == [1, 0]


def test_reference_dlas_keeps_running_jobs_ahead_in_their_queue() -> None:
    # 2 GPUs, limits (50, 200). A (2 GPUs, 100 s) at 0; B (2 GPUs, 30 s) at 10 joins queue 0
    # behind the running A and does not preempt it. A's check, set at 0 for ceil(50 / 2) = 25,
    # is recomputed at 10 as ceil((50 - 10) / 2) = 20 s later (executed time taken from a
    # GPU-time limit): A is demoted at 30, not 25. B runs 30-55 (its check: ceil(50 / 2)),
    # drops to queue 1 behind A, which runs 55-125; B 125-130.
    spec = ref.Spec(1, 1, 2)
    rows = [("A", 2, 0, 100), ("B", 2, 10, 30)]
    out = ref.dlas_gpu(ref.load(rows), spec, limits=(50, 200), py3_division=True)
    assert _jct(out) == {"A": 125, "B": 120}
    assert [j.preempt for j in out] == [1, 1]


def test_reference_dlas_promotes_a_starving_job() -> None:
    # 1 GPU, limits (10, 1000), knob 2. L (100 s) at 0; S (40 s) at 10.
    # 0-10 L runs; at 10 L reaches 10 s (queue 1) and S (queue 0) takes the GPU.
    # 20: S reaches queue 1 behind the waiting L: L runs. S has executed 10 s: it is promoted
    #     after waiting 2 × 10 s, at 40, its queue service reset; L waits.
    # 50: S back in queue 1 behind L (10 more seconds): L runs; S promoted again at 70, runs
    #     70-80, L 80-100, S promoted at 100 and ends at 110 (10+10+10+10 s).
    # L has waited 10 s (10-20) + 10 + 10 + 10 with 10-70 s executed: never 2× its executed
    # time, so never promoted; it runs 110-140.
    spec = ref.Spec(1, 1, 1)
    rows = [("L", 1, 0, 100), ("S", 1, 10, 40)]
    out = ref.dlas_gpu(ref.load(rows), spec, limits=(10, 1000), knob=2, py3_division=True)
    assert _jct(out) == {"L": 140, "S": 100}
    assert [j.promote for j in out] == [0, 3]


def test_reference_ends_a_preempted_job_at_an_arrival_it_was_attached_to() -> None:
    # 1 GPU, limits 3,250 and 7,200. A (20,000 s) at 0; B (9,750 s) at 6,500; C (100 s) at
    # 16,250. At 6,500 B preempts A (queue 0 before 1) and is due to end at 16,250, the time
    # C arrives: the simulator attaches B's end to C's arrival event. Queue checks come
    # first: B drops to queue 1 at 9,750 behind A (A runs), A to queue 2 at 10,450 (B runs),
    # B to queue 2 at 14,400 behind A (A runs; B has 2,550 s left). C's arrival at 16,250
    # still ends B. C 16,250-16,350, A ends at 27,300. Without the slip B would run
    # 27,300-29,850. (The simulator's own job.csv for this trace: B 9,750, C 100, A 27,300.)
    spec = ref.Spec(1, 1, 1)
    rows = [("A", 1, 0, 20000), ("B", 1, 6500, 9750), ("C", 1, 16250, 100)]
    out = ref.dlas_gpu(ref.load(rows), spec, py3_division=True)
    assert _jct(out) == {"A": 27300, "B": 9750, "C": 100}
    fixed = ref.dlas_gpu(ref.load(rows), spec, py3_division=True, stale_ends=False)
    assert _jct(fixed) == {"A": 27300, "B": 23350, "C": 100}


# ---------------------------------------------------------------- the engine, compat mode


def _random_rows(seed: int, n: int, gpus: int, load: float) -> list[tuple[str, int, int, int]]:
    rng = np.random.default_rng(seed)
    size = rng.choice([1, 1, 1, 1, 2, 2, 4, 8], n).clip(max=gpus)
    dur = np.exp(rng.uniform(np.log(20), np.log(20_000), n)).astype(int)
    gap = rng.exponential(float((size * dur).mean()) / gpus / load, n)
    submit = np.cumsum(gap).astype(int)
    return [
        (str(i), int(g), int(s), int(d))
        for i, (g, s, d) in enumerate(zip(size, submit, dur, strict=True))
    ]


def _table(rows: list[tuple[str, int, int, int]]) -> JobTable:
    return JobTable.from_columns(
        job_id=[r[0] for r in rows],
        num_gpus=[r[1] for r in rows],
        submit_time=[float(r[2]) for r in rows],
        work=[float(r[3]) for r in rows],
    )


def _ours(rows, spec: ref.Spec, policy: str, placement: str | None, **params):  # type: ignore[no-untyped-def]
    nodes = [("A", spec.gpus_per_node)] * (spec.switches * spec.nodes_per_switch)
    racks = [i // spec.nodes_per_switch for i in range(len(nodes))]
    cl = cluster(nodes, racks=racks)
    p = prepare(_table(rows), cl, policy, params, placement, compat="tiresias")
    res = simulate(
        p.jobs, cl, p.policy, p.placement, rates=p.rates, options=EngineOptions(**p.engine)
    )
    return dict(
        zip(res.jobs.job_id.tolist(), (res.finish - res.jobs.submit_time).tolist(), strict=True)
    )


SPECS = [ref.Spec(1, 4, 4), ref.Spec(2, 2, 4), ref.Spec(1, 2, 8)]


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("load", [0.5, 1.5])
def test_compat_fifo_gives_every_job_the_simulators_completion_time(seed: int, load: float) -> None:
    spec = SPECS[seed % len(SPECS)]
    rows = _random_rows(seed, 70, spec.gpus, load)
    for scheme, placement in (("yarn", "yarn"), ("count", "first-fit")):
        want = _jct(ref.fifo(ref.load(rows), spec, scheme))
        got = _ours(rows, spec, "fifo", placement)
        assert got == want, scheme


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("knob", [0, 2, 0.5])
def test_compat_tiresias_gives_every_job_the_simulators_completion_time(
    seed: int, knob: float
) -> None:
    spec = SPECS[seed % len(SPECS)]
    rows = _random_rows(100 + seed, 70, spec.gpus, 1.5 if seed % 2 else 0.7)
    for py3 in (True, False):
        want = _jct(
            ref.dlas_gpu(ref.load(rows), spec, knob=knob, py3_division=py3, stale_ends=False)
        )
        params: dict[str, object] = {} if py3 else {"timing": "simulator-py2"}
        if knob:
            params["promote_knob"] = knob
        got = _ours(rows, spec, "tiresias", None, **params)
        assert got == want


def test_compat_reads_whole_seconds_and_any_device_at_trace_speed() -> None:
    # durations and submit times read as int(float(x)); no device speed, no restore cost
    rows = [("a", 1, 0, 10), ("b", 2, 3, 20)]
    t = _table(rows).replace(work=np.array([10.9, 20.5]), submit_time=np.array([0.7, 3.2]))
    cl = cluster([("A", 4)])
    p = prepare(t, cl, "tiresias", {}, None, compat="tiresias")
    assert p.jobs.work.tolist() == [10.0, 20.0] and p.jobs.submit_time.tolist() == [0.0, 3.0]
    assert p.rates.rate.tolist() == [[1.0], [1.0]] and not p.rates.restore_s.any()
    assert p.placement.name == "first-fit" and p.policy.timing == "simulator"


def test_compat_tiresias_on_its_own_60_job_trace(shared_data: Path) -> None:
    jobs, _ = read_trace(shared_data / "traces" / "tiresias" / "60_job.csv")
    rows = [
        (str(i), int(g), int(s), int(d))
        for i, g, s, d in zip(jobs.job_id, jobs.num_gpus, jobs.submit_time, jobs.work, strict=True)
    ]
    spec = ref.Spec(1, 16, 4)  # its cluster_spec.csv
    for policy in ("fifo", "tiresias"):
        got = _ours(rows, spec, policy, None)
        if policy == "fifo":
            want = _jct(ref.fifo(ref.load(rows), spec, "yarn"))
        else:
            want = _jct(ref.dlas_gpu(ref.load(rows), spec, py3_division=True, stale_ends=False))
        assert got == want
        assert np.mean(list(got.values())) == pytest.approx(178.41666666666666)


# ---------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("policy", "placement", "compat", "message"),
    [
        ("srtf", None, "tiresias", "does not cover policy 'srtf'"),
        ("fifo", None, "gavel", "does not cover policy 'fifo'"),
        ("gavel-las", None, "tiresias", "does not cover policy 'gavel-las'"),
        ("tiresias", "yarn", "tiresias", "has no placement 'yarn' for policy 'tiresias'"),
        ("fifo", "consolidate", "tiresias", "has no placement 'consolidate' for policy 'fifo'"),
        ("fifo", None, "slurm", "unknown compatibility mode 'slurm'"),
    ],
)
def test_compat_refuses_what_its_simulator_does_not_have(
    policy: str, placement: str | None, compat: str, message: str
) -> None:
    cl = cluster([("A", 4)])
    with pytest.raises(ClustersimError, match=message):
        prepare(_table([("a", 1, 0, 10)]), cl, policy, {}, placement, compat=compat)


def test_compat_refuses_a_restore_delay_and_sub_second_jobs() -> None:
    cl = cluster([("A", 4)])
    t = _table([("a", 1, 0, 10)])
    with pytest.raises(ClustersimError, match="fixes the checkpoint/restore delay"):
        prepare(t, cl, "fifo", {}, None, compat="tiresias", restore_s=30.0)
    with pytest.raises(ClustersimError, match=r"job 'a' lasts 0\.5 s"):
        prepare(t.replace(work=np.array([0.5])), cl, "fifo", {}, None, compat="tiresias")
