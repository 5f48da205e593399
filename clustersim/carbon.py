"""Hourly grid carbon intensity and exact carbon integrals (DESIGN §3.6).

The package ships ``data/carbon_intensity_2023.csv.gz``: hourly carbon intensity of 16
Electricity Maps zones for the calendar year 2023 (8,760 hours, UTC), derived from the
Electricity Maps data redistributed by HewlettPackard/green-dcc (ODbL 1.0, see
``data/NOTICE.md``). It is the reference file ``shared/data/carbon/
carbon_intensity_hourly_16zones_2023.csv.gz`` reshaped to one row per hour: a ``datetime_utc``
column, then ``lca_<zone>`` (life-cycle intensity, column ``ci_lca_g_per_kwh`` of the source)
and ``direct_<zone>`` (direct-emission intensity, ``ci_direct_g_per_kwh``) for every zone, in
g CO2e/kWh, values unchanged.

Time mapping
------------
Simulation time ``t`` (seconds) is measured from a calendar instant ``start`` (UTC). The data
cover 2023 only, so ``start`` is mapped to the *same hour of the year* in 2023: its offset from
1 January 00:00 UTC of its own year is kept, the year is dropped. Intensity is a step function,
constant within each UTC hour. Past the end of the data (31 December 23:00–24:00) the series
wraps around to 1 January 00:00 of the same data year, so runs longer than a year, and the last
day of a leap year, reuse the 2023 values. Times before the data start wrap the other way.
"""

from __future__ import annotations

import gzip
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import lru_cache
from importlib import resources

import numpy as np
import numpy.typing as npt

from clustersim.errors import ClustersimError

FloatArray = npt.NDArray[np.float64]

#: Default calendar anchor of simulation time 0.
DEFAULT_START = "2023-01-01T00:00:00Z"
#: Intensity kinds in the shipped data.
KINDS = ("lca", "direct")
#: Joules in one kWh.
J_PER_KWH = 3.6e6

_DATA_FILE = "carbon_intensity_2023.csv.gz"
_HOUR_S = 3600.0


def start_offset_s(start: str) -> float:
    """Seconds from 1 January 00:00 UTC of ``start``'s own year to ``start``.

    Parameters
    ----------
    start
        ISO 8601 date or date-time, e.g. ``"2023-06-01"`` or ``"2024-03-10T12:30:00Z"``.
        A time without an offset is taken as UTC.

    Raises
    ------
    ClustersimError
        If ``start`` is not an ISO 8601 date-time.
    """
    try:
        when = datetime.fromisoformat(start.strip())
    except (AttributeError, ValueError):
        raise ClustersimError(f"carbon start {start!r} is not an ISO 8601 date-time") from None
    when = when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)
    year_start = datetime(when.year, 1, 1, tzinfo=UTC)
    return (when - year_start).total_seconds()


