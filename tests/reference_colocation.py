"""The co-location mechanism before its compiled kernels, kept as the reference the fast
path is compared with (``tests/test_gandiva_speed.py``): the engine's
:class:`clustersim.colocation.CoLocator` as of commit 593c6d4, unchanged but for its name."""

from __future__ import annotations

import math

import numpy as np

from clustersim.colocation import EngineView, PairFactors, rerate
from clustersim.errors import SimulationError
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
    record_start,
    start_jobs,
)

IntArray = np.ndarray
FloatArray = np.ndarray
_EMPTY_I = np.zeros(0, dtype=np.int64)
_EMPTY_F = np.zeros(0, dtype=np.float64)


class ReferenceCoLocator:
    """The engine's co-location mechanism as it was before its compiled kernels
    (:func:`clustersim.kernels.coloc_detach`, :func:`clustersim.kernels.coloc_attach`): numpy
    and one kernel call per start, step by step.

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
