"""Compiled inner loops of the engine, its placements and one policy.

At every event of a full-trace run the engine does a few small things many times: walk a
preemptive policy's priority list to see which jobs fit (:func:`plan_preemptive`), bring the
progress of running jobs up to date (:func:`sync_running`), find nodes for a gang
(:func:`best_fit_node`, :func:`take_largest_first`, :func:`take_nodes`, :func:`link_gbs`),
and keep the books of every start and stop: counters, devices, stints, the event heaps
(:func:`decide_preemptive`, :func:`reserve_and_start`, :func:`complete_due`, :func:`stop_jobs`,
:func:`start_jobs`, :func:`heap_push` and their helpers). Done with numpy or Python objects,
each is a handful of small operations whose fixed cost dominates, once per job started or
stopped; compiled by numba, a whole decision is one call, so a run costs in proportion to
the jobs it moves, not to Python per start, stop or event. Tiresias's queues
(:func:`tiresias_order`, which keeps them as linked lists in the order its simulator does)
a pass of Gavel's rounds (:func:`gavel_pass`: priorities, ranking and greedy placement),
a quantum's selection of Gandiva-Fair's stride scheduling (:func:`stride_select`) and the
Newton iterations of the centre tie-breaks of Gavel's LP policies in compatibility mode
(:func:`face_centre`, :func:`ftf_centre_newton`: a few dozen variables, a few hundred
recomputations a run, where numpy's per-call costs were most of a run's time) and a dense
primal simplex for the LP policies' small LPs (:func:`water_fill`, :func:`maxmin_simplex`,
:func:`lp_dense`: a few dozen rows, where HiGHS's fixed costs per solve dominated) are the
policy-side loops here. Those two are slow as plain Python at any run size, so the policies
that call them ask for the compiled kernels from the start
(:attr:`scheduling.base.Policy.compiled_kernels`). Themis's auctions (:func:`themis_apps`,
:func:`themis_bundles`, :func:`themis_values`, :func:`pa_exact`: its per-app finish-time
figures, the bidders' menus and valuations, and the exact auction's enumeration, a few
dozen numpy calls per auction before) are at the end.

The kernels are plain Python over numpy arrays, and every one carries the :func:`_compiled`
decorator, which makes it a :class:`Kernel`: calling it calls either its plain-Python source
or numba's compiled version of that source, with the same results. Which one is a process-wide
switch, :func:`use_compiled`. A process starts with the plain-Python kernels and without
importing numba: importing numba and loading the compiled code from its cache costs a few
tenths of a second, more than a small simulation takes in plain Python.
:func:`clustersim.engine.simulate` switches to the compiled kernels (:func:`choose`) when a run
has at least :data:`COMPILE_FROM_JOBS` jobs, or once it has processed
:data:`COMPILE_AFTER_EVENTS` event batches; once switched, the process keeps them (that cost is
paid). Compiled code is cached next to this module or in ``NUMBA_CACHE_DIR``, and
:func:`clustersim.engine.warm_up` fills the cache at install time. Without numba the kernels
stay plain Python, slower but with the same results, so the library still works with numpy
alone. The tests check every kernel against a naive reference and against the plain-Python run
of its own source, and whole simulations with and without compilation.
"""

from __future__ import annotations

import math
import threading
import types
from collections.abc import Callable
from importlib.util import find_spec
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

F = TypeVar("F", bound=Callable[..., Any])

#: numba is installed, so :func:`use_compiled` can compile the kernels.
COMPILED = find_spec("numba") is not None
#: Runs of at least this many jobs use the compiled kernels from the start (see :func:`choose`).
COMPILE_FROM_JOBS = 1000
#: Runs of fewer jobs switch to them after this many event batches.
COMPILE_AFTER_EVENTS = 2000
# Importing numba and loading the kernels from its cache takes about 0.4 s. On the first N
# jobs of the Philly trace, plain-Python kernels cost FIFO almost nothing, but SRTF and
# Tiresias about 0.5 ms per job more (0.1-0.3 ms per event batch) from a few hundred jobs on,
# and LAS, whose quantum makes ~16,000 event batches even of 60 jobs, 0.6 s more at any size.
# Jobs alone do not tell which run pays off; jobs and events together bound the loss: a small
# run that turns out long switches after 2,000 event batches (a few tenths of a second).


class Kernel:
    """One kernel: its plain-Python source and, once :func:`use_compiled` has loaded it,
    numba's compiled version. Calling the kernel calls the one in use, directly (each kernel
    has its own subclass whose ``__call__`` is that function, so a call costs no more than a
    call of the function itself).

    Attributes
    ----------
    py_func
        The plain-Python source (as numba's dispatchers call it).
    """

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.py_func = fn
        self.__name__ = fn.__name__
        self.__qualname__ = fn.__qualname__
        self.__doc__ = fn.__doc__
        self.__wrapped__ = fn
        self.dispatcher: Any = None  # numba's, once loaded

    __call__: Callable[..., Any]

    @property
    def signatures(self) -> list[Any]:
        """The argument types numba has compiled (or loaded) the kernel for; empty while it
        has not (or when numba is missing)."""
        return list(self.dispatcher.signatures) if self.dispatcher is not None else []

    def __repr__(self) -> str:
        return f"<kernel {self.__name__}>"


_KERNELS: dict[str, Kernel] = {}
_lock = threading.Lock()
_loaded = False
_in_use = False


def _compiled(fn: F) -> F:
    """Make ``fn`` a :class:`Kernel` (plain Python until :func:`use_compiled`)."""
    cls = type(fn.__name__, (Kernel,), {"__call__": staticmethod(fn), "__module__": __name__})
    kernel: Any = cls(fn)
    _KERNELS[fn.__name__] = kernel
    return kernel  # typed as F: it is called like the function


def kernels() -> dict[str, Kernel]:
    """Every kernel of this module by name."""
    return dict(_KERNELS)


def compiled_in_use() -> bool:
    """Whether calling a kernel calls numba's compiled version."""
    return _in_use


def use_compiled(on: bool = True) -> bool:
    """Switch every kernel to its compiled version (importing numba the first time), or
    back to plain Python with ``on=False`` (for comparisons; the results are the same).

    Thread-safe; a simulation running meanwhile in another thread is unaffected, apart from
    its speed.

    Returns
    -------
    bool
        Whether the compiled kernels are in use now (``False`` without numba).
    """
    global _loaded, _in_use
    with _lock:
        if on and not _loaded:
            _load()
            _loaded = True
        for kernel in _KERNELS.values():
            impl = kernel.dispatcher if on and kernel.dispatcher is not None else kernel.py_func
            type(kernel).__call__ = staticmethod(impl)  # type: ignore[method-assign]
        _in_use = on and all(k.dispatcher is not None for k in _KERNELS.values())
        return _in_use


def choose(n_jobs: int, events: int = 0, force: bool = False) -> bool:
    """Use the compiled kernels from now on if a run of ``n_jobs`` jobs that has processed
    ``events`` event batches is worth it: at least :data:`COMPILE_FROM_JOBS` jobs or
    :data:`COMPILE_AFTER_EVENTS` event batches, or ``force`` (a policy whose kernels are slow
    as plain Python at any size). A process that has switched keeps them.

    Returns
    -------
    bool
        Whether the compiled kernels are in use.
    """
    if not _in_use and (force or n_jobs >= COMPILE_FROM_JOBS or events >= COMPILE_AFTER_EVENTS):
        return use_compiled()
    return _in_use


def _load() -> None:
    """Give every kernel numba's dispatcher of its source (nothing without numba).

    A dispatcher compiles a copy of the kernel's function whose globals name the other
    kernels' dispatchers, so that a kernel calling another (``plan_preemptive`` calls
    ``fastest_type``) calls compiled code, as numba needs. The copy has the source's code
    object, hence the same on-disk cache entry.
    """
    try:
        import numba
    except ImportError:  # pragma: no cover - the product pins numba; the library does not need it
        return
    namespace = dict(globals())
    for name, kernel in _KERNELS.items():
        fn = kernel.py_func
        copy = types.FunctionType(fn.__code__, namespace, fn.__name__, fn.__defaults__)
        copy.__qualname__ = fn.__qualname__
        copy.__doc__ = fn.__doc__
        try:
            dispatcher = numba.njit(cache=True, nogil=True)(copy)
        except RuntimeError:  # no writable cache directory anywhere: compile in each process
            dispatcher = numba.njit(cache=False, nogil=True)(copy)
        namespace[name] = kernel.dispatcher = dispatcher


IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]
Int8Array = npt.NDArray[np.int8]

BAD_NONE = 0
BAD_INACTIVE = 1  # a job chosen to run is not active
BAD_TWICE = 2  # a job is listed twice


@_compiled
def fastest_type(rate: FloatArray, j: int, free: IntArray, nd: int) -> int:
    """The type with ``nd`` devices free on which job ``j`` runs fastest (lowest index among
    ties), or -1 when there is none; ``rate`` is (n, n_types), 0 where ``j`` cannot run."""
    t = -1
    best = 0.0
    for k in range(len(free)):
        r = rate[j, k]
        if r > best and free[k] >= nd:
            best = r
            t = k
    return t


@_compiled
def plan_preemptive(
    run: IntArray,
    nds: IntArray,
    types: IntArray,
    gang: IntArray,
    rate: FloatArray,
    left: IntArray,
    blocking: bool,
    running: BoolArray,
    alloc_n: IntArray,
    alloc_type: IntArray,
    is_active: BoolArray,
    running_jobs: IntArray,
    mark: Int8Array,
    go_job: IntArray,
    go_type: IntArray,
    go_n: IntArray,
    kept: IntArray,
    stop: IntArray,
) -> tuple[int, int, int, int, int]:
    """Which jobs of a preemptive decision run, which keep their devices, which stop.

    Walks ``run`` in order and takes each job whose device count still fits, counting devices
    per type only (placement comes later): stopping at the first misfit when ``blocking``,
    else skipping it, and stopping early once every type is full. A job's type is the one the
    decision names (if the job can run there), else its current type when it is running on
    as many devices and they are still counted free, else the type with room on which it is
    fastest (lowest index among ties).

    Parameters
    ----------
    run : (m,) int64
        Job indices in priority order.
    nds : (m,) or (0,) int64
        Devices per listed job; empty: each job's ``gang``.
    types : (m,) or (0,) int64
        Wanted type per listed job, -1 for the engine's choice; empty: all -1.
    gang : (n,) int64
        Devices each job asks for.
    rate : (n, n_types) float64
        Throughput of each job on each type (0: cannot run there).
    left : (n_types,) int64
        Devices of each type to fill; used up in place.
    blocking
        Strict order: stop at the first job that does not fit.
    running, alloc_n, alloc_type, is_active : (n,)
        The engine's per-job state.
    running_jobs : (r,) int64
        The running jobs.
    mark : (n,) int8
        Scratch, all zero on entry; left all zero.
    go_job, go_type, go_n : (>= m,) int64
        Out: jobs to start, in priority order, with their type and device count.
    kept : (>= m,) int64
        Out: running jobs that keep their devices, in priority order.
    stop : (>= r,) int64
        Out: running jobs to suspend, ascending.

    Returns
    -------
    (n_go, n_kept, n_stop, bad_job, why)
        Counts of the three outputs; ``bad_job`` is -1, or a job that makes the decision
        invalid, with ``why`` one of ``BAD_INACTIVE`` or ``BAD_TWICE`` (outputs then undefined,
        ``mark`` still cleared).
    """
    m = len(run)
    n_types = len(left)
    use_nds = len(nds) == m
    use_types = len(types) == m
    n_go = 0
    n_kept = 0
    bad = -1
    why = BAD_NONE
    most = 0  # the most devices left on one type: a job asking for more fits nowhere
    for k in range(n_types):
        most = max(most, left[k])
    for i in range(m):
        j = run[i]
        if mark[j] != 0:
            bad = j
            why = BAD_TWICE
            break
        d = nds[i] if use_nds else gang[j]
        if d > most:
            if blocking:
                break
            continue
        want = types[i] if use_types else -1
        cur = alloc_type[j]
        t = -1
        if want >= 0:
            if rate[j, want] > 0.0:
                t = want
        elif cur >= 0 and alloc_n[j] == d and left[cur] >= d:
            t = cur
        else:
            t = fastest_type(rate, j, left, d)
        if t < 0 or left[t] < d:
            if blocking:
                break
            continue
        if not is_active[j]:
            bad = j
            why = BAD_INACTIVE
            break
        left[t] -= d
        if running[j] and alloc_n[j] == d and alloc_type[j] == t:
            kept[n_kept] = j
            n_kept += 1
            mark[j] = 1
        else:
            go_job[n_go] = j
            go_type[n_go] = t
            go_n[n_go] = d
            n_go += 1
            mark[j] = 2
        most = 0
        for k in range(n_types):
            most = max(most, left[k])
        if most == 0:
            break
    n_stop = 0
    if bad < 0:
        # every kept job runs, so this pass also clears the marks of the kept ones
        for r_j in running_jobs:
            if mark[r_j] != 1:
                stop[n_stop] = r_j
                n_stop += 1
            else:
                mark[r_j] = 0
        stop[:n_stop].sort()
    else:
        for i in range(n_kept):
            mark[kept[i]] = 0
    for i in range(n_go):
        mark[go_job[i]] = 0
    return n_go, n_kept, n_stop, bad, why


@_compiled
def best_fit_node(free: IntArray, nodes: IntArray, nd: int) -> int:
    """Position in ``nodes`` of the node with the fewest free devices that holds ``nd``
    (lowest position among ties), or -1.

    ``nodes`` empty means every node, in index order.
    """
    best = -1
    best_f = 0
    k = len(nodes)
    every = k == 0
    if every:
        k = len(free)
    for i in range(k):
        f = free[i] if every else free[nodes[i]]
        if f >= nd and (best < 0 or f < best_f):
            best = i
            best_f = f
            if f == nd:
                break
    return best


SYNC_REMAINING = 1
SYNC_ATTAINED = 2
SYNC_EXECUTED = 4


@_compiled
def sync_running(
    jobs: IntArray,
    what: int,
    now: float,
    capped: bool,
    cap: FloatArray,
    base_t: FloatArray,
    stall: FloatArray,
    alloc_n: IntArray,
    exe0: FloatArray,
    att0: FloatArray,
    round_rem: FloatArray,
    crate: FloatArray,
    share: FloatArray,
    executed: FloatArray,
    attained: FloatArray,
    remaining: FloatArray,
) -> None:
    """Bring the progress of running ``jobs`` up to ``now`` (the engine's lazy bookkeeping).

    A running job progresses up to ``upto = min(now, cap)`` (``now`` unless ``capped``) from
    its stint's start ``base_t``, where its counters were ``exe0``/``att0``:
    ``executed = exe0 + (upto - base_t)``, ``attained = att0 + alloc_n × (upto - base_t)``,
    and ``remaining = round_rem - crate × max(upto - stall, 0)``, except that a job that has
    reached its whole-step ``cap`` has done exactly its ``share``. ``what`` is a bitmask of
    ``SYNC_REMAINING``, ``SYNC_ATTAINED`` and ``SYNC_EXECUTED``.
    """
    for j in jobs:
        upto = now
        c = cap[j]
        if capped and c < now:
            upto = c
        dt = upto - base_t[j]
        if what & SYNC_EXECUTED:
            executed[j] = exe0[j] + dt
        if what & SYNC_ATTAINED:
            attained[j] = att0[j] + dt * alloc_n[j]
        if what & SYNC_REMAINING:
            if capped and upto >= c:
                remaining[j] = round_rem[j] - share[j]
            else:
                run = upto - stall[j]
                remaining[j] = round_rem[j] - crate[j] * (run if run > 0.0 else 0.0)


@_compiled
def take_largest_first(free: IntArray, nodes: IntArray, nd: int) -> tuple[IntArray, IntArray]:
    """Take ``nd`` devices from ``nodes``, the freest first (lowest node index among ties),
    each wholly until the last: the fewest nodes that hold the gang.

    Returns the nodes taken, in that order, and the devices taken on each. The candidates
    must hold at least ``nd`` free devices together.
    """
    k = len(nodes)
    f = np.empty(k, dtype=np.int64)
    top = 0
    span = 1
    for i in range(k):
        f[i] = free[nodes[i]]
        top = max(top, f[i])
        span = max(span, nodes[i] + 1)
    key = np.empty(k, dtype=np.int64)
    for i in range(k):
        key[i] = (top - f[i]) * span + nodes[i]  # freest first, then by node index
    order = np.argsort(key, kind="mergesort")
    out_nodes = np.empty(k, dtype=np.int64)
    out_counts = np.empty(k, dtype=np.int64)
    left = nd
    m = 0
    for i in order:
        if left <= 0:
            break
        c = f[i] if f[i] < left else left
        out_nodes[m] = nodes[i]
        out_counts[m] = c
        left -= c
        m += 1
    return out_nodes[:m], out_counts[:m]


@_compiled
def take_nodes(
    node_free: IntArray,
    busy: FloatArray,
    node_group: IntArray,
    node_type: IntArray,
    nodes: IntArray,
    counts: IntArray,
    t: int,
    nd: int,
) -> bool:
    """Reserve ``counts`` devices on ``nodes`` (all of type ``t``, ``nd`` in all): take them
    from ``node_free`` and add them to ``busy`` by node group. Returns ``False``, changing
    nothing, when the placement is invalid (wrong total or type, more than a node has free).
    """
    total = 0
    for i in range(len(nodes)):
        n = nodes[i]
        c = counts[i]
        if c < 0 or c > node_free[n] or node_type[n] != t:
            return False
        total += c
    if total != nd:
        return False
    for i in range(len(nodes)):
        n = nodes[i]
        node_free[n] -= counts[i]
        busy[node_group[n]] += counts[i]
    return True


@_compiled
def link_gbs(
    nodes: IntArray,
    nd: int,
    intra_gbs: FloatArray,
    nic_gbps: FloatArray,
    rack: IntArray,
    oversub: FloatArray,
) -> float:
    """Bandwidth of the slowest link a placement on ``nodes`` crosses, GB/s: ``inf`` for one
    device, the node's intra-node link for one node, else the slowest NIC (Gb/s ÷ 8), divided
    by the largest oversubscription of the racks crossed when there are several."""
    if nd <= 1:
        return np.inf
    if len(nodes) == 1:
        return intra_gbs[nodes[0]]
    nic = np.inf
    r_lo = rack[nodes[0]]
    r_hi = r_lo
    for n in nodes:
        nic = min(nic, nic_gbps[n])
        r_lo = min(r_lo, rack[n])
        r_hi = max(r_hi, rack[n])
    nic = nic / 8.0
    if r_lo == r_hi:
        return nic
    worst = 0.0
    for n in nodes:
        worst = max(worst, oversub[rack[n]])
    return nic / worst


# ---------------------------------------------------------------------------------------------
# The engine's per-job bookkeeping: start, stop, reserve, event heaps
#
# A preemptive decision is one call of :func:`decide_preemptive` (plan, suspend, reserve,
# start), a greedy one one call of :func:`reserve_and_start`, whatever the number of jobs they
# start or stop; the engine's Python takes over only for what needs Python objects (a placement
# strategy the kernels do not know, the performance model on a placement not seen before).
# The engine packs its state into a few arrays so that a call passes a few dozen arguments
# (each costs numba's dispatcher about 0.1 µs):
#
# * ``jf`` (N_JF, n) float64, ``ji`` (N_JI, n) int64: one row per per-job field below;
#   ``jb`` (2, n) bool: the running and active flags;
# * ``nodes_i`` (6, n_nodes) int64: rows NODE_*; ``nodes_f`` (2, n_nodes) float64: the
#   intra-node link (GB/s) and the NIC (Gb/s) of each node; ``oversub`` (n_racks,) float64;
#   ``busy`` (n_groups,) float64: busy devices per node group (type × region);
# * ``types_i`` (2, n_types) int64: free and total devices per type; ``type_off``
#   (n_types + 1,) int64: type ``t``'s nodes are ``nodes_i[NODE_BY_TYPE, type_off[t]:
#   type_off[t + 1]]``;
# * ``slots`` (2, s) int64: placement slots: job ``j`` holds ``slots[1, o:o+k]`` devices on
#   nodes ``slots[0, o:o+k]``, ``o = ji[JI_SLOT, j]``, ``k = ji[JI_PLACED, j]``;
# * ``heap_t`` (2, cap) float64, ``heap_je`` (2, 2, cap) int64: two binary min-heaps of
#   ``(time, job, epoch)`` entries, completions (``HEAP_FINISH``) and service marks
#   (``HEAP_MARK``), sizes in ``ctr``; an entry whose epoch is not the job's is stale;
# * ``st_i`` (3, cap) int64, ``st_f`` (2, cap) float64: stints (job, node, devices; start,
#   end), one row per node each time a job's devices are released;
# * ``s_i`` (5, cap) int64, ``s_nc`` (2, cap) int64, ``s_f`` (2, cap) float64: the starts of
#   the current decision (job, type, devices, offset and number of its nodes in ``s_nc``;
#   nodes and devices there; link GB/s and rate);
# * ``rc_i`` (3, cap) int64, ``rc_f`` (2, cap) float64: the rate cache, placement rates by
#   (job, type, devices, link), one chain per job from ``ji[JI_RC_HEAD, j]``: next entry
#   (-1: end), type, devices; link, rate;
# * ``run_order`` (n,) int64: the running jobs in the order policies see them;
# * ``ctr`` (N_CTR,) int64: the counters the kernels advance.
#
# Room in the growable arrays is the caller's business: one decision adds at most one stint
# row and one heap entry of each kind per device of the cluster.

JF_REMAINING = 0  # work left (lazy while running)
JF_FIRST_START = 1
JF_LAST_START = 2
JF_FINISH = 3
JF_ATTAINED = 4  # device-seconds (lazy while running)
JF_EXECUTED = 5  # seconds holding devices (lazy while running)
JF_BASE_T = 6  # running: start of the stint (or whole-step round)
JF_EXE0 = 7  # running: executed at base_t
JF_ATT0 = 8  # running: attained at base_t
JF_TT_SYNCED = 9  # running: type_time/device_time are exact up to here
JF_FIN = 10  # running: predicted finish
JF_STALL = 11  # running: end of the restore stall
JF_CRATE = 12  # running: work units/s on the current placement
JF_CAP = 13  # running: no progress after this time (whole-step rounds)
JF_ROUND_REM = 14  # running: remaining when the stint (or round) began
JF_SHARE = 15  # running, whole-step rounds: work allowed this round
JF_RESTORE = 16  # restore delay paid on each resume, s
N_JF = 17

JI_ALLOC_TYPE = 0  # -1 when not running
JI_ALLOC_N = 1  # 0 when not running
JI_PREEMPTIONS = 2
JI_MIGRATIONS = 3
JI_MAX_NODES = 4
JI_EPOCH = 5  # bumped at each stop: heap entries of older epochs are stale
JI_GANG = 6  # num_gpus
JI_SLOT = 7  # offset of the job's slot in ``slots``
JI_PLACED = 8  # nodes of the job's latest placement (0: never placed)
JI_RC_HEAD = 9  # first entry of the job's chain in the rate cache, -1 for none
N_JI = 10

JB_RUNNING = 0
JB_ACTIVE = 1

NODE_FREE = 0  # free devices
NODE_GROUP = 1  # node group (type × region) of each node
NODE_TYPE = 2
NODE_RACK = 3
NODE_BY_TYPE = 4  # node indices grouped by type (see type_off)
NODE_DEVICES = 5  # devices of each node

TYPE_FREE = 0
TYPE_CAPACITY = 1

HEAP_FINISH = 0
HEAP_MARK = 1

CTR_STINTS = 0  # stint rows written
CTR_HEAP = 1  # entries in the completion heap
CTR_MARKS = 2  # entries in the service-mark heap
CTR_RUN = 3  # running jobs (the first entries of ``run_order``)
CTR_RC = 4  # entries of the rate cache
CTR_STARTS = 5  # starts reserved by the current decision
CTR_START_NODES = 6  # node entries of those starts
CTR_PLANNED = 7  # starts planned by the current preemptive decision
N_CTR = 8

MARK_EPS = 1e-6  # scheduling.base.SERVICE_EPS (the kernels import no policy code)

PLACE_STRATEGY = 0  # how gangs are placed (see _reserve_one)
PLACE_BEST_FIT = 1
PLACE_CONSOLIDATE = 2
PLACE_FIRST_FIT = 3
PLACE_YARN = 4

STATUS_DONE = 0  # the decision is applied (a: a job with a zero rate, or -1)
STATUS_PLACE = 1  # candidate a needs the placement strategy, on type b
STATUS_RATES = 2  # a starts need the performance model (rate nan in s_f)
STATUS_BAD = 3  # job a makes the decision invalid (b: BAD_INACTIVE or BAD_TWICE)


@_compiled
def _entry_less(t1: float, j1: int, e1: int, t2: float, j2: int, e2: int) -> bool:
    """``(t1, j1, e1) < (t2, j2, e2)`` as tuples."""
    if t1 != t2:
        return t1 < t2
    if j1 != j2:
        return j1 < j2
    return e1 < e2


@_compiled
def _sift_down(ht: FloatArray, hje: IntArray, size: int, i: int) -> None:
    """Move entry ``i`` of the heap ``ht`` (cap,) / ``hje`` (2, cap) of ``size`` entries
    down to its place."""
    t, j, e = ht[i], hje[0, i], hje[1, i]
    while True:
        c = 2 * i + 1
        if c >= size:
            break
        if c + 1 < size and _entry_less(
            ht[c + 1], hje[0, c + 1], hje[1, c + 1], ht[c], hje[0, c], hje[1, c]
        ):
            c += 1
        if not _entry_less(ht[c], hje[0, c], hje[1, c], t, j, e):
            break
        ht[i] = ht[c]
        hje[0, i] = hje[0, c]
        hje[1, i] = hje[1, c]
        i = c
    ht[i] = t
    hje[0, i] = j
    hje[1, i] = e


@_compiled
def pair_factors(
    job_type: IntArray,
    scale: IntArray,
    worker: IntArray,
    rates: FloatArray,
    iso: FloatArray,
    a: IntArray,
    b: IntArray,
    t: IntArray,
    fa: FloatArray,
    fb: FloatArray,
) -> None:
    """:meth:`clustersim.colocation.PairFactors.factors`: writes to ``fa``, ``fb`` (zeroed
    here) the fractions of their isolated rates jobs ``a[i]`` and ``b[i]`` keep when they
    share devices of type ``t[i]``; 0 where either cannot (no measured type, different or
    unmeasured scale factors, the same job, a rate that is not finite and positive).
    ``rates`` is the pair table (worker, type a, type b, scale, 2) and ``iso`` the isolated
    rates (worker, type, scale)."""
    for i in range(len(a)):
        fa[i] = 0.0
        fb[i] = 0.0
        ja = job_type[a[i]]
        jb = job_type[b[i]]
        sa = scale[a[i]]
        if ja < 0 or jb < 0 or sa < 0 or sa != scale[b[i]] or a[i] == b[i]:
            continue
        w = worker[t[i]]
        ia = iso[w, ja, sa]
        ib = iso[w, jb, sa]
        if ia == 0.0 or ib == 0.0:  # (x / 0 is not finite: no factor)
            continue
        ra = rates[w, ja, jb, sa, 0] / ia
        rb = rates[w, ja, jb, sa, 1] / ib
        if np.isfinite(ra) and ra > 0 and np.isfinite(rb) and rb > 0:
            fa[i] = ra
            fb[i] = rb


@_compiled
def heap_push(
    heap_t: FloatArray, heap_je: IntArray, ctr: IntArray, h: int, t: float, j: int, e: int
) -> None:
    """Push ``(t, j, e)`` on heap ``h`` (``HEAP_FINISH`` or ``HEAP_MARK``) of ``heap_t``
    (2, cap) / ``heap_je`` (2, 2, cap), whose size is ``ctr[CTR_HEAP + h]`` (< cap)."""
    ht = heap_t[h]
    hje = heap_je[h]
    c = CTR_HEAP + h
    i = ctr[c]
    ctr[c] = i + 1
    while i > 0:
        p = (i - 1) >> 1
        if not _entry_less(t, j, e, ht[p], hje[0, p], hje[1, p]):
            break
        ht[i] = ht[p]
        hje[0, i] = hje[0, p]
        hje[1, i] = hje[1, p]
        i = p
    ht[i] = t
    hje[0, i] = j
    hje[1, i] = e


