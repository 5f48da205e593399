"""Breakdowns of a run's results: utilisation per accelerator type (run, experiment and
compare pages) and JCT and share of device-time per user and per virtual cluster (run and
experiment pages, only for traces that name them)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from django.test import Client

from dashboard.figures import group_stats
from tests.django.test_dashboard_charts import get_json

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_cache")]

#: Eight jobs of three users (one job names none) in two virtual clusters.
TRACE = """submit_time,num_gpus,work,user,vc
0,1,3600,alice,vc-a
0,2,7200,alice,vc-a
30,1,1800,bob,vc-b
60,4,3600,bob,vc-b
90,1,600,carol,vc-a
120,1,900,,vc-b
150,2,1200,alice,vc-a
180,1,300,bob,vc-b
"""


@pytest.fixture
def named(owner: Any, make_workload: Any, make_experiment: Any, tmp_path: Path) -> Any:
    """A finished experiment (fifo and las, seed 0) of the eight-job trace above."""
    path = tmp_path / "named.csv"
    path.write_text(TRACE)
    workload = make_workload(owner, path=path, name="named")
    assert workload.summary["users"] == 3 and workload.summary["vcs"] == 2
    return make_experiment(owner, policies=("fifo", "las"), workload=workload, run=True)


def page_rows(html: str) -> dict[str, str]:
    """Summary table rows of a page: label -> first value cell."""
    rows = re.findall(
        r"<tr><th>(.*?)(?: <span class=\"unit\">.*?</span>)?</th>\s*<td[^>]*>(.*?)</td>", html
    )
    return {label: value.strip() for label, value in rows}


# -- per accelerator type ------------------------------------------------------------------------


def type_values(summary: dict[str, Any]) -> dict[str, float]:
    return {
        k.removeprefix("utilisation_"): v
        for k, v in summary.items()
        if k.startswith("utilisation_") and v is not None
    }


def test_the_run_page_lists_the_utilisation_of_each_accelerator_type(
    web: Client, experiment: Any
) -> None:
    run = experiment.runs.first()
    per_type = type_values(run.summary)
    assert set(per_type) == {"v100_sxm2_16gb", "k80"}  # the small cluster: V100s and K80s
    rows = page_rows(web.get(f"/runs/{run.pk}/").content.decode())
    assert rows["Utilisation of V100-SXM2-16GB"] == f"{100 * per_type['v100_sxm2_16gb']:.3f}"
    assert rows["Utilisation of K80"] == f"{100 * per_type['k80']:.3f}"
    labels = list(rows)
    assert labels.index("Utilisation") + 1 == labels.index("Utilisation of V100-SXM2-16GB")


def test_the_compare_page_lists_the_utilisation_of_each_type_for_every_run(
    web: Client, experiment: Any
) -> None:
    runs = list(experiment.runs.order_by("pk")[:3])
    html = web.get(f"/compare/?runs={','.join(str(r.pk) for r in runs)}").content.decode()
    row = re.search(r"<th>Utilisation of K80 <span.*?</th>(.*?)</tr>", html, re.S)
    assert row is not None
    cells = re.findall(r'<td class="num">(.*?)</td>', row.group(1))
    assert cells == [f"{100 * type_values(r.summary)['k80']:.3f}" for r in runs]


def test_the_experiment_charts_the_utilisation_of_each_type_by_policy(
    web: Client, experiment: Any
) -> None:
    run = experiment.runs.get(policy="las", load_factor=2.0, seed=0)
    key = f"{run.cluster_id}:{run.workload_id}:2"
    payload = get_json(web, f"/charts/experiments/{experiment.pk}/types/?config={key}")
    fig = payload["figure"]
    assert [t["name"] for t in fig["data"]] == ["fifo", "las"]
    assert "load ×2" in fig["layout"]["title"]["text"]
    las = fig["data"][1]
    assert las["x"] == ["V100-SXM2-16GB", "K80"]
    seeds = [type_values(r.summary) for r in experiment.runs.filter(policy="las", load_factor=2)]
    assert len(seeds) == 2
    for x, y, k in zip(las["x"], las["y"], ("v100_sxm2_16gb", "k80"), strict=True):
        assert y == pytest.approx(100 * np.mean([s[k] for s in seeds]), rel=1e-5), x
    assert fig["layout"]["yaxis"]["title"]["text"] == "Utilisation [%]"


# -- per user and per virtual cluster ------------------------------------------------------------


def test_group_stats_pool_the_jobs_of_each_group_and_the_rest() -> None:
    frame = pd.DataFrame(
        {
            "user": ["alice", "alice", "alice", "bob", "bob", "", "carol"],
            "jct": [10.0, 20.0, np.nan, 30.0, 50.0, 5.0, 1.0],
            "queue_delay": [0.0, 4.0, 2.0, 6.0, 0.0, 1.0, 3.0],
            "attained_gpu_s": [100.0, 200.0, 50.0, 150.0, 0.0, 500.0, 0.0],
        }
    )
    stats = group_stats(frame, "user", ["alice", "(none)"]).set_index("group")
    assert list(stats.index) == ["alice", "(none)", "2 others"]
    assert stats["jobs"].tolist() == [3, 1, 3]
    assert stats["completed"].tolist() == [2, 1, 3]
    assert stats["jct_mean"].tolist() == pytest.approx([15.0, 5.0, 27.0])
    # numpy's linear p95: alice 10 + 0.95 × 10; the others (1, 30, 50) 30 + 0.9 × 20
    assert stats["jct_p95"].tolist() == pytest.approx([19.5, 5.0, 48.0])
    assert stats["queue_delay_mean"].tolist() == pytest.approx([2.0, 1.0, 3.0])
    assert stats["device_share"].tolist() == pytest.approx([0.35, 0.5, 0.15])


def test_the_run_page_breaks_jct_and_device_time_down_by_user_and_vc(
    web: Client, named: Any
) -> None:
    run = named.runs.get(policy="fifo")
    html = web.get(f"/runs/{run.pk}/").content.decode()
    assert f"/charts/runs/{run.pk}/groups-user/" in html
    assert f"/charts/runs/{run.pk}/groups-vc/" in html
    users = get_json(web, f"/charts/runs/{run.pk}/groups-user/")["table"]
    rows = {r["name"]: r for r in users["rows"]}
    assert {n: r["jobs"] for n, r in rows.items()} == {
        "alice": 3,
        "bob": 3,
        "carol": 1,
        "(none)": 1,
    }
    assert all(r["completed"] == r["jobs"] for r in rows.values())
    # shares are shown to 4 significant digits
    assert sum(r["device_share"] for r in rows.values()) == pytest.approx(100.0, abs=0.05)
    # alice's jobs need the most GPU-time (reference GPU-s: alice 20,400, bob 16,500)
    assert users["rows"][0]["name"] == "alice"
    vcs = get_json(web, f"/charts/runs/{run.pk}/groups-vc/")["table"]
    assert sorted((r["name"], r["jobs"]) for r in vcs["rows"]) == [("vc-a", 4), ("vc-b", 4)]
    export = web.get(f"/charts/runs/{run.pk}/groups-vc/?format=csv").content.decode()
    assert export.splitlines()[0].startswith("vc,jobs,completed,jct_mean,jct_p95")


def test_the_experiment_compares_policies_by_vc(web: Client, named: Any) -> None:
    html = web.get(f"/experiments/{named.pk}/").content.decode()
    assert "By user and virtual cluster" in html
    fig = get_json(web, f"/charts/experiments/{named.pk}/groups-vc/")["figure"]
    assert [t["name"] for t in fig["data"]] == ["fifo", "las"]
    for trace in fig["data"]:
        assert sorted(trace["x"]) == ["vc-a", "vc-b"] and all(y > 0 for y in trace["y"])


def test_traces_without_users_or_vcs_say_there_is_nothing_to_break_down(
    web: Client, experiment: Any
) -> None:
    run = experiment.runs.first()
    for url in (
        f"/charts/runs/{run.pk}/groups-user/",
        f"/charts/experiments/{experiment.pk}/groups-vc/",
    ):
        assert "names no" in get_json(web, url)["empty"]
    html = web.get(f"/experiments/{experiment.pk}/").content.decode()
    assert "By user and virtual cluster" not in html
