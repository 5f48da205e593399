"""The shared shape of the carbon-aware policies: a wrapper around a base policy.

``carbon-wait``, ``carbon-suspend`` (temporal shifting) and ``carbon-region`` (spatial
shifting) each take the name of a base policy (``base``, built with its defaults), let it
decide, and shift its decision by a carbon-intensity forecast
(:class:`clustersim.forecast.CarbonForecast`: the real hourly series of each region, with a
seeded error growing with lead time, ``forecast_error``). See ``docs/carbon.md``.

Deferrable jobs: a share ``deferrable_share`` of the jobs, chosen by a fixed low-discrepancy
rule on the job's index (job ``j`` is deferrable when ``frac((j + 1) × 0.618…) <
deferrable_share``), so the choice is deterministic, evenly spread over the trace and the
same for every policy and seed; a job with a ``deadline`` keeps it as its bound.
"""

from __future__ import annotations

import heapq
import math
from typing import ClassVar

import numpy as np
import numpy.typing as npt

from clustersim.forecast import CarbonForecast, region_series
from scheduling.base import Decision, Policy, State

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
FloatArray = npt.NDArray[np.float64]

HOUR_S = 3600.0
_GOLDEN = (math.sqrt(5.0) - 1.0) / 2.0


def deferrable_mask(idx: IntArray, share: float) -> BoolArray:
    """(k,) which jobs of global indices ``idx`` are deferrable at ``share`` (0..1)."""
    x = (np.asarray(idx, dtype=np.float64) + 1.0) * _GOLDEN
    return np.asarray((x - np.floor(x)) < share, dtype=bool)


def build_carbon_base(base: str, wrapper: str) -> Policy:
    """The base policy registered as ``base`` (defaults), or ``ValueError`` naming ``base``:
    unknown, itself a wrapper (power or carbon), or one that co-locates jobs."""
    from scheduling.registry import POLICIES

    cls = POLICIES.get(base)
    if cls is None:
        raise ValueError(f"base: unknown policy {base!r}; known: {', '.join(sorted(POLICIES))}")
    if getattr(cls, "wraps", False):
        raise ValueError(f"base: {base} wraps another policy itself; {wrapper} needs a plain one")
    if cls.colocates:
        raise ValueError(f"base: {base} co-locates jobs, which {wrapper} does not support")
    return cls()


class _HiddenView(State):
    """The state a base policy sees with some jobs hidden (held by the carbon wrapper):
    they are not active, and the devices of hidden running jobs count as free (they are
    about to be suspended). Shares every array with the engine's view; read only."""

    def __init__(self, state: State, hidden: BoolArray) -> None:
        self.__dict__.update(state.__dict__)
        active = state.active
        self._active = active[~hidden[active]]
        self._hidden = hidden
        run = state.running_jobs()
        gone = run[hidden[run]]
        if len(gone):
            self.free = state.free + np.bincount(
                state.alloc_type[gone], weights=state.alloc_n[gone], minlength=len(state.free)
            ).astype(np.int64)
            self.n_running = state.n_running - len(gone)

    @property
    def is_active(self) -> BoolArray:
        mask = np.zeros(len(self.running), dtype=bool)
        mask[self.active] = True
        return mask

    def running_jobs(self) -> IntArray:
        a = self.active
        r = a[self.running[a]]
        r.flags.writeable = False
        return r

    def queued(self, limit: int | None = None) -> IntArray:
        a = self.active
        q = a[~self.running[a]]
        return q if limit is None else q[:limit]


