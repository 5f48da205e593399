"""The experiment form lists the registry's policies grouped by family (reads well with 25+)."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from dashboard.forms import BASELINES, policy_choices, policy_family
from scheduling.registry import POLICIES

pytestmark = pytest.mark.django_db


class _Fake:
    uses_seed = False

    def __init__(self, module: str) -> None:
        self.__module__ = module


def test_policies_are_grouped_by_the_module_of_their_family() -> None:
    fake = {
        "fifo": _Fake("scheduling.fifo"),
        "gavel-mmf": _Fake("scheduling.gavel_lp"),
        "themis": _Fake("scheduling.themis"),
        "gavel-fifo": _Fake("scheduling.gavel"),
        "new-thing": _Fake("scheduling.new_family"),
    }
    assert policy_choices(fake, "") == [
        (BASELINES, [("fifo", "fifo")]),
        ("Gavel (heterogeneity-aware)", [("gavel-mmf", "gavel-mmf"), ("gavel-fifo", "gavel-fifo")]),
        ("Themis", [("themis", "themis")]),
        ("New family", [("new-thing", "new-thing")]),
    ]


def test_the_form_shows_every_registered_policy_under_its_family(web: Client) -> None:
    html = web.get("/experiments/new/").content.decode()
    for name, cls in POLICIES.items():
        assert f'value="{name}"' in html
        assert f"<label>{policy_family(cls)}</label>" in html
    assert html.count("<label>Baselines</label>") == 1


def test_a_grouped_choice_is_still_accepted(web: Client, owner: Any, make_workload: Any) -> None:
    from dashboard.forms import ExperimentForm

    form = ExperimentForm(owner=owner)
    valid = {v for _, items in form.fields["policies"].choices for v, _ in items}
    assert valid == set(POLICIES)
    assert form.fields["policies"].valid_value("gavel-las")
    assert not form.fields["policies"].valid_value("no-such-policy")


def test_thirty_policies_get_thirty_colours() -> None:
    from dashboard.plotting import PALETTE, colours

    thirty = colours(f"p{i}" for i in range(31))
    assert len(set(list(thirty.values())[:30])) == 30
    assert list(thirty.values())[:10] == list(PALETTE)  # the first ten as before
    assert thirty["p30"] == PALETTE[0]  # then they repeat
