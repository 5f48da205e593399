"""Test oracle: a slow, readable re-implementation of Gavel's trace simulator.

This is our own code, written from a reading of ``stanford-futuredata/gavel`` (see
``docs/gavel-fidelity.md`` for the step-by-step description and the exact functions mirrored).
It covers what ``scheduler/scripts/drivers/simulate_scheduler_with_trace.py`` does with the
heterogeneity-agnostic policies ``fifo`` (``policies/fifo.py: FIFOPolicy``, mode ``base``) and
``max_min_fairness`` (``policies/max_min_fairness.py: MaxMinFairnessPolicy``, i.e. LAS), for a
trace without job packing, throughput estimation, SLOs or prices.

Every rule that changes a completion time is reproduced, including Gavel's quirks:

* rounds end when the *slowest* job of the round has run ``int(throughput * T)`` steps, so a
  round lasts a little less than ``T`` and a round in which every job finishes early is short;
* jobs that arrive during a round are admitted only at the end of the round;
* the allocation is recomputed only when something changed *and* at least 1920 s passed since
  the last recomputation (or the last recomputation happened at time 0, or the cluster is idle
  with no arrivals left); jobs that arrived since then are not in the allocation and never run;
* ``fifo`` picks the worker type with a loop variable that leaks out of a ``for`` loop, so it
  does not use the random choice it draws (it takes the alphabetically last type that still has
  free GPUs, may over-subscribe it, and removes the randomly drawn entry from its list);
* jobs on a worker type are then ordered by ``allocation / (time share since the last reset)``,
  so jobs sharing an over-subscribed type are time-sliced, not run to completion;
* a multi-GPU job whose last round has fewer steps left than GPUs "fails" that round, and is
  dropped (no completion time) after 5 such failures.

What cannot be reproduced exactly: Gavel solves the max-min LP with CVXPY + ECOS. The LP of the
agnostic policy has many optimal solutions; ECOS, an interior-point solver, returns some point in
the relative interior of the optimal face (with ~1e-11 noise) that only its iterations determine.
We take the analytic centre of that face instead (``_mmf_barrier``, log-barrier path following):
on clusters with equal GPU counts per type both split every job's share equally over the types,
but the shares of jobs whose share is not pinned down, and all splits on unequal clusters,
differ somewhat (measured effect on average JCT: 0.02-1 %). Ties between jobs with equal
allocations are broken by Gavel's secondary keys (deficit, allocation, job order) here and by
solver noise in Gavel. ``lp_backend="cvxpy-ecos"`` solves with CVXPY and ECOS instead when both
are importable (they are not dependencies of this project); with it, per-job completion times
matched a line-by-line transcription of Gavel's simulation code exactly.

Only the standard library and numpy are needed. Runs in O(rounds x active jobs) Python steps.
"""

from __future__ import annotations

import itertools
import json
import math
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

# Gavel constants (scheduler.py).
MAX_FAILED_ATTEMPTS = 5
DEFAULT_ROUND_SECONDS = 360.0  # Scheduler(time_per_iteration=360); the driver's default is 1920.
MIN_TIME_BETWEEN_ALLOCATION_RESETS = 1920.0  # Scheduler(minimum_time_between_allocation_resets)
# _schedule_jobs_on_workers hard-codes this list before shuffling it.
GAVEL_WORKER_TYPE_ORDER = ("v100", "p100", "k80")
POLICIES = (
    "fifo",
    "max_min_fairness",
    "max_min_fairness_perf",
    "finish_time_fairness_perf",
    "max_sum_throughput_perf",
    "allox",
)
# Gavel's scheduler shuffles the worker-type order every pass unless the policy's name contains
# "Perf" or "Packing" (MaxMinFairness_Perf, FinishTimeFairness_Perf, ThroughputSumWithPerf,
# AlloX_Perf).
UNSHUFFLED_POLICIES = (
    "max_min_fairness_perf",
    "finish_time_fairness_perf",
    "max_sum_throughput_perf",
    "allox",
)


# --------------------------------------------------------------------------------------------
# Inputs
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TraceJob:
    """One trace line, reduced to what the simulator uses."""

    job_type: str
    total_steps: int
    scale_factor: int
    arrival_time: float
    priority_weight: float = 1.0


def parse_trace_line(line: str) -> TraceJob:
    """Parse one tab-separated Gavel trace line (7-, 10- or 12-field variant)."""
    f = line.rstrip("\r\n").split("\t")
    if len(f) == 7:
        # job_type, command, num_steps_arg, needs_data_dir, total_steps, arrival_time, scale_factor
        return TraceJob(f[0], int(f[4]), int(f[6]), float(f[5]))
    if len(f) == 10:
        # job_type, command, working_directory, num_steps_arg, needs_data_dir, total_steps,
        # scale_factor, priority_weight, SLO, arrival_time   (Gavel utils.parse_trace)
        return TraceJob(f[0], int(f[5]), int(f[6]), float(f[9]), float(f[7]))
    if len(f) == 12:
        # job_type, command, working_directory, num_steps_arg, needs_data_dir, total_steps,
        # scale_factor, mode, priority_weight, SLO, duration, arrival_time   (Shockwave)
        return TraceJob(f[0], int(f[5]), int(f[6]), float(f[11]), float(f[8]))
    raise ValueError(f"expected 7, 10 or 12 tab-separated fields, got {len(f)}")


def parse_trace(path: str | Path) -> list[TraceJob]:
    """Parse a Gavel/Shockwave ``.trace`` file; jobs keep file order (= Gavel job ids)."""
    jobs = []
    with open(path) as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                jobs.append(parse_trace_line(line))
            except ValueError as exc:
                raise ValueError(f"{path}:{lineno}: {exc}") from None
    return jobs


def load_throughputs(path: str | Path) -> dict[str, dict[tuple[str, int], float]]:
    """Isolated throughputs (steps/s of the whole job) per worker type and (job type, scale factor).

    Mirrors ``utils.read_all_throughputs_json_v2`` + ``Scheduler._set_initial_throughput``: only
    the consolidated keys (``v100``, ``p100``, ``k80``) and the ``"null"`` entry are ever read.
    """
    with open(path) as fh:
        raw = json.load(fh)
    out: dict[str, dict[tuple[str, int], float]] = {}
    for worker_type, table in raw.items():
        parsed = {}
        for key, value in table.items():
            name, sf = key[2:-1].rsplit("', ", 1)  # "('<type>', <sf>)"
            parsed[(name, int(sf))] = float(value["null"])
        out[worker_type] = parsed
    return out


# --------------------------------------------------------------------------------------------
# Output
# --------------------------------------------------------------------------------------------


@dataclass
class GavelResult:
    """What Gavel's simulator would report for one run."""

    jct: list[float | None]  # per job in file order; None = dropped after 5 failed rounds
    finish_time: list[float | None]
    average_jct: float  # get_average_jct(): mean over completed jobs, seconds
    makespan: float  # "Total duration": simulated clock at the end
    utilization: float  # get_cluster_utilization() (mean over GPUs)
    num_rounds: int
    num_allocation_resets: int
    rounds: list[tuple[float, dict[int, str]]] = field(default_factory=list)  # if recorded

    @property
    def average_jct_hours(self) -> float:
        return self.average_jct / 3600.0


