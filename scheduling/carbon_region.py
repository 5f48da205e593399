"""Spatial shifting: each starting job goes to the region with the lowest forecast carbon."""

from __future__ import annotations

import math
from typing import Annotated

import numpy as np

from scheduling.base import Decision, State
from scheduling.carbon_shift import HOUR_S, CarbonWrapper, keep
from scheduling.params import NON_NEGATIVE, POSITIVE


class CarbonRegion(CarbonWrapper):
    """Let ``base`` choose which jobs start, in which order; send each to the region whose
    forecast carbon intensity × PUE, averaged over the job's expected run, is lowest among
    the regions that have enough free devices of a type the job runs on, on the fastest
    such type there. A job that no single region can hold now is left to the engine (any
    region, as ``base`` alone would).

    After Radovanović et al., "Carbon-Aware Computing for Datacenters", IEEE Trans. Power
    Systems 2022 (Google's carbon-intelligent computing platform, which moves flexible load
    between datacentres by day-ahead carbon forecasts), simplified to a greedy per-job
    choice at start time: no day-ahead capacity curves, no migration of running jobs, no
    data-transfer or latency cost of running far away. Expected run = remaining work on the
    job's fastest type (oracle), cut at ``horizon_h`` hours of forecast; the forecast is
    issued at the decision (hour in force a nowcast, later hours with ``forecast_error``).
    Regions are ranked by intensity × PUE, since PUE scales the facility energy a job
    costs; ties go to the lower region index. Placement then takes nodes of that region
    only (``Decision.region``; the engine places every start through the strategy).

    Parameters
    ----------
    base
        Name of the policy that decides which jobs start (a non-preemptive one, built with
        its defaults).
    horizon_h
        Hours of forecast a job's expected run is averaged over at most.
    forecast_error
        Relative error of a 24-hour-ahead forecast (0: perfect; :mod:`clustersim.forecast`).
    """

    name = "carbon-region"
    citation = "Radovanović et al., Carbon-Aware Computing for Datacenters, IEEE TPWRS 2022"
    preemptive = False
    steers_regions = True

    def __init__(
        self,
        base: str = "fifo",
        horizon_h: Annotated[int, POSITIVE] = 48,
        forecast_error: Annotated[float, NON_NEGATIVE] = 0.1,
    ) -> None:
        super().__init__(base, forecast_error)
        if self._inner.preemptive or self._inner.round_s:
            raise ValueError(
                f"base: carbon-region places jobs when they start and needs a non-preemptive,"
                f" non-round-based base; {base} is not"
            )
        self.horizon_h = int(horizon_h)

    def schedule(self, state: State) -> Decision:
        d = self.base_decision(state)
        run = np.asarray(d.run, dtype=np.int64)
        m = len(run)
        region = np.full(m, -1, dtype=np.int64)
        cl = state.cluster
        n_regions = len(cl.regions)
        if m == 0 or n_regions < 2 or state.node_free is None:
            return keep(d, np.ones(m, dtype=bool), d.wake_at, region)
        # free devices per (type, region) now
        free = np.zeros((cl.n_types, n_regions), dtype=np.int64)
        np.add.at(free, (cl.node_type, cl.node_region), state.node_free)
        if not free.any():
            return keep(d, np.ones(m, dtype=bool), d.wake_at, region)
        length = np.maximum(state.remaining_time(run), 1.0)
        finite = np.isfinite(length)
        length = np.where(finite, length, self.horizon_h * HOUR_S)
        hours = min(math.ceil(float(length.max()) / HOUR_S) + 1, self.horizon_h + 1)
        pue = np.array([r.pue for r in cl.regions], dtype=np.float64)
        score = self.forecast(state).window_mean(state.now, length, hours) * pue[:, None]
        order = np.argsort(score, axis=0, kind="stable").T  # (m, R) best region first
        gang = (
            np.asarray(d.ndev, dtype=np.int64)
            if d.ndev is not None
            else np.asarray(state.jobs.num_gpus[run], dtype=np.int64)
        )
        want = None if d.types is None else np.asarray(d.types, dtype=np.int64)
        types = np.full(m, -1, dtype=np.int64) if want is None else want.copy()
        rate = state.rate[run]  # (m, n_types)
        left = int(free.sum())
        for i in range(m):  # greedy in the base's order, until no device is free
            if left <= 0:
                break
            g = int(gang[i])
            ok_t = rate[i] > 0
            if want is not None and want[i] >= 0:
                ok_t &= np.arange(cl.n_types) == want[i]
            for r in order[i].tolist():
                fits = ok_t & (free[:, r] >= g)
                if fits.any():
                    t = int(np.argmax(np.where(fits, rate[i], -1.0)))
                    region[i], types[i] = r, t
                    free[t, r] -= g
                    left -= g
                    break
        return Decision(
            run=run,
            types=types,
            ndev=d.ndev,
            wake_at=d.wake_at,
            drop=d.drop,
            power_cap=d.power_cap,
            region=region,
        )
