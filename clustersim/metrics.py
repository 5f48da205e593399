"""Summary metrics, bounded time series and per-job tables of a run (DESIGN §3.6).

Everything here is computed from a :class:`~clustersim.result.RunResult` alone, exactly: the
timeline is piecewise constant, so every integral is a sum over segments, and carbon uses the
exact integral of the hourly step intensity (:mod:`clustersim.carbon`). User-facing definitions
with worked examples: ``docs/metrics.md``.

Definitions
-----------
Jobs
    *completed*: ``finish`` is finite. *dropped*: ``drop_reason != ""`` (this includes jobs
    still unfinished when the simulation ended). *started*: ``first_start`` is finite.
    *fit nowhere* (``jobs_fit_nowhere``): dropped because no device of the cluster can hold
    them (device memory or framework, :mod:`clustersim.fit`), a subset of *dropped*.
JCT
    ``finish - submit`` over completed jobs. Mean and percentiles (numpy's default linear
    interpolation) p50/p95/p99.
First-start delay (``queue_delay_*``)
    The queueing delay before a job first starts, ``first_start - submit``, over started jobs
    (completed or not). It ignores waiting after a preemption, so preemptive policies (LAS,
    Tiresias) can show ~0 here while jobs wait for hours: read ``wait_*`` for that.
Total wait (``wait_*``)
    ``JCT - held`` over completed jobs, where ``held`` is the wall-clock time the job held its
    gang: ``Σ RunResult.type_time`` over types (a job holds one type at a time), restore delays
    after a (re)start included, because the devices are held then. Everything else between
    submit and finish is waiting: before the first start, between a preemption and the next
    start, and, in whole-step rounds (Gavel fidelity mode), a round's idle tail after the job's
    share is done. Clipped at 0 against rounding. Mean and p50/p95/p99.
Job-size buckets
    Mean JCT of completed jobs by gang size ``num_gpus``: ``jct_mean_s_gpus_1`` (1),
    ``_2_4`` (2-4), ``_5_8`` (5-8), ``_9_plus`` (9 or more).
Makespan
    Last finish minus first submit.
Accounting window
    ``[first submit, end]`` where ``end`` is the later of the last finish and the end of the
    last timeline segment in which any device is busy. It is the makespan window whenever every
    started job completes, and it stretches to cover busy time of jobs cut off at the end of
    the simulation, so no busy energy is lost. Utilisation, energy, carbon, cost and average
    power are over this window (idle time before the first submit or after ``end`` is not
    counted). Keys ``window_start_s`` and ``window_s`` give it.
Utilisation
    Busy device-seconds / (devices × window length), overall and per accelerator type
    (``utilisation_<type>``, the type name lower-cased with every run of characters other
    than letters and digits replaced by ``_``). All devices count as available (node
    availability of edge devices is not subtracted). ``busy_device_hours`` = busy
    device-seconds over the window / 3600: the capacity the run used, on every type alike
    (restore delays and slow devices included; compare the completed work,
    ``reference_gpu_hours_completed``).
CPU and memory utilisation
    With host CPU and memory demands that can hold jobs back (:mod:`clustersim.resources`,
    ``docs/resources.md``): ``cpu_utilisation`` = allocated core-seconds (each stint's
    devices × the job's cores per device × its length) / (cores of the nodes with a limit ×
    window length), and ``mem_utilisation`` likewise in GB; ``cpu_utilisation_<type>`` and
    ``mem_utilisation_<type>`` over the nodes of each accelerator type (``None`` where no
    node of the type has a limit). ``jobs_aux_too_large``: jobs dropped because no placement
    meets their CPU or memory demand even on the empty cluster (``DROP_AUX``; a subset of
    *dropped*, apart from gangs too large for the devices). Absent when the model was off.
Idle while queued
    ``idle_while_queued``: idle device-seconds in segments where at least one job waits, over
    available device-seconds. An upper bound on fragmentation (free devices no queued job can
    use); true fragmentation needs node-level state the result does not keep, so it is not
    reported.
Jain's index
    Over users, ``(Σx)² / (n Σx²)``. A user's normalised throughput ``x`` is the device-seconds
    their jobs received divided by the device-seconds they demanded while in the system:
    ``Σ attained / Σ num_gpus × (end - submit)``, with ``end`` the finish time, or the end of
    the timeline for jobs that did not complete. 1 means the user's jobs always held their full
    gang from submission on. Jobs dropped without being admitted (too large, no usable type,
    fitting no device, rejected) are excluded; jobs left unfinished count. Jobs whose user is
    ``""`` count as one user each, so a trace without users gives Jain's index over jobs.
Finish-time fairness (Themis)
    ``ρ = JCT / JCT_isolated`` per completed job. ``JCT_isolated = standalone ×
    max(1, N × num_gpus / devices)``: the job's run time if it had an equal ``1/N`` share of
    the cluster, time-sliced when that share holds fewer devices than its gang.
    ``standalone = Σ device_time / num_gpus`` (its own wall time on the devices it held,
    including restore delays). ``N`` = time-averaged number of jobs in the system (queued plus
    running, from the timeline) over the job's lifetime ``[submit, finish)``, at least 1.
    Reported as ``ftf_rho_max``, ``ftf_rho_mean`` and ``ftf_share_le_1`` (share of jobs with
    ``ρ ≤ 1``, relative tolerance 1e-9).
Deadlines
    ``deadline_met_share``: of jobs with a finite deadline, the share that completed no later
    than it (dropped and unfinished jobs miss).
Energy
    Per region, facility power = (Σ over types of busy devices × ``busy_w`` + idle devices ×
    ``idle_w`` + Σ node overhead) × PUE, integrated over the window; in kWh. Without the power
    model nodes never power down, so every device is either busy or idle. With it
    (:mod:`clustersim.power`, ``RunResult.power``) off nodes draw nothing, waking nodes their
    idle draw, and a capped busy device ``cap × busy_w``. ``avg_power_kw`` = energy / window
    hours.
Energy by state
    ``energy_busy_kwh``, ``energy_idle_kwh``, ``energy_wake_kwh``: the same energy split by
    the state of what draws it (:func:`clustersim.power.state_power_w`; each device carries
    an equal share of its node's overhead, in its own state; off nodes draw nothing), so they
    add up to ``energy_kwh``. ``node_off_hours``: node-hours spent off (0 without the power
    model). ``peak_power_kw``: the highest facility power (incl. PUE) of any segment of the
    window. ``energy_per_ref_gpu_hour_kwh``: ``energy_kwh`` over
    ``reference_gpu_hours_completed`` (energy per unit of completed work).
    ``carbon_per_ref_gpu_hour_kg``: ``carbon_kg`` over the same (carbon per unit of work).
Carbon
    ``∫ facility power × intensity(region, t) dt`` per region, in kg CO2e, with the zone's
    hourly life-cycle intensity (simulation time 0 = ``carbon_start``) or, for a region without
    a zone, its constant ``carbon_g_per_kwh``. ``carbon_intensity_mean_g_per_kwh`` = carbon /
    energy.
Cost horizon
    A planning window ``[horizon_start_s, horizon_start_s + horizon_s]`` that is the same for
    every policy run on the same workload and load factor: it starts at the first submit and
    lasts the workload's arrival span (last submit − first submit of ``result.jobs``), at least
    :data:`MIN_HORIZON_S`, unless the caller sets ``horizon_s``.
Owned cost (``cost_owned_usd``, alias ``cost_usd``)
    What an owned or reserved cluster costs over the horizon whatever the policy does:
    ``cost_owned_capital_usd`` = Σ over types of devices × ``capital_per_hour`` × horizon
    hours (``capital_per_hour`` = ``purchase_usd / (amortisation_years × 8760 h)``,
    :class:`~clustersim.cluster.AcceleratorType`), plus ``cost_owned_energy_usd`` = Σ over
    regions of the facility energy inside the horizon × ``price_per_kwh``. Energy inside the
    horizon comes from the timeline clipped to it; where the timeline does not cover the
    horizon (the run ended early, or there is none) every device draws idle power. A run that
    goes on past the horizon pays only for the part inside.
Cloud cost (``cost_cloud_usd``)
    What renting the devices on demand costs: Σ over types of ``price_per_hour`` × busy
    device-hours, over the whole run (device-hours actually held; on-demand prices include
    power, so no energy is added).
Spot capacity (clusters with spot pools only; ``docs/failures.md``)
    The cloud cost charges the device-hours held on a spot pool's nodes at its spot price,
    not the on-demand price: ``cost_cloud_spot_usd`` is that part, ``spot_device_hours`` the
    device-hours it pays for and ``spot_savings_usd`` what they would have cost more at
    on-demand prices. Owned cost is unchanged (it prices every device as owned). With
    reclaims on, ``spot_reclaims``, ``spot_device_hours_reclaimed``, ``spot_restarts``,
    ``spot_jobs_restarted``, ``spot_restarts_saved_by_notice`` and
    ``spot_lost_work_device_hours``, apart from the failures' keys, and ``goodput``,
    ``effective_training_time_ratio`` and ``checkpoint_device_hours`` as with failures
    (counting the work lost to both).
Electricity cost (``electricity_cost_usd``)
    Σ region energy over the accounting window × region ``price_per_kwh`` (the energy of
    ``energy_kwh``); informational, not part of either cost.
Cost-normalised throughput
    Completed *work*, not capacity used (DESIGN §3.6). ``reference_gpu_hours_completed`` =
    Σ over completed jobs of ``RunResult.ref_gpu_s`` / 3600: each job's whole work in
    reference GPU-hours, the device-hours its full gang needs on the reference placement
    (P100; ``num_gpus × work / reference rate``, :attr:`clustersim.perf.JobRates.ref_gpu_s`).
    It depends on the job alone: the same job counts the same whether it ran on K80s or
    H100s, consolidated or spread, preempted or not, so a policy cannot raise it by holding
    devices longer (that shows in ``busy_device_hours``, the capacity figure). A job whose
    reference work is undefined (``nan``: it cannot run on P100 at its scale) counts 0.
    ``reference_gpu_hours_in_horizon`` = the same over jobs that completed by the end of the
    horizon. ``work_per_dollar`` = ``reference_gpu_hours_in_horizon / cost_owned_usd`` (the
    same horizon, so the same denominator up to energy, for every policy);
    ``work_per_dollar_cloud`` = ``reference_gpu_hours_completed / cost_cloud_usd``. Both in
    reference GPU-hours per dollar.
Failures (runs with failures on only; ``docs/failures.md``)
    ``node_failures``, ``device_hours_down`` (devices × downtime within the run),
    ``restarts`` (jobs killed by a failure, counted per kill), ``jobs_restarted``,
    ``lost_work_device_hours`` (device-hours of computing redone: done since the last
    checkpoint of a killed job), ``checkpoint_device_hours`` (device-hours spent writing
    checkpoints), ``goodput`` = useful / held device-seconds, useful being held minus restore
    stalls, checkpoints and lost work, and ``effective_training_time_ratio`` = over completed
    jobs, Σ useful wall seconds / Σ (finish − first start) (Kokolis et al., HPCA 2025). These
    keys are absent from runs with failures off, whose summary is exactly as before.
Network contention (runs with it on only; ``docs/network.md``)
    ``network_lost_job_hours`` (Σ over jobs of ∫ (1 − rate / uncontended rate) dt: progress
    time lost to sharing NICs and rack uplinks), ``network_recomputes``,
    ``uplink_utilisation_mean`` and ``uplink_utilisation_max`` over racks (carried / (capacity
    × run length)); per rack in ``RunResult.network``. Absent with the model off.
Undefined values
    A mean, percentile, ratio or index over nothing (no completed job, a zero-length window,
    no deadline, zero cost) is ``None``; counts, sums, energy, carbon and cloud cost are then
    ``0`` (owned cost is never 0 for a cluster with priced devices: it pays for the horizon).
    No value is ever NaN or infinite, so ``json.dumps(..., allow_nan=False)`` succeeds.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from clustersim.carbon import DEFAULT_START, J_PER_KWH, CarbonSeries, load_zone
from clustersim.cluster import Cluster
from clustersim.errors import ClustersimError
from clustersim.failures import summary as failure_metrics
from clustersim.network import summary as network_metrics
from clustersim.power import BUSY, IDLE, OFF, WAKE, state_power_w
from clustersim.result import (
    DROP_AUX,
    DROP_NO_FIT,
    DROP_NO_TYPE,
    DROP_REJECTED,
    DROP_TOO_LARGE,
    RunResult,
)
from clustersim.spot import cost as spot_cost
from clustersim.spot import summary as spot_metrics
from clustersim.stragglers import summary as straggler_metrics

if TYPE_CHECKING:  # pandas only for the per-job tables, not on the simulation path
    import pandas as pd

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
Number = float | int | None

#: Shortest default cost horizon, s (a workload whose jobs all arrive at once still gets one hour).
MIN_HORIZON_S = 3600.0
#: Job-size buckets: (key suffix, smallest gang, largest gang).
SIZE_BUCKETS: tuple[tuple[str, int, int], ...] = (
    ("1", 1, 1),
    ("2_4", 2, 4),
    ("5_8", 5, 8),
    ("9_plus", 9, np.iinfo(np.int64).max),
)
_NOT_ADMITTED = (DROP_TOO_LARGE, DROP_NO_TYPE, DROP_NO_FIT, DROP_AUX, DROP_REJECTED)
_RHO_TOL = 1e-9


def sanitize(name: str) -> str:
    """Key-safe form of a type name: lower case, other characters runs become ``_``."""
    return re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_") or "type"


def type_keys(cluster: Cluster) -> list[str]:
    """Sanitized, unique key suffix of every accelerator type (``_2``, ``_3`` on clashes)."""
    return name_keys([t.name for t in cluster.types])


def name_keys(names: Sequence[str]) -> list[str]:
    """:func:`type_keys` of accelerator type names given in the cluster's type order."""
    keys: list[str] = []
    for name in names:
        base = key = sanitize(name)
        k = 2
        while key in keys:
            key = f"{base}_{k}"
            k += 1
        keys.append(key)
    return keys


