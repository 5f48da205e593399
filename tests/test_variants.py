"""What-if variants of a cluster spec (clustersim.variants): add, replace, scale; prices."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from clustersim.catalog import load_catalog
from clustersim.errors import SpecError
from clustersim.spec import cluster_from_spec
from clustersim.variants import (
    OPERATIONS,
    add_pool,
    price_keys,
    price_override,
    replace_type,
    scale_pools,
    scaled_nodes,
    split_price_overrides,
)

SMALL: dict[str, Any] = {
    "name": "small",
    "pools": [
        {"name": "v100", "accelerator": "V100", "nodes": 2, "devices_per_node": 4},
        {"name": "k80", "accelerator": "K80", "nodes": 3, "devices_per_node": 4, "intra_gbs": 12},
    ],
}

TWO_REGIONS: dict[str, Any] = {
    "regions": [{"name": "us"}, {"name": "eu", "carbon_zone": "DE"}],
    "racks": [{"name": "r1", "region": "eu"}],
    "pools": [{"name": "a100", "accelerator": "A100-SXM4-80GB", "nodes": 5, "racks": 4}],
}

MYCHIP = {
    "name": "MyChip",
    "fp16_tflops": 100,
    "memory_gb": 32,
    "memory_bw_tbs": 1.0,
    "busy_w": 300,
    "price_per_hour": 2.0,
    "release_year": 2024,
}


def _devices_by_type(spec: dict[str, Any], extra: list[dict[str, Any]] | None = None) -> Any:
    s = copy.deepcopy(spec)
    if extra:
        s["accelerators"] = [*s.get("accelerators", []), *extra]
    c = cluster_from_spec(s)
    return {t.name: int(c.node_devices[c.node_type == i].sum()) for i, t in enumerate(c.types)}


# -- add a pool --------------------------------------------------------------------------------


def test_adding_64_h100_makes_8_nodes_of_8_in_a_new_pool() -> None:
    v = add_pool(SMALL, "H100-SXM5", 64)
    new = v.spec["pools"][-1]
    assert new == {
        "name": "h100-sxm5-80gb",
        "accelerator": "H100-SXM5-80GB",
        "nodes": 8,
        "devices_per_node": 8,
    }
    assert v.name("small") == "small + 64 H100-SXM5-80GB"
    # 8 V100 + 12 K80 before; 64 H100 more
    assert _devices_by_type(v.spec) == {"V100-SXM2-16GB": 8, "K80": 12, "H100-SXM5-80GB": 64}


def test_adding_leaves_the_original_spec_alone() -> None:
    before = copy.deepcopy(SMALL)
    add_pool(SMALL, "L4", 8)
    assert before == SMALL


def test_adding_with_a_node_size_and_a_region() -> None:
    v = add_pool(TWO_REGIONS, "L4", 12, 4, region="eu")
    assert v.spec["pools"][-1] == {
        "name": "l4",
        "accelerator": "L4",
        "nodes": 3,
        "devices_per_node": 4,
        "region": "eu",
    }
    c = cluster_from_spec(v.spec)
    assert c.node_region.tolist()[-3:] == [1, 1, 1]  # the three new nodes are in "eu"


def test_adding_devices_that_do_not_fill_whole_nodes_is_refused_with_the_neighbours() -> None:
    with pytest.raises(SpecError) as err:
        add_pool(SMALL, "H100-SXM5", 60)  # nodes of 8: 56 or 64
    assert err.value.field == "devices" and "56 or 64" in err.value.message


def test_adding_an_unknown_type_names_the_parameter_with_close_matches() -> None:
    with pytest.raises(SpecError) as err:
        add_pool(SMALL, "H1OO", 8)
    assert err.value.field == "accelerator" and "unknown accelerator" in err.value.message


def test_adding_in_an_unknown_region_is_refused() -> None:
    with pytest.raises(SpecError) as err:
        add_pool(TWO_REGIONS, "L4", 8, region="asia")
    assert err.value.field == "region" and "us, eu" in err.value.message


def test_a_taken_pool_name_gets_a_number() -> None:
    spec = {"pools": [{"name": "l4", "accelerator": "L4", "nodes": 1}]}
    assert add_pool(spec, "L4", 8).spec["pools"][-1]["name"] == "l4-2"


def test_a_pool_name_whose_rack_is_taken_gets_a_number() -> None:
    # a declared rack "l4-rack" would clash with the new pool's own rack
    spec = {"racks": [{"name": "l4-rack"}], "pools": [{"accelerator": "T4", "nodes": 1}]}
    v = add_pool(spec, "L4", 8)
    assert v.spec["pools"][-1]["name"] == "l4-2"


def test_adding_a_type_of_the_users_own() -> None:
    v = add_pool(SMALL, "mychip", 16, extra_types=[MYCHIP])
    assert v.spec["pools"][-1]["accelerator"] == "MyChip"
    assert "accelerators" not in v.spec  # named only, as the web app stores specs
    assert _devices_by_type(v.spec, [MYCHIP])["MyChip"] == 16


# -- replace a pool's type ---------------------------------------------------------------------


def test_replacing_the_k80_pool_with_l4_keeps_its_shape() -> None:
    v = replace_type(SMALL, "k80", "l4")
    assert v.spec["pools"][1] == {
        "name": "k80",
        "accelerator": "L4",
        "nodes": 3,
        "devices_per_node": 4,
    }  # intra_gbs (the K80's PCIe figure) dropped: the L4's catalog default applies
    assert v.spec["pools"][0] == SMALL["pools"][0]
    assert v.name("small") == "small, k80 → L4"
    c = cluster_from_spec(v.spec)
    assert c.node_intra_gbs[-1] == load_catalog().default_intra_gbs("L4")


def test_replacing_with_the_same_type_or_in_an_unknown_pool_is_refused() -> None:
    with pytest.raises(SpecError) as err:
        replace_type(SMALL, "k80", "Tesla K80")
    assert err.value.field == "accelerator"
    with pytest.raises(SpecError) as err:
        replace_type(SMALL, "p100", "L4")
    assert err.value.field == "pool" and "v100, k80" in err.value.message


def test_unnamed_pools_are_pool_i() -> None:
    spec = {"pools": [{"accelerator": "T4", "nodes": 2}]}
    v = replace_type(spec, "pool0", "L4")
    assert v.spec["pools"][0]["accelerator"] == "L4"


# -- scale -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("nodes", "factor", "expected"),
    [
        (3, 1.5, 5),  # 4.5: halves round up
        (7, 0.3, 2),  # 2.1
        (2, 1.5, 3),
        (5, 0.1, 1),  # 0.5
        (45, 0.7, 32),  # 31.5, computed as 31.499999999999996: still rounds up
        (1, 0.4, 0),
        (10, 2.0, 20),
    ],
)
def test_scaled_node_counts_round_half_up(nodes: int, factor: float, expected: int) -> None:
    assert scaled_nodes(nodes, factor) == expected


def test_scaling_every_pool_by_1_5() -> None:
    v = scale_pools(SMALL, 1.5)
    assert [p["nodes"] for p in v.spec["pools"]] == [3, 5]  # 2 x 1.5 = 3, 3 x 1.5 = 4.5 -> 5
    assert v.name("small") == "small × 1.5"
    assert _devices_by_type(v.spec) == {"V100-SXM2-16GB": 12, "K80": 20}


def test_scaling_one_pool() -> None:
    v = scale_pools(SMALL, 2, "k80")
    assert [p["nodes"] for p in v.spec["pools"]] == [2, 6]
    assert v.name("small") == "small, k80 × 2"


def test_scaling_down_keeps_at_most_one_rack_per_node() -> None:
    v = scale_pools(TWO_REGIONS, 0.5)  # 5 x 0.5 = 2.5 -> 3 nodes, over 4 racks before
    assert v.spec["pools"][0]["nodes"] == 3 and v.spec["pools"][0]["racks"] == 3


def test_scaling_a_pool_to_nothing_is_refused_naming_it() -> None:
    with pytest.raises(SpecError) as err:
        scale_pools(SMALL, 0.2)  # v100: 2 x 0.2 = 0.4
    assert err.value.field == "factor" and "'v100'" in err.value.message


@pytest.mark.parametrize("factor", [0, -1, 1, float("nan"), float("inf"), True, "2"])
def test_scaling_needs_a_positive_factor_other_than_1(factor: Any) -> None:
    with pytest.raises(SpecError) as err:
        scale_pools(SMALL, factor)
    assert err.value.field == "factor"


def test_the_operations_are_registered_by_name() -> None:
    assert OPERATIONS["scale"](SMALL, factor=2).spec["pools"][0]["nodes"] == 4
    assert set(OPERATIONS) == {"add_pool", "replace_type", "scale"}


# -- prices ------------------------------------------------------------------------------------


def test_price_keys_are_the_cost_keys_the_spec_format_defines() -> None:
    assert price_keys() == ("price_per_hour", "purchase_usd", "amortisation_years")


def test_a_capital_cost_override() -> None:
    t4 = load_catalog().get("T4")
    entry = price_override("T4", {"purchase_usd": 1000.0, "amortisation_years": 3})
    assert (entry["price_per_hour"], entry["purchase_usd"], entry["amortisation_years"]) == (
        t4.price_per_hour,
        1000.0,
        3,
    )
    spec = {"accelerators": [entry], "pools": [{"accelerator": "T4", "nodes": 1}]}
    t = cluster_from_spec(spec).types[0]
    assert (t.purchase_usd, t.amortisation_years) == (1000.0, 3.0)


def test_a_price_override_is_the_catalog_type_with_another_price() -> None:
    t4 = load_catalog().get("T4")
    entry = price_override("t4", {"price_per_hour": 0.2})
    assert entry["name"] == "T4" and entry["price_per_hour"] == 0.2
    assert (entry["fp16_tflops"], entry["busy_w"]) == (t4.fp16_tflops, t4.busy_w)
    assert (
        f"price_per_hour: [user] set in this cluster's spec (catalog: {t4.price_per_hour:g})"
        in (entry["assumptions"])
    )
    spec = {"accelerators": [entry], "pools": [{"accelerator": "T4", "nodes": 1}]}
    assert cluster_from_spec(spec).types[0].price_per_hour == 0.2


def test_overrides_are_told_apart_from_types_of_ones_own() -> None:
    changed = {**price_override("T4", {"price_per_hour": 0.2}), "busy_w": 99.0}
    own, overrides = split_price_overrides(
        [price_override("T4", {"price_per_hour": 0.2}), MYCHIP, changed]
    )
    t4 = load_catalog().get("T4")
    assert overrides == [
        {
            "name": "T4",
            "price_per_hour": 0.2,
            "purchase_usd": t4.purchase_usd,
            "amortisation_years": t4.amortisation_years,
        }
    ]
    assert own == [MYCHIP, changed]  # another power figure: a type of its own
