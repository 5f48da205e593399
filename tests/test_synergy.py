"""Synergy (scheduling/synergy.py) and the CPU/memory sensitivity model
(clustersim/aux_speed.py): hand-worked traces and an executable restatement of the rules of
Synergy's simulator that we reproduce (msr-fiddle/synergy, ``simulator/``;
docs/synergy-fidelity.md)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from clustersim.aux_speed import TASK_MODELS, Sensitivity, assign_synergy_models, profiles
from clustersim.compat import prepare
from clustersim.engine import simulate
from clustersim.errors import ClustersimError, SimulationError
from scheduling.base import Decision, Policy, State
from scheduling.registry import make_placement, make_policy
from tests.simple import cluster, fixed_rates, jobs
from tests.test_resources import limited


def _run(t, cl, policy="synergy", **params):  # type: ignore[no-untyped-def]
    return simulate(
        t,
        cl,
        make_policy(policy, **params),
        make_placement("consolidate"),
        rates=fixed_rates(t, cl),
    )


def _synergy_server(n: int = 1):  # type: ignore[no-untyped-def]
    """``n`` servers of Synergy's simulator: 8 GPUs, 24 cores, 500 GB each."""
    return limited([("A", 8)] * n, cpu=[24] * n, mem=[500] * n)


# -- the profiles --------------------------------------------------------------------------


def test_every_profile_is_one_at_the_proportional_share_and_its_speedup_at_its_ideal() -> None:
    # the reference's own consistency: tput[3 cores][62.5 GB] == 1 (the normalisation) and
    # ModelStats.speedup == tput at (cpus, mem) (what its TUNE applies when a job gets them)
    p = profiles()
    every = np.arange(len(p.names))
    assert np.allclose(p.throughput(every, np.full(10, 3.0), np.full(10, 62.5)), 1.0)
    assert np.allclose(p.throughput(every, p.ideal_cpu, p.ideal_mem), p.speedup)


def test_throughput_interpolates_the_grid_by_hand() -> None:
    p = profiles()
    res18 = p.names.index("res18")
    m5 = p.names.index("m5")
    # res18 rows 6 cores 1.75, 9 cores 2.4: at 7.5 cores halfway, 1.75 + 0.5 * 0.65 = 2.075
    # below one core it falls linearly: 0.37 (1 core) * 0.5 = 0.185
    # m5 at 6 cores: 62.5 GB 1.5, 125 GB 2.0; at 93.75 GB halfway: 1.75
    got = p.throughput(
        np.array([res18, res18, m5]), np.array([7.5, 0.5, 6.0]), np.array([62.5, 62.5, 93.75])
    )
    assert np.allclose(got, [2.075, 0.185, 1.75])


def test_the_multiplier_is_relative_to_the_demand_and_caps_unprofiled_jobs_at_one() -> None:
    t = jobs(
        [(0.0, 1, 10.0)] * 3,
        job_type=["res18", "", "ResNet-18 (batch size 32)"],
        cpu=[3.0, 4.0, 6.0],
        mem_gb=[62.5, 8.0, 62.5],
    )
    s = Sensitivity(t)
    assert s.prof.tolist() == [1, -1, 1]  # a Gavel ResNet-18 is Synergy's res18
    # res18 demand 3 cores: at 9 cores 2.4 / 1; unprofiled at 2 of its 4 cores: 0.5, at 8
    # cores: capped at 1; Gavel ResNet-18 asking 6 cores (1.75): at 9 cores 2.4 / 1.75
    got = s.multiplier(np.array([0, 1, 1, 2]), np.array([9.0, 2.0, 8.0, 9.0]), np.full(4, 62.5))
    assert np.allclose(got, [2.4, 0.5, 1.0, 2.4 / 1.75])


# -- model assignment: executable restatement of jobs/model_zoo.py, ModelAssignment.OVERALL --


