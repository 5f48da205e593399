"""The policy interface: a read-only state view in, a decision out.

A decision has three stages (the split Blox popularised): admission (which arriving jobs enter
the queue), scheduling (which jobs run, with how many devices of which type), and placement
(which nodes). Scheduling policies subclass :class:`Policy`; placement strategies subclass
:class:`Placement`. Both are constructed with hyper-parameters only and are called with state;
they never own a loop or a clock — the engine does.

Shapes of scheduling policy the engine supports
-----------------------------------------------
* greedy gang allocation (``preemptive = False``): :meth:`Policy.schedule` returns queued jobs
  to start, in order; running jobs keep their devices until they finish;
* preemptive priority (``preemptive = True``): ``schedule`` returns every job that should run,
  in priority order; running jobs left out are suspended (paying a checkpoint/restore delay when
  they resume);
* round-based fractional time (``round_s`` set): the engine calls ``schedule`` at every round
  boundary; a policy may return ``Decision.fractions`` (time share of each job on each type) and
  the engine realises it round by round (:mod:`clustersim.rounds`);
* elastic: ``Decision.ndev`` gives a device count per job within ``[min_gpus, max_gpus]``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    from clustersim.cluster import Cluster
    from clustersim.colocation import PairFactors
    from clustersim.elastic import Scaling, SpliceConfig
    from clustersim.jobs import JobTable
    from clustersim.perf import JobRates
    from clustersim.power import PowerConfig, PowerView
    from clustersim.resources import AuxModel

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]

SERVICE_EPS = 1e-6
"""Device-seconds: a job within this much of a service mark has reached it (so float round-off
at the wake-up instant never leaves a job just short of the mark it was woken for)."""


class StateSource(Protocol):
    """What :class:`State` needs from the engine to bring the dynamic arrays up to date."""

    def sync(self, field: str | None = None) -> None:
        """Bring ``field`` (one of ``remaining``, ``attained``, ``executed``; all three when
        ``None``) of running jobs up to ``now``."""

    def active_jobs(self) -> IntArray:
        """The active jobs, ascending."""

    def queued_prefix(self, limit: int) -> IntArray:
        """The first ``limit`` queued jobs, ascending, without building the whole set."""

    def running_jobs(self) -> IntArray:
        """The running jobs, in no particular order (the engine's own array: read only; if
        it is flagged so, the view hands it out as it is)."""

    def sync_types(self) -> None:
        """Bring ``type_time`` up to ``now``."""


class State:
    """What a policy may look at. Read-only by contract (the conformance battery checks it).

    Per-job arrays have one entry per job of the whole trace (global job index ``j``); only
    the jobs in ``active`` matter to a policy. The dynamic arrays (``remaining``,
    ``attained``, ``executed``, ``type_time``) are brought up to date the first time a policy
    reads one of them during a call, so policies that do not need them cost nothing.

    Attributes
    ----------
    now : float
        Current simulated time, s.
    jobs : JobTable
        The static job table.
    cluster : Cluster
        The inventory.
    active : (k,) int64
        Global indices of jobs that have arrived, were admitted, and have not finished,
        ascending (= submit order).
    running : (n,) bool
        Job currently holds devices.
    alloc_type : (n,) int64
        Type index of the devices a running job holds (-1 when not running).
    alloc_n : (n,) int64
        Devices a running job holds (0 when not running).
    rate : (n, n_types) float64
        Work units per second of the job's full gang (``num_gpus`` devices), consolidated, on
        each type; 0 where the job cannot run on that type.
    first_start : (n,) float64
        Time of first start, ``nan`` if never started.
    last_start : (n,) float64
        Time of the latest (re)start, ``nan`` if never started.
    preemptions : (n,) int64
        Times the job was suspended so far.
    free : (n_types,) int64
        Free devices of each type now.
    capacity : (n_types,) int64
        Total devices of each type.
    round_index : int
        Round boundaries passed so far (round-based policies), else 0.
    n_running : int
        Number of active jobs holding devices.
    pending : int
        Jobs of the trace that have not arrived yet.
    best_rate : (n,) float64
        Each job's full-gang rate on its fastest type (``rate.max(axis=1)``).
    remaining : (n,) float64
        Work left, in the job's work units (lazy).
    attained : (n,) float64
        Service received so far in device-seconds (devices held × time held) (lazy).
    executed : (n,) float64
        Wall-clock seconds the job has held devices (lazy).
    type_time : (n, n_types) float64
        Wall-clock seconds the job has held devices of each type (lazy).
    colocation : PairFactors or None
        The co-location model (:class:`clustersim.colocation.PairFactors`) for policies that
        declare ``colocates``, else ``None``.
    host_of : (n,) int64 or None
        With ``colocation``: each running guest's host, -1 for other jobs. A guest is
        ``running`` with ``alloc_n`` 0 (it holds no device of its own).
    node_free : (n_nodes,) int64 or None
        Free devices on each node now (``None`` in a view built without an engine).
    nodes_used : (n,) int64 or None
        Nodes of each job's latest placement (0: never placed; for a running job, the nodes
        its gang spans now). ``None`` in a view built without an engine.
    power : PowerView or None
        The power model's view (:class:`clustersim.power.PowerView`: budget, draw now,
        caps, throughput under a cap) for policies that declare ``power``, else ``None``.
    carbon_start : str
        Calendar instant (ISO 8601, UTC) of simulation time 0 for the hourly carbon
        intensity (``EngineOptions.carbon_start``), for carbon-aware policies.
    job_rates : JobRates or None
        The performance model of the run (``None`` in a view built without one); elastic
        policies ask :meth:`rate_on` rather than read it.
    aux_model : AuxModel or None
        The run's CPU/memory model (:class:`clustersim.resources.AuxModel`: node capacities
        ``cpu_cap``/``mem_cap``, each job's allocation per device ``cpu_dev``/``mem_dev``;
        read only), ``None`` when the model is off; see :meth:`aux_rows`.
    snapshot : int
        Which snapshot of the run this view shows: the engine reuses one view per run,
        :meth:`renew` ing it for each decision, so ``(view, snapshot)`` names a snapshot.
    """

    def __init__(
        self,
        *,
        now: float,
        jobs: JobTable,
        cluster: Cluster,
        active: IntArray | None,
        running: BoolArray,
        alloc_type: IntArray,
        alloc_n: IntArray,
        rate: FloatArray,
        first_start: FloatArray,
        last_start: FloatArray,
        preemptions: IntArray,
        free: IntArray,
        capacity: IntArray,
        remaining: FloatArray,
        attained: FloatArray,
        executed: FloatArray,
        type_time: FloatArray,
        round_index: int = 0,
        n_running: int | None = None,
        pending: int = 0,
        best_rate: FloatArray | None = None,
        source: StateSource | None = None,
        colocation: PairFactors | None = None,
        host_of: IntArray | None = None,
        node_free: IntArray | None = None,
        nodes_used: IntArray | None = None,
        power: PowerView | None = None,
        carbon_start: str = "2023-01-01T00:00:00Z",
        job_rates: JobRates | None = None,
        aux_model: AuxModel | None = None,
    ) -> None:
        self.now = now
        self.aux_model = aux_model
        self.job_rates = job_rates
        self._scaling: Scaling | None = None
        self.carbon_start = carbon_start
        self.power = power
        self.node_free = node_free
        self.nodes_used = nodes_used
        self.colocation = colocation
        self.host_of = host_of
        self.jobs = jobs
        self.cluster = cluster
        self._active = active
        self.running = running
        self.alloc_type = alloc_type
        self.alloc_n = alloc_n
        self.rate = rate
        self.first_start = first_start
        self.last_start = last_start
        self.preemptions = preemptions
        self.free = free
        self.capacity = capacity
        self.round_index = round_index
        if n_running is None:
            n_running = int(running[self.active].sum())
        self.n_running = n_running
        self.pending = pending
        self.best_rate = rate.max(axis=1) if best_rate is None else best_rate
        self._remaining = remaining
        self._attained = attained
        self._executed = executed
        self._type_time = type_time
        self._source = source
        self._synced: set[str] | None = None if source is None else set()
        self._synced_types = source is None
        self.snapshot = 0

    def renew(self, now: float, round_index: int, n_running: int, pending: int) -> None:
        """Make this view the one of a new snapshot of the same engine (the engine's use:
        its arrays are live, so only the scalars and the lazy parts change; building a new
        view at every decision costs more than the decision of a simple policy).

        ``snapshot`` counts the renewals: a policy that remembers its answer to a view (to
        answer the same when asked twice about one snapshot) compares it too.
        """
        self.now = now
        self.round_index = round_index
        self.n_running = n_running
        self.pending = pending
        if self._source is not None:  # a view without an engine keeps what it was given
            self._active = None
            self._synced = set()
            self._synced_types = False
        self.snapshot += 1

    def _sync(self, field: str) -> None:
        if self._synced is not None and field not in self._synced:
            assert self._source is not None
            self._source.sync(field)
            self._synced.add(field)

    @property
    def active(self) -> IntArray:
        if self._active is None:
            assert self._source is not None
            self._active = self._source.active_jobs()
        return self._active

    @property
    def is_active(self) -> BoolArray:
        """(n,) bool: the job is active (``active`` as a mask; read only). With an engine
        behind the state this is the engine's own array, so it costs nothing."""
        mask = getattr(self._source, "is_active", None)
        if mask is None:
            mask = np.zeros(len(self.running), dtype=bool)
            mask[self.active] = True
        return mask

    def running_jobs(self) -> IntArray:
        """Global indices of the jobs holding devices, in no particular order (read only).

        Costs O(running) with an engine behind the state, instead of the O(active) of
        ``active[running[active]]``.
        """
        if self._source is not None and self._active is None:
            r = self._source.running_jobs()
            if not r.flags.writeable:  # the engine's own read-only view
                return r
            r = r.view()
        else:
            r = self.active[self.running[self.active]]
        r.flags.writeable = False
        return r

    @property
    def remaining(self) -> FloatArray:
        self._sync("remaining")
        return self._remaining

    @property
    def attained(self) -> FloatArray:
        synced = self._synced
        if synced is not None and "attained" not in synced:  # self._sync, inline
            self._sync("attained")
        return self._attained

    @property
    def executed(self) -> FloatArray:
        self._sync("executed")
        return self._executed

    @property
    def type_time(self) -> FloatArray:
        if not self._synced_types:
            assert self._source is not None
            self._source.sync_types()
            self._synced_types = True
        return self._type_time

    def rate_on(self, idx: IntArray, types: IntArray, ndev: IntArray) -> FloatArray:
        """Work units/s of jobs ``idx`` on ``ndev`` devices of ``types``, consolidated on as
        few nodes as the type's nodes allow (:class:`clustersim.elastic.Scaling`), (m,)
        float64; 0 for ``ndev`` 0. What elastic policies plan with; the engine rates the
        placement it actually makes."""
        if self._scaling is None:
            from clustersim.elastic import Scaling

            self._scaling = Scaling(self.jobs, self.cluster, self.rate, self.job_rates)
        return self._scaling.rate(idx, types, ndev)

    def rate_table(self, idx: IntArray, types: IntArray, hi: IntArray) -> FloatArray:
        """(m, max(hi) + 1) float64: :meth:`rate_on` of job ``idx[i]`` on ``n = 0 ..
        hi[i]`` devices of ``types[i]`` (``hi[i] <= max_gpus``), 0 past ``hi[i]``; each
        job's row is evaluated once per run and type (:meth:`clustersim.elastic.Scaling.
        table`)."""
        if self._scaling is None:
            from clustersim.elastic import Scaling

            self._scaling = Scaling(self.jobs, self.cluster, self.rate, self.job_rates)
        return self._scaling.table(idx, types, hi)

    def aux_rows(self) -> tuple[IntArray, IntArray, IntArray]:
        """Where the running jobs hold devices, one row per (job, node): ``(job, node,
        devices)``, each (r,) int64 (empty without an engine). With ``aux_model`` a policy
        computes each node's free cores as ``cpu_cap - bincount(node, devices *
        cpu_dev[job])``."""
        rows = getattr(self._source, "placement_rows", None)
        if rows is None:
            e = np.zeros(0, dtype=np.int64)
            return e, e, e
        out: tuple[IntArray, IntArray, IntArray] = rows()
        return out

    def queued(self, limit: int | None = None) -> IntArray:
        """Global indices of active jobs not holding devices, in submit order.

        With ``limit``, only the first ``limit`` of them; this costs O(running + limit)
        instead of O(active), which matters for long queues.
        """
        if limit is not None and self._active is None and self._source is not None:
            return self._source.queued_prefix(limit)
        a = self.active if limit is None else self.active[: self.n_running + limit]
        q = a[~self.running[a]]
        return q if limit is None else q[:limit]

    def remaining_time(self, idx: IntArray) -> FloatArray:
        """Oracle remaining wall time of jobs ``idx`` on their fastest type, s.

        Uses the current type for running jobs. Jobs that can run nowhere get ``inf``.
        """
        best = self.best_rate[idx]
        if self.rate.shape[1] > 1:
            on = self.running[idx]
            if on.any():
                ion = idx[on]
                best[on] = self.rate[ion, self.alloc_type[ion]]
        if best.all():  # the usual case: every job can run somewhere
            return self.remaining[idx] / best
        with np.errstate(divide="ignore"):
            return np.where(best > 0, self.remaining[idx] / best, np.inf)


