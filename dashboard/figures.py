"""Chart builders: stored results in, :class:`~dashboard.plotting.Chart` (Plotly spec) out.

One function per chart. Experiment charts colour each policy the same way everywhere
(:func:`dashboard.plotting.colours` over the experiment's policy order); several
configurations (cluster × workload × load) on one chart are told apart by line dash or by
x position. Downsampling happens here (CDFs ≤ 2,000 points per curve, timelines ≤ 5,000);
each chart's ``export`` builds the full data behind it, only when an export is asked for.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from dashboard.numbers import RUN_ONCE, cell_value, is_count, mean_spread, seeds_text
from dashboard.plotting import (
    CARBON,
    DASHES,
    MAX_CDF_POINTS,
    MAX_TIMELINE_POINTS,
    MUTED,
    PALETTE,
    Chart,
    axis,
    bin_series,
    cdf_points,
    colours,
    empty,
    finite_or_none,
    layout,
    mean_sd,
    pareto_mask,
    rounded,
    rounded_array,
    time_unit,
)
from dashboard.results import Config, Grid, label_of, parquet_columns, timeseries
from planner.models import Run


@dataclass(frozen=True)
class Metric:
    """A summary key and how to show it. ``unit="time"`` picks s/min/h/d from the values."""

    key: str
    label: str
    unit: str
    factor: float = 1.0
    higher_is_better: bool = False

    def display(self, values: Sequence[float | None]) -> tuple[str, float]:
        """(unit shown, factor from stored value to shown value)."""
        if self.unit == "time":
            name, scale = time_unit(values)
            return name, 1.0 / scale
        return self.unit, self.factor


#: Time metrics shown side by side (tables) share one unit, chosen from all their values.
JOB_TIMES = (
    "jct_mean_s",
    "jct_p50_s",
    "jct_p95_s",
    "jct_p99_s",
    "queue_delay_mean_s",
    "queue_delay_p50_s",
    "queue_delay_p95_s",
    "queue_delay_p99_s",
    "wait_mean_s",
    "wait_p50_s",
    "wait_p95_s",
    "wait_p99_s",
)


def job_time_unit(summaries: Sequence[dict[str, Any] | None]) -> tuple[str, float]:
    """(unit, factor) for the :data:`JOB_TIMES` of these summaries (all their values pooled)."""
    name, scale = time_unit([(s or {}).get(k) for s in summaries for k in JOB_TIMES])
    return name, 1.0 / scale


METRICS: dict[str, Metric] = {
    m.key: m
    for m in (
        Metric("jobs_completed", "Jobs completed", "jobs", higher_is_better=True),
        Metric("jct_mean_s", "Mean JCT", "time"),
        Metric("jct_p50_s", "Median JCT", "time"),
        Metric("jct_p99_s", "p99 JCT", "time"),
        Metric("wait_mean_s", "Mean total wait (JCT − time holding devices)", "time"),
        Metric("wait_p99_s", "p99 total wait", "time"),
        Metric(
            "queue_delay_mean_s", "Mean first-start delay (queueing before first start)", "time"
        ),
        Metric("queue_delay_p99_s", "p99 first-start delay", "time"),
        Metric("makespan_s", "Makespan", "time"),
        Metric("horizon_s", "Cost horizon", "time"),
        Metric("utilisation", "Utilisation", "%", 100.0, higher_is_better=True),
        Metric("jain_index", "Jain's fairness index", "0–1", higher_is_better=True),
        Metric("ftf_rho_mean", "Mean finish-time fairness ρ", "ratio"),
        Metric("ftf_rho_max", "Max finish-time fairness ρ", "ratio"),
        Metric("cost_owned_usd", "Owned cost over the horizon (capital + energy)", "USD"),
        Metric("cost_cloud_usd", "Cloud cost (on-demand, device-hours held)", "USD"),
        Metric("cost_usd", "Owned cost over the horizon (cost_usd)", "USD"),
        Metric(
            "work_per_dollar",
            "Work per dollar, owned (completed in the horizon)",
            "reference GPU-h / USD",
            higher_is_better=True,
        ),
        Metric(
            "work_per_dollar_cloud",
            "Work per dollar, cloud",
            "reference GPU-h / USD",
            higher_is_better=True,
        ),
        Metric("energy_kwh", "Energy", "kWh"),
        Metric("carbon_kg", "Carbon", "kg CO₂e"),
    )
}
#: Metrics with a bar chart on the experiment page, in page order.
BAR_METRICS = (
    "jct_mean_s",
    "jct_p99_s",
    "wait_mean_s",
    "queue_delay_mean_s",
    "makespan_s",
    "utilisation",
    "jain_index",
    "ftf_rho_mean",
    "ftf_rho_max",
    "cost_owned_usd",
    "cost_cloud_usd",
    "work_per_dollar",
    "work_per_dollar_cloud",
    "energy_kwh",
    "carbon_kg",
)
TABLE_METRICS = ("jobs_completed", "jct_p50_s", *BAR_METRICS)
#: Compare page bars.
COMPARE_METRICS = (
    "jct_mean_s",
    "jct_p99_s",
    "wait_mean_s",
    "utilisation",
    "cost_owned_usd",
    "cost_cloud_usd",
    "carbon_kg",
)
#: Pareto charts (mean JCT against each): the owned cost, the cloud cost, carbon.
PARETO_AXES = {"cost": "cost_owned_usd", "cloud": "cost_cloud_usd", "carbon": "carbon_kg"}
TIMELINES = ("utilisation", "queue")

NO_RUNS = (
    "No finished runs yet. Charts appear when runs succeed; "
    "if runs failed, their errors are in the runs table above — fix the input and re-run."
)


def _summary_values(runs: Sequence[Run], key: str) -> list[float | None]:
    return [finite_or_none((r.summary or {}).get(key)) for r in runs]


def _run_rows(runs: Sequence[Run]) -> pd.DataFrame:
    """One row per run with its grid coordinates and every numeric summary value."""
    rows = []
    for r in runs:
        row: dict[str, Any] = {
            "run": r.pk,
            "policy": label_of(r),
            "cluster": r.cluster.name,
            "workload": r.workload.name,
            "load_factor": r.load_factor,
            "seed": r.seed,
        }
        for k, v in (r.summary or {}).items():
            if v is None or isinstance(v, int | float):
                row[k] = v
        rows.append(row)
    return pd.DataFrame(rows)


# -- experiment: table and bars --------------------------------------------------------------------


def metric_table(grid: Grid) -> Chart:
    title = "Metrics by policy and configuration (mean ± sd over seeds)"
    if not grid.runs:
        return empty(title, NO_RUNS)
    colour = colours(grid.policies)
    units: dict[str, tuple[str, float]] = {}
    shared = job_time_unit([r.summary for r in grid.runs])
    for key in TABLE_METRICS:
        vals = [v for r in grid.runs for v in _summary_values([r], key)]
        units[key] = shared if key in JOB_TIMES else METRICS[key].display(vals)
    columns: list[dict[str, Any]] = [
        {"key": "policy", "label": "Policy"},
        {"key": "config", "label": "Configuration"},
        {"key": "seeds", "label": "Seeds", "unit": "runs", "nowrap": True},
    ]
    columns += [
        {
            "key": k,
            "label": METRICS[k].label,
            "unit": units[k][0],
            "better": "higher" if METRICS[k].higher_is_better else "lower",
        }
        for k in TABLE_METRICS
    ]
    rows: list[dict[str, Any]] = []
    export: list[dict[str, Any]] = []
    for config in grid.configs:
        for policy in grid.policies:
            runs = grid.cells.get((policy, config))
            if not runs:
                continue
            once = grid.run_once(runs)
            row: dict[str, Any] = {
                "policy": policy,
                "colour": colour[policy],
                "config": grid.config_label(config),
                "group": config.key,
                "seeds": RUN_ONCE if once else len(runs),
            }
            flat: dict[str, Any] = {
                "policy": policy,
                "cluster": config.cluster,
                "workload": config.workload,
                "load_factor": config.load,
                "seeds": len(runs),
                "seed_independent": once,
            }
            for k in TABLE_METRICS:
                values = _summary_values(runs, k)
                row[k] = cell_value(k, values, units[k][1])
                if is_count(k):  # exact, per run: never a mean of counts
                    known = [int(v) for v in values if v is not None]
                    flat[f"{k}_min"] = min(known) if known else None
                    flat[f"{k}_max"] = max(known) if known else None
                else:
                    flat[f"{k}_mean"], flat[f"{k}_sd"], _ = mean_spread(values)
            rows.append(row)
            export.append(flat)
    note = (
        f"{len(grid.runs)} of {grid.total} runs succeeded." if len(grid.runs) < grid.total else ""
    )
    note += " Counts are exact (lo–hi if the seeds' runs differ); ± only where they differ."
    if any(r["seeds"] == RUN_ONCE for r in rows):
        note += f" “{RUN_ONCE}”: neither the policy nor the placement draws from the seed."
    return Chart(
        title=title,
        table={"columns": columns, "rows": rows},
        data=pd.DataFrame(export),
        note=note,
    )


def metric_bars(grid: Grid, key: str) -> Chart:
    metric = METRICS[key]
    title = metric.label
    if not grid.runs:
        return empty(title, NO_RUNS)
    colour = colours(grid.policies)
    cells = {(p, c): mean_spread(_summary_values(runs, key)) for (p, c), runs in grid.cells.items()}
    if all(m is None for m, _, _ in cells.values()):
        return empty(
            title,
            f"No run has a value for {metric.label.lower()} (for example, no job completed). "
            "Check the runs' errors and the trace, or lengthen the simulation horizon.",
        )
    unit, f = metric.display([m for m, _, _ in cells.values()])
    one_config = len(grid.configs) == 1
    traces = []
    spread = False
    for policy in grid.policies:
        configs = [c for c in grid.configs if (policy, c) in cells]
        stats = [cells[(policy, c)] for c in configs]
        spread = spread or any(sd is not None for _, sd, _ in stats)
        x = [policy] if one_config else [grid.config_label(c) for c in configs]
        y = [None if m is None else m * f for m, _, _ in stats]
        err = [None if sd is None else sd * f for _, sd, _ in stats]  # no bar: no spread
        traces.append(
            {
                "type": "bar",
                "name": policy,
                "x": x,
                "y": rounded(y),
                "marker": {"color": colour[policy]},
                "error_y": {
                    "type": "data",
                    "array": rounded(err),
                    "visible": True,
                    "color": "#333",
                },
                "customdata": [
                    seeds_text(
                        grid.cells[(policy, c)], None if sd is None else sd * f, unit, grid.seeds
                    )
                    for c, (_, sd, _) in zip(configs, stats, strict=True)
                ],
                "hovertemplate": f"{policy}<br>%{{x}}<br>%{{y:.4g}} {unit}"
                "<br>%{customdata}<extra></extra>",
            }
        )
    better = "higher is better" if metric.higher_is_better else "lower is better"
    xaxis = axis("Policy" if one_config else "Configuration", type="category")
    lay = layout(
        f"{metric.label} ({better})",
        xaxis,
        axis(metric.label, unit, rangemode="tozero"),
        barmode="overlay" if one_config else "group",
        showlegend=not one_config,
    )
    note = "Error bars: sample standard deviation over seeds." if spread else ""
    if any(grid.run_once(runs) for runs in grid.cells.values()):
        note = f"{note} Some bars are {RUN_ONCE}.".strip()
    return Chart(
        title=title,
        figure={"data": traces, "layout": lay},
        data=_run_rows(grid.runs)[
            ["run", "policy", "cluster", "workload", "load_factor", "seed"]
        ].assign(**{key: _summary_values(grid.runs, key)}),
        note=note,
    )


# -- curves over series of runs --------------------------------------------------------------------


@dataclass
class Series:
    """Runs drawn as one curve (their seeds pooled) with its label and style."""

    label: str
    colour: str
    runs: list[Run]
    dash: str = "solid"
    group: str = ""


def _pooled(runs: Sequence[Run], column: str) -> np.ndarray:
    parts = [parquet_columns(r.per_job_id, (column,))[column].to_numpy() for r in runs]
    values = np.concatenate(parts) if parts else np.zeros(0)
    return values[np.isfinite(values)]


def _completed(run: Run) -> int:
    """Jobs a run completed (finite JCT in its per-job table)."""
    return int(np.isfinite(parquet_columns(run.per_job_id, ("jct",))["jct"].to_numpy()).sum())


def _jobs_label(counts: Sequence[int]) -> str:
    """A curve's job count: one run's, never the sum over seed replicas (a range if they
    differ)."""
    lo, hi = min(counts), max(counts)
    return f"{lo:,} jobs" if lo == hi else f"{lo:,}–{hi:,} jobs per seed"


def cdf_chart(title: str, series: Sequence[Series], *, note: str = "") -> Chart:
    """Empirical CDFs of completed jobs' JCT, one curve per series (≤ 2,000 points each)."""
    if not series:
        return empty(title, NO_RUNS)
    pooled = [(s, _pooled(s.runs, "jct")) for s in series]
    per_run = [[_completed(r) for r in s.runs] for s in series]
    if all(len(v) == 0 for _, v in pooled):
        return empty(title, "No job completed in these runs, so there is no JCT to plot.")
    medians = [float(np.median(v)) for _, v in pooled if len(v)]
    unit, scale = time_unit(medians)
    traces = []
    for (s, values), counts in zip(pooled, per_run, strict=True):
        x, y = cdf_points(values[values > 0], MAX_CDF_POINTS)
        traces.append(
            {
                "type": "scatter",
                "mode": "lines",
                "name": f"{s.label} ({_jobs_label(counts)})",
                "legendgroup": s.group or s.label,
                "x": rounded_array(x / scale),
                "y": rounded_array(100.0 * y, 5),
                "line": {"color": s.colour, "dash": s.dash, "width": 2, "shape": "hv"},
                "hovertemplate": f"{s.label}<br>%{{y:.1f}} % of jobs within %{{x:.3g}} {unit}"
                "<extra></extra>",
            }
        )
    lay = layout(
        title,
        axis("Job completion time", unit, type="log"),
        axis("Completed jobs", "%", range=[0, 100.5]),
    )

    def export() -> pd.DataFrame:
        frames = []
        for s in series:
            for r in s.runs:
                jct = parquet_columns(r.per_job_id, ("job_id", "jct"))
                frames.append(
                    pd.DataFrame(
                        {
                            "series": s.label,
                            "run": r.pk,
                            "seed": r.seed,
                            "job_id": jct["job_id"],
                            "jct_s": jct["jct"],
                        }
                    ).dropna(subset=["jct_s"])
                )
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()

    full = (
        note or "Seeds pooled; curves downsampled to at most 2,000 points (exports are complete)."
    )
    return Chart(title=title, figure={"data": traces, "layout": lay}, data=export, note=full)