def _reference_assignment(n: int, split: tuple[int, int, int]) -> list[str]:
    """The reference's rule, written its way: tasks in a dict (image, language, speech),
    ``sorted(..., key=priority, reverse=True)[0]``, priority ``percent/100 - share`` updated
    after every job (``Task.update_priority``, only once a job exists), models of a task in
    turn (``Task.get_next_model``)."""
    tasks: dict[str, dict[str, Any]] = {
        name: {"pct": pct, "total": 0, "prio": 0.0, "last": 0}
        for name, pct in zip(TASK_MODELS, split, strict=True)
    }
    out = []
    for _ in range(n):
        name, task = sorted(tasks.items(), key=lambda x: x[1]["prio"], reverse=True)[0]
        models = TASK_MODELS[name]
        out.append(models[task["last"] % len(models)])
        task["last"] += 1
        task["total"] += 1
        total = sum(x["total"] for x in tasks.values())
        for x in tasks.values():
            x["prio"] = x["pct"] / 100 - x["total"] / total
    return out


@pytest.mark.parametrize("split", [(20, 70, 10), (34, 33, 33), (50, 0, 50)])
def test_model_assignment_follows_the_reference_rule(split: tuple[int, int, int]) -> None:
    t = jobs([(float(i), 1, 10.0) for i in range(600)])
    got = assign_synergy_models(t, split).job_type.tolist()
    assert got == _reference_assignment(600, split)


def test_model_assignment_by_hand_and_it_keeps_given_types() -> None:
    # 20/70/10: job 0 all tie -> image (alexnet); job 1 image -0.8, language 0.7 -> gnmt;
    # job 2 language 0.7 - 1/2 = 0.2 > speech 0.1 -> transformer; job 3 language
    # 0.7 - 2/3 = 0.033 < speech 0.1 -> m5; job 4 language 0.7 - 2/4 = 0.2 -> lstm
    t = jobs([(float(i), 1, 10.0) for i in range(6)], job_type=["", "", "", "", "", "X"])
    got = assign_synergy_models(t).job_type.tolist()
    assert got == ["alexnet", "gnmt", "transformer", "m5", "lstm", "X"]


# -- hand-worked runs ----------------------------------------------------------------------


def test_a_case_where_cpu_proportional_allocation_loses() -> None:
    # One Synergy server (8 GPUs, 24 cores, 500 GB). Four gnmt jobs (1 GPU, 1,000 s of work
    # at the proportional share; ideal 1 core, 20 GB, speedup 1) and two res18 (1 GPU,
    # 2,400 s; ideal 9 cores, 62.5 GB, speedup 2.4), all at 0, demand 3 cores and 62.5 GB per
    # GPU (the proportional share). FIFO order.
    # GPU-proportional: every job 3 cores; gnmt ends at 1,000, res18 at 2,400 (speed 1).
    # TUNE: gnmt x4 take 1 core each (4), res18 #1 9 (13), res18 #2 9 (22 <= 24): both res18
    # at 2.4x, ending at 2,400 / 2.4 = 1,000. Mean JCT (4 x 1,000 + 2 x 2,400) / 6 = 1,466.7
    # against 1,000.
    t = jobs(
        [(0.0, 1, 1000.0)] * 4 + [(0.0, 1, 2400.0)] * 2,
        job_type=["gnmt"] * 4 + ["res18"] * 2,
        cpu=[3.0] * 6,
        mem_gb=[62.5] * 6,
    )
    cl = _synergy_server()
    prop = _run(t, cl, base="fifo", allocation="proportional")
    tune = _run(t, cl, base="fifo")
    assert prop.finish.tolist() == [1000.0] * 4 + [2400.0] * 2
    assert tune.finish.tolist() == [1000.0] * 6
    assert prop.aux is not None and tune.aux is not None
    assert prop.aux.cpu_dev.tolist() == [3.0] * 6
    assert tune.aux.cpu_dev.tolist() == [1.0] * 4 + [9.0] * 2
    assert tune.finish.mean() < prop.finish.mean()


