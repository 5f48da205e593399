"""The code the CPU/memory fast paths replaced (issue 15, their speed), kept as the reference
``tests/test_aux_fast.py`` compares them with, bit for bit:

* :class:`ReferenceDRF`: ``drf`` with its progressive filling in Python (a heap of users),
  before :func:`clustersim.kernels.drf_fill`;
* :func:`reference_synergy_place`: Synergy's placement of one start in Python, before
  :func:`clustersim.kernels.synergy_place` (same signature);
* :class:`ReferenceSynergy`, :class:`ReferenceSynergyFair`: ``synergy`` and ``synergy-fair``
  with the whole allocation of a round in Python, as before;
* :func:`reference_greedy_fit`: Synergy's GPU pass of a round in Python, before
  :func:`clustersim.kernels.greedy_fit`;
* the engine's general Python loop for CPU/memory-limited starts stays in
  :mod:`clustersim.engine` (``AUX_REFERENCE = True`` takes it for every strategy).
"""

from __future__ import annotations

import heapq
import math

import numpy as np

from scheduling.base import Decision, FloatArray, IntArray, State
from scheduling.drf import DRF
from scheduling.synergy import Synergy, SynergyFair

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


class ReferenceSynergy(Synergy):
    """:class:`scheduling.synergy.Synergy` with the Python allocation of a round it had
    before :func:`clustersim.kernels.synergy_place` and
    :func:`clustersim.kernels.synergy_starts`."""

    def _allocate(self, state: State, run: IntArray) -> Decision:
        """``Synergy._allocate`` as it was before the compiled starts (the reference)."""
        model = state.aux_model
        assert model is not None
        cl = state.cluster
        gang = state.jobs.num_gpus
        running = state.running[run] & (state.alloc_n[run] > 0)
        kept = run[running]
        rj, rn, rd = state.aux_rows()
        mark = self._mark
        if len(mark) != len(gang):
            mark = self._mark = np.zeros(len(gang), dtype=bool)
        mark[kept] = True
        sel = mark[rj]
        mark[kept] = False
        rj, rn, rd = rj[sel], rn[sel], rd[sel]
        n_nodes = len(cl.node_devices)
        nfree = cl.node_devices - np.bincount(rn, weights=rd, minlength=n_nodes).astype(np.int64)
        cfree = model.cpu_cap - np.bincount(rn, weights=rd * model.cpu_dev[rj], minlength=n_nodes)
        mfree = model.mem_cap - np.bincount(rn, weights=rd * model.mem_dev[rj], minlength=n_nodes)
        fc, fm = self._fair
        # allocations this round that differ from the model's (starts and cut-backs)
        alloc: dict[int, tuple[float, float]] = {}
        where: dict[int, list[tuple[int, int]]] | None = None  # job -> [(node, devices)]
        out = run.tolist()
        aux = np.full((len(out), 2), np.nan)
        placed = np.ones(len(out), dtype=bool)
        tfree = np.bincount(cl.node_type, weights=nfree, minlength=cl.n_types).astype(np.int64)
        one_type = cl.n_types == 1
        on_type = [cl.node_type == t for t in range(cl.n_types)]
        rate = state.rate
        ideal_c, ideal_m = self._ideal_c, self._ideal_m
        tune = self.allocation == "tune"
        prop = self.allocation == "proportional"
        starts_j: list[int] = []
        starts_n: list[IntArray] = []
        starts_d: list[IntArray] = []

        def place(t: int, nd: int, c: float, m: float) -> tuple[IntArray, IntArray] | None:
            # the engine's rule (clustersim.resources.AuxModel.room, then `consolidate`): on
            # each node the free devices capped by free cores and memory over the share; best
            # fit on one node (fewest such devices, lowest index), else the most first
            on = np.flatnonzero(nfree > 0) if one_type else np.flatnonzero((nfree > 0) & on_type[t])
            if not len(on):
                return None
            nodes_l = on.tolist()
            room_l = nfree[on].tolist()
            if c > 0:
                room_l = [
                    min(r, _devices(x / c + _EPS))
                    for r, x in zip(room_l, cfree[on].tolist(), strict=True)
                ]
            if m > 0:
                room_l = [
                    min(r, _devices(x / m + _EPS))
                    for r, x in zip(room_l, mfree[on].tolist(), strict=True)
                ]
            if sum(room_l) < nd:
                return None
            best, best_r = -1, 0
            for x, r in zip(nodes_l, room_l, strict=True):
                if r >= nd and (best < 0 or r < best_r):
                    best, best_r = x, r
                    if r == nd:
                        break
            if best >= 0:
                return np.array([best], dtype=np.int64), np.array([nd], dtype=np.int64)
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
            return np.array(out_n, dtype=np.int64), np.array(out_c, dtype=np.int64)

        for pos in np.flatnonzero(~running).tolist():  # the starts (kept jobs stay)
            j = out[pos]
            nd = int(gang[j])
            if one_type:
                t = 0 if tfree[0] >= nd and rate[j, 0] > 0 else -1
            else:
                t, best = -1, 0.0
                for k, r in enumerate(rate[j].tolist()):
                    if r > best and tfree[k] >= nd:
                        t, best = k, r
            if t < 0:
                placed[pos] = False
                continue
            c, m = float(ideal_c[j]), float(ideal_m[j])
            if prop:
                c, m = (fc if fc < np.inf else c), (fm if fm < np.inf else m)
            got = place(t, nd, c, m)
            if got is None and tune:
                if c > fc or m > fm:  # step 2: the proportional share
                    c, m = min(c, fc), min(m, fm)
                    got = place(t, nd, c, m)
                if got is None:  # step 3: cut back jobs above their share
                    if where is None:
                        where = {}
                        for a, b, d in zip(rj.tolist(), rn.tolist(), rd.tolist(), strict=True):
                            where.setdefault(a, []).append((b, d))
                        for a, nn, dd in zip(starts_j, starts_n, starts_d, strict=True):
                            where[a] = list(zip(nn.tolist(), dd.tolist(), strict=True))
                    for a, ac_am in self._cut_back(
                        nd, t, c, m, nfree, cfree, mfree, alloc, model, where
                    ):
                        alloc[a] = ac_am
                        aux[out.index(a)] = ac_am
                    got = place(t, nd, c, m)
            if got is None:
                placed[pos] = False
                continue
            nodes, counts = got
            nfree[nodes] -= counts
            cfree[nodes] -= counts * c
            mfree[nodes] -= counts * m
            tfree[t] -= nd
            alloc[j] = (c, m)
            aux[pos] = (c, m)
            if where is not None:
                where[j] = list(zip(nodes.tolist(), counts.tolist(), strict=True))
            else:
                starts_j.append(j)
                starts_n.append(nodes)
                starts_d.append(counts)
        if tune:  # running jobs below their ideal get it back from what the starts left
            low = running & (
                (model.cpu_dev[run] < ideal_c[run] * (1 - _EPS))
                | (model.mem_dev[run] < ideal_m[run] * (1 - _EPS))
            )
            if low.any():
                # rows of those jobs whose node lacks the cores or memory to regrow now
                lm = self._mark
                lm[run[low]] = True
                rows = np.flatnonzero(lm[rj])
                lm[run[low]] = False
                jr, nr, dr = rj[rows], rn[rows], rd[rows]
                short = (dr * (ideal_c[jr] - model.cpu_dev[jr]) > cfree[nr] + _EPS) | (
                    dr * (ideal_m[jr] - model.mem_dev[jr]) > mfree[nr] + _EPS
                )
                lm[jr[short]] = True
                low &= ~lm[run]
                lm[jr[short]] = False
                for pos in np.flatnonzero(low).tolist():
                    j = out[pos]
                    if j not in alloc:  # not cut back in this round
                        self._regrow(j, pos, model, rj, rn, rd, cfree, mfree, alloc, aux)
        if tune:  # is any job of the round left below its ideal (to re-tune next round)?
            ok = run[placed]
            cur = np.where(
                np.isnan(aux[placed]),
                np.stack([model.cpu_dev[ok], model.mem_dev[ok]], 1),
                aux[placed],
            )
            self._below = bool(
                np.any(cur[:, 0] < ideal_c[ok] * (1 - _EPS))
                or np.any(cur[:, 1] < ideal_m[ok] * (1 - _EPS))
            )
        if not placed.all():
            return Decision(run=run[placed], aux=aux[placed])
        return Decision(run=run, aux=aux)


class ReferenceSynergyFair(ReferenceSynergy, SynergyFair):
    """:class:`scheduling.synergy.SynergyFair` on :class:`ReferenceSynergy`."""


def reference_greedy_fit(gang: IntArray, cap: int) -> IntArray:
    """``scheduling.synergy._greedy_fit`` as it was in Python, before
    :func:`clustersim.kernels.greedy_fit`."""
    cs = np.cumsum(gang)
    k = int(np.searchsorted(cs, cap, side="right"))
    if k == len(gang):
        return np.arange(k, dtype=np.int64)
    free = cap - (int(cs[k - 1]) if k else 0)
    take = list(range(k))
    if free > 0:
        for i in (k + np.flatnonzero(gang[k:] <= free)).tolist():
            g = int(gang[i])
            if g <= free:
                take.append(i)
                free -= g
                if free == 0:
                    break
    return np.asarray(take, dtype=np.int64)
