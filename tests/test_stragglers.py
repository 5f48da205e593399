"""Stragglers (clustersim.stragglers): slow nodes drag gangs to their pace; ``avoid`` keeps
gangs off them. Hand-worked traces on the trivial rate model of ``tests.simple`` (every job
progresses at 1 work unit/s on any placement, whatever its gang size)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from clustersim.engine import EngineOptions, seed_matters, simulate
from clustersim.errors import ClustersimError
from clustersim.failures import FailureOptions
from clustersim.metrics import summary
from clustersim.stragglers import StragglerOptions, slow_nodes
from scheduling.registry import make_placement, make_policy
from tests.simple import cluster, fixed_rates, jobs

STRAGGLER_KEYS = {"slow_nodes", "jobs_slowed", "straggler_device_hours"}


def run(table, cl, placement=None, seed=0, failures=None, **straggle):  # type: ignore[no-untyped-def]
    opts = EngineOptions(seed=seed, stragglers=StragglerOptions(**straggle), failures=failures)
    return simulate(
        table,
        cl,
        make_policy("fifo"),
        None if placement is None else make_placement(placement),
        rates=fixed_rates(table, cl),
        options=opts,
    )


def test_a_gang_runs_at_the_pace_of_its_slowest_node() -> None:
    # Two nodes of 2 GPUs, node 1 at half pace. A 4-GPU job of 400 units spans both nodes:
    # the whole gang goes at 0.5 unit/s and finishes at 800 s (400 s at full pace).
    cl = cluster([("A", 2), ("A", 2)])
    t = jobs([(0, 4, 400)])
    r = run(t, cl, nodes=[1], speed=0.5)
    np.testing.assert_allclose(r.finish, [800.0])
    s = summary(r)
    assert (s["slow_nodes"], s["jobs_slowed"]) == (1, 1)
    # 4 devices × 800 s held at half pace: 1600 device-s lost to the straggler
    assert s["straggler_device_hours"] == pytest.approx(4 * 800 * 0.5 / 3600)


def test_only_the_jobs_on_slow_nodes_slow_down() -> None:
    # Two 2-GPU jobs of 100 units at t = 0; consolidate puts the first on node 0 and the
    # second on node 1 (best fit, lowest index on ties). Node 1 runs at 0.25: the first
    # finishes at 100 s, the second at 100 / 0.25 = 400 s.
    cl = cluster([("A", 2), ("A", 2)])
    t = jobs([(0, 2, 100), (0, 2, 100)])
    r = run(t, cl, nodes=[1], speed=0.25)
    np.testing.assert_allclose(r.finish, [100.0, 400.0])
    s = summary(r)
    assert s["jobs_slowed"] == 1
    assert s["straggler_device_hours"] == pytest.approx(2 * 400 * 0.75 / 3600)


def test_avoiding_slow_nodes_places_on_fast_ones_while_they_can_hold_the_gang() -> None:
    # Node 0 is slow (half pace) and is the one consolidate would pick first.
    cl = cluster([("A", 2), ("A", 2)])
    one = jobs([(0, 2, 100)])
    # without the mitigation: node 0, 100 units at 0.5/s = 200 s; with it: node 1, 100 s
    np.testing.assert_allclose(run(one, cl, nodes=[0], speed=0.5).finish, [200.0])
    r = run(one, cl, nodes=[0], speed=0.5, avoid=True)
    np.testing.assert_allclose(r.finish, [100.0])
    assert summary(r)["jobs_slowed"] == 0
    # two jobs: the first takes the fast node; the second would rather run slowly than
    # wait (the documented assumption): node 0 at half pace, 200 s
    two = jobs([(0, 2, 100), (0, 2, 100)])
    r = run(two, cl, nodes=[0], speed=0.5, avoid=True)
    np.testing.assert_allclose(r.finish, [100.0, 200.0])
    assert summary(r)["jobs_slowed"] == 1


def test_a_restart_after_a_failure_on_fast_nodes_runs_at_full_pace() -> None:
    # Node 1 is slow (half pace) and fails at 100 s, back at 1000 s; a checkpoint every 50 s
    # of computing, free. j0 (2 GPUs, 300 units) starts on node 0 (fast), j1 (2 GPUs, 300
    # units) on node 1 at 0.5 unit/s: its checkpoints are done at 50 s and 100 s (25 units
    # each), so the kill at 100 s keeps 50 units and loses none. j0 finishes at 300 s; j1
    # restarts on node 0 then, at full pace, and does its last 250 units by 550 s.
    cl = cluster([("A", 2), ("A", 2)])
    t = jobs([(0, 2, 300), (0, 2, 300)])
    fo = FailureOptions(
        checkpoint_interval_s=50, checkpoint_overhead_s=0, schedule=[(1, 100, 1000)]
    )
    r = run(t, cl, failures=fo, nodes=[1], speed=0.5)
    np.testing.assert_allclose(r.finish, [300.0, 550.0])
    assert r.failures is not None and r.failures.restarts.tolist() == [0, 1]
    s = summary(r)
    # j1 held node 1 at half pace for 100 s: 2 devices × 100 s × 0.5 lost
    assert s["straggler_device_hours"] == pytest.approx(2 * 100 * 0.5 / 3600)


def test_full_speed_changes_nothing() -> None:
    cl = cluster([("A", 2), ("A", 2)])
    t = jobs([(0, 4, 400), (10, 1, 50), (20, 2, 70)])
    plain = simulate(t, cl, make_policy("fifo"), rates=fixed_rates(t, cl))
    same = run(t, cl, nodes=[1], speed=1.0)
    np.testing.assert_array_equal(plain.finish, same.finish)
    assert not (STRAGGLER_KEYS & set(summary(plain)))
    assert summary(same)["straggler_device_hours"] == 0.0


def test_the_slow_nodes_are_a_share_drawn_from_the_seed() -> None:
    opts = StragglerOptions(share=0.25, speed=0.5)
    # round(0.25 × 8) = 2 slow nodes, the same ones for a seed, in any call
    draws = [slow_nodes(8, opts, seed).tolist() for seed in range(6)]
    assert all(len(d) == 2 for d in draws)
    assert draws == [slow_nodes(8, opts, seed).tolist() for seed in range(6)]
    assert len({tuple(d) for d in draws}) > 1  # another seed, other nodes
    assert slow_nodes(8, StragglerOptions(share=0.3), 0).size == 2  # round(2.4)
    assert slow_nodes(8, StragglerOptions(share=0.0), 0).size == 0
    assert slow_nodes(8, StragglerOptions(share=1.0), 0).tolist() == list(range(8))
    # the seed matters only for a draw
    fifo = make_policy("fifo")
    assert seed_matters(fifo, stragglers=opts)
    assert not seed_matters(fifo, stragglers=StragglerOptions(nodes=[1], speed=0.5))
    assert not seed_matters(fifo, stragglers=StragglerOptions(share=1.0))


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"share": 1.5}, "stragglers.share: must be between 0 and 1"),
        ({"share": -0.1}, "stragglers.share: must be between 0 and 1"),
        ({"share": math.nan}, "stragglers.share: must be between 0 and 1"),
        ({"speed": 0.0}, "stragglers.speed: must be > 0 and <= 1"),
        ({"speed": 1.5}, "stragglers.speed: must be > 0 and <= 1"),
        ({"speed": "fast"}, "stragglers.speed: must be a number"),
        ({"nodes": [-1]}, "stragglers.nodes[0]: want a node index"),
        ({"nodes": [5]}, "stragglers.nodes: no node 5 (the cluster has 2)"),
    ],
)
def test_bad_straggler_options_are_refused_naming_the_field(kw: dict, message: str) -> None:
    cl = cluster([("A", 2), ("A", 2)])
    t = jobs([(0, 1, 10)])
    with pytest.raises(ClustersimError) as err:
        run(t, cl, **kw)
    assert message in str(err.value)


def test_stragglers_and_the_power_model_together_are_refused() -> None:
    cl = cluster([("A", 2), ("A", 2)])
    t = jobs([(0, 1, 100)])
    with pytest.raises(ClustersimError, match="stragglers and the power model"):
        simulate(
            t,
            cl,
            make_policy("power-down"),
            rates=fixed_rates(t, cl),
            options=EngineOptions(stragglers=StragglerOptions(nodes=[0])),
        )


def test_a_run_with_drawn_stragglers_is_the_same_for_a_seed() -> None:
    cl = cluster([("A", 2)] * 4)
    rows = [(10.0 * i, 1 + i % 3, 100.0 + 7 * i) for i in range(30)]
    t = jobs(rows)
    a = run(t, cl, seed=3, share=0.5, speed=0.6)
    b = run(t, cl, seed=3, share=0.5, speed=0.6)
    np.testing.assert_array_equal(a.finish, b.finish)
    assert a.stragglers is not None and b.stragglers is not None
    assert a.stragglers.slow.tolist() == b.stragglers.slow.tolist()
    assert len(a.stragglers.slow) == 2


GAVEL_DEMO = (
    Path(__file__).resolve().parents[1] / "clustersim/data/demo/gavel_synth_multigpu_n100.trace"
)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--slow-share", "1.5"], "--slow-share: must be between 0 and 1"),
        (["--slow-share", "0.5", "--slow-speed", "0"], "--slow-speed: must be > 0 and <= 1"),
        (["--slow-speed", "0.5"], "--slow-speed needs --slow-share"),
        (["--avoid-slow"], "--avoid-slow needs --slow-share"),
    ],
)
def test_the_command_line_refuses_bad_straggler_flags_naming_them(
    extra: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from clustersim.cli import main

    assert main(["run", "--cluster", "v100:8", "--trace", str(GAVEL_DEMO), *extra]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error:") and message in err


def test_the_command_line_runs_with_stragglers_and_avoiding_them_helps(
    capsys: pytest.CaptureFixture[str],
) -> None:
    import json

    from clustersim.cli import main

    base = ["run", "--cluster", "v100:16", "--trace", str(GAVEL_DEMO), "--json"]
    slow = ["--slow-share", "0.5", "--slow-speed", "0.25"]
    assert main(base) == 0
    off = json.loads(capsys.readouterr().out)
    assert main([*base, *slow]) == 0
    on = json.loads(capsys.readouterr().out)
    assert main([*base, *slow, "--avoid-slow"]) == 0
    avoid = json.loads(capsys.readouterr().out)
    assert not STRAGGLER_KEYS & off.keys()
    # v100:16 is 4 nodes of 4 GPUs: round(0.5 × 4) = 2 slow nodes, the same with --avoid-slow
    assert on["slow_nodes"] == avoid["slow_nodes"] == 2
    assert on["jobs_slowed"] > avoid["jobs_slowed"]
    assert on["jct_mean_s"] > avoid["jct_mean_s"] > off["jct_mean_s"]
    assert on["straggler_device_hours"] > avoid["straggler_device_hours"]
