"""The run page's Gantt and placement-by-node endpoints, built from the stored device stints.

Content (a job's bars are its stints, preemption gaps included; a node's bars never hold more
devices than it has), units, time-window filtering, row and bar caps, exports (every stint of
the window), runs stored before stints existed, the stints download of the API, ownership.
"""

from __future__ import annotations

import io
import itertools
import json
from typing import Any

import numpy as np
import pandas as pd
import pytest
from django.core.cache import cache
from django.test import Client

from dashboard import gantt
from planner.models import Artefact, Run
from tests.django.test_dashboard_charts import assert_units, get_json

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_cache")]


@pytest.fixture
def run(owner: Any, make_experiment: Any, finish: Any) -> Run:
    """A finished LAS run of the Gavel demo trace (100 jobs, many preemptions)."""
    exp = finish(make_experiment(owner, policies=("las",), name="las"))
    r = exp.runs.get()
    assert r.stints_id is not None and r.summary["preemptions"] > 0
    return r


def stints_of(run: Run) -> pd.DataFrame:
    return pd.read_parquet(io.BytesIO(Artefact.objects.get(pk=run.stints_id).read()))


def jobs_of(run: Run) -> pd.DataFrame:
    return pd.read_parquet(io.BytesIO(Artefact.objects.get(pk=run.per_job_id).read()))


def traces(fig: dict[str, Any], prefix: str) -> list[dict[str, Any]]:
    return [t for t in fig["data"] if t["name"].startswith(prefix)]


def bars(fig: dict[str, Any], prefix: str) -> list[tuple[str, float, float]]:
    """(row, start, end) of every bar of the traces whose name starts with ``prefix``."""
    out = []
    for t in traces(fig, prefix):
        for y, base, x in zip(t["y"], t["base"], t["x"], strict=True):
            out.append((y, base, base + x))
    return out


def hours(fig: dict[str, Any]) -> float:
    """Seconds per unit of the figure's time axis."""
    unit = fig["layout"]["xaxis"]["title"]["text"].rsplit("[", 1)[1].rstrip("]")
    return {"s": 1.0, "min": 60.0, "h": 3600.0, "d": 86400.0}[unit]


def export(client: Client, url: str) -> pd.DataFrame:
    sep = "&" if "?" in url else "?"
    r = client.get(f"{url}{sep}format=csv")
    assert r.status_code == 200 and r["Content-Type"].startswith("text/csv")
    return pd.read_csv(io.StringIO(r.content.decode()), dtype={"job_id": str})


# -- the Gantt ----------------------------------------------------------------------------------


def test_the_gantt_draws_each_jobs_stints_and_its_preemption_gaps(
    web: Client, run: Run, monkeypatch: Any
) -> None:
    monkeypatch.setattr(gantt, "MAX_GANTT_BARS", 10_000)  # every job, every stint
    url = f"/charts/runs/{run.pk}/gantt/?from_h=0&to_h=1000"
    payload = get_json(web, url)
    fig = payload["figure"]
    assert_units(url, payload)
    assert fig["data"][0]["name"] == "waiting"
    assert traces(fig, "preempted") and traces(fig, "running")
    assert "orange: preempted" in payload["note"]
    scale = hours(fig)
    stints, jobs = stints_of(run), jobs_of(run)
    # every job of the run is a row; its running bars are its stints (several nodes: one bar)
    running = bars(fig, "running")
    assert len(running) == len(stints.drop_duplicates(["job", "start", "end"]))
    for row in (0, int(np.argmax(jobs["preemptions"].to_numpy()))):
        job_id = str(jobs["job_id"].iat[row])
        mine = stints[stints["job"] == row].drop_duplicates(["start", "end"])
        drawn = sorted((s, e) for y, s, e in running if y == job_id)
        np.testing.assert_allclose(
            drawn, (mine[["start", "end"]].to_numpy() / scale), rtol=1e-5, atol=1e-6
        )
        # between two stints the job was suspended: a gap bar covers exactly that time
        gaps = sorted((s, e) for y, s, e in bars(fig, "preempted") if y == job_id)
        times = mine[["start", "end"]].to_numpy() / scale
        between = [(e, s) for (_, e), (s, _) in itertools.pairwise(times) if s > e]
        assert len(gaps) == len(between) <= jobs["preemptions"].iat[row]
        np.testing.assert_allclose(gaps, between, rtol=1e-5, atol=1e-6)
    assert len(bars(fig, "preempted")) > 0
    # the hover names node, rack and devices
    hover = traces(fig, "running")[0]["hovertext"][0]
    assert "node " in hover and "rack" in hover and "device(s)" in hover


