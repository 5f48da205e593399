"""Workload transformations: time window, load scaling, sampling, demand capping, re-basing.

Each function takes a :class:`~clustersim.jobs.JobTable` and returns a :class:`Transformed`
``(jobs, notes, start_time)``: the new table, notes for the workload's report (what was kept,
dropped or changed, with counts), and the calendar time of the new table's ``t = 0`` (ISO 8601,
UTC without an offset, as :attr:`ParseReport.start_time <clustersim.traces.ParseReport>`
writes it; ``None`` when unknown). Pass ``start_time`` in (e.g. the parse report's) and the
functions carry it along, so that transformations chain::

    jobs, notes, start = time_window(jobs, start="2017-10-01", end="2017-10-08",
                                     start_time=report.start_time)
    jobs, more, start = scale_load(jobs, 1.5, start_time=start)
    jobs, more, start = rebase_time(jobs, "2023-06-01", start_time=start)
    summary(result, carbon_start=start)                    # clustersim.metrics

Every function is vectorised (masks and array arithmetic, no per-job Python loop) and leaves
its input unchanged. A transformation that would leave no job raises
:class:`~clustersim.errors.ClustersimError`.

Absolute times move with the submit times: a job's ``deadline`` keeps its slack after its
submission (``deadline − submit_time``) whenever submit times change.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from clustersim.catalog import Catalog, load_catalog
from clustersim.cluster import Cluster
from clustersim.errors import ClustersimError
from clustersim.jobs import JobTable

FloatArray = npt.NDArray[np.float64]

#: Modes of :func:`cap_demand`.
CAP_MODES: tuple[str, ...] = ("cap", "drop")
#: What :func:`cap_demand` does to the work of a capped generic job.
CAP_WORK: tuple[str, ...] = ("gpu_time", "keep")
#: Alignments of :func:`rebase_time`.
REBASE_KEEP: tuple[str, ...] = ("time_of_day", "weekday", "none")
#: Drop reason of :func:`drop_aux_misfits` (the engine's ``DROP_AUX``).
AUX_MISFIT_REASON = "CPU or memory demand exceeds every node"
#: How many job ids a note lists.
FIRST_IDS = 5


class Transformed(NamedTuple):
    """Result of a transformation.

    Attributes
    ----------
    jobs : JobTable
        The new table.
    notes : list of str
        What happened, for the report.
    start_time : str or None
        Calendar time (ISO 8601, UTC) of the new table's ``t = 0``; ``None`` when unknown.
    """

    jobs: JobTable
    notes: list[str]
    start_time: str | None


# --------------------------------------------------------------------------------------------
# helpers


def parse_time(value: str | datetime, what: str = "time") -> datetime:
    """A calendar time as an aware UTC datetime.

    Parameters
    ----------
    value
        ISO 8601 text (``"2023-06-01"``, ``"2023-06-01T12:00:00Z"``) or a datetime; without
        an offset it is taken as UTC.
    what
        Name used in the error message.

    Raises
    ------
    ClustersimError
        If ``value`` is not a date-time.
    """
    if isinstance(value, datetime):
        when = value
    else:
        try:
            when = datetime.fromisoformat(str(value).strip())
        except ValueError:
            raise ClustersimError(f"{what} {value!r} is not an ISO 8601 date-time") from None
    return when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)


def format_time(when: datetime) -> str:
    """ISO 8601 in UTC without an offset (``2023-06-01T10:30:41``), as parse reports write it."""
    when = when.astimezone(UTC)
    fmt = "%Y-%m-%dT%H:%M:%S.%f" if when.microsecond else "%Y-%m-%dT%H:%M:%S"
    return when.strftime(fmt)


def _shift_start(start_time: str | None, seconds: float) -> str | None:
    if start_time is None:
        return None
    return format_time(parse_time(start_time, "start_time") + timedelta(seconds=seconds))


def _nonempty(jobs: JobTable, what: str) -> JobTable:
    if len(jobs) == 0:
        raise ClustersimError(f"{what} leaves no job")
    return jobs


def _ids(jobs: JobTable, index: npt.NDArray[np.int64]) -> str:
    ids = ", ".join(str(jobs.job_id[i]) for i in index[:FIRST_IDS])
    return ids + (", ..." if len(index) > FIRST_IDS else "")


def _span(jobs: JobTable) -> float:
    return float(jobs.submit_time[-1] - jobs.submit_time[0]) if len(jobs) else 0.0


# --------------------------------------------------------------------------------------------
# time window


def time_window(
    jobs: JobTable,
    start_s: float | None = None,
    end_s: float | None = None,
    *,
    start: str | datetime | None = None,
    end: str | datetime | None = None,
    start_time: str | None = None,
    rebase: bool = True,
) -> Transformed:
    """Keep the jobs submitted in ``[start, end)``.

    Give the window either in seconds from ``t = 0`` (``start_s``, ``end_s``) or as calendar
    times (``start``, ``end``; then ``start_time`` is required). An open side keeps
    everything on that side. Only submit times count: a job submitted inside the window is
    kept whole, even if it would run past its end.

    Parameters
    ----------
    jobs
        The workload.
    start_s, end_s
        Window in seconds on the table's clock.
    start, end
        Window as calendar times (ISO 8601 text or datetimes; UTC when without an offset).
    start_time
        Calendar time of the table's ``t = 0``.
    rebase
        Shift times so that the window's start is the new ``t = 0`` (the returned
        ``start_time`` moves with it). No shift when the window has no start.

    Raises
    ------
    ClustersimError
        When seconds and calendar times are mixed, calendar times are given without
        ``start_time``, the window is empty or inverted, or no job falls in it.
    """
    if (start_s is not None or end_s is not None) and (start is not None or end is not None):
        raise ClustersimError("give the window in seconds or in calendar times, not both")
    lo = -math.inf if start_s is None else float(start_s)
    hi = math.inf if end_s is None else float(end_s)
    how = "s"
    if start is not None or end is not None:
        if start_time is None:
            raise ClustersimError(
                "a calendar window needs the trace's start_time (this trace has relative times; "
                "give the window in seconds)"
            )
        t0 = parse_time(start_time, "start_time")
        if start is not None:
            lo = (parse_time(start, "window start") - t0).total_seconds()
        if end is not None:
            hi = (parse_time(end, "window end") - t0).total_seconds()
        how = "calendar"
    if math.isnan(lo) or math.isnan(hi) or not lo < hi:
        raise ClustersimError(f"empty time window [{lo:g}, {hi:g}) s")
    sub = jobs.submit_time
    keep = (sub >= lo) & (sub < hi)
    before, after = int((sub < lo).sum()), int((sub >= hi).sum())
    out = _nonempty(jobs.take(keep), f"the time window [{lo:g}, {hi:g}) s")
    window = f"[{_fmt_s(lo)}, {_fmt_s(hi)}) s"
    if how == "calendar":
        window += f" ({_fmt_cal(start_time, lo)} to {_fmt_cal(start_time, hi)})"
    notes = [
        f"time window {window}: kept {len(out):,} of {len(jobs):,} jobs "
        f"({before:,} submitted before, {after:,} at or after its end)"
    ]
    new_start = start_time
    if rebase and math.isfinite(lo) and lo != 0.0:
        shift = lo
        out = _shift(out, -shift)
        new_start = _shift_start(start_time, shift)
        notes.append(
            "times re-based: the window start is t=0"
            + (f" (calendar {new_start})" if new_start else "")
        )
    return Transformed(out, notes, new_start)


def _fmt_s(x: float) -> str:
    return "-inf" if x == -math.inf else ("inf" if x == math.inf else f"{x:,.0f}")


def _fmt_cal(start_time: str | None, x: float) -> str:
    if not math.isfinite(x) or start_time is None:
        return "open"
    return _shift_start(start_time, x) or "open"


def _shift(jobs: JobTable, delta: float) -> JobTable:
    """Submit times and deadlines moved by ``delta`` seconds (clipped at 0 for rounding)."""
    sub = np.maximum(jobs.submit_time + delta, 0.0)
    return jobs.replace(submit_time=sub, deadline=jobs.deadline + delta)


# --------------------------------------------------------------------------------------------
# load scaling


def scale_load(jobs: JobTable, factor: float, *, start_time: str | None = None) -> Transformed:
    """Multiply the arrival rate by ``factor``: submit times are divided by it.

    A load factor of 2 halves every submit time, so the span between the first and last
    submission halves and twice as many jobs arrive per hour; sizes and work are unchanged.
    ``t = 0`` stays where it is (so does ``start_time``), but submissions no longer fall at
    the calendar hours they had in the source.

    Parameters
    ----------
    jobs
        The workload.
    factor
        Load factor, > 0 (< 1 spreads the arrivals out).
    start_time
        Calendar time of ``t = 0`` (passed through).

    Raises
    ------
    ClustersimError
        If ``factor`` is not a positive finite number.
    """
    f = float(factor)
    if not (math.isfinite(f) and f > 0):
        raise ClustersimError(f"load factor must be a positive number, not {factor!r}")
    slack = jobs.deadline - jobs.submit_time
    sub = jobs.submit_time / f
    out = jobs.replace(submit_time=sub, deadline=sub + slack)
    notes = [
        f"load factor {f:g}: submit times divided by {f:g} (arrival rate x {f:g}); span "
        f"{_span(jobs):,.0f} s -> {_span(out):,.0f} s; sizes and work unchanged"
    ]
    if np.isfinite(slack).any():
        notes.append("deadlines keep their slack after submission")
    return Transformed(out, notes, start_time)


# --------------------------------------------------------------------------------------------
# sampling


def sample(
    jobs: JobTable,
    fraction: float | None = None,
    n: int | None = None,
    seed: int = 0,
    *,
    start_time: str | None = None,
) -> Transformed:
    """A random subset of the jobs, without replacement, in submit order.

    Submit times are unchanged, so the load falls to about ``k / len(jobs)`` of the original;
    follow with :func:`scale_load` by ``len(jobs) / k`` to restore the arrival rate.

    Parameters
    ----------
    jobs
        The workload.
    fraction
        Share of jobs to keep, in (0, 1]; the count is rounded, at least 1.
    n
        Number of jobs to keep, 1..len(jobs). Give exactly one of ``fraction`` and ``n``.
    seed
        Seed of ``numpy.random.default_rng(numpy.random.SeedSequence(seed))``.
    start_time
        Calendar time of ``t = 0`` (passed through).

    Raises
    ------
    ClustersimError
        If both or neither of ``fraction`` and ``n`` are given, or either is out of range.
    """
    total = len(jobs)
    if (fraction is None) == (n is None):
        raise ClustersimError("give exactly one of fraction and n")
    if fraction is not None:
        fr = float(fraction)
        if not (math.isfinite(fr) and 0.0 < fr <= 1.0):
            raise ClustersimError(f"sample fraction must be in (0, 1], not {fraction!r}")
        k = max(1, round(fr * total))
    else:
        if not isinstance(n, int | np.integer) or not 1 <= int(n) <= total:
            raise ClustersimError(f"sample size must be an integer in 1..{total:,}, not {n!r}")
        k = int(n)
    _nonempty(jobs, "sampling")
    rng = np.random.default_rng(np.random.SeedSequence(seed))
    idx = rng.choice(total, size=k, replace=False)
    out = jobs.take(idx)
    notes = [
        f"sampled {k:,} of {total:,} jobs ({k / total:.1%}, seed {seed}) without replacement; "
        f"submit times unchanged (load about {k / total:.1%} of the original: scale the load by "
        f"{total / k:.4g} to restore it)"
    ]
    return Transformed(out, notes, start_time)


# --------------------------------------------------------------------------------------------
# capping demand to the cluster


def cap_demand(
    jobs: JobTable,
    cluster: Cluster,
    mode: str = "cap",
    *,
    work: str = "gpu_time",
    catalog: Catalog | None = None,
    start_time: str | None = None,
) -> Transformed:
    """Fit every job's gang into the cluster: cap it or drop the job.

    A gang runs on devices of one type, so a job's limit is the device count of the largest
    type of the cluster, or, for a job with a ``gpu_type`` constraint, of the type the
    constraint names (matched by name or alias, any case, then through the catalog's
    aliases). Jobs whose constraint names no type of the cluster are left alone and counted
    (the engine drops them as unrunnable).

    Parameters
    ----------
    jobs
        The workload.
    cluster
        The cluster.
    mode
        ``"cap"``: set ``num_gpus`` (and ``min_gpus`` when larger) to the limit;
        ``"drop"``: remove the jobs. In both modes elastic jobs' ``max_gpus`` is capped to
        their limit. A capped job's CPU and memory demands (``cpu``, ``mem_gb``: for the
        whole gang) shrink with it, keeping its share per device.
    work
        For capped jobs without a job type (work in reference seconds of the whole gang):
        ``"gpu_time"`` scales work by ``old / new`` gang size, keeping the job's GPU-time;
        ``"keep"`` leaves it (the job then does less computation). Typed jobs' work is in
        steps and never changes (the performance model gives the smaller gang's rate).
    catalog
        Resolves constraint names; default :func:`~clustersim.catalog.load_catalog`.
    start_time
        Calendar time of ``t = 0`` (passed through).

    Raises
    ------
    ClustersimError
        On an unknown mode or work rule, or when dropping leaves no job.
    """
    if mode not in CAP_MODES:
        raise ClustersimError(f"cap mode {mode!r} unknown; choose one of {', '.join(CAP_MODES)}")
    if work not in CAP_WORK:
        raise ClustersimError(
            f"cap work rule {work!r} unknown; choose one of {', '.join(CAP_WORK)}"
        )
    per_type = cluster.devices_per_type()
    largest = int(per_type.max()) if len(per_type) else 0
    limit = np.full(len(jobs), largest, dtype=np.int64)
    names, inv = np.unique(np.asarray(jobs.gpu_type, dtype=str), return_inverse=True)
    inv = inv.ravel()
    unmatched = np.zeros(len(jobs), dtype=bool)
    cat = catalog if catalog is not None else load_catalog()
    for u, name in enumerate(names.tolist()):
        if not name.strip():
            continue
        t = cluster.type_index(name)
        if t < 0:
            acc = cat.resolve(name)
            t = cluster.type_names.index(acc.name) if acc and acc.name in cluster.type_names else -1
        sel = inv == u
        if t < 0:
            unmatched |= sel
        else:
            limit[sel] = per_type[t]
    over = ~unmatched & (jobs.num_gpus > limit)
    idx = np.flatnonzero(over)
    notes: list[str] = []
    if unmatched.any():
        bad = sorted({str(x) for x in jobs.gpu_type[unmatched]})
        notes.append(
            f"{int(unmatched.sum()):,} jobs require a type the cluster lacks "
            f"({', '.join(bad[:FIRST_IDS])}): left unchanged"
        )
    # elastic jobs may not grow beyond their limit either
    wide = ~unmatched & ~over & (jobs.max_gpus > limit)
    out = jobs
    if wide.any():
        out = jobs.replace(max_gpus=np.where(wide, limit, jobs.max_gpus))
        notes.append(f"{int(wide.sum()):,} elastic jobs: max_gpus capped to their type's devices")
    if len(idx) == 0:
        notes.append(
            f"every job fits the cluster (largest type: {largest:,} devices): nothing capped"
        )
        return Transformed(out, notes, start_time)
    largest_ask = int(jobs.num_gpus[idx].max())
    what = (
        f"{len(idx):,} jobs ask for more devices than their type has in the cluster "
        f"(largest type {largest:,} devices; largest ask {largest_ask:,}; jobs {_ids(jobs, idx)})"
    )
    if mode == "drop":
        out = _nonempty(out.take(~over), "dropping oversized jobs")
        notes.append(f"{what}: dropped")
        return Transformed(out, notes, start_time)
    new_n = np.where(over, limit, jobs.num_gpus)
    new_work = jobs.work
    if work == "gpu_time":
        generic = np.asarray(jobs.job_type == "", dtype=bool)
        new_work = np.where(over & generic, jobs.work * (jobs.num_gpus / new_n), jobs.work)
    shrink = new_n / jobs.num_gpus  # CPU and memory per device kept (nan: unknown, stays)
    out = out.replace(
        num_gpus=new_n,
        min_gpus=np.minimum(jobs.min_gpus, new_n),
        max_gpus=np.where(over, new_n, out.max_gpus),
        work=new_work,
        cpu=np.where(over, jobs.cpu * shrink, jobs.cpu),
        mem_gb=np.where(over, jobs.mem_gb * shrink, jobs.mem_gb),
    )
    rule = (
        "work of generic jobs scaled by old/new size (GPU-time kept)"
        if work == "gpu_time"
        else "work unchanged"
    )
    notes.append(f"{what}: capped to the limit; {rule}; typed jobs keep their steps")
    return Transformed(out, notes, start_time)


def drop_aux_misfits(
    jobs: JobTable, cluster: Cluster, *, start_time: str | None = None
) -> Transformed:
    """Drop the jobs whose CPU or memory demand exceeds every node of the cluster.

    A job is dropped when no placement of its ``min_gpus`` devices, on any accelerator type,
    gives each node a share of its cores and memory that fits there
    (:func:`clustersim.resources.exceeds_every_node`; ``docs/resources.md``). The engine
    drops the same jobs at the start of a run (``DROP_AUX``); doing it here puts them in the
    workload's report, counted under :data:`AUX_MISFIT_REASON`. Jobs without a demand and
    clusters without limits drop nothing (the same table is returned).

    Raises
    ------
    ClustersimError
        When dropping leaves no job.
    """
    from clustersim.resources import exceeds_every_node

    bad = exceeds_every_node(jobs, cluster)
    if not bad.any():
        return Transformed(jobs, [], start_time)
    idx = np.flatnonzero(bad)
    cpu, mem = cluster.node_cpu, cluster.node_mem
    most = [
        f"{float(cap[np.isfinite(cap)].max()):g} {unit}"
        for cap, unit in ((cpu, "cores"), (mem, "GB"))
        if np.isfinite(cap).any()
    ]
    out = _nonempty(jobs.take(~bad), "dropping jobs whose CPU or memory exceeds every node")
    notes = [
        f"{len(idx):,} jobs ask for more CPU or memory per device than any node gives their"
        f" smallest gang (largest node: {', '.join(most)}; jobs {_ids(jobs, idx)}): dropped"
    ]
    return Transformed(out, notes, start_time)


# --------------------------------------------------------------------------------------------
# re-basing to a calendar start


def rebase_time(
    jobs: JobTable,
    start: str | datetime,
    *,
    start_time: str | None = None,
    keep: str = "time_of_day",
) -> Transformed:
    """Place the workload's ``t = 0`` at a chosen calendar time (for carbon-intensity hours).

    Submit times do not change; the returned ``start_time`` is the new calendar time of
    ``t = 0``, to pass as ``carbon_start`` (:func:`clustersim.metrics.summary`,
    :mod:`clustersim.carbon`). To keep the trace's daily (and weekly) rhythm in step with the
    grid's, the start can keep the source's clock time:

    ``"time_of_day"`` (default)
        The first instant at or after ``start`` with the same UTC time of day as the trace's
        own ``start_time`` (``start`` 2023-06-01, trace from 2017-09-04 10:30:41 →
        2023-06-01T10:30:41).
    ``"weekday"``
        The first instant at or after ``start`` with the same weekday and time of day
        (→ 2023-06-05T10:30:41, a Monday like 2017-09-04).
    ``"none"``
        Exactly ``start``.

    Without a trace ``start_time`` (relative-time traces), ``start`` is used as is.

    Parameters
    ----------
    jobs
        The workload (returned unchanged).
    start
        Target calendar time (ISO 8601 or a datetime; UTC without an offset).
    start_time
        Calendar time of the trace's ``t = 0``, if it has one.
    keep
        ``"time_of_day"``, ``"weekday"`` or ``"none"``.

    Raises
    ------
    ClustersimError
        On an unknown ``keep`` or a time that is not ISO 8601.
    """
    if keep not in REBASE_KEEP:
        raise ClustersimError(
            f"rebase keep {keep!r} unknown; choose one of {', '.join(REBASE_KEEP)}"
        )
    target = parse_time(start, "start")
    notes: list[str] = []
    if start_time is None or keep == "none":
        new = target
        if start_time is None and keep != "none":
            notes.append("the trace has no calendar start: t=0 placed exactly at the given start")
    else:
        src = parse_time(start_time, "start_time")
        clock = timedelta(
            hours=src.hour, minutes=src.minute, seconds=src.second, microseconds=src.microsecond
        )
        new = datetime(target.year, target.month, target.day, tzinfo=UTC) + clock
        if new < target:
            new += timedelta(days=1)
        if keep == "weekday":
            new += timedelta(days=(src.weekday() - new.weekday()) % 7)
        what = "time of day" if keep == "time_of_day" else "weekday and time of day"
        notes.append(
            f"t=0 moved from {format_time(src)} to {format_time(new)} (same {what}); "
            "submit times unchanged"
        )
    iso = format_time(new)
    if not notes:
        notes.append(f"t=0 placed at {iso}; submit times unchanged")
    notes.append(
        "carbon intensity uses the same hour of the year in the 2023 data "
        f"(pass carbon_start={iso!r})"
    )
    return Transformed(jobs, notes, iso)
