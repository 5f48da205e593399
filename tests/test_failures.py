"""Node failures and restarts from checkpoints (clustersim.failures), alone and in the engine.

Hand-worked traces use scripted failures (``FailureOptions.schedule``) and the trivial rates of
``tests.simple`` (1 work unit per second on every type, whatever the gang), so every expected
time below is arithmetic written next to it.
"""

from __future__ import annotations

import dataclasses
import math
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from clustersim.engine import EngineOptions, seed_matters, simulate
from clustersim.errors import ClustersimError, SpecError
from clustersim.failures import (
    DEVICE_MTBF_HOURS,
    EDGE_MTBF_HOURS,
    REPAIR_HOURS,
    FailureOptions,
    NodeFailures,
    check_settings,
    from_settings,
    node_parameters,
)
from clustersim.metrics import summary
from clustersim.spec import cluster_from_spec, cluster_to_spec
from scheduling.base import Decision, Policy, State
from scheduling.registry import make_policy
from tests.simple import cluster, fixed_rates, jobs

ROOT = Path(__file__).resolve().parents[1]
FAILURE_KEYS = {
    "node_failures",
    "device_hours_down",
    "restarts",
    "jobs_restarted",
    "lost_work_device_hours",
    "checkpoint_device_hours",
    "goodput",
    "effective_training_time_ratio",
}


def run(table, cl, policy="fifo", restore_s=0.0, seed=0, **failure):  # type: ignore[no-untyped-def]
    opts = EngineOptions(seed=seed, failures=FailureOptions(**failure))
    return simulate(
        table,
        cl,
        make_policy(policy),
        rates=fixed_rates(table, cl, restore_s=restore_s),
        options=opts,
    )


# ---------------------------------------------------------------------- hand-worked traces


def test_a_failure_rolls_a_job_back_to_its_last_checkpoint() -> None:
    # One 1-GPU node, one job of 1000 units at 1 unit/s, restore 20 s; a checkpoint every
    # 100 s of computing costs 10 s, so the job progresses at 100/110 unit/s and checkpoint c
    # is done at 110 c s.
    # The node fails at 350: 3 checkpoints done (330), so 300 units are kept and
    # 350 × 100/110 − 300 = 18.18 units are lost (20 s since the checkpoint, 1.82 s of which
    # count as checkpoint writing). Repaired at 400, the job restarts: restore 400-420, then
    # 700 units at 100/110 unit/s = 770 s: finish 1190.
    cl = cluster([("A", 1)])
    t = jobs([(0, 1, 1000)])
    r = run(
        t,
        cl,
        restore_s=20,
        checkpoint_interval_s=100,
        checkpoint_overhead_s=10,
        schedule=[(0, 350, 400)],
    )
    np.testing.assert_allclose(r.finish, [1190.0])
    rec = r.failures
    assert rec is not None
    np.testing.assert_allclose(rec.lost_work, [350 * 100 / 110 - 300])
    np.testing.assert_allclose(rec.lost_device_s, [350 * 100 / 110 - 300])  # 18.18 s × 1 GPU
    assert rec.restarts.tolist() == [1]
    assert r.preemptions.tolist() == [0]  # a failure is not a preemption
    assert (rec.node.tolist(), rec.down.tolist(), rec.up.tolist()) == ([0], [350.0], [400.0])
    s = summary(r)
    assert s.keys() >= FAILURE_KEYS
    assert (s["node_failures"], s["restarts"], s["jobs_restarted"]) == (1, 1, 1)
    assert s["device_hours_down"] == pytest.approx(50 / 3600)
    # held 350 + 790 = 1140 device-s; restore 20; checkpoints (350 + 770) × 10/110 = 101.82;
    # lost 18.18; useful 1140 − 20 − 101.82 − 18.18 = 1000 = the job's work at 1 unit/s
    assert s["checkpoint_device_hours"] == pytest.approx(1120 * 10 / 110 / 3600)
    assert s["lost_work_device_hours"] == pytest.approx((350 * 100 / 110 - 300) / 3600)
    assert s["goodput"] == pytest.approx(1000 / 1140)
    assert s["effective_training_time_ratio"] == pytest.approx(1000 / 1190)


