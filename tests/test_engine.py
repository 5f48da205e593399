"""Hand-worked traces: completion times computed by hand for every baseline policy.

Unless a test says otherwise the cluster is one node with two devices of one type, every job
runs at 1 work unit per second whatever its gang size, and resuming costs nothing.
"""

from __future__ import annotations

import numpy as np
import pytest

from clustersim import engine, kernels
from clustersim.engine import EngineOptions, simulate
from clustersim.metrics import summary
from clustersim.perf import PerformanceModel
from clustersim.result import DROP_NO_FIT, DROP_NO_TYPE, DROP_TOO_LARGE
from clustersim.spec import cluster_from_shorthand
from scheduling.base import Decision, Policy, State
from scheduling.registry import make_policy
from tests.simple import FixedRates, cluster, fixed_rates, jobs

TWO_GPUS = cluster([("A", 2)])
ONE_GPU = cluster([("A", 1)])

# A: t=0, 1 GPU, 10 s; B: t=0, 2 GPUs, 4 s; C: t=1, 1 GPU, 3 s
T1 = jobs([(0, 1, 10), (0, 2, 4), (1, 1, 3)])


def finish(policy: Policy, table=T1, cl=TWO_GPUS, restore_s: float = 0.0, **kw):  # type: ignore[no-untyped-def]
    rates = kw.pop("rates", None) or fixed_rates(table, cl, restore_s=restore_s)
    return simulate(table, cl, policy, rates=rates, **kw)


@pytest.mark.parametrize(
    ("name", "params", "expected"),
    [
        # strict FIFO: B blocks C behind it; A 0-10, B 10-14, C 14-17
        ("fifo", {}, [10, 14, 17]),
        # backfilling FIFO: C slips into the free GPU at t=1 and ends at 4
        ("fifo", {"backfill": True}, [10, 14, 4]),
        # SJF: B (4 s) first 0-4; then C (3 s) 4-7 and A 4-14 side by side
        ("sjf", {}, [14, 4, 7]),
        # SRTF: as SJF here; at t=1 C (3 s) ties with B's remaining 3 s and B keeps running
        ("srtf", {}, [14, 4, 7]),
        # LAS: A runs 0-1; at 1 B (0 service) preempts A and runs 1-5; C (0) then A (1 GPU-s)
        # share the GPUs: C 5-8, A 5-14
        ("las", {}, [14, 5, 8]),
        # Tiresias with everything under the first threshold: one queue in arrival order, B
        # cannot fit next to A so C runs at 1; A 0-10, B 10-14, C 1-4
        ("tiresias", {}, [10, 14, 4]),
        # equal priorities and no deadlines: arrival order, skipping what does not fit
        ("priority", {}, [10, 14, 4]),
        ("edf", {}, [10, 14, 4]),
    ],
)
def test_hand_worked_three_jobs_on_two_gpus(name: str, params: dict, expected: list[float]) -> None:
    r = finish(make_policy(name, **params))
    np.testing.assert_allclose(r.finish, expected)


def test_srtf_preempts_for_a_shorter_arrival() -> None:
    # A t=0 1 GPU 10 s; B t=0 2 GPUs 4 s; C t=1 2 GPUs 1 s.
    # B 0-1 (3 left); C preempts B: C 1-2; B 2-5; A 5-15.
    t = jobs([(0, 1, 10), (0, 2, 4), (1, 2, 1)])
    r = finish(make_policy("srtf"), t)
    np.testing.assert_allclose(r.finish, [15, 5, 2])
    assert r.preemptions.tolist() == [0, 1, 0]


def test_stints_record_who_held_which_devices_when() -> None:
    # the SRTF case above: B holds 0-1, is suspended for C (1-2), resumes 2-5; A runs 5-15
    t = jobs([(0, 1, 10), (0, 2, 4), (1, 2, 1)])
    r = finish(make_policy("srtf"), t)
    st = r.stints
    rows = sorted(
        zip(st.job.tolist(), st.start.tolist(), st.end.tolist(), st.devices.tolist(), strict=True)
    )
    assert rows == [(0, 5.0, 15.0, 1), (1, 0.0, 1.0, 2), (1, 2.0, 5.0, 2), (2, 1.0, 2.0, 2)]