def test_the_gantt_window_keeps_only_what_overlaps_it(web: Client, run: Run) -> None:
    fig = get_json(web, f"/charts/runs/{run.pk}/gantt/?from_h=2&to_h=5")["figure"]
    scale = hours(fig)
    lo, hi = 2 * 3600 / scale, 5 * 3600 / scale
    assert fig["layout"]["xaxis"]["range"] == pytest.approx([lo, hi])
    drawn = bars(fig, "running") + bars(fig, "preempted")
    assert drawn and all(s < hi + 1e-9 and e > lo - 1e-9 for _, s, e in drawn)
    jobs = jobs_of(run)
    end = jobs["finish"].fillna(np.inf).to_numpy()
    in_window = jobs[(jobs["submit"] < 5 * 3600) & (end > 2 * 3600)]
    assert {y for y in fig["data"][0]["y"]} == set(in_window["job_id"].astype(str))
    assert f"{len(in_window)} jobs in" in fig["layout"]["title"]["text"]


def test_the_gantt_export_lists_every_stint_of_the_window(web: Client, run: Run) -> None:
    url = f"/charts/runs/{run.pk}/gantt/?from_h=2&to_h=5"
    rows = export(web, url)
    stints = stints_of(run)
    want = stints[(stints["start"] < 5 * 3600) & (stints["end"] > 2 * 3600)]
    assert len(rows) == len(want) > 0
    assert {"job_id", "node", "rack_name", "accel_type", "devices", "start_s", "end_s"} <= set(
        rows.columns
    )
    np.testing.assert_allclose(rows["start_s"], want["start"])
    assert list(rows["job_id"]) == list(want["job_id"].astype(str))
    as_json = json.loads(web.get(f"{url}&format=json").content)
    assert len(as_json) == len(want)


def test_the_gantt_caps_its_rows_and_bars_and_says_so(
    web: Client, run: Run, monkeypatch: Any
) -> None:
    monkeypatch.setattr(gantt, "MAX_GANTT_ROWS", 7)
    url = f"/charts/runs/{run.pk}/gantt/?from_h=0&to_h=1000"
    fig = get_json(web, url)["figure"]
    assert len(fig["data"][0]["y"]) == 7
    assert "first 7 shown" in fig["layout"]["title"]["text"]
    monkeypatch.setattr(gantt, "MAX_GANTT_ROWS", 250)
    monkeypatch.setattr(gantt, "MAX_GANTT_BARS", 40)
    cache.clear()
    fig = get_json(web, url)["figure"]
    assert sum(len(t["y"]) for t in fig["data"]) <= 40
    assert "shown" in fig["layout"]["title"]["text"]
    # whole jobs only: each job shown has all its stints in the window
    shown = set(fig["data"][0]["y"])
    running = [y for y, _, _ in bars(fig, "running")]
    stints = stints_of(run).drop_duplicates(["job", "start", "end"])
    for job_id in shown:
        assert running.count(job_id) == (stints["job_id"].astype(str) == job_id).sum()
    assert len(export(web, url)) == len(stints_of(run))  # exports are not capped


def test_a_run_stored_before_stints_falls_back_and_says_so(web: Client, run: Run, api: Any) -> None:
    Run.objects.filter(pk=run.pk).update(stints=None)
    payload = get_json(web, f"/charts/runs/{run.pk}/gantt/")
    assert "stored before placements were recorded" in payload["note"]
    fig = payload["figure"]
    assert fig["data"][0]["name"] == "waiting" and traces(fig, "running")
    assert not traces(fig, "preempted")
    assert "(first start to finish)" in fig["layout"]["title"]["text"]
    assert len(export(web, f"/charts/runs/{run.pk}/gantt/")) > 0
    placement = get_json(web, f"/charts/runs/{run.pk}/placement/")
    assert "stored before placements were recorded" in placement["empty"]
    assert api.get(f"/api/v1/runs/{run.pk}/stints/").status_code == 404
    page = web.get(f"/runs/{run.pk}/")
    assert page.status_code == 200 and b"/stints/" not in page.content


# -- placement by node ---------------------------------------------------------------------------