def timeline_chart(title: str, series: Sequence[Series], kind: str) -> Chart:
    """Utilisation or queue length over time (first run of each series), carbon on the right."""
    if not series:
        return empty(title, NO_RUNS)
    loaded = []
    for s in series:
        r = s.runs[0]
        ts = timeseries(r.timeseries_id) if r.timeseries_id else {}
        if ts.get("t_s"):
            loaded.append((s, r, ts))
    if not loaded:
        return empty(title, "These runs have no timeline (nothing ran). Check the trace.")
    t_end = max(ts["t_s"][-1] + ts["dt_s"][-1] for _, _, ts in loaded)
    unit, scale = time_unit([t_end])
    traces = []
    per_trace = MAX_TIMELINE_POINTS
    value_key = "utilisation" if kind == "utilisation" else "queued"
    factor = 100.0 if kind == "utilisation" else 1.0
    for s, r, ts in loaded:
        t, _dt, cols = bin_series(ts["t_s"], ts["dt_s"], {"v": ts[value_key]}, per_trace)
        traces.append(
            {
                "type": "scatter",
                "mode": "lines",
                "name": s.label if len(s.runs) == 1 else f"{s.label} (seed {r.seed})",
                "legendgroup": s.group or s.label,
                "x": rounded_array(t / scale),
                "y": rounded_array(cols["v"] * factor, 4),
                "line": {"color": s.colour, "dash": s.dash, "width": 1.6, "shape": "hv"},
                "hovertemplate": f"{s.label}<br>%{{x:.3g}} {unit}: %{{y:.3g}}<extra></extra>",
            }
        )
    # carbon intensity of the longest run (all runs of one cluster share its region)
    _, _, longest = max(loaded, key=lambda item: item[2]["t_s"][-1])
    t, _dt, cols = bin_series(
        longest["t_s"],
        longest["dt_s"],
        {"ci": longest.get("carbon_intensity_g_per_kwh", [])},
        per_trace,
    )
    constant = len(cols["ci"]) > 0 and float(np.ptp(cols["ci"])) == 0.0
    traces.append(
        {
            "type": "scatter",
            "mode": "lines",
            "name": "carbon intensity" + (" (constant)" if constant else ""),
            "x": rounded_array(t / scale),
            "y": rounded_array(cols["ci"], 4),
            "yaxis": "y2",
            "line": {"color": CARBON, "dash": "dot", "width": 1.2, "shape": "hv"},
            "opacity": 0.8,
            "hovertemplate": "%{y:.0f} g CO₂e/kWh at %{x:.3g} " + unit + "<extra></extra>",
        }
    )
    yaxis = (
        axis("Utilisation", "%", rangemode="tozero")
        if kind == "utilisation"
        else axis("Jobs waiting", "jobs", rangemode="tozero")
    )
    lay = layout(title, axis("Time since trace start", unit), yaxis)
    lay["yaxis2"] = axis(
        "Carbon intensity",
        "g CO₂e/kWh",
        overlaying="y",
        side="right",
        showgrid=False,
        rangemode="tozero",
    )
    lay["margin"]["r"] = 70

    def export() -> pd.DataFrame:
        frames = []
        for s, r, ts in loaded:
            frame = pd.DataFrame(ts)
            frame.insert(0, "run", r.pk)
            frame.insert(0, "series", s.label)
            frames.append(frame)
        return pd.concat(frames, ignore_index=True)

    note = "Time-weighted averages per bin; carbon intensity of the cluster's region" + (
        " (constant: the region has no carbon zone)." if constant else "."
    )
    return Chart(title=title, figure={"data": traces, "layout": lay}, data=export, note=note)


