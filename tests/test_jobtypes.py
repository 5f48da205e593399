"""Assigning Gavel job types to jobs without one, and reference speeds."""

from __future__ import annotations

import math

import numpy as np
import pytest

from clustersim.errors import ClustersimError
from clustersim.jobs import JobTable
from clustersim.jobtypes import DEFAULT_BUCKETS_S, assign_job_types, reference_speed
from clustersim.perf import (
    REFERENCE_INTRA_GBS,
    REFERENCE_NETWORK_GBS,
    PerformanceModel,
    ThroughputTable,
)
from clustersim.spec import cluster_from_spec

TABLE = ThroughputTable.load()
SINGLE_ONLY = {"A3C", "CycleGAN"} | {t for t in TABLE.job_types if t.startswith("Recommendation")}


def workload(n: int = 400, seed: int = 3, sizes: tuple[int, ...] = (1, 1, 1, 2, 4, 8)) -> JobTable:
    """Jobs with Philly-like durations (10 s to 3 days) and gang sizes, no job types."""
    rng = np.random.default_rng(seed)
    return JobTable.from_columns(
        job_id=np.arange(n),
        submit_time=np.sort(rng.uniform(0, 1e5, n)),
        num_gpus=rng.choice(sizes, n),
        work=10 ** rng.uniform(1, 5.4, n),
    )


def p100_rates(jobs: JobTable, devices_per_node: int = 8, intra: float | None = None) -> np.ndarray:
    pool: dict[str, object] = {
        "accelerator": "P100",
        "nodes": 8,
        "devices_per_node": devices_per_node,
        "nic_gbps": REFERENCE_NETWORK_GBS * 8,
    }
    if intra is not None:
        pool["intra_gbs"] = intra
    cluster = cluster_from_spec({"pools": [pool]})
    return PerformanceModel().prepare(jobs, cluster).rate[:, 0]


def test_the_same_seed_gives_the_same_types() -> None:
    jobs = workload()
    a, notes_a = assign_job_types(jobs, seed=7)
    b, notes_b = assign_job_types(jobs, seed=7)
    c, _ = assign_job_types(jobs, seed=8)
    assert list(a.job_type) == list(b.job_type) and notes_a == notes_b
    assert np.array_equal(a.work, b.work)
    assert list(a.job_type) != list(c.job_type)
    assert set(a.job_type) <= set(TABLE.job_types) and "" not in set(a.job_type)


@pytest.mark.parametrize("rule", ["duration", "uniform"])
def test_the_duration_on_p100_is_preserved(rule: str) -> None:
    jobs = workload(sizes=(1, 2, 3, 4, 8, 16))
    out, notes = assign_job_types(jobs, seed=1, rule=rule)
    rate = p100_rates(out, intra=REFERENCE_INTRA_GBS)
    assert np.all(rate > 0)
    assert out.work / rate == pytest.approx(jobs.work, rel=1e-9)
    assert any("duration on P100 is unchanged" in n for n in notes)


def test_measured_scale_factors_keep_their_duration_on_any_p100_cluster() -> None:
    jobs = workload(sizes=(1, 2, 4, 8))
    out, _ = assign_job_types(jobs, seed=2)
    rate = p100_rates(out)  # catalog interconnect, not the reference one
    assert out.work / rate == pytest.approx(jobs.work, rel=1e-9)
    one = (out.num_gpus == 1) & (out.job_type == "ResNet-50 (batch size 32)")
    steps_per_s = TABLE.value("p100", "ResNet-50 (batch size 32)", 1)
    assert out.work[one] == pytest.approx(jobs.work[one] * steps_per_s)


def test_only_jobs_without_a_type_change() -> None:
    base = workload(n=60)
    given = np.array(["", "ResNet-50 (batch size 32)", "cifar10"] * 20, dtype=object)
    jobs = base.replace(job_type=given)
    out, notes = assign_job_types(jobs, seed=0)
    typed = given != ""
    assert list(out.job_type[typed]) == list(given[typed])
    assert np.array_equal(out.work[typed], jobs.work[typed])
    assert "" not in set(out.job_type)
    assert "assigned to 20 of 20 jobs" in notes[0]
    same, notes = assign_job_types(out, seed=0)
    assert same is out and "none assigned" in notes[0]


