"""``gandiva`` and ``gavel-gandiva`` before their fast paths, kept as the references they are
compared with (``tests/test_gandiva_speed.py``): :class:`scheduling.gandiva.Gandiva` as of
commit 593c6d4, unchanged but for its name and docstrings (the rules are in that module's
doc), and the round of :class:`scheduling.gavel_packing.GavelGandiva` as of that commit
(priorities in numpy, a full lexsort per type, then the greedy pass, here in plain Python)."""

from __future__ import annotations

from typing import Annotated

import numpy as np
import numpy.typing as npt

from scheduling.base import EMPTY, Decision, Policy, State
from scheduling.gandiva import _pair_gain
from scheduling.gavel_packing import GavelGandiva
from scheduling.params import NON_NEGATIVE, POSITIVE

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]


class ReferenceGandiva(Policy):
    """``gandiva`` as it was before its fast paths (numpy and plain Python at every
    decision); see :class:`scheduling.gandiva.Gandiva` for the rules.

    Parameters
    ----------
    quantum_s
        Length of a time slice, s (the paper's: about a minute).
    packing
        Pair jobs on shared devices under over-subscription.
    pack_threshold
        A pair is kept when its combined normalised throughput exceeds ``1 + pack_threshold``
        on every type of the cluster (0: any gain over time slicing).
    migrate
        Re-place spread multi-device jobs when a placement on fewer nodes is free.
    resume_s
        Delay of each resume (suspend-resume in host memory), s; ``None``: the performance
        model's checkpoint/restore delay (module doc).
    """

    name = "gandiva"
    citation = "Xiao et al., Gandiva: Introspective Cluster Scheduling for Deep Learning, OSDI'18"
    preemptive = True
    colocates = True

    def __init__(
        self,
        quantum_s: Annotated[float, POSITIVE] = 60.0,
        packing: bool = True,
        pack_threshold: Annotated[float, NON_NEGATIVE] = 0.0,
        migrate: bool = True,
        resume_s: Annotated[float, NON_NEGATIVE] | None = 1.0,
    ) -> None:
        self.quantum_s = quantum_s
        self.round_s = quantum_s
        self.packing = packing
        self.pack_threshold = pack_threshold
        self.migrate = migrate
        self.resume_s = resume_s

    def params(self) -> dict[str, object]:
        return {
            "quantum_s": self.quantum_s,
            "packing": self.packing,
            "pack_threshold": self.pack_threshold,
            "migrate": self.migrate,
            "resume_s": self.resume_s,
        }

    def reset(self, rng: np.random.Generator) -> None:
        self._ready = False
        self._last_round = -1
        self._memo: tuple[tuple[float, int, int], Decision] | None = None
        self._last_run: FloatArray = np.zeros(0)
        self._partner: IntArray = EMPTY
        self._cls: IntArray = EMPTY  # pair-table class of each job, -1: never packed
        self._gain: FloatArray | None = None  # (classes, classes) min over types of fa + fb
        self._node_cum: list[IntArray] = []  # per type: cumulative node sizes, largest first
        self._least: IntArray = EMPTY.reshape(0, 0)
        self._pool_key: tuple[int, int] = (-1, -1)
        self._migrations = 0
        self._formed = 0
        self._split = 0

    def stats(self) -> dict[str, float]:
        """``locality_migrations`` (jobs re-placed on fewer nodes), ``pairs_formed`` and
        ``pairs_split`` (pairs ended while both jobs were still active)."""
        return {
            "locality_migrations": float(self._migrations),
            "pairs_formed": float(self._formed),
            "pairs_split": float(self._split),
        }

    # ------------------------------------------------------------------ set-up
    def _setup(self, state: State) -> None:
        n = len(state.running)
        self._last_run = state.jobs.submit_time.astype(np.float64).copy()
        self._partner = np.full(n, -1, dtype=np.int64)
        self._cls = np.full(n, -1, dtype=np.int64)
        cl = state.cluster
        self._node_cum = []
        for t in range(cl.n_types):
            sizes = np.sort(cl.node_devices[cl.node_type == t])[::-1]
            self._node_cum.append(np.cumsum(sizes).astype(np.int64))
        # fewest nodes of type t that hold a gang of g devices: _least[t, g] (g within the
        # largest gang of the trace; more than a type holds counts all its nodes, plus one)
        top = int(state.jobs.num_gpus.max(initial=1))
        self._least = np.array(
            [np.searchsorted(c, np.arange(top + 1)) + 1 for c in self._node_cum],
            dtype=np.int64,
        ).reshape(cl.n_types, top + 1)
        cf = state.colocation
        if cf is not None and self.packing:
            table = cf.pairs.table
            ns = len(table.scale_factors)
            ok = (cf.job_type >= 0) & (cf.scale >= 0)
            self._cls = np.where(ok, cf.job_type * ns + cf.scale, -1).astype(np.int64)
            self._gain = _pair_gain(cf.pairs.rates, table.consolidated, np.unique(cf.worker))
        self._ready = True

    # ------------------------------------------------------------------ schedule
    def schedule(self, state: State) -> Decision:
        active = state.active
        key = (state.now, state.round_index, len(active))
        if self._memo is not None and self._memo[0] == key:
            return self._memo[1]
        if not self._ready:
            self._setup(state)
        boundary = state.round_index != self._last_round
        self._last_round = state.round_index
        running = state.running
        on = active[running[active]]
        self._last_run[on] = state.now  # served up to now (guests included)
        gang = state.jobs.num_gpus
        over = int(gang[active].sum()) > int(state.capacity.sum())
        if not over:
            d = self._undersubscribed(state, active)
        else:
            d = self._oversubscribed(state, active, boundary)
        self._memo = (key, d)
        return d

    def _undersubscribed(self, state: State, active: IntArray) -> Decision:
        """Every job on devices of its own: pairs split, jobs in arrival order."""
        paired = active[self._partner[active] >= 0]
        if len(paired):
            both = state.is_active[self._partner[paired]]
            self._split += int(both.sum()) // 2  # pairs whose jobs are both still active
            self._partner[paired] = -1
        mig = self._migrations_of(state, active)
        if len(mig):
            rest = active[~np.isin(active, mig)]
            return Decision(run=np.concatenate([mig, rest]), migrate=mig)
        return Decision(run=active.copy())

    def _oversubscribed(self, state: State, active: IntArray, boundary: bool) -> Decision:
        partner = self._partner
        # pairs whose partner left: the job stands alone again
        p = partner[active]
        gone = active[(p >= 0) & ~state.is_active[np.maximum(p, 0)]]
        partner[gone] = -1
        if self._gain is not None:
            self._pack(state, active)
        hosts, guests = self._units(state, active)
        gang = state.jobs.num_gpus
        own = state.running & (state.alloc_n > 0)  # on devices of its own
        stamp = self._last_run[hosts]
        has_g = guests >= 0
        stamp[has_g] = np.minimum(stamp[has_g], self._last_run[guests[has_g]])
        left = state.capacity.astype(np.int64).copy()
        run: list[int] = []
        typ: list[int] = []
        pairs: list[tuple[int, int]] = []
        chosen = np.zeros(len(hosts), dtype=bool)  # units kept between quanta
        if not boundary:  # between quanta: running units keep their devices
            u = np.flatnonzero(own[hosts])
            hs, gs = hosts[u], guests[u]
            ts = state.alloc_type[hs]
            np.subtract.at(left, ts, state.alloc_n[hs])
            run.extend(hs.tolist())
            typ.extend(ts.tolist())
            chosen[u] = True
            g_on = gs >= 0
            pairs.extend(zip(gs[g_on].tolist(), hs[g_on].tolist(), strict=True))
        order = np.lexsort((hosts, stamp))
        order = order[~chosen[order]]
        if len(order) and int(left.max(initial=0)) < int(gang[hosts[order]].min()):
            order = order[:0]  # no room for any waiting unit: nothing to fill
        # the fill is sequential (each unit sees what the earlier ones left); plain Python
        # lists keep a step to a few hundred nanoseconds
        oh, og = hosts[order], guests[order]
        usable = state.rate[oh] > 0
        pair = og >= 0
        usable[pair] &= state.rate[og[pair]] > 0
        speed = np.where(usable, state.rate[oh], -1.0).tolist()
        cur = np.where(own[oh], state.alloc_type[oh], -1).tolist()
        need_l = gang[oh].tolist()
        lf = left.tolist()
        # the smallest gang from each unit on: once no type has room for it, stop
        smallest = np.minimum.accumulate(gang[oh][::-1])[::-1].tolist()
        most = max(lf) if lf else 0
        nt = len(lf)
        for i, (h, g) in enumerate(zip(oh.tolist(), og.tolist(), strict=True)):
            if most < smallest[i]:
                break
            need = need_l[i]
            if need > most:
                continue
            sp = speed[i]
            t = cur[i]
            if t < 0 or lf[t] < need or sp[t] < 0:
                t, best = -1, -1.0
                for k in range(nt):
                    if lf[k] >= need and sp[k] > best:
                        t, best = k, sp[k]
                if t < 0:
                    continue
            lf[t] -= need
            most = max(lf)
            run.append(h)
            typ.append(t)
            if g >= 0:
                pairs.append((g, h))
        run_a = np.array(run, dtype=np.int64)
        typ_a = np.array(typ, dtype=np.int64)
        mig = self._migrations_of(state, run_a, typ_a)
        if len(mig):
            first = np.isin(run_a, mig)
            run_a = np.concatenate([run_a[first], run_a[~first]])
            typ_a = np.concatenate([typ_a[first], typ_a[~first]])
        return Decision(
            run=run_a,
            types=typ_a,
            colocate=np.array(pairs, dtype=np.int64).reshape(-1, 2),
            migrate=mig if len(mig) else None,
        )

    # ------------------------------------------------------------------ packing
    def _pack(self, state: State, active: IntArray) -> None:
        """Pair jobs, best pair first, while the units ask for more devices than exist and a
        pair passes the threshold. Only tried when the set of active jobs changed."""
        pool_key = (len(active), int(active[-1]) if len(active) else -1)
        if pool_key == self._pool_key:
            return
        self._pool_key = pool_key
        assert self._gain is not None
        gang = state.jobs.num_gpus
        partner = self._partner
        # a pair counts its gang once: the excess is what pairing must remove
        paired = partner[active] >= 0
        excess = int(gang[active].sum()) - int(gang[active[paired]].sum()) // 2
        excess -= int(state.capacity.sum())
        if excess <= 0:
            return
        free_jobs = active[~paired & (self._cls[active] >= 0)]
        if len(free_jobs) < 2:
            return
        cls = self._cls[free_jobs]
        present, counts = np.unique(cls, return_counts=True)
        gain = self._gain[np.ix_(present, present)].copy()
        gain[np.diag(counts < 2)] = 0.0
        bar = 1.0 + self.pack_threshold
        # the jobs of each class still free, in arrival order
        members = [free_jobs[cls == c].tolist() for c in present.tolist()]
        taken = np.zeros(len(present), dtype=np.int64)
        while excess > 0:
            k = int(np.argmax(gain))
            a, b = divmod(k, len(present))
            if not gain[a, b] > bar:
                break
            ja = members[a][taken[a]]
            taken[a] += 1
            jb = members[b][taken[b]]
            taken[b] += 1
            partner[ja], partner[jb] = jb, ja
            self._formed += 1
            excess -= int(gang[ja])
            for c in {a, b}:
                rest = len(members[c]) - int(taken[c])
                if rest < 1:
                    gain[c, :] = 0.0
                    gain[:, c] = 0.0
                elif rest < 2:
                    gain[c, c] = 0.0

    def _units(self, state: State, active: IntArray) -> tuple[IntArray, IntArray]:
        """Scheduling units: (host, guest) per unit, guest -1 for a lone job; a pair's host
        is the member running on devices of its own if only one does, else the lower index."""
        p = self._partner[active]
        lone = active[p < 0]
        lo = active[(p >= 0) & (p > active)]
        hi = self._partner[lo]
        own = state.running & (state.alloc_n > 0)
        swap = own[hi] & ~own[lo]
        hosts = np.concatenate([lone, np.where(swap, hi, lo)])
        guests = np.concatenate([np.full(len(lone), -1, dtype=np.int64), np.where(swap, lo, hi)])
        return hosts, guests

    # ------------------------------------------------------------------ migration
    def _migrations_of(
        self, state: State, run: IntArray, types: IntArray | None = None
    ) -> IntArray:
        """Jobs of ``run`` that keep their devices (same type) and span more nodes than the
        free devices would let them span now."""
        if not self.migrate or state.nodes_used is None or state.node_free is None:
            return EMPTY
        gang = state.jobs.num_gpus
        cur = state.alloc_type[run]
        keep = state.running[run] & (state.alloc_n[run] > 1)
        if types is not None:
            keep &= cur == types
        cand = run[keep]
        if not len(cand):
            return EMPTY
        used = state.nodes_used[cand]
        t_c = state.alloc_type[cand]
        least = self._least[t_c, gang[cand]]
        spread = used > least
        if not spread.any():
            return EMPTY
        cl = state.cluster
        free = state.node_free.copy()
        out: list[int] = []
        for j, t, u in zip(
            cand[spread].tolist(), t_c[spread].tolist(), used[spread].tolist(), strict=True
        ):
            nodes = np.flatnonzero((cl.node_type == t) & (free > 0))
            if not len(nodes):
                continue
            f = free[nodes]
            by = np.argsort(-f, kind="stable")
            cum = np.cumsum(f[by])
            g = int(gang[j])
            if cum[-1] < g:
                continue
            k = int(np.searchsorted(cum, g)) + 1
            if k >= u:
                continue
            # the devices it will take, so that a second move does not count on them
            take = nodes[by[:k]]
            got = free[take].copy()
            got[-1] -= int(cum[k - 1]) - g
            free[take] -= got
            out.append(j)
        self._migrations += len(out)
        return np.array(out, dtype=np.int64)