@dataclass(eq=False)
class Decision:
    """A scheduling decision.

    Attributes
    ----------
    run : (m,) int64
        Global job indices in priority order. For non-preemptive policies: queued jobs to
        start; for preemptive policies: every job that should run (running jobs not listed
        are suspended).
    types : (m,) int64 or None
        Accelerator type index for each job in ``run``; -1 (or ``None`` for all) lets the
        engine choose: the job's current type if running, else the type with free devices on
        which the job is fastest.
    ndev : (m,) int64 or None
        Devices for each job in ``run`` (elastic jobs); ``None``: the job's ``num_gpus``.
    fractions : (k, n_types) float64 or None
        Round-based policies only: fraction of the coming rounds each active job (rows in
        ``State.active`` order) should spend on each type; rows sum to at most 1. When given,
        ``run``/``types`` are ignored and the engine realises the fractions.
    wake_at : float or None
        Ask the engine to call ``schedule`` again at this time even if nothing else happens.
        Each decision's value replaces the previous one (``None`` clears it). For times that
        depend on how much service running jobs get, see :attr:`Policy.service_marks`.
    drop : (d,) int64 or None
        Active jobs the policy gives up on: they are stopped and reported as abandoned
        (they never complete).
    colocate : (g, 2) int64 or None
        Policies with ``colocates`` only: rows ``(guest, host)``. Each guest (active, not in
        ``run``) shares its host's devices when the host runs after this decision, both at
        their co-located rates (:mod:`clustersim.colocation`; ask
        ``State.colocation.factors`` which pairs can share). Guests of earlier decisions not
        listed again stop being guests.
    migrate : (k,) int64 or None
        Preemptive policies only: running jobs of ``run`` to re-place now (suspended and
        started again in this decision, in their ``run`` order, wherever the placement
        strategy puts them): one preemption each, and a migration when the new placement
        differs from the old; the restore delay is paid as on any resume. Jobs not
        running, guests and jobs not in ``run`` are ignored.
    power_cap : (m,) float64 or None
        Policies with ``power`` only: the power cap of each job of ``run`` that starts in
        this decision, as a fraction of its type's ``busy_w`` (clipped to the kind's lowest
        cap; 1 or ``nan``: uncapped). The cap holds until the job stops; jobs already
        running keep theirs (:mod:`clustersim.power`). ``None``: uncapped.
    region : (m,) int64 or None
        Policies with ``steers_regions`` only: the region index (``cluster.regions``) each
        job of ``run`` that starts in this decision must be placed in; -1 (or ``None`` for
        all): any region. A job whose region has too few free devices of its type waits.
    unchanged : bool
        A hint (a policy's quiet rounds): the policy vouches that this decision is its
        previous one, that nothing the decision depends on has changed since that one was
        applied, and that applying it changed nothing. The engine may then skip applying it
        again (it does when no model hooks a decision: power, stragglers, goodput); the
        other fields must still hold the whole decision, so a caller that ignores the hint
        gets the same result.
    aux : (m, 2) float64 or None
        Host CPU cores and GB of memory *per device* allocated to each job of ``run``
        (``nan``: unchanged), when the run has the CPU/memory model on
        (``State.aux_model``; ignored otherwise). Written before the decision is placed: a
        starting job is placed where that share fits, and a running job may grow its
        allocation only where its nodes have the difference free (else an error; shrinks
        are applied first). The job then runs at its rate times
        the sensitivity model's multiplier (:mod:`clustersim.aux_speed`). ``None``: every
        allocation unchanged (the demand, for jobs no such decision touched).
    """

    run: IntArray
    types: IntArray | None = None
    ndev: IntArray | None = None
    fractions: FloatArray | None = None
    wake_at: float | None = None
    drop: IntArray | None = None
    colocate: IntArray | None = None
    migrate: IntArray | None = None
    power_cap: FloatArray | None = None
    region: IntArray | None = None
    unchanged: bool = False
    aux: FloatArray | None = None