# -- experiment: series from the grid --------------------------------------------------------------


def policy_series(grid: Grid, config: Config) -> list[Series]:
    colour = colours(grid.policies)
    return [
        Series(policy, colour[policy], grid.cells[(policy, config)])
        for policy in grid.policies
        if (policy, config) in grid.cells
    ]


def _config_or_empty(grid: Grid, key: str | None, title: str) -> Config | Chart:
    if not grid.runs:
        return empty(title, NO_RUNS)
    config = grid.find_config(key)
    if config is None:
        return empty(title, "Unknown configuration: choose one from the list above the charts.")
    return config


def experiment_cdf(grid: Grid, key: str | None) -> Chart:
    title = "JCT distribution (CDF) by policy"
    config = _config_or_empty(grid, key, title)
    if isinstance(config, Chart):
        return config
    chart = cdf_chart(f"{title} — {grid.config_label(config)}", policy_series(grid, config))
    return chart


def experiment_timeline(grid: Grid, key: str | None, kind: str) -> Chart:
    what = "Utilisation" if kind == "utilisation" else "Queue length"
    title = f"{what} over time, with carbon intensity"
    config = _config_or_empty(grid, key, title)
    if isinstance(config, Chart):
        return config
    series = policy_series(grid, config)
    return timeline_chart(f"{what} — {grid.config_label(config)}", series, kind)


