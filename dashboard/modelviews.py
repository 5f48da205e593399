"""Charts of the optional models (issue 14): a run's power and carbon over time with the
jobs a carbon policy shifted, its rack uplinks, its node failures; carbon against JCT across
compared runs with the savings against each run's baseline. Issue 15: the device count of
resized jobs, and CPU and memory utilisation next to GPU utilisation.

Everything comes from what the worker stored (the time series and its ``models`` record,
the per-job table): nothing re-simulates. The series are computed in :mod:`clustersim.metrics`
(``timeseries``, ``uplink_series``, ``failure_events``, ``start_shifts``,
``carbon_savings``); this module only lays them out.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from dashboard.figures import _carbon_varies, run_label
from dashboard.plotting import (
    CARBON,
    MAX_TIMELINE_POINTS,
    PALETTE,
    Chart,
    axis,
    bin_series,
    empty,
    layout,
    pareto_mask,
    rounded_array,
    time_unit,
)
from dashboard.results import label_of, model_records, parquet_columns, timeseries
from planner.models import Run, RunState

POWER_TITLE = "Power and carbon intensity over time"
UPLINK_TITLE = "Rack uplink utilisation over time"
FAILURE_TITLE = "Node failures and lost work"
DEVICES_TITLE = "Device count over time of resized jobs"
FRAG_TITLE = "GPU fragmentation and allocation over time"
SHARE_MAP_TITLE = "GPU share by node (time-averaged)"
RESOURCES_TITLE = "GPU, CPU and memory utilisation over time"
#: The resource lines: time-series key, legend, colour.
_RESOURCES = (
    ("utilisation", "GPUs", "#1f77b4"),
    ("cpu_utilisation", "CPU cores", "#ff7f0e"),
    ("mem_utilisation", "Host memory", "#2ca02c"),
)
#: Resized jobs drawn at most, most resizes first (exports list every job's series).
MAX_DEVICE_JOBS = 12
PARETO_TITLE = "Carbon vs mean JCT, with savings against each run's baseline"
#: Markers of shifted jobs drawn at most (the longest delays; exports list them all).
MAX_SHIFT_MARKERS = 2000
#: Nodes drawn one row each at most; beyond, one row per accelerator type (pool).
MAX_FAILURE_ROWS = 60
_STATES = (("busy", "Busy devices", "#1f77b4"), ("idle", "Idle (nodes on)", "#aec7e8"))
_WAKE = ("wake", "Waking nodes", "#ff7f0e")


def _policy_flags(run: Run) -> tuple[bool, bool]:
    """(declares the power model, shifts by carbon) for the run's policy."""
    from scheduling.carbon_shift import CarbonWrapper
    from scheduling.registry import POLICIES
    from scheduling.wrapped import PowerWrapper

    cls = POLICIES.get(run.policy)
    if cls is None:
        return False, False
    return issubclass(cls, PowerWrapper), issubclass(cls, CarbonWrapper)


def run_models(run: Run) -> dict[str, bool]:
    """Which model charts a succeeded run can show: ``power`` (a power policy, a carbon
    policy, or a carbon intensity that varies over the run), ``uplinks`` (network
    contention on), ``failures`` (node failures on), ``devices`` (jobs were resized:
    elastic jobs under an elastic policy), ``resources`` (CPU and memory modelled: some
    job had a demand for a resource some node limits, ``docs/resources.md``) and
    ``gpushare`` (GPU sharing on: a placement of the FGD paper)."""
    out = {"power": False, "uplinks": False, "failures": False, "devices": False}
    out["resources"] = False
    out["gpushare"] = False
    out["devices"] = (
        run.state == RunState.SUCCEEDED
        and run.stints_id is not None
        and bool((run.summary or {}).get("resizes"))
    )
    if run.state != RunState.SUCCEEDED or not run.timeseries_id:
        return out
    power, carbon = _policy_flags(run)
    ts = timeseries(run.timeseries_id)
    models = model_records(run.timeseries_id)
    out["power"] = "power_busy_kw" in ts and (power or carbon or _carbon_varies(ts))
    out["uplinks"] = bool(models.get("uplinks", {}).get("t_s"))
    out["failures"] = "failures" in models
    out["resources"] = "cpu_utilisation" in ts or "mem_utilisation" in ts
    out["gpushare"] = "gpushare" in models
    return out