def test_placement_rows_are_nodes_and_never_hold_more_devices_than_they_have(
    web: Client, run: Run
) -> None:
    url = f"/charts/runs/{run.pk}/placement/?from_h=0&to_h=1000"
    payload = get_json(web, url)
    fig = payload["figure"]
    assert_units(url, payload)
    stints = stints_of(run)
    labels = fig["layout"]["yaxis"]["categoryarray"]
    assert len(labels) == stints["node"].nunique()
    assert all(label.startswith("node ") for label in labels)
    rects, stints_drawn = [], set()
    for t in traces(fig, "job of"):
        for y, base, x, off, width, text in zip(
            t["y"], t["base"], t["x"], t["offset"], t["width"], t["hovertext"], strict=True
        ):
            assert off >= -0.45 - 1e-6 and off + width <= 0.45 + 1e-6
            rects.append((y, base, base + x, off, off + width))
            stints_drawn.add((y, text))
    # one bar per stint (in pieces where the node's free devices were not contiguous)
    assert len(stints_drawn) == len(stints)
    # packed into device slots: two bars of one node that overlap in time use other devices
    for i, (y, s, e, a, b) in enumerate(rects):
        for y2, s2, e2, a2, b2 in rects[i + 1 :]:
            if y == y2 and s < e2 - 1e-5 and s2 < e - 1e-5:  # display values: 6 digits
                assert b <= a2 + 1e-6 or b2 <= a + 1e-6, (y, s, e, s2, e2)
    hover = traces(fig, "job of")[0]["hovertext"][0]
    assert hover.startswith("job ") and "devices" in hover


def test_placement_filters_by_window_and_caps_nodes_and_bars(
    web: Client, run: Run, monkeypatch: Any
) -> None:
    url = f"/charts/runs/{run.pk}/placement/?from_h=2&to_h=5"
    fig = get_json(web, url)["figure"]
    scale = hours(fig)
    lo, hi = 2 * 3600 / scale, 5 * 3600 / scale
    drawn = {
        (y, text, b, b + x)
        for t in fig["data"]
        for y, text, b, x in zip(t["y"], t["hovertext"], t["base"], t["x"], strict=True)
    }
    stints = stints_of(run)
    want = stints[(stints["start"] < 5 * 3600) & (stints["end"] > 2 * 3600)]
    assert len(drawn) == len(want) > 0
    assert all(s < hi + 1e-9 and e > lo - 1e-9 for _, _, s, e in drawn)
    assert len(export(web, url)) == len(want)

    monkeypatch.setattr(gantt, "MAX_PLACEMENT_NODES", 1)
    cache.clear()
    fig = get_json(web, url)["figure"]
    assert len(fig["layout"]["yaxis"]["categoryarray"]) == 1
    assert "first 1 shown" in fig["layout"]["title"]["text"]
    monkeypatch.setattr(gantt, "MAX_PLACEMENT_NODES", 80)
    monkeypatch.setattr(gantt, "MAX_PLACEMENT_BARS", 3)
    cache.clear()
    fig = get_json(web, url)["figure"]
    stints_drawn = {
        (y, text) for t in fig["data"] for y, text in zip(t["y"], t["hovertext"], strict=True)
    }
    assert len(stints_drawn) <= 3
    assert "first 3 of" in fig["layout"]["title"]["text"]
    assert len(export(web, url)) == len(want)  # exports are not capped


def test_an_empty_window_says_what_to_do(web: Client, run: Run) -> None:
    for name in ("gantt", "placement"):
        bad = get_json(web, f"/charts/runs/{run.pk}/{name}/?from_h=5&to_h=2")
        assert "window is empty" in bad["empty"]
        late = get_json(web, f"/charts/runs/{run.pk}/{name}/?from_h=100000&to_h=100001")
        assert "widen the window" in late["empty"] or "choose another window" in late["empty"]


# -- a large run stays small ----------------------------------------------------------------------


@pytest.fixture
def big_run(run: Run) -> Run:
    """Stored results of 30,000 jobs and 50,000 stints on 64 nodes of 8 devices."""
    rng = np.random.default_rng(3)
    n = 30_000
    submit = np.sort(rng.uniform(0, 86_400 * 14, n))
    start = submit + rng.exponential(600, n)
    finish = start + rng.exponential(7200, n)
    gpus = rng.choice([1, 2, 4, 8], n)
    preempted = rng.uniform(size=n) < 0.6
    cut = start + (finish - start) * 0.4
    resume = cut + 900.0
    job = np.r_[np.arange(n), np.flatnonzero(preempted)]
    s = np.r_[start, resume[preempted]]
    e = np.r_[np.where(preempted, cut, finish), finish[preempted] + 900.0]
    order = np.argsort(s, kind="stable")
    node = rng.integers(0, 64, len(s))[order]
    stints = pd.DataFrame(
        {
            "job": job[order],
            "job_id": [f"j{i}" for i in job[order]],
            "node": node,
            "node_devices": 8,
            "rack": node // 8,
            "accel_type": "P100",
            "devices": gpus[job[order]],
            "start": s[order],
            "end": e[order],
        }
    )
    per_job = pd.DataFrame(
        {
            "job_id": [f"j{i}" for i in range(n)],
            "submit": submit,
            "first_start": start,
            "finish": finish + np.where(preempted, 900.0, 0.0),
            "num_gpus": gpus,
            "user": [f"u{i % 40}" for i in range(n)],
            "preemptions": preempted.astype(int),
        }
    )
    arts = []
    for kind, frame in ((Artefact.Kind.PER_JOB, per_job), (Artefact.Kind.STINTS, stints)):
        buf = io.BytesIO()
        frame.to_parquet(buf, index=False, compression="zstd")
        art = Artefact.build(run.owner, kind, buf.getvalue(), compress=False)
        art.save()
        arts.append(art)
    Run.objects.filter(pk=run.pk).update(per_job=arts[0], stints=arts[1], summary={})
    run.refresh_from_db()
    return run


