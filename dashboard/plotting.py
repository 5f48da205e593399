"""Pure helpers for Plotly figure specs: colours, units, layouts, downsampling, Pareto fronts.

Figures are plain dicts (``{"data": [...], "layout": {...}}``) that plotly.js draws as is;
building them by hand keeps the endpoints fast on 82k-job runs. Every numeric axis title
ends with its unit in brackets (``"Mean JCT [h]"``); categorical axes say what they list.
"""

from __future__ import annotations

import copy
import math
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

FloatArray = npt.NDArray[np.float64]

#: Colours by policy, in the experiment's policy order (Tableau 10: distinct, print-safe).
PALETTE = (
    "#4e79a7",
    "#f28e2b",
    "#e15759",
    "#76b7b2",
    "#59a14f",
    "#edc948",
    "#b07aa1",
    "#ff9da7",
    "#9c755f",
    "#bab0ac",
)
#: Line dashes by configuration (cluster × workload × load) when several share a chart.
DASHES = ("solid", "dash", "dot", "dashdot", "longdash", "longdashdot")
GRID = "#e6e9ef"
MUTED = "#8a94a6"
CARBON = "#2e7d32"

#: Largest number of points of one CDF curve and of one timeline trace.
MAX_CDF_POINTS = 2000
MAX_TIMELINE_POINTS = 5000

TIME_UNITS = (("s", 1.0), ("min", 60.0), ("h", 3600.0), ("d", 86400.0))


#: Colours of the 11th to 30th policies (registries of 25+ policies): Tableau 20's light
#: companions of :data:`PALETTE`, then darker shades of it, so no two of 30 policies share one.
MORE_COLOURS = (
    "#a0cbe8",
    "#ffbe7d",
    "#ff9d9a",
    "#86bcb6",
    "#8cd17d",
    "#f1ce63",
    "#d4a6c8",
    "#fabfd2",
    "#d7b5a6",
    "#79706e",
    "#2b5c8a",
    "#b5651d",
    "#a83232",
    "#3f8f88",
    "#2f7a2b",
    "#9c8416",
    "#7b4d72",
    "#c7607a",
    "#6b4b3a",
    "#4a4a4a",
)


def colours(labels: Iterable[str]) -> dict[str, str]:
    """A colour per label, by position (stable for a given order): distinct for the first 30
    labels, then repeating."""
    every = (*PALETTE, *MORE_COLOURS)
    return {label: every[i % len(every)] for i, label in enumerate(dict.fromkeys(labels))}


def time_unit(values: Iterable[float | None]) -> tuple[str, float]:
    """The unit (name, seconds) that shows typical ``values`` (seconds) as 1-1000."""
    arr = np.array([v for v in values if v is not None], dtype=np.float64)
    arr = np.abs(arr[np.isfinite(arr)])
    arr = arr[arr > 0]
    if len(arr) == 0:
        return "h", 3600.0
    ref = float(np.median(arr))
    name, scale = TIME_UNITS[0]
    for n, s in TIME_UNITS:
        if ref >= s:
            name, scale = n, s
    return name, scale


def finite_or_none(x: Any) -> float | None:
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) else None


def axis(title: str, unit: str | None = None, **kw: Any) -> dict[str, Any]:
    """An axis with ``title [unit]``; give ``type="category"`` (and no unit) for categories.

    Tick labels stand a few pixels off the axis line, so the first label of the x axis and the
    last of the y axis never touch in the corner they share.
    """
    text = f"{title} [{unit}]" if unit else title
    out: dict[str, Any] = {
        "title": {"text": text},
        "gridcolor": GRID,
        "zeroline": False,
        "automargin": True,
        "linecolor": "#c3cad6",
        "ticklabelstandoff": 4,
    }
    out.update(kw)
    return out


def _tick_label(mantissa: int, exponent: int) -> str:
    """``mantissa × 10^exponent`` written out in full (``0.05``, ``20``, ``10,000``), or in
    powers of ten beyond 10⁻⁴…10⁵."""
    if -4 <= exponent <= 5:
        value = mantissa * 10.0**exponent
        return f"{value:,.{max(0, -exponent)}f}"
    head = "" if mantissa == 1 else f"{mantissa}×"
    return f"{head}10<sup>{exponent}</sup>"


