"""Elastic jobs: bounds rules, resize cost and counting, and the ``afs`` and ``optimus``
policies on hand-worked traces.

Unless a test says otherwise the cluster is one node of four devices, two jobs arrive at 0,
A with 8 work units and B with 16, each may run on 1 to 4 devices, and a job's rate on ``n``
devices is ``W[n]`` whatever the placement (:class:`TableRates`).
"""

from __future__ import annotations

import numpy as np
import pytest

from clustersim.elastic import apply_elastic, parse_rule
from clustersim.engine import simulate
from clustersim.errors import ClustersimError
from clustersim.metrics import summary
from clustersim.perf import JobRates
from scheduling.base import Decision, Policy, State
from scheduling.params import policy_errors
from scheduling.registry import make_policy
from tests.simple import cluster, jobs

FOUR = cluster([("A", 4)])
LINEAR = [0.0, 1.0, 2.0, 3.0, 4.0]
SUBLINEAR = [0.0, 1.0, 1.6, 2.0, 2.2]


class TableRates(JobRates):
    """Rate on ``n`` devices = ``table[n]``, for every job, type and placement."""

    table: np.ndarray

    def placement_rate(self, jobs, types, ndev, link_gbs):  # type: ignore[no-untyped-def]
        return self.table[np.asarray(ndev)].astype(float)


def table_rates(w: list[float], n_jobs: int, restore_s: float = 0.0) -> TableRates:
    r = TableRates(rate=np.full((n_jobs, 1), w[1]), restore_s=np.full(n_jobs, restore_s))
    r.table = np.asarray(w, dtype=float)
    return r


def two_jobs():  # type: ignore[no-untyped-def]
    return jobs([(0, 1, 8), (0, 1, 16)], min_gpus=[1, 1], max_gpus=[4, 4])


def run(name: str, w: list[float], restore_s: float = 0.0, **params: float):  # type: ignore[no-untyped-def]
    t = two_jobs()
    return simulate(t, FOUR, make_policy(name, **params), rates=table_rates(w, 2, restore_s))


# ---------------------------------------------------------------- hand-worked policies


def test_optimus_with_linear_scaling_shares_then_gives_the_survivor_everything() -> None:
    """Both get 1 device (their gang). Gains of one more, l (1/W(n) - 1/W(n+1)):
    A 8 (1 - 1/2) = 4, B 16 (1 - 1/2) = 8: B gets the third; then A 4 against
    B 16 (1/2 - 1/3) = 2.67: A gets the fourth. A on 2 ends at 8/2 = 4; B has done 8 and
    takes all 4 devices: 8/4 = 2 more, ends at 6 (one resize, 2 -> 4)."""
    r = run("optimus", LINEAR)
    np.testing.assert_allclose(r.finish, [4.0, 6.0])
    assert r.resizes.tolist() == [0, 1]
    assert r.preemptions.tolist() == [0, 0]


def test_afs_with_linear_scaling_splits_the_devices() -> None:
    """AFS-L (scheduling/afs.py, rules 3-4). Unit 1: neither holds anything, A finishes
    first on one device (8 < 16): A. Then S is the job with the shorter remaining time and O
    the other; S keeps the unit only if (W(a+1) - W(a)) / W(a) > (W(b+1) - W(b)) / W(b+1):
    unit 2: A (8 < inf) 1/1 against B 1/1: not more, B (b=1); unit 3: A (8 < 16) 1/1
    against 1/2: A (a=2); unit 4: A (4 < 16) 1/2 against 1/2: B (b=2). A on 2 ends at 4;
    B has done 8 and runs its last 8 on 4: ends at 6 (one resize, 2 -> 4). Not SRTF (that
    would end A at 2)."""
    r = run("afs", LINEAR)
    np.testing.assert_allclose(r.finish, [4.0, 6.0])
    assert r.resizes.tolist() == [0, 1]


