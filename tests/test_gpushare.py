"""GPU sharing in the engine (clustersim.gpushare): hand-worked traces and invariants."""

from __future__ import annotations

import numpy as np
import pytest

from clustersim.engine import EngineOptions, simulate
from clustersim.errors import ClustersimError
from clustersim.gpushare import GAVEL_PAIR_BETA, GpuShare, GpuShareOptions, job_milli
from scheduling.registry import make_placement, make_policy
from tests.simple import cluster, fixed_rates, jobs


def _run(t, cl, beta=0.5, placement="consolidate", policy="fifo", seed=0):  # type: ignore[no-untyped-def]
    return simulate(
        t,
        cl,
        make_policy(policy),
        make_placement(placement),
        rates=fixed_rates(t, cl),
        options=EngineOptions(seed=seed, gpushare=GpuShareOptions(interference=beta)),
    )


def test_two_half_gpu_jobs_share_one_gpu_and_slow_each_other() -> None:
    # one node, one GPU; two jobs of 500 milli, 100 work units each, rate 1 alone.
    # Both arrive at 0 and share the GPU: k = 2, beta = 0.5, each runs at
    # 1 / (1 + 0.5 * (2 - 1)) = 2/3, so each finishes at 100 / (2/3) = 150 s.
    cl = cluster([("V100", 1)])
    t = jobs([(0, 1, 100.0), (0, 1, 100.0)], gpu_fraction=[0.5, 0.5])
    r = _run(t, cl)
    np.testing.assert_allclose(r.finish, [150.0, 150.0])
    np.testing.assert_allclose(r.first_start, [0.0, 0.0])
    assert r.gpushare is not None and r.gpushare.node_peak_milli.max() == 1000


def test_a_late_sharer_slows_the_first_only_while_both_run() -> None:
    # A (500 milli, work 100) at 0; B (500 milli, work 100) at 50. A alone 0-50: 50 done.
    # Both at 2/3 from 50: A's 50 left take 75 s -> A ends at 125. B by then did 75 * 2/3 = 50,
    # then alone at rate 1: 50 more -> ends at 175.
    cl = cluster([("V100", 1)])
    t = jobs([(0, 1, 100.0), (50, 1, 100.0)], gpu_fraction=[0.5, 0.5])
    r = _run(t, cl)
    np.testing.assert_allclose(r.finish, [125.0, 175.0])


def test_without_interference_shares_run_at_full_rate() -> None:
    cl = cluster([("V100", 1)])
    t = jobs([(0, 1, 100.0), (0, 1, 60.0)], gpu_fraction=[0.4, 0.6])
    r = _run(t, cl, beta=0.0)
    np.testing.assert_allclose(r.finish, [100.0, 60.0])


def test_a_share_that_does_not_fit_waits_for_room() -> None:
    # A (600 milli, work 100) at 0 runs alone. B (600) at 5 does not fit next to A
    # (1200 > 1000) and FIFO keeps C (300, work 50, at 10) behind it, so A ends at 100.
    # At 100 B and C start together (900 milli): each at 2/3. C: 50 / (2/3) = 75 s -> 175.
    # B did 75 * 2/3 = 50 by 175, then alone at rate 1 for its last 50 -> 225.
    cl = cluster([("V100", 1)])
    t = jobs([(0, 1, 100.0), (5, 1, 100.0), (10, 1, 50.0)], gpu_fraction=[0.6, 0.6, 0.3])
    r = _run(t, cl, policy="fifo")
    np.testing.assert_allclose(r.finish, [100.0, 225.0, 175.0])
    np.testing.assert_allclose(r.first_start, [0.0, 100.0, 100.0])
    assert r.gpushare is not None and r.gpushare.node_peak_milli.max() == 900


def test_whole_gpu_jobs_never_land_on_a_shared_gpu() -> None:
    # two GPUs: a 500-milli share takes GPU 0; the 2-GPU job needs both fully free and waits
    # for the share (ends 100); it then runs 100-150 (work 50, rate 1).
    cl = cluster([("V100", 2)])
    t = jobs([(0, 1, 100.0), (1, 2, 50.0)], gpu_fraction=[0.5, 1.0])
    r = _run(t, cl)
    np.testing.assert_allclose(r.finish, [100.0, 150.0])


def test_host_memory_is_never_overcommitted() -> None:
    # shares fit the GPU (2 x 300 milli) but not the node's memory (64 GB; 40 GB each)
    import dataclasses

    cl = dataclasses.replace(
        cluster([("V100", 1)]), node_cpu_cores=np.array([8.0]), node_host_mem_gb=np.array([64.0])
    )
    t = jobs([(0, 1, 100.0), (0, 1, 100.0)], gpu_fraction=[0.3, 0.3], mem_gb=[40.0, 40.0])
    r = _run(t, cl)
    np.testing.assert_allclose(r.finish, [100.0, 200.0])