def resources(run: Run) -> Chart:
    """GPU utilisation with the CPU and memory utilisation of the same bins, for a run with
    CPU and memory modelled (the series :func:`clustersim.metrics.aux_series` stored)."""
    ts = timeseries(run.timeseries_id) if run.timeseries_id else {}
    if not ts.get("t_s"):
        return empty(RESOURCES_TITLE, "This run has no timeline (nothing ran).")
    shown = [item for item in _RESOURCES if item[0] in ts]
    if len(shown) == 1:
        return empty(
            RESOURCES_TITLE,
            "CPU and memory were not modelled in this run: no job had a demand for a resource"
            " some node limits. Give the cluster's pools cpu_cores or host_mem_gb and the"
            " experiment a CPU/memory demand rule (docs/resources.md); a run stored before"
            " the series were kept needs a re-run.",
        )
    cols: dict[str, Sequence[float]] = {key: ts[key] for key, *_ in shown}
    t, dt, binned = bin_series(ts["t_s"], ts["dt_s"], cols, MAX_TIMELINE_POINTS)
    unit, scale = time_unit([float(t[-1] + dt[-1])])
    x = rounded_array(t / scale)
    traces = [
        {
            "type": "scatter",
            "mode": "lines",
            "name": label,
            "x": x,
            "y": rounded_array(binned[key] * 100.0, 4),
            "line": {"color": colour, "width": 1.5, "shape": "hv"},
            "hovertemplate": f"{label}<br>%{{x:.3g}} {unit}: %{{y:.3g}} %<extra></extra>",
        }
        for key, label, colour in shown
    ]
    lay = layout(
        RESOURCES_TITLE,
        axis("Time since trace start", unit),
        axis("Utilisation", "%", rangemode="tozero"),
    )
    summary = run.summary or {}
    means = [
        f"{label.lower()} {100.0 * summary[key]:.3g} %"
        for key, label, _ in shown
        if isinstance(summary.get(key), int | float)
    ]
    note = (
        "Allocated over available, time-weighted per bin: busy devices over all devices;"
        " cores (GB) the running jobs hold over the cores (GB) of the nodes with a limit"
        " (nodes without one count in neither)."
    )
    if means:
        note += " Over the run: " + ", ".join(means) + "."

    def export() -> pd.DataFrame:
        return pd.DataFrame(
            {"t_s": ts["t_s"], "dt_s": ts["dt_s"], **{key: ts[key] for key, *_ in shown}}
        )

    return Chart(
        title=RESOURCES_TITLE, figure={"data": traces, "layout": lay}, data=export, note=note
    )


def _siblings(run: Run) -> list[Run]:
    return list(
        Run.objects.filter(experiment_id=run.experiment_id, state=RunState.SUCCEEDED).only(
            "id",
            "policy",
            "params",
            "cluster_id",
            "workload_id",
            "load_factor",
            "seed",
            "seed_independent",
            "per_job_id",
            "summary",
        )
    )


def _step_at(edges: np.ndarray, values: np.ndarray, t: np.ndarray) -> np.ndarray:
    """The step function (``values`` between ``edges``) at times ``t``."""
    i = np.clip(np.searchsorted(edges, t, side="right") - 1, 0, len(values) - 1)
    return np.asarray(values[i], dtype=np.float64)