def test_optimus_with_sublinear_scaling() -> None:
    """W = 0, 1, 1.6, 2, 2.2. Gangs first; gains A 8 (1 - 1/1.6) = 3, B 16 * 0.375 = 6:
    B; then A 3 against B 16 (1/1.6 - 1/2) = 2: A. A on 2 ends at 8/1.6 = 5; B has done
    5 * 1.6 = 8 and runs its last 8 on 4 devices: 8 / 2.2, ends at 5 + 3.636 = 8.636."""
    r = run("optimus", SUBLINEAR)
    np.testing.assert_allclose(r.finish, [5.0, 5.0 + 8.0 / 2.2])


def test_afs_with_sublinear_scaling() -> None:
    """W = 0, 1, 1.6, 2, 2.2. Unit 1: A (8 < 16 on one device). Unit 2: A (8 < inf) gains
    0.6 / 1 = 0.6 against B's 1 / 1: B. Unit 3: A (8 < 16) 0.6 against B's 0.6 / 1.6 =
    0.375: A (a=2). Unit 4: A (5 < 16) 0.4 / 1.6 = 0.25 against 0.375: B (b=2). A on 2 ends
    at 8 / 1.6 = 5; B has done 8, its last 8 on 4: ends at 5 + 8 / 2.2."""
    r = run("afs", SUBLINEAR)
    np.testing.assert_allclose(r.finish, [5.0, 5.0 + 8.0 / 2.2])
    assert r.resizes.tolist() == [0, 1]


def test_afs_favours_the_short_job_where_optimus_weighs_lengths() -> None:
    """A has 2 units, B 100, linear scaling. Optimus: gangs, then gains A 2 (1 - 1/2) = 1
    against B 100 (1/2 - 1/3) = 16.7, then 100 (1/3 - 1/4) = 8.3 (after 100/2 = 50): B
    takes all three, A on 1 ends at 2, B has done 6 and runs 94 on 4: 2 + 23.5 = 25.5.
    AFS-L: as in the linear case above, 2 + 2: A ends at 2 / 2 = 1, B has done 2 and runs
    98 on 4: 1 + 24.5 = 25.5."""
    t = jobs([(0, 1, 2), (0, 1, 100)], min_gpus=[1, 1], max_gpus=[4, 4])
    rates = table_rates(LINEAR, 2)
    np.testing.assert_allclose(
        simulate(t, FOUR, make_policy("afs"), rates=rates).finish, [1.0, 25.5]
    )
    np.testing.assert_allclose(
        simulate(t, FOUR, make_policy("optimus"), rates=rates).finish, [2.0, 25.5]
    )


def test_a_device_that_adds_nothing_is_not_given() -> None:
    # flat scaling past 2 devices: neither policy hands out a third or fourth device to one job
    flat = [0.0, 1.0, 2.0, 2.0, 2.0]
    t = jobs([(0, 1, 8)], min_gpus=[1], max_gpus=[4])
    for name in ("afs", "optimus"):
        r = simulate(t, FOUR, make_policy(name), rates=table_rates(flat, 1))
        np.testing.assert_allclose(r.finish, [4.0])
        assert r.stints.devices.tolist() == [2], name


def test_rigid_jobs_run_on_their_gang_under_the_elastic_policies() -> None:
    # no bounds: A (2 GPUs, 4 s) and B (2 GPUs, 6 s) side by side on 4 devices
    t = jobs([(0, 2, 4), (0, 2, 6)])
    for name in ("afs", "optimus"):
        r = simulate(t, FOUR, make_policy(name), rates=table_rates([0, 1, 1, 1, 1], 2))
        np.testing.assert_allclose(r.finish, [4.0, 6.0])
        assert r.resizes.sum() == 0


