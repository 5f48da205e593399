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
    LEGEND_MAX_ENTRIES,
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
    key_legend,
    layout,
    log_axis,
    mean_sd,
    pareto_mask,
    rounded,
    rounded_array,
    time_unit,
)
from dashboard.results import (
    Config,
    Grid,
    config_of,
    grid_of,
    label_of,
    parquet_columns,
    timeseries,
)
from planner.models import Run


@dataclass(frozen=True)
class Metric:
    """A summary key and how to show it. ``unit="time"`` picks s/min/h/d from the values."""

    key: str
    label: str
    unit: str
    factor: float = 1.0
    higher_is_better: bool = False
    #: Column header in tables (the full ``label`` becomes its tooltip); ``label`` if empty.
    short: str = ""

    def display(self, values: Sequence[float | None]) -> tuple[str, float]:
        """(unit shown, factor from stored value to shown value)."""
        if self.unit == "time":
            name, scale = time_unit(values)
            return name, 1.0 / scale
        return self.unit, self.factor


METRICS: dict[str, Metric] = {
    m.key: m
    for m in (
        Metric("jobs_completed", "Jobs completed", "jobs", higher_is_better=True),
        Metric("jct_mean_s", "Mean JCT", "time"),
        Metric("jct_p50_s", "Median JCT", "time"),
        Metric("jct_p99_s", "p99 JCT", "time"),
        Metric(
            "wait_mean_s",
            "Mean total wait (JCT − time holding devices)",
            "time",
            short="Mean total wait",
        ),
        Metric("wait_p99_s", "p99 total wait", "time"),
        Metric(
            "queue_delay_mean_s",
            "Mean first-start delay (queueing before first start)",
            "time",
            short="Mean first-start delay",
        ),
        Metric("queue_delay_p99_s", "p99 first-start delay", "time"),
        Metric("makespan_s", "Makespan", "time"),
        Metric("horizon_s", "Cost horizon", "time"),
        Metric("utilisation", "Utilisation", "%", 100.0, higher_is_better=True),
        Metric(
            "jain_index",
            "Jain's fairness index",
            "0–1",
            higher_is_better=True,
            short="Jain's index",
        ),
        Metric("ftf_rho_mean", "Mean finish-time fairness ρ", "ratio", short="Mean ρ"),
        Metric("ftf_rho_max", "Max finish-time fairness ρ", "ratio", short="Max ρ"),
        Metric(
            "cost_owned_usd",
            "Owned cost over the horizon (capital + energy)",
            "USD",
            short="Owned cost (horizon)",
        ),
        Metric(
            "cost_cloud_usd",
            "Cloud cost (on-demand, device-hours held)",
            "USD",
            short="Cloud cost (held)",
        ),
        Metric("cost_usd", "Owned cost over the horizon (cost_usd)", "USD"),
        Metric(
            "work_per_dollar",
            "Work per dollar, owned (completed in the horizon)",
            "reference GPU-h / USD",
            higher_is_better=True,
            short="Work per $, owned",
        ),
        Metric(
            "work_per_dollar_cloud",
            "Work per dollar, cloud",
            "reference GPU-h / USD",
            higher_is_better=True,
            short="Work per $, cloud",
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
    for key in TABLE_METRICS:  # each column in its own unit: a 57 s median is not 0.00066 d
        vals = [v for r in grid.runs for v in _summary_values([r], key)]
        units[key] = METRICS[key].display(vals)
    columns: list[dict[str, Any]] = [
        {"key": "policy", "label": "Policy"},
        {"key": "config", "label": "Configuration"},
        {"key": "seeds", "label": "Seeds", "unit": "runs", "nowrap": True},
    ]
    columns += [
        {
            "key": k,
            "label": METRICS[k].short or METRICS[k].label,
            "help": METRICS[k].label,
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
                    # Plotly draws a cap even for a missing value: show bars only with spread
                    "visible": any(e is not None for e in err),
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
    """Runs drawn as one curve (their seeds pooled) with its label and style.

    ``group`` is what the colour stands for (the policy) and ``variant`` what the dash stands
    for (the configuration); a chart of many series names those in a key legend
    (:func:`dashboard.plotting.key_legend`) instead of every series.
    """

    label: str
    colour: str
    runs: list[Run]
    dash: str = "solid"
    group: str = ""
    variant: str = ""


def _fit_legend(traces: list[dict[str, Any]], series: Sequence[Series]) -> tuple[list, str]:
    """The traces as they are, or with a key legend when there are too many series to name."""
    if len(series) <= LEGEND_MAX_ENTRIES:
        return traces, ""
    colour = {s.group or s.label: s.colour for s in series}
    dash = {s.variant: s.dash for s in series if s.variant}
    if len(dash) > len(DASHES):  # styles repeat: a key would pair one with several configs
        dash = {}
    keyed = key_legend(traces, colour, dash)
    what = "colour: policy" + ("; line style: configuration" if len(dash) > 1 else "")
    return keyed, f"{len(series)} series ({what}); hover a curve to name its run."


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
    shown = [v[v > 0] / scale for _, v in pooled if len(v)]
    lay = layout(
        title,
        log_axis(
            "Job completion time",
            unit,
            [float(x.min()) for x in shown if len(x)] + [float(x.max()) for x in shown if len(x)],
        ),
        axis("Completed jobs", "%", range=[0, 100.5]),
    )
    traces, key_note = _fit_legend(traces, series)

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
    full = f"{full} {key_note}".strip()
    return Chart(title=title, figure={"data": traces, "layout": lay}, data=export, note=full)


def _carbon_varies(ts: dict[str, list[float]]) -> bool:
    """Whether a stored timeline's carbon intensity changes over the run.

    A constant stored as bin averages differs from itself by rounding only (~1e-9).
    """
    ci = np.asarray(ts.get("carbon_intensity_g_per_kwh", []), dtype=np.float64)
    ci = ci[np.isfinite(ci)]
    return len(ci) > 0 and float(np.ptp(ci)) > 1e-6 * max(1.0, float(np.abs(ci).max()))


def timeline_chart(title: str, series: Sequence[Series], kind: str) -> Chart:
    """Utilisation or queue length over time (first run of each series), with the carbon
    intensity of the cluster's region on a right axis when it varies over the run.

    A region without a carbon zone has one constant intensity: a flat line would only repeat
    that number, so it is not drawn and the note gives it instead.
    """
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
    traces, key_note = _fit_legend(traces, [s for s, _, _ in loaded])
    # carbon intensity of the longest run whose intensity varies (the runs of one cluster
    # share its region's); a constant one is only named in the note
    varying = [item for item in loaded if _carbon_varies(item[2])]
    _, shown_run, longest = max(varying or loaded, key=lambda item: item[2]["t_s"][-1])
    yaxis = (
        axis("Utilisation", "%", rangemode="tozero")
        if kind == "utilisation"
        else axis("Jobs waiting", "jobs", rangemode="tozero")
    )
    lay = layout(title, axis("Time since trace start", unit), yaxis)
    ci_all = np.asarray(longest.get("carbon_intensity_g_per_kwh", []), dtype=np.float64)
    several = len({r.cluster_id for _, r, _ in loaded}) > 1
    if varying:
        t, _dt, cols = bin_series(
            longest["t_s"], longest["dt_s"], {"ci": ci_all.tolist()}, per_trace
        )
        where = f" ({shown_run.cluster.name})" if several else ""
        traces.append(
            {
                "type": "scatter",
                "mode": "lines",
                "name": f"carbon intensity{where}",
                "x": rounded_array(t / scale),
                "y": rounded_array(cols["ci"], 4),
                "yaxis": "y2",
                "line": {"color": CARBON, "dash": "dot", "width": 1.2, "shape": "hv"},
                "opacity": 0.8,
                "hovertemplate": "%{y:.0f} g CO₂e/kWh at %{x:.3g} " + unit + "<extra></extra>",
            }
        )
        lay["yaxis2"] = axis(
            "Carbon intensity",
            "g CO₂e/kWh",
            overlaying="y",
            side="right",
            showgrid=False,
            rangemode="tozero",
            tickmode="auto",  # its own round ticks, not the left axis' grid lines
        )
        lay["margin"]["r"] = 70
        region = f"the region of {shown_run.cluster.name}" if several else "the cluster's region"
        carbon_note = f"carbon intensity of {region} on the right axis."
    elif np.isfinite(ci_all).any():
        carbon_note = (
            f"the carbon intensity is a constant {float(ci_all[np.isfinite(ci_all)][0]):.4g} "
            "g CO₂e/kWh over the run (the region has no carbon zone), so it is not drawn."
        )
    else:
        carbon_note = "these runs recorded no carbon intensity."

    def export() -> pd.DataFrame:
        frames = []
        for s, r, ts in loaded:
            frame = pd.DataFrame(ts)
            frame.insert(0, "run", r.pk)
            frame.insert(0, "series", s.label)
            frames.append(frame)
        return pd.concat(frames, ignore_index=True)

    note = f"Time-weighted averages per bin; {carbon_note} {key_note}".strip()
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
    title = f"{what} over time"
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
                        "visible": any(sd is not None for _, sd, _ in st),
                    },
                    "line": {"color": colour[policy], "dash": DASHES[j % len(DASHES)]},
                    "hovertemplate": f"{policy}{suffix}<br>load ×%{{x}}: %{{y:.4g}} {unit}"
                    "<extra></extra>",
                }
            )
    means = [s[0] * f for s in stats.values() if s[0]]
    log = bool(means) and min(means) > 0 and max(means) / min(means) > 50
    # a linear axis starts at zero: a 0.5 % difference must not fill the chart's height
    lay = layout(
        f"{title} (a steep rise marks saturation)",
        axis("Load factor", "× trace arrival rate"),
        log_axis(metric.label, unit, means)
        if log
        else axis(metric.label, unit, rangemode="tozero"),
    )
    note = ""
    if len(traces) > LEGEND_MAX_ENTRIES:
        dashes = {
            f"{cname} · {wname}": DASHES[j % len(DASHES)]
            for j, (_, _, cname, wname) in enumerate(pairs)
        }
        if len(pairs) > len(DASHES):  # styles repeat: leave them out of the key
            dashes = {}
        traces = key_legend(traces, {p: colour[p] for p in grid.policies}, dashes)
        style = "; line style: cluster · workload" if dashes else ""
        note = f"Colour: policy{style}; hover a point to name it."
    data = _run_rows(grid.runs)[["run", "policy", "cluster", "workload", "load_factor", "seed"]]
    return Chart(
        title=title,
        figure={"data": traces, "layout": lay},
        data=data.assign(**{key: _summary_values(grid.runs, key)}),
        note=note,
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
        log_axis("Finish-time fairness ρ", "JCT / isolated JCT", [lo, hi]),
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
        log_axis("Jobs", "count", counts.tolist()) if log else axis("Jobs", "count"),
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
        log_axis("Duration on a P100, gang consolidated", unit, [x[0] / scale, x[-1] / scale]),
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
    """One series per run: colour by policy, line dash by configuration (cluster × workload
    × load), so runs that differ only in their seed share a style."""
    colour = colours(label_of(r) for r in runs)
    grid = grid_of(runs)
    config_dash: dict[Config, str] = {}
    out = []
    for r in runs:
        p = label_of(r)
        config = config_of(r)
        dash = config_dash.setdefault(config, DASHES[len(config_dash) % len(DASHES)])
        out.append(Series(run_label(r), colour[p], [r], dash, p, grid.config_label(config)))
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


# -- per accelerator type --------------------------------------------------------------------------

UTILISATION_PREFIX = "utilisation_"


def type_names(cluster_ids: Sequence[int]) -> dict[str, str]:
    """``{summary key suffix: accelerator type name}`` over these clusters (one query).

    Summaries store per-type values under ``utilisation_<key>``, the key a sanitized type
    name (:func:`clustersim.metrics.name_keys`); this gives the names back for display.
    """
    from clustersim.metrics import name_keys
    from planner.models import Cluster

    out: dict[str, str] = {}
    rows = Cluster.objects.filter(pk__in=set(cluster_ids)).order_by("pk")
    for names in rows.values_list("device_types", flat=True):
        names = [str(n) for n in names or []]
        for key, name in zip(name_keys(names), names, strict=True):
            out.setdefault(key, name)
    return out


def type_keys_in(summaries: Sequence[dict[str, Any] | None]) -> list[str]:
    """Accelerator type keys with a utilisation in any of these summaries, in first-seen order."""
    keys: dict[str, None] = {}
    for s in summaries:
        for k in s or {}:
            if k.startswith(UTILISATION_PREFIX):
                keys[k[len(UTILISATION_PREFIX) :]] = None
    return list(keys)


def type_utilisation(grid: Grid, key: str | None) -> Chart:
    """Utilisation of each accelerator type by policy (mean ± sd over seeds), one config."""
    title = "Utilisation by accelerator type"
    config = _config_or_empty(grid, key, title)
    if isinstance(config, Chart):
        return config
    series = policy_series(grid, config)
    keys = type_keys_in([r.summary for s in series for r in s.runs])
    if not keys:
        return empty(title, "These runs were stored without per-type utilisation: re-run them.")
    names = type_names([config.cluster_id])
    labels = [names.get(k, k) for k in keys]
    traces = []
    seeds_max = 1
    for s in series:
        stats = [mean_sd(_summary_values(s.runs, UTILISATION_PREFIX + k)) for k in keys]
        seeds_max = max([seeds_max, *(n for _, _, n in stats)])
        traces.append(
            {
                "type": "bar",
                "name": s.label,
                "x": labels,
                "y": rounded([None if m is None else 100.0 * m for m, _, _ in stats]),
                "error_y": {
                    "type": "data",
                    "array": rounded([0.0 if sd is None else 100.0 * sd for _, sd, _ in stats]),
                    "visible": seeds_max > 1,
                    "color": "#333",
                },
                "marker": {"color": s.colour},
                "hovertemplate": f"{s.label}<br>%{{x}}: %{{y:.3g}} % busy<extra></extra>",
            }
        )
    lay = layout(
        f"{title} — {grid.config_label(config)}",
        axis("Accelerator type", type="category"),
        axis("Utilisation", "%", range=[0, 100.5]),
        barmode="group",
    )

    def export() -> pd.DataFrame:
        rows = [
            {
                "run": r.pk,
                "policy": s.label,
                "seed": r.seed,
                "accelerator_type": names.get(k, k),
                "utilisation": (r.summary or {}).get(UTILISATION_PREFIX + k),
            }
            for s in series
            for r in s.runs
            for k in keys
        ]
        return pd.DataFrame(rows)

    note = "Busy device-time over the type's device-time in the run's accounting window." + (
        " Error bars: sample standard deviation over seeds." if seeds_max > 1 else ""
    )
    return Chart(title=title, figure={"data": traces, "layout": lay}, data=export, note=note)


# -- per user and per virtual cluster --------------------------------------------------------------

GROUPS = {"user": "user", "vc": "virtual cluster"}
_GROUP_COLUMNS = ("jct", "queue_delay", "attained_gpu_s")


def _no_groups(title: str, column: str) -> Chart:
    what = GROUPS[column]
    return empty(
        title,
        f"This trace names no {what}s (its {column} column is empty), so there is nothing to "
        "break down. Traces that record them (e.g. Alibaba PAI, Helios, Philly's virtual "
        "clusters) fill this chart.",
    )


def _group_codes(frame: pd.DataFrame, column: str) -> tuple[np.ndarray, list[str]]:
    """Each job's group (index into the names) and the group names (``""`` as ``(none)``)."""
    codes, uniques = pd.factorize(frame[column].astype(str), sort=False)
    names = [str(u) or "(none)" for u in uniques]
    return np.asarray(codes, dtype=np.int64), names


def group_stats(frame: pd.DataFrame, column: str, keep: Sequence[str]) -> pd.DataFrame:
    """Per-group outcome of the jobs of one run (or of pooled runs).

    Groups are the values of ``column`` in ``keep`` (``""`` shown as ``(none)``), then one
    row ``N others`` for the rest. Columns: ``group, jobs, completed, jct_mean, jct_p95,
    queue_delay_mean, device_s, device_share`` (share of all the jobs' device-time). Means
    and the p95 (numpy's linear interpolation) are over completed jobs (started ones for the
    queueing delay).
    """
    codes, names = _group_codes(frame, column)
    slot = {name: i for i, name in enumerate(keep)}
    rest = [n for n in names if n not in slot]
    labels = [*keep, *([f"{len(rest)} others"] if rest else [])]
    lut = np.array([slot.get(n, len(keep)) for n in names], dtype=np.int64)
    gid = lut[codes] if len(codes) else np.zeros(0, dtype=np.int64)
    k = len(labels)
    jct = frame["jct"].to_numpy(dtype=np.float64)
    queue = frame["queue_delay"].to_numpy(dtype=np.float64)
    dev = np.nan_to_num(frame["attained_gpu_s"].to_numpy(dtype=np.float64))
    done, started = np.isfinite(jct), np.isfinite(queue)
    jobs = np.bincount(gid, minlength=k)
    completed = np.bincount(gid, weights=done, minlength=k)
    with np.errstate(invalid="ignore", divide="ignore"):
        jct_mean = np.bincount(gid[done], weights=jct[done], minlength=k) / completed
        queue_mean = np.bincount(gid[started], weights=queue[started], minlength=k) / (
            np.bincount(gid, weights=started, minlength=k)
        )
    order = np.lexsort((jct[done], gid[done]))
    sorted_jct, bounds = jct[done][order], np.r_[0, np.cumsum(completed.astype(np.int64))]
    p95 = np.array(
        [
            float(np.percentile(sorted_jct[bounds[g] : bounds[g + 1]], 95))
            if bounds[g + 1] > bounds[g]
            else np.nan
            for g in range(k)
        ]
    )
    device_s = np.bincount(gid, weights=dev, minlength=k)
    total = float(dev.sum())
    out = pd.DataFrame(
        {
            "group": labels,
            "jobs": jobs.astype(np.int64),
            "completed": completed.astype(np.int64),
            "jct_mean": jct_mean,
            "jct_p95": p95,
            "queue_delay_mean": queue_mean,
            "device_s": device_s,
            "device_share": device_s / total if total > 0 else np.full(k, np.nan),
        }
    )
    return out[out["jobs"] > 0].reset_index(drop=True)


def _top_groups(frame: pd.DataFrame, column: str, top: int) -> list[str]:
    """The ``top`` groups with the most device-time (then the most jobs), largest first."""
    codes, names = _group_codes(frame, column)
    dev = np.nan_to_num(frame["attained_gpu_s"].to_numpy(dtype=np.float64))
    held = np.bincount(codes, weights=dev, minlength=len(names))
    jobs = np.bincount(codes, minlength=len(names))
    ranked = np.lexsort((np.arange(len(names)), -jobs, -held))
    n = top + 1 if len(names) == top + 1 else top  # "1 others" would only hide one name
    return [names[i] for i in ranked[:n]]


def group_table(run: Run, column: str, top: int = 15) -> Chart:
    """A run's jobs by user or virtual cluster: JCT and share of device-time of each."""
    what = GROUPS[column]
    title = f"Jobs by {what}: JCT and share of the cluster"
    frame = parquet_columns(run.per_job_id, (column, *_GROUP_COLUMNS))
    if len(frame) == 0 or (frame[column].astype(str) == "").all():
        return _no_groups(title, column)
    keep = _top_groups(frame, column, top)
    stats = group_stats(frame, column, keep)
    unit, scale = time_unit(stats["jct_mean"].tolist())
    columns = [
        {"key": "name", "label": what.capitalize()},
        {"key": "jobs", "label": "Jobs", "unit": "jobs"},
        {"key": "completed", "label": "Completed", "unit": "jobs"},
        {"key": "jct_mean", "label": "Mean JCT", "unit": unit, "better": "lower"},
        {"key": "jct_p95", "label": "p95 JCT", "unit": unit, "better": "lower"},
        {"key": "queue_delay_mean", "label": "Mean queueing delay", "unit": unit},
        {"key": "device_share", "label": "Share of device-time", "unit": "%"},
    ]
    rows = [
        {
            "name": str(rec["group"]),
            "jobs": int(rec["jobs"]),
            "completed": int(rec["completed"]),
            "jct_mean": rounded([rec["jct_mean"] / scale], 4)[0],
            "jct_p95": rounded([rec["jct_p95"] / scale], 4)[0],
            "queue_delay_mean": rounded([rec["queue_delay_mean"] / scale], 4)[0],
            "device_share": rounded([100.0 * rec["device_share"]], 4)[0],
        }
        for rec in stats.to_dict("records")
    ]
    n_groups = int(frame[column].astype(str).nunique())

    def export() -> pd.DataFrame:
        everyone = group_stats(frame, column, list(dict.fromkeys(frame[column].astype(str))))
        return everyone.rename(columns={"group": column})

    shown = (
        f"the {len(keep)} with the most device-time, then the others"
        if n_groups > len(keep)
        else f"all {n_groups}"
    )
    return Chart(
        title=f"{title} ({shown})",
        table={"columns": columns, "rows": rows},
        data=export,
        note="Device-time: device-seconds the jobs held. The export lists every "
        f"{what} (times in seconds).",
    )


def group_jct(grid: Grid, key: str | None, column: str, top: int = 10) -> Chart:
    """Mean JCT of each user or virtual cluster by policy (seeds pooled), one config."""
    what = GROUPS[column]
    title = f"Mean JCT by {what}"
    config = _config_or_empty(grid, key, title)
    if isinstance(config, Chart):
        return config
    series = policy_series(grid, config)
    frames = {
        s.label: pd.concat(
            [parquet_columns(r.per_job_id, (column, *_GROUP_COLUMNS)) for r in s.runs],
            ignore_index=True,
        )
        for s in series
    }
    first = next(iter(frames.values()))
    if len(first) == 0 or (first[column].astype(str) == "").all():
        return _no_groups(title, column)
    keep = _top_groups(first, column, top)
    stats = {p: group_stats(f, column, keep) for p, f in frames.items()}
    unit, scale = time_unit([v for st in stats.values() for v in st["jct_mean"].tolist()])
    traces = []
    for s in series:
        st = stats[s.label]
        traces.append(
            {
                "type": "bar",
                "name": s.label,
                "x": st["group"].astype(str).tolist(),
                "y": rounded((st["jct_mean"] / scale).tolist()),
                "customdata": [
                    [a, b, c]
                    for a, b, c in zip(
                        rounded((st["jct_p95"] / scale).tolist(), 4),
                        rounded((100.0 * st["device_share"]).tolist(), 4),
                        st["jobs"].astype(int).tolist(),
                        strict=True,
                    )
                ],
                "marker": {"color": s.colour},
                "hovertemplate": f"{s.label}<br>%{{x}} (%{{customdata[2]}} jobs): mean "
                f"%{{y:.3g}} {unit}, p95 %{{customdata[0]:.3g}} {unit}<br>"
                "%{customdata[1]:.3g} % of the device-time<extra></extra>",
            }
        )
    lay = layout(
        f"{title} — {grid.config_label(config)}",
        axis(what.capitalize(), type="category"),
        axis("Mean JCT", unit, rangemode="tozero"),
        barmode="group",
    )

    def export() -> pd.DataFrame:
        parts = [st.assign(policy=p) for p, st in stats.items()]
        return pd.concat(parts, ignore_index=True).rename(columns={"group": column})

    n_groups = int(first[column].astype(str).nunique())
    which = (
        f"The {len(keep)} {what}s with the most device-time, then the others"
        if n_groups > len(keep)
        else f"All {n_groups} {what}s"
    )
    return Chart(
        title=title,
        figure={"data": traces, "layout": lay},
        data=export,
        note=f"{which}; seeds pooled. Hover a bar for the p95 JCT and the share of device-time.",
    )