@dataclass(frozen=True, eq=False)
class CarbonSeries:
    """Hourly step carbon intensity of one zone, anchored at a calendar start.

    Hour ``h`` of ``values`` covers data time ``[h, h + 1)`` hours; simulation time ``t``
    (seconds) corresponds to data time ``offset_s + t``, taken modulo the length of the data
    (the series repeats).

    Attributes
    ----------
    zone
        Electricity Maps zone id (``""`` for a constant series).
    values : (h,) float64
        Intensity of each hour, g CO2e/kWh (``h >= 1``).
    offset_s
        Data time of simulation time 0, seconds.
    kind
        ``"lca"`` (life-cycle), ``"direct"`` or ``"constant"``; informational.
    """

    zone: str
    values: FloatArray
    offset_s: float = 0.0
    kind: str = "lca"
    _cum: FloatArray = field(init=False, repr=False)
    _zero: float = field(init=False, repr=False)

    def __post_init__(self) -> None:
        values = np.array(self.values, dtype=np.float64, copy=True)
        if values.ndim != 1 or len(values) == 0:
            raise ClustersimError("carbon series needs a non-empty one-dimensional array")
        if not np.all(np.isfinite(values)) or np.any(values < 0):
            raise ClustersimError(f"carbon series {self.zone!r} has negative or missing values")
        values.setflags(write=False)
        cum = np.concatenate(([0.0], np.cumsum(values * _HOUR_S)))
        cum.setflags(write=False)
        object.__setattr__(self, "values", values)
        object.__setattr__(self, "_cum", cum)
        object.__setattr__(self, "_zero", 0.0)
        object.__setattr__(self, "_zero", float(self.cumulative(0.0)))

    @classmethod
    def constant(cls, g_per_kwh: float, zone: str = "") -> CarbonSeries:
        """A series with the same intensity at every hour."""
        return cls(zone=zone, values=np.array([float(g_per_kwh)]), kind="constant")

    @property
    def period_s(self) -> float:
        """Length of the data in seconds; the series repeats with this period."""
        return len(self.values) * _HOUR_S

    def _hour_and_rest(
        self, t_s: npt.ArrayLike
    ) -> tuple[npt.NDArray[np.int64], FloatArray, FloatArray]:
        """Whole periods, hour index and seconds into the hour of simulation times."""
        x = self.offset_s + np.asarray(t_s, dtype=np.float64)
        periods = np.floor(x / self.period_s)
        r = x - periods * self.period_s
        hour = np.clip(np.floor(r / _HOUR_S), 0, len(self.values) - 1).astype(np.int64)
        return hour, periods, r - hour * _HOUR_S

    def intensity_at(self, t_s: npt.ArrayLike) -> FloatArray:
        """Intensity (g CO2e/kWh) in force at simulation times ``t_s`` (any shape)."""
        hour, _, _ = self._hour_and_rest(t_s)
        return np.asarray(self.values[hour], dtype=np.float64)

    def cumulative(self, t_s: npt.ArrayLike) -> FloatArray:
        """Integral of intensity from simulation time 0 to ``t_s``, in g/kWh × s.

        Exact for the step function: whole periods, whole hours from a prefix sum, and the
        partial hour. Differences of two values give the integral over an interval.

        Parameters
        ----------
        t_s : array_like, any shape
            Simulation times, seconds.
        """
        hour, periods, rest = self._hour_and_rest(t_s)
        at = periods * self._cum[-1] + self._cum[hour] + self.values[hour] * rest
        return np.asarray(at - self._zero, dtype=np.float64)

    def mean_intensity(self, t0_s: npt.ArrayLike, t1_s: npt.ArrayLike) -> FloatArray:
        """Time-averaged intensity (g CO2e/kWh) over ``[t0, t1)``; the point value if empty."""
        t0 = np.asarray(t0_s, dtype=np.float64)
        t1 = np.asarray(t1_s, dtype=np.float64)
        span = t1 - t0
        with np.errstate(divide="ignore", invalid="ignore"):
            mean = (self.cumulative(t1) - self.cumulative(t0)) / span
        return np.asarray(np.where(span > 0, mean, self.intensity_at(t0)), dtype=np.float64)

    def integrate(self, t0_s: float, t1_s: float, power_w: float) -> float:
        """Grams CO2e emitted by a constant ``power_w`` (W) drawn over ``[t0_s, t1_s]``."""
        f = self.cumulative(np.array([t0_s, t1_s], dtype=np.float64))
        return float(power_w * (f[1] - f[0]) / J_PER_KWH)

    def segment_grams(self, seg_t: npt.ArrayLike, power_w: npt.ArrayLike) -> FloatArray:
        """Grams CO2e of each segment of a piecewise-constant power draw.

        Parameters
        ----------
        seg_t : (s + 1,) array_like
            Ascending segment boundaries, simulation seconds.
        power_w : (s,) array_like
            Power drawn in each segment, W.

        Returns
        -------
        (s,) float64
        """
        t = np.asarray(seg_t, dtype=np.float64)
        p = np.asarray(power_w, dtype=np.float64)
        if t.ndim != 1 or p.shape != (max(len(t) - 1, 0),):
            raise ClustersimError(
                f"power has shape {p.shape}, expected one value per segment ({len(t) - 1})"
            )
        if len(t) < 2:
            return np.zeros(0, dtype=np.float64)
        return np.asarray(p * np.diff(self.cumulative(t)) / J_PER_KWH, dtype=np.float64)

    def energy_weighted(self, seg_t: npt.ArrayLike, power_w: npt.ArrayLike) -> float:
        """Total grams CO2e of a piecewise-constant power draw (see :meth:`segment_grams`)."""
        return float(self.segment_grams(seg_t, power_w).sum())


@lru_cache(maxsize=1)
def _table() -> tuple[list[str], list[str]]:
    """The shipped table's column names and its data lines, read once per process.

    Read without pandas (which the simulation path does not import): only the columns asked
    for are converted, by :func:`_zone_values`.
    """
    path = resources.files("clustersim").joinpath("data", _DATA_FILE)
    with path.open("rb") as raw, gzip.open(raw, "rt", encoding="utf-8") as text:
        header, *lines = text.read().splitlines()
    return header.split(","), lines


def zones() -> list[str]:
    """Zone ids with shipped hourly data, sorted."""
    prefix = "lca_"
    return sorted(c[len(prefix) :] for c in _table()[0] if c.startswith(prefix))


@lru_cache(maxsize=256)
def _zone_values(zone: str, kind: str) -> FloatArray:
    """(8760,) float64: column ``<kind>_<zone>`` of the shipped table, read-only."""
    names, lines = _table()
    col = names.index(f"{kind}_{zone}")
    values = np.array([float(line.split(",")[col]) for line in lines], dtype=np.float64)
    values.setflags(write=False)
    return values


def load_zone(zone_id: str, start: str = DEFAULT_START, kind: str = "lca") -> CarbonSeries:
    """Hourly intensity of one zone with simulation time 0 at ``start``.

    Parameters
    ----------
    zone_id
        Electricity Maps zone id, e.g. ``"US-CAL-CISO"`` (case-insensitive); see :func:`zones`.
    start
        Calendar instant of simulation time 0 (ISO 8601, UTC if no offset). Only its
        hour-of-year position matters: the 2023 data are used for any year.
    kind
        ``"lca"`` (life-cycle, default) or ``"direct"`` (direct emissions only).

    Raises
    ------
    ClustersimError
        Unknown zone, kind or unparsable start.
    """
    if kind not in KINDS:
        raise ClustersimError(f"carbon kind {kind!r} is not one of {', '.join(KINDS)}")
    known = {z.lower(): z for z in zones()}
    zone = known.get(zone_id.strip().lower())
    if zone is None:
        raise ClustersimError(
            f"no carbon data for zone {zone_id!r}; known zones: {', '.join(zones())}"
        )
    return CarbonSeries(
        zone=zone, values=_zone_values(zone, kind), offset_s=start_offset_s(start), kind=kind
    )
