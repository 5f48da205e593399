"""Gandiva (``scheduling/gandiva.py``): time slicing, packing and migration for locality on
traces worked by hand, invariants, and parameter checks."""

from __future__ import annotations

import numpy as np
import pytest

from clustersim.engine import simulate
from scheduling.gandiva import Gandiva
from scheduling.params import policy_errors
from scheduling.registry import make_policy
from tests.simple import FixedRates, cluster, fixed_rates, jobs

LM = "LM (batch size 40)"
TF = "Transformer (batch size 64)"
R50 = "ResNet-50 (batch size 64)"
# Gavel's simulation_throughputs.json, worker v100, scale factor 1: isolated steps/s, and the
# steps/s of each job when LM and TF share one V100
LM_ISO, TF_ISO = 45.23737155222392, 8.61775899193302
LM_PACKED, TF_PACKED = 35.157412505381124, 5.335370954960623
# ... and of ResNet-50 with TF: 2.55026372359856 and 1.7739250679955958
R50_ISO = 4.394774823323071


def test_three_jobs_on_two_devices_take_turns_of_one_quantum() -> None:
    # 3 one-device jobs of 120 s each, all at 0, on one node of 2 devices, quantum 60 s:
    #   0-60    jobs 0, 1 run (everyone last ran at submit 0: index order)
    #   60      job 2 (last ran: never, stamp 0) first, then 0 (stamp 60, lower index): 1 is
    #           suspended with 60 s done
    #   120     job 0 finishes (120 s done); 1 and 2 are left, 2 jobs on 2 devices: not
    #           oversubscribed, both run: 1 resumes (60 s left), 2 goes on (60 s left)
    #   180     jobs 1 and 2 finish
    t = jobs([(0.0, 1, 120.0)] * 3)
    cl = cluster([("A", 2)])
    r = simulate(t, cl, Gandiva(quantum_s=60.0, resume_s=None), rates=fixed_rates(t, cl))
    np.testing.assert_allclose(r.finish, [120.0, 180.0, 180.0])
    assert r.preemptions.tolist() == [0, 1, 0]


def test_a_resume_pays_the_restore_delay_of_the_model_when_asked() -> None:
    # as above with a 10 s restore delay on every resume (resume_s=None: the model's): job 1
    # resumes at 120, stalls to 130 and needs 60 s more: 190; jobs 0 and 2 never resume
    # (first starts pay nothing)
    t = jobs([(0.0, 1, 120.0)] * 3)
    cl = cluster([("A", 2)])
    rates = fixed_rates(t, cl, restore_s=10.0)
    r = simulate(t, cl, Gandiva(quantum_s=60.0, resume_s=None), rates=rates)
    np.testing.assert_allclose(r.finish, [120.0, 190.0, 180.0])


def test_a_suspend_resume_costs_resume_s_not_the_checkpoint_restore() -> None:
    # the same trace and model (10 s restore), Gandiva's in-memory suspend of 2 s: job 1
    # resumes at 120, stalls to 122, 60 s more: 182. The default (1 s) gives 181.
    t = jobs([(0.0, 1, 120.0)] * 3)
    cl = cluster([("A", 2)])
    rates = fixed_rates(t, cl, restore_s=10.0)
    r = simulate(t, cl, Gandiva(quantum_s=60.0, resume_s=2.0), rates=rates)
    np.testing.assert_allclose(r.finish, [120.0, 182.0, 180.0])
    r = simulate(t, cl, Gandiva(quantum_s=60.0), rates=rates)
    np.testing.assert_allclose(r.finish, [120.0, 181.0, 180.0])


def test_no_slicing_when_the_cluster_is_not_oversubscribed() -> None:
    # 2 jobs on 2 devices: both run from 0 to their ends, whatever the quantum
    t = jobs([(0.0, 1, 500.0), (0.0, 1, 300.0)])
    cl = cluster([("A", 2)])
    r = simulate(t, cl, Gandiva(quantum_s=60.0, resume_s=None), rates=fixed_rates(t, cl))
    np.testing.assert_allclose(r.finish, [500.0, 300.0])
    assert r.preemptions.sum() == 0


def pair_trace(a: str, b: str, iso: tuple[float, float], work: tuple[float, float]):  # type: ignore[no-untyped-def]
    table = jobs([(0.0, 1, work[0]), (0.0, 1, work[1])], job_type=[a, b])
    rates = FixedRates(rate=np.array([[iso[0]], [iso[1]]]), restore_s=np.zeros(2))
    return table, cluster([("V100", 1)]), rates