def test_a_killed_job_restarts_on_another_node_when_one_frees_up() -> None:
    # Two 1-GPU nodes; j0 (500 units) on node 0, j1 (300 units) on node 1, from t=0.
    # Checkpoints every 100 s, free (overhead 0); restore 20 s. Node 0 fails at 250 (back at
    # 1000): j0 keeps 200 units (checkpoints at 100, 200), loses 50. j1 ends at 300; j0
    # resumes on node 1 at 300 (one migration), restores until 320, does 300 units: 620.
    cl = cluster([("A", 1), ("A", 1)])
    t = jobs([(0, 1, 500), (0, 1, 300)])
    r = run(
        t,
        cl,
        restore_s=20,
        checkpoint_interval_s=100,
        checkpoint_overhead_s=0,
        schedule=[(0, 250, 1000)],
    )
    np.testing.assert_allclose(r.finish, [620.0, 300.0])
    assert r.failures is not None
    np.testing.assert_allclose(r.failures.lost_work, [50.0, 0.0])
    assert r.failures.restarts.tolist() == [1, 0]
    assert r.migrations.tolist() == [1, 0]
    # the run ends at 620 with node 0 still down: 620 − 250 = 370 device-s down
    assert summary(r)["device_hours_down"] == pytest.approx(370 / 3600)


def test_failure_events_list_each_failure_with_its_kills_and_lost_work() -> None:
    # The gang of the test below (2 GPUs of type A, 400 units, checkpoints every 100 s,
    # free; restore 10 s) on nodes 0 and 1; node 2 (type B) stays empty. Node 1 fails at
    # 150 (back at 200), killing the gang, which loses 50 s × 2 GPUs = 100 device-s; it
    # restarts at 200 and finishes at 510. Node 2 fails at 160 and is still down when the
    # run ends at 510 (repair due at 1000): it killed nothing, its downtime is cut at 510.
    from clustersim.metrics import failure_events, model_records

    cl = cluster([("A", 1), ("A", 1), ("B", 1)])
    t = jobs([(0, 2, 400)])
    r = run(
        t,
        cl,
        restore_s=10,
        checkpoint_interval_s=100,
        checkpoint_overhead_s=0,
        schedule=[(1, 150, 200), (2, 160, 1000)],
    )
    np.testing.assert_allclose(r.finish, [510.0])
    ev = failure_events(r)
    assert ev["node"] == [1, 2]
    assert ev["down_s"] == [150.0, 160.0]
    assert ev["up_s"] == [200.0, 510.0]
    assert ev["repaired"] == [True, False]
    assert ev["killed"] == [1, 0]  # node 2 held nothing
    assert ev["lost_device_h"] == pytest.approx([100 / 3600, 0.0])
    assert ev["accel_type"] == [r.cluster.type_names[r.cluster.node_type[n]] for n in (1, 2)]
    assert set(model_records(r)) == {"failures"}
    assert failure_events(run(t, cl, schedule=[]))["node"] == []


def test_a_failure_kills_the_whole_gang_across_nodes() -> None:
    # Two 1-GPU nodes and one 2-GPU job of 400 units (rate 1 for the gang), checkpoints every
    # 100 s, overhead 0, restore 10 s. Node 1 fails at 150, back at 200: the gang (on both
    # nodes) keeps 100 units and loses 50, i.e. 50 s × 2 GPUs = 100 device-s. Restart at
    # 200, restore to 210, 300 units: 510.
    cl = cluster([("A", 1), ("A", 1)])
    t = jobs([(0, 2, 400)])
    r = run(
        t,
        cl,
        restore_s=10,
        checkpoint_interval_s=100,
        checkpoint_overhead_s=0,
        schedule=[(1, 150, 200)],
    )
    np.testing.assert_allclose(r.finish, [510.0])
    assert r.failures is not None
    np.testing.assert_allclose(r.failures.lost_device_s, [100.0])


