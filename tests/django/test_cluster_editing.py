"""Editing a cluster in the browser and the API, variants, what-ifs and the comparison they
lead to. A spec that runs used is frozen: edits of it become variants."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from django.core.exceptions import ValidationError

from planner import services
from planner.models import Cluster, Experiment
from tests.django.conftest import SMALL_SPEC
from tests.django.formdata import posted

pytestmark = pytest.mark.django_db

#: SMALL_SPEC: 2 nodes of 4 V100 and 2 of 4 K80, 16 devices.
BIGGER = {**SMALL_SPEC, "pools": [{**SMALL_SPEC["pools"][0], "nodes": 3}, SMALL_SPEC["pools"][1]]}


# -- services --------------------------------------------------------------------------------


def test_an_unused_clusters_spec_is_edited_in_place(owner: Any, make_cluster: Any) -> None:
    c = make_cluster(owner)
    services.update_cluster(c, spec=BIGGER)
    c.refresh_from_db()
    assert (c.spec, c.total_devices) == (BIGGER, 20)  # 3 x 4 V100 + 2 x 4 K80


def test_a_spec_that_runs_used_is_frozen(owner: Any, finished_run: Any) -> None:
    c = finished_run.cluster
    with pytest.raises(services.InUse) as err:
        services.update_cluster(c, spec=BIGGER)
    assert err.value.experiments == [finished_run.experiment_id]
    assert "frozen" in err.value.messages[0] and "variant" in err.value.messages[0]
    c.refresh_from_db()
    assert (c.spec, c.total_devices) == (SMALL_SPEC, 16)


def test_queued_runs_freeze_the_spec_too(owner: Any, make_experiment: Any) -> None:
    exp = make_experiment(owner)  # queued: its runs will simulate the spec as it is now
    with pytest.raises(services.InUse):
        services.update_cluster(exp.clusters.get(), spec=BIGGER)


def test_a_frozen_cluster_keeps_its_name_and_description_editable(finished_run: Any) -> None:
    c = finished_run.cluster
    services.update_cluster(c, name="renamed", description="Q3", spec=copy.deepcopy(c.spec))
    c.refresh_from_db()
    assert (c.name, c.description, c.spec) == ("renamed", "Q3", SMALL_SPEC)


def test_a_variant_is_a_new_cluster_pointing_back(finished_run: Any) -> None:
    c = finished_run.cluster
    v = services.create_variant(c, BIGGER, "bigger")
    assert (v.parent_id, v.owner_id, v.total_devices, v.spec) == (c.pk, c.owner_id, 20, BIGGER)
    c.refresh_from_db()
    assert c.spec == SMALL_SPEC


def test_what_if_adds_64_h100_in_one_step(owner: Any, make_cluster: Any) -> None:
    c = make_cluster(owner)
    v = services.what_if(c, "add_pool", {"accelerator": "H100-SXM5", "devices": 64})
    assert v.name == "small + 64 H100-SXM5-80GB" and v.parent_id == c.pk
    assert v.total_devices == 16 + 64
    assert v.device_types == ["V100-SXM2-16GB", "K80", "H100-SXM5-80GB"]
    assert "what-if" in v.description
    c.refresh_from_db()
    assert c.spec == SMALL_SPEC


def test_what_if_replaces_and_scales(owner: Any, make_cluster: Any) -> None:
    c = make_cluster(owner)
    v = services.what_if(c, "replace_type", {"pool": "k80", "accelerator": "L4"})
    assert (v.name, v.device_types) == ("small, k80 → L4", ["V100-SXM2-16GB", "L4"])
    v = services.what_if(c, "scale", {"factor": 1.5})
    assert (v.name, v.total_devices) == ("small × 1.5", 24)  # 3 + 3 nodes of 4


def test_what_if_knows_the_owners_own_types(
    owner: Any, make_cluster: Any, make_accelerator: Any
) -> None:
    make_accelerator(owner, "MyChip")
    v = services.what_if(make_cluster(owner), "add_pool", {"accelerator": "MyChip", "devices": 16})
    assert v.total_devices == 32 and "MyChip" in v.device_types


def test_what_if_errors_name_the_parameter(owner: Any, make_cluster: Any) -> None:
    with pytest.raises(ValidationError) as err:
        services.what_if(make_cluster(owner), "add_pool", {"accelerator": "H100", "devices": 60})
    assert err.value.messages[0].startswith("devices: 60 devices do not fill whole nodes of 8")
    assert Cluster.objects.count() == 1


# -- API -------------------------------------------------------------------------------------


def test_changing_a_frozen_spec_over_the_api_is_a_409_naming_the_experiments(
    api: Any, finished_run: Any
) -> None:
    c = finished_run.cluster
    r = api.patch(f"/api/v1/clusters/{c.pk}/", {"spec": BIGGER}, format="json")
    assert r.status_code == 409
    body = r.json()
    assert body["experiments"] == [finished_run.experiment_id]
    assert "frozen" in body["detail"] and f"/api/v1/clusters/{c.pk}/clone/" in body["detail"]
    c.refresh_from_db()
    assert c.spec == SMALL_SPEC


def test_a_frozen_cluster_is_renamed_over_the_api(api: Any, finished_run: Any) -> None:
    c = finished_run.cluster
    r = api.patch(f"/api/v1/clusters/{c.pk}/", {"name": "renamed"}, format="json")
    assert r.status_code == 200 and r.json()["name"] == "renamed"
    r = api.put(f"/api/v1/clusters/{c.pk}/", {"name": "again", "spec": c.spec}, format="json")
    assert r.status_code == 200 and r.json()["name"] == "again"  # the same spec: no edit


def test_clone_with_a_spec_saves_the_edit_as_a_variant(api: Any, finished_run: Any) -> None:
    c = finished_run.cluster
    r = api.post(
        f"/api/v1/clusters/{c.pk}/clone/", {"name": "bigger", "spec": BIGGER}, format="json"
    )
    assert r.status_code == 201
    v = r.json()
    assert (v["name"], v["parent"], v["spec"], v["total_devices"]) == ("bigger", c.pk, BIGGER, 20)
    bad = {"pools": [{"accelerator": "V100", "nodes": 0}]}
    r = api.post(f"/api/v1/clusters/{c.pk}/clone/", {"spec": bad}, format="json")
    assert r.status_code == 400 and "pools[0].nodes" in str(r.json()["spec"])


def test_the_what_if_endpoint_makes_a_variant(api: Any, owner: Any, make_cluster: Any) -> None:
    c = make_cluster(owner)
    url = f"/api/v1/clusters/{c.pk}/what-if/"
    r = api.post(url, {"op": "add_pool", "accelerator": "H100-SXM5", "devices": 64}, format="json")
    assert r.status_code == 201
    assert (r.json()["name"], r.json()["parent"], r.json()["total_devices"]) == (
        "small + 64 H100-SXM5-80GB",
        c.pk,
        80,
    )
    r = api.post(url, {"op": "scale", "factor": 2, "pool": "k80", "name": "x"}, format="json")
    assert r.status_code == 201 and (r.json()["name"], r.json()["total_devices"]) == ("x", 24)
    r = api.post(url, {"op": "replace_type", "pool": "k80", "accelerator": "L4"}, format="json")
    assert r.status_code == 201 and r.json()["device_types"] == ["V100-SXM2-16GB", "L4"]


@pytest.mark.parametrize(
    ("body", "field", "text"),
    [
        ({"op": "scale"}, "factor", "required by scale"),
        ({"op": "scale", "factor": 2, "devices": 8}, "devices", "scale takes no devices"),
        ({"op": "add_pool", "accelerator": "H100", "devices": 60}, "devices", "56 or 64"),
        ({"op": "replace_type", "pool": "p100", "accelerator": "L4"}, "pool", "v100, k80"),
        ({"op": "scale", "factor": 0.2}, "factor", "rounds to 0 nodes"),
        ({"op": "grow"}, "op", "not a valid choice"),
    ],
)
def test_what_if_parameters_are_checked_per_operation(
    api: Any, owner: Any, make_cluster: Any, body: dict[str, Any], field: str, text: str
) -> None:
    c = make_cluster(owner)
    r = api.post(f"/api/v1/clusters/{c.pk}/what-if/", body, format="json")
    assert r.status_code == 400
    assert text in " ".join(r.json()[field])
    assert Cluster.objects.count() == 1


def test_what_if_on_another_users_cluster_is_404(
    other_api: Any, owner: Any, make_cluster: Any
) -> None:
    c = make_cluster(owner)
    body = {"op": "scale", "factor": 2}
    assert other_api.post(f"/api/v1/clusters/{c.pk}/what-if/", body, format="json").status_code == (
        404
    )
    assert Cluster.objects.count() == 1


# -- the edit page ---------------------------------------------------------------------------

FULL_SPEC: dict[str, Any] = {
    "name": "full",
    "regions": [
        {"name": "us", "carbon_zone": "", "pue": 1.1, "price_per_kwh": 0.08},
        {"name": "eu", "carbon_zone": "DE", "carbon_g_per_kwh": 350},
    ],
    "racks": [{"name": "r1", "region": "eu", "oversubscription": 2}],
    "accelerators": [
        {
            "name": "MyChip",
            "kind": "gpu",
            "fp16_tflops": 100,
            "memory_gb": 32,
            "memory_bw_tbs": 1.0,
            "busy_w": 300,
            "price_per_hour": 2.0,
            "release_year": 2024,
            "aliases": ["my-chip"],
        }
    ],
    "pools": [
        {"name": "mine", "accelerator": "MyChip", "nodes": 2, "devices_per_node": 4, "rack": "r1"},
        {
            "name": "v100",
            "accelerator": "V100",
            "nodes": 3,
            "racks": 2,
            "nic_gbps": 25,
            "cpu_cores": 32,
            "availability": 0.9,
        },
    ],
}


def _editor_data(cluster: Cluster, **changes: Any) -> dict[str, Any]:
    from dashboard.forms import ClusterEditor

    editor = ClusterEditor(cluster)
    data = posted(editor.meta, *editor.formsets.values())
    data.update({k.replace("__", "-"): v for k, v in changes.items()})
    return data


def test_the_edit_page_shows_every_part_of_the_spec(
    web: Any, owner: Any, make_cluster: Any
) -> None:
    c = make_cluster(owner, "full", FULL_SPEC)
    html = web.get(f"/clusters/{c.pk}/edit/").content.decode()
    for name, value in [
        ("regions-1-carbon_zone", "DE"),
        ("regions-0-pue", "1.1"),
        ("regions-0-price_per_kwh", "0.08"),
        ("racks-0-oversubscription", "2"),
        ("accelerators-0-fp16_tflops", "100"),
        ("accelerators-0-price_per_hour", "2.0"),
        ("pools-0-rack", "r1"),
        ("pools-1-racks", "2"),
        ("pools-1-nic_gbps", "25"),
        ("pools-1-availability", "0.9"),
    ]:
        assert f'name="{name}" value="{value}"' in html, name
    assert 'name="prices-0-price_per_hour"' in html  # an empty row for a price override
    assert "frozen" not in html


def test_saving_the_page_unchanged_changes_no_spec(web: Any, owner: Any, make_cluster: Any) -> None:
    c = make_cluster(owner, "full", FULL_SPEC)
    r = web.post(f"/clusters/{c.pk}/edit/", _editor_data(c, save="1"))
    assert r.status_code == 302
    c.refresh_from_db()
    assert c.spec == FULL_SPEC
    assert [type(p["nodes"]) for p in c.spec["pools"]] == [int, int]


def test_a_frozen_cluster_is_renamed_on_its_page(web: Any, finished_run: Any) -> None:
    c = finished_run.cluster
    page = web.get(f"/clusters/{c.pk}/edit/").content.decode()
    assert "This spec is frozen" in page and "Save as new variant" in page
    r = web.post(f"/clusters/{c.pk}/edit/", _editor_data(c, cluster__name="renamed", save="1"))
    assert r.status_code == 302
    c.refresh_from_db()
    assert (c.name, c.spec) == ("renamed", SMALL_SPEC)


def test_editing_pools_regions_and_racks_on_the_page(
    web: Any, owner: Any, make_cluster: Any
) -> None:
    c = make_cluster(owner)
    data = _editor_data(
        c,
        save="1",
        pools__0__nodes="5",  # v100: 5 nodes of 4
        pools__1__DELETE="on",  # no more K80s
        regions__0__name="eu",
        regions__0__carbon_zone="DE",
        regions__0__price_per_kwh="0.2",
        regions__0__pue="1.3",
        racks__0__name="r1",
        racks__0__region="eu",
        racks__0__oversubscription="4",
    )
    data.update({"pools-2-accelerator": "L4", "pools-2-nodes": "1", "pools-2-rack": "r1"})
    data["pools-TOTAL_FORMS"] = "3"  # a row added in the browser ("Add a row")
    r = web.post(f"/clusters/{c.pk}/edit/", data)
    assert r.status_code == 302, r.content.decode()[-3000:]
    c.refresh_from_db()
    assert c.spec["regions"] == [
        {"name": "eu", "carbon_zone": "DE", "pue": 1.3, "price_per_kwh": 0.2}
    ]
    assert c.spec["racks"] == [{"name": "r1", "region": "eu", "oversubscription": 4.0}]
    assert c.spec["pools"] == [
        {"name": "v100", "accelerator": "V100", "nodes": 5, "devices_per_node": 4},
        {"accelerator": "L4", "nodes": 1, "rack": "r1"},
    ]
    assert (c.total_devices, c.device_types) == (20 + 8, ["V100-SXM2-16GB", "L4"])


def test_a_price_override_on_the_page(web: Any, owner: Any, make_cluster: Any) -> None:
    from clustersim.spec import cluster_from_spec

    c = make_cluster(owner)
    data = _editor_data(c, save="1", prices__0__name="K80", prices__0__price_per_hour="0.05")
    assert web.post(f"/clusters/{c.pk}/edit/", data).status_code == 302
    c.refresh_from_db()
    k80 = next(t for t in cluster_from_spec(c.spec).types if t.name == "K80")
    assert k80.price_per_hour == 0.05
    html = web.get(f"/clusters/{c.pk}/edit/").content.decode()
    assert 'name="prices-0-name" value="K80"' in html  # shown as an override again,
    assert 'name="accelerators-0-name" value' not in html  # not as a type of one's own


def test_a_spec_error_is_shown_next_to_its_field(web: Any, owner: Any, make_cluster: Any) -> None:
    c = make_cluster(owner)
    data = _editor_data(c, save="1", pools__1__rack="nowhere")
    r = web.post(f"/clusters/{c.pk}/edit/", data)
    assert r.status_code == 400
    html = r.content.decode()
    at = html.index('name="pools-1-rack"')
    assert "pools[1].rack: undefined rack &#x27;nowhere&#x27;" in html[at : at + 400]
    c.refresh_from_db()
    assert c.spec == SMALL_SPEC


def test_a_frozen_spec_edit_is_refused_then_saved_as_a_variant(web: Any, finished_run: Any) -> None:
    c = finished_run.cluster
    data = _editor_data(c, save="1", pools__0__nodes="3")
    r = web.post(f"/clusters/{c.pk}/edit/", data)
    assert r.status_code == 409 and b"is frozen" in r.content
    c.refresh_from_db()
    assert c.spec == SMALL_SPEC
    data = _editor_data(c, variant="1", pools__0__nodes="3", cluster__variant_name="bigger")
    r = web.post(f"/clusters/{c.pk}/edit/", data)
    assert r.status_code == 302
    v = Cluster.objects.get(name="bigger")
    assert (v.parent_id, v.spec, v.total_devices) == (c.pk, BIGGER, 20)
    assert r["Location"] == f"/clusters/{v.pk}/"
    c.refresh_from_db()
    assert c.spec == SMALL_SPEC


def test_other_users_cannot_edit_or_make_variants(
    other_web: Any, owner: Any, make_cluster: Any
) -> None:
    c = make_cluster(owner)
    assert other_web.get(f"/clusters/{c.pk}/edit/").status_code == 404
    assert other_web.post(f"/clusters/{c.pk}/edit/", _editor_data(c, save="1")).status_code == 404
    body = {"scale-op": "scale", "scale-factor": "2"}
    assert other_web.post(f"/clusters/{c.pk}/what-if/", body).status_code == 404
    assert Cluster.objects.count() == 1


# -- what-if on the cluster page, then compare -----------------------------------------------


def test_the_what_if_form_makes_a_variant_that_offers_the_comparison(
    web: Any, owner: Any, make_cluster: Any, make_workload: Any
) -> None:
    c = make_cluster(owner)
    w = make_workload(owner)
    body = {
        "add_pool-op": "add_pool",
        "add_pool-accelerator": "H100-SXM5",
        "add_pool-devices": "64",
    }
    r = web.post(f"/clusters/{c.pk}/what-if/", body)
    v = Cluster.objects.get(parent=c)
    assert r.status_code == 302 and r["Location"] == f"/clusters/{v.pk}/"
    assert v.name == "small + 64 H100-SXM5-80GB"
    page = web.get(r["Location"]).content.decode()
    url = f"/experiments/new/?compare={c.pk}&amp;compare={v.pk}"
    assert f'href="{url}"' in page and f"Compare with {c.name}" in page
    form = web.get(url.replace("&amp;", "&")).context["form"]
    assert sorted(form.initial["clusters"]) == sorted([c.pk, v.pk])
    assert (form.initial["workloads"], form.initial["policies"]) == ([w.pk], ["fifo"])
    assert form.initial["name"] == "small vs small + 64 H100-SXM5-80GB"
    # launching the prefilled form runs both clusters
    r = web.post("/experiments/new/", posted(form))
    exp = Experiment.objects.get()
    assert r.status_code == 302 and r["Location"] == f"/experiments/{exp.pk}/"
    assert set(exp.clusters.values_list("pk", flat=True)) == {c.pk, v.pk}
    assert exp.runs.count() == 2


def test_the_comparison_reuses_the_last_experiments_grid(
    web: Any, owner: Any, make_experiment: Any
) -> None:
    exp = make_experiment(owner, policies=("fifo", "las"), load_factors=(1.0, 2.0), seeds=(0, 3))
    c = exp.clusters.get()
    v = services.what_if(c, "scale", {"factor": 2})
    form = web.get(f"/experiments/new/?compare={c.pk}&compare={v.pk}").context["form"]
    assert form.initial["policies"] == ["fifo", "las"]
    assert (form.initial["load_factors"], form.initial["seeds"]) == ("1, 2", "0, 3")
    assert form.initial["workloads"] == [exp.workloads.get().pk]


def test_a_what_if_error_is_shown_on_the_cluster_page(
    web: Any, owner: Any, make_cluster: Any
) -> None:
    c = make_cluster(owner)
    body = {"add_pool-op": "add_pool", "add_pool-accelerator": "H100", "add_pool-devices": "60"}
    r = web.post(f"/clusters/{c.pk}/what-if/", body)
    assert r.status_code == 400
    assert "60 devices do not fill whole nodes of 8" in r.content.decode()
    assert Cluster.objects.count() == 1


# -- the owner's accelerator types that simulated clusters name ------------------------------


def test_a_type_that_simulated_clusters_name_is_frozen_but_for_its_notes(
    api: Any, owner: Any, make_accelerator: Any, make_cluster: Any, make_experiment: Any
) -> None:
    acc = make_accelerator(owner, "MyChip")
    unused = make_accelerator(owner, "Spare")
    spec = {"pools": [{"accelerator": "mychip", "nodes": 1, "devices_per_node": 4}]}
    exp = make_experiment(owner, cluster=make_cluster(owner, "mine", spec))
    url = f"/api/v1/accelerators/{acc.pk}/"
    r = api.patch(url, {"price_per_hour": 9.0}, format="json")
    assert r.status_code == 409 and r.json()["experiments"] == [exp.pk]
    assert api.delete(url).status_code == 409
    assert api.patch(url, {"notes": "from the vendor"}, format="json").status_code == 200
    assert api.patch(url, {"price_per_hour": 2.0}, format="json").status_code == 200  # as it is
    acc.refresh_from_db()
    assert (acc.price_per_hour, acc.notes) == (2.0, "from the vendor")
    r = api.patch(f"/api/v1/accelerators/{unused.pk}/", {"price_per_hour": 9.0}, format="json")
    assert r.status_code == 200
    assert api.delete(f"/api/v1/accelerators/{unused.pk}/").status_code == 204
