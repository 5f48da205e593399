"""Cluster specs: building, defaults, round trips, validation paths, shorthand, loading."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clustersim.catalog import load_catalog
from clustersim.cluster import Cluster
from clustersim.errors import SpecError
from clustersim.spec import (
    DEFAULT_OVERHEAD_W_PER_DEVICE,
    GAVEL_DEVICES_PER_SERVER,
    cluster_from_shorthand,
    cluster_from_spec,
    cluster_to_spec,
    load_cluster,
    spec_from_shorthand,
)

ARRAYS = (
    "node_type",
    "node_devices",
    "node_rack",
    "node_region",
    "node_intra_gbs",
    "node_nic_gbps",
    "node_overhead_w",
    "rack_oversub",
    "node_availability",
)

MYCHIP: dict[str, Any] = {
    "name": "MyChip",
    "kind": "gpu",
    "fp16_tflops": 100,
    "memory_gb": 48,
    "memory_bw_tbs": 1.2,
    "busy_w": 350,
    "price_per_hour": 1.5,
    "release_year": 2024,
}


def example() -> dict[str, Any]:
    """The spec of the design brief, extended with a second region and a user-defined chip."""
    return {
        "name": "demo",
        "regions": [
            {"name": "us-west", "carbon_zone": "US-CAL-CISO", "pue": 1.2, "price_per_kwh": 0.12},
            {"name": "eu", "carbon_zone": "DE"},
        ],
        "racks": [
            {"name": "r1", "region": "us-west", "oversubscription": 2.0},
            {"name": "r2", "region": "eu"},
        ],
        "accelerators": [dict(MYCHIP)],
        "pools": [
            {
                "name": "v100s",
                "accelerator": "V100-SXM2-16GB",
                "nodes": 4,
                "devices_per_node": 8,
                "rack": "r1",
                "intra_gbs": 300,
                "nic_gbps": 100,
                "cpu_cores": 64,
                "host_mem_gb": 512,
                "overhead_w": 300,
                "availability": 1.0,
            },
            {"name": "mine", "accelerator": "mychip", "nodes": 2, "rack": "r2"},
            {
                "name": "t4s",
                "accelerator": "Tesla T4",
                "nodes": 5,
                "devices_per_node": 2,
                "racks": 2,
            },
            {"name": "more-v100", "accelerator": "v100", "nodes": 1, "region": "eu"},
        ],
    }


def assert_same(a: Cluster, b: Cluster) -> None:
    assert a.name == b.name
    assert a.types == b.types
    assert a.regions == b.regions
    for f in ARRAYS:
        x, y = getattr(a, f), getattr(b, f)
        assert x.dtype == y.dtype, f
        np.testing.assert_array_equal(x, y, err_msg=f)


# -- building ---------------------------------------------------------------------------------


def test_it_builds_the_example() -> None:
    c = cluster_from_spec(example())
    assert c.name == "demo"
    assert c.type_names == ("V100-SXM2-16GB", "MyChip", "T4")
    assert c.devices_per_type().tolist() == [4 * 8 + 8, 2 * 8, 5 * 2]
    assert c.n_nodes == 4 + 2 + 5 + 1
    assert [r.name for r in c.regions] == ["us-west", "eu"]
    assert c.regions[0].carbon_zone == "US-CAL-CISO" and c.regions[0].price_per_kwh == 0.12
    # racks: r1, r2, then t4s-rack0, t4s-rack1, more-v100-rack
    np.testing.assert_array_equal(c.rack_oversub, [2.0, 1.0, 1.0, 1.0, 1.0])
    np.testing.assert_array_equal(c.node_rack, [0] * 4 + [1] * 2 + [2] * 3 + [3] * 2 + [4])
    np.testing.assert_array_equal(c.node_region, [0] * 4 + [1] * 2 + [0] * 5 + [1])
    for arr in (c.node_type, c.node_devices, c.node_rack, c.node_region):
        assert arr.dtype == np.int64 and arr.shape == (c.n_nodes,)
    for arr in (c.node_intra_gbs, c.node_nic_gbps, c.node_overhead_w, c.node_availability):
        assert arr.dtype == np.float64 and arr.shape == (c.n_nodes,)


def test_it_fills_defaults() -> None:
    c = cluster_from_spec({"pools": [{"accelerator": "P100", "nodes": 3}]})
    assert c.name == "cluster"
    assert [r.name for r in c.regions] == ["default"] and c.regions[0].carbon_zone == ""
    assert c.node_devices.tolist() == [8, 8, 8]
    assert c.node_intra_gbs.tolist() == [32.0] * 3
    assert c.node_nic_gbps.tolist() == [100.0] * 3
    assert c.node_overhead_w.tolist() == [8 * DEFAULT_OVERHEAD_W_PER_DEVICE] * 3
    assert c.node_availability.tolist() == [1.0] * 3
    assert c.rack_oversub.tolist() == [1.0]


def test_intra_node_default_comes_from_the_accelerator() -> None:
    c = cluster_from_spec(
        {
            "pools": [
                {"accelerator": "V100-SXM2-16GB", "nodes": 1},
                {"accelerator": "H100-PCIe", "nodes": 1},
                {"accelerator": "K80", "nodes": 1},
            ]
        }
    )
    assert c.node_intra_gbs.tolist() == [300.0, 128.0, 32.0]


def test_edge_defaults_are_single_device_without_overhead() -> None:
    c = cluster_from_spec({"pools": [{"accelerator": "Jetson Orin Nano", "nodes": 5}]})
    assert c.node_devices.tolist() == [1] * 5
    assert c.node_overhead_w.tolist() == [0.0] * 5


def test_types_hold_only_those_present_in_order_of_first_appearance() -> None:
    spec = {
        "accelerators": [dict(MYCHIP)],
        "pools": [
            {"accelerator": "K80", "nodes": 1},
            {"accelerator": "v100", "nodes": 1},
            {"accelerator": "Tesla K80", "nodes": 1},
        ],
    }
    c = cluster_from_spec(spec)
    assert c.type_names == ("K80", "V100-SXM2-16GB")
    assert c.node_type.tolist() == [0, 1, 0]


def test_racks_spread_nodes_evenly() -> None:
    c = cluster_from_spec(
        {"pools": [{"accelerator": "T4", "nodes": 10, "racks": 3, "rack_oversubscription": 3.0}]}
    )
    assert np.bincount(c.node_rack).tolist() == [4, 3, 3]
    assert c.rack_oversub.tolist() == [3.0, 3.0, 3.0]


def test_a_user_type_can_override_a_catalog_price() -> None:
    t4 = load_catalog().get("T4")
    override = {
        "name": "T4",
        "kind": "gpu",
        "fp16_tflops": t4.fp16_tflops,
        "memory_gb": t4.memory_gb,
        "memory_bw_tbs": t4.memory_bw_tbs,
        "busy_w": t4.busy_w,
        "idle_w": t4.idle_w,
        "price_per_hour": 0.11,
        "release_year": t4.release_year,
    }
    c = cluster_from_spec(
        {"accelerators": [override], "pools": [{"accelerator": "t4", "nodes": 1}]}
    )
    assert c.types[0].price_per_hour == 0.11
    assert_same(cluster_from_spec(cluster_to_spec(c)), c)


def test_a_user_type_takes_a_purchase_price_and_an_amortisation() -> None:
    chip = {**MYCHIP, "purchase_usd": 20000, "amortisation_years": 5}
    c = cluster_from_spec(
        {"accelerators": [chip], "pools": [{"accelerator": "MyChip", "nodes": 1}]}
    )
    t = c.types[0]
    assert (t.purchase_usd, t.amortisation_years) == (20000.0, 5.0)
    assert t.capital_per_hour == pytest.approx(20000 / (5 * 8760))
    assert_same(cluster_from_spec(cluster_to_spec(c)), c)


def test_a_user_type_without_a_purchase_price_is_bought_at_the_rule_price() -> None:
    from clustersim.cluster import PURCHASE_HOURS

    c = cluster_from_spec(
        {"accelerators": [dict(MYCHIP)], "pools": [{"accelerator": "MyChip", "nodes": 1}]}
    )
    t = c.types[0]
    assert t.purchase_usd is None and t.amortisation_years == 4.0
    assert t.capital_usd == pytest.approx(1.5 * PURCHASE_HOURS)
    assert "purchase_usd" not in cluster_to_spec(c)["accelerators"][0]
    assert_same(cluster_from_spec(cluster_to_spec(c)), c)


@pytest.mark.parametrize(
    ("key", "value"), [("purchase_usd", -1), ("amortisation_years", 0), ("purchase_usd", "1k")]
)
def test_bad_capital_values_name_the_field(key: str, value: object) -> None:
    chip = {**MYCHIP, key: value}
    with pytest.raises(SpecError) as info:
        cluster_from_spec(
            {"accelerators": [chip], "pools": [{"accelerator": "MyChip", "nodes": 1}]}
        )
    assert info.value.field == f"accelerators[0].{key}"


def test_a_user_type_without_idle_power_gets_a_labelled_assumption() -> None:
    c = cluster_from_spec(
        {"accelerators": [dict(MYCHIP)], "pools": [{"accelerator": "MyChip", "nodes": 1}]}
    )
    t = c.types[0]
    assert t.idle_w == pytest.approx(0.114 * 350, abs=0.05)
    assert any(a.startswith("idle_w: [assumed]") for a in t.assumptions)


def test_building_is_deterministic_and_leaves_the_spec_alone() -> None:
    spec = example()
    before = copy.deepcopy(spec)
    assert_same(cluster_from_spec(spec), cluster_from_spec(spec))
    assert spec == before


# -- round trips --------------------------------------------------------------------------------


def test_cluster_to_spec_round_trips() -> None:
    c = cluster_from_spec(example())
    spec = cluster_to_spec(c)
    again = cluster_from_spec(json.loads(json.dumps(spec)))
    assert_same(again, c)
    assert cluster_to_spec(again) == spec


def test_round_trip_refers_to_catalog_types_by_name() -> None:
    spec = cluster_to_spec(cluster_from_spec(example()))
    assert [a["name"] for a in spec["accelerators"]] == ["MyChip"]
    assert {p["accelerator"] for p in spec["pools"]} == {"V100-SXM2-16GB", "MyChip", "T4"}


def test_round_trip_of_a_shorthand_cluster() -> None:
    c = cluster_from_shorthand("v100:8,p100:6,k80:16:8")
    assert_same(cluster_from_spec(cluster_to_spec(c)), c)


@st.composite
def random_specs(draw: st.DrawFn) -> dict[str, Any]:
    names = ["K80", "P100", "v100", "A100-SXM4-80GB", "TPU v4", "Jetson AGX Orin", "MyChip"]
    n_regions = draw(st.integers(1, 3))
    regions = [
        {"name": f"g{i}", "pue": draw(st.floats(1.0, 2.0)), "carbon_zone": ["DE", "GB", "SG"][i]}
        for i in range(n_regions)
    ]
    n_racks = draw(st.integers(0, 3))
    racks = [
        {
            "name": f"r{i}",
            "region": f"g{draw(st.integers(0, n_regions - 1))}",
            "oversubscription": draw(st.floats(1.0, 8.0)),
        }
        for i in range(n_racks)
    ]
    pools = []
    for i in range(draw(st.integers(1, 5))):
        pool: dict[str, Any] = {
            "name": f"p{i}",
            "accelerator": draw(st.sampled_from(names)),
            "nodes": draw(st.integers(1, 6)),
            "devices_per_node": draw(st.integers(1, 8)),
            "availability": draw(st.floats(0.05, 1.0)),
        }
        how = draw(st.integers(0, 2 if n_racks else 1))
        if how == 1:
            pool["racks"] = draw(st.integers(1, pool["nodes"]))
        elif how == 2:
            pool["rack"] = f"r{draw(st.integers(0, n_racks - 1))}"
        pools.append(pool)
    return {"regions": regions, "racks": racks, "accelerators": [dict(MYCHIP)], "pools": pools}


@settings(max_examples=60, deadline=None)
@given(random_specs())
def test_random_specs_round_trip(spec: dict[str, Any]) -> None:
    c = cluster_from_spec(spec)
    assert c.total_devices == sum(p["nodes"] * p["devices_per_node"] for p in spec["pools"])
    assert_same(cluster_from_spec(json.loads(json.dumps(cluster_to_spec(c)))), c)


# -- validation: every bad spec names its field ---------------------------------------------------


def base() -> dict[str, Any]:
    return example()


def edit(path: str, value: Any, delete: bool = False) -> dict[str, Any]:
    """A copy of the example with the value at ``path`` ("pools.1.nodes") replaced."""
    spec = base()
    *parents, last = path.split(".")
    obj: Any = spec
    for p in parents:
        obj = obj[int(p)] if p.isdigit() else obj[p]
    key: Any = int(last) if last.isdigit() else last
    if delete:
        del obj[key]
    else:
        obj[key] = value
    return spec


def with_rack(name: str) -> dict[str, Any]:
    spec = base()
    spec["racks"].append({"name": name})
    return spec


BAD: list[tuple[str, dict[str, Any] | Any, str]] = [
    ("spec is not an object", [], "spec"),
    ("unknown top-level key", edit("pool", []), "pool"),
    ("empty name", edit("name", " "), "name"),
    ("name is a number", edit("name", 3), "name"),
    ("no pools", edit("pools", None, delete=True), "pools"),
    ("empty pools", edit("pools", []), "pools"),
    ("pools is an object", edit("pools", {}), "pools"),
    ("empty regions", edit("regions", []), "regions"),
    ("region is a string", edit("regions.0", "us-west"), "regions[0]"),
    ("region typo", edit("regions.0.carbon_zon", "DE"), "regions[0].carbon_zon"),
    ("zone without data", edit("regions.1.carbon_zone", "XX-NOWHERE"), "regions[1].carbon_zone"),
    ("region pue below 1", edit("regions.0.pue", 0.9), "regions[0].pue"),
    ("region pue is text", edit("regions.0.pue", "1.2"), "regions[0].pue"),
    ("region pue is NaN", edit("regions.0.pue", float("nan")), "regions[0].pue"),
    ("negative price", edit("regions.1.price_per_kwh", -1), "regions[1].price_per_kwh"),
    ("duplicate region", edit("regions.1.name", "us-west"), "regions[1].name"),
    ("region without name", edit("regions.1.name", None, delete=True), "regions[1].name"),
    ("rack in undefined region", edit("racks.0.region", "mars"), "racks[0].region"),
    (
        "rack oversubscription < 1",
        edit("racks.1.oversubscription", 0.5),
        "racks[1].oversubscription",
    ),
    ("duplicate rack", edit("racks.1.name", "r1"), "racks[1].name"),
    ("rack typo", edit("racks.0.oversub", 2), "racks[0].oversub"),
    ("accelerator typo", edit("accelerators.0.fp16_tflop", 1), "accelerators[0].fp16_tflop"),
    (
        "accelerator missing field",
        edit("accelerators.0.busy_w", None, True),
        "accelerators[0].busy_w",
    ),
    ("accelerator bad kind", edit("accelerators.0.kind", "fpga"), "accelerators[0].kind"),
    (
        "accelerator zero flops",
        edit("accelerators.0.fp16_tflops", 0),
        "accelerators[0].fp16_tflops",
    ),
    ("accelerator idle > busy", edit("accelerators.0.idle_w", 400), "accelerators[0].idle_w"),
    (
        "accelerator year",
        edit("accelerators.0.release_year", 2024.5),
        "accelerators[0].release_year",
    ),
    ("accelerator alias clash", edit("accelerators.0.aliases", ["v100"]), "accelerators[0].name"),
    (
        "accelerator alias not text",
        edit("accelerators.0.aliases", [3]),
        "accelerators[0].aliases[0]",
    ),
    ("pool typo", edit("pools.0.devices_per_nod", 8), "pools[0].devices_per_nod"),
    ("unknown accelerator", edit("pools.1.accelerator", "V100-SXM3"), "pools[1].accelerator"),
    ("unmapped accelerator", edit("pools.1.accelerator", "G2"), "pools[1].accelerator"),
    ("no accelerator", edit("pools.1.accelerator", None, delete=True), "pools[1].accelerator"),
    ("zero nodes", edit("pools.0.nodes", 0), "pools[0].nodes"),
    ("negative devices", edit("pools.1.devices_per_node", -8), "pools[1].devices_per_node"),
    ("fractional devices", edit("pools.1.devices_per_node", 2.5), "pools[1].devices_per_node"),
    ("boolean devices", edit("pools.1.devices_per_node", True), "pools[1].devices_per_node"),
    ("nodes as text", edit("pools.2.nodes", "5"), "pools[2].nodes"),
    ("too many nodes", edit("pools.2.nodes", 10**9), "pools[2].nodes"),
    ("undefined rack", edit("pools.0.rack", "r9"), "pools[0].rack"),
    ("rack and racks", edit("pools.0.racks", 2), "pools[0].racks"),
    ("more racks than nodes", edit("pools.2.racks", 6), "pools[2].racks"),
    ("undefined pool region", edit("pools.3.region", "mars"), "pools[3].region"),
    ("pool region differs from its rack", edit("pools.0.region", "eu"), "pools[0].region"),
    ("duplicate pool", edit("pools.1.name", "v100s"), "pools[1].name"),
    ("availability above 1", edit("pools.0.availability", 1.5), "pools[0].availability"),
    ("availability zero", edit("pools.0.availability", 0), "pools[0].availability"),
    ("zero nic", edit("pools.0.nic_gbps", 0), "pools[0].nic_gbps"),
    ("negative intra", edit("pools.0.intra_gbs", -1), "pools[0].intra_gbs"),
    ("negative overhead", edit("pools.0.overhead_w", -5), "pools[0].overhead_w"),
    ("fractional cpu cores", edit("pools.0.cpu_cores", 6.5), "pools[0].cpu_cores"),
    ("zero host memory", edit("pools.0.host_mem_gb", 0), "pools[0].host_mem_gb"),
    ("pool is a list", edit("pools.2", ["T4", 5]), "pools[2]"),
    ("new rack clashes with a declared rack", with_rack("t4s-rack0"), "pools[2].racks"),
    ("new rack of a pool clashes", with_rack("more-v100-rack"), "pools[3].name"),
]


@pytest.mark.parametrize(("spec", "field"), [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_specs_name_the_field(spec: Any, field: str) -> None:
    with pytest.raises(SpecError) as info:
        cluster_from_spec(spec)
    assert info.value.field == field
    assert info.value.message


def test_the_example_itself_is_valid() -> None:
    cluster_from_spec(base())


def test_a_typo_suggests_the_key() -> None:
    with pytest.raises(SpecError, match="did you mean 'devices_per_node'"):
        cluster_from_spec(edit("pools.0.devices_per_nod", 8))


def test_an_unknown_accelerator_lists_close_matches() -> None:
    with pytest.raises(SpecError, match=r"close matches: .*V100-SXM2-16GB") as info:
        cluster_from_spec(edit("pools.1.accelerator", "V100-SXM3"))
    assert info.value.field == "pools[1].accelerator"


# -- shorthand ----------------------------------------------------------------------------------


def test_gavel_servers_hold_four_devices() -> None:
    assert GAVEL_DEVICES_PER_SERVER == 4


def test_shorthand_builds_one_rack_per_type() -> None:
    c = cluster_from_shorthand("v100:8,p100:8,k80:8")
    assert c.type_names == ("V100-SXM2-16GB", "P100", "K80")
    assert c.devices_per_type().tolist() == [8, 8, 8]
    assert c.node_devices.tolist() == [4] * 6
    assert c.node_rack.tolist() == [0, 0, 1, 1, 2, 2]


def test_shorthand_takes_devices_per_server_and_gavel_separators() -> None:
    c = cluster_from_shorthand(" v100:16:8 | k80:4:1 | p100:0 ")
    assert c.type_names == ("V100-SXM2-16GB", "K80")
    assert c.node_devices.tolist() == [8, 8, 1, 1, 1, 1]


def test_shorthand_puts_a_remainder_on_a_smaller_server() -> None:
    c = cluster_from_shorthand("t4:6")
    assert c.node_devices.tolist() == [4, 2]
    assert c.node_rack.tolist() == [0, 0]


def test_shorthand_spec_is_a_plain_spec() -> None:
    spec = spec_from_shorthand("v100:8")
    assert json.loads(json.dumps(spec)) == spec
    assert_same(cluster_from_spec(spec), cluster_from_shorthand("v100:8"))


@pytest.mark.parametrize(
    "text",
    [
        "",
        " , ",
        "v100",
        "v100:",
        "v100:x",
        "v100:8:0",
        "v100:-4",
        "v100:8:4:2",
        "xyz:8",
        "g2:8",
        "v100:8,V100M16:4",
        "v100:0,p100:0",
    ],
)
def test_bad_shorthand_raises_on_the_cluster_field(text: str) -> None:
    with pytest.raises(SpecError) as info:
        cluster_from_shorthand(text)
    assert info.value.field == "cluster"


# -- load_cluster -------------------------------------------------------------------------------


def test_load_cluster_reads_a_json_file(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    path.write_text(json.dumps(base()))
    assert_same(load_cluster(str(path)), cluster_from_spec(base()))


def test_load_cluster_takes_a_preset_name_then_shorthand() -> None:
    assert load_cluster("gavel-testbed").total_devices == 108
    assert load_cluster("v100:8").total_devices == 8


def test_load_cluster_prefers_an_existing_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "philly").write_text(json.dumps({"pools": [{"accelerator": "T4", "nodes": 1}]}))
    assert load_cluster("philly").type_names == ("T4",)


@pytest.mark.parametrize(
    ("arg", "match"),
    [
        ("missing.json", "cannot read"),
        ("no-such-thing", "not a JSON spec file, a preset"),
        ("", "empty"),
    ],
)
def test_load_cluster_explains_what_it_expected(arg: str, match: str) -> None:
    with pytest.raises(SpecError, match=match) as info:
        load_cluster(arg)
    assert info.value.field == "cluster"


def test_load_cluster_reports_bad_json_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text('{"pools": [\n  {"accelerator": "T4",}\n]}')
    with pytest.raises(SpecError, match="line 2") as info:
        load_cluster(str(path))
    assert info.value.field == "cluster"


def test_load_cluster_keeps_spec_field_paths(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"pools": [{"accelerator": "T4", "nodes": 0}]}))
    with pytest.raises(SpecError) as info:
        load_cluster(str(path))
    assert info.value.field == "pools[0].nodes"