# --------------------------------------------------------------------------------------------
# Policies
# --------------------------------------------------------------------------------------------


class _FifoBase:
    """Gavel ``FIFOPolicy(mode='base', seed=seed)``, including its worker-type bug."""

    name = "FIFO"

    def __init__(self, seed: int | None):
        self._rng = random.Random()
        if seed is not None:
            self._rng.seed(seed)
        self._allocation: dict[int, str] = {}  # persists across calls in base mode

    def get_allocation(
        self,
        throughputs: Mapping[int, Mapping[str, float]],
        scale_factors: Mapping[int, int],
        cluster_spec: Mapping[str, int],
    ) -> dict[int, dict[str, float]]:
        available = dict(cluster_spec)
        queue = [j for j in sorted(throughputs) if j not in self._allocation]
        # Replace completed jobs by the head of the queue on the same worker type.
        for job in sorted(self._allocation):
            worker_type = self._allocation[job]
            if job not in throughputs:
                if queue:
                    head = queue[0]
                    if (
                        scale_factors[head] <= available[worker_type]
                        and throughputs[head][worker_type] > 0.0
                    ):
                        queue.pop(0)
                        self._allocation[head] = worker_type
                        available[worker_type] -= scale_factors[head]
                del self._allocation[job]
            else:
                available[worker_type] -= scale_factors[job]
        types = sorted(t for t in available if available[t] > 0)
        while queue and types:
            job = queue.pop(0)
            sf = scale_factors[job]
            fitting = [(i, t) for i, t in enumerate(types) if available[t] >= sf]
            if not fitting:
                break
            drawn = self._rng.randrange(len(fitting))
            # Gavel never assigns the drawn type: `worker_type` still holds the last value of
            # the loop `for i, worker_type in enumerate(available_worker_types)`.
            worker_type = types[-1]
            if throughputs[job][worker_type] > 0.0:
                self._allocation[job] = worker_type
                available[worker_type] -= sf
                if available[worker_type] == 0:
                    types.pop(fitting[drawn][0])  # removes the *drawn* entry
        out = {j: {t: 0.0 for t in cluster_spec} for j in throughputs}
        for job, worker_type in self._allocation.items():
            out[job][worker_type] = 1.0
        return out


class _MaxMinFairnessAgnostic:
    """Gavel ``MaxMinFairnessPolicy``: ``max_min_fairness_perf`` with every throughput = 1.

    LP: maximise min_i (sf_i / (w_i * p_i)) * sum_j x_ij  subject to  x >= 0,
    sum_i sf_i x_ij <= N_j,  sum_j x_ij <= 1, where p_i = 1 is the "proportional" throughput.
    """

    name = "MaxMinFairness"

    def __init__(self, lp_backend: str = "barrier"):
        if lp_backend not in ("barrier", "cvxpy-ecos"):
            raise ValueError(f"unknown lp_backend {lp_backend!r}")
        self._backend = lp_backend

    def get_allocation(
        self,
        throughputs: Mapping[int, Mapping[str, float]],
        scale_factors: Mapping[int, int],
        priority_weights: Mapping[int, float],
        cluster_spec: Mapping[str, int],
    ) -> dict[int, dict[str, float]]:
        job_ids = sorted(throughputs)
        if not job_ids:
            return {}
        worker_types = sorted(throughputs[job_ids[0]])
        m, n = len(job_ids), len(worker_types)
        num_workers = np.array([cluster_spec[t] for t in worker_types], dtype=float)
        # ProportionalPolicy: x_prop[i, j] = N_j / m, rows rescaled to sum 1 -> p_i = 1.
        x_prop = np.array([[cluster_spec[t] / m for t in worker_types] for _ in range(m)])
        x_prop = x_prop / np.sum(x_prop, axis=1).max()
        proportional = np.sum(np.ones((m, n)) * x_prop, axis=1)
        sfs = np.array([scale_factors[j] for j in job_ids], dtype=float)
        weights = np.array([1.0 / priority_weights[j] for j in job_ids]) * (1.0 / proportional)
        coeff = (np.ones(m) * weights) * sfs
        if self._backend == "cvxpy-ecos":
            x = _mmf_cvxpy(coeff, sfs, num_workers)
        else:
            x = _mmf_barrier(coeff, sfs, num_workers)
        x = x.clip(min=0.0).clip(max=1.0)
        return {
            job: {t: float(x[i, k]) for k, t in enumerate(worker_types)}
            for i, job in enumerate(job_ids)
        }


def _mmf_cvxpy(coeff: np.ndarray, sfs: np.ndarray, num_workers: np.ndarray) -> np.ndarray:
    """Gavel's own formulation, solved by CVXPY + ECOS (optional; for cross-checks)."""
    import cvxpy as cp

    m, n = len(coeff), len(num_workers)
    sfa = np.repeat(sfs.reshape(m, 1), n, axis=1)
    x = cp.Variable((m, n))
    objective = cp.Maximize(
        cp.min(cp.sum(cp.multiply(np.ones((m, n)) * coeff.reshape(m, 1), x), axis=1))
    )
    constraints = [
        x >= 0,
        cp.sum(cp.multiply(sfa, x), axis=0) <= num_workers,
        cp.sum(x, axis=1) <= 1,
    ]
    cp.Problem(objective, constraints).solve(solver="ECOS")
    return np.asarray(x.value)