def test_restore_delay_is_paid_on_every_resume() -> None:
    # as above with 0.5 s restore: B resumes at 2, stalls to 2.5, ends 5.5; A 5.5-15.5
    t = jobs([(0, 1, 10), (0, 2, 4), (1, 2, 1)])
    r = finish(make_policy("srtf"), t, restore_s=0.5)
    np.testing.assert_allclose(r.finish, [15.5, 5.5, 2])
    # B held devices 0-1 and 2-5.5: 4.5 s on 2 GPUs
    assert r.attained[1] == pytest.approx(9.0)


def test_tiresias_demotes_a_job_when_it_crosses_the_threshold() -> None:
    # 1 GPU, threshold 5 GPU-s. A t=0 8 s; B t=2 3 s.
    # A 0-5 (B waits: same queue, A arrived first); at 5 A is demoted, B 5-8, A 8-11.
    t = jobs([(0, 1, 8), (2, 1, 3)])
    r = finish(make_policy("tiresias", thresholds=(5.0,)), t, cl=ONE_GPU)
    np.testing.assert_allclose(r.finish, [11, 8])
    assert r.preemptions.tolist() == [1, 0]


def test_tiresias_demotes_a_job_it_started_without_another_event() -> None:
    # 1 GPU, threshold 5 GPU-s, all arrive at 0: A 3 s, B 10 s, C 2 s (one queue, FIFO).
    # A 0-3; B starts at 3 and crosses at 8 with no event in between: demoted, C 8-10,
    # B resumes 10-15. (The wake-up must come from the jobs running after the decision.)
    t = jobs([(0, 1, 3), (0, 1, 10), (0, 1, 2)])
    r = finish(make_policy("tiresias", thresholds=(5.0,)), t, cl=ONE_GPU)
    np.testing.assert_allclose(r.finish, [3, 15, 10])
    assert r.preemptions.tolist() == [0, 1, 0]


def test_tiresias_demotes_a_job_twice_in_one_stint() -> None:
    # 3 GPUs, thresholds 2 and 6 GPU-s; A t=0 1 GPU 30 s, P t=1.5 2 GPUs 10 s, B t=3 1 GPU
    # 100 s. A runs from 0 and reaches queue 1 at 2, alone there, so it keeps running. P runs
    # beside it from 1.5 and reaches queue 1 at 2.5, behind A. B (queue 0) arrives at 3: B
    # and A fit, P does not and waits at the front of queue 1's waiting jobs (3 GPU-s, 8.5 s
    # left). B reaches queue 1 at 5, behind P: P resumes, B waits (98 s left). At 6, in the
    # stint that began at 0, A reaches 6 GPU-s and drops to queue 2: P and B run, A waits
    # (24 s left). P reaches queue 2 at 6.5 behind A: A resumes, P waits (7 s left). B
    # reaches queue 2 at 10 behind P: B waits (94 s left). Queue 2 is [A, P, B]: A 10-30.5,
    # P 10-17 (with A), B 17-111.
    t = jobs([(0, 1, 30), (1.5, 2, 10), (3, 1, 100)])
    r = finish(make_policy("tiresias", thresholds=(2.0, 6.0)), t, cl=cluster([("A", 3)]))
    np.testing.assert_allclose(r.finish, [30.5, 17, 111])
    assert r.preemptions.tolist() == [1, 2, 2]


def test_tiresias_counts_gpu_time_not_wall_time() -> None:
    # 2 GPUs, threshold 6 GPU-s. A t=0 2 GPUs 5 s crosses at t=3 (2 GPUs × 3 s).
    # B t=1 2 GPUs 2 s waits until 3, runs 3-5; A resumes 5-7.
    t = jobs([(0, 2, 5), (1, 2, 2)])
    r = finish(make_policy("tiresias", thresholds=(6.0,)), t)
    np.testing.assert_allclose(r.finish, [7, 5])


class HoldUntil(Policy):
    """Start nothing before ``t0`` (asking to be woken then), FIFO afterwards."""

    name = "hold-until"

    def __init__(self, t0: float) -> None:
        self.t0 = t0

    def schedule(self, state: State) -> Decision:
        if state.now < self.t0:
            return Decision(run=np.zeros(0, dtype=np.int64), wake_at=self.t0)
        return Decision(run=state.queued())


