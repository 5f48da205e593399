"""Hourly carbon intensity: the shipped data, the calendar mapping and the exact integrals."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from clustersim.carbon import CarbonSeries, load_zone, start_offset_s, zones
from clustersim.errors import ClustersimError

H = 3600.0


@pytest.fixture(scope="module")
def reference(shared_data: Path) -> pd.DataFrame:
    return pd.read_csv(shared_data / "carbon" / "carbon_intensity_hourly_16zones_2023.csv.gz")


def test_it_ships_all_sixteen_zones(reference: pd.DataFrame) -> None:
    assert zones() == sorted(reference["zone_id"].unique())
    assert len(zones()) == 16


@pytest.mark.parametrize("zone", ["DE", "US-CAL-CISO", "SG", "IN-WE", "BR-CS"])
def test_shipped_values_equal_the_reference_csv(reference: pd.DataFrame, zone: str) -> None:
    rows = reference[reference["zone_id"] == zone].sort_values("datetime_utc")
    for kind, column in (("lca", "ci_lca_g_per_kwh"), ("direct", "ci_direct_g_per_kwh")):
        series = load_zone(zone, kind=kind)
        assert len(series.values) == 8760
        np.testing.assert_array_equal(series.values, rows[column].to_numpy())


def test_the_shipped_table_reads_as_pandas_reads_it() -> None:
    """The table is read without pandas (not on the simulation path); every value of every
    zone and kind is the float pandas reads, bit for bit."""
    from importlib import resources

    with (
        resources.files("clustersim")
        .joinpath("data", "carbon_intensity_2023.csv.gz")
        .open("rb") as raw
    ):
        frame = pd.read_csv(raw, compression="gzip", index_col="datetime_utc")
    assert len(frame.columns) == 2 * len(zones())
    for zone in zones():
        for kind in ("lca", "direct"):
            want = frame[f"{kind}_{zone}"].to_numpy(dtype=np.float64)
            assert load_zone(zone, kind=kind).values.tobytes() == want.tobytes(), (zone, kind)


@pytest.mark.parametrize("zone", ["GB", "KR", "US-TEX-ERCO", "ZA"])
def test_intensity_at_sampled_hours_matches_the_csv(reference: pd.DataFrame, zone: str) -> None:
    rows = reference[reference["zone_id"] == zone].set_index("datetime_utc")
    series = load_zone(zone, start="2023-01-01T00:00:00Z")
    for stamp in (
        "2023-01-01 00:00:00+00:00",
        "2023-03-26 01:00:00+00:00",
        "2023-07-15 13:00:00+00:00",
        "2023-12-31 23:00:00+00:00",
    ):
        hour = (pd.Timestamp(stamp) - pd.Timestamp("2023-01-01", tz="UTC")).total_seconds()
        got = series.intensity_at(np.array([hour, hour + 1799.0, hour + 3599.9]))
        np.testing.assert_array_equal(got, rows.loc[stamp, "ci_lca_g_per_kwh"])


def test_start_anchors_simulation_time_zero() -> None:
    base = load_zone("DE")
    later = load_zone("DE", start="2023-06-01T12:00:00Z")
    hour = (31 + 28 + 31 + 30 + 31) * 24 + 12
    assert later.intensity_at(0.0) == base.values[hour]
    assert later.intensity_at(5 * H) == base.values[hour + 5]


def test_another_year_maps_to_the_same_hour_of_the_year() -> None:
    base = load_zone("CA-ON")
    assert (
        load_zone("CA-ON", "2019-02-03T04:00:00Z").intensity_at(0.0)
        == base.values[(31 + 2) * 24 + 4]
    )
    # In a leap year, 1 March is hour-of-year 60 × 24; the 2023 value of that hour is used.
    assert load_zone("CA-ON", "2024-03-01").intensity_at(0.0) == base.values[60 * 24]
    # The last day of a leap year runs past the data and wraps to 1 January.
    assert load_zone("CA-ON", "2024-12-31T23:00:00Z").intensity_at(0.0) == base.values[23]


def test_a_run_longer_than_the_data_wraps_around() -> None:
    series = load_zone("AU-NSW")
    year = 8760 * H
    t = np.array([0.0, 100 * H, year - 1.0])
    np.testing.assert_array_equal(series.intensity_at(t + year), series.intensity_at(t))
    np.testing.assert_array_equal(series.intensity_at(t + 3 * year), series.intensity_at(t))
    total = series.values.sum() * H
    assert series.cumulative(2 * year) == pytest.approx(2 * total, rel=1e-12)


def test_offsets_and_zone_names_are_forgiving() -> None:
    assert start_offset_s("2023-01-01T01:00:00+01:00") == 0.0
    assert start_offset_s("2023-01-02") == 24 * H
    assert load_zone("us-cal-ciso").zone == "US-CAL-CISO"


@pytest.mark.parametrize(
    ("zone", "start", "kind"),
    [("XX", "2023-01-01", "lca"), ("DE", "yesterday", "lca"), ("DE", "2023-01-01", "market")],
)
def test_it_rejects_bad_arguments(zone: str, start: str, kind: str) -> None:
    with pytest.raises(ClustersimError):
        load_zone(zone, start, kind)


def test_integral_of_a_two_hour_step_straddling_the_boundary() -> None:
    step = CarbonSeries("step", np.array([100.0, 300.0]))
    # 1 kW from 00:30 to 01:30: half a kWh at 100 g/kWh, half at 300 g/kWh.
    assert step.integrate(0.5 * H, 1.5 * H, 1000.0) == pytest.approx(200.0)
    # Two segments, 2 kW then 500 W, the first straddling the hour boundary.
    seg_t = np.array([0.25 * H, 1.25 * H, 1.75 * H])
    grams = step.segment_grams(seg_t, np.array([2000.0, 500.0]))
    expected_first = 2.0 * (0.75 * 100.0 + 0.25 * 300.0)
    expected_second = 0.5 * 0.5 * 300.0
    np.testing.assert_allclose(grams, [expected_first, expected_second])
    assert step.energy_weighted(seg_t, [2000.0, 500.0]) == pytest.approx(
        expected_first + expected_second
    )


def test_offset_shifts_the_step() -> None:
    step = CarbonSeries("step", np.array([100.0, 300.0]), offset_s=0.5 * H)
    assert step.integrate(0.0, H, 1000.0) == pytest.approx(200.0)
    np.testing.assert_allclose(step.mean_intensity([0.0, 0.5 * H], [0.5 * H, 1.5 * H]), [100, 300])
    # wraps: data time 2 h is hour 0 again
    assert step.intensity_at(1.5 * H) == 100.0


def test_integral_matches_a_brute_force_sum_on_real_data() -> None:
    series = load_zone("US-NY-NYIS", start="2023-05-05T05:17:00Z")
    rng = np.random.default_rng(7)
    seg_t = np.concatenate(([0.0], np.cumsum(rng.integers(1, 5000, size=200)))).astype(float)
    power = rng.uniform(0.0, 5000.0, size=200)
    # Whole-second boundaries: every 1-s step lies in one segment and one hour.
    mid = np.arange(seg_t[0], seg_t[-1]) + 0.5
    seg = np.searchsorted(seg_t, mid, side="right") - 1
    brute = (power[seg] * series.intensity_at(mid)).sum() / 3.6e6
    assert series.energy_weighted(seg_t, power) == pytest.approx(brute, rel=1e-9)


def test_constant_series_and_bad_shapes() -> None:
    flat = CarbonSeries.constant(400.0)
    assert flat.integrate(123.0, 123.0 + 7200.0, 500.0) == pytest.approx(400.0)
    with pytest.raises(ClustersimError):
        flat.segment_grams([0.0, 1.0], [1.0, 2.0])
    with pytest.raises(ClustersimError):
        CarbonSeries("bad", np.array([1.0, -1.0]))
    assert flat.energy_weighted([5.0], []) == 0.0


def test_loaded_series_are_read_only() -> None:
    series = load_zone("DE")
    with pytest.raises(ValueError):
        series.values[0] = 0.0


def test_the_shipped_file_keeps_its_odbl_notice() -> None:
    notice = Path(__file__).resolve().parents[1] / "clustersim" / "data" / "NOTICE.md"
    text = notice.read_text(encoding="utf-8")
    section = text[text.index("## carbon_intensity_2023.csv.gz") :]
    assert "ODbL" in section
    assert "Electricity Maps" in section