def pareto(grid: Grid, axis_name: str) -> Chart:
    x_key = PARETO_AXES[axis_name]
    x_metric, y_metric = METRICS[x_key], METRICS["jct_mean_s"]
    title = f"Mean JCT vs {x_metric.label.lower()}"
    if not grid.runs:
        return empty(title, NO_RUNS)
    colour = colours(grid.policies)
    points = []
    for (policy, config), runs in grid.cells.items():
        x, _, n = mean_sd(_summary_values(runs, x_key))
        y, _, _ = mean_sd(_summary_values(runs, "jct_mean_s"))
        points.append((policy, config, x, y, n))
    if not any(p[2] is not None and p[3] is not None for p in points):
        return empty(title, "No run has both a mean JCT and a value on the other axis yet.")
    y_unit, y_f = y_metric.display([p[3] for p in points])
    x_unit, x_f = x_metric.display([p[2] for p in points])
    xs = np.array([np.nan if p[2] is None else p[2] for p in points])
    ys = np.array([np.nan if p[3] is None else p[3] for p in points])
    front = np.zeros(len(points), dtype=bool)
    groups: dict[tuple[int, float], list[int]] = {}
    for i, p in enumerate(points):
        groups.setdefault((p[1].workload_id, p[1].load), []).append(i)
    for idx in groups.values():
        front[idx] = pareto_mask(xs[idx], ys[idx])
    traces: list[dict[str, Any]] = []
    for policy in grid.policies:
        mine = [i for i, p in enumerate(points) if p[0] == policy]
        traces.append(
            {
                "type": "scatter",
                "mode": "markers",
                "name": policy,
                "x": rounded([None if xs[i] != xs[i] else xs[i] * x_f for i in mine]),
                "y": rounded([None if ys[i] != ys[i] else ys[i] * y_f for i in mine]),
                "text": [grid.config_label(points[i][1]) for i in mine],
                "marker": {
                    "color": colour[policy],
                    "size": 10,
                    "line": {"color": "#fff", "width": 1},
                },
                "hovertemplate": f"{policy}<br>%{{text}}<br>%{{x:.4g}} {x_unit}, "
                f"%{{y:.4g}} {y_unit}<extra></extra>",
            }
        )
    shown_front = False
    for (_workload, _load), idx in sorted(groups.items()):
        on = sorted((i for i in idx if front[i]), key=lambda i: xs[i])
        if not on:
            continue
        traces.append(
            {
                "type": "scatter",
                "mode": "lines+markers",
                "name": "non-dominated (Pareto front)",
                "legendgroup": "front",
                "showlegend": not shown_front,
                "x": rounded([xs[i] * x_f for i in on]),
                "y": rounded([ys[i] * y_f for i in on]),
                "line": {"color": "#333", "dash": "dash", "width": 1, "shape": "hv"},
                "marker": {
                    "symbol": "circle-open",
                    "size": 18,
                    "color": "#222",
                    "line": {"width": 2},
                },
                "hoverinfo": "skip",
            }
        )
        shown_front = True
    lay = layout(
        f"{title} (lower-left is better)",
        axis(x_metric.label, x_unit),
        axis(y_metric.label, y_unit),
    )

    def export() -> pd.DataFrame:
        return pd.DataFrame(
            {
                "policy": [p[0] for p in points],
                "cluster": [p[1].cluster for p in points],
                "workload": [p[1].workload for p in points],
                "load_factor": [p[1].load for p in points],
                "seeds": [p[4] for p in points],
                f"{x_key}_mean": xs,
                "jct_mean_s_mean": ys,
                "non_dominated": front,
            }
        )

    note = "Ringed points are non-dominated among configurations with the same workload and load."
    return Chart(title=title, figure={"data": traces, "layout": lay}, data=export, note=note)


def load_curve(grid: Grid, key: str = "jct_mean_s") -> Chart:
    metric = METRICS[key]
    title = f"{metric.label} vs load factor"
    if not grid.runs:
        return empty(title, NO_RUNS)
    loads = sorted({c.load for c in grid.configs})
    if len(loads) < 2:
        return empty(
            title,
            f"This experiment has one load factor (×{loads[0]:g}). To see where the cluster "
            "saturates, launch an experiment with several, e.g. 0.5, 1, 1.5, 2.",
        )
    colour = colours(grid.policies)
    pairs = sorted({(c.cluster_id, c.workload_id, c.cluster, c.workload) for c in grid.configs})
    stats: dict[tuple[str, int, int, float], tuple[float | None, float | None, int]] = {}
    for (policy, c), runs in grid.cells.items():
        stats[(policy, c.cluster_id, c.workload_id, c.load)] = mean_spread(
            _summary_values(runs, key)
        )
    unit, f = metric.display([s[0] for s in stats.values()])
    traces = []
    for policy in grid.policies:
        for j, (cid, wid, cname, wname) in enumerate(pairs):
            xs = [ld for ld in loads if (policy, cid, wid, ld) in stats]
            if not xs:
                continue
            st = [stats[(policy, cid, wid, ld)] for ld in xs]
            suffix = f" · {cname} · {wname}" if len(pairs) > 1 else ""
            traces.append(
                {
                    "type": "scatter",
                    "mode": "lines+markers",
                    "name": policy + suffix,
                    "legendgroup": policy,
                    "x": xs,
                    "y": rounded([None if m is None else m * f for m, _, _ in st]),
                    "error_y": {
                        "type": "data",
                        "array": rounded([None if sd is None else sd * f for _, sd, _ in st]),
                        "visible": True,
                    },
                    "line": {"color": colour[policy], "dash": DASHES[j % len(DASHES)]},
                    "hovertemplate": f"{policy}{suffix}<br>load ×%{{x}}: %{{y:.4g}} {unit}"
                    "<extra></extra>",
                }
            )
    means = [s[0] * f for s in stats.values() if s[0]]
    log = bool(means) and min(means) > 0 and max(means) / min(means) > 50
    lay = layout(
        f"{title} (a steep rise marks saturation)",
        axis("Load factor", "× trace arrival rate"),
        axis(metric.label, unit, type="log" if log else "linear"),
    )
    data = _run_rows(grid.runs)[["run", "policy", "cluster", "workload", "load_factor", "seed"]]
    return Chart(
        title=title,
        figure={"data": traces, "layout": lay},
        data=data.assign(**{key: _summary_values(grid.runs, key)}),
    )


