"""The fast engine against the slow reference engine, and property tests, on random traces."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from clustersim.engine import simulate
from scheduling.registry import POLICIES, make_policy
from scheduling.wrapped import PowerWrapper
from tests.reference_engine import reference_simulate
from tests.simple import cluster, fixed_rates, jobs


@st.composite
def scenarios(draw):  # type: ignore[no-untyped-def]
    n_types = draw(st.integers(1, 2))
    devices = [draw(st.integers(1, 4)) for _ in range(n_types)]
    cl = cluster([(f"T{i}", d) for i, d in enumerate(devices)])
    n = draw(st.integers(1, 9))
    rows = []
    for _ in range(n):
        rows.append(
            (
                float(draw(st.integers(0, 30))),
                draw(st.integers(1, 4)),
                float(draw(st.integers(1, 40))),
            )
        )
    prio = [draw(st.integers(0, 2)) for _ in range(n)]
    t = jobs(rows, priority=prio)
    speed = [draw(st.sampled_from([1.0, 2.0, 0.5])) for _ in range(n_types)]
    restore = draw(st.sampled_from([0.0, 0.0, 1.5]))
    # the reference engine has no power model (clustersim.power; tests/test_power.py)
    # (pollux was left out once: two tied jobs finished in swapped order because the reference
    # engine's State had no job_rates, so it planned other device counts than the gang by
    # scaling linearly while the fast engine asked the run's rates; pollux's fair-share base
    # is a count other than the gang. Both now plan with the run's rates.)
    name = draw(
        st.sampled_from(sorted(n for n, c in POLICIES.items() if not issubclass(c, PowerWrapper)))
    )
    return t, cl, speed, restore, name


# short rounds and thresholds so that the small random traces exercise them
PARAMS: dict[str, dict] = {
    "tiresias": {"thresholds": (7.0,)},
    "las": {"quantum_s": 5.0},
    "gavel-fifo": {"round_s": 5.0, "reset_interval_s": 12.0},
    "gavel-las": {"round_s": 5.0, "reset_interval_s": 12.0},
    "themis": {"lease_s": 5.0},
}


@settings(max_examples=250, deadline=None)
@given(scenarios())
def test_fast_engine_matches_the_reference(sc) -> None:  # type: ignore[no-untyped-def]
    t, cl, speed, restore, name = sc
    params = PARAMS.get(name, {})
    rates = fixed_rates(t, cl, speed=speed, restore_s=restore)
    fast = simulate(t, cl, make_policy(name, **params), rates=rates)
    ref = reference_simulate(t, cl, make_policy(name, **params), rates)
    np.testing.assert_allclose(fast.finish, ref["finish"], rtol=1e-9, atol=1e-6)
    np.testing.assert_allclose(fast.first_start, ref["first_start"], rtol=1e-9, atol=1e-6)
    assert fast.preemptions.tolist() == [int(x) for x in ref["preemptions"]]
    assert fast.resizes.tolist() == [int(x) for x in ref["resizes"]]


@settings(max_examples=100, deadline=None)
@given(scenarios())
def test_properties_hold_on_random_traces(sc) -> None:  # type: ignore[no-untyped-def]
    t, cl, speed, restore, name = sc
    rates = fixed_rates(t, cl, speed=speed, restore_s=restore)
    policy = make_policy(name, **PARAMS.get(name, {}))
    r = simulate(t, cl, policy, rates=rates)
    ok = r.drop_reason == ""
    # every admitted job finishes exactly once
    assert np.isfinite(r.finish[ok]).all() and np.isnan(r.finish[~ok]).all()
    # device-seconds used <= device-seconds available
    dt = np.diff(r.seg_t)
    used = (r.seg_busy.sum(axis=(1, 2)) * dt).sum()
    span = r.seg_t[-1] - r.seg_t[0]
    assert used <= cl.total_devices * span + 1e-6
    assert np.isclose(used, r.device_time.sum())
    # work done equals work asked (resumes that stall do not count as progress)
    done_work = (r.type_time * np.asarray(speed)).sum(axis=1)
    assert (done_work[ok] >= t.work[ok] - 1e-6).all()
    # (a splicing policy's time-sliced jobs do less per held second: tests/test_singularity.py)
    if not (restore if policy.resume_s is None else policy.resume_s) and policy.splicing is None:
        np.testing.assert_allclose(done_work[ok], t.work[ok], rtol=1e-9)
