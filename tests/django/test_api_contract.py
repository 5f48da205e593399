"""The API answers as its schema says (what Schemathesis found, one test each).

``test_api_schemathesis.py`` runs Schemathesis over every operation; these tests pin the
mismatches it found: undocumented answers (HTML 404s, 500s), invalid requests accepted
(lenient types, filters and page sizes) and valid ones refused.
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from tests.django.conftest import ACCELERATOR, ROOT

pytestmark = pytest.mark.django_db


# -- answers the schema documents ----------------------------------------------------------------


@pytest.mark.parametrize(
    "url", ["/api/v1/accelerators/0.5/", "/api/v1/runs/1/nothing/", "/api/v1/nowhere/"]
)
def test_an_unknown_api_url_is_a_json_404(api: Any, url: str) -> None:
    r = api.get(url)
    assert r.status_code == 404 and r["Content-Type"] == "application/json"
    assert r.json() == {"detail": "Not found."}


def test_other_unknown_urls_keep_the_html_page(web: Any) -> None:
    r = web.get("/nowhere/")
    assert r.status_code == 404 and r["Content-Type"].startswith("text/html")


def test_an_id_too_large_for_the_database_is_a_400_not_a_500(api: Any) -> None:
    assert api.get("/api/v1/compare/?runs=99999999999999999999").status_code == 400
    assert api.get("/api/v1/runs/?experiment=99999999999999999999").status_code == 400


def test_every_operation_documents_its_errors() -> None:
    schema = yaml.safe_load((ROOT / "docs/api-schema.yaml").read_text())
    for path, item in schema["paths"].items():
        for method, op in item.items():
            codes = set(op["responses"])
            assert {"401", "429"} <= codes, (method, path)
            if "{" in path:
                assert "404" in codes, (method, path)
            if "requestBody" in op:
                assert {"400", "413", "415"} <= codes, (method, path)


def test_the_blank_compatibility_mode_is_in_the_schema() -> None:
    schema = yaml.safe_load((ROOT / "docs/api-schema.yaml").read_text())
    compat = schema["components"]["schemas"]["Experiment"]["properties"]["compat"]
    refs = [c["$ref"].rsplit("/", 1)[1] for c in compat["oneOf"]]
    assert refs == ["CompatEnum", "BlankEnum"]


# -- invalid requests refused ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("notes", 0),  # DRF would store "0"
        ("name", 12),
        ("fp16_tflops", "100"),  # DRF would read the number
        ("release_year", "2024"),
        ("release_year", True),
        ("kind", 1),
    ],
)
def test_a_json_value_of_the_wrong_type_is_refused(api: Any, field: str, value: Any) -> None:
    r = api.post("/api/v1/accelerators/", {**ACCELERATOR, field: value}, format="json")
    assert r.status_code == 400, r.content
    assert field in r.json()


def test_a_text_is_measured_as_sent(api: Any) -> None:
    # DRF trims the tab first: 201 characters would pass a limit of 200
    r = api.post("/api/v1/clusters/from-preset/", {"preset": "philly", "name": "\t" + "x" * 200})
    assert r.status_code == 400 and "at most 200 characters" in r.json()["name"][0]
    r = api.post("/api/v1/clusters/from-preset/", {"preset": "philly", "name": "x" * 200})
    assert r.status_code == 201


def test_a_form_field_given_twice_is_refused(api: Any) -> None:
    body = {"file": ("a.csv", b"x"), "name": ["one", "two"]}
    from django.core.files.uploadedfile import SimpleUploadedFile

    body["file"] = SimpleUploadedFile("a.csv", b"submit_time,num_gpus,work\n0,1,1\n")
    r = api.post("/api/v1/workloads/", body, format="multipart")
    assert r.status_code == 400 and "more than once" in r.json()["name"][0]


def test_json_operations_take_json_only(api: Any) -> None:
    r = api.post("/api/v1/clusters/", {"name": "x", "spec": "{}"}, format="multipart")
    assert r.status_code == 415


@pytest.mark.parametrize(
    "query",
    [
        "seed=0.5",
        "seed=",
        "seed=4294967296",
        "experiment=0",
        "experiment=abc",
        "load_factor=inf",
        "load_factor=",
        "state=",
        "state=sleeping",
    ],
)
def test_a_malformed_filter_is_a_400_naming_it(api: Any, query: str) -> None:
    r = api.get(f"/api/v1/runs/?{query}")
    assert r.status_code == 400, r.content
    assert query.partition("=")[0] in r.json()


def test_a_text_filter_may_be_empty(api: Any) -> None:
    assert api.get("/api/v1/runs/?policy=").status_code == 200
    assert api.get("/api/v1/clusters/?name=").status_code == 200


@pytest.mark.parametrize("size", ["0", "-1", "abc", "", "1.5"])
def test_a_bad_page_size_is_a_400(api: Any, size: str) -> None:
    r = api.get(f"/api/v1/clusters/?page_size={size}")
    assert r.status_code == 400 and "page_size" in r.json()


def test_a_large_page_size_asks_for_the_largest_page(api: Any) -> None:
    assert api.get("/api/v1/clusters/?page_size=100000").status_code == 200


def test_an_empty_page_number_is_an_invalid_page(api: Any) -> None:
    r = api.get("/api/v1/clusters/?page=")
    assert r.status_code == 404 and r.json() == {"detail": "Invalid page."}


@pytest.mark.parametrize("runs", ["", "1,", "1,,2", " 1", "-1", ",".join(["1"] * 201)])
def test_compare_takes_1_to_200_comma_separated_ids(api: Any, runs: str) -> None:
    assert api.get("/api/v1/compare/", {"runs": runs}).status_code == 400


@pytest.mark.parametrize("empty", ["clusters", "workloads", "policies", "load_factors", "seeds"])
def test_an_experiment_grid_needs_every_axis(
    api: Any, owner: Any, make_cluster: Any, make_workload: Any, empty: str
) -> None:
    body = {
        "name": "g",
        "clusters": [make_cluster(owner).pk],
        "workloads": [make_workload(owner).pk],
        "policies": [{"name": "fifo"}],
        "load_factors": [1.0],
        "seeds": [0],
        empty: [],
    }
    r = api.post("/api/v1/experiments/", body, format="json")
    assert r.status_code == 400 and empty in r.json()


# -- valid requests accepted, or refused with the documented status --------------------------


def test_a_duplicate_accelerator_name_is_a_409_conflict(api: Any) -> None:
    assert api.post("/api/v1/accelerators/", ACCELERATOR, format="json").status_code == 201
    r = api.post("/api/v1/accelerators/", ACCELERATOR, format="json")
    assert r.status_code == 409 and "name" in r.json()


def test_the_schema_says_which_accelerator_numbers_must_be_above_zero() -> None:
    schema = yaml.safe_load((ROOT / "docs/api-schema.yaml").read_text())
    props = schema["components"]["schemas"]["AcceleratorTypeRequest"]["properties"]
    for name in ("fp16_tflops", "memory_gb", "memory_bw_tbs", "busy_w"):
        assert (props[name]["minimum"], props[name]["exclusiveMinimum"]) == (0.0, True)
    assert "exclusiveMinimum" not in props["price_per_hour"]


def test_names_presets_formats_policies_and_placements_are_enums() -> None:
    schema = yaml.safe_load((ROOT / "docs/api-schema.yaml").read_text())
    components = schema["components"]["schemas"]
    assert "philly" in components["PresetEnum"]["enum"]
    assert "gavel" in components["TraceFormatEnum"]["enum"]
    assert "tiresias" in components["PolicyNameEnum"]["enum"]
    assert "consolidate" in components["PlacementEnum"]["enum"]