def power_carbon(run: Run) -> Chart:
    """Facility power by state, stacked, the carbon intensity on a right axis when it varies,
    and, for a run with a baseline (:mod:`planner.baselines`), the jobs that started later
    than in the baseline, marked at their start with the delay in the hover."""
    from clustersim.metrics import start_shifts
    from planner.baselines import find_baseline

    ts = timeseries(run.timeseries_id) if run.timeseries_id else {}
    if not ts.get("t_s"):
        return empty(POWER_TITLE, "This run has no timeline (nothing ran).")
    if "power_busy_kw" not in ts:
        return empty(
            POWER_TITLE,
            "This run was stored before power was kept by state: re-run the experiment.",
        )
    power, carbon = _policy_flags(run)
    if not (power or carbon or _carbon_varies(ts)):
        return empty(
            POWER_TITLE,
            "This run had no power or carbon policy and a constant carbon intensity: its "
            "energy and carbon are in the summary.",
        )
    names = [s for s, *_ in _STATES]
    wake = bool(np.any(np.asarray(ts["power_wake_kw"]) > 0))
    states = [*_STATES, _WAKE] if wake else list(_STATES)
    if wake:
        names.append("wake")
    cols = {n: ts[f"power_{n}_kw"] for n in names}
    cols["ci"] = ts["carbon_intensity_g_per_kwh"]
    t, dt, binned = bin_series(ts["t_s"], ts["dt_s"], cols, MAX_TIMELINE_POINTS)
    end = float(t[-1] + dt[-1])
    unit, scale = time_unit([end])
    x = rounded_array(t / scale)
    traces: list[dict[str, Any]] = []
    for key, label, colour in states:
        traces.append(
            {
                "type": "scatter",
                "mode": "lines",
                "name": label,
                "x": x,
                "y": rounded_array(binned[key], 4),
                "stackgroup": "power",
                "line": {"color": colour, "width": 0.8, "shape": "hv"},
                "hovertemplate": f"{label}<br>%{{x:.3g}} {unit}: %{{y:.3g}} kW<extra></extra>",
            }
        )
    lay = layout(
        POWER_TITLE,
        axis("Time since trace start", unit),
        axis("Facility power (incl. PUE)", "kW", rangemode="tozero"),
    )
    notes = ["Facility power by state (time-weighted averages per bin), stacked."]
    if _carbon_varies(ts):
        traces.append(
            {
                "type": "scatter",
                "mode": "lines",
                "name": "Carbon intensity",
                "x": x,
                "y": rounded_array(binned["ci"], 4),
                "yaxis": "y2",
                "line": {"color": CARBON, "width": 1.4, "shape": "hv"},
                "hovertemplate": f"%{{x:.3g}} {unit}: %{{y:.4g}} g CO₂e/kWh<extra></extra>",
            }
        )
        lay["yaxis2"] = axis(
            "Carbon intensity",
            "g CO₂e/kWh",
            overlaying="y",
            side="right",
            showgrid=False,
            rangemode="tozero",
            tickmode="auto",
        )
        lay["margin"]["r"] = 70
        notes.append("Carbon intensity of the cluster's region on the right axis.")
    else:
        notes.append("The carbon intensity is constant over the run, so it is not drawn.")
    shifts = pd.DataFrame(columns=["job_id", "first_start_s", "delay_s"])
    base = find_baseline(run, _siblings(run))
    if base is None:
        notes.append(
            "Shifted jobs are marked against the run of the base policy alone; this "
            "experiment has none for this run (docs/carbon.md)."
        )
    elif run.per_job_id and base.per_job_id:
        mine = parquet_columns(run.per_job_id, ("job_id", "first_start"))
        theirs = parquet_columns(base.per_job_id, ("first_start",))
        rows, delay = start_shifts(
            mine["first_start"].to_numpy(dtype=np.float64),
            theirs["first_start"].to_numpy(dtype=np.float64),
        )
        start = mine["first_start"].to_numpy(dtype=np.float64)[rows]
        shifts = pd.DataFrame(
            {
                "job_id": mine["job_id"].to_numpy()[rows],
                "first_start_s": start,
                "delay_s": delay,
            }
        )
        shown = np.argsort(-delay, kind="stable")[:MAX_SHIFT_MARKERS]
        edges = np.r_[t, end]
        total = sum(binned[k] for k in names)
        if len(shown):
            d_unit, d_scale = time_unit([float(delay[shown].max())])
            traces.append(
                {
                    "type": "scatter",
                    "mode": "markers",
                    "name": f"Started later than under {base.policy}",
                    "x": rounded_array(start[shown] / scale),
                    "y": rounded_array(_step_at(edges, np.asarray(total), start[shown]), 4),
                    "marker": {"symbol": "triangle-right", "size": 7, "color": "#d62728"},
                    "customdata": [
                        [str(j), float(f"{d / d_scale:.3g}")]
                        for j, d in zip(
                            shifts["job_id"].to_numpy()[shown], delay[shown], strict=True
                        )
                    ],
                    "hovertemplate": f"job %{{customdata[0]}}<br>started at %{{x:.3g}} {unit}, "
                    f"%{{customdata[1]}} {d_unit} later than under {base.policy}"
                    "<extra></extra>",
                }
            )
        more = "" if len(rows) <= MAX_SHIFT_MARKERS else f" (the {MAX_SHIFT_MARKERS} longest)"
        notes.append(
            f"{len(rows)} jobs started later than in run #{base.pk} ({base.policy} alone), "
            f"marked at their start{more}."
        )

    def export() -> pd.DataFrame:
        frame = pd.DataFrame({k: ts[k] for k in ("t_s", "dt_s", "power_kw")})
        for n in ("busy", "idle", "wake"):
            frame[f"power_{n}_kw"] = ts[f"power_{n}_kw"]
        frame["carbon_intensity_g_per_kwh"] = ts["carbon_intensity_g_per_kwh"]
        frame["carbon_rate_kg_per_h"] = ts["carbon_rate_kg_per_h"]
        if len(shifts):
            return pd.concat(
                [frame.assign(kind="timeline"), shifts.assign(kind="shifted job")],
                ignore_index=True,
            )
        return frame

    return Chart(
        title=POWER_TITLE,
        figure={"data": traces, "layout": lay},
        data=export,
        note=" ".join(notes),
    )