# -- small numeric helpers -------------------------------------------------------------------


def _num(x: float) -> float | None:
    """A finite float, or ``None``."""
    x = float(x)
    return x if np.isfinite(x) else None


def _mean(x: FloatArray) -> float | None:
    return _num(float(np.mean(x))) if len(x) else None


def _pct(x: FloatArray, q: float) -> float | None:
    return _num(float(np.percentile(x, q))) if len(x) else None


def _ratio(a: float, b: float) -> float | None:
    return _num(a / b) if b > 0 else None


def _cum_at(seg_t: FloatArray, values: FloatArray, points: FloatArray) -> FloatArray:
    """Exact integral from ``seg_t[0]`` to ``points`` of piecewise-constant ``values``.

    Parameters
    ----------
    seg_t : (s + 1,) float64
        Segment boundaries, ascending, ``s >= 1``.
    values : (s,) or (s, k) float64
        Value in each segment.
    points : (m,) float64
        Times within ``[seg_t[0], seg_t[-1]]``.

    Returns
    -------
    (m,) or (m, k) float64
    """
    dt = np.diff(seg_t)
    v = values.reshape(len(dt), -1)
    cum = np.concatenate((np.zeros((1, v.shape[1])), np.cumsum(v * dt[:, None], axis=0)))
    i = np.clip(np.searchsorted(seg_t, points, side="right") - 1, 0, len(dt) - 1)
    out = cum[i] + v[i] * (points - seg_t[i])[:, None]
    return np.asarray(out.reshape((len(points), *values.shape[1:])), dtype=np.float64)


