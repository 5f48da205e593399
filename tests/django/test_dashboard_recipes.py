"""Dashboard forms for made workloads and imported clusters: generate, derive, import."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from planner.models import Cluster, Workload, WorkloadStatus

pytestmark = pytest.mark.django_db

INVENTORY = Path(__file__).resolve().parents[1] / "fixtures" / "inventory"

SYNTHETIC = {
    "name": "syn",
    "model": "gavel",
    "jobs": "120",
    "duration_hours": "",
    "arrival": "poisson",
    "rate_per_hour": "30",
    "amplitude": "0.5",
    "peak_hour": "14",
    "start_hour": "0",
    "duration_model": "lognormal",
    "job_types": "on",
    "seed": "7",
}


def node_list(name: str, as_name: str | None = None) -> SimpleUploadedFile:
    return SimpleUploadedFile(as_name or name, (INVENTORY / name).read_bytes())


@pytest.mark.parametrize("url", ["/workloads/synthetic/", "/clusters/import/"])
def test_the_new_pages_need_a_signed_in_user_and_render(client: Any, web: Any, url: str) -> None:
    r = client.get(url)
    assert r.status_code == 302 and r["Location"].startswith("/accounts/login/")
    assert web.get(url).status_code == 200


def test_the_new_pages_are_linked_from_home_upload_and_cluster_create(web: Any) -> None:
    for page in ("/", "/workloads/upload/"):
        assert b'href="/workloads/synthetic/"' in web.get(page).content
    for page in ("/", "/clusters/new/"):
        assert b'href="/clusters/import/"' in web.get(page).content


# -- synthetic workloads ---------------------------------------------------------------------


def test_a_synthetic_workload_is_generated_and_shows_its_recipe(
    web: Any, owner: Any, django_capture_on_commit_callbacks: Any
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        r = web.post("/workloads/synthetic/", SYNTHETIC)
    w = Workload.objects.get()
    assert r.status_code == 302 and r["Location"] == f"/workloads/{w.pk}/"
    assert w.owner == owner and w.origin == "synthetic" and w.name == "syn"
    assert w.recipe["jobs"] == 120 and w.recipe["rate_per_hour"] == 30
    assert w.recipe["arrival"] == "poisson" and w.recipe["seed"] == 7
    assert w.recipe["duration_s"] is None and w.recipe["job_types"] is True
    assert w.status == WorkloadStatus.READY, w.error
    page = web.get(r["Location"]).content.decode()
    assert "Synthetic workload" in page and "Build report" in page
    assert "120 jobs" in page and "poisson, 30 jobs/h" in page
    assert "uploaded" not in page


def test_hours_and_unchecked_job_types_reach_the_recipe(
    web: Any, django_capture_on_commit_callbacks: Any
) -> None:
    data = {**SYNTHETIC, "jobs": "", "duration_hours": "2", "arrival": "diurnal"}
    del data["job_types"]  # an unchecked box is not posted
    with django_capture_on_commit_callbacks(execute=True):
        r = web.post("/workloads/synthetic/", data)
    assert r.status_code == 302
    recipe = Workload.objects.get().recipe
    assert recipe["duration_s"] == 7200 and recipe["jobs"] is None
    assert recipe["arrival"] == "diurnal" and recipe["job_types"] is False
    page = web.get(r["Location"]).content.decode()
    assert "2 h" in page and "peak at 14 h" in page


def test_a_synthetic_workload_can_be_fitted_to_a_ready_workload(
    web: Any, owner: Any, make_workload: Any, django_capture_on_commit_callbacks: Any
) -> None:
    source = make_workload(owner, name="gavel source")
    data = {**SYNTHETIC, "model": "fit", "fit_workload": str(source.pk), "arrival": ""}
    with django_capture_on_commit_callbacks(execute=True):
        r = web.post("/workloads/synthetic/", data)
    assert r.status_code == 302, r.content.decode()[-1500:]
    w = Workload.objects.get(origin="synthetic")
    assert w.recipe["model"] == "fit" and w.recipe["fit_workload"] == source.pk
    page = web.get(r["Location"]).content.decode()
    assert f'href="/workloads/{source.pk}/">gavel source</a>' in page


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"rate_per_hour": "-1"}, "recipe.rate_per_hour"),
        ({"jobs": "0"}, "recipe.jobs"),
        ({"jobs": "", "duration_hours": ""}, "recipe.jobs"),
        ({"arrival": "diurnal", "amplitude": "2"}, "recipe.amplitude"),
        ({"peak_hour": "24"}, "recipe.peak_hour"),
        ({"model": "fit"}, "recipe.fit_workload"),
    ],
)
def test_a_bad_recipe_is_shown_naming_the_field_and_stores_nothing(
    web: Any, change: dict[str, str], field: str
) -> None:
    r = web.post("/workloads/synthetic/", {**SYNTHETIC, **change})
    assert r.status_code == 200 and field in r.content.decode()
    assert 'class="errorlist' in r.content.decode()
    assert not Workload.objects.exists()


def test_the_error_stands_next_to_its_field(web: Any) -> None:
    r = web.post("/workloads/synthetic/", {**SYNTHETIC, "rate_per_hour": "-1"})
    assert "recipe.rate_per_hour" in str(r.context["form"].errors["rate_per_hour"])


def test_another_users_workload_cannot_be_fitted_or_offered(
    web: Any, other: Any, make_workload: Any
) -> None:
    theirs = make_workload(other, name="mallory's trace")
    assert b"mallory&#x27;s trace" not in web.get("/workloads/synthetic/").content
    data = {**SYNTHETIC, "model": "fit", "fit_workload": str(theirs.pk)}
    r = web.post("/workloads/synthetic/", data)
    assert r.status_code == 200 and "fit_workload" in r.context["form"].errors
    assert Workload.objects.count() == 1


# -- derived workloads -----------------------------------------------------------------------

NO_STEPS = {
    "name": "",
    "window_from_h": "",
    "window_to_h": "",
    "sample_fraction": "",
    "sample_n": "",
    "sample_seed": "0",
    "load_factor": "",
    "cap_cluster": "",
    "cap_mode": "cap",
    "rebase_start": "",
    "rebase_keep": "time_of_day",
}


def test_a_ready_workload_page_offers_the_derive_form(
    web: Any, owner: Any, make_workload: Any
) -> None:
    ready = make_workload(owner)
    assert b'id="derive-form"' in web.get(f"/workloads/{ready.pk}/").content
    pending = make_workload(owner, parse=False)
    assert b'id="derive-form"' not in web.get(f"/workloads/{pending.pk}/").content


def test_a_workload_is_derived_with_every_step_in_order(
    web: Any,
    owner: Any,
    make_workload: Any,
    make_cluster: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    parent = make_workload(owner, name="gavel")
    cluster = make_cluster(owner, name="tiny")
    data = {
        **NO_STEPS,
        "name": "what-if",
        "window_from_h": "0",
        "window_to_h": "1000",
        "sample_fraction": "0.5",
        "sample_seed": "3",
        "load_factor": "1.5",
        "cap_cluster": str(cluster.pk),
        "cap_mode": "drop",
        "rebase_start": "2023-06-01T08:00",
        "rebase_keep": "none",
    }
    with django_capture_on_commit_callbacks(execute=True):
        r = web.post(f"/workloads/{parent.pk}/derive/", data)
    w = Workload.objects.get(origin="derived")
    assert r.status_code == 302 and r["Location"] == f"/workloads/{w.pk}/"
    assert w.name == "what-if" and w.parent == parent and w.recipe["parent"] == parent.pk
    assert [s["op"] for s in w.recipe["steps"]] == ["window", "sample", "scale", "cap", "rebase"]
    window, sample, scale, cap, rebase = w.recipe["steps"]
    assert window["start_s"] == 0 and window["end_s"] == 1000 * 3600
    assert sample["fraction"] == 0.5 and sample["seed"] == 3 and sample["n"] is None
    assert scale["factor"] == 1.5
    assert cap == {"op": "cap", "cluster": cluster.pk, "mode": "drop"}
    assert rebase["start"] == "2023-06-01T08:00:00Z" and rebase["keep"] == "none"
    assert w.status == WorkloadStatus.READY, w.error
    page = web.get(r["Location"]).content.decode()
    assert f'Derived from <a href="/workloads/{parent.pk}/">gavel</a>' in page
    assert "50% of the jobs at random (seed 3)" in page and "load × 1.5" in page
    assert f'href="/clusters/{cluster.pk}/">tiny</a>' in page
    assert "2023-06-01T08:00:00Z" in page


def test_one_step_is_enough(web: Any, owner: Any, make_workload: Any) -> None:
    parent = make_workload(owner)
    r = web.post(f"/workloads/{parent.pk}/derive/", {**NO_STEPS, "sample_n": "10"})
    assert r.status_code == 302
    w = Workload.objects.get(origin="derived")
    assert w.recipe["steps"] == [{"op": "sample", "fraction": None, "n": 10, "seed": 0}]
    assert w.name == f"{parent.name} (derived)"


@pytest.mark.parametrize(
    ("change", "error", "field"),
    [
        ({}, "choose at least one step", None),
        ({"window_from_h": "5", "window_to_h": "2"}, "steps[0].end_s", "window_to_h"),
        ({"sample_fraction": "1.5"}, "steps[0].fraction", "sample_fraction"),
        ({"sample_fraction": "0.5", "sample_n": "3"}, "steps[0].fraction", "sample_fraction"),
        ({"sample_n": "3", "load_factor": "0"}, "steps[1].factor", "load_factor"),
        ({"rebase_start": "yesterday"}, "Enter a valid date/time", "rebase_start"),
    ],
)
def test_bad_steps_are_shown_naming_the_field_and_store_nothing(
    web: Any, owner: Any, make_workload: Any, change: dict[str, str], error: str, field: Any
) -> None:
    parent = make_workload(owner)
    r = web.post(f"/workloads/{parent.pk}/derive/", {**NO_STEPS, **change})
    assert r.status_code == 200 and error in r.content.decode()
    errors = r.context["derive_form"].errors
    assert error in str(errors[field or "__all__"])
    assert b'<details class="pick" id="derive" open>' in r.content
    assert Workload.objects.count() == 1


def test_another_users_workload_cannot_be_derived_from_or_capped_to(
    web: Any, owner: Any, other: Any, make_workload: Any, make_cluster: Any
) -> None:
    theirs = make_workload(other)
    r = web.post(f"/workloads/{theirs.pk}/derive/", {**NO_STEPS, "load_factor": "2"})
    assert r.status_code == 404
    assert web.get(f"/workloads/{theirs.pk}/").status_code == 404
    mine = make_workload(owner)
    their_cluster = make_cluster(other, name="mallory's cluster")
    page = web.get(f"/workloads/{mine.pk}/").content
    assert b"mallory&#x27;s cluster" not in page
    r = web.post(
        f"/workloads/{mine.pk}/derive/", {**NO_STEPS, "cap_cluster": str(their_cluster.pk)}
    )
    assert r.status_code == 200 and "cap_cluster" in r.context["derive_form"].errors
    assert Workload.objects.filter(origin="derived").count() == 0


def test_deriving_needs_a_post(web: Any, owner: Any, make_workload: Any) -> None:
    parent = make_workload(owner)
    assert web.get(f"/workloads/{parent.pk}/derive/").status_code == 405


# -- clusters imported from node lists -------------------------------------------------------


def test_a_node_list_is_imported_and_its_report_shown(web: Any, owner: Any) -> None:
    r = web.post(
        "/clusters/import/",
        {"file": node_list("kubectl_nodes.json"), "format": "", "name": "k8s", "aliases": ""},
    )
    c = Cluster.objects.get()
    assert r.status_code == 302 and r["Location"] == f"/clusters/{c.pk}/"
    assert c.owner == owner and c.name == "k8s" and c.import_report["format"] == "kubectl"
    page = web.get(r["Location"]).content.decode()
    assert "Import report" in page and "Imported &#x27;k8s&#x27;" in page
    assert 'id="unmapped"' in page and "NVIDIA-L40S" in page and "close matches" in page
    assert "Re-import with an alias" in page
    assert "NVIDIA-A100-SXM4-80GB" in page  # resolved models
    assert "no accelerators" in page and "cordoned" in page  # skipped nodes, warnings
    assert "spec defaults" in page  # assumptions


def test_the_reimport_link_fills_in_the_aliases_to_complete(web: Any) -> None:
    r = web.post("/clusters/import/", {"file": node_list("slurm_nodes.txt"), "name": "hpc"})
    page = web.get(r["Location"])
    url = page.context["reimport_url"]
    assert url.startswith("/clusters/import/?") and "format=slurm" in url
    form = web.get(url).context["form"]
    assert form.initial["aliases"].splitlines() == ["tesla = ", "gpu = "]
    assert form.initial["name"] == "hpc" and form.initial["format"] == "slurm"


def test_aliases_map_unmapped_models_and_format_and_racks_are_passed(web: Any) -> None:
    data = {
        "file": node_list("kubectl_nodes.json"),
        "format": "kubectl",
        "aliases": "# ours\nNVIDIA-L40S = L40\n\n",
        "nodes_per_rack": "2",
    }
    r = web.post("/clusters/import/", data)
    assert r.status_code == 302
    c = Cluster.objects.get()
    assert c.import_report["unmapped"] == {} and c.total_devices == 32
    assert c.name == "kubectl_nodes"  # the file's name when none is given
    assert b'id="unmapped"' not in web.get(r["Location"]).content


@pytest.mark.parametrize(
    ("data", "field", "error"),
    [
        ({"file": "slurm_bad_gres.txt"}, None, "slurm_bad_gres.txt:42 [Gres]"),
        ({"file": "kubectl_nodes.json", "format": "slurm"}, None, "kubectl_nodes.json"),
        ({"aliases": "NVIDIA-L40S = L40\nL40S"}, "aliases", "line 2: write MODEL = TYPE"),
        ({"aliases": "NVIDIA-L40S ="}, "aliases", "line 1"),
        ({"aliases": "A = L40\nA = L4"}, "aliases", "line 2: &#x27;A&#x27; is mapped already"),
        ({"aliases": "NVIDIA-L40S = Z9000"}, "aliases", "aliases[&#x27;NVIDIA-L40S&#x27;]"),
        ({"nodes_per_rack": "0"}, "nodes_per_rack", "greater than or equal to 1"),
        ({"format": "csv"}, "format", "Select a valid choice"),
    ],
)
def test_a_bad_node_list_or_alias_is_shown_and_stores_nothing(
    web: Any, data: dict[str, str], field: Any, error: str
) -> None:
    post: dict[str, Any] = {"format": "", "name": "", "aliases": "", "nodes_per_rack": ""}
    post.update(data)
    post["file"] = node_list(data.get("file", "kubectl_nodes.json"))
    r = web.post("/clusters/import/", post)
    assert r.status_code == 200 and error in r.content.decode()
    assert field is None or field in r.context["form"].errors
    assert not Cluster.objects.exists()


def test_another_users_imported_cluster_is_not_seen(web: Any, other_web: Any, other: Any) -> None:
    r = other_web.post("/clusters/import/", {"file": node_list("openb_nodes.csv")})
    c = Cluster.objects.get()
    assert r.status_code == 302 and c.owner == other
    assert web.get(f"/clusters/{c.pk}/").status_code == 404
    assert b"openb_nodes" not in web.get("/").content


def test_a_cluster_created_from_a_spec_shows_no_import_report(
    web: Any, owner: Any, make_cluster: Any
) -> None:
    c = make_cluster(owner)
    page = web.get(f"/clusters/{c.pk}/").content
    assert b"Import report" not in page and b"imported from" not in page


def test_a_refused_derive_form_keeps_what_was_typed(
    web: Any, owner: Any, make_workload: Any
) -> None:
    parent = make_workload(owner)
    data = {**NO_STEPS, "load_factor": "0", "rebase_start": "2023-06-01T08:00"}
    page = web.post(f"/workloads/{parent.pk}/derive/", data).content.decode()
    assert 'value="2023-06-01T08:00"' in page and "steps[0].factor" in page