def uplinks(run: Run) -> Chart:
    """Each rack uplink's utilisation over time as a heatmap (racks × time)."""
    rec = model_records(run.timeseries_id).get("uplinks") if run.timeseries_id else None
    if not rec or not rec.get("t_s"):
        return empty(UPLINK_TITLE, "This run had no network contention (or no multi-node job).")
    t = np.asarray(rec["t_s"], dtype=np.float64)
    dt = np.asarray(rec["dt_s"], dtype=np.float64)
    unit, scale = time_unit([float(t[-1] + dt[-1])])
    util = np.asarray(rec["utilisation"], dtype=np.float64)
    racks = [f"rack {i}" for i in range(len(util))]
    mean = rec.get("mean") or []
    figure = {
        "data": [
            {
                "type": "heatmap",
                "x": rounded_array((t + dt / 2) / scale),
                "y": racks,
                "z": [rounded_array(row * 100.0, 4) for row in util],
                "zmin": 0,
                "zmax": 100,
                "colorscale": "Blues",
                "colorbar": {"title": {"text": "%"}},
                "hovertemplate": f"%{{y}}, %{{x:.3g}} {unit}: %{{z:.3g}} %<extra></extra>",
            }
        ],
        "layout": layout(
            UPLINK_TITLE,
            axis("Time since trace start", unit),
            {"title": {"text": "Rack"}, "automargin": True, "type": "category"},
            height=max(240, 60 + 18 * len(racks)),
        ),
    }
    busiest = int(np.argmax(mean)) if mean else None
    note = "Bandwidth given to the gangs crossing each uplink over its capacity, per bin."
    if busiest is not None:
        share = 100 * mean[busiest]
        note += f" Over the run the busiest uplink, rack {busiest}, carried {share:.3g} %."

    def export() -> pd.DataFrame:
        return pd.DataFrame(
            {
                "rack": np.repeat(np.arange(len(util)), len(t)),
                "t_s": np.tile(t, len(util)),
                "dt_s": np.tile(dt, len(util)),
                "utilisation": util.reshape(-1),
            }
        )

    return Chart(title=UPLINK_TITLE, figure=figure, data=export, note=note)


