"""``manage.py planner demo``: the demo data show a contended, heterogeneous cluster on which
the policies clearly differ, and its charts do not magnify small differences."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest
from django.core.management import call_command
from django.test import Client

from planner.management.commands.planner import DEMO_EXPERIMENT, DEMO_POLICIES
from planner.models import Cluster, Experiment

pytestmark = [pytest.mark.django_db, pytest.mark.slow, pytest.mark.usefixtures("fresh_cache")]


@pytest.fixture
def demo(django_user_model: Any) -> Experiment:
    call_command("planner", "demo", "--username", "demo", "--password", "demo-password")
    return Experiment.objects.get(owner__username="demo", name=DEMO_EXPERIMENT)


def test_the_demo_policies_differ_by_more_than_ten_percent_on_a_mixed_cluster(
    demo: Experiment,
) -> None:
    assert demo.state == "succeeded"
    cluster = Cluster.objects.get(pk=demo.runs.first().cluster_id)
    assert len(cluster.device_types) == 3  # K80, V100, A100: heterogeneous
    assert {r.policy for r in demo.runs.all()} == set(DEMO_POLICIES)
    for load in demo.load_factors:
        jct = {
            r.policy: r.summary["jct_mean_s"] for r in demo.runs.filter(load_factor=load, seed=0)
        }
        for a, b in itertools.combinations(DEMO_POLICIES, 2):
            assert abs(jct[a] - jct[b]) > 0.10 * min(jct[a], jct[b]), (load, a, b, jct)
        # contended: under FIFO, jobs wait behind others
        fifo = demo.runs.get(load_factor=load, policy="fifo")
        assert fifo.summary["queue_delay_mean_s"] > 3600.0


def test_the_demo_draws_its_hourly_carbon_intensity_and_an_honest_load_axis(
    demo: Experiment, client: Client
) -> None:
    client.login(username="demo", password="demo-password")
    load = json.loads(client.get(f"/charts/experiments/{demo.pk}/load/").content)["figure"]
    assert load["layout"]["yaxis"]["rangemode"] == "tozero"
    timeline = json.loads(
        client.get(f"/charts/experiments/{demo.pk}/timeline-utilisation/").content
    )["figure"]
    assert [t["name"] for t in timeline["data"] if t.get("yaxis") == "y2"] == ["carbon intensity"]
    # running it again changes nothing
    call_command("planner", "demo", "--username", "demo")
    assert Experiment.objects.filter(owner__username="demo").count() == 1