def log_ticks(values: Iterable[float | None]) -> dict[str, Any]:
    """Ticks of a log axis over the positive ``values``: every decade, labelled in full.

    Plotly's own log ticks label the 2s and 5s between decades with their first digit only
    ("2 5 1 2 5 10"), which reads as a different number. Here every label is the whole number
    (``0.1``, ``1``, ``10``); values spanning less than three decades also get the 2s and
    5s (``2``, ``5``, ``20``), written in full too.

    Returns
    -------
    ``{"tickmode": "array", "tickvals": [...], "ticktext": [...]}`` to merge into the axis
    (empty when no value is positive).
    """
    arr = np.array([v for v in values if v is not None], dtype=np.float64)
    arr = arr[np.isfinite(arr) & (arr > 0)]
    if len(arr) == 0:
        return {}
    lo = math.floor(math.log10(float(arr.min())) + 1e-9)
    hi = math.ceil(math.log10(float(arr.max())) - 1e-9)
    hi = max(hi, lo + 1)
    decades = math.log10(float(arr.max()) / float(arr.min()))
    steps = (1,) if decades >= 3 else (1, 2, 5)
    vals: list[float] = []
    text: list[str] = []
    for e in range(lo, hi + 1):
        for m in steps:
            if e == hi and m > 1:
                break
            vals.append(float(f"{m}e{e}"))
            text.append(_tick_label(m, e))
    return {"tickmode": "array", "tickvals": vals, "ticktext": text}


def log_axis(
    title: str, unit: str | None, values: Iterable[float | None], **kw: Any
) -> dict[str, Any]:
    """A log axis (:func:`axis`) whose ticks are :func:`log_ticks` of ``values``."""
    return axis(title, unit, type="log", **log_ticks(values), **kw)


def layout(title: str, xaxis: dict[str, Any], yaxis: dict[str, Any], **extra: Any) -> dict:
    out: dict[str, Any] = {
        "title": {"text": title, "x": 0.01, "xanchor": "left", "font": {"size": 14}},
        "xaxis": xaxis,
        "yaxis": yaxis,
        "margin": {"l": 60, "r": 20, "t": 44, "b": 50},
        # below everything, so long legends never cover the title or the plot
        "legend": {
            "orientation": "h",
            "x": 0,
            "xanchor": "left",
            "y": 0,
            "yref": "container",
            "yanchor": "bottom",
            "font": {"size": 11},
        },
        "hovermode": "closest",
        "paper_bgcolor": "#ffffff",
        "plot_bgcolor": "#ffffff",
        "font": {"family": "system-ui, -apple-system, Segoe UI, sans-serif", "size": 12},
        "height": 360,
    }
    out.update(extra)
    return out


# -- downsampling -----------------------------------------------------------------------------


def cdf_points(
    values: npt.ArrayLike, max_points: int = MAX_CDF_POINTS
) -> tuple[FloatArray, FloatArray]:
    """Empirical CDF of the finite ``values``: ``(x sorted, share of values <= x)``.

    With more than ``max_points`` values, evenly spaced ranks are kept (always the first
    and the last), so the curve keeps its shape and its extremes.
    """
    v = np.asarray(values, dtype=np.float64)
    v = np.sort(v[np.isfinite(v)])
    n = len(v)
    y = np.arange(1, n + 1, dtype=np.float64) / max(n, 1)
    if n > max_points:
        idx = np.unique(np.linspace(0, n - 1, max_points).round().astype(np.int64))
        v, y = v[idx], y[idx]
    return v, y