def failure_rows(events: dict[str, list[Any]], max_rows: int = MAX_FAILURE_ROWS) -> list[str]:
    """The row label of each failure: its node (``node 3 · V100``), or its accelerator type
    (pool) when more than ``max_rows`` nodes failed."""
    nodes, types = events["node"], events["accel_type"]
    if len(set(nodes)) <= max_rows:
        return [f"node {n} · {ty}" for n, ty in zip(nodes, types, strict=True)]
    return [str(ty) for ty in types]


def failures(run: Run) -> Chart:
    """Each node's downtime (failure → repair) as a bar on its row, hover the jobs killed
    and the work lost, and the cumulative lost work on a right axis."""
    ev = model_records(run.timeseries_id).get("failures") if run.timeseries_id else None
    if not ev:
        return empty(FAILURE_TITLE, "This run had node failures off.")
    if not ev["node"]:
        return empty(FAILURE_TITLE, "No node failed during this run.")
    down = np.asarray(ev["down_s"], dtype=np.float64)
    up = np.asarray(ev["up_s"], dtype=np.float64)
    lost = np.asarray(ev["lost_device_h"], dtype=np.float64)
    killed = np.asarray(ev["killed"], dtype=np.int64)
    unit, scale = time_unit([float(max(up.max(), down.max()))])
    rows = failure_rows(ev)
    order = np.argsort(down, kind="stable")
    cum = np.cumsum(lost[order])
    traces = [
        {
            "type": "bar",
            "orientation": "h",
            "name": "Down (failure → repair)",
            "y": rows,
            "base": rounded_array(down / scale),
            "x": rounded_array((up - down) / scale),
            "marker": {"color": "#d62728"},
            "customdata": [
                [
                    float(f"{d / scale:.4g}"),
                    float(f"{u / scale:.4g}"),
                    int(k),
                    float(f"{h:.3g}"),
                    "" if ok else " (still down at the end)",
                ]
                for d, u, k, h, ok in zip(down, up, killed, lost, ev["repaired"], strict=True)
            ],
            "hovertemplate": f"%{{y}}: down %{{customdata[0]}}–%{{customdata[1]}} {unit}"
            "%{customdata[4]}<br>%{customdata[2]} jobs killed, "
            "%{customdata[3]} device-h of work lost<extra></extra>",
        },
        {
            "type": "scatter",
            "mode": "lines",
            "name": "Lost work, cumulative",
            "x": rounded_array(np.r_[0.0, down[order]] / scale),
            "y": rounded_array(np.r_[0.0, cum], 4),
            "xaxis": "x",
            "yaxis": "y2",
            "line": {"color": "#444", "width": 1.4, "shape": "hv"},
            "hovertemplate": f"%{{x:.3g}} {unit}: %{{y:.3g}} device-h lost<extra></extra>",
        },
    ]
    lay = layout(
        FAILURE_TITLE,
        axis("Time since trace start", unit),
        {"title": {"text": "Node"}, "automargin": True, "type": "category"},
        height=max(260, 80 + 16 * len(set(rows))),
        barmode="overlay",
    )
    lay["yaxis2"] = axis(
        "Lost work", "device-h", overlaying="y", side="right", showgrid=False, rangemode="tozero"
    )
    lay["margin"]["r"] = 70
    by = "node" if rows and rows[0].startswith("node ") else "accelerator type"
    note = (
        f"{len(down)} failures, one row per {by}; {int(killed.sum())} job kills, "
        f"{float(lost.sum()):.3g} device-hours of computing redone."
    )

    def export() -> pd.DataFrame:
        return pd.DataFrame(ev)

    figure = {"data": traces, "layout": lay}
    return Chart(title=FAILURE_TITLE, figure=figure, data=export, note=note)


