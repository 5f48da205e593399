"""The discrete-event engine (DESIGN §3.4).

One loop owns the clock. Job state is held in parallel numpy arrays indexed by job (jobs are
indexed in submit order). Between events nothing is computed per job: a running job's progress
is implied by its predicted finish time, which sits in one heap of ``(finish, job, epoch)``
entries (the SimPy/vidur design: a heap and a counter owned by the simulator). The held-time
bookkeeping of running jobs is brought up to date lazily — when a job stops, or when a policy
reads the dynamic arrays of its :class:`~scheduling.base.State`. Events at the same instant are
handled as one batch: completions, then arrivals, then one policy call.

The loop and the clock are Python; what a decision does to the state (which jobs fit, suspend,
reserve devices, start, push their events) is one call of a compiled kernel of
:mod:`clustersim.kernels`, whatever the number of jobs it moves. For that the per-job arrays are
rows of a few packed arrays (``jf``, ``ji``, ``jb``: the ``kernels.JF_*``, ``JI_*``, ``JB_*``
rows; policies see the rows as plain arrays), the heaps are arrays, and each job's placement
has a fixed slot. Python takes over only for what needs Python objects: a placement strategy
the kernels do not reproduce, and the performance model on a placement not rated before.

Everything is ordered (ties broken by job index, heap entries carry the job index), and
randomness comes only from ``numpy.random.SeedSequence(seed)``, so the same inputs and seed give
identical results in any process.
"""

from __future__ import annotations

import bisect
import dataclasses
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from clustersim import kernels
from clustersim.aux_speed import AuxSpeed
from clustersim.carbon import DEFAULT_START
from clustersim.cluster import Cluster
from clustersim.colocation import CoLocator, PairFactors
from clustersim.elastic import count_resizes, snapshot_sizes, splice
from clustersim.errors import SimulationError
from clustersim.failures import FailureOptions, NodeFailures
from clustersim.failures import check_engine as check_failures
from clustersim.goodput import GoodputRates
from clustersim.gpushare import GpuShare, GpuShareOptions
from clustersim.gpushare import check_engine as check_gpushare
from clustersim.jobs import JobTable
from clustersim.kernels import (
    BAD_TWICE,
    CTR_HEAP,
    CTR_MARKS,
    CTR_PLANNED,
    CTR_RC,
    CTR_RUN,
    CTR_STARTS,
    CTR_STINTS,
    HEAP_FINISH,
    HEAP_MARK,
    JB_ACTIVE,
    JB_RUNNING,
    JF_ATT0,
    JF_ATTAINED,
    JF_BASE_T,
    JF_CAP,
    JF_CRATE,
    JF_EXE0,
    JF_EXECUTED,
    JF_FIN,
    JF_FINISH,
    JF_FIRST_START,
    JF_LAST_START,
    JF_REMAINING,
    JF_RESTORE,
    JF_ROUND_REM,
    JF_SHARE,
    JF_STALL,
    JF_TT_SYNCED,
    JI_ALLOC_N,
    JI_ALLOC_TYPE,
    JI_EPOCH,
    JI_GANG,
    JI_MAX_NODES,
    JI_MIGRATIONS,
    JI_PLACED,
    JI_PREEMPTIONS,
    JI_RC_HEAD,
    JI_SLOT,
    N_CTR,
    N_JF,
    N_JI,
    NODE_BY_TYPE,
    NODE_DEVICES,
    NODE_FREE,
    NODE_GROUP,
    NODE_RACK,
    NODE_TYPE,
    PLACE_BEST_FIT,
    PLACE_CONSOLIDATE,
    PLACE_FIRST_FIT,
    PLACE_STRATEGY,
    PLACE_YARN,
    STATUS_BAD,
    STATUS_DONE,
    STATUS_PLACE,
    STATUS_RATES,
    SYNC_ATTAINED,
    SYNC_EXECUTED,
    SYNC_REMAINING,
    TYPE_CAPACITY,
    TYPE_FREE,
    aux_place_consolidate,
    aux_refresh,
    aux_set_quick,
    choose,
    compiled_in_use,
    complete_due,
    decide_greedy,
    decide_preemptive,
    heap_compact,
    heap_push,
    next_times,
    pop_marks,
    push_mark,
    queued_head,
    rearm_marks,
    rearm_whole_steps,
    record_start,
    rerate_jobs,
    reserve_and_start,
    start_jobs,
    stop_jobs,
    sync_packed,
    sync_types_packed,
    take_nodes,
    use_compiled,
)
from clustersim.network import NetworkContention, NetworkOptions
from clustersim.network import check_engine as check_network
from clustersim.perf import JobRates, PerformanceModel
from clustersim.power import PowerModel
from clustersim.resources import AuxModel
from clustersim.result import (
    DROP_ABANDONED,
    DROP_AUX,
    DROP_NO_FIT,
    DROP_NO_TYPE,
    DROP_REJECTED,
    DROP_TOO_LARGE,
    DROP_UNFINISHED,
    RunResult,
    Stints,
)
from clustersim.rounds import realise_fractions
from clustersim.spot import SpotOptions, SpotReclaims
from clustersim.spot import check_engine as check_spot
from clustersim.stragglers import SlowNodes, StragglerOptions, check_engine
from scheduling.base import Decision, Placement, Policy, State

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

_EMPTY_I = np.zeros(0, dtype=np.int64)
_I64 = np.dtype(np.int64)
#: Types with at most this many distinct links a placement can cross have the rates of every
#: multi-device job rated before the run (:meth:`_Run._prefill_rates`).
PREFILL_LINKS = 8
#: The growable arrays (heaps, stints) are checked once per this many decisions at most:
#: each decision adds at most one entry of each per device of the cluster.
ROOM_DECISIONS = 16
#: Place CPU/memory-limited starts through the general Python loop only, and write
#: ``Decision.aux`` through its Python checks only (the reference the compiled paths are
#: tested against, tests/test_aux_fast.py).
AUX_REFERENCE = False
Status = tuple[int, int, int]  # what the decision kernels return (kernels.STATUS_*)
SYNC_ALL = SYNC_REMAINING | SYNC_ATTAINED | SYNC_EXECUTED
_SYNC_FIELDS = {
    None: SYNC_ALL,
    "remaining": SYNC_REMAINING,
    "attained": SYNC_ATTAINED,
    "executed": SYNC_EXECUTED,
}


