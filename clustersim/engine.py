"""The discrete-event engine (DESIGN §3.4).

One loop owns the clock. Job state is held in parallel numpy arrays indexed by job (jobs are
indexed in submit order). Between events nothing is computed per job: a running job's progress
is implied by its predicted finish time, which sits in one heap of ``(finish, job, epoch)``
entries (the SimPy/vidur design: a heap and a counter owned by the simulator). The held-time
bookkeeping of running jobs is brought up to date lazily — when a job stops, or when a policy
reads the dynamic arrays of its :class:`~scheduling.base.State`. Events at the same instant are
handled as one batch: completions, then arrivals, then one policy call.

Everything is ordered (ties broken by job index, heap entries carry the job index), and
randomness comes only from ``numpy.random.SeedSequence(seed)``, so the same inputs and seed give
identical results in any process.
"""

from __future__ import annotations

import bisect
import dataclasses
import heapq
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from clustersim import kernels
from clustersim.cluster import Cluster
from clustersim.errors import SimulationError
from clustersim.jobs import JobTable
from clustersim.kernels import (
    BAD_TWICE,
    SYNC_ATTAINED,
    SYNC_EXECUTED,
    SYNC_REMAINING,
    best_fit_node,
    choose,
    compiled_in_use,
    fastest_type,
    link_gbs,
    plan_preemptive,
    release_nodes,
    sync_running,
    take_nodes,
    use_compiled,
)
from clustersim.perf import JobRates, PerformanceModel
from clustersim.result import (
    DROP_ABANDONED,
    DROP_NO_TYPE,
    DROP_REJECTED,
    DROP_TOO_LARGE,
    DROP_UNFINISHED,
    RunResult,
    Stints,
)
from clustersim.rounds import realise_fractions
from scheduling.base import SERVICE_EPS, Decision, Placement, Policy, State

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

_EMPTY_I = np.zeros(0, dtype=np.int64)
SYNC_ALL = SYNC_REMAINING | SYNC_ATTAINED | SYNC_EXECUTED
_SYNC_FIELDS = {
    None: SYNC_ALL,
    "remaining": SYNC_REMAINING,
    "attained": SYNC_ATTAINED,
    "executed": SYNC_EXECUTED,
}
_Start = tuple[int, int, int, IntArray, IntArray]  # job, type, devices, nodes, counts


@dataclass(frozen=True)
class EngineOptions:
    """Knobs of one run that are not the policy's.

    Attributes
    ----------
    seed
        Root seed; the policy and the placement each get a child of
        ``SeedSequence(seed)``.
    until
        Stop the simulation at this time (s); jobs not finished by then are reported as
        unfinished.
    round_origin
        Time of the first round boundary for round-based policies with a fixed grid (s).
    whole_steps_per_round
        With a ``rounds_only`` policy: each round, a job performs at most
        ``floor(rate × round_s)`` work units (whole steps), holds its devices idle after that,
        and the round ends when the last job of the round has done its share — what Gavel's
        simulator does. ``False``: jobs progress continuously for the whole round.
    progress
        Called with a :class:`Progress` every ``progress_every`` event batches and once at
        the end; it may raise to abort the run (the exception propagates to the caller). It
        sees copies of counters only, so it cannot change the results.
    progress_every
        Event batches between two ``progress`` calls.
    """

    seed: int = 0
    until: float = np.inf
    round_origin: float = 0.0
    whole_steps_per_round: bool = False
    progress: Callable[[Progress], None] | None = None
    progress_every: int = 2000


@dataclass(frozen=True)
class Progress:
    """How far a run has got (for progress bars and heartbeats).

    Attributes
    ----------
    now
        Simulated time, s.
    events
        Event batches processed.
    arrived, completed, total
        Jobs arrived so far, completed so far, and in the trace.
    """

    now: float
    events: int
    arrived: int
    completed: int
    total: int

    @property
    def fraction(self) -> float:
        """Share of the runnable jobs of the trace that have completed (0..1)."""
        return self.completed / self.total if self.total else 1.0