def test_a_down_node_takes_its_devices_out_of_the_capacity_policies_see() -> None:
    # One 1-GPU node down from 0 to 100; a 10-unit job arriving at 50 waits for the repair
    # and starts at 100 (a first start: no restore); with the default checkpoints (60 s every
    # 3600 s) it progresses at 3600/3660 unit/s: finish 100 + 10 × 3660/3600 = 110.17. The
    # policy sees capacity 0 while it waits (the failure, before the first submit, counts
    # from the run's start at 50).
    seen: list[tuple[float, int, int]] = []

    class Recording(Policy):
        name = "recording"
        preemptive = True  # called at every event, even with no device free

        def schedule(self, state: State) -> Decision:
            seen.append((state.now, int(state.capacity[0]), int(state.free[0])))
            return Decision(run=state.active)

    cl = cluster([("A", 1)])
    t = jobs([(50, 1, 10)])
    opts = EngineOptions(failures=FailureOptions(schedule=[(0, 0, 100)]))
    r = simulate(t, cl, Recording(), rates=fixed_rates(t, cl), options=opts)
    np.testing.assert_allclose(r.finish, [100 + 10 * 3660 / 3600])
    assert seen[0] == (50.0, 0, 0)
    assert r.seg_t[0] == 50.0
    assert (100.0, 1, 1) in seen
    assert r.failures is not None and r.failures.restarts.tolist() == [0]


# ---------------------------------------------------------------------- invariants


def _gross_work(r, speed: np.ndarray) -> np.ndarray:  # type: ignore[no-untyped-def]
    """Work each job did, counted from its stints (one row per stint, not per node): its
    checkpointed rate × the stint's length less its restore stall."""
    rec = r.failures
    st = r.stints
    n = len(r.jobs)
    out = np.zeros(n)
    seen: set[tuple[int, float]] = set()
    for j, node, start, end in zip(
        st.job.tolist(), st.node.tolist(), st.start.tolist(), st.end.tolist(), strict=True
    ):
        if (j, start) in seen:
            continue
        seen.add((j, start))
        stall = min(rec.restore_s[j], end - start) if start > r.first_start[j] else 0.0
        rate = speed[r.cluster.node_type[node]] * rec.interval_s[j]
        rate /= rec.interval_s[j] + rec.overhead_s[j]
        out[j] += rate * (end - start - stall)
    return out


@pytest.mark.parametrize("policy", ["fifo", "srtf", "las", "tiresias"])
def test_work_done_is_work_asked_plus_lost_work(policy: str) -> None:
    # Conservation: for every completed job, what it computed over all its stints (from the
    # stints table, independently of the engine's bookkeeping) equals its work plus the work
    # it lost to failures. Frequent failures (MTBF 2 h per node) so that many jobs restart.
    cl = cluster([("A", 2), ("A", 2), ("B", 1), ("B", 1)])
    cl = dataclasses.replace(cl, node_mtbf_h=np.full(4, 2.0), node_repair_h=np.full(4, 0.5))
    rng = np.random.default_rng(3)
    n = 40
    table = jobs(
        list(
            zip(
                np.sort(rng.uniform(0, 20_000, n)).tolist(),
                rng.choice([1, 2], n).tolist(),
                rng.uniform(600, 12_000, n).tolist(),
                strict=True,
            )
        )
    )
    speed = np.array([1.0, 0.5])
    rates = fixed_rates(table, cl, speed=speed.tolist(), restore_s=30)
    opts = EngineOptions(
        seed=7, failures=FailureOptions(checkpoint_interval_s=900, checkpoint_overhead_s=45)
    )
    r = simulate(table, cl, make_policy(policy), rates=rates, options=opts)
    rec = r.failures
    assert rec is not None
    assert rec.restarts.sum() > 5  # the test means something
    done = r.completed
    assert done.all()
    np.testing.assert_allclose(
        _gross_work(r, speed)[done], table.work[done] + rec.lost_work[done], rtol=1e-9
    )
    s = summary(r)
    assert 0 < s["goodput"] < 1 and 0 < s["effective_training_time_ratio"] < 1


