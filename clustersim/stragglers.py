"""Stragglers: slow nodes that drag synchronous gangs to their pace (DESIGN §3.3).

A physical model the engine calls through a small interface, like node failures
(:mod:`clustersim.failures`); ``docs/failures.md`` ("Stragglers") is the user-facing account.

The model
---------
* **Some nodes are slow.** A share of the cluster's nodes (``StragglerOptions.share``),
  drawn once per run from the seed, or the nodes a user lists, run at ``speed`` (0 < speed
  <= 1) of their normal pace for the whole run.
* **A gang runs at the pace of its slowest member.** Data-parallel training is synchronous:
  each step waits for the all-reduce, which waits for the slowest worker. A job whose
  placement touches a slow node progresses at ``speed`` × its rate for as long as it holds
  that placement; a job on fast nodes only is unaffected.
* **Mitigation: avoid slow nodes** (``avoid=True``). The placement strategy is asked for
  the job's devices among the fast nodes first, and only when they cannot hold the gang
  among all the candidates (**assumption**: a slow node is better than waiting; operators
  in the sources below drain a slow node and restart on healthy ones, which this
  approximates at placement time, without moving jobs already running).

Sources
-------
* Dubey et al., "The Llama 3 Herd of Models" (Meta, 2024, arXiv:2407.21783), §3.3.4: a
  single slow straggler can hold back thousands of other GPUs of a synchronous job, and Meta
  built tooling to find and remove slow nodes. The gang-at-the-slowest-member rule is that
  mechanism.
* Wu et al., "FALCON: Pinpointing and Mitigating Stragglers for Large-Scale Hybrid-Parallel
  Training" (arXiv:2410.12588, 2024): stragglers in a production cluster, their slowdown of
  whole hybrid-parallel jobs, and mitigations that move work off the slow nodes (the
  ``avoid`` option is the placement-time version of that).
* Hu et al., "Characterization of Large Language Model Development in the Datacenter"
  (NSDI 2024, the "Acme" traces of Shanghai AI Lab): faulty and slow nodes among the main
  causes of lost time in LLM pre-training.

No default share or speed is claimed from these: the user states them (e.g. ``share=0.05,
speed=0.7``). **Assumptions**: slowness is per node, constant over the run and independent
between nodes; every device of a slow node is slow; the whole gang slows (no
straggler-tolerant training, no asynchronous jobs); a single-node job on a slow node slows
too.

Randomness: the slow nodes are the first ``round(share × n_nodes)`` of a permutation drawn
from ``default_rng(SeedSequence(seed, spawn_key=(3,)))`` (children 0, 1 of
``SeedSequence(seed)`` are the policy's and placement's, ``(2, r)`` the failures'), so they
depend on the seed and the number of nodes only: the same for every policy of a comparison.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
import numpy.typing as npt

from clustersim.cluster import Cluster
from clustersim.errors import ClustersimError, SimulationError
from clustersim.kernels import JB_RUNNING, JF_CRATE, JF_LAST_START, JI_ALLOC_N, JI_PLACED, JI_SLOT
from scheduling.base import Placement

if TYPE_CHECKING:
    from clustersim.result import RunResult
    from scheduling.base import Decision

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

#: Spawn key of the slow-node draw under ``SeedSequence(seed)`` (0: policy, 1: placement,
#: (2, r): failures).
SEED_CHILD = 3

_EMPTY_I = np.zeros(0, dtype=np.int64)


@dataclass(frozen=True)
class StragglerOptions:
    """Turns slow nodes on for a run (``EngineOptions.stragglers``).

    Attributes
    ----------
    share
        Share of the nodes that are slow, 0..1 (``round(share × n_nodes)`` nodes, drawn from
        the seed). Ignored when ``nodes`` is given.
    speed
        Pace of a slow node relative to its normal one, 0 < speed <= 1.
    avoid
        Mitigation: place jobs on fast nodes when they can hold the gang.
    nodes
        The slow nodes by index instead of a draw (e.g. those a health check flagged).
    """

    share: float = 0.0
    speed: float = 0.5
    avoid: bool = False
    nodes: Sequence[int] | None = None

    @property
    def draws(self) -> bool:
        """Whether the slow nodes are drawn at random (so the seed matters)."""
        return self.nodes is None and 0.0 < self.share < 1.0

    def checked(self) -> StragglerOptions:
        """These options, validated.

        Raises
        ------
        ClustersimError
            Naming the field: ``share`` not in [0, 1], ``speed`` not in (0, 1], a node
            index that is not a non-negative integer.
        """
        share, speed = self.share, self.speed
        if isinstance(share, bool) or not isinstance(share, int | float):
            raise ClustersimError(f"stragglers.share: must be a number, not {share!r}")
        if not (math.isfinite(share) and 0.0 <= share <= 1.0):
            raise ClustersimError(f"stragglers.share: must be between 0 and 1, not {share:g}")
        if isinstance(speed, bool) or not isinstance(speed, int | float):
            raise ClustersimError(f"stragglers.speed: must be a number, not {speed!r}")
        if not (math.isfinite(speed) and 0.0 < speed <= 1.0):
            raise ClustersimError(f"stragglers.speed: must be > 0 and <= 1, not {speed:g}")
        if self.nodes is not None:
            for i, node in enumerate(self.nodes):
                if isinstance(node, bool) or not isinstance(node, int | np.integer) or node < 0:
                    raise ClustersimError(f"stragglers.nodes[{i}]: want a node index, not {node!r}")
        return self


def slow_nodes(n_nodes: int, options: StragglerOptions, seed: int) -> IntArray:
    """The slow nodes of a run, ascending (module doc: the draw).

    Raises
    ------
    ClustersimError
        For invalid options (:meth:`StragglerOptions.checked`) or a listed node the cluster
        does not have.
    """
    options.checked()
    if options.nodes is not None:
        nodes = np.unique(np.asarray(list(options.nodes), dtype=np.int64))
        if len(nodes) and nodes[-1] >= n_nodes:
            raise ClustersimError(
                f"stragglers.nodes: no node {int(nodes[-1])} (the cluster has {n_nodes})"
            )
        return nodes
    k = round(options.share * n_nodes)
    if k == 0:
        return _EMPTY_I.copy()
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(SEED_CHILD,)))
    return np.sort(rng.permutation(n_nodes)[:k]).astype(np.int64)


class AvoidSlow(Placement):
    """A placement strategy that keeps gangs off slow nodes when the fast ones can hold them.

    The wrapped strategy chooses among the fast candidates first, and among all of them
    only when those cannot hold the gang (or it declines there). It makes none of the
    fast-path promises (the engine calls :meth:`place` for every gang).
    """

    def __init__(self, inner: Placement, slow: BoolArray) -> None:
        self.inner = inner
        self.slow = slow
        self.name = f"{inner.name}+avoid-slow"  # type: ignore[misc]
        self.may_decline = inner.may_decline  # type: ignore[misc]
        self.uses_seed = inner.uses_seed  # type: ignore[misc]

    def reset(self, rng: np.random.Generator) -> None:
        self.inner.reset(rng)

    def bind_resources(self, aux: Any) -> None:
        self.inner.bind_resources(aux)

    def place(
        self, cluster: Cluster, free: IntArray, candidates: IntArray, ndev: int
    ) -> tuple[IntArray, IntArray] | None:
        fast = candidates[~self.slow[candidates]]
        if len(fast) < len(candidates):
            got = self.inner.place(cluster, free, fast, ndev)
            if got is not None:
                return got
        return self.inner.place(cluster, free, candidates, ndev)


class EngineView(Protocol):
    """The parts of the engine's state :class:`SlowNodes` works on (``clustersim.engine``)."""

    now: float
    jf: FloatArray
    ji: IntArray
    jb: BoolArray
    slots: IntArray


