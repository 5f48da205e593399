"""YARN's CapacityScheduler: hierarchical queues with guaranteed and maximum capacity, and
preemption to restore guarantees (``yarn-capacity``).

Source: Apache Hadoop 3.3 documentation, "Hadoop: Capacity Scheduler" (queue properties
``capacity``, ``maximum-capacity``; the FIFO ordering policy of leaf queues; queues served in
order of their used capacity relative to their guarantee) and the
``ProportionalCapacityPreemptionPolicy`` options of ``yarn-site.xml``
(``yarn.resourcemanager.monitor.capacity.preemption.max_wait_before_kill``, 15 s; preemption
only from queues above their guarantee; newest containers first). Written from the manuals, in
our own words.

The rules:

* **Queues.** ``queues`` lists the leaf and parent queues as ``path=capacity/maximum`` (percent
  of the parent), e.g. ``"eng=60/100,eng.ml=70/100,eng.web=30/60,research=40/100"``: ``eng``
  has 60 % of the cluster guaranteed and may grow to all of it; ``eng.ml`` 70 % of ``eng``'s.
  Siblings' capacities sum to 100 (YARN refuses a configuration where they do not). A queue's
  absolute guarantee and maximum are the products along its path, in devices of the whole
  cluster (every accelerator type counted alike, as YARN counts a resource). Empty (the
  default): one leaf per virtual cluster of the trace (the job table's ``vc``), equal
  guarantees, maximum 100 %.
* **Submission.** A job goes to the leaf queue named as its ``vc`` (the leaf's last path
  component); a job whose queue does not exist is refused at submission (YARN rejects the
  application), and reported as rejected.
* **Allocation** at every arrival, completion and wake-up: while devices are free, the
  scheduler walks down from the root choosing, at each level, the child with the lowest used
  capacity relative to its guarantee (ties: the order of ``queues``) among those with a
  pending job that fits — in free devices of one type where it runs, and within the queue's
  and its parents' maximum — and starts that leaf's first pending job (FIFO: trace
  ``priority`` descending, then submission). A queue may use more than its guarantee while
  devices are free (elasticity) up to its maximum.
* **Preemption** (``preemption=True``): a leaf queue below its guarantee whose first pending
  job would not take it past the guarantee, and that does not fit in the free devices, is
  *starved*; once it has been starved for ``wait_s`` (``max_wait_before_kill``), jobs of
  leaves above their guarantee are suspended — from the leaf most over its guarantee (used /
  guarantee), newest start first, each only while its leaf is still above its guarantee —
  until the job fits on a type where it runs (types tried fastest first); the starved job
  starts in the same decision. Suspended jobs resume later (the engine's
  checkpoint/restore delay).

Implementation: the grouping of pending jobs by leaf and the allocation descent run in
compiled kernels (:func:`clustersim.kernels.fifo_groups`, ``yarn_allocate``), the preemption
in Python; ``YarnCapacity.use_kernel = False`` groups and descends in numpy and Python, the
reference they are tested against (``tests/test_yarn_capacity.py``: same finish times, bit
for bit, on random traces).

Departures, and why:

* Whole jobs are the unit (a gang of GPU containers), not single containers: preempting one
  container of a synchronous job stops the job.
* No user limits (``minimum-user-limit-percent``, ``user-limit-factor``), no application
  priorities across queues, no node labels, no per-round preemption limits
  (``total_preemption_per_round``, ``natural_termination_factor``), no reservations of nodes
  for large containers: the head of a leaf that does not fit blocks only its leaf.
* A queue's parents' maximum limits it; parents' guarantees matter only through the order
  of service (the preemption test is on leaves).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Annotated, Any, ClassVar

import numpy as np
import numpy.typing as npt

from clustersim import kernels
from scheduling.base import EMPTY, Decision, Policy, State
from scheduling.params import NON_NEGATIVE

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]


DEFAULT_QUEUE = "default"


def _vc_name(vc: object) -> str:
    """The leaf queue a job of virtual cluster ``vc`` is submitted to (no VC: ``default``)."""
    name = str(vc)
    return name if name else DEFAULT_QUEUE


@dataclass
class Queue:
    """One queue of the tree: guarantee and maximum as fractions of the cluster."""

    path: str
    capacity: float  # of the parent, 0..1
    maximum: float  # of the parent, 0..1
    abs_capacity: float = 0.0
    abs_maximum: float = 0.0
    children: list[Queue] = field(default_factory=list)
    parent: Queue | None = None
    leaf: int = -1  # index among the leaves, -1 for a parent
    under: list[Queue] | None = field(default=None, repr=False, compare=False)  # its leaves


def parse_queues(spec: str, vcs: list[str] | None = None) -> tuple[Queue, list[Queue]]:
    """The queue tree of ``spec`` (module doc) and its leaves in order; ``ValueError`` naming
    ``queues`` on a bad entry. An empty spec gives one equal leaf per name of ``vcs``."""
    entries: list[tuple[str, float, float]] = []
    if not spec.strip():  # one leaf per virtual cluster, whatever its name holds
        names = sorted({_vc_name(v) for v in vcs or []}) or [DEFAULT_QUEUE]
        root = Queue("", 1.0, 1.0, 1.0, 1.0)
        for k, name in enumerate(names):
            share = 1.0 / len(names)
            q = Queue(name, share, 1.0, share, 1.0, parent=root, leaf=k)
            root.children.append(q)
        return root, list(root.children)
    for k, raw in enumerate(spec.split(",")):
        item = raw.strip()
        where = f"queues: entry {k + 1} ({item!r})"
        if "=" not in item:
            raise ValueError(f"{where}: want path=capacity/maximum")
        path, _, nums = item.partition("=")
        path = path.strip()
        parts = nums.split("/")
        if not path or any(not p for p in path.split(".")) or len(parts) > 2:
            raise ValueError(f"{where}: want path=capacity/maximum")
        try:
            cap = float(parts[0])
            mx = float(parts[1]) if len(parts) == 2 else 100.0
        except ValueError:
            raise ValueError(f"{where}: capacity and maximum are percentages") from None
        if not (0.0 <= cap <= 100.0) or not (0.0 < mx <= 100.0) or mx < cap:
            raise ValueError(f"{where}: want 0 <= capacity <= maximum <= 100, maximum > 0")
        entries.append((path, cap, mx))
    root = Queue("", 1.0, 1.0, 1.0, 1.0)
    by_path = {"": root}
    for path, cap, mx in entries:
        if path in by_path:
            raise ValueError(f"queues: {path!r} is listed twice")
        parent_path = path.rpartition(".")[0]
        parent = by_path.get(parent_path)
        if parent is None:
            raise ValueError(f"queues: {path!r} comes before its parent {parent_path!r}")
        q = Queue(path, cap / 100.0, mx / 100.0, parent=parent)
        q.abs_capacity = parent.abs_capacity * q.capacity
        q.abs_maximum = parent.abs_maximum * q.maximum
        parent.children.append(q)
        by_path[path] = q
    leaves: list[Queue] = []
    for q in by_path.values():
        if q.children:
            total = sum(c.capacity for c in q.children)
            if abs(total - 1.0) > 1e-9:
                name = q.path or "the root"
                raise ValueError(
                    f"queues: the capacities under {name} sum to {100 * total:g} %, not 100 %"
                )
        elif q is not root:
            q.leaf = len(leaves)
            leaves.append(q)
    names = [q.path.rpartition(".")[2] for q in leaves]
    if len(set(names)) < len(names):
        raise ValueError("queues: two leaf queues have the same name")
    return root, leaves


class YarnCapacity(Policy):
    """YARN's CapacityScheduler (module doc: the rules and where they depart from Hadoop 3.3).

    Parameters
    ----------
    queues
        ``path=capacity/maximum`` entries, comma-separated (percent of the parent); empty:
        one equal leaf per virtual cluster of the trace.
    preemption
        Suspend jobs of queues above their guarantee for a starved queue.
    wait_s
        How long a queue is starved before jobs are preempted for it
        (``max_wait_before_kill``), s.
    """

    name = "yarn-capacity"
    citation = (
        "Apache Hadoop 3.3 CapacityScheduler and ProportionalCapacityPreemptionPolicy "
        "(Hadoop documentation); Vavilapalli et al., Apache Hadoop YARN, SoCC'13"
    )
    preemptive = True
    #: Group the pending jobs by leaf in the compiled kernel
    #: (:func:`clustersim.kernels.fifo_groups`); ``False``: in numpy and Python (the
    #: reference the kernel is tested against).
    use_kernel: ClassVar[bool] = True

    def __init__(
        self,
        queues: str = "",
        preemption: bool = True,
        wait_s: Annotated[float, NON_NEGATIVE] = 15.0,
    ) -> None:
        self.queues = queues
        self.preemption = preemption
        self.wait_s = wait_s
        if queues.strip():
            parse_queues(queues)  # a bad spec is refused when the policy is built

    def reset(self, rng: np.random.Generator) -> None:
        self._ready = False
        self._leaf_of: IntArray = EMPTY
        self._leaves: list[Queue] = []
        self._root: Queue | None = None
        self._starved_since: dict[int, float] = {}
        self._bounds_for = -1.0  # the cluster's devices `_guarantee`, `_maximum` are for
        self._guarantee: npt.NDArray[np.float64] = np.zeros(0)
        self._maximum: npt.NDArray[np.float64] = np.zeros(0)
        self._preempted = 0

    def stats(self) -> dict[str, float]:
        """``preempted_for_guarantee``: jobs suspended to restore a queue's guarantee."""
        return {"preempted_for_guarantee": float(self._preempted)}

    def _setup(self, state: State) -> None:
        vcs = [_vc_name(v) for v in state.jobs.vc]
        self._root, self._leaves = parse_queues(self.queues, vcs)
        index = {q.path.rpartition(".")[2]: q.leaf for q in self._leaves}
        if not self.queues.strip():  # the default leaves are named as the VCs, dots and all
            index = {q.path: q.leaf for q in self._leaves}
        self._leaf_of = np.array([index.get(v, -1) for v in vcs], dtype=np.int64)
        self._tree = _tree_arrays(self._root)
        self._ready = True

    def admit(self, state: State, arriving: IntArray) -> BoolArray:
        if not self._ready:
            self._setup(state)
        return np.asarray(self._leaf_of[arriving] >= 0, dtype=bool)

    # ------------------------------------------------------------------ schedule
    def schedule(self, state: State) -> Decision:
        if not self._ready:
            self._setup(state)
        assert self._root is not None
        jobs = state.jobs
        gang = jobs.num_gpus
        total = float(state.capacity.sum())
        leaves = self._leaves
        n_leaves = len(leaves)
        if total != self._bounds_for:  # the leaves' guarantees and maxima, in devices
            self._guarantee = np.array([q.abs_capacity * total for q in leaves])
            self._maximum = np.array([q.abs_maximum * total for q in leaves])
            self._bounds_for = total
        guarantee, maximum = self._guarantee, self._maximum
        running = state.running_jobs()
        free = state.free.astype(np.int64)  # a copy
        # each leaf's pending jobs, FIFO: priority descending, then submission (the job
        # index: the job table is sorted by submission)
        pending: list[list[int]] = []
        if self.use_kernel:  # (after `running_jobs`, as the numpy path: the same order)
            order, bounds, first, running, leaf_r, used = kernels.fifo_groups(
                state.active,
                state.running,
                running,
                state.alloc_n,
                self._leaf_of,
                jobs.priority,
                n_leaves,
            )
            firsts = first.tolist()
        else:  # the reference the kernel is tested against
            running = running[state.alloc_n[running] > 0]
            leaf_r = self._leaf_of[running]
            used = np.bincount(leaf_r, weights=state.alloc_n[running], minlength=n_leaves).astype(
                np.float64
            )
            queued = state.queued()
            queued = queued[np.lexsort((queued, -jobs.priority[queued]))]
            pending = [[] for _ in range(n_leaves)]
            for j, q in zip(queued.tolist(), self._leaf_of[queued].tolist(), strict=True):
                pending[q].append(j)
            firsts = [p[0] if p else -1 for p in pending]
        heads = [0] * n_leaves
        keep = np.ones(len(running), dtype=bool)
        wake = math.inf
        if self.preemption:
            wake = self._preempt(state, running, leaf_r, used, guarantee, free, firsts, keep)
        # allocation: down the tree to the least-served child with a job that fits
        rate = state.rate
        if self.use_kernel:
            leaf, parent, top, c_ptr, c_idx, l_ptr, l_idx = self._tree
            started, started_t = kernels.yarn_allocate(
                order,
                bounds,
                leaf,
                parent,
                top,
                c_ptr,
                c_idx,
                l_ptr,
                l_idx,
                used,
                guarantee,
                maximum,
                free,
                rate,
                gang,
            )
            kept = running[keep] if not keep.all() else running
            return Decision(
                run=np.concatenate([kept, started]),
                types=np.concatenate([state.alloc_type[kept], started_t]).astype(np.int64),
                wake_at=None if wake == math.inf else wake,
            )
        run: list[int] = running[keep].tolist()
        typ: list[int] = state.alloc_type[running[keep]].tolist()
        while free.max(initial=0) > 0:
            got = self._descend(
                self._root, used, guarantee, maximum, free, pending, heads, rate, gang
            )
            if got is None:
                break
            q, j, t = got
            g = int(gang[j])
            free[t] -= g
            used[q] += g
            heads[q] += 1
            run.append(j)
            typ.append(t)
        return Decision(
            run=np.array(run, dtype=np.int64),
            types=np.array(typ, dtype=np.int64),
            wake_at=None if wake == math.inf else wake,
        )

    def _fit(self, j: int, g: int, free: IntArray, rate: npt.NDArray[np.float64]) -> int:
        """The fastest type with ``g`` free devices where ``j`` runs, or -1."""
        ok = (rate[j] > 0) & (free >= g)
        return int(np.argmax(np.where(ok, rate[j], -1.0))) if ok.any() else -1

    def _descend(
        self,
        node: Queue,
        used: npt.NDArray[np.float64],
        guarantee: npt.NDArray[np.float64],
        maximum: npt.NDArray[np.float64],
        free: IntArray,
        pending: list[list[int]],
        heads: list[int],
        rate: npt.NDArray[np.float64],
        gang: IntArray,
    ) -> tuple[int, int, int] | None:
        """(leaf, job, type) of the next start under ``node``, or ``None``."""
        if node.leaf >= 0:
            q = node.leaf
            if heads[q] >= len(pending[q]):
                return None
            j = int(pending[q][heads[q]])
            g = int(gang[j])
            if used[q] + g > maximum[q] + 1e-9 or not self._under_parents(node, used, g, free):
                return None
            t = self._fit(j, g, free, rate)
            return None if t < 0 else (q, j, t)
        order = sorted(
            range(len(node.children)),
            key=lambda k: (self._ratio(node.children[k], used, guarantee), k),
        )
        for k in order:
            got = self._descend(
                node.children[k], used, guarantee, maximum, free, pending, heads, rate, gang
            )
            if got is not None:
                return got
        return None

    def _ratio(
        self, q: Queue, used: npt.NDArray[np.float64], guarantee: npt.NDArray[np.float64]
    ) -> float:
        """Used over guaranteed capacity of queue ``q`` (its leaves summed)."""
        ls = _leaves_of(q)
        u = float(sum(used[x.leaf] for x in ls))
        g = float(sum(guarantee[x.leaf] for x in ls))
        if g <= 0:
            return math.inf if u > 0 else 0.0
        return u / g

    def _under_parents(
        self, q: Queue, used: npt.NDArray[np.float64], g: int, free: IntArray
    ) -> bool:
        """Whether every parent of leaf ``q`` stays within its maximum with ``g`` more."""
        total = float(free.sum()) + float(used.sum())
        p = q.parent
        while p is not None and p.path:
            u = float(sum(used[x.leaf] for x in _leaves_of(p)))
            if u + g > p.abs_maximum * total + 1e-9:
                return False
            p = p.parent
        return True

    def _preempt(
        self,
        state: State,
        running: IntArray,
        leaf_r: IntArray,
        used: npt.NDArray[np.float64],
        guarantee: npt.NDArray[np.float64],
        free: IntArray,
        firsts: list[int],
        keep: BoolArray,
    ) -> float:
        """Suspend jobs (``keep[i] = False``) for starved leaves that have waited ``wait_s``
        (``firsts``: each leaf's first pending job, -1 for none); updates ``used`` and
        ``free``. Returns when the next starved leaf's wait ends."""
        now = state.now
        gang = state.jobs.num_gpus
        rate = state.rate
        wake = math.inf
        starved_now: set[int] = set()
        below = zip(firsts, used.tolist(), guarantee.tolist(), strict=True)
        if not any(j >= 0 and u < c for j, u, c in below):
            # no leaf below its guarantee has a pending job: none is starved (and `used`
            # only changes below when one is)
            self._starved_since.clear()
            return wake
        # the leaves with a pending job by used / guarantee now (a leaf without one is
        # never starved: leaving it out keeps the others' order)
        order = sorted(
            (q for q, j in enumerate(firsts) if j >= 0),
            key=lambda q: (float(used[q]) / max(float(guarantee[q]), 1e-12), q),
        )
        for q in order:
            if used[q] >= guarantee[q]:
                continue
            j = firsts[q]
            g = int(gang[j])
            if used[q] + g > guarantee[q] + 1e-9 or self._fit(j, g, free, rate) >= 0:
                continue  # preemption restores guarantees only; or it fits already
            starved_now.add(q)
            since = self._starved_since.setdefault(q, now)
            if now < since + self.wait_s:
                wake = min(wake, since + self.wait_s)
                continue
            if self._take_for(state, j, g, q, running, leaf_r, used, guarantee, free, keep):
                self._starved_since.pop(q, None)
                starved_now.discard(q)
        for q in list(self._starved_since):
            if q not in starved_now:
                del self._starved_since[q]
        return wake

    def _take_for(
        self,
        state: State,
        j: int,
        g: int,
        q: int,
        running: IntArray,
        leaf_r: IntArray,
        used: npt.NDArray[np.float64],
        guarantee: npt.NDArray[np.float64],
        free: IntArray,
        keep: BoolArray,
    ) -> bool:
        """Suspend jobs of over-guarantee leaves so that job ``j`` (``g`` devices) fits on a
        type where it runs (fastest first); ``False`` when no type can be cleared."""
        rate = state.rate
        types = state.alloc_type[running]
        starts = state.last_start[running]
        for t in np.argsort(-rate[j], kind="stable").tolist():
            if rate[j, t] <= 0:
                break
            need = g - int(free[t])
            u = used.copy()
            chosen: list[int] = []
            taken = np.zeros(len(keep), dtype=bool)
            while need > 0:
                over = [v for v in range(len(u)) if v != q and u[v] > guarantee[v] + 1e-9]
                if not over:
                    break
                # the leaf most over its guarantee, then its newest job on this type
                over.sort(key=lambda v: (-float(u[v]) / max(float(guarantee[v]), 1e-12), v))
                picked = -1
                for v in over:
                    cand = np.flatnonzero(keep & (leaf_r == v) & (types == t) & ~taken)
                    if len(cand):
                        picked = int(cand[np.lexsort((-running[cand], -starts[cand]))[0]])
                        break
                if picked < 0:
                    break
                chosen.append(picked)
                taken[picked] = True
                n = int(state.alloc_n[running[picked]])
                u[leaf_r[picked]] -= n
                need -= n
            if need <= 0:
                for i in chosen:
                    keep[i] = False
                    n = int(state.alloc_n[running[i]])
                    used[leaf_r[i]] -= n
                    free[t] += n
                self._preempted += len(chosen)
                return True
        return False