# -- timeline quantities ---------------------------------------------------------------------


def _devices(cluster: Cluster) -> FloatArray:
    """(n_types, n_regions) devices of each type in each region."""
    nt, nr = cluster.n_types, len(cluster.regions)
    flat = np.bincount(
        cluster.node_type * nr + cluster.node_region,
        weights=cluster.node_devices,
        minlength=nt * nr,
    )
    return np.asarray(flat.reshape(nt, nr), dtype=np.float64)


def _region_power_w(result: RunResult, states: FloatArray | None = None) -> FloatArray:
    """(s, n_regions) facility power (incl. PUE) of each region in each segment, W.
    ``states``: :func:`clustersim.power.state_power_w` of the run when the caller has it."""
    cl = result.cluster
    if result.power is not None:  # nodes off or waking, devices capped (clustersim.power)
        pue_r = np.array([r.pue for r in cl.regions], dtype=np.float64)
        by_state = state_power_w(result) if states is None else states
        return np.asarray(by_state.sum(axis=2) * pue_r, dtype=np.float64)
    busy = np.asarray(result.seg_busy, dtype=np.float64)
    busy_w = np.array([t.busy_w for t in cl.types], dtype=np.float64)
    idle_w = np.array([t.idle_w for t in cl.types], dtype=np.float64)
    pue = np.array([r.pue for r in cl.regions], dtype=np.float64)
    overhead = np.bincount(
        cl.node_region, weights=cl.node_overhead_w, minlength=len(cl.regions)
    ).astype(np.float64)
    idle_power = (_devices(cl) * idle_w[:, None]).sum(axis=0)  # all devices idle, (n_regions,)
    extra = np.einsum("str,t->sr", busy, busy_w - idle_w)
    return np.asarray((idle_power + overhead + extra) * pue, dtype=np.float64)


def _region_series(cluster: Cluster, carbon_start: str) -> list[CarbonSeries]:
    """The carbon series of each region: its zone's hourly data, else its constant."""
    return [
        load_zone(r.carbon_zone, carbon_start)
        if r.carbon_zone
        else CarbonSeries.constant(r.carbon_g_per_kwh)
        for r in cluster.regions
    ]


def _segments(result: RunResult) -> int:
    return max(len(result.seg_t) - 1, 0)


def _window(result: RunResult) -> tuple[float, float]:
    """The accounting window ``(start, end)`` (see the module docstring)."""
    seg_t = np.asarray(result.seg_t, dtype=np.float64)
    if len(seg_t) == 0:
        return 0.0, 0.0
    start = float(seg_t[0])
    end = start
    fin = result.finish[np.isfinite(result.finish)]
    if len(fin):
        end = max(end, float(fin.max()))
    s = _segments(result)
    if s:
        busy_any = np.asarray(result.seg_busy).reshape(s, -1).sum(axis=1) > 0
        if busy_any.any():
            end = max(end, float(seg_t[int(np.flatnonzero(busy_any)[-1]) + 1]))
    return start, end


def _clipped_t(result: RunResult, window: tuple[float, float]) -> FloatArray:
    return np.clip(np.asarray(result.seg_t, dtype=np.float64), window[0], window[1])


def cost_horizon(result: RunResult, horizon_s: float | None = None) -> tuple[float, float]:
    """The cost horizon ``(start, length)`` in seconds (see the module docstring).

    Parameters
    ----------
    result
        The run.
    horizon_s
        Length set by the caller (> 0); ``None`` for the workload's arrival span, at least
        :data:`MIN_HORIZON_S`.

    Raises
    ------
    ClustersimError
        If ``horizon_s`` is not a positive finite number.
    """
    submit = np.asarray(result.jobs.submit_time, dtype=np.float64)
    if len(submit):
        start, span = float(submit.min()), float(submit.max() - submit.min())
    else:
        start = float(result.seg_t[0]) if len(result.seg_t) else 0.0
        span = 0.0
    if horizon_s is None:
        return start, max(span, MIN_HORIZON_S)
    h = float(horizon_s)
    if not (np.isfinite(h) and h > 0):
        raise ClustersimError(f"the cost horizon must be a positive number of seconds, not {h!r}")
    return start, h


def _horizon_energy_kwh(
    result: RunResult, start: float, length: float, power: FloatArray | None = None
) -> FloatArray:
    """(n_regions,) facility energy inside ``[start, start + length]``, kWh (``power``: the
    run's :func:`_region_power_w` when the caller has it).

    The timeline clipped to the horizon, and idle power (every device idle, plus node overhead,
    times PUE) wherever the timeline does not cover it.
    """
    cl = result.cluster
    end = start + length
    idle_w = np.array([t.idle_w for t in cl.types], dtype=np.float64)
    pue = np.array([r.pue for r in cl.regions], dtype=np.float64)
    overhead = np.bincount(
        cl.node_region, weights=cl.node_overhead_w, minlength=len(cl.regions)
    ).astype(np.float64)
    idle_power = ((_devices(cl) * idle_w[:, None]).sum(axis=0) + overhead) * pue
    if result.power is not None:  # nodes stay as they were at the end (off ones draw nothing)
        idle_power = result.power.end_idle_w * pue
    s = _segments(result)
    if s == 0:
        return np.asarray(idle_power * length / J_PER_KWH, dtype=np.float64)
    seg_t = np.asarray(result.seg_t, dtype=np.float64)
    t = np.clip(seg_t, start, end)
    if power is None:
        power = _region_power_w(result)
    covered = (power * np.diff(t)[:, None]).sum(axis=0)
    uncovered = length - float(t[-1] - t[0])
    return np.asarray((covered + idle_power * uncovered) / J_PER_KWH, dtype=np.float64)


# -- per-job quantities ----------------------------------------------------------------------


def _ftf_rho(result: RunResult) -> FloatArray:
    """(n,) Themis finish-time fairness ρ of each completed job; ``nan`` otherwise."""
    jobs = result.jobs
    n = len(jobs)
    rho = np.full(n, np.nan)
    done = np.flatnonzero(result.completed)
    s = _segments(result)
    if len(done) == 0 or s == 0:
        return rho
    seg_t = np.asarray(result.seg_t, dtype=np.float64)
    active = (np.asarray(result.seg_queued) + np.asarray(result.seg_running)).astype(np.float64)
    submit = jobs.submit_time[done]
    finish = result.finish[done]
    lo, hi = seg_t[0], seg_t[-1]
    a = np.clip(submit, lo, hi)
    b = np.clip(finish, lo, hi)
    area = _cum_at(seg_t, active, b) - _cum_at(seg_t, active, a)
    with np.errstate(divide="ignore", invalid="ignore"):
        n_avg = np.where(b > a, area / (b - a), 1.0)
    n_avg = np.maximum(n_avg, 1.0)
    gpus = jobs.num_gpus[done].astype(np.float64)
    standalone = result.device_time[done].sum(axis=1) / gpus
    total = float(result.cluster.total_devices)
    isolated = standalone * np.maximum(1.0, n_avg * gpus / total) if total > 0 else standalone
    jct = finish - submit
    with np.errstate(divide="ignore", invalid="ignore"):
        rho[done] = np.where(isolated > 0, jct / isolated, np.nan)
    return rho


