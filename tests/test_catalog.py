"""The accelerator catalog: contents, provenance of every value, name resolution, editing."""

from __future__ import annotations

import dataclasses
import math
import re
from pathlib import Path

import pandas as pd
import pytest

from clustersim.catalog import (
    IDLE_FRACTION,
    UNMAPPED,
    Catalog,
    catalog_rows,
    load_catalog,
    normalize_name,
    read_catalog_csv,
)
from clustersim.cluster import AcceleratorType

DATA = Path(__file__).resolve().parents[1] / "clustersim" / "data"

REQUIRED = [
    "K80",
    "P100",
    "V100-SXM2-16GB",
    "V100-SXM2-32GB",
    "T4",
    "A10",
    "A10G",
    "L4",
    "L40",
    "A100-SXM4-40GB",
    "A100-SXM4-80GB",
    "H100-SXM",
    "H100-PCIe",
    "H200",
    "GH200",
    "B200",
    "MI250X",
    "MI300X",
    "Gaudi2",
    "TPU v2",
    "TPU v3",
    "TPU v4",
    "TPU v5e",
    "TPU v5p",
    "TPU v6e",
    "Jetson AGX Orin",
    "Jetson Orin Nano",
]

ALIASES = [
    ("v100", "V100-SXM2-16GB"),
    ("V100M16", "V100-SXM2-16GB"),
    ("V100M32", "V100-SXM2-32GB"),
    ("A10G", "A10"),
    ("a100", "A100-SXM4-40GB"),
    ("h100", "H100-SXM5-80GB"),
    ("H100-SXM", "H100-SXM5-80GB"),
    ("tpu-v4", "TPUv4"),
    ("NVIDIA A100-SXM4-80GB", "A100-SXM4-80GB"),
    ("Tesla T4", "T4"),
    ("P100", "P100"),
    ("A800", "A100-SXM4-80GB"),
    ("A800-SXM4-80GB", "A100-SXM4-80GB"),
    ("H800", "H100-SXM5-80GB"),
    ("NVIDIA Tesla K80", "K80"),
    ("Google TPU v6e Trillium", "TPUv6e"),
    ("AMD Radeon Instinct MI250X", "MI250X"),
    ("Intel Habana Gaudi2", "Gaudi2"),
    ("tpu-v5-lite-podslice", "TPUv5e"),
]

TAGGED = re.compile(r"^(?P<field>[a-z_0-9]+): \[(?P<tag>assumed|external|note)\] \S.*$")
NUMERIC = (
    "fp16_tflops",
    "memory_gb",
    "memory_bw_tbs",
    "busy_w",
    "idle_w",
    "price_per_hour",
    "purchase_usd",
    "amortisation_years",
    "release_year",
    "intra_gbs",
)


def filled_fields(acc: AcceleratorType) -> set[str]:
    """Fields whose value an assumption entry supplies (tag assumed or external)."""
    out = set()
    for a in acc.assumptions:
        m = TAGGED.match(a)
        assert m, a
        if m["tag"] != "note":
            out.add(m["field"])
    return out


def test_it_has_at_least_25_types() -> None:
    assert len(load_catalog()) >= 25


@pytest.mark.parametrize("name", REQUIRED)
def test_it_has_every_required_type(name: str) -> None:
    assert load_catalog().resolve(name) is not None


def test_it_has_edge_devices() -> None:
    edge = [t for t in load_catalog() if t.kind == "edge"]
    assert len(edge) >= 2
    assert all(t.busy_w <= 100 for t in edge)


@pytest.mark.parametrize(("alias", "key"), ALIASES)
def test_aliases_resolve(alias: str, key: str) -> None:
    cat = load_catalog()
    assert cat.get(alias).name == key
    assert cat.get(alias.upper()).name == key
    assert cat.get(alias.lower()).name == key


def test_lookup_ignores_separators_and_vendor_words() -> None:
    cat = load_catalog()
    assert cat.get("v100_sxm2 16gb").name == "V100-SXM2-16GB"
    assert cat.get("NVIDIA Tesla T4").name == "T4"
    assert normalize_name("NVIDIA Tesla V100-SXM2-16GB") == "v100sxm216gb"
    assert cat.resolve("nvidia") is None