def device_count(run: Run) -> Chart:
    """The device count of the most resized jobs over time, one step line each (from the
    run's stints: :func:`clustersim.elastic.device_counts`)."""
    from clustersim.elastic import device_counts, resized_jobs
    from dashboard.results import stint_columns

    if run.stints_id is None:
        return empty(DEVICES_TITLE, "This run kept no stints (re-run it to see its devices).")
    st = stint_columns(run.stints_id)
    job, t, count = device_counts(st.job, st.devices, st.start, st.end)
    every = resized_jobs(job, count)
    if not len(every):
        return empty(
            DEVICES_TITLE,
            "No job changed its device count in this run: only the elastic policies (afs,"
            " optimus, pollux) resize jobs, and only jobs with bounds (the experiment's elastic"
            " rule, e.g. x0.5-x2, or min_gpus/max_gpus columns in the workload); singularity"
            " resizes any job by splicing.",
        )
    shown = every[:MAX_DEVICE_JOBS]
    ids = parquet_columns(run.per_job_id, ["job_id"])["job_id"].astype(str).to_numpy()
    unit, scale = time_unit([float(t.max())])
    traces = []
    for k, j in enumerate(shown.tolist()):
        m = job == j
        name = f"job {ids[j]}" if j < len(ids) else f"job row {j}"
        traces.append(
            {
                "type": "scatter",
                "mode": "lines",
                "name": name,
                "x": rounded_array(t[m] / scale),
                "y": count[m].tolist(),
                "line": {"shape": "hv", "width": 1.5, "color": PALETTE[k % len(PALETTE)]},
                "hovertemplate": f"{name}: %{{y}} devices from %{{x:.4g}} {unit}<extra></extra>",
            }
        )
    lay = layout(
        DEVICES_TITLE,
        axis("Time since trace start", unit),
        axis("Devices held", rangemode="tozero"),
    )
    note = (
        f"{len(every)} jobs ran on more than one device count; the {len(shown)} resized most"
        " often are drawn (0: waiting or suspended). The export has every job's series."
    )

    def export() -> pd.DataFrame:
        return pd.DataFrame(
            {
                "job": job,
                "job_id": [ids[j] if j < len(ids) else "" for j in job.tolist()],
                "t_s": t,
                "devices": count,
            }
        )

    return Chart(
        title=DEVICES_TITLE, figure={"data": traces, "layout": lay}, data=export, note=note
    )


def savings_label(saving: dict[str, Any], baseline_label: str) -> str:
    """``saved 2 kg (20 %) vs #3 fifo, JCT +20 %`` from a :func:`planner.baselines.savings`
    entry (``–`` for what is undefined)."""

    def num(v: Any, fmt: str) -> str:
        return "–" if v is None else format(float(v), fmt)

    kg, pct = saving.get("carbon_saved_kg"), saving.get("carbon_saved_pct")
    verb = "saved" if kg is None or kg >= 0 else "added"
    size = None if kg is None else abs(float(kg))
    pct_abs = None if pct is None else abs(float(pct))
    jct = saving.get("jct_mean_cost_pct")
    jct_text = "–" if jct is None else f"{float(jct):+.3g} %"
    return (
        f"{verb} {num(size, '.3g')} kg ({num(pct_abs, '.3g')} %) vs {baseline_label}, "
        f"JCT {jct_text}"
    )