def test_tune_cuts_a_job_back_to_its_share_and_gives_it_back_when_cores_free() -> None:
    # One node of 4 GPUs, 12 cores, 250 GB (3 cores, 62.5 GB per GPU); res18 jobs, demand
    # the proportional share; FIFO; rounds of 300 s.
    # 0: A takes its ideal 9 cores (3 left); B's 9 does not fit, its share 3 does (0 left).
    #    A at 2.4x, B at 1x.
    # 300: C (arrived at 100) fits neither 9 nor 3 cores: the node's jobs above their share
    #    are cut back, most cores per GPU first: A to 3 (6 free), C takes 3.
    #    A has done 300 x 2.4 = 720 of 2,400.
    # 600: nothing changes (3 cores free; A and B would need 6 more).
    # 900: C (600 s at 1x) ended at 900; 6 cores free: A, first in order, gets 9 back.
    #    A has done 720 + 600 = 1,320; 1,080 left at 2.4x: ends at 900 + 450 = 1,350.
    # 1,500 (the round after A ends): B has done 1,500, gets 9 cores: 900 / 2.4 = 375 s more,
    #    ends at 1,875.
    t = jobs(
        [(0.0, 1, 2400.0), (0.0, 1, 2400.0), (100.0, 1, 600.0)],
        job_type=["res18"] * 3,
        cpu=[3.0] * 3,
        mem_gb=[62.5] * 3,
    )
    cl = limited([("A", 4)], cpu=[12], mem=[250])
    r = _run(t, cl, base="fifo")
    assert r.first_start.tolist() == [0.0, 0.0, 300.0]
    assert r.finish.tolist() == [1350.0, 1875.0, 900.0]
    assert r.policy_stats["synergy_cutbacks"] == 1.0
    assert r.policy_stats["synergy_regrowths"] == 2.0
    # GPU-proportional: A and B at 1x end at 2,400; C at 300 + 600
    p = _run(t, cl, base="fifo", allocation="proportional")
    assert p.finish.tolist() == [2400.0, 2400.0, 900.0]


def test_greedy_skips_a_job_whose_ideal_does_not_fit() -> None:
    # Synergy-GREEDY: the ideal or nothing. Same node as above, A and B res18 at 0: A takes
    # 9 cores, B's 9 do not fit: B waits for A (2,400 / 2.4 = 1,000) and starts at the next
    # round of the fixed grid, 1,200 (the GPUs idle from 1,000), ending at 1,200 + 1,000.
    t = jobs([(0.0, 1, 2400.0)] * 2, job_type=["res18"] * 2, cpu=[3.0] * 2, mem_gb=[62.5] * 2)
    cl = limited([("A", 4)], cpu=[12], mem=[250])
    r = _run(t, cl, base="fifo", allocation="greedy")
    assert r.finish.tolist() == [1000.0, 2200.0]


def test_synergy_fair_orders_by_finish_time_fairness() -> None:
    # One GPU (no CPU/memory limits: GPUs only); A (900 s) and B (300 s) at 0; rounds 300 s.
    # 0: both rho = (0 + work) / work = 1: arrival order, A runs.
    # 300: rho_A = (300 + 600) / 900 = 1, rho_B = (300 + 300) / 300 = 2: B runs, ends 600.
    # 600: A runs its last 600 s: ends at 1,200.  FIFO: A 900, B 1,200.
    # Synergy's simulator sorts the ratio ascending (ftf_order="reference"): at 300 A (1)
    # stays before B (2), as FIFO.
    t = jobs([(0.0, 1, 900.0), (0.0, 1, 300.0)])
    cl = cluster([("A", 1)])
    fair = _run(t, cl, "synergy-fair")
    fifo = _run(t, cl, base="fifo")
    assert fair.finish.tolist() == [1200.0, 600.0]
    assert fifo.finish.tolist() == [900.0, 1200.0]
    ref = _run(t, cl, "synergy-fair", ftf_order="reference")
    assert ref.finish.tolist() == [900.0, 1200.0]


def test_srtf_and_las_bases_by_hand() -> None:
    # One GPU; A (900 s) at 0, B (300 s) at 100. SRTF: at 300 A has 600 left, B 300: B runs
    # 300-600, A ends 1,200. LAS: at 300 A attained 300, B 0: B runs 300-600; at 600 both
    # 300: arrival order, A ends at 1,200.
    t = jobs([(0.0, 1, 900.0), (100.0, 1, 300.0)])
    cl = cluster([("A", 1)])
    assert _run(t, cl, base="srtf").finish.tolist() == [1200.0, 600.0]
    assert _run(t, cl, base="las").finish.tolist() == [1200.0, 600.0]