def test_it_keeps_the_reference_keys(shared_data: Path) -> None:
    """Keys of accelerators_reference.csv stay keys (except A10G, an alias of A10)."""
    ref = pd.read_csv(shared_data / "hardware" / "accelerators_reference.csv")
    names = set(load_catalog().names())
    for key in ref["key"]:
        if key == "A10G":
            assert load_catalog().get(key).name == "A10"
        else:
            assert key in names


@pytest.mark.parametrize("name", ["G2", "G3", "g2", "MISC", "GPU-series-1"])
def test_alibaba_internal_codes_are_left_unmapped(name: str) -> None:
    cat = load_catalog()
    assert cat.resolve(name) is None
    with pytest.raises(KeyError, match="not mapped"):
        cat.get(name)


def test_unknown_name_lists_close_matches() -> None:
    with pytest.raises(KeyError, match=r"close matches: .*V100-SXM2-16GB"):
        load_catalog().get("V100-SXM3")


def test_catalog_is_cached() -> None:
    assert load_catalog() is load_catalog()


def test_required_fields_are_finite_and_sensible() -> None:
    for t in load_catalog():
        for f in ("fp16_tflops", "memory_gb", "memory_bw_tbs", "busy_w", "price_per_hour"):
            v = getattr(t, f)
            assert math.isfinite(v) and v > 0, (t.name, f)
        assert 0 <= t.idle_w < t.busy_w, t.name
        assert 2010 <= t.release_year <= 2030, t.name
        assert t.kind in ("gpu", "tpu", "npu", "edge"), t.name
    for r in catalog_rows():
        assert math.isfinite(r.intra_gbs) and r.intra_gbs > 0, r.type.name
        assert r.source, r.type.name


def test_every_assumption_is_labelled() -> None:
    columns = {f.name for f in dataclasses.fields(AcceleratorType)} | {"intra_gbs", "note"}
    for t in load_catalog():
        for a in t.assumptions:
            m = TAGGED.match(a)
            assert m, f"{t.name}: unlabelled assumption {a!r}"
            assert m["field"] in columns, f"{t.name}: {a!r} names no field"


def test_values_without_an_assumption_come_from_the_shared_data(shared_data: Path) -> None:
    """Every value not supplied by a labelled assumption equals the shared source's value."""
    hw = shared_data / "hardware"
    epoch = pd.read_csv(hw / "epoch_ml_hardware.csv").set_index("Hardware name")
    ref = pd.read_csv(hw / "accelerators_reference.csv").set_index("key")

    def ep(name: str, col: str) -> float | None:
        v = epoch.loc[name, col]
        return None if pd.isna(v) else float(v)

    def need(name: str, col: str) -> float:
        v = ep(name, col)
        assert v is not None, f"{name}: Epoch has no {col}"
        return v

    for row in catalog_rows():
        t = row.type
        filled = filled_fields(t)
        values = {f: getattr(t, f) for f in NUMERIC if f != "intra_gbs"}
        values["intra_gbs"] = row.intra_gbs
        if not row.epoch_name:
            assert set(NUMERIC) <= filled, t.name
        else:
            e = row.epoch_name
            assert e in epoch.index, e
            if "fp16_tflops" not in filled:
                rates = [
                    ep(e, c)
                    for c in (
                        "Tensor-FP16/BF16 performance (FLOP/s)",
                        "FP16 (half precision) performance (FLOP/s)",
                        "FP32 (single precision) performance (FLOP/s)",
                    )
                ]
                assert any(r and math.isclose(r / 1e12, t.fp16_tflops) for r in rates), t.name
            if "memory_gb" not in filled:
                assert t.memory_gb == pytest.approx(need(e, "Memory (bytes)") / 1e9, abs=1e-3)
            if "memory_bw_tbs" not in filled:
                bw = need(e, "Memory bandwidth (byte/s)")
                assert t.memory_bw_tbs == pytest.approx(bw / 1e12, abs=1e-4)
            if "busy_w" not in filled:
                assert t.busy_w == ep(e, "TDP (W)"), t.name
            if "release_year" not in filled:
                assert t.release_year == int(str(epoch.loc[e, "Release date"])[:4]), t.name
            if "intra_gbs" not in filled:
                intra = need(e, "Intranode bandwidth (byte/s)")
                assert row.intra_gbs == pytest.approx(intra / 1e9)
        in_ref = t.name in ref.index
        if "idle_w" not in filled:
            assert in_ref and t.idle_w == ref.loc[t.name, "idle_w_teads_model"], t.name
        else:
            assert t.idle_w == pytest.approx(IDLE_FRACTION * t.busy_w, abs=0.06), t.name
        if "price_per_hour" not in filled:
            assert in_ref and t.price_per_hour == ref.loc[t.name, "on_demand_usd_per_hour"], t.name
        if "purchase_usd" not in filled:
            assert row.epoch_name, t.name
            assert t.purchase_usd == need(row.epoch_name, "Release price (USD)"), t.name
        assert "amortisation_years" in filled, t.name  # no shared file gives one