EMPTY = np.zeros(0, dtype=np.int64)


@dataclass(frozen=True)
class CompatSpec:
    """How a policy runs in the compatibility mode of one reference simulator
    (:mod:`clustersim.compat`).

    Attributes
    ----------
    params
        Hyper-parameters the policy takes in that mode (the reference's rules where they
        differ from the paper's); a user's own parameters are applied on top.
    placements
        Placement strategies the reference simulator has for this policy, the first being its
        default; empty: the mode does not restrict the placement.
    elastic
        Device-count bounds rule (:mod:`clustersim.elastic`, e.g. ``"1-64"``) the reference
        simulator gives every job under this policy, applied to the workload's rigid jobs in
        that mode; empty: the workload's bounds as they are.
    engine
        Engine options (:class:`clustersim.engine.EngineOptions` keywords) the reference
        simulator's rules for this policy need in that mode.
    """

    params: Mapping[str, Any] = field(default_factory=dict)
    placements: tuple[str, ...] = ()
    elastic: str = ""
    engine: Mapping[str, Any] = field(default_factory=dict)


class Policy:
    """Base class of scheduling policies.

    Subclasses set :attr:`name`, :attr:`citation`, and override :meth:`schedule`. Their
    ``__init__`` stores hyper-parameters and does nothing else. They must not mutate the
    :class:`State` and must be deterministic given the state (randomness, if any, comes from
    the ``rng`` the engine passes to :meth:`reset`).

    Class attributes
    ----------------
    name : str
        Registry key.
    citation : str
        Paper the policy reproduces.
    preemptive : bool
        Whether ``schedule`` returns the full run set (True) or only jobs to start (False).
    blocking : bool
        When the engine cannot place a job of ``run`` (not enough free devices), stop there
        (strict order, head-of-line blocking) instead of trying the next one (backfilling).
    round_s : float or None
        Call ``schedule`` at every multiple of this many seconds (round-based policies), in
        addition to arrivals and completions.
    rounds_only : bool
        With ``round_s``: call ``schedule`` only at round boundaries (Gavel's simulator), so
        arrivals wait for the next round and devices freed mid-round stay idle until then.
    rounds_on_grid : bool
        With ``round_s`` (and not ``rounds_only``): call ``schedule`` only at the boundaries
        of the fixed grid of rounds (multiples of ``round_s`` from the round origin), never at
        arrivals or completions in between (Synergy's simulator): arrivals wait for the next
        boundary and devices freed mid-round stay idle until then, even on an idle cluster.
    service_marks : tuple of float
        Attained-service levels (device-seconds, ascending) at which the policy's view of a
        running job changes, e.g. the queue thresholds of multi-level feedback queues. The
        engine calls ``schedule`` again the moment a running job's attained service reaches
        the next mark above it (within :data:`SERVICE_EPS`); it keeps the crossing times in a
        heap, so the policy is not asked anything after its decisions.
    compat : mapping of str to CompatSpec
        The reference simulators whose compatibility mode covers this policy (``--compat
        NAME``), with what the policy does there; a mode refuses a policy not listed.
    colocates : bool
        The policy's decisions may pair jobs on shared devices (``Decision.colocate``); the
        engine then builds the co-location model (``State.colocation``) and mechanism
        (:mod:`clustersim.colocation`). Such a policy must be ``preemptive``.
    uses_seed : bool
        The policy draws from the ``rng`` that :meth:`reset` receives (a child of the run's
        seed), so the run's seed can change its decisions. ``False`` (the default): its
        decisions do not depend on the run's seed, and an experiment runs it once whatever
        seeds it lists (:func:`clustersim.engine.seed_matters`). The conformance battery
        checks the claim both ways.
    resume_s : float or None
        Delay paid on every resume of a preempted job, replacing the performance model's
        checkpoint/restore delay for this policy's runs (``None``, the default: the model's).
        For mechanisms that suspend in place, e.g. Gandiva's suspend-resume at a mini-batch
        boundary, far cheaper than a checkpoint restore.
    power : PowerConfig or None
        The policy uses the power model (:mod:`clustersim.power`): the engine builds it with
        this configuration (switch-off threshold, budget), shows it as ``State.power`` and
        applies ``Decision.power_cap``. ``None`` (the default): no power model, nodes never
        power down, and the run costs nothing more.
    goodput : bool
        The policy plans with Pollux's goodput model (:mod:`clustersim.goodput`): the engine
        then re-rates every running job of a profiled model to its goodput (throughput ×
        statistical efficiency at its progress, best batch size) after each decision.
        ``False`` (the default): rates come from the performance model only.
    splicing : SpliceConfig or None
        The policy splices replicas (Singularity's time-slicing, :mod:`clustersim.elastic`):
        :func:`clustersim.engine.simulate` then passes the run's jobs and rates through
        :func:`clustersim.elastic.splice`, so a job may run on a divisor ``d`` of its world
        size ``w = num_gpus`` with ``w / d <= max_splice`` (``min_gpus`` becomes the smallest),
        at ``d / w`` of its ``w``-device rate on that placement times ``1 − overhead``.
        ``None`` (the default): no splicing.
    steers_regions : bool
        The policy's decisions say which region each starting job goes to
        (``Decision.region``); the engine then places every start through the placement
        strategy, over that region's nodes only (no compiled fast path for placement).
    compiled_kernels : bool
        The policy calls a kernel of :mod:`clustersim.kernels` that is slow as plain Python
        at any run size (e.g. the Newton iteration of the centre tie-break), so the engine
        switches to the compiled kernels from the start of its runs (same results, see
        :func:`clustersim.kernels.choose`). ``False`` (the default): the engine decides by
        the run's size.
    """

    name: ClassVar[str] = ""
    citation: ClassVar[str] = ""
    preemptive: ClassVar[bool] = False
    blocking: bool = False
    round_s: float | None = None
    rounds_only: ClassVar[bool] = False
    rounds_on_grid: ClassVar[bool] = False
    service_marks: tuple[float, ...] = ()
    compat: ClassVar[Mapping[str, CompatSpec]] = {}
    uses_seed: ClassVar[bool] = False
    colocates: ClassVar[bool] = False
    resume_s: float | None = None
    compiled_kernels: bool = False
    power: PowerConfig | None = None
    steers_regions: ClassVar[bool] = False
    goodput: ClassVar[bool] = False
    splicing: SpliceConfig | None = None

    @classmethod
    def cluster_problems(cls, params: Mapping[str, Any], cluster: Cluster) -> list[str]:
        """What is wrong with hyper-parameters ``params`` (already typed) on ``cluster``,
        each message starting with the parameter's name (``budget_kw: ...``); the API, the
        form and the CLI refuse such a run before it is queued. The default: nothing."""
        return []

    def reset(self, rng: np.random.Generator) -> None:
        """Called once before a run; policies with per-run memory clear it here."""

    def admit(self, state: State, arriving: IntArray) -> BoolArray:
        """Admission stage: which of ``arriving`` (global indices) enter the queue."""
        return np.ones(len(arriving), dtype=bool)

    def schedule(self, state: State) -> Decision:
        """Scheduling stage; see the class docstring for what ``run`` means."""
        raise NotImplementedError

    def params(self) -> dict[str, object]:
        """Hyper-parameters as passed to ``__init__`` (for the catalogue and results)."""
        return {k: v for k, v in vars(self).items() if not k.startswith("_")}

    def stats(self) -> dict[str, float]:
        """Counters of the run so far, copied by the engine into
        :attr:`clustersim.result.RunResult.policy_stats` at the end of a run. The LP policies
        report ``lp_solves``, ``lp_solver_s`` and ``lp_fallbacks``
        (:mod:`scheduling.allocation`); the default reports nothing."""
        return {}


