"""Synthetic workloads: arrival processes, job-size and duration models, and a generator.

>>> model = gavel_model()                                  # Gavel OSDI'20 §7
>>> jobs = generate(model, n_jobs=500, seed=1)
>>> fitted = fit_workload(jobs)                            # or fit any trace's JobTable
>>> more = generate(fitted, duration_s=7 * 86400, seed=2)

A :class:`WorkloadModel` describes one job population by four independent parts:

Gang sizes
    An empirical distribution over sizes (``sizes``, ``size_probs``).
Durations
    One :class:`DurationDist` per *size bucket* (``bucket_bounds``: ascending inclusive upper
    bounds on ``num_gpus``). Durations are *reference seconds*: the wall-clock time of the
    whole gang on the performance model's reference type (P100), i.e. the ``work`` of a job
    without a job type (see :mod:`clustersim.jobs`).
Job types
    ``None`` (jobs stay generic, ``work`` in reference seconds) or ``{job type: weight}``;
    a share ``typed_fraction`` of the jobs draws its type independently of its duration,
    multi-GPU jobs only among types that can be distributed, and its work is converted to
    training steps so that it runs exactly its drawn duration on the reference type
    (:func:`clustersim.jobtypes.assign_job_types`, rule ``"uniform"``).
Arrivals
    An :class:`ArrivalProcess`: homogeneous Poisson, or a diurnal non-homogeneous Poisson
    process (sinusoidal or an hourly profile) sampled by thinning.

Where models come from
----------------------
:func:`gavel_model`
    Gavel's trace generator (Narayanan et al., "Heterogeneity-Aware Cluster Scheduling
    Policies for Deep Learning Workloads", OSDI'20, §7; ``_generate_duration``,
    ``_generate_scale_factor`` and ``generate_job`` in ``scheduler/utils.py`` of
    github.com/stanford-futuredata/gavel): durations ``10^x`` minutes with ``x`` uniform in
    [1.5, 3] with probability 0.8 and in [3, 4] with probability 0.2 (32 min to 6.9 days);
    gang sizes 1 (70 %), 2 (10 %), 4 (15 %), 8 (5 %) for multi-GPU traces, else 1; job types
    uniform over the 26 job types of Gavel's throughput table, re-drawn for multi-GPU jobs
    until the type can be distributed; Poisson arrivals. Two deliberate differences: Gavel
    turns durations into steps with the throughput on its reference worker (V100), we use
    ours (P100, as :mod:`clustersim.jobtypes` does), so a job's duration on P100 is the drawn
    one; and Gavel's first job arrives at 0, ours after a first exponential gap (a Poisson
    process started at 0).
:func:`fit_workload`
    Fitted to a :class:`~clustersim.jobs.JobTable` (an uploaded trace): the empirical size
    distribution; per size bucket (:data:`DEFAULT_SIZE_BUCKETS`) a log-normal (maximum
    likelihood: mean and standard deviation of ``ln`` duration) or the empirical distribution
    (inverse CDF interpolated log-linearly between order statistics, so draws stay within the
    observed range; at most :data:`MAX_QUANTILES` stored quantiles); buckets with fewer than
    ``min_bucket_jobs`` jobs use the fit of all jobs; the trace's job-type mix (if it has job
    types); Poisson arrivals at the trace's mean rate, or with ``diurnal=True`` an hourly
    profile of the submissions' hour of day.

Randomness
----------
``generate(..., seed=s)`` draws everything from ``numpy.random.SeedSequence(s)``: its spawned
children feed the arrivals, the sizes, the durations and the typed/untyped split (in that
order), and :func:`~clustersim.jobtypes.assign_job_types` draws the job types from the root
sequence itself. The same model and seed give the same table in any process.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import numpy as np
import numpy.typing as npt

from clustersim.errors import ClustersimError
from clustersim.jobs import JobTable
from clustersim.perf import (
    REFERENCE_INTRA_GBS,
    REFERENCE_NETWORK_GBS,
    REFERENCE_NODE_DEVICES,
    REFERENCE_TYPE,
    PerformanceModel,
    ThroughputTable,
)

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

#: Default inclusive upper bounds of the size buckets of :func:`fit_workload` (GPUs); a last
#: bucket up to the largest gang is added when the trace has larger ones.
DEFAULT_SIZE_BUCKETS: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 64)
#: Most quantiles an empirical duration distribution stores.
MAX_QUANTILES = 2001
#: Most jobs one call of :func:`generate` may produce (guards the web API).
MAX_JOBS = 10_000_000
#: Gavel's gang-size mix for multi-GPU traces (``_generate_scale_factor``).
GAVEL_SIZES: tuple[int, ...] = (1, 2, 4, 8)
GAVEL_SIZE_PROBS: tuple[float, ...] = (0.7, 0.1, 0.15, 0.05)
#: Gavel's duration mixture (``_generate_duration``): (weight, low, high) of log10 minutes.
GAVEL_DURATION_LOG10_MIN: tuple[tuple[float, float, float], ...] = (
    (0.8, 1.5, 3.0),
    (0.2, 3.0, 4.0),
)
#: Mean arrival rate of Gavel's published synthetic traces (``lam`` = 900 s between jobs).
GAVEL_RATE_PER_HOUR = 4.0

ARRIVAL_KINDS: tuple[str, ...] = ("poisson", "diurnal")
DURATION_KINDS: tuple[str, ...] = ("lognormal", "empirical", "log10_uniform_mix")

_LOG10_60 = math.log10(60.0)


# --------------------------------------------------------------------------------------------
# Arrivals


@dataclass(frozen=True)
class ArrivalProcess:
    """When jobs arrive: a (possibly time-varying) Poisson process started at ``t = 0``.

    Parameters
    ----------
    kind
        ``"poisson"`` (constant rate) or ``"diurnal"``.
    rate_per_hour
        Mean arrival rate (jobs per hour, averaged over a day for diurnal processes).
    amplitude
        Diurnal, sinusoidal shape: rate(t) = ``rate × (1 + amplitude × cos(2π (h − peak_hour)
        / 24))`` at hour of day ``h``; in [0, 1].
    peak_hour
        Hour of day (0–24) of the sinusoid's maximum.
    hourly
        Diurnal, profile shape instead of the sinusoid: 24 non-negative weights, one per hour
        of day (rate constant within an hour), scaled to mean 1.
    start_hour
        Hour of day at ``t = 0`` (e.g. 9.5 when the trace starts at 09:30).

    Notes
    -----
    Diurnal arrivals are sampled by thinning (Lewis and Shedler, 1979): candidates from a
    homogeneous process at the peak rate, each kept with probability rate(t) / peak rate.
    """

    kind: str = "poisson"
    rate_per_hour: float = GAVEL_RATE_PER_HOUR
    amplitude: float = 0.5
    peak_hour: float = 14.0
    hourly: tuple[float, ...] | None = None
    start_hour: float = 0.0

    def __post_init__(self) -> None:
        if self.kind not in ARRIVAL_KINDS:
            raise ClustersimError(
                f"arrival kind {self.kind!r} unknown; choose one of {', '.join(ARRIVAL_KINDS)}"
            )
        _positive("arrival rate_per_hour", self.rate_per_hour)
        if not (math.isfinite(self.amplitude) and 0.0 <= self.amplitude <= 1.0):
            raise ClustersimError("arrival amplitude must be in [0, 1]")
        for name in ("peak_hour", "start_hour"):
            v = getattr(self, name)
            if not (math.isfinite(v) and 0.0 <= v <= 24.0):
                raise ClustersimError(f"arrival {name} must be in [0, 24]")
        if self.hourly is not None:
            h = np.asarray(self.hourly, dtype=np.float64)
            if h.shape != (24,) or not np.all(np.isfinite(h)) or (h < 0).any() or h.sum() <= 0:
                raise ClustersimError(
                    "arrival hourly profile must be 24 non-negative numbers, not all 0"
                )
            object.__setattr__(self, "hourly", tuple(float(x) for x in h))

    @classmethod
    def poisson(cls, rate_per_hour: float) -> ArrivalProcess:
        """A homogeneous Poisson process with ``rate_per_hour`` jobs per hour."""
        return cls(kind="poisson", rate_per_hour=rate_per_hour)

    @property
    def mean_interarrival_s(self) -> float:
        """Mean seconds between arrivals (over a whole day for diurnal processes)."""
        return 3600.0 / self.rate_per_hour

    def _shape(self, t: FloatArray) -> FloatArray:
        """(m,) rate multiplier at times ``t`` (mean 1 over a day)."""
        if self.kind == "poisson":
            return np.ones_like(t)
        hour = np.mod(self.start_hour + t / 3600.0, 24.0)
        if self.hourly is not None:
            prof = np.asarray(self.hourly)
            prof = prof * (24.0 / prof.sum())
            return prof[np.minimum(hour.astype(np.int64), 23)]
        return 1.0 + self.amplitude * np.cos(2.0 * np.pi * (hour - self.peak_hour) / 24.0)

    def intensity(self, t: npt.ArrayLike) -> FloatArray:
        """Arrival rate (jobs per second) at times ``t``.

        Parameters
        ----------
        t : (m,) float
            Seconds from ``t = 0``.

        Returns
        -------
        (m,) float64
        """
        tt = np.asarray(t, dtype=np.float64)
        return self._shape(tt) * (self.rate_per_hour / 3600.0)

    def _peak_shape(self) -> float:
        if self.kind == "poisson":
            return 1.0
        if self.hourly is not None:
            prof = np.asarray(self.hourly)
            return float(prof.max() * 24.0 / prof.sum())
        return 1.0 + self.amplitude

    def sample(
        self, rng: np.random.Generator, n_jobs: int | None = None, horizon_s: float | None = None
    ) -> FloatArray:
        """Arrival times of the first ``n_jobs`` arrivals, or of all before ``horizon_s``.

        With both, at most ``n_jobs`` arrivals before ``horizon_s``.

        Parameters
        ----------
        rng
            The generator to draw from.
        n_jobs, horizon_s
            Stop conditions; at least one is required.

        Returns
        -------
        (m,) float64
            Ascending arrival times in seconds, all > 0.
        """
        if n_jobs is None and horizon_s is None:
            raise ClustersimError("give n_jobs or duration_s (or both)")
        if n_jobs is not None and not 0 <= n_jobs <= MAX_JOBS:
            raise ClustersimError(f"n_jobs must be in 0..{MAX_JOBS:,}")
        need = MAX_JOBS + 1 if n_jobs is None else int(n_jobs)
        horizon = math.inf if horizon_s is None else float(horizon_s)
        lam_max = self.rate_per_hour / 3600.0 * self._peak_shape()
        accept_rate = 1.0 / self._peak_shape()
        if horizon < math.inf:
            expected = min(float(need), horizon * lam_max * accept_rate)
        else:
            expected = float(need)
        chunks: list[FloatArray] = []
        got = 0
        t0 = 0.0
        while got < need and t0 < horizon:
            batch = int(min(max(1024.0, 1.1 * (expected - got) / accept_rate + 64.0), 4e6))
            cand = t0 + np.cumsum(rng.exponential(1.0 / lam_max, batch))
            t0 = float(cand[-1])
            if self.kind != "poisson":
                keep = rng.random(batch) * lam_max < self.intensity(cand)
                cand = cand[keep]
            cand = cand[cand < horizon]
            chunks.append(cand)
            got += len(cand)
            if n_jobs is None and got > MAX_JOBS:
                raise ClustersimError(
                    f"more than {MAX_JOBS:,} arrivals: lower the rate or the duration"
                )
        times = np.concatenate(chunks) if chunks else np.zeros(0)
        return times[:need]

    def describe(self) -> str:
        """One line for reports."""
        if self.kind == "poisson":
            return f"Poisson arrivals, {self.rate_per_hour:.4g} jobs/h"
        shape = (
            "hourly profile"
            if self.hourly is not None
            else f"sinusoid, amplitude {self.amplitude:g}, peak at {self.peak_hour:g} h"
        )
        return (
            f"diurnal arrivals ({shape}), mean {self.rate_per_hour:.4g} jobs/h, "
            f"t=0 at {self.start_hour:g} h"
        )


# --------------------------------------------------------------------------------------------
# Durations


@dataclass(frozen=True, eq=False)
class DurationDist:
    """A distribution of job durations (reference seconds).

    Parameters
    ----------
    kind
        ``"lognormal"``: ``params = (mu, sigma)`` of ``ln`` seconds;
        ``"empirical"``: ``quantiles`` holds ascending durations at evenly spaced
        probabilities 0, 1/(q−1), ..., 1, sampled by log-linear interpolation;
        ``"log10_uniform_mix"``: ``params = (w1, lo1, hi1, w2, lo2, hi2, ...)``, a mixture
        of ``10^U(lo, hi)`` seconds with weights ``w``.
    params
        See ``kind``.
    quantiles : (q,) float64
        See ``kind``; empty for the other kinds.
    """

    kind: str
    params: tuple[float, ...] = ()
    quantiles: FloatArray = field(default_factory=lambda: np.zeros(0))

    def __post_init__(self) -> None:
        if self.kind not in DURATION_KINDS:
            raise ClustersimError(
                f"duration kind {self.kind!r} unknown; choose one of {', '.join(DURATION_KINDS)}"
            )
        p = tuple(float(x) for x in self.params)
        object.__setattr__(self, "params", p)
        q = np.asarray(self.quantiles, dtype=np.float64)
        object.__setattr__(self, "quantiles", q)
        if self.kind == "lognormal":
            if len(p) != 2 or not all(math.isfinite(x) for x in p) or p[1] < 0:
                raise ClustersimError("lognormal durations need params (mu, sigma >= 0)")
        elif self.kind == "empirical":
            if q.ndim != 1 or len(q) == 0 or not np.all(np.isfinite(q)) or (q <= 0).any():
                raise ClustersimError("empirical durations need positive quantiles")
            if (np.diff(q) < 0).any():
                raise ClustersimError("empirical duration quantiles must be ascending")
        else:
            if len(p) == 0 or len(p) % 3 or not all(math.isfinite(x) for x in p):
                raise ClustersimError("log10_uniform_mix needs params (weight, lo, hi) * k")
            w, lo, hi = (np.asarray(p[i::3]) for i in range(3))
            if (w < 0).any() or w.sum() <= 0 or (hi < lo).any():
                raise ClustersimError("log10_uniform_mix: weights >= 0 (not all 0), lo <= hi")

    @classmethod
    def fit(cls, durations: npt.ArrayLike, kind: str = "lognormal") -> DurationDist:
        """Fit ``kind`` (``"lognormal"`` or ``"empirical"``) to positive durations.

        Parameters
        ----------
        durations : (m,) float
            Reference seconds, all positive and finite, ``m >= 1``.
        kind
            ``"lognormal"`` (maximum likelihood) or ``"empirical"``.
        """
        d = np.asarray(durations, dtype=np.float64)
        if len(d) == 0:
            raise ClustersimError("cannot fit durations to no jobs")
        logs = np.log(d)
        if kind == "lognormal":
            return cls("lognormal", (float(logs.mean()), float(logs.std())))
        if kind != "empirical":
            raise ClustersimError(
                f"duration model {kind!r} unknown; choose 'lognormal' or 'empirical'"
            )
        if len(d) <= MAX_QUANTILES:
            return cls("empirical", quantiles=np.sort(d))
        probs = np.linspace(0.0, 1.0, MAX_QUANTILES)
        return cls("empirical", quantiles=np.exp(np.quantile(logs, probs)))

    def sample(self, rng: np.random.Generator, n: int) -> FloatArray:
        """``n`` independent durations, (n,) float64 reference seconds."""
        if self.kind == "lognormal":
            mu, sigma = self.params
            return np.exp(mu + sigma * rng.standard_normal(n))
        if self.kind == "empirical":
            q = self.quantiles
            if len(q) == 1:
                return np.full(n, q[0])
            u = rng.random(n)
            return np.exp(np.interp(u, np.linspace(0.0, 1.0, len(q)), np.log(q)))
        w, lo, hi = (np.asarray(self.params[i::3]) for i in range(3))
        comp = rng.choice(len(w), size=n, p=w / w.sum())
        return 10.0 ** rng.uniform(lo[comp], hi[comp])

    def mean_s(self) -> float:
        """The distribution's mean (reference seconds)."""
        if self.kind == "lognormal":
            mu, sigma = self.params
            return math.exp(mu + sigma * sigma / 2.0)
        if self.kind == "empirical":
            q = self.quantiles
            if len(q) == 1:
                return float(q[0])
            # mean of exp(linear) on each interval between adjacent quantiles
            a, b = np.log(q[:-1]), np.log(q[1:])
            d = b - a
            with np.errstate(divide="ignore", invalid="ignore"):
                seg = np.where(np.abs(d) > 1e-12, (np.exp(b) - np.exp(a)) / d, np.exp(a))
            return float(seg.mean())
        w, lo, hi = (np.asarray(self.params[i::3]) for i in range(3))
        ln10 = math.log(10.0)
        with np.errstate(divide="ignore", invalid="ignore"):
            m = np.where(hi > lo, (10.0**hi - 10.0**lo) / (ln10 * (hi - lo)), 10.0**lo)
        return float((w * m).sum() / w.sum())

    def describe(self) -> str:
        """One line for reports."""
        if self.kind == "lognormal":
            mu, sigma = self.params
            return f"log-normal, median {math.exp(mu):,.0f} s, sigma {sigma:.3g}"
        if self.kind == "empirical":
            q = self.quantiles
            return (
                f"empirical ({len(q)} quantiles), median {float(np.median(q)):,.0f} s, "
                f"range {q[0]:,.0f}-{q[-1]:,.0f} s"
            )
        return f"log10-uniform mixture, mean {self.mean_s():,.0f} s"

    def to_dict(self) -> dict[str, Any]:
        """JSON-compatible form."""
        out: dict[str, Any] = {"kind": self.kind}
        if self.params:
            out["params"] = list(self.params)
        if len(self.quantiles):
            out["quantiles"] = self.quantiles.tolist()
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> DurationDist:
        """Inverse of :meth:`to_dict`."""
        try:
            return cls(
                str(data["kind"]),
                tuple(data.get("params", ())),
                np.asarray(data.get("quantiles", ()), dtype=np.float64),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ClustersimError(f"bad duration distribution {dict(data)!r}: {exc}") from None


# --------------------------------------------------------------------------------------------
# The model


@dataclass(frozen=True, eq=False)
class WorkloadModel:
    """A job population (module docstring).

    Attributes
    ----------
    sizes : (k,) int64
        Gang sizes, ascending, >= 1.
    size_probs : (k,) float64
        Their probabilities (sum 1).
    bucket_bounds : (b,) int64
        Ascending inclusive upper bounds on ``num_gpus`` of the duration buckets; the last is
        at least ``sizes.max()``.
    durations : tuple of DurationDist, length b
        Duration distribution of each bucket.
    arrival : ArrivalProcess
        Default arrival process of :func:`generate`.
    job_types : dict of str to float or None
        ``{job type: weight}`` of typed jobs, ``None`` for generic jobs only.
    typed_fraction : float
        Share of jobs that draw a job type (when ``job_types`` is set).
    name, source : str
        What the model is and where it comes from.
    notes : tuple of str
        How it was built (for reports).
    """

    sizes: IntArray
    size_probs: FloatArray
    bucket_bounds: IntArray
    durations: tuple[DurationDist, ...]
    arrival: ArrivalProcess = field(default_factory=ArrivalProcess)
    job_types: Mapping[str, float] | None = None
    typed_fraction: float = 1.0
    name: str = ""
    source: str = ""
    notes: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        sizes = np.asarray(self.sizes, dtype=np.int64)
        probs = np.asarray(self.size_probs, dtype=np.float64)
        bounds = np.asarray(self.bucket_bounds, dtype=np.int64)
        if sizes.ndim != 1 or len(sizes) == 0 or probs.shape != sizes.shape:
            raise ClustersimError("workload model: sizes and size_probs must be equal, non-empty")
        if (sizes < 1).any() or (np.diff(sizes) <= 0).any():
            raise ClustersimError("workload model: sizes must be ascending integers >= 1")
        if not np.all(np.isfinite(probs)) or (probs < 0).any() or probs.sum() <= 0:
            raise ClustersimError("workload model: size_probs must be >= 0, not all 0")
        if bounds.ndim != 1 or len(bounds) == 0 or (np.diff(bounds) <= 0).any():
            raise ClustersimError("workload model: bucket_bounds must be ascending, non-empty")
        if bounds[-1] < sizes[-1]:
            raise ClustersimError("workload model: the last bucket bound is below the largest size")
        if len(self.durations) != len(bounds):
            raise ClustersimError("workload model: one duration distribution per size bucket")
        if not (math.isfinite(self.typed_fraction) and 0.0 <= self.typed_fraction <= 1.0):
            raise ClustersimError("workload model: typed_fraction must be in [0, 1]")
        if self.job_types is not None:
            jt = {str(k): float(v) for k, v in self.job_types.items()}
            if not jt or any(not (math.isfinite(v) and v > 0) for v in jt.values()):
                raise ClustersimError("workload model: job_types weights must be > 0")
            object.__setattr__(self, "job_types", jt)
        object.__setattr__(self, "sizes", sizes)
        object.__setattr__(self, "size_probs", probs / probs.sum())
        object.__setattr__(self, "bucket_bounds", bounds)
        object.__setattr__(self, "durations", tuple(self.durations))
        object.__setattr__(self, "notes", tuple(self.notes))

    def bucket_of(self, num_gpus: npt.ArrayLike) -> IntArray:
        """(m,) int64: duration bucket of each gang size (``num_gpus`` of shape (m,))."""
        return np.searchsorted(self.bucket_bounds, np.asarray(num_gpus), side="left").astype(
            np.int64
        )

    def mean_size(self) -> float:
        """Mean gang size."""
        return float((self.sizes * self.size_probs).sum())

    def describe(self) -> list[str]:
        """Lines for reports: sizes, durations per bucket, job types, arrivals, notes."""
        mix = ", ".join(
            f"{s}: {p:.1%}" for s, p in zip(self.sizes.tolist(), self.size_probs, strict=True)
        )
        lines = [f"{self.name or 'workload model'}: gang sizes {mix}"]
        lo = 1
        for b, dist in zip(self.bucket_bounds.tolist(), self.durations, strict=True):
            rng_txt = "1 GPU" if b == lo == 1 else (f"{lo} GPUs" if b == lo else f"{lo}-{b} GPUs")
            lines.append(f"  durations, {rng_txt}: {dist.describe()}")
            lo = b + 1
        if self.job_types:
            lines.append(
                f"  job types: {len(self.job_types)} types for {self.typed_fraction:.0%} of jobs"
            )
        else:
            lines.append("  job types: none (generic jobs, work in reference seconds)")
        lines.append(f"  {self.arrival.describe()}")
        if self.source:
            lines.append(f"  source: {self.source}")
        lines.extend(f"  note: {n}" for n in self.notes)
        return lines

    def to_dict(self) -> dict[str, Any]:
        """JSON-compatible form (for storing a model with a workload)."""
        arr = dataclasses.asdict(self.arrival)
        if arr["hourly"] is not None:
            arr["hourly"] = list(arr["hourly"])
        return {
            "name": self.name,
            "source": self.source,
            "sizes": self.sizes.tolist(),
            "size_probs": self.size_probs.tolist(),
            "bucket_bounds": self.bucket_bounds.tolist(),
            "durations": [d.to_dict() for d in self.durations],
            "arrival": arr,
            "job_types": None if self.job_types is None else dict(self.job_types),
            "typed_fraction": self.typed_fraction,
            "notes": list(self.notes),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> WorkloadModel:
        """Inverse of :meth:`to_dict`.

        Raises
        ------
        ClustersimError
            If a key is missing or a value is invalid.
        """
        try:
            arr = dict(data.get("arrival") or {})
            if arr.get("hourly") is not None:
                arr["hourly"] = tuple(arr["hourly"])
            return cls(
                sizes=np.asarray(data["sizes"], dtype=np.int64),
                size_probs=np.asarray(data["size_probs"], dtype=np.float64),
                bucket_bounds=np.asarray(data["bucket_bounds"], dtype=np.int64),
                durations=tuple(DurationDist.from_dict(d) for d in data["durations"]),
                arrival=ArrivalProcess(**arr),
                job_types=data.get("job_types"),
                typed_fraction=float(data.get("typed_fraction", 1.0)),
                name=str(data.get("name", "")),
                source=str(data.get("source", "")),
                notes=tuple(str(n) for n in data.get("notes", ())),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ClustersimError(f"bad workload model: {exc}") from None


def gavel_model(multi_gpu: bool = True, arrival: ArrivalProcess | None = None) -> WorkloadModel:
    """Gavel's synthetic workload (OSDI'20 §7; see the module docstring).

    Parameters
    ----------
    multi_gpu
        Gang sizes 1/2/4/8 with probabilities 0.7/0.1/0.15/0.05 (Gavel's multi-GPU traces);
        ``False``: every job uses one GPU.
    arrival
        Default: Poisson at :data:`GAVEL_RATE_PER_HOUR` (Gavel's ``lam`` = 900 s).
    """
    mix: list[float] = []
    for w, lo, hi in GAVEL_DURATION_LOG10_MIN:
        mix += [w, lo + _LOG10_60, hi + _LOG10_60]
    sizes = GAVEL_SIZES if multi_gpu else (1,)
    probs = GAVEL_SIZE_PROBS if multi_gpu else (1.0,)
    types = ThroughputTable.load(None).job_types
    return WorkloadModel(
        sizes=np.asarray(sizes, dtype=np.int64),
        size_probs=np.asarray(probs, dtype=np.float64),
        bucket_bounds=np.asarray([max(sizes)], dtype=np.int64),
        durations=(DurationDist("log10_uniform_mix", tuple(mix)),),
        arrival=arrival or ArrivalProcess.poisson(GAVEL_RATE_PER_HOUR),
        job_types=dict.fromkeys(types, 1.0),
        typed_fraction=1.0,
        name="gavel" + ("" if multi_gpu else "-single-gpu"),
        source=(
            "Gavel (Narayanan et al., OSDI'20, §7; scheduler/utils.py of "
            "stanford-futuredata/gavel): durations 10^U(1.5,3) min (p 0.8) or 10^U(3,4) min "
            "(p 0.2); sizes 1/2/4/8 with p 0.7/0.1/0.15/0.05; job types uniform"
        ),
        notes=(
            f"durations are taken as run times on {REFERENCE_TYPE} (Gavel: on V100) and "
            "converted to steps with each type's rate there",
            f"job types uniform over the {len(types)} types of Gavel's throughput table; "
            "multi-GPU jobs only among distributable types",
        ),
    )


# --------------------------------------------------------------------------------------------
# Fitting


def reference_durations(jobs: JobTable, model: PerformanceModel | None = None) -> FloatArray:
    """Run time of each job's gang on the reference type, consolidated (reference seconds).

    Generic jobs (no job type): their ``work``. Typed jobs (work in steps): ``work`` divided by
    the gang's rate on :data:`~clustersim.perf.REFERENCE_NODE_DEVICES`-device
    :data:`~clustersim.perf.REFERENCE_TYPE` nodes (as :mod:`clustersim.jobtypes` converts).

    Parameters
    ----------
    jobs
        The jobs.
    model
        Performance model; default ``PerformanceModel()``.

    Returns
    -------
    (n,) float64
        ``nan`` where the job cannot run on the reference type.
    """
    out = np.asarray(jobs.work, dtype=np.float64).copy()
    typed = np.asarray(jobs.job_type != "", dtype=bool)
    if not typed.any():
        return out
    from clustersim.spec import cluster_from_spec

    sub = jobs.take(typed)
    biggest = int(sub.num_gpus.max())
    cluster = cluster_from_spec(
        {
            "name": "reference placement",
            "pools": [
                {
                    "name": "reference",
                    "accelerator": REFERENCE_TYPE,
                    "nodes": max(1, -(-biggest // REFERENCE_NODE_DEVICES)),
                    "devices_per_node": REFERENCE_NODE_DEVICES,
                    "intra_gbs": REFERENCE_INTRA_GBS,
                    "nic_gbps": REFERENCE_NETWORK_GBS * 8.0,
                }
            ],
        }
    )
    # the reference rate does not depend on submit time or type constraints
    probe = sub.replace(gpu_type=np.full(len(sub), "", dtype=object))
    rate = np.asarray((model or PerformanceModel()).prepare(probe, cluster).rate[:, 0])
    with np.errstate(divide="ignore", invalid="ignore"):
        out[typed] = np.where(rate > 0, sub.work / rate, np.nan)
    return out


def fit_workload(
    jobs: JobTable,
    duration: str = "lognormal",
    size_buckets: Sequence[int] = DEFAULT_SIZE_BUCKETS,
    min_bucket_jobs: int = 30,
    start_time: str | None = None,
    diurnal: bool = False,
    job_types: bool = True,
    perf_model: PerformanceModel | None = None,
    name: str = "fitted",
) -> WorkloadModel:
    """Fit a :class:`WorkloadModel` to a job table (module docstring).

    Parameters
    ----------
    jobs
        The trace, at least 2 jobs.
    duration
        ``"lognormal"`` or ``"empirical"`` (per size bucket).
    size_buckets
        Inclusive upper bounds on ``num_gpus`` of the duration buckets; a bucket up to the
        largest gang is added when needed. Empty buckets are dropped.
    min_bucket_jobs
        Buckets with fewer jobs use the fit of all jobs (noted).
    start_time
        Calendar time (ISO 8601) of ``t = 0``, e.g. ``ParseReport.start_time``: aligns the
        hour of day of a diurnal fit. Without it, hours count from ``t = 0``.
    diurnal
        Fit an hourly arrival profile (share of submissions per hour of day) instead of a
        constant rate.
    job_types
        Keep the trace's job-type mix (when it has job types); ``False``: generic jobs only.
    perf_model
        Converts typed jobs' steps to reference seconds (:func:`reference_durations`).
    name
        Model name.

    Raises
    ------
    ClustersimError
        With fewer than 2 jobs, a zero time span, an unknown duration model, or no job that
        can run on the reference type.
    """
    n = len(jobs)
    if n < 2:
        raise ClustersimError("fitting a workload needs at least 2 jobs")
    if duration not in ("lognormal", "empirical"):
        raise ClustersimError(f"duration model {duration!r} unknown; choose lognormal or empirical")
    if min_bucket_jobs < 1:
        raise ClustersimError("min_bucket_jobs must be >= 1")
    notes: list[str] = []
    d = reference_durations(jobs, perf_model)
    ok = np.isfinite(d) & (d > 0)
    if not ok.any():
        raise ClustersimError("no job of the trace can run on the reference type")
    if not ok.all():
        notes.append(
            f"{int((~ok).sum())} jobs cannot run on {REFERENCE_TYPE}: left out of the duration fit"
        )
    typed = np.asarray(jobs.job_type != "", dtype=bool)
    if typed.any():
        notes.append(
            f"{int(typed.sum())} typed jobs: steps converted to reference seconds with their "
            f"rate on {REFERENCE_TYPE}"
        )

    sizes, counts = np.unique(jobs.num_gpus, return_counts=True)
    probs = counts / counts.sum()

    bounds = sorted({int(b) for b in size_buckets if int(b) >= 1})
    if not bounds or bounds[-1] < int(sizes[-1]):
        bounds.append(int(sizes[-1]))
    edges = np.asarray(bounds, dtype=np.int64)
    bucket = np.searchsorted(edges, jobs.num_gpus, side="left")
    used = np.unique(bucket)
    edges = edges[used]  # drop empty buckets; the upper bounds of the rest still cover all
    bucket = np.searchsorted(edges, jobs.num_gpus, side="left")
    pooled = DurationDist.fit(d[ok], duration)
    dists: list[DurationDist] = []
    small: list[str] = []
    for b in range(len(edges)):
        sel = ok & (bucket == b)
        if sel.sum() >= min_bucket_jobs:
            dists.append(DurationDist.fit(d[sel], duration))
        else:
            dists.append(pooled)
            small.append(f"<= {edges[b]} GPUs ({int(sel.sum())} jobs)")
    notes.append(
        f"durations: {duration} per size bucket (upper bounds {', '.join(map(str, edges))} "
        f"GPUs) in reference seconds"
    )
    if small:
        notes.append(
            f"buckets with fewer than {min_bucket_jobs} jobs use the fit of all jobs: "
            + "; ".join(small)
        )

    span = float(jobs.submit_time[-1] - jobs.submit_time[0])
    if not span > 0:
        raise ClustersimError("fitting arrivals needs jobs submitted at different times")
    rate = (n - 1) / span * 3600.0
    start_hour = 0.0
    if start_time is not None:
        when = _parse_iso(start_time)
        start_hour = when.hour + when.minute / 60.0 + when.second / 3600.0
    if diurnal:
        hour = np.floor(np.mod(start_hour + jobs.submit_time / 3600.0, 24.0)).astype(np.int64)
        prof = np.bincount(np.minimum(hour, 23), minlength=24).astype(np.float64)
        arrival = ArrivalProcess(
            kind="diurnal",
            rate_per_hour=rate,
            hourly=tuple(prof.tolist()),
            start_hour=start_hour,
        )
        notes.append(
            "diurnal arrivals: hourly profile = share of submissions per hour of day"
            + ("" if start_time else " (hours counted from t=0: the trace has no start time)")
        )
    else:
        arrival = ArrivalProcess.poisson(rate)
    notes.append(f"mean arrival rate {rate:.4g} jobs/h = (jobs - 1) / span of submit times")

    types_w: dict[str, float] | None = None
    typed_fraction = 1.0
    if job_types and typed.any():
        names, tc = np.unique(jobs.job_type[typed].astype(str), return_counts=True)
        types_w = {str(k): float(c) for k, c in zip(names, tc, strict=True)}
        typed_fraction = float(typed.mean())
        notes.append(
            f"job types: the trace's mix of {len(types_w)} types for {typed_fraction:.1%} of "
            "jobs, drawn independently of duration"
        )
    return WorkloadModel(
        sizes=sizes.astype(np.int64),
        size_probs=probs,
        bucket_bounds=edges,
        durations=tuple(dists),
        arrival=arrival,
        job_types=types_w,
        typed_fraction=typed_fraction,
        name=name,
        source=f"fitted to {n:,} jobs",
        notes=tuple(notes),
    )


def _parse_iso(text: str) -> datetime:
    try:
        when = datetime.fromisoformat(str(text).strip())
    except ValueError:
        raise ClustersimError(f"{text!r} is not an ISO 8601 date-time") from None
    return when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)


def _positive(name: str, value: float) -> None:
    if not (isinstance(value, int | float) and math.isfinite(value) and value > 0):
        raise ClustersimError(f"{name} must be a positive number, not {value!r}")


# --------------------------------------------------------------------------------------------
# Generating


def generate(
    model: WorkloadModel,
    n_jobs: int | None = None,
    duration_s: float | None = None,
    seed: int = 0,
    arrival: ArrivalProcess | None = None,
    perf_model: PerformanceModel | None = None,
    elastic: str | None = None,
) -> JobTable:
    """Draw a synthetic workload from ``model``.

    Parameters
    ----------
    model
        The job population.
    n_jobs
        Number of jobs (the first ``n_jobs`` arrivals).
    duration_s
        Only arrivals before this time (s). With ``n_jobs``, at most ``n_jobs`` of them.
    seed
        Root of the ``numpy.random.SeedSequence`` (module docstring).
    arrival
        Overrides ``model.arrival``.
    perf_model
        Converts typed jobs' durations to steps; default ``PerformanceModel()``.
    elastic
        A bounds rule (:func:`clustersim.elastic.parse_rule`, e.g. ``"x0.5-x2"``) giving every
        job ``min_gpus``/``max_gpus`` around its drawn gang (no cluster cap: the run applies
        none); ``None``: rigid jobs. Draws nothing, so the rest of the workload is the same.

    Returns
    -------
    JobTable
        Job ids ``"0"``, ``"1"``, ... in arrival order; no user, group or type constraint.

    Raises
    ------
    ClustersimError
        If neither ``n_jobs`` nor ``duration_s`` is given, either is not positive, or no job
        arrives.
    """
    return generate_with_notes(model, n_jobs, duration_s, seed, arrival, perf_model, elastic)[0]


def generate_with_notes(
    model: WorkloadModel,
    n_jobs: int | None = None,
    duration_s: float | None = None,
    seed: int = 0,
    arrival: ArrivalProcess | None = None,
    perf_model: PerformanceModel | None = None,
    elastic: str | None = None,
) -> tuple[JobTable, list[str]]:
    """:func:`generate`, also returning notes for a report (what was drawn and how)."""
    if n_jobs is None and duration_s is None:
        raise ClustersimError("give n_jobs or duration_s (or both)")
    if n_jobs is not None and not (
        isinstance(n_jobs, int | np.integer) and 1 <= n_jobs <= MAX_JOBS
    ):
        raise ClustersimError(f"n_jobs must be an integer in 1..{MAX_JOBS:,}, not {n_jobs!r}")
    if duration_s is not None:
        _positive("duration_s", duration_s)
    proc = arrival or model.arrival
    root = np.random.SeedSequence(seed)
    s_arr, s_size, s_dur, s_typed = (np.random.default_rng(s) for s in root.spawn(4))

    submit = proc.sample(s_arr, n_jobs, duration_s)
    n = len(submit)
    if n == 0:
        raise ClustersimError("no job arrives before duration_s: raise it or the arrival rate")
    num_gpus = s_size.choice(model.sizes, size=n, p=model.size_probs)
    work = np.empty(n)
    bucket = model.bucket_of(num_gpus)
    for b, dist in enumerate(model.durations):
        sel = np.flatnonzero(bucket == b)
        work[sel] = dist.sample(s_dur, len(sel))
    jobs = JobTable.from_columns(
        job_id=np.arange(n).astype(str),
        submit_time=submit,
        num_gpus=num_gpus,
        work=work,
    )
    notes = [
        f"{n:,} jobs from model {model.name or '(unnamed)'} with seed {seed}",
        proc.describe(),
    ]
    if model.job_types:
        from clustersim.jobtypes import assign_job_types

        mask = s_typed.random(n) < model.typed_fraction
        if mask.any():
            sub, type_notes = assign_job_types(
                jobs.take(mask),
                seed=seed,
                rule="uniform",
                mapping={math.inf: dict(model.job_types)},
                model=perf_model,
            )
            job_type = jobs.job_type.copy()
            new_work = jobs.work.copy()
            job_type[mask] = sub.job_type
            new_work[mask] = sub.work
            jobs = jobs.replace(job_type=job_type, work=new_work)
            notes.extend(type_notes)
    else:
        notes.append("generic jobs: work in reference seconds")
    if elastic is not None:
        from clustersim.elastic import apply_elastic

        jobs, elastic_notes = apply_elastic(jobs, elastic)
        notes.extend(elastic_notes)
    return jobs, notes


def write_jobs_csv(jobs: JobTable, path: str) -> None:
    """Write a job table as CSV with job-table column names (read back by format ``"csv"``).

    Columns ``job_id, submit_time, num_gpus, work`` always; ``user, vc, job_type, gpu_type,
    priority, deadline, cpu, mem_gb, min_gpus, max_gpus`` when any row differs from the
    default. Floats are written with full precision; missing values are blank.

    Parameters
    ----------
    jobs
        The table.
    path
        Output file.
    """
    import pandas as pd

    cols = jobs.columns()
    keep = ["job_id", "submit_time", "num_gpus", "work"]
    for name in ("user", "vc", "job_type", "gpu_type"):
        if (cols[name] != "").any():
            keep.append(name)
    if (cols["priority"] != 0).any():
        keep.append("priority")
    for name in ("deadline", "cpu", "mem_gb"):
        if np.isfinite(cols[name]).any():
            keep.append(name)
    if jobs.elastic.any():
        keep += ["min_gpus", "max_gpus"]
    for name in ("user", "vc", "job_type", "gpu_type", "job_id"):
        if name in keep and any("," in str(x) or "\n" in str(x) for x in cols[name]):
            raise ClustersimError(f"column {name!r} holds a comma or line break: cannot write CSV")
    frame = pd.DataFrame({k: cols[k] for k in keep})
    frame.to_csv(path, index=False, float_format=None)
