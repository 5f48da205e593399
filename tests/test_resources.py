"""Host CPU and memory (clustersim.resources): capacity, demand rules, the engine's check."""

from __future__ import annotations

import dataclasses
import hashlib

import numpy as np
import pytest

from clustersim.engine import simulate
from clustersim.errors import ClustersimError
from clustersim.resources import (
    AuxModel,
    apply_demand,
    parse_rule,
    per_device_demand,
    proportional_share,
)
from clustersim.result import DROP_AUX
from clustersim.spec import cluster_from_spec, cluster_to_spec
from scheduling.registry import make_placement, make_policy
from tests.simple import cluster, fixed_rates, jobs


def limited(nodes, cpu, mem=None, racks=None):  # type: ignore[no-untyped-def]
    """``tests.simple.cluster`` with per-node cores and memory (``None``: unlimited)."""
    cl = cluster(nodes, racks)
    n = cl.n_nodes
    mem_a = np.full(n, np.inf) if mem is None else np.asarray(mem, dtype=np.float64)
    return dataclasses.replace(
        cl,
        node_cpu_cores=np.asarray(cpu, dtype=np.float64),
        node_host_mem_gb=mem_a,
    )


def run(t, cl, policy="fifo", placement="consolidate", **params):  # type: ignore[no-untyped-def]
    return simulate(
        t, cl, make_policy(policy, **params), make_placement(placement), rates=fixed_rates(t, cl)
    )


# -- capacity in the spec ---------------------------------------------------------------------


def test_a_spec_keeps_cores_and_memory_per_node_and_round_trips_them() -> None:
    spec = {
        "pools": [
            {
                "accelerator": "V100",
                "nodes": 2,
                "devices_per_node": 4,
                "cpu_cores": 32,
                "host_mem_gb": 256,
            },
            {"accelerator": "V100", "nodes": 1, "devices_per_node": 4, "cpu_cores": 16},
            {"accelerator": "K80", "nodes": 1, "devices_per_node": 4},
        ]
    }
    cl = cluster_from_spec(spec)
    assert cl.node_cpu.tolist() == [32, 32, 16, np.inf]
    assert cl.node_mem.tolist() == [256, 256, np.inf, np.inf]
    back = cluster_from_spec(cluster_to_spec(cl))
    assert back.node_cpu.tolist() == cl.node_cpu.tolist()
    assert back.node_mem.tolist() == cl.node_mem.tolist()
    pools = cluster_to_spec(cl)["pools"]
    assert [p.get("cpu_cores") for p in pools] == [32, 16, None]
    assert [p.get("host_mem_gb") for p in pools] == [256.0, None, None]


def test_a_spec_without_cores_or_memory_is_unlimited_and_keeps_no_arrays() -> None:
    cl = cluster_from_spec({"pools": [{"accelerator": "V100", "nodes": 2}]})
    assert len(cl.node_cpu_cores) == 0 and len(cl.node_host_mem_gb) == 0
    assert np.isinf(cl.node_cpu).all() and np.isinf(cl.node_mem).all()
    assert "cpu_cores" not in cluster_to_spec(cl)["pools"][0]


# -- demand rules -----------------------------------------------------------------------------


def test_rules_fill_unknown_demands_per_device_and_keep_the_traces() -> None:
    t = jobs([(0, 1, 10), (0, 4, 10), (0, 2, 10)], cpu=[np.nan, np.nan, 5.0])
    got = apply_demand(t, "per-gpu:4,32")
    assert got.cpu.tolist() == [4.0, 16.0, 5.0]  # the trace's 5 cores stay
    assert got.mem_gb.tolist() == [32.0, 128.0, 64.0]  # memory unknown everywhere: the rule
    syn = apply_demand(t, "synergy")
    assert syn.cpu.tolist() == [3.0, 12.0, 5.0]  # 24 cores / 8 GPUs
    assert syn.mem_gb.tolist() == [62.5, 250.0, 125.0]  # 500 GB / 8 GPUs
    assert apply_demand(t, "none") is t
    gone = apply_demand(t, "ignore")
    assert np.isnan(gone.cpu).all() and np.isnan(gone.mem_gb).all()