@pytest.mark.parametrize("name", ["afs", "optimus"])
def test_the_interval_wakes_the_policy_and_the_parameter_is_checked(name: str) -> None:
    calls = []

    class Spy(Policy):
        preemptive = True

        def __init__(self) -> None:
            self.inner = make_policy(name, interval_s=5.0)
            self.name = name  # type: ignore[misc]

        def schedule(self, state: State) -> Decision:
            calls.append(state.now)
            return self.inner.schedule(state)

    t = jobs([(0, 1, 20)], min_gpus=[1], max_gpus=[1])
    simulate(t, FOUR, Spy(), rates=table_rates(LINEAR, 1))
    assert calls == [0.0, 5.0, 10.0, 15.0]
    errors = policy_errors(name, {"interval_s": 0}, "p")
    assert len(errors) == 1 and errors[0].startswith("p.params.interval_s")


# ---------------------------------------------------------------- the compiled allocations


def optimus_loop(home, lo, hi, rate, rem, left):  # type: ignore[no-untyped-def]
    """Optimus's allocation as it was first written: the argmax over every job per device."""
    m = len(home)
    rows = np.arange(m)
    alloc = np.zeros(m, dtype=np.int64)
    with np.errstate(divide="ignore"):
        first = np.where(
            rate[rows, lo] > 0, rem / np.where(rate[rows, lo] > 0, rate[rows, lo], 1), np.inf
        )
    for i in np.argsort(first, kind="stable").tolist():
        if np.isfinite(first[i]) and left[home[i]] >= lo[i]:
            alloc[i] = lo[i]
            left[home[i]] -= lo[i]
    while True:
        best, gain = -1, 0.0
        for i in range(m):
            a = alloc[i]
            if a == 0 or a + 1 > hi[i] or left[home[i]] < 1:
                continue
            now, more = rate[i, a], rate[i, a + 1]
            if more <= now:
                continue
            g = (rem[i] / now if now > 0 else np.inf) - rem[i] / more
            if g > gain:
                best, gain = i, g
        if best < 0:
            return alloc
        alloc[best] += 1
        left[home[best]] -= 1


def afs_loop(home, lo, hi, rate, rem, left):  # type: ignore[no-untyped-def]
    """AFS-L's allocation (scheduling/afs.py, rules 1-5) written out plainly."""
    m = len(home)
    alloc = [0] * m

    def w(i: int, n: int) -> float:
        return float(rate[i, n])

    def unit(i: int) -> int:
        return int(lo[i]) if alloc[i] == 0 else 1

    def rt(i: int, n: int) -> float:
        return rem[i] / w(i, n) if w(i, n) > 0 else np.inf

    def first(c: int, i: int) -> int:  # c comes before i
        s, o = (i, c) if rt(i, alloc[i]) < rt(c, alloc[c]) else (c, i)
        if alloc[s] == 0:
            return i if rt(i, unit(i)) < rt(c, unit(c)) else c
        a, b = alloc[s], alloc[o]
        gain_s = (w(s, a + unit(s)) - w(s, a)) / w(s, a)
        gain_o = (w(o, b + unit(o)) - w(o, b)) / w(o, b + unit(o))
        return s if gain_s > gain_o else o

    while True:
        cands = [
            i
            for i in range(m)
            if alloc[i] + unit(i) <= hi[i]
            and left[home[i]] >= unit(i)
            and w(i, alloc[i] + unit(i)) > w(i, alloc[i])
        ]
        if not cands:
            return np.asarray(alloc, dtype=np.int64)
        lead = cands[0]
        for i in cands[1:]:
            lead = first(lead, i)
        left[home[lead]] -= unit(lead)
        alloc[lead] += unit(lead)