def bin_series(
    t: Sequence[float], dt: Sequence[float], columns: dict[str, Sequence[float]], max_points: int
) -> tuple[FloatArray, FloatArray, dict[str, FloatArray]]:
    """Merge consecutive bins of a time series into at most ``max_points`` bins.

    Values are time-weighted averages (``dt`` weights), so integrals are kept.

    Returns
    -------
    t : (m,) bin starts, dt : (m,) bin widths, columns : name -> (m,) values
    """
    t_arr = np.asarray(t, dtype=np.float64)
    dt_arr = np.asarray(dt, dtype=np.float64)
    n = len(t_arr)
    cols = {k: np.asarray(v, dtype=np.float64) for k, v in columns.items()}
    if n <= max_points:
        return t_arr, dt_arr, cols
    group = (np.arange(n) * max_points) // n
    width = np.bincount(group, weights=dt_arr, minlength=max_points)
    starts = np.flatnonzero(np.r_[True, group[1:] != group[:-1]])
    safe = np.where(width > 0, width, 1.0)
    out = {
        k: np.bincount(group, weights=np.nan_to_num(v) * dt_arr, minlength=max_points) / safe
        for k, v in cols.items()
    }
    return t_arr[starts], width, out


def pareto_mask(x: npt.ArrayLike, y: npt.ArrayLike) -> npt.NDArray[np.bool_]:
    """Points not dominated when both ``x`` and ``y`` are to be minimised.

    A point is dominated when another is no worse in both and better in one. Points with a
    missing (NaN) coordinate are never on the front.
    """
    xa, ya = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    ok = np.isfinite(xa) & np.isfinite(ya)
    le = (xa[None, :] <= xa[:, None]) & (ya[None, :] <= ya[:, None])
    lt = (xa[None, :] < xa[:, None]) | (ya[None, :] < ya[:, None])
    dominated = (le & lt & ok[None, :]).any(axis=1)
    return np.asarray(ok & ~dominated)


def mean_sd(values: Sequence[float | None]) -> tuple[float | None, float | None, int]:
    """Mean, sample standard deviation (None for one value) and count of the known values."""
    arr = np.array([v for v in values if v is not None], dtype=np.float64)
    arr = arr[np.isfinite(arr)]
    if len(arr) == 0:
        return None, None, 0
    sd = float(np.std(arr, ddof=1)) if len(arr) > 1 else None
    return float(arr.mean()), sd, len(arr)


# -- fitting a figure to its card --------------------------------------------------------------

#: Width (px) a figure is laid out for: a card of the two-column chart grid at its narrowest
#: (the grid's 520 px minimum less padding). Wider cards only leave more room.
FIT_WIDTH = 500
#: Average width (px) of a character of tick and axis-title text (12 px) and of legend text
#: (11 px) in the page's sans-serif font; generous, so estimates err towards more room.
CHAR_PX = 6.8
LEGEND_CHAR_PX = 6.2
#: Height of one row of a horizontal legend and width of an entry's line sample, px.
LEGEND_ROW_PX = 21
LEGEND_SAMPLE_PX = 50
#: A legend of more rows than this is left out (its figure says so): at most ~30 % of a card.
LEGEND_MAX_ROWS = 6
#: Series up to which a chart names each one in its legend; beyond it, a key legend.
LEGEND_MAX_ENTRIES = 8

_TAGS = re.compile(r"<[^>]+>")


def _text_len(text: str) -> int:
    """Characters of the longest line of Plotly pseudo-HTML text."""
    return max((len(_TAGS.sub("", line)) for line in re.split(r"<br\s*/?>", text)), default=0)


def wrap(text: str, max_chars: int) -> str:
    """``text`` broken into lines of at most ``max_chars`` characters (``<br>``): between
    its `` · ``-separated parts when each fits a line, else at spaces."""
    if _text_len(text) <= max_chars:
        return text
    parts = text.split(" · ")
    sep = " · " if len(parts) > 1 and all(len(p) <= max_chars for p in parts) else " "
    if sep == " ":
        parts = text.split(" ")
    lines: list[str] = []
    line = ""
    for part in parts:
        if line and len(line) + len(sep) + len(part) > max_chars:
            lines.append(line)
            line = part
        else:
            line = f"{line}{sep}{part}" if line else part
    lines.append(line)
    return "<br>".join(x.removesuffix(" ·") for x in lines)