class ReferenceGavelGandiva(GavelGandiva):
    """``gavel-gandiva`` with its round as it was before :func:`clustersim.kernels.
    gandiva_round`."""

    def _priorities(self, live: IntArray) -> FloatArray:
        """Gavel's priority of every live entry on every type: allocation over the fraction
        of the type's time it received (``allocation × 1e9`` when it received none); 0 where
        the allocation is 0, the entry cannot run, or it is outside the allocation."""
        alloc = self._ealloc[live]
        # to 0.1 µs: a pair's time here and in Gavel may differ in the last bits (the engine
        # sums it over stints, its co-located rate is a factor times the isolated rate), and
        # entries whose times Gavel finds equal must tie here too (their deficits decide)
        ran = np.round(self._etime[live], 7)
        assert self._work is not None
        work = np.broadcast_to(self._work, alloc.shape)
        with np.errstate(divide="ignore", invalid="ignore"):
            frac = np.where(work == 0.0, 0.0, ran / work)
            prio = np.where(frac > 0.0, alloc / frac, alloc * 1e9)
        prio[(alloc == 0.0) | ~self._eok[live] | ~self._ein[live, None]] = 0.0
        return prio

    def _place(self, state: State) -> tuple[list[int], list[int], list[tuple[int, int]]]:
        sf = state.jobs.num_gpus
        left = state.capacity.copy()
        taken = np.zeros(len(sf), dtype=bool)
        run: list[int] = []
        kinds: list[int] = []
        pairs: list[tuple[int, int]] = []
        tt = state.type_time
        live = self._live
        if self._work is None or not len(live):
            return run, kinds, pairs
        prio = self._priorities(live)
        deficit = np.round(self._edef[live], 7)  # as the times in _priorities
        alloc = self._ealloc[live]
        pos = np.arange(len(live))
        ea, eb = self._ea[live], self._eb[live]
        gang = sf[ea].astype(np.int64)
        nt = state.cluster.n_types
        types = self._fixed_order(state)
        # per type: decreasing (priority, deficit, allocation); ties in Gavel's dict order
        orders = np.empty((nt, len(live)), dtype=np.int64)
        for t in types.tolist():
            orders[t] = np.lexsort((pos, -alloc[:, t], -deficit[:, t], -prio[:, t]))
        out_e = np.empty(len(live), dtype=np.int64)
        out_t = np.empty(len(live), dtype=np.int64)
        n = _greedy_pass(
            types, orders, self._eok[live], ea, eb, gang, left.astype(np.int64), taken, out_e, out_t
        )
        placed, on = out_e[:n], out_t[:n]
        runs = self._ein[live[placed]]  # outside the allocation: holds devices, does not run
        placed, on = placed[runs], on[runs]
        a, b = ea[placed], eb[placed]
        pair = b >= 0
        before_b = np.where(pair, tt[np.maximum(b, 0), on], 0.0)
        self._ran = (live[placed], on, a, b, tt[a, on], before_b)
        run = a.tolist()
        kinds = on.tolist()
        pairs = list(zip(b[pair].tolist(), a[pair].tolist(), strict=True))
        return run, kinds, pairs


def _greedy_pass(  # type: ignore[no-untyped-def]
    types, orders, ok, ea, eb, gang, left, taken, out_e, out_t
) -> int:
    """The greedy placement of a round (the kernel ``gandiva_place`` of commit 593c6d4)."""
    n = 0
    for t in types:
        for e in orders[t]:
            if left[t] <= 0:
                break
            if not ok[e, t]:
                continue
            a, b = ea[e], eb[e]
            if taken[a] or (b >= 0 and taken[b]) or gang[e] > left[t]:
                continue
            left[t] -= gang[e]
            taken[a] = True
            if b >= 0:
                taken[b] = True
            out_e[n], out_t[n] = e, t
            n += 1
    return n