def carbon_pareto(runs: Sequence[Run], baseline: Run | None = None) -> Chart:
    """Carbon (x) against mean JCT (y), one point per run, the non-dominated ones joined,
    each run with a baseline annotated with its savings (:mod:`planner.baselines`)."""
    from planner.baselines import savings

    done = [r for r in runs if r.summary]
    pts = [
        (r, (r.summary or {}).get("carbon_kg"), (r.summary or {}).get("jct_mean_s")) for r in done
    ]
    pts = [(r, float(x), float(y)) for r, x, y in pts if x is not None and y is not None]
    if not pts:
        return empty(PARETO_TITLE, "No run has both a carbon figure and a mean JCT.")
    xs = np.array([p[1] for p in pts])
    ys = np.array([p[2] for p in pts])
    front = pareto_mask(xs, ys)
    y_unit, y_scale = time_unit(ys.tolist())
    labels = [run_label(r) for r, _, _ in pts]
    policies = list(dict.fromkeys(label_of(r) for r, _, _ in pts))
    colour = {p: PALETTE[i % len(PALETTE)] for i, p in enumerate(policies)}
    traces: list[dict[str, Any]] = []
    for p in policies:
        idx = [i for i, (r, _, _) in enumerate(pts) if label_of(r) == p]
        traces.append(
            {
                "type": "scatter",
                "mode": "markers",
                "name": p,
                "x": rounded_array(xs[idx]),
                "y": rounded_array(ys[idx] / y_scale),
                "text": [labels[i] for i in idx],
                "marker": {
                    "color": colour[p],
                    "size": 10,
                    "line": {"width": [2 if front[i] else 0 for i in idx], "color": "#000"},
                },
                "hovertemplate": f"%{{text}}<br>%{{x:.4g}} kg, %{{y:.4g}} {y_unit}<extra></extra>",
            }
        )
    f_idx = np.flatnonzero(front)
    f_idx = f_idx[np.argsort(xs[f_idx])]
    traces.append(
        {
            "type": "scatter",
            "mode": "lines",
            "name": "Pareto front",
            "x": rounded_array(xs[f_idx]),
            "y": rounded_array(ys[f_idx] / y_scale),
            "line": {"color": "#888", "dash": "dot", "width": 1.2, "shape": "hv"},
            "hoverinfo": "skip",
        }
    )
    found = savings([r for r, _, _ in pts], baseline)
    where = {r.pk: i for i, (r, _, _) in enumerate(pts)}
    annotations = []
    for s in found:
        i = where[s["run"]]
        b_run = pts[where[s["baseline"]]][0] if s["baseline"] in where else None
        b_label = f"#{s['baseline']} {b_run.policy if b_run else s['baseline_policy']}"
        annotations.append(
            {
                "x": float(xs[i]),
                "y": float(ys[i] / y_scale),
                "text": savings_label(s, b_label),
                "showarrow": True,
                "arrowhead": 0,
                "ax": 0,
                "ay": -28,
                "font": {"size": 10},
                "bgcolor": "rgba(255,255,255,0.8)",
            }
        )
    lay = layout(
        PARETO_TITLE,
        axis("Carbon", "kg CO₂e", rangemode="tozero"),
        axis("Mean JCT", y_unit, rangemode="tozero"),
        annotations=annotations,
    )
    rule = (
        f"against run #{baseline.pk}"
        if baseline is not None
        else "against the run of its base policy alone among these runs (same cluster, "
        "workload, load and seed; docs/carbon.md)"
    )
    note = (
        f"Non-dominated runs ringed and joined. {len(found)} runs annotated with the carbon "
        f"saved and the mean JCT it cost {rule}."
    )

    def export() -> pd.DataFrame:
        frame = pd.DataFrame(
            {
                "run": [r.pk for r, _, _ in pts],
                "label": labels,
                "carbon_kg": xs,
                "jct_mean_s": ys,
                "pareto": front,
            }
        )
        if found:
            frame = frame.merge(pd.DataFrame(found), how="left", on="run")
        return frame

    return Chart(title=PARETO_TITLE, figure={"data": traces, "layout": lay}, data=export, note=note)