def test_missing_reference_prices_are_filled_by_labelled_assumptions() -> None:
    cat = load_catalog()
    for name in ("T4", "L4", "MI300X", "TPUv4", "TPUv5e", "Jetson-Orin-Nano-8GB"):
        assert "price_per_hour" in filled_fields(cat.get(name)), name


def test_old_gpus_are_priced_in_generation_order() -> None:
    """Issue 12: the V100 was listed below the P100 and barely above the K80."""
    cat = load_catalog()
    k80, p100, v100 = (cat.get(n).price_per_hour for n in ("K80", "P100", "V100"))
    assert k80 < p100 < v100
    assert v100 >= 3 * k80
    assert cat.get("V100-SXM2-32GB").price_per_hour >= p100
    assert cat.get("V100-PCIe-16GB").price_per_hour >= p100


def test_every_price_has_one_source_and_a_date() -> None:
    import datetime

    for row in catalog_rows():
        assert row.price_source.strip(), row.type.name
        # one source for all listed prices, and a stated rule for the rest
        assert row.price_source.startswith(("Google Cloud", "rule: ")), row.type.name
        date = datetime.date.fromisoformat(row.price_date)
        assert datetime.date(2017, 1, 1) <= date <= datetime.date(2030, 1, 1), row.type.name
        assert "price_per_hour" in filled_fields(row.type), row.type.name


def test_google_lists_the_types_it_rents_per_device() -> None:
    """Recorded by hand from the cited price lists (us-central1; TPUs per chip)."""
    listed = {
        "K80": 0.45,
        "P100": 1.46,
        "V100-SXM2-16GB": 2.48,
        "T4": 0.35,
        "L4": 0.56,
        "A100-SXM4-40GB": 2.934,
        "TPUv2": 4.50 / 4,
        "TPUv3": 8.00 / 4,
        "TPUv4": 12.88 / 4,
        "TPUv5e": 1.20,
        "TPUv5p": 4.20,
        "TPUv6e": 2.70,
    }
    by_name = {r.type.name: r for r in catalog_rows()}
    for name, price in listed.items():
        row = by_name[name]
        assert row.type.price_per_hour == pytest.approx(price), name
        assert row.price_source.startswith("Google Cloud"), name


def test_rule_priced_types_rent_for_their_purchase_price_over_the_rule_hours() -> None:
    from clustersim.cluster import PURCHASE_HOURS

    ruled = [r for r in catalog_rows() if r.price_source.startswith("rule: purchase_usd")]
    assert {r.type.name for r in ruled} >= {"H100-SXM5-80GB", "B200", "MI300X", "Gaudi3"}
    for r in ruled:
        assert r.type.purchase_usd is not None
        assert r.type.price_per_hour == pytest.approx(
            r.type.purchase_usd / PURCHASE_HOURS, abs=5e-4
        ), r.type.name


def test_every_type_has_a_purchase_price_and_an_amortisation() -> None:
    for t in load_catalog():
        assert t.purchase_usd is not None and t.purchase_usd > 0, t.name
        assert t.amortisation_years in (3.0, 4.0), t.name
        assert t.capital_per_hour == pytest.approx(t.purchase_usd / (t.amortisation_years * 8760.0))


def test_default_intra_node_bandwidth_follows_the_interconnect() -> None:
    cat = load_catalog()
    assert cat.default_intra_gbs("V100-SXM2-16GB") == 300
    assert cat.default_intra_gbs("h100") == 900
    assert cat.default_intra_gbs("P100") == 32
    assert cat.default_intra_gbs("H100-PCIe") < cat.default_intra_gbs("H100-SXM")


