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
* **Rounds**: each combination has a priority per type, its allocation over the fraction of the
  type's time it received since the last recomputation (a combination never run has priority
  ``allocation × 1e9``); types are visited in Gavel's fixed order (V100, P100, K80, then the
  others), combinations inside a type by decreasing (priority, deficit, allocation), and placed
  greedily when no member runs yet this round and the type has room for the gang. A pair runs
  with its lower job index as the host and the other as the guest.

Departures from Gavel's simulator (measured against its runs in ``docs/gavel-fidelity.md``):

* Gavel keeps a priority entry for **every** pair of active jobs with the same scale factor
  (``O(m²)``), so pairs the policy did not choose may take devices left over after the chosen
  combinations (the allocation is a priority order there, not a cap); here only the chosen
  pairs and the lone jobs have entries. A job whose pair partner finished waits as a lone job
  of allocation 0 until the next recomputation, as in Gavel.
* Jobs without a measured job type (traces other than Gavel's) are never drawn into pairs:
  they stand alone (Gavel's code needs a measurement for every pair it creates).
* The time a combination is credited after an idle gap, and the five-failure rule for gangs
  whose last round has fewer steps than devices, are not reproduced (see
  :class:`scheduling.gavel.GavelRounds` for the other policies).
"""

from __future__ import annotations

import random
from typing import Annotated

import numpy as np
import numpy.typing as npt

from scheduling.base import Decision, State
from scheduling.gavel import FloatArray, GavelRounds, IntArray
from scheduling.params import NON_NEGATIVE, POSITIVE

Key = tuple[int, int]  # (job, -1) or (host, guest) with host < guest


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

    def __init__(
        self,
        round_s: Annotated[float, POSITIVE] = 360.0,
        reset_interval_s: Annotated[float, NON_NEGATIVE] = 1920.0,
        seed: int = 0,
    ) -> None:
        super().__init__(round_s=round_s, reset_interval_s=reset_interval_s, seed=seed)

    def reset(self, rng: np.random.Generator) -> None:
        super().reset(rng)
        self._rng = random.Random(self.seed)
        self._partner: dict[int, int] = {}  # job -> partner of its chosen pair
        self._lone: set[int] = set()  # jobs standing alone in the current combinations
        self._alloc: dict[Key, FloatArray] = {}
        self._time: dict[Key, FloatArray] = {}  # time run on each type since the reset
        self._cdeficit: dict[Key, FloatArray] = {}
        self._can: dict[Key, npt.NDArray[np.bool_]] = {}
        self._work: FloatArray | None = None  # all combinations' time per type
        self._ran: list[tuple[Key, int, IntArray, FloatArray]] = []
        self._known: IntArray = np.zeros(0, dtype=np.int64)
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

    def _normalised(self, state: State, a: int, b: int) -> float:
        """Gavel's normalised packed throughput of a pair: 0 if it cannot share on any type."""
        nt = state.cluster.n_types
        ts = np.arange(nt, dtype=np.int64)
        fa, fb = self._factors(state, np.full(nt, a), np.full(nt, b), ts)
        if np.any(fa <= 0) or np.any(fb <= 0):
            return 0.0
        return float(fa.sum() + fb.sum())

    def _runnable(self, state: State, key: Key) -> npt.NDArray[np.bool_]:
        """Types where the combination can run (every member's rate, and for a pair the
        co-located rates, above 0); cached per combination."""
        ok = self._can.get(key)
        if ok is None:
            a, b = key
            ok = state.rate[a] > 0
            if b >= 0:
                nt = len(ok)
                ts = np.arange(nt, dtype=np.int64)
                fa, _ = self._factors(state, np.full(nt, a), np.full(nt, b), ts)
                ok = ok & (state.rate[b] > 0) & (fa > 0)
            self._can[key] = ok
        return ok

    def _add(self, key: Key, nt: int, time0: float, deficit0: float = 0.0) -> None:
        self._alloc.setdefault(key, np.zeros(nt))
        self._time.setdefault(key, np.full(nt, time0))
        self._cdeficit.setdefault(key, np.full(nt, deficit0))

    def _forget(self, key: Key) -> None:
        for d in (self._alloc, self._time, self._cdeficit, self._can):
            d.pop(key, None)

    # ------------------------------------------------------------------ allocation
    def _combinations(self, state: State, active: IntArray) -> list[Key]:
        """Gandiva's choice of combinations (module doc); updates the remembered pairs."""
        sf = state.jobs.num_gpus
        alive = set(active.tolist())
        for j, p in list(self._partner.items()):
            if j not in alive or p not in alive or self._normalised(state, j, p) < 1.0:
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
        nt = state.cluster.n_types
        half = float(self.round_s or 0.0) / 2.0
        elapsed = state.now - self._last_reset
        for key, t_run in self._time.items():
            received = t_run - half
            self._cdeficit[key] += self._alloc[key] * elapsed - received
            t_run[:] = half
        shares = self._shares(state, active)
        for key in self._alloc:
            self._alloc[key][:] = 0.0
        for key, x in shares.items():
            # a pair chosen now has been, in Gavel, a pair entry since its later job arrived:
            # never run, credited half a round at the last reset, deficit half a round
            self._add(key, nt, half, half if key[1] >= 0 else 0.0)
            self._alloc[key][:] = x
        self._work = half * np.ones(nt) * len(self._time)
        self._last_reset = state.now
        self._need = False

    # ------------------------------------------------------------------ rounds
    def _credit(self, state: State) -> None:
        """Credit the combinations of the last round with the time their longest member ran."""
        if self._work is None:
            return
        tt = state.type_time
        for key, t, members, before in self._ran:
            ran = float(np.max(tt[members, t] - before))
            if key in self._time:
                self._time[key][t] += ran
            self._work[t] += ran
        self._ran = []

    def _update_jobs(self, state: State, active: IntArray) -> None:
        nt = state.cluster.n_types
        half = float(self.round_s or 0.0) / 2.0
        gone = np.setdiff1d(self._known, active, assume_unique=True)
        new = np.setdiff1d(active, self._known, assume_unique=True)
        if len(gone):
            dead = set(gone.tolist())
            for key in [k for k in self._alloc if k[0] in dead or k[1] in dead]:
                self._forget(key)
        for j in new.tolist():
            self._add((j, -1), nt, half)
        if len(gone) or len(new):
            self._need = True
        self._known = active.copy()

    def _priorities(
        self, state: State, keys: list[Key]
    ) -> tuple[FloatArray, FloatArray, FloatArray]:
        """Gavel's priority of every combination on every type (allocation over the fraction
        of the type's time it received; ``allocation × 1e9`` when it has received none; 0
        where its allocation is 0 or it cannot run), with deficits and allocations,
        (entries, n_types) each."""
        nt = state.cluster.n_types
        if not keys:
            z = np.zeros((0, nt))
            return z, z, z
        alloc = np.stack([self._alloc[k] for k in keys])
        ran = np.stack([self._time[k] for k in keys])
        deficit = np.stack([self._cdeficit[k] for k in keys])
        ok = np.stack([self._runnable(state, k) for k in keys])
        assert self._work is not None
        work = np.broadcast_to(self._work, alloc.shape)
        with np.errstate(divide="ignore", invalid="ignore"):
            prio = np.where((work == 0.0) | (ran == 0.0), alloc * 1e9, alloc * work / ran)
        prio[(alloc == 0.0) | ~ok] = 0.0
        return prio, deficit, alloc

    def schedule(self, state: State) -> Decision:
        active = state.active
        key0 = (state.now, state.round_index, len(active))
        if self._memo is not None and self._memo[0] == key0:
            return self._memo[1]
        self._credit(state)
        self._update_jobs(state, active)
        if self._need and (
            state.now - self._last_reset >= self.reset_interval_s or self._last_reset == 0
        ):
            self._recompute(state, active)
        sf = state.jobs.num_gpus
        left = state.capacity.copy()
        taken: set[int] = set()
        run: list[int] = []
        kinds: list[int] = []
        pairs: list[tuple[int, int]] = []
        tt = state.type_time
        keys = list(self._alloc)
        prio, deficit, alloc = self._priorities(state, keys)
        index = np.arange(len(keys))
        for t in self._fixed_order(state).tolist():
            # decreasing (priority, deficit, allocation); ties in entry order (Gavel's
            # stable sort over its dict of priorities)
            order = np.lexsort((index, -alloc[:, t], -deficit[:, t], -prio[:, t]))
            for e in order.tolist():
                if left[t] == 0:
                    break
                k = keys[e]
                a, b = k
                if a in taken or (b >= 0 and b in taken):
                    continue
                if not self._runnable(state, k)[t]:
                    continue
                if sf[a] > left[t]:
                    continue
                left[t] -= sf[a]
                taken.add(a)
                run.append(a)
                kinds.append(t)
                members = np.array([a] if b < 0 else [a, b], dtype=np.int64)
                if b >= 0:
                    taken.add(b)
                    pairs.append((b, a))
                self._ran.append((k, t, members, tt[members, t].copy()))
        d = Decision(
            run=np.array(run, dtype=np.int64),
            types=np.array(kinds, dtype=np.int64),
            colocate=np.array(pairs, dtype=np.int64).reshape(-1, 2),
        )
        self._memo = (key0, d)
        return d