def random_table(seed: int):  # type: ignore[no-untyped-def]
    """A planning table with coarse values (ties are common), rates that rise, stay flat
    or fall with the count and differ per job, two types and scarce devices."""
    rng = np.random.default_rng(seed)
    m = int(rng.integers(1, 13))
    home = rng.integers(0, 2, m).astype(np.int64)
    lo = rng.integers(1, 4, m).astype(np.int64)
    hi = lo + rng.integers(0, 5, m)
    k = int(hi.max())
    steps = rng.choice([0.0, 0.25, 0.5, 1.0, 1.0, -0.5], (m, k))
    rate = np.concatenate(
        [np.zeros((m, 1)), 1.0 + np.cumsum(np.abs(steps) * np.sign(steps), axis=1)], axis=1
    )
    rate = np.maximum(rate, 0.25)
    rate[:, 0] = 0.0
    rate[np.arange(k + 1)[None, :] > hi[:, None]] = 0.0
    if seed % 2:  # steps that more than double a rate (AFS's kernel takes its slow path)
        rate = rate**1.7
    rem = rng.choice([1.0, 2.0, 4.0, 8.0, 0.0], m)
    left = rng.integers(0, 9, 2).astype(np.int64)
    return home, lo, hi, rate, rem, left


@pytest.mark.parametrize("seed", range(200))
def test_allocation_kernels_match_their_plain_loops_bit_for_bit(seed: int) -> None:
    from clustersim import kernels

    home, lo, hi, rate, rem, left0 = random_table(seed)
    m = len(home)
    with np.errstate(divide="ignore"):
        first = np.where(
            rate[np.arange(m), lo] > 0,
            rem / np.where(rate[np.arange(m), lo] > 0, rate[np.arange(m), lo], 1),
            np.inf,
        )
    order = np.argsort(first, kind="stable").astype(np.int64)
    want_o_left, want_a_left = left0.copy(), left0.copy()
    want_o = optimus_loop(home, lo, hi, rate, rem, want_o_left)
    want_a = afs_loop(home, lo, hi, rate, rem, want_a_left)
    was = kernels.compiled_in_use()
    try:
        kernels.use_compiled()
        for k_opt, k_afs in [
            (kernels.optimus_allocate.py_func, kernels.afs_allocate.py_func),
            (kernels.optimus_allocate.dispatcher, kernels.afs_allocate.dispatcher),
        ]:
            left = left0.copy()
            assert k_opt(home, lo, hi, rate, rem, order, left).tolist() == want_o.tolist()
            assert left.tolist() == want_o_left.tolist()
            left = left0.copy()
            assert k_afs(home, lo, hi, rate, rem, left).tolist() == want_a.tolist()
            assert left.tolist() == want_a_left.tolist()
    finally:
        kernels.use_compiled(was)


def test_planning_rates_are_the_scaling_models_row_by_row() -> None:
    """State.rate_table (evaluated once per job and type, then reused) gives what rate_on
    gives for every count, also after a job was first planned on fewer devices."""
    from clustersim.elastic import Scaling
    from clustersim.perf import PerformanceModel

    cl = cluster([("A", 4), ("A", 4)])
    t = jobs([(0, 2, 10), (0, 4, 10), (0, 1, 10)], min_gpus=[1, 2, 1], max_gpus=[4, 8, 3])
    rates = PerformanceModel().prepare(t, cl)
    sc = Scaling(t, cl, rates.rate, rates)
    idx = np.array([0, 2], dtype=np.int64)
    sc.table(idx, np.zeros(2, dtype=np.int64), np.array([2, 3]))
    idx = np.array([0, 1, 2], dtype=np.int64)
    hi = np.array([4, 8, 3])
    got = sc.table(idx, np.zeros(3, dtype=np.int64), hi)
    assert got.shape == (3, 9)
    for i, j in enumerate(idx):
        n = np.arange(9)
        want = np.where(n <= hi[i], sc.rate(np.full(9, j), np.zeros(9, dtype=np.int64), n), 0.0)
        np.testing.assert_array_equal(got[i], want)
    assert (got[1, 1:] > 0).all() and got[1, 5] < 5 / 4 * got[1, 4]  # sub-linear across nodes


# ---------------------------------------------------------------- resizes


