"""Every endpoint with three users: the owner, another signed-in user, and an anonymous one.

The owner gets the expected status; the other user gets 404 for the owner's objects (or an
empty list, or 400 when naming them in a new object) and never changes them; the anonymous
user gets 401.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from tests.django.conftest import GAVEL_TRACE

pytestmark = pytest.mark.django_db


@dataclass
class World:
    accelerator: int
    cluster: int
    unused_cluster: int
    workload: int
    experiment: int
    run: int


@pytest.fixture
def world(owner: Any, make_cluster: Any, make_experiment: Any, make_accelerator: Any) -> World:
    acc = make_accelerator(owner)
    exp = make_experiment(owner, run=True)
    run = exp.runs.get()
    return World(
        accelerator=acc.pk,
        cluster=run.cluster_id,
        unused_cluster=make_cluster(owner, name="spare").pk,
        workload=run.workload_id,
        experiment=exp.pk,
        run=run.pk,
    )


ACC = {
    "name": "NewChip",
    "fp16_tflops": 50,
    "memory_gb": 16,
    "memory_bw_tbs": 0.5,
    "busy_w": 200,
    "price_per_hour": 1.0,
    "release_year": 2023,
}
SPEC = {"pools": [{"accelerator": "T4", "nodes": 1, "devices_per_node": 4}]}

# (name, method, url (formatted with the world), body, owner's status, other's status)
ENDPOINTS: list[tuple[str, str, str, Any, int, int]] = [
    ("list accelerators", "get", "/api/v1/accelerators/", None, 200, 200),
    ("list clusters", "get", "/api/v1/clusters/", None, 200, 200),
    ("list workloads", "get", "/api/v1/workloads/", None, 200, 200),
    ("list experiments", "get", "/api/v1/experiments/", None, 200, 200),
    ("list runs", "get", "/api/v1/runs/", None, 200, 200),
    ("policies", "get", "/api/v1/policies/", None, 200, 200),
    ("placements", "get", "/api/v1/placements/", None, 200, 200),
    ("formats", "get", "/api/v1/formats/", None, 200, 200),
    ("catalog", "get", "/api/v1/catalog/accelerators/", None, 200, 200),
    ("presets", "get", "/api/v1/presets/", None, 200, 200),
    ("get accelerator", "get", "/api/v1/accelerators/{accelerator}/", None, 200, 404),
    ("get cluster", "get", "/api/v1/clusters/{cluster}/", None, 200, 404),
    ("get workload", "get", "/api/v1/workloads/{workload}/", None, 200, 404),
    ("get experiment", "get", "/api/v1/experiments/{experiment}/", None, 200, 404),
    ("get run", "get", "/api/v1/runs/{run}/", None, 200, 404),
    ("run summary", "get", "/api/v1/runs/{run}/summary/", None, 200, 404),
    ("run timeseries", "get", "/api/v1/runs/{run}/timeseries/", None, 200, 404),
    ("run jobs csv", "get", "/api/v1/runs/{run}/jobs/?as=csv", None, 200, 404),
    ("run jobs parquet", "get", "/api/v1/runs/{run}/jobs/?as=parquet", None, 200, 404),
    ("compare", "get", "/api/v1/compare/?runs={run}", None, 200, 404),
    ("create accelerator", "post", "/api/v1/accelerators/", ACC, 201, 201),
    (
        "update accelerator",
        "patch",
        "/api/v1/accelerators/{accelerator}/",
        {"price_per_hour": 3},
        200,
        404,
    ),
    ("delete accelerator", "delete", "/api/v1/accelerators/{accelerator}/", None, 204, 404),
    ("create cluster", "post", "/api/v1/clusters/", {"name": "c", "spec": SPEC}, 201, 201),
    (
        "cluster from preset",
        "post",
        "/api/v1/clusters/from-preset/",
        {"preset": "philly"},
        201,
        201,
    ),
    ("update cluster", "patch", "/api/v1/clusters/{cluster}/", {"name": "renamed"}, 200, 404),
    ("clone cluster", "post", "/api/v1/clusters/{cluster}/clone/", {}, 201, 404),
    (
        "clone cluster with a spec",
        "post",
        "/api/v1/clusters/{cluster}/clone/",
        {"spec": SPEC},
        201,
        404,
    ),
    (
        "what-if variant",
        "post",
        "/api/v1/clusters/{cluster}/what-if/",
        {"op": "scale", "factor": 2},
        201,
        404,
    ),
    ("change a used spec", "patch", "/api/v1/clusters/{cluster}/", {"spec": SPEC}, 409, 404),
    ("delete used cluster", "delete", "/api/v1/clusters/{cluster}/", None, 409, 404),
    (
        "delete used cluster with its experiments",
        "delete",
        "/api/v1/clusters/{cluster}/?cascade=true",
        None,
        204,
        404,
    ),
    ("delete cluster", "delete", "/api/v1/clusters/{unused_cluster}/", None, 204, 404),
    ("update workload", "patch", "/api/v1/workloads/{workload}/", {"name": "renamed"}, 200, 404),
    (
        "synthetic workload",
        "post",
        "/api/v1/workloads/synthetic/",
        {"recipe": {"jobs": 20}},
        202,
        202,
    ),
    (
        "synthetic workload fitted to a workload",
        "post",
        "/api/v1/workloads/synthetic/",
        {"recipe": {"model": "fit", "fit_workload": "{workload}", "jobs": 20}},
        202,
        400,
    ),
    (
        "derive workload",
        "post",
        "/api/v1/workloads/{workload}/derive/",
        {"steps": [{"op": "scale", "factor": 2}]},
        202,
        404,
    ),
    (
        "derive workload capped to a cluster",
        "post",
        "/api/v1/workloads/{workload}/derive/",
        {"steps": [{"op": "cap", "cluster": "{cluster}"}]},
        202,
        404,
    ),
    ("delete used workload", "delete", "/api/v1/workloads/{workload}/", None, 409, 404),
    ("cancel experiment", "post", "/api/v1/experiments/{experiment}/cancel/", None, 200, 404),
    ("rerun experiment", "post", "/api/v1/experiments/{experiment}/rerun/", None, 202, 404),
    ("delete experiment", "delete", "/api/v1/experiments/{experiment}/", None, 204, 404),
    ("cancel run", "post", "/api/v1/runs/{run}/cancel/", None, 200, 404),
    ("delete the only run", "delete", "/api/v1/runs/{run}/", None, 409, 404),
    (
        "create experiment",
        "post",
        "/api/v1/experiments/",
        {
            "name": "x",
            "clusters": ["{cluster}"],
            "workloads": ["{workload}"],
            "policies": [{"name": "fifo"}],
        },
        202,
        400,
    ),
]


def _fill(value: Any, world: World) -> Any:
    if isinstance(value, str):
        out = value.format(**vars(world))
        return int(out) if value.startswith("{") and out.isdigit() else out
    if isinstance(value, list):
        return [_fill(v, world) for v in value]
    if isinstance(value, dict):
        return {k: _fill(v, world) for k, v in value.items()}
    return value


def _call(client: Any, method: str, url: str, body: Any) -> Any:
    if body is None:
        return getattr(client, method)(url)
    return getattr(client, method)(url, body, format="json")


def _snapshot() -> dict[str, Any]:
    from planner.models import AcceleratorType, Cluster, Experiment, Run, Workload

    return {
        "acc": list(AcceleratorType.objects.values_list("pk", "name", "price_per_hour")),
        "clusters": list(Cluster.objects.values_list("pk", "name")),
        "workloads": list(Workload.objects.values_list("pk", "name")),
        "experiments": list(Experiment.objects.values_list("pk", "state")),
        "runs": list(Run.objects.values_list("pk", "state")),
    }


IDS = [e[0] for e in ENDPOINTS]


@pytest.mark.parametrize(("name", "method", "url", "body", "status", "_"), ENDPOINTS, ids=IDS)
def test_the_owner_may(
    api: Any, world: World, name: str, method: str, url: str, body: Any, status: int, _: int
) -> None:
    r = _call(api, method, _fill(url, world), _fill(body, world))
    assert r.status_code == status, r.content[:500]


@pytest.mark.parametrize(("name", "method", "url", "body", "_", "status"), ENDPOINTS, ids=IDS)
def test_another_user_sees_nothing_of_the_owners(
    other_api: Any, world: World, name: str, method: str, url: str, body: Any, _: int, status: int
) -> None:
    before = _snapshot()
    r = _call(other_api, method, _fill(url, world), _fill(body, world))
    assert r.status_code == status, r.content[:500]
    if method == "get" and status == 200 and "results" in r.json():
        assert r.json()["count"] == 0
    if status not in (201, 202):
        assert _snapshot() == before


@pytest.mark.parametrize(("name", "method", "url", "body", "_", "__"), ENDPOINTS, ids=IDS)
def test_anonymous_users_are_turned_away(
    anon_api: Any, world: World, name: str, method: str, url: str, body: Any, _: int, __: int
) -> None:
    before = _snapshot()
    r = _call(anon_api, method, _fill(url, world), _fill(body, world))
    assert r.status_code == 401
    assert _snapshot() == before


def test_the_upload_endpoint_needs_a_signed_in_user(anon_api: Any, api: Any) -> None:
    with GAVEL_TRACE.open("rb") as fh:
        assert (
            anon_api.post("/api/v1/workloads/", {"file": fh}, format="multipart").status_code == 401
        )
    with GAVEL_TRACE.open("rb") as fh:
        assert api.post("/api/v1/workloads/", {"file": fh}, format="multipart").status_code == 202
