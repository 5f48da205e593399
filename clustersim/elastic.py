"""Elastic jobs: device-count bounds, the scaling model policies plan with, resize accounting.

An elastic job may run on any device count in ``[min_gpus, max_gpus]`` of the job table
(``num_gpus`` is the count its user asked for and lies in between). A preemptive policy gives
each job its count in ``Decision.ndev``; the engine places that many devices and rates the
placement with the performance model (:meth:`clustersim.perf.JobRates.placement_rate`: the
ring all-reduce model at that count over the slowest link the placement crosses). The whole
model is in ``docs/elastic.md``; this module holds its three small parts.

Bounds (:func:`parse_rule`, :func:`apply_elastic`)
--------------------------------------------------
Traces rarely say how far a job may shrink or grow. A *rule* fills the bounds of the rigid
jobs of a table (``min_gpus == num_gpus == max_gpus``); jobs the trace already made elastic
keep their bounds. A rule is ``LO-HI``, each side either ``xF`` (``F`` times ``num_gpus``) or a
whole number of devices:

* ``min_gpus = clip(ceil(F_lo × n) or K_lo, 1, n)``;
* ``max_gpus = clip(floor(F_hi × n) or K_hi, n, cap)``, where ``cap`` is the most devices of
  one accelerator type in the cluster (a job runs on one type), when the cluster is known,
  but never below ``n`` (a gang larger than every type stays rigid and is dropped as too
  large, as before).

So ``x0.5-x2`` lets an 8-GPU job run on 4 to 16 devices, ``1-x1`` only shrink, ``x1-64``
only grow, up to 64. ``none`` (or the empty string) leaves the table as it is: that is the
default everywhere, so existing runs do not change.

Scaling (:class:`Scaling`)
--------------------------
What a policy plans with: the rate of a job on ``n`` devices of a type, consolidated on as
few nodes as that type's nodes allow (one device: no communication; up to the largest node
of the type: its intra-node link; more: the type's NIC), evaluated by the performance model.
A view without a performance model scales the full-gang rate linearly.

Replica splicing (:func:`splice`, :class:`SplicedRates`)
---------------------------------------------------------
Singularity's mechanism (Shukla et al., 2022; ``scheduling/singularity.py``,
``docs/singularity.md``): a job keeps its *world size* ``w`` (``num_gpus``: its data-parallel
ranks) whatever devices it holds; on ``d = w / k`` devices each device time-slices ``k`` of
its ranks. A policy that declares ``splice_overhead`` (:attr:`scheduling.base.Policy.
splicing`) has :func:`clustersim.engine.simulate` pass the run's jobs and rates through
:func:`splice`, the one hook: jobs may then run on fewer devices than ``num_gpus`` (their
``min_gpus`` becomes their smallest count: a divisor of ``w`` with ``k <= max_splice``; the
policy keeps to such divisors), and the engine rates a job on
``d < w`` devices at ``d / w`` of the rate of ``w`` devices behind the slowest link of the
placement it holds, times ``1 − splice_overhead``. Nothing else in the engine changes.

Resizes (:func:`snapshot_sizes`, :func:`count_resizes`)
-------------------------------------------------------
The engine applies a preemptive decision by suspending every running job that does not keep
its device count and type, then starting the planned jobs. A running job restarted on another
count in the same decision is a *resize*: it pays the checkpoint/restore delay, as a resume
after a preemption does (the performance model's ``restore_s``, or the policy's
``resume_s``), and is counted in ``RunResult.resizes`` instead of ``preemptions`` and
``migrations``. A job a decision shrinks to nothing (left out of ``run``) is preempted, as
before.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from clustersim.errors import ClustersimError
from clustersim.perf import JobRates

if TYPE_CHECKING:
    from clustersim.cluster import Cluster
    from clustersim.jobs import JobTable

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]

_SIDE = r"(?:x(\d+(?:\.\d+)?|\.\d+)|(\d+))"
_RULE = re.compile(rf"^{_SIDE}-{_SIDE}$")


@dataclass(frozen=True)
class ElasticRule:
    """A parsed rule (see the module doc): each side a factor of ``num_gpus`` or a count."""

    text: str
    lo_factor: float | None = None
    lo_count: int | None = None
    hi_factor: float | None = None
    hi_count: int | None = None

    def bounds(self, num_gpus: IntArray, cap: int | None = None) -> tuple[IntArray, IntArray]:
        """``(min_gpus, max_gpus)`` of rigid jobs of ``num_gpus`` devices, (n,) int64 each."""
        n = np.asarray(num_gpus, dtype=np.int64)
        if self.lo_factor is not None:
            lo = np.ceil(self.lo_factor * n - 1e-9).astype(np.int64)
        else:
            lo = np.full(len(n), int(self.lo_count or 1), dtype=np.int64)
        if self.hi_factor is not None:
            hi = np.floor(self.hi_factor * n + 1e-9).astype(np.int64)
        else:
            hi = np.full(len(n), int(self.hi_count or 1), dtype=np.int64)
        lo = np.clip(lo, 1, n)
        if cap is not None:
            hi = np.minimum(hi, cap)
        hi = np.maximum(hi, n)
        return lo, hi


def parse_rule(text: str | None) -> ElasticRule | None:
    """The rule ``text`` names, or ``None`` for ``none``/empty (leave the table as it is).

    Raises
    ------
    ClustersimError
        When ``text`` is not of the form ``LO-HI`` (module doc), naming what is accepted.
    """
    t = (text or "").strip().lower()
    if t in ("", "none"):
        return None
    m = _RULE.match(t)
    if m is None:
        raise ClustersimError(
            f"elastic rule {text!r}: want LO-HI, each side xF (F times num_gpus) or a device "
            "count, e.g. x0.5-x2 or 1-8; or none"
        )
    lo_f, lo_c, hi_f, hi_c = m.groups()
    rule = ElasticRule(
        text=t,
        lo_factor=None if lo_f is None else float(lo_f),
        lo_count=None if lo_c is None else int(lo_c),
        hi_factor=None if hi_f is None else float(hi_f),
        hi_count=None if hi_c is None else int(hi_c),
    )
    if (rule.lo_factor is not None and not 0 < rule.lo_factor <= 1) or rule.lo_count == 0:
        raise ClustersimError(f"elastic rule {text!r}: the lower side must be in (0, 1] x or >= 1")
    if (rule.hi_factor is not None and rule.hi_factor < 1) or rule.hi_count == 0:
        raise ClustersimError(f"elastic rule {text!r}: the upper side must be >= x1 or >= 1")
    return rule


def largest_type(cluster: Cluster) -> int:
    """The most devices of one accelerator type in ``cluster``."""
    per_type = cluster.devices_per_type()
    return int(per_type.max()) if len(per_type) else 0


def apply_elastic(
    jobs: JobTable, rule: str | ElasticRule | None, cluster: Cluster | None = None
) -> tuple[JobTable, list[str]]:
    """``jobs`` with the bounds of its rigid jobs set by ``rule`` (module doc), and notes for
    the run report. ``None``/``"none"``: ``jobs`` itself, unchanged."""
    r = parse_rule(rule) if not isinstance(rule, ElasticRule) else rule
    if r is None or not len(jobs):
        return jobs, []
    rigid = (jobs.min_gpus == jobs.num_gpus) & (jobs.max_gpus == jobs.num_gpus)
    cap = None if cluster is None else largest_type(cluster)
    lo, hi = r.bounds(jobs.num_gpus, cap)
    out = jobs.replace(
        min_gpus=np.where(rigid, lo, jobs.min_gpus), max_gpus=np.where(rigid, hi, jobs.max_gpus)
    )
    changed = rigid & ((lo != jobs.num_gpus) | (hi != jobs.num_gpus))
    notes = [
        f"elastic rule {r.text}: {int(changed.sum()):,} of {len(jobs):,} jobs may run on "
        f"[min_gpus, max_gpus] devices"
        + ("" if cap is None else f" (max capped at {cap}, the most devices of one type)")
    ]
    kept = int((~rigid).sum())
    if kept:
        notes.append(f"{kept:,} jobs were elastic in the trace and keep their bounds")
    return out, notes


class Scaling:
    """Planning rates of elastic jobs: work units/s on ``n`` consolidated devices of a type.

    Parameters
    ----------
    jobs, cluster
        The run's job table and inventory.
    rate : (n_jobs, n_types) float64
        Full-gang consolidated rates (``State.rate``).
    job_rates
        The performance model's rates; ``None``: scale ``rate`` linearly in the device count.
    """

    def __init__(
        self, jobs: JobTable, cluster: Cluster, rate: FloatArray, job_rates: JobRates | None
    ) -> None:
        self.gang = jobs.num_gpus.astype(np.float64)
        self.full = rate
        self.job_rates = job_rates
        from clustersim.perf import PerformanceModel

        intra, node_max, nic = PerformanceModel._links(cluster)
        self.intra, self.node_max, self.nic = intra, node_max, nic
        # memo of :meth:`table`: job j's rates on 1 .. max_gpus[j] devices of type
        # _memo_type[j] (-1: none yet) at _flat[_off[j] : _off[j + 1]]
        width = np.maximum(jobs.max_gpus.astype(np.int64), 1)
        self._off = np.concatenate([[0], np.cumsum(width)]).astype(np.int64)
        self._flat = np.zeros(int(self._off[-1]))
        self._memo_type = np.full(len(width), -1, dtype=np.int64)

    def rate(self, idx: IntArray, types: IntArray, ndev: IntArray) -> FloatArray:
        """(m,) float64: rate of job ``idx[i]`` on ``ndev[i]`` devices of ``types[i]``."""
        idx = np.asarray(idx, dtype=np.int64)
        t = np.asarray(types, dtype=np.int64)
        n = np.asarray(ndev, dtype=np.int64)
        if self.job_rates is None:
            out = self.full[idx, t] * n / self.gang[idx]
        else:
            link = np.where(
                n <= 1, np.inf, np.where(n <= self.node_max[t], self.intra[t], self.nic[t])
            )
            out = np.asarray(
                self.job_rates.placement_rate(idx, t, np.maximum(n, 1), link), dtype=np.float64
            )
        return np.where((n > 0) & (self.full[idx, t] > 0), out, 0.0)

    def table(self, idx: IntArray, types: IntArray, hi: IntArray) -> FloatArray:
        """(m, max(hi) + 1) float64: ``out[i, n]`` = :meth:`rate` of job ``idx[i]`` on ``n``
        devices of ``types[i]`` for ``n = 0 .. hi[i]`` (``hi[i] <= max_gpus``), 0 past it.

        A job's rates on a type do not change during a run, so the performance model
        evaluates each job's row once per type it is planned on (the values are the ones
        :meth:`rate` gives, element for element); only the mask of jobs that cannot run on
        the type is applied anew.
        """
        idx = np.asarray(idx, dtype=np.int64)
        t = np.asarray(types, dtype=np.int64)
        hi = np.asarray(hi, dtype=np.int64)
        k = int(hi.max()) if len(hi) else 0
        out = np.zeros((len(idx), k + 1))
        if not len(idx) or k == 0:
            return out
        if self.job_rates is not None:
            miss = self._memo_type[idx] != t
            if miss.any():
                js, ts = idx[miss], t[miss]
                width = self._off[js + 1] - self._off[js]
                rows = np.repeat(js, width)
                n = np.arange(int(width.sum())) - np.repeat(np.cumsum(width) - width, width) + 1
                self._flat[np.repeat(self._off[js], width) + n - 1] = self.rate(
                    rows, np.repeat(ts, width), n
                )
                self._memo_type[js] = ts
        pos = np.repeat(np.arange(len(idx)), hi)
        n = np.arange(int(hi.sum())) - np.repeat(np.cumsum(hi) - hi, hi) + 1
        if self.job_rates is None:
            out[pos, n] = self.rate(idx[pos], t[pos], n)
        else:
            ok = self.full[idx, t] > 0
            vals = self._flat[self._off[idx][pos] + n - 1]
            out[pos, n] = np.where(ok[pos], vals, 0.0)
        return out


class SplicedRates(JobRates):
    """The rates of a run with replica splicing (module doc): a job of world size ``w``
    (``num_gpus``) on ``d < w`` devices runs at ``d / w`` of what ``inner`` gives ``w``
    devices behind the same slowest link, times ``1 − overhead``; on ``d >= w`` devices as
    ``inner`` says. Built by :func:`splice`; the wrapped rates are left as they are.

    The ``w``-device rate over the placement's link keeps the performance model's placement
    effect (a spliced job spread over nodes is slower than one on a node); one device has no
    link (``inf``), so a job on one device runs at ``1 / w`` of its compute-only rate.
    """

    inner: JobRates
    world: IntArray
    overhead: float

    def placement_rate(
        self, jobs: IntArray, types: IntArray, ndev: IntArray, link_gbs: FloatArray
    ) -> FloatArray:
        j = np.asarray(jobs, dtype=np.int64)
        n = np.asarray(ndev, dtype=np.int64)
        w = self.world[j]
        sliced = n < w
        base = np.asarray(
            self.inner.placement_rate(j, types, np.where(sliced, w, n), link_gbs),
            dtype=np.float64,
        )
        if not sliced.any():
            return base
        share = np.where(sliced, n / np.maximum(w, 1) * (1.0 - self.overhead), 1.0)
        return base * share


@dataclass(frozen=True)
class SpliceConfig:
    """What a splicing policy tells the engine (:attr:`scheduling.base.Policy.splicing`).

    Attributes
    ----------
    overhead
        Throughput lost by a time-sliced job, a fraction in ``[0, 1)``.
    max_splice
        Most ranks one device time-slices (``k``), at least 1.
    """

    overhead: float = 0.03
    max_splice: int = 4


def splice_bounds(jobs: JobTable, max_splice: int) -> IntArray:
    """(n,) int64: each job's smallest count under splicing (:func:`splice_counts`), from 1
    for rigid jobs (``min_gpus == num_gpus == max_gpus``: every job is elastic by splicing)
    and from ``min_gpus`` for the others (a trace's or rule's bound is kept)."""
    w = np.asarray(jobs.num_gpus, dtype=np.int64)
    rigid = (jobs.min_gpus == w) & (jobs.max_gpus == w)
    bound = np.where(rigid, 1, np.minimum(jobs.min_gpus, w)).astype(np.int64)
    out = w.copy()
    if not len(w):
        return out
    pairs, inv = np.unique(np.stack([w, bound]), axis=1, return_inverse=True)
    small = np.array(
        [splice_counts(int(a), int(b), max_splice)[0] for a, b in pairs.T.tolist()],
        dtype=np.int64,
    )
    return small[inv.ravel()]


def splice(jobs: JobTable, rates: JobRates, config: SpliceConfig) -> tuple[JobTable, SplicedRates]:
    """The run's jobs and rates under replica splicing (module doc): each job's ``min_gpus``
    becomes its smallest count (:func:`splice_bounds`; so the engine drops as too large only
    the jobs that cannot run even spliced), ``max_gpus`` stays (the policy never goes past
    the world size); the rates become :class:`SplicedRates` with ``config.overhead``.

    Raises
    ------
    ClustersimError
        When ``config.overhead`` is not in ``[0, 1)`` or ``config.max_splice`` is below 1.
    """
    if not 0.0 <= config.overhead < 1.0:
        raise ClustersimError(f"splice_overhead: must be in [0, 1), not {config.overhead!r}")
    if config.max_splice < 1:
        raise ClustersimError(f"max_splice: must be at least 1, not {config.max_splice!r}")
    lo = splice_bounds(jobs, config.max_splice)
    if len(jobs) and (lo != jobs.min_gpus).any():
        jobs = jobs.replace(min_gpus=lo)
    values = {f.name: getattr(rates, f.name) for f in fields(rates)}
    out = SplicedRates(**values)
    object.__setattr__(out, "inner", rates)
    object.__setattr__(out, "world", np.asarray(jobs.num_gpus, dtype=np.int64))
    object.__setattr__(out, "overhead", float(config.overhead))
    return jobs, out


def splice_counts(world: int, lo: int, max_splice: int) -> IntArray:
    """The device counts a job of world size ``world`` may run on under splicing, ascending:
    the divisors ``d`` of ``world`` with ``d >= lo`` and ``world / d <= max_splice`` (``world``
    itself always; (c,) int64)."""
    d = np.arange(1, world + 1, dtype=np.int64)
    ok = (world % d == 0) & (d >= lo) & (world // d <= max_splice)
    ok[-1] = True
    return d[ok]


def snapshot_sizes(
    run: IntArray, running: BoolArray, alloc_n: IntArray, migrations: IntArray
) -> tuple[IntArray, IntArray, IntArray]:
    """Before an elastic decision: the jobs of ``run`` holding devices, their device counts
    and migration counts (what :func:`count_resizes` compares with afterwards)."""
    run = np.asarray(run, dtype=np.int64)
    held = run[running[run] & (alloc_n[run] > 0)]
    return held, alloc_n[held].copy(), migrations[held].copy()


def count_resizes(
    before: tuple[IntArray, IntArray, IntArray],
    running: BoolArray,
    alloc_n: IntArray,
    preemptions: IntArray,
    migrations: IntArray,
    resizes: IntArray,
) -> None:
    """After the decision: a job of ``before`` running again on another device count was
    stopped and restarted (one preemption, perhaps one migration, and the restore delay):
    count it as one resize instead, in place."""
    held, n0, mig0 = before
    if not len(held):
        return
    moved = running[held] & (alloc_n[held] != n0) & (alloc_n[held] > 0)
    js = held[moved]
    if len(js):
        resizes[js] += 1
        preemptions[js] -= 1
        migrations[js] = mig0[moved]


def device_counts(
    job: IntArray, devices: IntArray, start: FloatArray, end: FloatArray
) -> tuple[IntArray, FloatArray, IntArray]:
    """Each job's device count over time, from a run's stints (:class:`clustersim.result.
    Stints`: one row per job, node and uninterrupted stint).

    A job holds the sum of the devices of its stints that cover a time. The series is a step
    function per job: at ``t[i]`` job ``job[i]`` starts holding ``count[i]`` devices, until
    its next point (0 after its last: it finished or was suspended). Points where the count
    does not change are left out (a stint ending where the next begins on as many devices).

    Parameters
    ----------
    job, devices : (k,) int64
        Each stint's job and devices.
    start, end : (k,) float64
        Each stint's bounds, s.

    Returns
    -------
    job, t, count : (p,) int64, float64, int64
        The points, by job, then time.
    """
    job = np.asarray(job, dtype=np.int64)
    dev = np.asarray(devices, dtype=np.int64)
    jj = np.concatenate([job, job])
    tt = np.concatenate([np.asarray(start, dtype=np.float64), np.asarray(end, dtype=np.float64)])
    dd = np.concatenate([dev, -dev])
    order = np.lexsort((tt, jj))
    jj, tt, dd = jj[order], tt[order], dd[order]
    level = np.cumsum(dd)  # over all jobs: each job's own sum returns to 0 at its last end
    # keep the last change at each (job, time), then only the points that change the count
    last = np.ones(len(jj), dtype=bool)
    last[:-1] = (jj[1:] != jj[:-1]) | (tt[1:] != tt[:-1])
    jj, tt, level = jj[last], tt[last], level[last]
    changed = np.ones(len(jj), dtype=bool)
    changed[1:] = (level[1:] != level[:-1]) | (jj[1:] != jj[:-1])
    return jj[changed], tt[changed], level[changed]


def resized_jobs(job: IntArray, count: IntArray, limit: int | None = None) -> IntArray:
    """The jobs of a :func:`device_counts` series that ran on more than one device count,
    most changes first (ties: lower job), at most ``limit`` of them; (r,) int64."""
    job = np.asarray(job, dtype=np.int64)
    count = np.asarray(count, dtype=np.int64)
    if not len(job):
        return np.zeros(0, dtype=np.int64)
    # changes between two positive counts of the same job (a resize, not a start or stop)
    resize = (job[1:] == job[:-1]) & (count[1:] > 0) & (count[:-1] > 0)
    n = np.bincount(job[1:][resize], minlength=int(job.max()) + 1)
    jobs = np.flatnonzero(n > 0)
    jobs = jobs[np.argsort(-n[jobs], kind="stable")]
    return (jobs if limit is None else jobs[:limit]).astype(np.int64)
