"""Fairness and heterogeneity charts: per-user fair share, ρ by user, allocation by type.

Three views of any policy's runs (generic: they read only the stored per-job table and
device stints):

- **fair share by user/VC**: device-time each user received over its fair share
  (:func:`clustersim.fairness.user_shares`; ``docs/metrics.md`` defines it);
- **ρ by user/VC**: the spread of the jobs' finish-time fairness ρ within each user;
- **allocation by accelerator type over time**: which job types (or gang-size classes when
  the trace has no job types) held which accelerator generation, one stacked area per class
  and one panel per type.

Users are the top ``N`` by received device-time in the first series, then one ``N others``
entry, so a trace of thousands of users still draws a readable chart.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from clustersim.fairness import binned_devices, job_class, size_class, user_shares
from clustersim.result import DROP_AUX, DROP_NO_FIT, DROP_NO_TYPE, DROP_REJECTED, DROP_TOO_LARGE
from dashboard.figures import GROUPS, Series, _no_groups
from dashboard.plotting import (
    LEGEND_MAX_ENTRIES,
    MUTED,
    PALETTE,
    Chart,
    axis,
    empty,
    key_legend,
    layout,
    log_axis,
    rounded,
    rounded_array,
    time_unit,
)
from dashboard.results import parquet_columns, stint_columns
from planner.models import Cluster, Run

_NOT_ADMITTED = (DROP_TOO_LARGE, DROP_NO_TYPE, DROP_NO_FIT, DROP_AUX, DROP_REJECTED)
_SHARE_COLUMNS = ("submit", "finish", "attained_gpu_s", "drop_reason", "ftf_rho")
#: Panels of the allocation chart get this much height each (px).
PANEL_PX = 190
#: Most job classes drawn (the rest are one "others" area).
MAX_CLASSES = 8
#: Bins of the allocation chart's time axis.
ALLOCATION_BINS = 240


def _capacities(runs: Sequence[Run]) -> dict[int, int]:
    ids = {r.cluster_id for r in runs}
    return dict(Cluster.objects.filter(pk__in=ids).values_list("pk", "total_devices"))


def _end_of(run: Run, finish: np.ndarray) -> float:
    """End of the run's accounting window: where an unfinished job's time in the system ends."""
    s = run.summary or {}
    start, span = s.get("window_start_s"), s.get("window_s")
    if start is not None and span is not None:
        return float(start) + float(span)
    done = finish[np.isfinite(finish)]
    return float(done.max()) if len(done) else 0.0


def _labels(frame: pd.DataFrame, column: str) -> np.ndarray:
    values = frame[column].astype(str).to_numpy()
    return np.where(values == "", "(none)", values)


def _shares_frame(run: Run, column: str, capacity: int) -> pd.DataFrame:
    """Per group of one run: ``group, jobs, received_s, fair_s, active_s``."""
    frame = parquet_columns(run.per_job_id, (column, *_SHARE_COLUMNS))
    keep = ~frame["drop_reason"].astype(str).isin(_NOT_ADMITTED).to_numpy()
    sub = frame[keep]
    finish = sub["finish"].to_numpy(dtype=np.float64)
    end = np.where(np.isfinite(finish), finish, _end_of(run, finish))
    shares = user_shares(
        _labels(sub, column),
        sub["submit"].to_numpy(dtype=np.float64),
        end,
        sub["attained_gpu_s"].to_numpy(dtype=np.float64),
        capacity,
    )
    return pd.DataFrame(
        {
            "group": shares.users,
            "jobs": shares.jobs,
            "received_s": shares.received,
            "fair_s": shares.fair,
            "active_s": shares.active_s,
        }
    )


def _has_groups(runs: Sequence[Run], column: str) -> bool:
    for r in runs:
        values = parquet_columns(r.per_job_id, (column,))[column].astype(str)
        if len(values) and (values != "").any():
            return True
    return False


def _top(frames: Sequence[pd.DataFrame], top: int) -> list[str]:
    """The ``top`` groups with the most received device-time over these frames."""
    total = pd.concat(frames, ignore_index=True).groupby("group", sort=False)["received_s"].sum()
    ranked = total.sort_values(ascending=False, kind="stable")
    n = top + 1 if len(ranked) == top + 1 else top  # "1 others" would only hide one name
    return [str(x) for x in ranked.index[:n]]


def _fold(frame: pd.DataFrame, keep: Sequence[str], value_cols: Sequence[str]) -> pd.DataFrame:
    """Rows of ``keep`` (in that order, missing ones as zeros), then one ``N others`` row."""
    slot = frame.set_index("group")
    sums = {c: slot[c].to_dict() for c in value_cols}
    rows = [{"group": g, **{c: float(sums[c].get(g, 0.0)) for c in value_cols}} for g in keep]
    rest = slot[~slot.index.isin(keep)]
    if len(rest):
        rows.append(
            {"group": f"{len(rest)} others", **{c: float(rest[c].sum()) for c in value_cols}}
        )
    return pd.DataFrame(rows)


def fair_share(series: Sequence[Series], column: str, subtitle: str, top: int = 10) -> Chart:
    """Received device-time over fair share of each user (or VC), one bar per series."""
    what = GROUPS[column]
    title = f"Device-time received vs fair share, by {what}"
    runs = [r for s in series for r in s.runs]
    if not runs:
        return empty(title, "None of these runs has results yet: pick succeeded runs.")
    if not _has_groups(runs, column):
        return _no_groups(title, column)
    cap = _capacities(runs)
    per_series: dict[str, pd.DataFrame] = {}
    for s in series:  # seeds pooled: sums of received and of fair share over the runs
        parts = [_shares_frame(r, column, cap.get(r.cluster_id, 0)) for r in s.runs]
        per_series[s.label] = (
            pd.concat(parts, ignore_index=True).groupby("group", sort=False).sum().reset_index()
        )
    keep = _top(list(per_series.values())[:1], _top_n(series, top))
    values = ("jobs", "received_s", "fair_s")
    folded = {k: _fold(f, keep, values) for k, f in per_series.items()}
    unit, scale = time_unit([v for f in folded.values() for v in (f["fair_s"] / 3600.0).tolist()])
    traces = []
    for s in series:
        f = folded[s.label]
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(f["fair_s"] > 0, f["received_s"] / f["fair_s"], np.nan)
        traces.append(
            {
                "type": "bar",
                "name": s.label,
                "legendgroup": s.group or s.label,
                "x": f["group"].astype(str).tolist(),
                "y": rounded_array(ratio, 4),
                "customdata": [
                    [a, b, int(c)]
                    for a, b, c in zip(
                        rounded((f["received_s"] / 3600.0 / scale).tolist(), 4),
                        rounded((f["fair_s"] / 3600.0 / scale).tolist(), 4),
                        f["jobs"].tolist(),
                        strict=True,
                    )
                ],
                "marker": {"color": s.colour},
                "hovertemplate": f"{s.label}<br>%{{x}} (%{{customdata[2]}} jobs): received "
                f"%{{customdata[0]:.3g}} of a fair %{{customdata[1]:.3g}} device-{unit}"
                "<br>ratio %{y:.3g}<extra></extra>",
            }
        )
    traces, keyed = _legend(traces, series)
    lay = layout(
        f"{title} — {subtitle}" if subtitle else title,
        axis(what.capitalize(), type="category"),
        axis("Received ÷ fair share", "ratio", rangemode="tozero"),
        barmode="group",
        shapes=[_one_line()],
    )

    def export() -> pd.DataFrame:
        parts = [f.assign(series=k) for k, f in per_series.items()]
        out = pd.concat(parts, ignore_index=True).rename(columns={"group": column})
        with np.errstate(divide="ignore", invalid="ignore"):
            out["ratio"] = np.where(out["fair_s"] > 0, out["received_s"] / out["fair_s"], np.nan)
        return out

    n_groups = len(per_series[series[0].label])
    which = (
        f"The {len(keep)} {what}s that received the most device-time, then the others"
        if n_groups > len(keep)
        else f"All {n_groups} {what}s"
    )
    return Chart(
        title=title,
        figure={"data": traces, "layout": lay},
        data=export,
        note=f"{which}. Fair share: an equal split of all devices among the {what}s with a job "
        "in the system, summed over time (not capped by demand, so small users sit below 1 "
        "under any policy; see docs/metrics.md). Seeds pooled; the export lists every "
        f"{what} (seconds). {keyed}".strip(),
    )


def _legend(traces: list[dict[str, Any]], series: Sequence[Series]) -> tuple[list, str]:
    """The traces, or with a key legend of the policies' colours when there are too many
    series to name (the compare page's runs: several runs share a policy's colour)."""
    if len(series) <= LEGEND_MAX_ENTRIES:
        return traces, ""
    colour = {s.group or s.label: s.colour for s in series}
    return key_legend(traces, colour, {}), (
        f"{len(series)} series (colour: policy); hover a bar for its run."
    )


def _top_n(series: Sequence[Series], top: int) -> int:
    """Fewer groups when many series share the chart, so each keeps a readable width."""
    return min(top, 6) if len(series) > LEGEND_MAX_ENTRIES else top


def _one_line() -> dict[str, Any]:
    return {
        "type": "line",
        "x0": 0,
        "x1": 1,
        "xref": "paper",
        "y0": 1,
        "y1": 1,
        "yref": "y",
        "line": {"color": "#e15759", "dash": "dash", "width": 1},
    }


def rho_by_group(series: Sequence[Series], column: str, subtitle: str, top: int = 10) -> Chart:
    """Finish-time fairness ρ of each user's (or VC's) jobs: a box per user and series."""
    what = GROUPS[column]
    title = f"Finish-time fairness ρ by {what}"
    runs = [r for s in series for r in s.runs]
    if not runs:
        return empty(title, "None of these runs has results yet: pick succeeded runs.")
    if not _has_groups(runs, column):
        return _no_groups(title, column)
    frames = {
        s.label: pd.concat(
            [parquet_columns(r.per_job_id, (column, "ftf_rho", "attained_gpu_s")) for r in s.runs],
            ignore_index=True,
        )
        for s in series
    }
    first = next(iter(frames.values()))
    ranked = pd.DataFrame(
        {"group": _labels(first, column), "received_s": first["attained_gpu_s"].fillna(0.0)}
    )
    keep = _top([ranked], _top_n(series, top))
    rows = []
    traces = []
    lo, hi = np.inf, 0.0
    for s in series:
        f = frames[s.label]
        labels = _labels(f, column)
        n_rest = len(set(labels.tolist()) - set(keep))
        rest = f"{n_rest} others"
        group = np.where(np.isin(labels, keep), labels, rest)
        rho = f["ftf_rho"].to_numpy(dtype=np.float64)
        ok = np.isfinite(rho) & (rho > 0)
        stats = []
        for g in [*keep, *([rest] if n_rest else [])]:
            v = rho[ok & (group == g)]
            if len(v) == 0:
                continue
            p5, q1, med, q3, p95 = np.percentile(v, [5, 25, 50, 75, 95])
            stats.append((g, len(v), p5, q1, med, q3, p95, float(v.mean())))
            lo, hi = min(lo, float(v.min())), max(hi, float(v.max()))
        rows += [
            {
                "series": s.label,
                column: g,
                "jobs": n,
                "p5": a,
                "p25": b,
                "p50": c,
                "p75": d,
                "p95": e,
                "mean": m,
                "share_le_1": float(np.mean(rho[ok & (group == g)] <= 1 + 1e-9)),
            }
            for g, n, a, b, c, d, e, m in stats
        ]
        if not stats:
            continue
        cols = list(zip(*stats, strict=True))
        traces.append(
            {
                "type": "box",
                "name": s.label,
                "legendgroup": s.group or s.label,
                "x": list(cols[0]),
                "lowerfence": rounded(cols[2], 4),
                "q1": rounded(cols[3], 4),
                "median": rounded(cols[4], 4),
                "q3": rounded(cols[5], 4),
                "upperfence": rounded(cols[6], 4),
                "mean": rounded(cols[7], 4),
                "marker": {"color": s.colour},
                "line": {"width": 1},
                "boxpoints": False,
                "hoverinfo": "x+y+name",
            }
        )
    if not traces:
        return empty(title, "No job completed, so no job has a finish-time fairness value.")
    traces, keyed = _legend(traces, series)
    lay = layout(
        f"{title} — {subtitle}" if subtitle else title,
        axis(what.capitalize(), type="category"),
        log_axis("Finish-time fairness ρ", "JCT / isolated JCT", [lo, hi]),
        boxmode="group",
        shapes=[_one_line()],
    )
    return Chart(
        title=title,
        figure={"data": traces, "layout": lay},
        data=pd.DataFrame(rows),
        note="Boxes: quartiles and median of the completed jobs' ρ; whiskers: 5th and 95th "
        "percentiles; dashed line: ρ = 1 (finished as fast as with an equal share). Seeds "
        f"pooled. {keyed}".strip(),
    )


# -- allocation by accelerator type over time ------------------------------------------------------


def _classes(run: Run) -> tuple[np.ndarray, list[str], str]:
    """Each job's class index, the class names (most device-time first, at most
    :data:`MAX_CLASSES` then ``others``) and what a class is."""
    frame = parquet_columns(run.per_job_id, ("job_type", "num_gpus", "attained_gpu_s"))
    types = frame["job_type"].astype(str)
    if (types != "").any():
        codes, uniques = pd.factorize(types, sort=False)
        named = np.array([job_class(str(t)) or "(no type)" for t in uniques], dtype=object)
        labels = named[codes]
        kind = "job type"
    else:
        labels = np.array(size_class(frame["num_gpus"].to_numpy()), dtype=object)
        kind = "gang size"
    held = (
        pd.Series(frame["attained_gpu_s"].fillna(0.0).to_numpy())
        .groupby(labels)
        .sum()
        .sort_values(ascending=False, kind="stable")
    )
    names = [str(x) for x in held.index]
    if len(names) > MAX_CLASSES + 1:
        names = [*names[:MAX_CLASSES], f"{len(names) - MAX_CLASSES} other types"]
    slot = {n: i for i, n in enumerate(names)}
    other = len(names) - 1
    codes = np.array([slot.get(str(x), other) for x in labels.tolist()], dtype=np.int64)
    return codes, names, kind


def type_allocation(run: Run, subtitle: str = "") -> Chart:
    """Devices of each accelerator type held by each job class over time (one run)."""
    title = "Who ran on which accelerator type, over time"
    if run.stints_id is None:
        return empty(title, "This run was stored without device stints: re-run it.")
    st = stint_columns(run.stints_id)
    if len(st) == 0:
        return empty(title, "No job ever held a device in this run.")
    if len(st.type_names) < 2:
        return empty(title, "The jobs of this run used one accelerator type only.")
    codes, classes, kind = _classes(run)
    t0, t1 = float(st.start.min()), float(st.end.max())
    if t1 <= t0:
        t1 = t0 + 1.0
    edges = np.linspace(t0, t1, ALLOCATION_BINS + 1)
    unit, scale = time_unit([t1 - t0])
    mid = rounded_array((0.5 * (edges[:-1] + edges[1:])) / scale, 5)
    job_class_of = codes[st.job]
    n_types, n_classes = len(st.type_names), len(classes)
    # group = type × class
    held = binned_devices(
        st.type_code * n_classes + job_class_of,
        n_types * n_classes,
        st.devices,
        st.start,
        st.end,
        edges,
    ).reshape(n_types, n_classes, -1)
    # panels: types in name order, largest use first would reorder between runs
    order = sorted(range(n_types), key=lambda i: st.type_names[i])
    colour = {c: PALETTE[i % len(PALETTE)] for i, c in enumerate(classes)}
    if len(classes) > MAX_CLASSES:
        colour[classes[-1]] = MUTED
    gap = 0.1
    height = (1.0 - gap * (n_types - 1)) / n_types
    traces: list[dict[str, Any]] = []
    lay = layout(
        f"{title} — {subtitle}" if subtitle else title,
        axis("Time since the first submission", unit),
        axis("Devices", "count"),
        height=110 + PANEL_PX * n_types,
    )
    annotations = []
    for panel, ti in enumerate(order):
        suffix = "" if panel == 0 else str(panel + 1)
        top = 1.0 - panel * (height + gap)
        ax = axis("Devices", "count", rangemode="tozero")
        ax.update({"domain": [max(0.0, top - height), top], "anchor": "x"})
        lay[f"yaxis{suffix}"] = ax
        annotations.append(
            {
                "text": f"<b>{st.type_names[ti]}</b>",
                "x": 0,
                "xref": "paper",
                "xanchor": "left",
                "y": top,
                "yref": "paper",
                "yanchor": "bottom",
                "showarrow": False,
                "font": {"size": 11},
            }
        )
        for ci, name in enumerate(classes):
            y = held[ti, ci]
            if not (y > 0).any():
                continue
            traces.append(
                {
                    "type": "scatter",
                    "mode": "lines",
                    "name": name,
                    "legendgroup": name,
                    "showlegend": not any(t["name"] == name for t in traces),
                    "x": mid,
                    "y": rounded_array(y, 4),
                    "yaxis": f"y{suffix}",
                    "stackgroup": f"type{ti}",
                    "line": {"width": 0.5, "color": colour[name]},
                    "fillcolor": colour[name],
                    "hovertemplate": f"{name} on {st.type_names[ti]}<br>%{{x:.3g}} {unit}: "
                    "%{y:.3g} devices<extra></extra>",
                }
            )
    lay["xaxis"]["anchor"] = f"y{'' if len(order) == 1 else len(order)}"
    lay["annotations"] = annotations
    lay["margin"] = {**lay["margin"], "t": 60}
    lay["showlegend"] = True

    def export() -> pd.DataFrame:
        rows = []
        for ti in range(n_types):
            for ci, name in enumerate(classes):
                rows.append(
                    pd.DataFrame(
                        {
                            "accelerator_type": st.type_names[ti],
                            kind.replace(" ", "_"): name,
                            "bin_start_s": edges[:-1],
                            "bin_end_s": edges[1:],
                            "devices_mean": held[ti, ci],
                        }
                    )
                )
        return pd.concat(rows, ignore_index=True)

    return Chart(
        title=title,
        figure={"data": traces, "layout": lay},
        data=export,
        note=f"Run #{run.pk}: devices held by each {kind} on each accelerator type, averaged "
        f"over {ALLOCATION_BINS} time bins (stacked). "
        + (
            "Job types without their batch size."
            if kind == "job type"
            else "The trace has no job types: classes are gang sizes."
        ),
    )
