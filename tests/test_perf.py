"""The performance model: measured rates, extrapolation, placement, constraints, restores."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from clustersim.cluster import AcceleratorType, Cluster, Region
from clustersim.errors import ClustersimError
from clustersim.jobs import JobTable
from clustersim.perf import (
    GAVEL_WORKERS,
    MODEL_PARAMETERS,
    REFERENCE_INTRA_GBS,
    REFERENCE_TYPE,
    JobRates,
    PerformanceModel,
    ThroughputTable,
    fit_compute_fractions,
    gavel_worker,
)

PACKAGE_TABLE = (
    Path(__file__).resolve().parents[1] / "clustersim" / "data" / "gavel_throughputs.json"
)
TABLE = ThroughputTable.load()
INF = float("inf")

# (job type, scale factor) pairs where Gavel measured the V100 slower than the P100.
# The model returns measurements as they are, so these inversions stay.
V100_SLOWER_THAN_P100 = {
    ("Recommendation (batch size 512)", 1),
    ("Recommendation (batch size 1024)", 1),
    ("Recommendation (batch size 2048)", 1),
    ("Recommendation (batch size 4096)", 1),
    ("Recommendation (batch size 8192)", 1),
    ("ResNet-18 (batch size 16)", 1),
    ("ResNet-18 (batch size 32)", 1),
    ("ResNet-18 (batch size 128)", 2),
    ("ResNet-50 (batch size 16)", 2),
    ("ResNet-50 (batch size 16)", 4),
    ("ResNet-50 (batch size 16)", 8),
    ("ResNet-50 (batch size 32)", 4),
    ("ResNet-50 (batch size 32)", 8),
    ("ResNet-50 (batch size 64)", 4),
    ("ResNet-50 (batch size 64)", 8),
    ("Transformer (batch size 16)", 2),
    ("Transformer (batch size 16)", 4),
    ("Transformer (batch size 256)", 1),
    ("Transformer (batch size 256)", 2),
    ("Transformer (batch size 256)", 4),
}

# (job type, scale factor) pairs of Gavel's two shipped traces without a measurement.
GAVEL_TRACE_UNMEASURED = {
    *((jt, sf) for jt in ("A3C", "CycleGAN") for sf in (2, 4, 8, 32)),
    *(
        (f"Recommendation (batch size {b})", sf)
        for b in (512, 1024, 2048, 4096)
        for sf in (2, 4, 8, 32)
    ),
    *(("Recommendation (batch size 8192)", sf) for sf in (2, 4, 8)),
    *((f"LM (batch size {b})", 32) for b in (5, 10, 20, 40, 80)),
    *((f"ResNet-18 (batch size {b})", 32) for b in (16, 32, 64, 128, 256)),
    ("ResNet-18 (batch size 64)", 16),
    *((f"ResNet-50 (batch size {b})", 32) for b in (16, 32, 64, 128)),
    *((f"Transformer (batch size {b})", 32) for b in (16, 32, 64, 128, 256)),
}


def acc(name: str, tflops: float, bw: float, aliases: Sequence[str] = ()) -> AcceleratorType:
    return AcceleratorType(
        name=name,
        kind="gpu",
        fp16_tflops=tflops,
        memory_gb=16.0,
        memory_bw_tbs=bw,
        busy_w=300.0,
        idle_w=30.0,
        price_per_hour=1.0,
        release_year=2020,
        aliases=tuple(aliases),
    )


K80 = acc("K80", 8.73, 0.48, ("k80",))
P100 = acc("P100", 18.7, 0.732, ("p100",))
V100 = acc("V100-SXM2-16GB", 125.0, 0.9, ("v100",))
V100_32 = acc("V100-SXM2-32GB", 125.0, 0.9, ("v100-32gb",))
A100 = acc("A100-SXM4-80GB", 312.0, 2.039, ("a100",))
H100 = acc("H100-SXM", 989.4, 3.35, ("h100",))
T4 = acc("T4", 65.0, 0.32)


def make_cluster(
    types: Sequence[AcceleratorType],
    devices: int = 8,
    intra_gbs: float = 150.0,
    nic_gbps: float = 10.0,
) -> Cluster:
    """Two nodes of every type, ``devices`` each, one rack."""
    n = 2 * len(types)
    return Cluster(
        name="test",
        types=tuple(types),
        node_type=np.repeat(np.arange(len(types), dtype=np.int64), 2),
        node_devices=np.full(n, devices, dtype=np.int64),
        node_rack=np.zeros(n, dtype=np.int64),
        node_region=np.zeros(n, dtype=np.int64),
        node_intra_gbs=np.full(n, intra_gbs),
        node_nic_gbps=np.full(n, nic_gbps),
        node_overhead_w=np.zeros(n),
        rack_oversub=np.ones(1),
        regions=(Region(name="r"),),
        node_availability=np.ones(n),
    )


def make_jobs(pairs: Sequence[tuple[str, int]], gpu_type: Sequence[str] | None = None) -> JobTable:
    """One job per (job type, num_gpus), submitted in order."""
    return JobTable.from_columns(
        job_id=[f"j{i}" for i in range(len(pairs))],
        submit_time=np.arange(len(pairs), dtype=np.float64),
        num_gpus=[p[1] for p in pairs],
        work=np.full(len(pairs), 1000.0),
        job_type=[p[0] for p in pairs],
        gpu_type=list(gpu_type) if gpu_type is not None else None,
    )


def measured_pairs() -> list[tuple[str, int]]:
    return sorted(TABLE.measured_pairs())


def read_gavel_trace(path: Path) -> list[tuple[str, int]]:
    rows = []
    for line in path.read_text().splitlines():
        f = line.split("\t")
        rows.append((f[0], int(f[6])))
    return rows


def at(rates: JobRates, i: int, t: int, n: int, link: float) -> float:
    return float(
        rates.placement_rate(
            np.array([i], dtype=np.int64),
            np.array([t], dtype=np.int64),
            np.array([n], dtype=np.int64),
            np.array([link]),
        )[0]
    )


GAVEL = make_cluster([K80, P100, V100])


# ------------------------------------------------------------------ the table


def test_shipped_table_is_gavels_simulation_table(shared_data: Path) -> None:
    src = shared_data / "throughput" / "gavel" / "simulation_throughputs.json"
    assert PACKAGE_TABLE.read_bytes() == src.read_bytes()
    assert len(TABLE.job_types) == 26
    assert TABLE.scale_factors.tolist() == [1, 2, 4, 8]


def test_it_parses_keys_without_eval() -> None:
    t = ThroughputTable.from_mapping(
        {
            "v100": {
                "('X (batch size 2)', 1)": {"null": 3.0},
                "('X (batch size 2)', 4)": {"null": 9},
            },
            "v100_unconsolidated": {"('X (batch size 2)', 4)": {"null": 5.0}},
            "tpu": {"anything": {}},
        }
    )
    assert t.job_types == ("X (batch size 2)",)
    assert t.value("v100", "X (batch size 2)", 4) == 9.0
    assert t.value("v100", "X (batch size 2)", 4, consolidated=False) == 5.0
    assert np.isnan(t.value("p100", "X (batch size 2)", 1))
    for bad in ("__import__('os').getcwd()", "('X', one)", "X, 1"):
        with pytest.raises(ClustersimError, match="bad key"):
            ThroughputTable.from_mapping({"k80": {bad: {"null": 1.0}}})
    with pytest.raises(ClustersimError, match="numeric"):
        ThroughputTable.from_mapping({"k80": {"('X', 1)": {"null": "fast"}}})


def test_it_matches_gavel_workers_by_name() -> None:
    names = {
        "K80": 0,
        "Tesla P100-PCIE-16GB": 1,
        "V100-SXM2-32GB": 2,
        "v100m32": 2,
        "GV100": -1,
        "P1000": -1,
        "A100-SXM4-80GB": -1,
    }
    for name, want in names.items():
        assert gavel_worker(acc(name, 1.0, 1.0)) == want, name
    assert gavel_worker(acc("Volta-16", 1.0, 1.0, ("nvidia-v100",))) == 2
    assert REFERENCE_TYPE == "P100"


def test_compute_fractions_are_fractions() -> None:
    f = fit_compute_fractions(TABLE)
    assert np.all((f >= 0) & (f <= 1))
    rec = [i for i, jt in enumerate(TABLE.job_types) if jt.startswith("Recommendation")]
    assert np.all(f[rec] == 0.0)  # bandwidth-bound: V100 no faster than P100


# ------------------------------------------------------------------ measured values


@pytest.mark.parametrize("intra", [150.0, 16.0])
def test_measured_values_are_returned_exactly_on_consolidated_placements(intra: float) -> None:
    pairs = measured_pairs()
    cl = make_cluster([K80, P100, V100, V100_32], intra_gbs=intra)
    r = PerformanceModel().prepare(make_jobs(pairs), cl)
    assert not r.extrapolated.any()
    for i, (jt, sf) in enumerate(pairs):
        for t, w in enumerate(["k80", "p100", "v100", "v100"]):
            want = TABLE.value(w, jt, sf)
            if np.isnan(want):
                continue
            link = INF if sf == 1 else intra
            assert r.rate[i, t] == pytest.approx(want, rel=1e-12, abs=0), (jt, sf, w)
            assert at(r, i, t, sf, link) == pytest.approx(want, rel=1e-12, abs=0)
            assert r.measured[i, t]


def test_unconsolidated_measurements_are_reproduced_at_the_measured_network() -> None:
    pairs = [p for p in measured_pairs() if p[1] > 1]
    r = PerformanceModel().prepare(make_jobs(pairs), GAVEL)
    checked = 0
    for i, (jt, sf) in enumerate(pairs):
        for t, w in enumerate(GAVEL_WORKERS):
            tc = TABLE.value(w, jt, sf)
            tu = TABLE.value(w, jt, sf, consolidated=False)
            got = at(r, i, t, sf, 1.25)
            if np.isnan(tu) or tc == 0:
                continue
            if tu < tc:
                assert got == pytest.approx(tu, rel=1e-9), (jt, sf, w)
                checked += 1
            else:  # noise: no measurable slowdown; the parameter-count gradient is used
                assert got < tc
    assert checked == 121  # of 159 (type, job type, scale factor) pairs with both values


def test_a_gavel_like_cluster_reproduces_unconsolidated_rates_on_its_nic() -> None:
    cl = make_cluster([V100], devices=4, nic_gbps=40.0)
    model = PerformanceModel(measured_network_gbs=40.0 / 8)
    r = model.prepare(make_jobs([("ResNet-50 (batch size 16)", 8)]), cl)
    # 8 devices do not fit on a 4-device node: the consolidated rate crosses the NIC.
    assert not r.measured[0, 0]
    assert r.rate[0, 0] == pytest.approx(
        TABLE.value("v100", "ResNet-50 (batch size 16)", 8, consolidated=False), rel=1e-9
    )


def test_a_measured_zero_means_the_job_cannot_run_there() -> None:
    jt = "ResNet-50 (batch size 128)"
    r = PerformanceModel().prepare(make_jobs([(jt, 1), (jt, 2), (jt, 8)]), GAVEL)
    assert r.rate[0, 0] > 0
    assert r.rate[1, 0] == 0 and r.rate[2, 0] == 0
    assert np.all(r.rate[:, 1:] > 0)


# ------------------------------------------------------------------ ordering


def test_newer_types_are_faster_except_where_gavel_measured_otherwise() -> None:
    slower = set()
    for jt, sf in measured_pairs():
        k80, p100, v100 = (TABLE.value(w, jt, sf) for w in GAVEL_WORKERS)
        assert p100 >= k80, (jt, sf)
        if v100 < p100:
            slower.add((jt, sf))
    assert slower == V100_SLOWER_THAN_P100


def test_extrapolated_types_order_by_their_specs() -> None:
    pairs = measured_pairs()
    cl = make_cluster([V100, A100, H100, T4], intra_gbs=150.0)
    r = PerformanceModel().prepare(make_jobs(pairs), cl)
    v, a, h, t4 = r.rate.T
    assert np.all(h > a) and np.all(a > v)
    assert np.all(t4 < v)
    assert not r.measured[:, 1:].any()
    assert any("H100-SXM" in n and "from V100" in n for n in r.notes)


def test_generic_jobs_run_at_reference_speed_on_the_reference_placement() -> None:
    cl = make_cluster([K80, P100, V100, H100], intra_gbs=REFERENCE_INTRA_GBS, nic_gbps=100.0)
    r = PerformanceModel().prepare(make_jobs([("", 1), ("", 4), ("", 8), ("", 16)]), cl)
    k80, p100, v100, h100 = r.rate.T
    np.testing.assert_allclose(p100, 1.0, rtol=1e-12)
    assert np.all(k80 < 1) and np.all(v100 > 1) and np.all(h100 > v100)
    assert r.generic.all() and not r.extrapolated.any()
    assert r.restore_s.tolist() == [30.0] * 4


# ------------------------------------------------------------------ placement


SIZES = [2, 4, 8, 16, 32]
LINKS = [600.0, 150.0, 16.0, 12.5, 1.25, 0.3, 0.05]


def every_type_pair() -> list[tuple[str, int]]:
    return [(jt, n) for jt in (*TABLE.job_types, "", "bert") for n in SIZES]


def test_slower_links_give_lower_rates_and_efficiency() -> None:
    pairs = every_type_pair()
    cl = make_cluster([K80, P100, V100, H100])
    r = PerformanceModel().prepare(make_jobs(pairs), cl)
    m = len(pairs)
    for t in range(cl.n_types):
        jobs = np.arange(m, dtype=np.int64)
        types = np.full(m, t, dtype=np.int64)
        ndev = np.array([p[1] for p in pairs], dtype=np.int64)
        rates = np.stack([r.placement_rate(jobs, types, ndev, np.full(m, x)) for x in LINKS])
        eff = np.stack([r.efficiency(jobs, types, ndev, np.full(m, x)) for x in LINKS])
        runs = rates[0] > 0
        assert np.all(np.diff(rates[:, runs], axis=0) < 0)
        assert np.all(np.diff(eff[:, runs], axis=0) < 0)
        assert np.all(eff[:, runs] > 0)


def test_spread_placements_are_slower_than_consolidated_ones() -> None:
    pairs = every_type_pair()
    cl = make_cluster([K80, P100, V100, H100], intra_gbs=150.0, nic_gbps=100.0)
    r = PerformanceModel().prepare(make_jobs(pairs), cl)
    m = len(pairs)
    jobs = np.arange(m, dtype=np.int64)
    ndev = np.array([p[1] for p in pairs], dtype=np.int64)
    for t in range(cl.n_types):
        types = np.full(m, t, dtype=np.int64)
        one_node = r.placement_rate(jobs, types, ndev, np.full(m, 150.0))
        spread = r.placement_rate(jobs, types, ndev, np.full(m, 100.0 / 8))
        uplink = r.placement_rate(jobs, types, ndev, np.full(m, 100.0 / 8 / 4))
        runs = one_node > 0
        assert np.all(spread[runs] < one_node[runs])
        assert np.all(uplink[runs] < spread[runs])


def test_a_single_device_does_not_care_about_links() -> None:
    pairs = [(jt, 1) for jt in (*TABLE.job_types, "")]
    r = PerformanceModel().prepare(make_jobs(pairs), GAVEL)
    m = len(pairs)
    jobs = np.arange(m, dtype=np.int64)
    one = np.ones(m, dtype=np.int64)
    for t in range(3):
        types = np.full(m, t, dtype=np.int64)
        base = r.placement_rate(jobs, types, one, np.full(m, INF))
        for x in (0.01, 1.0, 1000.0):
            np.testing.assert_array_equal(r.placement_rate(jobs, types, one, np.full(m, x)), base)
        np.testing.assert_array_equal(base, r.rate[:, t])


def test_unmeasured_scale_factors_follow_the_ring_all_reduce_model() -> None:
    r = PerformanceModel().prepare(make_jobs([("A3C", 4), ("CycleGAN", 2)]), GAVEL)
    for i, (jt, n) in enumerate([("A3C", 4), ("CycleGAN", 2)]):
        grad_gb = MODEL_PARAMETERS[jt][0] * 4 / 1e9
        t1 = TABLE.value("v100", jt, 1)
        for link in (150.0, 1.25):
            want = n / (1 / t1 + 2 * (n - 1) / n * grad_gb / link)
            assert at(r, i, 2, n, link) == pytest.approx(want, rel=1e-12)


def test_elastic_jobs_scale_with_the_devices_they_hold() -> None:
    jt = "ResNet-18 (batch size 32)"
    r = PerformanceModel().prepare(make_jobs([(jt, 4), ("", 4)]), GAVEL)
    # A measured job on 2 devices of one node runs at the measured 2-device rate.
    assert at(r, 0, 2, 2, 150.0) == pytest.approx(TABLE.value("v100", jt, 2), rel=1e-12)
    # A generic job: per-device rate x devices x efficiency.
    one = at(r, 1, 1, 1, INF)
    # the reference placement
    assert at(r, 1, 1, 4, REFERENCE_INTRA_GBS) == pytest.approx(1.0, rel=1e-12)
    for n in (2, 3, 4, 6):
        eff = float(r.efficiency(np.array([1]), np.array([1]), np.array([n]), np.array([16.0]))[0])
        assert at(r, 1, 1, n, 16.0) == pytest.approx(one * n * eff, rel=1e-12)
        assert 0 < eff < 1


def test_vectorised_rates_equal_a_per_job_loop() -> None:
    pairs = every_type_pair() + [(jt, 1) for jt in TABLE.job_types]
    cl = make_cluster([K80, P100, V100, A100, H100, T4])
    r = PerformanceModel().prepare(make_jobs(pairs), cl)
    rng = np.random.default_rng(7)
    m = 500
    jobs = rng.integers(0, len(pairs), m)
    types = rng.integers(0, cl.n_types, m)
    ndev = rng.integers(0, 40, m)
    link = rng.choice(np.array([INF, 0.0, 0.5, 1.25, 12.5, 150.0, np.nan]), m)
    batch = r.placement_rate(jobs, types, ndev, link)
    loop = np.array(
        [
            at(r, int(a), int(b), int(c), float(d))
            for a, b, c, d in zip(jobs, types, ndev, link, strict=True)
        ]
    )
    np.testing.assert_array_equal(batch, loop)
    assert np.all(batch[(ndev == 0) | (np.isnan(link) | (link == 0)) & (ndev > 1)] == 0)
    # The consolidated rate matrix is the same function at the consolidated link.
    for i, (_, n) in enumerate(pairs):
        for t in range(cl.n_types):
            assert r.rate[i, t] == at(r, i, t, n, INF if n == 1 else (150.0 if n <= 8 else 1.25))


# ------------------------------------------------------------------ flags and notes


def test_it_flags_the_unmeasured_pairs_of_gavels_traces(shared_data: Path) -> None:
    rows: list[tuple[str, int]] = []
    for name in ("0e4a51.trace", "2869ce.trace"):
        rows += read_gavel_trace(shared_data / "traces" / "gavel" / name)
    r = PerformanceModel().prepare(make_jobs(rows), GAVEL)
    assert set(r.extrapolated_pairs) == GAVEL_TRACE_UNMEASURED
    want = np.array([p in GAVEL_TRACE_UNMEASURED for p in rows])
    np.testing.assert_array_equal(r.extrapolated, want)
    assert np.all(r.rate.max(axis=1) > 0)
    assert any(
        n.startswith("A3C at scale factor 2: no measurement; scaled from scale factor 1")
        for n in r.notes
    )
    assert any(
        n.startswith("ResNet-18 (batch size 64) at scale factor 16") and "from scale factor 8" in n
        for n in r.notes
    )


def test_unknown_job_types_use_the_nominal_model_and_are_flagged() -> None:
    r = PerformanceModel().prepare(make_jobs([("bert", 2), ("", 2), ("A3C", 1)]), GAVEL)
    assert r.extrapolated.tolist() == [True, False, False]
    assert r.generic.tolist() == [True, True, False]
    assert r.extrapolated_pairs == (("bert", 2),)
    np.testing.assert_array_equal(r.rate[0], r.rate[1])
    assert any("'bert'" in n for n in r.notes)


# ------------------------------------------------------------------ constraints and overrides


def test_a_gpu_type_constraint_zeroes_the_other_types() -> None:
    cl = make_cluster([K80, P100, V100, V100_32, H100])
    jt = "ResNet-18 (batch size 32)"
    want = {
        "": [1, 1, 1, 1, 1],
        "v100": [0, 0, 1, 0, 0],  # an alias of the 16 GB type
        "V100-SXM2-32GB": [0, 0, 0, 1, 0],
        "v100 sxm2 16gb": [0, 0, 1, 0, 0],
        "H100": [0, 0, 0, 0, 1],
        "k80": [1, 0, 0, 0, 0],
        "A800": [0, 0, 0, 0, 0],
    }
    r = PerformanceModel().prepare(make_jobs([(jt, 1)] * len(want), list(want)), cl)
    np.testing.assert_array_equal(r.rate > 0, np.array(list(want.values()), dtype=bool))
    assert any("'A800' matches no accelerator type" in n for n in r.notes)
    m = np.arange(5, dtype=np.int64)
    assert np.all(
        r.placement_rate(np.full(5, 2), m, np.ones(5, dtype=np.int64), np.full(5, INF))[[0, 1, 4]]
        == 0
    )


def test_a_bare_gavel_family_constraint_matches_every_variant() -> None:
    pcie = acc("V100-PCIe-16GB", 112.0, 0.9)
    cl = make_cluster([P100, pcie, V100_32])
    r = PerformanceModel().prepare(make_jobs([("A3C", 1)] * 2, ["V100", "p100"]), cl)
    np.testing.assert_array_equal(r.rate > 0, [[False, True, True], [True, False, False]])


def test_speed_overrides_replace_the_roofline_rule() -> None:
    cl = make_cluster([P100, V100, H100])
    jt = "LM (batch size 20)"
    jobs = make_jobs([("", 1), (jt, 1)])
    base = PerformanceModel().prepare(jobs, cl)
    r = PerformanceModel(speed_overrides={"h100": 3.0, "V100-SXM2-16GB": 5.0}).prepare(jobs, cl)
    assert r.rate[0, 2] == pytest.approx(3.0, rel=1e-12)
    assert r.rate[1, 2] == pytest.approx(3.0 * TABLE.value("p100", jt, 1), rel=1e-12)
    assert r.rate[0, 1] == pytest.approx(5.0, rel=1e-12)
    assert r.rate[1, 1] == base.rate[1, 1]  # measured: the override does not apply
    assert any("scaled from P100 by the speed override 3" in n for n in r.notes)
    with pytest.raises(ClustersimError, match="reference type"):
        PerformanceModel(speed_overrides={"P100": 2.0}).prepare(jobs, cl)
    with pytest.raises(ClustersimError, match="positive"):
        PerformanceModel(speed_overrides={"h100": 0.0}).prepare(jobs, cl)
    r = PerformanceModel(speed_overrides={"tpu-v9": 2.0}).prepare(jobs, cl)
    assert any("'tpu-v9' matches no type" in n for n in r.notes)


def test_a_type_without_specs_or_override_cannot_run_unmeasured_jobs() -> None:
    blank = acc("Mystery", 0.0, float("nan"))
    r = PerformanceModel().prepare(make_jobs([("", 1), ("A3C", 1)]), make_cluster([P100, blank]))
    assert r.rate[:, 1].tolist() == [0.0, 0.0]
    assert any("Mystery: no FP16/bandwidth specs" in n for n in r.notes)
    r = PerformanceModel(speed_overrides={"mystery": 0.5}).prepare(
        make_jobs([("", 1)]), make_cluster([P100, blank])
    )
    assert r.rate[0, 1] == pytest.approx(0.5)


# ------------------------------------------------------------------ restore delay


def test_restore_delays_default_by_model_size_and_can_be_overridden() -> None:
    types = [
        "A3C",
        "ResNet-18 (batch size 32)",
        "ResNet-50 (batch size 32)",
        "Transformer (batch size 64)",
        "",
        "bert",
    ]
    jobs = make_jobs([(jt, 1) for jt in types])
    d = PerformanceModel().prepare(jobs, GAVEL).restore_s
    assert np.all((d >= 10) & (d <= 60))
    assert d[0] < d[1] < d[2] < d[3]
    assert d[4] == d[5] == 30.0
    assert np.all(PerformanceModel(restore_s=0).prepare(jobs, GAVEL).restore_s == 0)
    r = PerformanceModel(restore_s={"ResNet-50": 5.0, "A3C": 1.0, "*": 7.0}).prepare(jobs, GAVEL)
    assert r.restore_s.tolist() == [1.0, 7.0, 5.0, 7.0, 7.0, 7.0]
    with pytest.raises(ClustersimError):
        PerformanceModel(restore_s=-1.0).prepare(jobs, GAVEL)


# ------------------------------------------------------------------ odds and ends


def test_hand_built_rates_have_no_placement_model() -> None:
    r = JobRates(rate=np.array([[1.0, 2.0]]), restore_s=np.zeros(1))
    got = r.placement_rate(
        np.array([0, 0]), np.array([1, 0]), np.array([4, 1]), np.array([1.0, INF])
    )
    assert got.tolist() == [2.0, 1.0]
    assert r.ref_gpu_s.shape == (0,)  # not given: the engine reads work as reference seconds


def test_it_copes_with_no_jobs() -> None:
    empty = JobTable.from_columns(job_id=[], submit_time=[], num_gpus=[], work=[])
    r = PerformanceModel().prepare(empty, GAVEL)
    assert r.rate.shape == (0, 3) and r.restore_s.shape == (0,) and r.ref_gpu_s.shape == (0,)
    z = np.zeros(0, dtype=np.int64)
    assert r.placement_rate(z, z, z, np.zeros(0)).shape == (0,)


def test_prepare_is_deterministic() -> None:
    rows = every_type_pair()
    cl = make_cluster([K80, P100, V100, H100])
    a = PerformanceModel().prepare(make_jobs(rows), cl)
    b = PerformanceModel().prepare(make_jobs(rows), cl)
    assert a.rate.tobytes() == b.rate.tobytes()
    assert a.restore_s.tobytes() == b.restore_s.tobytes()
    assert a.notes == b.notes and a.extrapolated_pairs == b.extrapolated_pairs


def test_prepare_handles_a_philly_sized_trace() -> None:
    # (its speed is part of the simulation benchmark, `make bench`, not asserted here)
    rng = np.random.default_rng(0)
    n = 82_247
    kinds = np.array([*TABLE.job_types, "", "", "", "bert"], dtype=object)
    jobs = JobTable.from_columns(
        job_id=np.arange(n),
        submit_time=np.sort(rng.uniform(0, 1e7, n)),
        num_gpus=rng.choice([1, 1, 1, 2, 4, 8, 16, 32, 64], n),
        work=rng.uniform(1, 1e5, n),
        job_type=rng.choice(kinds, n),
        gpu_type=rng.choice(np.array(["", "", "", "v100", "P100"], dtype=object), n),
    )
    cl = make_cluster([K80, P100, V100, V100_32, A100, H100, T4])
    model = PerformanceModel()
    small = model.prepare(jobs.take(np.arange(100)), cl)
    r = model.prepare(jobs, cl)
    assert r.rate.shape == (n, 7)
    assert (r.rate > 0).any(axis=1).all()
    np.testing.assert_array_equal(r.rate[:100], small.rate)  # row-wise, independent of n


# ------------------------------------------------------------------ reference work


def test_reference_work_of_a_measured_job_is_its_gang_over_the_measured_p100_rate() -> None:
    # e.g. ResNet-50 (batch size 64) on 2 GPUs, 1000 steps: 2 × 1000 / 5.515986118186492
    # steps/s (Gavel, 2 P100s) = 362.58 reference GPU-seconds, on every cluster below.
    pairs = measured_pairs()
    want = np.array([sf * 1000.0 / TABLE.value("p100", jt, sf) for jt, sf in pairs])
    assert want[pairs.index(("ResNet-50 (batch size 64)", 2))] == pytest.approx(362.58249, 1e-7)
    models_and_clusters = [
        (PerformanceModel(), GAVEL),
        (PerformanceModel(), make_cluster([K80, V100])),  # no P100
        (PerformanceModel(), make_cluster([H100], devices=4, intra_gbs=900.0)),
        # the settings of the compatibility modes, and a speed override
        (PerformanceModel(restore_s=0.0, placement_aware=False, fit_check=False), GAVEL),
        (PerformanceModel(speed_overrides={"H100-SXM": 3.0}), make_cluster([H100, T4])),
    ]
    for model, cl in models_and_clusters:
        r = model.prepare(make_jobs(pairs), cl)
        np.testing.assert_allclose(r.ref_gpu_s, want, rtol=1e-12)


def test_reference_work_of_a_generic_job_is_its_gang_times_its_reference_seconds() -> None:
    rows = [("", 1), ("", 4), ("", 16), ("bert", 2)]  # work 1000 reference seconds each
    for cl in (make_cluster([K80]), make_cluster([V100]), make_cluster([H100, T4])):
        for model in (PerformanceModel(), PerformanceModel(generic_step_s=2.0)):
            r = model.prepare(make_jobs(rows), cl)
            assert r.ref_gpu_s.tolist() == [1000.0, 4000.0, 16000.0, 2000.0]


def test_reference_work_is_what_a_job_holds_alone_on_reference_nodes() -> None:
    from clustersim.engine import simulate
    from scheduling.fifo import FIFO
    from scheduling.placement import Consolidate

    rows = [
        ("A3C", 4),  # measured on one device only: the sf-1 calibration at 4 devices
        ("ResNet-50 (batch size 64)", 16),  # two reference nodes, over the network
        ("Transformer (batch size 32)", 8),
        ("LM (batch size 20)", 3),
        ("", 16),
    ]
    # two nodes of 8 PCIe P100s (32 GB/s) joined by 100 Gbit/s: the reference placement
    ref_nodes = make_cluster([P100], devices=8, intra_gbs=REFERENCE_INTRA_GBS, nic_gbps=100.0)
    model = PerformanceModel(restore_s=0.0)
    table = make_jobs(rows)
    r = model.prepare(table, ref_nodes)
    # by hand for A3C on 4 devices: 4 × 1000 steps / (4 / (1 / 5.681346110543853 steps/s
    # + 2 × 3/4 × 588,967 × 4 B / 32 GB/s))
    grad_gb = 588_967 * 4 / 1e9
    assert r.ref_gpu_s[0] == pytest.approx(
        1000.0 * (1 / 5.681346110543853 + 1.5 * grad_gb / 32.0), rel=1e-12
    )
    # independent of the cluster it is prepared for
    np.testing.assert_allclose(
        model.prepare(table, make_cluster([K80, A100])).ref_gpu_s, r.ref_gpu_s, rtol=1e-12
    )
    for i in range(len(rows)):
        one = table.take(np.array([i])).replace(submit_time=np.zeros(1))
        res = simulate(one, ref_nodes, FIFO(), Consolidate(), perf=model)
        assert res.completed[0] and res.preemptions[0] == 0
        assert res.device_time.sum() == pytest.approx(r.ref_gpu_s[i], rel=1e-9), rows[i]
        assert res.ref_gpu_s.tolist() == [r.ref_gpu_s[i]]


def write_table(path: Path, data: dict[str, dict[str, float]]) -> Path:
    """A Gavel-format throughput file: worker → {"('<job type>', <sf>)": steps/s}."""
    import json

    path.write_text(
        json.dumps({w: {k: {"null": v} for k, v in rows.items()} for w, rows in data.items()})
    )
    return path


def test_a_job_type_without_a_p100_measurement_takes_a_roofline_reference(
    tmp_path: Path,
) -> None:
    table = write_table(tmp_path / "t.json", {"v100": {"('X (batch size 8)', 1)": 10.0}})
    model = PerformanceModel(throughputs=table, generic_compute_fraction=0.5)
    r = model.prepare(make_jobs([("X (batch size 8)", 1)]), make_cluster([V100]))
    assert r.rate[0, 0] == pytest.approx(10.0, rel=1e-12)
    # P100 step time = V100 step time / phi(V100) with f_c = 0.5 (one measurement, no fit):
    # phi = 0.5 × 18.7 / 125 + 0.5 × 0.732 / 0.9 = 0.48147, so 10 × 0.48147 steps/s on P100
    phi = 0.5 * 18.7 / 125.0 + 0.5 * 0.732 / 0.9
    assert r.ref_gpu_s[0] == pytest.approx(1000.0 / (10.0 * phi), rel=1e-12)
    assert any("X (batch size 8): no P100 measurement" in n and "V100" in n for n in r.notes)


def test_a_measured_zero_on_p100_leaves_the_reference_work_undefined(tmp_path: Path) -> None:
    table = write_table(
        tmp_path / "t.json",
        {"p100": {"('Y', 1)": 4.0, "('Y', 2)": 0.0}, "v100": {"('Y', 1)": 5.0, "('Y', 2)": 9.0}},
    )
    r = PerformanceModel(throughputs=table).prepare(make_jobs([("Y", 1), ("Y", 2)]), GAVEL)
    assert r.ref_gpu_s[0] == pytest.approx(1000.0 / 4.0, rel=1e-12)
    assert np.isnan(r.ref_gpu_s[1]) and r.rate[1, 2] > 0  # it still runs on the V100
    assert any("1 job (Y) cannot run on the reference placement" in n for n in r.notes)


def test_compatibility_modes_keep_the_reference_work() -> None:
    from clustersim.compat import prepare
    from clustersim.engine import EngineOptions, simulate
    from clustersim.spec import cluster_from_shorthand

    # Tiresias: durations in whole seconds on any device; reference work num_gpus × duration
    t = JobTable.from_columns(
        job_id=["a", "b"], submit_time=[0.0, 0.0], num_gpus=[1, 2], work=[10.9, 20.5]
    )
    p = prepare(t, make_cluster([K80]), "fifo", {}, None, compat="tiresias")
    assert p.rates.ref_gpu_s.tolist() == [10.0, 40.0]
    # Gavel: steps over the measured P100 rate, on a cluster without P100s
    jt = "ResNet-18 (batch size 32)"
    g = make_jobs([(jt, 1), (jt, 4)])
    cl = cluster_from_shorthand("v100:4,k80:4")
    p = prepare(g, cl, "gavel-fifo", {"seed": 0}, compat="gavel")
    want = [1000.0 / TABLE.value("p100", jt, 1), 4 * 1000.0 / TABLE.value("p100", jt, 4)]
    np.testing.assert_allclose(p.rates.ref_gpu_s, want, rtol=1e-12)
    res = simulate(
        p.jobs, cl, p.policy, p.placement, rates=p.rates, options=EngineOptions(**p.engine)
    )
    np.testing.assert_allclose(res.ref_gpu_s, want, rtol=1e-12)
