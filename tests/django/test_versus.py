"""The experiment page's side by side of "as run today" against research policies
(``dashboard.versus``)."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from dashboard.versus import change

pytestmark = pytest.mark.django_db


def test_change_says_how_far_and_which_way() -> None:
    assert change(100.0, 58.0, higher_is_better=False) == "−42.0 % (better)"
    assert change(100.0, 58.0, higher_is_better=True) == "−42.0 % (worse)"
    assert change(0.5, 0.6, higher_is_better=True) == "+20.0 % (better)"
    assert change(0.0, 3.0, higher_is_better=False) == "+3 (worse)"
    assert change(7.0, 7.0, higher_is_better=False) == "same"
    assert change(None, 7.0, higher_is_better=False) == "–"


def _table(web: Client, pk: int, query: str = "") -> dict[str, Any]:
    body = web.get(f"/charts/experiments/{pk}/versus/{query}").json()
    return body["table"]  # type: ignore[no-any-return]


def test_the_production_scheduler_is_the_default_baseline(
    web: Client, owner: Any, make_experiment: Any
) -> None:
    exp = make_experiment(owner, policies=("fifo", "slurm"), run=True)
    runs = {r.policy: r.summary for r in exp.runs.all()}
    table = _table(web, exp.pk)
    assert [r["policy"] for r in table["rows"]] == ["fifo"]  # slurm is the baseline
    row = table["rows"][0]
    base, other = runs["slurm"]["jct_mean_s"], runs["fifo"]["jct_mean_s"]
    assert row["jct_mean_s"] == change(base, other, higher_is_better=False)
    html = web.get(f"/experiments/{exp.pk}/").content.decode()
    assert "As run today vs research policies" in html
    assert '<option value="slurm" selected>' in html


def test_a_chosen_baseline_replaces_the_default(
    web: Client, owner: Any, make_experiment: Any
) -> None:
    exp = make_experiment(owner, policies=("fifo", "slurm"), run=True)
    table = _table(web, exp.pk, "?baseline=fifo")
    assert [r["policy"] for r in table["rows"]] == ["slurm"]
    csv = web.get(f"/charts/experiments/{exp.pk}/versus/?baseline=fifo&format=csv")
    assert csv.status_code == 200 and b"jct_mean_s_baseline" in csv.content


def test_one_policy_has_nothing_to_set_side_by_side(
    web: Client, owner: Any, make_experiment: Any
) -> None:
    exp = make_experiment(owner, policies=("fifo",), run=True)
    body = web.get(f"/charts/experiments/{exp.pk}/versus/").json()
    assert body.get("empty")
    assert "As run today" not in web.get(f"/experiments/{exp.pk}/").content.decode()