@dataclass(eq=False)
class StragglerRecord:
    """What slow nodes did in one run (``RunResult.stragglers``).

    Attributes
    ----------
    slow : (s,) int64
        The slow nodes.
    speed : float
        Their pace.
    job, start, factor : (k,) int64, float64, float64
        Each start of a job on a placement with a slow node: the job, when, and the pace
        it ran at (``speed``).
    """

    slow: IntArray
    speed: float
    job: IntArray = field(default_factory=lambda: _EMPTY_I)
    start: FloatArray = field(default_factory=lambda: np.zeros(0))
    factor: FloatArray = field(default_factory=lambda: np.zeros(0))


class SlowNodes:
    """The engine's straggler mechanism (module doc).

    Engine calls: :meth:`placement` once before the run (the mitigation's wrapper),
    :meth:`after_decision` after each decision is applied, :meth:`record` at the end.
    """

    def __init__(self, cluster: Cluster, options: StragglerOptions, seed: int) -> None:
        self.options = options.checked()
        self.nodes = slow_nodes(cluster.n_nodes, options, seed)
        self.is_slow = np.zeros(cluster.n_nodes, dtype=bool)
        self.is_slow[self.nodes] = True
        self.speed = float(options.speed)
        self._log: list[tuple[int, float, float]] = []

    def placement(self, placement: Placement) -> Placement:
        """The run's placement strategy: wrapped by :class:`AvoidSlow` with ``avoid``."""
        if self.options.avoid and len(self.nodes):
            return AvoidSlow(placement, self.is_slow)
        return placement

    def after_decision(self, eng: EngineView, d: Decision) -> None:
        """Slow the jobs that just started on a placement touching a slow node to ``speed``
        of their rate (the gang's pace is its slowest member's)."""
        if self.speed == 1.0 or not len(self.nodes):
            return
        run = np.asarray(d.run, dtype=np.int64)
        if not len(run):
            return
        ji, jf = eng.ji, eng.jf
        started = run[
            eng.jb[JB_RUNNING, run]
            & (jf[JF_LAST_START, run] == eng.now)
            & (ji[JI_ALLOC_N, run] > 0)
        ]
        if not len(started):
            return
        placed = ji[JI_PLACED, started]
        first = ji[JI_SLOT, started]  # the job's placement rows, as clustersim.failures reads
        rows = np.repeat(first - np.cumsum(placed) + placed, placed) + np.arange(placed.sum())
        touched = np.zeros(len(started), dtype=bool)
        owner = np.repeat(np.arange(len(started)), placed)
        np.logical_or.at(touched, owner, self.is_slow[eng.slots[0, rows]])
        js = started[touched]
        if not len(js):
            return
        from clustersim.colocation import rerate

        rerate(eng, js, jf[JF_CRATE, js] * self.speed)  # type: ignore[arg-type]
        now = float(eng.now)
        self._log.extend((j, now, self.speed) for j in js.tolist())

    def record(self) -> StragglerRecord:
        """What slow nodes did, for ``RunResult.stragglers``."""
        arr = np.array(self._log, dtype=np.float64).reshape(-1, 3)
        return StragglerRecord(
            slow=self.nodes.copy(),
            speed=self.speed,
            job=arr[:, 0].astype(np.int64),
            start=arr[:, 1].copy(),
            factor=arr[:, 2].copy(),
        )


