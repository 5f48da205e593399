"""Co-location (space sharing): two jobs on the same devices, each slowed by the other.

Two parts, behind a small interface the engine and the policies call:

* the **model** (:class:`PairFactors`): for a guest job ``g``, a host job ``h`` and an
  accelerator type ``t``, the fraction of its isolated throughput each keeps when the two
  share ``h``'s devices. The factors are measured: Gavel's throughput file holds, for each of
  its workers (K80, P100, V100) and each pair of job types with the same scale factor, the
  co-located steps/s of both jobs (Narayanan et al., OSDI'20, §6; ``simulation_throughputs.json``,
  MIT, shipped as ``clustersim/data/gavel_throughputs.json``). A factor is that rate over the
  job's isolated (``"null"``) rate on the same worker. Types that are not one of Gavel's three
  (A100, H100, TPUs, edge devices, user-defined) borrow the factors measured on the V100, the
  newest measured generation — a guess, said in :attr:`PairFactors.notes`. Jobs without a
  measured job type, pairs of different scale factors and pairs not in the file have factor
  0: they cannot be co-located.
* the **mechanism** (:class:`CoLocator`), which the engine calls around every decision of a
  policy that declares ``colocates``: :meth:`CoLocator.detach` before the decision (guests
  stop, hosts go back to their isolated rates), :meth:`CoLocator.attach` after it with the
  decision's ``colocate`` pairs (guests start on their hosts' devices; both run at their
  co-located rates).

What a guest is in the engine: a running job that holds **no device of its own** — it uses its
host's (``alloc_n`` 0, no node, no stint row), so free devices, busy devices, utilisation,
energy and device-hours count physical devices once. Its time on the type
(``type_time``) and wall-clock service (``executed``) count as usual; its attained service in
device-seconds does not grow (it holds none). A guest that goes on with the same host, the
host keeping its devices, continues without a restore stall; a guest that stops being one
(suspended, moved to another host, or run on devices of its own) counts one preemption, and
a migration when it moves. Rates within a decision are fixed: when one job of a pair finishes
the other goes on at its co-located rate until the next decision (Gavel's simulator does the
same within a round). In whole-step rounds (``--compat gavel``) a job of a pair that completes
within the round is recorded as completing when the pair's round ends (the later of the two
did its share), as Gavel stamps both jobs of a pair with the end of their joint task; its stint
rows keep the time it really stopped. A host has at most one guest.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from clustersim.cluster import Cluster
from clustersim.errors import ClustersimError, SimulationError
from clustersim.jobs import JobTable
from clustersim.kernels import (
    CTR_STINTS,
    JB_ACTIVE,
    JB_RUNNING,
    JF_BASE_T,
    JF_CAP,
    JF_CRATE,
    JF_FINISH,
    JF_LAST_START,
    JF_RESTORE,
    JI_ALLOC_N,
    JI_ALLOC_TYPE,
    JI_GANG,
    JI_MIGRATIONS,
    JI_PLACED,
    JI_PREEMPTIONS,
    JI_SLOT,
    SYNC_ATTAINED,
    SYNC_EXECUTED,
    SYNC_REMAINING,
    pair_factors,
    record_start,
    rerate_jobs,
    start_jobs,
    sync_packed,
)
from clustersim.perf import GAVEL_WORKERS, ThroughputTable, gavel_worker

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

#: Gavel worker whose factors types outside Gavel's three borrow.
BORROW_FROM = "v100"
_SYNC_ALL = SYNC_REMAINING | SYNC_ATTAINED | SYNC_EXECUTED
_EMPTY_I = np.zeros(0, dtype=np.int64)
_EMPTY_F = np.zeros(0, dtype=np.float64)


@dataclass(frozen=True, eq=False)
class PairTable:
    """Co-located throughputs of Gavel's file: ``rates[w, a, b, s] = (rate of a, rate of b)``
    in steps/s of the whole gang, for worker ``w`` (:data:`clustersim.perf.GAVEL_WORKERS`
    order), job types ``a``, ``b`` (``table.job_types`` order) and scale factor index ``s``
    (``table.scale_factors``); ``nan`` where not measured."""

    table: ThroughputTable
    rates: FloatArray = field(repr=False)

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> PairTable:
        """Parse the pair entries of Gavel's JSON (worker → ``"('<A>', sf)"`` →
        ``"('<B>', sf)"`` → ``[rate of A, rate of B]``); consolidated workers only.

        Raises
        ------
        ClustersimError
            On a pair entry that is not two non-negative numbers.
        """
        table = ThroughputTable.from_mapping(data)
        jidx = {j: i for i, j in enumerate(table.job_types)}
        sidx = {int(s): i for i, s in enumerate(table.scale_factors)}
        nj, ns = len(table.job_types), len(table.scale_factors)
        rates = np.full((len(GAVEL_WORKERS), nj, nj, ns, 2), np.nan)
        for wkey, entries in data.items():
            if wkey not in GAVEL_WORKERS or not isinstance(entries, Mapping):
                continue
            w = GAVEL_WORKERS.index(wkey)
            for akey, value in entries.items():
                if not isinstance(value, Mapping):
                    continue
                a_jt, a_sf = _key(akey)
                for bkey, pair in value.items():
                    if bkey == "null":
                        continue
                    b_jt, b_sf = _key(bkey)
                    if a_sf != b_sf or a_jt not in jidx or b_jt not in jidx:
                        continue
                    try:
                        ra, rb = (float(x) for x in pair)
                    except (TypeError, ValueError):
                        raise ClustersimError(
                            f"throughput table {wkey!r} {akey!r} {bkey!r}: not two numbers"
                        ) from None
                    if not (math.isfinite(ra) and math.isfinite(rb)) or ra < 0 or rb < 0:
                        raise ClustersimError(
                            f"throughput table {wkey!r} {akey!r} {bkey!r}: bad rates {pair!r}"
                        )
                    rates[w, jidx[a_jt], jidx[b_jt], sidx[a_sf]] = (ra, rb)
        return cls(table=table, rates=rates)

    @classmethod
    def load(cls) -> PairTable:
        """The shipped table (``clustersim/data/gavel_throughputs.json``)."""
        return _shipped()


def _key(text: str) -> tuple[str, int]:
    try:
        jt, sf = ast.literal_eval(str(text))
        return str(jt), int(sf)
    except (ValueError, SyntaxError, TypeError):
        raise ClustersimError(f"throughput table: bad key {text!r}") from None


@lru_cache(maxsize=1)
def _shipped() -> PairTable:
    import json
    from importlib import resources

    with resources.files("clustersim.data").joinpath("gavel_throughputs.json").open() as f:
        return PairTable.from_mapping(json.load(f))


@dataclass(eq=False)
class PairFactors:
    """The co-location model of one run (jobs × cluster): see the module doc.

    Attributes
    ----------
    job_type : (n,) int64
        Each job's row in the pair table, -1 for none.
    scale : (n,) int64
        Each job's scale-factor index in the pair table, -1 for an unmeasured one.
    worker : (n_types,) int64
        The Gavel worker whose factors each accelerator type uses.
    notes : tuple of str
        Assumptions that affected the factors (borrowed workers).
    """

    pairs: PairTable = field(repr=False)
    job_type: IntArray
    scale: IntArray
    worker: IntArray
    notes: tuple[str, ...] = ()

    @classmethod
    def build(cls, jobs: JobTable, cluster: Cluster, pairs: PairTable | None = None) -> PairFactors:
        pairs = pairs or PairTable.load()
        table = pairs.table
        jidx = {j: i for i, j in enumerate(table.job_types)}
        sidx = {int(s): i for i, s in enumerate(table.scale_factors)}
        jt = np.array([jidx.get(str(x), -1) for x in jobs.job_type], dtype=np.int64)
        sc = np.array([sidx.get(int(x), -1) for x in jobs.num_gpus], dtype=np.int64)
        borrow = GAVEL_WORKERS.index(BORROW_FROM)
        workers, notes = [], []
        for acc in cluster.types:
            w = gavel_worker(acc)
            if w < 0:
                notes.append(
                    f"co-location on {acc.name}: no measurement; the slowdowns measured on "
                    f"the {BORROW_FROM.upper()} are used"
                )
                w = borrow
            workers.append(w)
        return cls(pairs, jt, sc, np.array(workers, dtype=np.int64), tuple(notes))

    def factors(self, a: IntArray, b: IntArray, t: IntArray) -> tuple[FloatArray, FloatArray]:
        """Fractions of their isolated rates jobs ``a`` and ``b`` keep when they share devices
        of types ``t`` (arrays of one length); 0 where they cannot share."""
        a, b, t = (np.ascontiguousarray(x, dtype=np.int64) for x in (a, b, t))
        fa, fb = np.empty(len(a)), np.empty(len(a))
        pair_factors(
            self.job_type,
            self.scale,
            self.worker,
            self.pairs.rates,
            self.pairs.table.consolidated,
            a,
            b,
            t,
            fa,
            fb,
        )
        return fa, fb


class EngineView(Protocol):
    """The parts of the engine's state :class:`CoLocator` works on (``clustersim.engine``)."""

    now: float
    capped: bool
    jf: FloatArray
    ji: IntArray
    jb: BoolArray
    rate: FloatArray
    marks: FloatArray
    slots: IntArray
    s_i: IntArray
    s_nc: IntArray
    s_f: FloatArray
    st_i: IntArray
    st_f: FloatArray
    run_order: IntArray
    heap_t: FloatArray
    heap_je: IntArray
    ctr: IntArray

    def _stop(self, js: IntArray, completed: bool) -> None: ...

    def _make_room(self) -> None: ...

    def sync_types(self) -> None: ...