def test_multi_gpu_jobs_get_distributed_job_types() -> None:
    out, _ = assign_job_types(workload(sizes=(2, 4, 8, 16)), seed=4)
    assert not set(out.job_type) & SINGLE_ONLY
    out, _ = assign_job_types(workload(sizes=(1,)), seed=4)
    assert set(out.job_type) & SINGLE_ONLY


def test_the_duration_rule_deals_an_exact_mix_per_bucket() -> None:
    n = 26 * 5
    jobs = JobTable.from_columns(
        job_id=np.arange(n), submit_time=np.zeros(n), num_gpus=np.ones(n), work=np.full(n, 100.0)
    )
    out, _ = assign_job_types(jobs, seed=9)
    _, counts = np.unique(out.job_type.astype(str), return_counts=True)
    assert len(counts) == 26 and set(counts) == {5}


def test_an_override_mapping_is_respected() -> None:
    jobs = workload()
    mapping: dict[float, list[str] | dict[str, float]] = {
        3600: ["LM (batch size 20)"],
        math.inf: {"ResNet-18 (batch size 32)": 3, "Transformer (batch size 64)": 1},
    }
    out, notes = assign_job_types(jobs, seed=5, mapping=mapping)
    short = jobs.work <= 3600
    assert set(out.job_type[short]) == {"LM (batch size 20)"}
    long_types = out.job_type[~short]
    assert set(long_types) == {"ResNet-18 (batch size 32)", "Transformer (batch size 64)"}
    share = np.mean(long_types == "ResNet-18 (batch size 32)")
    assert share == pytest.approx(0.75, abs=0.03)
    assert any("3600, inf" in n for n in notes)


def test_jobs_beyond_the_last_bucket_keep_no_type() -> None:
    jobs = workload()
    out, notes = assign_job_types(jobs, mapping={3600: ["LM (batch size 20)"]})
    assert set(out.job_type[jobs.work > 3600]) == {""}
    assert np.array_equal(out.work[jobs.work > 3600], jobs.work[jobs.work > 3600])
    assert any("kept no job type" in n for n in notes)


def test_single_gpu_only_candidates_serve_multi_gpu_jobs_when_nothing_else_fits() -> None:
    jobs = workload(sizes=(2,))
    out, notes = assign_job_types(jobs, mapping={math.inf: ["A3C"]})
    assert set(out.job_type) == {"A3C"}
    assert any("without a distributed job type" in n for n in notes)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"rule": "random"}, "unknown job-type rule"),
        ({"mapping": {}}, "non-empty"),
        ({"mapping": {"soon": ["A3C"]}}, "not a number"),
        ({"mapping": {-1: ["A3C"]}}, "positive"),
        ({"mapping": {10: "A3C"}}, "list of job types"),
        ({"mapping": {10: []}}, "no candidates"),
        ({"mapping": {10: ["GPT-5"]}}, "not a measured job type"),
        ({"mapping": {10: {"A3C": 0}}}, "weight"),
        ({"mapping": {10: ["A3C"], "10": ["CycleGAN"]}}, "same bound"),
    ],
)
def test_bad_rules_and_mappings_are_errors(kwargs: dict, match: str) -> None:
    with pytest.raises(ClustersimError, match=match):
        assign_job_types(workload(n=5), **kwargs)


def test_default_buckets_end_open() -> None:
    assert DEFAULT_BUCKETS_S[-1] == math.inf
    assert list(DEFAULT_BUCKETS_S) == sorted(DEFAULT_BUCKETS_S)


def test_reference_speeds() -> None:
    assert reference_speed("P100") == 1.0 == reference_speed("tesla p100")
    assert (reference_speed("V100") or 0) > 1.0 > (reference_speed("T4") or 2)
    assert (reference_speed("H100") or 0) > (reference_speed("A100") or 0) > 1.0
    assert reference_speed("MISC") is None and reference_speed("G2") is None
    assert reference_speed("V100", compute_fraction=0.0) == pytest.approx(0.900 / 0.732, rel=0.02)