class _Resize(Policy):
    """Test policy: one job on ``first`` devices until t = 4, then on ``then``."""

    name = "test-resize"
    preemptive = True

    def __init__(self, first: int, then: int) -> None:
        self.first, self.then = first, then

    def schedule(self, state: State) -> Decision:
        a = state.active
        n = self.first if state.now < 4.0 else self.then
        return Decision(run=a, ndev=np.full(len(a), n), wake_at=4.0)


@pytest.mark.parametrize(("first", "then"), [(2, 4), (4, 2)])
def test_a_resize_costs_the_restore_delay_and_counts_as_a_resize(first: int, then: int) -> None:
    """24 units, linear. On ``first`` devices 0-4 the job does 4 * first; at 4 it is resized
    and stalls 10 s (the restore delay), then does the rest on ``then`` devices: 2 -> 4
    ends at 4 + 10 + 16/4 = 18, 4 -> 2 at 4 + 10 + 8/2 = 18."""
    t = jobs([(0, 2, 24)], min_gpus=[1], max_gpus=[4])
    r = simulate(t, FOUR, _Resize(first, then), rates=table_rates(LINEAR, 1, restore_s=10.0))
    expected = 4.0 + 10.0 + (24.0 - 4.0 * first) / then
    assert expected == 18.0
    np.testing.assert_allclose(r.finish, [expected])
    assert (r.resizes.tolist(), r.preemptions.tolist(), r.migrations.tolist()) == ([1], [0], [0])
    # device-seconds held include the stall: first * 4 + then * (finish - 4)
    np.testing.assert_allclose(r.attained, [first * 4.0 + then * (expected - 4.0)])
    assert summary(r)["resizes"] == 1


def test_a_decision_that_keeps_the_count_is_not_a_resize() -> None:
    t = jobs([(0, 2, 16)], min_gpus=[1], max_gpus=[4])
    r = simulate(t, FOUR, _Resize(2, 2), rates=table_rates(LINEAR, 1, restore_s=10.0))
    np.testing.assert_allclose(r.finish, [8.0])
    assert r.resizes.tolist() == [0]


def test_a_job_shrunk_out_of_the_run_is_a_preemption_not_a_resize() -> None:
    class Pause(Policy):
        name = "test-pause"
        preemptive = True

        def schedule(self, state: State) -> Decision:
            a = state.active
            if 4.0 <= state.now < 6.0:
                return Decision(run=a[:0], ndev=np.zeros(0, dtype=np.int64), wake_at=6.0)
            return Decision(run=a, ndev=np.full(len(a), 2), wake_at=4.0)

    t = jobs([(0, 2, 16)], min_gpus=[1], max_gpus=[4])
    r = simulate(t, FOUR, Pause(), rates=table_rates(LINEAR, 1, restore_s=1.0))
    # 0-4 on 2 (8 done), paused 4-6, resumed with a 1 s stall: 8 more on 2, ends at 11
    np.testing.assert_allclose(r.finish, [11.0])
    assert (r.resizes.tolist(), r.preemptions.tolist()) == ([0], [1])


@pytest.mark.parametrize("name", ["afs", "optimus"])
def test_elastic_policies_pay_for_their_resizes(name: str) -> None:
    """Optimus and AFS on the sub-linear pair with a 10 s restore delay: B's resize at A's
    completion stalls B 10 s, so B ends 10 s later than without it; A is unaffected."""
    free, paid = run(name, SUBLINEAR), run(name, SUBLINEAR, restore_s=10.0)
    np.testing.assert_allclose(paid.finish, free.finish + np.array([0.0, 10.0]))
    assert paid.resizes.tolist() == [0, 1]


