"""Tiresias: discretised two-dimensional least attained service."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, ClassVar, Literal, get_args

import numpy as np

from clustersim.kernels import (
    TIRESIAS_UNSEEN,
    TQ_NXT,
    TQ_ORDER,
    TQ_PREDICT,
    TQ_PRV,
    TQ_PY2,
    TQ_QID,
    TQ_SIM,
    tiresias_order,
)
from scheduling.base import CompatSpec, Decision, Policy, State
from scheduling.params import POSITIVE

Timing = Literal["exact", "simulator", "simulator-py2"]
TIMINGS: tuple[str, ...] = get_args(Timing)


class Tiresias(Policy):
    """Discretised 2D-LAS (Gu et al., "Tiresias: A GPU Cluster Manager for Distributed Deep
    Learning", NSDI'19, §3.2), as its simulator (SymbioticLab/Tiresias, ``simulator/``,
    schedule ``dlas-gpu``) runs it; ``docs/tiresias-fidelity.md`` states its rules one by one.

    A job's attained service is two-dimensional: GPUs × time (device-seconds). Jobs are put in
    ``len(thresholds) + 1`` priority queues by comparing that service with ``thresholds``
    (queue 0 below the first threshold); lower queues run first. Inside a queue the order is
    the one the simulator keeps: running jobs ahead of waiting ones (a running job is never
    preempted by a job of its own queue), new jobs and demoted jobs joining the back, a job
    stopped by a higher queue going to the front of the waiting ones. Walking that order, a job
    runs when its gang still fits (counting devices, not nodes); one that does not fit is
    skipped, so smaller jobs behind it may run. A running job whose service reaches its
    queue's threshold is demoted to the back of the next queue at that instant (the thresholds
    are the policy's ``service_marks``).

    Starvation guard (the paper's ``PROMOTEKNOB``, the simulator's ``dlas-gpu-K``): with
    ``promote_knob = K``, a waiting job of a lower queue that has waited ``K`` times its
    executed time (both counted since it last entered queue 0) goes back to queue 0 with its
    queue service reset. The simulator's ``dlas-gpu`` leaves it off, and so does the default.

    Defaults follow the simulator's ``dlas-gpu``: three queues split at 3,250 and 7,200
    GPU-seconds, no starvation guard, and no preemption cost in its own model (the engine's
    checkpoint/restore delay applies unless the run says otherwise; ``--compat tiresias``
    sets it to 0).

    ``timing="simulator"`` (set by ``--compat tiresias``) checks queue changes when the
    simulator does: at arrivals, completions and the "jump" times it computes in whole
    seconds. Its demotion estimate divides the GPU-time left by the gang size with the
    executed *time* in place of the executed GPU-time, so a multi-GPU job may be checked
    before its crossing and then demoted only at the first event after it, one queue per
    event. The simulator is Python 2 code; ``"simulator"`` is what it computes under Python 3
    (the estimate rounded up), the only way to run it today, ``"simulator-py2"`` what it
    computed under Python 2 (rounded down). For a 4-GPU job the two differ by up to a
    demotion: 3,250/4 rounds up to 813 s, past the crossing, and down to 812 s, before it.

    Departure from the simulator: when a queue check preempts a job whose predicted end
    coincides with an arrival, the simulator still ends that job at the arrival (a slip of
    its event handling, ``docs/tiresias-fidelity.md`` §4.5); that is not modelled.

    Departures from the paper: placement is whatever strategy the run uses (the paper's
    profile-guided consolidation is approximated by ``consolidate``); the paper's Gittins-index
    variant and its gang-size-aware placement are not modelled. Today's earlier variant of this
    policy, which ordered each queue by arrival and so preempted inside a queue, is gone: it
    matched neither the paper nor the simulator.

    The policy keeps per-run memory (the queues), as the simulator does; asked twice about the
    same state snapshot it answers the same.

    Parameters
    ----------
    thresholds
        Queue boundaries in device-seconds, ascending.
    promote_knob
        Starvation knob ``K`` (> 0), or ``None`` for no promotion.
    timing
        ``"exact"`` (queue changes at the instant they are due), ``"simulator"`` or
        ``"simulator-py2"`` (the simulator's own check times, see above).
    rewalk
        ``True`` (set by ``--compat pollux``): the queues of Pollux's simulator's Tiresias
        baseline instead (petuum/adaptdl ``simulator/tiresias.py``, docs/pollux-fidelity.md
        section 3b): each queue keeps its arrival (queue 0) or demotion order and is
        re-walked from its head at every decision, so a waiting job preempts a running job
        that came after it in its own queue; devices are counted over the whole cluster.
    """

    name = "tiresias"
    citation = "Gu et al., Tiresias, NSDI'19"
    preemptive = True
    compat: ClassVar[Mapping[str, CompatSpec]] = {
        "tiresias": CompatSpec(params={"timing": "simulator"}, placements=("first-fit",)),
        # Pollux's simulator's baseline (simulator/tiresias.py there): two queues split at
        # 16 GPU-hours, rigid jobs at their trace's batch size on the goodput model
        "pollux": CompatSpec(
            params={"thresholds": (57600.0,), "rewalk": True},
            placements=("freest",),
            engine={"goodput_trace_batch": True},
        ),
    }

    def __init__(
        self,
        thresholds: Annotated[tuple[float, ...], POSITIVE] = (3250.0, 7200.0),
        promote_knob: Annotated[float, POSITIVE] | None = None,
        timing: Timing = "exact",
        rewalk: bool = False,
    ) -> None:
        self.thresholds = tuple(float(x) for x in thresholds)
        self.promote_knob = promote_knob
        self.timing = timing
        self.rewalk = rewalk
        if rewalk and promote_knob is not None:
            raise ValueError("tiresias: rewalk has no starvation guard; leave out promote_knob")
        if list(self.thresholds) != sorted(self.thresholds) or any(x <= 0 for x in self.thresholds):
            raise ValueError(
                f"tiresias: thresholds must be positive and ascending, got {thresholds}"
            )
        if promote_knob is not None and not promote_knob > 0:
            raise ValueError(f"tiresias: promote_knob must be positive, got {promote_knob}")
        if timing not in TIMINGS:
            raise ValueError(
                f"tiresias: timing must be one of {', '.join(TIMINGS)}, got {timing!r}"
            )
        self._thr = np.asarray(self.thresholds, dtype=np.float64)
        self._knob = float(promote_knob or 0.0)
        self._sim = timing != "exact"
        # queue changes the engine can foresee from attained service alone: the thresholds
        # (without promotion the queue service is the attained service)
        self._predict = self._sim or self._knob > 0
        self.service_marks = () if self._predict else self.thresholds
        self._flags = (
            (TQ_SIM if self._sim else 0)
            | (TQ_PY2 if timing == "simulator-py2" else 0)
            | (TQ_PREDICT if self._predict else 0)
        )
        self._n = -1
        self._last: tuple[State, int, Decision] | None = None  # (view, snapshot, answer)

    def params(self) -> dict[str, object]:
        return {
            "thresholds": self.thresholds,
            "promote_knob": self.promote_knob,
            "timing": self.timing,
            "rewalk": self.rewalk,
        }

    def reset(self, rng: np.random.Generator) -> None:
        self._n = -1
        self._last = None
        self._queues: list[list[int]] = [[] for _ in range(len(self.thresholds) + 1)]
        self._queued: dict[int, int] = {}

    def _rewalk(self, state: State) -> Decision:
        """Pollux's simulator's Tiresias (``rewalk``): new jobs join the back of queue 0 in
        submit order; a job whose attained service has reached its queue's threshold moves
        to the back of the next queue (in submit order among those moving at once); then
        the queues are walked from the first, each in its own order, and a job runs when
        its gang still fits in the devices left by the jobs before it (backfilling: one
        that does not fit is skipped). Running jobs of the result come first (they keep
        their devices), then the starts, in walking order."""
        if not hasattr(self, "_queues"):
            self.reset(np.random.default_rng(0))
        active = state.active
        alive = set(active.tolist())
        queues = [[j for j in q if j in alive] for q in self._queues]
        where = {j: k for k, q in enumerate(queues) for j in q}
        for j in active.tolist():
            if j not in where:
                queues[0].append(j)
                where[j] = 0
        attained = state.attained
        for k, thr in enumerate(self.thresholds):
            down = [j for j in sorted(queues[k]) if attained[j] >= thr - 1e-9]
            if down:
                moved = set(down)
                queues[k] = [j for j in queues[k] if j not in moved]
                queues[k + 1].extend(down)
        self._queues = queues
        left = int(state.capacity.sum())
        gangs = state.jobs.num_gpus
        run = []
        for q in queues:
            for j in q:
                if state.rate[j].max() > 0 and gangs[j] <= left:
                    run.append(j)
                    left -= int(gangs[j])
        out = np.array(run, dtype=np.int64)
        keep = state.running[out] if len(out) else np.zeros(0, dtype=bool)
        return Decision(run=np.concatenate([out[keep], out[~keep]]))

    def _allocate(self, n: int, n_types: int) -> None:
        nq = len(self._thr) + 1
        self._n = n
        self._mem = np.zeros((8, n), dtype=np.int64)
        self._mem[TQ_QID] = TIRESIAS_UNSEEN
        self._mem[TQ_NXT] = -1
        self._mem[TQ_PRV] = -1
        self._order = self._mem[TQ_ORDER]
        self._ends = np.full(4 * nq + 3 + n_types, -1, dtype=np.int64)
        self._ends[4 * nq : 4 * nq + 2] = 0  # lowest and highest position given
        self._fmem = np.zeros((2, n))
        self._now = 0.0

    def schedule(self, state: State) -> Decision:
        if self.rewalk:
            return self._rewalk(state)
        last = self._last
        if last is not None and last[0] is state and last[1] == state.snapshot:
            return last[2]
        jobs, now = state.jobs, float(state.now)
        if self._n != len(jobs.submit_time):
            self._allocate(len(jobs.submit_time), len(state.capacity))
        elapsed = now - self._now if self._now <= now else 0.0
        self._now = now
        k, wake = tiresias_order(
            state.running_jobs(),
            state.is_active,
            state.running,
            state.attained,
            jobs.num_gpus,
            jobs.submit_time,
            state.rate,
            state.alloc_type,
            state.capacity,
            now,
            elapsed,
            self._thr,
            self._knob,
            self._flags,
            self._mem,
            self._ends,
            self._fmem,
        )
        d = Decision(
            run=self._order[:k].copy(),
            wake_at=float(wake) if self._predict and wake < np.inf else None,
        )
        self._last = (state, state.snapshot, d)
        return d