# -- one run ---------------------------------------------------------------------------------------


def ftf_distribution(run: Run) -> Chart:
    title = "Finish-time fairness ρ (Themis)"
    frame = parquet_columns(run.per_job_id, ("job_id", "ftf_rho"))
    rho = frame["ftf_rho"].to_numpy()
    rho = rho[np.isfinite(rho) & (rho > 0)]
    if len(rho) == 0:
        return empty(title, "No job completed, so no job has a finish-time fairness value.")
    lo, hi = float(rho.min()), float(rho.max())
    if hi / lo < 1.0001:
        edges = np.array([lo / 1.05, hi * 1.05])
    else:
        n_bins = int(min(60, max(10, math.sqrt(len(rho)))))
        edges = np.geomspace(lo, hi * 1.000001, n_bins + 1)
    counts, _ = np.histogram(rho, bins=edges)
    share = float(np.mean(rho <= 1.0 + 1e-9))
    trace = {
        "type": "scatter",
        "mode": "lines",
        "name": "jobs",
        "x": rounded_array(edges),
        "y": [*counts.tolist(), int(counts[-1])],
        "line": {"shape": "hv", "color": "#4e79a7"},
        "fill": "tozeroy",
        "fillcolor": "rgba(78,121,167,0.35)",
        "hovertemplate": "ρ from %{x:.3g}: %{y} jobs<extra></extra>",
    }
    lay = layout(
        f"{title}: {100 * share:.1f} % of jobs at ρ ≤ 1",
        axis("Finish-time fairness ρ", "JCT / isolated JCT", type="log"),
        axis("Jobs", "count", rangemode="tozero"),
        showlegend=False,
        shapes=[
            {
                "type": "line",
                "x0": 1,
                "x1": 1,
                "xref": "x",
                "y0": 0,
                "y1": 1,
                "yref": "paper",
                "line": {"color": "#e15759", "dash": "dash"},
            }
        ],
        annotations=[
            {
                "x": 0,
                "xref": "x",
                "y": 1,
                "yref": "paper",
                "text": "ρ = 1: fair share",
                "showarrow": False,
                "xanchor": "left",
                "font": {"color": "#e15759", "size": 11},
            }
        ],
    )
    return Chart(
        title=title,
        figure={"data": [trace], "layout": lay},
        data=lambda: frame.dropna(subset=["ftf_rho"]),
        note="ρ > 1: the job finished later than it would have with an equal 1/N share.",
    )


def slowest_jobs(run: Run, limit: int = 25) -> Chart:
    title = "Slowest jobs"
    cols = (
        "job_id",
        "user",
        "num_gpus",
        "submit",
        "first_start",
        "finish",
        "jct",
        "queue_delay",
        "preemptions",
        "ftf_rho",
    )
    frame = parquet_columns(run.per_job_id, cols)
    done = frame[np.isfinite(frame["jct"].to_numpy())]
    if len(done) == 0:
        return empty(title, "No job completed in this run.")
    order = np.argsort(-done["jct"].to_numpy(), kind="stable")
    top = done.iloc[order[:limit]]
    unit, scale = time_unit(top["jct"].tolist())
    t_unit, t_scale = time_unit([float(frame["submit"].max()) or 1.0])
    columns = [
        {"key": "job_id", "label": "Job"},
        {"key": "user", "label": "User"},
        {"key": "num_gpus", "label": "GPUs", "unit": "devices"},
        {"key": "submit", "label": "Submitted", "unit": t_unit},
        {"key": "first_start", "label": "First start", "unit": t_unit},
        {"key": "finish", "label": "Finished", "unit": t_unit},
        {"key": "jct", "label": "JCT", "unit": unit},
        {"key": "queue_delay", "label": "Queueing delay", "unit": unit},
        {"key": "preemptions", "label": "Preemptions", "unit": "count"},
        {"key": "ftf_rho", "label": "ρ", "unit": "ratio"},
    ]
    rows = []
    for rec in top.to_dict("records"):
        rows.append(
            {
                "job_id": str(rec["job_id"]),
                "user": str(rec["user"]) or "–",
                "num_gpus": int(rec["num_gpus"]),
                "submit": rounded([rec["submit"] / t_scale], 4)[0],
                "first_start": rounded([rec["first_start"] / t_scale], 4)[0],
                "finish": rounded([rec["finish"] / t_scale], 4)[0],
                "jct": rounded([rec["jct"] / scale], 4)[0],
                "queue_delay": rounded([rec["queue_delay"] / scale], 4)[0],
                "preemptions": int(rec["preemptions"]),
                "ftf_rho": rounded([rec["ftf_rho"]], 3)[0],
            }
        )

    def export() -> pd.DataFrame:
        full = parquet_columns(run.per_job_id, cols)
        return full.sort_values("jct", ascending=False, na_position="last")

    return Chart(
        title=f"{title} ({min(limit, len(done))} of {len(done):,} completed)",
        table={"columns": columns, "rows": rows},
        data=export,
        note="The export lists every job, slowest first.",
    )


# -- workloads -------------------------------------------------------------------------------------


