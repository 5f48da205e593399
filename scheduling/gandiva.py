"""Gandiva: time slicing, packing and migration for locality (``gandiva``).

Source: Xiao et al., "Gandiva: Introspective Cluster Scheduling for Deep Learning", OSDI'18
(§3 the mechanisms — suspend-resume, packing, migration, grow-shrink; §4 the scheduling
policy — over-subscription, affinity, introspection). The authors published no code, so this
module follows the paper's text, in our own words; every simplification is listed below.
``gavel-gandiva`` (:mod:`scheduling.gavel_packing`) is Gavel's much simpler reproduction (random
pairs under Gavel's rounds); this one is the paper's mechanism, so the two can be compared.

The rules, checked at every quantum boundary (``quantum_s``, the engine's ``round_s``) and at
every arrival and completion:

* **Over-subscription.** The cluster is *oversubscribed* when the active jobs ask for more
  devices than it has (Σ gang > Σ devices, every type counted alike). When it is not, every
  job runs on devices of its own, nothing is sliced and nothing is packed: pairs formed earlier
  are split (the paper packs and slices only under over-subscription).
* **Packing** (``packing``). Under over-subscription, jobs with the same gang size are paired
  on one gang of devices while that relieves the over-subscription: the best pair first (the
  highest combined normalised throughput ``fa + fb``, each job's co-located rate over its
  isolated one, :class:`clustersim.colocation.PairFactors`), kept only when ``fa + fb > 1 +
  pack_threshold`` — the paper's introspective test ("keep a packed pair when the two do more
  together than time-sliced") — until the units (lone jobs and pairs) ask for no more devices
  than exist or no good pair is left. A pair stays while both jobs are active and the cluster
  oversubscribed. Each unit runs like a single job: a pair's host holds the devices and its
  guest shares them (``Decision.colocate``).
* **Time slicing** (suspend-resume, round robin). Units are ordered by the time they last held
  devices (a unit never run: its submit time), oldest first, and given devices in that order,
  skipping a gang that does not fit (a smaller one behind it may). At a quantum boundary this
  ordering alone decides who runs: units that waited come before units that ran during the
  last quantum, so under over-subscription jobs take turns of one quantum each; the ones left
  out are suspended (the engine's checkpoint/restore delay is paid on resume). Between
  boundaries running units keep their devices and only free devices are filled.
* **Migration for locality** (``migrate``). A running multi-device job whose gang spans more
  nodes than the free devices would let it span now (a placement on fewer nodes is free) is
  re-placed at once (``Decision.migrate``: suspended and started again, the placement strategy
  choosing the nodes; one preemption, one migration, one restore delay). The count is
  ``locality_migrations`` in the policy's stats.
* **Type.** A unit that runs stays on its type when the type has room for it; a unit that
  starts goes to the type with room where its host is fastest (the engine's own default for
  heterogeneity-agnostic policies, so ``gandiva`` and ``las``/``tiresias`` place alike).

How a decision is computed (the results are those of the plain numpy code it replaced, bit
for bit: ``tests/test_gandiva_speed.py`` compares whole runs with
``tests/reference_gandiva.py``):

* an over-subscribed decision's units, their order and the fill are one compiled call
  (:func:`clustersim.kernels.gandiva_fill`), and so is the migration check of every decision
  (:func:`clustersim.kernels.gandiva_migrations`);
* **quiet rounds**: an undersubscribed decision that split no pair and moved no job is
  returned again, marked ``Decision.unchanged``, while no job arrives, leaves, starts or
  stops (the running jobs, their start times and the active set are compared with the
  last decision's), and the engine does not apply it again: at a 60 s quantum most
  undersubscribed boundaries change nothing (16,748 of 20,150 on Gavel's 2,000-job trace).

Departures from the paper, and why:

* **Introspection is replaced by the measured pair table.** Gandiva tries a pair, watches its
  mini-batch times for a while and unpacks it when the pair does worse than time slicing. Gavel
  measured those pair rates (``clustersim/data/gavel_throughputs.json``), so here a bad pair
  is never formed and no trial period is simulated. A pair must pass the test on every type of
  the cluster (the minimum of ``fa + fb`` over the types), since the policy does not know in
  advance where the pair will run. Jobs without a measured job type (traces other than
  Gavel's) are never packed; only jobs with the same gang size are (that is what Gavel
  measured). Gandiva's packing also considers GPU memory and utilisation; those are folded
  into the measured rates here.
* **Suspend-resume cost.** Gandiva suspends in-process at a mini-batch boundary, keeping the
  job's GPU state in host memory, so a switch costs little next to a checkpoint restore (the
  paper gives no single figure for every model). Every resume here pays ``resume_s``, 1 s by
  default (an assumption, on the dear side of "little"), in place of the performance model's
  checkpoint/restore delay (:mod:`clustersim.perf`: 10–34 s for Gavel's models, 30 s for
  unknown ones); ``resume_s=None`` charges the model's delay instead. A migration pays
  ``resume_s`` too, where Gandiva pays a checkpoint to the new server (a departure: cheaper
  migrations here).
* **Quantum.** 60 s by default, the paper's slice of about a minute. Every slice boundary is a
  scheduling decision and a co-location re-attach, so a longer quantum is cheaper to simulate:
  on Gavel's 2,000-job trace (``v100:8,p100:8,k80:8``, one core) 5.4 s of CPU at 60 s against
  2.2 s at 360 s, for mean JCTs of 4.11 h and 4.16 h (session 9, before the fast paths
  below; today's figures are in ``docs/gandiva.md``, "Cost"). With the model's restore delay
  (``resume_s=None``) a 60 s slice loses a quarter to a half of itself to restoring and the
  cluster saturates (mean JCT 58 h against 4.2 h at 360 s).
* **Affinity.** Gandiva keeps jobs of one gang size on the same servers so that their time
  slicing and packing stay within a server, and grows or shrinks a server's affinity as load
  changes. Here devices are one pool per type: time slicing is across all jobs (units of every
  size take turns in one queue) and which nodes a gang uses is the placement strategy's choice
  (``consolidate`` by default, which already puts small gangs on the fullest node that holds
  them). The affinity rule is not modelled; migration for locality is.
* **Grow-shrink** (elastic jobs using idle devices) is not modelled: each job runs on its
  trace gang size.
* **Heterogeneity.** The paper's cluster had one GPU type and Gandiva does not look at types;
  here over-subscription counts every device alike and a starting unit goes to the type
  where its host is fastest among those with room (as the other heterogeneity-agnostic
  baselines of the engine). Jobs are not moved between types to gain speed.
"""