def test_a_multi_gpu_ideal_is_capped_at_one_server_as_the_reference_does() -> None:
    # Reference (jobs/workload.py add_synergy_profile): a 4-GPU alexnet asks 4 x 12 = 48
    # cores > 24 per server: capped to 24, i.e. 6 per GPU; a 16-GPU job (more GPUs than a
    # server) gets the proportional share, 3 per GPU. Memory 4 x 125 = 500 is not above 500.
    t = jobs([(0.0, 4, 10.0), (0.0, 16, 10.0)], job_type=["alexnet"] * 2)
    pol = make_policy("synergy")
    r = simulate(t, _synergy_server(2), pol, rates=fixed_rates(t, _synergy_server(2)))
    assert np.isfinite(r.finish).all()
    assert pol._ideal_c.tolist() == [6.0, 3.0]  # type: ignore[attr-defined]
    assert pol._ideal_m.tolist() == [125.0, 62.5]  # type: ignore[attr-defined]


# -- the engine's side ---------------------------------------------------------------------


class _Grow(Policy):
    """Starts job 0 at 2 cores per device, then asks for ``want`` cores while it runs."""

    name = "grow-test"
    preemptive = True
    round_s = 10.0

    def __init__(self, want: float) -> None:
        self.want = want

    def schedule(self, state: State) -> Decision:
        a = state.active
        if not len(a):
            return Decision(run=a)
        c = 2.0 if not state.running[0] else self.want
        return Decision(run=a[:1], aux=np.array([[c, 1.0]]))


def test_a_running_job_grows_only_into_free_cores() -> None:
    t = jobs([(0.0, 1, 100.0)], cpu=[2.0], mem_gb=[1.0])
    cl = limited([("A", 2)], cpu=[4], mem=[10])
    ok = simulate(t, cl, _Grow(4.0), rates=fixed_rates(t, cl))
    assert ok.aux is not None and ok.aux.cpu_dev.tolist() == [4.0]
    # unprofiled: never faster than at its demand, so it still ends at 100
    assert ok.finish.tolist() == [100.0]
    with pytest.raises(SimulationError, match="past what its nodes have free"):
        simulate(t, cl, _Grow(5.0), rates=fixed_rates(t, cl))


def test_a_job_below_its_demand_runs_slower() -> None:
    # unprofiled job demanding 2 cores, given 1: half speed, 100 s of work takes 200 s
    class Half(Policy):
        name = "half-test"
        preemptive = True

        def schedule(self, state: State) -> Decision:
            a = state.active
            return Decision(run=a, aux=np.tile([1.0, 1.0], (len(a), 1)))

    t = jobs([(0.0, 1, 100.0)], cpu=[2.0], mem_gb=[1.0])
    cl = limited([("A", 2)], cpu=[4], mem=[10])
    assert simulate(t, cl, Half(), rates=fixed_rates(t, cl)).finish.tolist() == [200.0]


# -- --compat synergy ----------------------------------------------------------------------


def test_compat_synergy_gives_models_demands_and_durations() -> None:
    t = jobs([(0.0, 1, 100.0), (5.0, 2, 50.5)])
    p = prepare(t, _synergy_server(), "synergy", compat="synergy")
    assert p.jobs.job_type.tolist() == ["alexnet", "gnmt"]
    assert p.jobs.cpu.tolist() == [3.0, 6.0]
    assert p.jobs.mem_gb.tolist() == [62.5, 125.0]
    assert p.jobs.work.tolist() == [100.0, 50.5]  # not read in whole seconds
    assert (p.rates.restore_s == 0.0).all()
    assert p.placement.name == "consolidate"


def test_compat_synergy_needs_cores_and_memory_and_covers_only_synergy() -> None:
    t = jobs([(0.0, 1, 100.0)])
    with pytest.raises(ClustersimError, match="cpu_cores or host_mem_gb"):
        prepare(t, cluster([("A", 8)]), "synergy", compat="synergy")
    with pytest.raises(ClustersimError, match="does not cover policy 'fifo'"):
        prepare(t, _synergy_server(), "fifo", compat="synergy")
    with pytest.raises(ClustersimError, match="no placement 'spread'"):
        prepare(t, _synergy_server(), "synergy", placement="spread", compat="synergy")


