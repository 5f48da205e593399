"""Choose each job's accelerator type and power cap for the least energy within a JCT slack."""

from __future__ import annotations

from typing import Annotated

import numpy as np

from clustersim.power import PowerConfig
from scheduling.base import Decision, State
from scheduling.params import NON_NEGATIVE
from scheduling.wrapped import PowerWrapper, fastest_fitting, gang_of

#: Caps tried, as fractions of busy power (clipped to each kind's lowest cap).
CAP_STEPS = tuple(np.round(np.arange(0.4, 1.0001, 0.05), 2).tolist())


class EnergyAware(PowerWrapper):
    """Run ``base``; start each job it picks on the accelerator type and at the power cap
    that need the least energy per unit of its work, among the options whose run time is at
    most ``1 + slack`` times that of its fastest option (its fastest type, uncapped).

    Energy per unit of work of ``n`` devices of type ``t`` at cap ``c`` is
    ``n × (c × busy_w + overhead per device) / (rate × throughput(c))``: the job's devices
    and their share of their nodes' overhead, per work unit. This is Zeus's job-level
    trade-off (You, Chung, Chowdhury, NSDI'23: choose the GPU power limit minimising energy
    subject to a bound on time) extended to the choice of accelerator type, as in
    EnvPipe (Choi et al., ATC'23: use the slack a job can afford to save energy). Options
    are the types with enough free devices now; a job whose fastest type is full and whose
    other options would break the slack waits for it (the slack bounds its run time, not
    its queueing). Departures: one throughput-vs-power curve per accelerator type (Zeus
    profiles each job online); the device count is the job's gang (the rate matrix rates
    the full gang only; elastic counts are left to the base); running jobs keep their
    type and cap; jobs co-locating are not supported.

    Parameters
    ----------
    base
        Name of the policy that decides which jobs run, and in which order.
    slack
        Allowed run-time stretch over the fastest option (0.2: up to 20 % longer).
    caps
        Also choose a power cap (``False``: only the type, uncapped).
    """

    name = "energy-aware"
    citation = "Zeus (You et al., NSDI'23); EnvPipe (Choi et al., ATC'23)"

    def __init__(
        self,
        base: str = "fifo",
        slack: Annotated[float, NON_NEGATIVE] = 0.2,
        caps: bool = True,
    ) -> None:
        super().__init__(base)
        self.slack = float(slack)
        self.caps = bool(caps)
        self.power = PowerConfig()

    def shape(self, state: State, d: Decision) -> Decision:
        pv = state.power
        if pv is None or not len(d.run):
            return d
        cl = state.cluster
        run = np.asarray(d.run, dtype=np.int64)
        m = len(run)
        n_dev = gang_of(state, d)
        busy_w, min_cap = pv.busy_w, pv.min_cap
        dev_t = cl.devices_per_type().astype(np.float64)
        over_t = np.bincount(cl.node_type, weights=cl.node_overhead_w, minlength=cl.n_types)
        share = np.divide(over_t, dev_t, out=np.zeros(cl.n_types), where=dev_t > 0)
        steps = np.array(CAP_STEPS if self.caps else (1.0,))
        # (n_types, k) caps and throughput fractions
        cap = np.maximum(steps[None, :], min_cap[:, None])
        tput = np.stack([pv.throughput(t, cap[t]) for t in range(cl.n_types)])
        draw = cap * busy_w[:, None] + share[:, None]  # W per device
        free = np.asarray(state.free, dtype=np.int64).copy()
        types = np.full(m, -1, dtype=np.int64) if d.types is None else np.array(d.types)
        caps_out = np.ones(m)
        running = state.running
        for k, j in enumerate(run.tolist()):
            if running[j]:
                types[k] = state.alloc_type[j]
                caps_out[k] = float(pv.cap_of(np.array([j]))[0])
                continue
            n = int(n_dev[k])
            rate = state.rate[j]
            best = float(rate.max())
            if best <= 0:
                continue
            speed = rate[:, None] * tput  # (n_types, k) work units/s
            ok = (speed * (1.0 + self.slack) >= best * (1 - 1e-12)) & (free >= n)[:, None]
            ok &= rate[:, None] > 0
            if types[k] >= 0:  # the base chose the type: only the cap is ours
                ok[np.arange(cl.n_types) != types[k]] = False
            if not ok.any():
                types[k] = types[k] if types[k] >= 0 else fastest_fitting(rate, free, n)
                continue
            with np.errstate(divide="ignore"):
                energy = np.where(ok, draw / np.where(speed > 0, speed, 1.0), np.inf)
            # least energy; ties: faster, then lower type, then higher cap
            flat = np.lexsort(
                (
                    -cap.ravel(),
                    np.repeat(np.arange(cl.n_types), cap.shape[1]),
                    -speed.ravel(),
                    energy.ravel(),
                )
            )[0]
            t, i = divmod(int(flat), cap.shape[1])
            types[k] = t
            caps_out[k] = float(cap[t, i])
            free[t] -= n
        return Decision(
            run=run,
            types=types,
            ndev=d.ndev,
            power_cap=caps_out,
            wake_at=d.wake_at,
            drop=d.drop,
            migrate=d.migrate,
        )
