"""Co-location (clustersim.colocation): the pair model from Gavel's measurements, and the
engine's mechanism on traces worked by hand."""

from __future__ import annotations

from typing import ClassVar

import numpy as np
import pytest

from clustersim.colocation import PairFactors, PairTable
from clustersim.engine import simulate
from clustersim.errors import SimulationError
from scheduling.base import Decision, Policy, State
from tests.simple import FixedRates, cluster, jobs

R50 = "ResNet-50 (batch size 64)"
TF = "Transformer (batch size 64)"
# Gavel's simulation_throughputs.json, worker v100: isolated steps/s and the pair's rates
R50_ISO, TF_ISO = 4.394774823323071, 8.61775899193302
R50_PACKED, TF_PACKED = 2.55026372359856, 1.7739250679955958


def test_factors_are_packed_over_isolated_rates_of_gavels_table() -> None:
    table = jobs([(0.0, 1, 1.0)] * 4, job_type=[R50, TF, "not-a-type", R50])
    cl = cluster([("V100", 1), ("A100", 1)])
    f = PairFactors.build(table, cl)
    fa, fb = f.factors(np.array([0, 0, 0]), np.array([1, 2, 1]), np.array([0, 0, 1]))
    assert fa[0] == pytest.approx(R50_PACKED / R50_ISO) and fb[0] == pytest.approx(
        TF_PACKED / TF_ISO
    )
    assert fa[1] == fb[1] == 0.0  # no measured job type: cannot share
    # the A100 borrows the V100's slowdowns, and says so
    assert fa[2] == pytest.approx(fa[0]) and any("A100" in n for n in f.notes)
    # a job with itself is no pair
    assert f.factors(np.array([0]), np.array([0]), np.array([0]))[0][0] == 0.0


def test_pairs_of_different_scale_factors_cannot_share() -> None:
    table = jobs([(0.0, 1, 1.0), (0.0, 2, 1.0)], job_type=[R50, TF])
    f = PairFactors.build(table, cluster([("V100", 2)]))
    assert f.factors(np.array([0]), np.array([1]), np.array([0]))[0][0] == 0.0


def test_the_table_has_gavels_pair_entries_both_ways() -> None:
    t = PairTable.load()
    a, b = t.table.index(R50), t.table.index(TF)
    v100 = 2  # GAVEL_WORKERS = (k80, p100, v100)
    s = int(np.flatnonzero(t.table.scale_factors == 1)[0])
    np.testing.assert_allclose(t.rates[v100, a, b, s], [R50_PACKED, TF_PACKED])
    np.testing.assert_allclose(t.rates[v100, b, a, s], [TF_PACKED, R50_PACKED])


class Pairing(Policy):
    """Runs job 0 with job 1 as its guest while both are active, then whoever is left; asks
    to be called again at ``wake`` (to check that a pair that goes on is not disturbed)."""

    name = "pairing-test"
    preemptive = True
    colocates = True
    swap: ClassVar[bool] = False

    def __init__(self, wake: float | None = None, swap_at: float | None = None) -> None:
        self.wake = wake
        self.swap_at = swap_at

    def schedule(self, state: State) -> Decision:
        act = state.active.tolist()
        if act == [0, 1]:
            host, guest = (
                (1, 0) if self.swap_at is not None and state.now >= self.swap_at else (0, 1)
            )
            wake = self.wake if self.wake is not None and state.now < self.wake else None
            return Decision(
                run=np.array([host]),
                types=np.array([0]),
                colocate=np.array([[guest, host]]),
                wake_at=wake,
            )
        return Decision(run=np.array(act, dtype=np.int64))


def pair_trace(restore: float = 0.0):  # type: ignore[no-untyped-def]
    # B (Transformer) co-located runs TF_PACKED steps/s: work TF_PACKED·500 ends it at 500.
    # A (ResNet-50) co-located runs R50_PACKED: by 500 it has done R50_PACKED·500; alone
    # afterwards at R50_ISO, the rest R50_ISO·250 ends it at 750.
    work_a = R50_PACKED * 500 + R50_ISO * 250
    work_b = TF_PACKED * 500
    table = jobs([(0.0, 1, work_a), (0.0, 1, work_b)], job_type=[R50, TF])
    rates = FixedRates(rate=np.array([[R50_ISO], [TF_ISO]]), restore_s=np.full(2, restore))
    return table, cluster([("V100", 1)]), rates


