"""Gavel's packing policies (``gavel-gandiva``, ``gavel-mmf-packed``): allocations worked on
paper, and runs on real job types where pairs do share devices."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from clustersim.colocation import PairFactors
from clustersim.engine import simulate
from scheduling.gavel_mmf_packed import GavelMMFPacked
from scheduling.gavel_packing import GavelGandiva
from scheduling.registry import make_policy
from tests.simple import FixedRates, cluster, jobs
from tests.test_policy_conformance import _check_stints

LM = "LM (batch size 10)"
TF = "Transformer (batch size 64)"
R50 = "ResNet-50 (batch size 64)"
# Gavel's simulation_throughputs.json, worker v100 (steps/s): isolated, and co-located
LM_ISO, TF_ISO, R50_ISO = 81.65163491883021, 8.61775899193302, 4.394774823323071
LM_WITH_TF, TF_WITH_LM = 64.9060558, 6.9914968  # rounded; the test reads the exact ones
R50_WITH_TF, TF_WITH_R50 = 2.55026372359856, 1.7739250679955958


def state_of(types: list[str], devices: int = 1) -> Any:
    """1-GPU jobs on V100s, with their measured isolated rates."""
    iso = {LM: LM_ISO, TF: TF_ISO, R50: R50_ISO}
    table = jobs([(0.0, 1, 1.0)] * len(types), job_type=types)
    cl = cluster([("V100", devices)])
    return SimpleNamespace(
        rate=np.array([[iso[t]] for t in types]),
        jobs=table,
        capacity=np.array([devices], dtype=np.int64),
        cluster=cl,
        now=0.0,
        colocation=PairFactors.build(table, cl),
    )


def shares(policy: GavelMMFPacked | GavelGandiva, st: Any) -> dict[tuple[int, int], float]:
    policy.reset(np.random.default_rng(0))
    out = policy._shares(st, np.arange(len(st.rate), dtype=np.int64))
    return {k: float(v[0]) for k, v in out.items() if v[0] > 1e-9}


def test_mmf_packed_declines_a_pair_that_is_slower_than_time_slicing() -> None:
    # ResNet-50 keeps fa = 2.550/4.395 = 0.580 of its rate next to the Transformer, which
    # keeps fb = 1.774/8.618 = 0.206. One V100, shares s_a, s_b alone and y together:
    # s_a + s_b + y <= 1; level L = min(s_a + fa y, s_b + fb y) (each job's proportional
    # throughput is its isolated rate: one type). The two levels sum to 1 - y + 0.786 y, so
    # any y > 0 lowers the best level below 1/2: the optimum is y = 0, s_a = s_b = 1/2.
    got = shares(GavelMMFPacked(), state_of([R50, TF]))
    assert got == pytest.approx({(0, -1): 0.5, (1, -1): 0.5})


def test_mmf_packed_pairs_jobs_that_gain_from_sharing() -> None:
    # LM keeps fa = 0.7949 and the Transformer fb = 0.8113 of their rates together. With
    # s_b = 0 and A topped up alone so both levels are equal: s_a + fa y = fb y and
    # s_a + y = 1 give y = 1 / (1 + fb - fa), s_a = (fb - fa) y, level fb y = 0.7982 — above
    # both the unpacked 1/2 and the all-packed min(fa, fb) = 0.7949.
    st = state_of([LM, TF])
    fa, fb = st.colocation.factors(np.array([0]), np.array([1]), np.array([0]))
    fa, fb = float(fa[0]), float(fb[0])
    assert fa == pytest.approx(LM_WITH_TF / LM_ISO, rel=1e-6)
    assert fb == pytest.approx(TF_WITH_LM / TF_ISO, rel=1e-6)
    y = 1.0 / (1.0 + fb - fa)
    got = shares(GavelMMFPacked(), st)
    assert got == pytest.approx({(0, -1): (fb - fa) * y, (0, 1): y}, abs=1e-7)


def test_mmf_packed_spreads_a_class_pairs_time_over_its_concrete_pairs() -> None:
    # two LM jobs and two Transformers on two V100s: the class-pair time is split evenly
    # over the four (LM, Transformer) pairs, and every job's row stays within 1
    st = state_of([LM, LM, TF, TF], devices=2)
    got = shares(GavelMMFPacked(), st)
    pairs = {k: v for k, v in got.items() if k[1] >= 0}
    assert set(pairs) == {(0, 2), (0, 3), (1, 2), (1, 3)}
    assert len(set(np.round(list(pairs.values()), 12))) == 1
    for j in range(4):
        assert sum(v for k, v in got.items() if j in k) <= 1 + 1e-9


def test_gandiva_packs_only_when_oversubscribed() -> None:
    # two 1-GPU jobs on two V100s fit: each gets the isolated share (2/2)/1 = 1 alone
    assert shares(GavelGandiva(), state_of([LM, TF], devices=2)) == pytest.approx(
        {(0, -1): 1.0, (1, -1): 1.0}
    )
    # on one V100 they do not: the one draw pairs them, and the one combination gets it all
    assert shares(GavelGandiva(), state_of([LM, TF])) == pytest.approx({(0, 1): 1.0})


def test_gandiva_drops_a_pair_that_cannot_share_and_draws_again() -> None:
    # the pair (0, 1) is remembered but job 1 has no measured type: normalised packed
    # throughput 0 < 1, so it is forgotten at the next recomputation
    st = state_of([LM, TF, R50])
    pol = GavelGandiva()
    pol.reset(np.random.default_rng(0))
    pol._partner = {0: 1, 1: 0}
    st.colocation.job_type[1] = -1
    keys = pol._combinations(st, np.arange(3, dtype=np.int64))
    assert (0, 1) not in keys and sorted(j for k in keys for j in k if j >= 0) == [0, 1, 2]


@pytest.mark.parametrize("name", ["gavel-gandiva", "gavel-mmf-packed"])
def test_packing_policies_share_devices_and_finish_every_job(name: str) -> None:
    # six jobs of measured types on two V100s: oversubscribed, so pairs form; every job
    # completes its work, devices are never over-committed, guests hold none
    types = [LM, TF, LM, TF, R50, TF]
    table = jobs([(0.0, 1, 3000.0)] * 6, job_type=types)
    iso = {LM: LM_ISO, TF: TF_ISO, R50: R50_ISO}
    rates = FixedRates(rate=np.array([[iso[t]] for t in types]), restore_s=np.zeros(6))
    cl = cluster([("V100", 2)])
    r = simulate(table, cl, make_policy(name, round_s=60.0), rates=rates)
    assert np.isfinite(r.finish).all()
    assert r.policy_stats["colocations"] > 0 and r.policy_stats["colocated_job_s"] > 0
    assert (r.seg_busy.sum(axis=2) <= 2).all()
    # the V100 time held (device-time) never exceeds the devices × makespan
    assert r.device_time.sum() <= 2 * float(np.max(r.finish)) + 1e-6
    _check_stints(r)  # stints add up to attained service, no node over-committed
    # same inputs, same results
    r2 = simulate(table, cl, make_policy(name, round_s=60.0), rates=rates)
    np.testing.assert_array_equal(r.finish, r2.finish)


def _gavel_run(types: list[str], rows: list[tuple[float, int, float]], devices: int) -> Any:
    """``gavel-gandiva`` in Gavel's whole-step rounds of 360 s on V100s (work in steps)."""
    from clustersim.engine import EngineOptions

    iso = {LM: LM_ISO, TF: TF_ISO, R50: R50_ISO}
    table = jobs(rows, job_type=types)
    rates = FixedRates(rate=np.array([[iso[t]] for t in types]), restore_s=np.zeros(len(rows)))
    opts = EngineOptions(whole_steps_per_round=True)
    return simulate(
        table, cluster([("V100", devices)]), make_policy("gavel-gandiva"), rates=rates, options=opts
    )


