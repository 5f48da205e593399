"""Kubernetes with Kueue: quota-based gang admission, then the default scheduler's node
scoring (``kubernetes``).

Sources, read in their own words and written in ours: Kueue v0.9 documentation ("Cluster
Queue": ``resourceGroups``, ``nominalQuota``, ``borrowingLimit``, ``cohort``,
``queueingStrategy``, ``flavorFungibility``, ``preemption.reclaimWithinCohort``;
"Preemption"; "Local Queue") and its scheduler's ordering of heads; Kubernetes v1.31
``kube-scheduler`` (``pkg/scheduler/framework/plugins/noderesources``: ``NodeResourcesFit``
filter, ``LeastAllocated`` / ``MostAllocated`` scoring, ``NodeResourcesBalancedAllocation``;
``apis/config/v1/default_plugins.go`` for the plugin weights). The node side is the pair of
placement strategies ``k8s-least-allocated`` and ``k8s-most-allocated``
(:mod:`scheduling.kube_placement`); this module is Kueue's admission.

The rules, one by one:

* **ClusterQueues and flavours.** Each accelerator type is a ``ResourceFlavor``; the one
  resource quota'd is ``nvidia.com/gpu``. ``queues`` lists ClusterQueues as
  ``NAME[@COHORT]:FLAVOUR=NOMINAL[+BORROW],...;...``: ``"a@c:V100=8+4,K80=2;b@c:V100=8"``
  (flavours are the cluster's type names or their aliases) gives ``a`` a nominal quota of
  8 V100 and 2 K80 and lets it borrow at most 4 more V100
  from its cohort ``c`` (``borrowingLimit``; absent: no limit, Kueue's default); ``b`` 8
  V100 in the same cohort. A queue without ``@COHORT`` is in no cohort: it never borrows
  and nothing borrows from it. The flavours of an entry are tried in the order written.
* **Queues from the trace.** A job is a Workload submitted through a LocalQueue that points
  to the ClusterQueue named as its virtual cluster (``queue_by="vc"``, the trace's ``vc``;
  ``"user"``: its user). A job whose ClusterQueue does not exist is refused at submission
  (reported rejected, as Kueue leaves a Workload of a missing queue inadmissible for ever).
  Empty ``queues`` (the default): one ClusterQueue per VC (or user), all in one cohort
  ``default``, no borrowing limit, each type's devices split as equal nominal quotas
  (``capacity // k``; the remainder one each to the first queues in name order), flavours
  in the cluster's type order.
* **Order within a queue**: priority (the trace's ``priority``, standing for the
  ``WorkloadPriorityClass`` value) descending, then the queue time, then the job index. The
  queue time is the submission, or the latest eviction for a preempted job (Kueue's default
  ``requeuingStrategy.timestamp: Eviction``).
* **Queueing strategy**: ``StrictFIFO``: a queue's head that cannot be admitted blocks the
  jobs behind it; ``BestEffortFIFO`` (Kueue's default): it is set aside and the first job of
  the queue that can be admitted is considered instead.
* **Fit of a workload** (``g`` devices) on flavour ``f`` of queue ``q`` with usage ``u``:
  without a cohort, ``u + g <= nominal``; in a cohort, ``u + g <= nominal + borrowingLimit``
  and the cohort's usage of ``f`` plus ``g`` at most the sum of its queues' nominal quotas
  (the unused nominal quota of the others is what can be borrowed). The workload *borrows*
  when ``u + g > nominal``. The whole gang is admitted or none of it (Kueue admits a
  Workload whole). ``flavorFungibility`` is Kueue's default (``whenCanBorrow: Borrow``,
  ``whenCanPreempt: TryNextFlavor``): the first flavour where the workload fits, with or
  without borrowing, is taken; only when it fits on none is preemption tried.
* **Admission cycles**: the candidate of each queue (its head; with ``BestEffortFIFO`` the
  first job that fits when the head does not) are ordered as Kueue's scheduler orders heads
  — workloads that do not borrow first, then priority descending, then queue time — and the
  first is admitted; this repeats until no queue has a candidate.
* **Preemption** (``reclaim_within_cohort``, Kueue's ``preemption.reclaimWithinCohort``;
  ``withinClusterQueue`` stays ``Never``): ``Never`` (Kueue's default) — a queue whose
  nominal quota is lent out waits until the borrowers' jobs end. ``LowerPriority`` /
  ``Any`` — a head that fits within its queue's nominal quota but not in the cohort (or the
  free devices) evicts workloads of *other* queues of the cohort that borrow on that flavour
  (of lower priority than the head, for ``LowerPriority``), lowest priority first, then the
  most recently admitted first, skipping a victim whose queue no longer borrows; then, as
  Kueue's minimal-preemption pass, victims are given back in reverse order while the head
  still fits. Evicted jobs return to their queue (queue time: the eviction) and resume
  from their checkpoint (the engine's restore delay).
* **Pods on nodes**: a workload is admitted only when the kube-scheduler's filter would find
  a node for each of its pods now (the gang as ``ceil(g / P)`` pods of near-equal size,
  ``P`` the most devices a node of the flavour has, each on the fullest node with room,
  over the free devices per node: :func:`clustersim.kernels.pods_fit`); otherwise it stays
  pending (with ``BestEffortFIFO`` a later job may go first). The placement strategy then
  chooses the nodes — with ``k8s-least-allocated`` or ``k8s-most-allocated`` by the
  default scheduler's scores (:mod:`scheduling.kube_placement`); a gang it cannot place
  after all (CPU or memory on the nodes, which the filter above does not count) waits.

Departures, and why:

* A Workload whose quota fits but whose pods cannot all be bound now stays *pending* here
  (Kueue would reserve the quota and leave the pods Pending, until ``waitForPodsReady``
  evicts it if configured): admission and binding happen in one decision. Preemption
  (``reclaim_within_cohort``) checks devices per flavour, not per node.
* One admission per cycle, cycles repeated at once (Kueue tries every head in one cycle and
  admits several); the order is the same, and no simulated time passes between cycles.
* Only ``nvidia.com/gpu`` has a quota (CPU and memory are checked per node by the
  scheduler's filter, when the cluster and trace give them); no ``lendingLimit``, no
  hierarchical cohorts, no fair sharing, no ``borrowWithinCohort``, no
  ``withinClusterQueue`` preemption, no AdmissionChecks; ``BestEffortFIFO`` reconsiders set
  aside workloads at every event (Kueue at events that may free quota).
* A quota above the cluster's devices of its flavour is refused (naming ``queues``): Kueue
  accepts it, but a planner means the quota to be real.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import numpy as np
import numpy.typing as npt

from clustersim import kernels
from scheduling.base import EMPTY, Decision, Policy, State

if TYPE_CHECKING:
    from clustersim.cluster import Cluster

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]

DEFAULT_COHORT = "default"


@dataclass
class ClusterQueueSpec:
    """One ClusterQueue of ``queues``: its cohort (``""``: none) and, per flavour in the
    order written, the nominal quota and borrowing limit (``inf``: none) in devices."""

    name: str
    cohort: str
    flavours: list[str] = field(default_factory=list)
    nominal: list[int] = field(default_factory=list)
    borrow: list[float] = field(default_factory=list)


def parse_queues(spec: str) -> list[ClusterQueueSpec]:
    """The ClusterQueues of ``spec`` (module doc); ``ValueError`` naming ``queues``."""
    out: list[ClusterQueueSpec] = []
    seen: set[str] = set()
    for k, raw in enumerate(x for x in spec.split(";") if x.strip()):
        item = raw.strip()
        where = f"queues: entry {k + 1} ({item!r})"
        head, sep, body = item.partition(":")
        if not sep or not body.strip():
            raise ValueError(f"{where}: want NAME[@COHORT]:FLAVOUR=NOMINAL[+BORROW],...")
        name, _, cohort = head.partition("@")
        name, cohort = name.strip(), cohort.strip()
        if not name or ("@" in head and not cohort):
            raise ValueError(f"{where}: want NAME[@COHORT]:FLAVOUR=NOMINAL[+BORROW],...")
        if name in seen:
            raise ValueError(f"queues: ClusterQueue {name!r} is listed twice")
        seen.add(name)
        cq = ClusterQueueSpec(name, cohort)
        for part in body.split(","):
            flav, eq, nums = part.partition("=")
            flav = flav.strip()
            if not eq or not flav:
                raise ValueError(f"{where}: want FLAVOUR=NOMINAL[+BORROW], got {part.strip()!r}")
            nom_s, plus, bor_s = nums.partition("+")
            try:
                nominal = int(nom_s.strip())
                borrow = float(int(bor_s.strip())) if plus else math.inf
            except ValueError:
                raise ValueError(
                    f"{where}: quotas are whole numbers of devices, got {nums.strip()!r}"
                ) from None
            if nominal < 0 or borrow < 0:
                raise ValueError(f"{where}: quotas must be zero or positive")
            if flav in cq.flavours:
                raise ValueError(f"{where}: flavour {flav!r} is listed twice")
            if plus and not cohort:
                raise ValueError(f"{where}: a borrowing limit needs a cohort (NAME@COHORT)")
            cq.flavours.append(flav)
            cq.nominal.append(nominal)
            cq.borrow.append(borrow)
        out.append(cq)
    return out


def quota_problems(spec: str, cluster: Cluster) -> list[str]:
    """What is wrong with ``spec`` on ``cluster``: flavours that are no accelerator type of
    it, nominal quotas above its devices of the flavour (each message names ``queues``)."""
    try:
        cqs = parse_queues(spec)
    except ValueError as e:
        return [str(e)]
    names = [t.name for t in cluster.types]
    devices = np.bincount(cluster.node_type, weights=cluster.node_devices, minlength=len(names))
    problems: list[str] = []
    for cq in cqs:
        seen: set[int] = set()
        for f, nom in zip(cq.flavours, cq.nominal, strict=True):
            t = cluster.type_index(f)
            if t < 0:
                problems.append(
                    f"queues: ClusterQueue {cq.name!r} names flavour {f!r}, which is no "
                    f"accelerator type of the cluster ({', '.join(names)})"
                )
                continue
            if t in seen:
                problems.append(f"queues: ClusterQueue {cq.name!r} lists the type {names[t]} twice")
            seen.add(t)
            have = int(devices[t])
            if nom > have:
                problems.append(
                    f"queues: ClusterQueue {cq.name!r} has a nominal quota of {nom} {f}, "
                    f"above the cluster's {have} {names[t]} devices"
                )
    return problems


class Kubernetes(Policy):
    """Kueue's quota-based gang admission over the default kube-scheduler (module doc: the
    rules and where they depart from Kueue v0.9 and Kubernetes v1.31).

    Parameters
    ----------
    queues
        ClusterQueues, ``NAME[@COHORT]:FLAVOUR=NOMINAL[+BORROW],...`` separated by ``;``;
        empty: one queue per VC (or user) in one cohort, equal nominal quotas.
    queue_by
        Which trace column names a job's ClusterQueue: ``"vc"`` or ``"user"``.
    queueing
        ``"BestEffortFIFO"`` (Kueue's default) or ``"StrictFIFO"``.
    reclaim_within_cohort
        ``"Never"`` (Kueue's default), ``"LowerPriority"`` or ``"Any"``.
    """

    name = "kubernetes"
    citation = (
        "Kueue v0.9 (kubernetes-sigs/kueue: ClusterQueue quotas, cohorts, borrowing, "
        "queueing strategies, preemption) over the Kubernetes v1.31 kube-scheduler "
        "(NodeResourcesFit, LeastAllocated/MostAllocated, BalancedAllocation)"
    )
    preemptive = False  # True with reclaim_within_cohort other than Never
    #: Admit through the compiled kernel (:func:`clustersim.kernels.kueue_admit`) when
    #: nothing is preempted; ``False``: the same rules in numpy and Python (the reference
    #: the kernel is tested against, and the path used with preemption).
    use_kernel: ClassVar[bool] = True

    def __init__(
        self,
        queues: str = "",
        queue_by: Literal["vc", "user"] = "vc",
        queueing: Literal["BestEffortFIFO", "StrictFIFO"] = "BestEffortFIFO",
        reclaim_within_cohort: Literal["Never", "LowerPriority", "Any"] = "Never",
    ) -> None:
        self.queues = queues
        self.queue_by = queue_by
        self.queueing = queueing
        self.reclaim_within_cohort = reclaim_within_cohort
        if queue_by not in ("vc", "user"):
            raise ValueError(f"queue_by: must be vc or user, got {queue_by!r}")
        if queueing not in ("BestEffortFIFO", "StrictFIFO"):
            raise ValueError(f"queueing: must be BestEffortFIFO or StrictFIFO, got {queueing!r}")
        if reclaim_within_cohort not in ("Never", "LowerPriority", "Any"):
            raise ValueError(
                "reclaim_within_cohort: must be Never, LowerPriority or Any, "
                f"got {reclaim_within_cohort!r}"
            )
        if queues.strip():
            parse_queues(queues)  # a bad spec is refused when the policy is built
        if reclaim_within_cohort != "Never":
            self.preemptive = True  # type: ignore[misc]

    @classmethod
    def cluster_problems(cls, params: Mapping[str, Any], cluster: Cluster) -> list[str]:
        spec = str(params.get("queues", "") or "")
        return quota_problems(spec, cluster) if spec.strip() else []

    def reset(self, rng: np.random.Generator) -> None:
        self._ready = False
        self._cq_of: IntArray = np.zeros(0, dtype=np.int64)
        self._evicted_at: FloatArray = np.zeros(0)
        self._preempted = 0
        self._borrowed = 0

    def stats(self) -> dict[str, float]:
        """``preempted_to_reclaim``: workloads evicted to give a queue back its nominal
        quota; ``admitted_borrowing``: workloads admitted beyond their queue's quota."""
        return {
            "preempted_to_reclaim": float(self._preempted),
            "admitted_borrowing": float(self._borrowed),
        }

    # ------------------------------------------------------------------ set-up
    def _setup(self, state: State) -> None:
        jobs = state.jobs
        col = jobs.vc if self.queue_by == "vc" else jobs.user
        keys = [str(v) for v in col]
        n_types = len(state.capacity)
        type_names = [t.name for t in state.cluster.types]
        if self.queues.strip():
            cqs = parse_queues(self.queues)
            problems = quota_problems(self.queues, state.cluster)
            if problems:
                raise ValueError("; ".join(problems))
        else:
            names = sorted(set(keys)) or [""]
            k = len(names)
            cap = state.capacity.astype(np.int64)
            cqs = []
            for i, nm in enumerate(names):
                nominal = [int(c // k + (1 if i < c % k else 0)) for c in cap.tolist()]
                cqs.append(
                    ClusterQueueSpec(
                        nm, DEFAULT_COHORT, list(type_names), nominal, [math.inf] * n_types
                    )
                )
        m = len(cqs)
        self._names = [c.name for c in cqs]
        cohorts = sorted({c.cohort for c in cqs if c.cohort})
        # cohort index per queue, -1 for none
        self._cohort = np.array(
            [cohorts.index(c.cohort) if c.cohort else -1 for c in cqs], dtype=np.int64
        )
        self._nominal = np.zeros((m, n_types), dtype=np.int64)
        self._limit = np.zeros((m, n_types))  # nominal + borrowing limit (inf: none)
        self._has = np.zeros((m, n_types), dtype=bool)  # the queue lists the flavour
        self._order: list[list[int]] = []
        for q, c in enumerate(cqs):
            order = []
            for f, nom, bor in zip(c.flavours, c.nominal, c.borrow, strict=True):
                t = state.cluster.type_index(f)
                order.append(t)
                self._nominal[q, t] = nom
                self._has[q, t] = True
                self._limit[q, t] = nom + bor if c.cohort else nom
            self._order.append(order)
        self._cohort_nominal = np.zeros((len(cohorts), n_types), dtype=np.int64)
        for q in range(m):
            if self._cohort[q] >= 0:
                self._cohort_nominal[self._cohort[q]] += self._nominal[q]
        index = {nm: q for q, nm in enumerate(self._names)}
        self._cq_of = np.array([index.get(x, -1) for x in keys], dtype=np.int64)
        self._evicted_at = np.full(len(jobs), np.nan)
        self._borrowed_once = np.zeros(len(jobs), dtype=bool)
        self._evicted = False
        self._prio_f = jobs.priority.astype(np.float64)
        self._nominal_f = self._nominal.astype(np.float64)
        self._order_m = np.full((m, n_types), -1, dtype=np.int64)
        for q, order in enumerate(self._order):
            self._order_m[q, : len(order)] = order
        self._gang = jobs.num_gpus
        cl = state.cluster
        self._node_type = cl.node_type.astype(np.int64)
        self._hist_width = int(cl.node_devices.max(initial=0)) + 1
        self._per_node = np.ones(n_types, dtype=np.int64)
        np.maximum.at(self._per_node, self._node_type, cl.node_devices.astype(np.int64))
        self._hist: FloatArray | None = None
        self._runs_everywhere: BoolArray = np.asarray((state.rate > 0).all(axis=1))
        self._all_easy = bool(self._runs_everywhere.all())
        self._flat_priority = bool((jobs.priority == jobs.priority[0]).all()) if len(jobs) else True
        self._c_row = np.where(self._cohort >= 0, self._cohort, len(self._cohort_nominal))
        # (cohorts + 1, m): which queues each cohort row sums (the last row: no cohort)
        self._in_cohort = np.zeros((len(self._cohort_nominal) + 1, m))
        self._in_cohort[self._c_row, np.arange(m)] = 1.0
        self._arange_m1 = np.arange(m + 1)
        self._ready = True

    def admit(self, state: State, arriving: IntArray) -> BoolArray:
        if not self._ready:
            self._setup(state)
        return np.asarray(self._cq_of[arriving] >= 0, dtype=bool)

    # ------------------------------------------------------------------ schedule
    def schedule(self, state: State) -> Decision:
        if not self._ready:
            self._setup(state)
        jobs = state.jobs
        m = len(self._names)
        n_types = len(state.capacity)
        free = state.free.astype(np.int64).copy()
        reclaim = self.reclaim_within_cohort != "Never"
        queued = state.queued()
        gang = self._gang
        if not reclaim and (
            not len(queued) or int(gang[queued].min()) > int(free.max(initial=0))
        ):  # nothing can start, and nothing is preempted
            return Decision(run=EMPTY)
        running = state.running_jobs()
        running = running[state.alloc_n[running] > 0]
        if not len(queued):
            return self._none(state, running)
        r_cq = self._cq_of[running]
        r_t = state.alloc_type[running]
        r_n = state.alloc_n[running]
        usage = np.asarray(
            np.bincount(r_cq * n_types + r_t, weights=r_n, minlength=m * n_types),
            dtype=np.float64,
        ).reshape(m, n_types)
        # each queue's cohort row, an extra row (never read) for queues without one
        c_row = self._c_row
        c_usage = self._in_cohort @ usage
        keep = np.ones(len(running), dtype=bool)
        prio = jobs.priority
        q_cq = self._cq_of[queued]
        qtime: FloatArray | None = None
        # grouped by queue; in each, priority descending, then queue time, then index
        if self._flat_priority and not self._evicted:
            # every queue time is the submission and `queued` ascends in it: group only
            # (a stable sort of small integers is a radix sort)
            order = np.argsort(q_cq.astype(np.int16 if m < 2**15 else np.int64), kind="stable")
            queued = queued[order]
        else:
            ev = self._evicted_at[queued]
            qt = np.where(np.isnan(ev), jobs.submit_time[queued], ev)
            order = np.lexsort((queued, qt, -prio[queued], q_cq))
            queued, qtime = queued[order], qt[order]
        bounds_a = np.searchsorted(q_cq[order], self._arange_m1)
        gang_q = gang[queued].astype(np.float64)  # inf once taken
        rate = state.rate
        self._state = (running, r_cq, r_t, r_n, keep)
        self._prio = prio
        self._start = state.last_start
        strict = self.queueing == "StrictFIFO"
        simple: BoolArray = self._runs_everywhere
        all_easy = self._all_easy
        node_free = state.node_free
        self._hist = None
        if node_free is not None:
            v = self._hist_width
            self._hist = (
                np.bincount(self._node_type * v + node_free, minlength=n_types * v)
                .reshape(n_types, v)
                .astype(np.float64)
            )
        if not reclaim and self.use_kernel:
            got_j, got_t, got_b = kernels.kueue_admit(
                queued,
                bounds_a,
                gang_q,
                jobs.submit_time[queued] if qtime is None else qtime,
                self._prio_f,
                rate,
                self._order_m,
                self._has,
                self._nominal_f,
                self._limit,
                usage,
                c_row,
                self._cohort_room(c_usage),
                free.astype(np.float64),
                strict,
                np.zeros((n_types, 1)) if self._hist is None else self._hist,
                self._per_node,
                self._hist is not None,
            )
            new = got_b & ~self._borrowed_once[got_j]
            self._borrowed_once[got_j[new]] = True
            self._borrowed += int(new.sum())
            return Decision(run=got_j, types=got_t)
        bounds = bounds_a.tolist()
        pm: list[FloatArray | None] = [None] * m  # per queue: running min of untaken gangs
        heads = [0] * m  # per queue: first untaken position
        nonempty = [q for q in range(m) if bounds[q + 1] > bounds[q]]
        qmin = np.full(m, np.inf)
        qmin[nonempty] = np.minimum.reduceat(gang_q, [bounds[q] for q in nonempty])
        starts: list[int] = []
        types: list[int] = []
        while True:
            # what a job of each queue may take on each flavour now (-1: not its flavour)
            cap = np.minimum(free[None, :].astype(np.float64), self._limit - usage)
            cap = np.minimum(cap, (self._cohort_room(c_usage))[c_row])
            cap = np.where(self._has, cap, -1.0)
            maxcap_a = cap.max(axis=1)
            maxcap = maxcap_a.tolist()
            best: tuple[Any, ...] | None = None
            look = nonempty if reclaim else np.flatnonzero(qmin <= maxcap_a).tolist()
            for q in look:
                lo, hi = bounds[q], bounds[q + 1]
                if heads[q] >= hi - lo:
                    continue
                p = pm[q]
                if p is None:
                    p = pm[q] = np.minimum.accumulate(gang_q[lo:hi])
                easy = all_easy or bool(simple[queued[lo:hi]].all())
                cand = self._candidate(
                    q,
                    queued[lo:hi],
                    gang_q[lo:hi],
                    p,
                    heads[q],
                    cap[q],
                    maxcap[q],
                    easy,
                    rate,
                    strict,
                    reclaim,
                    usage,
                    c_usage,
                    free,
                )
                if cand is None:
                    continue
                i, t, victims = cand
                j = int(queued[lo + i])
                borrows = bool(not victims and usage[q, t] + gang_q[lo + i] > self._nominal[q, t])
                qt_j = float(jobs.submit_time[j] if qtime is None else qtime[lo + i])
                key = (borrows, -float(prio[j]), qt_j, j)
                if best is None or key < best[0]:
                    best = (key, q, i, t, victims)
            if best is None:
                break
            _, q, i, t, victims = best
            lo = bounds[q]
            j = int(queued[lo + i])
            g = int(gang_q[lo + i])
            for v in victims:
                keep[v] = False
                vq, vn = int(r_cq[v]), int(r_n[v])
                usage[vq, t] -= vn
                c_usage[c_row[vq], t] -= vn
                free[t] += vn
                self._evicted_at[running[v]] = state.now
                self._evicted = True
            self._preempted += len(victims)
            if usage[q, t] + g > self._nominal[q, t] and not self._borrowed_once[j]:
                self._borrowed_once[j] = True
                self._borrowed += 1
            usage[q, t] += g
            c_usage[c_row[q], t] += g
            free[t] -= g
            self._pods(t, g, commit=True)
            gang_q[lo + i] = np.inf
            hi = bounds[q + 1]
            pm[q] = np.minimum.accumulate(gang_q[lo:hi])
            qmin[q] = pm[q][-1]
            while heads[q] < hi - lo and gang_q[lo + heads[q]] == np.inf:
                heads[q] += 1
            starts.append(j)
            types.append(t)
        if not self.preemptive:
            return Decision(
                run=np.array(starts, dtype=np.int64), types=np.array(types, dtype=np.int64)
            )
        kept = running[keep]
        run = np.concatenate([kept, np.array(starts, dtype=np.int64)])
        typ = np.concatenate([state.alloc_type[kept], np.array(types, dtype=np.int64)])
        return Decision(run=run, types=typ)

    def _none(self, state: State, running: IntArray) -> Decision:
        """The decision that starts and stops nothing."""
        if not self.preemptive:
            return Decision(run=EMPTY)
        return Decision(run=running, types=state.alloc_type[running])

    def _cohort_room(self, c_usage: FloatArray) -> FloatArray:
        """(cohorts + 1, n_types): devices each cohort can still admit of each flavour (the
        last row, for queues without a cohort, unlimited)."""
        room = np.full(c_usage.shape, np.inf)
        room[:-1] = self._cohort_nominal - c_usage[:-1]
        return room

    def _candidate(
        self,
        q: int,
        pend: IntArray,
        gang: FloatArray,
        pm: FloatArray,
        head: int,
        cap: FloatArray,
        maxcap: float,
        easy: bool,
        rate: FloatArray,
        strict: bool,
        reclaim: bool,
        usage: FloatArray,
        c_usage: FloatArray,
        free: IntArray,
    ) -> tuple[int, int, list[int]] | None:
        """Queue ``q``'s candidate: (position in ``pend``, flavour, victims), given what a job
        of it may take on each flavour now (``cap``, ``maxcap`` its largest) and its
        pending jobs' gangs (``gang``, ``inf`` once taken; ``pm`` their running minimum)."""
        order = self._order[q]
        j = int(pend[head])
        g = gang[head]
        for t in order:
            if g <= cap[t] and rate[j, t] > 0 and self._pods(t, g):
                return head, t, []
        if reclaim:
            got = self._reclaim(q, j, usage, c_usage, free, rate)
            if got is not None:
                return head, got[0], got[1]
        if strict or pm[-1] > maxcap:
            return None
        if easy and self._hist is None:  # the first job whose gang fits the most it may take
            i = int(np.searchsorted(-pm, -maxcap, side="left"))
            t = next(t for t in order if gang[i] <= cap[t])
            return i, t, []
        ok = (gang[:, None] <= cap[None, :]) & (rate[pend] > 0)
        for i in np.flatnonzero(ok.any(axis=1)).tolist():
            for t in order:
                if ok[i, t] and self._pods(t, gang[i]):
                    return i, t, []
        return None

    def _pods(self, t: int, g: float, commit: bool = False) -> bool:
        """Whether the kube-scheduler's filter finds a node for each pod of a gang of ``g``
        on type ``t`` now (:func:`clustersim.kernels.pods_fit`); always without the free
        devices per node (a state view built without an engine)."""
        if self._hist is None:
            return True
        return bool(kernels.pods_fit(self._hist[t], int(self._per_node[t]), float(g), commit))

    def _reclaim(
        self,
        q: int,
        j: int,
        usage: FloatArray,
        c_usage: FloatArray,
        free: IntArray,
        rate: FloatArray,
    ) -> tuple[int, list[int]] | None:
        """Preemption to give queue ``q`` back its nominal quota for job ``j``: (flavour,
        victims as positions in the running-jobs array of this decision) or ``None``."""
        c = int(self._cohort[q])
        if c < 0:
            return None
        running, r_cq, r_t, r_n, keep = self._state
        g = int(self._gang[j])
        prio = self._prio
        for t in self._order[q]:
            if rate[j, t] <= 0 or usage[q, t] + g > self._nominal[q, t]:
                continue  # only what the queue's nominal quota holds is reclaimed
            cand = np.flatnonzero(keep & (r_t == t) & (r_cq != q) & (self._cohort[r_cq] == c))
            if self.reclaim_within_cohort == "LowerPriority":
                cand = cand[prio[running[cand]] < prio[j]]
            if not len(cand):
                continue
            # lowest priority first, then the most recently admitted first
            cand = cand[
                np.lexsort((-running[cand], -self._start[running[cand]], prio[running[cand]]))
            ]
            u = usage[:, t].copy()
            cu = int(c_usage[c, t])
            fr = int(free[t])
            victims: list[int] = []

            cap_c = int(self._cohort_nominal[c, t])
            for v in cand.tolist():
                if cu + g <= cap_c and fr >= g:
                    break
                vq = int(r_cq[v])
                if u[vq] <= self._nominal[vq, t]:
                    continue  # its queue no longer borrows
                n = int(r_n[v])
                u[vq] -= n
                cu -= n
                fr += n
                victims.append(v)
            if cu + g > cap_c or fr < g:
                continue
            # give back the victims not needed, last chosen first
            for v in list(reversed(victims)):
                n = int(r_n[v])
                if cu + n + g <= cap_c and fr - n >= g:
                    victims.remove(v)
                    cu += n
                    fr -= n
            return t, victims
        return None