def _held(result: RunResult) -> FloatArray:
    """(n,) wall-clock seconds each job held its gang (restore delays included)."""
    return np.asarray(result.type_time.sum(axis=1), dtype=np.float64)


def _wait(result: RunResult) -> FloatArray:
    """(n,) total wait ``JCT - held`` of each completed job, at least 0; ``nan`` otherwise."""
    jct = result.finish - result.jobs.submit_time
    return np.asarray(np.maximum(jct - _held(result), 0.0), dtype=np.float64)


def _jain(result: RunResult) -> float | None:
    """Jain's index over users' normalised throughput (see the module docstring)."""
    jobs = result.jobs
    keep = ~np.isin(result.drop_reason.astype(str), _NOT_ADMITTED)
    if not keep.any():
        return None
    idx = np.flatnonzero(keep)
    t_end = float(result.seg_t[-1]) if len(result.seg_t) else 0.0
    end = np.where(np.isfinite(result.finish[idx]), result.finish[idx], t_end)
    demand = jobs.num_gpus[idx] * np.maximum(end - jobs.submit_time[idx], 0.0)
    got = result.attained[idx]
    users = np.array(
        [f"u:{u}" if u else f"j:{i}" for u, i in zip(jobs.user[idx], idx, strict=True)],
        dtype=object,
    )
    _, inverse = np.unique(users.astype(str), return_inverse=True)
    got_u = np.bincount(inverse, weights=got)
    demand_u = np.bincount(inverse, weights=demand)
    ok = demand_u > 0
    if not ok.any():
        return None
    x = got_u[ok] / demand_u[ok]
    sq = float((x**2).sum())
    return _num(float(x.sum()) ** 2 / (len(x) * sq)) if sq > 0 else None


# -- public API ------------------------------------------------------------------------------


def _aux_utilisation(result: RunResult, span: float, keys: list[str]) -> dict[str, Number]:
    """``cpu_utilisation`` and ``mem_utilisation``, overall and per accelerator type
    (``cpu_utilisation_<type>``): allocated core- (GB-) seconds over the cores (GB) of the
    nodes with a limit × the window (:func:`clustersim.resources.utilisation`)."""
    from clustersim.resources import utilisation

    assert result.aux is not None
    cl, st = result.cluster, result.stints
    got = utilisation(
        result.aux,
        st.job,
        st.node,
        st.devices,
        st.end - st.start,
        span,
        cl.node_type,
        cl.n_types,
    )
    out: dict[str, Number] = {}
    for r in ("cpu", "mem"):
        total = got[r]
        out[f"{r}_utilisation"] = None if total is None else _num(float(total))
        per = np.asarray(got[f"{r}_type"], dtype=np.float64)
        for k, key in enumerate(keys):
            out[f"{r}_utilisation_{key}"] = _num(float(per[k]))
    return out


