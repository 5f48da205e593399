"""How figures fit their cards: log-axis ticks, legends of many series, long labels and titles.

The browser tests (``tests/browser/test_chart_layout.py``) measure the drawn result; these
check the rules that produce it on the figure specs the endpoints answer.
"""

from __future__ import annotations

import math
import re
from typing import Any

import pytest
from django.test import Client

from dashboard.plotting import (
    LEGEND_MAX_ENTRIES,
    LEGEND_MAX_ROWS,
    Chart,
    axis,
    layout,
    legend_entries,
    log_ticks,
    wrap,
)
from tests.django.test_dashboard_charts import all_urls, get_json

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_cache")]


def tick_value(text: str) -> float:
    """The number a tick label spells: ``1,000``, ``0.05`` or ``2×10<sup>-5</sup>``."""
    m = re.fullmatch(r"(?:(\d+)×)?10<sup>(-?\d+)</sup>", text)
    if m:
        return float(m.group(1) or 1) * 10.0 ** int(m.group(2))
    return float(text.replace(",", ""))


# -- log axes ------------------------------------------------------------------------------------


def test_a_log_axis_of_under_three_decades_labels_its_1s_2s_and_5s_in_full() -> None:
    ticks = log_ticks([0.7, 3.0, 40.0])
    assert ticks["tickmode"] == "array"
    assert ticks["ticktext"] == ["0.1", "0.2", "0.5", "1", "2", "5", "10", "20", "50", "100"]
    assert ticks["tickvals"] == [0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0]


def test_a_log_axis_of_many_decades_labels_each_decade_only() -> None:
    ticks = log_ticks([3.0, None, 4e6, -1.0, 0.0])  # non-positive and missing values ignored
    assert ticks["ticktext"] == [
        "1",
        "10",
        "100",
        "1,000",
        "10,000",
        "100,000",
        "10<sup>6</sup>",
        "10<sup>7</sup>",
    ]
    tiny = log_ticks([2e-6, 3e-5])
    assert tiny["ticktext"][:3] == ["10<sup>-6</sup>", "2×10<sup>-6</sup>", "5×10<sup>-6</sup>"]
    assert [tick_value(t) for t in tiny["ticktext"]] == pytest.approx(tiny["tickvals"])
    assert log_ticks([0.0, None]) == {}


def test_every_log_axis_of_the_dashboards_labels_each_decade_in_full(
    web: Client, experiment: Any
) -> None:
    seen = 0
    for url in all_urls(experiment):
        fig = get_json(web, url).get("figure")
        if not fig:
            continue
        for name, ax in fig["layout"].items():
            if not (name.startswith(("xaxis", "yaxis")) and ax.get("type") == "log"):
                continue
            seen += 1
            letter = name[0]
            values = [
                v
                for t in fig["data"]
                if t.get(f"{letter}axis", letter) == letter + name[5:]
                for v in t.get(letter) or []
                if isinstance(v, int | float) and v > 0
            ]
            assert ax["tickmode"] == "array", (url, name)
            labelled = [tick_value(t) for t in ax["ticktext"]]
            assert labelled == pytest.approx(ax["tickvals"], rel=1e-9), (url, name)
            for k in range(math.ceil(math.log10(min(values))), int(math.log10(max(values))) + 1):
                assert any(math.isclose(v, 10.0**k) for v in labelled), (url, name, k)
    assert seen >= 3  # the JCT CDFs, finish-time fairness and the job durations


# -- legends ---------------------------------------------------------------------------------------


def test_many_runs_share_a_key_legend_of_policies_and_configurations(
    web: Client, owner: Any, experiment: Any, make_experiment: Any, finish: Any
) -> None:
    first = experiment.runs.first()
    more = finish(
        make_experiment(
            owner,
            policies=("srtf",),
            cluster=first.cluster,
            workload=first.workload,
            name="srtf",
        )
    )
    runs = [*experiment.runs.order_by("pk"), *more.runs.all()]
    assert len(runs) == 9 > LEGEND_MAX_ENTRIES
    ids = ",".join(str(r.pk) for r in runs)
    for name in ("cdf", "timeline-utilisation", "timeline-queue"):
        payload = get_json(web, f"/charts/compare/{name}/?runs={ids}")
        fig = payload["figure"]
        shown = legend_entries(fig)
        # fifo, las, srtf by colour; load ×1 and ×2 by dash (seeds share a style)
        assert shown == ["fifo", "las", "srtf", "load ×1", "load ×2"], name
        series = [t for t in fig["data"] if t.get("showlegend") is False]
        assert len(series) == 9  # every run is still drawn, named on hover
        dashes = [{t["line"]["dash"] for t in series if f" ×{x} · " in t["name"]} for x in (1, 2)]
        assert len(dashes[0]) == len(dashes[1]) == 1 and dashes[0] != dashes[1]
        assert "hover a curve" in payload["note"]
    # a few series keep their own names
    few = ",".join(str(r.pk) for r in runs[:3])
    fig = get_json(web, f"/charts/compare/cdf/?runs={few}")["figure"]
    assert [n.split(" ")[0] for n in legend_entries(fig)] == [f"#{r.pk}" for r in runs[:3]]


def test_a_figure_grows_by_its_legend_so_its_plot_keeps_its_height() -> None:
    def chart(n: int, name: str) -> dict[str, Any]:
        lay = layout("t", axis("x", "s"), axis("y", "s"))
        data = [{"type": "scatter", "name": f"{name} {i}", "x": [1], "y": [1]} for i in range(n)]
        return Chart(title="t", figure={"data": data, "layout": lay}).payload()

    one = chart(1, "a")["figure"]["layout"]
    assert one["height"] == 360  # a single series has no legend
    short = chart(4, "a")["figure"]["layout"]
    assert short["height"] == 360 + 21 + 8  # one row of four short entries
    long = chart(4, "a rather long name of a series that fills a row")["figure"]["layout"]
    assert long["height"] == 360 + 4 * 21 + 8  # one entry a row
    payload = chart(LEGEND_MAX_ROWS + 1, "a rather long name of a series that fills a row")
    assert payload["figure"]["layout"]["showlegend"] is False
    assert payload["figure"]["layout"]["height"] == 360
    assert "Legend left out (7 series)" in payload["note"]


def test_long_axis_titles_and_category_labels_are_broken_into_lines() -> None:
    assert (
        wrap("Mean finish-time fairness ρ [ratio]", 30) == "Mean finish-time fairness ρ<br>[ratio]"
    )
    assert (
        wrap("heterogeneous California · load ×1", 14) == "heterogeneous<br>California<br>load ×1"
    )
    assert wrap("big · load ×2", 10) == "big<br>load ×2"
    lay = layout(
        "Cost-normalised throughput",
        axis("Configuration", type="category"),
        axis("Cost-normalised throughput", "reference GPU-h / USD"),
    )
    labels = ["small · load ×1", "heterogeneous California · load ×2"]
    data = [{"type": "bar", "name": p, "x": labels, "y": [1, 2]} for p in ("fifo", "las")]
    fig = Chart(title="t", figure={"data": data, "layout": lay}).payload()["figure"]
    assert fig["layout"]["yaxis"]["title"]["text"] == (
        "Cost-normalised throughput<br>[reference GPU-h / USD]"
    )
    x = fig["layout"]["xaxis"]
    assert x["tickvals"] == labels  # the categories stay as they are; only their labels wrap
    assert x["ticktext"] == ["small · load ×1", "heterogeneous California<br>load ×2"]
    assert fig["layout"]["height"] == 360 + 21 + 8 + 15  # legend row, one more label line
    assert lay["height"] == 360  # the chart's own layout is left as built
