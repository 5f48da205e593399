"""Slurm: multifactor priority with EASY backfill (``slurm``).

Sources: the Slurm Workload Manager's own documentation, version 24.05 — "Multifactor Priority
Plugin" (``priority/multifactor``), "Fair Tree Fairshare Algorithm", "Classic Fairshare
Algorithm", and ``slurm.conf(5)`` (``PriorityDecayHalfLife``, ``PriorityMaxAge``,
``PriorityWeight*``, ``PriorityFavorSmall``, ``SchedulerType=sched/backfill``); EASY backfill
as defined by Lifka, "The ANL/IBM SP Scheduling System" (JSSPP 1995) and Mu'alem & Feitelson,
"Utilization, Predictability, Workloads, and User Runtime Estimates in Scheduling the IBM SP2
with Backfilling" (IEEE TPDS 2001). Written from the manuals, in our own words.

What is modelled, rule by rule:

* **Priority** of a pending job (``priority/multifactor``)::

      P = w_age × age + w_fairshare × fairshare + w_size × size + w_qos × qos

  - ``age`` = min(wait / ``max_age_s``, 1) (``PriorityMaxAge``, 7 days by default);
  - ``size`` = devices asked / devices in the cluster (``PriorityFavorSmall=NO``: bigger
    jobs rank higher; ``favor_small=True`` gives 1 − that);
  - ``qos`` = the job's trace ``priority`` / the largest in the trace (the trace's priority
    column stands for the QOS's ``Priority``; 0 when no job has one);
  - ``fairshare`` of the job's user, from the user's usage decayed with half-life
    ``decay_half_life_s`` (``PriorityDecayHalfLife``, 7 days): device-seconds, each counted
    at ``2^(−age / half_life)``. Every user of the trace is an association with an equal
    share ``S = 1 / users`` under one account. ``fairshare="fair-tree"`` (Slurm's default
    since 19.05): users ranked by Level Fairshare ``LF = S / U`` (``U``: the user's share of
    all decayed usage; no usage: first), the factor is ``rank / users`` with the first
    user at 1 and tied users on the same rank; ``fairshare="classic"``: ``2^(−U / S)``.
  - the weights default to the example configuration of the multifactor manual
    (``PriorityWeightAge=1000``, ``PriorityWeightFairshare=10000``,
    ``PriorityWeightJobSize=1000``, ``PriorityWeightQOS=0``); ties go to the earlier
    submission, then the lower job index.
* **Partitions as pools.** Each accelerator type is a partition; a job may use every type on
  which it runs (as if submitted with ``--partition=a,b,...``), and starts on the fastest
  type with room (the engine's own rule for heterogeneity-agnostic policies).
* **Scheduling pass** at every arrival and completion: pending jobs in priority order start
  while they fit (the main scheduler); at the first that does not, its *reservation* is
  computed (EASY backfill, ``sched/backfill`` with one reservation):

  - each job's time limit is its run time alone on its fastest type × ``overestimate``
    (user run-time estimates, Mu'alem & Feitelson; 1: exact estimates);
  - on each type the blocked job can use, the *shadow time* is when enough devices free up
    if every running job (and every job started in this pass) ends at its start + limit,
    and the *extra* devices are those free then beyond the job's need; the reservation is on
    the type with the earliest shadow time (lowest index on ties);
  - every later pending job, in priority order, starts now on a type with room when it does
    not touch the reservation: on another type, or on the reserved type if its limit ends by
    the shadow time, or if it takes only extra devices (which it then uses up).

  A job that can run on no type waits for ever (reported unfinished by the engine).

Implementation: the pass (priorities, main scheduler, reservation, backfill), Fair Tree's
factor and the usage decay run in compiled kernels (:func:`clustersim.kernels.slurm_pass`,
``slurm_exponents``, ``slurm_accrue``); ``Slurm.use_kernel = False`` runs the same rules in
numpy and Python, the reference they are tested against bit for bit (``tests/test_slurm.py``).
The kernel takes the starts by selection in priority order rather than sorting every job
that fits (free devices and the reservation's extra devices only shrink during a pass, so
a job passed over cannot start later in it: the same starts in the same order), and leaves
numpy's power function to numpy (its vectorised power is not the scalar one bit for bit).

Departures from Slurm, and why:

* One reservation (EASY), where Slurm's backfill reserves for every higher-priority pending
  job it examines (up to ``bf_max_job_test``, 500 by default): the issue asks for EASY, and
  the conservative variant is a later option.
* The scheduler runs at every event, not every ``bf_interval`` (30 s) and
  ``PriorityCalcPeriod`` (5 min): priorities are exact at each decision.
* Device counts per type, not nodes: a gang that fits by count is placed by the placement
  strategy; when the strategy cannot place it (a fragmented type), the engine skips it.
* Jobs are never killed at their time limit: a job running on a slower type than its
  fastest runs past it (the reservation then starts later than planned, as in Slurm when a
  job ends late... which Slurm does not allow). ``overestimate`` must be at least 1.
* No partition, association or nice factors; no TRES billing weights (usage counts devices);
  one account with equal shares for every user (no hierarchy, so Fair Tree's recursion is
  one level); no preemption (``PreemptType=preempt/none``, Slurm's default).
"""

