"""Gavel's round mechanism with job packing: ``gavel-gandiva``.

Source: Narayanan et al., Gavel, OSDI'20 (§3.1 "space sharing", §7.3 the Gandiva baseline) and
its public code at commit ``c4fa4009`` (``policies/gandiva.py``, ``GandivaPolicy``, and the
packing path of ``scheduler.py``), written down rule by rule in ``docs/gavel-fidelity.md``,
section 18. Co-location itself (two jobs on one gang of devices, each at the rate Gavel
measured for the pair) is the engine's :mod:`clustersim.colocation`.

The scheduling unit is a *combination*: one job, or a pair of jobs with the same scale factor
that share devices. What the policy does:

* **Allocation** (recomputed when jobs arrived or left, at most every ``reset_interval_s``):
  if the active jobs' devices fit in the cluster, no packing: every job gets Gavel's isolated
  share ``(N_t / m) / sf`` on each type, rows divided by ``max(row sum, 1)``. Otherwise pairs
  are formed at random (Gavel's own draws: ``random.Random(seed).sample`` over the jobs not yet
  in a pair, in job order, as many draws as there are such jobs; a draw of two jobs with
  different scale factors is wasted); pairs formed earlier are kept while both jobs are active
  and their normalised packed throughput (the sum over types and both jobs of packed rate /
  isolated rate) is at least 1. Every combination (pair or lone job) then gets the same share
  ``(N_t / M) / sf``, ``M`` combinations.
* **Priority entries** (Gavel's per-type priority lists with packing on): one entry per active
  job and one per pair of active jobs with the same scale factor (both of a measured job
  type), made when the later job arrives, whether or not the policy chose the pair; an entry
  goes when one of its jobs leaves. Each entry has a time per type since the last
  recomputation (a job's starts at half a round; a pair's at 0 until the first recomputation
  after it was made, then half a round), a deficit and an allocation. A recomputation adds to
  each entry's deficit its share times the elapsed time (nothing for an entry the previous
  allocation did not cover) less the time it received (its time less half a round, so a pair
  never reset before gains half a round), puts every time back to half a round, and makes
  the new allocation cover every live entry: the chosen combinations' shares, 0 for the rest.
* **Rounds**: each entry has a priority per type, its allocation over the fraction of the
  type's time it received since the last recomputation (never run: ``allocation × 1e9``; 0
  where its allocation is 0, where it cannot run, or when the allocation does not cover it);
  types are visited in Gavel's fixed order (V100, P100, K80, then the others), entries inside
  a type by decreasing (priority, deficit, allocation), ties in the order Gavel made them (by
  the later job's arrival, a job before its pairs, its pairs by the earlier job), and placed
  greedily when no member is placed yet this round and the type has room for the gang. So an
  entry of priority 0 (a job whose chosen pair is its combination, a pair the policy did not
  choose) may take devices the chosen combinations leave, the one with the larger deficit
  first. An entry the allocation does not cover (it arrived since the last recomputation)
  that is placed **holds its devices and blocks its jobs but does not run** (Gavel dispatches
  only entries of its allocation). A pair runs with its lower job index as the host and the
  other as the guest; it is credited the time its longer member ran. When a pass runs
  nothing, nothing runs and no job is left to arrive, the recomputation is forced and the
  pass made again at once (Gavel's end-of-trace reset).

Departures from Gavel's simulator (measured against its runs in ``docs/gavel-fidelity.md``,
section 18: every ``gandiva`` run of the fixture reproduced, 9 of 10 to the printed digit):

* Jobs without a measured job type (traces other than Gavel's) get no pair entries: they
  stand alone (Gavel's code needs a measurement for every pair it creates).
* The time an entry is credited after an idle gap, and the five-failure rule for gangs whose
  last round has fewer steps than devices, are not reproduced (see
  :class:`scheduling.gavel.GavelRounds` for the other policies).
* Times and deficits are compared to 0.1 µs (Gavel compares the floats as they are): ours
  are summed by the engine over stints and a co-located rate is a factor times the isolated
  rate, so they can differ from Gavel's in the last bits, and Gavel's exact ties must stay
  ties. Near-ties that Gavel breaks by float noise alone go by entry order here.
* Entries are ``O(m²)`` as in Gavel; a round costs a pass over them to build each type's
  heap, drawn from only until the type is full (:func:`clustersim.kernels.gandiva_round`).
"""