@dataclass(frozen=True)
class EngineOptions:
    """Knobs of one run that are not the policy's.

    Attributes
    ----------
    seed
        Root seed; the policy and the placement each get a child of
        ``SeedSequence(seed)``. The engine itself draws nothing, so the seed matters only
        when one of them draws (:func:`seed_matters`).
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
    failures
        Node failures and restarts from checkpoints (:mod:`clustersim.failures`); ``None``
        (the default): nodes never fail and the run is exactly as without the module.
    carbon_start
        Calendar instant (ISO 8601, UTC) of simulation time 0 for the hourly carbon
        intensity, shown to policies as ``State.carbon_start`` (carbon-aware policies
        forecast from it); pass the same value to :func:`clustersim.metrics.summary`.
    stragglers
        Slow nodes that drag gangs to their pace, and the option to avoid them
        (:mod:`clustersim.stragglers`); ``None`` (the default): every node at full pace.
    network
        Network contention: multi-node jobs share NICs and rack uplinks
        (:mod:`clustersim.network`); ``None`` (the default): each placement keeps the static
        link of the performance model and the run is exactly as without the module.
    spot
        Spot reclaims: the cluster's spot pools lose nodes at their rate or by a trace, with
        notice (:mod:`clustersim.spot`); ``None`` (the default): spot nodes are never
        reclaimed (they are still priced at their spot price).
    gpushare
        GPU sharing: jobs with a ``gpu_fraction`` below 1 take that share of one GPU and
        several share a device (:mod:`clustersim.gpushare`); ``None`` (the default): off,
        unless the placement is one of the FGD paper's (``Placement.shares_gpus``), which
        turns it on with the default options.
    decision_grid_s
        Call the policy only at the multiples of this many seconds after time 0 (a
        time-stepped simulator's steps, e.g. Pollux's 60 s; ``--compat pollux``): arrivals
        wait for the next step, devices freed by completions stay idle until then, and the
        policy's wake-ups and service marks take effect at the next step too. 0 (the
        default): the policy is called at events as usual.
    goodput_trace_batch
        Rate jobs of Pollux's profiled models by the goodput model at the batch size of
        their Pollux workload row, whatever the policy (:class:`clustersim.goodput.
        GoodputRates`; ``--compat pollux``'s baselines). ``False``: the goodput model only
        under a policy that sets ``goodput``, at the best batch size.
    goodput_start_s
        With the goodput model on: every job's first start stalls this long, as a resume
        stalls for the restore delay (Pollux's simulator's 30-s re-scale delay). 0: no
        delay on first starts.
    """

    seed: int = 0
    until: float = np.inf
    round_origin: float = 0.0
    whole_steps_per_round: bool = False
    progress: Callable[[Progress], None] | None = None
    progress_every: int = 2000
    failures: FailureOptions | None = None
    carbon_start: str = DEFAULT_START
    stragglers: StragglerOptions | None = None
    network: NetworkOptions | None = None
    spot: SpotOptions | None = None
    gpushare: GpuShareOptions | None = None
    decision_grid_s: float = 0.0
    goodput_trace_batch: bool = False
    goodput_start_s: float = 0.0


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
        failures: NodeFailures | None = None,
        stragglers: SlowNodes | None = None,
        spot: SpotReclaims | None = None,
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
        if len(rates.ref_gpu_s) not in (0, n):  # empty: rates built by hand (RunResult default)
            raise SimulationError(f"ref_gpu_s has {len(rates.ref_gpu_s)} entries, want {n}")
        # cluster state, packed (kernels.TYPE_*, NODE_* rows)
        self.types_i = np.zeros((2, n_types), dtype=np.int64)
        self.types_i[TYPE_CAPACITY] = cluster.devices_per_type()
        self.types_i[TYPE_FREE] = self.types_i[TYPE_CAPACITY]
        self.capacity = self.types_i[TYPE_CAPACITY]
        self.free = self.types_i[TYPE_FREE]
        n_regions = len(cluster.regions)
        self.n_regions = n_regions
        self.type_nodes = [np.flatnonzero(cluster.node_type == t) for t in range(n_types)]
        self.type_off = np.zeros(n_types + 1, dtype=np.int64)
        self.type_off[1:] = np.cumsum([len(x) for x in self.type_nodes])
        self.nodes_i = np.zeros((6, len(cluster.node_type)), dtype=np.int64)
        self.nodes_i[NODE_FREE] = cluster.node_devices
        self.nodes_i[NODE_GROUP] = cluster.node_type * n_regions + cluster.node_region
        self.nodes_i[NODE_TYPE] = cluster.node_type
        self.nodes_i[NODE_RACK] = cluster.node_rack
        self.nodes_i[NODE_BY_TYPE] = np.concatenate([*self.type_nodes, _EMPTY_I])
        self.nodes_i[NODE_DEVICES] = cluster.node_devices
        self.node_free = self.nodes_i[NODE_FREE]
        self.node_group = self.nodes_i[NODE_GROUP]
        self.node_type = self.nodes_i[NODE_TYPE]
        self.nodes_f = np.stack([cluster.node_intra_gbs, cluster.node_nic_gbps]).astype(np.float64)
        self.oversub = np.ascontiguousarray(cluster.rack_oversub, dtype=np.float64)
        self.busy = np.zeros(n_types * n_regions, dtype=np.float64)
        self.placing = (
            PLACE_FIRST_FIT
            if placement.fills_in_node_order
            else PLACE_YARN
            if placement.yarn_rule
            else PLACE_STRATEGY
            if not placement.best_fit_one_node
            else PLACE_CONSOLIDATE
            if placement.largest_first_across_nodes
            else PLACE_BEST_FIT
        )
        # regions a policy asks for (Decision.region; e.g. carbon-region): each start goes
        # through the strategy, over the candidates of the job's region only (see _finish)
        self.want_region: IntArray | None = None
        if policy.steers_regions:
            self.want_region = np.full(n, -1, dtype=np.int64)
            self.placing = PLACE_STRATEGY
        # host CPU and memory (clustersim.resources): only when they can hold a job back;
        # every start then goes through the strategy, on the devices the job's share fits
        self.aux = AuxModel.build(jobs, cluster)
        if self.aux is not None:
            if policy.colocates:
                raise SimulationError(
                    f"policy {policy.name!r}: co-location does not support CPU/memory demands"
                )
            self.placing = PLACE_STRATEGY
        self.blocking = bool(policy.blocking)
        self.preemptive = bool(policy.preemptive)
        self.total_devices = int(self.capacity.sum())

        # per-job state, packed (kernels.JF_*, JI_*, JB_* rows); policies see row views
        self.jf = np.zeros((N_JF, n), dtype=np.float64)
        self.ji = np.zeros((N_JI, n), dtype=np.int64)
        self.jb = np.zeros((2, n), dtype=bool)
        jf, ji = self.jf, self.ji
        jf[JF_REMAINING] = jobs.work
        jf[JF_FIRST_START] = np.nan
        jf[JF_LAST_START] = np.nan
        jf[JF_FINISH] = np.nan
        jf[JF_FIN] = np.inf
        jf[JF_CAP] = np.inf  # no progress after this time (whole-step rounds)
        jf[JF_RESTORE] = rates.restore_s if policy.resume_s is None else policy.resume_s
        ji[JI_ALLOC_TYPE] = -1
        ji[JI_GANG] = jobs.num_gpus
        ji[JI_RC_HEAD] = -1
        # each job's placement slot: room for its largest gang, one node per device at most
        width = np.minimum(np.maximum(jobs.num_gpus, jobs.max_gpus), max(len(cluster.node_type), 1))
        ji[JI_SLOT, 1:] = np.cumsum(width)[:-1]
        self.slots = np.zeros((2, int(width.sum())), dtype=np.int64)
        self.remaining = jf[JF_REMAINING]
        self.first_start = jf[JF_FIRST_START]
        self.last_start = jf[JF_LAST_START]
        self.finish = jf[JF_FINISH]
        self.attained = jf[JF_ATTAINED]
        self.executed = jf[JF_EXECUTED]
        self.base_t = jf[JF_BASE_T]
        self.exe0 = jf[JF_EXE0]
        self.att0 = jf[JF_ATT0]
        self.tt_synced_at = jf[JF_TT_SYNCED]  # type_time/device_time are exact up to here
        self.fin = jf[JF_FIN]  # running jobs: predicted finish
        self.stall = jf[JF_STALL]  # running jobs: end of restore stall
        self.crate = jf[JF_CRATE]  # running jobs: current rate (work units/s)
        self.cap = jf[JF_CAP]
        self.round_rem = jf[JF_ROUND_REM]  # remaining work when the stint (or round) began
        self.share = jf[JF_SHARE]  # whole-step rounds: work allowed this round
        self.alloc_type = ji[JI_ALLOC_TYPE]
        self.alloc_n = ji[JI_ALLOC_N]
        self.preemptions = ji[JI_PREEMPTIONS]
        self.migrations = ji[JI_MIGRATIONS]
        self.resizes = np.zeros(n, dtype=np.int64)  # clustersim.elastic
        self.max_nodes = ji[JI_MAX_NODES]
        self.epoch = ji[JI_EPOCH]
        self.running = self.jb[JB_RUNNING]
        self.is_active = self.jb[JB_ACTIVE]
        self.type_time = np.zeros((n, n_types))
        self.device_time = np.zeros((n, n_types))
        self.capped = False  # some running job has a finite cap (whole-step rounds)
        self.drop = np.full(n, "", dtype=object)
        self._mark = np.zeros(n, dtype=np.int8)  # kernel scratch, always left all zero
        # decide_preemptive's plan: at most n jobs start, stay or stop
        self._plan = np.empty((5, n + 1), dtype=np.int64)
        self.ctr = np.zeros(N_CTR, dtype=np.int64)
        # running jobs, in the order policies see them (ctr[CTR_RUN] of them)
        self.run_order = np.zeros(n, dtype=np.int64)
        # what running_jobs() hands out: views of run_order that cannot write it
        self._run_view = self.run_order.view()
        self._run_view.flags.writeable = False
        # event heaps: completions (finish, job, epoch) and service marks
        cap0 = 2 * self.total_devices + 1024
        self.heap_t = np.zeros((2, cap0))
        self.heap_je = np.zeros((2, 2, cap0), dtype=np.int64)
        self.marks = np.asarray(policy.service_marks, dtype=np.float64).copy()
        self._due = np.zeros((2, 1024), dtype=np.int64)
        self._done = np.zeros(n, dtype=np.int64)
        # the starts of one decision (kernels.record_start), with their links and rates
        self.s_i = np.zeros((5, n + 1), dtype=np.int64)
        self.s_f = np.zeros((2, n + 1))
        self.s_nc = np.zeros((2, self.total_devices + 1), dtype=np.int64)
        # placement rates by (job, type, devices, link) (kernels.start_rates)
        self.rc_i = np.zeros((3, 1024), dtype=np.int64)
        self.rc_f = np.zeros((2, 1024))
        # stints: one row per (job, node) each time a job's devices are released
        self.st_i = np.zeros((3, 4 * self.total_devices + 1024), dtype=np.int64)
        self.st_f = np.zeros((2, self.st_i.shape[1]))
        self._st_done: list[tuple[IntArray, FloatArray]] = []  # filled ones, in order

        self._active = _EMPTY_I
        self._added: list[IntArray] = []
        self._removed = 0  # jobs no longer active still in _active
        self.pending = 0
        self.now = 0.0
        self.round_index = 0
        self.events = 0
        self.seg_t: list[float] = []
        self.seg_busy = np.zeros((1024, len(self.busy)))  # busy devices per segment
        self.seg_queued: list[int] = []
        self.seg_running: list[int] = []
        self.n_active = 0
        self._fits = 0  # decisions known to fit in the growable arrays (see _make_room)
        self._st: State | None = None  # the policies' view, renewed at each call
        # co-location (clustersim.colocation): guests hold no device, so up to twice as
        # many jobs run as there are devices
        self.coloc: CoLocator | None = None
        self._room = self.total_devices + 1  # heap entries and stint rows one decision adds
        if policy.colocates:
            if not policy.preemptive:
                raise SimulationError(
                    f"policy {policy.name!r}: co-location needs a preemptive policy"
                )
            self.coloc = CoLocator(PairFactors.build(jobs, cluster), n)
            self._room = 2 * self.total_devices + 1
        # power states and caps (clustersim.power): only for a policy that asks for them
        self.power: PowerModel | None = None
        if policy.power is not None:
            if self.coloc is not None:
                raise SimulationError(
                    f"policy {policy.name!r}: the power model does not support co-location"
                )
            self.power = PowerModel(policy.power, cluster, n)
        # node failures (clustersim.failures): events of their own, jobs killed on a failure
        if failures is not None:
            try:
                check_failures(
                    self.coloc is not None, self.power is not None, options.whole_steps_per_round
                )
            except SimulationError as exc:
                raise SimulationError(f"policy {policy.name!r}: {exc}") from None
        self.failures = failures
        # spot reclaims (clustersim.spot): the failures' mechanism, with its own timelines
        if spot is not None:
            try:
                check_spot(
                    self.coloc is not None, self.power is not None, options.whole_steps_per_round
                )
            except SimulationError as exc:
                raise SimulationError(f"policy {policy.name!r}: {exc}") from None
        self.spot = spot
        #: What takes nodes down and brings them back (failures, spot reclaims), in that order
        self.outages = [o for o in (failures, spot) if o is not None]
        # slow nodes (clustersim.stragglers): jobs started on one are re-rated to its pace
        if stragglers is not None:
            check_engine(
                self.coloc is not None, self.power is not None, options.whole_steps_per_round
            )
        self.stragglers = stragglers
        # network contention (clustersim.network): re-rates multi-node jobs after each batch
        self.network: NetworkContention | None = None
        if options.network is not None:
            check_network(
                self.coloc is not None, self.power is not None, options.whole_steps_per_round
            )
            self.network = NetworkContention(cluster, rates, n, options.network)
        placement.bind_network(None if self.network is None else self.network.view)
        placement.bind_resources(self.aux)
        # Pollux's goodput model (clustersim.goodput): profiled jobs progress at their goodput
        # CPU/memory sensitivity (clustersim.aux_speed): built at the first decision that
        # sets allocations (Decision.aux)
        self.aux_speed: AuxSpeed | None = None
        self.goodput: GoodputRates | None = None
        if policy.goodput or self.opt.goodput_trace_batch:
            if self.coloc is not None:
                raise SimulationError(f"policy {policy.name!r}: goodput with co-location")
            self.goodput = GoodputRates(
                jobs, cluster, self.opt.goodput_trace_batch, self.opt.goodput_start_s
            )
        # GPU sharing (clustersim.gpushare): shares of one GPU; the model owns the GPUs'
        # milli and the nodes' CPU and memory, and every start goes through the strategy
        self.gpushare: GpuShare | None = None
        share_opt = options.gpushare
        if share_opt is None and placement.shares_gpus:
            share_opt = GpuShareOptions()
        if share_opt is not None:
            try:
                check_gpushare(
                    self.coloc is not None,
                    self.power is not None,
                    self.goodput is not None,
                    bool(self.outages),
                    self.network is not None,
                    bool(np.any(jobs.min_gpus != jobs.max_gpus)),
                )
            except SimulationError as exc:
                raise SimulationError(f"policy {policy.name!r}: {exc}") from None
            self.gpushare = GpuShare(jobs, cluster, share_opt)
            self.aux = None
            self.placing = PLACE_STRATEGY
        placement.bind_share(self.gpushare)
        # CPU/memory starts under the default strategy go through one compiled call each
        # (_aux_finish); AUX_REFERENCE turns this off (tests compare the two paths)
        from scheduling.placement import Consolidate

        self._aux_fast = (
            self.aux is not None
            and type(placement) is Consolidate
            and self.want_region is None
            and not AUX_REFERENCE
        )
        self._aux_room = np.zeros(len(cluster.node_type), dtype=np.int64)
        self._aux_ref = AUX_REFERENCE  # Decision.aux written by the Python checks only
        self._bind()

    # ------------------------------------------------------------------ views
    @property
    def n_running(self) -> int:
        """Number of running jobs."""
        return int(self.ctr[CTR_RUN])

    @property
    def active(self) -> IntArray:
        """Active jobs, ascending; additions and removals are applied lazily."""
        if self._added:
            self._active = np.concatenate([self._active, *self._added])
            self._added = []
        if self._removed:  # removed jobs are no longer flagged active
            self._active = self._active[self.is_active[self._active]]
            self._removed = 0
        return self._active

    def active_jobs(self) -> IntArray:
        return self.active

    def queued_prefix(self, limit: int) -> IntArray:
        """First ``limit`` queued jobs without applying pending removals to the whole set.

        Removed jobs not yet dropped from ``_active`` and running jobs are at most
        ``_removed + running`` entries, so that many more than ``limit`` suffice; arrivals
        not yet appended all come after every job in ``_active``.
        """
        if self._removed > 256 or len(self._added) > 64:
            self.active  # noqa: B018 - compact now and then, so this stays cheap
        width = int(self.ctr[CTR_RUN]) + limit + self._removed
        a = self._active[:width]
        if len(a) < width and self._added:
            a = np.concatenate([a, *self._added])[:width]
        return queued_head(a, self.is_active, self.running, limit)

    def running_jobs(self) -> IntArray:
        """The running jobs in the engine's order: a read-only view of the engine's array,
        valid until the set changes (a decision handing it back is applied from a copy, as
        :func:`_contiguous` copies read-only arrays)."""
        return self._run_view[: self.ctr[CTR_RUN]]

    def sync(self, field: str | None = None) -> None:
        """Bring ``field`` (or all of remaining/attained/executed) of running jobs to ``now``."""
        what = _SYNC_FIELDS.get(field)
        if what is None:
            raise ValueError(f"unknown field {field!r}")
        k = self.ctr[CTR_RUN]
        if k:
            sync_packed(self.run_order, k, what, self.now, self.capped, self.jf, self.ji)

    def sync_types(self) -> None:
        """Bring ``type_time``/``device_time`` of running jobs up to ``now``."""
        k = int(self.ctr[CTR_RUN])
        if k:
            sync_types_packed(
                self.run_order, k, self.now, self.jf, self.ji, self.type_time, self.device_time
            )

    def _state(self) -> State:
        """The policies' view of now: one :class:`State` per run, renewed at each call."""
        st = self._st
        if st is not None:
            st.renew(self.now, self.round_index, int(self.ctr[CTR_RUN]), self.pending)
            return st
        st = self._st = State(
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
            n_running=self.n_running,
            pending=self.pending,
            best_rate=self.best_rate,
            source=self,
            colocation=None if self.coloc is None else self.coloc.factors,
            host_of=None if self.coloc is None else self.coloc.host_of,
            node_free=self.nodes_i[NODE_FREE],
            nodes_used=self.ji[JI_PLACED],
            power=None if self.power is None else self.power.view(self),
            carbon_start=self.opt.carbon_start,
            job_rates=self.rates,
            aux_model=self.aux,
        )
        return st

    # ------------------------------------------------------------------ start / stop
    def _make_room(self) -> None:
        """Make sure one decision (or batch of completions) fits in the growable arrays: it
        adds at most one stint row and one entry to each heap per device of the cluster.

        The arrays are checked only when the decisions known to fit have been used up; stale
        heap entries are then dropped if they far outnumber the running jobs (so their cost is
        amortised), and the arrays grown if still needed.
        """
        self._fits -= 1
        if self._fits <= 0:
            self._check_room()

    def _check_room(self) -> None:
        """Compact the heaps if stale entries pile up, grow the arrays if needed, and count
        the decisions that fit again.

        Heaps too small for :data:`ROOM_DECISIONS` more decisions grow to twice that, so
        this runs about once per that many decisions, not at every other one; stints go on
        in a new array (kept in ``_st_done`` until the end).
        """
        ctr, need = self.ctr, self._room
        limit = 4 * int(ctr[CTR_RUN]) + 1024
        if ctr[CTR_HEAP] > limit:
            self._compact(HEAP_FINISH)
        if ctr[CTR_MARKS] > limit:
            self._compact(HEAP_MARK)
        n_st, n_heap, n_marks = ctr[:3].tolist()
        n_heap = max(n_heap, n_marks)
        want = ROOM_DECISIONS * need
        grown = False
        if n_st + want > self.st_i.shape[1]:
            # stints are only appended: keep the full arrays as they are and go on in new,
            # larger ones (copying them all at each growth cost LAS on full Philly 0.25 s)
            self._st_done.append((self.st_i[:, :n_st], self.st_f[:, :n_st]))
            size = 2 * max(self.st_i.shape[1], want)
            self.st_i = np.zeros((3, size), dtype=np.int64)
            self.st_f = np.zeros((2, size))
            ctr[CTR_STINTS] = n_st = 0
            grown = True
        if n_heap + want > self.heap_t.shape[1]:
            self.heap_t = _grown(self.heap_t, 2 * (n_heap + want))
            self.heap_je = _grown(self.heap_je, self.heap_t.shape[1])
            grown = True
        if grown:
            self._bind()
        room = min(self.st_i.shape[1] - n_st, self.heap_t.shape[1] - n_heap)
        self._fits = room // need

    def _bind(self) -> None:
        """Pack the kernels' arguments anew (after an array was replaced by a larger one)."""
        self._stop_args = (
            self.jf,
            self.ji,
            self.jb,
            self.type_time,
            self.device_time,
            self.nodes_i,
            self.busy,
            self.types_i,
            self.slots,
            self.st_i,
            self.st_f,
            self.run_order,
            self.ctr,
        )
        self._start_args = (
            self.jf,
            self.ji,
            self.jb,
            self.nodes_i,
            self.nodes_f,
            self.oversub,
            self.busy,
            self.types_i,
            self.type_off,
            self.slots,
            self.s_i,
            self.s_nc,
            self.s_f,
            self.rc_i,
            self.rc_f,
            self.run_order,
            self.heap_t,
            self.heap_je,
            self.ctr,
        )
        self._decide_args = (
            self.rate,
            self.marks,
            self._mark,
            self._plan,
            self.jf,
            self.ji,
            self.jb,
            self.type_time,
            self.device_time,
            self.nodes_i,
            self.nodes_f,
            self.oversub,
            self.busy,
            self.types_i,
            self.type_off,
            self.slots,
            self.st_i,
            self.st_f,
            self.s_i,
            self.s_nc,
            self.s_f,
            self.rc_i,
            self.rc_f,
            self.run_order,
            self.heap_t,
            self.heap_je,
            self.ctr,
        )

    def _stop(self, js: IntArray, completed: bool) -> None:
        """Stop running jobs ``js`` (completion or suspension), in that order, and free their
        devices."""
        if not len(js):
            return
        self._make_room()
        stop_jobs(_contiguous(js), completed, self.now, *self._stop_args)

    def _before_kill(self) -> None:
        """Before a failure kills jobs (:mod:`clustersim.failures`): co-located guests stop
        (and their hosts go back to their isolated rates) until the next decision."""
        if self.coloc is not None:
            self.coloc.detach(self)

    def _complete_due(self, t: float) -> int:
        """Complete the running jobs whose predicted finish is due by ``t``."""
        self._make_room()
        k = complete_due(t, self._done, self.heap_t, self.heap_je, *self._stop_args)
        return int(k)

    def _reserve_and_start(self, cand: IntArray, m: int, i: int, greedy: bool) -> Status:
        """:func:`reserve_and_start` on this run's state, from candidate ``i`` on."""
        return reserve_and_start(
            cand,
            m,
            i,
            greedy,
            self.blocking,
            self.placing,
            self.now,
            self.rate,
            self.marks,
            self._mark,
            *self._start_args,
        )

    def _finish(self, cand: IntArray, m: int, status: Status, greedy: bool) -> None:
        """Finish a decision the kernels left to Python: placements only the strategy can
        choose, rates only the performance model knows (see :func:`reserve_and_start`)."""
        code, a, b = status
        aux = self.aux
        gs = self.gpushare
        if aux is not None and code == STATUS_PLACE:
            self._aux_refresh(aux)
            if self._aux_fast:  # the consolidate strategy, compiled with the CPU/memory room
                code, a, b, m = self._aux_finish(cand, m, code, a, b, greedy)
        if gs is not None and code == STATUS_PLACE:
            gs.refresh(self)
        while code == STATUS_PLACE:
            j, nd, t = int(cand[0, a]), int(cand[2, a]), b
            nodes_t = self.type_nodes[t]
            # with CPU/memory demands, the devices whose share of them fits each node; with
            # GPU sharing, the GPUs the job's share (or whole GPUs) and CPU/memory fit
            if gs is not None:
                free = gs.room(j, self.node_free)
            else:
                free = self.node_free if aux is None else aux.room(j, self.node_free)
            cands = nodes_t[free[nodes_t] > 0]
            if self.want_region is not None and self.want_region[j] >= 0:
                cands = cands[self.cluster.node_region[cands] == self.want_region[j]]
            got = self.placement.place(self.cluster, free, cands, nd)
            if got is not None:
                nodes, counts = _contiguous(got[0]), _contiguous(got[1])
                # more nodes than devices (a node listed twice, or with none taken) would
                # not fit the job's placement slot
                if (
                    len(nodes) != len(counts)
                    or len(nodes) > nd
                    or ((aux is not None or gs is not None) and bool(np.any(counts > free[nodes])))
                    or not take_nodes(
                        self.node_free,
                        self.busy,
                        self.node_group,
                        self.node_type,
                        nodes,
                        counts,
                        t,
                        nd,
                    )
                ):
                    raise SimulationError(
                        f"placement {self.placement.name!r} gave an invalid placement"
                    )
                self.free[t] -= nd
                record_start(j, t, nd, nodes, counts, self.s_i, self.s_nc, self.ctr)
                if aux is not None:
                    aux.took(j, nodes, counts)
                if gs is not None:
                    gs.took(j, nodes, counts)
                    gs.write_counts(self)
                if greedy:
                    self._mark[j] = 1
            elif greedy and self.blocking:
                m = a  # the decision ends here
            code, a, b = self._reserve_and_start(cand, m, a + 1, greedy)
        if code == STATUS_RATES:
            # placement rates are pure: a restart on a like placement reuses them
            ns, s_i, s_f = int(self.ctr[CTR_STARTS]), self.s_i, self.s_f
            miss = np.flatnonzero(np.isnan(s_f[1, :ns]))
            s_f[1, miss] = self.rates.placement_rate(
                s_i[0, miss], s_i[1, miss], s_i[2, miss], s_f[0, miss]
            )
            self._cache_rates(miss)
            a = start_jobs(
                self.now,
                self.marks,
                self.jf,
                self.ji,
                self.jb,
                self.slots,
                s_i,
                self.s_nc,
                s_f,
                self.run_order,
                self.heap_t,
                self.heap_je,
                self.ctr,
            )
        if a >= 0:
            raise SimulationError(f"job {self.jobs.job_id[a]!r} got a zero rate on its placement")

    def _aux_finish(
        self, cand: IntArray, m: int, code: int, a: int, b: int, greedy: bool
    ) -> tuple[int, int, int, int]:
        """The placements of :meth:`_finish` with the CPU/memory model on and the
        ``consolidate`` strategy, each in one compiled call (:func:`aux_place_consolidate`:
        the same room, choice and bookkeeping as the general loop, which stays the
        reference). Returns the status of the last :func:`reserve_and_start` call and the
        decision's end ``m``."""
        aux = self.aux
        assert aux is not None
        nodes_i, ctr, mark = self.nodes_i, self.ctr, self._mark
        node_free, node_group = nodes_i[NODE_FREE], nodes_i[NODE_GROUP]
        cpu_free, mem_free = aux.cpu_free, aux.mem_free
        cpu_dev, mem_dev = aux.cpu_dev, aux.mem_dev
        room, type_nodes = self._aux_room, self.type_nodes
        busy, types_i, blocking = self.busy, self.types_i, self.blocking
        while code == STATUS_PLACE:
            j = int(cand[0, a])
            if aux_place_consolidate(
                j,
                b,
                int(cand[2, a]),
                type_nodes[b],
                node_free,
                cpu_free,
                mem_free,
                cpu_dev,
                mem_dev,
                room,
                busy,
                node_group,
                types_i,
                self.s_i,
                self.s_nc,
                ctr,
            ):
                if greedy:
                    mark[j] = 1
            elif greedy and blocking:
                m = a  # the decision ends here
            code, a, b = self._reserve_and_start(cand, m, a + 1, greedy)
        return code, a, b, m

    def _aux_refresh(self, aux: AuxModel) -> None:
        """Bring the free cores and memory of every node up to now: the running jobs' and
        this decision's reserved starts' shares (:meth:`AuxModel.refresh`)."""
        if self._aux_fast:  # the same sums in the same order, compiled
            aux_refresh(
                self.running_jobs(),
                self.slots,
                self.ji[JI_SLOT],
                self.ji[JI_PLACED],
                self.s_i,
                self.s_nc,
                int(self.ctr[CTR_STARTS]),
                aux.cpu_dev,
                aux.mem_dev,
                aux.cpu_cap,
                aux.mem_cap,
                aux.cpu_free,
                aux.mem_free,
            )
            return
        ns = int(self.ctr[CTR_STARTS])
        s_i, s_nc = self.s_i, self.s_nc
        k = s_i[4, :ns]
        off = np.repeat(s_i[3, :ns] - np.cumsum(k) + k, k) + np.arange(int(k.sum()))
        aux.refresh(
            self.running_jobs(),
            self.slots,
            self.ji[JI_SLOT],
            self.ji[JI_PLACED],
            (np.repeat(s_i[0, :ns], k), s_nc[0, off], s_nc[1, off]),
        )

    def placement_rows(self) -> tuple[IntArray, IntArray, IntArray]:
        """Where the running jobs hold devices: ``(job, node, devices)``, one row per
        (job, node) (:meth:`clustersim.base.State.aux_rows`)."""
        running = self.running_jobs()
        k = self.ji[JI_PLACED, running]
        slot = self.ji[JI_SLOT, running]
        off = np.repeat(slot - np.cumsum(k) + k, k) + np.arange(int(k.sum()))
        return np.repeat(running, k), self.slots[0, off].copy(), self.slots[1, off].copy()

    def _set_aux(self, run: IntArray, aux: FloatArray) -> None:
        """Write the CPU/memory allocations of a decision (``Decision.aux``)."""
        model = self.aux
        if model is None:
            return
        a = np.asarray(aux, dtype=np.float64)
        if a.shape != (len(run), 2):
            raise SimulationError(
                f"policy {self.policy.name!r}: Decision.aux has shape {a.shape}, want"
                f" {(len(run), 2)}"
            )
        given = ~np.isnan(a).any(axis=1)
        js, c, m = run[given], a[given, 0], a[given, 1]
        if not len(js):
            return
        if not self._aux_ref and aux_set_quick(
            js, c, m, self.running, self.alloc_n, model.cpu_dev, model.mem_dev
        ):
            model.log_alloc(self.now, js, c, m)  # written by the kernel: nothing to check
            if self.aux_speed is None:
                self.aux_speed = AuxSpeed(self.jobs)
            return
        if (c < 0).any() or (m < 0).any() or not (np.isfinite(c).all() and np.isfinite(m).all()):
            raise SimulationError(f"policy {self.policy.name!r}: negative or infinite Decision.aux")
        on = self.running[js] & (self.alloc_n[js] > 0)
        grow = on & ((c > model.cpu_dev[js] * (1 + 1e-9)) | (m > model.mem_dev[js] * (1 + 1e-9)))
        rest = ~grow
        model.set_alloc(self.now, js[rest], c[rest], m[rest])
        if grow.any():  # a running job takes more only where its nodes have it free
            rj, rn, rd = self.placement_rows()
            if self.preemptive:  # running jobs left out of `run` stop in this decision
                stay = np.isin(rj, run)
                rj, rn, rd = rj[stay], rn[stay], rd[stay]
            n_nodes = len(model.cpu_cap)
            free_c = model.cpu_cap - np.bincount(
                rn, weights=rd * model.cpu_dev[rj], minlength=n_nodes
            )
            free_m = model.mem_cap - np.bincount(
                rn, weights=rd * model.mem_dev[rj], minlength=n_nodes
            )
            for j, cj, mj in zip(
                js[grow].tolist(), c[grow].tolist(), m[grow].tolist(), strict=True
            ):
                rows = np.flatnonzero(rj == j)
                nodes, devs = rn[rows], rd[rows].astype(np.float64)
                dc = devs * (cj - model.cpu_dev[j])
                dm = devs * (mj - model.mem_dev[j])
                if np.any(dc > free_c[nodes] + 1e-9 * np.maximum(free_c[nodes], 1.0)) or np.any(
                    dm > free_m[nodes] + 1e-9 * np.maximum(free_m[nodes], 1.0)
                ):
                    raise SimulationError(
                        f"policy {self.policy.name!r}: Decision.aux grows the CPU/memory"
                        f" allocation of running job {self.jobs.job_id[j]!r} past what its"
                        " nodes have free"
                    )
                free_c[nodes] -= dc
                free_m[nodes] -= dm
                model.set_alloc(self.now, np.array([j]), np.array([cj]), np.array([mj]))
        if self.aux_speed is None:
            self.aux_speed = AuxSpeed(self.jobs)

    def _compact(self, h: int) -> None:
        """Drop the stale entries of the completion (``HEAP_FINISH``) or mark (``HEAP_MARK``)
        heap, which preemptions pile up; the current entries and so the order of events stay
        the same. Called when stale entries far outnumber running jobs, so its cost is
        amortised."""
        heap_compact(self.heap_t, self.heap_je, self.ctr, h, self.epoch)

    def _cache_rates(self, miss: IntArray) -> None:
        """Add the placement rates of starts ``miss`` to the rate cache."""
        s_i, s_f = self.s_i, self.s_f
        self._add_rates(s_i[0, miss], s_i[1, miss], s_i[2, miss], s_f[0, miss], s_f[1, miss])

    def _add_rates(
        self, j: IntArray, t: IntArray, nd: IntArray, link: FloatArray, rate: FloatArray
    ) -> None:
        """Add rate-cache entries (m,): the rate of job ``j`` on ``nd`` devices of type ``t``
        behind a slowest link of ``link`` GB/s; a job's entries come one after another."""
        m = len(j)
        k = int(self.ctr[CTR_RC])
        if k + m > self.rc_i.shape[1]:
            size = 2 * (k + m)
            self.rc_i = _grown(self.rc_i, size)
            self.rc_f = _grown(self.rc_f, size)
            self._bind()
        e = np.arange(k, k + m)
        head = self.ji[JI_RC_HEAD]
        after = np.zeros(m, dtype=bool)  # entry i follows one of the same job
        after[1:] = j[1:] == j[:-1]
        self.rc_i[0, e] = np.where(after, e - 1, head[j])
        self.rc_i[1, e] = t
        self.rc_i[2, e] = nd
        self.rc_f[0, e] = link
        self.rc_f[1, e] = rate
        last = np.ones(m, dtype=bool)
        last[:-1] = ~after[1:]
        head[j[last]] = e[last]
        self.ctr[CTR_RC] = k + m

    def _prefill_rates(self, js: IntArray) -> None:
        """Rate, in one call of the performance model, every placement of a multi-device job
        of ``js`` on its gang that a run can meet: each type it can run on, behind each link
        a placement there can have (:func:`clustersim.kernels.link_gbs`: a node's intra-node
        link, a NIC, a NIC over a rack's oversubscription). The kernels then find the rates
        in the cache instead of handing each first start back to Python (values are the
        model's either way). Types with more than :data:`PREFILL_LINKS` such links, and
        those that would take the entries past a few per job, are left to the lazy path."""
        gang = self.jobs.num_gpus[js]
        multi = js[gang > 1]
        if not len(multi):
            return
        rack = self.nodes_i[NODE_RACK]
        parts: list[tuple[IntArray, int, FloatArray]] = []
        for t, nodes in enumerate(self.type_nodes):
            if not len(nodes):
                continue
            nic = np.unique(self.nodes_f[1, nodes] / 8.0)
            racks = np.unique(rack[nodes])
            over = self.oversub[racks]
            cross = (nic[:, None] / np.unique(over)[None, :]).ravel() if len(racks) > 1 else nic
            links = np.unique(np.concatenate([self.nodes_f[0, nodes], nic, cross]))
            on_t = multi[self.rate[multi, t] > 0]
            if len(links) <= PREFILL_LINKS and len(on_t):
                parts.append((on_t, t, links))
        # a bound on the entries (the cache keeps them all run long): the types first
        # listed, as long as their entries fit
        budget = 4 * len(js) + 100_000
        while parts and sum(len(a) * len(b) for a, _, b in parts) > budget:
            parts.pop()
        if not parts:
            return
        j = np.concatenate([np.repeat(on_t, len(links)) for on_t, _, links in parts])
        t_ = np.concatenate([np.full(len(on_t) * len(links), t) for on_t, t, links in parts])
        link = np.concatenate([np.tile(links, len(on_t)) for on_t, _, links in parts])
        # one job's entries together (the cache chains them)
        order = np.argsort(j, kind="stable")
        j, t_, link = j[order], t_[order].astype(np.int64), link[order]
        nd = self.jobs.num_gpus[j]
        rate = np.empty(len(j))
        for a in range(0, len(j), 1 << 16):  # the model's temporaries stay small
            b = a + (1 << 16)
            rate[a:b] = self.rates.placement_rate(j[a:b], t_[a:b], nd[a:b], link[a:b])
        self._add_rates(j, t_, nd, link, rate)

    # ------------------------------------------------------------------ decisions
    def _apply(self, d: Decision) -> None:
        if d.unchanged and self.power is None and self.stragglers is None and self.goodput is None:
            return  # the policy's last decision again, which changed nothing (Decision.unchanged)
        coloc = self.coloc
        if coloc is None:
            if d.colocate is not None and len(d.colocate):
                raise SimulationError(
                    f"policy {self.policy.name!r} pairs jobs but does not declare colocates"
                )
            self._apply_decision(d)
            if self.power is not None:
                self.power.after_decision(self, d)
            if self.stragglers is not None:
                self.stragglers.after_decision(self, d)
            if self.goodput is not None:
                self.goodput.after_decision(self)
            return
        coloc.detach(self)
        self._apply_decision(d)
        coloc.attach(self, d.colocate)

    def _apply_decision(self, d: Decision) -> None:
        if d.drop is not None and len(d.drop):
            self._abandon(d.drop)
        if d.aux is not None and self.aux is not None:
            run = np.asarray(d.run, dtype=np.int64)
            self._set_aux(run, d.aux)
            self._apply_run(d)
            if self.aux_speed is not None:  # the sensitivity model (clustersim.aux_speed)
                set_now = run[~np.isnan(np.asarray(d.aux, dtype=np.float64)).any(axis=1)]
                if len(set_now):
                    self.aux_speed.after_decision(self, set_now)
            return
        self._apply_run(d)

    def _apply_run(self, d: Decision) -> None:
        if d.fractions is not None:
            d = realise_fractions(self._state(), d.fractions)
        run = np.asarray(d.run, dtype=np.int64)
        if self.want_region is not None:
            self._want_regions(run, d.region)
        if d.migrate is not None and len(d.migrate) and self.preemptive:
            self._migrate(np.asarray(d.migrate, dtype=np.int64), run)
        m = len(run)
        if d.types is None and d.ndev is None:  # the usual decision: jobs, in order
            if self.preemptive:
                self._apply_preemptive(run, None, None)
            elif m:
                self._apply_greedy(run, None, None)
            return
        types = None if d.types is None else np.asarray(d.types, dtype=np.int64)
        ndev = None if d.ndev is None else np.asarray(d.ndev, dtype=np.int64)
        if (types is not None and len(types) != m) or (ndev is not None and len(ndev) != m):
            raise SimulationError(f"policy {self.policy.name!r}: decision arrays differ in length")
        if m:
            # preemptive decisions list every active job: only the jobs chosen to run are
            # checked (by the fill), the rest cannot matter; greedy ones are checked whole,
            # here first when there is more to check, else by decide_greedy
            if not self.preemptive and (ndev is not None or types is not None):
                self._check_active(run)
            if ndev is not None and (
                np.any(ndev < self.jobs.min_gpus[run]) or np.any(ndev > self.jobs.max_gpus[run])
            ):
                raise SimulationError(f"policy {self.policy.name!r}: device count out of range")
            if types is not None and np.any(types >= self.cluster.n_types):
                raise SimulationError(f"policy {self.policy.name!r}: unknown accelerator type")
        if self.preemptive:
            if ndev is None:
                self._apply_preemptive(run, types, ndev)
                return
            # elastic: a running job restarted on another device count is a resize
            # (clustersim.elastic), not a preemption or a migration; it pays the restore delay
            before = snapshot_sizes(run, self.running, self.alloc_n, self.migrations)
            self._apply_preemptive(run, types, ndev)
            count_resizes(
                before, self.running, self.alloc_n, self.preemptions, self.migrations, self.resizes
            )
        elif m:
            self._apply_greedy(run, types, ndev)

    def _want_regions(self, run: IntArray, region: IntArray | None) -> None:
        """Record the region each job of ``run`` should start in (``Decision.region``; -1 or
        ``None``: any region), for the placement of this decision."""
        assert self.want_region is not None
        if region is None:
            self.want_region[run] = -1
            return
        region = np.asarray(region, dtype=np.int64)
        if len(region) != len(run) or np.any(region >= self.n_regions):
            raise SimulationError(f"policy {self.policy.name!r}: bad Decision.region")
        self.want_region[run] = region

    def _migrate(self, js: IntArray, run: IntArray) -> None:
        """Suspend the running jobs of ``js`` that hold devices and are in ``run`` (one
        preemption each), so that the decision re-places them (``Decision.migrate``); the
        start counts a migration when the nodes differ."""
        js = np.unique(js[(js >= 0) & (js < len(self.running))])
        js = js[self.running[js] & (self.alloc_n[js] > 0) & np.isin(js, run)]
        if len(js):
            self.preemptions[js] += 1
            self._stop(js, completed=False)

    def _check_active(self, run: IntArray) -> None:
        ok = self.is_active[run]
        if not ok.all():
            jj = int(run[np.flatnonzero(~ok)[0]])
            raise SimulationError(
                f"policy {self.policy.name!r} scheduled job {self.jobs.job_id[jj]!r},"
                " which is not active"
            )

    def _apply_greedy(self, run: IntArray, types: IntArray | None, ndev: IntArray | None) -> None:
        """Start listed queued jobs in order; running jobs are left alone: one compiled call
        unless Python must place a gang or rate a placement."""
        m = len(run)
        # the candidates go to the plan's scratch (a longer list repeats some job)
        plan = self._plan if m <= self._plan.shape[1] else np.empty((3, m), dtype=np.int64)
        self._make_room()
        status = decide_greedy(
            _contiguous(run),
            _EMPTY_I if ndev is None else _contiguous(ndev),
            _EMPTY_I if types is None else _contiguous(types),
            self.blocking,
            self.placing,
            self.now,
            self.rate,
            self.marks,
            self._mark,
            plan,
            *self._start_args,
        )
        if status[0] == STATUS_BAD:
            self._check_active(run)  # raises, naming the job
        if status[0] != STATUS_DONE or status[1] >= 0:
            self._finish(plan, m, status, True)

    def _apply_preemptive(
        self, run: IntArray, types: IntArray | None, ndev: IntArray | None
    ) -> None:
        """Plan which jobs run (by device count per type, in priority order), suspend the
        running jobs that are not kept where they are, reserve and start the others: one
        compiled call unless Python must place a gang or rate a placement."""
        self._fits -= 1  # self._make_room(), inline: this runs at every decision
        if self._fits <= 0:
            self._check_room()
        status = decide_preemptive(
            _contiguous(run),
            _EMPTY_I if ndev is None else _contiguous(ndev),
            _EMPTY_I if types is None else _contiguous(types),
            self.blocking,
            self.placing,
            self.now,
            *self._decide_args,
        )
        if status[0] == STATUS_BAD:
            what = " twice" if status[2] == BAD_TWICE else ", which is not active"
            raise SimulationError(
                f"policy {self.policy.name!r} scheduled job {self.jobs.job_id[status[1]]!r}{what}"
            )
        if status[0] != STATUS_DONE or status[1] >= 0:
            self._finish(self._plan, int(self.ctr[CTR_PLANNED]), status, False)

    def _rearm_whole_steps(self, round_len: float) -> float:
        """Start a whole-step round: each running job may do ``floor(rate × round)`` units.

        Returns the round's end: when the last job has done its share (or finished).
        """
        if not self.n_running:
            return np.inf
        self.sync()
        self.sync_types()
        self._make_room()  # no more heap entries than running jobs, so than devices
        end = rearm_whole_steps(
            self.run_order,
            int(self.ctr[CTR_RUN]),
            self.now,
            round_len,
            self.jf,
            self.ji,
            self.heap_t,
            self.heap_je,
            self.ctr,
        )
        self.capped = True
        return float(end)

    def _abandon(self, js: IntArray) -> None:
        """Drop active jobs a policy gave up on (``Decision.drop``)."""
        js = np.unique(np.asarray(js, dtype=np.int64))
        if not len(js):
            return
        if not self.is_active[js].all():
            raise SimulationError(f"policy {self.policy.name!r} dropped a job that is not active")
        self._stop(js[self.running[js]], completed=False)
        self.drop[js] = DROP_ABANDONED
        self.is_active[js] = False
        self._removed += len(js)
        self.n_active -= len(js)

    # ------------------------------------------------------------------ service marks
    def _pop_marks(self, t: float) -> int:
        """Pop the running jobs whose next mark is due by ``t`` into ``_due``; how many."""
        if self._due.shape[1] < self.ctr[CTR_MARKS]:
            self._due = np.zeros((2, 2 * int(self.ctr[CTR_MARKS])), dtype=np.int64)
        return int(pop_marks(t, self.heap_t, self.heap_je, self.ctr, self.epoch, self._due))

    def _rearm_marks(self, k: int) -> None:
        """After a decision: jobs woken by a mark that still run in the same stint wait for
        their next mark (a job the decision stopped or restarted has a new epoch, and a
        restart pushed its own entry). Crossing times assume service grows without pause, so
        they are never late; a job capped by a whole-step round may be woken early, which only
        costs a policy call."""
        self._make_room()  # no more entries than running jobs, so than devices
        rearm_marks(
            self._due,
            k,
            self.now,
            self.marks,
            self.heap_t,
            self.heap_je,
            self.ctr,
            self.jf,
            self.ji,
            self.jb,
        )

    # ------------------------------------------------------------------ main loop
    def run(self) -> RunResult:
        jobs, rate = self.jobs, self.rate
        t0 = time.perf_counter()
        # drop jobs that can never run
        runnable = rate > 0
        no_type = ~runnable.any(axis=1)
        fits = (jobs.min_gpus[:, None] <= self.capacity[None, :]) & runnable
        self.drop[no_type] = DROP_NO_TYPE
        if len(self.rates.fits_nowhere):
            self.drop[no_type & self.rates.fits_nowhere] = DROP_NO_FIT
        self.drop[~no_type & ~fits.any(axis=1)] = DROP_TOO_LARGE
        if self.aux is not None:  # CPU or memory demand no placement can meet
            never = (self.drop == "") & self.aux.never_fits(jobs, self.cluster, rate)
            self.aux.never_fit = int(never.sum())
            self.drop[never] = DROP_AUX
        if self.gpushare is not None:  # the same, for the GPU-sharing model's accounting
            never = (self.drop == "") & self.gpushare.never_fits(rate)
            self.drop[never] = DROP_AUX
        order = np.flatnonzero(self.drop == "")
        self._prefill_rates(order)
        sub_arr = jobs.submit_time[order]
        sub = sub_arr.tolist()
        n_ok = len(order)
        policy = self.policy
        custom_admit = type(policy).admit is not Policy.admit
        round_s = policy.round_s
        round_len = float(round_s or 0.0)
        relative = bool(round_s) and policy.rounds_only
        # decisions only at round boundaries: Gavel's relative rounds, or a fixed grid
        on_grid = relative or (bool(round_s) and policy.rounds_on_grid)
        whole_steps = relative and self.opt.whole_steps_per_round
        next_round = np.inf
        wake = np.inf
        ai = 0  # next arrival position in `order`
        self.pending = n_ok
        self.now = sub[0] if n_ok else 0.0
        if round_s and not relative:
            k = np.ceil((self.now - self.opt.round_origin) / round_len)
            next_round = self.opt.round_origin + max(k, 0.0) * round_len
        grid = float(self.opt.decision_grid_s)
        if grid < 0 or not math.isfinite(grid):
            raise SimulationError(f"decision_grid_s must be >= 0 and finite, got {grid}")
        last_step = -math.inf  # the last step at which the policy was called (with a grid)
        until = self.opt.until
        progress, every = self.opt.progress, max(1, self.opt.progress_every)
        completed = 0
        # plain-Python kernels while the run is short (clustersim.kernels.choose)
        switch_at = -1 if compiled_in_use() else kernels.COMPILE_AFTER_EVENTS
        # the loop runs once per event batch: what it reads at each is bound to locals
        ctr, epoch, busy, free, is_active = (
            self.ctr,
            self.epoch,
            self.busy,
            self.free,
            self.is_active,
        )
        seg_times, seg_running, seg_queued = self.seg_t, self.seg_running, self.seg_queued
        busy_rows = self.seg_busy
        pw = self.power  # the power model's next event joins the others (clustersim.power)
        if pw is not None:
            pw.start(self)
        preemptive, schedule, apply = policy.preemptive, policy.schedule, self._apply
        inf = math.inf
        events = self.events
        outages = self.outages  # failures, spot reclaims; empty when both are off
        net = self.network  # network contention (clustersim.network), None when off
        gs = self.gpushare  # GPU sharing (clustersim.gpushare), None when off
        t_fail = inf  # next failure, reclaim or return; inf when none is on
        while True:
            t_arr = sub[ai] if ai < n_ok else inf
            t_fin, t_mark = next_times(self.heap_t, self.heap_je, ctr, epoch)
            n_active = self.n_active
            if outages:
                # an idle cluster with no arrival to come has no use for more failures
                t_fail = min([o.next_time for o in outages]) if n_active or t_arr < inf else inf
            if n_active:
                t_next = min(t_arr, t_fin, next_round, wake, t_mark, t_fail)
                if grid:  # the first step strictly after now
                    t_next = min(t_next, (math.floor(self.now / grid + 1e-9) + 1) * grid)
            else:
                t_next = min(t_arr, t_fin, next_round if t_arr <= next_round else inf, t_fail)
            if pw is not None:
                t_next = min(t_next, pw.next_time)
            if t_next == inf or t_next > until:
                break
            self.now = t_next
            events += 1
            self.events = events
            if events == switch_at:
                choose(len(jobs), events)
            was_running = ctr[CTR_RUN] > 0
            changed = False
            # completions
            if t_fin <= t_next:
                k_done = self._complete_due(t_next)
                self._removed += k_done
                n_active -= k_done
                completed += k_done
                changed = True
                if gs is not None:
                    gs.refresh(self)
            # node failures and repairs, spot reclaims and returns (jobs on a node that goes
            # down go back to the queue)
            if t_fail <= t_next:
                for src in outages:
                    if src.next_time <= t_next:
                        changed = src.apply(self, t_next) or changed
            # arrivals
            if t_arr <= t_next:
                hi = bisect.bisect_right(sub, t_next, ai)
                arriving = order[ai:hi]
                ai = hi
                self.pending = n_ok - ai
                if custom_admit:
                    self.n_active = n_active
                    admit = np.asarray(policy.admit(self._state(), arriving), dtype=bool)
                    if admit.shape != arriving.shape:
                        raise SimulationError(f"policy {policy.name!r}: admit() gave a wrong shape")
                    self.drop[arriving[~admit]] = DROP_REJECTED
                    arriving = arriving[admit]
                is_active[arriving] = True
                self._added.append(arriving)
                n_active += len(arriving)
                changed = changed or len(arriving) > 0
            self.n_active = n_active
            at_round = t_next >= next_round  # next_round is inf without rounds
            if relative and not ctr[CTR_RUN] and (changed or was_running):
                # Gavel-style rounds: an idle cluster starts a round at once, and a round
                # whose jobs have all finished ends there
                at_round = True
            if at_round:
                self.round_index += 1
                if relative:
                    next_round = inf
                else:  # next boundary of the fixed grid strictly after now
                    k = np.floor((t_next - self.opt.round_origin) / round_len) + 1
                    next_round = self.opt.round_origin + k * round_len
            at_wake = t_next >= wake
            if at_wake:
                wake = inf
            due = self._pop_marks(t_next) if t_next >= t_mark else -1
            if due >= 0:
                at_wake = True
            if pw is not None and t_next >= pw.next_time and pw.advance(self):
                at_wake = True  # woken nodes' devices are free
            call = (at_round or at_wake or (changed and not on_grid)) and self.n_active
            if grid:  # a time-stepped simulator decides at its steps only
                k = round(t_next / grid)
                at_step = k >= 1 and abs(t_next - k * grid) <= 1e-6 and t_next > last_step
                call = at_step and bool(self.n_active)
                if call:
                    last_step = t_next
            if call:
                if (
                    not preemptive
                    and not at_round
                    and pw is None  # with the power model, a call may wake nodes
                    and (not any(free.tolist()) or ctr[CTR_RUN] == self.n_active)
                ):
                    pass  # nothing can start: skip the policy call
                else:
                    d = schedule(self._state())
                    apply(d)
                    wake = inf
                    if d.wake_at is not None and d.wake_at > t_next:
                        wake = float(d.wake_at)
            if due > 0:
                self._rearm_marks(due)
            if relative and at_round and ctr[CTR_RUN]:
                if whole_steps:
                    next_round = self._rearm_whole_steps(round_len)
                else:
                    next_round = t_next + round_len
            if pw is not None:
                pw.settle(self)
            if net is not None:
                net.settle(self)
            if gs is not None:
                gs.settle(self)
            # record the segment that starts now
            seg_times.append(t_next)
            if events > len(busy_rows):
                busy_rows = self.seg_busy = np.concatenate([busy_rows, np.zeros_like(busy_rows)])
            busy_rows[events - 1] = busy
            nr = int(ctr[CTR_RUN])
            seg_running.append(nr)
            seg_queued.append(self.n_active - nr)
            if progress is not None and events % every == 0:
                progress(Progress(t_next, events, ai, completed, n_ok))
        if progress is not None:
            progress(Progress(self.now, self.events, ai, completed, n_ok))
        # close the timeline
        end = self.now
        self.sync()
        self.sync_types()
        n_st = int(ctr[CTR_STINTS])
        st_i = [*(a for a, _ in self._st_done), self.st_i[:, :n_st]]
        st_f = [*(b for _, b in self._st_done), self.st_f[:, :n_st]]
        for jj in np.sort(self.running_jobs()).tolist():  # stints still open at the end
            o, k = int(self.ji[JI_SLOT, jj]), int(self.ji[JI_PLACED, jj])
            st_i.append(np.stack([np.full(k, jj), *self.slots[:, o : o + k]]))
            st_f.append(np.stack([np.full(k, self.last_start[jj]), np.full(k, end)]))
        if self.coloc is not None:  # guests hold no slot of their own
            rows, times = self.coloc.open_stints(self, end)
            st_i.append(rows)
            st_f.append(times)
        stints_i, stints_f = np.concatenate(st_i, axis=1), np.concatenate(st_f, axis=1)
        unfinished = self.active
        if len(unfinished):
            self.drop[unfinished] = DROP_UNFINISHED
        if ai < n_ok:
            self.drop[order[ai:]] = DROP_UNFINISHED
        seg_t = np.array([*self.seg_t, end], dtype=np.float64)
        n_types, n_regions = self.cluster.n_types, self.n_regions
        seg_busy = self.seg_busy[: self.events].reshape(-1, n_types, n_regions).copy()
        return RunResult(
            jobs=jobs,
            cluster=self.cluster,
            policy=policy.name,
            placement=self.placement.name,
            seed=self.opt.seed,
            first_start=self.first_start.copy(),
            finish=self.finish.copy(),
            drop_reason=self.drop,
            attained=self.attained.copy(),
            type_time=self.type_time,
            device_time=self.device_time,
            preemptions=self.preemptions.copy(),
            migrations=self.migrations.copy(),
            resizes=self.resizes.copy(),
            max_nodes=self.max_nodes.copy(),
            seg_t=seg_t,
            seg_busy=seg_busy,
            seg_queued=np.array(self.seg_queued, dtype=np.int64),
            seg_running=np.array(self.seg_running, dtype=np.int64),
            ref_gpu_s=self.rates.ref_gpu_s,
            stints=Stints(
                job=stints_i[0],
                node=stints_i[1],
                devices=stints_i[2],
                start=stints_f[0],
                end=stints_f[1],
            ),
            events=self.events,
            wall_s=time.perf_counter() - t0,
            policy_stats={
                **policy.stats(),
                **({} if self.coloc is None else self.coloc.stats()),
            },
            power=None if pw is None else pw.trace(self),
            failures=None if self.failures is None else self.failures.record(self, end),
            stragglers=None if self.stragglers is None else self.stragglers.record(),
            network=None if net is None else net.record(self, end),
            spot=None if self.spot is None else self.spot.record(self, end),
            aux=None if self.aux is None else self.aux.record(),
            gpushare=None if gs is None else gs.record(end),
        )


