"""Synergy: CPU- and memory-aware allocation on GPU clusters (Mohan et al., OSDI'22)."""

from __future__ import annotations

import heapq
from typing import Annotated, ClassVar, Literal

import numpy as np

from clustersim.aux_speed import Sensitivity
from clustersim.kernels import best_fit_node, take_largest_first
from scheduling.base import EMPTY, CompatSpec, Decision, FloatArray, IntArray, Policy, State
from scheduling.params import POSITIVE

_EPS = 1e-9  # as clustersim.resources: relative slack when dividing free capacity by a share


def _greedy_fit(gang: IntArray, cap: int) -> IntArray:
    """Positions of ``gang`` (in order) taken by a greedy pass that takes every job whose
    devices still fit in ``cap`` (later smaller jobs go past a larger one that does not)."""
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


class Synergy(Policy):
    """Synergy-TUNE: each round, GPUs as the base scheduler gives them, and host CPU cores
    and memory by each job's sensitivity to them.

    Synergy (Mohan et al., OSDI'22, §4; its simulator msr-fiddle/synergy, ``simulator/``,
    rule by rule in ``docs/synergy-fidelity.md``) keeps GPUs gang-allocated and treats
    CPU and memory as fungible. Every round (300 s) it deallocates every job, orders the
    active jobs by its base scheduler (``base``: FIFO by arrival, SRTF by remaining time at
    the job's best speed, LAS by attained GPU-seconds, FTF by Themis' finish-time fairness),
    and takes jobs in that order while their GPUs fit the free GPU count (a job that does
    not fit is passed over; later smaller ones may go). Then, job by job (LAS: largest gang
    first), **TUNE** gives each job

    1. its *ideal* cores and memory per GPU (the profile's, :mod:`clustersim.aux_speed`;
       a job without a profile: its demand), capped at one server's worth, on nodes where
       that share fits (best fit on one node, else the freest nodes first); else
    2. the GPU-proportional share (the node's cores and memory over its devices) if the
       ideal was above it; else
    3. the nodes with the fewest free GPUs, where jobs holding more than their
       GPU-proportional share (fewest nodes spanned first, then most cores per GPU, then
       most memory per GPU) are cut back to it until the job fits.

    The job then runs at its table rate times the sensitivity model's multiplier
    (:class:`clustersim.aux_speed.Sensitivity`). ``allocation="proportional"`` gives every
    job the GPU-proportional share (the baseline Synergy compares with, its simulator's
    ``+fair`` runs); ``allocation="greedy"`` gives the ideal or skips the job this round
    (Synergy-GREEDY).

    Departures (all in ``docs/synergy-fidelity.md``): a job that keeps running keeps its
    devices and its allocation (Synergy re-places every job every round, for free); it can
    only be cut back to the proportional share, never raised, until it is preempted and
    restarted; the engine's placement strategy places the starts (the plan mirrors
    ``consolidate``, the default; with another strategy a start the nodes cannot hold
    waits); a cut-back job keeps its smaller allocation on each resource (Synergy sets every
    resource to the proportional share); with several device types a start plans on its
    fastest type with free devices, as the engine chooses. Without the CPU/memory model
    (no node limits or no demands, ``docs/resources.md``) it schedules GPUs only.

    Parameters
    ----------
    base
        The base scheduler's order: ``fifo``, ``srtf``, ``las`` or ``ftf``.
    allocation
        ``tune`` (Synergy-TUNE), ``proportional`` (GPU-proportional) or ``greedy``.
    round_s
        Round length, s (Synergy's simulator: 300).
    """

    name = "synergy"
    citation = (
        "Mohan et al., Looking Beyond GPUs for DNN Scheduling on Multi-Tenant Clusters, OSDI'22"
    )
    preemptive = True
    rounds_only = True
    compat: ClassVar = {"synergy": CompatSpec(placements=("consolidate",))}

    def __init__(
        self,
        base: Literal["fifo", "srtf", "las", "ftf"] = "srtf",
        allocation: Literal["tune", "proportional", "greedy"] = "tune",
        round_s: Annotated[float, POSITIVE] = 300.0,
    ) -> None:
        if base not in ("fifo", "srtf", "las", "ftf"):
            raise ValueError(f"base: must be one of fifo, srtf, las, ftf; got {base!r}")
        if allocation not in ("tune", "proportional", "greedy"):
            raise ValueError(
                f"allocation: must be one of tune, proportional, greedy; got {allocation!r}"
            )
        if not round_s > 0:
            raise ValueError(f"round_s: must be positive; got {round_s!r}")
        self.base = base
        self.allocation = allocation
        self.round_s = float(round_s)
        self._jobs: object = None
        self._sens: Sensitivity | None = None
        self._speedup: FloatArray = np.zeros(0)
        self._ideal_c: FloatArray = np.zeros(0)
        self._ideal_m: FloatArray = np.zeros(0)
        self._fair = (0.0, 0.0)
        self._type_nodes: list[IntArray] = []
        self.cutbacks = 0

    def reset(self, rng: np.random.Generator) -> None:
        self._jobs = None
        self.cutbacks = 0

    def stats(self) -> dict[str, float]:
        return {"synergy_cutbacks": float(self.cutbacks)}

    # ------------------------------------------------------------------ per run
    def _bind(self, state: State) -> None:
        """Profiles, ideal and proportional shares of the trace's jobs on the cluster."""
        jobs, cl = state.jobs, state.cluster
        n = len(jobs)
        sens = Sensitivity(jobs)
        self._sens = sens
        all_j = np.arange(n, dtype=np.int64)
        ic, im = sens.ideal(all_j)
        cap_c = np.asarray(cl.node_cpu, dtype=np.float64)
        cap_m = np.asarray(cl.node_mem, dtype=np.float64)
        dev = np.maximum(cl.node_devices, 1).astype(np.float64)
        # GPU-proportional share: the smallest per-device share over nodes with a limit
        fc = float((cap_c / dev)[np.isfinite(cap_c)].min()) if np.isfinite(cap_c).any() else np.inf
        fm = float((cap_m / dev)[np.isfinite(cap_m)].min()) if np.isfinite(cap_m).any() else np.inf
        self._fair = (fc, fm)
        # the ideal capped at one server (the largest node), as Synergy caps a job's demand
        big = int(np.argmax(cl.node_devices)) if len(cl.node_devices) else 0
        s_dev = float(cl.node_devices[big]) if len(cl.node_devices) else 1.0
        g = np.maximum(jobs.num_gpus, 1).astype(np.float64)
        for arr, cap, fair in ((ic, cap_c, fc), (im, cap_m, fm)):
            s = float(cap[big]) if len(cap) else np.inf
            over = g * arr > s
            arr[over & (g <= s_dev)] = s / g[over & (g <= s_dev)]
            arr[over & (g > s_dev)] = fair
        self._ideal_c, self._ideal_m = ic, im
        self._speedup = (
            sens.multiplier(all_j, ic, im) if self.allocation != "proportional" else (np.ones(n))
        )
        self._speedup = np.where(self._speedup > 0, self._speedup, 1.0)
        self._type_nodes = [np.flatnonzero(cl.node_type == t) for t in range(cl.n_types)]
        self._jobs = jobs

    # ------------------------------------------------------------------ the round
    def _order(self, state: State, act: IntArray) -> IntArray:
        if self.base == "fifo":
            return act
        if self.base == "las":
            key = state.attained[act]
        else:
            rem = state.remaining_time(act) / self._speedup[act]
            if self.base == "srtf":
                key = rem
            else:  # ftf: (time so far + time left) / time alone at the proportional share
                jobs = state.jobs
                with np.errstate(divide="ignore", invalid="ignore"):
                    alone = jobs.work[act] / state.best_rate[act]
                    key = (state.now - jobs.submit_time[act] + rem) / alone
                key = np.nan_to_num(key, nan=np.inf)
        return act[np.lexsort((act, key))]

    def schedule(self, state: State) -> Decision:
        act = state.active
        if not len(act):
            return Decision(run=EMPTY)
        if self._jobs is not state.jobs:
            self._bind(state)
        order = self._order(state, act)
        gang = state.jobs.num_gpus
        run = order[_greedy_fit(gang[order], int(state.capacity.sum()))]
        if self.base == "las" and self.allocation == "tune":
            run = run[np.argsort(-gang[run], kind="stable")]
        model = state.aux_model
        if model is None or not len(run):
            return Decision(run=run)
        return self._allocate(state, run)

    def _allocate(self, state: State, run: IntArray) -> Decision:
        """Place the round's starts in order with TUNE (class doc) on a copy of the nodes'
        free devices, cores and memory; the decision carries each job's allocation."""
        model = state.aux_model
        assert model is not None
        cl = state.cluster
        gang = state.jobs.num_gpus
        running = state.running[run] & (state.alloc_n[run] > 0)
        kept = run[running]
        rj, rn, rd = state.aux_rows()
        sel = np.isin(rj, kept)
        rj, rn, rd = rj[sel], rn[sel], rd[sel]
        n_nodes = len(cl.node_devices)
        nfree = cl.node_devices.astype(np.int64) - np.bincount(
            rn, weights=rd, minlength=n_nodes
        ).astype(np.int64)
        cfree = model.cpu_cap - np.bincount(rn, weights=rd * model.cpu_dev[rj], minlength=n_nodes)
        mfree = model.mem_cap - np.bincount(rn, weights=rd * model.mem_dev[rj], minlength=n_nodes)
        fc, fm = self._fair
        # current allocation of the jobs of the round (kept: the model's; starts: planned)
        alloc: dict[int, tuple[float, float]] = {
            j: (float(c), float(m))
            for j, c, m in zip(
                kept.tolist(),
                model.cpu_dev[kept].tolist(),
                model.mem_dev[kept].tolist(),
                strict=True,
            )
        }
        where: dict[int, list[tuple[int, int]]] | None = None  # job -> [(node, devices)]
        changed: dict[int, tuple[float, float]] = {}
        out: list[int] = []
        tfree = np.bincount(cl.node_type, weights=nfree, minlength=cl.n_types).astype(np.int64)
        rate = state.rate

        def place(j: int, t: int, c: float, m: float) -> tuple[IntArray, IntArray] | None:
            nodes_t = self._type_nodes[t]
            room = nfree.copy()
            if c > 0:
                room = np.minimum(
                    room, np.clip(np.floor(cfree / c + _EPS), 0, 1 << 30).astype(np.int64)
                )
            if m > 0:
                room = np.minimum(
                    room, np.clip(np.floor(mfree / m + _EPS), 0, 1 << 30).astype(np.int64)
                )
            nd = int(gang[j])
            cands = nodes_t[room[nodes_t] > 0]
            if int(room[cands].sum()) < nd:
                return None
            i = best_fit_node(room[cands], EMPTY, nd)
            if i >= 0:
                return cands[i : i + 1], np.array([nd], dtype=np.int64)
            got: tuple[IntArray, IntArray] = take_largest_first(
                room, np.ascontiguousarray(cands, dtype=np.int64), nd
            )
            return got

        for j in run.tolist():
            if j in alloc:  # kept where it runs
                out.append(j)
                continue
            nd = int(gang[j])
            t = -1
            best = 0.0
            for k, r in enumerate(rate[j].tolist()):
                if r > best and tfree[k] >= nd:
                    t, best = k, r
            if t < 0:
                continue
            ic, im = float(self._ideal_c[j]), float(self._ideal_m[j])
            if self.allocation == "proportional":
                c, m = (fc if np.isfinite(fc) else ic), (fm if np.isfinite(fm) else im)
            else:
                c, m = ic, im
            got = place(j, t, c, m)
            if got is None and self.allocation == "tune":
                if c > fc or m > fm:  # step 2: the proportional share
                    c, m = min(c, fc), min(m, fm)
                    got = place(j, t, c, m)
                if got is None:  # step 3: cut back jobs above their share
                    if where is None:
                        where = {}
                        for a, b, d in zip(rj.tolist(), rn.tolist(), rd.tolist(), strict=True):
                            where.setdefault(a, []).append((b, d))
                    self._cut_back(nd, t, c, m, nfree, cfree, mfree, alloc, where, changed)
                    got = place(j, t, c, m)
            if got is None:
                continue
            nodes, counts = got
            nfree[nodes] -= counts
            cfree[nodes] -= counts * c
            mfree[nodes] -= counts * m
            tfree[t] -= nd
            alloc[j] = (c, m)
            changed[j] = (c, m)
            if where is not None:
                where[j] = list(zip(nodes.tolist(), counts.tolist(), strict=True))
            else:
                rj = np.concatenate([rj, np.full(len(nodes), j)])
                rn = np.concatenate([rn, nodes])
                rd = np.concatenate([rd, counts])
            out.append(j)
        run_out = np.asarray(out, dtype=np.int64)
        aux = np.full((len(run_out), 2), np.nan)
        if changed:
            pos = {j: i for i, j in enumerate(out)}
            for j, (c, m) in changed.items():
                if j in pos:
                    aux[pos[j]] = (c, m)
        return Decision(run=run_out, aux=aux)

    def _cut_back(
        self,
        nd: int,
        t: int,
        c: float,
        m: float,
        nfree: IntArray,
        cfree: FloatArray,
        mfree: FloatArray,
        alloc: dict[int, tuple[float, float]],
        where: dict[int, list[tuple[int, int]]],
        changed: dict[int, tuple[float, float]],
    ) -> None:
        """Step 3 of TUNE (class doc): on the nodes with the fewest free GPUs that together
        hold a gang of ``nd``, cut jobs above their proportional share back to it, in
        Synergy's order, until ``c`` cores and ``m`` GB per device are free there."""
        fc, fm = self._fair
        nodes_t = self._type_nodes[t]
        pick: list[tuple[int, int]] = []
        multi = [int(x) for x in nodes_t[nfree[nodes_t] >= nd]] if nd > 1 else []
        if multi:
            pick = [(multi[0], nd)]
        else:
            heap = [(int(nfree[x]), int(x)) for x in nodes_t.tolist() if nfree[x] > 0]
            heapq.heapify(heap)
            need = nd
            while need > 0 and heap:
                f, x = heapq.heappop(heap)
                k = min(f, need)
                pick.append((x, k))
                need -= k
        on_node: dict[int, list[int]] = {}
        for a, rows in where.items():
            for b, _ in rows:
                on_node.setdefault(b, []).append(a)
        for x, k in pick:
            need_c = max(0.0, k * c - float(cfree[x]))
            need_m = max(0.0, k * m - float(mfree[x]))
            if need_c <= 0 and need_m <= 0:
                continue
            peers = sorted(
                set(on_node.get(x, [])),
                key=lambda a: (len(where[a]), -alloc[a][0], -alloc[a][1], a),
            )
            for a in peers:
                ac, am = alloc[a]
                d = sum(dd for b, dd in where[a] if b == x)
                if ac > fc or am > fm:
                    nc, nm = min(ac, fc), min(am, fm)
                    for b, dd in where[a]:
                        cfree[b] += dd * (ac - nc)
                        mfree[b] += dd * (am - nm)
                    alloc[a] = (nc, nm)
                    changed[a] = (nc, nm)
                    self.cutbacks += 1
                    ex_c, ex_m = d * (ac - nc), d * (am - nm)
                else:
                    ex_c = ex_m = 0.0
                need_c, need_m = max(0.0, need_c - ex_c), max(0.0, need_m - ex_m)
                if need_c <= 0 and need_m <= 0:
                    break


class SynergyFair(Synergy):
    """Synergy-TUNE over finish-time fairness: :class:`Synergy` with ``base="ftf"``.

    The fair variant of Synergy's evaluation: its simulator's FTF scheduler
    (``schedulers/ftf_synergy_new.py``) orders jobs by Themis' finish-time fairness
    (Mahajan et al., NSDI'20) — time so far plus time left at the job's best speed, over its
    time alone at the GPU-proportional share — and TUNE allocates CPU and memory as in
    :class:`Synergy`.
    """

    name = "synergy-fair"
    compat: ClassVar = {"synergy": CompatSpec(placements=("consolidate",))}

    def __init__(
        self,
        allocation: Literal["tune", "proportional", "greedy"] = "tune",
        round_s: Annotated[float, POSITIVE] = 300.0,
    ) -> None:
        super().__init__(base="ftf", allocation=allocation, round_s=round_s)

    def params(self) -> dict[str, object]:
        return {"allocation": self.allocation, "round_s": self.round_s}