from __future__ import annotations

import random

import numpy as np
import numpy.typing as npt

from clustersim.kernels import gandiva_round
from scheduling.base import Decision, State
from scheduling.gavel import FloatArray, GavelRounds, IntArray

Key = tuple[int, int]  # (job, -1) or (host, guest) with host < guest
_NONE = np.zeros(0, dtype=np.int64)


class GavelGandiva(GavelRounds):
    """Gavel's simplified Gandiva (``gandiva``): random pairs on shared devices, time-sliced by
    Gavel's rounds (module doc).

    Parameters
    ----------
    round_s, reset_interval_s
        As :class:`scheduling.gavel.GavelRounds`.
    seed
        Gavel's ``--seed``: pairs are drawn by ``random.Random(seed)`` as in Gavel, so runs
        can be compared draw for draw. A hyper-parameter, not the run's seed.
    """

    name = "gavel-gandiva"
    citation = (
        "Narayanan et al., Gavel, OSDI'20 (its Gandiva baseline); Xiao et al., Gandiva, OSDI'18"
    )
    colocates = True
    shuffle_types = False

    def reset(self, rng: np.random.Generator) -> None:
        super().reset(rng)
        self._rng = random.Random(self.seed)
        self._partner: dict[int, int] = {}  # job -> partner of its chosen pair
        # Priority entries (module doc): one per active job and one per pair of active jobs
        # that could share devices, each with its time per type since the last reset, its
        # deficit, its allocation and whether the last reset's allocation holds it.
        self._entry: dict[Key, int] = {}
        self._n_entries = 0  # entries ever made (an entry's index is never reused)
        self._cap = 0
        self._ea: IntArray = np.zeros(0, dtype=np.int64)
        self._eb: IntArray = np.zeros(0, dtype=np.int64)
        self._etime: FloatArray = np.zeros((0, 0))
        self._edef: FloatArray = np.zeros((0, 0))
        self._ealloc: FloatArray = np.zeros((0, 0))
        self._ein: npt.NDArray[np.bool_] = np.zeros(0, dtype=bool)
        self._eok: npt.NDArray[np.bool_] = np.zeros((0, 0), dtype=bool)
        self._live: IntArray = np.zeros(0, dtype=np.int64)  # live entries, Gavel's order
        self._live_dirty = False
        self._work: FloatArray | None = None  # every entry's time per type (Gavel's total)
        # the last round's running entries: entry, type, host, guest (-1: none), and the
        # host's and the guest's time on that type before the round
        self._ran: tuple[IntArray, IntArray, IntArray, IntArray, FloatArray, FloatArray] | None = (
            None
        )
        self._known: IntArray = np.zeros(0, dtype=np.int64)
        self._in_known = np.zeros(0, dtype=bool)  # per job: in _known
        self._mark = np.zeros(0, dtype=bool)  # per job, scratch (all false between calls)
        self._keys_of: dict[int, list[Key]] = {}  # job -> the keys of its entries (some gone)
        self._gavel_types: IntArray | None = None

    # ------------------------------------------------------------------ helpers
    def _fixed_order(self, state: State) -> IntArray:
        if self._gavel_types is None:
            self._gavel_types = np.array([t for _, t in self._type_order(state)], dtype=np.int64)
        return self._gavel_types

    @staticmethod
    def _factors(state: State, a: IntArray, b: IntArray, t: IntArray) -> tuple[FloatArray, ...]:
        """Co-location factors from the engine's model; none (0) without one."""
        if state.colocation is None:
            return np.zeros(len(a)), np.zeros(len(a))
        return state.colocation.factors(a, b, t)

    def _grow(self, need: int, nt: int) -> None:
        if need <= self._cap:
            return
        cap = max(need, 2 * self._cap, 64)

        def more(x: np.ndarray, fill: object) -> np.ndarray:
            out = np.full((cap, *x.shape[1:]) if x.ndim > 1 else cap, fill, dtype=x.dtype)
            out[: len(x)] = x
            return out

        if self._cap == 0:
            self._etime = np.zeros((0, nt))
            self._edef = np.zeros((0, nt))
            self._ealloc = np.zeros((0, nt))
            self._eok = np.zeros((0, nt), dtype=bool)
        self._ea = more(self._ea, -1)
        self._eb = more(self._eb, -1)
        self._etime = more(self._etime, 0.0)
        self._edef = more(self._edef, 0.0)
        self._ealloc = more(self._ealloc, 0.0)
        self._ein = more(self._ein, False)
        self._eok = more(self._eok, False)
        self._cap = cap

    def _new_entries(self, state: State, keys: list[Key], time0: list[float]) -> None:
        """Create entries (time ``time0``, no deficit, outside the allocation)."""
        if not keys:
            return
        nt = state.cluster.n_types
        first = self._n_entries
        self._n_entries += len(keys)
        self._grow(first + len(keys), nt)
        idx = np.arange(first, first + len(keys))
        a = np.array([k[0] for k in keys], dtype=np.int64)
        b = np.array([k[1] for k in keys], dtype=np.int64)
        self._ea[idx], self._eb[idx] = a, b
        self._etime[idx] = np.asarray(time0)[:, None]
        self._edef[idx] = 0.0
        self._ealloc[idx] = 0.0
        self._ein[idx] = False
        ok = state.rate[a] > 0
        pair = b >= 0
        if pair.any():
            pa, pb = np.repeat(a[pair], nt), np.repeat(b[pair], nt)
            ts = np.tile(np.arange(nt, dtype=np.int64), int(pair.sum()))
            fa, fb = self._factors(state, pa, pb, ts)
            both = ((fa > 0) & (fb > 0)).reshape(-1, nt)
            ok[pair] &= (state.rate[b[pair]] > 0) & both
        self._eok[idx] = ok
        keys_of = self._keys_of
        for key, e in zip(keys, idx.tolist(), strict=True):
            self._entry[key] = e
            keys_of.setdefault(key[0], []).append(key)
            if key[1] >= 0:
                keys_of.setdefault(key[1], []).append(key)
        self._live_dirty = True

    # ------------------------------------------------------------------ allocation
    # ------------------------------------------------------------------ allocation
    def _combinations(self, state: State, active: IntArray) -> list[Key]:
        """Gandiva's choice of combinations (module doc); updates the remembered pairs."""
        sf = state.jobs.num_gpus
        alive = set(active.tolist())
        kept = [(j, p) for j, p in self._partner.items() if j in alive and p in alive]
        if kept:  # Gavel's normalised packed throughput of each pair, all at once
            nt = state.cluster.n_types
            ja = np.repeat(np.array([j for j, _ in kept], dtype=np.int64), nt)
            jp = np.repeat(np.array([p for _, p in kept], dtype=np.int64), nt)
            fa, fb = self._factors(state, ja, jp, np.tile(np.arange(nt, dtype=np.int64), len(kept)))
            fa, fb = fa.reshape(-1, nt), fb.reshape(-1, nt)
            ok = (fa > 0).all(axis=1) & (fb > 0).all(axis=1) & (fa.sum(1) + fb.sum(1) >= 1.0)
            keep = {j for (j, _), good in zip(kept, ok.tolist(), strict=True) if good}
        else:
            keep = set()
        for j, p in list(self._partner.items()):
            if j not in keep:
                self._partner.pop(j, None)
                self._partner.pop(p, None)
        demand = int(sf[active].sum())
        if demand <= int(state.capacity.sum()):
            return [(int(j), -1) for j in active]
        # jobs without a measured job type can share with nobody: they stand alone (Gavel's
        # traces have none; its code would fail on them)
        measured = (
            np.zeros(len(sf), dtype=bool)
            if state.colocation is None
            else state.colocation.job_type >= 0
        )
        alone = [int(j) for j in active if not measured[j]]
        pool = [int(j) for j in active if measured[j] and int(j) not in self._partner]
        n = len(pool)
        i = 0
        while len(pool) > 1 and i < n:
            i += 1
            a, b = self._rng.sample(pool, 2)
            if sf[a] != sf[b]:
                continue
            pool.remove(a)
            pool.remove(b)
            self._partner[a] = b
            self._partner[b] = a
        keys = [(int(j), -1) for j in sorted(pool + alone)]
        keys += [(j, p) for j, p in self._partner.items() if j < p]
        return keys

    def _shares(self, state: State, active: IntArray) -> dict[Key, FloatArray]:
        """The allocation: each combination's time share on each type (module doc)."""
        keys = self._combinations(state, active)
        cap = state.capacity.astype(np.float64)
        share = cap / max(len(keys), 1)
        out: dict[Key, FloatArray] = {}
        for key in keys:
            x = share / float(state.jobs.num_gpus[key[0]])
            out[key] = x / max(float(x.sum()), 1.0)
        return out

    def _recompute(self, state: State, active: IntArray) -> None:
        """Gavel's reset: every entry's deficit gains its due share of the elapsed time less
        the time it received (an entry outside the old allocation is due nothing; a pair
        entry never reset yet starts from 0 and so gains half a round), its time goes back
        to half a round; then the new allocation covers every live entry."""
        half = float(self.round_s or 0.0) / 2.0
        elapsed = state.now - self._last_reset
        live = self._live
        should = np.where(self._ein[live, None], self._ealloc[live] * elapsed, 0.0)
        self._edef[live] += should - (self._etime[live] - half)
        self._etime[live] = half
        self._work = np.full(state.cluster.n_types, half * len(live))
        shares = self._shares(state, active)
        self._ealloc[live] = 0.0
        self._ein[live] = True
        for key, x in shares.items():
            self._ealloc[self._entry[key]] = x
        self._last_reset = state.now
        self._need = False

    # ------------------------------------------------------------------ rounds
    def _credit(self, state: State) -> None:
        """Credit each entry of the last round with the time its longest member ran."""
        ran_entries, self._ran = self._ran, None
        if self._work is None or ran_entries is None:
            return
        e, t, a, b, before_a, before_b = ran_entries
        tt = state.type_time
        ran = tt[a, t] - before_a
        pair = b >= 0
        ran[pair] = np.maximum(ran[pair], tt[b[pair], t[pair]] - before_b[pair])
        still = self._ea[e] >= 0  # still live
        self._etime[e[still], t[still]] += ran[still]  # (an entry runs once a round)
        work = self._work.tolist()
        for tk, rk in zip(t.tolist(), ran.tolist(), strict=True):  # in order, as Gavel sums
            work[tk] += rk
        self._work[:] = work

    def _update_jobs(self, state: State, active: IntArray) -> None:
        """Entries for arrivals (a job, then its pairs with the jobs already there, in
        Gavel's order) and none for departed jobs."""
        known = self._known
        if not self._live_dirty and active.tobytes() == known.tobytes():
            return  # no job arrived or left since the last call
        half = float(self.round_s or 0.0) / 2.0
        # the jobs that left and those that arrived, ascending (both lists are)
        if len(self._in_known) != len(state.running):
            self._in_known = np.zeros(len(state.running), dtype=bool)
            self._mark = np.zeros(len(state.running), dtype=bool)
        mark = self._mark
        mark[active] = True
        gone = known[~mark[known]]
        mark[active] = False
        new = active[~self._in_known[active]]
        self._in_known[gone] = False
        self._in_known[new] = True
        if len(gone):
            for j in gone.tolist():  # every entry of a job that left goes
                for key in self._keys_of.pop(j, ()):
                    e = self._entry.pop(key, -1)
                    if e >= 0:
                        self._ea[e] = -1
            self._live_dirty = True
        if len(new):
            sf = state.jobs.num_gpus
            measured = (
                np.zeros(len(sf), dtype=bool)
                if state.colocation is None
                else state.colocation.job_type >= 0
            )
            there = known[~np.isin(known, gone)].tolist() if len(gone) else known.tolist()
            keys: list[Key] = []
            time0: list[float] = []
            for j in new.tolist():
                keys.append((j, -1))
                time0.append(half)
                if measured[j]:
                    for o in there:
                        if measured[o] and sf[o] == sf[j]:
                            keys.append((min(o, j), max(o, j)))
                            time0.append(0.0)
                there.append(j)
            self._new_entries(state, keys, time0)
        if len(gone) or len(new):
            self._need = True
        self._known = active.copy()
        if self._live_dirty:
            # Gavel's dict order: by arrival of the later member, the job before its pairs,
            # its pairs by the earlier member
            es = np.array(list(self._entry.values()), dtype=np.int64)
            hi = np.maximum(self._ea[es], self._eb[es])
            lo = np.where(self._eb[es] >= 0, np.minimum(self._ea[es], self._eb[es]), -1)
            self._live = es[np.lexsort((lo, hi))]
            self._live_dirty = False

    def _place(self, state: State) -> tuple[IntArray, IntArray, IntArray]:
        """A round: the hosts that run, their types and the (guest, host) pairs."""
        sf = state.jobs.num_gpus
        left = state.capacity.copy()
        taken = np.zeros(len(sf), dtype=bool)
        tt = state.type_time
        live = self._live
        if self._work is None or not len(live):
            return _NONE, _NONE, _NONE.reshape(0, 2)
        # to 0.1 µs: a pair's time here and in Gavel may differ in the last bits (the engine
        # sums it over stints, its co-located rate is a factor times the isolated rate), and
        # entries whose times Gavel finds equal must tie here too (their deficits decide)
        ran = np.round(self._etime[live], 7)
        deficit = np.round(self._edef[live], 7)
        ea, eb = self._ea[live], self._eb[live]
        out_e = np.empty(len(live), dtype=np.int64)
        out_t = np.empty(len(live), dtype=np.int64)
        # Gavel's priorities, each type's order and the greedy placement: one compiled call
        n = gandiva_round(
            self._fixed_order(state),
            ran,
            self._work,
            deficit,
            self._ealloc[live],
            self._eok[live],
            self._ein[live],
            ea,
            eb,
            sf[ea].astype(np.int64),
            left.astype(np.int64),
            taken,
            out_e,
            out_t,
        )
        placed, on = out_e[:n], out_t[:n]
        runs = self._ein[live[placed]]  # outside the allocation: holds devices, does not run
        placed, on = placed[runs], on[runs]
        a, b = ea[placed], eb[placed]
        pair = b >= 0
        before_b = np.where(pair, tt[np.maximum(b, 0), on], 0.0)
        self._ran = (live[placed], on, a, b, tt[a, on], before_b)
        pairs = np.empty((int(pair.sum()), 2), dtype=np.int64)
        pairs[:, 0] = b[pair]
        pairs[:, 1] = a[pair]
        return a, on, pairs

    def schedule(self, state: State) -> Decision:
        active = state.active
        key0 = (state.now, state.round_index, len(active))
        if self._memo is not None and self._memo[0] == key0:
            return self._memo[1]
        self._credit(state)
        self._update_jobs(state, active)
        run, kinds, pairs = _NONE, _NONE, _NONE
        for _ in range(2):
            if self._need and (
                state.now - self._last_reset >= self.reset_interval_s or self._last_reset == 0
            ):
                self._recompute(state, active)
            run, kinds, pairs = self._place(state)
            # nothing runs and nothing is left to arrive: Gavel forces a reset at once
            if len(run) or state.n_running or state.pending or not len(active):
                break
            self._last_reset = 0.0
        d = Decision(
            run=np.asarray(run, dtype=np.int64),
            types=np.asarray(kinds, dtype=np.int64),
            colocate=np.asarray(pairs, dtype=np.int64).reshape(-1, 2),
        )
        self._memo = (key0, d)
        return d
