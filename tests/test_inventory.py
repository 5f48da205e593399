"""Inventory importers: Kubernetes, Slurm and Alibaba node lists, unmapped models, bad input."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from clustersim.cli import main
from clustersim.errors import SpecError
from clustersim.inventory import (
    InventoryError,
    detect_inventory_format,
    import_inventory,
    parse_inventory,
    parse_quantity,
)
from clustersim.presets import HELIOS_CLUSTER_GPUS, preset
from clustersim.spec import cluster_from_spec

FIXTURES = Path(__file__).parent / "fixtures" / "inventory"


def _devices(spec: dict) -> dict[str, int]:
    c = cluster_from_spec(spec)
    return {n: int(d) for n, d in zip(c.type_names, c.devices_per_type(), strict=True)}


# -- Kubernetes -------------------------------------------------------------------------------


def test_kubectl_nodes_become_pools_in_zones_and_regions() -> None:
    spec, report = import_inventory(FIXTURES / "kubectl_nodes.json")
    assert report.format == "kubectl"
    assert (report.nodes_read, report.devices_read) == (7, 32)
    assert (report.nodes_kept, report.devices_kept, report.pools) == (5, 28, 4)
    # a100 x 2 nodes x 8, t4 4 + time-sliced t4 16 / 4 replicas, TPU v5e x 4
    assert _devices(spec) == {"A100-SXM4-80GB": 16, "T4": 8, "TPUv5e": 4}
    assert [r["name"] for r in spec["regions"]] == ["us-central1", "us-west4"]
    assert {r["name"]: r["region"] for r in spec["racks"]} == {
        "us-central1-a": "us-central1",
        "us-central1-b": "us-central1",
        "us-west4-a": "us-west4",
    }
    a100 = next(p for p in spec["pools"] if p["accelerator"] == "A100-SXM4-80GB")
    assert a100["nodes"] == 2 and a100["devices_per_node"] == 8 and a100["cpu_cores"] == 96
    assert a100["host_mem_gb"] == pytest.approx(1389428184 / 2**20, abs=1e-3)  # Ki -> GiB
    assert a100["rack"] == "us-central1-a"
    assert report.resolved["Tesla-T4"] == "T4"  # "-SHARED" dropped from the product label
    assert report.skipped["no accelerators"]["first"] == ["items[0]"]
    text = "\n".join(report.warnings)
    assert "time-slicing" in text and "1 nodes are cordoned" in text
    json.dumps(spec)


def test_an_unmapped_model_is_reported_not_guessed() -> None:
    _, report = import_inventory(FIXTURES / "kubectl_nodes.json")
    u = report.unmapped["NVIDIA-L40S"]
    assert (u["nodes"], u["devices"], u["first"]) == (1, 4, ["items[5]"])
    assert "L40" in u["hint"]  # close matches, never chosen
    assert report.skipped["unmapped model"]["nodes"] == 1
    assert "L40S" not in json.dumps(report.resolved)


def test_an_alias_brings_the_unmapped_nodes_in() -> None:
    spec, report = import_inventory(FIXTURES / "kubectl_nodes.json", aliases={"NVIDIA-L40S": "L40"})
    assert report.unmapped == {}
    assert report.devices_kept == 32
    assert _devices(spec)["L40"] == 4
    assert "'NVIDIA-L40S' -> 'L40'" in report.assumptions[0]


def test_a_single_node_object_without_topology_labels() -> None:
    spec, report = import_inventory(FIXTURES / "kubectl_single_node.json")
    assert "regions" not in spec and "racks" not in spec
    assert spec["pools"] == [
        {
            "name": "nvidia-h100-80gb-hbm3-8g-224c-2016gb",
            "accelerator": "H100-SXM5-80GB",
            "nodes": 1,
            "devices_per_node": 8,
            "cpu_cores": 224,
            "host_mem_gb": pytest.approx(2113612304 / 2**20, abs=1e-3),
        }
    ]
    assert report.skipped == {} and report.unmapped == {}


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("96", 96.0),
        ("7910m", 7.91),
        ("2Gi", 2.0**31),
        ("32863868Ki", 32863868 * 1024.0),
        ("1.5G", 1.5e9),
        ("1e3", 1000.0),
        (8, 8.0),
    ],
)
def test_kubernetes_quantities(text: object, value: float) -> None:
    assert parse_quantity(text) == pytest.approx(value)


@pytest.mark.parametrize("text", ["eight", "-1", "1Xi", "", None, True])
def test_bad_kubernetes_quantities(text: object) -> None:
    with pytest.raises(ValueError):
        parse_quantity(text)


# -- Slurm ------------------------------------------------------------------------------------


def test_scontrol_nodes_become_pools() -> None:
    spec, report = import_inventory(FIXTURES / "slurm_nodes.txt")
    assert report.format == "slurm"
    assert (report.nodes_read, report.devices_read) == (6, 24)
    assert (report.nodes_kept, report.devices_kept) == (3, 20)
    assert _devices(spec) == {"A100-SXM4-80GB": 16, "V100-SXM2-16GB": 4}
    a100 = spec["pools"][0]
    assert (a100["nodes"], a100["cpu_cores"]) == (2, 128)
    assert a100["host_mem_gb"] == pytest.approx(1031000 / 1024, abs=1e-3)  # MiB -> GiB
    assert report.resolved == {
        "nvidia_a100-sxm4-80gb": "A100-SXM4-80GB",
        "v100": "V100-SXM2-16GB",
    }
    assert report.unmapped["tesla"]["first"] == ["line 56"]
    assert report.unmapped["gpu"]["devices"] == 2
    assert "names no model" in report.unmapped["gpu"]["hint"]
    assert report.skipped["no accelerators"]["first"] == ["line 86"]
    text = "\n".join(report.warnings + report.assumptions)
    assert "1 nodes in state DRAIN" in text and "1 nodes in state DOWN" in text
    assert "gpu-legacy 2" in text


def test_slurm_aliases_map_untyped_and_vague_gres() -> None:
    spec, report = import_inventory(
        FIXTURES / "slurm_nodes.txt", aliases={"tesla": "P100", "gpu": "T4"}
    )
    assert report.unmapped == {}
    assert _devices(spec) == {"A100-SXM4-80GB": 16, "P100": 2, "T4": 2, "V100-SXM2-16GB": 4}


@pytest.mark.parametrize(
    ("gres", "expected"),
    [
        ("gpu:4", {"gpu": 4}),
        ("gpu", {"gpu": 1}),
        ("gpu:a100", {"A100-SXM4-40GB": 1}),
        ("gpu:a100:2(S:0),gpu:a100:2(S:1)", {"A100-SXM4-40GB": 4}),
        ("gpu:t4:2,gpu:v100:4(S:0-1),mps:400", {"T4": 2, "V100-SXM2-16GB": 4}),
        ("mps:100", {}),
    ],
)
def test_gres_forms(gres: str, expected: dict[str, int]) -> None:
    text = f"NodeName=n1 CPUTot=8 RealMemory=64000\n   Gres={gres}\nNodeName=n2 Gres=gpu:t4:1\n"
    spec, report = parse_inventory(text, "slurm", aliases={"gpu": "K80"})
    got = _devices(spec)
    got["T4"] -= 1  # node n2
    want = {k.replace("gpu", "K80"): v for k, v in expected.items()}
    assert {k: v for k, v in got.items() if v} == want
    if len(expected) > 1:
        assert any("several types" in w for w in report.warnings)


# -- Alibaba node lists -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("file", "fmt", "devices", "unmapped"),
    [
        ("openb_nodes.csv", "openb", {"T4": 2, "V100-SXM2-32GB": 16}, "G2"),
        ("pai_machine_spec.csv", "pai", {"P100": 2, "T4": 2, "V100-SXM2-32GB": 8}, "MISC"),
        (
            "spot_nodes.csv",
            "spot",
            {"A10": 1, "A100-SXM4-80GB": 8, "H100-SXM5-80GB": 8},
            "GPU-series-1",
        ),
    ],
)
def test_alibaba_fixtures(file: str, fmt: str, devices: dict, unmapped: str) -> None:
    spec, report = import_inventory(FIXTURES / file)
    assert report.format == fmt
    assert _devices(spec) == devices
    assert list(report.unmapped) == [unmapped]
    assert "undisclosed" in report.unmapped[unmapped]["hint"] or "MISC" in unmapped


@pytest.mark.parametrize(
    ("file", "name"),
    [
        ("alibaba-pai-2020/pai_machine_spec.csv", "alibaba-pai-2020"),
        ("alibaba-gpu-2023/openb_node_list_gpu_node.csv", "alibaba-openb-2023"),
        ("alibaba-gpu-2023/openb_node_list_all_node.csv", "alibaba-openb-2023"),
        ("alibaba-spot-2026/node_info_df.csv", "alibaba-spot-2026"),
    ],
)
def test_importing_the_real_node_lists_reproduces_the_presets(
    shared_data: Path, file: str, name: str
) -> None:
    spec, report = import_inventory(shared_data / "traces" / file)
    got, want = cluster_from_spec(spec), preset(name)
    assert _devices(spec) == {
        n: int(d) for n, d in zip(want.type_names, want.devices_per_type(), strict=True)
    }
    assert got.n_nodes == want.n_nodes == report.nodes_kept
    assert len(got.rack_oversub) == len(want.rack_oversub)
    assert sorted(got.node_intra_gbs) == sorted(want.node_intra_gbs)
    assert report.nodes_read == report.nodes_kept + sum(s["nodes"] for s in report.skipped.values())


def test_an_alias_for_an_undisclosed_alibaba_model() -> None:
    spec, report = import_inventory(FIXTURES / "openb_nodes.csv", aliases={"G2": "A10"})
    assert _devices(spec)["A10"] == 8 and not report.unmapped


# -- detection and malformed input ------------------------------------------------------------


@pytest.mark.parametrize(
    ("file", "fmt"),
    [
        ("kubectl_nodes.json", "kubectl"),
        ("kubectl_single_node.json", "kubectl"),
        ("slurm_nodes.txt", "slurm"),
        ("openb_nodes.csv", "openb"),
        ("pai_machine_spec.csv", "pai"),
        ("spot_nodes.csv", "spot"),
    ],
)
def test_formats_are_detected(file: str, fmt: str) -> None:
    assert detect_inventory_format((FIXTURES / file).read_bytes()) == fmt


@pytest.mark.parametrize(
    ("file", "message"),
    [
        (
            "kubectl_bad_gpu.json",
            'kubectl_bad_gpu.json: items[1].status.capacity["nvidia.com/gpu"]: not a quantity',
        ),
        ("kubectl_truncated.json", "kubectl_truncated.json:173: invalid JSON"),
        ("slurm_bad_memory.txt", "slurm_bad_memory.txt:45 [RealMemory]: not a number: '385GB'"),
        ("slurm_bad_gres.txt", "slurm_bad_gres.txt:42 [Gres]: GPU count 'four'"),
        ("openb_bad_gpu.csv", "openb_bad_gpu.csv:3 [gpu]: not a whole number: '8.5'"),
        ("openb_short_row.csv", "openb_short_row.csv:2: expected 5 fields, found 4"),
    ],
)
def test_malformed_files_name_the_place(file: str, message: str) -> None:
    with pytest.raises(InventoryError) as err:
        import_inventory(FIXTURES / file)
    assert message in str(err.value)
    assert isinstance(err.value, SpecError)


@pytest.mark.parametrize(
    ("data", "kwargs", "message"),
    [
        (b"\xff\xfe\x00garbage", {}, "<input>:1: not UTF-8"),
        (b"NodeName=a\x00", {}, "NUL byte"),
        (b"", {}, "unrecognised node list"),
        (b"hello world\n", {}, "unrecognised node list"),
        (b"apiVersion: v1\nkind: List\n", {}, "use kubectl -o json"),
        (b"{}", {}, "expected a node list"),
        (b'{"items": [42]}', {}, "items[0]: a node must be an object"),
        (b'{"items": [{"metadata": {}}]}', {}, "items[0].metadata.name: missing"),
        (b'{"items": [{"metadata": {"name": "a", "labels": 3}}]}', {}, "must be an object"),
        (b"garbage line\nNodeName=a\n", {"format": "slurm"}, "<input>:1: expected NodeName"),
        (b"NodeName=a CPUTot=-4 Gres=gpu:t4:1", {}, "[CPUTot]: not a non-negative number"),
        (b"NodeName=a Gres=gpu:t4:1", {"format": "lsf"}, "unknown format 'lsf'"),
        (b"NodeName=a Gres=gpu:t4:1", {"aliases": {"x": "NoSuchGPU"}}, "aliases['x']"),
        (b"NodeName=a Gres=(null)", {}, "no node with a known accelerator left"),
        (b"NodeName=a Gres=gpu:t4:1", {"nodes_per_rack": 0}, "nodes_per_rack"),
    ],
)
def test_malformed_input_raises_inventory_errors(data: bytes, kwargs: dict, message: str) -> None:
    with pytest.raises(InventoryError) as err:
        parse_inventory(data, **kwargs)
    assert message in str(err.value)


def test_a_missing_file_is_an_inventory_error(tmp_path: Path) -> None:
    with pytest.raises(InventoryError, match="cannot read file"):
        import_inventory(tmp_path / "nope.json")


def test_every_report_is_json_compatible() -> None:
    for file in ("kubectl_nodes.json", "slurm_nodes.txt", "spot_nodes.csv"):
        _, report = import_inventory(FIXTURES / file)
        json.dumps(report.to_dict(), allow_nan=False)
        assert report.summary()[0].endswith(report.format)


# -- command line -----------------------------------------------------------------------------


def test_cli_import_cluster_writes_a_spec(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "spec.json"
    argv = ["import-cluster", str(FIXTURES / "slurm_nodes.txt"), "--alias", "tesla=P100"]
    assert main([*argv, "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "unmapped 'gpu'" in printed and f"spec written to {out}" in printed
    spec = json.loads(out.read_text())
    assert _devices(spec)["P100"] == 2
    assert main(["import-cluster", str(FIXTURES / "spot_nodes.csv"), "--json"]) == 0
    both = json.loads(capsys.readouterr().out)
    assert both["report"]["format"] == "spot" and both["spec"]["pools"]


def test_cli_import_cluster_fails_on_one_line(capsys: pytest.CaptureFixture) -> None:
    assert main(["import-cluster", str(FIXTURES / "slurm_bad_gres.txt")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "slurm_bad_gres.txt:42 [Gres]" in err
    assert main(["import-cluster", "x.txt", "--alias", "tesla"]) == 2
    assert "NAME=TYPE" in capsys.readouterr().err


# -- the Helios preset ------------------------------------------------------------------------


def test_the_helios_preset_follows_the_cluster_summary(shared_data: Path) -> None:
    import pandas as pd

    summary = pd.read_csv(shared_data / "traces" / "helios" / "helios_cluster_summary.csv")
    gpus = dict(zip(summary["id"].str.lower(), summary["gpu_num"], strict=True))
    assert {k: gpus[k] for k in HELIOS_CLUSTER_GPUS} == dict(HELIOS_CLUSTER_GPUS)
    assert sum(HELIOS_CLUSTER_GPUS.values()) == 6218  # the file's total row says 6,220
    c = preset("helios")
    assert c.type_names == ("V100-SXM2-32GB",)
    assert (c.node_devices == 8).all()
    per_cluster = np.bincount(np.repeat(np.arange(4), [128, 125, 260, 265]), minlength=4).tolist()
    assert c.n_nodes == sum(per_cluster) == 778
    assert abs(c.total_devices - gpus["total"]) < 8 * 4  # rounded to whole 8-GPU servers