from __future__ import annotations

import math
from typing import Annotated, ClassVar, Literal

import numpy as np
import numpy.typing as npt

from clustersim import kernels
from scheduling.base import EMPTY, Decision, Policy, State
from scheduling.params import NON_NEGATIVE, Range

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

DAY_S = 86400.0
LN2 = math.log(2.0)


def fair_tree_factor(shares: FloatArray, usage: FloatArray) -> FloatArray:
    """Fair Tree's factor of each user of one account: users ranked by Level Fairshare
    ``shares / usage_share`` (no usage: first), ``rank / users`` with the first at 1 and
    ties on the same rank.

    Parameters
    ----------
    shares : (u,) float64
        Normalised shares (sum 1).
    usage : (u,) float64
        Decayed usage (any unit; normalised here).
    """
    u = len(shares)
    if u == 0:
        return np.zeros(0)
    total = float(usage.sum())
    with np.errstate(divide="ignore", invalid="ignore"):
        lf = np.where(usage > 0, shares / (usage / total if total > 0 else 1.0), np.inf)
    # rank by LF descending: each user's rank counts the users with a strictly higher LF
    higher = np.searchsorted(np.sort(-lf), -lf, side="left")
    return (u - higher) / u


def classic_factor(shares: FloatArray, usage: FloatArray) -> FloatArray:
    """The classic factor ``2^(−U / S)``, ``U`` each user's share of the decayed usage."""
    total = float(usage.sum())
    u_norm = usage / total if total > 0 else np.zeros_like(usage)
    return np.asarray(np.exp2(-u_norm / shares), dtype=np.float64)


def easy_reservation(
    now: float, need: int, free: int, ends: FloatArray, devices: IntArray
) -> tuple[float, int]:
    """EASY backfill's shadow time and extra devices on one type.

    Parameters
    ----------
    now
        Current time, s.
    need
        Devices the blocked job asks for (more than ``free``).
    free
        Devices free now.
    ends, devices : (r,)
        Expected end (start + limit) and devices of each job holding devices of the type.

    Returns
    -------
    (shadow, extra)
        When ``need`` devices are free at the latest, and the devices free then beyond
        ``need``; ``(inf, 0)`` when the type never holds ``need`` devices.
    """
    avail = free
    if avail >= need:
        return now, avail - need
    order = np.argsort(ends, kind="stable")
    for k in order.tolist():
        avail += int(devices[k])
        if avail >= need:
            return max(float(ends[k]), now), avail - need
    return math.inf, 0


