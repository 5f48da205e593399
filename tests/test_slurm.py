"""Slurm (``scheduling.slurm``): hand-worked EASY-backfill and fair-share traces, the factor
formulas, and parameter checks. Every rate is 1 work unit per second, so work is seconds."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from clustersim.engine import simulate
from scheduling.params import policy_errors
from scheduling.registry import make_policy
from scheduling.slurm import Slurm, classic_factor, easy_reservation, fair_tree_factor
from tests.simple import cluster, fixed_rates, jobs


def _finish(
    devices: int, rows: list[tuple[float, int, float]], users: list[str] | None = None, **p: Any
) -> list[float]:
    cl = cluster([("G", devices)])
    extra: dict[str, Any] = {} if users is None else {"user": users}
    table = jobs(rows, **extra)
    r = simulate(table, cl, make_policy("slurm", **p), rates=fixed_rates(table, cl))
    return [float(x) for x in r.finish]


# ---------------------------------------------------------------- EASY backfill by hand

# One node of 4 devices. A: 2 devices, 100 s, at 0. B: 4 devices, 50 s, at 1. C: 2 devices,
# 50 s, at 2. B outranks C (size factor 4/4 against 2/4, one user). At 1 B does not fit
# (2 free): its reservation is A's end, shadow 100, extra 4 - 4 = 0. At 2 C fits now and its
# limit ends at 2 + 50 = 52 <= 100: backfilled, 2-52. A ends at 100, B runs 100-150.
EASY = [(0.0, 2, 100.0), (1.0, 4, 50.0), (2.0, 2, 50.0)]


def test_a_short_job_is_backfilled_past_a_blocked_wide_one() -> None:
    assert _finish(4, EASY) == [100.0, 150.0, 52.0]


def test_without_backfill_the_short_job_waits_behind_the_wide_one() -> None:
    # sched/builtin: C waits for B, 150-200
    assert _finish(4, EASY, backfill=False) == [100.0, 150.0, 200.0]


def test_a_job_longer_than_the_shadow_time_is_not_backfilled() -> None:
    # C at 20 with 90 s: 20 + 90 = 110 > 100. At 100 B (higher priority) runs 100-150, C
    # 150-240.
    rows = [(0.0, 2, 100.0), (1.0, 4, 50.0), (20.0, 2, 90.0)]
    assert _finish(4, rows) == [100.0, 150.0, 240.0]


def test_overestimated_limits_let_a_job_backfill_and_delay_the_reservation() -> None:
    # Limits twice the run times: A's ends at 200 (the shadow), C's at 20 + 180 = 200 <= 200:
    # C is backfilled, runs 20-110 and holds 2 devices past A's real end (100), so B starts
    # at 110 and ends at 160 (Mu'alem & Feitelson's effect of inaccurate estimates).
    rows = [(0.0, 2, 100.0), (1.0, 4, 50.0), (20.0, 2, 90.0)]
    assert _finish(4, rows, overestimate=2.0) == [100.0, 160.0, 110.0]


def test_a_long_job_is_backfilled_on_the_extra_devices_only_while_they_last() -> None:
    # One node of 6. A: 2 devices 100 s at 0. B: 5 devices 50 s at 1: shadow 100, extra
    # 6 - 5 = 1. C: 1 device 500 s at 2 ends after the shadow but takes the one extra device:
    # backfilled, 2-502. D: 1 device 500 s at 3: no extra left, waits. At 100 A ends: 5 free,
    # B runs 100-150; then D 150-650.
    rows = [(0.0, 2, 100.0), (1.0, 5, 50.0), (2.0, 1, 500.0), (3.0, 1, 500.0)]
    assert _finish(6, rows) == [100.0, 150.0, 502.0, 650.0]


# ---------------------------------------------------------------- fair share with decay

# One device; only the fair-share factor counts. W (u1, 100 s) and X (u2, 50 s) at 0: no usage
# yet, a tie, so W (earlier index) runs 0-100, then X 100-150. Y (u1) and Z (u2), 10 s each,
# arrive at 120. At 150, with half-life h, the decayed usages are
#   u1 = h/ln2 (2^(-50/h) - 2^(-150/h)),  u2 = h/ln2 (1 - 2^(-50/h)).
# h = 1 day: u1 = 99.92 > u2 = 49.99, so u2 ranks first: Z 150-160, Y 160-170.
# h = 10 s: u1 = 0.45 < u2 = 13.98, so u1 ranks first: Y 150-160, Z 160-170.
FS = [(0.0, 1, 100.0), (0.0, 1, 50.0), (120.0, 1, 10.0), (120.0, 1, 10.0)]
FS_USERS = ["u1", "u2", "u1", "u2"]
ONLY_FS = {"weight_age": 0.0, "weight_size": 0.0}


@pytest.mark.parametrize("fairshare", ["fair-tree", "classic"])
def test_the_user_with_less_decayed_usage_goes_first(fairshare: str) -> None:
    got = _finish(1, FS, FS_USERS, fairshare=fairshare, **ONLY_FS)
    assert got == [100.0, 150.0, 170.0, 160.0]


@pytest.mark.parametrize("fairshare", ["fair-tree", "classic"])
def test_a_short_half_life_forgets_older_usage(fairshare: str) -> None:
    got = _finish(1, FS, FS_USERS, fairshare=fairshare, decay_half_life_s=10.0, **ONLY_FS)
    assert got == [100.0, 150.0, 160.0, 170.0]


def test_the_decayed_usages_are_those_worked_by_hand() -> None:
    def usage(h: float) -> tuple[float, float]:
        k = h / math.log(2.0)
        return k * (2 ** (-50 / h) - 2 ** (-150 / h)), k * (1 - 2 ** (-50 / h))

    assert usage(86400.0)[0] == pytest.approx(99.92, abs=0.01)
    assert usage(86400.0)[1] == pytest.approx(49.99, abs=0.01)
    assert usage(10.0)[0] == pytest.approx(0.45, abs=0.01)
    assert usage(10.0)[1] == pytest.approx(13.98, abs=0.01)
    # and the policy's own account, read at the decision at 150
    cl = cluster([("G", 1)])
    table = jobs(FS, user=FS_USERS)
    seen: list[np.ndarray] = []
    pol = make_policy("slurm", decay_half_life_s=10.0, **ONLY_FS)
    orig = pol.schedule

    def spy(state: Any) -> Any:
        d = orig(state)
        if state.now == 150.0:
            seen.append(pol._usage.copy())  # type: ignore[attr-defined]
        return d

    pol.schedule = spy  # type: ignore[method-assign]
    simulate(table, cl, pol, rates=fixed_rates(table, cl))
    assert seen and seen[0] == pytest.approx(np.array(usage(10.0)), rel=1e-9)


# ---------------------------------------------------------------- the formulas


def test_fair_tree_ranks_users_by_level_fairshare_with_ties_on_one_rank() -> None:
    shares = np.full(4, 0.25)
    # usage shares 0, 0.2, 0.4, 0.4: LF inf, 1.25, 0.625, 0.625 -> ranks 4, 3, 2, 2 of 4
    got = fair_tree_factor(shares, np.array([0.0, 1.0, 2.0, 2.0]))
    assert got.tolist() == [1.0, 0.75, 0.5, 0.5]


def test_classic_factor_is_two_to_the_minus_usage_over_shares() -> None:
    got = classic_factor(np.array([0.5, 0.5]), np.array([3.0, 1.0]))
    assert got == pytest.approx([2 ** (-0.75 / 0.5), 2 ** (-0.25 / 0.5)])
    assert classic_factor(np.array([0.5, 0.5]), np.zeros(2)).tolist() == [1.0, 1.0]


def test_easy_reservation_walks_the_running_jobs_by_expected_end() -> None:
    # need 5 of 8, 1 free; running: 2 devices until 30, 3 until 10, 2 until 20
    s, x = easy_reservation(0.0, 5, 1, np.array([30.0, 10.0, 20.0]), np.array([2, 3, 2]))
    assert (s, x) == (20.0, 1)  # 1 + 3 (at 10) = 4, + 2 (at 20) = 6 >= 5: extra 1
    assert easy_reservation(5.0, 9, 1, np.array([30.0]), np.array([2])) == (math.inf, 0)


# ---------------------------------------------------------------- parameters


def test_bad_parameters_are_refused_naming_them() -> None:
    def errors(params: dict[str, Any]) -> str:
        return " ".join(policy_errors("slurm", params, "policies[0]"))

    assert "policies[0].params.overestimate" in errors({"overestimate": 0.5})
    assert "policies[0].params.fairshare" in errors({"fairshare": "fifo"})
    assert "policies[0].params.decay_half_life_s" in errors({"decay_half_life_s": 0})
    assert "policies[0].params.weight_age" in errors({"weight_age": -1.0})
    assert errors({"weight_age": 10.0, "fairshare": "classic"}) == ""


# ---------------------------------------------------------------- the compiled pass


class _NumpySlurm(Slurm):
    """The scheduling pass in numpy and Python (the reference of the kernel)."""

    use_kernel = False


def _random_trace(seed: int) -> tuple[Any, Any]:
    rng = np.random.default_rng(seed)
    n = 150
    rows = [
        (float(t), int(g), float(w))
        for t, g, w in zip(
            np.sort(rng.uniform(0, 3000, n)),
            rng.choice([1, 1, 2, 3, 4, 8, 12], n),
            rng.uniform(10, 900, n),
            strict=True,
        )
    ]
    users = rng.choice(["u1", "u2", "u3", "u4", "u5"], n).tolist()
    prio = rng.choice([0, 0, 1, 3], n).tolist()
    return jobs(rows, user=users, priority=prio), cluster([("G", 8), ("G", 4), ("H", 4), ("H", 2)])


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize(
    "params",
    [
        {},
        {"backfill": False},
        {"overestimate": 3.0, "fairshare": "classic"},
        {"favor_small": True, "weight_qos": 2000.0, "decay_half_life_s": 600.0},
        {"max_age_s": 300.0, "weight_age": 20000.0, "overestimate": 1.5},
    ],
)
def test_the_pass_kernel_decides_as_the_numpy_path(seed: int, params: Any) -> None:
    """Same finish times (bit for bit), stints and statistics with the kernel (compiled and
    plain) as with the numpy path, on random traces over two types of different speeds
    (some jobs wider than the slower type, some that cannot run on it)."""
    from clustersim import kernels

    t, cl = _random_trace(seed)
    speed = fixed_rates(t, cl, speed=[1.0, 2.0])
    speed.rate[np.random.default_rng(seed).random(len(t)) < 0.2, 1] = 0.0
    slow = _NumpySlurm(**params)
    ref = simulate(t, cl, slow, rates=speed)
    assert ref.policy_stats["backfilled"] > 0 or params.get("backfill") is False
    for compiled in (False, True):
        was = kernels.compiled_in_use()
        kernels.use_compiled(compiled)
        try:
            fast = make_policy("slurm", **params)
            got = simulate(t, cl, fast, rates=speed)
        finally:
            kernels.use_compiled(was)
        assert np.array_equal(got.finish, ref.finish, equal_nan=True)
        assert got.stints.job.tolist() == ref.stints.job.tolist()
        assert got.stints.node.tolist() == ref.stints.node.tolist()
        assert got.policy_stats == ref.policy_stats
        # the decayed usages too, bit for bit
        assert fast._usage.tobytes() == slow._usage.tobytes()  # type: ignore[attr-defined]