def test_job_milli_rounds_fractions_and_keeps_whole_gangs() -> None:
    t = jobs([(0, 1, 1.0), (0, 2, 1.0), (0, 1, 1.0)], gpu_fraction=[0.46, 1.0, 1.0])
    assert job_milli(t).tolist() == [460, 1000, 1000]


def test_bad_interference_is_refused() -> None:
    with pytest.raises(ClustersimError, match="interference"):
        GpuShareOptions(interference=-1.0)
    assert 0.4 < GAVEL_PAIR_BETA < 0.5


def test_the_default_beta_is_the_median_gavel_pair() -> None:
    # 1 / (1 + beta) is the median rate a job keeps in Gavel's measured V100 pairs of
    # one-GPU jobs (recomputed from the shipped throughput file)
    import ast
    import json
    from pathlib import Path

    import clustersim

    path = Path(clustersim.__file__).parent / "data" / "gavel_throughputs.json"
    v100 = json.loads(path.read_text())["v100"]
    keep = []
    for a, row in v100.items():
        if ast.literal_eval(a)[1] != 1:
            continue
        for b, val in row.items():
            if b == "null" or b not in v100 or not isinstance(val, list):
                continue
            if row["null"] and v100[b]["null"] and val[0] > 0:
                keep.append(val[0] / row["null"])
    assert pytest.approx(float(np.median(keep)), abs=0.01) == 1.0 / (1.0 + GAVEL_PAIR_BETA)


@pytest.mark.parametrize(
    "name",
    [
        "fgd",
        "best-fit",
        "dot-product",
        "gpu-packing",
        "gpu-clustering",
        "random-fit",
        "consolidate",
    ],
)
def test_placements_never_put_more_than_1000_milli_on_a_gpu(name: str) -> None:
    cl = cluster([("V100", 2), ("V100", 4), ("V100", 8)])
    rng = np.random.default_rng(3)
    n = 300
    frac = np.where(rng.random(n) < 0.6, rng.integers(1, 10, n) / 10, 1.0)
    gang = np.where(frac < 1, 1, rng.choice([1, 2, 4], n))
    t = jobs(
        [
            (float(s), int(g), float(w))
            for s, g, w in zip(
                np.sort(rng.uniform(0, 500, n)), gang, rng.uniform(10, 200, n), strict=True
            )
        ],
        gpu_fraction=frac.tolist(),
    )
    r = _run(t, cl, placement=name, seed=1)
    rec = r.gpushare
    assert rec is not None
    assert rec.node_peak_milli.max() <= 1000
    assert (rec.allocated <= 14 * 1000).all() and (rec.idle >= 0).all()
    assert r.completed.all()
    again = _run(t, cl, placement=name, seed=1)
    np.testing.assert_array_equal(r.finish, again.finish)
    assert isinstance(GpuShare, type)


def test_fragmentation_over_time_on_two_nodes_worked_by_hand() -> None:
    # Two nodes of one GPU. A (600 milli, work 100) at 0, B (400 milli, work 50) at 1, no
    # CPU, no interference. Typical jobs: 600 milli (p 1/2), 400 milli (p 1/2).
    # t=0, FGD places A: both empty nodes score alike -> node 0; its GPU has 400 left, which
    #   a 600 job cannot use: F0 = 1/2 * 400 = 200; node 1 all free: F1 = 0.
    #   Cluster: frag 200 of idle 400 + 1000 = 1400.
    # t=1, B on node 0 empties F0 (200 -> 0: score int(100 sigmoid(0.2)) = 54) while node 1
    #   would keep 600 left, usable by both (0 -> 0: score 50): node 0. frag 0 of idle 1000.
    # t=51 B ends (50 work at rate 1): back to 200 of 1400. t=100 A ends: 0 of 2000.
    cl = cluster([("V100", 1), ("V100", 1)])
    t = jobs([(0, 1, 100.0), (1, 1, 50.0)], gpu_fraction=[0.6, 0.4])
    r = _run(t, cl, beta=0.0, placement="fgd")
    rec = r.gpushare
    assert rec is not None
    np.testing.assert_allclose(rec.t, [0, 1, 51, 100])
    np.testing.assert_allclose(rec.frag, [200, 0, 200, 0])
    np.testing.assert_allclose(rec.idle, [1400, 1000, 1400, 2000])
    np.testing.assert_allclose(rec.frag_rate(), [200 / 1400, 0, 200 / 1400, 0])
    assert r.stints.node.tolist() == [0, 0]
    # the share map: node 0's GPU held 600 milli for 0-100 and 400 more for 1-51, over
    # the 100 s from the first record: (600 * 100 + 400 * 50) / 100 = 800
    np.testing.assert_allclose(rec.node_mean_milli[:, 0], [800.0, 0.0])


