"""Gandiva-Fair (``scheduling.gandiva_fair``): stride shares, trading, quanta, hand-worked."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clustersim.engine import EngineOptions, simulate
from scheduling.gandiva_fair import GandivaFair, parse_tickets, trade
from scheduling.params import policy_errors
from scheduling.registry import make_policy
from tests.simple import FixedRates, cluster, jobs


def _rates(rows: list[tuple[float, ...]]) -> FixedRates:
    return FixedRates(rate=np.array(rows, dtype=np.float64), restore_s=np.zeros(len(rows)))


def test_tickets_two_to_one_give_two_to_one_device_time() -> None:
    # One device, quantum 10 s; alice (tickets 2) and bob (1) each submit one job of 600 s at
    # t = 0. Entitlements 2/3 and 1/3 of the device; a quantum run advances alice's pass by
    # 1.5 and bob's by 3. Passes (alice, bob), ties to alice (user order):
    #   (0, 0) A -> (1.5, 0) B -> (1.5, 3) A -> (3, 3) A -> (4.5, 3) B -> (4.5, 6) A ...
    # a period of three quanta A, B, A: after 30 quanta (300 s) alice has held the device 200 s
    # and bob 100 s.
    cl = cluster([("A", 1)])
    table = jobs([(0.0, 1, 600.0), (0.0, 1, 600.0)], user=["alice", "bob"])
    pol = make_policy("gandiva-fair", quantum_s=10.0, tickets="alice=2,bob=1")
    r = simulate(table, cl, pol, rates=_rates([(1.0,), (1.0,)]))
    # Each period of three quanta gives alice two: her 600 s (60 quanta) end with the 30th
    # period, at quantum 90 (t = 900), which is one of hers.
    assert r.finish[0] == pytest.approx(900.0)
    # by then bob held the device 30 quanta (300 s) and finishes alone: 900 + 300 = 1200.
    assert r.finish[1] == pytest.approx(1200.0)


def test_shares_over_many_quanta_with_many_jobs_follow_tickets() -> None:
    # Three devices; alice (3 tickets) and bob (1) each keep 6 long single-GPU jobs busy.
    # Entitlements 2.25 and 0.75 devices: over 400 quanta alice's device time is 3× bob's.
    cl = cluster([("A", 3)])
    rows = [(0.0, 1, 1e6)] * 12
    table = jobs(rows, user=["alice"] * 6 + ["bob"] * 6)
    pol = make_policy("gandiva-fair", quantum_s=1.0, tickets="alice=3")
    r = simulate(table, cl, pol, rates=_rates([(1.0,)] * 12), options=EngineOptions(until=400.0))
    held = r.type_time.sum(axis=1)
    a, b = held[:6].sum(), held[6:].sum()
    assert a + b == pytest.approx(1200.0)
    assert a / b == pytest.approx(3.0, rel=0.02)
    # inside a user, its jobs share equally (least attained first)
    assert held[:6].max() - held[:6].min() <= 2.0


def test_trading_on_a_hand_example() -> None:
    # Two types F (fast, 2 devices) and S (slow, 2). Alice's jobs run 4x faster on F, bob's
    # 1.5x. Equal tickets: each is entitled to 1 F + 1 S. Price 0.5: rate = 1.5 + 0.5 (4 −
    # 1.5) = 2.75 S per F. Alice (buyer) can pay at most her 1 S: 1/2.75 F; bob can give 1 F;
    # demands (4 jobs each) do not bind. So alice gets 1 + 1/2.75 F and 0 S, bob 1 − 1/2.75 F
    # and 2 S. Both gain: alice's effective devices (in S units) go from 4 + 1 = 5 to
    # 4 × 1.3636 = 5.4545; bob's from 1.5 + 1 = 2.5 to 1.5 × 0.6364 + 2 = 2.9545.
    share = np.array([[1.0, 1.0], [1.0, 1.0]])
    demand = np.array([[4.0, 4.0], [4.0, 4.0]])
    n = trade(share, np.array([4.0, 1.5]), demand, fast=0, slow=1, price=0.5)
    assert n == 1
    np.testing.assert_allclose(share, [[1 + 1 / 2.75, 0.0], [1 - 1 / 2.75, 2.0]])
    # price 0: at the seller's speedup, 1.5 S per F: alice buys 1/1.5 F with all her S...
    share = np.array([[1.0, 1.0], [1.0, 1.0]])
    trade(share, np.array([4.0, 1.5]), demand, fast=0, slow=1, price=0.0)
    np.testing.assert_allclose(share, [[1 + 1 / 1.5, 0.0], [1 - 1 / 1.5, 2.0]])
    # ...and a binding demand: bob can use only 1.5 S, so he sells 0.5 / 2.75 F.
    share = np.array([[1.0, 1.0], [1.0, 1.0]])
    trade(share, np.array([4.0, 1.5]), np.array([[4.0, 4.0], [4.0, 1.5]]), 0, 1, 0.5)
    np.testing.assert_allclose(share, [[1 + 0.5 / 2.75, 0.5], [1 - 0.5 / 2.75, 1.5]])


def test_equal_speedups_do_not_trade() -> None:
    share = np.ones((2, 2))
    assert trade(share, np.array([2.0, 2.0]), np.full((2, 2), 9.0), 0, 1, 0.5) == 0
    np.testing.assert_array_equal(share, np.ones((2, 2)))


def test_trading_moves_fast_device_time_to_the_user_with_the_higher_speedup() -> None:
    # The trade above, run: alice's long jobs F 4 / S 1, bob's F 1.5 / S 1, 4 jobs each.
    # Without trading each user holds F half the time; with it alice holds 1.3636 / 2 =
    # 68.2 % of F's device time and bob all of S's.
    cl = cluster([("F", 2), ("S", 2)])
    rows = [(0.0, 1, 1e7)] * 8
    users = ["alice"] * 4 + ["bob"] * 4
    rates = _rates([(4.0, 1.0)] * 4 + [(1.5, 1.0)] * 4)
    out = {}
    for trading in (False, True):
        pol = make_policy("gandiva-fair", quantum_s=1.0, trading=trading)
        r = simulate(
            jobs(rows, user=users), cl, pol, rates=rates, options=EngineOptions(until=2000.0)
        )
        tt = r.type_time
        out[trading] = (tt[:4, 0].sum() / tt[:, 0].sum(), tt[4:, 1].sum() / tt[:, 1].sum())
    assert out[False][0] == pytest.approx(0.5, abs=0.01)
    assert out[True][0] == pytest.approx(1.5 / 2.2, abs=0.01)  # (1 + 1/2.75) / 2
    assert out[True][1] == pytest.approx(1.0, abs=0.01)


def test_a_gang_runs_whole_or_not_at_all() -> None:
    # 4 devices, quantum 10 s, equal tickets (2 devices each). Alice: one 4-GPU job, bob: two
    # 1-GPU jobs; each job needs 40 s (4 quanta). A quantum of alice's gang adds 4/2 = 2 to her
    # pass, one of bob's two jobs 2 × 1/2 = 1 to his; keys of bob's jobs are pass, pass + 0.5.
    #   t=0  (0, 0): tie, alice first: her gang takes all 4 devices
    #   t=10 (2, 0): bob's two jobs; alice's gang does not fit in the 2 left
    #   t=20 (2, 1): bob     t=30 (2, 2): tie -> alice     t=40 (4, 2): bob
    #   t=50 (4, 3): bob -> his jobs have had 4 quanta: both end at 60
    #   t=60, 70: alice alone -> her 3rd and 4th quanta: she ends at 80.
    cl = cluster([("A", 4)])
    table = jobs([(0.0, 4, 40.0), (0.0, 1, 40.0), (0.0, 1, 40.0)], user=["alice", "bob", "bob"])
    pol = make_policy("gandiva-fair", quantum_s=10.0)
    r = simulate(table, cl, pol, rates=_rates([(1.0,)] * 3))
    # every decision runs either the gang alone or bob's jobs: never 4 + 1 devices
    busy = r.type_time.sum(axis=1)
    assert busy.tolist() == pytest.approx([40.0, 40.0, 40.0])
    assert r.finish.tolist() == pytest.approx([80.0, 60.0, 60.0])


def test_trading_trace_finishes_as_worked_by_hand() -> None:
    # Types F and S, one device each, quantum 100 s, equal tickets. Alice: a (F 3, S 1),
    # work 600; bob: b1, b2 (F 1, S 1), work 200 each; all at t = 0. F is visited first (mean
    # rate 5/3 against 1). Entitlements before trading: 1/2 of each device per user.
    # Trading (price 0.5): alice's speed-up 3, bob's 1 -> 1 + 0.5 (3 - 1) = 2 S per F. The
    # amount is the least of bob's F (1/2), alice's S / 2 (1/4), alice's unmet F demand
    # (1 - 1/2) and bob's unmet S demand / 2 ((2 - 1/2) / 2): 1/4. So alice holds 3/4 of F
    # and none of S, bob 1/4 of F and all of S. A quantum on F adds 4/3 to alice's pass
    # there, 4 to bob's; one on S adds 1 to bob's.
    #   t=0:   F: passes 0, 0: tie -> alice (user order): a. S: bob's b1 (key 0; b2's key
    #          is 0 + 1). Passes F (4/3, 0), S bob 1.
    #   t=100: F: bob (0 < 4/3): b2 (less attained than b1). S: a has no entitlement there,
    #          so b1 goes first and takes it: a waits. b1 has done 200: ends at 200.
    #          Passes F (4/3, 4), S bob 2.
    #   t=200: F: alice (4/3 < 4): a, 300 left at 3/s -> ends at 300. S: b2, 100 left -> 300.
    cl = cluster([("F", 1), ("S", 1)])
    table = jobs([(0.0, 1, 600.0), (0.0, 1, 200.0), (0.0, 1, 200.0)], user=["alice", "bob", "bob"])
    rates = _rates([(3.0, 1.0), (1.0, 1.0), (1.0, 1.0)])
    pol = make_policy("gandiva-fair", quantum_s=100.0)
    r = simulate(table, cl, pol, rates=rates)
    assert r.finish.tolist() == pytest.approx([300.0, 200.0, 300.0])
    np.testing.assert_allclose(r.type_time, [[200.0, 0.0], [0.0, 200.0], [100.0, 100.0]])
    # Without trading (1/2 of each device each, 2 added to a pass per quantum):
    #   t=0:   F: tie -> a; S: b1.           Passes F (2, 0), S (0, 2).
    #   t=100: F: bob (0 < 2): b2; S: a (alice's S pass 0 < bob's 2). Passes all 2.
    #   t=200: F: tie -> a, 600 - 300 - 100 = 200 left at 3/s: ends at 266.67. S: b1 (first by
    #          position among bob's equally served jobs): ends at 300.
    #   t=266.67: F is free and b2 waits: it runs its last 100 there, ending at 366.67.
    # Trading lowers the mean JCT (800 / 3 against 933.3 / 3); alice's one job cannot use
    # F and S at once, so her bought F time arrives later than the S time she gave up.
    pol = make_policy("gandiva-fair", quantum_s=100.0, trading=False)
    r = simulate(table, cl, pol, rates=rates)
    assert r.finish.tolist() == pytest.approx([800.0 / 3.0, 300.0, 1100.0 / 3.0])


def test_parameters_out_of_range_are_refused_naming_them() -> None:
    assert policy_errors("gandiva-fair", {"quantum_s": 0}, "p")
    assert "price" in str(policy_errors("gandiva-fair", {"price": 1.5}, "p"))
    assert "tickets" in str(policy_errors("gandiva-fair", {"tickets": "alice"}, "p"))
    assert "tickets" in str(policy_errors("gandiva-fair", {"tickets": "alice=-1"}, "p"))
    assert parse_tickets(" alice=2, bob=0.5 ,") == {"alice": 2.0, "bob": 0.5}
    with pytest.raises(ValueError, match="price"):
        GandivaFair(price=-0.1)


@settings(max_examples=80, deadline=None)
@given(
    st.lists(st.floats(1.0, 10.0), min_size=2, max_size=5),
    st.floats(0.0, 1.0),
    st.data(),
)
def test_trading_conserves_devices_and_every_trader_gains(
    speedups: list[float], price: float, data: st.DataObject
) -> None:
    n = len(speedups)
    share = np.array(
        data.draw(st.lists(st.tuples(st.floats(0, 4), st.floats(0, 4)), min_size=n, max_size=n))
    )
    demand = share + np.array(
        data.draw(st.lists(st.tuples(st.floats(0, 4), st.floats(0, 4)), min_size=n, max_size=n))
    )
    k = np.array(speedups)
    before = share.copy()
    trade(share, k, demand, fast=0, slow=1, price=price)
    np.testing.assert_allclose(share.sum(axis=0), before.sum(axis=0), atol=1e-9)
    assert (share >= -1e-9).all()
    grew = share > before + 1e-9  # nobody is given more of a type than its jobs can use
    assert (share[grew] <= demand[grew] + 1e-9).all()
    # value of a user's entitlement in slow-device units, at its own speedup: never lower
    value = lambda s: s[:, 0] * k + s[:, 1]  # noqa: E731
    assert (value(share) >= value(before) - 1e-9).all()


def numpy_select(
    types: np.ndarray,
    rate: np.ndarray,
    mean: np.ndarray,
    gang: np.ndarray,
    users: np.ndarray,
    attained: np.ndarray,
    share: np.ndarray,
    passes: np.ndarray,
    min_share: float,
    left: np.ndarray,
    taken: np.ndarray,
) -> list[tuple[int, int]]:
    """The selection loop as GandivaFair._select did it in numpy before the kernel (the
    reference): per type, keys from cumulative sums (per user, from 0), users without an
    entitlement on the type last, a leading run admitted at once, then the rest one by
    one."""
    out: list[tuple[int, int]] = []
    pos = rate > 0
    for t in types.tolist():
        if left[t] <= 0:
            continue
        cand = np.flatnonzero(~taken & pos[:, t] & (gang <= left[t]))
        if not len(cand):
            continue
        u = users[cand]
        rel = rate[cand, t] / mean[cand]
        o = np.lexsort((cand, attained[cand], -rel, u))
        cand, u = cand[o], u[o]
        unentitled = share[u, t] < min_share
        step = gang[cand] / np.maximum(share[u, t], min_share)
        before = np.zeros(len(u))  # the user's earlier steps, summed from 0 per user
        for user in np.unique(u).tolist():
            mine = np.flatnonzero(u == user)
            before[mine[1:]] = np.cumsum(step[mine[:-1]])
        keys = passes[u, t] + before
        picked = cand[np.lexsort((np.arange(len(cand)), u, keys, unentitled))]
        gp = gang[picked]
        free = int(left[t])
        k = int(np.searchsorted(np.cumsum(gp), free, side="right"))
        for i in picked[:k].tolist():
            taken[i] = True
            out.append((i, t))
        free -= int(gp[:k].sum())
        picked, gp = picked[k:], gp[k:]
        tail = np.minimum.accumulate(gp[::-1])[::-1].tolist() if len(gp) else []
        for at, (i, g) in enumerate(zip(picked.tolist(), gp.tolist(), strict=True)):
            if free < tail[at]:
                break
            if g <= free:
                free -= g
                taken[i] = True
                out.append((i, t))
        left[t] = free
    return out


@settings(max_examples=150, deadline=None)
@given(
    k=st.integers(1, 14),
    nt=st.integers(1, 3),
    nu=st.integers(1, 4),
    seed=st.integers(0, 100_000),
)
def test_stride_select_kernel_is_the_numpy_selection(k: int, nt: int, nu: int, seed: int) -> None:
    # coarse values so that ties in relative speed, attained service and keys are common
    from clustersim import kernels

    rng = np.random.default_rng(seed)
    rate = rng.choice([0.0, 1.0, 2.0, 3.0], (k, nt))
    pos = rate > 0
    mean = np.where(pos.any(axis=1), (rate * pos).sum(axis=1) / np.maximum(pos.sum(1), 1), 1.0)
    gang = rng.choice([1, 1, 2, 4], k).astype(np.int64)
    users = rng.integers(0, nu, k).astype(np.int64)
    attained = rng.choice([0.0, 10.0, 20.0], k)
    share = rng.choice([0.0, 0.5, 1.0, 2.0], (nu, nt))
    passes = rng.choice([0.0, 0.5, 1.0, 3.0], (nu, nt))
    left0 = rng.integers(0, 6, nt).astype(np.int64)
    taken0 = rng.random(k) < 0.2
    types = rng.permutation(nt).astype(np.int64)
    args = (types, rate, mean, gang, users, attained, share, passes, 1e-6)
    want_left, want_taken = left0.copy(), taken0.copy()
    want = numpy_select(*args, want_left, want_taken)
    was = kernels.compiled_in_use()
    try:
        kernels.use_compiled()
        impls = [kernels.stride_select.py_func, kernels.stride_select.dispatcher]
        for impl in impls:
            left, taken = left0.copy(), taken0.copy()
            out_pos = np.full(k, -1, dtype=np.int64)
            out_type = np.full(k, -1, dtype=np.int64)
            n = impl(*args, left, taken, out_pos, out_type)
            got = list(zip(out_pos[:n].tolist(), out_type[:n].tolist(), strict=True))
            assert got == want
            assert left.tolist() == want_left.tolist()
            assert taken.tolist() == want_taken.tolist()
    finally:
        kernels.use_compiled(was)