def summary(
    result: RunResult,
    *,
    carbon_start: str = DEFAULT_START,
    horizon_s: float | None = None,
) -> dict[str, Number]:
    """Summary metrics of a run as one flat, JSON-safe dict (definitions: module docstring).

    Parameters
    ----------
    result
        The run.
    carbon_start
        Calendar instant (ISO 8601, UTC) of simulation time 0, for hourly carbon intensity.
    horizon_s
        Length of the cost horizon in seconds; ``None`` for the workload's arrival span (at
        least :data:`MIN_HORIZON_S`). Give the same value to every run you compare.

    Returns
    -------
    dict
        Stable keys mapping to ``int``, ``float`` or ``None`` (undefined), never NaN.

    Raises
    ------
    ClustersimError
        A bad ``horizon_s``, an unknown carbon zone, or an unparsable ``carbon_start``.
    """
    h_start, h_len = cost_horizon(result, horizon_s)
    jobs, cl = result.jobs, result.cluster
    out: dict[str, Number] = {}
    done = result.completed
    started = np.isfinite(result.first_start)
    submit = jobs.submit_time

    out["jobs_total"] = len(jobs)
    out["jobs_completed"] = int(done.sum())
    out["jobs_dropped"] = int(result.dropped.sum())
    out["jobs_fit_nowhere"] = int(np.count_nonzero(result.drop_reason == DROP_NO_FIT))
    out["jobs_started"] = int(started.sum())

    jct = result.finish[done] - submit[done]
    out["jct_mean_s"] = _mean(jct)
    for q in (50, 95, 99):
        out[f"jct_p{q}_s"] = _pct(jct, q)
    qd = result.first_start[started] - submit[started]
    out["queue_delay_mean_s"] = _mean(qd)
    for q in (50, 95, 99):
        out[f"queue_delay_p{q}_s"] = _pct(qd, q)
    wait = _wait(result)[done]
    out["wait_mean_s"] = _mean(wait)
    for q in (50, 95, 99):
        out[f"wait_p{q}_s"] = _pct(wait, q)
    gpus_done = jobs.num_gpus[done]
    for suffix, lo, hi in SIZE_BUCKETS:
        out[f"jct_mean_s_gpus_{suffix}"] = _mean(jct[(gpus_done >= lo) & (gpus_done <= hi)])
    out["makespan_s"] = (
        _num(float(result.finish[done].max() - submit.min())) if done.any() else None
    )

    # Timeline over the accounting window.
    window = _window(result)
    span = window[1] - window[0]
    out["window_start_s"] = _num(window[0])
    out["window_s"] = _num(span)
    s = _segments(result)
    dev = _devices(cl)  # (n_types, n_regions)
    dev_type = dev.sum(axis=1)
    total_dev = float(dev.sum())
    keys = type_keys(cl)
    if s:
        t = _clipped_t(result, window)
        dt = np.diff(t)
        busy = np.asarray(result.seg_busy, dtype=np.float64)
        busy_type_s = (busy.sum(axis=2) * dt[:, None]).sum(axis=0)  # (n_types,)
        queued = np.asarray(result.seg_queued) > 0
        idle_dev = total_dev - busy.reshape(s, -1).sum(axis=1)
        idle_queued_s = float((idle_dev * dt * queued).sum())
        states = state_power_w(result)  # (s, n_regions, 3), once for the power and its split
        power = _region_power_w(result, states)  # (s, n_regions)
        energy_kwh_r = (power * dt[:, None]).sum(axis=0) / J_PER_KWH
        series = _region_series(cl, carbon_start)
        carbon_g = sum(
            (ser.energy_weighted(t, power[:, r]) for r, ser in enumerate(series)), start=0.0
        )
    else:
        busy_type_s = np.zeros(cl.n_types)
        idle_queued_s = 0.0
        energy_kwh_r = np.zeros(len(cl.regions))
        carbon_g = 0.0

    avail = total_dev * span
    out["utilisation"] = _ratio(float(busy_type_s.sum()), avail)
    for k, key in enumerate(keys):
        out[f"utilisation_{key}"] = _ratio(float(busy_type_s[k]), float(dev_type[k]) * span)
    out["busy_device_hours"] = float(busy_type_s.sum()) / 3600.0
    # host CPU and memory (clustersim.resources): keys present only when the model was on
    if result.aux is not None:
        out.update(_aux_utilisation(result, span, keys))
        out["jobs_aux_too_large"] = int(np.count_nonzero(result.drop_reason == DROP_AUX))
    out["idle_while_queued"] = _ratio(idle_queued_s, avail)

    out["jain_index"] = _jain(result)
    rho = _ftf_rho(result)
    rho = rho[np.isfinite(rho)]
    out["ftf_rho_max"] = _num(float(rho.max())) if len(rho) else None
    out["ftf_rho_mean"] = _mean(rho)
    out["ftf_share_le_1"] = _mean((rho <= 1.0 + _RHO_TOL).astype(np.float64))

    has_deadline = np.isfinite(jobs.deadline)
    met = done & has_deadline & (np.nan_to_num(result.finish, nan=np.inf) <= jobs.deadline)
    out["deadline_met_share"] = _ratio(float(met.sum()), float(has_deadline.sum()))

    out["preemptions"] = int(np.asarray(result.preemptions).sum())
    out["migrations"] = int(np.asarray(result.migrations).sum())
    out["resizes"] = int(np.asarray(result.resizes).sum())  # elastic jobs (clustersim.elastic)
    # allocation LPs (scheduling/allocation.py): 0 for policies that solve none
    stats = result.policy_stats
    out["lp_solves"] = int(stats.get("lp_solves", 0))
    out["lp_solver_s"] = float(stats.get("lp_solver_s", 0.0))
    out["lp_fallbacks"] = int(stats.get("lp_fallbacks", 0))
    # co-location (clustersim.colocation): 0 for policies that pair no jobs
    out["colocations"] = int(stats.get("colocations", 0))
    out["colocated_job_hours"] = float(stats.get("colocated_job_s", 0.0)) / 3600.0
    # node failures (clustersim.failures): keys present only when the run had failures on
    if result.failures is not None:
        out.update(failure_metrics(result))
    # spot reclaims (clustersim.spot): keys present only when the run had reclaims on; its
    # goodput and ETTR count the work lost to reclaims and failures together
    if result.spot is not None:
        out.update(spot_metrics(result))
    # slow nodes (clustersim.stragglers): keys present only when the run had stragglers on
    if result.stragglers is not None:
        out.update(straggler_metrics(result))
    # network contention (clustersim.network): keys present only when the model was on
    if result.network is not None:
        out.update(network_metrics(result))
    # GPU sharing (clustersim.gpushare): keys present only when the model was on
    if result.gpushare is not None:
        out.update(gpushare_metrics(result))

    energy_kwh = float(energy_kwh_r.sum())
    out["energy_kwh"] = energy_kwh
    if s:
        by_state = states * np.array([r.pue for r in cl.regions])[None, :, None]
        state_kwh = (by_state.sum(axis=1) * dt[:, None]).sum(axis=0) / J_PER_KWH
        live = dt > 0
        peak_w = float(power.sum(axis=1)[live].max()) if live.any() else 0.0
    else:
        state_kwh = np.zeros(3)
        peak_w = 0.0
    out["energy_busy_kwh"] = float(state_kwh[BUSY])
    out["energy_idle_kwh"] = float(state_kwh[IDLE])
    out["energy_wake_kwh"] = float(state_kwh[WAKE])
    out["node_off_hours"] = 0.0 if result.power is None else result.power.node_hours(OFF)
    out["peak_power_kw"] = peak_w / 1000.0
    out["avg_power_kw"] = _ratio(energy_kwh, span / 3600.0)
    out["carbon_kg"] = float(carbon_g) / 1000.0
    out["carbon_intensity_mean_g_per_kwh"] = _ratio(float(carbon_g), energy_kwh)

    kwh_price = np.array([r.price_per_kwh for r in cl.regions], dtype=np.float64)
    out["electricity_cost_usd"] = float((energy_kwh_r * kwh_price).sum())

    # Owned cluster: capital and energy over the cost horizon, the same for every policy.
    out["horizon_start_s"] = _num(h_start)
    out["horizon_s"] = _num(h_len)
    capital_h = np.array([t.capital_per_hour for t in cl.types], dtype=np.float64)
    capital = float((capital_h * dev_type).sum()) * h_len / 3600.0
    energy_cost = float(
        (_horizon_energy_kwh(result, h_start, h_len, power if s else None) * kwh_price).sum()
    )
    owned = capital + energy_cost
    out["cost_owned_capital_usd"] = capital
    out["cost_owned_energy_usd"] = energy_cost
    out["cost_owned_usd"] = owned
    out["cost_usd"] = owned  # documented alias of cost_owned_usd
    # Cloud: on-demand price of the device-hours actually held (spot pools' at their price).
    price = np.array([t.price_per_hour for t in cl.types], dtype=np.float64)
    cloud = float((price * busy_type_s).sum()) / 3600.0
    if cl.node_spot.any():  # keys present only for a cluster with spot pools
        spot_h, spot_usd, spot_on_demand_usd = spot_cost(result, window)
        cloud += spot_usd - spot_on_demand_usd
        out["spot_device_hours"] = spot_h
        out["cost_cloud_spot_usd"] = spot_usd
        out["spot_savings_usd"] = spot_on_demand_usd - spot_usd
    out["cost_cloud_usd"] = cloud

    # Completed work in reference GPU-hours (policy-independent per job), not device-hours held.
    work_h = np.nan_to_num(np.asarray(result.ref_gpu_s, dtype=np.float64), nan=0.0) / 3600.0
    ref_gpu_h = float(work_h[done].sum())
    in_horizon = done & (np.nan_to_num(result.finish, nan=np.inf) <= h_start + h_len)
    ref_gpu_h_horizon = float(work_h[in_horizon].sum())
    out["reference_gpu_hours_completed"] = ref_gpu_h
    out["reference_gpu_hours_in_horizon"] = ref_gpu_h_horizon
    out["work_per_dollar"] = _ratio(ref_gpu_h_horizon, owned)
    out["work_per_dollar_cloud"] = _ratio(ref_gpu_h, cloud)
    out["energy_per_ref_gpu_hour_kwh"] = _ratio(energy_kwh, ref_gpu_h)
    out["carbon_per_ref_gpu_hour_kg"] = _ratio(float(carbon_g) / 1000.0, ref_gpu_h)
    return out


def carbon_savings(shifted: Mapping[str, Any], baseline: Mapping[str, Any]) -> dict[str, Any]:
    """Carbon a shifting run saved against the same run without shifting, and the JCT it cost.

    ``shifted`` and ``baseline`` are two :func:`summary` results of the same cluster,
    workload, load, seed and ``carbon_start``: a carbon-aware policy (``carbon-wait``,
    ``carbon-suspend``, ``carbon-region``) and its ``base`` policy run alone (see
    ``docs/carbon.md``: the experiment lists both; nothing here re-simulates).

    Returns
    -------
    dict
        ``carbon_saved_kg`` (baseline − shifted ``carbon_kg``), ``carbon_saved_pct`` (of the
        baseline's), ``carbon_per_ref_gpu_hour_saved_kg`` (the same per unit of completed
        work, fair when the two runs complete different work), ``jct_mean_cost_s`` and
        ``jct_p95_cost_s`` (shifted − baseline), ``jct_mean_cost_pct`` (of the baseline's
        mean JCT), ``completed_delta`` (jobs completed, shifted − baseline). ``None`` where
        an input is ``None`` (or a percentage's base is 0).
    """

    def diff(key: str, sign: float = 1.0) -> float | None:
        a, b = shifted.get(key), baseline.get(key)
        if a is None or b is None:
            return None
        return sign * (float(a) - float(b))

    saved = diff("carbon_kg", -1.0)
    base_kg = baseline.get("carbon_kg")
    jct_cost = diff("jct_mean_s")
    base_jct = baseline.get("jct_mean_s")
    return {
        "carbon_saved_kg": saved,
        "carbon_saved_pct": None
        if saved is None or not base_kg
        else 100.0 * saved / float(base_kg),
        "carbon_per_ref_gpu_hour_saved_kg": diff("carbon_per_ref_gpu_hour_kg", -1.0),
        "jct_mean_cost_s": diff("jct_mean_s"),
        "jct_p95_cost_s": diff("jct_p95_s"),
        "jct_mean_cost_pct": None
        if jct_cost is None or not base_jct
        else 100.0 * jct_cost / float(base_jct),
        "completed_delta": diff("jobs_completed"),
    }