class Placement:
    """Base class of placement strategies: which nodes a job's devices come from.

    ``place`` receives the free devices per node (read-only), the nodes of the wanted type,
    and the number of devices, and returns per-node counts; it answers ``None`` when there are
    not enough free devices and otherwise asks the strategy's :meth:`choose`.

    Class attributes
    ----------------
    best_fit_one_node : bool
        The strategy promises that a gang fitting in one node goes to the node with the fewest
        free devices that holds it (lowest index among ties). The engine then makes that
        choice itself without calling :meth:`place` (a fast path; the placement conformance
        test checks the promise).
    fills_in_node_order : bool
        The strategy promises to take free devices node by node in index order (each node
        wholly until the last); the engine then places every gang itself (checked by the same
        test).
    yarn_rule : bool
        The strategy promises the Tiresias simulator's ``yarn`` scheme
        (:func:`clustersim.kernels.yarn_nodes`); the engine then places every gang itself
        (checked by the same test).
    may_decline : bool
        The strategy places only in certain shapes (e.g. one rack) and may answer ``None``
        although the candidates hold enough free devices; the job then waits. Strategies
        without it always place a gang whose devices are free.
    largest_first_across_nodes : bool
        The strategy promises that a gang fitting in no single node takes the candidates with
        the most free devices first (lowest index among ties), each wholly until the last
        (:func:`clustersim.kernels.take_largest_first`); with ``best_fit_one_node`` the engine
        then places every gang itself (checked by the same test).
    uses_seed : bool
        The strategy draws from the ``rng`` that :meth:`reset` receives (a child of the run's
        seed). ``False`` (the default): it is deterministic, ties broken by node index (see
        :attr:`Policy.uses_seed`; the conformance battery checks the claim both ways).
    shares_gpus : bool
        The strategy places on single GPUs' milli (the FGD paper's placements): the engine
        runs the GPU-sharing model (:mod:`clustersim.gpushare`) and hands it to
        :meth:`bind_share`.
    """

    name: ClassVar[str] = ""
    best_fit_one_node: ClassVar[bool] = False
    may_decline: ClassVar[bool] = False
    fills_in_node_order: ClassVar[bool] = False
    yarn_rule: ClassVar[bool] = False
    largest_first_across_nodes: ClassVar[bool] = False
    uses_seed: ClassVar[bool] = False
    colocates: ClassVar[bool] = False
    shares_gpus: ClassVar[bool] = False

    def reset(self, rng: np.random.Generator) -> None:
        """Called once before a run."""

    def bind_share(self, model: Any) -> None:
        """Called once before a run with the GPU-sharing model
        (:class:`clustersim.gpushare.GpuShare`), or ``None`` when GPU sharing is off.
        Strategies that count whole devices need not override it."""

    def bind_network(self, view: Any) -> None:
        """Called once before a run with the network model's live view
        (:class:`clustersim.network.NetworkView`: uplink capacity, load and crossing jobs),
        or ``None`` when network contention is off. Strategies that ignore the network
        need not override it."""

    def bind_resources(self, aux: Any) -> None:
        """Called once before a run with the CPU and memory model
        (:class:`clustersim.resources.AuxModel`: free cores and memory per node, each job's
        share per device, and the job being placed), or ``None`` when the run has none.
        Strategies that ignore CPU and memory need not override it."""

    def place(
        self, cluster: Cluster, free: IntArray, candidates: IntArray, ndev: int
    ) -> tuple[IntArray, IntArray] | None:
        """Choose nodes for ``ndev`` devices.

        Parameters
        ----------
        cluster
            The inventory.
        free : (n_nodes,) int64
            Free devices on each node now.
        candidates : (c,) int64
            Node indices holding the wanted accelerator type with at least one free device.
        ndev
            Devices wanted.

        Returns
        -------
        (nodes, counts) or None
            Node indices and devices taken on each (``counts.sum() == ndev``, each
            ``counts[i] <= free[nodes[i]]``), or ``None`` when the candidates do not hold
            ``ndev`` free devices (or, for a strategy that ``may_decline``, not in a shape
            it accepts).
        """
        f = free[candidates]
        if int(f.sum()) < ndev:
            return None
        return self.choose(cluster, free, candidates, f, ndev)

    def choose(
        self, cluster: Cluster, free: IntArray, candidates: IntArray, f: IntArray, ndev: int
    ) -> tuple[IntArray, IntArray] | None:
        """Strategy hook of :meth:`place`: the candidates hold at least ``ndev`` free devices.

        ``f`` is ``free[candidates]``; the other arguments are those of :meth:`place`.
        """
        raise NotImplementedError
