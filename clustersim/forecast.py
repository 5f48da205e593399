"""Carbon-intensity forecasts as a carbon-aware policy sees them (``docs/carbon.md``).

A policy that shifts work in time or space decides on a *forecast* of the hourly intensity,
not on the series the run is later accounted with (:mod:`clustersim.metrics`). A perfect
forecast overstates what shifting saves, so :class:`CarbonForecast` adds a documented,
seeded error that grows with the lead time:

    forecast(issued at hour i, for hour h) = true(h) × exp(σ(L) z_h − σ(L)² / 2),
    σ(L) = error × sqrt(L / 24),  L = h − i + 1 hours (h >= i),

where ``z`` is a stationary AR(1) series of standard normal values per region (lag-one
correlation :data:`AR1_RHO`: forecast errors persist for hours), drawn once per run from the
seed. The last value known for certain is the hour before the one in force (grid data are
published after the hour), so even the hour in force is a one-hour-ahead nowcast
(``L = 1``, error ``error / sqrt(24)``, 2 % for ``error = 0.1``); a day-ahead value is off
by about ``error`` (relative standard deviation, ``L = 24``); the log-normal
factor has mean 1 (no bias), and two forecasts of the same hour issued at different times
agree more the closer they are to it. Simplification: the error of an hour is the same draw
``z_h`` scaled by the lead, so later forecasts refine earlier ones monotonically instead of
being independently revised.

Framework-free numpy; deterministic for a seed (``numpy.random.SeedSequence``).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from clustersim.carbon import DEFAULT_START, CarbonSeries, load_zone
from clustersim.cluster import Cluster

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

HOUR_S = 3600.0
#: Lag-one correlation of the hourly forecast errors.
AR1_RHO = 0.8


def region_series(cluster: Cluster, start: str = DEFAULT_START) -> list[CarbonSeries]:
    """The true series of each region: its zone's hourly data, else its constant
    ``carbon_g_per_kwh`` (the series :func:`clustersim.metrics.summary` accounts with)."""
    return [
        load_zone(r.carbon_zone, start)
        if r.carbon_zone
        else CarbonSeries.constant(r.carbon_g_per_kwh)
        for r in cluster.regions
    ]


def _ar1(rng: np.random.Generator, n: int, rho: float) -> FloatArray:
    """(n,) stationary AR(1) with unit variance."""
    e = rng.standard_normal(n)
    z = np.empty(n, dtype=np.float64)
    z[0] = e[0]
    s = np.sqrt(1.0 - rho * rho)
    prev = float(e[0])
    for k in range(1, n):  # once per run and region: 8,760 steps
        prev = rho * prev + s * float(e[k])
        z[k] = prev
    return z


class CarbonForecast:
    """Hourly intensity forecasts of every region of a cluster.

    Parameters
    ----------
    series
        The true series of each region (:func:`region_series`).
    error
        Relative standard deviation of a 24-hour-ahead forecast (0: a perfect forecast).
    rng
        Source of the error draws (needed when ``error > 0``).
    """

    def __init__(
        self,
        series: list[CarbonSeries],
        error: float = 0.0,
        rng: np.random.Generator | None = None,
    ) -> None:
        if error < 0 or not np.isfinite(error):
            raise ValueError(f"error: must be a finite number >= 0, got {error!r}")
        if error > 0 and rng is None:
            raise ValueError("a forecast with an error needs a seeded generator")
        self.series = series
        self.error = float(error)
        self.n_regions = len(series)
        # one error series per region, as long as the region's data period
        self._z = [
            _ar1(rng, len(s.values), AR1_RHO) if error > 0 and rng is not None else None
            for s in series
        ]

    @staticmethod
    def hour_of(t_s: float) -> int:
        """Simulation hour (``floor(t / 3600)``) holding time ``t_s``."""
        return int(np.floor(t_s / HOUR_S))

    def hourly(self, now: float, hours: int) -> FloatArray:
        """(n_regions, hours) forecast issued at ``now`` for the simulation hours starting at
        ``hour_of(now)``: column 0 is the hour in force (a one-hour-ahead nowcast), column
        ``k`` the hour ``k`` hours later (lead ``k + 1`` hours)."""
        h0 = self.hour_of(now)
        hs = h0 + np.arange(max(hours, 1), dtype=np.int64)
        t = hs * HOUR_S
        out = np.empty((self.n_regions, len(hs)), dtype=np.float64)
        lead = (hs - h0 + 1).astype(np.float64)
        sigma = self.error * np.sqrt(lead / 24.0)
        for r, s in enumerate(self.series):
            true = s.intensity_at(t + 0.5 * HOUR_S)
            z = self._z[r]
            if z is None:
                out[r] = true
            else:
                hour, _, _ = s._hour_and_rest(t + 0.5 * HOUR_S)  # data hour, wrapped
                out[r] = true * np.exp(sigma * z[hour] - 0.5 * sigma * sigma)
        return out

    def true_hourly(self, now: float, hours: int) -> FloatArray:
        """(n_regions, hours) the true intensity of the same hours as :meth:`hourly`."""
        h0 = self.hour_of(now)
        t = (h0 + np.arange(max(hours, 1), dtype=np.int64)) * HOUR_S + 0.5 * HOUR_S
        return np.stack([s.intensity_at(t) for s in self.series])

    def window_mean(self, now: float, length_s: FloatArray, hours: int) -> FloatArray:
        """(n_regions, k) forecast mean intensity over ``[now, now + length_s[i])`` for each
        of ``k`` lengths, issued at ``now`` (exact step integral of the forecast; lengths
        past ``hours`` hours are cut there).

        Parameters
        ----------
        length_s : (k,) float64
            Expected run times, s (> 0).
        hours
            Hours of forecast to build (the horizon).
        """
        f = self.hourly(now, hours)  # (R, H)
        h0 = self.hour_of(now) * HOUR_S
        bounds = h0 + HOUR_S * np.arange(f.shape[1] + 1, dtype=np.float64)
        cum = np.concatenate(
            [np.zeros((self.n_regions, 1)), np.cumsum(f * HOUR_S, axis=1)], axis=1
        )  # integral from the start of hour 0 to each boundary
        end = np.minimum(now + np.asarray(length_s, dtype=np.float64), bounds[-1])

        def integral(t: FloatArray) -> FloatArray:
            k = np.clip(np.floor((t - h0) / HOUR_S).astype(np.int64), 0, f.shape[1] - 1)
            return cum[:, k] + f[:, k] * (t - bounds[k])[None, :]

        start = np.full_like(end, now)
        span = end - start
        with np.errstate(divide="ignore", invalid="ignore"):
            mean = (integral(end) - integral(start)) / span[None, :]
        return np.where(span[None, :] > 0, mean, f[:, :1])
