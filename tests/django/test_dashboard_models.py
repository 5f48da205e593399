"""Dashboards of the power, carbon, network and failure models, and the carbon savings of
the compare API (``docs/carbon.md``, "Savings against a baseline")."""

from __future__ import annotations

from typing import Any

import pytest

from planner.models import RunState

pytestmark = pytest.mark.django_db


def _set(run: Any, **summary: float) -> None:
    run.state = RunState.SUCCEEDED
    run.summary = summary
    run.save(update_fields=["state", "summary"])


def _carbon_pair(owner: Any, make_experiment: Any) -> tuple[Any, Any]:
    exp = make_experiment(owner, policies=("fifo", "carbon-wait"))
    base, shifted = exp.runs.get(policy="fifo"), exp.runs.get(policy="carbon-wait")
    # hand-made summaries: the shifting run emits 8 kg instead of 10 (saves 2 kg, 20 %) and
    # its mean JCT is 120 s instead of 100 s (+20 s, +20 %)
    _set(base, carbon_kg=10.0, jct_mean_s=100.0, jct_p95_s=200.0, jobs_completed=5)
    _set(shifted, carbon_kg=8.0, jct_mean_s=120.0, jct_p95_s=260.0, jobs_completed=5)
    return base, shifted


def test_compare_reports_the_carbon_saved_against_the_base_policys_run(
    api: Any, owner: Any, make_experiment: Any
) -> None:
    base, shifted = _carbon_pair(owner, make_experiment)
    r = api.get(f"/api/v1/compare/?runs={base.pk},{shifted.pk}")
    assert r.status_code == 200
    (saving,) = r.json()["savings"]
    assert saving["run"] == shifted.pk and saving["baseline"] == base.pk
    assert saving["baseline_policy"] == "fifo"  # carbon-wait's default base
    assert saving["carbon_saved_kg"] == pytest.approx(2.0)
    assert saving["carbon_saved_pct"] == pytest.approx(20.0)
    assert saving["jct_mean_cost_s"] == pytest.approx(20.0)
    assert saving["jct_mean_cost_pct"] == pytest.approx(20.0)
    assert saving["jct_p95_cost_s"] == pytest.approx(60.0)
    assert saving["completed_delta"] == 0
    # without the baseline among the runs there is nothing to compare with
    assert api.get(f"/api/v1/compare/?runs={shifted.pk}").json()["savings"] == []


def test_compare_takes_a_chosen_baseline(api: Any, owner: Any, make_experiment: Any) -> None:
    base, shifted = _carbon_pair(owner, make_experiment)
    # fifo against carbon-wait: fifo emits 2 kg more (−20 % of 8 kg is −25 %)
    r = api.get(f"/api/v1/compare/?runs={base.pk},{shifted.pk}&baseline={shifted.pk}").json()
    (saving,) = r["savings"]
    assert saving["run"] == base.pk and saving["baseline"] == shifted.pk
    assert saving["carbon_saved_kg"] == pytest.approx(-2.0)
    assert saving["carbon_saved_pct"] == pytest.approx(-25.0)
    bad = api.get(f"/api/v1/compare/?runs={base.pk}&baseline={shifted.pk}")
    assert bad.status_code == 404 and "baseline" in bad.json()["detail"]


def test_the_baseline_must_match_cluster_workload_load_and_seed(
    owner: Any, make_experiment: Any
) -> None:
    from planner.baselines import find_baseline

    exp = make_experiment(owner, policies=("fifo", "carbon-wait"), seeds=(0, 1))
    runs = list(exp.runs.all())
    for run in runs:
        if run.policy != "carbon-wait":
            continue
        found = find_baseline(run, runs)
        assert found is not None and found.policy == "fifo"
        # fifo draws nothing from the seed: one run for both seeds, else the same seed
        assert found.seed == run.seed or found.seed_independent
        other = [r for r in runs if r.policy == "fifo"]
        for r in other:
            r.load_factor = 2.0
        assert find_baseline(run, runs) is None
        for r in other:
            r.load_factor = run.load_factor
    assert find_baseline(next(r for r in runs if r.policy == "fifo"), runs) is None


