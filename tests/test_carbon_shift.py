"""Carbon-aware shifting: the forecast, the three policies on hand-worked traces, metrics."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from clustersim.carbon import load_zone
from clustersim.cluster import Region
from clustersim.engine import EngineOptions, seed_matters, simulate
from clustersim.forecast import CarbonForecast, region_series
from clustersim.metrics import carbon_savings, summary
from scheduling.carbon_shift import deferrable_mask
from scheduling.carbon_wait import plan_release
from scheduling.registry import make_policy
from tests.simple import cluster, fixed_rates, jobs

H = 3600.0


def zoned(cl, *zones: str):  # type: ignore[no-untyped-def]
    """``cl`` with node ``i`` in region ``i`` of ``zones`` (one zone: every node in it)."""
    regions = tuple(Region(name=z, carbon_zone=z, pue=1.0) for z in zones)
    node_region = np.minimum(np.arange(cl.n_nodes), len(zones) - 1).astype(np.int64)
    return dataclasses.replace(cl, regions=regions, node_region=node_region)


# ------------------------------------------------------------------ forecast


def test_a_forecast_without_error_is_the_series() -> None:
    cl = zoned(cluster([("A", 1)]), "GB")
    f = CarbonForecast(region_series(cl), 0.0)
    np.testing.assert_array_equal(f.hourly(1800.0, 7)[0], load_zone("GB").values[:7])


def test_the_forecast_error_grows_with_lead_time_and_is_seeded() -> None:
    cl = zoned(cluster([("A", 1)]), "GB")
    true = load_zone("GB").values[:48]

    def rel(seed: int) -> np.ndarray:
        f = CarbonForecast(region_series(cl), 0.2, np.random.default_rng(seed))
        return np.asarray(f.hourly(0.0, 48)[0] / true - 1.0)

    a, b = rel(1), rel(1)
    np.testing.assert_array_equal(a, b)  # same seed, same forecast
    assert not np.array_equal(a, rel(2))
    # lead 1 h: sigma = 0.2 × sqrt(1/24) ≈ 0.041; lead 48 h: 0.2 × sqrt(2) ≈ 0.28
    errs = np.abs(np.stack([rel(s) for s in range(40)]))
    assert errs[:, 0].mean() < 0.06 < errs[:, 47].mean()


def test_window_mean_is_the_step_integral() -> None:
    cl = zoned(cluster([("A", 1)]), "GB")
    f = CarbonForecast(region_series(cl), 0.0)
    # GB hours 0..2: 91.44, 94.66, 85.31 g/kWh; from t = 1800 for 2 h:
    # (0.5 × 91.44 + 1 × 94.66 + 0.5 × 85.31) / 2 = 91.5175
    got = f.window_mean(1800.0, np.array([2 * H]), 4)
    assert got[0, 0] == pytest.approx(91.5175)


# ------------------------------------------------------------------ carbon-wait


def test_plan_release_by_hand() -> None:
    fc = np.array([300.0, 250.0, 100.0, 400.0])
    now = 1800.0  # hour 0; candidate starts 1800, 3600, 7200, 10800
    # a 3-h window holds all four hours: the lowest (100) is hour 2, starting at 7200
    assert plan_release(now, fc, np.array([12600.0]), 0.0, None).tolist() == [7200.0]
    # a window ending at 5000 holds hours 0 and 1 (300, 250): the lowest starts at 3600
    assert plan_release(now, fc, np.array([5000.0]), 0.0, None).tolist() == [3600.0]
    # quantile 1 is the highest value of the window: hour 0 qualifies, start now
    assert plan_release(now, fc, np.array([12600.0]), 1.0, None).tolist() == [1800.0]
    # an absolute threshold never met: the deadline forces the start at the latest
    assert plan_release(now, fc, np.array([9000.0]), 0.0, 50.0).tolist() == [9000.0]
    # threshold 260: hour 1 (250) is the first at or below it
    assert plan_release(now, fc, np.array([12600.0]), 0.0, 260.0).tolist() == [3600.0]


def test_a_job_waits_for_the_low_carbon_hour() -> None:
    # GB, 1 January 2023: hours 0..6 = 91.44, 94.66, 85.31, 86.97, 92.15, 92.77, 94.32.
    # One job at t = 0, 1 device, 1,800 s of work; slack 6 h lets it start at hours 0..6;
    # the lowest (85.31) is hour 2, so it starts at 7,200 s and ends at 9,000 s.
    cl = zoned(cluster([("A", 1)]), "GB")
    t = jobs([(0.0, 1, 1800.0)])
    pol = make_policy("carbon-wait", slack_s=6 * H, threshold_quantile=0.0, forecast_error=0.0)
    r = simulate(t, cl, pol, rates=fixed_rates(t, cl))
    assert r.first_start.tolist() == [7200.0] and r.finish.tolist() == [9000.0]
    base = simulate(t, cl, make_policy("fifo"), rates=fixed_rates(t, cl))
    assert base.first_start.tolist() == [0.0]
    # carbon: the busy half hour is at 85.31 instead of 91.44 g/kWh, but the run is
    # accounted from the first submit to the last finish, and the idle device draws idle_w
    # for the 2 h wait: alone on its cluster, waiting costs carbon (docs/carbon.md)
    s, b = summary(r), summary(base)
    assert s["carbon_kg"] > b["carbon_kg"]
    saved = carbon_savings(s, b)
    assert saved["carbon_saved_kg"] < 0
    assert saved["carbon_saved_kg"] == pytest.approx(b["carbon_kg"] - s["carbon_kg"])
    assert saved["jct_mean_cost_s"] == pytest.approx(7200.0)


def test_a_waiting_job_does_not_block_the_others() -> None:
    # share 0.5: job 0 is deferrable (frac(1 × 0.618) = 0.618 ≥ 0.5: no), job 1 is
    # (frac(2 × 0.618) = 0.236 < 0.5). Job 1 waits for hour 2 (as above); job 0 starts at 0.
    assert deferrable_mask(np.array([0, 1]), 0.5).tolist() == [False, True]
    cl = zoned(cluster([("A", 1)]), "GB")
    t = jobs([(0.0, 1, 600.0), (0.0, 1, 600.0)])
    pol = make_policy(
        "carbon-wait",
        deferrable_share=0.5,
        slack_s=6 * H,
        threshold_quantile=0.0,
        forecast_error=0.0,
    )
    r = simulate(t, cl, pol, rates=fixed_rates(t, cl))
    assert r.first_start.tolist() == [0.0, 7200.0]


def test_the_deadline_limits_the_wait() -> None:
    # the job's own deadline 5,400 s and 1,800 s of work: latest start 3,600 (hour 1);
    # of hours 0 and 1 (91.44, 94.66) the lowest is hour 0: it starts at once
    cl = zoned(cluster([("A", 1)]), "GB")
    t = jobs([(0.0, 1, 1800.0)], deadline=[5400.0])
    pol = make_policy("carbon-wait", slack_s=6 * H, threshold_quantile=0.0, forecast_error=0.0)
    r = simulate(t, cl, pol, rates=fixed_rates(t, cl))
    assert r.first_start.tolist() == [0.0]


# ------------------------------------------------------------------ carbon-suspend


def test_suspend_runs_a_job_only_in_low_hours_while_it_has_slack() -> None:
    # GB hours 0..5: 91.44, 94.66, 85.31, 86.97, 92.15, 92.77. Threshold 90 g/kWh.
    # One job of 2 h work at t = 0, slack 3 h: deadline 0 + 2 h + 3 h = 18,000 s.
    # hour 0 (91.44 > 90): held if 3,600 + 7,200 <= 18,000: yes, held.
    # hour 1 (94.66): held if 7,200 + 7,200 <= 18,000: yes, held.
    # hour 2 (85.31): runs 7,200..10,800 (1 h done). hour 3 (86.97): runs, done at 14,400.
    cl = zoned(cluster([("A", 1)]), "GB")
    t = jobs([(0.0, 1, 2 * H)])
    pol = make_policy("carbon-suspend", slack_s=3 * H, threshold_g_per_kwh=90.0, forecast_error=0.0)
    r = simulate(t, cl, pol, rates=fixed_rates(t, cl))
    assert r.first_start.tolist() == [7200.0] and r.finish.tolist() == [14400.0]


def test_suspend_stops_a_running_job_in_a_high_hour() -> None:
    # the same hours, threshold 90, slack 6 h: deadline 0 + 1.5 h + 6 h = 27,000 s.
    # Work 1.5 h submitted at 7,200 (hour 2, 85.31): runs 7,200..10,800 (1 h done);
    # hour 3 (86.97) runs again: done at 12,600. With work 2.5 h and slack 1 h instead:
    # deadline 7,200 + 9,000 + 3,600 = 19,800; hour 4 (92.15) at 14,400: remaining 0.5 h,
    # 18,000 + 1,800 <= 19,800: held (suspended); hour 5 (92.77) at 18,000: 21,600 + 1,800
    # > 19,800: runs, done at 19,800 (restore delay 0 here).
    cl = zoned(cluster([("A", 1)]), "GB")
    t = jobs([(7200.0, 1, 2.5 * H)])
    pol = make_policy("carbon-suspend", slack_s=1 * H, threshold_g_per_kwh=90.0, forecast_error=0.0)
    r = simulate(t, cl, pol, rates=fixed_rates(t, cl))
    assert r.preemptions.tolist() == [1]
    assert r.finish.tolist() == [19800.0]


# ------------------------------------------------------------------ carbon-region


def test_region_sends_a_job_to_the_cleaner_zone() -> None:
    # node 0 in SG (495.76 g/kWh at hour 0), node 1 in BR-CS (62.92): a job of 600 s at t = 0
    # goes to BR-CS; FIFO alone takes the first node that fits (consolidate: node 0, SG)
    cl = zoned(cluster([("A", 1), ("A", 1)]), "SG", "BR-CS")
    t = jobs([(0.0, 1, 600.0)])
    r = simulate(t, cl, make_policy("carbon-region", forecast_error=0.0), rates=fixed_rates(t, cl))
    assert r.stints.node.tolist() == [1]
    b = simulate(t, cl, make_policy("fifo"), rates=fixed_rates(t, cl))
    assert b.stints.node.tolist() == [0]
    assert summary(r)["carbon_kg"] < summary(b)["carbon_kg"]


def test_region_falls_back_to_the_other_zone_when_full() -> None:
    # two jobs at t = 0: the first takes BR-CS's only device, the second SG's
    cl = zoned(cluster([("A", 1), ("A", 1)]), "SG", "BR-CS")
    t = jobs([(0.0, 1, 600.0), (0.0, 1, 600.0)])
    r = simulate(t, cl, make_policy("carbon-region", forecast_error=0.0), rates=fixed_rates(t, cl))
    node_of = dict(zip(r.stints.job.tolist(), r.stints.node.tolist(), strict=True))
    assert node_of == {0: 1, 1: 0}
    assert r.first_start.tolist() == [0.0, 0.0]


def test_carbon_region_refuses_a_preemptive_base() -> None:
    with pytest.raises(ValueError, match=r"^base:"):
        make_policy("carbon-region", base="las")


# ------------------------------------------------------------------ determinism


@pytest.mark.parametrize("name", ["carbon-wait", "carbon-suspend", "carbon-region"])
def test_noisy_runs_are_deterministic_for_a_seed(name: str) -> None:
    cl = zoned(cluster([("A", 2), ("A", 2)]), "GB", "DE")
    rng = np.random.default_rng(3)
    rows = [
        (float(s), 1, float(w))
        for s, w in zip(rng.uniform(0, 20 * H, 30), rng.uniform(600, 3 * H, 30), strict=True)
    ]
    t = jobs(sorted(rows))
    opt = EngineOptions(seed=5, carbon_start="2023-03-01T00:00:00Z")
    a = simulate(t, cl, make_policy(name), rates=fixed_rates(t, cl), options=opt)
    b = simulate(t, cl, make_policy(name), rates=fixed_rates(t, cl), options=opt)
    assert np.array_equal(a.finish, b.finish, equal_nan=True)
    assert np.array_equal(a.stints.node, b.stints.node)
    assert seed_matters(make_policy(name))
    assert not seed_matters(make_policy(name, forecast_error=0.0))