def arrivals(frame: pd.DataFrame) -> Chart:
    title = "Arrivals over time"
    submit = frame["submit_time"].to_numpy(dtype=np.float64)
    if len(submit) == 0:
        return empty(title, "The trace has no jobs.")
    t0, t1 = float(submit.min()), float(submit.max())
    span = max(t1 - t0, 1.0)
    n_bins = int(min(500, max(10, math.sqrt(len(submit)) * 2)))
    width = span / n_bins
    if width < 60:  # at least a minute per bin
        width = 60.0
        n_bins = max(1, math.ceil(span / width))
    edges = t0 + width * np.arange(n_bins + 1)
    counts, _ = np.histogram(submit, bins=edges)
    unit, scale = time_unit([span])
    rate = counts / (width / 3600.0)
    trace = {
        "type": "scatter",
        "mode": "lines",
        "name": "arrival rate",
        "x": rounded_array(edges / scale),
        "y": rounded_array(np.r_[rate, rate[-1]], 4),
        "line": {"shape": "hv", "color": "#4e79a7"},
        "fill": "tozeroy",
        "fillcolor": "rgba(78,121,167,0.3)",
        "hovertemplate": "%{x:.3g} " + unit + ": %{y:.3g} jobs/h<extra></extra>",
    }
    lay = layout(
        f"{title}: {len(submit):,} jobs, mean {len(submit) / span * 3600:.3g} jobs/h",
        axis("Time since trace start", unit),
        axis("Arrival rate", "jobs/h", rangemode="tozero"),
        showlegend=False,
    )
    return Chart(
        title=title,
        figure={"data": [trace], "layout": lay},
        data=lambda: frame[["job_id", "submit_time"]].rename(columns={"submit_time": "submit_s"}),
        note=f"Bins of {width / scale:.3g} {unit}.",
    )


def gpu_demand(frame: pd.DataFrame) -> Chart:
    title = "GPU demand per job"
    gpus = frame["num_gpus"].to_numpy()
    if len(gpus) == 0:
        return empty(title, "The trace has no jobs.")
    values, counts = np.unique(gpus, return_counts=True)
    demand = values * counts
    trace = {
        "type": "bar",
        "name": "jobs",
        "x": [str(v) for v in values.tolist()],
        "y": counts.tolist(),
        "customdata": rounded_array(100.0 * demand / demand.sum(), 3),
        "marker": {"color": "#4e79a7"},
        "hovertemplate": "%{x} GPU(s): %{y} jobs (%{customdata:.3g} % of GPUs requested)"
        "<extra></extra>",
    }
    log = counts.max() / max(counts.min(), 1) > 100
    lay = layout(
        title,
        axis("Gang size", "GPUs per job", type="category"),
        axis("Jobs", "count", type="log", dtick=1) if log else axis("Jobs", "count"),
        showlegend=False,
    )
    return Chart(
        title=title,
        figure={"data": [trace], "layout": lay},
        data=pd.DataFrame({"num_gpus": values, "jobs": counts, "gpus_requested": demand}),
    )


def duration_cdf(frame: pd.DataFrame, duration_s: np.ndarray) -> Chart:
    title = "Job duration (CDF)"
    d = duration_s[np.isfinite(duration_s) & (duration_s > 0)]
    if len(d) == 0:
        return empty(title, "No job has a known duration on the reference type.")
    unit, scale = time_unit([float(np.median(d))])
    x, y = cdf_points(d, MAX_CDF_POINTS)
    trace = {
        "type": "scatter",
        "mode": "lines",
        "name": "jobs",
        "x": rounded_array(x / scale),
        "y": rounded_array(100 * y, 5),
        "line": {"shape": "hv", "color": "#4e79a7", "width": 2},
        "hovertemplate": "%{y:.1f} % of jobs run ≤ %{x:.3g} " + unit + "<extra></extra>",
    }
    lay = layout(
        f"{title}: median {float(np.median(d)) / scale:.3g} {unit}",
        axis("Duration on a P100, gang consolidated", unit, type="log"),
        axis("Jobs", "%", range=[0, 100.5]),
        showlegend=False,
    )
    return Chart(
        title=title,
        figure={"data": [trace], "layout": lay},
        data=lambda: pd.DataFrame({"job_id": frame["job_id"], "duration_s": duration_s}),
        note="Duration on the reference type (P100): the work in reference seconds, or steps "
        "over the measured throughput of the job type. Downsampled to 2,000 points.",
    )


def jobs_by(frame: pd.DataFrame, column: str, top: int = 25) -> Chart:
    what = {"user": "user", "vc": "virtual cluster"}[column]
    title = f"Jobs by {what}"
    values = frame[column].astype(str)
    if len(values) == 0 or (values == "").all():
        return empty(
            title,
            f"This trace names no {what}s (its {column} column is missing or empty), so "
            f"there is nothing to group by. Traces that record them (e.g. Alibaba PAI, "
            "Helios, the raw Philly logs) fill this chart.",
        )
    gpus = frame["num_gpus"].to_numpy()
    grouped = (
        pd.DataFrame({"key": values.replace("", "(none)"), "gpus": gpus})
        .groupby("key", sort=False)
        .agg(jobs=("gpus", "size"), gpus=("gpus", "sum"))
        .sort_values("jobs", ascending=False)
    )
    shown = grouped.head(top)
    rest = grouped.iloc[top:]
    names, jobs, g = list(shown.index), shown["jobs"].tolist(), shown["gpus"].tolist()
    if len(rest):
        names.append(f"{len(rest)} others")
        jobs.append(int(rest["jobs"].sum()))
        g.append(int(rest["gpus"].sum()))
    trace = {
        "type": "bar",
        "orientation": "h",
        "name": "jobs",
        "y": names,
        "x": [int(j) for j in jobs],
        "customdata": [int(v) for v in g],
        "marker": {"color": PALETTE[0] if column == "user" else PALETTE[4]},
        "hovertemplate": "%{y}: %{x} jobs, %{customdata} GPUs requested<extra></extra>",
    }
    lay = layout(
        f"{title}: {len(grouped):,} {what}s",
        axis("Jobs", "count"),
        axis(what.capitalize(), type="category", autorange="reversed"),
        showlegend=False,
        height=int(max(320, 90 + 16 * len(names))),
    )
    return Chart(
        title=title,
        figure={"data": [trace], "layout": lay},
        data=grouped.reset_index().rename(columns={"key": column, "gpus": "gpus_requested"}),
    )


