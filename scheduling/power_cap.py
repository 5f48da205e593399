"""A cluster-wide power budget, kept by capping devices or by delaying starts."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

import numpy as np

from clustersim.cluster import Cluster
from clustersim.power import PowerConfig, budget_problem
from scheduling.base import Decision, State
from scheduling.params import NON_NEGATIVE, POSITIVE
from scheduling.wrapped import PowerWrapper, fastest_fitting, gang_of, usable_now


class PowerCap(PowerWrapper):
    """Run ``base`` under a cluster-wide IT power budget of ``budget_kw`` (devices and node
    overhead, before PUE).

    Each decision of the base is walked in its order, projecting the cluster's draw: a job
    starts only if the draw with it stays within the budget. In ``mode="cap"`` a job that
    does not fit at full power starts capped, at the highest cap that fits (down to its
    type's lowest cap; slower by the type's throughput-vs-power curve, Zeus, NSDI'23); in
    ``mode="delay"``, and when even the lowest cap does not fit, it waits. Under a greedy
    base a job that waits stops the decision if the base is blocking, and is passed over
    otherwise; under a preemptive base a running job that no longer fits in the budget
    (jobs of higher priority took it) is suspended. Nodes are switched off at the start
    until their idle draw fits the budget (highest index first), and woken for queued jobs
    only while their idle draw fits; with ``idle_off_s`` idle nodes are also switched off as
    by ``power-down``.

    Source: power capping under a facility budget as in Patel et al., "POLCA: Power
    Oversubscription in LLM Cloud Providers" (2023) and Zeus (You, Chung, Chowdhury,
    NSDI'23) for the throughput a cap costs. Departures: a cap is set when a job starts and
    kept until it stops (no re-capping of running jobs when the budget frees up); the
    projection takes each job on the type the engine will use (set explicitly), so with a
    placement that may decline a gang (``topology``, ``yarn``) a job passed over may leave
    power unused, never exceed the budget; jobs co-locating are not supported.

    Parameters
    ----------
    budget_kw
        The budget, kW; at least the idle draw of the cluster's smallest node (else no node
        could be on: refused, naming ``budget_kw``).
    base
        Name of the policy that decides which jobs run (built with its defaults).
    mode
        ``cap``: cap devices to fit, then delay; ``delay``: only delay starts.
    idle_off_s
        Also switch off nodes idle this long (``None``: only as the budget requires).
    """

    name = "power-cap"
    citation = "Zeus (You et al., NSDI'23); POLCA (Patel et al., 2023) power oversubscription"

    def __init__(
        self,
        budget_kw: Annotated[float, POSITIVE] = 10.0,
        base: str = "fifo",
        mode: Literal["cap", "delay"] = "cap",
        idle_off_s: Annotated[float, NON_NEGATIVE] | None = None,
    ) -> None:
        super().__init__(base)
        if mode not in ("cap", "delay"):
            raise ValueError(f"mode: must be cap or delay, got {mode!r}")
        self.budget_kw = float(budget_kw)
        self.mode = mode
        self.idle_off_s = None if idle_off_s is None else float(idle_off_s)
        self.power = PowerConfig(idle_off_s=self.idle_off_s, budget_w=self.budget_kw * 1000.0)

    @classmethod
    def cluster_problems(cls, params: Mapping[str, Any], cluster: Cluster) -> list[str]:
        budget = float(params.get("budget_kw", 10.0)) * 1000.0
        problem = budget_problem(budget, cluster, "budget_kw")
        return [problem] if problem else []

    def shape(self, state: State, d: Decision) -> Decision:
        pv = state.power
        if pv is None or pv.budget_w is None or not len(d.run):
            return d
        run = np.asarray(d.run, dtype=np.int64)
        m = len(run)
        n_dev = gang_of(state, d)
        want_t = np.full(m, -1, dtype=np.int64) if d.types is None else np.asarray(d.types)
        want_c = np.ones(m) if d.power_cap is None else np.asarray(d.power_cap, dtype=float)
        busy_w, idle_w, min_cap = pv.busy_w, pv.idle_w, pv.min_cap
        budget = float(pv.budget_w)
        running = state.running
        if self.preemptive:
            # from an idle cluster: the jobs of the run set in priority order
            free = usable_now(state)
            power = pv.it_power_w() - _busy_extra(state, pv)
        else:
            free = np.asarray(state.free, dtype=np.int64).copy()
            power = pv.it_power_w()
        keep: list[int] = []
        types: list[int] = []
        caps: list[float] = []
        ndev: list[int] = []

        def take(j: int, t: int, c: float, n: int) -> None:
            keep.append(j)
            types.append(t)
            caps.append(c)
            ndev.append(n)

        for k, j in enumerate(run.tolist()):
            n = int(n_dev[k])
            if running[j]:
                if not self.preemptive:
                    continue
                t = int(state.alloc_type[j])
                c = float(pv.cap_of(np.array([j]))[0])
                held = int(state.alloc_n[j]) or n
                delta = held * (c * busy_w[t] - idle_w[t])
                if power + delta <= budget + 1e-9:
                    power += delta
                    free[t] -= held
                    take(j, t, c, n)
                continue
            t = int(want_t[k]) if want_t[k] >= 0 else fastest_fitting(state.rate[j], free, n)
            if t < 0:
                continue
            c = float(want_c[k]) if np.isfinite(want_c[k]) else 1.0
            c = min(max(c, float(min_cap[t])), 1.0)
            if power + n * (c * busy_w[t] - idle_w[t]) > budget + 1e-9:
                fit = ((budget - power) / n + idle_w[t]) / busy_w[t] if busy_w[t] > 0 else 1.0
                if self.mode == "cap" and fit >= min_cap[t]:
                    c = float(np.floor(fit * 1e6) / 1e6)
                elif self.blocking and not self.preemptive:
                    break
                else:
                    continue
            take(j, t, c, n)
            if free[t] >= n:  # it will start: its draw counts from now
                free[t] -= n
                power += n * (c * busy_w[t] - idle_w[t])
        return Decision(
            run=np.array(keep, dtype=np.int64),
            types=np.array(types, dtype=np.int64),
            ndev=None if d.ndev is None else np.array(ndev, dtype=np.int64),
            power_cap=np.array(caps, dtype=np.float64),
            wake_at=d.wake_at,
            drop=d.drop,
            migrate=d.migrate,
        )


def _busy_extra(state: State, pv: Any) -> float:
    """W the running jobs draw above idle now (at their caps)."""
    r = state.running_jobs()
    if not len(r):
        return 0.0
    t = state.alloc_type[r]
    c = pv.cap_of(r)
    return float((state.alloc_n[r] * (c * pv.busy_w[t] - pv.idle_w[t])).sum())