def test_a_large_run_is_capped_for_display_and_exported_in_full(web: Client, big_run: Run) -> None:
    for name in ("gantt", "placement"):
        url = f"/charts/runs/{big_run.pk}/{name}/?from_h=0&to_h=400"
        r = web.get(url)
        assert r.status_code == 200 and len(r.content) < 1_000_000, (name, len(r.content))
        fig = json.loads(r.content)["figure"]
        n_bars = sum(len(t["y"]) for t in fig["data"])
        cap = gantt.MAX_GANTT_BARS if name == "gantt" else gantt.MAX_PLACEMENT_BARS
        assert 0 < n_bars <= cap
        assert "shown" in fig["layout"]["title"]["text"]
        stints = stints_of(big_run)
        want = (stints["start"] < 400 * 3600) & (stints["end"] > 0)
        assert len(export(web, url)) == want.sum() > 40_000
    gantt_fig = get_json(web, f"/charts/runs/{big_run.pk}/gantt/?from_h=0&to_h=400")["figure"]
    assert len(gantt_fig["data"][0]["y"]) <= gantt.MAX_GANTT_ROWS


# -- API download and ownership -------------------------------------------------------------------


def test_the_api_downloads_the_stints(api: Any, other_api: Any, anon_api: Any, run: Run) -> None:
    url = f"/api/v1/runs/{run.pk}/stints/"
    parquet = api.get(url, {"as": "parquet"})
    assert parquet.status_code == 200
    assert parquet["Content-Type"] == "application/vnd.apache.parquet"
    assert f"run-{run.pk}-stints.parquet" in parquet["Content-Disposition"]
    frame = pd.read_parquet(io.BytesIO(parquet.content))
    assert len(frame) == len(stints_of(run))
    csv = api.get(url)
    assert csv.status_code == 200 and csv["Content-Type"].startswith("text/csv")
    assert csv.content.decode().splitlines()[0].startswith("job,job_id,node,")
    assert api.get(url, {"as": "xml"}).status_code == 400
    assert other_api.get(url).status_code == 404
    assert anon_api.get(url).status_code in (401, 403)


def test_the_run_page_offers_both_views_and_the_download(web: Client, run: Run) -> None:
    page = web.get(f"/runs/{run.pk}/").content.decode()
    assert 'id="chart-gantt"' in page and 'id="chart-placement"' in page
    assert 'data-chart-target="chart-gantt chart-placement"' in page
    assert f"/api/v1/runs/{run.pk}/stints/?as=parquet" in page


def test_the_gantt_and_placement_are_the_owners_only(
    web: Client, other_web: Client, client: Client, run: Run
) -> None:
    for name in ("gantt", "placement"):
        url = f"/charts/runs/{run.pk}/{name}/?from_h=0&to_h=5"
        assert web.get(url).status_code == 200
        assert other_web.get(url).status_code == 404
        assert client.get(url).status_code == 404
        assert other_web.get(f"{url}&format=csv").status_code == 404
        # an export without credentials is a script's request: 401 (dashboard/access.py)
        assert client.get(f"{url}&format=json").status_code == 401


# -- the default window: the busiest one ---------------------------------------------------------