def fragmentation(run: Run) -> Chart:
    """FGD's fragmentation rate and the allocated GPU share over time, for a run with GPU
    sharing on (:func:`clustersim.metrics.gpushare_series`)."""
    rec = model_records(run.timeseries_id).get("gpushare") if run.timeseries_id else None
    if not rec:
        return empty(FRAG_TITLE, "This run had GPU sharing off (choose a placement of the FGD "
                     "paper, e.g. fgd, to turn it on).")  # fmt: skip
    if not rec.get("t_s"):
        return empty(FRAG_TITLE, "Nothing was allocated during this run.")
    t = np.asarray(rec["t_s"], dtype=np.float64)
    dt = np.asarray(rec["dt_s"], dtype=np.float64)
    unit, scale = time_unit([float(t[-1] + dt[-1])])
    x = rounded_array(t / scale)
    frag = np.asarray(rec["frag_rate"], dtype=np.float64) * 100.0
    alloc = np.asarray(rec["allocated_share"], dtype=np.float64) * 100.0
    traces = [
        {
            "type": "scatter",
            "mode": "lines",
            "name": "Fragmentation rate",
            "x": x,
            "y": rounded_array(frag, 4),
            "line": {"color": PALETTE[3], "width": 1.2, "shape": "hv"},
            "hovertemplate": f"%{{x:.3g}} {unit}: %{{y:.3g}} % of idle GPU fragmented"
            "<extra></extra>",
        },
        {
            "type": "scatter",
            "mode": "lines",
            "name": "Allocated GPU share",
            "x": x,
            "y": rounded_array(alloc, 4),
            "line": {"color": PALETTE[0], "width": 1.2, "shape": "hv"},
            "hovertemplate": f"%{{x:.3g}} {unit}: %{{y:.3g}} % of GPU allocated<extra></extra>",
        },
    ]
    lay = layout(
        FRAG_TITLE,
        axis("Time since trace start", unit),
        axis("Share", "%", rangemode="tozero"),
    )
    note = (
        "Fragmentation rate as the FGD paper defines it: the idle GPU milli that a job drawn "
        "from the workload's typical jobs could not use, over all idle GPU milli "
        "(time-weighted per bin). "
        f"{rec.get('shared_jobs', 0)} jobs asked for a share of a GPU; interference "
        f"coefficient {rec.get('interference', 0):.3g} (docs/gpu-sharing.md)."
    )

    def export() -> pd.DataFrame:
        return pd.DataFrame(
            {
                "t_s": t,
                "dt_s": dt,
                "frag_rate": rec["frag_rate"],
                "allocated_share": rec["allocated_share"],
            }
        )

    return Chart(title=FRAG_TITLE, figure={"data": traces, "layout": lay}, data=export, note=note)


def share_map(run: Run) -> Chart:
    """Each GPU of each node, its time-averaged allocated milli, as a heatmap (GPU index ×
    node), for a run with GPU sharing on."""
    rec = model_records(run.timeseries_id).get("gpushare") if run.timeseries_id else None
    if not rec or not rec.get("node_gpus"):
        return empty(SHARE_MAP_TITLE, "This run had GPU sharing off.")
    milli = np.asarray(rec["node_gpu_milli"], dtype=np.float64)  # (nodes, width)
    gpus = np.asarray(rec["node_gpus"], dtype=np.int64)
    width = milli.shape[1] if milli.ndim == 2 else 0
    z = np.where(np.arange(width)[None, :] < gpus[:, None], milli, np.nan).T
    nodes = [f"node {i}" for i in range(len(gpus))]
    figure = {
        "data": [
            {
                "type": "heatmap",
                "x": nodes,
                "y": [f"GPU {g}" for g in range(width)],
                "z": [[None if v != v else round(float(v), 1) for v in row] for row in z],
                "zmin": 0,
                "zmax": 1000,
                "colorscale": "Blues",
                "colorbar": {"title": {"text": "milli"}},
                "hovertemplate": "%{x}, %{y}: %{z:.4g} milli on average<extra></extra>",
            }
        ],
        "layout": layout(
            SHARE_MAP_TITLE,
            {"title": {"text": "Node"}, "type": "category", "showticklabels": len(gpus) <= 60},
            {"title": {"text": "GPU"}, "type": "category", "automargin": True},
            height=max(240, 80 + 24 * width),
        ),
    }
    share = np.asarray(rec["node_share"], dtype=np.float64)
    note = (
        "Milli-GPU allocated on each GPU, averaged over the run (1000 = a whole GPU all the "
        f"time; blank: no such GPU). No GPU ever held more than {rec.get('peak_milli', 0)} "
        "milli."
    )
    if len(share):
        note += f" Busiest node: node {int(np.argmax(share))} ({100 * share.max():.3g} %)."

    def export() -> pd.DataFrame:
        real = np.tile(np.arange(width), len(gpus)) < np.repeat(gpus, width)
        return pd.DataFrame(
            {
                "node": np.repeat(np.arange(len(gpus)), width)[real],
                "gpu": np.tile(np.arange(width), len(gpus))[real],
                "mean_milli": milli.reshape(-1)[real],
            }
        )

    return Chart(title=SHARE_MAP_TITLE, figure=figure, data=export, note=note)
