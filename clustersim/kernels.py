"""Compiled inner loops of the engine, its placements and one policy.

At every event of a full-trace run the engine does a few small things many times: walk a
preemptive policy's priority list to see which jobs fit (:func:`plan_preemptive`), bring the
progress of running jobs up to date (:func:`sync_running`), find nodes for a gang
(:func:`best_fit_node`, :func:`take_largest_first`, :func:`take_nodes`, :func:`link_gbs`).
Done with numpy, each is a handful of small array operations whose fixed cost dominates;
compiled by numba, each is one call. Tiresias's two-queue order (:func:`stable_partition`) is
the one policy-side loop here.

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


def choose(n_jobs: int, events: int = 0) -> bool:
    """Use the compiled kernels from now on if a run of ``n_jobs`` jobs that has processed
    ``events`` event batches is worth it: at least :data:`COMPILE_FROM_JOBS` jobs or
    :data:`COMPILE_AFTER_EVENTS` event batches. A process that has switched keeps them.

    Returns
    -------
    bool
        Whether the compiled kernels are in use.
    """
    if not _in_use and (n_jobs >= COMPILE_FROM_JOBS or events >= COMPILE_AFTER_EVENTS):
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
        for r_j in running_jobs:
            if mark[r_j] != 1:
                stop[n_stop] = r_j
                n_stop += 1
        stop[:n_stop].sort()
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
def stable_partition(idx: IntArray, values: FloatArray, eps: float, bound: float) -> IntArray:
    """``idx`` with the entries whose ``values[j] + eps < bound`` first, each part in its
    original order: ``concatenate([idx[low], idx[~low]])`` in one pass over ``idx``."""
    out = np.empty_like(idx)
    m = len(idx)
    lo = 0
    hi = m
    for i in range(m):  # the high part is written backwards from the end, then reversed
        j = idx[i]
        if values[j] + eps < bound:
            out[lo] = j
            lo += 1
        else:
            hi -= 1
            out[hi] = j
    out[hi:] = out[hi:][::-1].copy()
    return out


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


@_compiled
def release_nodes(
    node_free: IntArray, busy: FloatArray, node_group: IntArray, nodes: IntArray, counts: IntArray
) -> None:
    """Give back ``counts`` devices on ``nodes`` (the reverse of :func:`take_nodes`)."""
    for i in range(len(nodes)):
        n = nodes[i]
        node_free[n] += counts[i]
        busy[node_group[n]] -= counts[i]