def test_a_policy_is_woken_when_its_decision_asked() -> None:
    # 1 GPU. A t=0 3 s; B t=1 2 s. Nothing starts before 5, and nothing else happens at 5:
    # only the wake-up the decisions asked for starts A (5-8); B follows (8-10).
    t = jobs([(0, 1, 3), (1, 1, 2)])
    r = finish(HoldUntil(5.0), t, cl=ONE_GPU)
    np.testing.assert_allclose(r.finish, [8, 10])
    np.testing.assert_allclose(r.first_start, [5, 8])


def test_strict_priority_preempts_for_a_more_important_job() -> None:
    # 1 GPU. A t=0 prio 0 5 s; B t=1 prio 5 2 s: B 1-3, A 0-1 then 3-7.
    t = jobs([(0, 1, 5), (1, 1, 2)], priority=[0, 5])
    r = finish(make_policy("priority"), t, cl=ONE_GPU)
    np.testing.assert_allclose(r.finish, [7, 3])


def test_edf_runs_the_earliest_deadline_and_jobs_without_one_last() -> None:
    # 1 GPU. A t=0 no deadline 5 s; B t=1 deadline 10, 2 s; C t=1 deadline 4, 1 s.
    # A 0-1; C 1-2; B 2-4; A 4-8.
    t = jobs([(0, 1, 5), (1, 1, 2), (1, 1, 1)], deadline=[np.nan, 10, 4])
    r = finish(make_policy("edf"), t, cl=ONE_GPU)
    np.testing.assert_allclose(r.finish, [8, 4, 2])


def test_jobs_larger_than_the_cluster_are_dropped_and_reported() -> None:
    t = jobs([(0, 1, 1), (0, 3, 1), (0, 2, 1)])
    r = finish(make_policy("fifo"), t)
    assert r.drop_reason.tolist() == ["", DROP_TOO_LARGE, ""]
    np.testing.assert_allclose(r.finish, [1, np.nan, 2])


def test_a_job_no_device_can_hold_waits_for_one_that_can() -> None:
    # ResNet-50 (batch size 64) needs 8.04 GB per device (clustersim.fit): not the Orin Nano's
    # 8 GB. Two such jobs at t=0 on one Nano and one AGX Orin: without the check they run side
    # by side; with it the second waits for the AGX and starts when the first ends, and both
    # take the same time there.
    cl = cluster_from_shorthand("Jetson-Orin-Nano-8GB:1:1,Jetson-AGX-Orin-64GB:1:1")
    t = jobs([(0, 1, 1000), (0, 1, 1000)], job_type=["ResNet-50 (batch size 64)"] * 2)
    free = simulate(t, cl, make_policy("fifo"), perf=PerformanceModel(fit_check=False))
    assert np.isfinite(free.finish).all() and free.first_start.tolist() == [0, 0]
    assert free.device_time[:, 0].max() > 0  # one ran on the Nano
    r = simulate(t, cl, make_policy("fifo"))
    assert r.device_time[:, 0].tolist() == [0, 0]
    assert r.first_start[0] == 0 and r.first_start[1] == r.finish[0]
    np.testing.assert_allclose(r.finish[1], 2 * r.finish[0], rtol=1e-12)
    assert summary(r)["jobs_fit_nowhere"] == 0


def test_jobs_no_device_of_the_cluster_can_hold_are_dropped_and_counted() -> None:
    # on Orin Nanos only: ResNet-50 bs64 (8.04 GB) fits nowhere; bs16 (2.62 GB) runs; a PyTorch
    # job type cannot run on TPUs, a job without a job type can; a job asking for a type the
    # cluster lacks keeps its own reason
    nano = cluster_from_shorthand("Jetson-Orin-Nano-8GB:2:1")
    t = jobs(
        [(0, 1, 10), (0, 1, 10), (0, 1, 10)],
        job_type=[
            "ResNet-50 (batch size 64)",
            "ResNet-50 (batch size 16)",
            "ResNet-50 (batch size 16)",
        ],
        gpu_type=["", "", "H100"],
    )
    r = simulate(t, nano, make_policy("fifo"))
    assert r.drop_reason.tolist() == [DROP_NO_FIT, "", DROP_NO_TYPE]
    assert np.isfinite(r.finish).tolist() == [False, True, False]
    m = summary(r)
    assert (m["jobs_dropped"], m["jobs_fit_nowhere"]) == (2, 1)
    tpu = cluster_from_shorthand("TPUv4:4")
    t = jobs([(0, 1, 10), (0, 1, 10)], job_type=["ResNet-50 (batch size 16)", ""])
    r = simulate(t, tpu, make_policy("fifo"))
    assert r.drop_reason.tolist() == [DROP_NO_FIT, ""]
    assert summary(r)["jobs_fit_nowhere"] == 1


