"""Dominant resource fairness (DRF) over users, on GPUs, host CPU cores and host memory."""

from __future__ import annotations

import numpy as np

from clustersim.kernels import drf_fill
from clustersim.resources import per_device_demand
from scheduling.base import Decision, FloatArray, IntArray, Policy, State

_EPS = 1e-9


class DRF(Policy):
    """Progressive filling by users' dominant shares over (GPUs, CPU cores, memory).

    DRF (Ghodsi et al., NSDI'11, §4 and Algorithm 1) gives the next task to the user with the
    smallest *dominant share*, the largest of its shares of each resource: here GPUs (all
    types of the cluster as one pool), host CPU cores and host memory
    (:mod:`clustersim.resources`: a job needs ``num_gpus`` devices and its ``cpu`` and
    ``mem_gb`` demand). At each decision the users' current allocations (their running jobs)
    set their shares; the user with the smallest share has its next queued job (its oldest)
    started if the free resources hold it, its share grows by the job's demand, and filling
    goes on until no user's next job fits. A user whose next job does not fit gets nothing
    more in this decision, and the others go on (as Mesos offers the rest to the next
    framework). Ties go to the user who appeared first in the trace.

    Non-preemptive by default, as Mesos's allocator is (it offers free resources; it does not
    take resources back to restore fairness): running jobs keep their devices, and fairness
    is restored only as jobs finish. ``preemptive=True`` refills from scratch at every
    decision (every active job a candidate, running ones as their user's next in line in
    arrival order): the allocation is then DRF's at each instant, and jobs that lose their
    place are suspended (paying the checkpoint/restore delay).

    Departures from the paper:

    - GPUs of every type count as one resource (a device is a device), and a job runs on the
      fastest type with room, as the engine picks it; DRF itself knows one pool per resource;
    - a user's jobs are served in arrival order (the paper's tasks of one user are alike);
    - fit is checked on the cluster's totals (free devices of the job's type, free cores and
      memory summed over nodes); the engine then places the job on nodes where its share of
      cores and memory fits, and a job the nodes cannot hold although the totals could
      waits (fragmentation);
    - a resource any node leaves unlimited (no ``cpu_cores`` or ``host_mem_gb`` in the spec)
      has an infinite total, so it contributes no share; jobs without CPU or memory demand
      contribute none either (give one with ``--aux-demand``, ``docs/resources.md``).
    - Users are the trace's ``user``; a job without one belongs to its ``vc`` and a job
      with neither is a user of its own.

    Parameters
    ----------
    preemptive
        Refill from scratch at each decision, suspending jobs DRF no longer runs.
    """

    name = "drf"
    citation = (
        "Ghodsi et al., Dominant Resource Fairness: Fair Allocation of Multiple Resource "
        "Types, NSDI'11"
    )
    preemptive = False

    def __init__(self, preemptive: bool = False) -> None:
        if preemptive:
            self.preemptive = True  # type: ignore[misc]
        self._jobs: object = None
        self._user: IntArray = np.zeros(0, dtype=np.int64)
        self._cpu: FloatArray = np.zeros(0)
        self._mem: FloatArray = np.zeros(0)
        self._n_users = 0
        self._totals: FloatArray = np.zeros(3)

    def reset(self, rng: np.random.Generator) -> None:
        self._jobs = None

    def _bind(self, state: State) -> None:
        """Users (numbered by first appearance) and per-device demands of the trace's jobs."""
        jobs = state.jobs
        n = len(jobs)
        user = np.asarray(jobs.user, dtype=str)
        vc = np.asarray(jobs.vc, dtype=str)
        ids = np.asarray(jobs.job_id, dtype=str)
        key = np.where(user != "", np.char.add("u:", user), np.char.add("v:", vc))
        key = np.where((user == "") & (vc == ""), np.char.add("j:", ids), key)
        _, first, inv = np.unique(key, return_index=True, return_inverse=True)
        rank = np.empty(len(first), dtype=np.int64)
        rank[np.argsort(first, kind="stable")] = np.arange(len(first))
        self._user = rank[inv].reshape(n)
        self._cpu, self._mem = per_device_demand(jobs)
        self._n_users = len(first)
        cl = state.cluster
        self._totals = np.array(
            [float(state.capacity.sum()), float(cl.node_cpu.sum()), float(cl.node_mem.sum())]
        )
        self._jobs = jobs

    def schedule(self, state: State) -> Decision:
        if self._jobs is not state.jobs:
            self._bind(state)
        active = state.active
        if not len(active):
            return Decision(run=np.zeros(0, dtype=np.int64))
        totals, n_users = self._totals, self._n_users
        gang = state.jobs.num_gpus
        user, cpu_dev, mem_dev = self._user, self._cpu, self._mem
        use = np.zeros((n_users, 3))  # GPUs, cores, GB each user holds
        if self.preemptive:
            cand = active
            free = state.capacity.copy()
            left = totals.copy()
        else:
            running = state.running[active]
            held = active[running]
            cand = active[~running]
            free = state.free.copy()
            n = state.alloc_n[held].astype(np.float64)
            for r, col in enumerate((n, n * cpu_dev[held], n * mem_dev[held])):
                use[:, r] = np.bincount(user[held], weights=col, minlength=n_users)
            left = totals - use.sum(axis=0)
        if not len(cand):
            return Decision(run=np.zeros(0, dtype=np.int64))
        with np.errstate(divide="ignore", invalid="ignore"):
            inv = np.where(np.isfinite(totals) & (totals > 0), 1.0 / totals, 0.0)
        slack = _EPS * np.maximum(totals, 1.0)
        # each user's candidates in arrival order; the filling is one compiled call
        # (clustersim.kernels.drf_fill; tests/test_aux_fast.py keeps the Python loop it
        # replaced and checks they agree)
        keys = user[cand]
        if n_users < 1 << 15:  # numpy's stable sort of 16-bit keys is a radix sort
            keys = keys.astype(np.int16)
        order = cand[np.argsort(keys, kind="stable")]
        u_of = user[order]
        cut = np.flatnonzero(u_of[1:] != u_of[:-1]) + 1
        starts = np.concatenate(([0], cut))
        ends = np.append(starts[1:], len(order))
        users = u_of[starts]
        free = free.astype(np.int64)  # the kernel takes the starts' devices from it
        out = np.empty(len(order), dtype=np.int64)
        k = drf_fill(
            order,
            users,
            starts,
            ends,
            use,
            inv,
            slack,
            free,
            float(left[1]),
            float(left[2]),
            gang,
            cpu_dev,
            mem_dev,
            state.rate,
            state.alloc_type,
            state.running,
            bool(self.preemptive),
            out,
        )
        return Decision(run=out[:k].copy())
