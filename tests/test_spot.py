"""Spot capacity (clustersim.spot): reclaims with notice, spot prices, alone and in the engine.

Hand-worked traces replay reclaims (``SpotOptions.trace``) with the trivial rates of
``tests.simple`` (1 work unit per second on every type, whatever the gang, and $1 per
device-hour on demand), so every expected time below is arithmetic written next to it.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

from clustersim.cluster import Cluster
from clustersim.engine import EngineOptions, seed_matters, simulate
from clustersim.errors import ClustersimError, SimulationError, SpecError
from clustersim.failures import FailureOptions
from clustersim.metrics import summary
from clustersim.spec import cluster_from_spec, cluster_to_spec
from clustersim.spot import (
    DEFAULT_DISCOUNT,
    DEFAULT_NOTICE_S,
    DEFAULT_RECLAIM_HOURS,
    SpotOptions,
    SpotReclaims,
    check_settings,
    check_trace,
    from_settings,
    read_trace_csv,
)
from scheduling.registry import make_policy
from tests.simple import cluster, fixed_rates, jobs
from tests.test_failures import _gross_work

ROOT = Path(__file__).resolve().parents[1]
GAVEL_DEMO = ROOT / "clustersim" / "data" / "demo" / "gavel_synth_multigpu_n100.trace"
SPOT_KEYS = {
    "spot_reclaims",
    "spot_device_hours_reclaimed",
    "spot_restarts",
    "spot_jobs_restarted",
    "spot_restarts_saved_by_notice",
    "spot_lost_work_device_hours",
}
SPOT_COST_KEYS = {"spot_device_hours", "cost_cloud_spot_usd", "spot_savings_usd"}


def spot(
    cl: Cluster,
    nodes: list[int],
    price: float = 0.4,
    reclaim_h: float = 1.0,
    return_h: float = 0.5,
    notice_s: float = 30.0,
) -> Cluster:
    """``cl`` with ``nodes`` spot (every other node on demand)."""
    n = cl.n_nodes
    on = np.zeros(n, dtype=bool)
    on[nodes] = True

    def col(v: float) -> np.ndarray:
        return np.where(on, v, np.nan)

    return dataclasses.replace(
        cl,
        node_spot_price=col(price),
        node_spot_reclaim_h=col(reclaim_h),
        node_spot_return_h=col(return_h),
        node_spot_notice_s=col(notice_s),
    )


def run(table, cl, policy="fifo", restore_s=0.0, seed=0, failures=None, **kw):  # type: ignore[no-untyped-def]
    opts = EngineOptions(seed=seed, spot=SpotOptions(**kw), failures=failures)
    return simulate(
        table,
        cl,
        make_policy(policy),
        rates=fixed_rates(table, cl, restore_s=restore_s),
        options=opts,
    )


# ---------------------------------------------------------------------- hand-worked traces


@pytest.mark.parametrize("notice_s", [30.0, 10.0])
def test_a_reclaim_with_enough_notice_keeps_all_the_work(notice_s: float) -> None:
    """Two 1-GPU nodes, node 0 on demand, node 1 spot at $0.40/device-h (on demand $1).
    j0 (2000 units) and j1 (1000 units) arrive at 0 and take nodes 0 and 1. A checkpoint every
    100 s of computing costs O = 10 s, so both progress at 100/110 unit/s; restore 20 s.
    Node 1 is reclaimed at 350 and returns at 400, with a notice of 30 s (or exactly 10 s):
    O <= notice, so j1 checkpoints in the notice and keeps 350 × 100/110 = 318.18 units. It
    waits for node 1 (node 0 is j0's until 2000 × 1.1 = 2200), restores 400-420, does its
    681.82 units in 681.82 × 1.1 = 750 s: finish 1170 (1100 without the reclaim).

    Held: node 0 2200 s, node 1 350 + 770 = 1120 s. Cloud cost = 2200 × $1 + 1120 × $0.4
    per 3600 s; the spot part 1120 × 0.4 / 3600, saved 1120 × 0.6 / 3600. Checkpoint writing
    = computing (2200 + 350 + 750) × 10/110 = 300 s; useful = 3320 − 20 − 300 − 0 = 3000 s,
    the two jobs' work at 1 unit/s; ETTR = 3000 / (2200 + 1170).
    """
    cl = spot(cluster([("A", 1), ("A", 1)]), [1], notice_s=notice_s)
    t = jobs([(0, 1, 2000), (0, 1, 1000)])
    r = run(
        t,
        cl,
        restore_s=20,
        trace=[(1, 350, 400)],
        checkpoint_interval_s=100,
        checkpoint_overhead_s=10,
    )
    np.testing.assert_allclose(r.finish, [2200.0, 1170.0])
    rec = r.spot
    assert rec is not None and r.failures is None
    assert rec.restarts.tolist() == [0, 1] and rec.saved_by_notice.tolist() == [0, 1]
    np.testing.assert_allclose(rec.lost_work, [0.0, 0.0])
    assert (rec.node.tolist(), rec.reclaimed.tolist(), rec.returned.tolist()) == (
        [1],
        [350.0],
        [400.0],
    )
    assert r.preemptions.tolist() == [0, 0]
    s = summary(r)
    assert s.keys() >= SPOT_KEYS | SPOT_COST_KEYS
    assert "node_failures" not in s and "restarts" not in s  # reclaims are not failures
    assert (s["spot_reclaims"], s["spot_restarts"], s["spot_restarts_saved_by_notice"]) == (1, 1, 1)
    assert s["spot_device_hours_reclaimed"] == pytest.approx(50 / 3600)
    assert s["spot_lost_work_device_hours"] == 0
    assert s["spot_device_hours"] == pytest.approx(1120 / 3600)
    assert s["cost_cloud_usd"] == pytest.approx((2200 * 1.0 + 1120 * 0.4) / 3600)
    assert s["cost_cloud_spot_usd"] == pytest.approx(1120 * 0.4 / 3600)
    assert s["spot_savings_usd"] == pytest.approx(1120 * 0.6 / 3600)
    assert s["checkpoint_device_hours"] == pytest.approx(300 / 3600)
    assert s["goodput"] == pytest.approx(3000 / 3320)
    assert s["effective_training_time_ratio"] == pytest.approx(3000 / 3370)


def test_a_reclaim_with_too_short_a_notice_rolls_back_to_the_last_checkpoint() -> None:
    """As above, with a notice of 5 s < O = 10 s: j1 cannot write a checkpoint in time and
    falls back to the failure rule. At 350 three checkpoints are done (at 110, 220, 330 s):
    it keeps 300 units and loses 350 × 100/110 − 300 = 18.18. Restore 400-420, then 700 units
    in 770 s: finish 1190. The 18.18 units took 18.18 s of computing at the raw rate (1 unit/s,
    1 GPU): 18.18 device-s lost. Held 2200 + 350 + 790 = 3340 device-s; checkpoints
    (2200 + 350 + 770) × 10/110 = 301.82; useful = 3340 − 20 − 301.82 − 18.18 = 3000.
    """
    cl = spot(cluster([("A", 1), ("A", 1)]), [1], notice_s=5.0)
    t = jobs([(0, 1, 2000), (0, 1, 1000)])
    r = run(
        t,
        cl,
        restore_s=20,
        trace=[(1, 350, 400)],
        checkpoint_interval_s=100,
        checkpoint_overhead_s=10,
    )
    lost = 350 * 100 / 110 - 300
    np.testing.assert_allclose(r.finish, [2200.0, 1190.0])
    assert r.spot is not None
    assert r.spot.restarts.tolist() == [0, 1] and r.spot.saved_by_notice.tolist() == [0, 0]
    np.testing.assert_allclose(r.spot.lost_work, [0.0, lost])
    s = summary(r)
    assert s["spot_restarts_saved_by_notice"] == 0
    assert s["spot_lost_work_device_hours"] == pytest.approx(lost / 3600)
    assert s["goodput"] == pytest.approx(3000 / 3340)
    assert s["effective_training_time_ratio"] == pytest.approx(3000 / (2200 + 1190))


def test_a_zero_notice_is_no_notice_even_for_free_checkpoints() -> None:
    # One spot GPU, one job of 300 units, checkpoints every 100 s, free (O = 0), restore 0.
    # Reclaimed at 150 with no notice: it keeps the checkpoint at 100 and loses 50 units;
    # back at 200, 200 units to go: 400. (A 1 s notice would have kept all: 350.)
    t = jobs([(0, 1, 300)])
    for notice, finish in ((0.0, 400.0), (1.0, 350.0)):
        cl = spot(cluster([("A", 1)]), [0], notice_s=notice)
        r = run(t, cl, trace=[(0, 150, 200)], checkpoint_interval_s=100, checkpoint_overhead_s=0)
        np.testing.assert_allclose(r.finish, [finish])


def test_a_node_failed_and_reclaimed_comes_back_when_both_are_over() -> None:
    """Node 1 (spot, notice 30 s) fails at 300 (back at 500) and is reclaimed 350-400. The
    failure kills j1 (1000 units, I = 100, O = 10, restore 20): 2 checkpoints done (220), it
    keeps 200 units and loses 300 × 100/110 − 200 = 72.73. The reclaim finds the node down and
    stops nothing; the node is back at 500 (not 400): restore 500-520, 800 units in 880 s:
    finish 1400. The failure is counted as a failure, the reclaim as a reclaim.
    """
    cl = spot(cluster([("A", 1), ("A", 1)]), [1], notice_s=30.0)
    t = jobs([(0, 1, 2000), (0, 1, 1000)])
    r = run(
        t,
        cl,
        restore_s=20,
        trace=[(1, 350, 400)],
        failures=FailureOptions(
            checkpoint_interval_s=100, checkpoint_overhead_s=10, schedule=[(1, 300, 500)]
        ),
    )
    np.testing.assert_allclose(r.finish, [2200.0, 1400.0])
    assert r.failures is not None and r.spot is not None
    assert r.failures.restarts.tolist() == [0, 1] and r.spot.restarts.tolist() == [0, 0]
    np.testing.assert_allclose(r.failures.lost_work, [0.0, 300 * 100 / 110 - 200])
    s = summary(r)
    assert (s["node_failures"], s["restarts"], s["spot_reclaims"], s["spot_restarts"]) == (
        1,
        1,
        1,
        0,
    )


def test_a_gang_across_a_spot_and_an_on_demand_node_is_stopped_whole() -> None:
    # One 2-GPU job of 400 units (rate 1 for the gang) on node 0 (on demand) and node 1 (spot,
    # notice 0), I = 100, O = 0, restore 10. Node 1 reclaimed at 150, back at 200: the gang
    # keeps 100 units, loses 50 (× 2 GPUs = 100 device-s). Restart 200, restore 210, 300 units:
    # 510.
    cl = spot(cluster([("A", 1), ("A", 1)]), [1], notice_s=0.0)
    t = jobs([(0, 2, 400)])
    r = run(
        t,
        cl,
        restore_s=10,
        trace=[(1, 150, 200)],
        checkpoint_interval_s=100,
        checkpoint_overhead_s=0,
    )
    np.testing.assert_allclose(r.finish, [510.0])
    assert r.spot is not None
    np.testing.assert_allclose(r.spot.lost_device_s, [100.0])


# ---------------------------------------------------------------------- conservation, seeds


@pytest.mark.parametrize("policy", ["fifo", "las", "tiresias"])
def test_work_done_is_work_asked_plus_work_lost_to_reclaims_and_failures(policy: str) -> None:
    # For every completed job, what it computed over all its stints (from the stints table)
    # equals its work plus the work it lost to reclaims and to failures. Spot nodes reclaimed
    # every 2 h on average, half with a notice the 45 s checkpoint fits in, half not.
    cl = cluster([("A", 2), ("A", 2), ("B", 1), ("B", 1)])
    cl = spot(cl, [0, 1, 2], reclaim_h=2.0, return_h=0.5, notice_s=60.0)
    cl = dataclasses.replace(
        cl,
        node_spot_notice_s=np.array([60.0, 20.0, 60.0, np.nan]),
        node_mtbf_h=np.full(4, 6.0),
        node_repair_h=np.full(4, 0.5),
    )
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
        seed=7,
        failures=FailureOptions(checkpoint_interval_s=900, checkpoint_overhead_s=45),
        spot=SpotOptions(),
    )
    r = simulate(table, cl, make_policy(policy), rates=rates, options=opts)
    assert r.spot is not None and r.failures is not None
    assert r.spot.restarts.sum() > 5 and r.spot.saved_by_notice.sum() > 0  # it means something
    assert r.spot.lost_work.sum() > 0
    assert not np.isin(r.spot.node, [3]).any()  # the on-demand node is never reclaimed
    done = r.completed
    assert done.all()
    lost = r.spot.lost_work + r.failures.lost_work
    np.testing.assert_allclose(
        _gross_work(r, speed)[done], table.work[done] + lost[done], rtol=1e-9
    )
    s = summary(r)
    assert 0 < s["goodput"] < 1 and 0 < s["effective_training_time_ratio"] < 1


def test_reclaim_draws_are_the_same_for_a_seed_and_differ_between_seeds_and_from_failures() -> None:
    cl = spot(cluster([("A", 8)] * 50), list(range(50)), reclaim_h=10.0)
    a = SpotReclaims(cl, 0, SpotOptions(), seed=11, start=0.0)
    b = SpotReclaims(cl, 0, SpotOptions(), seed=11, start=0.0)
    c = SpotReclaims(cl, 0, SpotOptions(), seed=12, start=0.0)
    assert a._heap == b._heap and a._heap != c._heap
    np.testing.assert_array_equal(a._round(3)[0], b._round(3)[0])
    # the same means as the failures' draw nothing alike (another spawn key)
    from clustersim.failures import NodeFailures

    f = NodeFailures(
        dataclasses.replace(cl, node_mtbf_h=np.full(50, 10.0)), 0, FailureOptions(), 11, 0.0
    )
    assert sorted(t for t, *_ in f._heap) != sorted(t for t, *_ in a._heap)
    # a mean of 10 h: 50 nodes × 40 rounds average near it
    draws = np.concatenate([a._round(r)[0] for r in range(40)]) / 3600
    assert draws.mean() == pytest.approx(10.0, rel=0.1)


def test_every_policy_meets_the_same_reclaims_for_a_seed() -> None:
    cl = spot(cluster([("A", 2)] * 4), [0, 1, 2, 3], reclaim_h=1.0, return_h=0.2)
    table = jobs([(i * 300.0, 1 + i % 2, 3000.0 + 100 * i) for i in range(20)])
    one = run(table, cl, "fifo", seed=5)
    two = run(table, cl, "las", seed=5)
    other = run(table, cl, "fifo", seed=6)
    assert one.spot is not None and two.spot is not None and other.spot is not None
    end = min(one.spot.end, two.spot.end)
    ka, kb = one.spot.reclaimed < end, two.spot.reclaimed < end
    assert ka.sum() > 3
    np.testing.assert_array_equal(one.spot.reclaimed[ka], two.spot.reclaimed[kb])
    np.testing.assert_array_equal(one.spot.node[ka], two.spot.node[kb])
    again = run(table, cl, "fifo", seed=5)
    np.testing.assert_array_equal(again.finish, one.finish)
    assert not np.array_equal(other.spot.reclaimed[:3], one.spot.reclaimed[:3])


def test_seed_matters_when_reclaims_are_drawn() -> None:
    fifo = make_policy("fifo")
    assert seed_matters(fifo, spot=SpotOptions())
    assert not seed_matters(fifo, spot=SpotOptions(trace=[(0, 1.0, 2.0)]))


def test_spot_off_changes_nothing_but_the_price() -> None:
    # Spot pools without reclaims: the same schedule as on demand, cheaper cloud cost.
    base_cl = cluster([("A", 2), ("B", 2)])
    cl = spot(base_cl, [1], price=0.25)
    table = jobs([(i * 50.0, 1 + i % 2, 500.0 + 37 * i) for i in range(30)])
    rates = fixed_rates(table, cl, speed=[1.0, 0.5], restore_s=5)
    for policy in ("fifo", "tiresias"):
        base = simulate(table, base_cl, make_policy(policy), rates=rates)
        priced = simulate(table, cl, make_policy(policy), rates=rates)
        quiet = simulate(
            table,
            cl,
            make_policy(policy),
            rates=rates,
            options=EngineOptions(spot=SpotOptions(trace=[], checkpoint_overhead_s=0)),
        )
        for r in (priced, quiet):
            np.testing.assert_array_equal(r.finish, base.finish)
            assert r.events == base.events
        s_base, s_priced = summary(base), summary(priced)
        assert not (SPOT_KEYS | SPOT_COST_KEYS) & s_base.keys()
        assert priced.spot is None and not SPOT_KEYS & s_priced.keys()
        on_b = priced.stints.node == 1
        dev_s = float(
            ((priced.stints.end - priced.stints.start) * priced.stints.devices)[on_b].sum()
        )
        assert dev_s > 0
        assert s_priced["spot_device_hours"] == pytest.approx(dev_s / 3600)
        assert s_priced["cost_cloud_usd"] == pytest.approx(
            s_base["cost_cloud_usd"] - dev_s * (1 - 0.25) / 3600
        )
        same = {k for k in s_base if k not in ("cost_cloud_usd", "work_per_dollar_cloud")}
        assert {k: s_priced[k] for k in same} == {k: s_base[k] for k in same}


def test_spot_and_the_power_model_together_are_refused() -> None:
    cl = spot(cluster([("A", 2), ("A", 2)]), [1])
    t = jobs([(0, 1, 100)])
    with pytest.raises(SimulationError, match="spot reclaims and the power model"):
        simulate(
            t,
            cl,
            make_policy("power-down"),
            rates=fixed_rates(t, cl),
            options=EngineOptions(spot=SpotOptions()),
        )


def test_spot_checkpoints_differing_from_the_failures_are_refused() -> None:
    cl = spot(cluster([("A", 1)]), [0])
    t = jobs([(0, 1, 100)])
    with pytest.raises(ClustersimError, match=r"spot\.checkpoint_interval_s: differs"):
        run(t, cl, failures=FailureOptions(checkpoint_interval_s=100), checkpoint_interval_s=200)


# ---------------------------------------------------------------------- the spec


def test_a_spot_pool_in_the_spec_with_its_defaults_and_round_trip() -> None:
    spec = {
        "pools": [
            {"accelerator": "V100", "nodes": 2},
            {"accelerator": "V100", "nodes": 3, "spot": True},
            {
                "accelerator": "A100-SXM4-80GB",
                "nodes": 1,
                "spot": True,
                "spot_price_per_hour": 1.25,
                "spot_reclaim_hours": 5,
                "spot_return_hours": 0.25,
                "spot_notice_s": 30,
            },
        ]
    }
    cl = cluster_from_spec(spec)
    assert cl.node_spot.tolist() == [False, False, True, True, True, True]
    v100 = cl.types[0].price_per_hour
    np.testing.assert_allclose(cl.node_spot_price[2:], [v100 * (1 - DEFAULT_DISCOUNT)] * 3 + [1.25])
    assert np.isnan(cl.node_spot_price[:2]).all()
    np.testing.assert_allclose(cl.node_spot_reclaim_h[2:], [DEFAULT_RECLAIM_HOURS] * 3 + [5])
    np.testing.assert_allclose(cl.node_spot_notice_s[2:], [DEFAULT_NOTICE_S] * 3 + [30])
    back = cluster_from_spec(cluster_to_spec(cl))
    for name in (
        "node_spot_price",
        "node_spot_reclaim_h",
        "node_spot_return_h",
        "node_spot_notice_s",
    ):
        np.testing.assert_array_equal(getattr(back, name), getattr(cl, name))
    # a discount is off the pool's on-demand price
    half = cluster_from_spec(
        {"pools": [{"accelerator": "V100", "nodes": 1, "spot": True, "spot_discount": 0.5}]}
    )
    assert half.node_spot_price[0] == pytest.approx(v100 / 2)
    # a cluster without spot pools has no spot arrays (nothing changes for it)
    assert (
        len(cluster_from_spec({"pools": [{"accelerator": "V100", "nodes": 1}]}).node_spot_price)
        == 0
    )


@pytest.mark.parametrize(
    ("pool", "field", "message"),
    [
        ({"spot": "yes"}, "pools[0].spot", "must be true or false"),
        ({"spot_reclaim_hours": 3}, "pools[0].spot_reclaim_hours", "only for a spot pool"),
        ({"spot": False, "spot_notice_s": 30}, "pools[0].spot_notice_s", "only for a spot pool"),
        ({"spot": True, "spot_reclaim_hours": 0}, "pools[0].spot_reclaim_hours", "must be > 0"),
        ({"spot": True, "spot_return_hours": -1}, "pools[0].spot_return_hours", "must be > 0"),
        ({"spot": True, "spot_notice_s": -5}, "pools[0].spot_notice_s", "must be >= 0"),
        ({"spot": True, "spot_notice_s": 7200}, "pools[0].spot_notice_s", "must be <= 3600"),
        ({"spot": True, "spot_price_per_hour": -1}, "pools[0].spot_price_per_hour", ">= 0"),
        ({"spot": True, "spot_discount": 1.5}, "pools[0].spot_discount", "must be <= 1"),
        (
            {"spot": True, "spot_discount": 0.5, "spot_price_per_hour": 1},
            "pools[0].spot_discount",
            "not both",
        ),
        ({"spot": True, "spot_reclaim_hours": "often"}, "pools[0].spot_reclaim_hours", "number"),
    ],
)
def test_bad_spot_keys_are_refused_naming_the_field(pool: dict, field: str, message: str) -> None:
    with pytest.raises(SpecError) as err:
        cluster_from_spec({"pools": [{"accelerator": "V100", "nodes": 1, **pool}]})
    assert err.value.field == field and message in str(err.value)


# ---------------------------------------------------------------------- traces and settings


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ([{"node": 0, "reclaimed_at_s": 5}], "spot.trace[0].returned_at_s: is required"),
        (
            [{"node": -1, "reclaimed_at_s": 5, "returned_at_s": 6}],
            "spot.trace[0].node: must be >= 0",
        ),
        ([{"node": 1.5, "reclaimed_at_s": 5, "returned_at_s": 6}], "spot.trace[0].node: must be a"),
        (
            [{"node": 0, "reclaimed_at_s": 5, "returned_at_s": 6, "why": "x"}],
            "spot.trace[0].why: unknown field",
        ),
        (
            [
                {"node": 0, "reclaimed_at_s": 0, "returned_at_s": 9},
                {"node": 0, "reclaimed_at_s": 10, "returned_at_s": 10},
            ],
            "spot.trace[1].returned_at_s: must be after reclaimed_at_s",
        ),
        (
            [
                {"node": 0, "reclaimed_at_s": 0, "returned_at_s": 100},
                {"node": 0, "reclaimed_at_s": 50, "returned_at_s": 150},
            ],
            "spot.trace[1].reclaimed_at_s: node 0 is still reclaimed then",
        ),
        (
            [{"node": 0, "reclaimed_at_s": "soon", "returned_at_s": 6}],
            "spot.trace[0].reclaimed_at_s",
        ),
        ("0,1,2", "spot.trace: want a list"),
    ],
)
def test_a_bad_reclaim_trace_is_refused_naming_row_and_field(rows: object, message: str) -> None:
    with pytest.raises(ClustersimError) as err:
        check_settings({"trace": rows})
    assert message in str(err.value)


def test_a_trace_naming_an_on_demand_node_is_refused() -> None:
    cl = spot(cluster([("A", 1), ("A", 1)]), [1])
    with pytest.raises(ClustersimError, match="node 0 is not in a spot pool"):
        simulate(
            jobs([(0, 1, 10)]),
            cl,
            make_policy("fifo"),
            rates=fixed_rates(jobs([(0, 1, 10)]), cl),
            options=EngineOptions(spot=SpotOptions(trace=[(0, 1.0, 2.0)])),
        )


def test_a_reclaim_trace_csv_is_read_and_its_errors_name_line_and_column(tmp_path: Path) -> None:
    good = tmp_path / "good.csv"
    good.write_text("returned_at_s,node,reclaimed_at_s\n400,1,350\n\n90,0,10\n")
    assert read_trace_csv(good) == [(0, 10.0, 90.0), (1, 350.0, 400.0)]
    for text, message in (
        ("node,reclaimed_at_s\n1,2\n", "line 1: want the header"),
        ("node,reclaimed_at_s,returned_at_s\n1,2,x\n", "line 2: returned_at_s: not a number"),
        (
            "node,reclaimed_at_s,returned_at_s\n1,2,3\n1,5,4\n",
            "line 3: returned_at_s: must be after",
        ),
        ("node,reclaimed_at_s,returned_at_s\n1,2\n", "line 2: want 3 fields"),
        ("", "empty reclaim trace"),
    ):
        bad = tmp_path / "bad.csv"
        bad.write_text(text)
        with pytest.raises(ClustersimError, match=message):
            read_trace_csv(bad)


def test_spot_settings_fill_in_the_defaults() -> None:
    s = check_settings({"trace": [{"node": 2, "reclaimed_at_s": 10, "returned_at_s": 20}]})
    assert s == {
        "trace": [{"node": 2, "reclaimed_at_s": 10.0, "returned_at_s": 20.0}],
        "checkpoint_interval_s": 3600.0,
        "checkpoint_overhead_s": 60.0,
    }
    assert from_settings(s).trace == [(2, 10.0, 20.0)]
    assert check_settings({})["trace"] is None and from_settings({}).draws
    with pytest.raises(ClustersimError, match=r"spot\.notice: unknown setting"):
        check_settings({"notice": 3})
    with pytest.raises(ClustersimError, match=r"spot\.checkpoint_overhead_s: must be a finite"):
        check_settings({"checkpoint_overhead_s": -1})
    assert check_trace([(1, 0, 5)]) == [(1, 0.0, 5.0)]


# ---------------------------------------------------------------------- command line


def _spot_spec(tmp_path: Path, **pool: object) -> Path:
    spec = tmp_path / "c.json"
    spec.write_text(
        json.dumps(
            {
                "pools": [
                    {"accelerator": "V100", "nodes": 2, "devices_per_node": 4},
                    {
                        "accelerator": "V100",
                        "nodes": 2,
                        "devices_per_node": 4,
                        "spot": True,
                        "spot_discount": 0.7,
                        **pool,
                    },
                ]
            }
        )
    )
    return spec


def test_the_command_line_replays_a_reclaim_trace(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from clustersim.cli import main

    spec = _spot_spec(tmp_path, spot_notice_s=0)
    trace = tmp_path / "reclaims.csv"
    trace.write_text("node,reclaimed_at_s,returned_at_s\n2,40000,43600\n3,40000,90000\n")
    base = ["run", "--cluster", str(spec), "--trace", str(GAVEL_DEMO), "--json"]
    assert main(base) == 0
    off = json.loads(capsys.readouterr().out)
    assert main([*base, "--spot-trace", str(trace)]) == 0
    on = json.loads(capsys.readouterr().out)
    assert off.keys() >= SPOT_COST_KEYS and not SPOT_KEYS & off.keys()
    assert on["spot_reclaims"] == 2 and on["spot_restarts"] > 0
    assert on["spot_restarts_saved_by_notice"] == 0 and on["spot_lost_work_device_hours"] > 0
    assert "node_failures" not in on
    assert on["jobs_completed"] == off["jobs_completed"]
    assert main([*base[:-1], "--spot-trace", str(trace)]) == 0
    assert "spot reclaims" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("extra", "content", "message"),
    [
        (
            ["--spot-trace", "{trace}"],
            "node,reclaimed_at_s,returned_at_s\n0,10,20\n",
            "node 0 is not in a spot pool",
        ),
        (
            ["--spot-trace", "{trace}"],
            "node,reclaimed_at_s,returned_at_s\n2,30,20\n",
            "line 2: returned_at_s",
        ),
        (
            ["--checkpoint-interval-s", "100"],
            "",
            "--checkpoint-interval-s needs --failures or --spot",
        ),
        (["--spot", "--mtbf-hours", "3"], "", "--mtbf-hours needs --failures"),
    ],
)
def test_the_command_line_refuses_bad_spot_input_naming_it(
    extra: list[str], content: str, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from clustersim.cli import main

    trace = tmp_path / "t.csv"
    trace.write_text(content)
    args = ["run", "--cluster", str(_spot_spec(tmp_path)), "--trace", str(GAVEL_DEMO)]
    assert main([*args, *(a.format(trace=trace) for a in extra)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error:") and message in err


def test_the_command_line_refuses_spot_on_a_cluster_without_spot_pools(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from clustersim.cli import main

    assert main(["run", "--cluster", "v100:8", "--trace", str(GAVEL_DEMO), "--spot"]) == 2
    assert "--spot: cluster" in capsys.readouterr().err
