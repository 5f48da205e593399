"""The discrete-event engine (DESIGN §3.4).

One loop owns the clock. Job state is held in parallel numpy arrays; running jobs are also kept
in compact arrays (``_r_*``) so that the next completion is one ``min`` over them and no
per-job work happens between events: a running job's progress is implied by its predicted
finish time, and the bookkeeping of held time is brought up to date lazily (when a job stops,
or when a policy reads the dynamic arrays). Events at the same instant are handled as one
batch: completions, then arrivals, then one policy call.

The order of everything is fixed (jobs are indexed in submit order, ties broken by index,
randomness only from ``numpy.random.SeedSequence(seed)``), so the same inputs and seed give
identical results in any process.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from clustersim.cluster import Cluster
from clustersim.errors import SimulationError
from clustersim.jobs import JobTable
from clustersim.perf import JobRates, PerformanceModel
from clustersim.result import (
    DROP_NO_TYPE,
    DROP_REJECTED,
    DROP_TOO_LARGE,
    DROP_UNFINISHED,
    RunResult,
)
from clustersim.rounds import realise_fractions
from scheduling.base import Decision, Placement, Policy, State

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

_EMPTY_I = np.zeros(0, dtype=np.int64)
_EMPTY_F = np.zeros(0, dtype=np.float64)


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
        Time of the first round boundary for round-based policies (s).
    """

    seed: int = 0
    until: float = np.inf
    round_origin: float = 0.0


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
        self.rate = rates.rate
        if self.rate.shape != (n, n_types):
            raise SimulationError(f"rate matrix has shape {self.rate.shape}, want {(n, n_types)}")
        self.capacity = cluster.devices_per_type()
        self.free = self.capacity.copy()
        self.node_free = cluster.node_devices.astype(np.int64).copy()
        n_regions = len(cluster.regions)
        self.n_regions = n_regions
        self.node_group = cluster.node_type * n_regions + cluster.node_region
        self.busy = np.zeros(n_types * n_regions, dtype=np.float64)
        # nodes of each type, for candidate search
        self.type_nodes = [np.flatnonzero(cluster.node_type == t) for t in range(n_types)]

        # per-job state
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
        self.synced_at = np.zeros(n)
        self.preemptions = np.zeros(n, dtype=np.int64)
        self.migrations = np.zeros(n, dtype=np.int64)
        self.max_nodes = np.zeros(n, dtype=np.int64)
        self.drop = np.full(n, "", dtype=object)
        self.placed: dict[int, tuple[IntArray, IntArray]] = {}
        self.last_key: dict[int, bytes] = {}

        # compact arrays of running jobs
        self._r_job = _EMPTY_I
        self._r_fin = _EMPTY_F
        self._r_stall = _EMPTY_F
        self._r_rate = _EMPTY_F

        self.active = _EMPTY_I
        self.now = 0.0
        self.round_index = 0
        self.events = 0
        self.seg_t: list[float] = []
        self.seg_busy: list[FloatArray] = []
        self.seg_queued: list[int] = []
        self.seg_running: list[int] = []

    # ------------------------------------------------------------------ bookkeeping
    def sync(self) -> None:
        """Bring the dynamic per-job arrays of running jobs up to ``now``."""
        j = self._r_job
        if len(j) == 0:
            return
        now = self.now
        dt = now - self.synced_at[j]
        self.executed[j] += dt
        self.attained[j] += dt * self.alloc_n[j]
        t = self.alloc_type[j]
        self.type_time[j, t] += dt
        self.device_time[j, t] += dt * self.alloc_n[j]
        self.synced_at[j] = now
        self.remaining[j] = self._r_rate * (self._r_fin - np.maximum(now, self._r_stall))

    def _state(self) -> State:
        return State(
            now=self.now,
            jobs=self.jobs,
            cluster=self.cluster,
            active=self.active,
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
            source=self,
        )

    def _stop(self, pos: IntArray, completed: bool) -> None:
        """Stop the running jobs at compact positions ``pos`` (completion or suspension)."""
        if len(pos) == 0:
            return
        self.sync()
        j = self._r_job[pos]
        if completed:
            self.remaining[j] = 0.0
            self.finish[j] = self.now
        for jj in j.tolist():
            nodes, counts = self.placed.pop(jj)
            self.node_free[nodes] += counts
            self.busy -= np.bincount(
                self.node_group[nodes], weights=counts, minlength=len(self.busy)
            )
        np.add.at(self.free, self.alloc_type[j], self.alloc_n[j])
        self.running[j] = False
        self.alloc_type[j] = -1
        self.alloc_n[j] = 0
        keep = np.ones(len(self._r_job), dtype=bool)
        keep[pos] = False
        self._r_job = self._r_job[keep]
        self._r_fin = self._r_fin[keep]
        self._r_stall = self._r_stall[keep]
        self._r_rate = self._r_rate[keep]

    def _link_gbs(self, nodes: IntArray, ndev: int) -> float:
        c = self.cluster
        if ndev <= 1:
            return float("inf")
        if len(nodes) == 1:
            return float(c.node_intra_gbs[nodes[0]])
        nic = float(c.node_nic_gbps[nodes].min()) / 8.0
        racks = c.node_rack[nodes]
        if racks.min() == racks.max():
            return nic
        return nic / float(c.rack_oversub[racks].max())

    def _start_batch(self, starts: list[tuple[int, int, int, IntArray, IntArray]]) -> None:
        """Start jobs: (job, type, ndev, nodes, counts) each, devices already reserved."""
        if not starts:
            return
        now = self.now
        j = np.array([s[0] for s in starts], dtype=np.int64)
        t = np.array([s[1] for s in starts], dtype=np.int64)
        nd = np.array([s[2] for s in starts], dtype=np.int64)
        link = np.array([self._link_gbs(s[3], s[2]) for s in starts])
        r = self.rates.placement_rate(j, t, nd, link)
        if not np.all(r > 0):
            bad = int(j[np.flatnonzero(~(r > 0))[0]])
            raise SimulationError(f"job {self.jobs.job_id[bad]!r} got a zero rate on its placement")
        resumed = np.isfinite(self.first_start[j])
        stall = now + np.where(resumed, self.rates.restore_s[j], 0.0)
        for (jj, _, _, nodes, _), res in zip(starts, resumed.tolist(), strict=True):
            key = nodes.tobytes()
            if res and self.last_key.get(jj) != key:
                self.migrations[jj] += 1
            self.last_key[jj] = key
            if len(nodes) > self.max_nodes[jj]:
                self.max_nodes[jj] = len(nodes)
        self.first_start[j] = np.where(resumed, self.first_start[j], now)
        self.last_start[j] = now
        self.synced_at[j] = now
        self.running[j] = True
        self.alloc_type[j] = t
        self.alloc_n[j] = nd
        self._r_job = np.concatenate([self._r_job, j])
        self._r_fin = np.concatenate([self._r_fin, stall + self.remaining[j] / r])
        self._r_stall = np.concatenate([self._r_stall, stall])
        self._r_rate = np.concatenate([self._r_rate, r])

    def _reserve(self, j: int, t: int, nd: int) -> tuple[IntArray, IntArray] | None:
        """Find and reserve devices for job ``j``: ``nd`` devices of type ``t``."""
        if self.free[t] < nd:
            return None
        nodes_t = self.type_nodes[t]
        cand = nodes_t[self.node_free[nodes_t] > 0]
        got = self.placement.place(self.cluster, self.node_free, cand, nd)
        if got is None:
            return None
        nodes, counts = got
        if (
            int(counts.sum()) != nd
            or np.any(counts > self.node_free[nodes])
            or np.any(self.cluster.node_type[nodes] != t)
        ):
            raise SimulationError(
                f"placement {self.placement.name!r} returned an invalid placement"
            )
        self.node_free[nodes] -= counts
        self.free[t] -= nd
        self.busy += np.bincount(self.node_group[nodes], weights=counts, minlength=len(self.busy))
        self.placed[j] = (nodes, counts)
        return nodes, counts

    def _choose_type(self, j: int, want: int, nd: int, free: IntArray) -> int:
        """Type for job ``j``: ``want`` if given, else current, else the fastest with room."""
        if want >= 0:
            return want
        cur = int(self.alloc_type[j])
        if cur >= 0:
            return cur
        return self._fastest(j, nd, free)

    def _fastest(self, j: int, nd: int, free: IntArray) -> int:
        r = self.rate[j]
        ok = (r > 0) & (free >= nd)
        return int(np.argmax(np.where(ok, r, -1.0))) if ok.any() else -1

    # ------------------------------------------------------------------ decisions
    def _apply(self, d: Decision) -> None:
        if d.fractions is not None:
            d = realise_fractions(self._state(), d.fractions)
        run = np.asarray(d.run, dtype=np.int64)
        m = len(run)
        if m == 0 and not self.policy.preemptive:
            return
        types = np.full(m, -1, dtype=np.int64) if d.types is None else np.asarray(d.types)
        nds = self.jobs.num_gpus[run] if d.ndev is None else np.asarray(d.ndev, dtype=np.int64)
        if len(types) != m or len(nds) != m:
            raise SimulationError("decision arrays have different lengths")
        if m:
            bad = (
                (self.finish[run] == self.finish[run])
                | (self.jobs.submit_time[run] > self.now)
                | (self.drop[run] != "")
            )
            if bad.any():
                jj = int(run[np.flatnonzero(bad)[0]])
                raise SimulationError(
                    f"policy {self.policy.name!r} scheduled job {self.jobs.job_id[jj]!r},"
                    " which is not active"
                )
            if np.any(nds < self.jobs.min_gpus[run]) or np.any(nds > self.jobs.max_gpus[run]):
                raise SimulationError(
                    f"policy {self.policy.name!r} gave a device count out of range"
                )
        if self.policy.preemptive:
            self._apply_preemptive(run, types, nds)
        else:
            self._apply_greedy(run, types, nds)

    def _apply_greedy(self, run: IntArray, types: IntArray, nds: IntArray) -> None:
        blocking = self.policy.blocking
        starts = []
        max_free = int(self.free.max()) if len(self.free) else 0
        for j, want, nd in zip(run.tolist(), types.tolist(), nds.tolist(), strict=True):
            if self.running[j]:
                continue
            if nd > max_free:
                if blocking:
                    break
                continue
            t = self._choose_type(j, want, nd, self.free)
            got = self._reserve(j, t, nd) if t >= 0 else None
            if got is None:
                if blocking:
                    break
                continue
            starts.append((j, t, nd, got[0], got[1]))
            max_free = int(self.free.max())
            if max_free == 0:
                break
        self._start_batch(starts)

    def _apply_preemptive(self, run: IntArray, types: IntArray, nds: IntArray) -> None:
        # 1. which jobs fit, by device count per type, in priority order
        left = self.capacity.copy()
        target: list[tuple[int, int, int]] = []
        blocking = self.policy.blocking
        for j, want, nd in zip(run.tolist(), types.tolist(), nds.tolist(), strict=True):
            if nd > left.max():
                if blocking:
                    break
                continue
            cur = int(self.alloc_type[j])
            if want >= 0:
                t = want if self.rate[j, want] > 0 else -1
            elif cur >= 0 and self.alloc_n[j] == nd and left[cur] >= nd:
                t = cur  # keep a running job where it is
            else:
                t = self._fastest(j, nd, left)
            if t < 0 or left[t] < nd:
                if blocking:
                    break
                continue
            left[t] -= nd
            target.append((j, t, nd))
        keep = {
            j
            for j, t, nd in target
            if self.running[j] and self.alloc_type[j] == t and self.alloc_n[j] == nd
        }
        # 2. suspend running jobs that are not kept
        rj = self._r_job
        out = np.flatnonzero(~np.isin(rj, np.fromiter(keep, dtype=np.int64, count=len(keep))))
        if len(out):
            self.preemptions[rj[out]] += 1
            self._stop(out, completed=False)
        # 3. start the others in priority order
        starts = []
        for j, t, nd in target:
            if j in keep:
                continue
            got = self._reserve(j, t, nd)
            if got is not None:
                starts.append((j, t, nd, got[0], got[1]))
        self._start_batch(starts)

    # ------------------------------------------------------------------ main loop
    def run(self) -> RunResult:
        jobs, rate = self.jobs, self.rate
        t0 = time.perf_counter()
        # drop jobs that can never run
        runnable = rate > 0
        no_type = ~runnable.any(axis=1)
        fits = (jobs.min_gpus[:, None] <= self.capacity[None, :]) & runnable
        self.drop[no_type] = DROP_NO_TYPE
        self.drop[~no_type & ~fits.any(axis=1)] = DROP_TOO_LARGE
        ok = self.drop == ""
        order = np.flatnonzero(ok)
        submit = jobs.submit_time
        n_ok = len(order)
        policy = self.policy
        round_s = policy.round_s
        rounds_only = bool(round_s) and policy.rounds_only
        next_round = np.inf
        wake = np.inf
        ai = 0  # next arrival position in `order`
        self.now = float(submit[order[0]]) if n_ok else 0.0
        if round_s:
            k = np.ceil((self.now - self.opt.round_origin) / round_s)
            next_round = self.opt.round_origin + max(k, 0.0) * round_s
        until = self.opt.until
        while True:
            t_arr = float(submit[order[ai]]) if ai < n_ok else np.inf
            t_fin = float(self._r_fin.min()) if len(self._r_fin) else np.inf
            has_active = len(self.active) > 0
            t_round = next_round if (round_s and (has_active or t_arr <= next_round)) else np.inf
            t_next = min(t_arr, t_fin, t_round, wake if has_active else np.inf)
            if t_next == np.inf or t_next > until:
                break
            self.now = t_next
            self.events += 1
            changed = False
            # completions
            if t_fin <= t_next:
                tol = 1e-9 + 1e-12 * abs(t_next)
                done = np.flatnonzero(self._r_fin <= t_next + tol)
                done_jobs = self._r_job[done]
                self._stop(done, completed=True)
                self.active = self.active[~np.isin(self.active, done_jobs)]
                changed = True
            # arrivals
            if t_arr <= t_next:
                hi = int(np.searchsorted(submit[order], t_next, side="right"))
                arriving = order[ai:hi]
                ai = hi
                st = self._state()
                admit = np.asarray(policy.admit(st, arriving), dtype=bool)
                if admit.shape != arriving.shape:
                    raise SimulationError(f"policy {policy.name!r} admit() returned a wrong shape")
                self.drop[arriving[~admit]] = DROP_REJECTED
                self.active = np.concatenate([self.active, arriving[admit]])
                changed = changed or bool(admit.any())
            at_round = False
            if round_s and t_next >= next_round:
                at_round = True
                self.round_index += 1
                # next boundary strictly after now (skips empty stretches)
                k = np.floor((t_next - self.opt.round_origin) / round_s) + 1
                next_round = self.opt.round_origin + k * round_s
            at_wake = t_next >= wake
            if at_wake:
                wake = np.inf
            call = at_round or at_wake or (changed and not rounds_only)
            if call and len(self.active):
                if (
                    not policy.preemptive
                    and not at_round
                    and (int(self.free.sum()) == 0 or len(self._r_job) == len(self.active))
                ):
                    pass  # nothing can start: skip the policy call
                else:
                    d = policy.schedule(self._state())
                    self._apply(d)
                    if d.wake_at is not None and d.wake_at > t_next:
                        wake = float(d.wake_at)
            # record the segment that starts now
            self.seg_t.append(t_next)
            self.seg_busy.append(self.busy.copy())
            nr = len(self._r_job)
            self.seg_running.append(nr)
            self.seg_queued.append(len(self.active) - nr)
        # close the timeline
        end = self.now
        unfinished = self.active
        if len(unfinished):
            self.sync()
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
            events=self.events,
            wall_s=time.perf_counter() - t0,
        )


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
    """
    from scheduling.placement import Consolidate

    opt = options or EngineOptions()
    if seed is not None:
        opt = EngineOptions(seed=seed, until=opt.until, round_origin=opt.round_origin)
    placement = placement or Consolidate()
    if rates is None:
        rates = (perf or PerformanceModel()).prepare(jobs, cluster)
    policy_ss, place_ss = np.random.SeedSequence(opt.seed).spawn(2)
    policy.reset(np.random.default_rng(policy_ss))
    placement.reset(np.random.default_rng(place_ss))
    return _Run(jobs, cluster, policy, placement, rates, opt).run()
