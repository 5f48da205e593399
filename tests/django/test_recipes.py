"""Synthetic and derived workloads: recipes checked in the request, built by the worker."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from django.core.exceptions import ValidationError

from planner import parsing, services
from planner.jobtable import from_parquet
from planner.models import Artefact, Workload, WorkloadStatus

pytestmark = pytest.mark.django_db


def jobs_of(w: Workload) -> Any:
    w.refresh_from_db()
    assert w.status == WorkloadStatus.READY, w.error
    return from_parquet(Artefact.objects.get(pk=w.jobs_id).read())


def test_a_synthetic_workload_is_built_by_the_parse_task_and_is_seeded(owner: Any) -> None:
    recipe = {"jobs": 300, "arrival": "poisson", "rate_per_hour": 30, "seed": 7}
    a = services.create_synthetic_workload(owner, "syn", recipe, enqueue=False)
    b = services.create_synthetic_workload(owner, "syn again", recipe, enqueue=False)
    assert parsing.parse_workload(a.pk) == "ready"
    assert parsing.parse_workload(b.pk) == "ready"
    ja, jb = jobs_of(a), jobs_of(b)
    assert len(ja) == 300
    assert np.array_equal(ja.submit_time, jb.submit_time) and np.array_equal(ja.work, jb.work)
    a.refresh_from_db()
    assert a.origin == "synthetic" and a.report["format"] == "synthetic"
    assert any("Poisson" in x for x in a.report["assumptions"])
    assert a.summary["jobs"] == 300
    # about 30 arrivals an hour: 300 jobs span about 10 h
    assert 6 * 3600 < float(ja.submit_time[-1] - ja.submit_time[0]) < 14 * 3600
    c = services.create_synthetic_workload(owner, "other seed", {**recipe, "seed": 8}, False)
    parsing.parse_workload(c.pk)
    assert not np.array_equal(jobs_of(c).submit_time, ja.submit_time)


def test_a_synthetic_workload_can_be_fitted_to_a_trace(owner: Any, make_workload: Any) -> None:
    source = make_workload(owner)
    recipe = {"model": "fit", "fit_workload": source.pk, "jobs": 200, "seed": 1}
    w = services.create_synthetic_workload(owner, "fitted", recipe, enqueue=False)
    parsing.parse_workload(w.pk)
    jobs = jobs_of(w)
    assert len(jobs) == 200
    # the gang sizes drawn are sizes the source has
    assert set(np.unique(jobs.num_gpus)) <= set(np.unique(jobs_of(source).num_gpus))


@pytest.mark.parametrize(
    ("recipe", "field"),
    [
        ({}, "recipe.jobs"),
        ({"jobs": 0}, "recipe.jobs"),
        ({"jobs": 10, "rate_per_hour": -1}, "recipe.rate_per_hour"),
        ({"jobs": 10, "arrival": "bursty"}, "recipe.arrival"),
        ({"jobs": 10, "amplitude": 2}, "recipe.amplitude"),
        ({"jobs": 10, "peak_hour": 24}, "recipe.peak_hour"),
        ({"jobs": 10, "model": "fit"}, "recipe.fit_workload"),
        ({"jobs": 10, "model": "fit", "fit_workload": 999}, "recipe.fit_workload"),
        ({"jobs": 10, "colour": "red"}, "recipe.colour"),
        ({"jobs": True}, "recipe.jobs"),
        ([1, 2], "recipe"),
    ],
)
def test_a_bad_synthetic_recipe_is_refused_naming_the_field_and_stores_nothing(
    owner: Any, recipe: Any, field: str
) -> None:
    with pytest.raises(ValidationError) as err:
        services.create_synthetic_workload(owner, "bad", recipe, enqueue=False)
    assert field in str(err.value)
    assert not Workload.objects.exists()


def test_fitting_to_another_users_workload_is_refused(
    owner: Any, other: Any, make_workload: Any
) -> None:
    theirs = make_workload(other)
    with pytest.raises(ValidationError, match="fit_workload"):
        services.create_synthetic_workload(
            owner, "x", {"model": "fit", "fit_workload": theirs.pk, "jobs": 5}, enqueue=False
        )


def test_a_derived_workload_applies_its_steps_in_order(
    owner: Any, make_workload: Any, make_cluster: Any
) -> None:
    parent = make_workload(owner)
    src = jobs_of(parent)
    cluster = make_cluster(owner)
    steps = [
        {"op": "sample", "n": 60, "seed": 3},
        {"op": "scale", "factor": 2},
        {"op": "cap", "cluster": cluster.pk},
        {"op": "rebase", "start": "2023-07-01T00:00:00Z", "keep": "none"},
    ]
    w = services.derive_workload(owner, parent, "half", steps, enqueue=False)
    assert parsing.parse_workload(w.pk) == "ready"
    jobs = jobs_of(w)
    assert len(jobs) == 60
    # sampled jobs keep their ids; scaling by 2 halves every submit time
    kept = np.flatnonzero(np.isin(src.job_id, jobs.job_id))
    assert np.allclose(np.sort(jobs.submit_time), np.sort(src.submit_time[kept] / 2))
    assert int(jobs.num_gpus.max()) <= cluster.total_devices
    w.refresh_from_db()
    assert w.parent_id == parent.pk and w.origin == "derived"
    assert w.report["jobs_read"] == len(src) and w.report["jobs_kept"] == 60
    assert w.report["carbon_start"].startswith("2023-07-01")
    assert any(x.startswith("steps[1] scale") for x in w.report["assumptions"])


def test_runs_on_a_rebased_workload_take_the_carbon_of_its_hours(
    owner: Any, make_workload: Any, make_experiment: Any, make_cluster: Any
) -> None:
    from planner import runner
    from planner.models import Run
    from tests.django.conftest import SMALL_SPEC

    zoned = make_cluster(
        owner, "zoned", {**SMALL_SPEC, "regions": [{"name": "ca", "carbon_zone": "US-CAL-CISO"}]}
    )

    parent = make_workload(owner)
    winter = services.derive_workload(
        owner, parent, "jan", [{"op": "rebase", "start": "2023-01-01T00:00:00Z"}], enqueue=False
    )
    summer = services.derive_workload(
        owner, parent, "jul", [{"op": "rebase", "start": "2023-07-01T12:00:00Z"}], enqueue=False
    )
    for w in (winter, summer):
        parsing.parse_workload(w.pk)
    exp = make_experiment(owner)
    Run.objects.filter(experiment=exp).update(cluster=zoned)
    pk = exp.runs.get().pk
    carbon = {}
    for w in (winter, summer):
        attempt = runner.claim(pk, "t")
        run = Run.objects.select_related("cluster", "experiment").get(pk=pk)
        run.workload = Workload.objects.get(pk=w.pk)
        outcome = runner.simulate_run(run, runner.Heartbeat(pk, attempt, threaded=False))
        carbon[w.name] = outcome.summary["carbon_kg"]
        Run.objects.filter(pk=pk).update(state="queued")
    # same jobs, same cluster, other hours of the grid: other carbon (the cluster has a zone)
    assert carbon["jan"] != carbon["jul"]


@pytest.mark.parametrize(
    ("steps", "field"),
    [
        ([], "steps"),
        ([{"op": "shuffle"}], "steps[0].op"),
        ([{"op": "window"}], "steps[0].start_s"),
        ([{"op": "window", "start_s": 10, "end_s": 5}], "steps[0].end_s"),
        ([{"op": "scale", "factor": 1}, {"op": "scale", "factor": 0}], "steps[1].factor"),
        ([{"op": "sample", "fraction": 0.5, "n": 3}], "steps[0].fraction"),
        ([{"op": "sample", "fraction": 1.5}], "steps[0].fraction"),
        ([{"op": "cap", "cluster": 999}], "steps[0].cluster"),
        ([{"op": "rebase", "start": "yesterday"}], "steps[0].start"),
        ([{"op": "scale", "factor": 2, "by": 3}], "steps[0].by"),
    ],
)
def test_bad_steps_are_refused_naming_the_step_and_field(
    owner: Any, make_workload: Any, steps: Any, field: str
) -> None:
    parent = make_workload(owner)
    with pytest.raises(ValidationError) as err:
        services.derive_workload(owner, parent, "bad", steps, enqueue=False)
    assert field in str(err.value)
    assert Workload.objects.count() == 1


def test_a_step_that_leaves_no_job_fails_the_workload_with_the_step(
    owner: Any, make_workload: Any
) -> None:
    parent = make_workload(owner)
    w = services.derive_workload(
        owner, parent, "empty", [{"op": "window", "start_s": 1e12}], enqueue=False
    )
    assert parsing.parse_workload(w.pk) == "failed"
    w.refresh_from_db()
    assert w.status == WorkloadStatus.FAILED and "steps[0] (window)" in w.error
    assert w.jobs_id is None


# -- clusters imported from node lists -------------------------------------------------------------

INVENTORY = Path(__file__).resolve().parents[1] / "fixtures" / "inventory"


@pytest.mark.parametrize(
    "name", ["kubectl_nodes.json", "slurm_nodes.txt", "openb_nodes.csv", "pai_machine_spec.csv"]
)
def test_a_node_list_becomes_a_cluster_with_its_import_report(owner: Any, name: str) -> None:
    path = INVENTORY / name
    c = services.import_cluster(owner, path.read_bytes(), name)
    assert c.total_devices > 0 and c.device_types
    assert c.import_report["devices_kept"] == c.total_devices
    assert c.name == path.stem and name in c.description
    # the stored spec is the simulator's and builds the same cluster again
    assert services.cluster_summary(c.spec, owner) == (c.total_devices, c.device_types)


def test_a_bad_node_list_names_file_and_line_and_stores_nothing(owner: Any) -> None:
    from planner.models import Cluster

    where = {
        "slurm_bad_gres.txt": "slurm_bad_gres.txt:42 [Gres]",  # file:line [field]
        "kubectl_bad_gpu.json": 'kubectl_bad_gpu.json: items[1].status.capacity["nvidia.com/gpu"]',
        "openb_short_row.csv": "openb_short_row.csv:",
    }
    for name, start in where.items():
        with pytest.raises(ValidationError) as err:
            services.import_cluster(owner, (INVENTORY / name).read_bytes(), name)
        assert err.value.messages[0].startswith(start), err.value.messages
    assert not Cluster.objects.exists()


def test_an_alias_maps_a_model_the_catalog_does_not_know(owner: Any) -> None:
    raw = (INVENTORY / "kubectl_nodes.json").read_bytes()
    plain = services.import_cluster(owner, raw, "nodes.json")
    assert plain.import_report["unmapped"]["NVIDIA-L40S"]["devices"] == 4  # reported
    mapped = services.import_cluster(owner, raw, "nodes.json", aliases={"NVIDIA-L40S": "L40"})
    assert mapped.import_report["unmapped"] == {}
    assert mapped.total_devices == plain.total_devices + 4


def test_deriving_from_another_users_workload_is_refused(
    owner: Any, other: Any, make_workload: Any
) -> None:
    theirs = make_workload(other)
    with pytest.raises(ValidationError, match="not yours"):
        services.derive_workload(owner, theirs, "x", [{"op": "scale", "factor": 2}], False)
    assert Workload.objects.count() == 1
