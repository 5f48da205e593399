"""The failure keys of a cluster spec (clustersim.failures) over the API and in the editor."""

from __future__ import annotations

from typing import Any

import pytest

from tests.django.conftest import SMALL_SPEC
from tests.django.test_cluster_editing import _editor_data

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("key", "value"),
    [("mtbf_hours", 0), ("mtbf_hours", -10), ("repair_hours", 0), ("repair_hours", -2.5)],
)
def test_the_api_refuses_a_failure_rate_or_repair_time_that_is_not_positive(
    api: Any, key: str, value: float
) -> None:
    spec = {"pools": [{"accelerator": "V100", "nodes": 2, key: value}]}
    r = api.post("/api/v1/clusters/", {"name": "bad", "spec": spec}, format="json")
    assert r.status_code == 400
    assert f"pools[0].{key}: must be > 0" in str(r.json()["spec"])


def test_the_api_keeps_a_pools_failure_model(api: Any) -> None:
    pool = {"accelerator": "V100", "nodes": 2, "mtbf_hours": 700.0, "repair_hours": 8.0}
    r = api.post("/api/v1/clusters/", {"name": "ok", "spec": {"pools": [pool]}}, format="json")
    assert r.status_code == 201, r.json()
    assert r.json()["spec"]["pools"][0]["mtbf_hours"] == 700.0


def test_the_editor_shows_a_bad_repair_time_next_to_its_field(
    web: Any, owner: Any, make_cluster: Any
) -> None:
    c = make_cluster(owner)
    r = web.post(f"/clusters/{c.pk}/edit/", _editor_data(c, save="1", pools__0__repair_hours="0"))
    assert r.status_code == 400
    html = r.content.decode()
    at = html.index('name="pools-0-repair_hours"')
    assert "pools[0].repair_hours: must be &gt; 0" in html[at : at + 400]
    c.refresh_from_db()
    assert c.spec == SMALL_SPEC


def test_the_editor_saves_a_pools_mtbf(web: Any, owner: Any, make_cluster: Any) -> None:
    c = make_cluster(owner)
    data = _editor_data(c, save="1", pools__0__mtbf_hours="1200")
    assert web.post(f"/clusters/{c.pk}/edit/", data).status_code == 302
    c.refresh_from_db()
    assert c.spec["pools"][0]["mtbf_hours"] == 1200.0
