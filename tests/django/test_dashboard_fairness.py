"""Fairness and heterogeneity views (dashboard.fairviews) on the experiment and compare pages:
device-time received vs fair share and ρ by user, and allocation by accelerator type."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from django.test import Client

from dashboard.results import stint_columns
from tests.django.test_dashboard_charts import assert_units, get_json

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_cache")]

#: Two users, one 1-GPU job each at t = 0 on a 2-device cluster: both start at once, bob's
#: job has twice the work, so it ends at 2d when alice's ends at d (d: the devices' speed).
#: Active users: 2 on [0, d), 1 on [d, 2d). Fair share: alice 2/2·d = d, bob d + 2·d = 3d.
#: Received: alice d, bob 2d -> ratios 1 and 2/3, whatever d is.
TWO_USERS = """submit_time,num_gpus,work,user,vc
0,1,3600,alice,vc-a
0,1,7200,bob,vc-b
"""
ONE_NODE = {
    "name": "two V100s",
    "pools": [{"name": "v100", "accelerator": "V100", "nodes": 1, "devices_per_node": 2}],
}


@pytest.fixture
def two_users(
    owner: Any, make_workload: Any, make_cluster: Any, make_experiment: Any, tmp_path: Path
) -> Any:
    path = tmp_path / "two.csv"
    path.write_text(TWO_USERS)
    workload = make_workload(owner, path=path, name="two users")
    cluster = make_cluster(owner, spec=ONE_NODE, name="two V100s")
    return make_experiment(
        owner, policies=("fifo", "las"), workload=workload, cluster=cluster, run=True
    )


def bars_by_user(trace: dict[str, Any]) -> dict[str, float]:
    return dict(zip(trace["x"], trace["y"], strict=True))


def test_fair_share_of_two_users_is_worked_out_by_hand(web: Client, two_users: Any) -> None:
    run = two_users.runs.get(policy="fifo")
    jobs = pd.read_parquet(io.BytesIO(run.per_job.read()))
    assert jobs["first_start"].tolist() == [0.0, 0.0]  # the premise of the hand-worked numbers
    d = float(jobs["finish"].iloc[0])
    assert float(jobs["finish"].iloc[1]) == pytest.approx(2 * d)

    payload = get_json(web, f"/charts/experiments/{two_users.pk}/fairshare-user/")
    assert_units("fairshare-user", payload)
    traces = {t["name"]: t for t in payload["figure"]["data"]}
    assert set(traces) == {"fifo", "las"}
    assert bars_by_user(traces["fifo"]) == {
        "alice": pytest.approx(1.0, rel=1e-4),
        "bob": pytest.approx(2 / 3, rel=1e-4),
    }
    r = web.get(f"/charts/experiments/{two_users.pk}/fairshare-user/?format=json")
    rows = pd.read_json(io.BytesIO(r.content)).set_index(["series", "user"])
    assert rows.loc[("fifo", "alice"), "fair_s"] == pytest.approx(d)
    assert rows.loc[("fifo", "bob"), "fair_s"] == pytest.approx(3 * d)
    assert rows.loc[("fifo", "bob"), "received_s"] == pytest.approx(2 * d)


def test_the_compare_page_shows_fair_share_per_run_and_rho_per_user(
    web: Client, two_users: Any
) -> None:
    runs = list(two_users.runs.order_by("pk"))
    ids = ",".join(str(r.pk) for r in runs)
    html = web.get(f"/compare/?runs={ids}").content.decode()
    assert "/charts/compare/fairshare-user/" in html and "/charts/compare/rho-vc/" in html
    assert "/charts/compare/typealloc/" not in html  # one accelerator type: nothing to show
    payload = get_json(web, f"/charts/compare/fairshare-vc/?runs={ids}")
    assert len(payload["figure"]["data"]) == 2  # one series per run
    first = bars_by_user(payload["figure"]["data"][0])
    assert first["vc-a"] == pytest.approx(1.0, rel=1e-4)
    rho = get_json(web, f"/charts/compare/rho-user/?runs={ids}")
    box = rho["figure"]["data"][0]
    assert box["type"] == "box" and box["x"] == ["bob", "alice"]  # most device-time first
    # one job per user: every quantile is that job's ρ
    jobs = pd.read_parquet(io.BytesIO(runs[0].per_job.read())).set_index("user")
    assert box["median"][1] == pytest.approx(jobs.loc["alice", "ftf_rho"], rel=1e-3)
    assert box["q1"] == box["median"] == box["q3"]


def test_fairness_views_say_when_the_trace_names_no_users(web: Client, experiment: Any) -> None:
    for name in ("fairshare-user", "rho-vc"):
        payload = get_json(web, f"/charts/experiments/{experiment.pk}/{name}/")
        assert "names no" in payload["empty"]
    html = web.get(f"/experiments/{experiment.pk}/").content.decode()
    assert "fairshare-user" not in html  # the page leaves them out


def test_allocation_by_type_adds_up_to_the_stints(web: Client, experiment: Any) -> None:
    html = web.get(f"/experiments/{experiment.pk}/").content.decode()
    assert "/typealloc/" in html and 'data-chart-param="policy"' in html
    url = f"/charts/experiments/{experiment.pk}/typealloc/?policy=las"
    payload = get_json(web, url)
    assert_units(url, payload)
    lay = payload["figure"]["layout"]
    assert "yaxis" in lay and "yaxis2" in lay and "yaxis3" not in lay  # V100 and K80 panels
    names = {t["name"] for t in payload["figure"]["data"]}
    assert all("batch size" not in n for n in names)  # job types without their batch size
    assert "las" in payload["figure"]["layout"]["title"]["text"]

    rows = pd.read_json(io.BytesIO(web.get(url + "&format=json").content))
    run = experiment.runs.filter(policy="las").order_by("seed").first()
    st = stint_columns(run.stints_id)
    for code, name in enumerate(st.type_names):
        mine = st.type_code == code
        held = float((st.devices[mine] * (st.end[mine] - st.start[mine])).sum())
        r = rows[rows["accelerator_type"] == name]
        drawn = float((r["devices_mean"] * (r["bin_end_s"] - r["bin_start_s"])).sum())
        assert drawn == pytest.approx(held, rel=1e-9)
    # at no time more devices than the type has (4 + 4 of each in the small cluster)
    per_bin = rows.groupby(["accelerator_type", "bin_start_s"])["devices_mean"].sum()
    assert float(per_bin.max()) <= 8 + 1e-9
    assert np.isfinite(rows["devices_mean"]).all()


def test_the_compare_page_picks_the_run_of_its_allocation_chart(
    web: Client, experiment: Any
) -> None:
    runs = list(experiment.runs.order_by("pk")[:2])
    ids = ",".join(str(r.pk) for r in runs)
    html = web.get(f"/compare/?runs={ids}").content.decode()
    assert 'data-chart-param="run"' in html
    chosen = get_json(web, f"/charts/compare/typealloc/?runs={ids}&run={runs[1].pk}")
    assert f"Run #{runs[1].pk}" in chosen["note"]
    default = get_json(web, f"/charts/compare/typealloc/?runs={ids}")
    assert f"Run #{runs[0].pk}" in default["note"]


def test_fairness_views_are_the_owners_only(other_web: Client, two_users: Any) -> None:
    run = two_users.runs.first()
    assert other_web.get(f"/charts/experiments/{two_users.pk}/fairshare-user/").status_code == 404
    assert other_web.get(f"/charts/compare/rho-user/?runs={run.pk}").status_code == 404