@pytest.mark.parametrize("name", ["afs", "optimus"])
def test_elastic_policies_are_deterministic_and_never_overcommit(name: str) -> None:
    rng = np.random.default_rng(3)
    n = 40
    submit = np.sort(rng.uniform(0, 100, n)).round(1)
    gang = rng.choice([1, 2, 4], n)
    t = jobs(
        list(
            zip(
                submit.tolist(), gang.tolist(), rng.uniform(5, 60, n).round(1).tolist(), strict=True
            )
        ),
        min_gpus=np.maximum(gang // 2, 1),
        max_gpus=gang * 2,
    )
    cl = cluster([("A", 4), ("A", 4)])
    w = [0.0, *(n**0.8 for n in range(1, 9))]
    a = simulate(t, cl, make_policy(name, interval_s=30.0), rates=table_rates(w, n, 2.0))
    b = simulate(t, cl, make_policy(name, interval_s=30.0), rates=table_rates(w, n, 2.0))
    for f in ("finish", "first_start", "attained", "resizes", "preemptions"):
        np.testing.assert_array_equal(getattr(a, f), getattr(b, f))
    assert np.isfinite(a.finish).all()
    assert (a.seg_busy.sum(axis=(1, 2)) <= 8 + 1e-9).all()
    assert a.resizes.sum() > 0  # the trace does exercise resizing
    # every stint's device count is within the job's bounds
    st = a.stints
    for k in range(len(st.start)):
        same = (st.job == st.job[k]) & (st.start == st.start[k])
        held = int(st.devices[same].sum())
        j = int(st.job[k])
        assert t.min_gpus[j] <= held <= t.max_gpus[j]


# ---------------------------------------------------------------- bounds rules


def test_rule_x_half_to_x_two() -> None:
    t = jobs([(0, 1, 1), (0, 3, 1), (0, 8, 1), (0, 16, 1)])
    out, notes = apply_elastic(t, "x0.5-x2", cluster([("A", 8), ("A", 8)]))
    # min ceil(n/2); max 2n capped at the 16 devices of the largest type, never below n
    assert out.min_gpus.tolist() == [1, 2, 4, 8]
    assert out.max_gpus.tolist() == [2, 6, 16, 16]
    assert out.num_gpus.tolist() == [1, 3, 8, 16]
    assert "4 of 4 jobs" in notes[0]


def test_rule_counts_and_trace_bounds_kept() -> None:
    t = jobs([(0, 4, 1), (0, 4, 1)], min_gpus=[4, 2], max_gpus=[4, 4])
    out, notes = apply_elastic(t, "1-8")
    assert (out.min_gpus.tolist(), out.max_gpus.tolist()) == ([1, 2], [8, 4])
    assert "1 jobs were elastic in the trace" in notes[1]


def test_no_rule_changes_nothing() -> None:
    t = jobs([(0, 4, 1)])
    for rule in (None, "", "none"):
        out, notes = apply_elastic(t, rule)
        assert out is t and notes == []


@pytest.mark.parametrize("bad", ["x2", "x0-x2", "x0.5-x0.5", "0-4", "2-0", "a-b", "x1.5-x3"])
def test_bad_rules_are_refused_saying_what_is_accepted(bad: str) -> None:
    with pytest.raises(ClustersimError, match="elastic rule"):
        parse_rule(bad)


def test_the_generator_fills_bounds_without_changing_the_draws(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from clustersim.synth import gavel_model, generate, write_jobs_csv
    from clustersim.traces import read_trace

    plain = generate(gavel_model(), n_jobs=50, seed=4)
    elastic = generate(gavel_model(), n_jobs=50, seed=4, elastic="x0.5-x2")
    np.testing.assert_array_equal(plain.work, elastic.work)
    np.testing.assert_array_equal(plain.num_gpus, elastic.num_gpus)
    assert not plain.elastic.any()
    n = elastic.num_gpus
    np.testing.assert_array_equal(elastic.min_gpus, np.ceil(n / 2).astype(int))
    np.testing.assert_array_equal(elastic.max_gpus, 2 * n)
    # written and read back: the bounds survive (an upload of it is elastic)
    path = tmp_path / "w.csv"
    write_jobs_csv(elastic, str(path))
    back, _ = read_trace(str(path), "csv")
    np.testing.assert_array_equal(back.max_gpus, elastic.max_gpus)


def test_cli_run_takes_an_elastic_rule(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    import json

    from clustersim.cli import main

    path = tmp_path / "t.csv"
    path.write_text("job_id,submit_time,num_gpus,work\na,0,2,400\nb,0,2,800\n")
    args = ["run", "--cluster", "v100:4", "--trace", str(path), "--policy", "optimus", "--json"]
    assert main([*args, "--restore-s", "0"]) == 0
    rigid = json.loads(capsys.readouterr().out)
    assert main([*args, "--restore-s", "0", "--elastic", "1-4"]) == 0
    grown = json.loads(capsys.readouterr().out)
    assert rigid["resizes"] == 0 and grown["resizes"] >= 1
    assert grown["jct_mean_s"] < rigid["jct_mean_s"]
    assert main([*args, "--elastic", "x3-x1"]) == 2
    assert "elastic rule 'x3-x1'" in capsys.readouterr().err


@pytest.mark.parametrize("name", ["afs", "optimus"])
def test_a_gang_larger_than_its_fastest_type_goes_to_a_type_that_holds_it(name: str) -> None:
    # T0 is twice as fast but has 2 devices; a rigid 3-device job of 30 units runs on T1 (4
    # devices, 1 unit/s): 0-30. (It once waited for ever for T0.)
    from tests.simple import cluster, fixed_rates, jobs

    cl = cluster([("T0", 2), ("T1", 4)])
    t = jobs([(0.0, 3, 30.0)])
    r = simulate(t, cl, make_policy(name), rates=fixed_rates(t, cl, speed=[2.0, 1.0]))
    assert r.finish.tolist() == [30.0]


# ---------------------------------------------------------------- device count series


def test_device_counts_follow_the_stints_by_hand() -> None:
    """Job 0: 2 devices on node 0 over 0-4, then resized to 4 (2 + 2 on two nodes) 4-10.
    Job 1: 1 device 2-5, suspended, 1 device again 7-9; its stints 7-8 and 8-9 (a
    placement change at 8 on as many devices) are one stretch at 1 device. Job 2: rigid,
    3 devices 1-6."""
    from clustersim.elastic import device_counts, resized_jobs

    job = np.array([0, 0, 0, 1, 1, 1, 2])
    dev = np.array([2, 2, 2, 1, 1, 1, 3])
    start = np.array([0.0, 4.0, 4.0, 2.0, 7.0, 8.0, 1.0])
    end = np.array([4.0, 10.0, 10.0, 5.0, 8.0, 9.0, 6.0])
    j, t, n = device_counts(job, dev, start, end)
    got = list(zip(j.tolist(), t.tolist(), n.tolist(), strict=True))
    assert got == [
        (0, 0.0, 2),
        (0, 4.0, 4),
        (0, 10.0, 0),
        (1, 2.0, 1),
        (1, 5.0, 0),
        (1, 7.0, 1),
        (1, 9.0, 0),
        (2, 1.0, 3),
        (2, 6.0, 0),
    ]
    # only job 0 ran on two positive counts one after the other
    assert resized_jobs(j, n).tolist() == [0]
    assert resized_jobs(j[:0], n[:0]).tolist() == []


def test_the_device_counts_of_an_elastic_run_match_its_resizes() -> None:
    r = run("optimus", SUBLINEAR)
    from clustersim.elastic import device_counts, resized_jobs

    j, t, n = device_counts(r.stints.job, r.stints.devices, r.stints.start, r.stints.end)
    # A on 2 devices 0-5; B on 2 then, at A's completion, on 4 until 5 + 8/2.2
    np.testing.assert_allclose(t[j == 1], [0.0, 5.0, 5.0 + 8.0 / 2.2])
    assert n[j == 1].tolist() == [2, 4, 0] and n[j == 0].tolist() == [2, 0]
    assert resized_jobs(j, n).tolist() == [1]
