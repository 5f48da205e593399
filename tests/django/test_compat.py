"""Compatibility modes from the API and the experiment form (clustersim.compat)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from clustersim.compat import MODES, policies_of
from planner.models import COMPAT_CHOICES
from tests import tiresias_reference as ref

pytestmark = pytest.mark.django_db

#: 16 nodes of 4 GPUs in one rack: the Tiresias simulator's cluster_spec.csv
TIRESIAS_SPEC = {
    "name": "tiresias-64",
    "pools": [{"name": "p100", "accelerator": "P100", "nodes": 16, "devices_per_node": 4}],
}


def _grid(cluster: int, workload: int, **kw: Any) -> dict[str, Any]:
    return {
        "name": "compat",
        "clusters": [cluster],
        "workloads": [workload],
        "policies": [{"name": "fifo"}, {"name": "tiresias"}],
        **kw,
    }


def test_the_web_process_knows_every_mode() -> None:
    assert [name for name, _ in COMPAT_CHOICES] == sorted(MODES)
    assert policies_of("tiresias") == ["fifo", "tiresias"]
    assert policies_of("pollux") == ["optimus", "pollux", "tiresias"]
    assert {"allox", "gavel-fifo", "gavel-las", "gavel-mmf", "gavel-hierarchical"} <= set(
        policies_of("gavel")
    )


def test_an_experiment_in_tiresias_mode_reproduces_its_simulator(
    api: Any,
    owner: Any,
    make_cluster: Any,
    make_workload: Any,
    shared_data: Path,
    django_capture_on_commit_callbacks: Any,
) -> None:
    trace = shared_data / "traces" / "tiresias" / "60_job.csv"
    c = make_cluster(owner, name="tiresias-64", spec=TIRESIAS_SPEC)
    w = make_workload(owner, path=trace, name="60 jobs")
    with django_capture_on_commit_callbacks(execute=True):
        r = api.post("/api/v1/experiments/", _grid(c.pk, w.pk, compat="tiresias"), format="json")
    assert r.status_code == 202, r.json()
    exp = api.get(f"/api/v1/experiments/{r.json()['id']}/").json()
    assert exp["compat"] == "tiresias" and exp["placement"] == ""
    assert exp["run_counts"]["succeeded"] == 2
    runs = api.get(f"/api/v1/runs/?experiment={exp['id']}").json()["results"]
    assert {x["policy"]: x["placement"] for x in runs} == {"fifo": "yarn", "tiresias": "first-fit"}
    rows = [
        (
            line.split(",")[0],
            int(line.split(",")[1]),
            int(line.split(",")[2]),
            int(line.split(",")[5]),
        )
        for line in trace.read_text().splitlines()[1:]
    ]
    want = ref.average_jct(ref.dlas_gpu(ref.load(rows), ref.Spec(1, 16, 4), py3_division=True))
    for x in runs:
        summary = api.get(f"/api/v1/runs/{x['id']}/").json()["summary"]
        assert summary["jct_mean_s"] == pytest.approx(want, rel=1e-12)
        assert summary["preemptions"] == 0


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"compat": "tiresias", "policies": [{"name": "srtf"}]}, "does not cover policy 'srtf'"),
        ({"compat": "gavel"}, "compat gavel does not cover policy 'fifo'"),
        ({"compat": "tiresias", "placement": "spread"}, "has no placement 'spread'"),
        ({"compat": "slurm"}, "is not a valid choice"),
    ],
)
def test_a_mode_refuses_what_its_simulator_does_not_have(
    api: Any, owner: Any, make_cluster: Any, make_workload: Any, change: Any, message: str
) -> None:
    c, w = make_cluster(owner), make_workload(owner)
    r = api.post("/api/v1/experiments/", _grid(c.pk, w.pk, **change), format="json")
    assert r.status_code == 400
    assert message in str(r.json())
    assert api.get("/api/v1/experiments/").json()["count"] == 0


def test_the_experiment_form_offers_the_modes(
    web: Any,
    owner: Any,
    make_cluster: Any,
    make_workload: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    page = web.get("/experiments/new/").content.decode()
    assert "Compatibility mode" in page and "only what Tiresias&#x27;s simulator models" in page
    c, w = make_cluster(owner), make_workload(owner)
    data = {
        "name": "web-compat",
        "clusters": [c.pk],
        "workloads": [w.pk],
        "policies": ["gavel-fifo", "gavel-las"],
        "load_factors": "1",
        "seeds": "0",
        "placement": "",
        "compat": "gavel",
    }
    with django_capture_on_commit_callbacks(execute=True):
        r = web.post("/experiments/new/", data)
    assert r.status_code == 302, r.content.decode()[-2000:]
    page = web.get(r["Location"]).content.decode()
    assert "compat <code>gavel</code>" in page and "succeeded" in page
    bad = web.post("/experiments/new/", {**data, "policies": ["fifo"], "name": "bad"})
    assert bad.status_code == 200
    assert "compat gavel does not cover policy &#x27;fifo&#x27;" in bad.content.decode()