def test_failure_draws_are_the_same_for_a_seed_and_differ_between_seeds() -> None:
    cl = cluster([("A", 8)] * 50)
    a = NodeFailures(cl, 0, FailureOptions(), seed=11, start=0.0)
    b = NodeFailures(cl, 0, FailureOptions(), seed=11, start=0.0)
    c = NodeFailures(cl, 0, FailureOptions(), seed=12, start=0.0)
    assert a._heap == b._heap
    assert a._heap != c._heap
    np.testing.assert_array_equal(a._round(3)[0], b._round(3)[0])


def test_every_policy_sees_the_same_failures_for_a_seed() -> None:
    # a node's timeline depends on the seed and the node only, not on what ran on it
    cl = cluster([("A", 2)] * 4)
    cl = dataclasses.replace(cl, node_mtbf_h=np.full(4, 1.0), node_repair_h=np.full(4, 0.2))
    table = jobs([(i * 300.0, 1 + i % 2, 3000.0 + 100 * i) for i in range(20)])
    one = run(table, cl, "fifo", seed=5)
    two = run(table, cl, "srtf", seed=5)
    assert one.failures is not None and two.failures is not None
    end = min(one.failures.end, two.failures.end)
    ka, kb = one.failures.down < end, two.failures.down < end
    np.testing.assert_array_equal(one.failures.down[ka], two.failures.down[kb])
    np.testing.assert_array_equal(one.failures.node[ka], two.failures.node[kb])


