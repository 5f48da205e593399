"""Compiled inner loops of the engine, its placements and one policy.

At every event of a full-trace run the engine does a few small things many times: walk a
preemptive policy's priority list to see which jobs fit (:func:`plan_preemptive`), bring the
progress of running jobs up to date (:func:`sync_running`), find nodes for a gang
(:func:`best_fit_node`, :func:`take_largest_first`, :func:`take_nodes`, :func:`link_gbs`).
Done with numpy, each is a handful of small array operations whose fixed cost dominates;
compiled by numba, each is one call. Tiresias's two-queue order (:func:`stable_partition`) is
the one policy-side loop here.

The kernels are plain Python over numpy arrays. numba compiles them when it is installed (it is
a pinned dependency of the product; compiled code is cached next to this module or in
``NUMBA_CACHE_DIR``, and :func:`clustersim.engine.warm_up` fills the cache at install time).
Without numba they run as they are, slower but with the same results, so the library still
works with numpy alone. The tests check every kernel against a naive reference and against the
plain-Python run of its own source, and whole simulations with and without compilation.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

F = TypeVar("F", bound=Callable[..., Any])

try:
    import numba

    def _compiled(fn: F) -> F:
        try:
            return numba.njit(cache=True, nogil=True)(fn)  # type: ignore[return-value]
        except RuntimeError:  # no writable cache directory anywhere: compile in each process
            return numba.njit(cache=False, nogil=True)(fn)  # type: ignore[return-value]

    COMPILED = True
except ImportError:  # pragma: no cover - the product pins numba; the library does not need it

    def _compiled(fn: F) -> F:
        return fn

    COMPILED = False

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


# ---------------------------------------------------------------------------------------------
# The engine's per-job bookkeeping: start, stop, reserve, event heaps
#
# The engine packs its per-job state into a few arrays so that a kernel call passes a handful
# of arguments (each costs numba's dispatcher about 0.1 µs): ``jf`` (N_JF, n) float64 and
# ``ji`` (N_JI, n) int64 hold one row per field below, ``jb`` (2, n) bool the running and
# active flags. Counters the kernels advance live in ``ctr`` (N_CTR,) int64.

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
JI_SLOT = 7  # offset of the job's slot in the placement arrays
JI_PLACED = 8  # nodes of the job's latest placement (0: never placed)
JI_RC_HEAD = 9  # first entry of the job's chain in the rate cache, -1 for none
N_JI = 10

JB_RUNNING = 0
JB_ACTIVE = 1

CTR_STINTS = 0  # stint rows written
CTR_HEAP = 1  # entries in the completion heap
CTR_MARKS = 2  # entries in the service-mark heap
CTR_RUN = 3  # running jobs (the first entries of ``run_order``)
CTR_RC = 4  # entries of the rate cache
CTR_STARTS = 5  # starts reserved by the current decision
CTR_START_NODES = 6  # node entries of those starts
N_CTR = 7

MARK_EPS = 1e-6  # scheduling.base.SERVICE_EPS (the kernels import no policy code)

PLACE_STRATEGY = 0  # how reserve_starts places gangs (see _reserve_one_node)
PLACE_BEST_FIT = 1
PLACE_CONSOLIDATE = 2

RESERVE_DONE = 0
RESERVE_PLACE = 1  # the job at the returned position needs the placement strategy


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
def heap_push(
    ht: FloatArray, hje: IntArray, ctr: IntArray, which: int, t: float, j: int, e: int
) -> None:
    """Push ``(t, j, e)`` on the binary min-heap ``ht``/``hje`` of ``ctr[which]`` entries.

    Parameters
    ----------
    ht : (cap,) float64
        Entry times.
    hje : (2, cap) int64
        Entry jobs and epochs. ``cap`` must exceed ``ctr[which]``.
    ctr : (N_CTR,) int64
        Counters; ``ctr[which]`` is the heap's size, incremented.
    """
    i = ctr[which]
    ctr[which] = i + 1
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
def heap_pop(ht: FloatArray, hje: IntArray, ctr: IntArray, which: int) -> tuple[float, int, int]:
    """Remove and return the smallest entry ``(t, j, e)`` of a non-empty heap."""
    t, j, e = ht[0], hje[0, 0], hje[1, 0]
    size = ctr[which] - 1
    ctr[which] = size
    if size > 0:
        ht[0] = ht[size]
        hje[0, 0] = hje[0, size]
        hje[1, 0] = hje[1, size]
        _sift_down(ht, hje, size, 0)
    return t, j, e


@_compiled
def heap_peek(ht: FloatArray, hje: IntArray, ctr: IntArray, which: int, epoch: IntArray) -> float:
    """Time of the first current entry (``e == epoch[j]``) of a heap, ``inf`` when there is
    none; stale entries met on the way are dropped."""
    while ctr[which] > 0 and hje[1, 0] != epoch[hje[0, 0]]:
        heap_pop(ht, hje, ctr, which)
    return ht[0] if ctr[which] > 0 else np.inf


@_compiled
def heap_compact(ht: FloatArray, hje: IntArray, ctr: IntArray, which: int, epoch: IntArray) -> None:
    """Drop every stale entry of a heap (jobs stopped since the entry was pushed), in
    O(size); the current entries, and so the order of events, stay the same."""
    m = 0
    for i in range(ctr[which]):
        if hje[1, i] == epoch[hje[0, i]]:
            ht[m] = ht[i]
            hje[0, m] = hje[0, i]
            hje[1, m] = hje[1, i]
            m += 1
    ctr[which] = m
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
    node_free: IntArray,
    busy: FloatArray,
    node_group: IntArray,
    free: IntArray,
    slot_nodes: IntArray,
    slot_counts: IntArray,
    st_i: IntArray,
    st_f: FloatArray,
    run_order: IntArray,
    ctr: IntArray,
) -> None:
    """Stop running jobs ``js`` in that order (completion or suspension).

    Each job's counters are brought to ``now`` (progress stops at its whole-step ``cap``):
    ``executed``, ``attained``, ``type_time``, ``device_time`` and ``remaining`` (0 and
    ``finish = now`` when ``completed``); its devices go back to ``node_free``, ``busy`` and
    ``free``; one stint row per node is appended; its epoch is bumped (its heap entries go
    stale) and it leaves ``run_order``, whose other entries keep their order.

    Parameters
    ----------
    js : (k,) int64
        Running jobs to stop.
    jf, ji, jb : (N_JF, n) float64, (N_JI, n) int64, (2, n) bool
        Per-job state (rows ``JF_*``, ``JI_*``, ``JB_*``).
    type_time, device_time : (n, n_types) float64
        Seconds and device-seconds held per type.
    node_free : (n_nodes,) int64
        Free devices per node.
    busy : (n_groups,) float64
        Busy devices per node group (type × region).
    node_group : (n_nodes,) int64
        Group of each node.
    free : (n_types,) int64
        Free devices per type.
    slot_nodes, slot_counts : (s,) int64
        Placement slots: job ``j`` holds ``slot_counts[o:o+k]`` devices on
        ``slot_nodes[o:o+k]``, ``o = ji[JI_SLOT, j]``, ``k = ji[JI_PLACED, j]``.
    st_i : (3, cap) int64
        Out: stint job, node, devices (rows from ``ctr[CTR_STINTS]`` on; room for one row per
        device held by ``js`` is the caller's business).
    st_f : (2, cap) float64
        Out: stint start and end.
    run_order : (n,) int64
        Running jobs in the engine's order, ``ctr[CTR_RUN]`` of them.
    ctr : (N_CTR,) int64
        Counters.
    """
    n_st = ctr[CTR_STINTS]
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
            node = slot_nodes[i]
            c = slot_counts[i]
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
    ht: FloatArray,
    hje: IntArray,
    jf: FloatArray,
    ji: IntArray,
    jb: BoolArray,
    type_time: FloatArray,
    device_time: FloatArray,
    node_free: IntArray,
    busy: FloatArray,
    node_group: IntArray,
    free: IntArray,
    slot_nodes: IntArray,
    slot_counts: IntArray,
    st_i: IntArray,
    st_f: FloatArray,
    run_order: IntArray,
    ctr: IntArray,
) -> int:
    """Complete the running jobs predicted to finish by ``t`` (within ``1e-9 + 1e-12 |t|``).

    Pops their entries from the completion heap ``ht``/``hje`` (skipping stale ones), writes
    them ascending to ``out`` (room for every running job), stops them in that order as
    :func:`stop_jobs` does with ``completed`` and clears their active flag. Returns how many.
    """
    tol = t + 1e-9 + 1e-12 * abs(t)
    epoch = ji[JI_EPOCH]
    k = 0
    while ctr[CTR_HEAP] > 0 and ht[0] <= tol:
        _, j, e = heap_pop(ht, hje, ctr, CTR_HEAP)
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
        node_free,
        busy,
        node_group,
        free,
        slot_nodes,
        slot_counts,
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
    mt: FloatArray,
    mje: IntArray,
    ctr: IntArray,
    j: int,
    t: float,
    att: float,
    nd: int,
    e: int,
) -> None:
    """Schedule the moment running job ``j`` (``att`` device-seconds at ``t`` on ``nd``
    devices, epoch ``e``) reaches the next of the service ``marks`` (ascending) above it, on
    the mark heap ``mt``/``mje``; nothing when it is above them all."""
    q = _next_mark(marks, att)
    if q < len(marks):
        heap_push(mt, mje, ctr, CTR_MARKS, t + (marks[q] - att) / nd, j, e)


@_compiled
def pop_marks(
    t: float, mt: FloatArray, mje: IntArray, ctr: IntArray, epoch: IntArray, out: IntArray
) -> int:
    """Pop the mark-heap entries due by ``t``; the current ones go to ``out`` (2, >= size)
    as (job, epoch) columns, in pop order. Returns how many."""
    k = 0
    while ctr[CTR_MARKS] > 0 and mt[0] <= t:
        _, j, e = heap_pop(mt, mje, ctr, CTR_MARKS)
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
    mt: FloatArray,
    mje: IntArray,
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
            push_mark(marks, mt, mje, ctr, j, now, att, n, e)


@_compiled
def record_start(
    j: int,
    t: int,
    nd: int,
    nodes: IntArray,
    counts: IntArray,
    s_i: IntArray,
    s_nodes: IntArray,
    s_counts: IntArray,
    ctr: IntArray,
) -> None:
    """Append a reserved start (job ``j`` on ``nd`` devices of type ``t``: ``counts`` on
    ``nodes``) to the decision's start list ``s_i`` (5, cap): job, type, devices, offset and
    length of its nodes in ``s_nodes``/``s_counts``."""
    s = ctr[CTR_STARTS]
    o = ctr[CTR_START_NODES]
    s_i[0, s] = j
    s_i[1, s] = t
    s_i[2, s] = nd
    s_i[3, s] = o
    s_i[4, s] = len(nodes)
    for i in range(len(nodes)):
        s_nodes[o + i] = nodes[i]
        s_counts[o + i] = counts[i]
    ctr[CTR_STARTS] = s + 1
    ctr[CTR_START_NODES] = o + len(nodes)


@_compiled
def _reserve_one_node(
    j: int,
    t: int,
    nd: int,
    placing: int,
    node_free: IntArray,
    busy: FloatArray,
    node_group: IntArray,
    free: IntArray,
    type_nodes: IntArray,
    type_off: IntArray,
    s_i: IntArray,
    s_nodes: IntArray,
    s_counts: IntArray,
    ctr: IntArray,
) -> int:
    """Reserve ``nd`` devices of type ``t`` for job ``j``: 1 when done, 0 when fewer than
    ``nd`` are free, -1 when the placement strategy must choose.

    ``placing`` is ``PLACE_STRATEGY`` (the strategy chooses), ``PLACE_BEST_FIT`` (a gang that
    fits one node goes to the best-fitting one, the strategy places the others) or
    ``PLACE_CONSOLIDATE`` (the others take the freest nodes first, :func:`take_largest_first`).
    """
    if free[t] < nd:
        return 0
    if placing == PLACE_STRATEGY:
        return -1
    nodes_t = type_nodes[type_off[t] : type_off[t + 1]]
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
        record_start(j, t, nd, nodes_t[i : i + 1], counts, s_i, s_nodes, s_counts, ctr)
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
    record_start(j, t, nd, nodes, counts, s_i, s_nodes, s_counts, ctr)
    return 1


@_compiled
def reserve_starts(
    cand: IntArray,
    m: int,
    i0: int,
    greedy: bool,
    blocking: bool,
    placing: int,
    rate: FloatArray,
    ji: IntArray,
    jb: BoolArray,
    mark: Int8Array,
    node_free: IntArray,
    busy: FloatArray,
    node_group: IntArray,
    free: IntArray,
    type_nodes: IntArray,
    type_off: IntArray,
    s_i: IntArray,
    s_nodes: IntArray,
    s_counts: IntArray,
    ctr: IntArray,
) -> tuple[int, int, int]:
    """Reserve devices for the candidates ``cand[:, i0:m]`` in order, appending each reserved
    start to the start list (see :func:`record_start`).

    Gangs are placed as ``placing`` says (:func:`_reserve_one_node`); for one the placement
    strategy must place the kernel returns ``(RESERVE_PLACE, i, t)`` and
    the caller asks the placement strategy for candidate ``i`` on type ``t``, records the
    outcome and calls again from ``i + 1`` (a greedy caller first applies the rules below).

    Preemptive decisions (not ``greedy``): the candidates are the planned starts
    (:func:`plan_preemptive`): rows job, type, devices; one that cannot be reserved is
    skipped. Greedy decisions: rows job, wanted type (-1: the engine's choice), devices;
    running jobs and jobs already reserved by this decision are skipped; a job is tried only
    when some type has ``devices`` free, on the wanted type, else its current type, else the
    type with room on which it is fastest (one type: that type, if the job can run there);
    the first failure ends the decision when ``blocking``, and so does a full cluster.
    ``mark`` (n,) int8 is scratch, all zero on entry and on return.

    Returns
    -------
    (status, i, t)
        ``(RESERVE_DONE, m, -1)``, or ``(RESERVE_PLACE, i, t)``.
    """
    n_types = len(free)
    max_free = 0
    for k in range(n_types):
        max_free = max(max_free, free[k])
    status = RESERVE_DONE
    at = m
    t_out = -1
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
                    got = _reserve_one_node(
                        j,
                        t,
                        nd,
                        placing,
                        node_free,
                        busy,
                        node_group,
                        free,
                        type_nodes,
                        type_off,
                        s_i,
                        s_nodes,
                        s_counts,
                        ctr,
                    )
        else:
            got = _reserve_one_node(
                j,
                t,
                nd,
                placing,
                node_free,
                busy,
                node_group,
                free,
                type_nodes,
                type_off,
                s_i,
                s_nodes,
                s_counts,
                ctr,
            )
        if got < 0:
            status = RESERVE_PLACE
            at = i
            t_out = t
            break
        if greedy:
            if got == 0:
                if blocking:
                    break
                continue
            mark[j] = 1
            max_free = 0
            for k in range(n_types):
                max_free = max(max_free, free[k])
    if status == RESERVE_DONE:
        for s in range(ctr[CTR_STARTS]):
            mark[s_i[0, s]] = 0
    return status, at, t_out


@_compiled
def start_rates(
    gang: IntArray,
    rate: FloatArray,
    head: IntArray,
    rc_i: IntArray,
    rc_f: FloatArray,
    intra_gbs: FloatArray,
    nic_gbps: FloatArray,
    rack: IntArray,
    oversub: FloatArray,
    s_i: IntArray,
    s_nodes: IntArray,
    s_f: FloatArray,
    ctr: IntArray,
) -> int:
    """Rate of each reserved start, from what is known without the performance model.

    A one-device job on one device runs at its consolidated ``rate``; any other start runs at
    the rate of its (job, type, devices, slowest link) key in the rate cache. Writes the link
    (GB/s, :func:`link_gbs`) and the rate, or ``nan`` for a cache miss, to ``s_f`` (2, cap)
    and returns the number of misses.

    The rate cache holds placement rates by key, one chain per job: ``head[j]`` is the job's
    first entry (-1: none), ``rc_i`` (3, cap) int64 holds each entry's next entry (-1: end),
    type and devices, ``rc_f`` (2, cap) float64 its link and rate.
    """
    misses = 0
    for s in range(ctr[CTR_STARTS]):
        j = s_i[0, s]
        t = s_i[1, s]
        nd = s_i[2, s]
        if nd == 1 and gang[j] == 1:
            s_f[0, s] = np.inf
            s_f[1, s] = rate[j, t]
            continue
        o = s_i[3, s]
        link = link_gbs(s_nodes[o : o + s_i[4, s]], nd, intra_gbs, nic_gbps, rack, oversub)
        s_f[0, s] = link
        r = np.nan
        e = head[j]
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
    slot_nodes: IntArray,
    slot_counts: IntArray,
    s_i: IntArray,
    s_nodes: IntArray,
    s_counts: IntArray,
    s_f: FloatArray,
    run_order: IntArray,
    ht: FloatArray,
    hje: IntArray,
    mt: FloatArray,
    mje: IntArray,
    ctr: IntArray,
) -> None:
    """Start the reserved starts (devices already taken) at rate ``s_f[1]``, in order.

    A resumed job stalls for its restore delay and counts a migration when its nodes differ
    from its previous placement's; each job's predicted finish goes on the completion heap
    ``ht``/``hje`` (room for one more entry per start is the caller's business), and on the
    mark heap ``mt``/``mje`` the moment it reaches its next service mark. The started jobs
    join ``run_order`` at its end.
    """
    n_run = ctr[CTR_RUN]
    for s in range(ctr[CTR_STARTS]):
        j = s_i[0, s]
        t = s_i[1, s]
        nd = s_i[2, s]
        o = s_i[3, s]
        k = s_i[4, s]
        r = s_f[1, s]
        first = jf[JF_FIRST_START, j]
        resumed = first == first
        slot = ji[JI_SLOT, j]
        if resumed:
            stall = now + jf[JF_RESTORE, j]
            moved = k != ji[JI_PLACED, j]
            if not moved:
                for i in range(k):
                    if s_nodes[o + i] != slot_nodes[slot + i]:
                        moved = True
                        break
            if moved:
                ji[JI_MIGRATIONS, j] += 1
        else:
            stall = now
            jf[JF_FIRST_START, j] = now
        for i in range(k):
            slot_nodes[slot + i] = s_nodes[o + i]
            slot_counts[slot + i] = s_counts[o + i]
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
        heap_push(ht, hje, ctr, CTR_HEAP, fin, j, e)
        if len(marks):
            push_mark(marks, mt, mje, ctr, j, now, jf[JF_ATTAINED, j], nd, e)
    ctr[CTR_RUN] = n_run
    ctr[CTR_STARTS] = 0
    ctr[CTR_START_NODES] = 0


@_compiled
def plan_and_stop(
    run: IntArray,
    nds: IntArray,
    types: IntArray,
    blocking: bool,
    now: float,
    rate: FloatArray,
    capacity: IntArray,
    mark: Int8Array,
    plan: IntArray,
    jf: FloatArray,
    ji: IntArray,
    jb: BoolArray,
    type_time: FloatArray,
    device_time: FloatArray,
    node_free: IntArray,
    busy: FloatArray,
    node_group: IntArray,
    free: IntArray,
    slot_nodes: IntArray,
    slot_counts: IntArray,
    st_i: IntArray,
    st_f: FloatArray,
    run_order: IntArray,
    ctr: IntArray,
) -> tuple[int, int, int]:
    """The first half of a preemptive decision: :func:`plan_preemptive`, then suspend the
    running jobs it does not keep (one more preemption each, :func:`stop_jobs` in ascending
    order); ``run_order`` becomes the kept jobs in priority order.

    Parameters
    ----------
    run, nds, types, blocking
        The decision, as :func:`plan_preemptive` takes it.
    capacity : (n_types,) int64
        Devices of each type.
    plan : (5, >= max(m, running)) int64
        Out: rows ``go_job``, ``go_type``, ``go_n``, ``kept``, ``stop`` of
        :func:`plan_preemptive`; the first three are the candidates of
        :func:`reserve_starts`.
    Others
        As :func:`stop_jobs`.

    Returns
    -------
    (n_go, bad_job, why)
        Planned starts, and as :func:`plan_preemptive` (nothing is stopped when ``bad_job``
        is not -1).
    """
    n_run = ctr[CTR_RUN]
    n_go, n_kept, n_stop, bad, why = plan_preemptive(
        run,
        nds,
        types,
        ji[JI_GANG],
        rate,
        capacity.copy(),
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
        return 0, bad, why
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
        node_free,
        busy,
        node_group,
        free,
        slot_nodes,
        slot_counts,
        st_i,
        st_f,
        run_order,
        ctr,
    )
    for i in range(n_kept):
        run_order[i] = plan[3, i]
    ctr[CTR_RUN] = n_kept
    return n_go, -1, 0