class _Run:
    """State of one simulation; :func:`simulate` is the public entry point."""

    def __init__(
        self,
        jobs: JobTable,
        cluster: Cluster,
        policy: Policy,
        placement: Placement,
        rates: JobRates,
        options: EngineOptions,
    ) -> None:
        self.jobs = jobs
        self.cluster = cluster
        self.policy = policy
        self.placement = placement
        self.rates = rates
        self.opt = options
        n, n_types = len(jobs), cluster.n_types
        self.n = n
        self.rate = np.ascontiguousarray(rates.rate, dtype=np.float64)
        self.best_rate = self.rate.max(axis=1) if n_types else np.zeros(n)
        if self.rate.shape != (n, n_types):
            raise SimulationError(f"rate matrix has shape {self.rate.shape}, want {(n, n_types)}")
        self.restore = rates.restore_s.tolist()
        self.gang = jobs.num_gpus.tolist()
        self.gang_arr = np.ascontiguousarray(jobs.num_gpus, dtype=np.int64)
        self.capacity = cluster.devices_per_type()
        self.free = self.capacity.copy()
        self.node_free = cluster.node_devices.astype(np.int64).copy()
        n_regions = len(cluster.regions)
        self.n_regions = n_regions
        self.node_group = cluster.node_type * n_regions + cluster.node_region
        self.group_list = self.node_group.tolist()
        self.busy = np.zeros(n_types * n_regions, dtype=np.float64)
        self.type_nodes = [np.flatnonzero(cluster.node_type == t) for t in range(n_types)]
        self.best_fit = placement.best_fit_one_node
        self._one_type = n_types == 1
        self._one: dict[int, IntArray] = {}
        self._rate_cache: dict[tuple[int, int, int, float], float] = {}

        # per-job state (arrays: what policies see)
        self.remaining = jobs.work.astype(np.float64).copy()
        self.running = np.zeros(n, dtype=bool)
        self.alloc_type = np.full(n, -1, dtype=np.int64)
        self.alloc_n = np.zeros(n, dtype=np.int64)
        self.first_start = np.full(n, np.nan)
        self.last_start = np.full(n, np.nan)
        self.finish = np.full(n, np.nan)
        self.attained = np.zeros(n)
        self.executed = np.zeros(n)
        self.type_time = np.zeros((n, n_types))
        self.device_time = np.zeros((n, n_types))
        # running jobs: executed/attained were exe0/att0 at base_t (set at each start)
        self.base_t = np.zeros(n)
        self.exe0 = np.zeros(n)
        self.att0 = np.zeros(n)
        self.capped = False  # some running job has a finite cap (whole-step rounds)
        self.tt_synced_at = np.zeros(n)  # type_time/device_time are exact up to here
        self.preemptions = np.zeros(n, dtype=np.int64)
        self.migrations = np.zeros(n, dtype=np.int64)
        self.max_nodes = np.zeros(n, dtype=np.int64)
        self.drop = np.full(n, "", dtype=object)
        self.is_active = np.zeros(n, dtype=bool)
        self._mark = np.zeros(n, dtype=np.int8)  # kernel scratch, always left all zero
        self._plan_out: tuple[IntArray, ...] = ()  # kernel outputs, grown as needed
        # running jobs: predicted finish, end of restore stall, current rate (work units/s)
        self.fin = np.full(n, np.inf)
        self.stall = np.zeros(n)
        self.crate = np.zeros(n)
        self.cap = np.full(n, np.inf)  # no progress after this time (whole-step rounds)
        self.round_rem = np.zeros(n)  # remaining work when the current stint (or round) began
        self.share = np.zeros(n)  # whole-step rounds: work allowed this round
        self.epoch = [0] * n
        self.heap: list[tuple[float, int, int]] = []
        # service marks (Policy.service_marks): when each running job reaches its next one
        self.mark_list = [float(x) for x in policy.service_marks]
        self.mark_heap: list[tuple[float, int, int]] = []
        self.run_set: dict[int, None] = {}  # insertion-ordered set of running jobs
        self._run_arr: IntArray | None = None  # run_set as an array, rebuilt when it changes
        self._run_filter = False  # _run_arr may still hold jobs stopped since it was built
        self.placed: dict[int, tuple[IntArray, IntArray]] = {}
        self.last_key: dict[int, bytes] = {}

        self._active = _EMPTY_I
        self._added: list[IntArray] = []
        self._removed: list[int] = []
        self.pending = 0
        self.now = 0.0
        self.round_index = 0
        self.events = 0
        self.seg_t: list[float] = []
        self.seg_busy: list[FloatArray] = []
        self.seg_queued: list[int] = []
        self.seg_running: list[int] = []
        self.n_active = 0
        # stints: one row per (job, node) each time a job's devices are released
        self.st_job: list[int] = []
        self.st_node: list[int] = []
        self.st_dev: list[int] = []
        self.st_start: list[float] = []
        self.st_end: list[float] = []

    # ------------------------------------------------------------------ views
    @property
    def active(self) -> IntArray:
        """Active jobs, ascending; additions and removals are applied lazily."""
        if self._added:
            self._active = np.concatenate([self._active, *self._added])
            self._added = []
        if self._removed:  # removed jobs are no longer flagged active
            self._active = self._active[self.is_active[self._active]]
            self._removed = []
        return self._active

    def active_jobs(self) -> IntArray:
        return self.active

    def queued_prefix(self, limit: int) -> IntArray:
        """First ``limit`` queued jobs without applying pending removals to the whole set.

        Removed jobs not yet dropped from ``_active`` and running jobs are at most
        ``len(_removed) + running`` entries, so that many more than ``limit`` suffice; arrivals
        not yet appended all come after every job in ``_active``.
        """
        if len(self._removed) > 256 or len(self._added) > 64:
            self.active  # noqa: B018 - compact now and then, so this stays cheap
        width = len(self.run_set) + limit + len(self._removed)
        a = self._active[:width]
        if len(a) < width and self._added:
            a = np.concatenate([a, *self._added])[:width]
        return a[self.is_active[a] & ~self.running[a]][:limit]

    def running_jobs(self) -> IntArray:
        if self._run_arr is None:
            self._run_arr = np.fromiter(self.run_set, dtype=np.int64, count=len(self.run_set))
        elif self._run_filter:  # only stops since it was built: drop them
            self._run_arr = self._run_arr[self.running[self._run_arr]]
        self._run_filter = False
        return self._run_arr

    def sync(self, field: str | None = None) -> None:
        """Bring ``field`` (or all of remaining/attained/executed) of running jobs to ``now``."""
        if not self.run_set:
            return
        what = _SYNC_FIELDS.get(field)
        if what is None:
            raise ValueError(f"unknown field {field!r}")
        self._sync(self.running_jobs(), what)

    def sync_types(self) -> None:
        """Bring ``type_time``/``device_time`` of running jobs up to ``now``."""
        if self.run_set:
            self._sync_types(self.running_jobs())

    def _sync_types(self, j: IntArray) -> None:
        upto = np.minimum(self.now, self.cap[j])
        dt = upto - self.tt_synced_at[j]
        t = self.alloc_type[j]
        self.type_time[j, t] += dt
        self.device_time[j, t] += dt * self.alloc_n[j]
        self.tt_synced_at[j] = upto

    def _sync(self, j: IntArray, what: int = SYNC_ALL) -> None:
        """Bring fields ``what`` (a :mod:`clustersim.kernels` ``SYNC_*`` mask) of running
        jobs ``j`` up to ``now``."""
        sync_running(
            j,
            what,
            self.now,
            self.capped,
            self.cap,
            self.base_t,
            self.stall,
            self.alloc_n,
            self.exe0,
            self.att0,
            self.round_rem,
            self.crate,
            self.share,
            self.executed,
            self.attained,
            self.remaining,
        )

    def _state(self) -> State:
        return State(
            now=self.now,
            jobs=self.jobs,
            cluster=self.cluster,
            active=None,  # built on first use (see State.active, queued_prefix)
            running=self.running,
            alloc_type=self.alloc_type,
            alloc_n=self.alloc_n,
            rate=self.rate,
            first_start=self.first_start,
            last_start=self.last_start,
            preemptions=self.preemptions,
            free=self.free,
            capacity=self.capacity,
            remaining=self.remaining,
            attained=self.attained,
            executed=self.executed,
            type_time=self.type_time,
            round_index=self.round_index,
            n_running=len(self.run_set),
            pending=self.pending,
            best_rate=self.best_rate,
            source=self,
        )

    # ------------------------------------------------------------------ start / stop
    def _stop(self, js: list[int], completed: bool) -> None:
        """Stop running jobs ``js`` (completion or suspension) and free their devices."""
        if not js:
            return
        now = self.now
        small = len(js) <= 4  # the common case: scalar updates beat fancy indexing
        if not small:
            j = np.array(js, dtype=np.int64)
            self._sync(j)
            self._sync_types(j)
            if completed:
                self.remaining[j] = 0.0
                self.finish[j] = now
        free, node_free, busy, group = self.free, self.node_free, self.busy, self.group_list
        alloc_n, alloc_type, running, fin, cap = (
            self.alloc_n,
            self.alloc_type,
            self.running,
            self.fin,
            self.cap,
        )
        run_set, placed, epoch, last_start = self.run_set, self.placed, self.epoch, self.last_start
        st_job, st_node, st_dev, st_start, st_end = (
            self.st_job,
            self.st_node,
            self.st_dev,
            self.st_start,
            self.st_end,
        )
        for jj in js:
            n, t = int(alloc_n[jj]), int(alloc_type[jj])
            if small:
                c_j = float(cap[jj])
                upto = now if now < c_j else c_j
                dt = upto - float(self.base_t[jj])
                self.executed[jj] = self.exe0[jj] + dt
                self.attained[jj] = self.att0[jj] + dt * n
                dt = upto - float(self.tt_synced_at[jj])
                self.type_time[jj, t] += dt
                self.device_time[jj, t] += dt * n
                if completed:
                    self.remaining[jj] = 0.0
                    self.finish[jj] = now
                elif upto >= c_j:  # a whole-step share is done: count it exactly
                    self.remaining[jj] = self.round_rem[jj] - self.share[jj]
                else:
                    stalled = upto - float(self.stall[jj])
                    self.remaining[jj] = float(self.round_rem[jj]) - float(self.crate[jj]) * (
                        stalled if stalled > 0.0 else 0.0
                    )
                running[jj] = False
                alloc_type[jj] = -1
                alloc_n[jj] = 0
                fin[jj] = np.inf
                cap[jj] = np.inf
            nodes, counts = placed.pop(jj)
            began = float(last_start[jj])
            if len(nodes) == 1:
                node, c = int(nodes[0]), int(counts[0])
                node_free[node] += c
                busy[group[node]] -= c
                st_job.append(jj)
                st_node.append(node)
                st_dev.append(c)
                st_start.append(began)
                st_end.append(now)
            else:
                release_nodes(node_free, busy, self.node_group, nodes, counts)
                k = len(nodes)
                st_job.extend([jj] * k)
                st_node.extend(nodes.tolist())
                st_dev.extend(counts.tolist())
                st_start.extend([began] * k)
                st_end.extend([now] * k)
            free[t] += n
            del run_set[jj]
            epoch[jj] += 1
        self._run_filter = True
        if not small:
            running[j] = False
            alloc_type[j] = -1
            alloc_n[j] = 0
            fin[j] = np.inf
            cap[j] = np.inf

    def _link_gbs(self, nodes: IntArray, ndev: int) -> float:
        """Bandwidth of the slowest link a placement crosses, GB/s (``inf`` for one device)."""
        c = self.cluster
        return float(
            link_gbs(
                _contiguous(nodes),
                ndev,
                c.node_intra_gbs,
                c.node_nic_gbps,
                c.node_rack,
                c.rack_oversub,
            )
        )

    def _start(self, starts: list[_Start]) -> None:
        """Start jobs whose devices are already reserved."""
        if not starts:
            return
        now = self.now
        rates: list[float] = [0.0] * len(starts)
        multi: list[int] = []
        keys: list[tuple[int, int, int, float]] = []  # (job, type, devices, link GB/s)
        cache = self._rate_cache
        for i, s in enumerate(starts):
            if s[2] == 1 and self.gang[s[0]] == 1:
                rates[i] = float(self.rate[s[0], s[1]])  # one device: the consolidated rate
                continue
            key = (s[0], s[1], s[2], self._link_gbs(s[3], s[2]))
            hit = cache.get(key)
            if hit is None:  # placement rates are pure: a restart on a like placement reuses it
                multi.append(i)
                keys.append(key)
            else:
                rates[i] = hit
        if multi:
            got = self.rates.placement_rate(
                np.array([k[0] for k in keys], dtype=np.int64),
                np.array([k[1] for k in keys], dtype=np.int64),
                np.array([k[2] for k in keys], dtype=np.int64),
                np.array([k[3] for k in keys]),
            ).tolist()
            for i, key, r in zip(multi, keys, got, strict=True):
                rates[i] = cache[key] = r
        for (j, t, nd, nodes, _), r in zip(starts, rates, strict=True):
            if not r > 0:
                raise SimulationError(
                    f"job {self.jobs.job_id[j]!r} got a zero rate on its placement"
                )
            resumed = self.first_start[j] == self.first_start[j]
            stall = now + self.restore[j] if resumed else now
            if resumed:
                where = nodes.tobytes()
                if self.last_key.get(j) != where:
                    self.migrations[j] += 1
                self.last_key[j] = where
            else:
                self.first_start[j] = now
                self.last_key[j] = nodes.tobytes()
            if len(nodes) > self.max_nodes[j]:
                self.max_nodes[j] = len(nodes)
            fin = stall + float(self.remaining[j]) / r
            self.last_start[j] = now
            self.base_t[j] = now
            self.exe0[j] = self.executed[j]
            self.att0[j] = self.attained[j]
            self.tt_synced_at[j] = now
            self.running[j] = True
            self.alloc_type[j] = t
            self.alloc_n[j] = nd
            self.stall[j] = stall
            self.round_rem[j] = self.remaining[j]
            self.crate[j] = r
            self.fin[j] = fin
            self.run_set[j] = None
            self._run_arr = None
            heapq.heappush(self.heap, (fin, j, self.epoch[j]))
            if self.mark_list:
                self._push_mark(j, now, float(self.attained[j]), nd)
        limit = 4 * len(self.run_set) + 1024
        if len(self.heap) > limit:
            self._compact(self.heap)
        if len(self.mark_heap) > limit:
            self._compact(self.mark_heap)

    def _reserve(self, j: int, t: int, nd: int) -> tuple[IntArray, IntArray] | None:
        """Find and reserve ``nd`` devices of type ``t`` for job ``j``."""
        if self.free[t] < nd:
            return None
        nodes_t = self.type_nodes[t]
        if self.best_fit:  # the placement puts a gang that fits one node on the best fit
            # (one type on every node: no gather; the first smallest fitting node either way)
            i = best_fit_node(self.node_free, _EMPTY_I if self._one_type else nodes_t, nd)
            if i >= 0:
                node = int(nodes_t[i])
                self.node_free[node] -= nd
                self.busy[self.group_list[node]] += nd
                self.free[t] -= nd
                one: tuple[IntArray, IntArray] = (nodes_t[i : i + 1], self._counts(nd))
                self.placed[j] = one
                return one
        cand = nodes_t[self.node_free[nodes_t] > 0]
        got = self.placement.place(self.cluster, self.node_free, cand, nd)
        if got is None:
            return None
        nodes, counts = _contiguous(got[0]), _contiguous(got[1])
        if len(nodes) != len(counts) or not take_nodes(
            self.node_free, self.busy, self.node_group, self.cluster.node_type, nodes, counts, t, nd
        ):
            raise SimulationError(f"placement {self.placement.name!r} gave an invalid placement")
        self.free[t] -= nd
        self.placed[j] = (nodes, counts)
        return nodes, counts

    def _counts(self, nd: int) -> IntArray:
        """A shared read-only ``[nd]`` array (placements on one node)."""
        c = self._one.get(nd)
        if c is None:
            c = self._one[nd] = np.array([nd], dtype=np.int64)
            c.flags.writeable = False
        return c

    def _choose_type(self, j: int, want: int, nd: int, free: IntArray) -> int:
        """Type for job ``j``: ``want`` if given, else current, else the fastest with room."""
        if want >= 0:
            return want
        if len(free) == 1:
            return 0 if free[0] >= nd and self.rate[j, 0] > 0 else -1
        cur = int(self.alloc_type[j])
        if cur >= 0:
            return cur
        return int(fastest_type(self.rate, j, free, nd))

    # ------------------------------------------------------------------ decisions
    def _apply(self, d: Decision) -> None:
        if d.drop is not None and len(d.drop):
            self._abandon(d.drop)
        if d.fractions is not None:
            d = realise_fractions(self._state(), d.fractions)
        run = np.asarray(d.run, dtype=np.int64)
        m = len(run)
        types = None if d.types is None else np.asarray(d.types, dtype=np.int64)
        ndev = None if d.ndev is None else np.asarray(d.ndev, dtype=np.int64)
        if (types is not None and len(types) != m) or (ndev is not None and len(ndev) != m):
            raise SimulationError(f"policy {self.policy.name!r}: decision arrays differ in length")
        if m:
            # preemptive decisions list every active job: only the jobs chosen to run are
            # checked (by the fill), the rest cannot matter
            if not self.policy.preemptive:
                self._check_active(run)
            if ndev is not None and (
                np.any(ndev < self.jobs.min_gpus[run]) or np.any(ndev > self.jobs.max_gpus[run])
            ):
                raise SimulationError(f"policy {self.policy.name!r}: device count out of range")
            if types is not None and np.any(types >= self.cluster.n_types):
                raise SimulationError(f"policy {self.policy.name!r}: unknown accelerator type")
        if self.policy.preemptive:
            self._apply_preemptive(run, types, ndev)
        elif m:
            nds = self.jobs.num_gpus[run] if ndev is None else ndev
            self._apply_greedy(run, types, nds)

    def _check_active(self, run: IntArray) -> None:
        ok = self.is_active[run]
        if not ok.all():
            jj = int(run[np.flatnonzero(~ok)[0]])
            raise SimulationError(
                f"policy {self.policy.name!r} scheduled job {self.jobs.job_id[jj]!r},"
                " which is not active"
            )

    def _apply_greedy(self, run: IntArray, types: IntArray | None, nds: IntArray) -> None:
        """Start listed queued jobs in order; running jobs are left alone."""
        blocking = self.policy.blocking
        free = self.free
        max_free = int(free.max())
        if not blocking:  # drop what cannot start now, in one vectorised step
            ok = (nds <= max_free) & ~self.running[run]
            run, nds = run[ok], nds[ok]
            types = None if types is None else types[ok]
        starts: list[_Start] = []
        chunk = 64
        for lo in range(0, len(run), chunk):
            js = run[lo : lo + chunk].tolist()
            ns = nds[lo : lo + chunk].tolist()
            ts = [-1] * len(js) if types is None else types[lo : lo + chunk].tolist()
            for j, want, nd in zip(js, ts, ns, strict=True):
                if j in self.run_set:
                    continue
                got = None
                t = -1
                if nd <= max_free:
                    t = self._choose_type(j, want, nd, free)
                    got = self._reserve(j, t, nd) if t >= 0 else None
                if got is None:
                    if blocking:
                        self._start(starts)
                        return
                    continue
                starts.append((j, t, nd, got[0], got[1]))
                max_free = int(free.max())
                if max_free == 0:
                    self._start(starts)
                    return
        self._start(starts)

    def _apply_preemptive(
        self, run: IntArray, types: IntArray | None, ndev: IntArray | None
    ) -> None:
        # 1. which jobs fit, by device count per type, in priority order; which of the
        #    running jobs keep their devices and which stop (one compiled pass)
        m = len(run)
        rj = self.running_jobs()
        if not self._plan_out or len(self._plan_out[0]) < max(m, len(rj)):
            size = max(2 * m, 2 * len(rj), 1024)
            self._plan_out = tuple(np.empty(size, dtype=np.int64) for _ in range(5))
        go_job, go_type, go_n, kept, stop = self._plan_out
        n_go, n_kept, n_stop, bad, why = plan_preemptive(
            _contiguous(run),
            _EMPTY_I if ndev is None else _contiguous(ndev),
            _EMPTY_I if types is None else _contiguous(types),
            self.gang_arr,
            self.rate,
            self.capacity.copy(),
            bool(self.policy.blocking),
            self.running,
            self.alloc_n,
            self.alloc_type,
            self.is_active,
            rj,
            self._mark,
            go_job,
            go_type,
            go_n,
            kept,
            stop,
        )
        if bad >= 0:
            what = " twice" if why == BAD_TWICE else ", which is not active"
            raise SimulationError(
                f"policy {self.policy.name!r} scheduled job {self.jobs.job_id[bad]!r}{what}"
            )
        # 2. suspend running jobs that are not kept where they are
        if n_stop:
            out = stop[:n_stop].tolist()
            pre = self.preemptions
            for jj in out:
                pre[jj] += 1
            self._stop(out, completed=False)
        # 3. start the others in priority order; the new running set is then known, so it
        #    need not be rebuilt from run_set
        if not n_go:
            self._run_arr = kept[:n_kept].copy()
            self._run_filter = False
            return
        starts: list[_Start] = []
        for j, t, nd in zip(
            go_job[:n_go].tolist(), go_type[:n_go].tolist(), go_n[:n_go].tolist(), strict=True
        ):
            got = self._reserve(j, t, nd)
            if got is not None:
                starts.append((j, t, nd, got[0], got[1]))
        self._start(starts)
        if len(starts) == n_go:
            self._run_arr = np.concatenate((kept[:n_kept], go_job[:n_go]))
        else:
            started = np.array([s[0] for s in starts], dtype=np.int64)
            self._run_arr = np.concatenate((kept[:n_kept], started))
        self._run_filter = False

    def _rearm_whole_steps(self, round_len: float) -> float:
        """Start a whole-step round: each running job may do ``floor(rate × round)`` units.

        Returns the round's end: when the last job has done its share (or finished).
        """
        if not self.run_set:
            return np.inf
        j = self.running_jobs()
        self.sync()
        self.sync_types()
        r = self.crate[j]
        rem = self.remaining[j]
        begin = np.maximum(self.now, self.stall[j])
        share = np.minimum(np.floor(r * round_len), rem)
        fin = begin + rem / r
        cap = begin + share / r
        done_now = share >= rem
        cap[done_now] = fin[done_now]
        self.fin[j] = fin
        self.cap[j] = cap
        self.round_rem[j] = rem
        self.share[j] = share
        self.stall[j] = begin
        # a job idles from its previous share's end to now: that time is not service
        self.base_t[j] = self.now
        self.exe0[j] = self.executed[j]
        self.att0[j] = self.attained[j]
        self.tt_synced_at[j] = self.now
        self.capped = True
        epoch = self.epoch
        for jj, f, d in zip(j.tolist(), fin.tolist(), done_now.tolist(), strict=True):
            epoch[jj] += 1
            if d:
                heapq.heappush(self.heap, (f, jj, epoch[jj]))
        return float(cap.max())

    def _abandon(self, js: IntArray) -> None:
        """Drop active jobs a policy gave up on (``Decision.drop``)."""
        js = np.unique(np.asarray(js, dtype=np.int64))
        if not len(js):
            return
        if not self.is_active[js].all():
            raise SimulationError(f"policy {self.policy.name!r} dropped a job that is not active")
        self._stop([j for j in js.tolist() if j in self.run_set], completed=False)
        self.drop[js] = DROP_ABANDONED
        self.is_active[js] = False
        self._removed.extend(js.tolist())
        self.n_active -= len(js)

    # ------------------------------------------------------------------ service marks
    def _push_mark(self, j: int, t: float, att: float, nd: int) -> None:
        """Schedule the moment running job ``j`` (``att`` device-seconds at ``t``, on ``nd``
        devices) reaches the next service mark above it."""
        q = bisect.bisect_right(self.mark_list, att + SERVICE_EPS)
        if q < len(self.mark_list):
            left = (self.mark_list[q] - att) / nd
            heapq.heappush(self.mark_heap, (t + left, j, self.epoch[j]))

    def _pop_marks(self, t: float) -> list[tuple[int, int]]:
        """Running jobs whose next mark is due by ``t``, with their epochs (the entries are
        consumed)."""
        heap, epoch = self.mark_heap, self.epoch
        due = []
        while heap and heap[0][0] <= t:
            _, j, ep = heapq.heappop(heap)
            if ep == epoch[j]:
                due.append((j, ep))
        return due

    def _rearm_marks(self, due: list[tuple[int, int]]) -> None:
        """After a decision: jobs woken by a mark that still run in the same stint wait for
        their next mark (a job the decision stopped or restarted has a new epoch, and a
        restart pushed its own entry). Crossing times assume service grows without pause, so
        they are never late; a job capped by a whole-step round may be woken early, which only
        costs a policy call."""
        for j, ep in due:
            if self.epoch[j] == ep and self.running[j]:
                n = int(self.alloc_n[j])
                upto = min(self.now, float(self.cap[j]))
                att = float(self.att0[j]) + (upto - float(self.base_t[j])) * n
                self._push_mark(j, self.now, att, n)

    # ------------------------------------------------------------------ main loop
    def _compact(self, heap: list[tuple[float, int, int]]) -> None:
        """Drop the stale entries of ``heap`` (jobs stopped since they were pushed), which
        preemptions pile up; the current entries and so the order of events stay the same.
        Called when stale entries far outnumber running jobs, so its cost is amortised."""
        epoch = self.epoch
        heap[:] = [e for e in heap if e[2] == epoch[e[1]]]
        heapq.heapify(heap)

    def _peek(self, heap: list[tuple[float, int, int]]) -> float:
        """Time of the first entry of ``heap`` (completions or service marks) that is still
        current, dropping stale entries of jobs stopped since they were pushed."""
        epoch = self.epoch
        while heap and heap[0][2] != epoch[heap[0][1]]:
            heapq.heappop(heap)
        return heap[0][0] if heap else np.inf

    def _pop_finished(self, t: float) -> list[int]:
        tol = t + 1e-9 + 1e-12 * abs(t)
        heap, epoch = self.heap, self.epoch
        done = []
        while heap and heap[0][0] <= tol:
            _, j, ep = heapq.heappop(heap)
            if ep == epoch[j]:
                done.append(j)
        done.sort()
        return done

    def run(self) -> RunResult:
        jobs, rate = self.jobs, self.rate
        t0 = time.perf_counter()
        # drop jobs that can never run
        runnable = rate > 0
        no_type = ~runnable.any(axis=1)
        fits = (jobs.min_gpus[:, None] <= self.capacity[None, :]) & runnable
        self.drop[no_type] = DROP_NO_TYPE
        self.drop[~no_type & ~fits.any(axis=1)] = DROP_TOO_LARGE
        order = np.flatnonzero(self.drop == "")
        sub_arr = jobs.submit_time[order]
        sub = sub_arr.tolist()
        n_ok = len(order)
        policy = self.policy
        custom_admit = type(policy).admit is not Policy.admit
        round_s = policy.round_s
        round_len = float(round_s or 0.0)
        relative = bool(round_s) and policy.rounds_only
        whole_steps = relative and self.opt.whole_steps_per_round
        next_round = np.inf
        wake = np.inf
        ai = 0  # next arrival position in `order`
        self.pending = n_ok
        self.now = sub[0] if n_ok else 0.0
        if round_s and not relative:
            k = np.ceil((self.now - self.opt.round_origin) / round_len)
            next_round = self.opt.round_origin + max(k, 0.0) * round_len
        until = self.opt.until
        progress, every = self.opt.progress, max(1, self.opt.progress_every)
        completed = 0
        # plain-Python kernels while the run is short (clustersim.kernels.choose)
        switch_at = -1 if compiled_in_use() else kernels.COMPILE_AFTER_EVENTS
        while True:
            t_arr = sub[ai] if ai < n_ok else np.inf
            t_fin = self._peek(self.heap)
            has_active = self.n_active > 0
            t_round = next_round if (has_active or t_arr <= next_round) else np.inf
            t_mark = self._peek(self.mark_heap) if self.mark_heap else np.inf
            t_next = min(t_arr, t_fin, t_round, min(wake, t_mark) if has_active else np.inf)
            if t_next == np.inf or t_next > until:
                break
            self.now = t_next
            self.events += 1
            if self.events == switch_at:
                choose(len(jobs), self.events)
            was_running = bool(self.run_set)
            changed = False
            # completions
            if t_fin <= t_next:
                done = self._pop_finished(t_next)
                self._stop(done, completed=True)
                for jj in done:
                    self.is_active[jj] = False
                self._removed.extend(done)
                self.n_active -= len(done)
                completed += len(done)
                changed = True
            # arrivals
            if t_arr <= t_next:
                hi = bisect.bisect_right(sub, t_next, ai)
                arriving = order[ai:hi]
                ai = hi
                self.pending = n_ok - ai
                if custom_admit:
                    admit = np.asarray(policy.admit(self._state(), arriving), dtype=bool)
                    if admit.shape != arriving.shape:
                        raise SimulationError(f"policy {policy.name!r}: admit() gave a wrong shape")
                    self.drop[arriving[~admit]] = DROP_REJECTED
                    arriving = arriving[admit]
                self.is_active[arriving] = True
                self._added.append(arriving)
                self.n_active += len(arriving)
                changed = changed or len(arriving) > 0
            at_round = bool(round_s) and t_next >= next_round
            if relative and not self.run_set and (changed or was_running):
                # Gavel-style rounds: an idle cluster starts a round at once, and a round
                # whose jobs have all finished ends there
                at_round = True
            if at_round:
                self.round_index += 1
                if relative:
                    next_round = np.inf
                else:  # next boundary of the fixed grid strictly after now
                    k = np.floor((t_next - self.opt.round_origin) / round_len) + 1
                    next_round = self.opt.round_origin + k * round_len
            at_wake = t_next >= wake
            if at_wake:
                wake = np.inf
            due = self._pop_marks(t_next) if t_next >= t_mark else None
            if due is not None:
                at_wake = True
            call = at_round or at_wake or (changed and not relative)
            if call and self.n_active:
                if (
                    not policy.preemptive
                    and not at_round
                    and (not self.free.any() or len(self.run_set) == self.n_active)
                ):
                    pass  # nothing can start: skip the policy call
                else:
                    d = policy.schedule(self._state())
                    self._apply(d)
                    wake = np.inf
                    if d.wake_at is not None and d.wake_at > t_next:
                        wake = float(d.wake_at)
            if due:
                self._rearm_marks(due)
            if relative and at_round and self.run_set:
                if whole_steps:
                    next_round = self._rearm_whole_steps(round_len)
                else:
                    next_round = t_next + round_len
            # record the segment that starts now
            self.seg_t.append(t_next)
            self.seg_busy.append(self.busy.copy())
            nr = len(self.run_set)
            self.seg_running.append(nr)
            self.seg_queued.append(self.n_active - nr)
            if progress is not None and self.events % every == 0:
                progress(Progress(t_next, self.events, ai, completed, n_ok))
        if progress is not None:
            progress(Progress(self.now, self.events, ai, completed, n_ok))
        # close the timeline
        end = self.now
        self.sync()
        self.sync_types()
        for jj in sorted(self.placed):  # stints still open at the end
            nodes, counts = self.placed[jj]
            k = len(nodes)
            self.st_job.extend([jj] * k)
            self.st_node.extend(nodes.tolist())
            self.st_dev.extend(counts.tolist())
            self.st_start.extend([float(self.last_start[jj])] * k)
            self.st_end.extend([end] * k)
        unfinished = self.active
        if len(unfinished):
            self.drop[unfinished] = DROP_UNFINISHED
        if ai < n_ok:
            self.drop[order[ai:]] = DROP_UNFINISHED
        seg_t = np.array([*self.seg_t, end], dtype=np.float64)
        n_types, n_regions = self.cluster.n_types, self.n_regions
        seg_busy = (
            np.array(self.seg_busy).reshape(-1, n_types, n_regions)
            if self.seg_busy
            else np.zeros((0, n_types, n_regions))
        )
        return RunResult(
            jobs=jobs,
            cluster=self.cluster,
            policy=policy.name,
            placement=self.placement.name,
            seed=self.opt.seed,
            first_start=self.first_start,
            finish=self.finish,
            drop_reason=self.drop,
            attained=self.attained,
            type_time=self.type_time,
            device_time=self.device_time,
            preemptions=self.preemptions,
            migrations=self.migrations,
            max_nodes=self.max_nodes,
            seg_t=seg_t,
            seg_busy=seg_busy,
            seg_queued=np.array(self.seg_queued, dtype=np.int64),
            seg_running=np.array(self.seg_running, dtype=np.int64),
            stints=Stints(
                job=np.array(self.st_job, dtype=np.int64),
                node=np.array(self.st_node, dtype=np.int64),
                devices=np.array(self.st_dev, dtype=np.int64),
                start=np.array(self.st_start, dtype=np.float64),
                end=np.array(self.st_end, dtype=np.float64),
            ),
            events=self.events,
            wall_s=time.perf_counter() - t0,
        )