def legend_entries(figure: dict[str, Any]) -> list[str]:
    """Names of the legend entries Plotly will draw for ``figure`` (its default rules)."""
    lay, data = figure.get("layout", {}), figure.get("data", [])
    shown = [t for t in data if t.get("showlegend", True) is not False]
    explicit = any(t.get("showlegend") is True for t in data)
    flag = lay.get("showlegend")
    if flag is False or (flag is None and len(shown) < 2 and not explicit):
        return []
    return [str(t.get("name", "")) for t in shown]


def legend_rows(names: Sequence[str], width: float = FIT_WIDTH) -> int:
    """Rows a horizontal legend of these entries takes in a figure ``width`` px wide."""
    room = width - 60.0  # the legend starts at the plot's left edge
    rows, used = 0, room
    for name in names:
        w = LEGEND_SAMPLE_PX + LEGEND_CHAR_PX * _text_len(name)
        if used + w > room:
            rows, used = rows + 1, w
        else:
            used += w
    return rows


def _category_labels(figure: dict[str, Any], ax: dict[str, Any]) -> list[str]:
    if ax.get("ticktext"):
        return [str(t) for t in ax["ticktext"]]
    seen: dict[str, None] = {}
    for t in figure.get("data", []):
        if t.get("xaxis", "x") != "x" or t.get("orientation") == "h":
            continue
        for x in t.get("x") or []:
            if isinstance(x, str):
                seen[x] = None
    return list(seen)


def _fit_x_labels(figure: dict[str, Any], width: float = FIT_WIDTH) -> float:
    """Fit long category labels of the x axis; the height (px) they take beyond one line.

    Labels wider than their share of the axis are broken into lines at spaces when every
    word fits (``ticktext``); otherwise Plotly turns them by 30° (or 90° when even that
    fails) and the figure grows by their turned height.
    """
    ax = figure.get("layout", {}).get("xaxis") or {}
    if ax.get("type") != "category" or ax.get("showticklabels") is False:
        return 0.0
    labels = _category_labels(figure, ax)
    if not labels:
        return 0.0
    slot = (width - 80.0) / len(labels)
    fits = int(0.95 * slot / CHAR_PX)
    if (
        "ticktext" not in ax
        and any(_text_len(label) > fits for label in labels)
        and all(len(word) <= fits for label in labels for word in label.split(" "))
    ):
        ax["tickmode"] = "array"
        ax["tickvals"] = labels
        ax["ticktext"] = labels = [wrap(label, fits) for label in labels]
    lines = max(len(re.split(r"<br\s*/?>", label)) for label in labels)
    w = CHAR_PX * max(_text_len(label) for label in labels)
    if w <= 0.95 * slot:
        return 15.0 * (lines - 1)
    if slot >= 30.0:
        return 0.5 * w + 13.0 * lines - 15.0
    return max(0.0, w - 15.0)


def fit_figure(figure: dict[str, Any]) -> str:
    """Fit a figure's layout (only) to what it draws, in place; a note when something is
    left out.

    - Long category labels of the x axis are broken into lines; the figure grows by its
      legend's height and by the height of such labels (or of turned ones), so its plot area
      keeps the height it was given however many series and categories it shows.
    - A legend of more than :data:`LEGEND_MAX_ROWS` rows is left out (charts of many series
      draw a key legend instead, see :func:`key_legend`), so a legend never takes more than
      about 30 % of a card.
    - Axis titles longer than the plot is high are broken into lines, so they never run past
      the plot into the chart's title or out of the card.
    """
    lay = figure.setdefault("layout", {})
    note = ""
    names = legend_entries(figure)
    rows = legend_rows(names) if names else 0
    if rows > LEGEND_MAX_ROWS:
        lay["showlegend"] = False
        rows = 0
        note = f"Legend left out ({len(names)} series): hover a curve for its name."
    base = float(lay.get("height", 360))
    margin = lay.get("margin", {})
    plot_h = base - float(margin.get("t", 44)) - float(margin.get("b", 50)) - 30.0
    for key in ("yaxis", "yaxis2"):
        title = (lay.get(key) or {}).get("title")
        if isinstance(title, dict) and title.get("text"):
            title["text"] = wrap(str(title["text"]), max(12, int((plot_h - 10.0) / CHAR_PX)))
    extra = LEGEND_ROW_PX * rows + (8 if rows else 0) + _fit_x_labels(figure)
    if extra:
        lay["height"] = round(base + extra)
    return note


