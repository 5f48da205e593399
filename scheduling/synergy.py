"""Synergy: CPU- and memory-aware allocation on GPU clusters (Mohan et al., OSDI'22)."""

from __future__ import annotations

import heapq
import math
from typing import TYPE_CHECKING, Annotated, ClassVar, Literal

import numpy as np

from clustersim.aux_speed import Sensitivity
from clustersim.kernels import greedy_fit, synergy_free, synergy_place, synergy_starts
from scheduling.base import EMPTY, CompatSpec, Decision, FloatArray, IntArray, Policy, State
from scheduling.params import POSITIVE

if TYPE_CHECKING:
    from clustersim.resources import AuxModel

_EPS = 1e-9  # as clustersim.resources: relative slack when dividing free capacity by a share


def _devices(q: float) -> int:
    """``floor(q)`` clipped to ``[0, 2**30]`` (``q`` may be ``inf`` on an unlimited node)."""
    if q >= 1 << 30:
        return 1 << 30
    return max(0, math.floor(q))


def _greedy_fit(gang: IntArray, cap: int) -> IntArray:
    """Positions of ``gang`` (in order) taken by a greedy pass that takes every job whose
    devices still fit in ``cap`` (later smaller jobs go past a larger one that does not);
    compiled (:func:`clustersim.kernels.greedy_fit`)."""
    return greedy_fit(np.ascontiguousarray(gang, dtype=np.int64), int(cap))


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

    Decisions are made only on the fixed grid of rounds (``rounds_on_grid``): arrivals wait
    for the next boundary and GPUs freed mid-round idle until then, as in Synergy.

    Departures (all in ``docs/synergy-fidelity.md``): a job that keeps running keeps its
    devices (Synergy re-places every job every round, for free); its allocation is cut back
    to the proportional share when a start needs it (step 3), and a job left below its ideal
    gets the ideal back in a later round from the cores and memory the round's starts left
    (Synergy re-tunes it in its turn); the engine's placement strategy places the starts (the
    plan mirrors ``consolidate``, the default; with another strategy a start the nodes cannot
    hold waits); a cut-back job keeps its smaller allocation on each resource (Synergy sets
    every resource to the proportional share); with several device types a start plans on its
    fastest type with free devices, as the engine chooses. Without the CPU/memory model (no
    node limits or no demands, ``docs/resources.md``) it schedules GPUs only.

    Parameters
    ----------
    base
        The base scheduler's order: ``fifo``, ``srtf``, ``las`` or ``ftf``.
    allocation
        ``tune`` (Synergy-TUNE), ``proportional`` (GPU-proportional) or ``greedy``.
    round_s
        Round length, s (Synergy's simulator: 300).
    ftf_order
        With ``base="ftf"``: ``themis`` serves the largest finish-time fairness ratio first
        (Themis's rule: the job furthest behind its fair finish); ``reference`` the smallest
        first, as Synergy's simulator sorts (``schedulers/ftf_synergy_new.py`` sorts
        ascending; the ``--compat synergy`` default).
    """

    name = "synergy"
    citation = (
        "Mohan et al., Looking Beyond GPUs for DNN Scheduling on Multi-Tenant Clusters, OSDI'22"
    )
    preemptive = True
    rounds_on_grid = True
    compat: ClassVar = {
        "synergy": CompatSpec(params={"ftf_order": "reference"}, placements=("consolidate",))
    }

    def __init__(
        self,
        base: Literal["fifo", "srtf", "las", "ftf"] = "srtf",
        allocation: Literal["tune", "proportional", "greedy"] = "tune",
        round_s: Annotated[float, POSITIVE] = 300.0,
        ftf_order: Literal["themis", "reference"] = "themis",
    ) -> None:
        if ftf_order not in ("themis", "reference"):
            raise ValueError(f"ftf_order: must be one of themis, reference; got {ftf_order!r}")
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
        self.ftf_order = ftf_order
        self._jobs: object = None
        self._sens: Sensitivity | None = None
        self._speedup: FloatArray = np.zeros(0)
        self._ideal_c: FloatArray = np.zeros(0)
        self._ideal_m: FloatArray = np.zeros(0)
        self._fair = (0.0, 0.0)
        self._type_nodes: list[IntArray] = []
        self._mark = np.zeros(0, dtype=bool)  # scratch: jobs kept this round
        self._below = False  # a job of the last planned round runs below its ideal
        self._cutbacks = 0
        self._regrowths = 0

    def reset(self, rng: np.random.Generator) -> None:
        self._jobs = None
        self._below = False
        self._cutbacks = 0
        self._regrowths = 0

    def stats(self) -> dict[str, float]:
        return {
            "synergy_cutbacks": float(self._cutbacks),
            "synergy_regrowths": float(self._regrowths),
        }

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
        self._room = np.zeros(len(cl.node_type), dtype=np.int64)  # scratch of synergy_place
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
                if self.ftf_order == "themis":  # the most unfairly treated (largest) first
                    key = -key
        return act[np.lexsort((act, key))]

    def schedule(self, state: State) -> Decision:
        act = state.active
        if not len(act):
            return Decision(run=EMPTY)
        rs = float(self.round_s or 0.0)
        k = np.floor(state.now / rs + 1e-9)
        if state.now - k * rs > 1e-9 * max(state.now, 1.0):
            # between rounds (an arrival or a completion): Synergy decides only on its
            # fixed grid of rounds, so everything stays as it is until the next one
            return Decision(run=np.array(state.running_jobs()))
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
        if not self._below and state.running[run].all() and (state.alloc_n[run] > 0).all():
            return Decision(run=run)  # no start and none below its ideal: nothing changes
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
        mark = self._mark
        if len(mark) != len(gang):
            mark = self._mark = np.zeros(len(gang), dtype=bool)
        # the kept jobs' rows, and the free devices, cores and memory with only them
        rj, rn, rd, nfree, cfree, mfree, tfree = synergy_free(
            rj,
            rn,
            rd,
            kept,
            mark,
            cl.node_devices,
            cl.node_type,
            cl.n_types,
            model.cpu_cap,
            model.mem_cap,
            model.cpu_dev,
            model.mem_dev,
        )
        fc, fm = self._fair
        # allocations this round that differ from the model's (starts and cut-backs)
        alloc: dict[int, tuple[float, float]] = {}
        where: dict[int, list[tuple[int, int]]] | None = None  # job -> [(node, devices)]
        out = run.tolist()
        aux = np.full((len(out), 2), np.nan)
        placed = np.ones(len(out), dtype=bool)
        one_type = cl.n_types == 1
        rate = state.rate
        ideal_c, ideal_m = self._ideal_c, self._ideal_m
        tune = self.allocation == "tune"
        prop = self.allocation == "proportional"

        node_type, room = cl.node_type, self._room

        def place(t: int, nd: int, c: float, m: float) -> tuple[IntArray, IntArray] | None:
            # the engine's rule (clustersim.resources.AuxModel.room, then `consolidate`): on
            # each node the free devices capped by free cores and memory over the share; best
            # fit on one node (fewest such devices, lowest index), else the most first; the
            # devices, cores and memory taken come off nfree, cfree and mfree; one compiled
            # call (tests/reference_aux.py keeps the Python it replaced)
            nodes, counts = synergy_place(
                t, nd, c, m, nfree, cfree, mfree, node_type, one_type, room
            )
            return (nodes, counts) if len(nodes) else None

        # the starts (kept jobs stay), in order, in one compiled call up to each start that
        # needs TUNE's step 3 (cutting others back), which is done here
        positions = np.flatnonzero(~running)
        n_pos = len(positions)
        rec = np.empty((3, n_pos), dtype=np.int64)  # position, offset, nodes of each start
        rec_nc = np.empty((2, int(gang[run[positions]].sum())), dtype=np.int64)
        rec_ctr = np.zeros(3, dtype=np.int64)
        share = np.zeros(2)
        synced = 0  # records already in `where` and `alloc` (needed only by step 3)
        on_node: dict[int, set[int]] = {}  # node -> the jobs of `where` on it
        i = 0
        while True:
            i = synergy_starts(
                i,
                positions,
                run,
                gang,
                rate,
                tfree,
                ideal_c,
                ideal_m,
                fc,
                fm,
                prop,
                tune,
                nfree,
                cfree,
                mfree,
                node_type,
                one_type,
                room,
                aux,
                placed,
                rec,
                rec_nc,
                rec_ctr,
                share,
            )
            if i >= n_pos:
                break
            pos = int(positions[i])
            j = out[pos]
            nd = int(gang[j])
            t = int(rec_ctr[2])
            c, m = float(share[0]), float(share[1])
            if where is None:
                where = {}
                for a, b, d in zip(rj.tolist(), rn.tolist(), rd.tolist(), strict=True):
                    where.setdefault(a, []).append((b, d))
                    on_node.setdefault(b, set()).add(a)
            for r in range(synced, int(rec_ctr[0])):  # the starts placed since
                p, o, k = rec[:, r].tolist()
                a = out[p]
                nn, dd = rec_nc[0, o : o + k].tolist(), rec_nc[1, o : o + k].tolist()
                where[a] = list(zip(nn, dd, strict=True))
                for b in nn:
                    on_node.setdefault(b, set()).add(a)
                alloc[a] = (float(aux[p, 0]), float(aux[p, 1]))
            synced = int(rec_ctr[0])
            for a, ac_am in self._cut_back(
                nd, t, c, m, nfree, cfree, mfree, alloc, model, where, on_node
            ):
                alloc[a] = ac_am
                aux[out.index(a)] = ac_am
            got = place(t, nd, c, m)
            if got is None:
                placed[pos] = False
            else:
                nodes, counts = got  # place() took them from nfree, cfree and mfree
                tfree[t] -= nd
                alloc[j] = (c, m)
                aux[pos] = (c, m)
                nn = nodes.tolist()
                where[j] = list(zip(nn, counts.tolist(), strict=True))
                for b in nn:
                    on_node.setdefault(b, set()).add(j)
            i += 1
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

    def _regrow(
        self,
        j: int,
        pos: int,
        model: AuxModel,
        rj: IntArray,
        rn: IntArray,
        rd: IntArray,
        cfree: FloatArray,
        mfree: FloatArray,
        alloc: dict[int, tuple[float, float]],
        aux: FloatArray,
    ) -> None:
        """A running job below its ideal gets it back when its nodes have the cores and
        memory (Synergy re-tunes every job every round); else it keeps what it has."""
        c, m = float(model.cpu_dev[j]), float(model.mem_dev[j])
        ic, im = float(self._ideal_c[j]), float(self._ideal_m[j])
        if ic <= c * (1 + _EPS) and im <= m * (1 + _EPS):
            return
        nc, nm = max(c, ic), max(m, im)
        rows = np.flatnonzero(rj == j)
        nodes, devs = rn[rows], rd[rows]
        if np.any(devs * (nc - c) > cfree[nodes] + _EPS) or np.any(
            devs * (nm - m) > mfree[nodes] + _EPS
        ):
            return
        cfree[nodes] -= devs * (nc - c)
        mfree[nodes] -= devs * (nm - m)
        alloc[j] = (nc, nm)
        aux[pos] = (nc, nm)
        self._regrowths += 1

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
        model: AuxModel,
        where: dict[int, list[tuple[int, int]]],
        on_node: dict[int, set[int]] | None = None,
    ) -> list[tuple[int, tuple[float, float]]]:
        """Step 3 of TUNE (class doc): on the nodes with the fewest free GPUs that together
        hold a gang of ``nd``, cut jobs above their proportional share back to it, in
        Synergy's order, until ``c`` cores and ``m`` GB per device are free there (``cfree``
        and ``mfree`` updated). Returns the jobs cut back with their new allocation.
        ``on_node`` (node -> the jobs of ``where`` on it), when the caller keeps it, saves
        scanning ``where`` for each node."""
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

        def now(a: int) -> tuple[float, float]:
            got = alloc.get(a)
            return got if got is not None else (float(model.cpu_dev[a]), float(model.mem_dev[a]))

        cut: list[tuple[int, tuple[float, float]]] = []
        for x, k in pick:
            need_c = max(0.0, k * c - float(cfree[x]))
            need_m = max(0.0, k * m - float(mfree[x]))
            if need_c <= 0 and need_m <= 0:
                continue
            if on_node is not None:  # the jobs of `where` with devices on x, kept by the caller
                on_x = list(on_node.get(x, ()))
            else:
                on_x = [a for a, rows in where.items() if any(b == x for b, _ in rows)]
            peers = sorted(on_x, key=lambda a: (len(where[a]), -now(a)[0], -now(a)[1], a))
            for a in peers:
                ac, am = now(a)
                d = sum(dd for b, dd in where[a] if b == x)
                ex_c = ex_m = 0.0
                if ac > fc or am > fm:
                    nc, nm = min(ac, fc), min(am, fm)
                    for b, dd in where[a]:
                        cfree[b] += dd * (ac - nc)
                        mfree[b] += dd * (am - nm)
                    alloc[a] = (nc, nm)
                    cut.append((a, (nc, nm)))
                    self._cutbacks += 1
                    ex_c, ex_m = d * (ac - nc), d * (am - nm)
                need_c, need_m = max(0.0, need_c - ex_c), max(0.0, need_m - ex_m)
                if need_c <= 0 and need_m <= 0:
                    break
        return cut


class SynergyFair(Synergy):
    """Synergy-TUNE over finish-time fairness: :class:`Synergy` with ``base="ftf"``.

    The fair variant of Synergy's evaluation: its simulator's FTF scheduler
    (``schedulers/ftf_synergy_new.py``) orders jobs by Themis' finish-time fairness
    (Mahajan et al., NSDI'20) — time so far plus time left at the job's best speed, over its
    time alone at the GPU-proportional share — and TUNE allocates CPU and memory as in
    :class:`Synergy`.
    """

    name = "synergy-fair"
    compat: ClassVar = {
        "synergy": CompatSpec(params={"ftf_order": "reference"}, placements=("consolidate",))
    }

    def __init__(
        self,
        allocation: Literal["tune", "proportional", "greedy"] = "tune",
        round_s: Annotated[float, POSITIVE] = 300.0,
        ftf_order: Literal["themis", "reference"] = "themis",
    ) -> None:
        super().__init__(base="ftf", allocation=allocation, round_s=round_s, ftf_order=ftf_order)

    def params(self) -> dict[str, object]:
        return {"allocation": self.allocation, "round_s": self.round_s, "ftf_order": self.ftf_order}