def test_a_pair_that_gains_is_packed_at_its_measured_rates() -> None:
    # LM and TF on one V100: fa + fb = 35.157/45.237 + 5.335/8.618 = 0.7772 + 0.6191 = 1.396
    # > 1, so the two share the device instead of taking turns. TF co-located runs TF_PACKED
    # steps/s: work TF_PACKED·500 ends it at 500. LM co-located does LM_PACKED·500 by then,
    # then runs alone (not oversubscribed: the pair is split) at LM_ISO: LM_ISO·250 more
    # ends it at 750.
    work = (LM_PACKED * 500 + LM_ISO * 250, TF_PACKED * 500)
    table, cl, rates = pair_trace(LM, TF, (LM_ISO, TF_ISO), work)
    pol = Gandiva(quantum_s=60.0, resume_s=None)
    r = simulate(table, cl, pol, rates=rates)
    np.testing.assert_allclose(r.finish, [750.0, 500.0])
    assert r.policy_stats["pairs_formed"] == 1.0
    assert r.policy_stats["colocations"] == 1.0
    assert r.preemptions.tolist() == [0, 0]
    np.testing.assert_allclose(r.device_time[:, 0], [750.0, 0.0])  # the guest holds none


def test_a_pair_that_loses_is_time_sliced_instead() -> None:
    # ResNet-50 with TF: fa + fb = 2.550/4.395 + 1.774/8.618 = 0.580 + 0.206 = 0.786 < 1:
    # no pair; they take turns. R50 needs 120 s alone, TF 60 s, quantum 60 s:
    #   0-60 R50 (index order); 60-120 TF (waited longest); TF done at 120; R50 alone
    #   120-180 (60 s left)
    work = (R50_ISO * 120, TF_ISO * 60)
    table, cl, rates = pair_trace(R50, TF, (R50_ISO, TF_ISO), work)
    r = simulate(table, cl, Gandiva(quantum_s=60.0, resume_s=None), rates=rates)
    np.testing.assert_allclose(r.finish, [180.0, 120.0])
    assert r.policy_stats["pairs_formed"] == 0.0
    assert r.preemptions.tolist() == [1, 0]


def test_the_threshold_can_refuse_a_pair_that_gains() -> None:
    # LM with TF gains 0.396 over time slicing: a threshold of 0.5 refuses the pair; they
    # take turns: LM (120 s alone) 0-60, TF (60 s) 60-120, LM 120-180
    work = (LM_ISO * 120, TF_ISO * 60)
    table, cl, rates = pair_trace(LM, TF, (LM_ISO, TF_ISO), work)
    r = simulate(table, cl, Gandiva(quantum_s=60.0, pack_threshold=0.5, resume_s=None), rates=rates)
    np.testing.assert_allclose(r.finish, [180.0, 120.0])
    assert r.policy_stats["pairs_formed"] == 0.0
    # and without packing at all, the same
    r2 = simulate(table, cl, Gandiva(quantum_s=60.0, packing=False, resume_s=None), rates=rates)
    np.testing.assert_allclose(r2.finish, [180.0, 120.0])


def test_a_pair_is_split_when_the_cluster_is_no_longer_oversubscribed() -> None:
    # 2 V100s; LM, TF and an unmeasured job X (100 s) at 0: 3 jobs on 2 devices, so LM and TF
    # are packed (LM hosts) and X runs alone. At 100 X ends: 2 jobs on 2 devices, the pair is
    # split. LM goes on on its device at LM_ISO: LM_PACKED·100 + LM_ISO·200 ends it at 300.
    # TF leaves its host (one preemption) for the free device at TF_ISO: TF_PACKED·100 +
    # TF_ISO·300 ends it at 400.
    table = jobs(
        [
            (0.0, 1, LM_PACKED * 100 + LM_ISO * 200),
            (0.0, 1, TF_PACKED * 100 + TF_ISO * 300),
            (0.0, 1, 100.0),
        ],
        job_type=[LM, TF, ""],
    )
    rates = FixedRates(rate=np.array([[LM_ISO], [TF_ISO], [1.0]]), restore_s=np.zeros(3))
    r = simulate(table, cluster([("V100", 2)]), Gandiva(resume_s=None), rates=rates)
    np.testing.assert_allclose(r.finish, [300.0, 400.0, 100.0])
    assert r.policy_stats["pairs_formed"] == 1.0 and r.policy_stats["pairs_split"] == 1.0
    assert r.preemptions.tolist() == [0, 1, 0]


