"""The code the CPU/memory fast paths replaced (issue 15, their speed), kept as the reference
``tests/test_aux_fast.py`` compares them with, bit for bit:

* :class:`ReferenceDRF`: ``drf`` with its progressive filling in Python (a heap of users),
  before :func:`clustersim.kernels.drf_fill`;
* :func:`reference_synergy_place`: Synergy's placement of one start in Python, before
  :func:`clustersim.kernels.synergy_place` (same signature);
* the engine's general Python loop for CPU/memory-limited starts stays in
  :mod:`clustersim.engine` (``AUX_REFERENCE = True`` takes it for every strategy).
"""

from __future__ import annotations

import heapq
import math

import numpy as np

from scheduling.base import Decision, FloatArray, IntArray, State
from scheduling.drf import DRF

_EPS = 1e-9


class ReferenceDRF(DRF):
    """:class:`scheduling.drf.DRF` with the Python filling it had before."""

    def schedule(self, state: State) -> Decision:
        if self._jobs is not state.jobs:
            self._bind(state)
        active = state.active
        if not len(active):
            return Decision(run=np.zeros(0, dtype=np.int64))
        totals, n_users = self._totals, self._n_users
        gang = state.jobs.num_gpus
        user, cpu_dev, mem_dev = self._user, self._cpu, self._mem
        use = np.zeros((n_users, 3))  # GPUs, cores, GB each user holds
        if self.preemptive:
            cand = active
            free = state.capacity.copy()
            left = totals.copy()
        else:
            running = state.running[active]
            held = active[running]
            cand = active[~running]
            free = state.free.copy()
            n = state.alloc_n[held].astype(np.float64)
            for r, col in enumerate((n, n * cpu_dev[held], n * mem_dev[held])):
                use[:, r] = np.bincount(user[held], weights=col, minlength=n_users)
            left = totals - use.sum(axis=0)
        if not len(cand):
            return Decision(run=np.zeros(0, dtype=np.int64))
        with np.errstate(divide="ignore", invalid="ignore"):
            inv = np.where(np.isfinite(totals) & (totals > 0), 1.0 / totals, 0.0).tolist()
        slack = (_EPS * np.maximum(totals, 1.0)).tolist()
        keys = user[cand]
        order = cand[np.argsort(keys, kind="stable")]
        u_of = user[order]
        cut = np.flatnonzero(u_of[1:] != u_of[:-1]) + 1
        starts = np.concatenate(([0], cut)).tolist()
        ends = [*starts[1:], len(order)]
        users = u_of[starts].tolist()
        held_l = use.tolist()
        heap = [
            (max(g * inv[0], c * inv[1], m * inv[2]), u, s, e)
            for u, s, e in zip(users, starts, ends, strict=True)
            for g, c, m in (held_l[u],)
        ]
        heapq.heapify(heap)
        rate, alloc_type, running_now = state.rate, state.alloc_type, state.running
        free_l = free.tolist()
        left_c, left_m = float(left[1]), float(left[2])
        preemptive = self.preemptive
        out: list[int] = []
        while heap:
            _, u, i, e = heapq.heappop(heap)
            j = int(order[i])
            nd = int(gang[j])
            need_c, need_m = nd * float(cpu_dev[j]), nd * float(mem_dev[j])
            if need_c > left_c + slack[1] or need_m > left_m + slack[2]:
                continue  # this user's next job does not fit: nothing more for it now
            t = -1
            cur = int(alloc_type[j])
            if preemptive and running_now[j] and cur >= 0 and free_l[cur] >= nd:
                t = cur
            else:
                best = 0.0
                for k, r in enumerate(rate[j].tolist()):
                    if r > best and free_l[k] >= nd:
                        t, best = k, r
            if t < 0:
                continue
            out.append(j)
            free_l[t] -= nd
            left_c -= need_c
            left_m -= need_m
            h = held_l[u]
            h[0] += nd
            h[1] += need_c
            h[2] += need_m
            if i + 1 < e:
                share = max(h[0] * inv[0], h[1] * inv[1], h[2] * inv[2])
                heapq.heappush(heap, (share, u, i + 1, e))
        return Decision(run=np.asarray(out, dtype=np.int64))


def _devices(q: float) -> int:
    if q >= 1 << 30:
        return 1 << 30
    return max(0, math.floor(q))


def reference_synergy_place(
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
    """Synergy's placement of one start as it was in Python (empty arrays: no placement),
    with the bookkeeping that followed it (devices, cores and memory taken)."""

    def _took(nodes: IntArray, counts: IntArray) -> tuple[IntArray, IntArray]:
        nfree[nodes] -= counts
        cfree[nodes] -= counts * c
        mfree[nodes] -= counts * m
        return nodes, counts

    none = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64))
    on = np.flatnonzero(nfree > 0) if one_type else np.flatnonzero((nfree > 0) & (node_type == t))
    if not len(on):
        return none
    nodes_l = on.tolist()
    room_l = nfree[on].tolist()
    if c > 0:
        room_l = [
            min(r, _devices(x / c + _EPS)) for r, x in zip(room_l, cfree[on].tolist(), strict=True)
        ]
    if m > 0:
        room_l = [
            min(r, _devices(x / m + _EPS)) for r, x in zip(room_l, mfree[on].tolist(), strict=True)
        ]
    if sum(room_l) < nd:
        return none
    best, best_r = -1, 0
    for x, r in zip(nodes_l, room_l, strict=True):
        if r >= nd and (best < 0 or r < best_r):
            best, best_r = x, r
            if r == nd:
                break
    if best >= 0:
        return _took(np.array([best], dtype=np.int64), np.array([nd], dtype=np.int64))
    order = sorted((-r, x) for x, r in zip(nodes_l, room_l, strict=True) if r > 0)
    out_n: list[int] = []
    out_c: list[int] = []
    left = nd
    for neg, x in order:
        take = min(-neg, left)
        out_n.append(x)
        out_c.append(take)
        left -= take
        if left <= 0:
            break
    return _took(np.array(out_n, dtype=np.int64), np.array(out_c, dtype=np.int64))
