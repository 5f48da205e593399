"""Page numbers: any page past the end, however large, is DRF's 404 "Invalid page."."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse

from api.urls import router

pytestmark = pytest.mark.django_db

#: every list route of the API's router
LIST_ROUTES = [basename for _, viewset, basename in router.registry if hasattr(viewset, "list")]


def test_every_viewset_of_the_router_is_covered() -> None:
    assert set(LIST_ROUTES) == {"accelerator", "cluster", "workload", "experiment", "run", "study"}


@pytest.mark.parametrize("basename", LIST_ROUTES)
@pytest.mark.parametrize(
    "page",
    [
        "99999999999999999999",  # beyond a bigint OFFSET (was a 500: DataError)
        str(2**63),
        str(2**62 // 50),
        "1" + "0" * 400,
        "2",  # simply past the end
        "0",
        "-99999999999999999999",
        "abc",
        "1.5",
    ],
)
def test_a_page_past_the_end_or_invalid_is_a_404(
    api: Any, finished_run: Any, basename: str, page: str
) -> None:
    r = api.get(reverse(f"api:{basename}-list"), {"page": page})
    assert r.status_code == 404, r.content
    assert r.json() == {"detail": "Invalid page."}


@pytest.mark.parametrize("basename", LIST_ROUTES)
def test_the_first_and_last_pages_still_answer(
    api: Any, owner: Any, finished_run: Any, make_accelerator: Any, basename: str
) -> None:
    make_accelerator(owner)
    if basename == "study":
        from planner import studies

        problem = studies.build_problem(
            types=[{"accelerator": "v100", "max_nodes": 1}], policies=[{"name": "fifo"}]
        )
        studies.create_study(owner, name="s", workload=finished_run.workload, problem=problem)
    url = reverse(f"api:{basename}-list")
    for page in ("1", "last"):
        r = api.get(url, {"page": page})
        assert r.status_code == 200, r.content
        assert r.json()["count"] >= 1
