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
  co-located rates). Each is one compiled call (:func:`clustersim.kernels.coloc_detach`,
  :func:`clustersim.kernels.coloc_attach`), with the results of the numpy code it replaced
  (``tests/reference_colocation.py``), bit for bit.

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
    COLOC_BAD_GANG,
    COLOC_BAD_GUEST,
    COLOC_BAD_SHARE,
    COLOC_BAD_TWICE,
    JB_RUNNING,
    JF_LAST_START,
    JI_PLACED,
    SYNC_ATTAINED,
    SYNC_EXECUTED,
    SYNC_REMAINING,
    coloc_attach,
    coloc_detach,
    pair_factors,
    rerate_jobs,
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
_ZERO_OFF = np.zeros(1, dtype=np.int64)


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
    type_time: FloatArray
    device_time: FloatArray
    nodes_i: IntArray
    busy: FloatArray
    types_i: IntArray

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
        # each guest's host's nodes, as attached: guest i's are _nodes[_node_off[i]:_node_off[i+1]]
        self._nodes, self._node_off = _EMPTY_I, _ZERO_OFF
        self._pos = np.full(n, -1, dtype=np.int64)  # scratch: a detached guest's position
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
        and give every host its isolated rate back.

        The steps, in this order (one compiled call, :func:`clustersim.kernels.coloc_detach`):
        each guest's stint rows on its host's nodes, ending now or when it completed; in
        whole-step rounds (Gavel's) a pair's completed job stamped with the pair's end (a
        job of a pair that completed in the round is recorded as completing when the
        pair's round ends, when the later of the two did its share or completed: Gavel
        dispatches a pair as one task and stamps both jobs with the task's end; its stint
        rows keep the time it really stopped); the running guests stopped; the running
        hosts back at their isolated rates."""
        guests, hosts = self._guests, self._hosts
        if not len(guests) and not len(hosts):  # no pair: nothing to undo
            self._detached, self._was_host, self._host_start = _EMPTY_I, _EMPTY_I, _EMPTY_F
            return
        eng._make_room()  # the guests' stints and stops
        eng._make_room()  # the hosts' new rates
        m = len(guests)
        served = np.empty(m)
        live = np.empty(m + len(hosts), dtype=np.int64)
        was_host = np.empty(m, dtype=np.int64)
        host_start = np.empty(m)
        k = coloc_detach(
            guests,
            hosts,
            self._nodes,
            self._node_off,
            self._slow,
            self.host_of,
            float(eng.now),
            bool(eng.capped),
            served,
            live,
            was_host,
            host_start,
            np.empty(len(hosts)),
            eng.marks,
            eng.jf,
            eng.ji,
            eng.jb,
            eng.type_time,
            eng.device_time,
            eng.nodes_i,
            eng.busy,
            eng.types_i,
            eng.slots,
            eng.st_i,
            eng.st_f,
            eng.run_order,
            eng.heap_t,
            eng.heap_je,
            eng.ctr,
        )
        if m:
            self.guest_s += float(np.sum(served))
        self._detached, self._was_host, self._host_start = live[:k], was_host[:k], host_start[:k]
        self._guests, self._hosts = _EMPTY_I, _EMPTY_I
        self._nodes, self._node_off = _EMPTY_I, _ZERO_OFF

    def open_stints(self, eng: EngineView, end: float) -> tuple[IntArray, FloatArray]:
        """At the end of a run: the stint rows (3, r) and times (2, r) of the guests still
        running, as :meth:`_record` writes them."""
        g = self._guests
        k = np.diff(self._node_off)
        on = np.repeat(eng.jb[JB_RUNNING, g], k) if len(g) else np.zeros(0, dtype=bool)
        if not on.any():
            return np.zeros((3, 0), dtype=np.int64), np.zeros((2, 0))
        job = np.repeat(g, k)[on]
        rows = np.stack([job, self._nodes[on], np.zeros(len(job), dtype=np.int64)])
        times = np.stack([eng.jf[JF_LAST_START, job], np.full(len(job), end)])
        return rows, times

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
        running = eng.jb[JB_RUNNING]
        p = p[running[p[:, 1]]] if len(p) else p  # hosts that did not get devices: no pair
        g, h = np.ascontiguousarray(p[:, 0]), np.ascontiguousarray(p[:, 1])
        m = len(g)
        if m:
            eng._make_room()  # the guests' starts
            eng._make_room()  # the hosts' new rates
        f = self.factors
        fg, fh, t = np.empty(m), np.empty(m), np.empty(m, dtype=np.int64)
        nodes = np.empty(int(eng.ji[JI_PLACED, h].sum()), dtype=np.int64)
        off = np.empty(m + 1, dtype=np.int64)
        code = coloc_attach(
            g,
            h,
            self._detached,
            self._was_host,
            self._host_start,
            self._pos,
            float(eng.now),
            bool(eng.capped),
            f.job_type,
            f.scale,
            f.worker,
            f.pairs.rates,
            f.pairs.table.consolidated,
            eng.rate,
            self._slow,
            self.host_of,
            fg,
            fh,
            t,
            nodes,
            off,
            eng.marks,
            eng.jf,
            eng.ji,
            eng.jb,
            eng.type_time,
            eng.device_time,
            eng.slots,
            eng.s_i,
            eng.s_nc,
            eng.s_f,
            eng.run_order,
            eng.heap_t,
            eng.heap_je,
            eng.ctr,
        )
        if code < 0:
            raise SimulationError(_BAD_PAIRS[code])
        self.pairings += code
        self._detached = _EMPTY_I
        if m:
            self._guests, self._hosts = g, h
            self._nodes, self._node_off = nodes, off


_BAD_PAIRS = {
    COLOC_BAD_GUEST: "a guest must be active and not run on devices of its own",
    COLOC_BAD_TWICE: "a job is in two pairs, or both guest and host",
    COLOC_BAD_GANG: "a guest must ask for as many devices as its host holds",
    COLOC_BAD_SHARE: "a pair cannot share devices (no co-located throughput)",
}


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