def key_legend(
    traces: list[dict[str, Any]],
    colours: dict[str, str],
    dashes: dict[str, str],
) -> list[dict[str, Any]]:
    """A key legend for many series: one entry per colour and one per line dash.

    Each series keeps its trace (hidden from the legend; hover names it); legend-only traces
    say what the colours (``{label: colour}``, e.g. policies) and the dashes (``{label:
    dash}``, e.g. configurations) stand for. Clicking a colour's entry hides its series
    (``legendgroup``: the series must carry the colour's label as their group).
    """
    out = [{**t, "showlegend": False} for t in traces]
    for label, colour in colours.items():
        out.append(
            {
                "type": "scatter",
                "mode": "lines",
                "x": [None],
                "y": [None],
                "name": label,
                "legendgroup": label,
                "showlegend": True,
                "line": {"color": colour, "width": 3},
                "hoverinfo": "skip",
            }
        )
    if len(dashes) > 1:
        for label, dash in dashes.items():
            out.append(
                {
                    "type": "scatter",
                    "mode": "lines",
                    "x": [None],
                    "y": [None],
                    "name": label,
                    "legendgroup": f"dash: {label}",
                    "showlegend": True,
                    "line": {"color": MUTED, "dash": dash, "width": 2},
                    "hoverinfo": "skip",
                }
            )
    return out


# -- what an endpoint answers ------------------------------------------------------------------


@dataclass
class Chart:
    """A chart endpoint's answer: a figure or a table, or why there is nothing yet.

    ``data`` holds the full data behind the chart (not downsampled) for the CSV/JSON export.
    ``empty`` says what to do when there is nothing to draw.
    """

    title: str
    figure: dict[str, Any] | None = None
    table: dict[str, Any] | None = None
    data: pd.DataFrame | Callable[[], pd.DataFrame] = field(default_factory=pd.DataFrame)
    empty: str = ""
    note: str = ""

    def export_frame(self) -> pd.DataFrame:
        """The full data behind the chart (built now if it was deferred)."""
        return self.data() if callable(self.data) else self.data

    def payload(self) -> dict[str, Any]:
        out: dict[str, Any] = {"title": self.title}
        if self.empty:
            out["empty"] = self.empty
        note = self.note
        if self.figure is not None and not self.empty:
            figure = {**self.figure, "layout": copy.deepcopy(self.figure.get("layout", {}))}
            left_out = fit_figure(figure)
            note = f"{note} {left_out}".strip()
            out["figure"] = figure
        if self.table is not None and not self.empty:
            out["table"] = self.table
        if note:
            out["note"] = note
        return out


def empty(title: str, message: str) -> Chart:
    return Chart(title=title, empty=message)


def rounded(values: Iterable[float | None], digits: int = 6) -> list[float | None]:
    """Finite values to ``digits`` significant digits (smaller JSON), others ``None``."""
    out: list[float | None] = []
    for v in values:
        if v is None or not math.isfinite(v):
            out.append(None)
        elif v == 0:
            out.append(0.0)
        else:
            out.append(float(f"{v:.{digits}g}"))
    return out


def rounded_array(values: FloatArray, digits: int = 6) -> list[float | None]:
    """Vectorised :func:`rounded` for large arrays."""
    a = np.asarray(values, dtype=np.float64)
    finite = np.isfinite(a)
    mag = np.floor(np.log10(np.abs(np.where(finite & (a != 0), a, 1.0))))
    factor = 10.0 ** (digits - 1 - mag)
    r = np.round(a * factor) / factor
    return [float(v) if f else None for v, f in zip(r.tolist(), finite.tolist(), strict=True)]