def _bin_edges(seg_t: FloatArray, max_points: int) -> FloatArray:
    """Segment boundaries if they fit in ``max_points`` bins, else equal-width bins."""
    edges = np.unique(seg_t)
    if len(edges) - 1 <= max_points:
        return edges
    return np.linspace(seg_t[0], seg_t[-1], max_points + 1)


def timeseries(
    result: RunResult, max_points: int = 5000, carbon_start: str = DEFAULT_START
) -> dict[str, list[float]]:
    """The run's timeline as at most ``max_points`` time-weighted bin averages.

    The whole timeline ``[seg_t[0], seg_t[-1]]`` is covered. When it has at most
    ``max_points`` non-empty segments each point is one segment (exact values); otherwise the
    span is cut into ``max_points`` equal bins and each value is the exact time-weighted average
    of the piecewise-constant data over its bin, so ``Σ value × dt_s`` equals the integral.

    Parameters
    ----------
    result
        The run.
    max_points
        Largest number of points (>= 1).
    carbon_start
        Calendar instant of simulation time 0 for hourly carbon intensity.

    Returns
    -------
    dict of str to list of float
        ``t_s`` (bin start, s), ``dt_s`` (bin width, s), ``utilisation`` (busy / all devices),
        ``busy_<type>`` (average busy devices of each type), ``queued`` and ``running``
        (average jobs), ``power_kw`` (facility power incl. PUE, all regions),
        ``power_busy_kw``, ``power_idle_kw`` and ``power_wake_kw`` (the same power split by
        the state of what draws it, as ``energy_*_kwh``; they add up to ``power_kw``),
        ``carbon_rate_kg_per_h`` (all regions) and ``carbon_intensity_g_per_kwh`` (average
        intensity of the first region with a carbon zone, else of the first region's constant).
        With CPU and memory modelled (``result.aux``), ``cpu_utilisation`` and
        ``mem_utilisation`` too, each only when some node limits it (:func:`aux_series`).
        All lists have the same length; empty for a run without a timeline.
    """
    if max_points < 1:
        raise ClustersimError(f"max_points must be at least 1, got {max_points}")
    cl = result.cluster
    keys = type_keys(cl)
    names = ["t_s", "dt_s", "utilisation", *(f"busy_{k}" for k in keys), "queued", "running"]
    names += ["power_kw", "power_busy_kw", "power_idle_kw", "power_wake_kw"]
    names += ["carbon_rate_kg_per_h", "carbon_intensity_g_per_kwh"]
    seg_t = np.asarray(result.seg_t, dtype=np.float64)
    s = _segments(result)
    if s == 0 or seg_t[-1] <= seg_t[0]:
        return {name: [] for name in names}

    edges = _bin_edges(seg_t, max_points)
    t0, t1 = edges[:-1], edges[1:]
    width = t1 - t0

    def average(values: FloatArray) -> FloatArray:
        area = _cum_at(seg_t, values, t1) - _cum_at(seg_t, values, t0)
        return np.asarray(area / (width if area.ndim == 1 else width[:, None]), dtype=np.float64)

    busy_type = np.asarray(result.seg_busy, dtype=np.float64).sum(axis=2)  # (s, n_types)
    states = state_power_w(result)  # (s, n_regions, 3)
    power = _region_power_w(result, states)  # (s, n_regions)
    pue = np.array([r.pue for r in cl.regions], dtype=np.float64)
    by_state = np.einsum("srk,r->sk", states, pue)  # (s, 3) facility power by state
    series = _region_series(cl, carbon_start)
    # Exact cumulative grams at the bin edges: whole segments, then the partial one.
    i = np.clip(np.searchsorted(seg_t, edges, side="right") - 1, 0, s - 1)
    grams_at = np.zeros(len(edges))
    for r, ser in enumerate(series):
        f_seg = ser.cumulative(seg_t)
        cum = np.concatenate(([0.0], np.cumsum(power[:, r] * np.diff(f_seg))))
        grams_at += (cum[i] + power[i, r] * (ser.cumulative(edges) - f_seg[i])) / J_PER_KWH

    zoned = [r for r, reg in enumerate(cl.regions) if reg.carbon_zone]
    shown = series[zoned[0]] if zoned else series[0] if series else CarbonSeries.constant(0.0)
    total_dev = float(cl.total_devices)
    busy_avg = average(busy_type)
    out: dict[str, list[float]] = {"t_s": t0.tolist(), "dt_s": width.tolist()}
    util = busy_avg.sum(axis=1) / total_dev if total_dev > 0 else np.zeros(len(t0))
    out["utilisation"] = util.tolist()
    for k, key in enumerate(keys):
        out[f"busy_{key}"] = busy_avg[:, k].tolist()
    out["queued"] = average(np.asarray(result.seg_queued, dtype=np.float64)).tolist()
    out["running"] = average(np.asarray(result.seg_running, dtype=np.float64)).tolist()
    out["power_kw"] = (average(power.sum(axis=1)) / 1000.0).tolist()
    state_avg = average(by_state) / 1000.0
    for k, name in ((BUSY, "busy"), (IDLE, "idle"), (WAKE, "wake")):
        out[f"power_{name}_kw"] = state_avg[:, k].tolist()
    out["carbon_rate_kg_per_h"] = (np.diff(grams_at) / 1000.0 / (width / 3600.0)).tolist()
    out["carbon_intensity_g_per_kwh"] = shown.mean_intensity(t0, t1).tolist()
    if result.aux is not None:
        out.update(aux_series(result, edges))
    return out


def _box_integral(
    start: FloatArray, end: FloatArray, level: FloatArray, x: FloatArray
) -> FloatArray:
    """(m,) ``∫_-inf^x Σ_k level_k · 1[start_k <= t < end_k] dt`` at each ``x``: the area
    of boxes switched on at ``start`` and off at ``end``, exactly, by prefix sums over the
    sorted starts and ends (O((k + m) log k))."""

    def ramp(at: FloatArray) -> FloatArray:  # Σ_{at_k <= x} level_k (x - at_k)
        order = np.argsort(at, kind="stable")
        a, lv = at[order], level[order]
        cum_l = np.concatenate(([0.0], np.cumsum(lv)))
        cum_la = np.concatenate(([0.0], np.cumsum(lv * a)))
        i = np.searchsorted(a, x, side="right")
        return np.asarray(cum_l[i] * x - cum_la[i], dtype=np.float64)

    return ramp(start) - ramp(end)


