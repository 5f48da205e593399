"""Network contention (issue 14, item 3): multi-node jobs share NICs and rack uplinks.

A physical model the engine calls through a small interface, like co-location
(:mod:`clustersim.colocation`) and failures (:mod:`clustersim.failures`); the engine stays
the loop and the clock. ``docs/network.md`` is the user-facing account (model, a worked
example, what is simplified).

The model
---------
* **Links.** Every node's NIC (``nic_gbps / 8`` GB/s, one direction) and every rack's uplink,
  whose capacity is the sum of its nodes' NICs over the rack's oversubscription ratio
  (``Σ nic / 8 / oversub`` GB/s per direction; a ratio of 1 is non-blocking). The core above
  the racks is non-blocking.
* **Flows.** A running job placed on several nodes runs a ring all-reduce; the ring visits its
  nodes rack by rack, so it sends one flow out of (and one into) each of its nodes' NICs and,
  when it spans several racks, one flow over each spanned rack's uplink, all at the ring's
  rate ``b``. A job on one node uses no network.
* **Sharing.** The rates ``b`` are the max-min fair allocation (progressive filling: every
  job's ``b`` grows at the same pace; a link that fills freezes the jobs crossing it; a job
  also stops at its demand, its slowest NIC) — the bandwidth model of flow-level network
  simulators (Bertsekas & Gallager, *Data Networks*, §6.5.2; SimGrid's max-min LMM solver,
  Casanova et al. 2014).
* **Rates.** A job's rate is the performance model's ring all-reduce rate with ``b`` as the
  slowest link (:meth:`clustersim.perf.JobRates.placement_rate`). The engine's static rule
  (slowest NIC, divided by the worst oversubscription of the racks crossed: every node of the
  rack sending at once) is replaced by the share. Running jobs are re-rated in place
  (:func:`clustersim.colocation.rerate`) by the ratio of the two rates, so any other factor
  already in a job's rate (checkpointing under failures) is kept.
* **When.** After each event batch the engine calls :meth:`NetworkContention.settle`; it
  recomputes only when the set of running multi-node jobs (or one of their placements)
  changed, and re-rates only the jobs whose share changed.

The engine's side (the only calls it makes)
-------------------------------------------
``NetworkContention(cluster, rates, n, options)`` before the run, :meth:`~NetworkContention.settle`
after every event batch, :meth:`~NetworkContention.record` at the end
(:class:`NetworkRecord`, kept as ``RunResult.network``; :func:`summary` turns it into metrics).
:attr:`NetworkContention.view` is what the ``comm-aware`` placement reads
(``scheduling.placement.CommAware``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from clustersim.cluster import Cluster
from clustersim.colocation import EngineView, rerate
from clustersim.errors import ClustersimError, SimulationError
from clustersim.kernels import (
    CTR_RUN,
    CTR_STINTS,
    JF_CRATE,
    JF_STALL,
    JI_ALLOC_N,
    JI_ALLOC_TYPE,
    JI_GANG,
    JI_PLACED,
    multi_node_jobs,
    network_factors,
    network_integrate,
    network_shares,
)
from clustersim.perf import JobRates

if TYPE_CHECKING:
    from clustersim.result import RunResult

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

_EMPTY_I = np.zeros(0, dtype=np.int64)
_EMPTY_F = np.zeros(0, dtype=np.float64)
#: Relative tolerance at which a link counts as full in progressive filling.
_TOL = 1e-12


@dataclass(frozen=True)
class NetworkOptions:
    """Turns network contention on for a run (``EngineOptions.network``).

    Attributes
    ----------
    share_nics
        Jobs on a common node also share its NIC (``True``, the default); ``False``: only
        rack uplinks are shared, each job gets its slowest NIC whole.
    """

    share_nics: bool = True


def max_min_share(
    job_of: IntArray, link_of: IntArray, cap: FloatArray, demand: FloatArray
) -> FloatArray:
    """Max-min fair rates of flows over shared links (progressive filling).

    Parameters
    ----------
    job_of, link_of : (p,) int64
        The (job, link) pairs: job ``job_of[i]`` sends one flow over link ``link_of[i]``.
    cap : (L,) float64
        Capacity of each link.
    demand : (m,) float64
        Most each job can use (``inf``: no limit but its links).

    Returns
    -------
    (m,) float64
        Each job's rate: no link carries more than its capacity, and no job can get more
        without taking from a job that has no more than it (max-min fairness). A job on no
        link gets its demand.
    """
    m = len(demand)
    x = np.zeros(m)
    frozen = np.zeros(m, dtype=bool)
    n_links = len(cap)
    while not frozen.all():
        live = ~frozen[job_of]
        users = np.bincount(link_of[live], minlength=n_links)
        used = np.bincount(link_of[~live], weights=x[job_of[~live]], minlength=n_links)
        with np.errstate(divide="ignore", invalid="ignore"):
            fair = np.where(users > 0, np.maximum(cap - used, 0.0) / users, np.inf)
        level = min(float(fair.min()) if n_links else np.inf, float(demand[~frozen].min()))
        full = fair <= level * (1.0 + _TOL)
        hit = np.zeros(m, dtype=bool)
        hit[job_of[live & full[link_of]]] = True
        reach = ~frozen & (demand <= level * (1.0 + _TOL))
        stop = ~frozen & (hit | reach)
        x[stop] = np.minimum(level, demand[stop])
        frozen |= stop
    return x


@dataclass(frozen=True, eq=False)
class NetworkView:
    """What a placement may read of the network now (live arrays, read only).

    Attributes
    ----------
    uplink_cap : (n_racks,) float64
        Each rack uplink's capacity, GB/s per direction.
    uplink_load : (n_racks,) float64
        Bandwidth the crossing jobs use on it now, GB/s.
    uplink_users : (n_racks,) int64
        Running jobs crossing it now.
    version : (1,) int64
        Recomputations so far: a placement that adds its own gangs to the load it read knows
        from a new version that the model has counted them.
    """

    uplink_cap: FloatArray
    uplink_load: FloatArray
    uplink_users: IntArray
    version: IntArray


@dataclass(frozen=True, eq=False)
class NetworkRecord:
    """What network contention did in a run (``RunResult.network``).

    Attributes
    ----------
    lost_s : (n,) float64
        Per job, seconds of progress lost to contention: ``∫ (1 − r / r_free) dt`` over the
        time it ran past its restore stall, ``r`` its rate and ``r_free`` its rate with the
        whole of its slowest NIC.
    uplink_cap : (n_racks,) float64
        Uplink capacities, GB/s.
    uplink_gb : (n_racks,) float64
        Data each uplink carried (one direction), GB: ``∫ load dt``.
    span_s : float
        Length of the run over which ``uplink_gb`` was integrated, s.
    recomputes : int
        Times the shares were recomputed (the set of multi-node jobs changed).
    rerates : int
        Job re-ratings made.
    t : (k,) float64
        Times of the recomputations; ``load`` (k, n_racks): uplink load from each on, GB/s.
    """

    lost_s: FloatArray
    uplink_cap: FloatArray
    uplink_gb: FloatArray
    span_s: float
    recomputes: int
    rerates: int
    t: FloatArray
    load: FloatArray

    @property
    def uplink_utilisation(self) -> FloatArray:
        """(n_racks,) mean uplink load over capacity across the run (0 where no capacity)."""
        with np.errstate(divide="ignore", invalid="ignore"):
            u = self.uplink_gb / (self.uplink_cap * self.span_s)
        return np.where(np.isfinite(u), u, 0.0)


class NetworkContention:
    """The engine's network-contention mechanism (module doc).

    Parameters
    ----------
    cluster
        The inventory (NICs, racks, oversubscription).
    rates
        The run's rates (the ring all-reduce model rates a job behind any link).
    n
        Jobs of the run.
    options
        The model's knobs.
    """

    def __init__(self, cluster: Cluster, rates: JobRates, n: int, options: NetworkOptions) -> None:
        self.options = options
        self.rates = rates
        self.rack = np.asarray(cluster.node_rack, dtype=np.int64)
        self.nic = np.asarray(cluster.node_nic_gbps, dtype=np.float64) / 8.0
        self.oversub = np.asarray(cluster.rack_oversub, dtype=np.float64)
        n_racks = len(self.oversub)
        self.n_racks = n_racks
        up = np.bincount(self.rack, weights=self.nic, minlength=n_racks) / self.oversub
        self.cap = np.concatenate([up, self.nic])  # links: uplinks, then NICs
        self.view = NetworkView(
            up, np.zeros(n_racks), np.zeros(n_racks, dtype=np.int64), np.zeros(1, dtype=np.int64)
        )
        self.factor = np.ones(n)  # network factor in each running job's rate now
        self._start_of = np.full(n, np.nan)  # the start that factor belongs to
        self._a = np.zeros(n)  # 1 / rate of each job's placement = a + s / link
        self._s = np.zeros(n)
        self._a_type = np.full(n, -1, dtype=np.int64)  # the type and devices a, s are for
        self._a_ndev = np.zeros(n, dtype=np.int64)
        # a, s of every job on its gang on each type, (n, n_types) each; built on first use
        self._table: tuple[FloatArray, FloatArray] | None = None
        self._jobs = _EMPTY_I  # the multi-node jobs at the last recomputation
        self._loss = _EMPTY_F  # their 1 − r / r_free
        self._b = _EMPTY_F
        self._up_job = _EMPTY_I  # (job position, rack) pairs of the uplinks crossed
        self._up_rack = _EMPTY_I
        self._t = np.nan  # time of the last integration
        self._t0 = np.nan
        self._starts = np.zeros(0)  # their starts then
        self._first = True  # no recomputation yet
        self._buf_j = np.zeros(0, dtype=np.int64)  # scratch of multi_node_jobs
        self._buf_s = np.zeros(0)
        self._quick: tuple[int, int, int] = (-1, 0, -1)  # stints, their array, jobs running
        self.lost_s = np.zeros(n)
        self.uplink_gb = np.zeros(n_racks)
        self.recomputes = 0
        self.rerates = 0
        self._log_t: list[float] = []
        self._log_load: list[FloatArray] = []

    # ------------------------------------------------------------------ engine calls
    def settle(self, eng: EngineView) -> None:
        """After an event batch: when the running multi-node jobs are not those of the last
        call (one started, stopped, or was placed anew), share the links anew and re-rate the
        jobs whose share changed."""
        now = float(eng.now)
        if self._t0 != self._t0:
            self._t0 = self._t = now
        n_run = int(eng.ctr[CTR_RUN])
        # first test: no job stopped (each stop writes stint rows) and none started (a start
        # adds one to the running jobs, a stop and a start in one batch write stint rows);
        # an order changed by a preemptive decision does not change the set
        quick = (int(eng.ctr[CTR_STINTS]), id(eng.st_i), n_run)
        if quick == self._quick:
            return
        self._quick = quick
        run = eng.run_order[:n_run]
        if len(self._buf_j) < n_run:
            self._buf_j = np.empty(2 * n_run, dtype=np.int64)
            self._buf_s = np.empty(2 * n_run)
        m = multi_node_jobs(run, eng.ji, eng.jf, self._jobs, self._starts, self._buf_j, self._buf_s)
        if m < 0:  # the same multi-node jobs on the same placements
            if not self._first:
                return
            m = len(self._jobs)
        self._first = False
        multi, starts = self._buf_j[:m].copy(), self._buf_s[:m].copy()
        self._integrate(eng, now)
        js = multi
        b, static, free = self._shares(eng, js)
        # the ring model is 1 / rate = a + s / L (perf: tau = c + 2 (n-1)/n G / L); a and s
        # of each job on its type and device count, from two of its rates, once per pair
        kept = self._start_of[js] == starts
        t_all, nd_all = eng.ji[JI_ALLOC_TYPE, js], eng.ji[JI_ALLOC_N, js]
        miss = (self._a_type[js] != t_all) | (self._a_ndev[js] != nd_all)
        if miss.any():
            new, t, nd = js[miss], t_all[miss], nd_all[miss]
            if self._table is None:
                self._table = self._ring_table(eng.ji[JI_GANG])
            a0, s0 = self._table
            whole = nd == eng.ji[JI_GANG, new]  # its gang: from the table
            self._a[new[whole]] = a0[new[whole], t[whole]]
            self._s[new[whole]] = s0[new[whole], t[whole]]
            if not whole.all():  # an elastic job on another device count
                o = ~whole
                self._a[new[o]], self._s[new[o]] = self._ring(new[o], t[o], nd[o])
            self._a_type[new], self._a_ndev[new] = t, nd
        m = len(js)
        fac, self._loss, ratio = np.empty(m), np.empty(m), np.empty(m)
        n_change = network_factors(
            js, kept, b, static, free, self._a, self._s, self.factor, fac, self._loss, ratio
        )
        if n_change:
            change = ratio != 0.0
            c = js[change]
            rerate(eng, c, eng.jf[JF_CRATE, c] * ratio[change])
            self.rerates += n_change
        self.factor[self._jobs] = 1.0  # stopped jobs restart at the engine's static rate
        self.factor[js] = fac
        self._start_of[self._jobs] = np.nan
        self._start_of[js] = starts
        self._jobs, self._b, self._starts = js, b, starts
        load = np.asarray(
            np.bincount(self._up_rack, weights=b[self._up_job], minlength=self.n_racks),
            dtype=np.float64,
        )
        self.view.uplink_load[:] = load
        self.view.uplink_users[:] = np.bincount(self._up_rack, minlength=self.n_racks)
        self.recomputes += 1
        self.view.version[0] = self.recomputes
        self._log_t.append(now)
        self._log_load.append(load)

    def _ring(self, js: IntArray, t: IntArray, nd: IntArray) -> tuple[FloatArray, FloatArray]:
        """``a`` and ``s`` of the ring model ``1 / rate = a + s / L`` of jobs ``js`` on
        ``nd`` devices of types ``t`` (m,), from their rates behind an infinite and a 1 GB/s
        link; ``a = inf`` where a job cannot run."""
        k = len(js)
        links = np.concatenate([np.full(k, np.inf), np.ones(k)])
        r = self.rates.placement_rate(
            np.concatenate([js, js]), np.concatenate([t, t]), np.concatenate([nd, nd]), links
        )
        with np.errstate(divide="ignore", invalid="ignore"):
            inv_inf, inv_one = 1.0 / r[:k], 1.0 / r[k:]
            return inv_inf, np.where(np.isfinite(inv_inf), inv_one - inv_inf, 0.0)

    def _ring_table(self, gang: IntArray) -> tuple[FloatArray, FloatArray]:
        """(n, n_types) ``a`` and ``s`` of every multi-device job on its gang on every type,
        in a few calls of the performance model (``nan`` for one-device jobs)."""
        n, nt = len(gang), self.rates.rate.shape[1]
        a0, s0 = np.full((n, nt), np.nan), np.full((n, nt), np.nan)
        js = np.flatnonzero(gang > 1)
        j, t = np.repeat(js, nt), np.tile(np.arange(nt, dtype=np.int64), len(js))
        for lo in range(0, len(j), 1 << 15):  # the model's temporaries stay small
            hi = lo + (1 << 15)
            a0[j[lo:hi], t[lo:hi]], s0[j[lo:hi], t[lo:hi]] = self._ring(
                j[lo:hi], t[lo:hi], gang[j[lo:hi]]
            )
        return a0, s0

    def _shares(self, eng: EngineView, js: IntArray) -> tuple[FloatArray, FloatArray, FloatArray]:
        """Max-min shares ``b``, the engine's static links and the uncontended links (slowest
        NIC) of jobs ``js`` (m,); sets the (job, rack) pairs of the uplinks they cross."""
        m = len(js)
        if not m:
            self._up_job, self._up_rack = _EMPTY_I, _EMPTY_I
            return _EMPTY_F, _EMPTY_F, _EMPTY_F
        n_nodes = int(eng.ji[JI_PLACED, js].sum())
        b, static, demand = np.empty(m), np.empty(m), np.empty(m)
        up_j, up_r = np.empty(n_nodes, dtype=np.int64), np.empty(n_nodes, dtype=np.int64)
        k = network_shares(
            np.ascontiguousarray(js),
            eng.ji,
            eng.slots,
            self.nic,
            self.rack,
            self.oversub,
            self.cap,
            self.options.share_nics,
            b,
            static,
            demand,
            up_j,
            up_r,
        )
        self._up_job, self._up_rack = up_j[:k], up_r[:k]
        return b, static, demand

    def _integrate(self, eng: EngineView, now: float) -> None:
        """Add lost progress and uplink traffic from the last recomputation to ``now``
        (each job from the end of its restore stall)."""
        if len(self._jobs):
            network_integrate(
                self._jobs,
                eng.jf[JF_STALL],
                self._t,
                now,
                self._loss,
                self._b,
                self._up_job,
                self._up_rack,
                self.lost_s,
                self.uplink_gb,
            )
        self._t = now

    def record(self, eng: EngineView, end: float) -> NetworkRecord:
        """What the model did, for ``RunResult.network``."""
        self._integrate(eng, end)
        span = 0.0 if self._t0 != self._t0 else end - self._t0
        return NetworkRecord(
            lost_s=self.lost_s.copy(),
            uplink_cap=self.view.uplink_cap.copy(),
            uplink_gb=self.uplink_gb.copy(),
            span_s=float(span),
            recomputes=self.recomputes,
            rerates=self.rerates,
            t=np.array(self._log_t, dtype=np.float64),
            load=np.array(self._log_load, dtype=np.float64).reshape(-1, self.n_racks),
        )


def summary(result: RunResult) -> dict[str, float | int | None]:
    """The network metrics of a run with contention on (``docs/network.md``).

    Returns
    -------
    dict
        ``network_lost_job_hours`` (progress-hours lost to contention, all jobs),
        ``network_recomputes``, ``uplink_utilisation_mean`` and ``uplink_utilisation_max``
        (over racks; ``None`` without racks).
    """
    rec = result.network
    if rec is None:
        return {}
    u = rec.uplink_utilisation
    return {
        "network_lost_job_hours": float(rec.lost_s.sum()) / 3600.0,
        "network_recomputes": int(rec.recomputes),
        "uplink_utilisation_mean": float(u.mean()) if len(u) else None,
        "uplink_utilisation_max": float(u.max()) if len(u) else None,
    }


def check_engine(coloc: bool, power: bool, whole_steps: bool) -> None:
    """Refuse what network contention does not combine with (a ``SimulationError``)."""
    for on, what in (
        (coloc, "co-location"),
        (power, "the power model"),
        (whole_steps, "whole-step rounds (--compat gavel)"),
    ):
        if on:
            raise SimulationError(f"network contention and {what} cannot be combined yet")


def check_settings(settings: object, where: str = "network") -> dict[str, bool]:
    """The network settings of a scenario (an experiment's ``network`` object), validated,
    with the defaults filled in: ``share_nics`` (a boolean, default ``True``:
    :class:`NetworkOptions`).

    Raises
    ------
    ClustersimError
        Naming the key as ``<where>.<key>``: an unknown key, a value that is not a boolean.
    """
    if not isinstance(settings, dict):
        raise ClustersimError(f"{where}: want an object of network settings")
    for key in settings:
        if key != "share_nics":
            raise ClustersimError(f"{where}.{key}: unknown setting (known: ['share_nics'])")
    share = settings.get("share_nics", True)
    if not isinstance(share, bool):
        raise ClustersimError(f"{where}.share_nics: must be true or false, not {share!r}")
    return {"share_nics": share}


def from_settings(settings: object) -> NetworkOptions:
    """The run's :class:`NetworkOptions` from a scenario's network settings
    (:func:`check_settings`)."""
    return NetworkOptions(share_nics=check_settings(settings)["share_nics"])