def test_gandiva_pair_job_is_stamped_with_the_pair_end_and_its_partner_takes_the_leftover() -> None:
    # One V100, LM (1,000 steps) and a Transformer (10,000 steps) at 0: 2 GPUs asked for, 1
    # there, so the one draw pairs them and the pair gets the whole V100 (share 1, priority
    # 1 / (180 / 540) = 3; the two lone jobs have share 0). Round 1, co-located: LM does its
    # 1,000 steps at r_A = 64.91 steps/s (15.4 s), the Transformer floor(360 r_B) = 2,516
    # steps at r_B = 6.99 steps/s (359.87 s). Gavel stamps both jobs of the pair task with its
    # end, so LM completes at 2,516 / r_B, not at 15.4 s.
    st = state_of([LM, TF])
    fa, fb = st.colocation.factors(np.array([0]), np.array([1]), np.array([0]))
    r_a, r_b = float(fa[0]) * LM_ISO, float(fb[0]) * TF_ISO
    first = np.floor(360 * r_b)
    assert first == 2516 and 1000 / r_a < 16
    r = _gavel_run([LM, TF], [(0.0, 1, 1000.0), (0.0, 1, 10000.0)], devices=1)
    assert r.finish[0] == pytest.approx(first / r_b, rel=1e-12)
    # The pair entry goes with LM; no reset before 1,920 s, so the Transformer keeps its lone
    # entry of share 0 (priority 0) and takes the free V100 alone: 3,102 steps a round at
    # 8.62 steps/s (floor(360 × 8.6178) = 3,102), twice, then the last 10,000 - 2,516 - 6,204
    # = 1,280 steps: 2,516 / r_B + 2 × 3,102 / 8.6178 + 1,280 / 8.6178 = 1,228.3 s.
    assert np.floor(360 * TF_ISO) == 3102
    expected = first / r_b + 2 * 3102 / TF_ISO + 1280 / TF_ISO
    assert r.finish[1] == pytest.approx(expected, rel=1e-9)
    assert r.finish[1] == pytest.approx(1228.3, abs=0.1)


def test_gandiva_job_outside_the_allocation_holds_a_device_without_running() -> None:
    # Two V100s. A (Transformer, 30,000 steps: 3,481 s alone) arrives at 10 s: the first
    # reset there gives it the isolated share; it runs whole-step rounds of 3,102 / 8.6178 =
    # 359.95 s. B (Transformer,
    # 1,000 steps) arrives at 100 s: the next reset must wait until 1,920 s after the last
    # (10 s), so B's entry is outside the allocation. At each round end A (priority 1) takes
    # one V100 and B (priority 0, deficit 0, ahead of the pair (A, B) whose A is taken) the
    # other -- which it holds without running. The first round end at or after 1,930 s is
    # 10 + 6 × 359.95 = 2,169.7 s (5 rounds end at 1,809.8 s); the reset there gives B its
    # share and B runs its 1,000 steps alone in 116.04 s: it completes at 2,285.8 s, not at
    # 369.95 + 116.04 = 486.0 s as it would if it ran at once.
    r = _gavel_run([TF, TF], [(10.0, 1, 30000.0), (100.0, 1, 1000.0)], devices=2)
    round_s = 3102 / TF_ISO
    expected = 10.0 + 6 * round_s + 1000 / TF_ISO
    assert r.finish[1] == pytest.approx(expected, rel=1e-9)
    assert r.finish[1] == pytest.approx(2285.8, abs=0.1)