def warm_up() -> None:
    """Compile and cache every kernel of :mod:`clustersim.kernels` by simulating a small
    synthetic trace under several policies and placements on the ``gavel-testbed`` preset.

    numba compiles a kernel on its first call and caches it on disk; ``make install`` and the
    Docker build call this so that no user's first simulation waits for the compiler. The
    process uses the compiled kernels from then on, whatever the size of its runs.
    """
    from clustersim.presets import preset
    from clustersim.synth import gavel_model, generate
    from scheduling.registry import make_placement, make_policy

    use_compiled()

    cluster = preset("gavel-testbed")
    jobs = generate(gavel_model(), n_jobs=80, seed=0)
    rates = PerformanceModel().prepare(jobs, cluster)
    for policy, where in [
        ("fifo", "consolidate"),
        ("srtf", "spread"),
        ("tiresias", "topology"),
        ("fifo", "yarn"),
        ("gavel-las", "consolidate"),
    ]:
        simulate(jobs, cluster, make_policy(policy), make_placement(where), rates=rates)


def _contiguous(a: IntArray) -> IntArray:
    """``a`` as a writeable C-contiguous int64 array (one compiled kernel signature)."""
    if a.flags.c_contiguous and a.flags.writeable and a.dtype == np.int64:
        return a
    return np.array(a, dtype=np.int64)


