"""The power model (clustersim.power) and its policies: hand-worked traces, conservation of
energy, the budget, determinism, bad budgets.

Every cluster here is type A (busy 300 W, idle 30 W, kind gpu: wake-up 300 s), no node
overhead, PUE 1, fixed rates (1 work unit/s, no restore), so times and energies are easy to
work out by hand; the arithmetic is in each test.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from clustersim.cli import main
from clustersim.engine import simulate
from clustersim.errors import SimulationError
from clustersim.metrics import summary
from clustersim.power import KIND_PROFILES, OFF, WAKING, PowerConfig, PowerModel, state_power_w
from scheduling.params import cluster_errors, policy_errors
from scheduling.registry import make_placement, make_policy
from tests.simple import cluster, fixed_rates, jobs
from tests.test_policy_conformance import _check_stints, _work_done, random_trace

J_PER_KWH = 3.6e6


def run(name: str, trace, cl, **params):  # type: ignore[no-untyped-def]
    return simulate(trace, cl, make_policy(name, **params), rates=fixed_rates(trace, cl))


def test_the_gpu_curve_interpolates_between_its_points() -> None:
    gpu = KIND_PROFILES["gpu"]
    # Zeus's V100 points (0.682, 0.899) and (0.781, 0.941): 0.899 + 0.018 / 0.099 x 0.042
    assert float(gpu.throughput(0.7)) == pytest.approx(0.899 + 0.018 / 0.099 * 0.042)
    assert float(gpu.throughput(1.0)) == 1.0
    assert float(gpu.throughput(0.1)) == pytest.approx(0.725)  # clipped to the lowest cap
    assert gpu.min_cap == 0.508
    assert float(KIND_PROFILES["tpu"].throughput(0.5)) == 1.0  # a TPU cannot be capped


def test_types_zeus_measured_get_their_own_curve() -> None:
    from clustersim.catalog import load_catalog
    from clustersim.power import ZEUS_CURVES, profile_of

    cat = load_catalog()
    p100, v100, a100 = (
        profile_of(cat.get(k)) for k in ("P100", "V100-SXM2-16GB", "A100-SXM4-40GB")
    )
    assert p100.cap_points == ZEUS_CURVES["P100"][0] and p100.min_cap == 0.815
    # the P100 barely slows under a cap; the V100 (and the A100, which borrows its curve)
    # loses 10 % at 68 % of its draw
    assert float(p100.throughput(0.815)) == 0.944
    assert v100.cap_points == a100.cap_points == ZEUS_CURVES["V100"][0]
    assert float(v100.throughput(0.682)) == 0.899
    # every curve ascends in both coordinates and ends at (1, 1)
    for caps, tput in ZEUS_CURVES.values():
        assert list(caps) == sorted(caps) and list(tput) == sorted(tput)
        assert caps[-1] == tput[-1] == 1.0


def test_a_power_cap_delays_a_start() -> None:
    # two nodes of 2 A; two 2-GPU jobs of 100 s at t=0; budget 0.7 kW.
    # idle floor 4 x 30 = 120 W; j0: 120 + 2 x (300 - 30) = 660 W <= 700: starts at 0.
    # j1 would add 540 W (1200 W); at the lowest cap 0.508 it would add 2 x (152.4 - 30) =
    # 244.8 W (904.8 W): both over 700, so j1 waits for j0: starts at 100, finishes at 200.
    cl = cluster([("A", 2), ("A", 2)])
    t = jobs([(0, 2, 100), (0, 2, 100)])
    r = run("power-cap", t, cl, budget_kw=0.7)
    assert r.first_start.tolist() == [0.0, 100.0]
    assert r.finish.tolist() == [100.0, 200.0]
    free = run("fifo", t, cl)
    assert free.finish.tolist() == [100.0, 100.0]  # without the budget both run at once
    m = summary(r)
    # 0-200 s: two devices busy (600 W) and two idle (60 W): 660 W x 200 s = 132,000 J
    assert m["energy_kwh"] == pytest.approx(132_000 / J_PER_KWH)
    assert m["energy_busy_kwh"] == pytest.approx(120_000 / J_PER_KWH)
    assert m["energy_idle_kwh"] == pytest.approx(12_000 / J_PER_KWH)
    assert m["energy_wake_kwh"] == 0.0
    assert m["peak_power_kw"] == pytest.approx(0.66)
    # 200 reference GPU-seconds of work each (2 GPUs x 100 s): 400 / 3600 GPU-hours
    assert m["energy_per_ref_gpu_hour_kwh"] == pytest.approx(132_000 / J_PER_KWH / (400 / 3600))


def test_delay_mode_never_caps() -> None:
    # the same with budget 1.0 kW: j1 adds 540 W to 660 W = 1200 W > 1000 W; delay waits
    cl = cluster([("A", 2), ("A", 2)])
    t = jobs([(0, 2, 100), (0, 2, 100)])
    r = run("power-cap", t, cl, budget_kw=1.0, mode="delay")
    assert r.finish.tolist() == [100.0, 200.0]
    assert r.power is not None and len(r.power.cap) == 0


def test_a_power_cap_caps_a_start_that_fits_only_capped() -> None:
    # budget 1.0 kW: j0 at full power (660 W); j1 fits at cap c with 660 + 2 (300 c - 30)
    # <= 1000, c = 200 / 300 = 0.666666 (floored to 1e-6). Throughput on the gpu curve
    # between (0.591, 0.853) and (0.682, 0.899): 0.853 + 0.075666 / 0.091 x 0.046 =
    # 0.891248...; j1 finishes at 100 / 0.891248 = 112.2022... s.
    cl = cluster([("A", 2), ("A", 2)])
    t = jobs([(0, 2, 100), (0, 2, 100)])
    r = run("power-cap", t, cl, budget_kw=1.0)
    c = 0.666666
    g = 0.853 + (c - 0.591) / 0.091 * 0.046
    assert r.first_start.tolist() == [0.0, 0.0]
    assert r.finish[0] == 100.0
    assert r.finish[1] == pytest.approx(100 / g, rel=1e-12)
    assert r.power is not None and r.power.cap.tolist() == [c]
    m = summary(r)
    # 0-100 s: 120 + 540 + 2 (300 c - 30) W; 100-114.5 s: j1 alone, 120 + 2 (300 c - 30) W
    both, alone = 660 + 2 * (300 * c - 30), 120 + 2 * (300 * c - 30)
    want = both * 100 + alone * (100 / g - 100)
    assert m["energy_kwh"] == pytest.approx(want / J_PER_KWH, rel=1e-9)
    assert m["peak_power_kw"] == pytest.approx(both / 1000) and both <= 1000


def test_power_down_switches_idle_nodes_off_and_wakes_one_for_a_gang() -> None:
    # two nodes of 2 A, idle_off_s 60. j0 (1 GPU) -> node 0, j1 (2 GPUs) -> node 1 at 0;
    # j2 (1 GPU, t=50) -> node 0's free device, 50-250. Node 1 idle from 100: off at 160;
    # node 0 idle from 250: off at 310. j3 (2 GPUs, t=5000): both off, node 0 woken
    # 5000-5300 (gpu wake-up 300 s), j3 runs 5300-5400; node 0 off again at 5460.
    cl = cluster([("A", 2), ("A", 2)])
    t = jobs([(0, 1, 100), (0, 2, 100), (50, 1, 200), (5000, 2, 100)])
    r = run("power-down", t, cl, idle_off_s=60)
    assert r.first_start.tolist() == [0.0, 0.0, 50.0, 5300.0]
    assert r.finish.tolist() == [100.0, 100.0, 250.0, 5400.0]
    p = r.power
    assert p is not None
    cols = (p.node.tolist(), p.state.tolist(), p.start.tolist(), p.end.tolist())
    got = sorted(zip(*cols, strict=True))
    assert got == [
        (0, OFF, 310.0, 5000.0),
        (0, OFF, 5460.0, 5460.0),
        (0, WAKING, 5000.0, 5300.0),
        (1, OFF, 160.0, 5460.0),
    ]
    m = summary(r)
    # window 0-5400 s. busy: 0-50 3 dev, 50-100 4, 100-250 1, 5300-5400 2, x 300 W:
    # 45,000 + 60,000 + 45,000 + 60,000 = 210,000 J. idle (30 W a device of a node on):
    # 0-50 1 dev, 100-160 3, 160-250 1, 250-310 2: 1,500 + 5,400 + 2,700 + 3,600 = 13,200 J.
    # wake: node 0's idle draw 60 W x 300 s = 18,000 J. Total 241,200 J.
    assert m["energy_busy_kwh"] == pytest.approx(210_000 / J_PER_KWH)
    assert m["energy_idle_kwh"] == pytest.approx(13_200 / J_PER_KWH)
    assert m["energy_wake_kwh"] == pytest.approx(18_000 / J_PER_KWH)
    assert m["energy_kwh"] == pytest.approx(241_200 / J_PER_KWH)
    # node 1 off 160-5460 (5,300 s), node 0 310-5000 (4,690 s): 9,990 s
    assert m["node_off_hours"] == pytest.approx(9_990 / 3600)
    # without the model: every device idle or busy over 0-5100 s, never off
    assert summary(run("fifo", t, cl))["node_off_hours"] == 0.0


def test_energy_aware_picks_the_cap_of_least_energy_within_the_slack() -> None:
    # slack 0.2: a cap c is allowed if throughput(c) >= 1 / 1.2 = 0.8333; between Zeus's
    # V100 points (0.508, 0.725) and (0.591, 0.853) that is c >= 0.508 + 0.1083 / 0.128 x
    # 0.083 = 0.5783, so the steps 0.60, 0.65, ..., 1.0 (0.40-0.55 fall short). Energy per
    # unit of work is proportional to c / throughput(c):
    #   0.60: throughput 0.853 + 0.009 / 0.091 x 0.046 = 0.857549, ratio 0.69967
    #   0.65: 0.853 + 0.059 / 0.091 x 0.046 = 0.882824, ratio 0.73628
    #   0.70: 0.899 + 0.018 / 0.099 x 0.042 = 0.906636, ratio 0.77209 ... 1.0: ratio 1
    # so cap 0.60, run time 100 / 0.857549 = 116.611 s.
    cl = cluster([("A", 1)])
    t = jobs([(0, 1, 100)])
    r = run("energy-aware", t, cl, slack=0.2)
    g = 0.853 + 0.009 / 0.091 * 0.046
    assert r.finish[0] == pytest.approx(100 / g)
    assert r.power is not None and r.power.cap.tolist() == [0.6]
    # energy: 0.60 x 300 W x 116.611 s = 20,990 J, below uncapped 300 W x 100 s = 30,000 J
    m = summary(r)
    assert m["energy_kwh"] == pytest.approx(0.6 * 300 * 100 / g / J_PER_KWH)
    assert m["energy_kwh"] < summary(run("fifo", t, cl))["energy_kwh"]


def test_energy_aware_picks_the_type_of_least_energy_within_the_slack() -> None:
    # A: 1 unit/s at 300 W (300 J a unit); B: 2 units/s at 700 W (350 J a unit). Uncapped
    # (caps=False): with slack 1.0, A's 100 s is within 2 x B's 50 s: A, less energy; with
    # slack 0.5 it is not: B.
    cl = cluster([("A", 1), ("B", 1)])
    cl = _with_busy_w(cl, {"B": 700.0})
    t = jobs([(0, 1, 100)])
    rates = fixed_rates(t, cl, speed=[1.0, 2.0])
    slow = simulate(t, cl, make_policy("energy-aware", slack=1.0, caps=False), rates=rates)
    fast = simulate(t, cl, make_policy("energy-aware", slack=0.5, caps=False), rates=rates)
    assert slow.finish.tolist() == [100.0] and fast.finish.tolist() == [50.0]
    assert run("fifo", t, cl).finish.tolist() == [100.0]  # fixed_rates default: speed 1
    assert simulate(t, cl, make_policy("fifo"), rates=rates).finish.tolist() == [50.0]


def _with_busy_w(cl, busy):  # type: ignore[no-untyped-def]
    import dataclasses

    types = tuple(dataclasses.replace(x, busy_w=busy.get(x.name, x.busy_w)) for x in cl.types)
    return dataclasses.replace(cl, types=types)


@pytest.mark.parametrize("name", ["power-down", "power-cap", "energy-aware"])
def test_energy_by_state_adds_up_to_the_integral_of_power(name: str) -> None:
    # conservation: busy + idle + wake = energy_kwh = the sum over segments of power x dt
    cl = cluster([("A", 2), ("A", 2), ("A", 4), ("A", 4)], racks=[0, 0, 1, 1])
    t = random_trace(3, n=80)
    params = {"power-down": {"idle_off_s": 20.0}, "power-cap": {"budget_kw": 1.5}}.get(name, {})
    r = run(name, t, cl, **params)
    m = summary(r)
    parts = m["energy_busy_kwh"] + m["energy_idle_kwh"] + m["energy_wake_kwh"]
    assert parts == pytest.approx(m["energy_kwh"], rel=1e-9)
    p = state_power_w(r).sum(axis=(1, 2))
    start, end = m["window_start_s"], m["window_start_s"] + m["window_s"]
    dt = np.diff(np.clip(r.seg_t, start, end))
    assert (p * dt).sum() / J_PER_KWH == pytest.approx(m["energy_kwh"], rel=1e-9)
    assert (state_power_w(r) >= -1e-6).all()


def test_without_the_model_energy_by_state_adds_up_to_the_same_energy() -> None:
    cl = cluster([("A", 2), ("A", 4)])
    t = random_trace(4, n=40)
    m = summary(run("fifo", t, cl))
    parts = m["energy_busy_kwh"] + m["energy_idle_kwh"] + m["energy_wake_kwh"]
    assert parts == pytest.approx(m["energy_kwh"], rel=1e-9) and m["energy_wake_kwh"] == 0


@pytest.mark.parametrize("base", ["fifo", "srtf", "tiresias", "gavel-las"])
@pytest.mark.parametrize("mode", ["cap", "delay"])
def test_the_budget_is_never_exceeded_and_every_job_runs_once(base: str, mode: str) -> None:
    # 12 devices: idle floor 360 W, all busy 3.6 kW; a 1.5 kW budget binds often
    cl = cluster([("A", 2), ("A", 2), ("A", 4), ("A", 4)], racks=[0, 0, 1, 1])
    t = random_trace(11)
    pol = make_policy("power-cap", budget_kw=1.5, base=base, mode=mode)
    r = simulate(t, cl, pol, make_placement("consolidate"), rates=fixed_rates(t, cl))
    it_w = state_power_w(r).sum(axis=(1, 2))
    assert it_w.max() <= 1500 + 1e-6
    done = np.isfinite(r.finish)
    assert done[r.drop_reason == ""].all()
    np.testing.assert_allclose(_work_done(r, np.ones(1))[done], t.work[done], rtol=1e-9)
    _check_stints(r)


def test_power_down_never_runs_a_job_on_an_off_node() -> None:
    cl = cluster([("A", 2), ("A", 2), ("A", 4), ("A", 4)], racks=[0, 0, 1, 1])
    t = random_trace(8, n=80)
    r = run("power-down", t, cl, idle_off_s=5.0)
    p = r.power
    assert p is not None and len(p.node) > 0
    st = r.stints
    for node, start, end in zip(p.node, p.start, p.end, strict=True):
        on_node = st.node == node
        overlap = (st.start[on_node] < end) & (st.end[on_node] > start) & (st.devices[on_node] > 0)
        assert not overlap.any()
    assert np.isfinite(r.finish[r.drop_reason == ""]).all()


@pytest.mark.parametrize("name", ["power-down", "power-cap", "energy-aware"])
def test_same_inputs_and_seed_give_the_same_results(name: str) -> None:
    cl = cluster([("A", 2), ("A", 2), ("A", 4)])
    t = random_trace(6, n=60)
    params = {"power-down": {"idle_off_s": 10.0}, "power-cap": {"budget_kw": 1.0}}.get(name, {})
    a, b = (
        simulate(t, cl, make_policy(name, **params), rates=fixed_rates(t, cl), seed=3)
        for _ in range(2)
    )
    for x, y in [(a.finish, b.finish), (a.seg_t, b.seg_t), (a.seg_busy, b.seg_busy)]:
        assert np.array_equal(x, y, equal_nan=True)
    assert a.power is not None and b.power is not None
    for f in ("node", "state", "start", "end", "cap_job", "cap_start", "cap"):
        assert np.array_equal(getattr(a.power, f), getattr(b.power, f))
    assert summary(a) == summary(b)


def test_a_budget_below_one_nodes_idle_draw_is_refused_naming_the_field() -> None:
    # the smallest node: 2 devices x 30 W = 60 W = 0.06 kW
    cl = cluster([("A", 2), ("A", 4)])
    with pytest.raises(SimulationError, match=r"budget_kw: 0\.05 kW is below the idle draw"):
        PowerModel(PowerConfig(budget_w=50.0), cl, 0)
    t = jobs([(0, 1, 10)])
    with pytest.raises(SimulationError, match="budget_kw"):
        run("power-cap", t, cl, budget_kw=0.05)
    (msg,) = cluster_errors("power-cap", {"budget_kw": 0.05}, cl, "policies[0].params")
    assert msg.startswith("policies[0].params.budget_kw: 0.05 kW is below")
    assert cluster_errors("power-cap", {"budget_kw": 0.06}, cl, "p") == []
    assert cluster_errors("fifo", {}, cl, "p") == []
    # out of range without a cluster: the parameter's own check
    (msg,) = policy_errors("power-cap", {"budget_kw": 0}, "policies[0]")
    assert msg.startswith("policies[0].params.budget_kw: must be positive")


def test_the_cli_refuses_a_budget_below_one_nodes_idle_draw(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = tmp_path / "t.csv"
    trace.write_text("job_id,submit_time,num_gpus,duration\na,0,1,60\n")
    argv = ["run", "--cluster", "v100:8", "--trace", str(trace), "--policy", "power-cap"]
    assert main([*argv, "--param", "budget_kw=0.01"]) != 0
    err = capsys.readouterr().err
    assert "--param budget_kw: 0.01 kW is below the idle draw of one node" in err


def test_a_base_that_is_unknown_or_co_locates_is_refused_naming_base() -> None:
    (msg,) = policy_errors("power-down", {"base": "nope"}, "policies[0]")
    assert msg.startswith("policies[0].params: base: unknown policy 'nope'")
    (msg,) = policy_errors("energy-aware", {"base": "gandiva"}, "policies[0]")
    assert "base: gandiva co-locates jobs" in msg
    (msg,) = policy_errors("power-cap", {"base": "power-down"}, "policies[0]")
    assert "base: power-down is a power policy itself" in msg
