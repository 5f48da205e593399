"""Gavel's round policies read only the jobs that matter now.

A pass of :class:`scheduling.gavel.GavelRounds` costs time in proportion to the active jobs
and those that ran since the last allocation reset, not to the whole trace: it must give the
same decisions when every other job's row of the state is garbage.
"""

from __future__ import annotations

import numpy as np
import pytest

from clustersim.compat import prepare
from clustersim.engine import EngineOptions, simulate
from clustersim.spec import cluster_from_shorthand
from clustersim.traces import read_trace
from scheduling.base import Decision, Policy, State

TRACE = "gavel/generated/gavel_synth_multigpu_lam900_n100.trace"


class FutureRowsAreNaN(Policy):
    """Passes the inner policy a copy of the state in which the time on each type of every
    job not submitted yet is NaN (what a sum over all jobs would spread everywhere)."""

    def __init__(self, inner: Policy) -> None:
        self.inner = inner
        self.name = inner.name  # type: ignore[misc]
        self.preemptive = inner.preemptive  # type: ignore[misc]
        self.round_s = inner.round_s
        self.rounds_only = inner.rounds_only  # type: ignore[misc]
        self.poisoned = 0

    def reset(self, rng: np.random.Generator) -> None:
        self.inner.reset(rng)

    def schedule(self, state: State) -> Decision:
        future = state.jobs.submit_time > state.now
        self.poisoned += int(future.any())
        type_time = state.type_time.copy()
        type_time[future] = np.nan
        copy = State(
            now=state.now,
            jobs=state.jobs,
            cluster=state.cluster,
            active=state.active,
            running=state.running,
            alloc_type=state.alloc_type,
            alloc_n=state.alloc_n,
            rate=state.rate,
            first_start=state.first_start,
            last_start=state.last_start,
            preemptions=state.preemptions,
            free=state.free,
            capacity=state.capacity,
            remaining=state.remaining,
            attained=state.attained,
            executed=state.executed,
            type_time=type_time,
            round_index=state.round_index,
            n_running=state.n_running,
            pending=state.pending,
            best_rate=state.best_rate,
        )
        return self.inner.schedule(copy)


@pytest.mark.parametrize("policy", ["gavel-fifo", "gavel-las"])
def test_a_pass_never_reads_the_jobs_still_to_come(shared_data, policy: str) -> None:  # type: ignore[no-untyped-def]
    jobs, _ = read_trace(shared_data / "traces" / TRACE)
    cluster = cluster_from_shorthand("v100:8,p100:8,k80:8")

    def run(wrap: bool):  # type: ignore[no-untyped-def]
        p = prepare(jobs, cluster, policy, compat="gavel")
        pol = FutureRowsAreNaN(p.policy) if wrap else p.policy
        opts = EngineOptions(**p.engine)
        return pol, simulate(p.jobs, cluster, pol, p.placement, rates=p.rates, options=opts)

    _, plain = run(False)
    wrapper, poisoned = run(True)
    assert wrapper.poisoned > 50  # most passes see jobs still to come
    assert poisoned.finish.tobytes() == plain.finish.tobytes()
    assert poisoned.preemptions.tolist() == plain.preemptions.tolist()