def test_a_job_goes_to_its_fastest_type_with_room() -> None:
    cl = cluster([("slow", 1), ("fast", 1)])
    t = jobs([(0, 1, 10), (0, 1, 10)])
    r = finish(make_policy("fifo"), t, cl=cl, rates=fixed_rates(t, cl, speed=[1.0, 2.0]))
    # first job takes the fast type (5 s), second the slow one (10 s)
    np.testing.assert_allclose(r.finish, [5, 10])
    assert r.type_time[0].tolist() == [0, 5] and r.type_time[1].tolist() == [10, 0]


def test_a_gang_spans_nodes_when_no_node_holds_it() -> None:
    cl = cluster([("A", 2), ("A", 2)])
    t = jobs([(0, 3, 2)])
    r = finish(make_policy("fifo"), t, cl=cl)
    assert r.max_nodes.tolist() == [2]
    assert r.finish.tolist() == [2.0]


class _ElasticMax(Policy):
    """Test policy: give every active job as many devices as it may use, in order."""

    name = "test-elastic"
    preemptive = True

    def schedule(self, state: State) -> Decision:
        a = state.active
        return Decision(run=a, ndev=state.jobs.max_gpus[a])


class _PerDeviceRates(FixedRates):
    def placement_rate(self, jobs, types, ndev, link_gbs):  # type: ignore[no-untyped-def]
        return self.rate[jobs, types] * ndev / self._gang[jobs]


def test_elastic_jobs_run_on_the_device_count_the_policy_gives() -> None:
    # 1 GPU gang, may grow to 2: at rate 1 per device, 10 units take 5 s on 2 GPUs
    t = jobs([(0, 1, 10)], max_gpus=[2])
    rates = _PerDeviceRates(rate=np.ones((1, 1)), restore_s=np.zeros(1))
    rates._gang = t.num_gpus.astype(float)  # type: ignore[attr-defined]
    r = finish(_ElasticMax(), t, rates=rates)
    assert r.finish.tolist() == [5.0]
    assert r.attained.tolist() == [10.0]


class _HalfAndHalf(Policy):
    """Test policy: every active job wants half of the time on type 0, realised by rounds."""

    name = "test-fractions"
    preemptive = True
    rounds_only = True

    def __init__(self) -> None:
        self.round_s = 10.0

    def schedule(self, state: State) -> Decision:
        return Decision(run=state.active, fractions=np.full((len(state.active), 1), 0.5))


def test_round_based_fractions_alternate_jobs_round_by_round() -> None:
    # 1 GPU, rounds of 10 s, A and B 15 s each, both arrive at 0.
    # round 0-10: A (tie, earlier job); 10-20: B (A has had its share); 20-: tie again, A
    # runs and ends at 25; every job of that round has finished, so the round ends there
    # and B runs 25-30.
    t = jobs([(0, 1, 15), (0, 1, 15)])
    r = finish(_HalfAndHalf(), t, cl=ONE_GPU)
    np.testing.assert_allclose(r.finish, [25, 30])


def test_devices_freed_mid_round_stay_idle_until_the_round_ends() -> None:
    # 2 GPUs, rounds of 10 s. A (5 s) and B (15 s) start a round at 0; C (3 s) arrives at 1
    # and waits for the round to end at 10 although A frees a GPU at 5: C 10-13, B ends 15.
    t = jobs([(0, 1, 5), (0, 1, 15), (1, 1, 3)])
    r = finish(_HalfAndHalf(), t)
    np.testing.assert_allclose(r.finish, [5, 15, 13])