class CoLocator:
    """The engine's co-location mechanism (module doc).

    Attributes
    ----------
    factors : PairFactors
        The model policies ask (``State.colocation``).
    host_of : (n,) int64
        Each guest's host, -1 for jobs that are not guests (``State.host_of``).
    """

    def __init__(self, factors: PairFactors, n: int) -> None:
        self.factors = factors
        self.host_of = np.full(n, -1, dtype=np.int64)
        self._slow = np.ones(n)  # factor applied to each host's rate now
        self._hosts = _EMPTY_I
        self._guests = _EMPTY_I
        self._nodes: list[IntArray] = []  # each guest's host's nodes, as attached
        self._detached = _EMPTY_I  # guests stopped by the last detach
        self._was_host = _EMPTY_I  # and their hosts then
        self._host_start = _EMPTY_F  # the hosts' last start then
        self.guest_s = 0.0
        self.pairings = 0

    def stats(self) -> dict[str, float]:
        """``colocated_job_s`` (guest-seconds run) and ``colocations`` (pairs formed)."""
        return {"colocated_job_s": self.guest_s, "colocations": float(self.pairings)}

    def detach(self, eng: EngineView) -> None:
        """Before a decision: stop every running guest (no device is freed: it held none)
        and give every host its isolated rate back."""
        guests = self._guests
        self._guests = _EMPTY_I
        running = eng.jb[JB_RUNNING]
        if len(guests):
            self._record(eng, guests, self._ends(eng, guests))
            if eng.capped:
                self._pair_ends(eng, guests, self._hosts)
            self._nodes = []
            live = guests[running[guests]]
            self.guest_s += float(np.sum(self._ends(eng, guests) - eng.jf[JF_BASE_T, guests]))
            self._was_host = self.host_of[live].copy()
            self._host_start = eng.jf[JF_LAST_START, self._was_host].copy()
            self._detached = live
            self.host_of[guests] = -1
            if len(live):
                eng._stop(live, completed=False)
        else:
            self._detached, self._was_host, self._host_start = _EMPTY_I, _EMPTY_I, _EMPTY_F
        hosts = self._hosts[running[self._hosts]]
        if len(hosts):
            rerate(eng, hosts, eng.jf[JF_CRATE, hosts] / self._slow[hosts])
        self._slow[self._hosts] = 1.0
        self._hosts = _EMPTY_I

    @staticmethod
    def _pair_ends(eng: EngineView, guests: IntArray, hosts: IntArray) -> None:
        """Whole-step rounds (Gavel's): a job of a pair that completed in the round is
        recorded as completing when the pair's round ends, when the later of the two did its
        share or completed (Gavel dispatches a pair as one task and stamps both jobs with the
        task's end). Its stint rows keep the time it really stopped."""
        fin, cap, run = eng.jf[JF_FINISH], eng.jf[JF_CAP], eng.jb[JB_RUNNING]
        for g, h in zip(guests.tolist(), hosts.tolist(), strict=True):
            done = [not run[j] and math.isfinite(fin[j]) for j in (g, h)]
            if not any(done):
                continue
            end = max(
                fin[j] if d else min(cap[j], eng.now) for j, d in zip((g, h), done, strict=True)
            )
            for j, d in zip((g, h), done, strict=True):
                if d and fin[j] < end:
                    fin[j] = end

    @staticmethod
    def _ends(eng: EngineView, guests: IntArray) -> FloatArray:
        """When each guest's stint ends: now, or its finish if it completed meanwhile."""
        done = eng.jf[JF_FINISH, guests]
        return np.where(eng.jb[JB_RUNNING, guests] | ~np.isfinite(done), eng.now, done)

    def _record(self, eng: EngineView, guests: IntArray, ends: FloatArray) -> None:
        """Stint rows of ``guests`` (their attached ones): on their hosts' nodes, 0 devices
        (a guest holds none), so the run's timelines show them without counting a device
        twice."""
        n = int(eng.ctr[CTR_STINTS])
        for g, nodes, end in zip(guests.tolist(), self._nodes, ends.tolist(), strict=True):
            k = len(nodes)
            eng.st_i[0, n : n + k] = g
            eng.st_i[1, n : n + k] = nodes
            eng.st_i[2, n : n + k] = 0
            eng.st_f[0, n : n + k] = eng.jf[JF_LAST_START, g]
            eng.st_f[1, n : n + k] = end
            n += k
        eng.ctr[CTR_STINTS] = n

    def open_stints(self, eng: EngineView, end: float) -> tuple[IntArray, FloatArray]:
        """At the end of a run: the stint rows (3, r) and times (2, r) of the guests still
        running, as :meth:`_record` writes them."""
        live = [i for i, g in enumerate(self._guests.tolist()) if eng.jb[JB_RUNNING, g]]
        if not live:
            return np.zeros((3, 0), dtype=np.int64), np.zeros((2, 0))
        rows = [
            np.stack(
                [
                    np.full(len(self._nodes[i]), self._guests[i]),
                    self._nodes[i],
                    np.zeros(len(self._nodes[i]), dtype=np.int64),
                ]
            )
            for i in live
        ]
        times = [
            np.stack(
                [
                    np.full(len(self._nodes[i]), eng.jf[JF_LAST_START, self._guests[i]]),
                    np.full(len(self._nodes[i]), end),
                ]
            )
            for i in live
        ]
        return np.concatenate(rows, axis=1), np.concatenate(times, axis=1)

    def attach(self, eng: EngineView, pairs: IntArray | None) -> None:
        """After a decision: start each guest of ``pairs`` ((g, 2) rows ``guest, host``) on its
        host's devices when the host runs; both at their co-located rates.

        Raises
        ------
        SimulationError
            A guest that is not active, already runs, or is a host; a host listed twice; a
            pair that cannot share (factor 0) or whose device counts differ.
        """
        p = _EMPTY_I.reshape(0, 2) if pairs is None else np.asarray(pairs, dtype=np.int64)
        if p.ndim != 2 or p.shape[1] != 2:
            raise SimulationError(f"colocate has shape {p.shape}, want (g, 2)")
        if not len(p) and not len(self._detached):
            return  # no pair before the decision nor after it: nothing to do
        running, active = eng.jb[JB_RUNNING], eng.jb[JB_ACTIVE]
        p = p[running[p[:, 1]]] if len(p) else p  # hosts that did not get devices: no pair
        g, h = p[:, 0], p[:, 1]
        gl, hl = g.tolist(), h.tolist()
        if gl:
            if not active[g].all() or running[g].any():
                raise SimulationError("a guest must be active and not run on devices of its own")
            gs, hs = set(gl), set(hl)
            if len(gs) < len(gl) or len(hs) < len(hl) or gs & hs:
                raise SimulationError("a job is in two pairs, or both guest and host")
            if np.any(eng.ji[JI_ALLOC_N, h] != eng.ji[JI_GANG, g]):
                raise SimulationError("a guest must ask for as many devices as its host holds")
        t = eng.ji[JI_ALLOC_TYPE, h]
        fg, fh = self.factors.factors(g, h, t)
        if np.any(fg <= 0):
            raise SimulationError("a pair cannot share devices (no co-located throughput)")
        # guests that go on with the same host, the host on the same devices: no stall
        before = dict(
            zip(
                self._detached.tolist(),
                zip(self._was_host.tolist(), self._host_start.tolist(), strict=True),
                strict=True,
            )
        )
        starts = eng.jf[JF_LAST_START, h].tolist()
        was = [before.get(x) for x in gl]
        going_on = np.array(
            [
                w is not None and w[0] == hh and w[1] == st
                for w, hh, st in zip(was, hl, starts, strict=True)
            ],
            dtype=bool,
        )
        kept = set(g[going_on].tolist())
        left = [x for x in before if x not in kept]
        if left:
            eng.ji[JI_PREEMPTIONS, left] += 1
        moved = np.array([w is not None for w in was], dtype=bool) & ~going_on
        eng.ji[JI_MIGRATIONS, g[moved]] += 1
        self.pairings += int(len(g) - going_on.sum())
        self._detached = _EMPTY_I
        if not len(g):
            return
        eng._make_room()
        restore = eng.jf[JF_RESTORE, g].copy()
        eng.jf[JF_RESTORE, g[going_on]] = 0.0
        for k in range(len(g)):
            record_start(int(g[k]), int(t[k]), 0, _EMPTY_I, _EMPTY_I, eng.s_i, eng.s_nc, eng.ctr)
            eng.s_f[1, k] = fg[k] * eng.rate[g[k], t[k]]
        start_jobs(
            eng.now,
            _EMPTY_F,  # a guest holds no device, so it never reaches a service mark
            eng.jf,
            eng.ji,
            eng.jb,
            eng.slots,
            eng.s_i,
            eng.s_nc,
            eng.s_f,
            eng.run_order,
            eng.heap_t,
            eng.heap_je,
            eng.ctr,
        )
        eng.jf[JF_RESTORE, g] = restore
        self.host_of[g] = h
        self._guests = g.copy()
        slot, placed = eng.ji[JI_SLOT, h].tolist(), eng.ji[JI_PLACED, h].tolist()
        self._nodes = [eng.slots[0, o : o + k].copy() for o, k in zip(slot, placed, strict=True)]
        rerate(eng, h, eng.jf[JF_CRATE, h] * fh)
        self._slow[h] = fh
        self._hosts = h.copy()


def rerate(eng: EngineView, js: IntArray, rates: FloatArray) -> None:
    """Running jobs ``js`` go on at ``rates`` from now (their devices unchanged): progress so
    far is brought up to now, a new stint of the same placement begins (a restore stall in
    progress goes on), and their completions are predicted anew. (Also used by the power
    model, :mod:`clustersim.power`, to slow a job started under a power cap.)"""
    js = np.ascontiguousarray(js, dtype=np.int64)
    eng._make_room()
    eng.sync_types()  # time on the type up to now (or the whole-step cap), before the cap goes
    sync_packed(js, len(js), _SYNC_ALL, eng.now, eng.capped, eng.jf, eng.ji)
    r = np.ascontiguousarray(rates, dtype=np.float64)
    rerate_jobs(js, r, float(eng.now), eng.jf, eng.ji, eng.heap_t, eng.heap_je, eng.ctr, eng.marks)