def test_a_run_with_failures_is_identical_in_another_process() -> None:
    code = (
        "import numpy as np, dataclasses\n"
        "from tests.simple import cluster, fixed_rates, jobs\n"
        "from clustersim.engine import EngineOptions, simulate\n"
        "from clustersim.failures import FailureOptions\n"
        "from scheduling.registry import make_policy\n"
        "cl = cluster([('A', 2)] * 4)\n"
        "cl = dataclasses.replace(cl, node_mtbf_h=np.full(4, 1.0), node_repair_h=np.full(4, .2))\n"
        "t = jobs([(i * 300.0, 1 + i % 2, 3000.0 + 100 * i) for i in range(20)])\n"
        "r = simulate(t, cl, make_policy('las'), rates=fixed_rates(t, cl, restore_s=10),\n"
        "             options=EngineOptions(seed=9, failures=FailureOptions()))\n"
        "print(repr(r.finish.tolist()), repr(r.failures.down.tolist()))\n"
    )
    out = [
        subprocess.run(
            [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout
        for _ in range(2)
    ]
    assert out[0] == out[1]
    cl = cluster([("A", 2)] * 4)
    cl = dataclasses.replace(cl, node_mtbf_h=np.full(4, 1.0), node_repair_h=np.full(4, 0.2))
    t = jobs([(i * 300.0, 1 + i % 2, 3000.0 + 100 * i) for i in range(20)])
    r = run(t, cl, "las", restore_s=10, seed=9)
    assert r.failures is not None
    assert out[0] == f"{r.finish.tolist()!r} {r.failures.down.tolist()!r}\n"


def test_failures_off_change_nothing_and_an_empty_schedule_without_overhead_neither() -> None:
    cl = cluster([("A", 2), ("B", 2)])
    table = jobs([(i * 50.0, 1 + i % 2, 500.0 + 37 * i) for i in range(30)])
    rates = fixed_rates(table, cl, speed=[1.0, 0.5], restore_s=5)
    for policy in ("fifo", "las", "tiresias"):
        base = simulate(table, cl, make_policy(policy), rates=rates)
        off = simulate(
            table, cl, make_policy(policy), rates=rates, options=EngineOptions(failures=None)
        )
        quiet = simulate(
            table,
            cl,
            make_policy(policy),
            rates=rates,
            options=EngineOptions(failures=FailureOptions(schedule=[], checkpoint_overhead_s=0)),
        )
        for r in (off, quiet):
            np.testing.assert_array_equal(r.finish, base.finish)
            np.testing.assert_array_equal(r.stints.start, base.stints.start)
            assert r.events == base.events
        s_base, s_quiet = summary(base), summary(quiet)
        assert not FAILURE_KEYS & s_base.keys()
        assert {k: v for k, v in s_quiet.items() if k not in FAILURE_KEYS} == s_base
        assert base.failures is None


def test_seed_matters_when_failures_are_drawn() -> None:
    fifo = make_policy("fifo")
    assert not seed_matters(fifo)
    assert seed_matters(fifo, failures=FailureOptions())
    assert not seed_matters(fifo, failures=FailureOptions(schedule=[(0, 1.0, 2.0)]))


# ---------------------------------------------------------------------- parameters


def test_default_parameters_come_from_the_published_rate_per_device() -> None:
    spec = {
        "pools": [
            {"accelerator": "H100-SXM5", "nodes": 2, "devices_per_node": 8},
            {
                "accelerator": "H100-SXM5",
                "nodes": 1,
                "devices_per_node": 8,
                "mtbf_hours": 100,
                "repair_hours": 3,
                "failure_shape": 0.7,
            },
            {"accelerator": "Jetson AGX Orin", "nodes": 1, "availability": 0.75},
        ]
    }
    mtbf, repair, shape = node_parameters(cluster_from_spec(spec))
    # Llama 3: 16,384 GPUs × 54 days × 24 h / 419 interruptions = 50,677 h per GPU; 8 per node
    assert pytest.approx(50_677, abs=1) == DEVICE_MTBF_HOURS
    np.testing.assert_allclose(mtbf, [DEVICE_MTBF_HOURS / 8] * 2 + [100, EDGE_MTBF_HOURS])
    # availability 0.75: online 3/4 of the time, so repair = mtbf × 0.25 / 0.75 = 8 h
    np.testing.assert_allclose(repair, [REPAIR_HOURS, REPAIR_HOURS, 3, 8])
    np.testing.assert_allclose(shape, [1, 1, 0.7, 1])


@pytest.mark.parametrize("shape", [1.0, 0.7])
def test_times_to_failure_have_the_mean_the_spec_asks_for(shape: float) -> None:
    # 20,000 nodes' first times to failure: the mean is the MTBF (Weibull scale mtbf / Γ(1 +
    # 1/k)); the standard error is about 1 % for k = 1, so 4 % is a loose bound
    n = 20_000
    cl = dataclasses.replace(
        cluster([("A", 1)] * n),
        node_mtbf_h=np.full(n, 10.0),
        node_repair_h=np.full(n, 2.0),
        node_failure_shape=np.full(n, shape),
    )
    up, rep = NodeFailures(cl, 0, FailureOptions(), seed=1, start=0.0)._round(0)
    assert up.mean() == pytest.approx(36_000, rel=0.04)
    assert rep.mean() == pytest.approx(7_200, rel=0.04)


def test_spec_failure_keys_round_trip() -> None:
    spec = {
        "pools": [
            {"accelerator": "V100", "nodes": 2, "mtbf_hours": 500.0, "repair_hours": 6.0},
            {"accelerator": "V100", "nodes": 1},
        ]
    }
    cl = cluster_from_spec(spec)
    back = cluster_to_spec(cl)
    assert back["pools"][0]["mtbf_hours"] == 500.0 and back["pools"][0]["repair_hours"] == 6.0
    assert "mtbf_hours" not in back["pools"][1] and "failure_shape" not in back["pools"][0]
    again = cluster_from_spec(back)
    np.testing.assert_array_equal(again.node_mtbf_h, cl.node_mtbf_h)
    np.testing.assert_array_equal(again.node_repair_h, cl.node_repair_h)


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("mtbf_hours", 0, "must be > 0"),
        ("mtbf_hours", -5, "must be > 0"),
        ("mtbf_hours", "often", "must be a number"),
        ("repair_hours", 0, "must be > 0"),
        ("repair_hours", -1.5, "must be > 0"),
        ("failure_shape", 0, "must be > 0"),
        ("failure_shape", 50, "must be <= 20"),
    ],
)
def test_a_failure_rate_or_repair_time_that_is_not_positive_is_refused(
    key: str, value: object, message: str
) -> None:
    spec = {"pools": [{"accelerator": "V100", "nodes": 1, key: value}]}
    with pytest.raises(SpecError, match=message) as err:
        cluster_from_spec(spec)
    assert err.value.field == f"pools[0].{key}"


