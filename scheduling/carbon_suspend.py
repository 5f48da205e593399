"""Temporal shifting with interruption: deferrable jobs pause in high-carbon hours."""

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
    _HiddenView,
    deferrable_mask,
    earliest,
)
from scheduling.params import NON_NEGATIVE


class CarbonSuspend(CarbonWrapper):
    """Suspend deferrable jobs (running or queued) in every hour whose carbon intensity is
    above their threshold, as long as they can still meet their deadline by running from
    the next hour on; resume them in low-carbon hours. Other jobs, and deferrable jobs out
    of slack, are scheduled by ``base`` as usual.

    The interrupting strategy of Wiesner et al., "Let's Wait Awhile", Middleware'21
    (suspend-resume in the window's low-carbon hours) and GAIA's suspend-resume scheduler
    (Hanafy et al., ASPLOS'24). Departures: a job's threshold is fixed at arrival as a
    quantile (or an absolute value) of the forecast over its window ``[submit, deadline]``
    instead of picking the lowest hours of the window up front, and the hold test is greedy,
    hour by hour, on the hour in force (a nowcast) and the oracle remaining run time on
    the job's fastest type: a job is held when ``next hour + remaining time <= deadline``.
    The checkpoint/restore delay of each resume is paid (the performance model's, per job)
    but not counted in the hold test, so a job may finish after its deadline by its restore
    delays; queueing for devices after a release may delay it more. The intensity is the
    device-weighted mean of the cluster's regions.

    The policy is preemptive (it suspends running jobs); a non-preemptive base keeps its
    running jobs unless the wrapper suspends them. The engine wakes the policy at every
    hour change while a deferrable job is active, and only then.

    Parameters
    ----------
    base
        Name of the policy that decides which jobs run (built with its defaults).
    deferrable_share
        Share of the jobs that may be suspended (0..1; see :mod:`scheduling.carbon_shift`).
    slack_s
        Time a deferrable job may lose, s: its deadline is ``submit + run time on its fastest
        type + slack_s``, or its own ``deadline`` when it has one.
    threshold_quantile
        A job runs in hours whose intensity is at or below this quantile (0..1) of the
        forecast over its window.
    threshold_g_per_kwh
        An absolute threshold instead (g CO2e/kWh); ``None``: use the quantile.
    forecast_error
        Relative error of a 24-hour-ahead forecast (0: perfect; :mod:`clustersim.forecast`).
    """

    name = "carbon-suspend"
    citation = (
        "Wiesner et al., Let's Wait Awhile, Middleware'21 (interrupting);"
        " Hanafy et al., GAIA, ASPLOS'24"
    )
    preemptive = True

    def __init__(
        self,
        base: str = "fifo",
        deferrable_share: Annotated[float, NON_NEGATIVE] = 1.0,
        slack_s: Annotated[float, NON_NEGATIVE] = 6 * HOUR_S,
        threshold_quantile: Annotated[float, NON_NEGATIVE] = 0.5,
        threshold_g_per_kwh: Annotated[float, NON_NEGATIVE] | None = None,
        forecast_error: Annotated[float, NON_NEGATIVE] = 0.1,
    ) -> None:
        super().__init__(base, forecast_error)
        self._set_shifting(deferrable_share, slack_s, threshold_quantile, threshold_g_per_kwh)
        self._deadline: FloatArray = np.zeros(0)
        self._threshold: FloatArray = np.zeros(0)

    def reset(self, rng: np.random.Generator) -> None:
        super().reset(rng)
        self._deadline = np.zeros(0)
        self._threshold = np.zeros(0)

    def admit(self, state: State, arriving: IntArray) -> BoolArray:
        ok = np.asarray(self._inner.admit(state, arriving), dtype=bool)
        if len(self._deadline) != len(state.jobs):
            self._deadline = np.full(len(state.jobs), -np.inf)  # -inf: never held
            self._threshold = np.full(len(state.jobs), np.inf)
        js = arriving[ok & deferrable_mask(arriving, self.deferrable_share)]
        if not len(js) or self.slack_s <= 0:
            return ok
        now = state.now
        deadline = now + state.remaining_time(js) + self.slack_s
        own = state.jobs.deadline[js]
        deadline = np.where(np.isfinite(own), own, deadline)
        self._deadline[js] = deadline
        if self.threshold_g_per_kwh is not None:
            self._threshold[js] = self.threshold_g_per_kwh
            return ok
        h0 = math.floor(now / HOUR_S)
        last = np.maximum(np.floor(deadline / HOUR_S).astype(np.int64) - h0, 0)  # (k,)
        f = self.cluster_forecast(state, int(last.max()) + 1)  # (H,)
        window = np.arange(len(f))[None, :] <= last[:, None]
        vals = np.where(window, f[None, :], np.nan)
        self._threshold[js] = np.nanquantile(vals, self.threshold_quantile, axis=1)
        return ok

    def held(self, state: State) -> BoolArray | None:
        """(n,) jobs to hold this hour (``None`` when none is)."""
        if not len(self._deadline):
            return None
        a = state.active
        cand = a[np.isfinite(self._deadline[a])]
        if not len(cand):
            return None
        now_i = float(self.cluster_forecast(state, 1)[0])  # the hour in force (nowcast)
        cand = cand[self._threshold[cand] < now_i]
        if not len(cand):
            return None
        next_hour = (math.floor(state.now / HOUR_S) + 1) * HOUR_S
        cand = cand[next_hour + state.remaining_time(cand) <= self._deadline[cand]]
        if not len(cand):
            return None
        mask = np.zeros(len(self._deadline), dtype=bool)
        mask[cand] = True
        return mask

    def schedule(self, state: State) -> Decision:
        hidden = self.held(state)
        view = state if hidden is None else _HiddenView(state, hidden)
        d = self.base_decision(view)
        wake = None
        if len(self._deadline) and np.isfinite(self._deadline[state.active]).any():
            wake = (math.floor(state.now / HOUR_S) + 1) * HOUR_S  # the next hour change
        wake = earliest(d.wake_at, wake)
        run = np.asarray(d.run, dtype=np.int64)
        if self._inner.preemptive:
            return Decision(
                run=run,
                types=d.types,
                ndev=d.ndev,
                wake_at=wake,
                drop=d.drop,
                migrate=d.migrate,
            )
        # a greedy base lists the jobs to start: keep its running jobs (those not held) first
        kept = np.sort(view.running_jobs())
        m = len(kept)
        return Decision(
            run=np.concatenate([kept, run]),
            types=None
            if d.types is None
            else np.concatenate([np.full(m, -1, dtype=np.int64), np.asarray(d.types)]),
            ndev=None
            if d.ndev is None
            else np.concatenate([state.alloc_n[kept], np.asarray(d.ndev, dtype=np.int64)]),
            wake_at=wake,
            drop=d.drop,
        )