class Slurm(Policy):
    """Slurm's multifactor priority with EASY backfill (module doc: the rules and where they
    depart from Slurm 24.05).

    Parameters
    ----------
    weight_age, weight_fairshare, weight_size, weight_qos
        ``PriorityWeightAge``, ``PriorityWeightFairshare``, ``PriorityWeightJobSize``,
        ``PriorityWeightQOS``.
    max_age_s
        ``PriorityMaxAge``: the wait at which the age factor reaches 1, s.
    decay_half_life_s
        ``PriorityDecayHalfLife``: half-life of recorded usage, s.
    fairshare
        ``"fair-tree"`` (Slurm's default) or ``"classic"``.
    favor_small
        ``PriorityFavorSmall``: smaller jobs get the larger size factor.
    overestimate
        Users' time limits as a multiple of the job's run time alone on its fastest type
        (at least 1).
    backfill
        Backfill behind a blocked job (``SchedulerType=sched/backfill``); ``False``:
        ``sched/builtin``, strict priority order.
    """

    name = "slurm"
    citation = (
        "Slurm Workload Manager 24.05: multifactor priority and backfill (SchedMD manuals); "
        "Lifka, JSSPP'95; Mu'alem & Feitelson, IEEE TPDS 2001 (EASY backfill)"
    )
    preemptive = False
    #: Run the scheduling pass in the compiled kernel (:func:`clustersim.kernels.slurm_pass`);
    #: ``False``: the same rules in numpy and Python (the reference the kernel is tested
    #: against, bit for bit).
    use_kernel: ClassVar[bool] = True

    def __init__(
        self,
        weight_age: Annotated[float, NON_NEGATIVE] = 1000.0,
        weight_fairshare: Annotated[float, NON_NEGATIVE] = 10000.0,
        weight_size: Annotated[float, NON_NEGATIVE] = 1000.0,
        weight_qos: Annotated[float, NON_NEGATIVE] = 0.0,
        max_age_s: Annotated[float, Range(0.0, exclusive=True)] = 7 * DAY_S,
        decay_half_life_s: Annotated[float, Range(0.0, exclusive=True)] = 7 * DAY_S,
        fairshare: Literal["fair-tree", "classic"] = "fair-tree",
        favor_small: bool = False,
        overestimate: Annotated[float, Range(1.0)] = 1.0,
        backfill: bool = True,
    ) -> None:
        self.weight_age = weight_age
        self.weight_fairshare = weight_fairshare
        self.weight_size = weight_size
        self.weight_qos = weight_qos
        self.max_age_s = max_age_s
        self.decay_half_life_s = decay_half_life_s
        self.fairshare = fairshare
        self.favor_small = favor_small
        self.overestimate = overestimate
        self.backfill = backfill

    def reset(self, rng: np.random.Generator) -> None:
        self._ready = False
        self._t = 0.0  # time the usage was last brought up to
        self._usage: FloatArray = np.zeros(0)  # decayed device-seconds per user at _t
        self._user: IntArray = EMPTY
        self._shares: FloatArray = np.zeros(0)
        self._limit: FloatArray = np.zeros(0)  # each job's time limit, s
        self._qos: FloatArray = np.zeros(0)
        self._tracked: IntArray = EMPTY  # jobs holding devices after the last decision
        self._seen: FloatArray = np.zeros(0)  # their attained device-seconds then
        self._backfilled = 0

    def stats(self) -> dict[str, float]:
        """``backfilled``: jobs started past a blocked higher-priority job."""
        return {"backfilled": float(self._backfilled)}

    # ------------------------------------------------------------------ set-up
    def _setup(self, state: State) -> None:
        jobs = state.jobs
        names, inverse = np.unique(jobs.user.astype(str), return_inverse=True)
        self._user = inverse.reshape(-1).astype(np.int64)
        self._usage = np.zeros(len(names))
        self._shares = np.full(len(names), 1.0 / max(len(names), 1))
        best = state.best_rate
        with np.errstate(divide="ignore"):
            self._limit = np.where(best > 0, jobs.work / best, np.inf) * self.overestimate
        top = float(jobs.priority.max(initial=0))
        self._qos = jobs.priority / top if top > 0 else np.zeros(len(jobs))
        self._devices = np.maximum(jobs.num_gpus, 1).astype(np.float64)
        # what the kernel's priority loop reads of each job, in one row: submission,
        # weight_size × size (set for the cluster's devices by `_per_job_row`),
        # weight_qos × qos, devices, user
        self._per_job = np.stack(
            [
                jobs.submit_time,
                np.zeros(len(jobs)),
                self.weight_qos * self._qos,
                jobs.num_gpus.astype(np.float64),
                self._user.astype(np.float64),
            ],
            axis=1,
        )
        self._size_for = -1  # the cluster's devices the size terms are for
        self._fs = np.zeros(len(names))  # the kernel's scratch for Fair Tree's factor
        self._t = state.now
        self._ready = True

    def _decay_usage(self, state: State) -> None:
        """Bring each user's decayed usage from the last decision up to now: every job that
        held devices since then ran from the last decision for (its attained service gained)
        / (its devices) seconds — non-preemptive, so exactly so — and each of its
        device-seconds counts at ``2^(−age / half_life)``."""
        now, h = state.now, self.decay_half_life_s
        dt = now - self._t
        if dt <= 0:
            return
        decay = 2.0 ** (-dt / h)
        if self.use_kernel:  # the same arithmetic, the power in numpy
            js = self._tracked
            powers = 2.0 ** kernels.slurm_exponents(
                js, self._seen, state.attained, self._devices, float(dt), float(h)
            )
            kernels.slurm_accrue(
                self._usage,
                float(decay),
                powers,
                js,
                self._seen,
                state.attained,
                self._devices,
                self._user,
                float(h),
                LN2,
            )
            self._t = now
            return
        self._usage *= decay
        js = self._tracked
        if len(js):
            gained = state.attained[js] - self._seen
            n = self._devices[js]
            ran = np.minimum(gained / n, dt)  # seconds held since the last decision
            # ∫ n 2^(−(now − τ)/h) dτ over [t, t + ran]
            w = n * h / LN2 * (2.0 ** (-(dt - ran) / h) - decay)
            w[gained <= 0] = 0.0
            np.add.at(self._usage, self._user[js], w)
        self._t = now

    def _per_job_row(self, state: State) -> FloatArray:
        """(n, 5) the kernel's per-job row, the size term ``weight_size × size`` (as
        :meth:`priorities` computes it) for the cluster's devices now."""
        devices = max(int(state.capacity.sum()), 1)
        if devices != self._size_for:
            size = state.jobs.num_gpus / devices
            if self.favor_small:
                size = 1.0 - size
            self._per_job[:, 1] = self.weight_size * size
            self._size_for = devices
        return self._per_job

    def fairshare_factor(self) -> FloatArray:
        """(users,) the fair-share factor of each user now."""
        if self.fairshare == "classic":
            return classic_factor(self._shares, self._usage)
        return fair_tree_factor(self._shares, self._usage)

    def priorities(self, state: State, queued: IntArray) -> FloatArray:
        """(q,) the multifactor priority of the pending jobs ``queued``."""
        jobs = state.jobs
        age = np.minimum((state.now - jobs.submit_time[queued]) / self.max_age_s, 1.0)
        size = jobs.num_gpus[queued] / max(int(state.capacity.sum()), 1)
        if self.favor_small:
            size = 1.0 - size
        fs = self.fairshare_factor()[self._user[queued]]
        return np.asarray(
            self.weight_age * age
            + self.weight_fairshare * fs
            + self.weight_size * size
            + self.weight_qos * self._qos[queued],
            dtype=np.float64,
        )

    # ------------------------------------------------------------------ schedule
    def schedule(self, state: State) -> Decision:
        if not self._ready:
            self._setup(state)
        self._decay_usage(state)
        if self.use_kernel:
            return self._schedule_compiled(state)
        queued = state.queued()
        jobs = state.jobs
        gang = jobs.num_gpus
        rate = state.rate
        free = state.free.astype(np.int64).copy()
        held = state.running_jobs()
        run: list[int] = []
        typ: list[int] = []
        if len(queued) and free.max(initial=0) > 0:
            prio = self.priorities(state, queued)
            # Only jobs that fit now can start in this pass (free devices only shrink as it
            # starts jobs), so the pass walks those, in priority order, plus the best-ranked
            # job that does not fit: the first job the main scheduler cannot start is the
            # highest-ranked of it and of the fitting jobs that no longer fit when reached.
            fits = ((rate[queued] > 0) & (gang[queued, None] <= free[None, :])).any(axis=1)
            # ties go to the earlier submission, then the lower index: `queued` ascends in
            # both (the job table is sorted by submit time), so a stable sort keeps them
            cand = np.flatnonzero(fits)
            cand = cand[np.argsort(-prio[cand], kind="stable")]
            rest = np.flatnonzero(~fits)
            block = -1  # position in `queued` of the best-ranked job that does not fit
            if len(rest):
                block = int(rest[np.argmax(prio[rest])])  # the first of the best
            self._pass(state, queued, prio, cand, block, free, held, run, typ)
        # jobs holding devices after this decision, with their service so far
        started = np.array(run, dtype=np.int64)
        self._tracked = np.concatenate([held, started])
        self._seen = state.attained[self._tracked].copy()
        return Decision(run=started, types=np.array(typ, dtype=np.int64))

    def _schedule_compiled(self, state: State) -> Decision:
        """:meth:`schedule` after the usage decay, the pass in :func:`clustersim.kernels.
        slurm_pass` (which picks the pending jobs out of the active ones itself)."""
        active = state.active
        # after `active`, as in the numpy path (whose `queued()` reads it): the state then
        # lists the running jobs in its order, which the usage decay sums in
        held = state.running_jobs()
        free = state.free.astype(np.int64)  # a copy: the kernel takes devices from it
        if free.max(initial=0) <= 0:
            self._tracked = held.copy()
            self._seen = state.attained[held].copy()
            return Decision(run=EMPTY, types=EMPTY)
        fair_tree = self.fairshare == "fair-tree"
        got, types, backfilled = kernels.slurm_pass(
            float(state.now),
            active,
            state.running,
            self._per_job_row(state),
            state.jobs.num_gpus,
            state.rate,
            free,
            self._fs if fair_tree else self.fairshare_factor(),
            self._limit,
            float(self.weight_age),
            float(self.weight_fairshare),
            float(self.max_age_s),
            bool(self.backfill),
            state.capacity,
            held,
            state.alloc_type,
            state.alloc_n,
            state.last_start,
            self._usage,
            self._shares,
            float(self._usage.sum()),
            fair_tree,
        )
        self._backfilled += int(backfilled)
        self._tracked = np.concatenate([held, got])
        self._seen = state.attained[self._tracked].copy()
        return Decision(run=got, types=types)

    def _pass(
        self,
        state: State,
        queued: IntArray,
        prio: FloatArray,
        cand: IntArray,
        block: int,
        free: IntArray,
        held: IntArray,
        run: list[int],
        typ: list[int],
    ) -> None:
        """The main scheduler then EASY backfill over the fitting jobs ``cand`` (positions in
        ``queued``, ranked), with ``block`` the best-ranked job that does not fit (-1: none);
        appends the starts to ``run`` and ``typ``."""
        jobs = state.jobs
        gang, rate, limit, now = jobs.num_gpus, state.rate, self._limit, state.now
        sub = jobs.submit_time
        end_t = state.alloc_type[held].tolist()
        end_s = (state.last_start[held] + limit[held]).tolist()
        end_n = state.alloc_n[held].tolist()

        def start(j: int, t: int, g: int) -> None:
            free[t] -= g
            run.append(j)
            typ.append(t)
            end_t.append(t)
            end_s.append(now + float(limit[j]))
            end_n.append(g)

        # the main scheduler: in priority order while jobs fit
        key_b = (-prio[block], sub[queued[block]], queued[block]) if block >= 0 else None
        head = -1  # the job it stops at
        k = 0
        for k, i in enumerate(cand.tolist()):
            j = int(queued[i])
            if key_b is not None and key_b < (-prio[i], sub[j], j):
                head = int(queued[block])  # the job that does not fit ranks first
                break
            g = int(gang[j])
            ok = (rate[j] > 0) & (free >= g)
            if not ok.any():  # it fitted at the start of the pass, not any more
                head, k = j, k + 1
                break
            start(j, int(np.argmax(np.where(ok, rate[j], -1.0))), g)
        else:
            if key_b is None:
                return
            head, k = int(queued[block]), len(cand)
        if not self.backfill or not free.any():
            return
        # EASY backfill over the fitting jobs ranked after the head, in priority order
        reserved, shadow, extra = self._reserve(state, head, free, end_t, end_s, end_n)
        rest = queued[cand[k:]]
        if not len(rest):
            return
        r, g_rest = rate[rest], gang[rest]
        by_time = now + limit[rest] <= shadow
        pos = 0
        while pos < len(rest):
            ok = (r[pos:] > 0) & (g_rest[pos:, None] <= free[None, :])
            if reserved >= 0:
                ok[:, reserved] &= by_time[pos:] | (g_rest[pos:] <= extra)
            can = np.flatnonzero(ok.any(axis=1))
            if not len(can):
                return
            c = int(can[0])
            j, g = int(rest[pos + c]), int(g_rest[pos + c])
            t = int(np.argmax(np.where(ok[c], r[pos + c], -1.0)))
            if t == reserved and not by_time[pos + c]:
                extra -= g
            self._backfilled += 1
            start(j, t, g)
            if not free.any():
                return
            pos += c + 1

    def _reserve(
        self,
        state: State,
        j: int,
        free: IntArray,
        end_t: list[int],
        end_s: list[float],
        end_n: list[int],
    ) -> tuple[int, float, int]:
        """The blocked job ``j``'s reservation: (type, shadow time, extra devices) on the
        type where it can start first (-1 when no type ever holds it)."""
        g = int(gang_of(state, j))
        ts = np.asarray(end_t, dtype=np.int64)
        es = np.asarray(end_s, dtype=np.float64)
        ns = np.asarray(end_n, dtype=np.int64)
        best = (-1, math.inf, 0)
        for t in np.flatnonzero(state.rate[j] > 0).tolist():
            if int(state.capacity[t]) < g:
                continue
            on = ts == t
            s, x = easy_reservation(state.now, g, int(free[t]), es[on], ns[on])
            if s < best[1]:
                best = (t, s, x)
        return best


def gang_of(state: State, j: int) -> int:
    """Devices job ``j`` asks for."""
    return int(state.jobs.num_gpus[j])