@_compiled
def heap_pop(
    heap_t: FloatArray, heap_je: IntArray, ctr: IntArray, h: int
) -> tuple[float, int, int]:
    """Remove and return the smallest entry ``(t, j, e)`` of the non-empty heap ``h``."""
    ht = heap_t[h]
    hje = heap_je[h]
    c = CTR_HEAP + h
    t, j, e = ht[0], hje[0, 0], hje[1, 0]
    size = ctr[c] - 1
    ctr[c] = size
    if size > 0:
        ht[0] = ht[size]
        hje[0, 0] = hje[0, size]
        hje[1, 0] = hje[1, size]
        _sift_down(ht, hje, size, 0)
    return t, j, e


@_compiled
def heap_peek(
    heap_t: FloatArray, heap_je: IntArray, ctr: IntArray, h: int, epoch: IntArray
) -> float:
    """Time of the first current entry (``e == epoch[j]``) of heap ``h``, ``inf`` when there
    is none; stale entries met on the way are dropped."""
    hje = heap_je[h]
    c = CTR_HEAP + h
    while ctr[c] > 0 and hje[1, 0] != epoch[hje[0, 0]]:
        heap_pop(heap_t, heap_je, ctr, h)
    return heap_t[h, 0] if ctr[c] > 0 else np.inf


@_compiled
def next_times(
    heap_t: FloatArray, heap_je: IntArray, ctr: IntArray, epoch: IntArray
) -> tuple[float, float]:
    """:func:`heap_peek` of the completion heap and of the mark heap, in one call (the engine
    asks for both at every event)."""
    return (
        heap_peek(heap_t, heap_je, ctr, HEAP_FINISH, epoch),
        heap_peek(heap_t, heap_je, ctr, HEAP_MARK, epoch),
    )