def parse_warnings(report: dict[str, Any] | None) -> Chart:
    title = "Data quality: the parse report"
    report = report or {}
    rows: list[dict[str, Any]] = []
    for reason, info in (report.get("drop_reasons") or {}).items():
        lines = ", ".join(str(x) for x in (info or {}).get("first_lines", [])[:5])
        rows.append(
            {
                "kind": "dropped rows",
                "message": reason,
                "count": (info or {}).get("count"),
                "lines": lines,
            }
        )
    for w in report.get("warnings") or []:
        rows.append({"kind": "warning", "message": str(w), "count": None, "lines": ""})
    for a in report.get("assumptions") or []:
        rows.append({"kind": "assumption", "message": str(a), "count": None, "lines": ""})
    if not rows:
        return empty(title, "No warnings: every row was read as is and nothing was assumed.")
    columns = [
        {"key": "kind", "label": "Kind"},
        {"key": "message", "label": "Message"},
        {"key": "count", "label": "Rows", "unit": "count"},
        {"key": "lines", "label": "First lines"},
    ]
    return Chart(title=title, table={"columns": columns, "rows": rows}, data=pd.DataFrame(rows))


# -- clusters --------------------------------------------------------------------------------------


def rack_names(spec: dict[str, Any], n_racks: int) -> list[str]:
    """Rack names in the simulator's index order (declared racks, then each pool's new ones)."""
    names = [str(r.get("name", f"rack{i}")) for i, r in enumerate(spec.get("racks") or [])]
    for i, pool in enumerate(spec.get("pools") or []):
        if "rack" in pool:
            continue
        pname = str(pool.get("name", f"pool{i}"))
        n = int(pool.get("racks", 0) or 0)
        names += [f"{pname}-rack"] if n == 0 else [f"{pname}-rack{j}" for j in range(n)]
    if len(names) != n_racks:
        return [f"rack{i}" for i in range(n_racks)]
    return names


def devices_by_type(cluster: Any) -> Chart:
    per = cluster.devices_per_type()
    names = list(cluster.type_names)
    col = colours(names)
    traces = [
        {
            "type": "bar",
            "name": n,
            "x": [n],
            "y": [int(per[i])],
            "marker": {"color": col[n]},
            "hovertemplate": f"{n}: %{{y}} devices<extra></extra>",
        }
        for i, n in enumerate(names)
    ]
    lay = layout(
        f"Devices by accelerator type: {int(per.sum()):,} in all",
        axis("Accelerator type", type="category"),
        axis("Devices", "count", rangemode="tozero"),
        showlegend=False,
        barmode="overlay",
    )
    data = pd.DataFrame({"type": names, "devices": per})
    return Chart(title="Devices by type", figure={"data": traces, "layout": lay}, data=data)


def devices_by_rack(cluster: Any, spec: dict[str, Any]) -> Chart:
    n_racks = len(cluster.rack_oversub)
    racks = rack_names(spec, n_racks)
    names = list(cluster.type_names)
    col = colours(names)
    counts = np.zeros((len(names), n_racks), dtype=np.int64)
    np.add.at(counts, (cluster.node_type, cluster.node_rack), cluster.node_devices)
    used = counts.sum(axis=0) > 0
    racks_shown = [r for r, u in zip(racks, used, strict=True) if u]
    traces = []
    for t, n in enumerate(names):
        traces.append(
            {
                "type": "bar",
                "name": n,
                "x": racks_shown,
                "y": counts[t][used].tolist(),
                "marker": {"color": col[n]},
                "hovertemplate": f"{n}<br>%{{x}}: %{{y}} devices<extra></extra>",
            }
        )
    lay = layout(
        f"Devices by rack: {int(used.sum())} racks",
        axis("Rack", type="category"),
        axis("Devices", "count", rangemode="tozero"),
        barmode="stack",
    )
    rows = [
        {
            "rack": racks[r],
            "type": names[t],
            "devices": int(counts[t, r]),
            "oversubscription": float(cluster.rack_oversub[r]),
        }
        for r in range(n_racks)
        for t in range(len(names))
        if counts[t, r]
    ]
    return Chart(
        title="Devices by rack", figure={"data": traces, "layout": lay}, data=pd.DataFrame(rows)
    )


def power(cluster: Any) -> Chart:
    per = cluster.devices_per_type()
    names = list(cluster.type_names)
    busy = np.array([t.busy_w for t in cluster.types]) * per / 1000.0
    idle = np.array([t.idle_w for t in cluster.types]) * per / 1000.0
    overhead = (
        np.bincount(cluster.node_type, weights=cluster.node_overhead_w, minlength=len(names))
        / 1000.0
    )
    traces = [
        {
            "type": "bar",
            "name": "all busy (peak)",
            "x": names,
            "y": rounded_array(busy, 4),
            "marker": {"color": "#e15759"},
        },
        {
            "type": "bar",
            "name": "all idle",
            "x": names,
            "y": rounded_array(idle, 4),
            "marker": {"color": "#76b7b2"},
        },
        {
            "type": "bar",
            "name": "node overhead (CPU, memory, fans)",
            "x": names,
            "y": rounded_array(overhead, 4),
            "marker": {"color": MUTED},
        },
    ]
    pue = ", ".join(f"{r.name} ×{r.pue:g}" for r in cluster.regions)
    lay = layout(
        f"Power: {busy.sum() + overhead.sum():,.1f} kW peak, "
        f"{idle.sum() + overhead.sum():,.1f} kW idle",
        axis("Accelerator type", type="category"),
        axis("Power", "kW", rangemode="tozero"),
        barmode="group",
    )
    data = pd.DataFrame(
        {"type": names, "devices": per, "busy_kw": busy, "idle_kw": idle, "overhead_kw": overhead}
    )
    return Chart(
        title="Power",
        figure={"data": traces, "layout": lay},
        data=data,
        note=f"IT power before PUE; facility power multiplies it by the region's PUE ({pue}).",
    )