def test_an_idle_cluster_starts_a_round_at_the_next_arrival() -> None:
    # 1 GPU, rounds of 10 s: A 0-4; the cluster idles; B arrives at 17 and starts at once
    t = jobs([(0, 1, 4), (17, 1, 2)])
    r = finish(_HalfAndHalf(), t, cl=ONE_GPU)
    np.testing.assert_allclose(r.finish, [4, 19])


def test_horizon_reports_unfinished_jobs() -> None:
    r = finish(make_policy("fifo"), options=EngineOptions(until=12.0))
    assert np.isfinite(r.finish[0]) and np.isnan(r.finish[1])
    assert (r.drop_reason[1:] != "").all()


def test_same_seed_gives_identical_results() -> None:
    rng = np.random.default_rng(7)
    rows = [
        (float(s), int(g), float(w))
        for s, g, w in zip(
            np.sort(rng.uniform(0, 50, 40)),
            rng.integers(1, 3, 40),
            rng.uniform(1, 20, 40),
            strict=True,
        )
    ]
    t = jobs(rows)
    cl = cluster([("A", 2), ("A", 2), ("B", 4)], racks=[0, 1, 1])
    from scheduling.placement import RandomPlacement

    a = simulate(t, cl, make_policy("las"), RandomPlacement(), rates=fixed_rates(t, cl), seed=3)
    b = simulate(t, cl, make_policy("las"), RandomPlacement(), rates=fixed_rates(t, cl), seed=3)
    for field in ("finish", "first_start", "attained", "seg_t", "seg_busy", "preemptions"):
        assert np.array_equal(getattr(a, field), getattr(b, field), equal_nan=True), field


def test_progress_is_reported_and_can_abort_the_run() -> None:
    from clustersim.engine import Progress

    seen: list[Progress] = []
    r = finish(make_policy("fifo"), options=EngineOptions(progress=seen.append, progress_every=1))
    assert len(seen) == r.events + 1  # every batch, and once at the end
    assert [p.completed for p in seen] == sorted(p.completed for p in seen)
    assert seen[-1].fraction == 1.0 and seen[-1].arrived == 3

    class Stop(Exception):
        pass

    def stop(p: Progress) -> None:
        if p.now >= 10:
            raise Stop

    with pytest.raises(Stop):
        finish(make_policy("fifo"), options=EngineOptions(progress=stop, progress_every=1))


def test_tiresias_one_threshold_path_matches_the_general_path() -> None:
    # a second threshold no job reaches leaves the order unchanged: both code paths agree
    from tests.test_policy_conformance import random_trace

    t = random_trace(5, n=80)
    a = finish(make_policy("tiresias", thresholds=(40.0,)), t)
    b = finish(make_policy("tiresias", thresholds=(40.0, 1e12)), t)
    np.testing.assert_array_equal(a.finish, b.finish)
    np.testing.assert_array_equal(a.preemptions, b.preemptions)
    assert a.preemptions.sum() > 0


def test_state_running_jobs_are_the_running_ones_and_read_only() -> None:
    seen: list[tuple[set[int], set[int]]] = []

    class Probe(Policy):
        name = "probe"
        preemptive = True

        def schedule(self, state: State) -> Decision:
            r = state.running_jobs()
            a = state.active
            seen.append(({int(x) for x in r}, {int(x) for x in a[state.running[a]]}))
            with pytest.raises(ValueError):
                r[:1] = 0  # the engine's own array: a policy must not write it
            return Decision(run=a)

    finish(Probe(), table=jobs([(0, 1, 10), (0, 1, 4), (1, 1, 3), (2, 2, 1)]))
    assert len(seen) >= 3 and any(got for got, _ in seen)
    assert all(got == want for got, want in seen)


@pytest.mark.parametrize("preemptive", [True, False])
def test_a_policy_that_runs_a_finished_job_is_stopped_with_the_job_named(
    preemptive: bool,
) -> None:
    from clustersim.errors import SimulationError

    class Stale(Policy):
        name = "stale"

        def schedule(self, state: State) -> Decision:
            return Decision(run=np.concatenate([[0], state.active[state.active != 0]]))

    Stale.preemptive = preemptive
    table = jobs([(0, 1, 1), (5, 1, 1)])  # job 0 is done when job 1 arrives
    with pytest.raises(SimulationError, match="scheduled job 'j0', which is not active"):
        finish(Stale(), table=table)