class CarbonWrapper(Policy):
    """A policy that runs ``base`` and shifts its decisions by a carbon forecast."""

    wraps: ClassVar[bool] = True
    uses_seed: ClassVar[bool] = True  # the forecast error is drawn from the run's seed

    def __init__(self, base: str = "fifo", forecast_error: float = 0.1) -> None:
        if not forecast_error >= 0:
            raise ValueError(f"forecast_error: must be zero or positive, got {forecast_error!r}")
        self.base = base
        self.forecast_error = float(forecast_error)
        self._inner = build_carbon_base(base, self.name)
        inner = self._inner
        self.blocking = inner.blocking
        self.round_s = inner.round_s
        self.rounds_only = inner.rounds_only  # type: ignore[misc]
        self.service_marks = inner.service_marks
        self.uses_seed = inner.uses_seed or self.forecast_error > 0  # type: ignore[misc]
        self.resume_s = inner.resume_s
        self.compiled_kernels = inner.compiled_kernels
        self._rng: np.random.Generator | None = None
        self._forecast: CarbonForecast | None = None
        self._forecast_key: tuple[int, str] | None = None

    def _set_shifting(
        self,
        deferrable_share: float,
        slack_s: float,
        threshold_quantile: float,
        threshold_g_per_kwh: float | None,
    ) -> None:
        """Check and keep the parameters of the temporal policies (``carbon-wait``,
        ``carbon-suspend``): which jobs may wait, for how long, and below what intensity."""
        if deferrable_share > 1:
            raise ValueError(f"deferrable_share: must be at most 1, got {deferrable_share!r}")
        if threshold_quantile > 1:
            raise ValueError(f"threshold_quantile: must be at most 1, got {threshold_quantile!r}")
        self.deferrable_share = float(deferrable_share)
        self.slack_s = float(slack_s)
        self.threshold_quantile = float(threshold_quantile)
        self.threshold_g_per_kwh = (
            None if threshold_g_per_kwh is None else float(threshold_g_per_kwh)
        )

    def params(self) -> dict[str, object]:
        keep = ("preemptive", "blocking", "round_s", "rounds_only", "service_marks", "uses_seed")
        skip = {*keep, "resume_s", "compiled_kernels", "power"}
        return {k: v for k, v in super().params().items() if k not in skip}

    def reset(self, rng: np.random.Generator) -> None:
        # the base draws from ``rng`` exactly as it would alone; the forecast error from a
        # child of the same seed sequence (spawning does not advance ``rng``)
        self._inner.reset(rng)
        seq = rng.bit_generator.seed_seq
        assert isinstance(seq, np.random.SeedSequence)
        self._rng = np.random.default_rng(seq.spawn(1)[0])
        self._forecast = None
        self._forecast_key = None

    def stats(self) -> dict[str, float]:
        return self._inner.stats()

    def forecast(self, state: State) -> CarbonForecast:
        """The run's forecast (built on first use from the cluster and ``carbon_start``)."""
        key = (id(state.cluster), state.carbon_start)
        if self._forecast is None or self._forecast_key != key:
            rng = self._rng if self._rng is not None else np.random.default_rng(0)
            self._forecast = CarbonForecast(
                region_series(state.cluster, state.carbon_start), self.forecast_error, rng
            )
            self._forecast_key = key
        return self._forecast

    @staticmethod
    def region_weights(state: State) -> FloatArray:
        """(n_regions,) share of the cluster's devices in each region."""
        cl = state.cluster
        w = np.bincount(cl.node_region, weights=cl.node_devices, minlength=len(cl.regions))
        total = w.sum()
        return w / total if total > 0 else np.full(len(cl.regions), 1.0 / len(cl.regions))

    def cluster_forecast(self, state: State, hours: int) -> FloatArray:
        """(hours,) device-weighted mean forecast intensity of the cluster's regions, issued
        now, for the hours from the one in force on."""
        f = self.forecast(state).hourly(state.now, hours)
        return np.asarray(self.region_weights(state) @ f, dtype=np.float64)

    def base_decision(self, state: State) -> Decision:
        """The base's decision (``fractions`` realised)."""
        d = self._inner.schedule(state)
        if d.fractions is not None:
            from clustersim.rounds import realise_fractions

            d = realise_fractions(state, d.fractions)
        return d


def keep(
    d: Decision, mask: BoolArray, wake_at: float | None, region: IntArray | None = None
) -> Decision:
    """``d`` restricted to the jobs of ``d.run`` where ``mask`` holds (the per-job arrays
    follow), waking at ``wake_at``, with ``region`` (already restricted) if given."""
    return Decision(
        run=np.asarray(d.run, dtype=np.int64)[mask],
        types=None if d.types is None else np.asarray(d.types)[mask],
        ndev=None if d.ndev is None else np.asarray(d.ndev)[mask],
        wake_at=wake_at,
        drop=d.drop,
        migrate=d.migrate,
        power_cap=None if d.power_cap is None else np.asarray(d.power_cap)[mask],
        region=region,
    )


def earliest(a: float | None, b: float | None) -> float | None:
    """The earlier of two optional wake-up times."""
    if a is None:
        return b
    return a if b is None else min(a, b)


class WakeHeap:
    """Release times still ahead, smallest first (entries at or before ``now`` dropped on
    the way, which cannot change any later answer since time only moves forward)."""

    def __init__(self) -> None:
        self._h: list[float] = []

    def push(self, times: FloatArray) -> None:
        for t in times.tolist():
            heapq.heappush(self._h, t)

    def next_after(self, now: float) -> float | None:
        h = self._h
        while h and h[0] <= now:
            heapq.heappop(h)
        return h[0] if h else None
