"""Seeds (issue 12, point 3): a configuration that cannot depend on the seed is run once for
all the seeds, the pages say so, and job counts are exact, never pooled over seeds.

On the Gavel demo trace (100 jobs) with the small cluster: FIFO and LAS with the default
``consolidate`` placement draw nothing from the seed; the ``random`` placement does.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client

from dashboard.numbers import RUN_ONCE, cell_value, count_value, is_count, seeds_text
from planner.models import Run, RunState

pytestmark = pytest.mark.django_db

DEMO_JOBS = 100  # jobs of the Gavel demo trace (conftest.GAVEL_TRACE)


def table(web: Client, exp: Any) -> dict[str, Any]:
    r = web.get(f"/charts/experiments/{exp.pk}/table/")
    assert r.status_code == 200
    return dict(json.loads(r.content))


# -- the grid: one run where the seed changes nothing ------------------------------------------


def test_a_deterministic_configuration_is_run_once_for_all_the_seeds(
    owner: Any, make_experiment: Any
) -> None:
    exp = make_experiment(owner, policies=("fifo", "las"), load_factors=(1.0, 2.0), seeds=(3, 1, 2))
    runs = list(exp.runs.order_by("pk"))
    # one run per policy × load factor, with the first seed listed, marked as standing for all
    assert [(r.policy, r.load_factor, r.seed) for r in runs] == [
        ("fifo", 1.0, 3),
        ("fifo", 2.0, 3),
        ("las", 1.0, 3),
        ("las", 2.0, 3),
    ]
    assert all(r.seed_independent for r in runs)
    assert exp.runs_total == 4 and exp.seeds == [3, 1, 2]


def test_a_seeded_configuration_gets_one_run_per_seed(owner: Any, make_experiment: Any) -> None:
    exp = make_experiment(owner, seeds=(0, 1, 2), placement="random")
    runs = list(exp.runs.order_by("pk"))
    assert [r.seed for r in runs] == [0, 1, 2]
    assert not any(r.seed_independent for r in runs)
    assert exp.runs_total == 3


def test_under_a_compatibility_mode_the_simulators_placement_decides(
    owner: Any, make_experiment: Any
) -> None:
    # --compat tiresias places FIFO with its simulator's yarn scheme: deterministic
    exp = make_experiment(
        owner, policies=("fifo",), seeds=(0, 1), placement=None, compat="tiresias"
    )
    (run,) = exp.runs.all()
    assert run.placement == "yarn" and run.seed_independent


def test_the_run_limit_counts_the_runs_made_not_the_seeds_listed(
    owner: Any, make_experiment: Any, settings: Any
) -> None:
    from django.core.exceptions import ValidationError

    settings.CLUSTERSIM_MAX_RUNS_PER_EXPERIMENT = 5
    exp = make_experiment(owner, seeds=tuple(range(50)))
    assert exp.runs.count() == 1
    with pytest.raises(ValidationError, match="6 runs; at most 5"):
        make_experiment(owner, seeds=tuple(range(6)), placement="random")


def test_cancel_and_rerun_count_the_one_run(owner: Any, make_experiment: Any, api: Any) -> None:
    exp = make_experiment(owner, seeds=(0, 1, 2))
    r = api.post(f"/api/v1/experiments/{exp.pk}/cancel/")
    assert r.json()["run_counts"]["cancelled"] == 1 and r.json()["runs_total"] == 1
    r = api.post(f"/api/v1/experiments/{exp.pk}/rerun/")
    assert r.status_code == 202
    assert r.json()["run_counts"]["queued"] == 1 and r.json()["progress"] == 0.0


def test_the_api_says_which_runs_stand_for_every_seed_and_what_draws_from_it(
    api: Any, owner: Any, make_cluster: Any, make_workload: Any
) -> None:
    c, w = make_cluster(owner), make_workload(owner)
    body = {
        "name": "api",
        "clusters": [c.pk],
        "workloads": [w.pk],
        "policies": [{"name": "fifo"}],
        "seeds": [0, 1, 2],
    }
    r = api.post("/api/v1/experiments/", body, format="json")
    assert r.status_code == 202 and r.json()["runs_total"] == 1 and r.json()["seeds"] == [0, 1, 2]
    runs = api.get(f"/api/v1/runs/?experiment={r.json()['id']}").json()["results"]
    assert [(x["seed"], x["seed_independent"]) for x in runs] == [(0, True)]
    seeded = api.post("/api/v1/experiments/", {**body, "placement": "random"}, format="json").json()
    assert seeded["runs_total"] == 3
    runs = api.get(f"/api/v1/runs/?experiment={seeded['id']}").json()["results"]
    assert [(x["seed"], x["seed_independent"]) for x in runs] == [
        (0, False),
        (1, False),
        (2, False),
    ]
    placements = {p["name"]: p["uses_seed"] for p in api.get("/api/v1/placements/").json()}
    assert placements["random"] and not placements["consolidate"]
    policies = {p["name"]: p["uses_seed"] for p in api.get("/api/v1/policies/").json()}
    assert policies["fifo"] is False and policies["gavel-fifo"] is False


# -- the form and the pages --------------------------------------------------------------------


def test_the_form_says_seeds_only_matter_for_seeded_configurations(web: Client) -> None:
    html = web.get("/experiments/new/").content.decode()
    assert "Seeds only matter for seeded configurations" in html
    # the carbon-aware policies draw their forecast errors from the seed (forecast_error > 0)
    assert (
        "placements: random, random-fit; policies: carbon-wait, carbon-suspend, carbon-region"
        in html
    )
    assert "random (uses the seed)" in html
    assert "run once, with the first seed" in html


def test_the_form_names_the_chosen_seed_independent_policies(
    web: Client, owner: Any, make_cluster: Any, make_workload: Any, settings: Any
) -> None:
    settings.CLUSTERSIM_MAX_RUNS_PER_EXPERIMENT = 1  # two runs: refused, the form comes back
    c, w = make_cluster(owner), make_workload(owner)
    data = {
        "name": "x",
        "clusters": [c.pk],
        "workloads": [w.pk],
        "policies": ["fifo", "las"],
        "load_factors": "1",
        "seeds": "0, 1, 2",
        "placement": "",
        "compat": "",
    }
    html = web.post("/experiments/new/", data).content.decode()
    assert "2 runs; at most 1" in html
    assert (
        "Seed-independent among your choices (run once: does not depend on the seed): "
        "fifo with placement consolidate; las with placement consolidate." in html
    )
    html = web.post("/experiments/new/", {**data, "placement": "random"}).content.decode()
    assert "6 runs; at most 1" in html and "Seed-independent among your choices" not in html


def test_the_experiment_page_says_a_cell_was_run_once(
    web: Client, owner: Any, make_experiment: Any, finish: Any
) -> None:
    exp = finish(make_experiment(owner, policies=("fifo",), seeds=(0, 1, 2), name="once"))
    html = web.get(f"/experiments/{exp.pk}/").content.decode()
    assert (
        "fifo with placement consolidate: run once: does not depend on the seed (neither the "
        "policy nor the placement draws from it), so each of their cells is one run, with seed "
        "0, standing for seed(s) 0, 1, 2." in html
    )
    assert '0 <span class="small">(run once: does not depend on the seed)</span>' in html
    payload = table(web, exp)["table"]
    (row,) = payload["rows"]
    assert row["seeds"] == RUN_ONCE
    assert {"key": "seeds", "label": "Seeds", "unit": "runs", "nowrap": True} in payload["columns"]
    mean, sd = row["jct_mean_s"]
    assert mean > 0 and sd is None  # no "± 0" for a single run
    assert row["jobs_completed"] == DEMO_JOBS
    bars = json.loads(web.get(f"/charts/experiments/{exp.pk}/bars-jct_mean_s/").content)
    (trace,) = bars["figure"]["data"]
    assert trace["error_y"]["array"] == [None] and trace["customdata"] == [RUN_ONCE]
    assert "±" not in trace["hovertemplate"]


def test_with_one_seed_listed_nothing_was_collapsed_and_nothing_is_said(
    web: Client, owner: Any, make_experiment: Any, finish: Any
) -> None:
    exp = finish(make_experiment(owner, policies=("fifo",), seeds=(0,), name="one seed"))
    html = web.get(f"/experiments/{exp.pk}/").content.decode()
    assert RUN_ONCE not in html
    (row,) = table(web, exp)["table"]["rows"]
    assert row["seeds"] == 1 and row["jct_mean_s"][1] is None
    bars = json.loads(web.get(f"/charts/experiments/{exp.pk}/bars-jct_mean_s/").content)
    assert bars["figure"]["data"][0]["customdata"] == ["1 seed"]


def test_a_seeded_grid_shows_its_spread_and_exact_unpooled_job_counts(
    web: Client, experiment: Any
) -> None:
    # the shared grid: fifo and las × 2 load factors × seeds 0 and 1, random placement
    rows = table(web, experiment)["table"]["rows"]
    assert all(r["seeds"] == 2 for r in rows)
    assert all(r["jobs_completed"] == DEMO_JOBS for r in rows)  # not 200, not a mean
    cdf = json.loads(web.get(f"/charts/experiments/{experiment.pk}/cdf/").content)
    names = [t["name"] for t in cdf["figure"]["data"]]
    assert names == [f"fifo ({DEMO_JOBS} jobs)", f"las ({DEMO_JOBS} jobs)"]


def test_job_counts_are_shown_exact_on_the_experiment_and_compare_pages(
    web: Client, owner: Any, make_experiment: Any, finish: Any, fresh_cache: None
) -> None:
    exp = finish(make_experiment(owner, seeds=(0, 1), placement="random", name="big"))
    for run in exp.runs.all():
        # as if the trace had 82,247 jobs, the seeds' runs agreeing on every count
        summary = {**run.summary, "jobs_total": 82247, "jobs_completed": 82247, "migrations": 3}
        Run.objects.filter(pk=run.pk).update(summary=summary)
    (row,) = table(web, exp)["table"]["rows"]
    assert row["jobs_completed"] == 82247  # not 82,250 (rounded), not 164,494 (pooled)
    ids = ",".join(str(pk) for pk in exp.runs.values_list("pk", flat=True))
    html = web.get(f"/compare/?runs={ids}").content.decode()
    assert html.count(">82,247<") == 4  # jobs and completed, for each of the two runs
    assert "82,250" not in html and "164,494" not in html
    # seeds that disagree on a count show the range of the runs' counts
    first = exp.runs.order_by("pk").first()
    assert first is not None and first.state == RunState.SUCCEEDED
    Run.objects.filter(pk=first.pk).update(summary={**first.summary, "jobs_completed": 82240})
    exp.runs.update(finished_at=None)  # a new version of the results: the cache moves on
    (row,) = table(web, exp)["table"]["rows"]
    assert row["jobs_completed"] == "82,240–82,247"


# -- how one cell's numbers are shown ----------------------------------------------------------


def test_counts_are_exact_integers_and_other_metrics_lose_a_zero_spread() -> None:
    assert is_count("jobs_completed") and is_count("jobs_total") and is_count("preemptions")
    assert is_count("migrations") and not is_count("jct_mean_s") and not is_count("utilisation")
    assert cell_value("jobs_completed", [82247, 82247, 82247]) == 82247
    assert cell_value("jobs_completed", [82247.0]) == 82247
    assert cell_value("preemptions", [12, 15]) == "12–15"
    assert count_value([None, None]) is None
    assert cell_value("jct_mean_s", [5.0, 5.0, 5.0]) == [5.0, None]  # agree: no "± 0"
    assert cell_value("jct_mean_s", [5.0]) == [5.0, None]
    # 2, 4: mean 3, sample sd sqrt(2) = 1.414; the factor scales both
    assert cell_value("jct_mean_s", [2.0, 4.0], factor=10.0) == [30.0, 14.14]
    assert cell_value("utilisation", [None, None]) == [None, None]


def test_the_bar_hover_text_says_how_many_seeds_and_whether_they_differ() -> None:
    class R:
        def __init__(self, once: bool = False) -> None:
            self.seed_independent = once

    assert seeds_text([R(once=True)], seeds_listed=3) == RUN_ONCE
    assert seeds_text([R(once=True)]) == "1 seed"  # one seed listed: nothing was collapsed
    assert seeds_text([R()]) == "1 seed"
    assert seeds_text([R(), R()]) == "the same for all 2 seeds"
    assert seeds_text([R(), R(), R()], 1.234, "h") == "± 1.2 h (sd over 3 seeds)"


def test_runs_without_spread_draw_no_error_bars_and_each_column_picks_its_unit(
    web: Client, owner: Any, make_experiment: Any, finish: Any, fresh_cache: None
) -> None:
    exp = finish(make_experiment(owner, policies=("fifo",), load_factors=(1.0, 2.0), seeds=(0, 1)))
    for name in ("bars-jct_mean_s", "load"):
        r = web.get(f"/charts/experiments/{exp.pk}/{name}/")
        assert r.status_code == 200
        traces = json.loads(r.content)["figure"]["data"]
        assert traces and all("error_y" in t for t in traces)
        # Plotly draws a cap even for a missing value: no spread, no error bar
        assert not any(t["error_y"]["visible"] for t in traces), name
    # a 57 s median beside a 3-day p99: each column in its own unit, not both in days
    for run in exp.runs.all():
        times = {"jct_p50_s": 57.0, "jct_mean_s": 7200.0, "jct_p99_s": 3 * 86400.0}
        Run.objects.filter(pk=run.pk).update(summary={**run.summary, **times}, finished_at=None)
    spec = table(web, exp)["table"]
    unit = {c["key"]: c.get("unit") for c in spec["columns"]}
    assert (unit["jct_p50_s"], unit["jct_mean_s"], unit["jct_p99_s"]) == ("s", "h", "d")
    row = next(r for r in spec["rows"] if r["jct_p50_s"][0] == 57.0)
    assert row["jct_p99_s"][0] == 3.0
