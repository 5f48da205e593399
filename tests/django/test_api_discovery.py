"""Finding one's way in the API: the root lists every endpoint that needs no id, each link
answers, and the committed schema gives every field a type."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from rest_framework.test import APIClient

from tests.django.conftest import ROOT

pytestmark = pytest.mark.django_db

SCHEMA = ROOT / "docs/api-schema.yaml"

EVERY_ENDPOINT = {
    "accelerators",
    "catalog/accelerators",
    "clusters",
    "clusters/from-preset",
    "clusters/import",
    "presets",
    "workloads",
    "workloads/synthetic",
    "formats",
    "experiments",
    "policies",
    "placements",
    "runs",
    "compare",
    "studies",
    "schema",
    "docs",
}


def test_the_root_lists_every_endpoint(api: APIClient) -> None:
    r = api.get("/api/v1/")
    assert r.status_code == 200
    links = r.json()
    assert set(links) == EVERY_ENDPOINT
    base = "http://testserver"
    for key, url in links.items():
        assert url.startswith(base), (key, url)
    assert links["catalog/accelerators"] == f"{base}/api/v1/catalog/accelerators/"
    assert links["compare"] == f"{base}/api/v1/compare/"
    assert links["workloads/synthetic"] == f"{base}/api/v1/workloads/synthetic/"
    assert links["schema"] == f"{base}/api/schema/"


#: what a GET of a root link answers, where it is not 200
NOT_200 = {
    "compare": 400,  # it wants ?runs=
    "clusters/from-preset": 405,  # POST only
    "clusters/import": 405,
    "workloads/synthetic": 405,
}


def test_every_link_of_the_root_answers(api: APIClient) -> None:
    for key, url in api.get("/api/v1/").json().items():
        status = api.get(url.removeprefix("http://testserver")).status_code
        assert status == NOT_200.get(key, 200), (key, status)


def test_the_root_asks_for_credentials(anon_api: APIClient) -> None:
    assert anon_api.get("/api/v1/").status_code == 401


# -- the schema ---------------------------------------------------------------------------------


def _schema() -> dict[str, Any]:
    return dict(yaml.safe_load(SCHEMA.read_text()))


def _typed(prop: dict[str, Any]) -> bool:
    return any(k in prop for k in ("type", "$ref", "allOf", "oneOf", "anyOf"))


def _resolve(schema: dict[str, Any], prop: dict[str, Any]) -> dict[str, Any]:
    refs = [p["$ref"] for key in ("allOf", "oneOf", "anyOf") for p in prop.get(key, [])]
    ref = prop.get("$ref") or next(iter(refs), None)
    if ref is None:
        return prop
    return dict(schema["components"]["schemas"][ref.rsplit("/", 1)[1]])


def _enum(schema: dict[str, Any], prop: dict[str, Any]) -> list[Any]:
    """The values of an enum property (its own, or its component's, null left out)."""
    if "enum" in prop:
        return list(prop["enum"])
    refs = [prop.get("$ref")] + [p.get("$ref") for p in prop.get("oneOf", [])]
    names = [r.rsplit("/", 1)[1] for r in refs if r and not r.endswith("/NullEnum")]
    (name,) = names
    return list(schema["components"]["schemas"][name]["enum"])


def test_every_field_of_the_schema_has_a_type() -> None:
    schema = _schema()
    untyped = [
        f"{name}.{key}"
        for name, component in schema["components"]["schemas"].items()
        for key, prop in (component.get("properties") or {}).items()
        if not _typed(prop)
    ]
    assert untyped == []


def test_every_json_answer_of_the_schema_has_a_type() -> None:
    untyped = []
    for path, operations in _schema()["paths"].items():
        for method, op in operations.items():
            for code, answer in op.get("responses", {}).items():
                body = (answer.get("content") or {}).get("application/json")
                if body is not None and not _typed(body.get("schema", {})):
                    untyped.append(f"{method.upper()} {path} {code}")
    assert untyped == []


def test_a_synthetic_recipe_is_an_object_of_typed_fields() -> None:
    schema = _schema()
    body = schema["components"]["schemas"]["SyntheticWorkloadRequest"]["properties"]["recipe"]
    recipe = _resolve(schema, body)
    assert recipe["type"] == "object"
    props = recipe["properties"]
    assert _enum(schema, props["model"]) == ["gavel", "gavel-single", "fit"]
    assert _enum(schema, props["arrival"]) == ["poisson", "diurnal"]
    assert props["jobs"]["type"] == "integer" and props["jobs"]["minimum"] == 1
    assert props["rate_per_hour"]["type"] == "number"
    assert props["job_types"]["type"] == "boolean"


def test_derive_steps_are_a_list_of_typed_objects() -> None:
    schema = _schema()
    steps = schema["components"]["schemas"]["DeriveWorkloadRequest"]["properties"]["steps"]
    assert steps["type"] == "array" and steps["minItems"] == 1
    step = _resolve(schema, steps["items"])
    assert step["type"] == "object" and step["required"] == ["op"]
    assert _enum(schema, step["properties"]["op"]) == ["window", "sample", "scale", "cap", "rebase"]
    assert step["properties"]["factor"]["type"] == "number"


def test_a_workloads_recipe_answer_is_one_of_the_two_recipes() -> None:
    schema = _schema()
    field = schema["components"]["schemas"]["Workload"]["properties"]["recipe"]
    assert field.get("nullable") is True  # an upload has none
    recipe = _resolve(schema, field)
    kinds = [_resolve(schema, {"$ref": p["$ref"]}) for p in recipe["oneOf"]]
    # each stored recipe matches exactly one: a synthetic one has a model, a derived one steps
    assert sorted(tuple(k["required"]) for k in kinds) == [("model",), ("parent", "steps")]
    assert all(k["type"] == "object" for k in kinds)


@pytest.mark.parametrize(
    ("component", "field", "kind"),
    [
        ("Cluster", "spec", "object"),
        ("ClusterRequest", "spec", "object"),
        ("Cluster", "device_types", "array"),
        ("Cluster", "import_report", "object"),
        ("Preset", "spec", "object"),
        ("Run", "params", "object"),
        ("Run", "summary", "object"),
        ("Workload", "report", "object"),
        ("Workload", "summary", "object"),
    ],
)
def test_json_fields_are_typed_as_what_they_hold(component: str, field: str, kind: str) -> None:
    prop = _schema()["components"]["schemas"][component]["properties"][field]
    assert prop.get("type") == kind, prop


def _json_schema(node: Any) -> Any:
    """An OpenAPI 3.0 schema as JSON Schema (draft 4): ``nullable`` becomes a null choice."""
    if isinstance(node, list):
        return [_json_schema(x) for x in node]
    if not isinstance(node, dict):
        return node
    out = {k: _json_schema(v) for k, v in node.items() if k != "nullable"}
    return {"anyOf": [out, {"type": "null"}]} if node.get("nullable") else out


def test_workload_answers_match_the_schema_for_each_origin(
    api: APIClient, owner: Any, make_workload: Any, django_capture_on_commit_callbacks: Any
) -> None:
    import jsonschema

    document = _json_schema(_schema())
    validator = jsonschema.Draft4Validator({**document, "$ref": "#/components/schemas/Workload"})
    upload = make_workload(owner)
    with django_capture_on_commit_callbacks(execute=True):
        synthetic = api.post(
            "/api/v1/workloads/synthetic/",
            {"recipe": {"jobs": 20, "arrival": "diurnal", "seed": 1}},
            format="json",
        ).json()["id"]
        steps = [
            {"op": "window", "end_s": 36000},
            {"op": "sample", "n": 5},
            {"op": "scale", "factor": 2},
            {"op": "rebase", "start": "2023-06-01T00:00:00Z"},
        ]
        derived = api.post(
            f"/api/v1/workloads/{upload.pk}/derive/", {"steps": steps}, format="json"
        ).json()["id"]
    for pk in (upload.pk, synthetic, derived):
        answer = api.get(f"/api/v1/workloads/{pk}/").json()
        assert answer["status"] == "ready", answer["error"]
        errors = [e.message for e in validator.iter_errors(answer)]
        assert errors == [], (answer["origin"], errors)