def chip(name: str = "MyChip", **kw: object) -> AcceleratorType:
    base = AcceleratorType(
        name="MyChip",
        kind="gpu",
        fp16_tflops=100.0,
        memory_gb=48.0,
        memory_bw_tbs=1.0,
        busy_w=300.0,
        idle_w=30.0,
        price_per_hour=1.0,
        release_year=2024,
    )
    return dataclasses.replace(base, name=name, **kw)


def test_with_types_adds_user_types() -> None:
    cat = load_catalog().with_types([chip(aliases=("mc-1",))])
    assert cat.get("mychip").fp16_tflops == 100
    assert cat.get("MC-1").name == "MyChip"
    assert cat.default_intra_gbs("MyChip") == 32
    assert "MyChip" not in load_catalog()


def test_with_types_overrides_a_key() -> None:
    cheap = dataclasses.replace(load_catalog().get("T4"), price_per_hour=0.1)
    cat = load_catalog().with_types([cheap])
    assert cat.get("tesla t4").price_per_hour == 0.1
    assert len(cat) == len(load_catalog())


@pytest.mark.parametrize(
    "bad",
    [
        chip(aliases=("V100",)),
        chip(name="tesla-v100m16"),
        chip(kind="fpga"),
        chip(idle_w=400.0),
        chip(fp16_tflops=float("nan")),
    ],
)
def test_with_types_rejects_clashes_and_bad_values(bad: AcceleratorType) -> None:
    with pytest.raises(ValueError):
        load_catalog().with_types([bad])


def test_with_aliases_edits_the_table() -> None:
    cat = load_catalog().with_aliases({"G2": "A10", "V100": "V100-SXM2-32GB"})
    assert cat.get("g2").name == "A10"
    assert "G2" in cat.get("A10").aliases
    assert cat.get("V100").name == "V100-SXM2-32GB"
    assert "V100" not in cat.get("V100-SXM2-16GB").aliases
    assert load_catalog().get("V100").name == "V100-SXM2-16GB"


def test_with_aliases_rejects_unknown_targets_and_keys() -> None:
    with pytest.raises(KeyError):
        load_catalog().with_aliases({"G2": "NoSuchChip"})
    with pytest.raises(ValueError):
        load_catalog().with_aliases({"T4": "A10"})


def test_reading_a_bad_csv_names_the_line() -> None:
    text = (DATA / "accelerators.csv").read_text().splitlines()
    header, first = text[0], text[1].split(",")
    first[3] = "fast"  # fp16_tflops
    with pytest.raises(ValueError, match="line 2"):
        read_catalog_csv("\n".join([header, ",".join(first)]))


def test_catalog_rejects_duplicate_names() -> None:
    with pytest.raises(ValueError, match="duplicate"):
        Catalog([chip(), chip()])


def test_unmapped_names_are_not_catalog_names() -> None:
    for name in UNMAPPED:
        assert load_catalog().resolve(name) is None


def test_notice_covers_the_catalog_file() -> None:
    notice = (DATA / "NOTICE.md").read_text()
    assert "## accelerators.csv" in notice
    for credit in ("Epoch AI", "CC BY 4.0", "Apache", "MIT"):
        assert credit in notice


def test_a_user_type_without_a_purchase_price_gets_the_rule() -> None:
    from clustersim.cluster import DEFAULT_AMORTISATION_YEARS, PURCHASE_HOURS

    t = chip(price_per_hour=2.0)
    assert t.purchase_usd is None
    assert t.amortisation_years == DEFAULT_AMORTISATION_YEARS == 4.0
    assert t.capital_usd == pytest.approx(2.0 * PURCHASE_HOURS)


@pytest.mark.parametrize(
    "bad", [chip(purchase_usd=-1.0), chip(amortisation_years=0.0), chip(purchase_usd=math.inf)]
)
def test_catalog_rejects_impossible_capital_values(bad: AcceleratorType) -> None:
    with pytest.raises(ValueError):
        load_catalog().with_types([bad])


@pytest.mark.parametrize(("column", "value"), [("price_date", "May 2024"), ("price_source", "")])
def test_reading_a_csv_without_a_dated_price_source_names_the_line(column: str, value: str) -> None:
    import csv
    import io

    rows = list(csv.DictReader(io.StringIO((DATA / "accelerators.csv").read_text())))
    rows[0][column] = value
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(rows[0]))
    writer.writeheader()
    writer.writerow(rows[0])
    with pytest.raises(ValueError, match=f"line 2.*{column}"):
        read_catalog_csv(buf.getvalue())