def aux_series(result: RunResult, edges: FloatArray) -> dict[str, list[float]]:
    """CPU and memory utilisation between consecutive ``edges``, for a run with the model
    on (``result.aux``; ``docs/resources.md``).

    Each bin's value is the exact time average of the allocated cores (each stint's devices ×
    the job's cores per device, on nodes with a limit) over the cores of the nodes with a
    limit; likewise for memory in GB. So the values, weighted by bin width, integrate to the
    numerator of the summary's ``cpu_utilisation`` (:func:`clustersim.resources.utilisation`)
    over the same span. Computed after the run from the stints: the engine records nothing
    more.

    Parameters
    ----------
    result
        A run with ``result.aux`` set.
    edges : (b + 1,) float64
        Increasing bin edges, s.

    Returns
    -------
    dict of str to list of float
        ``cpu_utilisation`` and ``mem_utilisation``, (b,) each; a resource no node limits is
        left out.
    """
    aux = result.aux
    if aux is None:
        return {}
    st = result.stints
    edges = np.asarray(edges, dtype=np.float64)
    width = np.diff(edges)
    out: dict[str, list[float]] = {}
    for key, per_dev, cap in (
        ("cpu", aux.cpu_dev, aux.node_cpu),
        ("mem", aux.mem_dev, aux.node_mem),
    ):
        lim = np.isfinite(cap)
        total = float(cap[lim].sum())
        if not lim.any() or total <= 0:
            continue
        level = st.devices * per_dev[st.job] * lim[st.node]
        area = np.diff(_box_integral(st.start, st.end, level.astype(np.float64), edges))
        with np.errstate(divide="ignore", invalid="ignore"):
            value = np.where(width > 0, area / (width * total), 0.0)
        out[f"{key}_utilisation"] = value.tolist()
    return out


def uplink_series(result: RunResult, max_points: int = 200) -> dict[str, Any]:
    """Each rack uplink's utilisation over time, for a run with network contention on.

    The network model logs the load of every uplink at each recomputation of the shares
    (``NetworkRecord.t``, ``.load``: the bandwidth given to the gangs crossing it, restore
    stalls included); the load holds until the next recomputation, the last until the end of
    the run (``t[0] + span_s``). Utilisation is load over capacity, averaged exactly over
    at most ``max_points`` bins (as :func:`timeseries`).

    Returns
    -------
    dict
        ``t_s``, ``dt_s`` (bins, (b,) each), ``utilisation`` ((n_racks, b) nested lists, 0
        where a rack has no capacity), ``mean`` ((n_racks,): ``NetworkRecord.uplink_utilisation``,
        the traffic actually carried over capacity × span), ``capacity_gb_s`` ((n_racks,)).
        Empty lists without the model or without any recomputation.
    """
    if max_points < 1:
        raise ClustersimError(f"max_points must be at least 1, got {max_points}")
    rec = result.network
    empty: dict[str, Any] = {"t_s": [], "dt_s": [], "utilisation": [], "mean": []}
    empty["capacity_gb_s"] = []
    if rec is None:
        return empty
    cap = np.asarray(rec.uplink_cap, dtype=np.float64)
    t = np.asarray(rec.t, dtype=np.float64)
    out = dict(empty)
    out["mean"] = rec.uplink_utilisation.tolist()
    out["capacity_gb_s"] = cap.tolist()
    end = float(t[0] + rec.span_s) if len(t) else 0.0
    if len(t) == 0 or end <= t[0] or len(cap) == 0:
        return out
    with np.errstate(divide="ignore", invalid="ignore"):
        util = np.where(cap > 0, np.asarray(rec.load) / cap, 0.0)  # (k, n_racks)
    seg_t = np.append(t, end)
    edges = _bin_edges(seg_t, max_points)
    t0, t1 = edges[:-1], edges[1:]
    area = _cum_at(seg_t, util, t1) - _cum_at(seg_t, util, t0)
    out["t_s"] = t0.tolist()
    out["dt_s"] = (t1 - t0).tolist()
    out["utilisation"] = np.round(area / (t1 - t0)[:, None], 6).T.tolist()
    return out


def failure_events(result: RunResult) -> dict[str, list[Any]]:
    """Each node failure of a run with failures on, for a timeline.

    Returns
    -------
    dict of str to list
        One entry per failure, by time it went down: ``node``, ``accel_type`` (the node's
        type), ``down_s``, ``up_s`` (the repair, clipped to the end of the run),
        ``repaired`` (whether it came back before the end), ``killed`` (jobs it killed) and
        ``lost_device_h`` (device-hours of computing those jobs redo, their
        ``lost_work_device_hours`` at that failure). Empty lists without the model.
    """
    keys = ("node", "accel_type", "down_s", "up_s", "repaired", "killed", "lost_device_h")
    rec = result.failures
    if rec is None:
        return {k: [] for k in keys}
    f = len(rec.node)
    names = np.array(result.cluster.type_names, dtype=object)
    killed = rec.killed if len(rec.killed) == f else np.zeros(f, dtype=np.int64)
    lost = rec.lost_device_s_at if len(rec.lost_device_s_at) == f else np.zeros(f)
    up = np.asarray(rec.up, dtype=np.float64)
    return {
        "node": rec.node.tolist(),
        "accel_type": names[result.cluster.node_type[rec.node]].tolist() if f else [],
        "down_s": np.asarray(rec.down, dtype=np.float64).tolist(),
        "up_s": np.minimum(up, rec.end).tolist(),
        "repaired": (up <= rec.end).tolist(),
        "killed": np.asarray(killed, dtype=np.int64).tolist(),
        "lost_device_h": (np.asarray(lost, dtype=np.float64) / 3600.0).tolist(),
    }


def gpushare_metrics(result: RunResult) -> dict[str, Any]:
    """Summary of a run with GPU sharing on: ``gpu_shared_jobs`` (jobs asking for a share),
    ``gpu_allocated_share_mean`` (allocated GPU milli over all, time-averaged from the first
    allocation to the end), ``gpu_frag_rate_mean`` (FGD's fragmentation rate, its
    fragmented milli-seconds over its idle milli-seconds), ``gpu_share_peak_milli`` (the
    most milli any GPU held, never above 1000) and ``gpu_share_rerates``."""
    rec = result.gpushare
    assert rec is not None
    out: dict[str, Any] = {
        "gpu_shared_jobs": int(rec.shared_jobs),
        "gpu_share_peak_milli": int(rec.node_peak_milli.max()) if rec.node_peak_milli.size else 0,
        "gpu_share_rerates": int(rec.rerates),
        "gpu_allocated_share_mean": None,
        "gpu_frag_rate_mean": None,
    }
    t = np.asarray(rec.t, dtype=np.float64)
    end = float(result.seg_t[-1]) if len(result.seg_t) else 0.0
    if len(t) and end > t[0]:
        dt = np.diff(np.append(t, max(end, float(t[-1]))))
        total = 1000.0 * float(result.cluster.node_devices.sum())
        out["gpu_allocated_share_mean"] = _ratio(
            float((rec.allocated * dt).sum()), total * dt.sum()
        )
        out["gpu_frag_rate_mean"] = _ratio(
            float((rec.frag * dt).sum()), float((rec.idle * dt).sum())
        )
    return out