def _chart(web: Any, run: Any, name: str) -> dict[str, Any]:
    r = web.get(f"/charts/runs/{run.pk}/{name}/")
    assert r.status_code == 200
    return dict(r.json())


def test_a_run_with_failures_and_contention_shows_their_charts_and_no_power_chart(
    web: Any, owner: Any, make_experiment: Any
) -> None:
    exp = make_experiment(
        owner, run=True, failures={"mtbf_hours": 2.0, "repair_hours": 0.5}, network={}
    )
    run = exp.runs.get()
    assert run.state == RunState.SUCCEEDED, run.error
    page = web.get(f"/runs/{run.pk}/").content.decode()
    assert f"/charts/runs/{run.pk}/failures/" in page
    assert f"/charts/runs/{run.pk}/uplinks/" in page
    # fifo on a cluster without a carbon zone: no power model, a constant intensity
    assert f"/charts/runs/{run.pk}/power/" not in page
    fig = _chart(web, run, "failures")["figure"]
    bars, cum = fig["data"]
    n = run.summary["node_failures"]
    assert n > 0 and len(bars["y"]) >= n  # every failure in the run (and any still down)
    assert cum["y"][-1] == pytest.approx(run.summary["lost_work_device_hours"], rel=1e-3)
    up = _chart(web, run, "uplinks")
    assert up["figure"]["data"][0]["type"] == "heatmap"
    # the API's time series keeps its contract: lists of one length, no model records
    series = web.get(f"/api/v1/runs/{run.pk}/timeseries/").json()["series"]
    assert "models" not in series and len({len(v) for v in series.values()}) == 1


def test_a_run_without_the_models_shows_none_of_their_charts(web: Any, finished_run: Any) -> None:
    page = web.get(f"/runs/{finished_run.pk}/").content.decode()
    for name in ("power", "uplinks", "failures"):
        assert f"/charts/runs/{finished_run.pk}/{name}/" not in page
        # asked for anyway, the chart says why it is empty
        assert "empty" in _chart(web, finished_run, name)
    assert "GPU fragmentation rate" not in page


def test_a_power_policy_run_shows_power_by_state(
    web: Any, owner: Any, make_experiment: Any
) -> None:
    exp = make_experiment(owner, policies=("power-down",), run=True)
    run = exp.runs.get()
    assert run.state == RunState.SUCCEEDED, run.error
    assert f"/charts/runs/{run.pk}/power/" in web.get(f"/runs/{run.pk}/").content.decode()
    chart = _chart(web, run, "power")
    names = [t["name"] for t in chart["figure"]["data"]]
    assert names[:2] == ["Busy devices", "Idle (nodes on)"]
    # power-down wraps fifo, which the experiment does not have: nothing to mark against
    assert "has none for this run" in chart["note"]


def test_a_carbon_run_marks_the_jobs_it_started_later_than_its_base(
    web: Any, owner: Any, make_experiment: Any, make_cluster: Any
) -> None:
    spec = {
        "name": "zoned",
        "regions": [{"name": "r", "carbon_zone": "DE"}],
        "pools": [{"name": "v100", "accelerator": "V100", "nodes": 4, "devices_per_node": 8}],
    }
    cluster = make_cluster(owner, name="zoned", spec=spec)
    exp = make_experiment(owner, policies=("fifo", "carbon-wait"), run=True, cluster=cluster)
    base, shifted = exp.runs.get(policy="fifo"), exp.runs.get(policy="carbon-wait")
    assert shifted.state == RunState.SUCCEEDED, shifted.error
    chart = _chart(web, shifted, "power")
    traces = {t["name"]: t for t in chart["figure"]["data"]}
    assert "Carbon intensity" in traces  # DE's intensity varies hour by hour
    marks = traces.get("Started later than under fifo")
    frame_a = web.get(f"/api/v1/runs/{shifted.pk}/jobs/?as=csv").content.decode()
    assert frame_a  # the per-job table the marks come from
    import io

    import pandas as pd

    a = pd.read_csv(io.StringIO(frame_a))
    b = pd.read_csv(io.StringIO(web.get(f"/api/v1/runs/{base.pk}/jobs/?as=csv").content.decode()))
    later = int(((a["first_start"] - b["first_start"]) > 1.0).sum())
    assert f"{later} jobs started later than in run #{base.pk}" in chart["note"]
    assert (marks is None) == (later == 0)
    if marks is not None:
        assert len(marks["x"]) == later
    # the compare page's Pareto chart annotates the carbon run against fifo
    pareto = web.get(f"/charts/compare/pareto-carbon/?runs={base.pk},{shifted.pk}").json()
    notes = pareto["figure"]["layout"]["annotations"]
    assert len(notes) == 1 and f"vs #{base.pk} fifo" in notes[0]["text"]
    page = web.get(f"/compare/?runs={base.pk},{shifted.pk}").content.decode()
    assert "pareto-carbon" in page


