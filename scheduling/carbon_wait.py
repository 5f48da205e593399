"""Temporal shifting without interruption: a deferrable job waits for a low-carbon hour."""

from __future__ import annotations

import math
from typing import Annotated

import numpy as np

from scheduling.base import Decision, State
from scheduling.carbon_shift import (
    HOUR_S,
    BoolArray,
    CarbonWrapper,
    FloatArray,
    IntArray,
    WakeHeap,
    deferrable_mask,
    earliest,
    keep,
)
from scheduling.params import NON_NEGATIVE


def plan_release(
    now: float,
    forecast: FloatArray,
    latest: FloatArray,
    quantile: float,
    threshold: float | None,
) -> FloatArray:
    """When each arriving job may start: the first hour of its window whose forecast is at or
    below its threshold, else its latest start (the deadline forces it).

    Parameters
    ----------
    now
        Arrival time, s; hour 0 of ``forecast`` is the hour holding it.
    forecast : (H,) float64
        Forecast intensity of the hours from the one in force on, issued at ``now``.
    latest : (k,) float64
        Latest start of each job (>= ``now``).
    quantile
        Threshold as this quantile of the forecast over the job's window (used when
        ``threshold`` is ``None``).
    threshold
        Absolute threshold, g CO2e/kWh, or ``None``.

    Returns
    -------
    (k,) float64
        Release times: ``now`` (start now), the start of a later hour, or ``latest``.
    """
    h0 = math.floor(now / HOUR_S) * HOUR_S
    starts = np.maximum(h0 + HOUR_S * np.arange(len(forecast)), now)  # (H,) candidate starts
    valid = starts[None, :] <= latest[:, None]  # (k, H); column 0 is always valid
    f = np.where(valid, forecast[None, :], np.nan)
    if threshold is None:
        thr = np.nanquantile(f, quantile, axis=1, method="lower")  # a value of the window
    else:
        thr = np.full(len(latest), float(threshold))
    ok = valid & (forecast[None, :] <= thr[:, None])
    first = np.argmax(ok, axis=1)
    return np.where(ok.any(axis=1), starts[first], latest)


class CarbonWait(CarbonWrapper):
    """Hold each deferrable job from its arrival until the first hour whose forecast carbon
    intensity is at or below a threshold, or until its latest start; then ``base`` schedules
    it like any other job (it never stops once started).

    The threshold policy of Wiesner et al., "Let's Wait Awhile: How Temporal Workload
    Shifting Can Reduce Carbon Emissions in the Cloud", Middleware'21 (non-interrupting
    shifting within a forecast window), and GAIA's "wait for low carbon" scheduler (Hanafy
    et al., "Going Green for Less Green: Optimizing the Cost of Reducing Cloud Carbon
    Emissions", ASPLOS'24), on a shared cluster instead of an elastic cloud. Departures:
    the decision is taken once, at arrival, on the forecast issued then (the hour in force
    a one-hour-ahead nowcast, later hours with the ``forecast_error`` of
    :mod:`clustersim.forecast`), and
    the threshold is a quantile of the forecast over the job's window (or an absolute
    value) rather than the paper's minimum-emission start, which is ``threshold_quantile
    = 0``; the intensity is the device-weighted mean of the cluster's regions; after its
    release a job still queues for devices, so it may start later than planned.

    A held job is invisible to the base (not active), so it blocks nobody. The engine is
    woken only at a held job's release (``Decision.wake_at``), so waiting costs one policy
    call per distinct release time.

    Parameters
    ----------
    base
        Name of the policy that decides which jobs run (built with its defaults).
    deferrable_share
        Share of the jobs that may wait (0..1; see :mod:`scheduling.carbon_shift`).
    slack_s
        Longest wait of a deferrable job, s (its latest start is ``submit + slack_s``, or
        earlier so that it can meet its own ``deadline``).
    threshold_quantile
        Start in the first hour whose forecast is at or below this quantile (0..1) of the
        forecast over the job's window (0: the lowest hour).
    threshold_g_per_kwh
        An absolute threshold instead (g CO2e/kWh); ``None``: use the quantile.
    forecast_error
        Relative error of a 24-hour-ahead forecast (0: perfect; :mod:`clustersim.forecast`).
    """

    name = "carbon-wait"
    citation = "Wiesner et al., Let's Wait Awhile, Middleware'21; Hanafy et al., GAIA, ASPLOS'24"
    preemptive = False

    def __init__(
        self,
        base: str = "fifo",
        deferrable_share: Annotated[float, NON_NEGATIVE] = 1.0,
        slack_s: Annotated[float, NON_NEGATIVE] = 6 * HOUR_S,
        threshold_quantile: Annotated[float, NON_NEGATIVE] = 0.2,
        threshold_g_per_kwh: Annotated[float, NON_NEGATIVE] | None = None,
        forecast_error: Annotated[float, NON_NEGATIVE] = 0.1,
    ) -> None:
        super().__init__(base, forecast_error)
        self._set_shifting(deferrable_share, slack_s, threshold_quantile, threshold_g_per_kwh)
        if self._inner.preemptive:
            self.preemptive = True  # type: ignore[misc]
        self._release: FloatArray = np.zeros(0)
        self._wakes = WakeHeap()

    def reset(self, rng: np.random.Generator) -> None:
        super().reset(rng)
        self._release = np.zeros(0)
        self._wakes = WakeHeap()

    def admit(self, state: State, arriving: IntArray) -> BoolArray:
        ok = np.asarray(self._inner.admit(state, arriving), dtype=bool)
        if len(self._release) != len(state.jobs):
            self._release = np.full(len(state.jobs), -np.inf)
        js = arriving[ok & deferrable_mask(arriving, self.deferrable_share)]
        if not len(js) or self.slack_s <= 0:
            return ok
        now = state.now
        latest = np.full(len(js), now + self.slack_s)
        deadline = state.jobs.deadline[js]
        has = np.isfinite(deadline)
        if has.any():
            run = state.remaining_time(js[has])
            latest[has] = np.minimum(latest[has], deadline[has] - run)
        latest = np.maximum(latest, now)
        hours = int(math.floor(float(latest.max()) / HOUR_S) - math.floor(now / HOUR_S)) + 1
        release = plan_release(
            now,
            self.cluster_forecast(state, hours),
            latest,
            self.threshold_quantile,
            self.threshold_g_per_kwh,
        )
        self._release[js] = release
        self._wakes.push(release[release > now])
        return ok

    def held(self, state: State) -> BoolArray | None:
        """(n,) jobs held now (``None`` when none is)."""
        if not len(self._release):
            return None
        a = state.active
        wait = a[self._release[a] > state.now]
        if not len(wait):
            return None
        mask = np.zeros(len(self._release), dtype=bool)
        mask[wait] = True
        return mask

    def schedule(self, state: State) -> Decision:
        from scheduling.carbon_shift import _HiddenView

        hidden = self.held(state)
        view = state if hidden is None else _HiddenView(state, hidden)
        d = self.base_decision(view)
        wake = self._wakes.next_after(state.now)
        return keep(d, np.ones(len(d.run), dtype=bool), wake_at=earliest(d.wake_at, wake))