def migration_trace():  # type: ignore[no-untyped-def]
    # nodes of 4, 2 and 2 devices. Job 0 (4 devices, 100 s) takes the 4-device node at 0;
    # job 1 (4 devices, 1000 s) arrives at 1 and must span the two 2-device nodes.
    t = jobs([(0.0, 4, 100.0), (1.0, 4, 1000.0)])
    cl = cluster([("A", 4), ("A", 2), ("A", 2)])
    return t, cl, fixed_rates(t, cl, restore_s=5.0)


def test_a_spread_job_moves_to_a_node_that_frees_up() -> None:
    # at 100 job 0 finishes and frees the 4-device node: job 1 (on 2 nodes, 99 s done) is
    # moved there, paying the model's 5 s restore (resume_s=None): 901 s left from 105, it
    # ends at 1006; with the default resume_s of 1 s: 901 s left from 101, it ends at 1002
    t, cl, rates = migration_trace()
    r = simulate(t, cl, Gandiva(resume_s=None), rates=rates)
    np.testing.assert_allclose(r.finish, [100.0, 1006.0])
    assert r.migrations.tolist() == [0, 1] and r.preemptions.tolist() == [0, 1]
    assert r.policy_stats["locality_migrations"] == 1.0
    assert r.max_nodes.tolist() == [1, 2]
    r = simulate(t, cl, Gandiva(), rates=rates)
    np.testing.assert_allclose(r.finish, [100.0, 1002.0])


def test_without_migration_the_spread_job_stays() -> None:
    # no move: job 1 runs from 1 to 1001 on its two nodes
    t, cl, rates = migration_trace()
    r = simulate(t, cl, Gandiva(migrate=False, resume_s=None), rates=rates)
    np.testing.assert_allclose(r.finish, [100.0, 1001.0])
    assert r.migrations.tolist() == [0, 0] and r.policy_stats["locality_migrations"] == 0.0


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_gavel_jobs_on_a_mixed_cluster_all_finish_within_capacity(seed: int) -> None:
    # random Gavel job types and gangs on v100:4, k80:4 (two nodes of 2 each), rates from the
    # performance model: every job finishes once, no type is ever over-allocated, and every
    # pair the engine formed had one gang size (else the engine would have refused it)
    from clustersim.perf import ThroughputTable

    rng = np.random.default_rng(seed)
    types = list(ThroughputTable.load().job_types)
    n = 40
    submit = np.sort(rng.uniform(0, 2000, n)).round(1)
    gpus = rng.choice([1, 1, 1, 2, 4], n)
    work = rng.uniform(500, 20000, n).round(1)
    kinds = rng.choice(types, n).tolist()
    t = jobs(list(zip(submit.tolist(), gpus.tolist(), work.tolist(), strict=True)), job_type=kinds)
    cl = cluster([("V100", 2), ("V100", 2), ("K80", 2), ("K80", 2)])
    r = simulate(t, cl, make_policy("gandiva"))
    assert np.isfinite(r.finish).all()
    busy = r.seg_busy.sum(axis=2)
    assert (busy <= cl.devices_per_type()[None, :] + 1e-9).all()
    assert (r.first_start >= t.submit_time).all()
    assert r.policy_stats["pairs_formed"] >= 0


@pytest.mark.parametrize(
    ("params", "bad"),
    [
        ({"quantum_s": 0}, "quantum_s"),
        ({"quantum_s": -60}, "quantum_s"),
        ({"pack_threshold": -0.1}, "pack_threshold"),
        ({"packing": "yes"}, "packing"),
        ({"migrate": 3}, "migrate"),
    ],
)
def test_a_bad_parameter_is_refused_by_name(params: dict[str, object], bad: str) -> None:
    errors = policy_errors("gandiva", params, "policies[0]")
    assert errors and bad in " ".join(errors)


def test_the_defaults_are_the_documented_ones() -> None:
    # the paper's 60 s quantum and a 1 s suspend-resume (module doc)
    p = make_policy("gandiva")
    assert p.params() == {
        "quantum_s": 60.0,
        "packing": True,
        "pack_threshold": 0.0,
        "migrate": True,
        "resume_s": 1.0,
    }
    assert p.round_s == 60.0 and p.resume_s == 1.0 and p.preemptive and p.colocates