def gpushare_series(result: RunResult, max_points: int = 200) -> dict[str, Any]:
    """Fragmentation over time and the per-node GPU-share map of a run with GPU sharing on
    (:class:`clustersim.gpushare.GpuShareRecord`).

    The record holds the cluster's fragmented, idle and allocated GPU milli after each
    change; each holds until the next, the last until the end of the run. Binned exactly
    over at most ``max_points`` bins (as :func:`uplink_series`), the fragmentation rate of a
    bin is its fragmented milli-seconds over its idle milli-seconds (FGD's rate, weighted by
    time).

    Returns
    -------
    dict
        ``t_s``, ``dt_s`` (bins), ``frag_rate`` (0..1), ``allocated_share`` (allocated over
        all GPU milli, 0..1), ``node_share`` ((nodes,) time-averaged allocated share of each
        node's GPUs, 0..1), ``node_gpu_milli`` ((nodes, width) nested lists: each GPU's
        time-averaged milli), ``node_gpus`` ((nodes,)), ``peak_milli`` (the most any GPU
        held), ``shared_jobs``, ``interference``. Lists empty without the model.
    """
    if max_points < 1:
        raise ClustersimError(f"max_points must be at least 1, got {max_points}")
    rec = result.gpushare
    keys = ("t_s", "dt_s", "frag_rate", "allocated_share", "node_share", "node_gpu_milli")
    out: dict[str, Any] = {k: [] for k in keys}
    out.update(node_gpus=[], peak_milli=0, shared_jobs=0, interference=0.0)
    if rec is None:
        return out
    gpus = np.asarray(result.cluster.node_devices, dtype=np.int64)
    mean = np.asarray(rec.node_mean_milli, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.where(gpus > 0, mean.sum(axis=1) / (1000.0 * gpus), 0.0)
    out["node_share"] = np.round(share, 6).tolist()
    out["node_gpu_milli"] = np.round(mean, 3).tolist()
    out["node_gpus"] = gpus.tolist()
    out["peak_milli"] = int(rec.node_peak_milli.max()) if rec.node_peak_milli.size else 0
    out["shared_jobs"] = int(rec.shared_jobs)
    out["interference"] = float(rec.interference)
    t = np.asarray(rec.t, dtype=np.float64)
    end = float(result.seg_t[-1]) if len(result.seg_t) else 0.0
    if len(t) == 0 or end <= t[0]:
        return out
    seg_t = np.append(t, max(end, float(t[-1])))
    vals = np.stack([rec.frag, rec.idle, rec.allocated], axis=1).astype(np.float64)
    edges = _bin_edges(seg_t, max_points)
    t0, t1 = edges[:-1], edges[1:]
    area = _cum_at(seg_t, vals, t1) - _cum_at(seg_t, vals, t0)
    total = 1000.0 * float(gpus.sum())
    with np.errstate(divide="ignore", invalid="ignore"):
        rate = np.where(area[:, 1] > 0, area[:, 0] / area[:, 1], 0.0)
        alloc = area[:, 2] / (t1 - t0) / total if total > 0 else np.zeros(len(t0))
    out["t_s"] = t0.tolist()
    out["dt_s"] = (t1 - t0).tolist()
    out["frag_rate"] = np.round(rate, 6).tolist()
    out["allocated_share"] = np.round(alloc, 6).tolist()
    return out


def model_records(result: RunResult, max_points: int = 200) -> dict[str, Any]:
    """What the optional models did, for dashboards: ``uplinks`` (:func:`uplink_series`)
    with network contention on, ``failures`` (:func:`failure_events`) with failures on,
    ``gpushare`` (:func:`gpushare_series`) with GPU sharing on; keys absent otherwise.
    JSON-safe (no NaN or infinity)."""
    out: dict[str, Any] = {}
    if result.network is not None:
        out["uplinks"] = uplink_series(result, max_points)
    if result.failures is not None:
        out["failures"] = failure_events(result)
    if result.gpushare is not None:
        out["gpushare"] = gpushare_series(result, max_points)
    return out


def start_shifts(
    first_start: FloatArray, base_first_start: FloatArray, tol_s: float = 1.0
) -> tuple[IntArray, FloatArray]:
    """The jobs a run started later than a baseline run of the same jobs, and by how much.

    Parameters
    ----------
    first_start, base_first_start : (n,) float64
        Each job's first start in the run and in the baseline (the same jobs, the same order);
        ``nan`` where it never started.
    tol_s
        Shifts up to this many seconds are not shifts.

    Returns
    -------
    rows : (k,) int64
        Jobs that started in both runs and later in the run by more than ``tol_s``.
    delay_s : (k,) float64
        By how much, s.
    """
    a = np.asarray(first_start, dtype=np.float64)
    b = np.asarray(base_first_start, dtype=np.float64)
    if a.shape != b.shape:
        raise ClustersimError(f"the runs have {len(a)} and {len(b)} jobs: not the same jobs")
    with np.errstate(invalid="ignore"):
        delay = a - b
        rows = np.flatnonzero(np.isfinite(delay) & (delay > tol_s))
    return rows.astype(np.int64), delay[rows]


def per_job_frame(result: RunResult) -> pd.DataFrame:
    """One row per job with its outcome.

    Columns: ``job_id, submit, first_start, finish, jct, queue_delay, num_gpus, job_type,
    user, vc, attained_gpu_s, preemptions, migrations, resizes, drop_reason, ftf_rho, held,
    wait, ref_gpu_s``. Times in seconds; ``queue_delay`` is the first-start delay, ``held`` the
    wall-clock time the job held devices and ``wait`` its total wait ``jct - held`` (see the
    module docstring); ``attained_gpu_s`` the device-seconds it held, ``ref_gpu_s`` its whole
    work in reference GPU-seconds (``RunResult.ref_gpu_s``, NaN where undefined).
    ``jct``/``finish``/``wait`` are NaN for jobs that did not complete, ``first_start`` and
    ``queue_delay`` for jobs that never started, ``ftf_rho`` for jobs that did not complete.
    """
    import pandas as pd

    jobs = result.jobs
    return pd.DataFrame(
        {
            "job_id": jobs.job_id.astype(str),
            "submit": jobs.submit_time,
            "first_start": result.first_start,
            "finish": result.finish,
            "jct": result.finish - jobs.submit_time,
            "queue_delay": result.first_start - jobs.submit_time,
            "num_gpus": jobs.num_gpus,
            "job_type": jobs.job_type.astype(str),
            "user": jobs.user.astype(str),
            "vc": jobs.vc.astype(str),
            "attained_gpu_s": result.attained,
            "preemptions": result.preemptions,
            "migrations": result.migrations,
            "resizes": result.resizes,
            "drop_reason": result.drop_reason.astype(str),
            "ftf_rho": _ftf_rho(result),
            "held": _held(result),
            "wait": _wait(result),
            "ref_gpu_s": result.ref_gpu_s,
        }
    )


def stints_frame(result: RunResult) -> pd.DataFrame:
    """One row per job, node and uninterrupted stint: who held which devices when.

    Columns: ``job_id, node, rack, accel_type, devices, start, end`` (times in seconds; ``node``
    and ``rack`` are indices into the cluster's nodes and racks). Sorted by start, then node.
    """
    import pandas as pd

    st, c = result.stints, result.cluster
    order = np.lexsort((st.node, st.start))
    node = st.node[order]
    names = np.array(c.type_names, dtype=object)
    return pd.DataFrame(
        {
            "job_id": result.jobs.job_id[st.job[order]].astype(str),
            "node": node,
            "rack": c.node_rack[node],
            "accel_type": names[c.node_type[node]].astype(str) if len(node) else [],
            "devices": st.devices[order],
            "start": st.start[order],
            "end": st.end[order],
        }
    )