def warm_up() -> None:
    """Compile and cache every kernel of :mod:`clustersim.kernels` by simulating a small
    synthetic trace under several policies and placements on the ``gavel-testbed`` preset.

    numba compiles a kernel on its first call and caches it on disk; ``make install`` and the
    Docker build call this so that no user's first simulation waits for the compiler. The
    process uses the compiled kernels from then on, whatever the size of its runs.
    """
    from clustersim.presets import preset
    from clustersim.spec import cluster_from_shorthand
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
        ("tiresias", "first-fit"),
        ("gavel-las", "consolidate"),
        ("las", "consolidate"),
        ("gandiva-fair", "consolidate"),
        ("optimus", "consolidate"),  # the elastic allocation kernels
        ("afs", "consolidate"),
        ("kubernetes", "consolidate"),  # Kueue's admission kernel
    ]:
        simulate(jobs, cluster, make_policy(policy), make_placement(where), rates=rates)
    # network contention (clustersim.network): its share kernel
    net = EngineOptions(network=NetworkOptions())
    simulate(jobs, cluster, make_policy("fifo"), make_placement("spread"), rates=rates, options=net)
    # Gavel's whole-step rounds (--compat gavel)
    whole = EngineOptions(whole_steps_per_round=True)
    simulate(jobs, cluster, make_policy("gavel-las"), rates=rates, options=whole)
    # the centre tie-breaks of Gavel's LP policies (their --compat gavel default): the face
    # centre's and the FTF centre's Newton kernels, and the dense simplex vertices they
    # start from (maxmin_simplex, lp_dense)
    for name in ("gavel-mmf", "gavel-ftf", "gavel-max-throughput"):
        simulate(jobs, cluster, make_policy(name, centre=True), rates=rates, options=whole)
    # gavel-hierarchical's water filling (its dense simplex kernel)
    simulate(jobs, cluster, make_policy("gavel-hierarchical"), rates=rates, options=whole)
    # gavel-gandiva's placement (and the co-location module's paths)
    simulate(jobs, cluster, make_policy("gavel-gandiva"), rates=rates, options=whole)
    # themis's auctions (its bundles and exact enumeration) need contention: a small cluster
    small = cluster_from_shorthand("v100:2,p100:2,k80:2")
    head = jobs.take(np.arange(20))
    simulate(head, small, make_policy("themis"), rates=PerformanceModel().prepare(head, small))
    # gandiva's fill and migration check, and co-located pairs (detach and attach), which
    # need an oversubscribed cluster
    simulate(head, small, make_policy("gandiva"), rates=PerformanceModel().prepare(head, small))
    # CPU/memory limits (clustersim.resources): the engine's compiled consolidate starts and
    # free cores, drf's filling and synergy's round (its free arrays, GPU pass, placements)
    from clustersim.aux_speed import assign_synergy_models
    from clustersim.resources import apply_demand

    limited = dataclasses.replace(
        small,
        node_cpu_cores=np.full(len(small.node_type), 9.0),
        node_host_mem_gb=np.full(len(small.node_type), 150.0),
    )
    aux_jobs = apply_demand(assign_synergy_models(head), "synergy")
    aux_rates = PerformanceModel().prepare(aux_jobs, limited)
    for name in ("drf", "synergy"):
        simulate(aux_jobs, limited, make_policy(name), rates=aux_rates)
    # the yarn strategy's own kernel (the engine places yarn gangs in its compiled path)
    free = cluster.node_devices.astype(np.int64)
    make_placement("yarn").place(cluster, free, np.flatnonzero(free), 1)
    # paths those runs may not take: a policy dropping running jobs, heap compaction,
    # pushes of whole-step rounds (a stale entry, then compacted away), rating starts
    run = _Run(
        jobs, cluster, make_policy("fifo"), make_placement("consolidate"), rates, EngineOptions()
    )
    run._make_room()
    stop_jobs(
        np.zeros(0, dtype=np.int64),
        False,
        0.0,
        run.jf,
        run.ji,
        run.jb,
        run.type_time,
        run.device_time,
        run.nodes_i,
        run.busy,
        run.types_i,
        run.slots,
        run.st_i,
        run.st_f,
        run.run_order,
        run.ctr,
    )
    heap_push(run.heap_t, run.heap_je, run.ctr, HEAP_FINISH, 0.0, 0, -1)
    run._compact(HEAP_FINISH)
    # a service mark pushed from Python (the co-location module re-arms a pair's marks)
    push_mark(np.ones(1), run.heap_t, run.heap_je, run.ctr, 0, 0.0, 0.0, 1, -1)
    run._compact(HEAP_FINISH)
    # a re-rating of running jobs (the co-location module's, when a pair forms or parts;
    # the runs above may form none): none here, the call compiles the kernel
    rerate_jobs(
        np.zeros(0, dtype=np.int64),
        np.zeros(0),
        0.0,
        run.jf,
        run.ji,
        run.heap_t,
        run.heap_je,
        run.ctr,
        np.ones(1),
    )
    # starts rated by the performance model during the run (the rates of most are in the
    # cache before it starts): none here, the call compiles the kernel
    start_jobs(
        0.0,
        run.marks,
        run.jf,
        run.ji,
        run.jb,
        run.slots,
        run.s_i,
        run.s_nc,
        run.s_f,
        run.run_order,
        run.heap_t,
        run.heap_je,
        run.ctr,
    )