def test_the_proportional_rule_takes_the_smallest_share_of_any_limited_node() -> None:
    cl = limited([("A", 4), ("A", 8), ("A", 2)], cpu=[32, 48, np.inf], mem=[128, 512, 64])
    assert proportional_share(cl) == (6.0, 32.0)  # 48/8 cores, 128/4 GB
    t = apply_demand(jobs([(0, 2, 10)]), "proportional", cl)
    assert (t.cpu[0], t.mem_gb[0]) == (12.0, 64.0)


@pytest.mark.parametrize("bad", ["per-gpu:4", "per-gpu:a,b", "lots", "per-gpu:-1,2"])
def test_a_bad_rule_is_an_error_naming_it(bad: str) -> None:
    with pytest.raises(ClustersimError, match="per-gpu:C,M"):
        parse_rule(bad)


# -- the engine never over-commits ------------------------------------------------------------


def test_a_job_waits_for_cores_although_devices_are_free() -> None:
    # one node, 4 GPUs, 8 cores. j0 (1 GPU, 6 cores, 100 s) starts at 0; j1 (1 GPU, 4 cores,
    # 50 s) finds 3 devices free but only 2 cores: it waits for j0 and ends at 100 + 50.
    t = jobs([(0, 1, 100.0), (0, 1, 50.0)], cpu=[6.0, 4.0])
    r = run(t, limited([("A", 4)], cpu=[8]))
    assert r.first_start.tolist() == [0.0, 100.0]
    assert r.finish.tolist() == [100.0, 150.0]
    # without the limit both run at once
    free = run(t, cluster([("A", 4)]))
    assert free.finish.tolist() == [100.0, 50.0]
    assert free.aux is None and r.aux is not None


def test_a_job_waits_for_memory_and_backfilling_lets_a_small_one_past() -> None:
    # 2 GPUs, 100 GB. j0 (1 GPU, 70 GB, 40 s); j1 (1 GPU, 40 GB, 10 s) does not fit beside
    # j0; j2 (1 GPU, 20 GB, 30 s) does. Strict FIFO: j1 at 40, then j2 beside it at 40.
    t = jobs([(0, 1, 40.0), (1, 1, 10.0), (2, 1, 30.0)], mem_gb=[70.0, 40.0, 20.0])
    cl = limited([("A", 2)], cpu=[np.inf], mem=[100])
    strict = run(t, cl)
    assert strict.first_start.tolist() == [0.0, 40.0, 40.0]
    assert strict.finish.tolist() == [40.0, 50.0, 70.0]
    back = run(t, cl, backfill=True)
    assert back.first_start.tolist() == [0.0, 40.0, 2.0]
    assert back.finish.tolist() == [40.0, 50.0, 32.0]


def test_a_gang_takes_on_each_node_only_the_devices_whose_share_fits() -> None:
    # two nodes of 2 GPUs and 4 cores. j0 (1 GPU, 3 cores, 100 s) sits on node 0, leaving it
    # 1 core. j1 (2 GPUs, 4 cores: 2 per device) cannot use node 0's free device (1 core < 2)
    # and gets node 1 whole; j2 (1 GPU, 1 core) then takes node 0's last device.
    t = jobs([(0, 1, 100.0), (1, 2, 10.0), (2, 1, 5.0)], cpu=[3.0, 4.0, 1.0])
    r = run(t, limited([("A", 2), ("A", 2)], cpu=[4, 4]))
    assert r.first_start.tolist() == [0.0, 1.0, 2.0]
    st = r.stints
    nodes = {int(j): sorted(st.node[st.job == j].tolist()) for j in range(3)}
    assert nodes == {0: [0], 1: [1], 2: [0]}


def test_a_spread_gang_pays_its_share_on_each_node() -> None:
    # two nodes of 4 GPUs and 6 cores; j0 (1 GPU, 3 cores) holds node 0. j1 (4 GPUs,
    # 8 cores: 2 per device) fits on node 1 only with 3 devices (6 cores); node 0 gives 1
    # more (3 cores left, 1 device); 3 + 1 = 4: it starts spread, 2 + 6 cores used.
    t = jobs([(0, 1, 100.0), (1, 4, 10.0)], cpu=[3.0, 8.0])
    r = run(t, limited([("A", 4), ("A", 4)], cpu=[6, 6]))
    assert r.first_start.tolist() == [0.0, 1.0]
    st = r.stints
    got = {
        int(n): int(d) for n, d in zip(st.node[st.job == 1], st.devices[st.job == 1], strict=True)
    }
    assert got == {0: 1, 1: 3}