def check_engine(coloc: bool, power: bool, whole_steps: bool) -> None:
    """Refuse what the straggler model does not combine with (a ``SimulationError``)."""
    for on, what in (
        (coloc, "co-location"),
        (power, "the power model"),
        (whole_steps, "whole-step rounds (--compat gavel)"),
    ):
        if on:
            raise SimulationError(f"stragglers and {what} cannot be combined yet")


def summary(result: RunResult) -> dict[str, float | int]:
    """The straggler metrics of a run with stragglers on (definitions: ``docs/failures.md``).

    Returns
    -------
    dict
        ``slow_nodes``, ``jobs_slowed`` (jobs that ran at least once on a slow node) and
        ``straggler_device_hours``: the device time lost to the slow pace, Σ over those
        stints of devices × length × (1 − pace).
    """
    rec = result.stragglers
    if rec is None:
        return {}
    st = result.stints
    lost = 0.0
    if len(rec.job) and len(st.job):
        pace = {
            (int(j), float(s)): float(f)
            for j, s, f in zip(rec.job, rec.start, rec.factor, strict=True)
        }
        span = (st.end - st.start) * st.devices
        for i in range(len(st.job)):
            f = pace.get((int(st.job[i]), float(st.start[i])))
            if f is not None:
                lost += float(span[i]) * (1.0 - f)
    return {
        "slow_nodes": len(rec.slow),
        "jobs_slowed": len(np.unique(rec.job)),
        "straggler_device_hours": lost / 3600.0,
    }


#: The straggler settings of a scenario as plain values (an experiment's ``stragglers``
#: object, the CLI's ``--slow-share``, ``--slow-speed``, ``--avoid-slow``).
SETTINGS = ("share", "speed", "avoid")


def check_settings(settings: object, where: str = "stragglers") -> dict[str, float | bool]:
    """The straggler settings of a scenario, validated, with the defaults filled in.

    ``settings`` is a mapping of :data:`SETTINGS`' keys: ``share`` (required, 0..1),
    ``speed`` (0 < speed <= 1, default 0.5, as the CLI's) and ``avoid`` (a boolean, default
    ``False``); the same rules as :meth:`StragglerOptions.checked`. Slow nodes by index are
    not a setting: a scenario may run on several clusters.

    Raises
    ------
    ClustersimError
        Naming the key as ``<where>.<key>``: an unknown or missing key, a value of the wrong
        type or out of range.
    """
    if not isinstance(settings, dict):
        raise ClustersimError(f"{where}: want an object of straggler settings")
    for key in settings:
        if key not in SETTINGS:
            raise ClustersimError(f"{where}.{key}: unknown setting (known: {list(SETTINGS)})")
    if settings.get("share") is None:
        raise ClustersimError(f"{where}.share: required (the share of slow nodes, 0..1)")
    avoid = settings.get("avoid", False)
    if not isinstance(avoid, bool):
        raise ClustersimError(f"{where}.avoid: must be true or false, not {avoid!r}")
    speed = settings.get("speed", 0.5)
    options = StragglerOptions(share=settings["share"], speed=speed, avoid=avoid)
    try:
        options.checked()
    except ClustersimError as exc:
        raise ClustersimError(str(exc).replace("stragglers.", f"{where}.", 1)) from None
    return {"share": float(options.share), "speed": float(options.speed), "avoid": avoid}


def from_settings(settings: object) -> StragglerOptions:
    """The run's :class:`StragglerOptions` from a scenario's straggler settings
    (:func:`check_settings`)."""
    s = check_settings(settings)
    return StragglerOptions(
        share=float(s["share"]), speed=float(s["speed"]), avoid=bool(s["avoid"])
    )
