"""Presets: every one builds; sizes and node lists agree with the real data they come from."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from clustersim.catalog import load_catalog
from clustersim.presets import (
    PHILLY_TRACE_GPU_SECONDS,
    PHILLY_TRACE_JOBS,
    PHILLY_TRACE_MAX_GANG,
    PHILLY_TRACE_SPAN_S,
    PRESETS,
    node_list_spec,
    preset,
    preset_names,
    preset_spec,
)
from clustersim.spec import cluster_from_spec, cluster_to_spec

DATA = Path(__file__).resolve().parents[1] / "clustersim" / "data"
NODE_FILES = {
    "alibaba-pai-2020": ("alibaba_pai_2020_nodes.csv", "gpu_type"),
    "alibaba-openb-2023": ("alibaba_openb_2023_nodes.csv", "model"),
    "alibaba-spot-2026": ("alibaba_spot_2026_nodes.csv", "gpu_model"),
}


def test_the_required_presets_exist() -> None:
    assert set(preset_names()) >= {
        "philly",
        "gavel-testbed",
        "alibaba-pai-2020",
        "alibaba-openb-2023",
        "alibaba-spot-2026",
        "mixed-cloud-edge",
    }


@pytest.mark.parametrize("name", list(PRESETS))
def test_every_preset_builds_with_positive_devices(name: str) -> None:
    c = preset(name)
    assert c.total_devices > 0
    assert (c.node_devices > 0).all()
    assert c.name == name
    n = c.n_nodes
    for f in ("node_type", "node_devices", "node_rack", "node_region", "node_intra_gbs"):
        assert getattr(c, f).shape == (n,)
    assert c.node_availability.shape == (n,)
    assert ((c.node_availability > 0) & (c.node_availability <= 1)).all()
    assert c.node_rack.max() < len(c.rack_oversub)
    assert c.node_region.max() < len(c.regions)
    assert (c.devices_per_type() > 0).all(), "types hold only types present"


@pytest.mark.parametrize("name", list(PRESETS))
def test_every_preset_is_described_and_round_trips(name: str) -> None:
    p = PRESETS[name]
    assert p.description and p.source
    spec = preset_spec(name)
    assert json.loads(json.dumps(spec)) == spec
    c = cluster_from_spec(spec)
    again = cluster_from_spec(cluster_to_spec(c))
    assert again.types == c.types
    np.testing.assert_array_equal(again.node_devices, c.node_devices)
    np.testing.assert_array_equal(again.node_rack, c.node_rack)


def test_preset_spec_is_a_fresh_copy() -> None:
    spec = preset_spec("mixed-cloud-edge")
    spec["pools"].clear()
    assert preset_spec("mixed-cloud-edge")["pools"]


def test_an_unknown_preset_lists_the_names() -> None:
    with pytest.raises(KeyError, match="gavel-testbed"):
        preset("phily")


# -- philly -------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def philly(shared_data: Path) -> pd.DataFrame:
    return pd.read_csv(shared_data / "traces" / "philly" / "philly.csv")


def test_philly_constants_match_the_trace(philly: pd.DataFrame) -> None:
    t = pd.to_datetime(philly["timestamp"])
    assert len(philly) == PHILLY_TRACE_JOBS
    assert int(philly["gpu_time"].sum()) == PHILLY_TRACE_GPU_SECONDS
    assert int((t.max() - t.min()).total_seconds()) == PHILLY_TRACE_SPAN_S
    assert int(philly["num_gpus"].max()) == PHILLY_TRACE_MAX_GANG


def test_philly_fits_the_largest_gang_and_is_heavily_loaded(philly: pd.DataFrame) -> None:
    c = preset("philly")
    assert c.type_names == ("P100",)
    assert c.total_devices >= int(philly["num_gpus"].max())
    t = pd.to_datetime(philly["timestamp"])
    mean_load = philly["gpu_time"].sum() / (t.max() - t.min()).total_seconds()
    assert 1.3 <= c.total_devices / mean_load <= 2.0
    assert set(c.node_devices.tolist()) == {2, 8}
    assert f"{mean_load:.1f}" in PRESETS["philly"].description


# -- gavel ----------------------------------------------------------------------------------------


def test_gavel_testbed_has_36_gpus_of_each_type() -> None:
    c = preset("gavel-testbed")
    assert c.type_names == ("V100-SXM2-16GB", "P100", "K80")
    assert c.devices_per_type().tolist() == [36, 36, 36]
    assert set(c.node_devices.tolist()) == {8, 4}  # 4 servers of 8 and one of 4 per type
    assert len(c.rack_oversub) == 3


# -- alibaba ------------------------------------------------------------------------------------


def shared_node_counts(shared_data: Path, name: str) -> pd.DataFrame:
    """(model, gpus_per_node, nodes) from the original node list."""
    t = shared_data / "traces"
    if name == "alibaba-pai-2020":
        df = pd.read_csv(
            t / "alibaba-pai-2020" / "pai_machine_spec.csv",
            header=None,
            names=["machine", "model", "cpu", "mem", "gpus"],
        )
    elif name == "alibaba-openb-2023":
        df = pd.read_csv(t / "alibaba-gpu-2023" / "openb_node_list_gpu_node.csv")
        df = df.rename(columns={"gpu": "gpus"})
    else:
        df = pd.read_csv(t / "alibaba-spot-2026" / "node_info_df.csv")
        df = df.rename(columns={"gpu_model": "model", "gpu_capacity_num": "gpus"})
    return df.groupby(["model", "gpus"]).size().rename("nodes").reset_index()


@pytest.mark.parametrize("name", list(NODE_FILES))
def test_shipped_node_lists_match_the_originals(shared_data: Path, name: str) -> None:
    filename, column = NODE_FILES[name]
    shipped = pd.read_csv(DATA / filename).rename(
        columns={column: "model", "gpus_per_node": "gpus"}
    )
    shipped = shipped.groupby(["model", "gpus"])["nodes"].sum().reset_index()
    original = shared_node_counts(shared_data, name)
    pd.testing.assert_frame_equal(
        shipped.sort_values(["model", "gpus"]).reset_index(drop=True),
        original.sort_values(["model", "gpus"]).reset_index(drop=True),
        check_dtype=False,
    )


@pytest.mark.parametrize("name", list(NODE_FILES))
def test_alibaba_presets_keep_every_mapped_node_and_report_the_rest(name: str) -> None:
    filename, column = NODE_FILES[name]
    rows = pd.read_csv(DATA / filename)
    cat = load_catalog()
    mapped = rows[
        [
            cat.resolve(m) is not None and g > 0
            for m, g in zip(rows[column], rows["gpus_per_node"], strict=True)
        ]
    ]
    c = preset(name)
    assert c.n_nodes == mapped["nodes"].sum()
    assert c.total_devices == (mapped["nodes"] * mapped["gpus_per_node"]).sum()
    description = PRESETS[name].description
    assert f"{c.total_devices:,}" in description
    assert f"{c.n_nodes:,}" in description
    _, skipped = node_list_spec(name, filename, column)
    for model, (nodes, devices) in skipped.items():
        assert model in description, model
        assert f"{nodes:,}" in description, model
        if devices:
            assert f"{devices:,}" in description, model


def test_unmapped_models_are_the_undisclosed_ones() -> None:
    skipped = set()
    for name, (filename, column) in NODE_FILES.items():
        skipped |= set(node_list_spec(name, filename, column)[1])
    assert skipped == {"MISC", "CPU", "G2", "G3", "GPU-series-1", "GPU-series-2"}


def test_a_mapped_alias_brings_skipped_nodes_in() -> None:
    cat = load_catalog().with_aliases({"G2": "A10", "G3": "A100-SXM4-80GB"})
    c = preset("alibaba-openb-2023", cat)
    assert c.total_devices == 6212
    assert preset("alibaba-openb-2023").total_devices == 6212 - 4392 - 312


def test_export_variants_get_their_capped_nvlink() -> None:
    spec = preset_spec("alibaba-spot-2026")
    capped = {p["name"]: p.get("intra_gbs") for p in spec["pools"] if "800" in p["name"]}
    assert capped and set(capped.values()) == {400.0}
    c = cluster_from_spec(spec)
    h = c.type_index("H800")
    assert h >= 0 and set(c.node_intra_gbs[c.node_type == h].tolist()) == {400.0}


# -- mixed cloud / edge ---------------------------------------------------------------------------


def test_mixed_cloud_edge_has_two_zones_and_flaky_edge_devices() -> None:
    c = preset("mixed-cloud-edge")
    zones = {r.carbon_zone for r in c.regions}
    assert len(c.regions) == 2 and len(zones) == 2 and "" not in zones
    edge = np.array([c.types[t].kind == "edge" for t in c.node_type])
    assert edge.any() and (~edge).any()
    assert (c.node_availability[edge] < 1).all()
    assert (c.node_availability[~edge] == 1).all()
    assert (c.node_nic_gbps[edge] < c.node_nic_gbps[~edge].min()).all()


def test_notice_has_a_section_per_shipped_node_list() -> None:
    notice = (DATA / "NOTICE.md").read_text()
    for filename, _ in NODE_FILES.values():
        assert f"## {filename}" in notice


def test_philly_hetero_is_philly_in_three_generations_one_per_rack() -> None:
    hetero, homo = preset("philly-hetero-560"), preset("philly")
    assert hetero.total_devices == homo.total_devices == 560
    per_type = {
        name: int(hetero.node_devices[hetero.node_type == t].sum())
        for t, name in enumerate(hetero.type_names)
    }
    assert per_type == {"V100-SXM2-16GB": 128, "P100": 256, "K80": 176}
    # the same servers, racks and rack of each server as the homogeneous preset
    assert hetero.node_devices.tolist() == homo.node_devices.tolist()
    assert hetero.node_rack.tolist() == homo.node_rack.tolist()
    for rack in range(int(hetero.node_rack.max()) + 1):
        assert len(set(hetero.node_type[hetero.node_rack == rack].tolist())) == 1
    # every 8-GPU rack holds the trace's largest gang
    for t in range(len(hetero.type_names)):
        racks = hetero.node_rack[(hetero.node_type == t) & (hetero.node_devices == 8)]
        sizes = [int(hetero.node_devices[hetero.node_rack == r].sum()) for r in set(racks.tolist())]
        assert max(sizes) >= PHILLY_TRACE_MAX_GANG