def cost(cluster: Any) -> Chart:
    per = cluster.devices_per_type()
    names = list(cluster.type_names)
    price = np.array([t.price_per_hour for t in cluster.types])
    per_hour = price * per
    col = colours(names)
    traces = [
        {
            "type": "bar",
            "name": n,
            "x": [n],
            "y": rounded([float(per_hour[i])], 5),
            "customdata": [float(price[i])],
            "marker": {"color": col[n]},
            "hovertemplate": f"{n}: %{{y:,.2f}} USD/h (%{{customdata:.3g}} USD per device-hour)"
            "<extra></extra>",
        }
        for i, n in enumerate(names)
    ]
    lay = layout(
        f"Cloud cost: {per_hour.sum():,.2f} USD per hour",
        axis("Accelerator type", type="category"),
        axis("Cost", "USD/h", rangemode="tozero"),
        showlegend=False,
        barmode="overlay",
    )
    data = pd.DataFrame(
        {"type": names, "devices": per, "usd_per_device_hour": price, "usd_per_hour": per_hour}
    )
    return Chart(
        title="Cloud cost per hour",
        figure={"data": traces, "layout": lay},
        data=data,
        note="On-demand device prices (they include power), every device rented for the hour;"
        " runs report this cost for the device-hours they held (cost_cloud_usd) and, separately,"
        " the owned cluster's capital and energy (cost_owned_usd).",
    )


def carbon_profile(cluster: Any) -> Chart:
    from clustersim.carbon import load_zone

    title = "Carbon intensity of the regions over the year"
    day = pd.date_range("2023-01-01", periods=365, freq="D").strftime("%Y-%m-%d").tolist()
    traces: list[dict[str, Any]] = []
    frames = []
    notes = []
    for i, region in enumerate(cluster.regions):
        colour = PALETTE[(i + 4) % len(PALETTE)]
        if region.carbon_zone:
            values = np.asarray(load_zone(region.carbon_zone).values, dtype=np.float64)
            daily = values[: 365 * 24].reshape(365, 24)
            lo, mean, hi = daily.min(axis=1), daily.mean(axis=1), daily.max(axis=1)
            name = f"{region.name} ({region.carbon_zone})"
            traces.append(
                {
                    "type": "scatter",
                    "mode": "lines",
                    "x": day,
                    "y": rounded_array(hi, 4),
                    "line": {"width": 0},
                    "showlegend": False,
                    "hoverinfo": "skip",
                    "legendgroup": name,
                }
            )
            traces.append(
                {
                    "type": "scatter",
                    "mode": "lines",
                    "x": day,
                    "y": rounded_array(lo, 4),
                    "line": {"width": 0},
                    "fill": "tonexty",
                    "fillcolor": _alpha(colour, 0.25),
                    "name": f"{name}: daily range",
                    "legendgroup": name,
                    "hoverinfo": "skip",
                }
            )
            traces.append(
                {
                    "type": "scatter",
                    "mode": "lines",
                    "x": day,
                    "y": rounded_array(mean, 4),
                    "line": {"color": colour, "width": 1.5},
                    "name": f"{name}: daily mean",
                    "legendgroup": name,
                    "hovertemplate": "%{x}: %{y:.0f} g CO₂e/kWh<extra>" + name + "</extra>",
                }
            )
            frames.append(
                pd.DataFrame(
                    {
                        "region": region.name,
                        "zone": region.carbon_zone,
                        "hour_utc": pd.date_range(
                            "2023-01-01", periods=len(values), freq="h"
                        ).strftime("%Y-%m-%dT%H:%M"),
                        "g_co2e_per_kwh": values,
                    }
                )
            )
        else:
            traces.append(
                {
                    "type": "scatter",
                    "mode": "lines",
                    "x": [day[0], day[-1]],
                    "y": [region.carbon_g_per_kwh] * 2,
                    "name": f"{region.name} (constant)",
                    "line": {"color": colour, "dash": "dash"},
                }
            )
            notes.append(
                f"{region.name} has no carbon zone, so a constant {region.carbon_g_per_kwh:g} "
                "g/kWh is used; set carbon_zone in the spec's regions (e.g. US-CAL-CISO) for "
                "hourly data."
            )
            frames.append(
                pd.DataFrame(
                    {
                        "region": [region.name],
                        "zone": [""],
                        "hour_utc": [""],
                        "g_co2e_per_kwh": [region.carbon_g_per_kwh],
                    }
                )
            )
    lay = layout(
        title,
        axis("Date (hourly data of 2023, UTC)", type="date"),
        axis("Carbon intensity", "g CO₂e/kWh", rangemode="tozero"),
    )
    return Chart(
        title=title,
        figure={"data": traces, "layout": lay},
        data=lambda: pd.concat(frames, ignore_index=True),
        note=" ".join(notes),
    )


def _alpha(hex_colour: str, a: float) -> str:
    r, g, b = (int(hex_colour[i : i + 2], 16) for i in (1, 3, 5))
    return f"rgba({r},{g},{b},{a})"


# -- compare ---------------------------------------------------------------------------------------


def run_label(r: Run) -> str:
    return f"#{r.pk} {label_of(r)} · {r.cluster.name} · ×{r.load_factor:g} · seed {r.seed}"


def compare_series(runs: Sequence[Run]) -> list[Series]:
    colour = colours(label_of(r) for r in runs)
    count: dict[str, int] = {}
    out = []
    for r in runs:
        p = label_of(r)
        count[p] = count.get(p, 0) + 1
        out.append(Series(run_label(r), colour[p], [r], DASHES[(count[p] - 1) % len(DASHES)], p))
    return out


def compare_bars(runs: Sequence[Run], key: str) -> Chart:
    metric = METRICS[key]
    ok = [r for r in runs if r.summary]
    if not ok:
        return empty(metric.label, "None of these runs has results yet: pick succeeded runs.")
    values = _summary_values(ok, key)
    unit, f = metric.display(values)
    colour = colours(label_of(r) for r in ok)
    traces = []
    for p in colour:
        mine = [(r, v) for r, v in zip(ok, values, strict=True) if label_of(r) == p]
        traces.append(
            {
                "type": "bar",
                "name": p,
                "x": [f"#{r.pk}" for r, _ in mine],
                "y": rounded([None if v is None else v * f for _, v in mine]),
                "hovertext": [run_label(r) for r, _ in mine],
                "marker": {"color": colour[p]},
                "hovertemplate": "%{hovertext}<br>%{y:.4g} " + unit + "<extra></extra>",
            }
        )
    better = "higher is better" if metric.higher_is_better else "lower is better"
    lay = layout(
        f"{metric.label} ({better})",
        axis("Run", type="category"),
        axis(metric.label, unit, rangemode="tozero"),
        barmode="overlay",
    )
    data = _run_rows(ok)[["run", "policy", "cluster", "workload", "load_factor", "seed"]]
    return Chart(
        title=metric.label,
        figure={"data": traces, "layout": lay},
        data=data.assign(**{key: values}),
    )