_A = TypeVar("_A", bound="np.ndarray[Any, Any]")


def _grown(a: _A, size: int) -> _A:
    """``a`` with its last axis grown to ``size`` (zeros after the old entries)."""
    out = np.zeros((*a.shape[:-1], size), dtype=a.dtype)
    out[..., : a.shape[-1]] = a
    return out  # type: ignore[return-value]


def _contiguous(a: IntArray) -> IntArray:
    """``a`` as a writeable C-contiguous int64 array (one compiled kernel signature); a
    read-only array, such as a view of the engine's own, is copied."""
    flags = a.flags  # (a new object at each access)
    if flags.c_contiguous and flags.writeable and a.dtype == _I64:
        return a
    return np.array(a, dtype=np.int64)


def seed_matters(
    policy: Policy | type[Policy],
    placement: Placement | type[Placement] | None = None,
    failures: FailureOptions | None = None,
    stragglers: StragglerOptions | None = None,
    spot: SpotOptions | None = None,
) -> bool:
    """Whether :func:`simulate` with this policy and placement can answer differently for
    another ``seed`` (all other inputs equal).

    The engine draws nothing itself; it hands children of ``SeedSequence(seed)`` to the
    policy and to the placement strategy (:func:`simulate`), and each declares whether it
    draws from its child (``uses_seed``; checked both ways by the policy conformance
    battery). When neither does, every seed gives byte-identical results: running such a
    configuration once stands for every seed. A stochastic model of the engine is declared
    here too: node failures drawn at random (``failures`` with no scripted schedule) and
    spot reclaims drawn at their rate (``spot`` with no trace) depend on the seed. (Arrival
    jitter, if added, must be declared here as well.)

    Parameters
    ----------
    policy
        A policy, or its class (the registry's values).
    placement
        A placement strategy, or its class; ``None``: the default, ``consolidate``.
    failures
        The run's failure options (``EngineOptions.failures``); ``None``: failures off.
    stragglers
        The run's straggler options (``EngineOptions.stragglers``): slow nodes drawn from a
        share depend on the seed.
    spot
        The run's spot options (``EngineOptions.spot``); ``None``: no reclaims.
    """
    return bool(
        policy.uses_seed
        or (placement is not None and placement.uses_seed)
        or (failures is not None and failures.draws)
        or (stragglers is not None and stragglers.draws)
        or (spot is not None and spot.draws)
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

    Notes
    -----
    A run of at least :data:`clustersim.kernels.COMPILE_FROM_JOBS` jobs switches the process
    to numba's compiled kernels (:func:`clustersim.kernels.choose`), as does a run of a
    policy with ``compiled_kernels``; a smaller one once it
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
    if policy.splicing is not None:  # replica splicing: clustersim.elastic.splice
        jobs, rates = splice(jobs, rates, policy.splicing)
    choose(len(jobs), force=policy.compiled_kernels)
    policy_ss, place_ss = np.random.SeedSequence(opt.seed).spawn(2)
    policy.reset(np.random.default_rng(policy_ss))
    placement.reset(np.random.default_rng(place_ss))
    failures = None
    if opt.failures is not None:  # its own streams: SeedSequence(seed, spawn_key=(2, r))
        start = float(jobs.submit_time.min()) if len(jobs) else 0.0
        failures = NodeFailures(cluster, len(jobs), opt.failures, opt.seed, start)
        rates = failures.rates(rates)
    spot = None
    if opt.spot is not None:  # its own streams: SeedSequence(seed, spawn_key=(4, r))
        start = float(jobs.submit_time.min()) if len(jobs) else 0.0
        spot = SpotReclaims(cluster, len(jobs), opt.spot, opt.seed, start, failures)
        rates = spot.rates(rates)
    stragglers = None
    if opt.stragglers is not None:  # its own stream: SeedSequence(seed, spawn_key=(3,))
        stragglers = SlowNodes(cluster, opt.stragglers, opt.seed)
        placement = stragglers.placement(placement)
    run = _Run(jobs, cluster, policy, placement, rates, opt, failures, stragglers, spot)
    return run.run()
