"""The Tiresias simulator's cluster spec CSV: the cluster it builds and its errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from clustersim.cli import main
from clustersim.errors import SpecError
from clustersim.inventory import InventoryError, detect_inventory_format, parse_inventory
from clustersim.perf import REFERENCE_INTRA_GBS, REFERENCE_NETWORK_GBS
from clustersim.spec import (
    SpecFileError,
    cluster_from_spec,
    is_tiresias_cluster_spec,
    load_cluster,
    tiresias_cluster_spec,
)

HEADER = "num_switch,num_node_p_switch,num_gpu_p_node,num_cpu_p_node,mem_p_node"


@pytest.mark.parametrize(
    ("file", "switches", "nodes", "gpus", "cpus", "mem"),
    [
        ("cluster_spec.csv", 1, 16, 4, 128, 254.0),
        ("n32g4.csv", 1, 32, 4, 40, 256.0),
        ("n160g8.csv", 5, 32, 8, 128, 256.0),
        ("n256g8.csv", 8, 32, 8, 64, 256.0),
        ("n1g4.csv", 1, 1, 4, 40, 256.0),
    ],
)
def test_the_published_specs_build_one_rack_per_switch_of_p100_nodes(
    shared_data: Path, file: str, switches: int, nodes: int, gpus: int, cpus: int, mem: float
) -> None:
    path = shared_data / "traces" / "tiresias" / file
    spec = tiresias_cluster_spec(path)
    assert spec["name"] == path.stem
    assert [p["cpu_cores"] for p in spec["pools"]] == [cpus] * switches
    assert [p["host_mem_gb"] for p in spec["pools"]] == [mem] * switches
    c = load_cluster(str(path))
    assert c.type_names == ("P100",)
    assert c.total_devices == switches * nodes * gpus
    assert c.n_nodes == switches * nodes and set(c.node_devices.tolist()) == {gpus}
    assert len(c.rack_oversub) == switches and set(c.rack_oversub.tolist()) == {1.0}
    assert np.bincount(c.node_rack).tolist() == [nodes] * switches
    assert set(c.node_intra_gbs.tolist()) == {REFERENCE_INTRA_GBS}
    # 4-GPU nodes: an 8-GPU gang crosses the NIC where the reference keeps it on one node
    nic = REFERENCE_NETWORK_GBS if gpus >= 8 else REFERENCE_INTRA_GBS
    assert set(c.node_nic_gbps.tolist()) == {nic * 8.0}


def test_text_bytes_and_paths_give_the_same_spec(tmp_path: Path) -> None:
    text = f"{HEADER}\n2,3,4,16,64\n"
    f = tmp_path / "mine.csv"
    f.write_text(text)
    from_text = tiresias_cluster_spec(text, name="mine")
    assert from_text == tiresias_cluster_spec(text.encode(), name="mine")
    assert from_text == tiresias_cluster_spec(f) == tiresias_cluster_spec(str(f))
    assert tiresias_cluster_spec(text)["name"] == "tiresias"
    assert cluster_from_spec(from_text).total_devices == 24


def test_columns_may_come_in_any_order_with_a_bom_and_crlf() -> None:
    text = "\ufeffmem_p_node, num_gpu_p_node,num_cpu_p_node,num_node_p_switch,num_switch\r\n"
    text += "128,8,32,2,1\r\n\r\n"
    spec = tiresias_cluster_spec(text.encode())
    assert cluster_from_spec(spec).total_devices == 16
    assert spec["pools"][0]["host_mem_gb"] == 128.0


@pytest.mark.parametrize(
    ("text", "where", "message"),
    [
        (
            "num_switch,num_node_p_switch,num_gpu_p_node,num_cpu_p_node\n1,2,4,8\n",
            "spec.csv:1 [mem_p_node]",
            "missing column",
        ),
        (f"{HEADER}\n1,2,four,8,16\n", "spec.csv:2 [num_gpu_p_node]", "positive integer"),
        (f"{HEADER}\n1,2,4.5,8,16\n", "spec.csv:2 [num_gpu_p_node]", "positive integer"),
        (f"{HEADER}\n1,2,4,-8,16\n", "spec.csv:2 [num_cpu_p_node]", "positive integer"),
        (f"{HEADER}\n1,0,4,8,16\n", "spec.csv:2 [num_node_p_switch]", "must be >= 1, not 0"),
        (f"{HEADER}\n1,2,4,8,\n", "spec.csv:2 [mem_p_node]", "positive integer, not ''"),
        (f"{HEADER}\n1,2,4,8,16\n\n1,2,4,8,16\n", "spec.csv:4", "more than one data row"),
        (f"{HEADER}\n1,2,4,8\n", "spec.csv:2", "4 fields, the header has 5"),
        (f"{HEADER}\n", "spec.csv", "no data row"),
        ("\n \n", "spec.csv", "empty file"),
        (f"{HEADER}\n1,2,4096,8,16\n", "spec.csv:2 [num_gpu_p_node]", "must be <="),
        (f"{HEADER}\n1000,1001,4,8,16\n", "spec.csv:2 [num_node_p_switch]", "exceed"),
    ],
)
def test_bad_input_names_the_file_line_and_field(text: str, where: str, message: str) -> None:
    with pytest.raises(SpecFileError) as err:
        tiresias_cluster_spec(text.encode(), path="spec.csv")
    assert str(err.value).startswith(f"{where}: ")
    assert message in str(err.value)
    assert isinstance(err.value, SpecError)
    with pytest.raises(InventoryError) as inv:  # the web import says the same
        parse_inventory(text.encode(), "tiresias", path="spec.csv")
    assert str(inv.value) == str(err.value)


def test_an_unreadable_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(SpecFileError, match=r"nope\.csv: cannot read file"):
        tiresias_cluster_spec(tmp_path / "nope.csv")
    bad = tmp_path / "bin.csv"
    bad.write_bytes(b"num_switch\n\xff\xfe")
    with pytest.raises(SpecFileError, match=r"bin\.csv:2: not UTF-8"):
        tiresias_cluster_spec(bad)


def test_load_cluster_tells_a_tiresias_csv_from_json(tmp_path: Path) -> None:
    f = tmp_path / "spec.txt"
    f.write_text(f"{HEADER}\n1,2,4,8,16\n")
    assert load_cluster(str(f)).total_devices == 8
    g = tmp_path / "other.csv"
    g.write_text("a,b\n1,2\n")
    with pytest.raises(SpecError, match=r"other.csv:1 \[num_switch\]: missing column"):
        load_cluster(str(g))
    assert is_tiresias_cluster_spec(f"\n{HEADER}\n") and not is_tiresias_cluster_spec("a,b")


def test_the_inventory_import_detects_and_reports_it(shared_data: Path) -> None:
    data = (shared_data / "traces" / "tiresias" / "n160g8.csv").read_bytes()
    assert detect_inventory_format(data) == "tiresias"
    spec, report = parse_inventory(data, path="n160g8.csv", name="n160g8", nodes_per_rack=4)
    assert spec == tiresias_cluster_spec(data, name="n160g8")
    assert (report.format, report.nodes_kept, report.devices_kept, report.pools) == (
        "tiresias",
        160,
        1280,
        5,
    )
    assert any("replay to their durations" in a for a in report.assumptions)
    assert report.warnings == ["nodes_per_rack ignored: the racks are the file's switches"]


def test_the_cli_runs_on_a_tiresias_cluster_spec(
    shared_data: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = shared_data / "traces" / "tiresias"
    code = main(
        [
            "run",
            "--cluster",
            str(folder / "n32g4.csv"),
            "--trace",
            str(folder / "60_job.csv"),
            "--json",
        ]
    )
    assert code == 0, capsys.readouterr().err
    assert '"n32g4"' in capsys.readouterr().out