def test_a_pair_shares_one_device_at_its_measured_rates() -> None:
    table, cl, rates = pair_trace()
    r = simulate(table, cl, Pairing(), rates=rates)
    np.testing.assert_allclose(r.finish, [750.0, 500.0])
    # the guest held no device: device-time and utilisation count the V100 once
    np.testing.assert_allclose(r.device_time[:, 0], [750.0, 0.0])
    np.testing.assert_allclose(r.type_time[:, 0], [750.0, 500.0])
    assert r.preemptions.tolist() == [0, 0] and r.migrations.tolist() == [0, 0]
    assert r.policy_stats["colocations"] == 1.0
    assert r.policy_stats["colocated_job_s"] == pytest.approx(500.0)
    # stints: the host's device for 750 s; the guest on the same node, 0 devices, 0 to 500
    st = r.stints
    assert float(np.sum(st.devices * (st.end - st.start))) == pytest.approx(750.0)
    guest = st.job == 1
    assert st.devices[guest].tolist() == [0] and st.node[guest].tolist() == st.node[~guest].tolist()
    np.testing.assert_allclose([st.start[guest][0], st.end[guest][0]], [0.0, 500.0])


def test_a_pair_that_goes_on_pays_no_restore_stall() -> None:
    # restore 10 s on every resume; the policy is called again at 200 and keeps the pair:
    # nothing stops, so the finish times are those of the trace without the call
    table, cl, rates = pair_trace(restore=10.0)
    r = simulate(table, cl, Pairing(wake=200.0), rates=rates)
    np.testing.assert_allclose(r.finish, [750.0, 500.0])
    assert r.preemptions.tolist() == [0, 0] and r.policy_stats["colocations"] == 1.0


def test_swapping_host_and_guest_counts_preemptions_and_migrations() -> None:
    # at 200 job 1 becomes the host and job 0 its guest: job 0 leaves its device (suspended,
    # resumed as a guest elsewhere: no device), job 1 gets a device of its own
    table, cl, rates = pair_trace(restore=0.0)
    r = simulate(table, cl, Pairing(wake=200.0, swap_at=200.0), rates=rates)
    # job 1 (guest until 200) stops being a guest: one preemption, one migration; job 0 too at
    # 200, and again at 500 when its host finishes and it moves to a device of its own
    assert r.preemptions.tolist() == [2, 1] and r.migrations.tolist() == [2, 1]
    # the rates are the pair's either way round, so the finish times do not change
    np.testing.assert_allclose(r.finish, [750.0, 500.0])
    assert r.policy_stats["colocations"] == 2.0


class BadPair(Policy):
    name = "bad-pair-test"
    preemptive = True
    colocates = True

    def __init__(self, pairs: list[list[int]], run: list[int]) -> None:
        self.pairs, self.run = pairs, run

    def schedule(self, state: State) -> Decision:
        return Decision(run=np.array(self.run), colocate=np.array(self.pairs))


@pytest.mark.parametrize(
    ("pairs", "run"),
    [([[1, 0]], [0, 1]), ([[0, 0]], [0]), ([[2, 0]], [0])],
    ids=["guest-also-runs", "self-pair", "unmeasured-type"],
)
def test_bad_pairs_are_refused(pairs: list[list[int]], run: list[int]) -> None:
    table = jobs([(0.0, 1, 10.0)] * 3, job_type=[R50, TF, ""])
    rates = FixedRates(rate=np.ones((3, 1)), restore_s=np.zeros(3))
    with pytest.raises(SimulationError):
        simulate(table, cluster([("V100", 2)]), BadPair(pairs, run), rates=rates)


def test_a_policy_that_does_not_declare_colocates_cannot_pair() -> None:
    class Sneaky(BadPair):
        name = "sneaky-test"
        colocates = False

    table = jobs([(0.0, 1, 10.0)] * 2, job_type=[R50, TF])
    rates = FixedRates(rate=np.ones((2, 1)), restore_s=np.zeros(2))
    with pytest.raises(SimulationError, match="colocates"):
        simulate(table, cluster([("V100", 1)]), Sneaky([[1, 0]], [0]), rates=rates)


def test_a_guest_still_running_at_the_end_has_its_open_stint() -> None:
    from clustersim.engine import EngineOptions

    # cut at 300: the last event is the policy's call at 200 (the timeline ends there); the
    # guest's stint until that call is closed, the one it began then is still open
    table, cl, rates = pair_trace()
    r = simulate(table, cl, Pairing(wake=200.0), rates=rates, options=EngineOptions(until=300.0))
    st = r.stints
    guest = st.job == 1
    assert st.devices[guest].tolist() == [0, 0]
    np.testing.assert_allclose(np.sort(st.start[guest]), [0.0, 200.0])
    np.testing.assert_allclose(np.sort(st.end[guest]), [200.0, 200.0])