def test_the_busiest_window_holds_the_most_of_the_step_function() -> None:
    edges = np.array([0.0, 10.0, 20.0, 30.0, 40.0])
    values = np.array([1.0, 0.0, 6.0, 2.0])
    # width 15: [20, 35) holds 6 × 10 + 2 × 5 = 70; [15, 30) 60, [25, 40) 50, [0, 15) 10
    assert gantt.busiest_window(edges, values, 15.0) == (20.0, 35.0)
    # width 10: [20, 30) holds 60; [25, 35) 40, [15, 25) 30
    assert gantt.busiest_window(edges, values, 10.0) == (20.0, 30.0)
    assert gantt.busiest_window(edges, values, 100.0) == (0.0, 40.0)
    assert gantt.busiest_window(edges, np.zeros(4), 10.0) is None
    # a plateau: every window inside [10, 40) ties; the first one wins
    assert gantt.busiest_window(edges, np.array([0.0, 5.0, 5.0, 5.0]), 20.0) == (10.0, 30.0)


def test_the_running_profile_steps_at_each_start_and_finish(run: Run) -> None:
    frame = pd.DataFrame(
        {
            "first_start": [0.0, 5.0, 5.0, np.nan],
            "finish": [10.0, 20.0, np.nan, np.nan],  # the third never finished
            "submit": [0.0, 0.0, 1.0, 2.0],
        }
    )
    Run.objects.filter(pk=run.pk).update(timeseries=None, summary={})
    run.refresh_from_db()
    edges, values = gantt.running_profile(run, frame)
    # the unfinished job runs to the end of the timeline (the last finish: 20 s)
    assert edges.tolist() == [0.0, 5.0, 10.0, 20.0]
    assert values.tolist() == [1.0, 3.0, 2.0]


@pytest.fixture
def late_run(run: Run) -> Run:
    """Stored results of 1,500 jobs over 100 h whose busiest hours are 60-65 h: one job runs
    at a time until 50 h, five from 50 h on, thirty from 60 h to 65 h."""
    n = 1500
    submit = np.linspace(0.0, 100 * 3600.0, n)
    frame = pd.DataFrame(
        {
            "job_id": [f"j{i}" for i in range(n)],
            "submit": submit,
            "first_start": submit,
            "finish": submit + 600.0,
            "jct": np.full(n, 600.0),
            "queue_delay": np.zeros(n),
            "num_gpus": np.ones(n, dtype=np.int64),
            "job_type": "",
            "user": "",
            "vc": "",
            "attained_gpu_s": np.full(n, 600.0),
            "preemptions": 0,
            "migrations": 0,
            "drop_reason": "",
            "ftf_rho": np.ones(n),
        }
    )
    buf = io.BytesIO()
    frame.to_parquet(buf, index=False)
    per_job = Artefact.build(run.owner, Artefact.Kind.PER_JOB, buf.getvalue(), compress=False)
    per_job.save()
    hours = np.arange(101) * 3600.0
    running = np.where(hours[:-1] < 50 * 3600, 1.0, 5.0)
    running[60:65] = 30.0
    series = {
        "t_s": hours[:-1].tolist(),
        "dt_s": [3600.0] * 100,
        "utilisation": (running / 40).tolist(),
        "queued": [0.0] * 100,
        "running": running.tolist(),
        "carbon_intensity_g_per_kwh": [400.0] * 100,
    }
    ts = Artefact.build(run.owner, Artefact.Kind.TIMESERIES, json.dumps(series).encode())
    ts.save()
    Run.objects.filter(pk=run.pk).update(per_job=per_job, timeseries=ts, stints=None)
    run.refresh_from_db()
    return run


def test_the_gantt_opens_on_the_busiest_window_not_the_empty_start(
    web: Client, late_run: Run
) -> None:
    # the window is as long as 150 arrivals take at the mean rate: 100 h × 150 / 1,500 = 10 h;
    # [55, 65) h holds 5 × 5 + 30 × 5 = 175 job-hours, as much as any other window, and is
    # the first to do so
    payload = get_json(web, f"/charts/runs/{late_run.pk}/gantt/")
    fig = payload["figure"]
    assert fig["layout"]["xaxis"]["title"]["text"] == "Time since trace start [h]"
    assert fig["layout"]["xaxis"]["range"] == pytest.approx([55.0, 65.0])
    assert "55–65 h (the busiest window)" in fig["layout"]["title"]["text"]
    assert "most running jobs" in payload["note"]
    # a window asked for is kept, and 'from' alone still runs ~150 arrivals on
    fig = get_json(web, f"/charts/runs/{late_run.pk}/gantt/?from_h=0&to_h=4")["figure"]
    assert fig["layout"]["xaxis"]["range"] == pytest.approx([0.0, 4.0])
    assert "busiest" not in fig["layout"]["title"]["text"]
    fig = get_json(web, f"/charts/runs/{late_run.pk}/gantt/?from_h=0")["figure"]
    assert fig["layout"]["xaxis"]["range"][0] == 0.0
