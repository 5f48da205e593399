"""CSV downloads never hand a spreadsheet a formula (CSV injection, OWASP).

A trace whose job ids and users look like formulas (``=1+2``, ``@evil``, ``+SUM(1)``, ...)
is parsed, simulated and downloaded through every CSV export: the API's job and stint tables
and every dashboard chart's data. Text cells that start with ``= + - @``, a tab or a carriage
return come back prefixed with ``'``; numbers, negative ones included, stay numbers.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from django.test import Client

from planner.exports import FORMULA_TRIGGERS, csv_text, neutralise
from tests.django.test_dashboard_charts import all_urls

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_cache")]

TRACE = """submit_time,num_gpus,work,job_id,user
0,1,100,=1+2,@evil
10,2,200,+SUM(1),-1+1
20,1,50,plain,=cmd|' /C calc'!A0
30,1,60,-7,bob
"""


@pytest.fixture
def injected(owner: Any, tmp_path: Path, make_cluster: Any, make_workload: Any) -> Any:
    """A finished fifo/las experiment on the trace above, on a cluster named like a formula
    (simulated here: the ``finish`` fixture's outcomes are the Gavel demo trace's)."""
    path = tmp_path / "evil.csv"
    path.write_text(TRACE)
    workload = make_workload(owner, path=path, name="=evil workload")
    assert workload.status == "ready", workload.error
    from planner import services

    exp = services.create_experiment(
        owner,
        name="@grid",
        clusters=[make_cluster(owner, name="-cluster")],
        workloads=[workload],
        policies=[{"name": "fifo", "params": {}}, {"name": "las", "params": {}}],
        enqueue=False,
    )
    from planner import runner

    for pk in exp.runs.values_list("pk", flat=True):
        assert runner.execute_run(pk, worker="test") == "succeeded"
    exp.refresh_from_db()
    return exp


def cells(text: str) -> list[str]:
    return [cell for row in csv.reader(io.StringIO(text)) for cell in row]


def is_number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True


def assert_no_formula(where: str, text: str) -> None:
    for cell in cells(text):
        if cell.startswith(FORMULA_TRIGGERS):
            assert is_number(cell), f"{where}: {cell!r} would run as a formula"


def test_the_jobs_and_stints_tables_neutralise_formulas(api: Any, injected: Any) -> None:
    for run in injected.runs.all():
        for table in ("jobs", "stints"):
            r = api.get(f"/api/v1/runs/{run.pk}/{table}/")
            assert r.status_code == 200, r.content
            text = r.content.decode()
            assert_no_formula(f"run {run.pk} {table}", text)
            if table == "jobs":
                got = set(cells(text))
                assert {"'=1+2", "'+SUM(1)", "'@evil", "'-1+1", "'=cmd|' /C calc'!A0"} <= got
                assert {"'-7", "plain", "bob"} <= got
        # the Parquet download is the stored table, as written
        r = api.get(f"/api/v1/runs/{run.pk}/jobs/", {"as": "parquet"})
        frame = pd.read_parquet(io.BytesIO(r.content))
        assert "=1+2" in set(frame["job_id"].astype(str))


def test_every_chart_csv_neutralises_formulas(web: Client, injected: Any) -> None:
    seen: set[str] = set()
    for url in all_urls(injected):
        sep = "&" if "?" in url else "?"
        r = web.get(f"{url}{sep}format=csv")
        assert r.status_code == 200, url
        text = r.content.decode()
        assert_no_formula(url, text)
        seen |= set(cells(text))
    # the charts that list jobs or users show them quoted
    assert {"'=1+2", "'@evil"} <= seen


def test_numbers_stay_numbers_and_only_text_is_prefixed() -> None:
    frame = pd.DataFrame(
        {
            "text": ["=1", "-2", None, "ok", "\tx", "\rx", "a\r=b"],
            "number": [-1.5, 2.0, np.nan, 3.0, -0.0, -1e300, 7.0],
            "integer": [-1, -2, 3, 4, 5, 6, -7],
            "category": pd.Categorical(["@x", "y", "@x", "y", "y", "y", "y"]),
            "mixed": [1, "-x", 2.5, None, -3, "+", "z"],
            "=header": [True, False, True, False, True, False, True],
        }
    )
    rows = list(csv.reader(io.StringIO(csv_text(frame))))
    assert rows[0] == ["text", "number", "integer", "category", "mixed", "'=header"]
    by_column = list(zip(*rows[1:], strict=True))
    # a carriage return inside a cell is quoted: "=b" does not start a row
    assert by_column[0] == ("'=1", "'-2", "", "ok", "'\tx", "'\rx", "a\r=b")
    assert by_column[1] == ("-1.5", "2.0", "", "3.0", "-0.0", "-1e+300", "7.0")
    assert by_column[2] == ("-1", "-2", "3", "4", "5", "6", "-7")
    assert by_column[3] == ("'@x", "y", "'@x", "y", "y", "y", "y")
    assert by_column[4] == ("1", "'-x", "2.5", "", "-3", "'+", "z")
    # the frame itself is not changed
    assert frame["text"].iloc[0] == "=1" and frame.columns[-1] == "=header"


def test_neutralise_leaves_anything_but_text_alone() -> None:
    assert neutralise("=A1") == "'=A1"
    assert neutralise("A1") == "A1"
    assert neutralise(-3) == -3
    assert neutralise(None) is None
    assert csv_text(pd.DataFrame()) == pd.DataFrame().to_csv(index=False, lineterminator="\r\n")