def test_a_repair_time_and_an_availability_below_one_are_refused_together() -> None:
    spec = {"pools": [{"accelerator": "V100", "nodes": 1, "availability": 0.9, "repair_hours": 2}]}
    with pytest.raises(SpecError, match="not both") as err:
        cluster_from_spec(spec)
    assert err.value.field == "pools[0].repair_hours"


@pytest.mark.parametrize(
    ("kw", "field"),
    [
        ({"checkpoint_interval_s": 0}, "checkpoint_interval_s"),
        ({"checkpoint_interval_s": -60}, "checkpoint_interval_s"),
        ({"checkpoint_interval_s": math.inf}, "checkpoint_interval_s"),
        ({"checkpoint_overhead_s": -1}, "checkpoint_overhead_s"),
        ({"checkpoint_overhead_s": math.nan}, "checkpoint_overhead_s"),
        ({"checkpoint_interval_s": np.ones(3)}, "checkpoint_interval_s"),
    ],
)
def test_bad_checkpoint_options_are_refused_naming_the_option(kw: dict, field: str) -> None:
    cl = cluster([("A", 1)])
    t = jobs([(0, 1, 10), (0, 1, 10)])
    with pytest.raises(ClustersimError, match=field):
        run(t, cl, **kw)


@pytest.mark.parametrize(
    "schedule",
    [[(3, 0, 10)], [(0, 10, 5)], [(0, 0, 10), (0, 5, 20)], [(0, math.nan, 1)], [("x",)]],
)
def test_a_bad_failure_schedule_is_refused(schedule: list) -> None:
    cl = cluster([("A", 1)])
    t = jobs([(0, 1, 10)])
    with pytest.raises(ClustersimError, match="schedule"):
        run(t, cl, schedule=schedule)


def test_per_job_checkpoint_intervals() -> None:
    # two 1-GPU nodes, both jobs 1000 units, node 0 and 1 fail at 250 (back at 260); job 0
    # checkpoints every 100 s (keeps 200, loses 50), job 1 every 1000 s (keeps 0, loses 250)
    cl = cluster([("A", 1), ("A", 1)])
    t = jobs([(0, 1, 1000), (0, 1, 1000)])
    r = run(
        t,
        cl,
        checkpoint_interval_s=np.array([100.0, 1000.0]),
        checkpoint_overhead_s=0,
        schedule=[(0, 250, 260), (1, 250, 260)],
    )
    assert r.failures is not None
    np.testing.assert_allclose(r.failures.lost_work, [50.0, 250.0])
    # restarts at 260 (restore 0): 800 and 1000 units left
    np.testing.assert_allclose(r.finish, [1060.0, 1260.0])


# ---------------------------------------------------------------------- command line

