"""A carbon zone without data (issue 14, bad input) over the API and in the editor: refused,
naming the field, and nothing stored."""

from __future__ import annotations

from typing import Any

import pytest

from tests.django.test_cluster_editing import FULL_SPEC, _editor_data

pytestmark = pytest.mark.django_db


def test_the_api_refuses_a_carbon_zone_without_data(api: Any) -> None:
    spec = {
        "regions": [{"name": "r", "carbon_zone": "XX-NOWHERE"}],
        "pools": [{"accelerator": "V100", "nodes": 2}],
    }
    r = api.post("/api/v1/clusters/", {"name": "bad", "spec": spec}, format="json")
    assert r.status_code == 400
    assert "regions[0].carbon_zone" in str(r.json()["spec"])
    assert api.get("/api/v1/clusters/").json()["count"] == 0


def test_the_api_keeps_a_carbon_zone_with_data(api: Any) -> None:
    spec = {
        "regions": [{"name": "r", "carbon_zone": "DE"}],
        "pools": [{"accelerator": "V100", "nodes": 2}],
    }
    r = api.post("/api/v1/clusters/", {"name": "ok", "spec": spec}, format="json")
    assert r.status_code == 201, r.json()
    assert r.json()["spec"]["regions"][0]["carbon_zone"] == "DE"


def test_the_editor_shows_a_carbon_zone_without_data_next_to_its_field(
    web: Any, owner: Any, make_cluster: Any
) -> None:
    c = make_cluster(owner, "full", FULL_SPEC)
    r = web.post(
        f"/clusters/{c.pk}/edit/", _editor_data(c, save="1", regions__1__carbon_zone="XX-NOWHERE")
    )
    assert r.status_code == 400
    html = r.content.decode()
    at = html.index('name="regions-1-carbon_zone"')
    assert "regions[1].carbon_zone" in html[at : at + 600]
    c.refresh_from_db()
    assert c.spec == FULL_SPEC