from __future__ import annotations

from typing import Annotated

import numpy as np
import numpy.typing as npt

from clustersim.kernels import gandiva_fill, gandiva_migrations
from scheduling.base import EMPTY, Decision, Policy, State
from scheduling.params import NON_NEGATIVE, POSITIVE

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]


class Gandiva(Policy):
    """Gandiva (Xiao et al., OSDI'18): suspend-resume time slicing, packing when it pays,
    migration for locality (module doc).

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
        # the last decision, if it may be repeated unchanged: its time, active jobs, running
        # jobs and the decision (see _quiet_round)
        self._quiet: tuple[float, IntArray, IntArray, Decision] | None = None

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
            d = self._quiet_round(state, active, on)
            if d is None:
                d = self._undersubscribed(state, active, on)
        else:
            self._quiet = None
            d = self._oversubscribed(state, active, boundary)
        self._memo = (key, d)
        return d

    def _quiet_round(self, state: State, active: IntArray, on: IntArray) -> Decision | None:
        """The last decision again, marked ``unchanged``, when it was an undersubscribed one
        that split no pair and moved no job, and since it was made no job arrived, left,
        started or stopped: the running jobs and their placements are the same, so the
        decision is the same and applying it again changes nothing (``None`` otherwise).
        A job the last decision started would have started at its time or later."""
        q = self._quiet
        if q is None:
            return None
        t_last, active_last, on_last, d = q
        if not (  # (bytes compare: numpy's array_equal costs more than the rest here)
            active.tobytes() == active_last.tobytes()
            and on.tobytes() == on_last.tobytes()
            and (not len(on) or float(state.last_start[on].max()) < t_last)
        ):
            return None
        return Decision(run=d.run.copy(), unchanged=True)

    def _undersubscribed(self, state: State, active: IntArray, on: IntArray) -> Decision:
        """Every job on devices of its own: pairs split, jobs in arrival order."""
        self._quiet = None
        paired = active[self._partner[active] >= 0]
        if len(paired):
            both = state.is_active[self._partner[paired]]
            self._split += int(both.sum()) // 2  # pairs whose jobs are both still active
            self._partner[paired] = -1
        mig = self._migrations_of(state, active)
        if len(mig):
            rest = active[~np.isin(active, mig)]
            return Decision(run=np.concatenate([mig, rest]), migrate=mig)
        d = Decision(run=active.copy())
        if not len(paired):  # the next decision may be this one again (_quiet_round)
            self._quiet = (float(state.now), active.copy(), on.copy(), d)
        return d

    def _oversubscribed(self, state: State, active: IntArray, boundary: bool) -> Decision:
        partner = self._partner
        # pairs whose partner left: the job stands alone again
        p = partner[active]
        gone = active[(p >= 0) & ~state.is_active[np.maximum(p, 0)]]
        partner[gone] = -1
        if self._gain is not None:
            self._pack(state, active)
        # the units, their order and the fill: one compiled call (kernels.gandiva_fill)
        na = len(active)
        out_run = np.empty(na, dtype=np.int64)
        out_type = np.empty(na, dtype=np.int64)
        out_guest = np.empty(na, dtype=np.int64)
        n = gandiva_fill(
            active,
            partner,
            self._last_run,
            state.running,
            state.alloc_n,
            state.alloc_type,
            state.jobs.num_gpus,
            state.rate,
            self._capacity(state),
            boundary,
            out_run,
            out_type,
            out_guest,
        )
        run_a, typ_a, guests = out_run[:n], out_type[:n], out_guest[:n]
        paired = guests >= 0
        pairs = np.empty((int(paired.sum()), 2), dtype=np.int64)
        pairs[:, 0] = guests[paired]
        pairs[:, 1] = run_a[paired]
        mig = self._migrations_of(state, run_a, typ_a)
        if len(mig):
            first = np.isin(run_a, mig)
            run_a = np.concatenate([run_a[first], run_a[~first]])
            typ_a = np.concatenate([typ_a[first], typ_a[~first]])
        return Decision(run=run_a, types=typ_a, colocate=pairs, migrate=mig if len(mig) else None)

    def _capacity(self, state: State) -> IntArray:
        """The devices of each type, int64 (the array the fill kernel takes)."""
        cap = state.capacity
        if cap.dtype != np.int64 or not cap.flags.c_contiguous:
            cap = np.ascontiguousarray(cap, dtype=np.int64)
        return cap

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

    # ------------------------------------------------------------------ migration
    def _migrations_of(
        self, state: State, run: IntArray, types: IntArray | None = None
    ) -> IntArray:
        """Jobs of ``run`` that keep their devices (same type) and span more nodes than the
        free devices would let them span now."""
        if not self.migrate or state.nodes_used is None or state.node_free is None:
            return EMPTY
        out = np.empty(len(run), dtype=np.int64)
        k = gandiva_migrations(
            run,
            EMPTY if types is None else types,
            state.running,
            state.alloc_n,
            state.alloc_type,
            state.nodes_used,
            self._least,
            state.jobs.num_gpus,
            state.cluster.node_type,
            state.node_free,
            out,
        )
        self._migrations += k
        return out[:k]


def _pair_gain(rates: FloatArray, iso: FloatArray, workers: IntArray) -> FloatArray:
    """The smallest combined normalised throughput ``fa + fb`` of each pair of pair-table
    classes (``job type × n_scales + scale``) over ``workers``; 0 where the two cannot share
    on some worker or their scales differ.

    Parameters
    ----------
    rates : (n_workers, nj, nj, ns, 2) float64
        :attr:`clustersim.colocation.PairTable.rates`.
    iso : (n_workers, nj, ns) float64
        Isolated rates (``ThroughputTable.consolidated``).
    workers : (w,) int64
        The workers of the cluster's types.

    Returns
    -------
    (nj * ns, nj * ns) float64
    """
    r = rates[workers]  # (w, nj, nj, ns, 2)
    i = iso[workers]  # (w, nj, ns)
    with np.errstate(divide="ignore", invalid="ignore"):
        fa = r[..., 0] / i[:, :, None, :]
        fb = r[..., 1] / i[:, None, :, :]
    ok = np.isfinite(fa) & np.isfinite(fb) & (fa > 0) & (fb > 0)
    g = np.where(ok, fa + fb, 0.0).min(axis=0)  # (nj, nj, ns)
    g = np.minimum(g, g.transpose(1, 0, 2))
    nj, _, ns = g.shape
    out = np.zeros((nj * ns, nj * ns))
    for s in range(ns):
        idx = np.arange(nj) * ns + s
        out[np.ix_(idx, idx)] = g[:, :, s]
    return out