def test_a_job_whose_demand_no_placement_meets_is_dropped() -> None:
    # 64 cores on a node of 8 devices; two such nodes give 16 devices × ... : a 4-GPU job
    # asking 300 cores needs 75 per device > 64: it never fits; the 1-GPU job of 64 fits.
    t = jobs([(0, 4, 10.0), (0, 1, 10.0)], cpu=[300.0, 64.0])
    r = run(t, limited([("A", 8), ("A", 8)], cpu=[64, 64]))
    assert r.drop_reason.tolist() == [DROP_AUX, ""]
    assert r.aux is not None and r.aux.never_fit == 1
    from clustersim.metrics import summary

    s = summary(r)  # counted apart from the gangs too large for the devices
    assert s["jobs_aux_too_large"] == 1 and s["jobs_dropped"] == 1
    assert r.finish[1] == 10.0


def test_per_device_demand_splits_a_gangs_demand_evenly() -> None:
    t = jobs([(0, 4, 1.0), (0, 1, 1.0)], cpu=[8.0, np.nan], mem_gb=[np.nan, 3.0])
    cpu, mem = per_device_demand(t)
    assert cpu.tolist() == [2.0, 0.0] and mem.tolist() == [0.0, 3.0]
    assert AuxModel.build(t, cluster([("A", 4)])) is None  # no limit: no model
    assert AuxModel.build(t, limited([("A", 4)], cpu=[4])) is not None


def test_cpu_utilisation_is_allocated_core_seconds_over_cores_and_window() -> None:
    # the first case above: j0 holds 6 of 8 cores for 100 s, j1 4 cores for 50 s; window
    # [0, 150]: (600 + 200) / (8 × 150) = 2/3. Memory has no limit: undefined.
    from clustersim.metrics import summary

    t = jobs([(0, 1, 100.0), (0, 1, 50.0)], cpu=[6.0, 4.0])
    s = summary(run(t, limited([("A", 4)], cpu=[8])))
    assert s["cpu_utilisation"] == pytest.approx(800.0 / 1200.0)
    assert s["cpu_utilisation_a"] == pytest.approx(800.0 / 1200.0)
    assert s["mem_utilisation"] is None
    assert "cpu_utilisation" not in summary(run(t, cluster([("A", 4)])))


def test_cpu_utilisation_over_time_follows_the_stints_by_hand() -> None:
    # the same run: 6 of 8 cores over [0, 100], 4 of 8 over [100, 150]; one bin per segment
    # gives 0.75 and 0.5; one bin over [0, 150] gives (600 + 200) / (8 × 150) = 2/3, the
    # summary's value. No memory limit: no memory series. GPUs: 1 of 4 busy throughout.
    from clustersim.metrics import summary, timeseries

    t = jobs([(0, 1, 100.0), (0, 1, 50.0)], cpu=[6.0, 4.0])
    r = run(t, limited([("A", 4)], cpu=[8]))
    ts = timeseries(r)
    assert ts["t_s"] == [0.0, 100.0] and ts["dt_s"] == [100.0, 50.0]
    assert ts["cpu_utilisation"] == [0.75, 0.5]
    assert ts["utilisation"] == [0.25, 0.25]
    assert "mem_utilisation" not in ts
    one = timeseries(r, max_points=1)
    assert one["cpu_utilisation"] == [pytest.approx(summary(r)["cpu_utilisation"])]
    assert one["cpu_utilisation"] == [pytest.approx(2.0 / 3.0)]
    # without the model the series has no CPU or memory key at all
    assert "cpu_utilisation" not in timeseries(run(t, cluster([("A", 4)])))


