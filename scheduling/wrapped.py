"""The shared shape of the power policies: a wrapper around a base policy of the registry.

``power-down``, ``power-cap`` and ``energy-aware`` (:mod:`scheduling.power_down`,
:mod:`scheduling.power_cap`, :mod:`scheduling.energy_aware`) each take the name of a base
policy (``base``, built with its defaults), let it decide, and then shape its decision and
declare what they need of the power model (:mod:`clustersim.power`, ``Policy.power``). The
base's stages (admission, rounds, service marks, preemption) are the wrapper's.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
import numpy.typing as npt

from scheduling.base import Decision, Policy, State

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]


def build_base(base: str, wrapper: str) -> Policy:
    """The base policy registered as ``base`` (defaults), or ``ValueError`` naming
    ``base``: unknown, itself a power policy, or one that co-locates jobs (which the power
    model does not support)."""
    from scheduling.registry import POLICIES

    cls = POLICIES.get(base)
    if cls is None:
        raise ValueError(f"base: unknown policy {base!r}; known: {', '.join(sorted(POLICIES))}")
    if issubclass(cls, PowerWrapper):
        raise ValueError(f"base: {base} is a power policy itself; {wrapper} wraps another one")
    if cls.colocates:
        raise ValueError(f"base: {base} co-locates jobs, which the power model does not support")
    return cls()


class PowerWrapper(Policy):
    """A policy that runs ``base`` and shapes its decisions (subclasses: :meth:`shape`)."""

    wraps: ClassVar[bool] = True

    def __init__(self, base: str = "fifo") -> None:
        self.base = base
        self._inner = build_base(base, self.name)
        inner = self._inner
        self.preemptive = inner.preemptive  # type: ignore[misc]
        self.blocking = inner.blocking
        self.round_s = inner.round_s
        self.rounds_only = inner.rounds_only  # type: ignore[misc]
        self.service_marks = inner.service_marks
        self.uses_seed = inner.uses_seed  # type: ignore[misc]
        self.resume_s = inner.resume_s
        self.compiled_kernels = inner.compiled_kernels

    def params(self) -> dict[str, object]:
        keep = ("preemptive", "blocking", "round_s", "rounds_only", "service_marks", "uses_seed")
        skip = {*keep, "resume_s", "compiled_kernels", "power"}
        return {k: v for k, v in super().params().items() if k not in skip}

    def reset(self, rng: np.random.Generator) -> None:
        self._inner.reset(rng)

    def admit(self, state: State, arriving: IntArray) -> BoolArray:
        return self._inner.admit(state, arriving)

    def stats(self) -> dict[str, float]:
        return self._inner.stats()

    def schedule(self, state: State) -> Decision:
        d = self._inner.schedule(state)
        if d.fractions is not None:
            from clustersim.rounds import realise_fractions

            d = realise_fractions(state, d.fractions)
        return self.shape(state, d)

    def shape(self, state: State, d: Decision) -> Decision:
        """The wrapper's change to the base's decision (``fractions`` already realised)."""
        return d


def gang_of(state: State, d: Decision) -> IntArray:
    """(m,) devices each job of ``d.run`` asks for."""
    run = np.asarray(d.run, dtype=np.int64)
    if d.ndev is not None:
        return np.asarray(d.ndev, dtype=np.int64)
    return np.asarray(state.jobs.num_gpus[run], dtype=np.int64)


def usable_now(state: State) -> IntArray:
    """(n_types,) devices each type has on now: free plus held by running jobs."""
    r = state.running_jobs()
    held = np.bincount(
        state.alloc_type[r], weights=state.alloc_n[r], minlength=len(state.free)
    ).astype(np.int64)
    return np.asarray(state.free + held, dtype=np.int64)


def fastest_fitting(rate: npt.NDArray[np.float64], free: IntArray, n: int) -> int:
    """The type with at least ``n`` free devices on which ``rate`` is highest (lowest index
    on ties), else the fastest type overall (the job waits for it); -1 if none runs it."""
    ok = (rate > 0) & (free >= n)
    if ok.any():
        return int(np.argmax(np.where(ok, rate, -1.0)))
    return int(np.argmax(rate)) if (rate > 0).any() else -1