def test_dropping_stale_heap_entries_changes_no_result(monkeypatch: pytest.MonkeyPatch) -> None:
    # strict priority on two GPUs: a top-priority 3,000 s job holds one GPU throughout (its
    # completion entry stays on top of the heap); on the other, a 5,000 s low-priority job is
    # preempted by each of 1,500 half-second jobs arriving once a second, and every
    # preemption leaves a stale entry behind the top one, so the engine compacts its heap
    rows = [(0.0, 1, 3000.0), (0.0, 1, 5000.0)] + [(float(i), 1, 0.5) for i in range(1, 1501)]
    t = jobs(rows, priority=[9, 1] + [5] * 1500)
    compacted = []
    real = engine._Run._compact

    def counting(self, h):  # type: ignore[no-untyped-def]
        before = int(self.ctr[kernels.CTR_HEAP + h])
        real(self, h)
        compacted.append((before, int(self.ctr[kernels.CTR_HEAP + h])))

    monkeypatch.setattr(engine._Run, "_compact", counting)
    with_compaction = finish(make_policy("priority"), t)
    assert compacted, "the trace must make the heap compact"
    assert all(after < before for before, after in compacted)
    monkeypatch.setattr(engine._Run, "_compact", lambda self, h: None)
    without = finish(make_policy("priority"), t)
    assert with_compaction.finish.tobytes() == without.finish.tobytes()
    assert with_compaction.preemptions.tolist() == without.preemptions.tolist()
    assert with_compaction.seg_t.tobytes() == without.seg_t.tobytes()
    assert with_compaction.preemptions[:2].tolist() == [0, 1500]


def test_each_decision_sees_a_new_snapshot_of_one_view() -> None:
    """The engine renews one view per run: each call sees the current time and counts, a new
    ``snapshot`` number, and the dynamic arrays brought up to that time."""
    seen: list[tuple[int, int, float, int, float]] = []

    class Probe(Policy):
        name = "probe"
        preemptive = True

        def schedule(self, state: State) -> Decision:
            a = state.active
            seen.append(
                (id(state), state.snapshot, state.now, state.n_running, float(state.attained[0]))
            )
            assert state.n_running == int(state.running[a].sum())
            return Decision(run=a)

    finish(Probe(), table=jobs([(0, 1, 10), (2, 1, 4), (3, 2, 1)]))
    assert len(seen) >= 3 and len({v for v, *_ in seen}) == 1
    snaps = [s for _, s, *_ in seen]
    assert snaps == sorted(set(snaps))
    # job 0 runs alone on 1 of 2 GPUs from 0: its service at each call is the time so far
    assert [att for *_, now, _, att in seen if now <= 3] == [0.0, 2.0, 3.0]


def test_tiresias_answers_each_snapshot_of_a_renewed_view_anew() -> None:
    """Tiresias remembers its answer to a view (so that asked twice about one snapshot it
    answers the same): a renewed view is a new snapshot, asked about afresh."""
    t = jobs([(0, 1, 100), (0, 1, 100)])
    pol = make_policy("tiresias", thresholds=(10.0,))
    pol.reset(np.random.default_rng(0))
    n = len(t)
    st = State(
        now=0.0,
        jobs=t,
        cluster=ONE_GPU,
        active=np.arange(n),
        running=np.zeros(n, bool),
        alloc_type=np.full(n, -1),
        alloc_n=np.zeros(n, np.int64),
        rate=np.ones((n, 1)),
        first_start=np.full(n, np.nan),
        last_start=np.full(n, np.nan),
        preemptions=np.zeros(n, np.int64),
        free=np.array([1]),
        capacity=np.array([1]),
        remaining=np.full(n, 100.0),
        attained=np.zeros(n),
        executed=np.zeros(n),
        type_time=np.zeros((n, 1)),
    )
    first = pol.schedule(st)
    assert pol.schedule(st) is first  # the same snapshot: the same answer
    st.renew(0.0, 0, 0, 0)
    assert pol.schedule(st) is not first