def test_cpu_and_memory_over_time_count_a_spread_gang_on_each_node() -> None:
    # two nodes of 4 GPUs, 6 cores, 60 GB. j0 (1 GPU, 3 cores, 30 GB, 100 s) on node 0 from
    # 0; j1 (4 GPUs, 8 cores, 40 GB, 10 s) at 1: 3 devices on node 1 (6 cores, 30 GB) and 1
    # on node 0 (2 cores, 10 GB), until 11. Cores used: 3 on [0, 1), 3 + 8 = 11 on [1, 11),
    # 3 on [11, 100]: of 12, 0.25, 11/12, 0.25. Memory: 30, 70, 30 of 120 GB.
    from clustersim.metrics import timeseries

    t = jobs([(0, 1, 100.0), (1, 4, 10.0)], cpu=[3.0, 8.0], mem_gb=[30.0, 40.0])
    r = run(t, limited([("A", 4), ("A", 4)], cpu=[6, 6], mem=[60, 60]))
    assert r.finish.tolist() == [100.0, 11.0]
    ts = timeseries(r)
    assert ts["t_s"] == [0.0, 1.0, 11.0]
    assert ts["cpu_utilisation"] == pytest.approx([0.25, 11.0 / 12.0, 0.25])
    assert ts["mem_utilisation"] == pytest.approx([0.25, 70.0 / 120.0, 0.25])


# -- the fast path is unchanged ---------------------------------------------------------------


def _finish_hash(r) -> str:  # type: ignore[no-untyped-def]
    return hashlib.sha1(r.finish.tobytes()).hexdigest()


def _prepared(t, cl, policy, compat=None):  # type: ignore[no-untyped-def]
    from clustersim.compat import prepare
    from clustersim.engine import EngineOptions

    p = prepare(t, cl, policy, {}, None, compat=compat)
    return simulate(
        p.jobs, cl, p.policy, p.placement, rates=p.rates, options=EngineOptions(**p.engine)
    )


def _philly_2000(shared_data):  # type: ignore[no-untyped-def]
    from clustersim.traces import read_trace

    t, _ = read_trace(shared_data / "traces" / "philly" / "philly.csv")
    return t.take(np.arange(2000))


#: sha1 of ``result.finish`` before host CPU and memory existed (main at 6952c9a): runs
#: without demands must not move by a bit
TIRESIAS_PHILLY_2000 = "f5aba2b6880f2f34ccc6c81af0ec44b3b14930ff"
GAVEL_MMF_2000 = "cf613de14d9d1a53e40509e69193c5bc3e95a56e"


def test_runs_without_demands_finish_exactly_as_before(shared_data) -> None:  # type: ignore[no-untyped-def]
    from clustersim.presets import preset
    from clustersim.spec import cluster_from_shorthand
    from clustersim.traces import read_trace

    r = _prepared(_philly_2000(shared_data), preset("philly"), "tiresias")
    assert r.aux is None
    assert _finish_hash(r) == TIRESIAS_PHILLY_2000
    gavel = shared_data / "traces/gavel/generated/gavel_synth_multigpu_lam900_n2000.trace"
    g, _ = read_trace(gavel)
    r = _prepared(g, cluster_from_shorthand("v100:8,p100:8,k80:8"), "gavel-mmf", "gavel")
    assert _finish_hash(r) == GAVEL_MMF_2000


def test_demands_that_never_bind_give_the_fast_paths_finish_times(shared_data) -> None:  # type: ignore[no-untyped-def]
    # Synergy's GPU-proportional share (3 cores, 62.5 GB a device) on nodes of exactly that
    # shape: every placement's share fits, so the checked path (every start through the
    # strategy, on capped free devices) must start every job where the kernels would; and
    # each node's cores are in use exactly when its devices are, so CPU and memory
    # utilisation equal the devices'.
    from clustersim.metrics import summary
    from clustersim.presets import preset

    t = _philly_2000(shared_data)
    cl = preset("philly")
    shaped = dataclasses.replace(
        cl,
        node_cpu_cores=3.0 * cl.node_devices,
        node_host_mem_gb=62.5 * cl.node_devices,
    )
    r = _prepared(apply_demand(t, "synergy"), shaped, "tiresias")
    assert r.aux is not None
    assert _finish_hash(r) == TIRESIAS_PHILLY_2000
    s = summary(r)
    assert s["cpu_utilisation"] == pytest.approx(s["utilisation"], rel=1e-9)
    assert s["mem_utilisation"] == pytest.approx(s["utilisation"], rel=1e-9)