def test_the_dashboard_series_bins_the_fragmentation_by_time() -> None:
    # the two-node case above: changes at 0, 1, 51, 100 (the end). Bins are the segments:
    # [0, 1) frag 200 of idle 1400 -> 1/7, allocated 600 of 2000 -> 0.3;
    # [1, 51) 0 of 1000 -> 0, allocated 0.5; [51, 100) 200 of 1400 -> 1/7, allocated 0.3.
    # Node 0's one GPU averaged 800 milli -> share 0.8; node 1 none.
    from clustersim.metrics import gpushare_series

    cl = cluster([("V100", 1), ("V100", 1)])
    t = jobs([(0, 1, 100.0), (1, 1, 50.0)], gpu_fraction=[0.6, 0.4])
    s = gpushare_series(_run(t, cl, beta=0.0, placement="fgd"))
    assert s["t_s"] == [0.0, 1.0, 51.0] and s["dt_s"] == [1.0, 50.0, 49.0]
    np.testing.assert_allclose(s["frag_rate"], [1 / 7, 0.0, 1 / 7], atol=1e-6)
    np.testing.assert_allclose(s["allocated_share"], [0.3, 0.5, 0.3])
    np.testing.assert_allclose(s["node_share"], [0.8, 0.0])
    assert s["peak_milli"] == 1000 and s["shared_jobs"] == 2


def test_the_summary_gives_the_time_averaged_fragmentation_and_allocation() -> None:
    # the two-node case: fragmented milli-s 200*1 + 0*50 + 200*49 = 10,000 over idle
    # milli-s 1400*1 + 1000*50 + 1400*49 = 120,000 -> 1/12; allocated milli-s
    # 600*1 + 1000*50 + 600*49 = 80,000 over 2000 * 100 -> 0.4
    from clustersim.metrics import summary

    cl = cluster([("V100", 1), ("V100", 1)])
    t = jobs([(0, 1, 100.0), (1, 1, 50.0)], gpu_fraction=[0.6, 0.4])
    out = summary(_run(t, cl, beta=0.0, placement="fgd"))
    assert out["gpu_frag_rate_mean"] == pytest.approx(1 / 12)
    assert out["gpu_allocated_share_mean"] == pytest.approx(0.4)
    assert out["gpu_shared_jobs"] == 2 and out["gpu_share_peak_milli"] == 1000
    assert out["gpu_share_rerates"] == 0  # beta 0: sharing never changes a rate


@pytest.mark.parametrize(
    "name", ["fgd", "best-fit", "dot-product", "gpu-packing", "gpu-clustering"]
)
def test_the_engine_places_as_the_placement_study_when_no_job_leaves(name: str) -> None:
    # jobs that never finish within the run, arriving one by one: the engine's FIFO run
    # must put each on the node the FGD study (clustersim.sharing.place) chooses
    import dataclasses

    from clustersim import sharing

    rng = np.random.default_rng(11)
    gpus = [2, 4, 8, 8]
    cores = [32, 64, 96, 96]
    cl = dataclasses.replace(
        cluster([("V100", g) for g in gpus]), node_cpu_cores=np.array(cores, dtype=float)
    )
    n = 20
    share = rng.random(n) < 0.6
    milli = np.where(share, rng.integers(2, 19, n) * 50, 1000)
    count = np.where(share, 1, rng.choice([1, 1, 2, 4], n))
    cpu = count * rng.integers(1, 4, n)  # whole cores, a multiple of the gang
    t = jobs(
        [(float(i), int(c), 1e9) for i, c in enumerate(count)],
        gpu_fraction=milli / 1000,
        cpu=cpu.astype(float),
    )
    r = simulate(
        t,
        cl,
        make_policy("fifo"),
        make_placement(name),
        rates=fixed_rates(t, cl),
        options=EngineOptions(until=1e6),
    )
    nodes = sharing.make_nodes(
        [(f"n{i}", cores[i] * 1000, 1 << 40, g, "V100") for i, g in enumerate(gpus)]
    )
    pods = sharing.make_pods(
        [
            (f"p{i:03d}", int(cpu[i]) * 1000, 0, int(count[i]), int(milli[i]), "", float(i))
            for i in range(n)
        ]
    )
    study = sharing.place(nodes, pods, name)
    # FIFO blocks at the first job that fits nowhere; the study skips it and goes on
    k = study.first_failure if study.first_failure is not None else n
    assert k >= 15
    engine_node = np.full(n, -1)
    engine_node[r.stints.job] = r.stints.node  # open stints: one node per job here
    assert engine_node[:k].tolist() == study.node[:k].tolist()
    assert (engine_node[k:] == -1).all()


def test_a_job_no_node_can_hold_is_dropped_not_left_blocking_the_queue() -> None:
    # 100 GB of memory on nodes of 64 GB: never fits; FIFO would wait for it for ever.
    # The next job (20 GB) then runs at once: 0-10.
    import dataclasses

    from clustersim.result import DROP_AUX

    cl = dataclasses.replace(
        cluster([("V100", 1), ("V100", 1)]), node_host_mem_gb=np.array([64.0, 64.0])
    )
    t = jobs([(0, 1, 10.0), (0, 1, 10.0)], gpu_fraction=[0.5, 0.5], mem_gb=[100.0, 20.0])
    r = _run(t, cl)
    assert r.drop_reason.tolist() == [DROP_AUX, ""]
    np.testing.assert_allclose(r.finish[1], 10.0)
