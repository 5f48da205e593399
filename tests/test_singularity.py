"""Singularity (scheduling/singularity.py) and replica splicing (clustersim.elastic.splice):
hand-worked traces, the rate model, and a property: work is conserved across resizes."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clustersim.elastic import SpliceConfig, SplicedRates, splice, splice_counts
from clustersim.engine import simulate
from clustersim.errors import ClustersimError
from clustersim.result import DROP_TOO_LARGE
from scheduling.registry import make_policy
from scheduling.singularity import admit
from tests.simple import cluster, fixed_rates, jobs

FOUR = cluster([("A", 4)])


def run(t, **params):  # type: ignore[no-untyped-def]
    params.setdefault("restore_s", 0.0)
    return simulate(t, FOUR, make_policy("singularity", **params), rates=fixed_rates(t, FOUR))


# ------------------------------------------------------------------ hand-worked traces
# Rates: 1 work unit/s for a job's full gang of w devices (tests.simple.fixed_rates), so on
# d < w devices d / w × (1 − overhead) units/s.


def test_a_world_size_4_job_is_spliced_2_way_and_grows_back() -> None:
    # A: w=4, 100 units at t=0; B: w=2, 30 units at t=20; one tier, 4 devices.
    # t=0: A alone: admitted on lo=1 (4/4, max_splice 4), grows to 4: rate 1.
    # t=20: A did 20, 80 left. Admit A (1) and B (1), 2 left; A grows to the largest divisor
    #   of 4 within 1+2=3: 2 (2-way spliced, rate 2/4 = 0.5), 1 left; B grows to 2: rate 1.
    # B finishes at 20 + 30/1 = 50. A did 30 × 0.5 = 15 by then: 65 left.
    # t=50: A grows back to 4: 65/1 → finishes at 115.
    t = jobs([(0.0, 4, 100.0), (20.0, 2, 30.0)])
    r = run(t, splice_overhead=0.0)
    np.testing.assert_allclose(r.finish, [115.0, 50.0])
    assert r.resizes.tolist() == [2, 0]  # 4 → 2 at t=20, 2 → 4 at t=50
    assert r.preemptions.tolist() == [0, 0]


def test_the_splice_overhead_slows_only_the_spliced_time() -> None:
    # As above with overhead 0.1: A on 2 devices runs at 0.5 × 0.9 = 0.45.
    # 20..50: A does 30 × 0.45 = 13.5, so 100 - 20 - 13.5 = 66.5 left; at 4 devices from 50:
    # finishes at 50 + 66.5 = 116.5. B is never spliced: 50.
    t = jobs([(0.0, 4, 100.0), (20.0, 2, 30.0)])
    r = run(t, splice_overhead=0.1)
    np.testing.assert_allclose(r.finish, [116.5, 50.0])


def test_each_resize_pays_the_restore_delay() -> None:
    # restore 5 s, overhead 0. t=20: A resized to 2: stalls 20..25, then 0.5/s; B starts
    # fresh (no delay) and finishes at 50. A by 50: 80 - 25 × 0.5 = 67.5 left.
    # t=50: A resized to 4: stalls 50..55, then 67.5 at 1/s: finishes at 122.5.
    t = jobs([(0.0, 4, 100.0), (20.0, 2, 30.0)])
    r = run(t, splice_overhead=0.0, restore_s=5.0)
    np.testing.assert_allclose(r.finish, [122.5, 50.0])
    assert r.resizes.tolist() == [2, 0]


def test_a_higher_tier_preempts_when_the_lower_cannot_shrink_enough() -> None:
    # A: priority 0, w=4, 100 units; B: priority 1, w=4, 40 units at t=20.
    # t=20: tier 1 first: B admitted on 1, grows to 4; tier 0: A's lo=1 does not fit: A is
    # preempted with 80 left. B finishes at 20 + 40 = 60; A resumes on 4: 60 + 80 = 140.
    t = jobs([(0.0, 4, 100.0), (20.0, 4, 40.0)], priority=[0, 1])
    r = run(t, splice_overhead=0.0)
    np.testing.assert_allclose(r.finish, [140.0, 60.0])
    assert r.preemptions.tolist() == [1, 0]
    # without tiers the two share: t=20: both on 2 (0.5/s each); B's 40 take 80 s: 100.
    # A by 100: 80 - 40 = 40 left, back on 4: 140.
    r = run(t, splice_overhead=0.0, tiers=False)
    np.testing.assert_allclose(r.finish, [140.0, 100.0])
    assert r.preemptions.tolist() == [0, 0]
    assert r.resizes.tolist() == [2, 0]


def test_a_lower_tier_shrinks_before_it_is_preempted() -> None:
    # A: priority 0, w=4, 100 units; B: priority 1, w=2, 30 units at t=20.
    # t=20: tier 1: B on 1, grows to 2, 2 left; tier 0: A on 1, grows to 2 (2-way spliced).
    # As in the first case: B at 50, A at 115.
    t = jobs([(0.0, 4, 100.0), (20.0, 2, 30.0)], priority=[0, 1])
    r = run(t, splice_overhead=0.0)
    np.testing.assert_allclose(r.finish, [115.0, 50.0])
    assert r.preemptions.tolist() == [0, 0]


def test_max_splice_bounds_the_time_slicing() -> None:
    # max_splice 1: no splicing, so a rigid FIFO within the tier. A (w=4, 100) holds all 4;
    # B (w=2, 30) waits until 100 and finishes at 130.
    t = jobs([(0.0, 4, 100.0), (20.0, 2, 30.0)])
    r = run(t, splice_overhead=0.0, max_splice=1)
    np.testing.assert_allclose(r.finish, [100.0, 130.0])
    assert r.resizes.tolist() == [0, 0]


def test_a_world_size_larger_than_the_cluster_runs_spliced() -> None:
    # w=8 on 4 devices: counts {2, 4, 8} (max_splice 4), so it runs on 4, 2-way spliced,
    # at 4/8 = 0.5/s: 50 units take 100 s.
    t = jobs([(0.0, 8, 50.0)])
    r = run(t, splice_overhead=0.0)
    np.testing.assert_allclose(r.finish, [100.0])


def test_a_job_that_cannot_run_even_spliced_is_dropped_as_too_large() -> None:
    # w=8 with max_splice 1 needs 8 devices, the cluster has 4: dropped, not waited for.
    t = jobs([(0.0, 8, 50.0), (0.0, 2, 10.0)])
    r = run(t, splice_overhead=0.0, max_splice=1)
    assert r.drop_reason.tolist() == [DROP_TOO_LARGE, ""]
    np.testing.assert_allclose(r.finish[1], 10.0)


# ------------------------------------------------------------------ the rules' parts


def test_counts_are_divisors_within_the_splice_limit() -> None:
    assert splice_counts(8, 1, 4).tolist() == [2, 4, 8]
    assert splice_counts(6, 1, 4).tolist() == [2, 3, 6]
    assert splice_counts(12, 1, 4).tolist() == [3, 4, 6, 12]
    assert splice_counts(12, 5, 4).tolist() == [6, 12]
    assert splice_counts(1, 1, 4).tolist() == [1]
    assert splice_counts(7, 1, 4).tolist() == [7]  # a prime world size cannot be spliced


@settings(max_examples=200, deadline=None)
@given(
    lo=st.lists(st.integers(1, 8), min_size=0, max_size=30),
    left=st.integers(0, 40),
)
def test_admit_matches_the_plain_loop(lo: list[int], left: int) -> None:
    take, rest = admit(np.asarray(lo, dtype=np.int64), left)
    want, free = [], left
    for x in lo:  # rule 3 written plainly
        want.append(x <= free)
        if x <= free:
            free -= x
    assert take.tolist() == want
    assert rest == free


def test_spliced_rates_use_the_world_size_rate_over_the_placement_link() -> None:
    from clustersim.perf import PerformanceModel
    from clustersim.presets import preset

    cl = preset("philly")
    t = jobs([(0.0, 8, 1000.0), (0.0, 1, 10.0)])
    inner = PerformanceModel().prepare(t, cl)
    t2, rates = splice(t, inner, SpliceConfig(0.03, 8))
    assert isinstance(rates, SplicedRates)
    assert t2.min_gpus.tolist() == [1, 1] and t2.max_gpus.tolist() == [8, 1]
    j = np.array([0, 0, 0, 0, 1])
    ty = np.zeros(5, dtype=np.int64)
    nd = np.array([8, 4, 2, 1, 1])
    link = np.array([50.0, 50.0, 5.0, np.inf, np.inf])
    got = rates.placement_rate(j, ty, nd, link)
    full = inner.placement_rate(j, ty, np.array([8, 8, 8, 8, 1]), link)
    np.testing.assert_allclose(got, full * np.array([1, 0.5 * 0.97, 0.25 * 0.97, 0.97 / 8, 1]))
    # a slower link slows a spliced job as it would its full gang
    slow = rates.placement_rate(j[:1], ty[:1], np.array([4]), np.array([5.0]))
    assert slow[0] < got[1]
    with pytest.raises(ClustersimError, match="splice_overhead"):
        splice(t, inner, SpliceConfig(1.0, 4))


def test_elastic_bounds_of_a_trace_are_kept() -> None:
    # min_gpus 2 of a w=4 job: counts {2, 4}; a w=4 rigid job may go to 1.
    t = jobs([(0.0, 4, 100.0), (0.0, 4, 100.0)], min_gpus=[2, 4], max_gpus=[4, 4])
    t2, _ = splice(t, fixed_rates(t, FOUR), SpliceConfig(0.0, 4))
    assert t2.min_gpus.tolist() == [2, 1]
    # both admitted: job 0 on 2, job 1 on 1; growth: job 0 to 2 + 1 = 3 → 2 (no change),
    # job 1 to 1 + 1 = 2: 2 and 2, each at 0.5/s: both finish at 200.
    r = run(t, splice_overhead=0.0)
    np.testing.assert_allclose(r.finish, [200.0, 200.0])


def test_bad_parameters_are_refused() -> None:
    with pytest.raises(ValueError, match="splice_overhead"):
        make_policy("singularity", splice_overhead=1.0)
    from scheduling.params import policy_errors

    errs = policy_errors("singularity", {"max_splice": 0}, "policies[0]")
    assert errs and "max_splice" in errs[0]
    errs = policy_errors("singularity", {"splice_overhead": -0.1}, "policies[0]")
    assert errs and "splice_overhead" in errs[0]


# ------------------------------------------------------------------ work across resizes


@settings(max_examples=40, deadline=None)
@given(
    rows=st.lists(
        st.tuples(
            st.integers(0, 300),  # submit
            st.sampled_from([1, 2, 3, 4, 6, 8]),  # world size
            st.integers(5, 200),  # work
            st.integers(0, 2),  # tier
        ),
        min_size=1,
        max_size=12,
    ),
    overhead=st.sampled_from([0.0, 0.03, 0.25]),
    max_splice=st.integers(1, 8),
    restore=st.sampled_from([0.0, 7.0]),
)
def test_work_is_conserved_across_resizes(
    rows: list[tuple[int, int, int, int]], overhead: float, max_splice: int, restore: float
) -> None:
    """Every job does exactly its work: over its stints on d devices (each a divisor of w,
    w / d <= max_splice), at d / w × (1 − overhead) of its rate when spliced, minus the
    restore delay that every stint but its first begins with (a resume or a resize)."""
    cl = cluster([("A", 4), ("A", 2)], racks=[0, 0])
    rows.sort()
    t = jobs([(float(s), g, float(w)) for s, g, w, _ in rows], priority=[p for *_, p in rows])
    pol = make_policy(
        "singularity", splice_overhead=overhead, max_splice=max_splice, restore_s=restore
    )
    r = simulate(t, cl, pol, rates=fixed_rates(t, cl))
    done = np.isfinite(r.finish)
    # a job runs unless even its smallest count exceeds the 6 devices (then dropped)
    small = np.array([splice_counts(int(g), 1, max_splice)[0] for g in t.num_gpus])
    assert (done == (small <= 6)).all()
    assert (r.drop_reason[~done] == DROP_TOO_LARGE).all()
    s = r.stints
    key = s.job * 1_000_003 + np.searchsorted(np.unique(s.start), s.start)
    _, first, inv = np.unique(key, return_index=True, return_inverse=True)
    d = np.bincount(inv, weights=s.devices).astype(np.int64)
    j, start, end = s.job[first], s.start[first], s.end[first]
    w = t.num_gpus[j]
    assert (w % d == 0).all() and (w // d <= max_splice).all() and (d <= w).all()
    rate = np.where(d < w, d / w * (1.0 - overhead), 1.0)
    order = np.lexsort((start, j))
    j, start, end, rate = j[order], start[order], end[order], rate[order]
    later = np.zeros(len(j), dtype=bool)
    later[1:] = j[1:] == j[:-1]  # not the job's first stint: it paid the restore delay
    busy = np.maximum(end - start - np.where(later, restore, 0.0), 0.0)
    work = np.bincount(j, weights=busy * rate, minlength=len(t))
    np.testing.assert_allclose(work[done], t.work[done], rtol=1e-9, atol=1e-6)