def _tree_arrays(root: Queue) -> tuple[npt.NDArray[Any], ...]:
    """The queue tree as :func:`clustersim.kernels.yarn_allocate` takes it: per node (the
    root first, then depth first) its leaf index, parent, absolute maximum, children and
    leaves (CSR)."""
    nodes: list[Queue] = []
    stack = [root]
    while stack:
        q = stack.pop()
        nodes.append(q)
        stack.extend(reversed(q.children))
    at = {id(q): k for k, q in enumerate(nodes)}
    leaf = np.array([q.leaf for q in nodes], dtype=np.int64)
    parent = np.array([at[id(q.parent)] if q.parent else -1 for q in nodes], dtype=np.int64)
    top = np.array([q.abs_maximum for q in nodes], dtype=np.float64)
    kids = [[at[id(c)] for c in q.children] for q in nodes]
    under = [[x.leaf for x in _leaves_of(q)] for q in nodes]
    c_ptr = np.cumsum([0] + [len(k) for k in kids]).astype(np.int64)
    l_ptr = np.cumsum([0] + [len(u) for u in under]).astype(np.int64)
    c_idx = np.array([c for k in kids for c in k], dtype=np.int64)
    l_idx = np.array([x for u in under for x in u], dtype=np.int64)
    return leaf, parent, top, c_ptr, c_idx, l_ptr, l_idx


def _leaves_of(q: Queue) -> list[Queue]:
    """The leaves under ``q``, depth first (computed once per queue: the tree is fixed
    once parsed)."""
    if q.under is None:
        if q.leaf >= 0:
            q.under = [q]
        else:
            q.under = [x for c in q.children for x in _leaves_of(c)]
    return q.under