def _mmf_barrier(
    coeff: np.ndarray,
    sfs: np.ndarray,
    num_workers: np.ndarray,
    mu_final: float = 1e-9,
) -> np.ndarray:
    """Analytic centre of the optimal face of Gavel's max-min LP (log-barrier path following).

    Variables x (m x n) and t; maximise t subject to the slacks
    x_ij >= 0, N_j - sum_i sf_i x_ij >= 0, 1 - sum_j x_ij >= 0, c_i sum_j x_ij - t >= 0.
    The central path {argmin -t/mu - sum log(slack)} tends, as mu -> 0, to the analytic centre of
    the optimal face: a canonical interior optimum, close to (not identical with) the interior
    point ECOS stops at. The Newton systems are solved in O(m n) with the arrow-plus-low-rank
    structure of the Hessian.
    """
    m, n = len(coeff), len(num_workers)
    c = coeff.astype(float)
    total = float(num_workers.sum())
    big_x = 0.5 * min(1.0, total / float(sfs.sum()))
    x = np.outer(np.full(m, big_x), num_workers / total)
    t = 0.5 * float(np.min(c * x.sum(axis=1)))

    def slacks(x: np.ndarray, t: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        row = x.sum(axis=1)
        return x, num_workers - sfs @ x, 1.0 - row, c * row - t

    def value(x: np.ndarray, t: float, mu: float) -> float:
        s_x, s_cap, s_row, s_t = slacks(x, t)
        if s_x.min() <= 0 or s_cap.min() <= 0 or s_row.min() <= 0 or s_t.min() <= 0:
            return math.inf
        return -t / mu - (
            np.log(s_x).sum() + np.log(s_cap).sum() + np.log(s_row).sum() + np.log(s_t).sum()
        )

    mu = 1.0
    while True:
        for _ in range(200):  # Newton iterations at this mu
            s_x, s_cap, s_row, s_t = slacks(x, t)
            # Gradient of  -t/mu - sum log s.
            gx = -1.0 / s_x + np.outer(sfs, 1.0 / s_cap) + (1.0 / s_row - c / s_t)[:, None]
            gt = -1.0 / mu + np.sum(1.0 / s_t)
            # Hessian: per-job blocks diag(d) + alpha * 11^T, cross x-t terms b, tt term beta,
            # plus one rank-one term per worker type (capacity rows).
            d = 1.0 / s_x**2
            alpha = 1.0 / s_row**2 + c**2 / s_t**2
            bvec = -c / s_t**2  # each entry of row i of the x-t cross term
            beta = np.sum(1.0 / s_t**2)
            w_cap = 1.0 / s_cap**2

            def solve_blocks(
                y: np.ndarray, d: np.ndarray = d, alpha: np.ndarray = alpha
            ) -> np.ndarray:
                # (diag(d_i) + alpha_i 11^T)^{-1} y_i for every row i (Sherman-Morrison).
                yd = y / d
                sinv = (1.0 / d).sum(axis=1)
                return yd - (alpha * yd.sum(axis=1) / (1.0 + alpha * sinv))[:, None] / d

            # Woodbury for P = D + sum_j w_j u_j u_j^T, with u_j = sfs on column j.
            # Columns of D^{-1} U: for column j, vector e_{.,j} * sfs -> solve_blocks.
            dinv_u = np.empty((n, m, n))
            for j in range(n):
                e = np.zeros((m, n))
                e[:, j] = sfs
                dinv_u[j] = solve_blocks(e)
            utdu = np.array([[np.sum(dinv_u[k][:, j] * sfs) for k in range(n)] for j in range(n)])
            small = np.diag(1.0 / w_cap) + utdu

            def solve_p(
                y: np.ndarray, dinv_u: np.ndarray = dinv_u, small: np.ndarray = small
            ) -> np.ndarray:
                dy = solve_blocks(y)
                rhs = np.array([np.sum(dy[:, j] * sfs) for j in range(n)])
                coef = np.linalg.lstsq(small, rhs, rcond=None)[0]
                return dy - np.tensordot(coef, dinv_u, axes=1)

            b = np.repeat(bvec[:, None], n, axis=1)
            with np.errstate(all="ignore"):
                p_gx = solve_p(-gx)
                p_b = solve_p(b)
                dt = (-gt - np.sum(b * p_gx)) / (beta - np.sum(b * p_b))
                dx = p_gx - p_b * dt
                decrement = -(np.sum(gx * dx) + gt * dt)
            if not (np.isfinite(decrement) and np.all(np.isfinite(dx))) or decrement < 0:
                return x  # numerically at the end of the path: keep the last good iterate
            if decrement / 2.0 <= 1e-12:
                break
            step = 1.0
            f0 = value(x, t, mu)
            while value(x + step * dx, t + step * dt, mu) > f0 - 0.25 * step * decrement:
                step *= 0.5
                if step < 1e-14:
                    break
            x, t = x + step * dx, t + step * dt
        if mu <= mu_final:
            return x
        mu = max(mu * 0.1, mu_final)


# --------------------------------------------------------------------------------------------
# Heterogeneity-aware LP policies (max_min_fairness_perf, finish_time_fairness_perf,
# max_sum_throughput_perf)
# --------------------------------------------------------------------------------------------
#
# Gavel states each as a CVXPY problem solved by ECOS (``--solver ECOS``, the driver's default).
# Here each is restated as a linear programme (FTF as a sequence of them) and solved with
# HiGHS through ``scipy.optimize.linprog``; ``lp_backend="cvxpy-ecos"`` restates Gavel's own
# CVXPY formulation instead (needs cvxpy + ecos, which are not dependencies of this project; it
# exists to check this restatement against Gavel runs outside the test suite). HiGHS returns a
# vertex of the optimal face and ECOS a point inside it; the objective value is the same, the
# allocations of jobs that do not bind the objective may differ (see docs/gavel-fidelity.md).


def _flatten(
    throughputs: Mapping[int, Mapping[str, float]], cluster_spec: Mapping[str, int]
) -> tuple[list[int], list[str], np.ndarray, np.ndarray]:
    """``Policy.flatten``: job ids sorted, worker types sorted, (m x n) rates, N_j per type."""
    job_ids = sorted(throughputs)
    worker_types = sorted(throughputs[job_ids[0]])
    rates = np.array([[throughputs[j][t] for t in worker_types] for j in job_ids], dtype=float)
    num_workers = np.array([cluster_spec[t] for t in worker_types], dtype=float)
    return job_ids, worker_types, rates, num_workers


def _unflatten(x: np.ndarray, job_ids: list[int], worker_types: list[str]) -> dict:
    x = np.clip(x, 0.0, 1.0)  # Gavel: x.value.clip(min=0.0).clip(max=1.0)
    return {
        job: {t: float(x[i, k]) for k, t in enumerate(worker_types)}
        for i, job in enumerate(job_ids)
    }


def _base_constraints(sfs: np.ndarray, num_workers: np.ndarray, extra_cols: int = 0):  # type: ignore[no-untyped-def]
    """``Policy.get_base_constraints`` as (A_ub, b_ub) over x (row-major) plus extra columns:
    sum_i sf_i x_ij <= N_j per type, sum_j x_ij <= 1 per job (x >= 0 goes into the bounds)."""
    from scipy import sparse

    m, n = len(sfs), len(num_workers)
    cap = sparse.kron(sparse.csr_matrix(sfs.reshape(1, m)), sparse.identity(n), format="csr")
    row = sparse.kron(sparse.identity(m), np.ones((1, n)), format="csr")
    a = sparse.vstack([cap, row], format="csr")
    if extra_cols:
        a = sparse.hstack([a, sparse.csr_matrix((a.shape[0], extra_cols))], format="csr")
    b = np.concatenate([num_workers, np.ones(m)])
    return a, b


def _highs(c, a_ub, b_ub, bounds):  # type: ignore[no-untyped-def]
    from scipy.optimize import linprog

    res = linprog(c, A_ub=a_ub, b_ub=b_ub, bounds=bounds, method="highs")
    if res.status != 0:
        raise RuntimeError(f"HiGHS: {res.message}")
    return res.x


def proportional_throughputs(rates: np.ndarray, num_workers: np.ndarray) -> np.ndarray:
    """``ProportionalPolicy.get_throughputs``: every job gets N_j/m of each type, rows rescaled
    so that the largest row sums to 1 (all rows are equal, so x_j = N_j / N); p_i = sum_j r_ij x_j.
    """
    m = rates.shape[0]
    x = np.tile(num_workers / m, (m, 1))
    x = x / np.sum(x, axis=1).max()
    return np.sum(rates * x, axis=1)


def isolated_throughputs(rates: np.ndarray, sfs: np.ndarray, num_workers: np.ndarray) -> np.ndarray:
    """``IsolatedPolicy.get_throughputs``: x_ij = (N_j / m) / sf_i, each row divided by
    max(row sum, 1); the job's rate under that allocation (its "1/m of the cluster")."""
    m = rates.shape[0]
    x = np.tile(num_workers / m, (m, 1)) / sfs[:, None]
    x = x / np.maximum(np.sum(x, axis=1), 1.0)[:, None]
    return np.sum(rates * x, axis=1)


class _MaxMinFairnessPerf:
    """Gavel ``MaxMinFairnessPolicyWithPerf`` (``max_min_fairness_perf``).

    maximise min_i sum_j c_ij x_ij with c_ij = r_ij * sf_i / (w_i * p_i) (p_i: proportional
    throughput), subject to the base constraints. HiGHS form: variables (x, t), maximise t,
    t - sum_j c_ij x_ij <= 0.
    """

    name = "MaxMinFairness_Perf"

    def __init__(self, lp_backend: str = "highs"):
        if lp_backend not in ("highs", "barrier", "cvxpy-ecos"):
            raise ValueError(f"unknown lp_backend {lp_backend!r}")
        self._backend = lp_backend

    @staticmethod
    def coefficients(
        rates: np.ndarray, sfs: np.ndarray, weights: np.ndarray, num_workers: np.ndarray
    ) -> np.ndarray:
        prop = proportional_throughputs(rates, num_workers)
        return rates * (1.0 / weights / prop)[:, None] * sfs[:, None]

    def get_allocation(
        self,
        throughputs: Mapping[int, Mapping[str, float]],
        scale_factors: Mapping[int, int],
        priority_weights: Mapping[int, float],
        cluster_spec: Mapping[str, int],
    ) -> dict[int, dict[str, float]]:
        if not throughputs:
            return {}
        job_ids, worker_types, rates, num_workers = _flatten(throughputs, cluster_spec)
        m, n = rates.shape
        sfs = np.array([scale_factors[j] for j in job_ids], dtype=float)
        weights = np.array([priority_weights[j] for j in job_ids], dtype=float)
        coeff = self.coefficients(rates, sfs, weights, num_workers)
        if self._backend == "cvxpy-ecos":
            import cvxpy as cp

            x = cp.Variable((m, n))
            objective = cp.Maximize(cp.min(cp.sum(cp.multiply(coeff, x), axis=1)))
            cons = [
                x >= 0,
                cp.sum(cp.multiply(np.tile(sfs[:, None], (1, n)), x), axis=0) <= num_workers,
                cp.sum(x, axis=1) <= 1,
            ]
            cp.Problem(objective, cons).solve(solver="ECOS")
            return _unflatten(np.asarray(x.value), job_ids, worker_types)
        from scipy import sparse

        a, b = _base_constraints(sfs, num_workers, extra_cols=1)
        tie = sparse.hstack(
            [-sparse.block_diag([coeff[i : i + 1] for i in range(m)]), np.ones((m, 1))],
            format="csr",
        )
        if self._backend == "barrier":
            x0 = _interior_start(rates, sfs, num_workers)
            t0 = 0.5 * float(np.min(np.sum(coeff * x0, axis=1)))
            c = np.zeros(m * n + 1)
            c[-1] = -1.0
            v = _central_point(
                c,
                sparse.vstack([a, tie], format="csr").toarray(),
                np.concatenate([b, np.zeros(m)]),
                np.append(x0.ravel(), t0),
                m * n,
            )
            if v is not None:
                return _unflatten(v[:-1].reshape(m, n), job_ids, worker_types)
        c = np.zeros(m * n + 1)
        c[-1] = -1.0
        z = _highs(
            c,
            sparse.vstack([a, tie], format="csr"),
            np.concatenate([b, np.zeros(m)]),
            [(0, None)] * (m * n) + [(None, None)],
        )
        return _unflatten(z[:-1].reshape(m, n), job_ids, worker_types)


class _MaxSumThroughputPerf:
    """Gavel ``ThroughputSumWithPerf`` (``max_sum_throughput_perf``).

    maximise sum_ij r_ij x_ij (raw steps/s: the ``scale = 1 / sum_j r_ij`` that Gavel computes
    is never used, and instance costs are all 1), subject to the base constraints.
    """

    name = "ThroughputSumWithPerf"

    def __init__(self, lp_backend: str = "highs"):
        if lp_backend not in ("highs", "barrier", "cvxpy-ecos"):
            raise ValueError(f"unknown lp_backend {lp_backend!r}")
        self._backend = lp_backend

    def get_allocation(
        self,
        throughputs: Mapping[int, Mapping[str, float]],
        scale_factors: Mapping[int, int],
        cluster_spec: Mapping[str, int],
    ) -> dict[int, dict[str, float]]:
        if not throughputs:
            return {}
        job_ids, worker_types, rates, num_workers = _flatten(throughputs, cluster_spec)
        m, n = rates.shape
        sfs = np.array([scale_factors[j] for j in job_ids], dtype=float)
        if self._backend == "cvxpy-ecos":
            import cvxpy as cp

            x = cp.Variable((m, n))
            objective = cp.Maximize(cp.sum(cp.sum(cp.multiply(rates, x), axis=1)))
            cons = [
                x >= 0,
                cp.sum(cp.multiply(np.tile(sfs[:, None], (1, n)), x), axis=0) <= num_workers,
                cp.sum(x, axis=1) <= 1,
            ]
            cp.Problem(objective, cons).solve(solver="ECOS")
            return _unflatten(np.asarray(x.value), job_ids, worker_types)
        a, b = _base_constraints(sfs, num_workers)
        if self._backend == "barrier":
            v = _central_point(
                -rates.ravel() / rates.max(),
                a.toarray(),
                b,
                _interior_start(rates, sfs, num_workers).ravel(),
                m * n,
            )
            if v is not None:
                return _unflatten(v.reshape(m, n), job_ids, worker_types)
        z = _highs(-rates.ravel(), a, b, [(0, None)] * (m * n))
        return _unflatten(z.reshape(m, n), job_ids, worker_types)


class _FinishTimeFairnessPerf:
    """Gavel ``FinishTimeFairnessPolicyWithPerf`` (``finish_time_fairness_perf``).

    For job i with remaining steps R_i, time since arrival s_i, isolated throughput q_i
    (``isolated_throughputs``) and accumulated isolated time C_i:
        rho_i(x) = (s_i + R_i / sum_j r_ij x_ij) / (C_i + R_i / q_i);   minimise max_i rho_i(x)
    subject to the base constraints. C_i grows, at every call, by (R_i at the previous call -
    R_i now) / (q_i at the previous call): the isolated time the steps done since then would have
    taken. Priority weights are read but unused (as in Gavel).

    HiGHS form: rho_i(x) <= rho  <=>  sum_j r_ij x_ij >= R_i / (rho E_i - s_i)  (rho E_i > s_i),
    linear in x for a fixed rho; rho is found by bisection (feasibility LPs that maximise the
    common margin), tightened with the rho of each feasible x found, to a relative 1e-9.
    """

    name = "FinishTimeFairness_Perf"

    def __init__(self, lp_backend: str = "highs"):
        if lp_backend not in ("highs", "barrier", "cvxpy-ecos"):
            raise ValueError(f"unknown lp_backend {lp_backend!r}")
        self._backend = lp_backend
        self.cumulative_isolated_time: dict[int, float] = {}
        self._isolated_prev: dict[int, float] = {}
        self._remaining_prev: dict[int, int] = {}

    def get_allocation(
        self,
        throughputs: Mapping[int, Mapping[str, float]],
        scale_factors: Mapping[int, int],
        times_since_start: Mapping[int, float],
        num_steps_remaining: Mapping[int, int],
        cluster_spec: Mapping[str, int],
    ) -> dict[int, dict[str, float]]:
        if not throughputs:
            self._isolated_prev, self._remaining_prev = {}, {}
            return {}
        job_ids, worker_types, rates, num_workers = _flatten(throughputs, cluster_spec)
        m = rates.shape[0]
        sfs = np.array([scale_factors[j] for j in job_ids], dtype=float)
        iso = isolated_throughputs(rates, sfs, num_workers)
        for job in job_ids:
            self.cumulative_isolated_time.setdefault(job, 0.0)
            if job in self._remaining_prev:
                self.cumulative_isolated_time[job] += (
                    self._remaining_prev[job] - num_steps_remaining[job]
                ) / self._isolated_prev[job]
        rem = np.array([num_steps_remaining[j] for j in job_ids], dtype=float)
        since = np.array([times_since_start[j] for j in job_ids], dtype=float)
        expected_isolated = (
            np.array([self.cumulative_isolated_time[j] for j in job_ids]) + rem / iso
        )
        self._remaining_prev = dict(num_steps_remaining)
        self._isolated_prev = {job: float(iso[i]) for i, job in enumerate(job_ids)}
        if self._backend == "cvxpy-ecos":
            x = self._cvxpy(rates, sfs, num_workers, rem, since, expected_isolated)
        elif self._backend == "barrier":
            x = self._barrier(rates, sfs, num_workers, rem, since, expected_isolated)
        else:
            x = self._highs(rates, sfs, num_workers, rem, since, expected_isolated)
        if x is None:  # Gavel: no solution -> IsolatedPolicy's allocation
            xi = np.tile(num_workers / m, (m, 1)) / sfs[:, None]
            x = xi / np.maximum(np.sum(xi, axis=1), 1.0)[:, None]
        return _unflatten(x, job_ids, worker_types)

    @staticmethod
    def _barrier(rates, sfs, num_workers, rem, since, e):  # type: ignore[no-untyped-def]
        m, n = rates.shape
        a, b = _base_constraints(sfs, num_workers, extra_cols=1)
        x0 = _interior_start(rates, sfs, num_workers)
        y0 = np.sum(rates * x0, axis=1)
        t0 = float(np.max((since + rem / y0) / e)) * 1.5 + 1.0
        c = np.zeros(m * n + 1)
        c[-1] = 1.0
        v = _central_point(
            c, a.toarray(), b, np.append(x0.ravel(), t0), m * n, ftf=(rates, rem, since, e)
        )
        return None if v is None else v[:-1].reshape(m, n)

    @staticmethod
    def _cvxpy(rates, sfs, num_workers, rem, since, e):  # type: ignore[no-untyped-def]
        import cvxpy as cp

        m, n = rates.shape
        x = cp.Variable((m, n))
        fr = [
            (since[i] + rem[i] * cp.inv_pos(cp.sum(cp.multiply(rates[i], x[i])))) / e[i]
            for i in range(m)
        ]
        objective = cp.Minimize(fr[0] if m == 1 else cp.maximum(*fr))
        cons = [
            x >= 0,
            cp.sum(cp.multiply(np.tile(sfs[:, None], (1, n)), x), axis=0) <= num_workers,
            cp.sum(x, axis=1) <= 1,
        ]
        cp.Problem(objective, cons).solve(solver="ECOS")
        return None if x.value is None else np.asarray(x.value)

    @staticmethod
    def _highs(rates, sfs, num_workers, rem, since, e):  # type: ignore[no-untyped-def]
        from scipy import sparse

        m, n = rates.shape
        a, b = _base_constraints(sfs, num_workers, extra_cols=1)
        rate_rows = sparse.block_diag([rates[i : i + 1] for i in range(m)], format="csr")

        def rho_of(x: np.ndarray) -> float:
            y = np.sum(rates * x, axis=1)
            with np.errstate(divide="ignore"):
                return float(np.max((since + rem / y) / e))

        def margin_lp(rho: float) -> np.ndarray | None:
            # maximise s  s.t.  sum_j r_ij x_ij * (rho e_i - s_i) / R_i >= s   (s capped at 2)
            scale = (rho * e - since) / rem
            if np.any(scale <= 0):
                return None
            tie = sparse.hstack([-sparse.diags(scale) @ rate_rows, np.ones((m, 1))], format="csr")
            c = np.zeros(m * n + 1)
            c[-1] = -1.0
            z = _highs(
                c,
                sparse.vstack([a, tie], format="csr"),
                np.concatenate([b, np.zeros(m)]),
                [(0, None)] * (m * n) + [(None, 2.0)],
            )
            return z[:-1].reshape(m, n) if z[-1] >= 1.0 - 1e-12 else None

        # Upper bound: the isolated allocation is feasible.
        xi = np.tile(num_workers / m, (m, 1)) / sfs[:, None]
        best = xi / np.maximum(np.sum(xi, axis=1), 1.0)[:, None]
        hi = rho_of(best)
        lo = float(np.max(since / e))
        while hi - lo > 1e-9 * max(1.0, hi):
            mid = 0.5 * (lo + hi)
            x = margin_lp(mid)
            if x is None:
                lo = mid
            else:
                best = x
                hi = min(mid, rho_of(x))
        return best


def _central_point(
    c: np.ndarray,
    a: np.ndarray,
    b: np.ndarray,
    v: np.ndarray,
    num_nonneg: int,
    ftf: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None,
    mu_final: float = 1e-10,
) -> np.ndarray | None:
    """Follow the central path of  min c.v  s.t.  a v <= b,  v[:num_nonneg] >= 0  to mu -> 0.

    Minimises c.v / mu - sum log(b - a v) - sum log v[:num_nonneg] (damped Newton, dense
    Hessian) for mu = 1, 0.1, ..., mu_final, from the strictly feasible start ``v``. The limit is
    the analytic centre of the optimal face: a canonical point *inside* the set of optimal
    solutions, the analogue of the interior point where ECOS (Gavel's solver) stops, as opposed
    to the vertex a simplex/HiGHS returns. With ``ftf = (rates, rem, since, e)`` the variables
    are (x row-major, t) and the convex barrier terms -log(t e_i - s_i - R_i / y_i),
    y_i = sum_j r_ij x_ij, of Gavel's finish-time-fairness problem are added. Returns None if the
    iteration breaks down numerically.
    """
    if ftf is not None:
        rates, rem, since, e = ftf
        m, n = rates.shape
        cols = np.arange(m * n).reshape(m, n)

    def ftf_g(v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        y = np.sum(rates * v[:-1].reshape(m, n), axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            return y, v[-1] * e - since - rem / y

    def value(v: np.ndarray, mu: float) -> float:
        s = b - a @ v
        if s.min() <= 0 or (num_nonneg and v[:num_nonneg].min() <= 0):
            return math.inf
        total = c @ v / mu - np.log(s).sum() - np.log(v[:num_nonneg]).sum()
        if ftf is not None:
            y, g = ftf_g(v)
            if y.min() <= 0 or not np.all(np.isfinite(g)) or g.min() <= 0:
                return math.inf
            total -= np.log(g).sum()
        return float(total)

    if not math.isfinite(value(v, 1.0)):
        return None
    mu = 1.0
    while True:
        for _ in range(200):
            s = b - a @ v
            if s.min() <= 0:
                return None
            grad = c / mu + a.T @ (1.0 / s)
            hess = (a.T * (1.0 / s**2)) @ a
            vn = v[:num_nonneg]
            grad[:num_nonneg] -= 1.0 / vn
            hess[np.arange(num_nonneg), np.arange(num_nonneg)] += 1.0 / vn**2
            if ftf is not None:
                y, g = ftf_g(v)
                dgx = rem[:, None] * rates / (y**2)[:, None]  # d g_i / d x_ij
                grad[cols] -= dgx / g[:, None]
                grad[-1] -= np.sum(e / g)
                block = np.einsum("ij,ik->ijk", dgx, dgx) / (g**2)[:, None, None]
                block += (
                    2.0 * np.einsum("ij,ik->ijk", rates, rates) * (rem / (y**3 * g))[:, None, None]
                )
                hess[cols[:, :, None], cols[:, None, :]] += block
                cross = dgx * (e / g**2)[:, None]
                hess[cols, -1] += cross
                hess[-1, cols] += cross
                hess[-1, -1] += np.sum(e**2 / g**2)
            try:
                with np.errstate(all="ignore"):
                    direction = -np.linalg.solve(hess, grad)
            except np.linalg.LinAlgError:
                direction = np.full(len(v), np.nan)
            decrement = float(-grad @ direction)
            if not math.isfinite(decrement) or decrement < 0:
                # Ill-conditioned near the end of the path: keep the last feasible point if the
                # path was followed far enough, else give up.
                return v if mu <= 1e-6 else None
            if decrement / 2.0 <= 1e-11:
                break
            f0 = value(v, mu)
            step = 1.0
            while value(v + step * direction, mu) > f0 - 0.25 * step * decrement:
                step *= 0.5
                if step < 1e-14:
                    break
            else:
                v = v + step * direction
                continue
            break  # no progress possible at this mu (rounding): keep the last feasible point
        if mu <= mu_final:
            return v
        mu = max(mu * 0.1, mu_final)


def _interior_start(rates: np.ndarray, sfs: np.ndarray, num_workers: np.ndarray) -> np.ndarray:
    """Half of the isolated allocation: strictly inside every base constraint."""
    m = rates.shape[0]
    xi = np.tile(num_workers / m, (m, 1)) / sfs[:, None]
    return 0.5 * xi / np.maximum(np.sum(xi, axis=1), 1.0)[:, None]


class _AlloX:
    """Gavel ``AlloXPolicy`` (``allox``; ``allox_alpha=<a>`` sets the fairness knob ``alpha``).

    Single-GPU jobs only. Jobs holding a whole device since the previous call keep it; the
    others (oldest first, at most max(int(alpha m), #free devices) of them) are matched to
    (free device, position in its queue) by a min-cost assignment with cost
    position * remaining steps / rate + time since arrival; the job matched to the front of each
    free device's queue gets share 1.0 on its type, the rest nothing until the next call.
    """

    name = "AlloX_Perf"

    def __init__(self, alpha: float = 1.0):
        self.alpha = alpha
        self._prev: dict[int, dict[str, float]] = {}

    def get_allocation(
        self,
        throughputs: Mapping[int, Mapping[str, float]],
        scale_factors: Mapping[int, int],
        times_since_start: Mapping[int, float],
        num_steps_remaining: Mapping[int, int],
        cluster_spec: Mapping[str, int],
    ) -> dict[int, dict[str, float]]:
        from scipy.optimize import linear_sum_assignment

        if not throughputs:
            return {}
        job_ids, worker_types, _, _ = _flatten(throughputs, cluster_spec)
        if any(scale_factors[j] != 1 for j in scale_factors):
            raise AssertionError("AlloX only supports jobs with scale factor 1 (Gavel asserts)")
        unallocated, allocated = [], []
        for job in throughputs:  # dict order = job id order, as in Gavel's _throughputs
            if job in self._prev and sum(self._prev[job][t] for t in worker_types) == 1.0:
                allocated.append(job)
            else:
                unallocated.append(job)
        device_type: list[str] = []
        for worker_type in worker_types:
            free = cluster_spec[worker_type] - sum(
                1 for j in allocated if self._prev[j][worker_type] == 1.0
            )
            device_type += [worker_type] * max(free, 0)
        n = len(device_type)
        unallocated.sort(key=lambda j: -times_since_start[j])  # stable: ties keep job order
        unallocated = unallocated[: max(int(self.alpha * len(unallocated)), n)]
        m = len(unallocated)
        q_base = np.zeros((m, n))
        for i, job in enumerate(unallocated):
            for d, worker_type in enumerate(device_type):
                rate = throughputs[job][worker_type] or 1e-10
                q_base[i, d] = num_steps_remaining[job] / rate
        q = np.concatenate([k * q_base for k in range(1, m + 1)], axis=1) if m else q_base
        since = np.array([times_since_start[j] for j in unallocated]).reshape(m, 1)
        rows, cols_ = linear_sum_assignment(q + since)
        per_device: dict[int, list[tuple[int, int]]] = {d: [] for d in range(n)}
        for r, c in zip(rows, cols_, strict=True):
            per_device[int(c) % n].append((unallocated[r], int(c) // n))
        allocation = {job: {t: 0.0 for t in cluster_spec} for job in job_ids}
        for job in job_ids:
            if job in self._prev:
                allocation[job] = dict(self._prev[job])
        for d, entries in per_device.items():
            if entries:
                # position k in the cost matrix counts from the back of the queue: the entry with
                # the largest k runs first
                first = sorted(entries, key=lambda e: len(entries) - 1 - e[1])[0][0]
                allocation[first][device_type[d]] = 1.0
        self._prev = allocation
        return allocation


# --------------------------------------------------------------------------------------------
# Simulator
# --------------------------------------------------------------------------------------------


@dataclass
class _Job:
    spec: TraceJob
    throughput: dict[str, float]
    steps_run: int = 0
    failures: int = 0
    latest_timestamp: float | None = None


class GavelSimulator:
    """Mirror of ``Scheduler.simulate`` (trace mode, ``ideal=False``) for fifo / LAS."""

    def __init__(
        self,
        jobs: Sequence[TraceJob],
        cluster: Mapping[str, int],
        throughputs: Mapping[str, Mapping[tuple[str, int], float]],
        policy: str = "fifo",
        seed: int = 0,
        gpus_per_server: Mapping[str, int] | None = None,
        round_seconds: float = DEFAULT_ROUND_SECONDS,
        reset_interval: float = MIN_TIME_BETWEEN_ALLOCATION_RESETS,
        lp_backend: str = "barrier",
        record_rounds: bool = False,
        allox_alpha: float = 1.0,
    ):
        if policy not in POLICIES:
            raise ValueError(f"policy must be one of {POLICIES}, got {policy!r}")
        if not jobs:
            raise ValueError("empty trace")
        arrivals = [j.arrival_time for j in jobs]
        if any(b < a for a, b in itertools.pairwise(arrivals)):
            raise ValueError("arrival times must be non-decreasing (Gavel asserts this)")
        self.jobs_in = list(jobs)
        self.oracle = throughputs
        self.T = float(round_seconds)
        self.reset_interval = float(reset_interval)
        self.record_rounds = record_rounds
        # Scheduler._initialize_seeds: only these two generators matter for a trace run.
        self.worker_type_shuffler = random.Random(seed + 5)
        self.policy_name = policy
        self.policy: (
            _FifoBase
            | _MaxMinFairnessAgnostic
            | _MaxMinFairnessPerf
            | _FinishTimeFairnessPerf
            | _MaxSumThroughputPerf
            | _AlloX
        )
        if policy == "fifo":
            self.policy = _FifoBase(seed)
        elif policy == "max_min_fairness":
            self.policy = _MaxMinFairnessAgnostic(lp_backend)
        elif policy == "allox":
            self.policy = _AlloX(allox_alpha)
        else:
            if policy == "max_min_fairness_perf":
                self.policy = _MaxMinFairnessPerf(lp_backend)
            elif policy == "finish_time_fairness_perf":
                self.policy = _FinishTimeFairnessPerf(lp_backend)
            else:
                self.policy = _MaxSumThroughputPerf(lp_backend)
        # simulate(): one _register_worker_callback per server, in sorted type order; a type
        # whose count is not a multiple of its server size loses the remainder (floor).
        self.cluster_spec: dict[str, int] = {}
        for worker_type in sorted(cluster):
            per_server = 1 if gpus_per_server is None else int(gpus_per_server[worker_type])
            servers = int(cluster[worker_type]) // per_server
            if servers > 0:
                self.cluster_spec[worker_type] = servers * per_server
        if not self.cluster_spec:
            raise ValueError("cluster has no GPUs")
        self.worker_types = list(self.cluster_spec)

        self.active: dict[int, _Job] = {}
        self.job_time: dict[int, dict[str, float]] = {}
        self.worker_time = {t: 0.0 for t in self.worker_types}
        self.priorities: dict[str, dict[int, float]] = {t: {} for t in self.worker_types}
        self.deficits: dict[str, dict[int, float]] = {t: {} for t in self.worker_types}
        self.allocation: dict[int, dict[str, float]] = {}
        self.need_to_update_allocation = True  # set by _register_worker_callback
        self.last_reset_time = 0.0
        self.now = 0.0
        self.jct: list[float | None] = [None] * len(jobs)
        self.finish: list[float | None] = [None] * len(jobs)
        self.busy_gpu_seconds = 0.0
        self.num_resets = 0
        self.rounds: list[tuple[float, dict[int, str]]] = []

    # ---- job bookkeeping (add_job / _remove_job / _done_callback) ----------------------------

    def _add_job(self, job_id: int) -> None:
        spec = self.jobs_in[job_id]
        key = (spec.job_type, spec.scale_factor)
        throughput = {}
        for worker_type in self.worker_types:
            table = self.oracle[worker_type]
            if key not in table:  # Gavel: KeyError in _read_throughputs_for_job_type
                raise KeyError(
                    f"job {job_id}: {key!r} has no measured throughput on {worker_type!r}"
                )
            throughput[worker_type] = table[key]
        self.active[job_id] = _Job(spec, throughput)
        self.job_time[job_id] = {t: self.T / 2.0 for t in self.worker_types}
        for worker_type in self.worker_types:
            self.priorities[worker_type][job_id] = 0.0
            self.deficits[worker_type][job_id] = 0.0
        self.need_to_update_allocation = True

    def _remove_job(self, job_id: int) -> None:
        job = self.active.pop(job_id)
        if job.failures < MAX_FAILED_ATTEMPTS:
            assert job.latest_timestamp is not None
            self.finish[job_id] = job.latest_timestamp
            self.jct[job_id] = job.latest_timestamp - job.spec.arrival_time
        del self.job_time[job_id]
        for worker_type in self.worker_types:
            del self.priorities[worker_type][job_id]
            del self.deficits[worker_type][job_id]
        self.need_to_update_allocation = True

    def _done(self, job_id: int, worker_type: str, num_steps: int, exec_time: float) -> None:
        job = self.active[job_id]
        sf = job.spec.scale_factor
        # The simulator hands each of the sf workers num_steps // sf steps (the last one gets
        # the rest); a worker reporting <= 0 steps or <= 0 s marks the micro-task failed.
        if (sf > 1 and num_steps // sf <= 0) or num_steps <= 0 or exec_time <= 0:
            job.failures += 1
            if job.failures >= MAX_FAILED_ATTEMPTS:
                self._remove_job(job_id)
            self.need_to_update_allocation = True
            return
        job.failures = 0
        job.steps_run += num_steps
        self.job_time[job_id][worker_type] += exec_time
        self.worker_time[worker_type] += exec_time
        self.busy_gpu_seconds += exec_time * sf
        if job.spec.total_steps - job.steps_run <= 0:
            self._remove_job(job_id)

    # ---- allocation and priorities (_reset_time_run_so_far / _update_priorities) -------------

    def _reset_time_run_so_far(self) -> None:
        elapsed = self.now - self.last_reset_time
        half = self.T / 2.0
        for worker_type in self.worker_types:
            self.worker_time[worker_type] = 0.0
            for job_id, times in self.job_time.items():
                time_received = times[worker_type] - half
                if job_id in self.allocation:
                    should = self.allocation[job_id][worker_type] * elapsed
                else:
                    should = 0
                self.deficits[worker_type][job_id] += should - time_received
                times[worker_type] = half
                self.worker_time[worker_type] += times[worker_type]
        self.last_reset_time = self.now

    def _compute_allocation(self) -> dict[int, dict[str, float]]:
        throughputs = {j: dict(job.throughput) for j, job in self.active.items()}
        scale_factors = {j: job.spec.scale_factor for j, job in self.active.items()}
        # Scheduler._get_allocation_state / _compute_allocation: which state each policy gets.
        if isinstance(self.policy, _FifoBase | _MaxSumThroughputPerf):
            return self.policy.get_allocation(throughputs, scale_factors, self.cluster_spec)
        if isinstance(self.policy, _FinishTimeFairnessPerf | _AlloX):
            since = {j: self.now - job.spec.arrival_time for j, job in self.active.items()}
            remaining = {j: job.spec.total_steps - job.steps_run for j, job in self.active.items()}
            return self.policy.get_allocation(
                throughputs, scale_factors, since, remaining, self.cluster_spec
            )
        weights = {j: job.spec.priority_weight for j, job in self.active.items()}
        return self.policy.get_allocation(throughputs, scale_factors, weights, self.cluster_spec)

    def _update_priorities(self) -> None:
        since_reset = self.now - self.last_reset_time
        interval_elapsed = since_reset >= self.reset_interval
        if self.need_to_update_allocation and (interval_elapsed or self.last_reset_time == 0):
            self._reset_time_run_so_far()
            self.allocation = self._compute_allocation()
            self.need_to_update_allocation = False
            self.num_resets += 1
        for worker_type in self.worker_types:
            total = self.worker_time[worker_type]
            for job_id in self.priorities[worker_type]:
                if job_id not in self.allocation:
                    self.priorities[worker_type][job_id] = 0.0
                    continue
                share = self.allocation[job_id][worker_type]
                fraction = 0.0 if total == 0.0 else self.job_time[job_id][worker_type] / total
                priority = share * 1e9
                if share == 0.0:
                    pass
                elif self.active[job_id].throughput[worker_type] == 0:
                    priority = 0
                elif fraction > 0.0:
                    priority = share / fraction
                self.priorities[worker_type][job_id] = priority

    # ---- one scheduling decision (_schedule_jobs_on_workers and its helper) ------------------

    def _schedule(self) -> dict[int, str]:
        self._update_priorities()
        order = [t for t in GAVEL_WORKER_TYPE_ORDER if t in self.cluster_spec]
        # Not 'Perf' and not 'Packing' in the policy name -> shuffle every round.
        if self.policy_name not in UNSHUFFLED_POLICIES:
            self.worker_type_shuffler.shuffle(order)
        queue = []
        for worker_type in order:
            entries = []
            for job_id in self.priorities[worker_type]:
                share = self.allocation[job_id][worker_type] if job_id in self.allocation else 0.0
                entries.append(
                    (
                        job_id,
                        worker_type,
                        self.priorities[worker_type][job_id],
                        self.deficits[worker_type][job_id],
                        share,
                    )
                )
            # Stable sort, descending on (priority, deficit, allocation): ties keep job order.
            queue += sorted(entries, key=lambda e: (e[2], e[3], e[4]), reverse=True)
        left = dict(self.cluster_spec)
        placed: dict[int, str] = {}
        for job_id, worker_type, priority, _deficit, _share in queue:
            if left[worker_type] == 0 or job_id in placed:
                continue
            job = self.active[job_id]
            if job.throughput[worker_type] <= 0:
                continue
            if self.policy_name == "fifo" and priority <= 0.0:
                continue
            sf = job.spec.scale_factor
            if sf > left[worker_type]:
                continue
            left[worker_type] -= sf
            placed[job_id] = worker_type
        # _assign_workers_to_job is skipped for jobs missing from the allocation: they hold the
        # GPUs in the count above but are not dispatched.
        return {j: t for j, t in placed.items() if j in self.allocation}

    # ---- main loop (Scheduler.simulate, from_trace=True) -------------------------------------

    def run(self) -> GavelResult:
        queued = list(range(len(self.jobs_in)))
        remaining = len(self.jobs_in)
        running: list[tuple[float, int, str, int]] = []  # (finish, job, type, steps)
        round_start, round_end = 0.0, None
        self.now = self.jobs_in[0].arrival_time
        num_rounds = 0
        idle_iterations = 0
        while True:
            if remaining == 0:
                break
            if queued:
                next_arrival: float | None = self.jobs_in[queued[0]].arrival_time
            else:
                next_arrival = None
                if not running:
                    self.last_reset_time = 0  # "force a reset"
            latest = max((r[0] for r in running), default=0.0)
            if latest > 0:
                if round_end is not None:
                    round_start = round_end
                round_end = latest
                self.now = latest
            elif next_arrival is not None:
                self.now = next_arrival
            # Every running job's micro-task ends by `latest`; heap order = latest finish first.
            for finish, job_id, worker_type, steps in sorted(running, key=lambda r: (-r[0], r[1])):
                self.active[job_id].latest_timestamp = finish
                self._done(job_id, worker_type, steps, finish - round_start)
                if job_id not in self.active:
                    remaining -= 1
            running = []
            while queued and self.jobs_in[queued[0]].arrival_time <= self.now:
                self._add_job(queued.pop(0))
            placed = self._schedule()
            if self.record_rounds and placed:
                self.rounds.append((self.now, dict(placed)))
            for job_id, worker_type in placed.items():
                job = self.active[job_id]
                rate = job.throughput[worker_type]
                steps = min(int(rate * self.T), job.spec.total_steps - job.steps_run)
                running.append((self.now + steps / rate, job_id, worker_type, steps))
            if running:
                num_rounds += 1
                idle_iterations = 0
            elif not queued and remaining > 0:
                idle_iterations += 1
                if idle_iterations > 2:  # Gavel would loop forever here
                    raise RuntimeError(
                        f"no job can ever be scheduled (active jobs: {sorted(self.active)})"
                    )
        done = [x for x in self.jct if x is not None]
        average = float(np.mean(done)) if done else math.nan
        total_gpus = sum(self.cluster_spec.values())
        utilization = self.busy_gpu_seconds / (total_gpus * self.now) if self.now > 0 else 0.0
        return GavelResult(
            jct=list(self.jct),
            finish_time=list(self.finish),
            average_jct=average,
            makespan=self.now,
            utilization=utilization,
            num_rounds=num_rounds,
            num_allocation_resets=self.num_resets,
            rounds=self.rounds,
        )


def simulate(
    jobs: Iterable[TraceJob],
    cluster: Mapping[str, int],
    throughputs: Mapping[str, Mapping[tuple[str, int], float]],
    policy: str = "fifo",
    seed: int = 0,
    gpus_per_server: Mapping[str, int] | None = None,
    round_seconds: float = DEFAULT_ROUND_SECONDS,
    **kwargs: object,
) -> GavelResult:
    """Run Gavel's trace simulation for ``policy`` (one of ``POLICIES``)."""
    sim = GavelSimulator(
        list(jobs),
        cluster,
        throughputs,
        policy=policy,
        seed=seed,
        gpus_per_server=gpus_per_server,
        round_seconds=round_seconds,
        **kwargs,  # type: ignore[arg-type]
    )
    return sim.run()


def parse_cluster(spec: str) -> dict[str, int]:
    """``"v100:8,p100:8,k80:8"`` (ours) or ``"8:8:8"`` (Gavel's #v100:#p100:#k80)."""
    if "," in spec or any(c.isalpha() for c in spec):
        out = {}
        for part in spec.split(","):
            name, count = part.split(":")
            out[name.strip().lower()] = int(count)
        return out
    v100, p100, k80 = (int(x) for x in spec.split(":"))
    return {"v100": v100, "p100": p100, "k80": k80}


if __name__ == "__main__":  # pragma: no cover - manual use
    import argparse
    import time

    parser = argparse.ArgumentParser(description="Gavel reference simulation")
    parser.add_argument("trace")
    parser.add_argument("--policy", default="fifo", choices=POLICIES)
    parser.add_argument("--cluster", default="v100:8,p100:8,k80:8")
    parser.add_argument("--throughputs", default=None)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--round", type=float, default=DEFAULT_ROUND_SECONDS)
    parser.add_argument("--lp-backend", default="barrier")
    args = parser.parse_args()
    tput_path = args.throughputs or (
        Path(__file__).resolve().parents[2]
        / "shared/data/throughput/gavel/simulation_throughputs.json"
    )
    started = time.perf_counter()
    res = simulate(
        parse_trace(args.trace),
        parse_cluster(args.cluster),
        load_throughputs(tput_path),
        policy=args.policy,
        seed=args.seed,
        round_seconds=args.round,
        lp_backend=args.lp_backend,
    )
    print(
        f"average JCT {res.average_jct:.3f} s ({res.average_jct_hours:.2f} h), "
        f"makespan {res.makespan:.1f} s, utilization {res.utilization:.3f}, "
        f"rounds {res.num_rounds}, resets {res.num_allocation_resets}, "
        f"dropped {sum(x is None for x in res.jct)}, "
        f"{time.perf_counter() - started:.1f} s wall"
    )