def simulate(
    jobs: JobTable,
    cluster: Cluster,
    policy: Policy,
    placement: Placement | None = None,
    *,
    perf: PerformanceModel | None = None,
    rates: JobRates | None = None,
    options: EngineOptions | None = None,
    seed: int | None = None,
) -> RunResult:
    """Simulate ``jobs`` on ``cluster`` under ``policy``.

    Parameters
    ----------
    jobs
        The workload.
    cluster
        The inventory.
    policy
        A scheduling policy instance (hyper-parameters set); it is reset with a seeded
        generator before the run.
    placement
        Placement strategy; default :class:`scheduling.placement.Consolidate`.
    perf, rates
        Performance model, or rates already prepared for these jobs and cluster.
    options
        Engine options (seed, horizon, round origin).
    seed
        Shorthand for ``options.seed``.

    Returns
    -------
    RunResult

    Notes
    -----
    A run of at least :data:`clustersim.kernels.COMPILE_FROM_JOBS` jobs switches the process
    to numba's compiled kernels (:func:`clustersim.kernels.choose`), a smaller one once it
    has processed :data:`clustersim.kernels.COMPILE_AFTER_EVENTS` event batches; until then
    (unless the process has switched already) the kernels run as plain Python. The results
    are the same either way.
    """
    from scheduling.placement import Consolidate

    opt = options or EngineOptions()
    if seed is not None:
        opt = dataclasses.replace(opt, seed=seed)
    placement = placement or Consolidate()
    if rates is None:
        rates = (perf or PerformanceModel()).prepare(jobs, cluster)
    choose(len(jobs))
    policy_ss, place_ss = np.random.SeedSequence(opt.seed).spawn(2)
    policy.reset(np.random.default_rng(policy_ss))
    placement.reset(np.random.default_rng(place_ss))
    return _Run(jobs, cluster, policy, placement, rates, opt).run()