def test_savings_label_reads_the_numbers() -> None:
    from dashboard.modelviews import savings_label

    s = {"carbon_saved_kg": 2.0, "carbon_saved_pct": 20.0, "jct_mean_cost_pct": 20.0}
    assert savings_label(s, "#3 fifo") == "saved 2 kg (20 %) vs #3 fifo, JCT +20 %"
    s = {"carbon_saved_kg": -1.5, "carbon_saved_pct": -5.0, "jct_mean_cost_pct": -2.5}
    assert savings_label(s, "#3 fifo") == "added 1.5 kg (5 %) vs #3 fifo, JCT -2.5 %"
    assert savings_label({}, "#3") == "saved – kg (– %) vs #3, JCT –"


def test_failure_rows_fall_back_to_pools_when_many_nodes_fail() -> None:
    from dashboard.modelviews import failure_rows

    ev = {"node": [0, 1, 0], "accel_type": ["V100", "K80", "V100"]}
    assert failure_rows(ev) == ["node 0 · V100", "node 1 · K80", "node 0 · V100"]
    assert failure_rows(ev, max_rows=1) == ["V100", "K80", "V100"]


def test_a_gpu_sharing_run_shows_its_fragmentation_and_share_map(
    web: Any, owner: Any, make_experiment: Any
) -> None:
    # the fgd placement turns GPU sharing on (clustersim.gpushare); the demo trace has no
    # fractional jobs, so every GPU is held whole and the map's peak is 1000 milli
    exp = make_experiment(owner, run=True, placement="fgd")
    run = exp.runs.get()
    assert run.state == RunState.SUCCEEDED, run.error
    page = web.get(f"/runs/{run.pk}/").content.decode()
    assert f"/charts/runs/{run.pk}/fragmentation/" in page
    assert f"/charts/runs/{run.pk}/share-map/" in page
    assert "GPU fragmentation rate (FGD, time-averaged)" in page
    frag = _chart(web, run, "fragmentation")
    rate, alloc = frag["figure"]["data"]
    assert rate["name"] == "Fragmentation rate" and alloc["name"] == "Allocated GPU share"
    assert all(0 <= y <= 100 for y in rate["y"] + alloc["y"])
    assert "FGD paper" in frag["note"]
    share = _chart(web, run, "share-map")
    heat = share["figure"]["data"][0]
    assert heat["type"] == "heatmap" and heat["zmax"] == 1000
    assert all(v is None or 0 <= v <= 1000 for row in heat["z"] for v in row)


def test_a_run_without_gpu_sharing_shows_no_sharing_chart(web: Any, finished_run: Any) -> None:
    page = web.get(f"/runs/{finished_run.pk}/").content.decode()
    for name in ("fragmentation", "share-map"):
        assert f"/charts/runs/{finished_run.pk}/{name}/" not in page
        assert "empty" in _chart(web, finished_run, name)
    assert "GPU fragmentation rate" not in page