@pytest.mark.parametrize("preemptive", [True, False])
def test_a_decision_handing_back_the_running_set_is_applied_from_a_copy(
    preemptive: bool,
) -> None:
    """``State.running_jobs()`` is a read-only view of the engine's own array; a decision that
    hands it back (reordered) is applied as the same list copied would be, although applying
    it rewrites that array."""

    def policy(copy: bool) -> Policy:
        class Keep(Policy):
            name = "keep"

            def schedule(self, state: State) -> Decision:
                r = state.running_jobs()
                if len(r) > 1:
                    back = r[::-1]
                    return Decision(run=back.copy() if copy else back)
                return Decision(run=state.active if preemptive else state.queued())

        Keep.preemptive = preemptive
        return Keep()

    table = jobs([(0, 1, 10), (0, 1, 4), (1, 1, 3), (2, 2, 1), (3, 1, 2)])
    a = finish(policy(False), table=table, cl=cluster([("A", 3)]))
    b = finish(policy(True), table=table, cl=cluster([("A", 3)]))
    assert a.finish.tobytes() == b.finish.tobytes()
    assert a.preemptions.tolist() == b.preemptions.tolist()


@pytest.mark.parametrize("policy", ["fifo", "tiresias", "las"])
@pytest.mark.parametrize("where", ["consolidate", "spread"])
def test_rating_placements_before_the_run_changes_no_result(
    policy: str, where: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before the run, the engine rates in one call of the performance model every placement
    a multi-device job can meet (each type, each link: intra-node, NIC, NIC over a rack's
    oversubscription); the run then finds them in its cache. Rating each placement when it
    is first met instead gives the same run, bit for bit, with many more calls."""
    import dataclasses

    from clustersim.perf import JobRates, PerformanceModel
    from clustersim.presets import preset
    from clustersim.synth import gavel_model, generate
    from scheduling.registry import make_placement

    base = preset("gavel-testbed")  # 3 types, a rack of 5 nodes each: make the links differ
    cl = dataclasses.replace(
        base,
        node_rack=np.arange(len(base.node_type)) % 3,
        node_nic_gbps=np.where(np.arange(len(base.node_type)) % 2, 100.0, 40.0),
        rack_oversub=np.array([1.0, 2.0, 3.0]),
    )
    t = generate(gavel_model(), n_jobs=150, seed=4)
    assert (t.num_gpus > 1).sum() >= 20
    rates = PerformanceModel().prepare(t, cl)
    calls: list[int] = []
    real = JobRates.placement_rate

    def counting(self, jobs, types, ndev, link_gbs):  # type: ignore[no-untyped-def]
        calls.append(len(jobs))
        return real(self, jobs, types, ndev, link_gbs)

    monkeypatch.setattr(JobRates, "placement_rate", counting)

    def run():  # type: ignore[no-untyped-def]
        calls.clear()
        r = simulate(t, cl, make_policy(policy), make_placement(where), rates=rates)
        return r, len(calls)

    ahead, n_ahead = run()
    monkeypatch.setattr(engine._Run, "_prefill_rates", lambda self, js: None)
    lazy, n_lazy = run()
    assert n_lazy > 5 * n_ahead  # (a start on fewer devices than its gang still asks)
    for field in ("finish", "first_start", "attained", "type_time", "preemptions", "migrations"):
        assert getattr(ahead, field).tobytes() == getattr(lazy, field).tobytes(), field
    assert ahead.seg_t.tobytes() == lazy.seg_t.tobytes()
    assert ahead.stints.end.tobytes() == lazy.stints.end.tobytes()


def test_stints_are_whole_and_in_order_when_they_outgrow_their_first_array() -> None:
    """Stints (one row per node each time a job releases devices) outgrow their first array on
    a trace with many preemptions; the engine then goes on in new ones. The result still
    lists every stint, in the order they ended, and they add up to each job's service."""
    rows = [(0.0, 1, 3000.0), (0.0, 1, 5000.0)] + [(float(i), 1, 0.5) for i in range(1, 1501)]
    t = jobs(rows, priority=[9, 1] + [5] * 1500)
    r = finish(make_policy("priority"), t)
    st = r.stints
    assert len(st.job) > 4 * 2 + 1024  # past the first array's rows
    assert (np.diff(st.end) >= 0).all()
    held = np.bincount(st.job, weights=st.devices * (st.end - st.start), minlength=len(rows))
    assert np.allclose(held, r.attained, rtol=0, atol=1e-6)