@_compiled
def heap_compact(
    heap_t: FloatArray, heap_je: IntArray, ctr: IntArray, h: int, epoch: IntArray
) -> None:
    """Drop every stale entry of heap ``h`` (jobs stopped since the entry was pushed), in
    O(size); the current entries, and so the order of events, stay the same."""
    ht = heap_t[h]
    hje = heap_je[h]
    c = CTR_HEAP + h
    m = 0
    for i in range(ctr[c]):
        if hje[1, i] == epoch[hje[0, i]]:
            ht[m] = ht[i]
            hje[0, m] = hje[0, i]
            hje[1, m] = hje[1, i]
            m += 1
    ctr[c] = m
    for i in range(m // 2 - 1, -1, -1):
        _sift_down(ht, hje, m, i)


@_compiled
def stop_jobs(
    js: IntArray,
    completed: bool,
    now: float,
    jf: FloatArray,
    ji: IntArray,
    jb: BoolArray,
    type_time: FloatArray,
    device_time: FloatArray,
    nodes_i: IntArray,
    busy: FloatArray,
    types_i: IntArray,
    slots: IntArray,
    st_i: IntArray,
    st_f: FloatArray,
    run_order: IntArray,
    ctr: IntArray,
) -> None:
    """Stop running jobs ``js`` (k,) int64 in that order (completion or suspension).

    Each job's counters are brought to ``now`` (progress stops at its whole-step ``cap``):
    ``executed``, ``attained``, ``type_time`` and ``device_time`` (n, n_types), and
    ``remaining`` (0 and ``finish = now`` when ``completed``); its devices go back to the
    nodes, ``busy`` and the free devices of its type; one stint row per node is appended; its
    epoch is bumped (its heap entries go stale) and it leaves ``run_order``, whose other
    entries keep their order. The other arguments are the engine's packed state (see above).
    """
    if len(js) == 0:  # (a decision that suspends nothing: run_order stays as it is)
        return
    n_st = ctr[CTR_STINTS]
    node_free = nodes_i[NODE_FREE]
    node_group = nodes_i[NODE_GROUP]
    free = types_i[TYPE_FREE]
    for jj in js:
        n = ji[JI_ALLOC_N, jj]
        t = ji[JI_ALLOC_TYPE, jj]
        c_j = jf[JF_CAP, jj]
        upto = now if now < c_j else c_j
        dt = upto - jf[JF_BASE_T, jj]
        jf[JF_EXECUTED, jj] = jf[JF_EXE0, jj] + dt
        jf[JF_ATTAINED, jj] = jf[JF_ATT0, jj] + dt * n
        dt = upto - jf[JF_TT_SYNCED, jj]
        type_time[jj, t] += dt
        device_time[jj, t] += dt * n
        if completed:
            jf[JF_REMAINING, jj] = 0.0
            jf[JF_FINISH, jj] = now
        elif upto >= c_j:  # a whole-step share is done: count it exactly
            jf[JF_REMAINING, jj] = jf[JF_ROUND_REM, jj] - jf[JF_SHARE, jj]
        else:
            stalled = upto - jf[JF_STALL, jj]
            jf[JF_REMAINING, jj] = jf[JF_ROUND_REM, jj] - jf[JF_CRATE, jj] * (
                stalled if stalled > 0.0 else 0.0
            )
        jb[JB_RUNNING, jj] = False
        ji[JI_ALLOC_TYPE, jj] = -1
        ji[JI_ALLOC_N, jj] = 0
        jf[JF_FIN, jj] = np.inf
        jf[JF_CAP, jj] = np.inf
        began = jf[JF_LAST_START, jj]
        o = ji[JI_SLOT, jj]
        for i in range(o, o + ji[JI_PLACED, jj]):
            node = slots[0, i]
            c = slots[1, i]
            node_free[node] += c
            busy[node_group[node]] -= c
            st_i[0, n_st] = jj
            st_i[1, n_st] = node
            st_i[2, n_st] = c
            st_f[0, n_st] = began
            st_f[1, n_st] = now
            n_st += 1
        free[t] += n
        ji[JI_EPOCH, jj] += 1
    ctr[CTR_STINTS] = n_st
    m = 0
    for i in range(ctr[CTR_RUN]):
        j = run_order[i]
        if jb[JB_RUNNING, j]:
            run_order[m] = j
            m += 1
    ctr[CTR_RUN] = m


@_compiled
def complete_due(
    t: float,
    out: IntArray,
    heap_t: FloatArray,
    heap_je: IntArray,
    jf: FloatArray,
    ji: IntArray,
    jb: BoolArray,
    type_time: FloatArray,
    device_time: FloatArray,
    nodes_i: IntArray,
    busy: FloatArray,
    types_i: IntArray,
    slots: IntArray,
    st_i: IntArray,
    st_f: FloatArray,
    run_order: IntArray,
    ctr: IntArray,
) -> int:
    """Complete the running jobs predicted to finish by ``t`` (within ``1e-9 + 1e-12 |t|``).

    Pops their entries from the completion heap (skipping stale ones), writes them ascending
    to ``out`` (n,) int64, stops them in that order as :func:`stop_jobs` does with
    ``completed`` and clears their active flag. Returns how many.
    """
    tol = t + 1e-9 + 1e-12 * abs(t)
    epoch = ji[JI_EPOCH]
    k = 0
    while ctr[CTR_HEAP] > 0 and heap_t[HEAP_FINISH, 0] <= tol:
        _, j, e = heap_pop(heap_t, heap_je, ctr, HEAP_FINISH)
        if e == epoch[j]:
            out[k] = j
            k += 1
    done = out[:k]
    done.sort()
    stop_jobs(
        done,
        True,
        t,
        jf,
        ji,
        jb,
        type_time,
        device_time,
        nodes_i,
        busy,
        types_i,
        slots,
        st_i,
        st_f,
        run_order,
        ctr,
    )
    for j in done:
        jb[JB_ACTIVE, j] = False
    return k


@_compiled
def _next_mark(marks: FloatArray, att: float) -> int:
    """Position of the first mark above ``att + MARK_EPS`` (``bisect_right``)."""
    lo = 0
    hi = len(marks)
    x = att + MARK_EPS
    while lo < hi:
        mid = (lo + hi) // 2
        if x < marks[mid]:
            hi = mid
        else:
            lo = mid + 1
    return lo


@_compiled
def push_mark(
    marks: FloatArray,
    heap_t: FloatArray,
    heap_je: IntArray,
    ctr: IntArray,
    j: int,
    t: float,
    att: float,
    nd: int,
    e: int,
) -> None:
    """Schedule the moment running job ``j`` (``att`` device-seconds at ``t`` on ``nd``
    devices, epoch ``e``) reaches the next of the service ``marks`` (ascending) above it, on
    the mark heap; nothing when it is above them all."""
    q = _next_mark(marks, att)
    if q < len(marks):
        heap_push(heap_t, heap_je, ctr, HEAP_MARK, t + (marks[q] - att) / nd, j, e)


@_compiled
def rerate_jobs(
    js: IntArray,
    rates: FloatArray,
    now: float,
    jf: FloatArray,
    ji: IntArray,
    heap_t: FloatArray,
    heap_je: IntArray,
    ctr: IntArray,
    marks: FloatArray,
) -> None:
    """Running jobs ``js`` (each once, their progress synced to ``now``) go on at ``rates``
    from now on the same devices: a new stint base at now (a restore stall in progress goes
    on, a whole-step cap is lifted), their completions predicted anew (one finish-heap entry
    each, in ``js`` order) and, with service ``marks``, their next marks
    (:func:`clustersim.colocation.rerate`)."""
    for i in range(len(js)):
        j = js[i]
        rem = jf[JF_REMAINING, j]
        begin = max(now, jf[JF_STALL, j])
        jf[JF_ROUND_REM, j] = rem
        jf[JF_STALL, j] = begin
        jf[JF_BASE_T, j] = now
        jf[JF_EXE0, j] = jf[JF_EXECUTED, j]
        jf[JF_ATT0, j] = jf[JF_ATTAINED, j]
        r = rates[i]
        jf[JF_CRATE, j] = r
        jf[JF_CAP, j] = np.inf
        # time on the type is counted from now: a job that did its whole-step share before
        # now was idle since (without this a host that keeps its devices across a round
        # boundary would be credited that idle tail when the cap goes)
        jf[JF_TT_SYNCED, j] = now
        jf[JF_SHARE, j] = 0.0
        if r != 0.0:
            jf[JF_FIN, j] = begin + rem / r
        else:  # as numpy divides: a job that cannot progress never finishes
            jf[JF_FIN, j] = begin + (np.inf if rem > 0 else (np.nan if rem == 0 else -np.inf))
        ji[JI_EPOCH, j] += 1
    for i in range(len(js)):
        j = js[i]
        heap_push(heap_t, heap_je, ctr, HEAP_FINISH, jf[JF_FIN, j], j, ji[JI_EPOCH, j])
    if len(marks):
        for i in range(len(js)):
            j = js[i]
            nd = ji[JI_ALLOC_N, j]
            if nd > 0:
                push_mark(
                    marks, heap_t, heap_je, ctr, j, now, jf[JF_ATTAINED, j], nd, ji[JI_EPOCH, j]
                )


@_compiled
def multi_node_jobs(
    run: IntArray,
    ji: IntArray,
    jf: FloatArray,
    prev_jobs: IntArray,
    prev_starts: FloatArray,
    out_jobs: IntArray,
    out_starts: FloatArray,
) -> int:
    """The running jobs of ``run`` placed on more than one node, ascending, to ``out_jobs``
    and their last starts to ``out_starts`` (both at least ``len(run)`` long); returns how
    many, or -1 when they and their starts are those of ``prev_jobs``, ``prev_starts``
    (:meth:`clustersim.network.NetworkContention.settle`: nothing to share anew)."""
    m = 0
    for i in range(len(run)):
        j = run[i]
        if ji[JI_PLACED, j] > 1:
            out_jobs[m] = j
            m += 1
    out_jobs[:m].sort()
    for i in range(m):
        out_starts[i] = jf[JF_LAST_START, out_jobs[i]]
    if m != len(prev_jobs):
        return m
    for i in range(m):
        if out_jobs[i] != prev_jobs[i] or out_starts[i] != prev_starts[i]:
            return m
    return -1


@_compiled
def network_shares(
    js: IntArray,
    ji: IntArray,
    slots: IntArray,
    nic: FloatArray,
    rack: IntArray,
    oversub: FloatArray,
    cap: FloatArray,
    share_nics: bool,
    b: FloatArray,
    static: FloatArray,
    demand: FloatArray,
    up_j: IntArray,
    up_r: IntArray,
) -> int:
    """Max-min fair shares of NICs and rack uplinks for running multi-node jobs ``js`` (m,)
    (:mod:`clustersim.network`; ``clustersim.network.max_min_share`` is the plain numpy
    reference of the filling). Links are the racks' uplinks (``0..n_racks-1``) then the
    nodes' NICs; ``cap`` their capacities, ``nic`` each node's NIC, GB/s. Writes each job's
    share ``b``, the engine's static link ``static`` (slowest NIC over the worst
    oversubscription of the racks crossed, :func:`link_gbs`) and its slowest NIC
    ``demand`` (m,), and the (job position, rack) pairs of the uplinks crossed to
    ``up_j``/``up_r``; returns how many pairs."""
    m = len(js)
    n_racks = len(oversub)
    n_links = len(cap)
    total = 0
    for i in range(m):
        total += ji[JI_PLACED, js[i]]
    fj = np.empty(2 * total, dtype=np.int64)  # flows: job position, link
    fl = np.empty(2 * total, dtype=np.int64)
    mark = np.zeros(n_racks, dtype=np.int64)
    n_up = 0
    nf = 0
    for i in range(m):
        j = js[i]
        o = ji[JI_SLOT, j]
        k = ji[JI_PLACED, j]
        d = np.inf
        r0 = rack[slots[0, o]]
        one_rack = True
        for q in range(o, o + k):
            node = slots[0, q]
            d = min(d, nic[node])
            if rack[node] != r0:
                one_rack = False
        demand[i] = d
        if one_rack:
            static[i] = d
        else:
            worst = 0.0
            for q in range(o, o + k):
                r = rack[slots[0, q]]
                if mark[r] != i + 1:
                    mark[r] = i + 1
                    up_j[n_up] = i
                    up_r[n_up] = r
                    n_up += 1
                    fj[nf] = i
                    fl[nf] = r
                    nf += 1
                    worst = max(worst, oversub[r])
            static[i] = d / worst
        if share_nics:
            for q in range(o, o + k):
                fj[nf] = i
                fl[nf] = n_racks + slots[0, q]
                nf += 1
    # progressive filling: every unfrozen job's share grows at the same pace; a full link
    # freezes the jobs on it, a job also stops at its demand
    x = np.zeros(m)
    frozen = np.zeros(m, dtype=np.bool_)
    hit = np.zeros(m, dtype=np.bool_)
    users = np.zeros(n_links, dtype=np.int64)
    used = np.zeros(n_links)
    fair = np.empty(n_links)
    left = m
    while left > 0:
        users[:] = 0
        used[:] = 0.0
        for f in range(nf):
            if frozen[fj[f]]:
                used[fl[f]] += x[fj[f]]
            else:
                users[fl[f]] += 1
        level = np.inf
        for lk in range(n_links):
            if users[lk] > 0:
                fair[lk] = max(cap[lk] - used[lk], 0.0) / users[lk]
                level = min(level, fair[lk])
            else:
                fair[lk] = np.inf
        for i in range(m):
            if not frozen[i]:
                level = min(level, demand[i])
        top = level * (1.0 + 1e-12)
        hit[:] = False
        for f in range(nf):
            if not frozen[fj[f]] and fair[fl[f]] <= top:
                hit[fj[f]] = True
        for i in range(m):
            if not frozen[i] and (hit[i] or demand[i] <= top):
                x[i] = min(level, demand[i])
                frozen[i] = True
                left -= 1
    for i in range(m):
        b[i] = x[i]
    return n_up


@_compiled
def network_factors(
    js: IntArray,
    kept: BoolArray,
    b: FloatArray,
    static: FloatArray,
    demand: FloatArray,
    a: FloatArray,
    s: FloatArray,
    factor: FloatArray,
    fac: FloatArray,
    loss: FloatArray,
    ratio: FloatArray,
) -> int:
    """Network factors of jobs ``js`` (m,) from their shares (:mod:`clustersim.network`).

    A job's ring model is ``1 / rate = a + s / L``; ``fac`` = rate(``b``) / rate(``static``),
    ``loss`` = 1 − rate(``b``) / rate(``demand``) (0 where the job cannot run), ``ratio`` =
    ``fac`` over the factor its rate carries now (``factor[j]`` where ``kept``, else 1: a job
    (re)started since the last recomputation runs at the static rate); ``ratio`` is 0 where
    it does not change. Returns how many change."""
    n_change = 0
    for i in range(len(js)):
        j = js[i]
        f = 1.0
        lo = 0.0
        if np.isfinite(a[j]) and b[i] > 0.0 and static[i] > 0.0 and demand[i] > 0.0:
            inv_new = a[j] + s[j] / b[i]
            if inv_new > 0.0:
                f = (a[j] + s[j] / static[i]) / inv_new
                lo = max(1.0 - (a[j] + s[j] / demand[i]) / inv_new, 0.0)
        old = factor[j] if kept[i] else 1.0
        fac[i] = f
        loss[i] = lo
        if f != old:
            ratio[i] = f / old
            n_change += 1
        else:
            ratio[i] = 0.0
    return n_change


@_compiled
def network_integrate(
    js: IntArray,
    stall: FloatArray,
    since: float,
    now: float,
    loss: FloatArray,
    b: FloatArray,
    up_j: IntArray,
    up_r: IntArray,
    lost_s: FloatArray,
    uplink_gb: FloatArray,
) -> None:
    """Add the progress jobs ``js`` (m,) lost (``loss`` per second) and the traffic of their
    uplink pairs (``b`` GB/s) from ``since`` to ``now``, each job from the end of its restore
    stall (``stall``, per job of the run) (:mod:`clustersim.network`)."""
    dt = np.empty(len(js))
    for i in range(len(js)):
        dt[i] = max(now - max(since, stall[js[i]]), 0.0)
        lost_s[js[i]] += loss[i] * dt[i]
    for p in range(len(up_j)):
        uplink_gb[up_r[p]] += b[up_j[p]] * dt[up_j[p]]


@_compiled
def pop_marks(
    t: float, heap_t: FloatArray, heap_je: IntArray, ctr: IntArray, epoch: IntArray, out: IntArray
) -> int:
    """Pop the mark-heap entries due by ``t``; the current ones go to ``out`` (2, >= size)
    as (job, epoch) columns, in pop order. Returns how many."""
    k = 0
    while ctr[CTR_MARKS] > 0 and heap_t[HEAP_MARK, 0] <= t:
        _, j, e = heap_pop(heap_t, heap_je, ctr, HEAP_MARK)
        if e == epoch[j]:
            out[0, k] = j
            out[1, k] = e
            k += 1
    return k


@_compiled
def rearm_marks(
    due: IntArray,
    k: int,
    now: float,
    marks: FloatArray,
    heap_t: FloatArray,
    heap_je: IntArray,
    ctr: IntArray,
    jf: FloatArray,
    ji: IntArray,
    jb: BoolArray,
) -> None:
    """After a decision: the jobs of ``due[:, :k]`` (from :func:`pop_marks`) that still run in
    the same stint wait for their next mark (attained service counted up to ``min(now,
    cap)``)."""
    for i in range(k):
        j = due[0, i]
        e = due[1, i]
        if ji[JI_EPOCH, j] == e and jb[JB_RUNNING, j]:
            n = ji[JI_ALLOC_N, j]
            c = jf[JF_CAP, j]
            upto = now if now < c else c
            att = jf[JF_ATT0, j] + (upto - jf[JF_BASE_T, j]) * n
            push_mark(marks, heap_t, heap_je, ctr, j, now, att, n, e)


@_compiled
def record_start(
    j: int,
    t: int,
    nd: int,
    nodes: IntArray,
    counts: IntArray,
    s_i: IntArray,
    s_nc: IntArray,
    ctr: IntArray,
) -> None:
    """Append a reserved start (job ``j`` on ``nd`` devices of type ``t``: ``counts`` on
    ``nodes``) to the decision's starts ``s_i``/``s_nc``."""
    s = ctr[CTR_STARTS]
    o = ctr[CTR_START_NODES]
    s_i[0, s] = j
    s_i[1, s] = t
    s_i[2, s] = nd
    s_i[3, s] = o
    s_i[4, s] = len(nodes)
    for i in range(len(nodes)):
        s_nc[0, o + i] = nodes[i]
        s_nc[1, o + i] = counts[i]
    ctr[CTR_STARTS] = s + 1
    ctr[CTR_START_NODES] = o + len(nodes)


@_compiled
def _reserve_one(
    j: int,
    t: int,
    nd: int,
    placing: int,
    nodes_i: IntArray,
    busy: FloatArray,
    types_i: IntArray,
    type_off: IntArray,
    s_i: IntArray,
    s_nc: IntArray,
    ctr: IntArray,
) -> int:
    """Reserve ``nd`` devices of type ``t`` for job ``j``: 1 when done, 0 when fewer than
    ``nd`` are free, -1 when the placement strategy must choose.

    ``placing`` is ``PLACE_STRATEGY`` (the strategy chooses), ``PLACE_BEST_FIT`` (a gang that
    fits one node goes to the best-fitting one, the strategy places the others),
    ``PLACE_CONSOLIDATE`` (the others take the freest nodes first, :func:`take_largest_first`)
    ``PLACE_FIRST_FIT`` (free devices node by node in index order) or ``PLACE_YARN``
    (:func:`yarn_nodes`; 0 also when no rack can hold the gang that way).
    """
    free = types_i[TYPE_FREE]
    if free[t] < nd:
        return 0
    if placing == PLACE_STRATEGY:
        return -1
    node_free = nodes_i[NODE_FREE]
    node_group = nodes_i[NODE_GROUP]
    nodes_t = nodes_i[NODE_BY_TYPE, type_off[t] : type_off[t + 1]]
    if placing == PLACE_YARN:  # one rack, as the Tiresias simulator's yarn scheme
        cand = np.empty(len(nodes_t), dtype=np.int64)
        kc = 0
        for node in nodes_t:
            if node_free[node] > 0:
                cand[kc] = node
                kc += 1
        taken = np.empty(kc, dtype=np.int64)
        counts = np.empty(kc, dtype=np.int64)
        k = yarn_nodes(
            node_free, cand[:kc], nodes_i[NODE_RACK], nodes_i[NODE_DEVICES], nd, taken, counts
        )
        if k == 0:
            return 0
        for i in range(k):
            node_free[taken[i]] -= counts[i]
            busy[node_group[taken[i]]] += counts[i]
        free[t] -= nd
        record_start(j, t, nd, taken[:k], counts[:k], s_i, s_nc, ctr)
        return 1
    if placing == PLACE_FIRST_FIT:  # free devices node by node, in index order
        taken = np.empty(nd, dtype=np.int64)
        counts = np.empty(nd, dtype=np.int64)
        k = 0
        left = nd
        for node in nodes_t:
            f = node_free[node]
            if f > 0:
                c = f if f < left else left
                taken[k] = node
                counts[k] = c
                k += 1
                node_free[node] -= c
                busy[node_group[node]] += c
                left -= c
                if left == 0:
                    break
        free[t] -= nd
        record_start(j, t, nd, taken[:k], counts[:k], s_i, s_nc, ctr)
        return 1
    # one type on every node: no gather (the first smallest fitting node either way)
    every = len(type_off) == 2
    i = best_fit_node(node_free, nodes_t[:0] if every else nodes_t, nd)
    if i >= 0:
        node = nodes_t[i]
        node_free[node] -= nd
        busy[node_group[node]] += nd
        free[t] -= nd
        counts = np.empty(1, dtype=np.int64)
        counts[0] = nd
        record_start(j, t, nd, nodes_t[i : i + 1], counts, s_i, s_nc, ctr)
        return 1
    if placing != PLACE_CONSOLIDATE:
        return -1
    cand = np.empty(len(nodes_t), dtype=np.int64)  # the nodes of type t with room
    k = 0
    for node in nodes_t:
        if node_free[node] > 0:
            cand[k] = node
            k += 1
    nodes, counts = take_largest_first(node_free, cand[:k], nd)
    for i in range(len(nodes)):
        node_free[nodes[i]] -= counts[i]
        busy[node_group[nodes[i]]] += counts[i]
    free[t] -= nd
    record_start(j, t, nd, nodes, counts, s_i, s_nc, ctr)
    return 1


AUX_EPS = 1e-9
"""Relative slack of the CPU/memory room (``clustersim.resources._EPS``)."""


@_compiled
def aux_refresh(
    running: IntArray,
    slots: IntArray,
    slot: IntArray,
    placed: IntArray,
    s_i: IntArray,
    s_nc: IntArray,
    ns: int,
    cpu_dev: FloatArray,
    mem_dev: FloatArray,
    cpu_cap: FloatArray,
    mem_cap: FloatArray,
    cpu_free: FloatArray,
    mem_free: FloatArray,
) -> None:
    """Free cores and memory of every node (``cpu_free``/``mem_free``, written): capacity
    less the shares of the running jobs' placements and of the decision's first ``ns``
    reserved starts (:meth:`clustersim.resources.AuxModel.refresh`, whose sums it adds in the
    same order, so the floats are the same bit for bit)."""
    m = len(cpu_cap)
    used_c = np.zeros(m)
    used_m = np.zeros(m)
    for r in running:
        o = slot[r]
        for q in range(o, o + placed[r]):
            node = slots[0, q]
            d = float(slots[1, q])
            used_c[node] += d * cpu_dev[r]
            used_m[node] += d * mem_dev[r]
    for s in range(ns):
        j = s_i[0, s]
        o = s_i[3, s]
        for q in range(o, o + s_i[4, s]):
            node = s_nc[0, q]
            d = float(s_nc[1, q])
            used_c[node] += d * cpu_dev[j]
            used_m[node] += d * mem_dev[j]
    for i in range(m):
        cpu_free[i] = cpu_cap[i] - used_c[i]
        mem_free[i] = mem_cap[i] - used_m[i]


@_compiled
def aux_place_consolidate(
    j: int,
    t: int,
    nd: int,
    nodes_t: IntArray,
    node_free: IntArray,
    cpu_free: FloatArray,
    mem_free: FloatArray,
    cpu_dev: FloatArray,
    mem_dev: FloatArray,
    room: IntArray,
    busy: FloatArray,
    node_group: IntArray,
    types_i: IntArray,
    s_i: IntArray,
    s_nc: IntArray,
    ctr: IntArray,
) -> bool:
    """Place job ``j`` (``nd`` devices of type ``t``, on ``nodes_t``) as the ``consolidate``
    strategy does on the devices whose share of cores and memory fits each node, and reserve
    it: what the engine does in Python for one start with the CPU/memory model on
    (:meth:`clustersim.resources.AuxModel.room`, ``Consolidate.place``, ``take_nodes``,
    :func:`record_start`, :meth:`~clustersim.resources.AuxModel.took`), with the same
    arithmetic. ``room`` (n_nodes,) int64 is scratch. Returns ``False`` (nothing changed) when the
    nodes cannot hold the gang."""
    c_j = cpu_dev[j]
    m_j = mem_dev[j]
    big = float(np.iinfo(np.int32).max)
    cand = np.empty(len(nodes_t), dtype=np.int64)
    f_c = np.empty(len(nodes_t), dtype=np.int64)
    k = 0
    total = 0
    for node in nodes_t:
        cap = np.inf
        if c_j > 0.0:
            cap = np.floor(cpu_free[node] / c_j + AUX_EPS)
        if m_j > 0.0:
            cm = np.floor(mem_free[node] / m_j + AUX_EPS)
            if cm < cap:
                cap = cm
        if cap < 0.0:
            cap = 0.0
        elif cap > big:
            cap = big
        f = node_free[node]
        if cap < f:
            f = int(cap)
        room[node] = f
        if f > 0:
            cand[k] = node
            f_c[k] = f
            k += 1
            total += f
    if total < nd:
        return False
    i = best_fit_node(f_c[:k], cand[:0], nd)
    if i >= 0:
        nodes = cand[i : i + 1]
        counts = np.empty(1, dtype=np.int64)
        counts[0] = nd
    else:
        nodes, counts = take_largest_first(room, cand[:k], nd)
    for q in range(len(nodes)):
        node = nodes[q]
        node_free[node] -= counts[q]
        busy[node_group[node]] += counts[q]
    types_i[TYPE_FREE, t] -= nd
    record_start(j, t, nd, nodes, counts, s_i, s_nc, ctr)
    for q in range(len(nodes)):
        node = nodes[q]
        cpu_free[node] -= counts[q] * c_j
        mem_free[node] -= counts[q] * m_j
    return True


@_compiled
def synergy_place(
    t: int,
    nd: int,
    c: float,
    m: float,
    nfree: IntArray,
    cfree: FloatArray,
    mfree: FloatArray,
    node_type: IntArray,
    one_type: bool,
    room: IntArray,
) -> tuple[IntArray, IntArray]:
    """Where Synergy's TUNE places a gang of ``nd`` devices of type ``t`` at ``c`` cores and
    ``m`` GB per device (:class:`scheduling.synergy.Synergy`, the engine's rule: on each
    node the free devices ``nfree`` capped by free cores ``cfree`` and memory ``mfree`` over
    the share, each cap ``floor(free / share + 1e-9)`` clipped to ``[0, 2**30]``; best fit on
    one node, else the freest nodes first, :func:`take_largest_first`). Returns the nodes
    and devices taken on each, both empty when the nodes cannot hold the gang. ``room``
    (n_nodes,) int64 is scratch."""
    n = len(nfree)
    cand = np.empty(n, dtype=np.int64)
    f_c = np.empty(n, dtype=np.int64)
    big = float(1 << 30)
    k = 0
    total = 0
    for x in range(n):
        r = nfree[x]
        if r <= 0 or (not one_type and node_type[x] != t):
            continue
        if c > 0.0:
            q = cfree[x] / c + AUX_EPS
            d = (1 << 30) if q >= big else max(0, int(np.floor(q)))
            if d < r:
                r = d
        if m > 0.0:
            q = mfree[x] / m + AUX_EPS
            d = (1 << 30) if q >= big else max(0, int(np.floor(q)))
            if d < r:
                r = d
        room[x] = r
        cand[k] = x
        f_c[k] = r
        k += 1
        total += r
    if total < nd:
        return cand[:0], f_c[:0]
    i = best_fit_node(f_c[:k], cand[:0], nd)
    if i >= 0:
        nodes = cand[i : i + 1].copy()
        counts = np.empty(1, dtype=np.int64)
        counts[0] = nd
    else:  # the freest first; nodes with no room are never reached (the gang fits first)
        nodes, counts = take_largest_first(room, cand[:k], nd)
    for q in range(len(nodes)):
        x = nodes[q]
        nfree[x] -= counts[q]
        cfree[x] -= counts[q] * c
        mfree[x] -= counts[q] * m
    return nodes, counts


@_compiled
def synergy_starts(
    i0: int,
    positions: IntArray,
    run: IntArray,
    gang: IntArray,
    rate: FloatArray,
    tfree: IntArray,
    ideal_c: FloatArray,
    ideal_m: FloatArray,
    fc: float,
    fm: float,
    prop: bool,
    tune: bool,
    nfree: IntArray,
    cfree: FloatArray,
    mfree: FloatArray,
    node_type: IntArray,
    one_type: bool,
    room: IntArray,
    aux: FloatArray,
    placed: BoolArray,
    rec: IntArray,
    rec_nc: IntArray,
    rec_ctr: IntArray,
    share: FloatArray,
) -> int:
    """Synergy's starts of a round (:class:`scheduling.synergy.Synergy`), from
    ``positions[i0]`` on, as its Python loop did them: each start ``run[positions[i]]`` on
    the fastest type with its gang free (``tfree``), at its ideal share (the proportional
    one with ``prop``), placed by :func:`synergy_place`; with ``tune``, at the proportional
    share when the ideal does not fit. Placed starts get ``aux[pos] = (c, m)`` and a record:
    ``rec[:, r]`` = position, offset into ``rec_nc`` (rows node, devices), node count
    (``rec_ctr`` = records, nodes so far); the others ``placed[pos] = False``.

    Returns the index ``i`` of the first start that needs TUNE's step 3 (cutting other jobs
    back), with its type in ``rec_ctr[2]`` and its share in ``share`` (the caller does it and
    calls again from ``i + 1``), or ``len(positions)`` when all are done."""
    n_types = len(tfree)
    for i in range(i0, len(positions)):
        pos = positions[i]
        j = run[pos]
        nd = gang[j]
        t = -1
        if one_type:
            if tfree[0] >= nd and rate[j, 0] > 0:
                t = 0
        else:
            best = 0.0
            for k in range(n_types):
                r = rate[j, k]
                if r > best and tfree[k] >= nd:
                    t = k
                    best = r
        if t < 0:
            placed[pos] = False
            continue
        c = ideal_c[j]
        m = ideal_m[j]
        if prop:
            if fc < np.inf:
                c = fc
            if fm < np.inf:
                m = fm
        nodes, counts = synergy_place(t, nd, c, m, nfree, cfree, mfree, node_type, one_type, room)
        if len(nodes) == 0 and tune:
            if c > fc or m > fm:  # step 2: the proportional share
                c = min(c, fc)
                m = min(m, fm)
                nodes, counts = synergy_place(
                    t, nd, c, m, nfree, cfree, mfree, node_type, one_type, room
                )
            if len(nodes) == 0:  # step 3: the caller's
                rec_ctr[2] = t
                share[0] = c
                share[1] = m
                return i
        if len(nodes) == 0:
            placed[pos] = False
            continue
        tfree[t] -= nd
        aux[pos, 0] = c
        aux[pos, 1] = m
        r_i = rec_ctr[0]
        o = rec_ctr[1]
        rec[0, r_i] = pos
        rec[1, r_i] = o
        rec[2, r_i] = len(nodes)
        for q in range(len(nodes)):
            rec_nc[0, o + q] = nodes[q]
            rec_nc[1, o + q] = counts[q]
        rec_ctr[0] = r_i + 1
        rec_ctr[1] = o + len(nodes)
    return len(positions)


@_compiled
def greedy_fit(gang: IntArray, cap: int) -> IntArray:
    """Positions of ``gang`` (in order) a greedy pass takes: the longest prefix whose devices
    sum to at most ``cap``, then every later job whose devices still fit in what is left
    (smaller jobs go past a larger one that does not), until nothing is left. Synergy's GPU
    pass: the Python it replaced is ``tests/reference_aux.py``'s ``reference_greedy_fit``."""
    n = len(gang)
    out = np.empty(n, dtype=np.int64)
    total = 0
    k = 0
    while k < n and total + gang[k] <= cap:
        total += gang[k]
        out[k] = k
        k += 1
    m = k
    free = cap - total
    if free > 0:
        for i in range(k + 1, n):
            g = gang[i]
            if g <= free:
                out[m] = i
                m += 1
                free -= g
                if free == 0:
                    break
    return out[:m]


@_compiled
def synergy_free(
    rj: IntArray,
    rn: IntArray,
    rd: IntArray,
    kept: IntArray,
    mark: BoolArray,
    node_devices: IntArray,
    node_type: IntArray,
    n_types: int,
    cpu_cap: FloatArray,
    mem_cap: FloatArray,
    cpu_dev: FloatArray,
    mem_dev: FloatArray,
) -> tuple[IntArray, IntArray, IntArray, IntArray, FloatArray, FloatArray, IntArray]:
    """What Synergy's round starts from (:class:`scheduling.synergy.Synergy`): the rows
    ``(rj, rn, rd)`` (job, node, devices) of the jobs ``kept``, and each node's free devices,
    cores and memory with only those (capacity less their sums, added in row order as
    ``np.bincount`` adds them, so the same floats), and each type's free devices. ``mark``
    (n,) is scratch, all ``False`` on entry and on return."""
    for j in kept:
        mark[j] = True
    n = len(rj)
    sel = np.empty(n, dtype=np.int64)
    k = 0
    for i in range(n):
        if mark[rj[i]]:
            sel[k] = i
            k += 1
    for j in kept:
        mark[j] = False
    m = len(node_devices)
    used_d = np.zeros(m)
    used_c = np.zeros(m)
    used_m = np.zeros(m)
    oj = np.empty(k, dtype=np.int64)
    on = np.empty(k, dtype=np.int64)
    od = np.empty(k, dtype=np.int64)
    for q in range(k):
        i = sel[q]
        j = rj[i]
        x = rn[i]
        d = rd[i]
        oj[q] = j
        on[q] = x
        od[q] = d
        used_d[x] += float(d)
        used_c[x] += d * cpu_dev[j]
        used_m[x] += d * mem_dev[j]
    nfree = np.empty(m, dtype=np.int64)
    cfree = np.empty(m)
    mfree = np.empty(m)
    used_t = np.zeros(n_types)
    for x in range(m):
        nfree[x] = node_devices[x] - np.int64(used_d[x])
        cfree[x] = cpu_cap[x] - used_c[x]
        mfree[x] = mem_cap[x] - used_m[x]
        used_t[node_type[x]] += float(nfree[x])
    tfree = np.empty(n_types, dtype=np.int64)
    for t in range(n_types):
        tfree[t] = np.int64(used_t[t])
    return oj, on, od, nfree, cfree, mfree, tfree


@_compiled
def aux_set_quick(
    js: IntArray,
    c: FloatArray,
    m: FloatArray,
    running: BoolArray,
    alloc_n: IntArray,
    cpu_dev: FloatArray,
    mem_dev: FloatArray,
) -> bool:
    """Write a decision's CPU/memory allocations (cores ``c``, GB ``m`` per device of jobs
    ``js``) into ``cpu_dev``/``mem_dev`` when none needs a check: every value finite and not
    negative, and no running job's allocation grows (by more than a relative 1e-9). Returns
    ``False``, changing nothing, otherwise (the engine's Python then checks and raises, or
    fits the growth into the nodes' free cores and memory)."""
    k = len(js)
    for i in range(k):
        ci = c[i]
        mi = m[i]
        if ci < 0 or mi < 0 or not (np.isfinite(ci) and np.isfinite(mi)):
            return False
        j = js[i]
        grows = ci > cpu_dev[j] * (1 + 1e-9) or mi > mem_dev[j] * (1 + 1e-9)
        if running[j] and alloc_n[j] > 0 and grows:
            return False
    for i in range(k):
        cpu_dev[js[i]] = c[i]
        mem_dev[js[i]] = m[i]
    return True


@_compiled
def _drf_less(hs: FloatArray, hu: IntArray, a: int, b: int) -> bool:
    """Heap order of :func:`drf_fill`: smaller share, then smaller user."""
    return hs[a] < hs[b] or (hs[a] == hs[b] and hu[a] < hu[b])


@_compiled
def drf_fill(
    order: IntArray,
    users: IntArray,
    starts: IntArray,
    ends: IntArray,
    held: FloatArray,
    inv: FloatArray,
    slack: FloatArray,
    free: IntArray,
    left_c: float,
    left_m: float,
    gang: IntArray,
    cpu_dev: FloatArray,
    mem_dev: FloatArray,
    rate: FloatArray,
    alloc_type: IntArray,
    running: BoolArray,
    preemptive: bool,
    out: IntArray,
) -> int:
    """DRF's progressive filling of one decision (:class:`scheduling.drf.DRF`, whose
    docstring states the rule): ``order`` holds the candidates grouped by user (user ``users[k]``
    of group ``k`` holds ``order[starts[k]:ends[k]]``, in its order of service), ``held``
    (n_users, 3) the GPUs, cores and GB each user holds (updated), ``free`` (n_types,) the
    free devices (updated). The user with the smallest dominant share (ties: lowest user
    number) has its next job started if it fits; a user whose next job does not fit gets
    nothing more. Writes the started jobs to ``out`` in order and returns how many."""
    k_users = len(starts)
    hs = np.empty(k_users)  # heap: share, user, next position, end
    hu = np.empty(k_users, dtype=np.int64)
    hi = np.empty(k_users, dtype=np.int64)
    he = np.empty(k_users, dtype=np.int64)
    size = 0
    for g in range(k_users):
        u = users[g]
        hs[size] = max(held[u, 0] * inv[0], held[u, 1] * inv[1], held[u, 2] * inv[2])
        hu[size] = u
        hi[size] = starts[g]
        he[size] = ends[g]
        size += 1
        c = size - 1  # sift up
        while c > 0:
            p = (c - 1) // 2
            if not _drf_less(hs, hu, c, p):
                break
            hs[c], hs[p] = hs[p], hs[c]
            hu[c], hu[p] = hu[p], hu[c]
            hi[c], hi[p] = hi[p], hi[c]
            he[c], he[p] = he[p], he[c]
            c = p
    n_types = len(free)
    n_out = 0
    while size > 0:
        u = hu[0]
        i = hi[0]
        e = he[0]
        j = order[i]
        nd = gang[j]
        need_c = nd * cpu_dev[j]
        need_m = nd * mem_dev[j]
        t = -1
        if not (need_c > left_c + slack[1] or need_m > left_m + slack[2]):
            cur = alloc_type[j]
            if preemptive and running[j] and cur >= 0 and free[cur] >= nd:
                t = cur  # keep a running job where it is when it may stay
            else:
                best = 0.0
                for k in range(n_types):
                    r = rate[j, k]
                    if r > best and free[k] >= nd:
                        t = k
                        best = r
        if t >= 0:
            out[n_out] = j
            n_out += 1
            free[t] -= nd
            left_c -= need_c
            left_m -= need_m
            held[u, 0] += nd
            held[u, 1] += need_c
            held[u, 2] += need_m
        if t >= 0 and i + 1 < e:  # the user's next job, at its new share: replace the top
            hs[0] = max(held[u, 0] * inv[0], held[u, 1] * inv[1], held[u, 2] * inv[2])
            hi[0] = i + 1
        else:  # pop the top
            size -= 1
            hs[0] = hs[size]
            hu[0] = hu[size]
            hi[0] = hi[size]
            he[0] = he[size]
        c = 0  # sift down
        while True:
            a = 2 * c + 1
            if a >= size:
                break
            if a + 1 < size and _drf_less(hs, hu, a + 1, a):
                a += 1
            if not _drf_less(hs, hu, a, c):
                break
            hs[c], hs[a] = hs[a], hs[c]
            hu[c], hu[a] = hu[a], hu[c]
            hi[c], hi[a] = hi[a], hi[c]
            he[c], he[a] = he[a], he[c]
            c = a
    return n_out


@_compiled
def start_rates(
    ji: IntArray,
    rate: FloatArray,
    rc_i: IntArray,
    rc_f: FloatArray,
    nodes_i: IntArray,
    nodes_f: FloatArray,
    oversub: FloatArray,
    s_i: IntArray,
    s_nc: IntArray,
    s_f: FloatArray,
    ctr: IntArray,
) -> int:
    """Rate of each start of the decision, from what is known without the performance model.

    A one-device job on one device runs at its consolidated ``rate`` (n, n_types); any other
    start at the rate of its (job, type, devices, slowest link) key in the rate cache. Writes
    the link (GB/s, :func:`link_gbs`) and the rate, ``nan`` for a cache miss, to ``s_f`` and
    returns the number of misses.
    """
    misses = 0
    for s in range(ctr[CTR_STARTS]):
        j = s_i[0, s]
        t = s_i[1, s]
        nd = s_i[2, s]
        if nd == 1 and ji[JI_GANG, j] == 1:
            s_f[0, s] = np.inf
            s_f[1, s] = rate[j, t]
            continue
        o = s_i[3, s]
        link = link_gbs(
            s_nc[0, o : o + s_i[4, s]], nd, nodes_f[0], nodes_f[1], nodes_i[NODE_RACK], oversub
        )
        s_f[0, s] = link
        r = np.nan
        e = ji[JI_RC_HEAD, j]
        while e >= 0:
            if rc_i[1, e] == t and rc_i[2, e] == nd and rc_f[0, e] == link:
                r = rc_f[1, e]
                break
            e = rc_i[0, e]
        if r != r:
            misses += 1
        s_f[1, s] = r
    return misses


@_compiled
def start_jobs(
    now: float,
    marks: FloatArray,
    jf: FloatArray,
    ji: IntArray,
    jb: BoolArray,
    slots: IntArray,
    s_i: IntArray,
    s_nc: IntArray,
    s_f: FloatArray,
    run_order: IntArray,
    heap_t: FloatArray,
    heap_je: IntArray,
    ctr: IntArray,
) -> int:
    """Start the decision's starts (devices reserved) at their rates ``s_f[1]``, in order, and
    clear the list.

    A resumed job stalls for its restore delay and counts a migration when its nodes differ
    from its previous placement's; each job's predicted finish goes on the completion heap,
    and on the mark heap the moment it reaches its next service mark (``marks`` ascending,
    may be empty). The started jobs join ``run_order`` at its end.

    Returns
    -------
    int
        -1, or the first job whose rate is not positive (which is not started; the starts
        after it neither).
    """
    n_run = ctr[CTR_RUN]
    bad = -1
    for s in range(ctr[CTR_STARTS]):
        j = s_i[0, s]
        r = s_f[1, s]
        if not r > 0.0:
            bad = j
            break
        t = s_i[1, s]
        nd = s_i[2, s]
        o = s_i[3, s]
        k = s_i[4, s]
        first = jf[JF_FIRST_START, j]
        resumed = first == first
        slot = ji[JI_SLOT, j]
        if resumed:
            stall = now + jf[JF_RESTORE, j]
            moved = k != ji[JI_PLACED, j]
            if not moved:
                for i in range(k):
                    if s_nc[0, o + i] != slots[0, slot + i]:
                        moved = True
                        break
            if moved:
                ji[JI_MIGRATIONS, j] += 1
        else:
            stall = now
            jf[JF_FIRST_START, j] = now
        for i in range(k):
            slots[0, slot + i] = s_nc[0, o + i]
            slots[1, slot + i] = s_nc[1, o + i]
        ji[JI_PLACED, j] = k
        if k > ji[JI_MAX_NODES, j]:
            ji[JI_MAX_NODES, j] = k
        fin = stall + jf[JF_REMAINING, j] / r
        jf[JF_LAST_START, j] = now
        jf[JF_BASE_T, j] = now
        jf[JF_EXE0, j] = jf[JF_EXECUTED, j]
        jf[JF_ATT0, j] = jf[JF_ATTAINED, j]
        jf[JF_TT_SYNCED, j] = now
        jb[JB_RUNNING, j] = True
        ji[JI_ALLOC_TYPE, j] = t
        ji[JI_ALLOC_N, j] = nd
        jf[JF_STALL, j] = stall
        jf[JF_ROUND_REM, j] = jf[JF_REMAINING, j]
        jf[JF_CRATE, j] = r
        jf[JF_FIN, j] = fin
        run_order[n_run] = j
        n_run += 1
        e = ji[JI_EPOCH, j]
        heap_push(heap_t, heap_je, ctr, HEAP_FINISH, fin, j, e)
        if len(marks):
            push_mark(marks, heap_t, heap_je, ctr, j, now, jf[JF_ATTAINED, j], nd, e)
    ctr[CTR_RUN] = n_run
    ctr[CTR_STARTS] = 0
    ctr[CTR_START_NODES] = 0
    return bad


@_compiled
def reserve_and_start(
    cand: IntArray,
    m: int,
    i0: int,
    greedy: bool,
    blocking: bool,
    placing: int,
    now: float,
    rate: FloatArray,
    marks: FloatArray,
    mark: Int8Array,
    jf: FloatArray,
    ji: IntArray,
    jb: BoolArray,
    nodes_i: IntArray,
    nodes_f: FloatArray,
    oversub: FloatArray,
    busy: FloatArray,
    types_i: IntArray,
    type_off: IntArray,
    slots: IntArray,
    s_i: IntArray,
    s_nc: IntArray,
    s_f: FloatArray,
    rc_i: IntArray,
    rc_f: FloatArray,
    run_order: IntArray,
    heap_t: FloatArray,
    heap_je: IntArray,
    ctr: IntArray,
) -> tuple[int, int, int]:
    """Reserve devices for the candidates ``cand[:, i0:m]`` in order, then start them
    (:func:`start_rates`, :func:`start_jobs`).

    Gangs are placed as ``placing`` says (:func:`_reserve_one`); for one the placement
    strategy must place, the kernel returns ``(STATUS_PLACE, i, t)``: the caller asks the
    strategy for candidate ``i`` on type ``t``, records the outcome (:func:`record_start`;
    ``mark`` the job when ``greedy``) and calls again from ``i + 1`` (a greedy caller ends the
    list at ``i`` instead when the strategy fails and ``blocking``). When some starts need the
    performance model it returns ``(STATUS_RATES, misses, 0)`` with their rates ``nan``: the
    caller fills them in and calls :func:`start_jobs`.

    Preemptive decisions (not ``greedy``): the candidates are the planned starts
    (:func:`plan_preemptive`): rows job, type, devices; one that cannot be reserved is
    skipped. Greedy decisions: rows job, wanted type (-1: the engine's choice), devices;
    running jobs and jobs already reserved by this decision are skipped; a job is tried only
    when some type has ``devices`` free, on the wanted type, else its current type, else the
    type with room on which it is fastest (one type: that type, if the job can run there);
    the first failure ends the decision when ``blocking``, and so does a full cluster.
    ``mark`` (n,) int8 is scratch, all zero on entry and when the reservations are done.

    Returns
    -------
    (status, a, b)
        ``STATUS_*`` and its details (``STATUS_DONE``: ``a`` is as :func:`start_jobs`
        returns).
    """
    free = types_i[TYPE_FREE]
    n_types = len(free)
    max_free = 0
    for k in range(n_types):
        max_free = max(max_free, free[k])
    for i in range(i0, m):
        j = cand[0, i]
        nd = cand[2, i]
        t = cand[1, i]
        if greedy:
            if jb[JB_RUNNING, j] or mark[j] != 0:
                continue
            if max_free == 0:
                break
            got = 0
            if nd <= max_free:
                if t < 0:
                    if n_types == 1:
                        t = 0 if free[0] >= nd and rate[j, 0] > 0 else -1
                    elif ji[JI_ALLOC_TYPE, j] >= 0:
                        t = ji[JI_ALLOC_TYPE, j]
                    else:
                        t = fastest_type(rate, j, free, nd)
                if t >= 0:
                    got = _reserve_one(
                        j, t, nd, placing, nodes_i, busy, types_i, type_off, s_i, s_nc, ctr
                    )
        else:
            got = _reserve_one(j, t, nd, placing, nodes_i, busy, types_i, type_off, s_i, s_nc, ctr)
        if got < 0:
            return STATUS_PLACE, i, t
        if greedy:
            if got == 0:
                if blocking:
                    break
                continue
            mark[j] = 1
            max_free = 0
            for k in range(n_types):
                max_free = max(max_free, free[k])
    for s in range(ctr[CTR_STARTS]):
        mark[s_i[0, s]] = 0
    misses = start_rates(ji, rate, rc_i, rc_f, nodes_i, nodes_f, oversub, s_i, s_nc, s_f, ctr)
    if misses:
        return STATUS_RATES, misses, 0
    bad = start_jobs(now, marks, jf, ji, jb, slots, s_i, s_nc, s_f, run_order, heap_t, heap_je, ctr)
    return STATUS_DONE, bad, 0


@_compiled
def decide_greedy(
    run: IntArray,
    nds: IntArray,
    types: IntArray,
    blocking: bool,
    placing: int,
    now: float,
    rate: FloatArray,
    marks: FloatArray,
    mark: Int8Array,
    plan: IntArray,
    jf: FloatArray,
    ji: IntArray,
    jb: BoolArray,
    nodes_i: IntArray,
    nodes_f: FloatArray,
    oversub: FloatArray,
    busy: FloatArray,
    types_i: IntArray,
    type_off: IntArray,
    slots: IntArray,
    s_i: IntArray,
    s_nc: IntArray,
    s_f: FloatArray,
    rc_i: IntArray,
    rc_f: FloatArray,
    run_order: IntArray,
    heap_t: FloatArray,
    heap_je: IntArray,
    ctr: IntArray,
) -> tuple[int, int, int]:
    """Apply a greedy (non-preemptive) decision: check that every listed job is active, write
    the candidates to ``plan`` (rows job, wanted type, devices) and :func:`reserve_and_start`
    them with ``greedy``.

    Parameters
    ----------
    run : (m,) int64
        Jobs to start, in order.
    nds : (m,) or (0,) int64
        Devices per listed job; empty: each job's gang (``ji[JI_GANG]``).
    types : (m,) or (0,) int64
        Wanted type per listed job, -1 for the engine's choice; empty: all -1.
    plan : (>= 3, >= m) int64
        Out: the candidates, as :func:`reserve_and_start` takes them (and the caller resumes
        it with).
    Others
        The engine's packed state (see above).

    Returns
    -------
    (status, a, b)
        ``(STATUS_BAD, job, BAD_INACTIVE)`` for the first listed job that is not active
        (nothing changed), else as :func:`reserve_and_start` returns.
    """
    m = len(run)
    use_nds = len(nds) == m
    use_types = len(types) == m
    for i in range(m):
        j = run[i]
        if not jb[JB_ACTIVE, j]:
            return STATUS_BAD, j, BAD_INACTIVE
        plan[0, i] = j
        plan[1, i] = types[i] if use_types else -1
        plan[2, i] = nds[i] if use_nds else ji[JI_GANG, j]
    return reserve_and_start(
        plan,
        m,
        0,
        True,
        blocking,
        placing,
        now,
        rate,
        marks,
        mark,
        jf,
        ji,
        jb,
        nodes_i,
        nodes_f,
        oversub,
        busy,
        types_i,
        type_off,
        slots,
        s_i,
        s_nc,
        s_f,
        rc_i,
        rc_f,
        run_order,
        heap_t,
        heap_je,
        ctr,
    )


@_compiled
def queued_head(a: IntArray, is_active: BoolArray, running: BoolArray, limit: int) -> IntArray:
    """The first ``limit`` jobs of ``a`` (k,) int64 that are active and not running, in the
    order of ``a`` (a new array)."""
    out = np.empty(max(0, min(limit, len(a))), dtype=np.int64)
    k = 0
    for j in a:
        if k == len(out):
            break
        if is_active[j] and not running[j]:
            out[k] = j
            k += 1
    return out[:k]


@_compiled
def least_first(active: IntArray, key: FloatArray, order: IntArray, k: int, mark: Int8Array) -> int:
    """Order the ``active`` jobs (k', ascending) by ``key`` (n,) float64 ascending, ties to the
    lower job index, starting from a previous order: a stable sort, cheap when the order
    changes little between calls (least-attained-service policies).

    ``order[:k]`` (n,) int64 holds the previous order on entry; its jobs no longer active are
    dropped, the active jobs not in it are appended (ascending) and the whole is sorted in
    place by insertion, or by a merge sort once the insertions have moved more than a few
    entries per job. ``mark`` (n,) int8 is scratch, all zero on entry and on return; ``key``
    holds no ``nan``. Returns how many jobs ``order`` now lists (``len(active)``).
    """
    for j in active:
        mark[j] = 1
    m = 0
    for i in range(k):
        j = order[i]
        if mark[j] == 1:
            order[m] = j
            m += 1
            mark[j] = 2
    for j in active:
        if mark[j] == 1:
            order[m] = j
            m += 1
        mark[j] = 0
    budget = 8 * m + 64  # entries moved before the insertion sort gives up
    moved = 0
    for i in range(1, m):
        j = order[i]
        x = key[j]
        p = i - 1
        while p >= 0 and (key[order[p]] > x or (key[order[p]] == x and order[p] > j)):
            order[p + 1] = order[p]
            p -= 1
        order[p + 1] = j
        moved += i - 1 - p
        if moved > budget:
            keys = np.empty(m)
            # stable: ties keep their order, which is by job index ascending once sorted;
            # sort by index first so that this holds whatever came before
            order[:m].sort()
            for q in range(m):
                keys[q] = key[order[q]]
            order[:m] = order[:m][np.argsort(keys, kind="mergesort")]
            break
    return m


@_compiled
def decide_preemptive(
    run: IntArray,
    nds: IntArray,
    types: IntArray,
    blocking: bool,
    placing: int,
    now: float,
    rate: FloatArray,
    marks: FloatArray,
    mark: Int8Array,
    plan: IntArray,
    jf: FloatArray,
    ji: IntArray,
    jb: BoolArray,
    type_time: FloatArray,
    device_time: FloatArray,
    nodes_i: IntArray,
    nodes_f: FloatArray,
    oversub: FloatArray,
    busy: FloatArray,
    types_i: IntArray,
    type_off: IntArray,
    slots: IntArray,
    st_i: IntArray,
    st_f: FloatArray,
    s_i: IntArray,
    s_nc: IntArray,
    s_f: FloatArray,
    rc_i: IntArray,
    rc_f: FloatArray,
    run_order: IntArray,
    heap_t: FloatArray,
    heap_je: IntArray,
    ctr: IntArray,
) -> tuple[int, int, int]:
    """Apply a preemptive decision: :func:`plan_preemptive`, then suspend the running jobs it
    does not keep (one more preemption each, :func:`stop_jobs` in ascending order), then
    :func:`reserve_and_start` the planned starts in priority order. ``run_order`` becomes the
    kept jobs in priority order, then the started ones.

    Parameters
    ----------
    run, nds, types, blocking
        The decision, as :func:`plan_preemptive` takes it.
    plan : (5, >= max(m, running)) int64
        Out: rows ``go_job``, ``go_type``, ``go_n``, ``kept``, ``stop`` of
        :func:`plan_preemptive`; the first three are the candidates to resume
        :func:`reserve_and_start` with.
    Others
        The engine's packed state (see above).

    Returns
    -------
    (status, a, b)
        ``(STATUS_BAD, job, why)`` when the plan finds the decision invalid (nothing
        changed), else as :func:`reserve_and_start` returns.
    """
    n_run = ctr[CTR_RUN]
    n_go, n_kept, n_stop, bad, why = plan_preemptive(
        run,
        nds,
        types,
        ji[JI_GANG],
        rate,
        types_i[TYPE_CAPACITY].copy(),
        blocking,
        jb[JB_RUNNING],
        ji[JI_ALLOC_N],
        ji[JI_ALLOC_TYPE],
        jb[JB_ACTIVE],
        run_order[:n_run],
        mark,
        plan[0],
        plan[1],
        plan[2],
        plan[3],
        plan[4],
    )
    if bad >= 0:
        return STATUS_BAD, bad, why
    ctr[CTR_PLANNED] = n_go
    stop = plan[4, :n_stop]
    for j in stop:
        ji[JI_PREEMPTIONS, j] += 1
    stop_jobs(
        stop,
        False,
        now,
        jf,
        ji,
        jb,
        type_time,
        device_time,
        nodes_i,
        busy,
        types_i,
        slots,
        st_i,
        st_f,
        run_order,
        ctr,
    )
    for i in range(n_kept):
        run_order[i] = plan[3, i]
    ctr[CTR_RUN] = n_kept
    if n_go == 0:
        return STATUS_DONE, -1, 0
    return reserve_and_start(
        plan,
        n_go,
        0,
        False,
        blocking,
        placing,
        now,
        rate,
        marks,
        mark,
        jf,
        ji,
        jb,
        nodes_i,
        nodes_f,
        oversub,
        busy,
        types_i,
        type_off,
        slots,
        s_i,
        s_nc,
        s_f,
        rc_i,
        rc_f,
        run_order,
        heap_t,
        heap_je,
        ctr,
    )


@_compiled
def sync_packed(
    jobs: IntArray, k: int, what: int, now: float, capped: bool, jf: FloatArray, ji: IntArray
) -> None:
    """:func:`sync_running` of running jobs ``jobs[:k]`` on the engine's packed state (see
    above): fewer arguments to pass at every policy call."""
    sync_running(
        jobs[:k],
        what,
        now,
        capped,
        jf[JF_CAP],
        jf[JF_BASE_T],
        jf[JF_STALL],
        ji[JI_ALLOC_N],
        jf[JF_EXE0],
        jf[JF_ATT0],
        jf[JF_ROUND_REM],
        jf[JF_CRATE],
        jf[JF_SHARE],
        jf[JF_EXECUTED],
        jf[JF_ATTAINED],
        jf[JF_REMAINING],
    )


@_compiled
def sync_types_packed(
    run_order: IntArray,
    k: int,
    now: float,
    jf: FloatArray,
    ji: IntArray,
    type_time: FloatArray,
    device_time: FloatArray,
) -> None:
    """Bring the time on each type and the device-time of the first ``k`` jobs of
    ``run_order`` (the running jobs) up to ``now`` (to their cap in a whole-step round).

    Parameters
    ----------
    run_order : (>= k,) int64
        Running jobs first.
    k
        Running jobs.
    now
        Current time, s.
    jf : (N_JF, n) float64
        Per-job floats (rows ``JF_*``); ``JF_TT_SYNCED`` is updated.
    ji : (N_JI, n) int64
        Per-job integers (rows ``JI_*``).
    type_time, device_time : (n, n_types) float64
        Seconds, and device-seconds, each job has held devices of each type; updated.
    """
    for i in range(k):
        j = run_order[i]
        c = jf[JF_CAP, j]
        upto = now if now < c else c
        dt = upto - jf[JF_TT_SYNCED, j]
        t = ji[JI_ALLOC_TYPE, j]
        type_time[j, t] += dt
        device_time[j, t] += dt * ji[JI_ALLOC_N, j]
        jf[JF_TT_SYNCED, j] = upto


@_compiled
def rearm_whole_steps(
    run_order: IntArray,
    k: int,
    now: float,
    round_len: float,
    jf: FloatArray,
    ji: IntArray,
    heap_t: FloatArray,
    heap_je: IntArray,
    ctr: IntArray,
) -> float:
    """Start a whole-step round (Gavel's rounds): each of the first ``k`` jobs of
    ``run_order`` (the running jobs, their progress brought up to ``now``) may do
    ``floor(rate × round_len)`` work units this round, from the end of its restore stall.

    Sets each job's predicted finish, cap (when its share is done), share and round start;
    time idle after the previous share is not service. Bumps the jobs' epochs (their heap
    entries go stale) and pushes a completion for each job whose share is all its work left
    (the heap must have room for ``k`` more entries).

    Returns
    -------
    float
        The round's end: when the last job has done its share (or finished).
    """
    end = -np.inf
    for i in range(k):
        j = run_order[i]
        r = jf[JF_CRATE, j]
        rem = jf[JF_REMAINING, j]
        st = jf[JF_STALL, j]
        begin = now if now >= st else st
        share = np.floor(r * round_len)
        if rem < share:
            share = rem
        fin = begin + rem / r
        cap = begin + share / r
        done = share >= rem
        if done:
            cap = fin
        jf[JF_FIN, j] = fin
        jf[JF_CAP, j] = cap
        jf[JF_ROUND_REM, j] = rem
        jf[JF_SHARE, j] = share
        jf[JF_STALL, j] = begin
        jf[JF_BASE_T, j] = now
        jf[JF_EXE0, j] = jf[JF_EXECUTED, j]
        jf[JF_ATT0, j] = jf[JF_ATTAINED, j]
        jf[JF_TT_SYNCED, j] = now
        ji[JI_EPOCH, j] += 1
        if done:
            heap_push(heap_t, heap_je, ctr, HEAP_FINISH, fin, j, ji[JI_EPOCH, j])
        if cap > end:
            end = cap
    return end


# ---------------------------------------------------------------------- Tiresias queues
TIRESIAS_UNSEEN = -1  # ``qid`` of a job the policy has not seen yet
TIRESIAS_GONE = -2  # ``qid`` of a job that finished or was dropped
# rows of the policy's int64 memory (see tiresias_order)
TQ_QID, TQ_BLK, TQ_POS, TQ_NXT, TQ_PRV, TQ_MARK, TQ_BUF, TQ_ORDER = range(8)
TQ_SIM, TQ_PY2, TQ_PREDICT = 1, 2, 4  # flags
TQ_EPS = 1e-6  # device-seconds: a job this close to a threshold has reached it


@_compiled
def _tq_unlink(
    j: int,
    qid: IntArray,
    blk: IntArray,
    nxt: IntArray,
    prv: IntArray,
    head: IntArray,
    tail: IntArray,
) -> None:
    h = qid[j] * 2 + blk[j]
    p = prv[j]
    x = nxt[j]
    if p >= 0:
        nxt[p] = x
    else:
        head[h] = x
    if x >= 0:
        prv[x] = p
    else:
        tail[h] = p
    prv[j] = -1
    nxt[j] = -1


@_compiled
def _tq_append(
    j: int,
    q: int,
    b: int,
    qid: IntArray,
    blk: IntArray,
    nxt: IntArray,
    prv: IntArray,
    head: IntArray,
    tail: IntArray,
) -> None:
    h = q * 2 + b
    qid[j] = q
    blk[j] = b
    t = tail[h]
    prv[j] = t
    nxt[j] = -1
    if t >= 0:
        nxt[t] = j
    else:
        head[h] = j
    tail[h] = j


@_compiled
def _tq_sort(buf: IntArray, m: int, key1: IntArray, key2: IntArray) -> None:
    """Sort ``buf[:m]`` by ``(key1[j], key2[j])`` (insertion sort: ``m`` is small)."""
    for i in range(1, m):
        j = buf[i]
        k = i - 1
        while k >= 0 and (
            key1[buf[k]] > key1[j] or (key1[buf[k]] == key1[j] and key2[buf[k]] > key2[j])
        ):
            buf[k + 1] = buf[k]
            k -= 1
        buf[k + 1] = j


@_compiled
def tiresias_order(
    running_jobs: IntArray,
    is_active: BoolArray,
    running: BoolArray,
    attained: FloatArray,
    gang: IntArray,
    submit: FloatArray,
    rate: FloatArray,
    alloc_type: IntArray,
    capacity: IntArray,
    now: float,
    elapsed: float,
    thr: FloatArray,
    knob: float,
    flags: int,
    mem: IntArray,
    ends: IntArray,
    fmem: FloatArray,
) -> tuple[int, float]:
    """One decision of Tiresias's discretised 2D-LAS with the queues its simulator keeps.

    Each queue is a list of two blocks, its running jobs then its waiting ones (doubly linked
    through ``nxt``/``prv``; block ``b`` of queue ``q`` is list ``2q + b`` of ``head``/``tail``;
    ``pos`` increases along every list). In the order of the Tiresias simulator's event
    handling, this

    1. applies the previous decision: jobs that started move to the end of their queue's
       running block, in list order; jobs that were stopped move to the front of its waiting
       block, in their running order; jobs that left are unlinked (those found in a running
       block here, the others whenever a walk meets them);
    2. with ``knob > 0``, adds ``elapsed`` to the pending time ``lp`` of every waiting job
       with queue service;
    3. appends arrivals (jobs after the last one looked at, submitted by ``now`` and active)
       to queue 0, in index order;
    4. demotes, in index order, each running job whose queue service (``attained - off``)
       reached its queue's threshold to the back of the next queue (one queue a call with
       ``TQ_SIM``, as far as its service goes otherwise); with ``knob > 0`` promotes, in
       index order, each waiting job of a lower queue whose pending time reached ``knob``
       times its queue service in seconds to the back of queue 0, resetting that service;
    5. writes the priority order (queue by queue, running block first) to ``order``, counting
       devices along it (a job keeps its type when it fits there, else takes the fastest type
       with room: the engine's rule) and stopping once every type is full: the jobs after
       that cannot run, so the order need not list them.

    With ``TQ_PREDICT``, it also returns when the next queue change is due: a job that will
    run reaching its threshold, or a waiting one its promotion. With ``TQ_SIM`` these are the
    Tiresias simulator's times (whole seconds; its demotion estimate divides the GPU-time left
    by the gang size with the executed *time* in place of the executed GPU-time, so a
    multi-GPU job may be checked before its crossing and then demoted only at the first event
    after it).

    Cost: O(running jobs + arrivals + the order written), and O(waiting jobs) more with
    ``knob > 0``.

    Parameters
    ----------
    running_jobs : (r,) int64
        The jobs holding devices now (the previous decision, applied), any order.
    is_active, running : (n,) bool
        The engine's per-job flags.
    attained : (n,) float64
        Device-seconds of service.
    gang : (n,) int64
        Devices per job.
    submit : (n,) float64
        Submit times, ascending.
    rate : (n, n_types) float64
        Throughputs (0: the job cannot run on the type).
    alloc_type : (n,) int64
        Current type of running jobs.
    capacity : (n_types,) int64
        Devices of each type.
    now, elapsed
        Current time and time since the previous call, s.
    thr : (q - 1,) float64
        Queue thresholds in device-seconds, ascending.
    knob
        Starvation knob (``PROMOTEKNOB``); 0 disables promotion.
    flags
        ``TQ_SIM``: the Tiresias simulator's integer timing rules (see above); ``TQ_PY2``:
        with it, its demotion estimate as Python 2 computes it (the division floors; under
        Python 3 it is a true division rounded up); ``TQ_PREDICT``: compute the wake-up time.
    mem : (8, n) int64
        The policy's memory, rows ``TQ_QID`` (queue, ``TIRESIAS_UNSEEN`` or
        ``TIRESIAS_GONE``), ``TQ_BLK`` (block), ``TQ_POS``, ``TQ_NXT``, ``TQ_PRV`` (links),
        and scratch rows ``TQ_MARK`` (all zero on entry and on return), ``TQ_BUF``,
        ``TQ_ORDER`` (out: the priority order). In place.
    ends : (4 q + 3 + n_types,) int64
        First and last job of each list (``head`` then ``tail``, -1 when empty), the lowest
        and highest ``pos`` given so far and the last job index looked at for arrivals, then
        scratch for the types. In place.
    fmem : (2, n) float64
        Service offset since the last promotion, pending time since then. In place.

    Returns
    -------
    (k, wake)
        Jobs written to the order row; the next wake-up time (``inf`` when none, or without
        ``TQ_PREDICT``).
    """
    qid = mem[TQ_QID]
    blk = mem[TQ_BLK]
    pos = mem[TQ_POS]
    nxt = mem[TQ_NXT]
    prv = mem[TQ_PRV]
    mark = mem[TQ_MARK]
    buf = mem[TQ_BUF]
    order = mem[TQ_ORDER]
    nq = len(thr) + 1
    head = ends[: 2 * nq]
    tail = ends[2 * nq : 4 * nq]
    counters = ends[4 * nq : 4 * nq + 3]
    left = ends[4 * nq + 3 :]
    off = fmem[0]
    lp = fmem[1]
    sim_timing = (flags & TQ_SIM) != 0
    py2_division = (flags & TQ_PY2) != 0
    predict = (flags & TQ_PREDICT) != 0
    eps = TQ_EPS
    n = len(qid)
    # 1. the previous decision: stopped jobs to the front of their waiting block ...
    for q in range(nq):
        ns = 0
        j = head[2 * q]
        while j >= 0:
            x = nxt[j]
            if not is_active[j]:
                _tq_unlink(j, qid, blk, nxt, prv, head, tail)
                qid[j] = TIRESIAS_GONE
            elif not running[j]:
                _tq_unlink(j, qid, blk, nxt, prv, head, tail)
                buf[ns] = j
                ns += 1
            j = x
        for i in range(ns - 1, -1, -1):
            j = buf[i]
            counters[0] -= 1
            pos[j] = counters[0]
            # at the front: appending to the list read backwards
            _tq_append(j, q, 1, qid, blk, prv, nxt, tail, head)
    # ... started ones to the end of their running block, in list order; the same pass
    # notes the running jobs that step 4 may demote in ``order`` (free until step 5): those
    # due now (the steps between change neither the queue nor the service of a job already
    # queued) and those not seen yet (step 3 may queue them)
    ns = 0
    n_dem = 0
    for j in running_jobs:
        q = qid[j]
        if q >= 0:
            if blk[j] == 1:
                buf[ns] = j
                ns += 1
            if q < nq - 1 and attained[j] - off[j] + eps >= thr[q]:
                order[n_dem] = j
                n_dem += 1
        elif q == TIRESIAS_UNSEEN:
            order[n_dem] = j
            n_dem += 1
    _tq_sort(buf, ns, qid, pos)
    for i in range(ns):
        j = buf[i]
        _tq_unlink(j, qid, blk, nxt, prv, head, tail)
        counters[1] += 1
        pos[j] = counters[1]
        _tq_append(j, qid[j], 0, qid, blk, nxt, prv, head, tail)
    # 2. pending time of waiting jobs that have queue service
    if knob > 0.0 and elapsed > 0.0:
        for q in range(nq):
            j = head[2 * q + 1]
            while j >= 0:
                x = nxt[j]
                if not is_active[j]:
                    _tq_unlink(j, qid, blk, nxt, prv, head, tail)
                    qid[j] = TIRESIAS_GONE
                elif attained[j] - off[j] > eps:
                    lp[j] += elapsed
                j = x
    # 3. arrivals
    j = counters[2] + 1
    while j < n and submit[j] <= now:
        if is_active[j] and qid[j] == TIRESIAS_UNSEEN:
            off[j] = 0.0
            lp[j] = 0.0
            counters[1] += 1
            pos[j] = counters[1]
            _tq_append(j, 0, 1, qid, blk, nxt, prv, head, tail)
        counters[2] = j
        j += 1
    # 4. demotions (running jobs), then promotions (waiting ones), each in index order
    ns = 0
    for i in range(n_dem):
        j = order[i]
        q = qid[j]
        if q >= 0 and q < nq - 1 and attained[j] - off[j] + eps >= thr[q]:
            order[ns] = j
            ns += 1
    order[:ns].sort()
    for i in range(ns):
        j = order[i]
        s = attained[j] - off[j]
        to = qid[j] + 1
        if not sim_timing:
            while to < nq - 1 and s + eps >= thr[to]:
                to += 1
        _tq_unlink(j, qid, blk, nxt, prv, head, tail)
        counters[1] += 1
        pos[j] = counters[1]
        _tq_append(j, to, 1, qid, blk, nxt, prv, head, tail)
    if knob > 0.0:
        ns = 0
        for q in range(1, nq):
            j = head[2 * q + 1]
            while j >= 0:
                x = nxt[j]
                if not is_active[j]:
                    _tq_unlink(j, qid, blk, nxt, prv, head, tail)
                    qid[j] = TIRESIAS_GONE
                elif not running[j]:  # (a job demoted just now waits here, running)
                    s = attained[j] - off[j]
                    if s > eps:
                        due = s / gang[j] * knob
                        if sim_timing:
                            due = np.floor(due)
                        if lp[j] + eps >= due:
                            buf[ns] = j
                            ns += 1
                j = x
        buf[:ns].sort()
        for i in range(ns):
            j = buf[i]
            off[j] = attained[j]
            lp[j] = 0.0
            _tq_unlink(j, qid, blk, nxt, prv, head, tail)
            counters[1] += 1
            pos[j] = counters[1]
            _tq_append(j, 0, 1, qid, blk, nxt, prv, head, tail)
    # 5. the order, counted along until every type is full
    for t in range(len(left)):
        left[t] = capacity[t]
    most = 0
    for t in range(len(left)):
        most = max(most, left[t])
    wake = np.inf
    k = 0
    nf = 0  # jobs that will run, in buf
    full = most == 0
    for h in range(2 * nq):
        if full:
            break
        q = h // 2
        j = head[h]
        while j >= 0:
            x = nxt[j]
            if not is_active[j]:
                _tq_unlink(j, qid, blk, nxt, prv, head, tail)
                qid[j] = TIRESIAS_GONE
                j = x
                continue
            order[k] = j
            k += 1
            g = gang[j]
            if g <= most:
                cur = alloc_type[j]
                t = cur if running[j] and cur >= 0 and left[cur] >= g else -1
                if t < 0:
                    t = fastest_type(rate, j, left, g)
                if t >= 0 and left[t] >= g:
                    left[t] -= g
                    buf[nf] = j
                    nf += 1
                    if predict and q < nq - 1:
                        s = attained[j] - off[j]
                        if sim_timing:
                            w = (thr[q] - np.floor(s / g + 0.5)) / g
                            w = now + (np.floor(w) if py2_division else np.ceil(w))
                        else:
                            w = now + (thr[q] - s) / g
                        wake = min(wake, w)
                    most = 0
                    for tt in range(len(left)):
                        most = max(most, left[tt])
                    if most == 0:
                        full = True
                        break
            j = x
    if predict and knob > 0.0:  # promotions of the jobs that will wait, wherever they are
        for i in range(nf):
            mark[buf[i]] = 1
        for q in range(1, nq):
            for b in range(2):
                j = head[2 * q + b]
                while j >= 0:
                    s = attained[j] - off[j]
                    if mark[j] == 0 and is_active[j] and s > eps:
                        left_s = s / gang[j] * knob - lp[j]
                        if sim_timing:
                            left_s = float(int(left_s))
                        if left_s > 0.0:
                            wake = min(wake, now + left_s)
                    j = nxt[j]
        for i in range(nf):
            mark[buf[i]] = 0
    return k, wake


@_compiled
def yarn_nodes(
    free: IntArray,
    candidates: IntArray,
    rack: IntArray,
    cap: IntArray,
    nd: int,
    out_nodes: IntArray,
    out_counts: IntArray,
) -> int:
    """Nodes for ``nd`` devices as the Tiresias simulator's ``yarn`` scheme picks them
    (:class:`scheduling.placement.Yarn`): one rack, racks in ascending order; a gang no larger
    than a node (the rack's largest) on the first node with room, a larger one on the first
    ``nd // per_node`` wholly idle nodes and, for the rest, the first other node with room.

    Parameters
    ----------
    free : (n_nodes,) int64
        Free devices per node.
    candidates : (c,) int64
        Nodes to consider, ascending.
    rack, cap : (n_nodes,) int64
        Rack and devices of each node.
    nd
        Devices wanted.
    out_nodes, out_counts : (>= c,) int64
        Out: the nodes taken and the devices taken on each.

    Returns
    -------
    int
        Nodes written to the outputs; 0 when no rack can hold the gang that way.
    """
    c = len(candidates)
    last = -1
    while True:
        r = -1
        for i in range(c):
            ri = rack[candidates[i]]
            if ri > last and (r < 0 or ri < r):
                r = ri
        if r < 0:
            return 0
        last = r
        per_node = 0
        for i in range(c):
            node = candidates[i]
            if rack[node] == r and cap[node] > per_node:
                per_node = cap[node]
        if nd <= per_node:
            for i in range(c):
                node = candidates[i]
                if rack[node] == r and free[node] >= nd:
                    out_nodes[0] = node
                    out_counts[0] = nd
                    return 1
            continue
        full = nd // per_node
        rest = nd - full * per_node
        k = 0
        for i in range(c):
            node = candidates[i]
            if k < full and rack[node] == r and free[node] == cap[node]:
                out_nodes[k] = node
                out_counts[k] = cap[node]
                k += 1
        if k < full:
            continue
        if rest == 0:
            return k
        for i in range(c):
            node = candidates[i]
            if rack[node] != r or free[node] < rest:
                continue
            taken = False
            for m in range(k):
                if out_nodes[m] == node:
                    taken = True
                    break
            if not taken:
                out_nodes[k] = node
                out_counts[k] = rest
                return k + 1


@_compiled
def gavel_pass(
    active: IntArray,
    order: IntArray,
    type_time: FloatArray,
    adj: FloatArray,
    tt0: FloatArray,
    x: FloatArray,
    in_alloc: BoolArray,
    deficit: FloatArray,
    rate: FloatArray,
    gang: IntArray,
    capacity: IntArray,
    remaining: FloatArray,
    in_steps: BoolArray,
    half: float,
    base: float,
    skip_unprioritised: bool,
    touched: IntArray,
    n_touched: int,
    mark: Int8Array,
    out_job: IntArray,
    out_type: IntArray,
    out_fail: IntArray,
) -> tuple[int, int, int]:
    """One placement pass of Gavel's round mechanism (:class:`scheduling.gavel.GavelRounds`).

    Each (active job ``j``, type ``t``) pair gets the priority ``x[j, t] / (job_time /
    type_total)``, where ``job_time = half + credited[j, t] - tt0[j, t]`` (``credited =
    type_time + adj``: the time Gavel has credited the job on the type) and ``type_total[t] =
    base + Σ_i (credited[i, t] - tt0[i, t])`` over every job of the trace; a share of 0, a
    rate of 0 or a job outside the allocation (``~in_alloc``) gives priority 0, a fraction of
    0 the priority ``x × 1e9``. Types are visited in ``order``; on each, the jobs that can run
    there and whose gang fits in the devices left (with ``skip_unprioritised``, only those of
    positive priority) are ranked by decreasing priority, then deficit, then share, then
    ascending position in ``active``, and placed greedily: a job is taken when its gang fits in
    the room left and it was not placed on an earlier type. Placed jobs outside the allocation
    hold their devices but are not returned; placed multi-device jobs whose work is counted in
    steps (``in_steps``) and that have fewer steps left than devices fail (Gavel's failed
    micro-task): they hold their devices but do not run.

    The sum over every job is taken only over the rows that can differ from 0, ``touched``:
    the jobs returned since ``tt0`` was last set (elsewhere ``credited == tt0`` holds, as only
    a job that runs gains time). They are summed in ascending job order, one after the other,
    the order in which numpy sums the rows of an ``(n, n_types)`` array with two types or
    more, so the totals are those of that sum over all rows bit for bit. Cost: O(active +
    touched) array operations and a sort of the candidates per type.

    Parameters
    ----------
    active : (k,) int64
        The jobs to consider, ascending.
    order : (n_types,) int64
        Type indices in the order to visit them.
    type_time, adj, tt0 : (n, n_types) float64
        Time each job held each type; extra time credited to it there; ``credited`` at the
        last allocation reset.
    x : (n, n_types) float64
        The allocation (time shares).
    in_alloc : (n,) bool
        The job is in the allocation.
    deficit : (n, n_types) float64
        Gavel's deficits.
    rate : (n, n_types) float64
        Throughputs (0: the job cannot run on the type).
    gang : (n,) int64
        Devices per job.
    capacity : (n_types,) int64
        Devices of each type.
    remaining : (n,) float64
        Work left (steps for the jobs ``in_steps``).
    in_steps : (n,) bool
        The job's work is counted in whole steps.
    half
        Half a round, s (Gavel's credit for a job's first round).
    base
        Half a round times the jobs active at the last reset, s.
    skip_unprioritised
        Never rank a job of priority 0.
    touched : (>= n,) int64
        The first ``n_touched`` entries: the jobs whose ``credited`` may differ from ``tt0``,
        each once, in any order; sorted in place, and the jobs returned to run are added.
    n_touched
        Entries of ``touched`` in use.
    mark : (n,) int8
        1 for the jobs in ``touched``, else 0; kept so.
    out_job, out_type : (>= k,) int64
        Out: the jobs to run (placed, in the allocation, not failing), in the order they were
        placed, and their types.
    out_fail : (>= k,) int64
        Out: the failing jobs, in the order they were placed.

    Returns
    -------
    (n_run, n_fail, n_touched)
        Entries written to ``out_job``/``out_type`` and to ``out_fail``; entries of
        ``touched`` in use now.
    """
    nt = len(capacity)
    k = len(active)
    rows = touched[:n_touched]
    rows.sort()
    type_total = np.full(nt, base)
    if n_touched > 0:
        d = type_time[rows] + adj[rows] - tt0[rows]  # (m, nt)
        for t in range(nt):
            type_total[t] = base + np.cumsum(d[:, t])[-1]
    tot = np.where(type_total > 0.0, type_total, 1.0)
    job_time = half + (type_time[active] + adj[active] - tt0[active])  # (k, nt)
    fraction = np.where(type_total > 0.0, job_time / tot, 0.0)
    share = x[active]
    r = rate[active]
    ia = in_alloc[active]
    positive = fraction > 0.0
    prio = np.where(positive, share / np.where(positive, fraction, 1.0), share * 1e9)
    prio = np.where((share != 0.0) & (r != 0.0) & ia.reshape((k, 1)), prio, 0.0)
    dfc = deficit[active]
    g = gang[active]
    left = capacity.copy()
    placed = np.zeros(k, dtype=np.bool_)
    n_run = 0
    n_fail = 0
    for t in order:
        ok = (r[:, t] > 0.0) & (g <= left[t])
        if skip_unprioritised:
            ok &= prio[:, t] > 0.0
        cand = np.flatnonzero(ok)
        # lexicographic: priority, deficit, share (all decreasing), position; by stable sorts
        cand = cand[np.argsort(-share[cand, t], kind="mergesort")]
        cand = cand[np.argsort(-dfc[cand, t], kind="mergesort")]
        cand = cand[np.argsort(-prio[cand, t], kind="mergesort")]
        room = left[t]
        for i in cand:
            if room == 0:
                break
            gi = g[i]
            if gi > room or placed[i]:
                continue
            room -= gi
            placed[i] = True
            if not ia[i]:
                continue
            j = active[i]
            if gi > 1 and in_steps[j] and remaining[j] < gi:
                out_fail[n_fail] = j
                n_fail += 1
                continue
            out_job[n_run] = j
            out_type[n_run] = t
            n_run += 1
            if mark[j] == 0:
                mark[j] = 1
                touched[n_touched] = j
                n_touched += 1
        left[t] = room
    return n_run, n_fail, n_touched


@_compiled
def stride_select(
    types: IntArray,
    rate: FloatArray,
    mean: FloatArray,
    gang: IntArray,
    users: IntArray,
    attained: FloatArray,
    share: FloatArray,
    passes: FloatArray,
    min_share: float,
    left: IntArray,
    taken: BoolArray,
    out_pos: IntArray,
    out_type: IntArray,
) -> int:
    """The selection of one quantum of Gandiva-Fair's gang-aware stride scheduling
    (:meth:`scheduling.gandiva_fair.GandivaFair._select`), type by type.

    On each type of ``types`` (in that order) with devices left, the candidates are the jobs
    not yet ``taken`` that can run there (``rate > 0``) and whose gang fits in what is left.
    Within a user they are ordered by decreasing relative speed on the type (``rate /
    mean``), then increasing ``attained``, then position; the ``i``-th of a user gets the key
    ``passes[user, t] + (sum of the earlier ones' gang / entitlement)``, the entitlement
    being ``max(share[user, t], min_share)``; the sum runs over the user's own jobs, left to
    right from 0, so a user's first job has exactly its pass as key. Jobs are taken greedily
    while their gang fits: first those of users with an entitlement of at least
    ``min_share`` on the type, then those of users without one (they run there only on
    devices nobody entitled wants); each group in increasing key, then user, then the order
    above. The floating-point operations are those of the numpy version (the same sums in
    the same order), so the keys are equal bit for bit.

    Parameters
    ----------
    types : (n_t,) int64
        Type indices in visiting order.
    rate : (k, n_types) float64
        Each job's rate on each type (0: cannot run there).
    mean : (k,) float64
        Each job's mean rate over the types where it runs.
    gang : (k,) int64
        Devices per job.
    users : (k,) int64
        Each job's user (row of ``share`` and ``passes``).
    attained : (k,) float64
        Service received so far.
    share, passes : (n_users, n_types) float64
        Entitlements and pass values.
    min_share
        Entitlement floor.
    left : (n_types,) int64
        Devices left per type; updated.
    taken : (k,) bool
        Jobs already placed; updated.
    out_pos, out_type : (>= k,) int64
        Out: the positions (rows of ``rate``) of the jobs taken, in order, and their types.

    Returns
    -------
    int
        Entries written to ``out_pos``/``out_type``.
    """
    k = len(gang)
    n = 0
    cand = np.empty(k, dtype=np.int64)
    for t in types:
        free = left[t]
        if free <= 0:
            continue
        m = 0
        for i in range(k):
            if not taken[i] and rate[i, t] > 0.0 and gang[i] <= free:
                cand[m] = i
                m += 1
        if m == 0:
            continue
        c = cand[:m].copy()  # ascending positions: the last key is already in order
        neg = np.empty(m)
        att = np.empty(m)
        usr = np.empty(m, dtype=np.int64)
        for a in range(m):
            i = c[a]
            neg[a] = -(rate[i, t] / mean[i])
            att[a] = attained[i]
        o = np.argsort(att, kind="mergesort")
        c, neg = c[o], neg[o]
        o = np.argsort(neg, kind="mergesort")
        c = c[o]
        for a in range(m):
            usr[a] = users[c[a]]
        o = np.argsort(usr, kind="mergesort")
        c, usr = c[o], usr[o]
        # keys: the user's pass plus the steps of its earlier jobs, summed from 0 per user
        # (as numpy's cumsum does), so a user's first job has exactly its pass as key
        keys = np.empty(m)
        unentitled = np.zeros(m, dtype=np.int64)
        acc = 0.0
        for a in range(m):
            if a == 0 or usr[a] != usr[a - 1]:
                acc = 0.0
            s = share[usr[a], t]
            if s < min_share:
                s = min_share
                unentitled[a] = 1
            keys[a] = passes[usr[a], t] + acc
            acc = acc + gang[c[a]] / s
        # entitled users first; then by key, then user, then the order above (the order of c)
        o = np.argsort(keys, kind="mergesort")
        o = o[np.argsort(unentitled[o], kind="mergesort")]
        for a in o:
            i = c[a]
            g = gang[i]
            if g <= free:
                free -= g
                taken[i] = True
                out_pos[n] = i
                out_type[n] = t
                n += 1
        left[t] = free
    return n


# ------------------------------------------------------- dense simplex of the water filling
#: :func:`water_fill`'s tolerances: a column enters when its reduced cost is below
#: ``-SIMPLEX_OPT_TOL``; a tableau entry must exceed ``SIMPLEX_PIVOT_TOL`` to be a pivot of
#: the ratio test; ratios within ``SIMPLEX_TIE_TOL`` are ties (the largest pivot wins, or the
#: smallest basic column under Bland's rule).
SIMPLEX_OPT_TOL = 1e-9
SIMPLEX_PIVOT_TOL = 1e-9
SIMPLEX_TIE_TOL = 1e-12
#: Consecutive degenerate pivots after which pricing follows Bland's rule (smallest column
#: that improves; no cycling), until a pivot makes progress again.
SIMPLEX_BLAND_AFTER = 20
#: :func:`water_fill`'s outcomes.
WF_OK = 0
WF_PIVOT_LIMIT = 1  # a level's LP needed more pivots than allowed
WF_UNBOUNDED = 2  # no leaving row (cannot happen with the row sums; numerical trouble)
WF_SINGULAR = 3  # the previous level's line could not be swapped out of the basis
WF_INFEASIBLE_START = 4  # lp_dense: a negative right-hand side (the slack basis is infeasible)


@_compiled
def _tableau_pivot(
    tab: FloatArray, basis: IntArray, is_basic: BoolArray, r: int, e: int, nz: IntArray
) -> None:
    """Pivot the dense tableau ``tab`` (constraint rows, then the objective row; the last
    column the right-hand side) on row ``r`` and column ``e``; ``nz`` is scratch of the
    tableau's width (the pivot row's nonzero columns, so a row update skips the zeros)."""
    m1, n1 = tab.shape
    inv = 1.0 / tab[r, e]
    cnt = 0
    for j in range(n1):
        v = tab[r, j]
        if v != 0.0:
            tab[r, j] = v * inv
            nz[cnt] = j
            cnt += 1
    tab[r, e] = 1.0
    for i in range(m1):
        if i == r:
            continue
        f = tab[i, e]
        if f == 0.0:
            continue
        for q in range(cnt):
            j = nz[q]
            tab[i, j] -= f * tab[r, j]
        tab[i, e] = 0.0
    is_basic[basis[r]] = False
    basis[r] = e
    is_basic[e] = True


@_compiled
def _primal_simplex(
    tab: FloatArray,
    basis: IntArray,
    is_basic: BoolArray,
    usable: BoolArray,
    max_pivots: int,
    nz: IntArray,
) -> int:
    """Maximise from the primal feasible basis ``basis`` of the tableau ``tab`` (objective
    row last, holding the reduced costs ``z_j − c_j``): Dantzig's pricing (the most negative
    reduced cost among the ``usable`` nonbasic columns), switching to Bland's after
    :data:`SIMPLEX_BLAND_AFTER` degenerate pivots in a row; ratio test over the rows with a
    pivot above :data:`SIMPLEX_PIVOT_TOL`, ties to the largest pivot (Bland: the smallest
    basic column). Returns the pivots made, or ``-WF_PIVOT_LIMIT`` / ``-WF_UNBOUNDED``."""
    m = tab.shape[0] - 1
    n = tab.shape[1] - 1
    pivots = 0
    degenerate = 0
    while True:
        bland = degenerate >= SIMPLEX_BLAND_AFTER
        e = -1
        best = -SIMPLEX_OPT_TOL
        for j in range(n):
            if usable[j] and not is_basic[j] and tab[m, j] < best:
                e = j
                if bland:
                    break
                best = tab[m, j]
        if e < 0:
            return pivots
        if pivots >= max_pivots:
            return -WF_PIVOT_LIMIT
        r = -1
        ratio = 0.0
        piv = 0.0
        for i in range(m):
            a = tab[i, e]
            if a > SIMPLEX_PIVOT_TOL:
                q = max(tab[i, n], 0.0) / a
                if r < 0 or q < ratio - SIMPLEX_TIE_TOL:
                    r, ratio, piv = i, q, a
                elif q <= ratio + SIMPLEX_TIE_TOL and (
                    (basis[i] < basis[r]) if bland else (a > piv)
                ):
                    r, ratio, piv = i, min(q, ratio), a
        if r < 0:
            return -WF_UNBOUNDED
        degenerate = degenerate + 1 if ratio * piv <= SIMPLEX_TIE_TOL else 0
        _tableau_pivot(tab, basis, is_basic, r, e, nz)
        pivots += 1


@_compiled
def _maxmin_tableau(
    thr: FloatArray, coef: FloatArray, use: FloatArray, cap: FloatArray, live: BoolArray
) -> tuple[FloatArray, IntArray, BoolArray, BoolArray, IntArray]:
    """The dense tableau of a max-min LP over ``X`` (``k × nt``, row-major) and one more
    column (``nx = k · nt``, left 0 here): rows ``Σ_c use_c X[c, t] <= cap_t`` (capacity),
    ``Σ_t X[c, t] <= 1`` (row sums) and, per ``live`` row, ``−Σ_t coef[c, t] X[c, t] <= 0``;
    then the slacks (the starting basis) and the right-hand side; objective row last, 0.
    Returns the tableau ``(m + 1, nx + 1 + m + 1)``, the basis, which columns are basic,
    which may enter (``X`` entries where ``thr`` is 0 never do) and each row's job row
    (``-1`` where not ``live``)."""
    k, nt = thr.shape
    nx = k * nt
    n_live = 0
    for c in range(k):
        if live[c]:
            n_live += 1
    m = nt + k + n_live
    n = nx + 1 + m
    tab = np.zeros((m + 1, n + 1))
    basis = np.empty(m, dtype=np.int64)
    is_basic = np.zeros(n, dtype=np.bool_)
    usable = np.ones(n, dtype=np.bool_)
    jrow = np.full(k, -1, dtype=np.int64)
    r = nt + k
    for c in range(k):
        for t in range(nt):
            col = c * nt + t
            usable[col] = thr[c, t] > 0.0
            tab[t, col] = use[c]
            tab[nt + c, col] = 1.0
        tab[nt + c, n] = 1.0
        if live[c]:
            jrow[c] = r
            for t in range(nt):
                tab[r, c * nt + t] = -coef[c, t]
            r += 1
    for t in range(nt):
        tab[t, n] = cap[t]
    for i in range(m):
        tab[i, nx + 1 + i] = 1.0
        basis[i] = nx + 1 + i
        is_basic[nx + 1 + i] = True
    return tab, basis, is_basic, usable, jrow


@_compiled
def maxmin_simplex(
    thr: FloatArray,
    coef: FloatArray,
    use: FloatArray,
    cap: FloatArray,
    live: BoolArray,
    max_pivots: int,
    x_out: FloatArray,
) -> int:
    """The max-min LP of :func:`scheduling.allocation.maxmin_model` (maximise ``z`` with
    ``z <= Σ_t coef[c, t] X[c, t]`` per ``live`` row, capacity use ``use_c`` per entry of
    row ``c``) by the primal simplex on a dense tableau from the slack basis. ``x_out``
    ``(k · nt + 1,)`` receives an optimal vertex (``X`` row-major, then ``z``). Returns
    :data:`WF_OK` or the failure (:func:`_primal_simplex`)."""
    k, nt = thr.shape
    nx = k * nt
    tab, basis, is_basic, usable, jrow = _maxmin_tableau(thr, coef, use, cap, live)
    m = tab.shape[0] - 1
    n = tab.shape[1] - 1
    for c in range(k):
        if jrow[c] >= 0:
            tab[jrow[c], nx] = 1.0
    tab[m, nx] = -1.0
    nz = np.empty(n + 1, dtype=np.int64)
    res = _primal_simplex(tab, basis, is_basic, usable, max_pivots, nz)
    if res < 0:
        return -res
    x_out[:] = 0.0
    for i in range(m):
        if basis[i] <= nx:
            x_out[basis[i]] = tab[i, n]
    return WF_OK


@_compiled
def lp_dense(
    n_rows: int,
    indptr: IntArray,
    indices: IntArray,
    data: FloatArray,
    c: FloatArray,
    b: FloatArray,
    fixed: BoolArray,
    max_pivots: int,
    x_out: FloatArray,
) -> int:
    """Minimise ``c·x`` subject to ``A x <= b``, ``x >= 0`` and ``x_j = 0`` where ``fixed``
    (``A`` in compressed-column form, ``n_rows`` rows) by the primal simplex on a dense
    tableau from the slack basis, which needs ``b >= 0`` (else :data:`WF_INFEASIBLE_START`).
    Other upper bounds are not seen: the caller checks that the vertex keeps them.
    ``x_out`` ``(n,)`` receives an optimal vertex. Returns :data:`WF_OK` or the failure."""
    m = n_rows
    n = len(c)
    for i in range(m):
        if b[i] < 0.0:
            return WF_INFEASIBLE_START
    tab = np.zeros((m + 1, n + m + 1))
    basis = np.empty(m, dtype=np.int64)
    is_basic = np.zeros(n + m, dtype=np.bool_)
    usable = np.ones(n + m, dtype=np.bool_)
    for j in range(n):
        usable[j] = not fixed[j]
        for q in range(indptr[j], indptr[j + 1]):
            tab[indices[q], j] += data[q]
        tab[m, j] = c[j]  # reduced costs of the maximisation of −c·x
    for i in range(m):
        tab[i, n + i] = 1.0
        tab[i, n + m] = b[i]
        basis[i] = n + i
        is_basic[n + i] = True
    nz = np.empty(n + m + 1, dtype=np.int64)
    res = _primal_simplex(tab, basis, is_basic, usable, max_pivots, nz)
    if res < 0:
        return -res
    x_out[:] = 0.0
    for i in range(m):
        if basis[i] < n:
            x_out[basis[i]] = tab[i, n + m]
    return WF_OK


@_compiled
def water_fill(
    thr: FloatArray,
    coef: FloatArray,
    sf: FloatArray,
    cap: FloatArray,
    count: FloatArray,
    prio: FloatArray,
    ent: IntArray,
    live: BoolArray,
    fifo: bool,
    slack: float,
    max_levels: int,
    max_pivots: int,
    x_out: FloatArray,
    level_out: FloatArray,
    stats: IntArray,
) -> int:
    """Gavel's hierarchical water filling (:class:`scheduling.gavel_lp.GavelHierarchical`)
    on one dense simplex tableau, every level solved from the previous level's basis.

    Variables: the allocation ``X`` (``k × nt``, row-major; entries where ``thr`` is 0 never
    enter) and the level's rise ``δ``. Rows: capacity ``Σ_c count_c sf_c X[c, t] <= cap_t``,
    row sums ``Σ_t X[c, t] <= 1``, and per ``live`` row ``c`` ``−Σ_t coef[c, t] X[c, t] +
    a_c δ <= −level_c`` (its normalised throughput at least its level so far, plus ``a_c δ``
    with ``a_c = w_c / sf_c`` for the weighted rows, 0 for the others). Each level maximises
    ``δ``; then the previous ``δ`` is folded into the right-hand sides (its basic row set to
    0, then a degenerate pivot swaps it for the slack of a tight row: the same point, still
    feasible), the new ``δ`` column is ``B⁻¹ a`` (``B⁻¹`` is the tableau's slack columns),
    and the next level starts from there. The weights are Gavel's priority reweighting
    (``fifo``: all of an entity's weight on its first open row; else split among its open
    rows by priority, a row counting ``count`` times). Bottlenecks: a weighted row whose
    share ``y_c a_c`` of the level's dual (``y_c`` the objective row's entry in its slack
    column; the shares sum to 1) exceeds ``slack`` is frozen; if none does, the largest.

    Shapes: ``thr``, ``coef`` ``(k, nt)``; ``sf``, ``count``, ``prio``, ``ent``, ``live``,
    ``level_out`` ``(k,)``; ``cap`` ``(nt,)``; ``x_out`` ``(k * nt,)``; ``stats`` ``(2,)``
    receives the levels solved and the pivots made. Returns :data:`WF_OK` or the failure
    (the caller then solves with HiGHS)."""
    k, nt = thr.shape
    nx = k * nt
    d = nx  # the column of δ; slacks from nx + 1
    tab, basis, is_basic, usable, jrow = _maxmin_tableau(thr, coef, count * sf, cap, live)
    m = tab.shape[0] - 1
    n = tab.shape[1] - 1
    nz = np.empty(n + 1, dtype=np.int64)
    n_ent = 0
    for c in range(k):
        n_ent = max(n_ent, ent[c] + 1)
    total = np.zeros(n_ent)
    done = np.empty(k, dtype=np.bool_)
    a = np.zeros(k)
    level = np.zeros(k)
    for c in range(k):
        done[c] = not live[c]
    levels = 0
    pivots = 0
    for _it in range(max_levels):
        # Gavel's priority reweighting over the rows not frozen yet
        any_act = False
        total[:] = 0.0
        for c in range(k):
            a[c] = 0.0
        if fifo:
            for c in range(k):
                if not done[c] and total[ent[c]] == 0.0:
                    total[ent[c]] = 1.0
                    a[c] = 1.0 / sf[c]
                    any_act = True
        else:
            for c in range(k):
                if not done[c]:
                    total[ent[c]] += prio[c] * count[c]
            for c in range(k):
                if not done[c] and total[ent[c]] > 0.0:
                    w = prio[c] / total[ent[c]]
                    if w > 0.0:
                        a[c] = w / sf[c]
                        any_act = True
        if not any_act:
            break
        # fold the previous level's δ into the right-hand sides, swap it out of the basis
        if is_basic[d]:
            p = 0
            while basis[p] != d:
                p += 1
            tab[p, n] = 0.0
            e = -1
            big = 1e-12
            for i in range(m):
                col = nx + 1 + i
                if not is_basic[col] and abs(tab[p, col]) > big:
                    e = col
                    big = abs(tab[p, col])
            if e < 0:
                return WF_SINGULAR
            _tableau_pivot(tab, basis, is_basic, p, e, nz)
        # the new δ column, B⁻¹ a over the job rows; objective: maximise δ (basic costs 0)
        for i in range(m):
            s = 0.0
            for c in range(k):
                if a[c] != 0.0:
                    s += tab[i, nx + 1 + jrow[c]] * a[c]
            tab[i, d] = s
        tab[m, :] = 0.0
        tab[m, d] = -1.0
        res = _primal_simplex(tab, basis, is_basic, usable, max_pivots, nz)
        if res < 0:
            return -res
        pivots += res
        levels += 1
        rise = 0.0
        if is_basic[d]:
            for i in range(m):
                if basis[i] == d:
                    rise = max(tab[i, n], 0.0)
        top = -np.inf
        stuck = False
        for c in range(k):
            if a[c] != 0.0:
                level[c] += rise * a[c]
                share = tab[m, nx + 1 + jrow[c]] * a[c]
                top = max(top, share)
                if share > slack:
                    done[c] = True
                    stuck = True
        if not stuck:  # (cannot happen: the shares sum to 1)
            for c in range(k):
                if a[c] != 0.0 and tab[m, nx + 1 + jrow[c]] * a[c] >= top:
                    done[c] = True
    x_out[:] = 0.0
    for i in range(m):
        if basis[i] < nx:
            x_out[basis[i]] = tab[i, n]
    level_out[:] = level
    stats[0] = levels
    stats[1] = pivots
    return WF_OK


#: The Newton iteration of :func:`face_centre` stops when half the Newton decrement (the
#: squared length of the Newton step in the Hessian's norm) is this small, or when it stops
#: falling: converged to rounding (the last steps are quadratic), so that the centre is a
#: point of the problem, not of the path to it. (At ``1e-7`` a point could be ~1e-4 from the
#: centre along a flat direction, and a LAPACK and a loop version of the same iteration
#: stopped ~1e-6 apart, which changed an 8,000-job run's schedule.)
FACE_CENTRE_DEC = 1e-24
#: Below this Newton decrement (λ², λ < 0.32) :func:`face_centre` takes full Newton steps
#: (Boyd & Vandenberghe, §9.6.4: quadratic convergence of self-concordant functions from
#: λ < (3 − √5) / 2).
FACE_CENTRE_PURE = 0.1


@_compiled
def _face_value(
    aa: FloatArray,
    nzp: IntArray,
    nzc: IntArray,
    bb: FloatArray,
    bar: IntArray,
    lbi: FloatArray,
    wr: FloatArray,
    wvi: FloatArray,
    u: FloatArray,
    s: FloatArray,
    d: FloatArray,
) -> float:
    """The barrier of :func:`face_centre` at ``u`` (``inf`` outside its domain), the slacks of
    the rows written to ``s`` and of the bounds (of the ``len(d)`` first variables of ``bar``)
    to ``d``."""
    inside = True
    for r in range(len(s)):
        acc = 0.0
        for k in range(nzp[r], nzp[r + 1]):
            acc += aa[r, nzc[k]] * u[nzc[k]]
        s[r] = bb[r] - acc
        if s[r] <= 0:
            inside = False
    for i in range(len(d)):
        d[i] = u[bar[i]] - lbi[i]
        if d[i] <= 0:
            inside = False
    if not inside:
        return np.inf
    f = 0.0
    for r in range(len(s)):
        f -= wr[r] * math.log(s[r])
    for i in range(len(d)):
        f -= wvi[i] * math.log(d[i])
    return f


@_compiled
def face_centre(
    shape_rows: int,
    indptr: IntArray,
    indices: IntArray,
    data: FloatArray,
    c: FloatArray,
    b: FloatArray,
    lb: FloatArray,
    ub: FloatArray,
    x_opt: FloatArray,
    x_int: FloatArray,
    w_rows: FloatArray,
    w_vars: FloatArray,
    rel_tol: float,
    max_iter: int,
    out: FloatArray,
) -> bool:
    """The Newton iteration of :func:`scheduling.allocation.optimal_face_centre` (which
    documents the problem): the analytic centre of ``{v : A v <= b, v >= lb (finite),
    c·v <= c·x_opt + tol}`` over the variables with ``ub > lb`` (the others stay at ``x_opt``),
    from ``x_opt + θ (x_int - x_opt)``. ``A`` comes as compressed columns (``indptr``,
    ``indices``, ``data``; ``shape_rows`` rows). Writes the centre to ``out`` and returns
    ``True``, or returns ``False`` when the start is not strictly inside or a Newton system
    is not positive definite (the caller keeps ``x_opt``).

    The LPs are a few dozen to a few hundred variables: the Hessian ``Aᵀ diag(w/s²) A`` is
    summed row by row over each row's nonzeros and factored by a dense Cholesky, every sum in
    a fixed order."""
    n = len(c)
    nr = shape_rows + 1  # the rows of A, then the objective row
    # the free variables and their positions
    pos = np.full(n, -1, dtype=np.int64)
    nf = 0
    for j in range(n):
        if ub[j] > lb[j]:
            pos[j] = nf
            nf += 1
    fval = 0.0
    gap = 0.0
    for j in range(n):
        fval += c[j] * x_opt[j]
        gap += c[j] * x_int[j]
    tol = rel_tol * max(1.0, abs(fval))
    gap -= fval
    theta = 0.5 if gap <= 0 else min(0.5, 0.5 * tol / gap)
    v = np.empty(n)
    for j in range(n):
        v[j] = x_opt[j] + theta * (x_int[j] - x_opt[j]) if pos[j] >= 0 else x_opt[j]
    # dense rows over the free variables (duplicates summed in column order), and the
    # right-hand sides with the fixed variables moved over
    aa = np.zeros((nr, nf))
    bb = np.empty(nr)
    for r in range(shape_rows):
        bb[r] = b[r]
    bb[shape_rows] = fval + tol
    for j in range(n):
        f = pos[j]
        for p in range(indptr[j], indptr[j + 1]):
            if f >= 0:
                aa[indices[p], f] += data[p]
            else:
                bb[indices[p]] -= data[p] * v[j]
        if f >= 0:
            aa[shape_rows, f] = c[j]
        else:
            bb[shape_rows] -= c[j] * v[j]
    wr = np.empty(nr)
    for r in range(shape_rows):
        wr[r] = w_rows[r]
    wr[shape_rows] = 1.0
    # each row's nonzero columns
    nzc = np.empty(nr * nf, dtype=np.int64)
    nzp = np.zeros(nr + 1, dtype=np.int64)
    for r in range(nr):
        k = nzp[r]
        for f in range(nf):
            if aa[r, f] != 0.0:
                nzc[k] = f
                k += 1
        nzp[r + 1] = k
    # the variables with a barrier term (finite lower bound)
    bar = np.empty(nf, dtype=np.int64)
    lbi = np.empty(nf)
    wvi = np.empty(nf)
    nb = 0
    u = np.empty(nf)
    for j in range(n):
        f = pos[j]
        if f >= 0:
            u[f] = v[j]
            if np.isfinite(lb[j]):
                bar[nb] = f
                lbi[nb] = lb[j]
                wvi[nb] = w_vars[j]
                nb += 1
    s = np.empty(nr)
    d = np.empty(nb)
    s1 = np.empty(nr)
    d1 = np.empty(nb)
    u1 = np.empty(nf)
    grad = np.empty(nf)
    hess = np.empty((nf, nf))
    step = np.empty(nf)
    ds = np.empty(nr)

    f0 = _face_value(aa, nzp, nzc, bb, bar, lbi, wr, wvi, u, s, d)
    if not f0 < np.inf:
        return False

    last_dec = np.inf
    for _ in range(max_iter):
        for f in range(nf):
            grad[f] = 0.0
            for g in range(nf):
                hess[f, g] = 0.0
        for r in range(nr):
            g1 = wr[r] / s[r]
            h1 = g1 / s[r]
            for k in range(nzp[r], nzp[r + 1]):
                p = nzc[k]
                ap = aa[r, p]
                grad[p] += ap * g1
                hp = ap * h1
                for q in range(k, nzp[r + 1]):  # (the upper triangle: nzc ascends in a row)
                    hess[p, nzc[q]] += hp * aa[r, nzc[q]]
        for i in range(nb):
            f = bar[i]
            grad[f] -= wvi[i] / d[i]
            hess[f, f] += wvi[i] / (d[i] * d[i])
        # Cholesky hess = Uᵀ U, U in the upper triangle, right-looking: row f of U, then
        # the rows below it less its outer product. Every entry is the same sum in the same
        # order as the dot-product form (A[f, g] less U[k, f] U[k, g] for k = 0, 1, ...), but
        # the inner loops are contiguous updates without a reduction, which LLVM vectorises
        for f in range(nf):
            rff = hess[f, f]
            if not rff > 0.0:
                return False
            rff = math.sqrt(rff)
            hess[f, f] = rff
            rf = hess[f, f:]
            for g in range(1, len(rf)):
                rf[g] = rf[g] / rff
            for h in range(1, len(rf)):
                uh = rf[h]
                rh = hess[f + h, f + h :]
                tail = rf[h:]
                for g in range(len(rh)):
                    rh[g] -= uh * tail[g]
        # step = -hess⁻¹ grad: Uᵀ y = grad (forward, column by column), U x = y
        for f in range(nf):
            step[f] = grad[f]
        for f in range(nf):
            sf = step[f] / hess[f, f]
            step[f] = sf
            rf = hess[f, f + 1 :]
            tail = step[f + 1 :]
            for g in range(len(rf)):
                tail[g] -= rf[g] * sf
        for f in range(nf - 1, -1, -1):
            acc = step[f]
            for k in range(f + 1, nf):
                acc -= hess[f, k] * step[k]
            step[f] = acc / hess[f, f]
        dec = 0.0
        for f in range(nf):
            step[f] = -step[f]
            dec -= grad[f] * step[f]
        if not np.isfinite(dec):
            return False
        if dec / 2.0 <= FACE_CENTRE_DEC or (last_dec < 1e-3 and dec > 0.5 * last_dec):
            break  # converged, or rounding stops the (otherwise quadratic) progress
        last_dec = dec
        # the line search starts inside the domain (ratio test), not by halving into it
        t = 1.0
        for r in range(nr):
            acc = 0.0
            for k in range(nzp[r], nzp[r + 1]):
                acc += aa[r, nzc[k]] * step[nzc[k]]
            ds[r] = acc
            if acc > 0 and 0.99 * (s[r] / acc) < t:
                t = 0.99 * (s[r] / acc)
        for i in range(nb):
            sv = step[bar[i]]
            if sv < 0 and 0.99 * (d[i] / -sv) < t:
                t = 0.99 * (d[i] / -sv)
        # near the centre (Newton decrement λ² below FACE_CENTRE_PURE, inside the region of
        # quadratic convergence of a self-concordant barrier) the full step is taken without
        # the value test: values stop resolving progress long before gradients do (a change
        # of 1e-13 in a value of 40), which would stop the iteration ~1e-7 from the centre
        pure = dec < FACE_CENTRE_PURE and t == 1.0
        f1 = 0.0
        while True:
            for f in range(nf):
                u1[f] = u[f] + t * step[f]
            f1 = _face_value(aa, nzp, nzc, bb, bar, lbi, wr, wvi, u1, s1, d1)
            if f1 < np.inf and (pure or f1 <= f0 - 0.25 * t * dec):
                break
            t *= 0.5
            if t < 1e-6:
                break
        if t < 1e-6:
            break
        f0 = f1
        for f in range(nf):
            u[f] = u1[f]
        for r in range(nr):
            s[r] = s1[r]
        for i in range(nb):
            d[i] = d1[i]
    for j in range(n):
        out[j] = u[pos[j]] if pos[j] >= 0 else v[j]
    return True


@_compiled
def _ftf_value(
    thr: FloatArray,
    sf: FloatArray,
    cap: FloatArray,
    rem: FloatArray,
    a: FloatArray,
    w1: float,
    x: FloatArray,
    y: FloatArray,
    s_cap: FloatArray,
    s_row: FloatArray,
    g: FloatArray,
) -> float:
    """``−Φ`` of :func:`ftf_centre` at ``x`` (``inf`` outside the set), its slacks written
    to ``y``, ``s_cap``, ``s_row``, ``g``."""
    k, n = x.shape
    inside = True
    for t in range(n):
        s_cap[t] = cap[t]
    for j in range(k):
        yj = 0.0
        rj = 1.0
        for t in range(n):
            v = x[j, t]
            if v <= 0:
                inside = False
            yj += thr[j, t] * v
            rj -= v
            s_cap[t] -= sf[j] * v
        y[j] = yj
        s_row[j] = rj
        g[j] = a[j] * yj - rem[j]
        if yj <= 0 or rj <= 0 or g[j] <= 0:
            inside = False
    for t in range(n):
        if s_cap[t] <= 0:
            inside = False
    if not inside:
        return np.inf
    acc = 0.0
    for j in range(k):
        for t in range(n):
            acc += math.log(x[j, t])
    for t in range(n):
        acc += math.log(s_cap[t])
    for j in range(k):
        acc += math.log(s_row[j]) + w1 * math.log(g[j]) - math.log(y[j])
    return -acc


@_compiled
def _pivot_row(work: FloatArray, c: int, n: int) -> int:
    """Partial pivoting for column ``c`` of ``work``'s first ``n`` rows: the row from ``c`` on
    with the largest magnitude there (the first among ties), or -1 when they are all 0."""
    p = c
    best = abs(work[c, c])
    for r in range(c + 1, n):
        if abs(work[r, c]) > best:
            best = abs(work[r, c])
            p = r
    return p if best > 0.0 else -1


@_compiled
def _small_solve(m: FloatArray, b: FloatArray, out: FloatArray, work: FloatArray) -> bool:
    """``out = m⁻¹ b`` by Gaussian elimination with partial pivoting (``m`` is a few rows;
    ``work`` is scratch of shape ``(n, n + 1)`` or larger; ``out`` may be ``b``). ``False``
    if ``m`` is singular."""
    n = m.shape[0]
    for r in range(n):
        for c in range(n):
            work[r, c] = m[r, c]
        work[r, n] = b[r]
    for c in range(n):
        p = _pivot_row(work, c, n)
        if p < 0:
            return False
        if p != c:
            for q in range(c, n + 1):
                work[c, q], work[p, q] = work[p, q], work[c, q]
        for r in range(c + 1, n):
            f = work[r, c] / work[c, c]
            if f != 0.0:
                for q in range(c, n + 1):
                    work[r, q] -= f * work[c, q]
    for r in range(n - 1, -1, -1):
        acc = work[r, n]
        for q in range(r + 1, n):
            acc -= work[r, q] * out[q]
        out[r] = acc / work[r, r]
    return True


@_compiled
def _small_inverse(m: FloatArray, inv: FloatArray, work: FloatArray) -> bool:
    """``inv = m⁻¹`` by Gauss-Jordan elimination with partial pivoting (``m`` is a few rows;
    ``work`` is scratch of its shape). ``False`` if ``m`` is singular."""
    n = m.shape[0]
    for r in range(n):
        for c in range(n):
            work[r, c] = m[r, c]
            inv[r, c] = 1.0 if r == c else 0.0
    for c in range(n):
        p = _pivot_row(work, c, n)
        if p < 0:
            return False
        if p != c:
            for q in range(n):
                work[c, q], work[p, q] = work[p, q], work[c, q]
                inv[c, q], inv[p, q] = inv[p, q], inv[c, q]
        piv = work[c, c]
        for q in range(n):
            work[c, q] /= piv
            inv[c, q] /= piv
        for r in range(n):
            if r != c and work[r, c] != 0.0:
                f = work[r, c]
                for q in range(n):
                    work[r, q] -= f * work[c, q]
                    inv[r, q] -= f * inv[c, q]
    return True


#: Passes of iterative refinement of each Newton step of :func:`ftf_centre_newton`.
REFINE_STEPS = 2


@_compiled
def _woodbury_apply(
    binv: FloatArray,
    cmat: FloatArray,
    sf: FloatArray,
    r: FloatArray,
    out: FloatArray,
    bg: FloatArray,
    rhs: FloatArray,
    corr: FloatArray,
    work: FloatArray,
) -> bool:
    """``out = H⁻¹ r`` for ``H = blockdiag(B_j) + Σ_t (1 / s_cap_t²) u_t u_tᵀ`` (``u_t``: ``sf``
    on column ``t``) by the Woodbury identity, from the blocks' inverses ``binv`` and
    ``cmat = diag(s_cap²) + Σ_j sf_j² B_j⁻¹`` (solved, not inverted: it is ill-conditioned
    next to a full type); ``bg``, ``rhs``, ``corr``, ``work`` are scratch. ``False`` if
    ``cmat`` is singular."""
    k, n = r.shape
    for j in range(k):
        for t in range(n):
            acc = 0.0
            for q in range(n):
                acc += binv[j, t, q] * r[j, q]
            bg[j, t] = acc
    for t in range(n):
        acc = 0.0
        for j in range(k):
            acc += sf[j] * bg[j, t]
        rhs[t] = acc
    if not _small_solve(cmat, rhs, corr, work):
        return False
    for j in range(k):
        for t in range(n):
            acc = 0.0
            for q in range(n):
                acc += binv[j, t, q] * corr[q]
            out[j, t] = bg[j, t] - sf[j] * acc
    return True


@_compiled
def _ftf_hess_apply(
    thr: FloatArray,
    sf: FloatArray,
    x: FloatArray,
    c1s: FloatArray,
    c2s: FloatArray,
    s_cap: FloatArray,
    v: FloatArray,
    out: FloatArray,
    col: FloatArray,
) -> None:
    """``out = H v`` for the Hessian of :func:`ftf_centre_newton` at ``x``: per job
    ``c1 (thr·v) thr + c2 (Σ v) + v / x²``, plus ``sf_j (Σ_i sf_i v_it) / s_cap_t²``;
    ``col`` is scratch."""
    k, n = v.shape
    for t in range(n):
        acc = 0.0
        for j in range(k):
            acc += sf[j] * v[j, t]
        col[t] = acc / (s_cap[t] * s_cap[t])
    for j in range(k):
        tv = 0.0
        sv = 0.0
        for t in range(n):
            tv += thr[j, t] * v[j, t]
            sv += v[j, t]
        for t in range(n):
            out[j, t] = (
                c1s[j] * tv * thr[j, t]
                + c2s[j] * sv
                + v[j, t] / (x[j, t] * x[j, t])
                + sf[j] * col[t]
            )


@_compiled
def ftf_centre_newton(
    thr: FloatArray,
    sf: FloatArray,
    cap: FloatArray,
    rem: FloatArray,
    a: FloatArray,
    w1: float,
    start: FloatArray,
    max_iter: int,
    out: FloatArray,
) -> bool:
    """The damped Newton iteration of :func:`scheduling.centre.ftf_centre` (which documents
    the barrier, the Woodbury solve and the line search), from ``start``; ``a = τ E − s``,
    ``w1 = 1 + cone weight``. Writes the centre to ``out`` (``(k, n)``) and returns ``True``,
    or ``False`` when ``start`` is not strictly inside or a Newton system is singular."""
    k, n = start.shape
    x = start.copy()
    y = np.empty(k)
    s_cap = np.empty(n)
    s_row = np.empty(k)
    g = np.empty(k)
    y1 = np.empty(k)
    s_cap1 = np.empty(n)
    s_row1 = np.empty(k)
    g1 = np.empty(k)
    x1 = np.empty((k, n))
    x2 = np.empty((k, n))
    y2 = np.empty(k)
    s_cap2 = np.empty(n)
    s_row2 = np.empty(k)
    g2 = np.empty(k)
    grad = np.empty((k, n))
    block = np.empty((n, n))
    binv = np.empty((k, n, n))
    work = np.empty((n, n + 1))
    cmat = np.empty((n, n))
    bg = np.empty((k, n))
    rhs = np.empty(n)
    corr = np.empty(n)
    step = np.empty((k, n))
    rhs2 = np.empty((k, n))
    fix = np.empty((k, n))
    hv = np.empty((k, n))
    c1s = np.empty(k)
    c2s = np.empty(k)
    f = _ftf_value(thr, sf, cap, rem, a, w1, x, y, s_cap, s_row, g)
    if not f < np.inf:
        return False
    for _ in range(max_iter):
        # gradient, and the Hessian: per-job blocks plus Σ_t (1 / s_cap_t²) u_t u_tᵀ
        for r in range(n):
            for c in range(n):
                cmat[r, c] = 0.0
            cmat[r, r] = s_cap[r] * s_cap[r]
        for j in range(k):
            lev = w1 * a[j] / g[j] - 1.0 / y[j]
            ag = a[j] / g[j]
            c1 = w1 * (ag * ag) - 1.0 / (y[j] * y[j])  # (no ** 2: numba's x * x, Python's pow)
            c2 = 1.0 / (s_row[j] * s_row[j])
            c1s[j] = c1
            c2s[j] = c2
            # the block scaled by D = diag(x_j) on both sides, D B D = I + c1 (x∘thr)(x∘thr)ᵀ
            # + c2 x xᵀ, is inverted instead of B (whose 1/x² diagonal spans many orders of
            # magnitude next to the boundary): B⁻¹ = D (D B D)⁻¹ D
            for t in range(n):
                grad[j, t] = sf[j] / s_cap[t] + 1.0 / s_row[j] - 1.0 / x[j, t] - lev * thr[j, t]
                for q in range(n):
                    block[t, q] = (
                        c1 * (x[j, t] * thr[j, t]) * (x[j, q] * thr[j, q]) + c2 * x[j, t] * x[j, q]
                    )
                block[t, t] += 1.0
            if not _small_inverse(block, binv[j], work):
                return False
            for t in range(n):
                for q in range(n):
                    binv[j, t, q] *= x[j, t] * x[j, q]
            s2 = sf[j] * sf[j]
            for t in range(n):
                for q in range(n):
                    cmat[t, q] += s2 * binv[j, t, q]
        # Woodbury: one n × n solve besides the blocks
        for j in range(k):
            for t in range(n):
                rhs2[j, t] = -grad[j, t]
        if not _woodbury_apply(binv, cmat, sf, rhs2, step, bg, rhs, corr, work):
            return False
        # the blocks of a job whose level row is nearly tight are nearly singular (c1 is
        # huge), so the Woodbury solve loses digits the Hessian itself (well conditioned)
        # does not: iterative refinement with the exact Hessian gets them back
        for _r in range(REFINE_STEPS):
            _ftf_hess_apply(thr, sf, x, c1s, c2s, s_cap, step, hv, rhs)
            for j in range(k):
                for t in range(n):
                    rhs2[j, t] = -grad[j, t] - hv[j, t]
            if not _woodbury_apply(binv, cmat, sf, rhs2, fix, bg, rhs, corr, work):
                return False
            for j in range(k):
                for t in range(n):
                    step[j, t] += fix[j, t]
        dec = 0.0
        for j in range(k):
            for t in range(n):
                dec -= grad[j, t] * step[j, t]
        if not np.isfinite(dec):
            return False
        if dec / 2.0 <= 1e-9:
            break
        # longest step keeping the linear slacks positive, then backtracking from the full
        # step, then doubling an accepted full step while the value keeps falling
        t_max = np.inf
        for j in range(k):
            rs = 0.0
            for t in range(n):
                d = step[j, t]
                rs += d
                if d < 0 and 0.99 * (x[j, t] / -d) < t_max:
                    t_max = 0.99 * (x[j, t] / -d)
            if rs > 0 and 0.99 * (s_row[j] / rs) < t_max:
                t_max = 0.99 * (s_row[j] / rs)
        for t in range(n):
            d = 0.0
            for j in range(k):
                d += sf[j] * step[j, t]
            if d > 0 and 0.99 * (s_cap[t] / d) < t_max:
                t_max = 0.99 * (s_cap[t] / d)
        st = min(1.0, t_max)
        f1 = np.inf
        while True:
            for j in range(k):
                for t in range(n):
                    x1[j, t] = x[j, t] + st * step[j, t]
            f1 = _ftf_value(thr, sf, cap, rem, a, w1, x1, y1, s_cap1, s_row1, g1)
            if f1 <= f - 0.25 * st * dec:
                break
            st *= 0.5
            if st < 1e-10:
                break
        if st < 1e-10:
            break  # rounding: no further progress
        while st >= 1.0 and 2.0 * st <= t_max:
            for j in range(k):
                for t in range(n):
                    x2[j, t] = x[j, t] + 2.0 * st * step[j, t]
            f2 = _ftf_value(thr, sf, cap, rem, a, w1, x2, y2, s_cap2, s_row2, g2)
            if not f2 < f1:
                break
            st = 2.0 * st
            f1 = f2
            x1[:, :] = x2
            y1[:] = y2
            s_cap1[:] = s_cap2
            s_row1[:] = s_row2
            g1[:] = g2
        f = f1
        x[:, :] = x1
        y[:] = y1
        s_cap[:] = s_cap1
        s_row[:] = s_row1
        g[:] = g1
    out[:, :] = x
    return True


@_compiled
def themis_bundles(
    crow: IntArray,
    lo: IntArray,
    hi: IntArray,
    g: IntArray,
    sigma: FloatArray,
    offered: IntArray,
    devices: IntArray,
    capacity: FloatArray,
    members: IntArray,
    kmax: IntArray,
    count: IntArray,
) -> None:
    """The bundles of an auction's bidders in ``themis`` (:meth:`scheduling.themis.Themis.
    _auction`): bidder ``b``'s candidate jobs are ``crow[lo[b]:hi[b]]`` in service order, of
    which those starting before the offer is spent (their gangs before them sum to less than
    ``offered.sum()``) count, ``kmax[b]`` of them. Its bundle ``(t, k)`` is the first ``k``
    of those that can run on type ``t`` (``sigma > 0``, gang within ``offered[t]``) while
    their gangs fit in ``offered[t]``: ``devices[b, t, k]`` devices (a bundle that cannot be
    formed: ``offered.sum() + 1``), ``capacity[b, t, k]`` best-type equivalents (the running
    sum of ``g × sigma[:, t]``), its jobs ``members[b, t, :k]`` (positions of ``g``), the
    largest such ``k`` being ``count[b, t]``.

    Shapes: ``crow`` (c,); ``lo``, ``hi``, ``kmax`` (n,); ``g`` (m,); ``sigma`` (m, nt);
    ``offered`` (nt,); ``devices``, ``capacity`` (n, nt, K + 1), ``members`` (n, nt, K) and
    ``count`` (n, nt), K at least every ``kmax``."""
    nb, nt, k1 = devices.shape
    total = 0
    for t in range(nt):
        total += offered[t]
    for b in range(nb):
        used = 0
        k = 0
        for i in range(lo[b], hi[b]):
            if used >= total:
                break
            used += g[crow[i]]
            k += 1
        kmax[b] = k
        for t in range(nt):
            devices[b, t, 0] = 0
            capacity[b, t, 0] = 0.0
            n = 0
            c = 0
            cap = 0.0
            room = offered[t]
            for i in range(lo[b], lo[b] + k):
                r = crow[i]
                gr = g[r]
                if sigma[r, t] > 0 and gr <= room:
                    c += gr
                    if c > room:
                        break
                    cap += gr * sigma[r, t]
                    members[b, t, n] = r
                    n += 1
                    devices[b, t, n] = c
                    capacity[b, t, n] = cap
            count[b, t] = n
            for j in range(n + 1, k1):
                devices[b, t, j] = total + 1
                capacity[b, t, j] = 0.0


@_compiled
def _pa_enumerate(
    n_opt: IntArray,
    opt_t: IntArray,
    opt_d: IntArray,
    opt_log: FloatArray,
    offered: IntArray,
    skip: int,
    idx: IntArray,
    best: IntArray,
    use: IntArray,
) -> float:
    """Every combination of the bidders' options but ``skip``'s (the first bidder's changing
    slowest, each bidder's options from the last), keeping in ``best`` the first whose summed
    log-valuation beats the best so far by more than 1e-12 and fits in ``offered``; returns
    that sum (see :func:`pa_exact`)."""
    n = len(n_opt)
    nt = len(offered)
    for a in range(n):
        idx[a] = 0 if a == skip else n_opt[a] - 1
        best[a] = 0
    best_val = -math.inf
    while True:
        val = 0.0
        for a in range(n):
            if a != skip:
                val += opt_log[a, idx[a]]
        if not val <= best_val + 1e-12:
            for t in range(nt):
                use[t] = 0
            for a in range(n):
                if a != skip:
                    use[opt_t[a, idx[a]]] += opt_d[a, idx[a]]
            fits = True
            for t in range(nt):
                if use[t] > offered[t]:
                    fits = False
            if fits:
                best_val = val
                for a in range(n):
                    best[a] = idx[a]
        a = n - 1
        while a >= 0:
            if a != skip and idx[a] > 0:
                idx[a] -= 1
                break
            if a != skip:
                idx[a] = n_opt[a] - 1
            a -= 1
        if a < 0:
            return best_val


@_compiled
def pa_exact(
    devices: IntArray,
    value: FloatArray,
    offered: IntArray,
    limit: int,
    pick: IntArray,
    logs: FloatArray,
    without: FloatArray,
) -> bool:
    """The exact partial-allocation auction of ``themis`` by enumeration
    (:func:`scheduling.themis._exact`): bidder ``a``'s options are nothing, then each bundle
    ``(t, k)`` with ``devices[a, t, k] <= offered[t]`` (types, then ``k``, ascending).
    Writes the bundles maximising the sum of ``log(value)`` to ``pick`` (``(a, 0)`` its
    type, ``(a, 1)`` its ``k``, ``(0, 0)`` for nothing) and their logs to ``logs``, and, for
    each bidder, the best sum of the others when it does not bid to ``without``. Returns
    ``False`` (writing nothing) when the combinations number more than ``limit``.

    Shapes: ``devices``, ``value`` (n, nt, K + 1); ``offered`` (nt,); ``pick`` (n, 2);
    ``logs``, ``without`` (n,)."""
    n, nt, k1 = devices.shape
    m = nt * (k1 - 1) + 1
    n_opt = np.ones(n, dtype=np.int64)
    opt_t = np.zeros((n, m), dtype=np.int64)
    opt_k = np.zeros((n, m), dtype=np.int64)
    opt_d = np.zeros((n, m), dtype=np.int64)
    opt_log = np.zeros((n, m))
    combos = 1
    for a in range(n):
        opt_d[a, 0] = devices[a, 0, 0]
        opt_log[a, 0] = math.log(value[a, 0, 0])
        c = 1
        for t in range(nt):
            for k in range(1, k1):
                if devices[a, t, k] <= offered[t]:
                    opt_t[a, c] = t
                    opt_k[a, c] = k
                    opt_d[a, c] = devices[a, t, k]
                    opt_log[a, c] = math.log(value[a, t, k])
                    c += 1
        n_opt[a] = c
        combos *= c
        if combos > limit:
            return False
    idx = np.zeros(n, dtype=np.int64)
    best = np.zeros(n, dtype=np.int64)
    use = np.zeros(nt, dtype=np.int64)
    _pa_enumerate(n_opt, opt_t, opt_d, opt_log, offered, -1, idx, best, use)
    for a in range(n):
        pick[a, 0] = opt_t[a, best[a]]
        pick[a, 1] = opt_k[a, best[a]]
        logs[a] = opt_log[a, best[a]]
    for a in range(n):
        without[a] = _pa_enumerate(n_opt, opt_t, opt_d, opt_log, offered, a, idx, best, use)
    return True


#: Rows of the per-app statistics of :func:`themis_apps` (``stats``, (N_THEMIS_STATS, k)).
TS_ELAPSED = 0  # seconds since the app's oldest active job arrived
TS_W_LEFT = 1  # remaining work, best-type device-seconds
TS_LONGEST = 2  # the longest remaining job's time on its best type, s
TS_T_ID = 3  # T_independent, s
TS_SHARE = 4  # the app's 1/N share, best-type devices
TS_KEPT = 5  # devices it keeps through the auction (best-type equivalents)
N_THEMIS_STATS = 6


@_compiled
def _fdiv(a: float, b: float) -> float:
    """``a / b`` as numpy divides (inf or nan where ``b`` is zero, no exception)."""
    if b != 0.0:
        return a / b
    if a != a or a == 0.0:
        return math.nan
    return math.inf if (a > 0.0) == (math.copysign(1.0, b) > 0.0) else -math.inf


@_compiled
def _nanmax(a: float, b: float) -> float:
    """``np.maximum(a, b)``: nan if either is."""
    return a if (a != a or a >= b) else b


@_compiled
def _nanmin(a: float, b: float) -> float:
    """``np.minimum(a, b)``: nan if either is."""
    return a if (a != a or a <= b) else b


@_compiled
def themis_rho(stats: FloatArray, a: int, capacity: float, lease_s: float) -> float:
    """ρ of app ``a`` (a column of :func:`themis_apps`'s ``stats``) holding ``capacity``;
    with none, after waiting ``lease_s`` and then running at its share
    (:func:`scheduling.themis.finish_time_fairness`, one value)."""
    elapsed = stats[TS_ELAPSED, a]
    if not capacity > 0:
        capacity = stats[TS_SHARE, a]
        elapsed = elapsed + lease_s
    rem = stats[TS_W_LEFT, a] / capacity if capacity > 0 else math.inf
    rem = _nanmax(rem, stats[TS_LONGEST, a])
    return _fdiv(elapsed + rem, stats[TS_T_ID, a])


@_compiled
def themis_apps(
    active: IntArray,
    app_of: IntArray,
    gang: IntArray,
    remaining: FloatArray,
    work: FloatArray,
    submit: FloatArray,
    alloc_type: IntArray,
    running: BoolArray,
    cand: BoolArray,
    best: FloatArray,
    sigma: FloatArray,
    worth: FloatArray,
    now: float,
    lease_s: float,
    boundary: bool,
    app: IntArray,
    apps: IntArray,
    stats: FloatArray,
    wanting: IntArray,
    rho_now: FloatArray,
    crow: IntArray,
    app_lo: IntArray,
    app_hi: IntArray,
) -> tuple[int, int]:
    """The apps of a ``themis`` auction (:meth:`scheduling.themis.Themis._auction`).

    Numbers the apps of the ``k`` active jobs by their indices in ``app_of`` (``apps``: the
    app of each number, ``app``: each job's), and gives each, in ``stats`` (rows ``TS_*``):
    the time since its oldest job arrived, its remaining work and longest remaining job in
    best-type device-seconds, its T_independent and 1/N share, and the devices it holds now
    (best-type equivalents; kept through the auction unless ``boundary``). The apps with a
    candidate job (``cand``) go to ``wanting``, ascending, with their ρ now in ``rho_now``;
    the candidates to ``crow``, grouped by app in app order, running ones first, then by
    position, app ``a``'s being ``crow[app_lo[a]:app_hi[a]]``.

    Shapes: ``active`` (k,), positions of the job arrays ``app_of``, ``gang``,
    ``remaining``, ``work``, ``submit``, ``alloc_type``; ``running``, ``cand``, ``best``
    (each job's best rate), ``worth`` (its ``sigma @ capacity``), ``app``, ``apps``,
    ``wanting``, ``rho_now``, ``crow``, ``app_lo``, ``app_hi`` (k,); ``sigma`` (k, nt),
    its rates over ``best``; ``stats`` (N_THEMIS_STATS, k).

    Returns
    -------
    (int, int)
        How many apps, how many of them want devices.
    """
    k = len(active)
    ag = np.empty(k, dtype=np.int64)
    for i in range(k):
        ag[i] = app_of[active[i]]
    u = np.unique(ag)
    n_all = len(u)
    for a in range(n_all):
        apps[a] = u[a]
    gangs = np.zeros(n_all)
    w_total = np.zeros(n_all)
    longest_total = np.zeros(n_all)
    start = np.full(n_all, math.inf)
    worth_app = np.zeros(n_all)
    held = np.zeros(n_all)
    for a in range(n_all):
        stats[TS_W_LEFT, a] = 0.0
        stats[TS_LONGEST, a] = 0.0
    for i in range(k):
        a = np.searchsorted(u, ag[i])
        app[i] = a
        j = active[i]
        gf = float(gang[j])
        left_t = _fdiv(remaining[j], best[i])
        total_t = _fdiv(work[j], best[i])
        gangs[a] += gf
        stats[TS_W_LEFT, a] += left_t * gf
        w_total[a] += total_t * gf
        stats[TS_LONGEST, a] = _nanmax(stats[TS_LONGEST, a], left_t)
        longest_total[a] = _nanmax(longest_total[a], total_t)
        start[a] = _nanmin(start[a], submit[j])
        worth_app[a] += gf * worth[i]
        held[a] += gf * sigma[i, alloc_type[j]] if running[i] else 0.0
    n_app = 0
    for a in range(n_all):
        if gangs[a] > 0:
            n_app += 1
    for a in range(n_all):
        share = _nanmin(_fdiv(worth_app[a] / _nanmax(gangs[a], 1.0), float(n_app)), gangs[a])
        stats[TS_SHARE, a] = share
        stats[TS_T_ID, a] = _nanmax(_nanmax(_fdiv(w_total[a], share), longest_total[a]), 1e-9)
        stats[TS_ELAPSED, a] = now - start[a]
        stats[TS_KEPT, a] = 0.0 if boundary else held[a]
    # candidates by (app, waiting, position): a counting sort
    count = np.zeros(2 * n_all + 1, dtype=np.int64)
    for i in range(k):
        if cand[i]:
            count[2 * app[i] + (0 if running[i] else 1) + 1] += 1
    for key in range(2 * n_all):
        count[key + 1] += count[key]
    for a in range(n_all):
        app_lo[a] = count[2 * a]
        app_hi[a] = count[2 * a + 2]
    for i in range(k):
        if cand[i]:
            key = 2 * app[i] + (0 if running[i] else 1)
            crow[count[key]] = i
            count[key] += 1
    n_want = 0
    for a in range(n_all):
        if app_hi[a] > app_lo[a]:
            wanting[n_want] = a
            rho_now[n_want] = themis_rho(stats, a, held[a], lease_s)
            n_want += 1
    return n_all, n_want


@_compiled
def themis_values(
    bidders: IntArray,
    stats: FloatArray,
    lease_s: float,
    total: int,
    devices: IntArray,
    capacity: FloatArray,
    value: FloatArray,
) -> None:
    """Each ``themis`` bidder's valuation of its bundles (:func:`themis_bundles`), 1 / ρ
    with the devices it keeps plus the bundle's (:func:`themis_rho`); a bundle that cannot
    be formed (more devices than the ``total`` offered) is valued as nothing, so that it is
    never chosen.

    Shapes: ``bidders`` (n,), app numbers of :func:`themis_apps`; ``devices``,
    ``capacity``, ``value`` (n, nt, K + 1)."""
    nb, nt, k1 = devices.shape
    for b in range(nb):
        a = bidders[b]
        kept = stats[TS_KEPT, a]
        nothing = _fdiv(1.0, themis_rho(stats, a, kept + capacity[b, 0, 0], lease_s))
        for t in range(nt):
            for k in range(k1):
                if devices[b, t, k] > total:
                    value[b, t, k] = nothing
                else:
                    rho = themis_rho(stats, a, kept + capacity[b, t, k], lease_s)
                    value[b, t, k] = _fdiv(1.0, rho)


@_compiled
def themis_leftovers(
    order: IntArray,
    n_bid: int,
    app_lo: IntArray,
    app_hi: IntArray,
    crow: IntArray,
    taken: BoolArray,
    active: IntArray,
    gang: IntArray,
    rate: FloatArray,
    alloc_type: IntArray,
    running: BoolArray,
    room: IntArray,
    out_r: IntArray,
    out_t: IntArray,
) -> int:
    """The devices a ``themis`` auction left over (:meth:`scheduling.themis.Themis._auction`):
    first to the apps that did not bid (``order[n_bid:]``), then to every app (``order``),
    worst ρ first; within an app, its candidates not ``taken`` in their order
    (``crow[app_lo[a]:app_hi[a]]``, positions in ``active``), each where it fits: a running
    job on its type if that has room, else the fastest type with room (the first of equal
    rates), until no device is left (:meth:`scheduling.themis.Themis._fill`).

    Writes the positions started and their types to ``out_r``/``out_t`` in that order and
    returns how many; updates ``room`` and ``taken``."""
    nt = len(room)
    n = 0
    for first in (n_bid, 0):
        most = 0
        for t in range(nt):
            most = max(most, room[t])
        if most == 0:
            break
        for q in range(first, len(order)):
            a = order[q]
            for c in range(app_lo[a], app_hi[a]):
                i = crow[c]
                if taken[i]:
                    continue
                j = active[i]
                gi = gang[j]
                if gi > most:
                    continue
                t = alloc_type[j] if running[i] else -1
                if t < 0 or room[t] < gi:
                    t = -1
                    fastest = 0.0
                    for tt in range(nt):
                        if room[tt] >= gi and rate[j, tt] > fastest:
                            t = tt
                            fastest = rate[j, tt]
                    if t < 0:
                        continue
                out_r[n] = i
                out_t[n] = t
                n += 1
                taken[i] = True
                room[t] -= gi
                most = 0
                for tt in range(nt):
                    most = max(most, room[tt])
                if most == 0:
                    return n
    return n


@_compiled
def _gain_before(g1: float, i1: int, g2: float, i2: int) -> bool:
    """Order of :func:`optimus_allocate`'s heap: larger gain first, then lower row."""
    return g1 > g2 or (g1 == g2 and i1 < i2)


@_compiled
def _gain_push(hg: FloatArray, hi: IntArray, size: int, g: float, i: int) -> int:
    """Push ``(g, i)`` on the max-heap ``hg``/``hi`` of ``size`` entries; the new size."""
    k = size
    while k > 0:
        p = (k - 1) // 2
        if not _gain_before(g, i, hg[p], hi[p]):
            break
        hg[k] = hg[p]
        hi[k] = hi[p]
        k = p
    hg[k] = g
    hi[k] = i
    return size + 1


@_compiled
def _gain_pop(hg: FloatArray, hi: IntArray, size: int) -> int:
    """Remove the top of the max-heap (read ``hg[0]``/``hi[0]`` before); the new size."""
    size -= 1
    g = hg[size]
    i = hi[size]
    k = 0
    while True:
        c = 2 * k + 1
        if c >= size:
            break
        if c + 1 < size and _gain_before(hg[c + 1], hi[c + 1], hg[c], hi[c]):
            c += 1
        if not _gain_before(hg[c], hi[c], g, i):
            break
        hg[k] = hg[c]
        hi[k] = hi[c]
        k = c
    if size > 0:
        hg[k] = g
        hi[k] = i
    return size


@_compiled
def _time_left(remaining: float, rate: float) -> float:
    """``remaining / rate``, ``inf`` where the rate is 0 (as
    :func:`scheduling.elastic_base.time_left`)."""
    if rate > 0.0:
        return remaining / rate
    return np.inf


@_compiled
def optimus_allocate(
    home: IntArray,
    lo: IntArray,
    hi: IntArray,
    rate: FloatArray,
    remaining: FloatArray,
    order: IntArray,
    left: IntArray,
) -> IntArray:
    """The devices :class:`scheduling.optimus.Optimus` gives each job of a planning table.

    First every job in ``order`` gets its ``lo`` devices while its home type has them (and it
    can run: a finite time on ``lo``); then, one device at a time, the job whose remaining
    time one more device shortens most (``remaining × (1/rate(n) − 1/rate(n+1))``, larger
    than 0; ties: the lower row) gets it, up to its ``hi``, while its type has devices. The
    gains live in a max-heap: only the job that got a device changes its gain, and a job whose
    type has run out never gets one again (``left`` only falls), so its entry is dropped when
    it comes up. O(m log m + devices handed out × log m); the same choices, and the same
    floating-point gains, as the loop that takes the argmax over all jobs each time.

    Parameters
    ----------
    home, lo, hi : (m,) int64
        Each job's type and fewest and most devices.
    rate : (m, K + 1) float64
        ``rate[i, n]``: rate of job ``i`` on ``n`` devices (0 for ``n = 0``).
    remaining : (m,) float64
        Work left.
    order : (m,) int64
        Rows in the order they get their ``lo`` (shortest time on ``lo`` first).
    left : (n_types,) int64
        Devices of each type to hand out; used up in place.

    Returns
    -------
    (m,) int64
        Devices of each job: 0 or within ``[lo, hi]``.
    """
    m = len(home)
    top = rate.shape[1] - 1
    alloc = np.zeros(m, dtype=np.int64)
    for i in order:
        t = home[i]
        if _time_left(remaining[i], rate[i, lo[i]]) < np.inf and left[t] >= lo[i]:
            alloc[i] = lo[i]
            left[t] -= lo[i]
    hg = np.empty(m)
    hr = np.empty(m, dtype=np.int64)
    size = 0
    for i in range(m):
        a = alloc[i]
        if a > 0 and a + 1 <= hi[i]:
            now = rate[i, a]
            more = rate[i, min(a + 1, top)]
            if more > now:
                g = _time_left(remaining[i], now) - _time_left(remaining[i], more)
                if g > 0.0:
                    size = _gain_push(hg, hr, size, g, i)
    while size > 0:
        i = hr[0]
        size = _gain_pop(hg, hr, size)
        t = home[i]
        if left[t] < 1:
            continue  # its type has run out: never again in this decision
        alloc[i] += 1
        left[t] -= 1
        a = alloc[i]
        if a + 1 <= hi[i]:
            now = rate[i, a]
            more = rate[i, min(a + 1, top)]
            if more > now:
                g = _time_left(remaining[i], now) - _time_left(remaining[i], more)
                if g > 0.0:
                    size = _gain_push(hg, hr, size, g, i)
    return alloc


@_compiled
def _afs_first(
    c: int,
    i: int,
    now: FloatArray,
    nxt: FloatArray,
    remaining: FloatArray,
) -> int:
    """AFS-L's pairwise priority of two candidates (``c`` before ``i`` in submit order):
    which one gets the next unit (:class:`scheduling.afs.AFS`, rules 2-4)."""
    rt_c = _time_left(remaining[c], now[c])
    rt_i = _time_left(remaining[i], now[i])
    if rt_i < rt_c:
        s, o = i, c
    else:
        s, o = c, i
    if now[s] <= 0.0:  # neither holds anything: the shorter on its first unit, ties c
        if _time_left(remaining[i], nxt[i]) < _time_left(remaining[c], nxt[c]):
            return i
        return c
    # the shorter keeps priority only if its relative gain beats the other's
    if (nxt[s] - now[s]) / now[s] > (nxt[o] - now[o]) / nxt[o]:
        return s
    return o


@_compiled
def afs_allocate(
    home: IntArray,
    lo: IntArray,
    hi: IntArray,
    rate: FloatArray,
    remaining: FloatArray,
    left: IntArray,
) -> IntArray:
    """The devices :class:`scheduling.afs.AFS` (AFS-L) gives each job of a planning table.

    Unit by unit (a job's ``lo`` while it holds none, then one device): the candidates are
    the jobs whose next unit fits within ``hi`` and on their type and makes them faster; the
    unit goes to the winner of a tournament over them in row (submit) order, each match
    decided by :func:`_afs_first`. A job that stops being a candidate never becomes one again
    in the decision (its count only changes when it wins, ``left`` only falls), so it is
    dropped from the list. The rule is not a total order (three jobs can beat each other in
    a circle), so no heap reproduces it in general, and a tournament costs O(candidates).

    One case is cheap and common (long queues): a job that holds nothing plays a holder
    as ``O`` with the gain exactly 1, so it wins unless the holder's next device more than
    doubles its rate; and two jobs that hold nothing are ordered by their time on their
    first unit. So while no live holder's next unit is super-linear in that sense, the
    tournament's winner is the first job, in order of time on the first unit (ties: row),
    that holds nothing and is still a candidate: read off a sorted list. Otherwise (and
    once every job holds something) the full tournament runs. Same choices either way.

    Parameters
    ----------
    home, lo, hi, rate, remaining, left
        As :func:`optimus_allocate`.

    Returns
    -------
    (m,) int64
        Devices of each job: 0 or within ``[lo, hi]``.
    """
    m = len(home)
    alloc = np.zeros(m, dtype=np.int64)
    now = np.zeros(m)
    nxt = np.empty(m)
    step = lo.copy()
    dead = np.zeros(m, dtype=np.bool_)
    sup = np.zeros(m, dtype=np.bool_)  # a holder whose next unit more than doubles its rate
    n_sup = 0
    live = np.arange(m)
    n = m
    key = np.empty(m)
    for i in range(m):
        nxt[i] = rate[i, min(lo[i], hi[i])]
        key[i] = _time_left(remaining[i], nxt[i])
    first = np.argsort(key, kind="mergesort")  # jobs holding nothing, by time on lo, row
    zp = 0
    while True:
        best = -1
        if n_sup == 0:
            while zp < m:
                i = first[zp]
                if alloc[i] == 0 and not dead[i]:
                    if lo[i] > hi[i] or left[home[i]] < lo[i] or not nxt[i] > 0.0:
                        dead[i] = True
                    else:
                        best = i
                        break
                zp += 1
        if best < 0:  # the full tournament
            k = 0
            for p in range(n):
                i = live[p]
                if dead[i]:
                    continue
                if alloc[i] + step[i] > hi[i] or left[home[i]] < step[i] or not nxt[i] > now[i]:
                    dead[i] = True  # out for the rest of the decision
                    if sup[i]:
                        sup[i] = False
                        n_sup -= 1
                    continue
                live[k] = i
                k += 1
                best = i if best < 0 else _afs_first(best, i, now, nxt, remaining)
            n = k
            if best < 0:
                break
        alloc[best] += step[best]
        left[home[best]] -= step[best]
        step[best] = 1
        now[best] = nxt[best]
        a = alloc[best]
        nxt[best] = rate[best, a + 1] if a + 1 <= hi[best] else 0.0
        s_new = nxt[best] > now[best] and (nxt[best] - now[best]) / now[best] > 1.0
        if s_new != sup[best]:
            n_sup += 1 if s_new else -1
            sup[best] = s_new
    return alloc


@_compiled
def pods_fit(hist: FloatArray, per_node: int, g: float, commit: bool) -> bool:
    """Whether a gang of ``g`` devices, as ``ceil(g / per_node)`` pods of near-equal size
    (:func:`scheduling.kube_placement.pod_sizes`, the larger first), fits on nodes whose
    free devices are counted in ``hist`` (``hist[v]``: nodes with ``v`` free), each pod on
    the fullest node that holds it; with ``commit`` the pods are taken from ``hist``."""
    n = int(g)
    if n <= 0:
        return True
    k = (n + per_node - 1) // per_node
    base = n // k
    extra = n - base * k
    top = len(hist)
    row = hist.copy()
    for p in range(k):
        s = base + 1 if p < extra else base
        v = s
        while v < top and row[v] <= 0:
            v += 1
        if v >= top:
            return False
        row[v] -= 1
        row[v - s] += 1
    if commit:
        hist[:] = row
    return True


@_compiled
def kueue_admit(
    queued: IntArray,
    bounds: IntArray,
    gang: FloatArray,
    qtime: FloatArray,
    prio: FloatArray,
    rate: FloatArray,
    order: IntArray,
    has: BoolArray,
    nominal: FloatArray,
    limit: FloatArray,
    usage: FloatArray,
    c_row: IntArray,
    c_room: FloatArray,
    free: FloatArray,
    strict: bool,
    hist: FloatArray,
    per_node: IntArray,
    use_pods: bool,
) -> tuple[IntArray, IntArray, BoolArray]:
    """Kueue's admission cycles without preemption (:mod:`scheduling.kubernetes`): the
    workloads admitted, in order, their flavours, and whether each borrows.

    Parameters
    ----------
    queued : (k,) int64
        Pending jobs grouped by ClusterQueue, each group in queue order.
    bounds : (m + 1,) int64
        Group ``q`` is ``queued[bounds[q]:bounds[q + 1]]``.
    gang, qtime : (k,) float64
        Devices and queue time of each pending job.
    prio : (n,) float64
        Priority of every job; ``rate`` (n, n_types): 0 where a job cannot run.
    order : (m, n_types) int64
        Each queue's flavours in order, padded with -1; ``has`` (m, n_types): listed.
    nominal, limit, usage : (m, n_types) float64
        Nominal quota, nominal + borrowing limit (inf: none) and usage; ``usage`` is
        updated in place.
    c_row : (m,) int64
        Each queue's row of ``c_room`` (the last row, ``inf``, for queues in no cohort).
    c_room : (cohorts + 1, n_types) float64
        Devices each cohort can still admit; ``free`` (n_types,): free devices. Both
        updated in place.
    strict
        ``StrictFIFO`` (a head that does not fit blocks its queue) or ``BestEffortFIFO``.
    hist : (n_types, V) float64
        With ``use_pods``: nodes of each type by free devices (:func:`pods_fit`), updated
        in place as gangs are admitted; ``per_node`` (n_types,): the most devices a node of
        each type has.
    """
    m = len(bounds) - 1
    n_types = len(free)
    k = len(queued)
    taken = np.zeros(k, dtype=np.bool_)
    heads = bounds[:m].copy()
    starts = np.empty(k, dtype=np.int64)
    types = np.empty(k, dtype=np.int64)
    borrows = np.empty(k, dtype=np.bool_)
    cap = np.empty(n_types)
    n = 0
    while True:
        best_i = -1
        best_t = -1
        best_q = -1
        b_borrow = True
        b_prio = 0.0
        b_time = 0.0
        b_job = 0
        for q in range(m):
            h = heads[q]
            while h < bounds[q + 1] and taken[h]:
                h += 1
            heads[q] = h
            if h >= bounds[q + 1]:
                continue
            for t in range(n_types):
                c = limit[q, t] - usage[q, t]
                if free[t] < c:
                    c = free[t]
                r = c_room[c_row[q], t]
                if r < c:
                    c = r
                cap[t] = c if has[q, t] else -1.0
            found_i = -1
            found_t = -1
            last = h + 1 if strict else bounds[q + 1]
            for i in range(h, last):
                if taken[i]:
                    continue
                j = queued[i]
                for x in range(n_types):
                    t = order[q, x]
                    if t < 0:
                        break
                    if (
                        gang[i] <= cap[t]
                        and rate[j, t] > 0
                        and (not use_pods or pods_fit(hist[t], per_node[t], gang[i], False))
                    ):
                        found_t = t
                        break
                if found_t >= 0:
                    found_i = i
                    break
            if found_i < 0:
                continue
            j = queued[found_i]
            bor = usage[q, found_t] + gang[found_i] > nominal[q, found_t]
            better = best_i < 0
            if not better:
                if bor != b_borrow:
                    better = not bor
                elif prio[j] != b_prio:
                    better = prio[j] > b_prio
                elif qtime[found_i] != b_time:
                    better = qtime[found_i] < b_time
                else:
                    better = j < b_job
            if better:
                best_i, best_t, best_q = found_i, found_t, q
                b_borrow, b_prio, b_time, b_job = bor, prio[j], qtime[found_i], j
        if best_i < 0:
            break
        g = gang[best_i]
        usage[best_q, best_t] += g
        c_room[c_row[best_q], best_t] -= g
        free[best_t] -= g
        if use_pods:
            pods_fit(hist[best_t], per_node[best_t], g, True)
        taken[best_i] = True
        starts[n] = queued[best_i]
        types[n] = best_t
        borrows[n] = b_borrow
        n += 1
    return starts[:n], types[:n], borrows[:n]


# ------------------------------------------------------------------ co-location (detach/attach)
COLOC_BAD_GUEST = -1  # a guest is not active, or already runs on devices of its own
COLOC_BAD_TWICE = -2  # a job is in two pairs, or both guest and host
COLOC_BAD_GANG = -3  # a guest asks for another device count than its host holds
COLOC_BAD_SHARE = -4  # a pair cannot share devices (factor 0)


@_compiled
def coloc_detach(
    guests: IntArray,
    hosts: IntArray,
    nodes: IntArray,
    node_off: IntArray,
    slow: FloatArray,
    host_of: IntArray,
    now: float,
    capped: bool,
    served: FloatArray,
    live: IntArray,
    was_host: IntArray,
    host_start: FloatArray,
    rates: FloatArray,
    marks: FloatArray,
    jf: FloatArray,
    ji: IntArray,
    jb: BoolArray,
    type_time: FloatArray,
    device_time: FloatArray,
    nodes_i: IntArray,
    busy: FloatArray,
    types_i: IntArray,
    slots: IntArray,
    st_i: IntArray,
    st_f: FloatArray,
    run_order: IntArray,
    heap_t: FloatArray,
    heap_je: IntArray,
    ctr: IntArray,
) -> int:
    """:meth:`clustersim.colocation.CoLocator.detach` in one call, the same steps in the
    same order: each guest's stint rows on its host's ``nodes`` (guest ``i``'s are
    ``nodes[node_off[i]:node_off[i + 1]]``), in whole-step rounds (``capped``) a pair's
    completed job stamped with the pair's end, the running guests stopped, the running
    hosts re-rated to their isolated rates (their rate over ``slow``; ``rates`` is scratch)
    and ``slow`` reset.

    Writes each guest's served seconds to ``served`` (m,), the running guests to ``live``,
    their hosts to ``was_host`` and the hosts' last starts to ``host_start``, and returns how
    many guests were running (the caller sums ``served`` as numpy does).
    """
    m = len(guests)
    fin = jf[JF_FINISH]
    running = jb[JB_RUNNING]
    # stint rows of the attached guests, ending now or when they completed
    n = ctr[CTR_STINTS]
    for i in range(m):
        g = guests[i]
        end = now if running[g] or not np.isfinite(fin[g]) else fin[g]
        for k in range(node_off[i], node_off[i + 1]):
            st_i[0, n] = g
            st_i[1, n] = nodes[k]
            st_i[2, n] = 0
            st_f[0, n] = jf[JF_LAST_START, g]
            st_f[1, n] = end
            n += 1
    ctr[CTR_STINTS] = n
    if capped:  # Gavel stamps both jobs of a pair with the end of their joint task
        cap = jf[JF_CAP]
        for i in range(m):
            a = guests[i]
            b = hosts[i]
            da = not running[a] and np.isfinite(fin[a])
            db = not running[b] and np.isfinite(fin[b])
            if not (da or db):
                continue
            ea = fin[a] if da else min(cap[a], now)
            eb = fin[b] if db else min(cap[b], now)
            end = ea if ea >= eb else eb
            if da and fin[a] < end:
                fin[a] = end
            if db and fin[b] < end:
                fin[b] = end
    k = 0
    for i in range(m):
        g = guests[i]
        end = now if running[g] or not np.isfinite(fin[g]) else fin[g]
        served[i] = end - jf[JF_BASE_T, g]
        if running[g]:
            live[k] = g
            was_host[k] = host_of[g]
            host_start[k] = jf[JF_LAST_START, host_of[g]]
            k += 1
    for i in range(m):
        host_of[guests[i]] = -1
    if k:
        stop_jobs(
            live[:k],
            False,
            now,
            jf,
            ji,
            jb,
            type_time,
            device_time,
            nodes_i,
            busy,
            types_i,
            slots,
            st_i,
            st_f,
            run_order,
            ctr,
        )
    # the running hosts go back to their isolated rates
    r = 0
    for i in range(len(hosts)):
        h = hosts[i]
        if running[h]:
            live[k + r] = h  # (scratch after the guests)
            rates[r] = jf[JF_CRATE, h] / slow[h]
            r += 1
    if r:
        js = live[k : k + r]
        sync_types_packed(run_order, ctr[CTR_RUN], now, jf, ji, type_time, device_time)
        sync_packed(js, r, SYNC_REMAINING | SYNC_ATTAINED | SYNC_EXECUTED, now, capped, jf, ji)
        rerate_jobs(js, rates[:r], now, jf, ji, heap_t, heap_je, ctr, marks)
    for i in range(len(hosts)):
        slow[hosts[i]] = 1.0
    return k


@_compiled
def coloc_attach(
    g: IntArray,
    h: IntArray,
    detached: IntArray,
    was_host: IntArray,
    host_start: FloatArray,
    pos: IntArray,
    now: float,
    capped: bool,
    job_type: IntArray,
    scale: IntArray,
    worker: IntArray,
    pair_rates: FloatArray,
    iso: FloatArray,
    rate: FloatArray,
    slow: FloatArray,
    host_of: IntArray,
    fg: FloatArray,
    fh: FloatArray,
    t: IntArray,
    nodes: IntArray,
    node_off: IntArray,
    marks: FloatArray,
    jf: FloatArray,
    ji: IntArray,
    jb: BoolArray,
    type_time: FloatArray,
    device_time: FloatArray,
    slots: IntArray,
    s_i: IntArray,
    s_nc: IntArray,
    s_f: FloatArray,
    run_order: IntArray,
    heap_t: FloatArray,
    heap_je: IntArray,
    ctr: IntArray,
) -> int:
    """:meth:`clustersim.colocation.CoLocator.attach` in one call, the same steps in the
    same order: the pairs ``g`` (guests) and ``h`` (their hosts, running) checked, the
    guests that go on with the same host on the same devices told apart from the others
    (preemptions of the ``detached`` guests that do not, migrations of those that moved), the
    guests started at their co-located rates (no restore stall for those that go on), and
    the hosts re-rated to theirs.

    ``pos`` (n,) is -1 scratch (left so); ``fg``, ``fh``, ``t`` (m,) receive the factors and
    the types, ``nodes`` (>= the hosts' nodes) and ``node_off`` (m + 1,) the hosts' nodes.

    Returns
    -------
    int
        The pairs newly formed (not going on), or a ``COLOC_BAD_*`` code (nothing changed).
    """
    m = len(g)
    running = jb[JB_RUNNING]
    active = jb[JB_ACTIVE]
    for i in range(m):
        if not active[g[i]] or running[g[i]]:
            return COLOC_BAD_GUEST
    for i in range(m):
        for k in range(i + 1, m):
            if g[i] == g[k] or h[i] == h[k]:
                return COLOC_BAD_TWICE
        for k in range(m):
            if g[i] == h[k]:
                return COLOC_BAD_TWICE
    for i in range(m):
        if ji[JI_ALLOC_N, h[i]] != ji[JI_GANG, g[i]]:
            return COLOC_BAD_GANG
    for i in range(m):
        t[i] = ji[JI_ALLOC_TYPE, h[i]]
    pair_factors(job_type, scale, worker, pair_rates, iso, g, h, t, fg, fh)
    for i in range(m):
        if fg[i] <= 0:
            return COLOC_BAD_SHARE
    # guests that go on with the same host, the host on the same devices: no stall
    nd = len(detached)
    for k in range(nd):
        pos[detached[k]] = k
    kept = np.zeros(nd, dtype=np.bool_)
    going = np.zeros(m, dtype=np.bool_)
    formed = m
    for i in range(m):
        k = pos[g[i]]
        if k < 0:
            continue
        if was_host[k] == h[i] and host_start[k] == jf[JF_LAST_START, h[i]]:
            going[i] = True
            kept[k] = True
            formed -= 1
        else:
            ji[JI_MIGRATIONS, g[i]] += 1
    for k in range(nd):
        pos[detached[k]] = -1
        if not kept[k]:
            ji[JI_PREEMPTIONS, detached[k]] += 1
    if m == 0:
        return formed
    # the guests' starts: no device, no node
    s0 = ctr[CTR_STARTS]
    o = ctr[CTR_START_NODES]
    restore = np.empty(m)
    for i in range(m):
        j = g[i]
        restore[i] = jf[JF_RESTORE, j]
        if going[i]:
            jf[JF_RESTORE, j] = 0.0
        s_i[0, s0 + i] = j
        s_i[1, s0 + i] = t[i]
        s_i[2, s0 + i] = 0
        s_i[3, s0 + i] = o
        s_i[4, s0 + i] = 0
        s_f[1, s0 + i] = fg[i] * rate[j, t[i]]
    ctr[CTR_STARTS] = s0 + m
    # (a guest holds no device, so it never reaches a service mark)
    start_jobs(now, marks[:0], jf, ji, jb, slots, s_i, s_nc, s_f, run_order, heap_t, heap_je, ctr)
    c = 0
    node_off[0] = 0
    for i in range(m):
        jf[JF_RESTORE, g[i]] = restore[i]
        host_of[g[i]] = h[i]
        slot = ji[JI_SLOT, h[i]]
        for k in range(ji[JI_PLACED, h[i]]):
            nodes[c] = slots[0, slot + k]
            c += 1
        node_off[i + 1] = c
    # the hosts at their co-located rates
    rates = np.empty(m)
    for i in range(m):
        rates[i] = jf[JF_CRATE, h[i]] * fh[i]
    sync_types_packed(run_order, ctr[CTR_RUN], now, jf, ji, type_time, device_time)
    sync_packed(h, m, SYNC_REMAINING | SYNC_ATTAINED | SYNC_EXECUTED, now, capped, jf, ji)
    rerate_jobs(h, rates, now, jf, ji, heap_t, heap_je, ctr, marks)
    for i in range(m):
        slow[h[i]] = fh[i]
    return formed


# ------------------------------------------------------------------ Gandiva (scheduling.gandiva)
@_compiled
def gandiva_fill(
    active: IntArray,
    partner: IntArray,
    last_run: FloatArray,
    running: BoolArray,
    alloc_n: IntArray,
    alloc_type: IntArray,
    gang: IntArray,
    rate: FloatArray,
    capacity: IntArray,
    boundary: bool,
    out_run: IntArray,
    out_type: IntArray,
    out_guest: IntArray,
) -> int:
    """One over-subscribed decision of :class:`scheduling.gandiva.Gandiva` (its time
    slicing), as the policy's numpy code did it.

    Units: the lone jobs of ``active`` (ascending), then one per pair (``partner``, -1: none)
    by its lower member; a pair's host is the member on devices of its own when only it is,
    else the lower one. A unit's stamp is the older of its jobs' ``last_run``. Between
    quanta (``boundary`` false) running units keep their devices first, in unit order; then
    the others, oldest stamp first (ties by host index), take devices: each stays on its
    type when the type has room and the host can run there, else goes to the type with room
    where its host is fastest (a pair: where both can run), skipping a gang that fits no
    type and stopping once the smallest gang left fits none.

    Writes each unit run, in order, to ``out_run`` (host), ``out_type`` and ``out_guest``
    (-1: lone); returns how many.
    """
    na = len(active)
    nt = len(capacity)
    hosts = np.empty(na, dtype=np.int64)
    guests = np.empty(na, dtype=np.int64)
    u = 0
    for i in range(na):
        j = active[i]
        if partner[j] < 0:
            hosts[u] = j
            guests[u] = -1
            u += 1
    for i in range(na):
        lo = active[i]
        hi = partner[lo]
        if hi > lo:
            if running[hi] and alloc_n[hi] > 0 and not (running[lo] and alloc_n[lo] > 0):
                hosts[u] = hi
                guests[u] = lo
            else:
                hosts[u] = lo
                guests[u] = hi
            u += 1
    left = capacity.copy()
    n = 0
    chosen = np.zeros(u, dtype=np.bool_)
    if not boundary:  # between quanta: running units keep their devices
        for i in range(u):
            h = hosts[i]
            if running[h] and alloc_n[h] > 0:
                left[alloc_type[h]] -= alloc_n[h]
                out_run[n] = h
                out_type[n] = alloc_type[h]
                out_guest[n] = guests[i]
                chosen[i] = True
                n += 1
    stamp = np.empty(u)
    for i in range(u):
        s = last_run[hosts[i]]
        g = guests[i]
        if g >= 0 and last_run[g] < s:
            s = last_run[g]
        stamp[i] = s
    by_host = np.argsort(hosts[:u], kind="mergesort")
    order = by_host[np.argsort(stamp[by_host], kind="mergesort")]
    k = 0
    for i in range(u):
        if not chosen[order[i]]:
            order[k] = order[i]
            k += 1
    if k == 0:
        return n
    most = left.max()
    smallest = gang[hosts[order[k - 1]]]
    for i in range(k):
        if gang[hosts[order[i]]] < smallest:
            smallest = gang[hosts[order[i]]]
    if most < smallest:
        return n  # no room for any waiting unit
    # the smallest gang from each unit on
    suffix = np.empty(k, dtype=np.int64)
    s = gang[hosts[order[k - 1]]]
    for i in range(k - 1, -1, -1):
        gi = gang[hosts[order[i]]]
        if gi < s:
            s = gi
        suffix[i] = s
    for i in range(k):
        if most < suffix[i]:
            break
        h = hosts[order[i]]
        g = guests[order[i]]
        need = gang[h]
        if need > most:
            continue
        t = alloc_type[h] if running[h] and alloc_n[h] > 0 else -1
        if t < 0 or left[t] < need or not _gandiva_usable(rate, h, g, t):
            t = -1
            best = -1.0
            for c in range(nt):
                sp = rate[h, c] if _gandiva_usable(rate, h, g, c) else -1.0
                if left[c] >= need and sp > best:
                    t = c
                    best = sp
            if t < 0:
                continue
        left[t] -= need
        most = left.max()
        out_run[n] = h
        out_type[n] = t
        out_guest[n] = g
        n += 1
    return n


@_compiled
def _gandiva_usable(rate: FloatArray, h: int, g: int, t: int) -> bool:
    """Whether host ``h`` (and its guest ``g``, -1: none) can run on type ``t``."""
    return rate[h, t] > 0 and (g < 0 or rate[g, t] > 0)


@_compiled
def gandiva_migrations(
    run: IntArray,
    types: IntArray,
    running: BoolArray,
    alloc_n: IntArray,
    alloc_type: IntArray,
    nodes_used: IntArray,
    least: IntArray,
    gang: IntArray,
    node_type: IntArray,
    node_free: IntArray,
    out: IntArray,
) -> int:
    """Migration for locality of :class:`scheduling.gandiva.Gandiva`: the jobs of ``run``
    that keep their devices (running on more than one device, on their type of ``types``
    when it is not empty) and span more nodes than the free devices of their type would
    let them span now (the largest free nodes first), each taking the devices it will
    use so that a second move does not count on them. ``least`` is (n_types, gangs + 1):
    the fewest nodes of each type that hold a gang. Writes them to ``out`` in ``run``
    order; returns how many."""
    free = node_free.copy()
    k = 0
    for i in range(len(run)):
        j = run[i]
        if not running[j] or alloc_n[j] <= 1:
            continue
        t = alloc_type[j]
        if len(types) and types[i] != t:
            continue
        u = nodes_used[j]
        g = gang[j]
        if u <= least[t, g]:
            continue
        m = 0
        for c in range(len(free)):
            if node_type[c] == t and free[c] > 0:
                m += 1
        if m == 0:
            continue
        nodes = np.empty(m, dtype=np.int64)
        f = np.empty(m, dtype=np.int64)
        m = 0
        for c in range(len(free)):
            if node_type[c] == t and free[c] > 0:
                nodes[m] = c
                f[m] = -free[c]
                m += 1
        by = np.argsort(f, kind="mergesort")  # most free first, ties by node index
        cum = 0
        need = 0
        for q in range(m):
            cum -= f[by[q]]
            if cum >= g:
                need = q + 1
                break
        if need == 0 or need >= u:
            continue
        cum = 0
        for q in range(need):
            c = nodes[by[q]]
            take = free[c] if q < need - 1 else g - cum
            cum += free[c]
            free[c] -= take
        out[k] = j
        k += 1
    return k


@_compiled
def _gandiva_before(
    i: int, k: int, prio: FloatArray, deficit: FloatArray, alloc: FloatArray, t: int
) -> bool:
    """Whether entry ``i`` comes before entry ``k`` on type ``t`` in a round of
    ``gavel-gandiva``: decreasing (priority, deficit, allocation), then by position."""
    if prio[i, t] != prio[k, t]:
        return prio[i, t] > prio[k, t]
    if deficit[i, t] != deficit[k, t]:
        return deficit[i, t] > deficit[k, t]
    if alloc[i, t] != alloc[k, t]:
        return alloc[i, t] > alloc[k, t]
    return i < k


@_compiled
def _gandiva_sift(
    heap: IntArray,
    size: int,
    p: int,
    prio: FloatArray,
    deficit: FloatArray,
    alloc: FloatArray,
    t: int,
) -> None:
    """Sift ``heap[p]`` down a heap of ``size`` entries (first: the one to place first)."""
    e = heap[p]
    while True:
        c = 2 * p + 1
        if c >= size:
            break
        if c + 1 < size and _gandiva_before(heap[c + 1], heap[c], prio, deficit, alloc, t):
            c += 1
        if not _gandiva_before(heap[c], e, prio, deficit, alloc, t):
            break
        heap[p] = heap[c]
        p = c
    heap[p] = e


@_compiled
def gandiva_round(
    types: IntArray,
    ran: FloatArray,
    work: FloatArray,
    deficit: FloatArray,
    alloc: FloatArray,
    ok: BoolArray,
    inside: BoolArray,
    ea: IntArray,
    eb: IntArray,
    gang: IntArray,
    left: IntArray,
    taken: BoolArray,
    out_e: IntArray,
    out_t: IntArray,
) -> int:
    """A round of ``gavel-gandiva`` (:meth:`scheduling.gavel_packing.GavelGandiva._place`):
    Gavel's priority of each entry (rows of the arrays, in Gavel's order) on each type, its
    allocation ``alloc`` over the fraction ``ran / work`` of the type's time it received
    (``alloc × 1e9`` when it received none; 0 where ``alloc`` is 0, it cannot run (``ok``)
    or is outside the allocation (``inside``)), then the greedy placement: types in the order
    ``types``; on each, the entries that can run there by decreasing (priority, ``deficit``,
    ``alloc``), ties by row, each placed when none of its jobs is ``taken`` yet and its
    gang fits the devices ``left``, until the type is full (``left`` and ``taken`` are
    updated; the caller decides which placed entries run).

    Each type's order is drawn from a heap as the placement goes, so that a type filled
    after a few entries costs no sort of all of them (the order is total, so the entries
    placed are those of a full sort). Writes the placed entries and their types to
    ``out_e``/``out_t``; returns how many."""
    m, nt = ran.shape
    prio = np.zeros((m, nt))
    for e in range(m):
        if not inside[e]:
            continue
        for t in range(nt):
            a = alloc[e, t]
            if a == 0.0 or not ok[e, t]:
                continue
            frac = 0.0 if work[t] == 0.0 else ran[e, t] / work[t]
            prio[e, t] = a / frac if frac > 0.0 else a * 1e9
    heap = np.empty(m, dtype=np.int64)
    n = 0
    for t in types:
        if left[t] <= 0:
            continue
        size = 0
        for e in range(m):
            if ok[e, t]:  # (the others are skipped anyway)
                heap[size] = e
                size += 1
        for p in range(size // 2 - 1, -1, -1):
            _gandiva_sift(heap, size, p, prio, deficit, alloc, t)
        while size > 0 and left[t] > 0:
            e = heap[0]
            size -= 1
            heap[0] = heap[size]
            _gandiva_sift(heap, size, 0, prio, deficit, alloc, t)
            a = ea[e]
            b = eb[e]
            if taken[a] or (b >= 0 and taken[b]) or gang[e] > left[t]:
                continue
            left[t] -= gang[e]
            taken[a] = True
            if b >= 0:
                taken[b] = True
            out_e[n] = e
            out_t[n] = t
            n += 1
    return n


@_compiled
def slurm_exponents(
    tracked: IntArray,
    seen: FloatArray,
    attained: FloatArray,
    devices: FloatArray,
    dt: float,
    h: float,
) -> FloatArray:
    """The exponents ``−(dt − ran) / h`` of :meth:`scheduling.slurm.Slurm._decay_usage`:
    ``ran`` = min(service gained / devices, ``dt``), the seconds each ``tracked`` job held
    its devices since the last decision (``seen``: its service then). numpy raises 2 to
    them (its power is not the scalar one bit for bit), then :func:`slurm_accrue`."""
    out = np.empty(len(tracked))
    for x in range(len(tracked)):
        j = tracked[x]
        ran = min((attained[j] - seen[x]) / devices[j], dt)
        out[x] = -(dt - ran) / h
    return out


@_compiled
def slurm_accrue(
    usage: FloatArray,
    decay: float,
    powers: FloatArray,
    tracked: IntArray,
    seen: FloatArray,
    attained: FloatArray,
    devices: FloatArray,
    user: IntArray,
    h: float,
    ln2: float,
) -> None:
    """Decay ``usage`` by ``decay`` and add each ``tracked`` job's decayed device-seconds
    ``n h / ln 2 × (powers − decay)`` to its user's, in order (as ``np.add.at``), for the jobs
    that gained service (:meth:`scheduling.slurm.Slurm._decay_usage`)."""
    for u in range(len(usage)):
        usage[u] *= decay
    for x in range(len(tracked)):
        j = tracked[x]
        if attained[j] - seen[x] > 0:
            usage[user[j]] += devices[j] * h / ln2 * (powers[x] - decay)


@_compiled
def _fair_tree_into(out: FloatArray, shares: FloatArray, usage: FloatArray, total: float) -> None:
    """Fair Tree's factor of each user into ``out`` (:func:`scheduling.slurm.fair_tree_factor`,
    the same arithmetic): rank by Level Fairshare ``shares / (usage / total)`` (no usage:
    first), ``(users - users ranked strictly higher) / users``."""
    u = len(shares)
    neg = np.empty(u)
    for x in range(u):
        if usage[x] > 0:
            neg[x] = -(shares[x] / (usage[x] / total if total > 0 else 1.0))
        else:
            neg[x] = -np.inf
    srt = np.sort(neg)
    higher = np.searchsorted(srt, neg)
    for x in range(u):
        out[x] = (u - higher[x]) / u


@_compiled
def _best_pending(cand: IntArray, done: BoolArray, prio: FloatArray) -> int:
    """The position in ``cand`` of the best-ranked entry not ``done`` (highest ``prio`` of
    ``cand``'s entries, ties to the earlier), or -1."""
    c = -1
    for x in range(len(cand)):
        if not done[x] and (c < 0 or prio[cand[x]] > prio[cand[c]]):
            c = x
    return c


@_compiled
def slurm_pass(
    now: float,
    active: IntArray,
    running: BoolArray,
    per_job: FloatArray,
    gang: IntArray,
    rate: FloatArray,
    free: IntArray,
    fs: FloatArray,
    limit: FloatArray,
    w_age: float,
    w_fs: float,
    max_age: float,
    backfill: bool,
    capacity: IntArray,
    held: IntArray,
    alloc_type: IntArray,
    alloc_n: IntArray,
    last_start: FloatArray,
    usage: FloatArray,
    shares: FloatArray,
    total: float,
    fair_tree: bool,
) -> tuple[IntArray, IntArray, int]:
    """One scheduling pass of :class:`scheduling.slurm.Slurm`: the multifactor priorities of
    the pending jobs, the main scheduler in priority order, then EASY backfill behind the
    first job it cannot start (the rules of :mod:`scheduling.slurm`, which runs the same
    pass in numpy and Python with ``use_kernel = False``). Returns the jobs started, in
    order, their types, and how many of them were backfilled.

    Parameters
    ----------
    active : (a,) int64
        The active jobs, ascending (in submission order); the pending ones are those not
        ``running`` (n,).
    per_job : (n, 5) float64
        Every job's submission time, weighted job-size and QOS terms (weight × factor),
        devices and user, in one row (what the priority loop reads, in one cache line).
    limit : (n,) float64
        Every job's time limit; ``gang`` (n,) its devices; ``rate`` (n, n_types): 0 where
        it cannot run.
    free : (n_types,) int64
        Free devices per type; updated in place as jobs start. ``capacity``: devices.
    fs : (users,) float64
        Each user's fair-share factor now; with ``fair_tree``, overwritten with Fair Tree's
        factor of ``shares`` and decayed ``usage`` (:func:`scheduling.slurm.fair_tree_factor`;
        ``total``: the sum of ``usage``, as numpy sums it).
    w_age, w_fs, max_age
        ``PriorityWeightAge``, ``PriorityWeightFairshare``, ``PriorityMaxAge``.
    backfill
        EASY backfill behind the first job the main scheduler cannot start.
    held : (h,) int64
        The jobs holding devices; ``alloc_type``, ``alloc_n``, ``last_start`` (n,): every
        job's type, devices and last start (a held job's expected end: start + limit).
    """
    n_types = len(free)
    if fair_tree:
        _fair_tree_into(fs, shares, usage, total)
    widest = 0
    for t in range(n_types):
        widest = max(widest, free[t])
    queued = np.empty(len(active), dtype=np.int64)
    prio = np.empty(len(active))
    fits = np.zeros(len(active), dtype=np.bool_)
    q = 0
    n_fit = 0
    block = -1  # the best-ranked job that does not fit now (the first of the best)
    for j in active:
        if running[j]:
            continue
        # the multifactor priority, in the policy's order of operations
        age = min((now - per_job[j, 0]) / max_age, 1.0)
        p = w_age * age + w_fs * fs[int(per_job[j, 4])] + per_job[j, 1] + per_job[j, 2]
        queued[q] = j
        prio[q] = p
        g = per_job[j, 3]
        if g <= widest:
            for t in range(n_types):
                if rate[j, t] > 0 and g <= free[t]:
                    fits[q] = True
                    break
        if fits[q]:
            n_fit += 1
        elif block < 0 or p > prio[block]:
            block = q
        q += 1
    # the fitting jobs (positions in `queued`, ascending: submission, then index), taken in
    # priority order by selection (a pass starts few jobs: cheaper than sorting them all);
    # ties go to the earlier position
    cand = np.empty(n_fit, dtype=np.int64)
    c = 0
    for i in range(q):
        if fits[i]:
            cand[c] = i
            c += 1
    done = np.zeros(n_fit, dtype=np.bool_)
    h = len(held)
    end_t = np.empty(h + q, dtype=np.int64)
    end_s = np.empty(h + q)
    end_n = np.empty(h + q, dtype=np.int64)
    for e in range(h):
        j = held[e]
        end_t[e] = alloc_type[j]
        end_s[e] = last_start[j] + limit[j]
        end_n[e] = alloc_n[j]
    ne = h
    run = np.empty(q, dtype=np.int64)
    typ = np.empty(q, dtype=np.int64)
    m = 0
    backfilled = 0
    # the main scheduler: in priority order while jobs fit
    head = -1
    while True:
        c = _best_pending(cand, done, prio)
        if c < 0:
            break
        i = cand[c]
        j = queued[i]
        if block >= 0:
            jb = queued[block]
            pb = -prio[block]
            pi = -prio[i]
            if pb != pi:
                first = pb < pi
            elif per_job[jb, 0] != per_job[j, 0]:
                first = per_job[jb, 0] < per_job[j, 0]
            else:
                first = jb < j
            if first:  # the job that does not fit ranks first
                head = jb
                break
        g = gang[j]
        best_t = -1
        best_r = -1.0
        for t in range(n_types):
            if rate[j, t] > 0 and free[t] >= g and rate[j, t] > best_r:
                best_t = t
                best_r = rate[j, t]
        if best_t < 0:  # it fitted at the start of the pass, not any more
            head = j
            done[c] = True
            break
        done[c] = True
        free[best_t] -= g
        run[m] = j
        typ[m] = best_t
        m += 1
        end_t[ne] = best_t
        end_s[ne] = now + limit[j]
        end_n[ne] = g
        ne += 1
    if head < 0:
        if block < 0:
            return run[:m], typ[:m], backfilled
        head = queued[block]
    any_free = False
    for t in range(n_types):
        if free[t] != 0:
            any_free = True
    if not backfill or not any_free:
        return run[:m], typ[:m], backfilled
    # the head's reservation: the type where it can start first (EASY's shadow time)
    g = gang[head]
    reserved = -1
    shadow = np.inf
    extra = 0
    for t in range(n_types):
        if not rate[head, t] > 0 or capacity[t] < g:
            continue
        avail = free[t]
        s = np.inf
        x = 0
        if avail >= g:
            s = now
            x = avail - g
        else:
            cnt = 0
            for e in range(ne):
                if end_t[e] == t:
                    cnt += 1
            es = np.empty(cnt)
            ns = np.empty(cnt, dtype=np.int64)
            cnt = 0
            for e in range(ne):
                if end_t[e] == t:
                    es[cnt] = end_s[e]
                    ns[cnt] = end_n[e]
                    cnt += 1
            for e in np.argsort(es, kind="mergesort"):
                avail += ns[e]
                if avail >= g:
                    s = es[e] if es[e] > now else now
                    x = avail - g
                    break
        if s < shadow:
            reserved = t
            shadow = s
            extra = x
    # EASY backfill over the fitting jobs ranked after the head, in priority order: each
    # start is the best-ranked of them that can start now (free devices and the reserve's
    # extra devices only shrink, so a job passed over earlier in the walk cannot start now)
    while True:
        c = -1
        best_t = -1
        by_time = False
        for x in range(n_fit):
            if done[x] or (c >= 0 and prio[cand[x]] <= prio[cand[c]]):
                continue
            j = queued[cand[x]]
            g = gang[j]
            bt = now + limit[j] <= shadow
            tx = -1
            best_r = -1.0
            for t in range(n_types):
                if rate[j, t] > 0 and g <= free[t] and rate[j, t] > best_r:
                    if t == reserved and not (bt or g <= extra):
                        continue
                    tx = t
                    best_r = rate[j, t]
            if tx >= 0:
                c, best_t, by_time = x, tx, bt
        if c < 0:
            break
        done[c] = True
        j = queued[cand[c]]
        g = gang[j]
        if best_t == reserved and not by_time:
            extra -= g
        backfilled += 1
        free[best_t] -= g
        run[m] = j
        typ[m] = best_t
        m += 1
        any_free = False
        for t in range(n_types):
            if free[t] != 0:
                any_free = True
        if not any_free:
            break
    return run[:m], typ[:m], backfilled


@_compiled
def fifo_groups(
    active: IntArray,
    running: BoolArray,
    held: IntArray,
    alloc_n: IntArray,
    leaf_of: IntArray,
    prio: IntArray,
    n_leaves: int,
) -> tuple[IntArray, IntArray, IntArray, IntArray, IntArray, FloatArray]:
    """The pending jobs of each leaf queue of :class:`scheduling.yarn_capacity.YarnCapacity`
    in FIFO order (priority descending, then job index), grouped by leaf: leaf ``q``'s are
    ``out[bounds[q]:bounds[q + 1]]``; and each leaf's first (-1: none). Also the jobs of
    ``held`` that hold devices (``alloc_n`` > 0), in order, their leaves, and the devices
    each leaf uses.

    Parameters
    ----------
    active : (a,) int64
        The active jobs, ascending; the pending ones are those not ``running`` (n,).
    leaf_of : (n,) int64
        Every job's leaf (a negative one counts from the end, as a Python list index).
    prio : (n,) int64
        Every job's priority.
    """
    mine = np.empty(len(held), dtype=np.int64)
    leaf_r = np.empty(len(held), dtype=np.int64)
    used = np.zeros(n_leaves)
    k = 0
    for j in held:
        if alloc_n[j] > 0:
            q = leaf_of[j]
            if q < 0:
                q += n_leaves
            mine[k] = j
            leaf_r[k] = leaf_of[j]
            used[q] += alloc_n[j]
            k += 1
    queued = np.empty(len(active), dtype=np.int64)
    k2 = k
    k = 0
    for j in active:
        if not running[j]:
            queued[k] = j
            k += 1
    queued = queued[:k]
    bounds = np.zeros(n_leaves + 1, dtype=np.int64)
    for j in queued:
        q = leaf_of[j]
        if q < 0:
            q += n_leaves
        bounds[q + 1] += 1
    for q in range(n_leaves):
        bounds[q + 1] += bounds[q]
    out = np.empty(len(queued), dtype=np.int64)
    pos = bounds[:n_leaves].copy()
    for j in queued:
        q = leaf_of[j]
        if q < 0:
            q += n_leaves
        out[pos[q]] = j
        pos[q] += 1
    for q in range(n_leaves):
        a = bounds[q]
        b = bounds[q + 1]
        mixed = False
        for x in range(a + 1, b):
            if prio[out[x]] != prio[out[a]]:
                mixed = True
                break
        if mixed:  # a stable sort by priority descending keeps the job order among equals
            seg = out[a:b].copy()
            keys = np.empty(b - a)
            for x in range(b - a):
                keys[x] = -prio[seg[x]]
            out[a:b] = seg[np.argsort(keys, kind="mergesort")]
    firsts = np.full(n_leaves, -1, dtype=np.int64)
    for q in range(n_leaves):
        if bounds[q + 1] > bounds[q]:
            firsts[q] = out[bounds[q]]
    return out, bounds, firsts, mine[:k2], leaf_r[:k2], used


@_compiled
def yarn_allocate(
    order: IntArray,
    bounds: IntArray,
    node_leaf: IntArray,
    node_parent: IntArray,
    node_max: FloatArray,
    child_ptr: IntArray,
    child_idx: IntArray,
    leaf_ptr: IntArray,
    leaf_idx: IntArray,
    used: FloatArray,
    guarantee: FloatArray,
    maximum: FloatArray,
    free: IntArray,
    rate: FloatArray,
    gang: IntArray,
) -> tuple[IntArray, IntArray]:
    """The allocation of :class:`scheduling.yarn_capacity.YarnCapacity` (its ``_descend``
    loop, the same rules and arithmetic): while devices are free, walk down from the root,
    at each level to the child with the lowest used capacity relative to its guarantee (ties:
    the order of the children) among those under which a leaf's first pending job fits, and
    start that job. Returns the jobs started, in order, and their types; ``used`` and
    ``free`` are updated in place.

    Parameters
    ----------
    order, bounds : int64
        The pending jobs grouped by leaf in FIFO order (:func:`fifo_groups`).
    node_leaf, node_parent, node_max : (m,)
        Each queue of the tree (node 0: the root): its leaf index (-1 for a parent), its
        parent (-1 for the root) and its absolute maximum capacity (fraction of the cluster).
    child_ptr, child_idx : int64
        Each node's children in order: ``child_idx[child_ptr[v]:child_ptr[v + 1]]``.
    leaf_ptr, leaf_idx : int64
        The leaves under each node, depth first, likewise.
    used, guarantee, maximum : (leaves,) float64
        Devices each leaf uses, is guaranteed and may use at most.
    free : (n_types,) int64
        Free devices per type.
    """
    n_nodes = len(node_leaf)
    n_leaves = len(bounds) - 1
    n_types = len(free)
    heads = bounds[:n_leaves].copy()
    starts = np.empty(len(order), dtype=np.int64)
    types = np.empty(len(order), dtype=np.int64)
    ratio = np.empty(n_nodes)
    stack = np.empty(n_nodes, dtype=np.int64)
    m = 0
    while True:
        any_free = False
        for t in range(n_types):
            if free[t] > 0:
                any_free = True
        if not any_free:
            break
        for v in range(1, n_nodes):  # used over guaranteed capacity of each queue
            u = 0.0
            g = 0.0
            for x in range(leaf_ptr[v], leaf_ptr[v + 1]):
                u += used[leaf_idx[x]]
                g += guarantee[leaf_idx[x]]
            if g <= 0:
                ratio[v] = np.inf if u > 0 else 0.0
            else:
                ratio[v] = u / g
        total = 0.0  # devices of the cluster: free + used
        for t in range(n_types):
            total += free[t]
        for x in range(n_leaves):
            total += used[x]
        # the leaves depth first, each node's children by ratio (ties: their order); the
        # first whose head job fits is the descent's
        found_q = -1
        found_j = -1
        found_t = -1
        top = 0
        stack[top] = 0
        top += 1
        while top > 0 and found_q < 0:
            top -= 1
            v = stack[top]
            q = node_leaf[v]
            if q < 0:
                a = child_ptr[v]
                b = child_ptr[v + 1]
                keys = np.empty(b - a)
                for x in range(b - a):
                    keys[x] = ratio[child_idx[a + x]]
                srt = np.argsort(keys, kind="mergesort")
                for x in range(b - a - 1, -1, -1):  # pushed last first: popped in order
                    stack[top] = child_idx[a + srt[x]]
                    top += 1
                continue
            if heads[q] >= bounds[q + 1]:
                continue
            j = order[heads[q]]
            g_j = gang[j]
            if used[q] + g_j > maximum[q] + 1e-9:
                continue
            ok = True
            p = node_parent[v]
            while p > 0:  # every parent (not the root) stays within its maximum
                u = 0.0
                for x in range(leaf_ptr[p], leaf_ptr[p + 1]):
                    u += used[leaf_idx[x]]
                if u + g_j > node_max[p] * total + 1e-9:
                    ok = False
                    break
                p = node_parent[p]
            if not ok:
                continue
            best_t = -1
            best_r = -1.0
            for t in range(n_types):
                if rate[j, t] > 0 and free[t] >= g_j and rate[j, t] > best_r:
                    best_t = t
                    best_r = rate[j, t]
            if best_t >= 0:
                found_q = q
                found_j = j
                found_t = best_t
        if found_q < 0:
            break
        g_j = gang[found_j]
        free[found_t] -= g_j
        used[found_q] += g_j
        heads[found_q] += 1
        starts[m] = found_j
        types[m] = found_t
        m += 1
    return starts[:m], types[:m]
