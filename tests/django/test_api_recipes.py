"""The API of synthetic and derived workloads and of clusters imported from node lists."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from planner.models import Cluster, Workload

pytestmark = pytest.mark.django_db

INVENTORY = Path(__file__).resolve().parents[1] / "fixtures" / "inventory"


def test_a_synthetic_workload_is_accepted_and_built_by_the_worker(
    api: Any, django_capture_on_commit_callbacks: Any
) -> None:
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        r = api.post(
            "/api/v1/workloads/synthetic/",
            {"name": "poisson", "recipe": {"jobs": 50, "rate_per_hour": 10, "seed": 3}},
            format="json",
        )
    assert len(callbacks) == 1  # the build is queued once the row is committed
    assert r.status_code == 202, r.content
    body = r.json()
    assert body["origin"] == "synthetic" and body["recipe"]["jobs"] == 50
    w = api.get(f"/api/v1/workloads/{body['id']}/").json()
    assert w["status"] == "ready" and w["summary"]["jobs"] == 50
    assert w["report"]["format"] == "synthetic"
    listed = api.get("/api/v1/workloads/").json()["results"][0]
    assert listed["origin"] == "synthetic" and "recipe" not in listed


def test_a_bad_recipe_answers_400_naming_the_field_and_stores_nothing(api: Any) -> None:
    r = api.post(
        "/api/v1/workloads/synthetic/", {"recipe": {"jobs": 5, "arrival": "x"}}, format="json"
    )
    assert r.status_code == 400
    assert "recipe.arrival" in r.json()["recipe"][0]
    assert not Workload.objects.exists()


def test_a_derived_workload_links_its_parent(
    api: Any, owner: Any, make_workload: Any, django_capture_on_commit_callbacks: Any
) -> None:
    parent = make_workload(owner)
    with django_capture_on_commit_callbacks(execute=True):
        r = api.post(
            f"/api/v1/workloads/{parent.pk}/derive/",
            {"name": "busier", "steps": [{"op": "scale", "factor": 3}]},
            format="json",
        )
    assert r.status_code == 202, r.content
    w = api.get(f"/api/v1/workloads/{r.json()['id']}/").json()
    assert (w["origin"], w["parent"], w["status"]) == ("derived", parent.pk, "ready")
    assert w["recipe"]["steps"] == [{"op": "scale", "factor": 3.0}]
    bad = api.post(
        f"/api/v1/workloads/{parent.pk}/derive/", {"steps": [{"op": "scale"}]}, format="json"
    )
    assert bad.status_code == 400 and "steps[0].factor" in bad.json()["steps"][0]
    assert Workload.objects.count() == 2


def test_a_node_list_imports_as_a_cluster_with_its_report(api: Any) -> None:
    with (INVENTORY / "kubectl_nodes.json").open("rb") as fh:
        r = api.post(
            "/api/v1/clusters/import/",
            {"file": fh, "aliases": json.dumps({"NVIDIA-L40S": "L40"})},
            format="multipart",
        )
    assert r.status_code == 201, r.content
    c = r.json()
    assert c["name"] == "kubectl_nodes" and c["total_devices"] == 32
    assert c["import_report"]["format"] == "kubectl" and c["import_report"]["unmapped"] == {}
    assert api.get(f"/api/v1/clusters/{c['id']}/").json()["spec"]["pools"]


def test_a_bad_node_list_answers_400_with_its_line_and_stores_nothing(
    api: Any, anon_api: Any
) -> None:
    with (INVENTORY / "slurm_bad_gres.txt").open("rb") as fh:
        r = api.post("/api/v1/clusters/import/", {"file": fh}, format="multipart")
    assert r.status_code == 400
    assert r.json()["file"][0].startswith("slurm_bad_gres.txt:42 [Gres]")
    with (INVENTORY / "slurm_nodes.txt").open("rb") as fh:
        r = api.post("/api/v1/clusters/import/", {"file": fh, "aliases": "[1]"}, format="multipart")
    assert r.status_code == 400 and "aliases" in r.json()
    with (INVENTORY / "slurm_nodes.txt").open("rb") as fh:
        r = anon_api.post("/api/v1/clusters/import/", {"file": fh}, format="multipart")
    assert r.status_code == 401
    assert not Cluster.objects.exists()


def test_a_tiresias_cluster_spec_imports_as_a_cluster(api: Any) -> None:
    from django.core.files.uploadedfile import SimpleUploadedFile

    header = b"num_switch,num_node_p_switch,num_gpu_p_node,num_cpu_p_node,mem_p_node\n"
    spec = SimpleUploadedFile("cluster_spec.csv", header + b"1,16,4,128,254\n")
    r = api.post("/api/v1/clusters/import/", {"file": spec}, format="multipart")
    assert r.status_code == 201, r.content
    c = r.json()
    assert (c["name"], c["total_devices"], c["device_types"]) == ("cluster_spec", 64, ["P100"])
    assert c["import_report"]["format"] == "tiresias"
    two_rows = SimpleUploadedFile("n2.csv", header + b"1,16,4,128,254\n1,16,4,128,254\n")
    r = api.post("/api/v1/clusters/import/", {"file": two_rows}, format="multipart")
    assert r.status_code == 400
    assert r.json()["file"][0].startswith("n2.csv:3: more than one data row")
    assert Cluster.objects.count() == 1
