"""Which devices can hold which jobs: footprints, platforms and the mask (clustersim.fit)."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from clustersim.catalog import load_catalog
from clustersim.compat import prepare
from clustersim.fit import (
    OVERHEAD_GB,
    can_run,
    device_memory_gb,
    fit_table,
    needs,
    platform,
)
from clustersim.jobs import JobTable
from clustersim.perf import PerformanceModel, ThroughputTable
from clustersim.spec import cluster_from_shorthand, cluster_from_spec

R50_64 = "ResNet-50 (batch size 64)"
R50_128 = "ResNet-50 (batch size 128)"
R50_16 = "ResNet-50 (batch size 16)"


def make_jobs(types: list[str], gpu_type: list[str] | None = None) -> JobTable:
    return JobTable.from_columns(
        job_id=[f"j{i}" for i in range(len(types))],
        submit_time=np.zeros(len(types)),
        num_gpus=np.ones(len(types), dtype=int),
        work=np.full(len(types), 1000.0),
        job_type=types,
        gpu_type=gpu_type,
    )


# -- footprints ----------------------------------------------------------------------------


def test_footprints_follow_the_documented_rule() -> None:
    # 0.5 GB overhead + 25,557,032 parameters × 4 B × (weights, gradients, 1 momentum slot)
    # + 128 samples × 0.113 GB
    assert OVERHEAD_GB == 0.5
    r50 = needs(R50_128)
    assert r50 is not None and r50.framework == "pytorch"
    assert r50.memory_gb == pytest.approx(0.5 + 25_557_032 * 4 * 3 / 1e9 + 128 * 0.113)
    assert r50.memory_gb == pytest.approx(15.2707, abs=1e-4)
    # A3C: four processes, each 0.5 GB + 588,967 × 4 B × (2 + 3 AMSGrad slots) + one
    # 0.054 GB rollout
    a3c = needs("A3C")
    assert a3c is not None
    assert a3c.memory_gb == pytest.approx(4 * (0.5 + 588_967 * 4 * 5 / 1e9 + 0.054))


def test_every_gavel_job_type_fits_where_gavel_measured_it() -> None:
    # P100 and V100 (16 GB) ran every type; a 12 GB K80 die every type but ResNet-50 with
    # batch size 128, which Gavel measured at 0 for scale factors 2-8 (it did not fit)
    table = ThroughputTable.load()
    over_12 = []
    for jt in table.job_types:
        need = needs(jt)
        assert need is not None and 0 < need.memory_gb <= 16.0, jt
        if need.memory_gb > 12.0:
            over_12.append(jt)
    assert over_12 == [R50_128]


@pytest.mark.parametrize(
    ("job_type", "framework"),
    [("vgg19", "tensorflow"), ("imagenet", "pytorch"), (" GNMT ", "pytorch")],
)
def test_model_names_have_a_framework_but_no_footprint(job_type: str, framework: str) -> None:
    need = needs(job_type)
    assert need is not None and need.framework == framework and math.isnan(need.memory_gb)


@pytest.mark.parametrize("job_type", ["", "my-llm", "ResNet-50", "ResNet-50 (batch size 0)"])
def test_undocumented_job_types_have_no_needs(job_type: str) -> None:
    assert needs(job_type) is None


# -- devices -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "want"),
    [
        ("H100-SXM5-80GB", "cuda"),
        ("v100", "cuda"),
        ("Jetson-Orin-Nano-8GB", "cuda"),
        ("MI300X", "rocm"),
        ("TPUv4", "tpu"),
        ("Gaudi2", "npu"),
    ],
)
def test_platforms_follow_kind_and_vendor(name: str, want: str) -> None:
    assert platform(load_catalog().get(name)) == want


def test_a_user_defined_gpu_of_unknown_vendor_is_a_plain_gpu() -> None:
    mine = dataclasses.replace(load_catalog().get("A10"), name="MyChip", aliases=())
    assert platform(mine) == "gpu"
    assert platform(dataclasses.replace(mine, kind="tpu")) == "tpu"


def test_a_k80_device_is_one_12_gb_die() -> None:
    cat = load_catalog()
    assert cat.get("K80").memory_gb == 24  # the catalog row is per two-die board
    assert device_memory_gb(cat.get("K80")) == 12.0
    assert device_memory_gb(cat.get("T4")) == 16.0


# -- the mask ------------------------------------------------------------------------------


def test_memory_decides_between_a_small_and_a_large_edge_device() -> None:
    # ResNet-50 bs64: 0.5 + 0.3067 + 64 × 0.113 = 8.04 GB > 8 GB of the Orin Nano
    cl = cluster_from_shorthand("Jetson-Orin-Nano-8GB:2:1,Jetson-AGX-Orin-64GB:2:1")
    mask, notes = can_run(make_jobs([R50_64, R50_16, ""]), cl)
    assert mask.tolist() == [[False, True], [True, True], [True, True]]
    assert any(
        n.startswith(
            "Jetson-Orin-Nano-8GB (8 GB per device) is too small for 1 job type "
            "(ResNet-50 (batch size 64) 8.04 GB): 1 job cannot"
        )
        for n in notes
    )


def test_cuda_job_types_do_not_run_on_tpus_or_gaudi_but_on_amd_gpus() -> None:
    cl = cluster_from_shorthand("TPUv4:4,Gaudi2:8,MI300X:8,V100:8")
    mask, notes = can_run(make_jobs([R50_64, "vgg19", "", "my-llm"]), cl)
    assert mask.tolist() == [
        [False, False, True, True],
        [False, False, True, True],
        [True, True, True, True],
        [True, True, True, True],
    ]
    assert any(n.startswith("TPUv4 (tpu): PyTorch/TensorFlow job types") for n in notes)


def test_measurements_win_over_the_estimate_on_gavel_workers() -> None:
    # ResNet-50 bs128 (15.3 GB) was measured on a 12 GB K80 die: it may run there, but not on
    # another 12 GB GPU
    twelve = {
        "name": "Twelve",
        "fp16_tflops": 30,
        "memory_gb": 12,
        "memory_bw_tbs": 0.5,
        "busy_w": 250,
        "price_per_hour": 1,
        "release_year": 2018,
    }
    cl = cluster_from_spec(
        {
            "accelerators": [twelve],
            "pools": [
                {"accelerator": "K80", "nodes": 1},
                {"accelerator": "Twelve", "nodes": 1},
            ],
        }
    )
    fit = fit_table([R50_128, R50_64], cl)
    assert fit.table.tolist() == [[True, False], [True, True]]


# -- through the performance model ---------------------------------------------------------


def test_the_performance_model_zeroes_rates_where_a_job_does_not_fit() -> None:
    cl = cluster_from_shorthand("Jetson-Orin-Nano-8GB:2:1,Jetson-AGX-Orin-64GB:2:1")
    jobs = make_jobs([R50_64, R50_16])
    free = PerformanceModel(fit_check=False).prepare(jobs, cl)
    r = PerformanceModel().prepare(jobs, cl)
    assert free.rate[0, 0] > 0 and r.rate[0, 0] == 0.0
    np.testing.assert_array_equal(r.rate[0, 1], free.rate[0, 1])
    np.testing.assert_array_equal(r.rate[1], free.rate[1])
    assert r.fits_nowhere.tolist() == [False, False]
    # the placement model agrees: no rate on the Nano for any placement
    assert r.placement_rate(np.array([0]), np.array([0]), np.array([1]), np.array([np.inf]))[0] == 0


def test_jobs_only_the_check_keeps_off_every_type_are_flagged() -> None:
    # job 0 fits nowhere (8.04 GB on 8 GB); job 1 asks for a type the cluster lacks
    cl = cluster_from_shorthand("Jetson-Orin-Nano-8GB:2:1")
    r = PerformanceModel().prepare(make_jobs([R50_64, R50_16], ["", "H100"]), cl)
    assert r.fits_nowhere.tolist() == [True, False]
    assert (r.rate == 0).all()
    assert any(n.startswith("1 job fits no accelerator type") for n in r.notes)
    # a job constrained to the Nano it cannot fit on, in a cluster with room elsewhere
    cl = cluster_from_shorthand("Jetson-Orin-Nano-8GB:2:1,Jetson-AGX-Orin-64GB:2:1")
    r = PerformanceModel().prepare(make_jobs([R50_64], ["Jetson-Orin-Nano-8GB"]), cl)
    assert r.fits_nowhere.tolist() == [True]


def test_compatibility_modes_turn_the_check_off() -> None:
    cl = cluster_from_shorthand("Jetson-Orin-Nano-8GB:2:1")
    jobs = make_jobs([R50_64])
    assert prepare(jobs, cl, "fifo").rates.rate[0, 0] == 0.0
    assert prepare(jobs, cl, "gavel-fifo", compat="gavel").rates.rate[0, 0] > 0
    assert not prepare(jobs, cl, "gavel-fifo", compat="gavel").rates.fits_nowhere.any()