GAVEL_DEMO = ROOT / "clustersim" / "data" / "demo" / "gavel_synth_multigpu_n100.trace"


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--failures", "--mtbf-hours", "0"], "--mtbf-hours: must be a finite number > 0"),
        (["--failures", "--mtbf-hours", "-3"], "--mtbf-hours: must be a finite number > 0"),
        (["--failures", "--repair-hours", "0"], "--repair-hours: must be a finite number > 0"),
        (["--failures", "--repair-hours", "nan"], "--repair-hours: must be a finite number"),
        (["--failures", "--checkpoint-interval-s", "0"], "--checkpoint-interval-s: must be"),
        (["--failures", "--checkpoint-overhead-s", "-1"], "--checkpoint-overhead-s: must be"),
        (["--mtbf-hours", "100"], "--mtbf-hours needs --failures"),
    ],
)
def test_the_command_line_refuses_bad_failure_flags_naming_them(
    extra: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from clustersim.cli import main

    args = ["run", "--cluster", "v100:8", "--trace", str(GAVEL_DEMO), *extra]
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error:") and message in err and "\n" not in err


def test_the_command_line_refuses_a_spec_with_a_bad_repair_time(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from clustersim.cli import main

    spec = tmp_path / "c.json"
    spec.write_text('{"pools": [{"accelerator": "V100", "nodes": 2, "repair_hours": -2}]}')
    assert main(["run", "--cluster", str(spec), "--trace", str(GAVEL_DEMO), "--failures"]) == 2
    assert "pools[0].repair_hours" in capsys.readouterr().err


def test_the_command_line_runs_with_failures_and_reports_their_metrics(
    capsys: pytest.CaptureFixture[str],
) -> None:
    import json

    from clustersim.cli import main

    base = ["run", "--cluster", "v100:8,p100:8", "--trace", str(GAVEL_DEMO), "--json"]
    assert main(base) == 0
    off = json.loads(capsys.readouterr().out)
    flags = ["--failures", "--mtbf-hours", "50", "--repair-hours", "2"]
    assert main([*base, *flags, "--checkpoint-interval-s", "1800"]) == 0
    on = json.loads(capsys.readouterr().out)
    assert not FAILURE_KEYS & off.keys()
    assert on["node_failures"] > 0 and on["restarts"] > 0
    assert on["jobs_completed"] == off["jobs_completed"]
    assert on["jct_mean_s"] > off["jct_mean_s"]


def test_failures_and_the_power_model_together_are_refused() -> None:
    cl = cluster([("A", 2), ("A", 2)])
    t = jobs([(0, 1, 100)])
    with pytest.raises(ClustersimError, match="power model"):
        simulate(
            t,
            cl,
            make_policy("power-down"),
            rates=fixed_rates(t, cl),
            options=EngineOptions(failures=FailureOptions()),
        )


# ---------------------------------------------------------------------- scenario settings
# (an experiment's ``failures`` object: clustersim.failures.check_settings / from_settings)


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"mtbf_hours": 0}, "failures.mtbf_hours: must be a finite number > 0"),
        ({"repair_hours": -1.0}, "failures.repair_hours: must be a finite number > 0"),
        ({"repair_hours": math.inf}, "failures.repair_hours: must be a finite number > 0"),
        ({"checkpoint_interval_s": 0}, "failures.checkpoint_interval_s: must be a finite"),
        ({"checkpoint_overhead_s": -1}, "failures.checkpoint_overhead_s: must be a finite"),
        ({"checkpoint_interval_s": None}, "failures.checkpoint_interval_s: must be a number"),
        ({"mtbf_hours": "10"}, "failures.mtbf_hours: must be a number, not '10'"),
        ({"mtbf_hours": True}, "failures.mtbf_hours: must be a number, not True"),
        ({"mtbf": 10}, "failures.mtbf: unknown setting"),
        ([], "failures: want an object"),
    ],
)
def test_bad_failure_settings_are_refused_naming_the_key(settings: object, message: str) -> None:
    with pytest.raises(ClustersimError, match=re.escape(message)):
        check_settings(settings)


def test_failure_settings_fill_in_the_defaults_and_override_every_node() -> None:
    assert check_settings({}) == {
        "checkpoint_interval_s": 3600.0,
        "checkpoint_overhead_s": 60.0,
        "mtbf_hours": None,
        "repair_hours": None,
    }
    cl = cluster([("A", 1), ("A", 2)])
    opts, same = from_settings({"checkpoint_overhead_s": 0}, cl)
    assert same is cl  # no override: the spec's (here default) parameters stand
    assert (opts.checkpoint_interval_s, opts.checkpoint_overhead_s) == (3600.0, 0.0)
    _, over = from_settings({"mtbf_hours": 5, "repair_hours": 0.5}, cl)
    mtbf, repair, shape = node_parameters(over)
    assert mtbf.tolist() == [5.0, 5.0] and repair.tolist() == [0.5, 0.5]
    assert shape.tolist() == [1.0, 1.0]
