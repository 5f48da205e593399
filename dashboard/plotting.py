"""Pure helpers for Plotly figure specs: colours, units, layouts, downsampling, Pareto fronts.

Figures are plain dicts (``{"data": [...], "layout": {...}}``) that plotly.js draws as is;
building them by hand keeps the endpoints fast on 82k-job runs. Every numeric axis title
ends with its unit in brackets (``"Mean JCT [h]"``); categorical axes say what they list.
"""

from __future__ import annotations

import math
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


def colours(labels: Iterable[str]) -> dict[str, str]:
    """A colour per label, by position (stable for a given order)."""
    return {label: PALETTE[i % len(PALETTE)] for i, label in enumerate(dict.fromkeys(labels))}


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
    """An axis with ``title [unit]``; give ``type="category"`` (and no unit) for categories."""
    text = f"{title} [{unit}]" if unit else title
    out: dict[str, Any] = {
        "title": {"text": text},
        "gridcolor": GRID,
        "zeroline": False,
        "automargin": True,
        "linecolor": "#c3cad6",
    }
    out.update(kw)
    return out


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
        if self.figure is not None and not self.empty:
            out["figure"] = self.figure
        if self.table is not None and not self.empty:
            out["table"] = self.table
        if self.note:
            out["note"] = self.note
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