def test_bad_parameters_name_themselves() -> None:
    with pytest.raises(ValueError, match="base"):
        make_policy("synergy", base="sjf")
    with pytest.raises(ValueError, match="allocation"):
        make_policy("synergy-fair", allocation="all")
    with pytest.raises(ValueError, match="round_s"):
        make_policy("synergy", round_s=0.0)


def test_same_input_same_result() -> None:
    rng = np.random.default_rng(3)
    n = 60
    t = jobs(
        [
            (float(s), int(g), float(w))
            for s, g, w in zip(
                np.sort(rng.uniform(0, 5000, n)).round(),
                rng.choice([1, 1, 2, 4], n),
                rng.uniform(100, 3000, n).round(),
                strict=True,
            )
        ],
    )
    t = assign_synergy_models(t)
    from clustersim.resources import apply_demand

    t = apply_demand(t, "synergy")
    cl = _synergy_server(2)
    a = _run(t, cl)
    b = _run(t, cl)
    assert np.array_equal(a.finish, b.finish)
    assert np.isfinite(a.finish).all()


def _alloc_at(r, j: int, t: float) -> tuple[float, float]:  # type: ignore[no-untyped-def]
    """Job ``j``'s allocation per device at ``t``: its last logged change at or before ``t``."""
    ch = r.aux.changes
    k = np.flatnonzero((ch[1] == j) & (ch[0] <= t))
    if not len(k):
        return float(r.aux.cpu_dev[j]), float(r.aux.mem_dev[j])  # never changed: its demand
    return float(ch[2, k[-1]]), float(ch[3, k[-1]])


@pytest.mark.parametrize(
    ("policy", "params"),
    [
        ("synergy", {}),
        ("synergy", {"base": "las"}),
        ("synergy", {"allocation": "greedy"}),
        ("synergy", {"allocation": "proportional"}),
        ("synergy-fair", {}),
    ],
)
def test_cores_and_memory_are_never_over_committed_as_allocations_change(
    policy: str, params: dict[str, Any]
) -> None:
    """At every stint start and allocation change, each node's cores and memory in use (each
    running stint's devices × its job's allocation then) stay within the node's."""
    from clustersim.resources import apply_demand

    rng = np.random.default_rng(11)
    n = 80
    rows = zip(
        np.sort(rng.uniform(0, 20_000, n)).round(),
        rng.choice([1, 1, 1, 2, 4], n),
        rng.uniform(200, 4000, n).round(),
        strict=True,
    )
    t = apply_demand(assign_synergy_models(jobs([(s, int(g), w) for s, g, w in rows])), "synergy")
    cl = limited([("A", 4)] * 2, cpu=[12, 12], mem=[250, 250])
    r = _run(t, cl, policy, **params)
    assert np.isfinite(r.finish).all()
    assert r.aux is not None
    st = r.stints
    times = np.unique(np.concatenate([st.start, r.aux.changes[0]]))
    for now in times.tolist():
        on = np.flatnonzero((st.start <= now) & (st.end > now))
        use_c = np.zeros(cl.n_nodes)
        use_m = np.zeros(cl.n_nodes)
        for i in on.tolist():
            c, m = _alloc_at(r, int(st.job[i]), now)
            use_c[st.node[i]] += st.devices[i] * c
            use_m[st.node[i]] += st.devices[i] * m
        assert (use_c <= cl.node_cpu + 1e-9).all(), (now, use_c)
        assert (use_m <= cl.node_mem + 1e-9).all(), (now, use_m)
    if policy == "synergy" and not params:
        assert r.policy_stats["synergy_cutbacks"] > 0  # the trace makes TUNE cut jobs back


def test_a_resource_no_node_limits_never_holds_a_job_back() -> None:
    # memory unlimited (no host_mem_gb): only cores count; the same case as the loss above
    t = jobs(
        [(0.0, 1, 1000.0)] * 4 + [(0.0, 1, 2400.0)] * 2,
        job_type=["gnmt"] * 4 + ["res18"] * 2,
        cpu=[3.0] * 6,
        mem_gb=[62.5] * 6,
    )
    cl = limited([("A", 8)], cpu=[24])
    assert _run(t, cl, base="fifo").finish.tolist() == [1000.0] * 6
