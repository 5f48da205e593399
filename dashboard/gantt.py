"""The run page's time-window views: jobs over time (Gantt) and placement by node.

Both read the run's stored device stints (``planner.runner.stints_parquet``: one row per job,
node and uninterrupted stint, sorted by start) and its per-job table, decoded once per process
(:func:`dashboard.results.stint_columns`); a request only slices numpy columns to its time
window. Displays are capped (:data:`MAX_GANTT_ROWS` jobs and :data:`MAX_GANTT_BARS` bars; the
node view :data:`MAX_PLACEMENT_NODES` nodes and :data:`MAX_PLACEMENT_BARS` bars) and the
titles say when something is left out; exports give every stint in the window.

Runs stored before stints were recorded have no stints artefact: the Gantt falls back to one
bar per job from first start to finish and says so; the node view says how to get it.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np
import pandas as pd

from dashboard.plotting import Chart, axis, empty, layout, rounded_array, time_unit
from dashboard.results import (
    StintColumns,
    parquet_columns,
    stint_columns,
    stints_rows,
    timeseries,
)
from planner.models import Run

GANG_BUCKETS = (("1 GPU", 1, 1), ("2–4 GPUs", 2, 4), ("5–8 GPUs", 5, 8), ("9+ GPUs", 9, 1 << 62))
GANG_COLOURS = ("#9ecae1", "#4292c6", "#2171b5", "#08306b")
WAITING = "#d9dde4"
SUSPENDED = "#f28e2b"
#: Jobs (rows) and bars of the Gantt; nodes (rows) and bars of the placement view.
MAX_GANTT_ROWS = 250
MAX_GANTT_BARS = 3000
MAX_PLACEMENT_NODES = 100
MAX_PLACEMENT_BARS = 3000
#: Without a 'to', the window ends at about this many arrivals after its start; without
#: either, the busiest window is as long as this many arrivals take at the mean rate.
DEFAULT_WINDOW_JOBS = 150
#: Nodes named in the hover text of one bar of a job spread over many nodes.
HOVER_NODES = 4

_JOB_COLUMNS = ("job_id", "submit", "first_start", "finish", "num_gpus", "user", "preemptions")
NO_STINTS = (
    "This run was stored before placements were recorded, so there is no per-node view of it. "
    "Launch the experiment again (same grid) to record them."
)


@dataclass(frozen=True)
class Window:
    """The chosen time window ``[lo, hi)`` in seconds and the unit it is shown in."""

    lo: float
    hi: float
    t_end: float
    unit: str
    scale: float
    busiest: bool = False

    def label(self) -> str:
        return f"{self.lo / self.scale:.4g}–{self.hi / self.scale:.4g} {self.unit}"

    def described(self) -> str:
        """The label, saying when the window was chosen as the busiest one."""
        return self.label() + (" (the busiest window)" if self.busiest else "")

    def t(self, seconds: np.ndarray) -> list[float | None]:
        return rounded_array(np.asarray(seconds, dtype=np.float64) / self.scale)

    def fmt(self, seconds: float) -> str:
        return f"{seconds / self.scale:.4g}"


def _timeline_end(run: Run, frame: pd.DataFrame) -> float:
    s = run.summary or {}
    if s.get("window_start_s") is not None and s.get("window_s") is not None:
        return float(s["window_start_s"]) + float(s["window_s"])
    fin = frame["finish"].to_numpy()
    fin = fin[np.isfinite(fin)]
    return float(fin.max()) if len(fin) else float(frame["submit"].max())


def running_profile(run: Run, frame: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Jobs running over time as a step function: ``(edges (m+1,), values (m,))``.

    From the run's stored timeline (time-weighted average of running jobs per bin) when it
    has one, else from each job's first start to its finish (preemption gaps not removed).
    """
    ts = timeseries(run.timeseries_id) if run.timeseries_id else {}
    if ts.get("t_s") and ts.get("running"):
        t = np.asarray(ts["t_s"], dtype=np.float64)
        dt = np.asarray(ts["dt_s"], dtype=np.float64)
        return np.r_[t, t[-1] + dt[-1]], np.asarray(ts["running"], dtype=np.float64)
    start = frame["first_start"].to_numpy(dtype=np.float64)
    started = np.isfinite(start)
    end = _job_end(frame, _timeline_end(run, frame))[started]
    start = start[started]
    if len(start) == 0:
        return np.zeros(0), np.zeros(0)
    times = np.r_[start, end]
    steps = np.r_[np.ones(len(start)), -np.ones(len(end))]
    order = np.argsort(times, kind="stable")
    edges, first = np.unique(times[order], return_index=True)
    level = np.cumsum(steps[order])
    # the level after all the events at each edge
    last = np.r_[first[1:], len(order)] - 1
    return edges, level[last][:-1]


def busiest_window(
    edges: np.ndarray, values: np.ndarray, width: float
) -> tuple[float, float] | None:
    """``[lo, lo + width)`` holding the most of the step function (``values`` on the bins
    between ``edges``); the earliest such window. ``None`` when the function is empty.

    The integral over a window is piecewise linear in ``lo`` with kinks where ``lo`` or
    ``lo + width`` crosses an edge, so the best window starts at ``edges`` or
    ``edges - width``: those candidates are all evaluated (exactly, by interpolating the
    cumulative integral).
    """
    if len(values) == 0 or not np.any(values > 0):
        return None
    t0, t1 = float(edges[0]), float(edges[-1])
    if width >= t1 - t0:
        return t0, t1
    cum = np.r_[0.0, np.cumsum(np.asarray(values, dtype=np.float64) * np.diff(edges))]
    lo = np.unique(np.clip(np.r_[edges, edges - width], t0, t1 - width))
    held = np.interp(lo + width, edges, cum) - np.interp(lo, edges, cum)
    best = float(lo[int(np.argmax(held))])
    return best, best + width


def window(run: Run, frame: pd.DataFrame, from_h: float | None, to_h: float | None) -> Window | str:
    """The window asked for (hours since trace start), or why it is empty.

    Without ``from_h`` nor ``to_h`` it is the busiest window (:func:`busiest_window` of the
    running jobs), as long as :data:`DEFAULT_WINDOW_JOBS` arrivals take at the trace's mean
    rate: a trace whose first hours are nearly empty opens where the jobs are. Otherwise,
    without ``from_h`` it starts at the first arrival; without ``to_h`` it ends at about
    :data:`DEFAULT_WINDOW_JOBS` arrivals later (or at the end of the run).
    """
    submit = frame["submit"].to_numpy(dtype=np.float64)
    t_end = _timeline_end(run, frame)
    if from_h is None and to_h is None:
        first, last = float(np.nanmin(submit)), float(np.nanmax(submit))
        width = (last - first) * DEFAULT_WINDOW_JOBS / max(len(submit), 1)
        edges, values = running_profile(run, frame)
        if len(submit) > DEFAULT_WINDOW_JOBS and width > 0:
            found = busiest_window(edges, values, width)
            if found is not None:
                unit, scale = time_unit([width])
                return Window(found[0], found[1], t_end, unit, scale, busiest=True)
    lo = float(np.nanmin(submit)) if from_h is None else from_h * 3600.0
    if to_h is not None:
        hi = to_h * 3600.0
    else:
        later = submit[submit >= lo]
        k = DEFAULT_WINDOW_JOBS - 1
        nth = float(np.partition(later, k)[k]) if len(later) > k else -np.inf
        hi = nth if nth > lo else max(t_end, lo)
    if hi <= lo:
        return "The window is empty: 'to' must be later than 'from'."
    unit, scale = time_unit([hi - lo])
    return Window(lo, hi, t_end, unit, scale)


def _busiest_note(w: Window) -> str:
    if not w.busiest:
        return ""
    return (
        " The page opens on the window with the most running jobs; choose another with "
        "'from' and 'to'."
    )


def _job_end(frame: pd.DataFrame, t_end: float) -> np.ndarray:
    finish = frame["finish"].to_numpy(dtype=np.float64)
    return np.where(np.isfinite(finish), finish, t_end)


def _labels(frame: pd.DataFrame, rows: np.ndarray) -> list[str]:
    """Job ids of ``rows``, made unique (a trace may repeat an id)."""
    labels = [str(x) for x in frame["job_id"].iloc[rows].tolist()]
    seen: dict[str, int] = {}
    for j, lab in enumerate(labels):
        seen[lab] = seen.get(lab, 0) + 1
        if seen[lab] > 1:
            labels[j] = f"{lab} ({seen[lab]})"
    return labels


def _bucket(gpus: np.ndarray) -> np.ndarray:
    """Index into :data:`GANG_BUCKETS` of each job size."""
    out = np.zeros(len(gpus), dtype=np.int64)
    for i, (_, a, b) in enumerate(GANG_BUCKETS):
        out[(gpus >= a) & (gpus <= b)] = i
    return out


@lru_cache(maxsize=64)
def _rack_names(cluster_id: int, updated: str) -> tuple[str, ...]:
    from clustersim.spec import cluster_from_spec
    from dashboard.figures import rack_names
    from planner.models import Cluster

    try:
        c = Cluster.objects.get(pk=cluster_id)
        n_racks = len(cluster_from_spec(c.effective_spec()).rack_oversub)
    except Exception:  # an edited spec that no longer validates: indices only
        return ()
    return tuple(rack_names(c.spec, n_racks))


def rack_label(run: Run) -> Any:
    """``rack(i)``: the name of rack ``i`` of the run's cluster (``rack i`` when unknown).

    Names come from the cluster's current spec; stints store rack indices.
    """
    names = _rack_names(run.cluster_id, run.cluster.updated.isoformat())

    def label(i: int) -> str:
        return names[i] if 0 <= i < len(names) else f"rack {i}"

    return label


def _type_name(st: StintColumns, row: int) -> str:
    t = int(st.type_code[row]) if len(st.type_code) else -1
    return st.type_names[t] if 0 <= t < len(st.type_names) else "?"


def _node_text(st: StintColumns, row: int, rack: Any) -> str:
    return f"node {int(st.node[row])} ({_type_name(st, row)}, {rack(int(st.rack[row]))})"


# -- export ---------------------------------------------------------------------------------------


def stints_in_window(run: Run, frame: pd.DataFrame, w: Window) -> pd.DataFrame:
    """Every stint overlapping the window (all jobs, not the capped display), with its job."""
    st = stint_columns(run.stints_id)
    rows = st.overlapping(w.lo, w.hi)
    raw = stints_rows(run.stints_id, rows)
    job = raw["job"].to_numpy(dtype=np.int64)
    rack = rack_label(run)
    return pd.DataFrame(
        {
            "job_id": raw["job_id"].astype(str),
            "user": frame["user"].iloc[job].to_numpy(),
            "num_gpus": frame["num_gpus"].to_numpy()[job],
            "submit_s": frame["submit"].to_numpy()[job],
            "first_start_s": frame["first_start"].to_numpy()[job],
            "finish_s": frame["finish"].to_numpy()[job],
            "node": raw["node"].to_numpy(),
            "rack": raw["rack"].to_numpy(),
            "rack_name": [rack(int(i)) for i in raw["rack"].tolist()],
            "accel_type": raw["accel_type"].astype(str),
            "devices": raw["devices"].to_numpy(),
            "node_devices": raw["node_devices"].to_numpy(),
            "start_s": raw["start"].to_numpy(),
            "end_s": raw["end"].to_numpy(),
        }
    )


# -- jobs over time --------------------------------------------------------------------------------


def _jobs_and_window(
    run: Run, title: str, from_h: float | None, to_h: float | None
) -> tuple[pd.DataFrame, Window] | Chart:
    """The run's per-job columns and the chosen window, or the empty chart that says why not."""
    frame = parquet_columns(run.per_job_id, _JOB_COLUMNS)
    if len(frame) == 0:
        return empty(title, "This run has no jobs.")
    w = window(run, frame, from_h, to_h)
    if isinstance(w, str):
        return empty(title, w)
    return frame, w


def gantt(run: Run, from_h: float | None, to_h: float | None) -> Chart:
    """Each job of the window: waiting, then its stints (preemption gaps shown), by job size."""
    title = "Jobs over time (Gantt)"
    got = _jobs_and_window(run, title, from_h, to_h)
    if isinstance(got, Chart):
        return got
    frame, w = got
    submit = frame["submit"].to_numpy(dtype=np.float64)
    end = _job_end(frame, w.t_end)
    inside = np.flatnonzero((submit < w.hi) & (end > w.lo))
    if len(inside) == 0:
        return empty(title, f"No job was in the cluster during {w.label()}: widen the window.")
    if run.stints_id is None:
        return _gantt_without_stints(run, frame, w, inside)
    return _gantt_with_stints(run, frame, w, inside)


def _time_axis(w: Window) -> dict[str, Any]:
    """The x axis of the Gantt and placement charts: the window, in its unit."""
    return axis("Time since trace start", w.unit, range=[w.lo / w.scale, w.hi / w.scale])


def _gantt_layout(
    title: str, w: Window, rows: int, labels: list[str], **extra: Any
) -> dict[str, Any]:
    return layout(
        title,
        _time_axis(w),
        axis(
            "Job",
            type="category",
            autorange="reversed",
            showticklabels=rows <= 60,
            categoryorder="array",
            categoryarray=labels,
        ),
        barmode="overlay",
        height=int(max(320, min(1400, 110 + 12 * rows))),
        bargap=0.15,
        **extra,
    )


def _waiting_trace(
    labels: list[str], submit: np.ndarray, until: np.ndarray, w: Window
) -> dict[str, Any]:
    return {
        "type": "bar",
        "orientation": "h",
        "name": "waiting",
        "y": labels,
        "base": w.t(submit),
        "x": w.t(until - submit),
        "marker": {"color": WAITING},
        "hovertemplate": "%{y}: waited %{x:.3g} " + w.unit + " from %{base:.4g}<extra></extra>",
    }


def _gantt_with_stints(run: Run, frame: pd.DataFrame, w: Window, inside: np.ndarray) -> Chart:
    st = stint_columns(run.stints_id)
    shown = inside[:MAX_GANTT_ROWS]
    idx = st.of_jobs(shown)
    # one bar per (job, start, end): a job on several nodes holds them over the same stint
    idx = idx[np.lexsort((st.node[idx], st.end[idx], st.start[idx], st.job[idx]))]
    j, s0, e0 = st.job[idx], st.start[idx], st.end[idx]
    head = np.ones(len(idx), dtype=bool)
    head[1:] = (j[1:] != j[:-1]) | (s0[1:] != s0[:-1]) | (e0[1:] != e0[:-1])
    heads = np.flatnonzero(head)
    g_job, g_start, g_end = j[heads], s0[heads], e0[heads]
    g_dev = np.add.reduceat(st.devices[idx], heads) if len(idx) else np.zeros(0, np.int64)
    g_stop = np.r_[heads[1:], len(idx)]
    # gaps between consecutive stints of a job: suspended (preempted), waiting to resume
    same = g_job[1:] == g_job[:-1]
    p_job, p_start, p_end = g_job[1:][same], g_end[:-1][same], g_start[1:][same]
    p_keep = (p_end > p_start) & (p_start < w.hi) & (p_end > w.lo)
    p_job, p_start, p_end = p_job[p_keep], p_start[p_keep], p_end[p_keep]
    g_keep = np.flatnonzero((g_start < w.hi) & (g_end > w.lo))

    # cap the bars: whole rows (jobs) while they fit, so no job is shown half
    pos_g = np.searchsorted(shown, g_job[g_keep])
    pos_p = np.searchsorted(shown, p_job)
    per_row = (
        1
        + np.bincount(pos_g, minlength=len(shown))[: len(shown)]
        + np.bincount(pos_p, minlength=len(shown))[: len(shown)]
    )
    rows = max(1, int(np.searchsorted(np.cumsum(per_row), MAX_GANTT_BARS, side="right")))
    clipped = False
    if rows < len(shown):
        shown = shown[:rows]
        g_keep = g_keep[pos_g < rows]
        p_sel = pos_p < rows
        p_job, p_start, p_end = p_job[p_sel], p_start[p_sel], p_end[p_sel]
    if len(g_keep) + len(p_job) + rows > MAX_GANTT_BARS:  # one job alone is over the cap
        clipped = True
        room = max(0, MAX_GANTT_BARS - rows)
        g_keep = g_keep[: room - room // 4]
        p_job, p_start, p_end = p_job[: room // 4], p_start[: room // 4], p_end[: room // 4]

    labels = _labels(frame, shown)
    label_of = dict(zip(shown.tolist(), labels, strict=True))
    submit = frame["submit"].to_numpy(dtype=np.float64)[shown]
    first = frame["first_start"].to_numpy(dtype=np.float64)[shown]
    end = _job_end(frame, w.t_end)[shown]
    waited_until = np.where(np.isfinite(first), first, end)
    traces: list[dict[str, Any]] = [_waiting_trace(labels, submit, waited_until, w)]
    if len(p_job):
        traces.append(
            {
                "type": "bar",
                "orientation": "h",
                "name": "preempted, waiting to resume",
                "y": [label_of[int(x)] for x in p_job.tolist()],
                "base": w.t(p_start),
                "x": w.t(p_end - p_start),
                "width": 0.3,
                "marker": {"color": SUSPENDED},
                "hovertemplate": "%{y}: suspended for %{x:.3g} "
                + w.unit
                + " from %{base:.4g}<extra></extra>",
            }
        )
    gpus = frame["num_gpus"].to_numpy()
    rack = rack_label(run)
    bucket = _bucket(gpus[g_job[g_keep]])
    for b, ((name, _, _), colour) in enumerate(zip(GANG_BUCKETS, GANG_COLOURS, strict=True)):
        mine = g_keep[bucket == b]
        if not len(mine):
            continue
        text = []
        for g in mine.tolist():
            members = idx[heads[g] : g_stop[g]]
            nodes = [
                f"{_node_text(st, int(r), rack)} ×{int(st.devices[r])}"
                for r in members[:HOVER_NODES].tolist()
            ]
            more = len(members) - HOVER_NODES
            where = "<br>".join(nodes) + (f"<br>and {more} more nodes" if more > 0 else "")
            text.append(
                f"{label_of[int(g_job[g])]}: {int(g_dev[g])} device(s), "
                f"{w.fmt(g_start[g])}–{w.fmt(g_end[g])} {w.unit}<br>{where}"
            )
        traces.append(
            {
                "type": "bar",
                "orientation": "h",
                "name": f"running, {name}",
                "y": [label_of[int(x)] for x in g_job[mine].tolist()],
                "base": w.t(g_start[mine]),
                "x": w.t(g_end[mine] - g_start[mine]),
                "hovertext": text,
                "marker": {"color": colour},
                "hovertemplate": "%{hovertext}<extra></extra>",
            }
        )
    head_title = f"Jobs over time (Gantt): {len(inside):,} jobs in {w.described()}"
    if rows < len(inside):
        head_title += f", first {rows} shown"
    if clipped:
        head_title += f" (bars capped at {MAX_GANTT_BARS:,})"
    lay = _gantt_layout(head_title, w, rows, labels)
    note = (
        "Grey: waiting for a first start; blue: holding devices (hover for the nodes); "
        "orange: preempted, waiting to resume. The export lists every stint in the window."
    ) + _busiest_note(w)
    return Chart(
        title="Jobs over time (Gantt)",
        figure={"data": traces, "layout": lay},
        data=lambda: stints_in_window(run, frame, w),
        note=note,
    )


def _gantt_without_stints(run: Run, frame: pd.DataFrame, w: Window, inside: np.ndarray) -> Chart:
    """Runs stored before stints: one bar per job from first start to finish."""
    shown = inside[:MAX_GANTT_ROWS]
    labels = _labels(frame, shown)
    submit = frame["submit"].to_numpy(dtype=np.float64)
    start = frame["first_start"].to_numpy(dtype=np.float64)
    end = _job_end(frame, w.t_end)
    s_start = np.where(np.isfinite(start[shown]), start[shown], end[shown])
    gpus = frame["num_gpus"].to_numpy()[shown]
    traces: list[dict[str, Any]] = [_waiting_trace(labels, submit[shown], s_start, w)]
    bucket = _bucket(gpus)
    for b, ((name, _, _), colour) in enumerate(zip(GANG_BUCKETS, GANG_COLOURS, strict=True)):
        idx = np.flatnonzero((bucket == b) & np.isfinite(start[shown]))
        if not len(idx):
            continue
        traces.append(
            {
                "type": "bar",
                "orientation": "h",
                "name": f"running, {name}",
                "y": [labels[i] for i in idx],
                "base": w.t(s_start[idx]),
                "x": w.t(end[shown][idx] - s_start[idx]),
                "customdata": gpus[idx].tolist(),
                "marker": {"color": colour},
                "hovertemplate": "%{y}: %{customdata} GPU(s), ran from %{base:.4g} for %{x:.3g} "
                + w.unit
                + "<extra></extra>",
            }
        )
    rows = len(shown)
    lay = _gantt_layout(
        f"Jobs over time (Gantt): {len(inside):,} jobs in {w.described()}"
        + (f", first {rows} shown" if rows < len(inside) else "")
        + " (first start to finish)",
        w,
        rows,
        labels,
    )
    n_pre = int((run.summary or {}).get("preemptions") or 0)
    note = (
        "This run was stored before placements were recorded: bars run from first start to "
        f"finish, without its nodes or its preemption gaps ({n_pre:,} preemptions). Launch the "
        "experiment again to record them."
    ) + _busiest_note(w)

    def export() -> pd.DataFrame:
        out = frame.iloc[inside].copy()
        out["end_s"] = end[inside]
        return out

    return Chart(
        title="Jobs over time (Gantt)",
        figure={"data": traces, "layout": lay},
        data=export,
        note=note,
    )


# -- placement by node ----------------------------------------------------------------------------


def _lanes(st: StintColumns, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Device slots of each stint on its node (stints in start order), for drawing.

    The engine records how many devices a job held on a node, not which ones; this gives each
    stint the lowest contiguous block of free slots (first fit) or, when fragmentation leaves
    no such block, the lowest free slots, drawn as one piece per contiguous run.

    Returns
    -------
    stint : (p,) index into ``rows`` of each piece; first : (p,) its first slot; n : (p,)
    its number of slots.
    """
    free: dict[int, list[float]] = {}
    out_stint: list[int] = []
    out_first: list[int] = []
    out_n: list[int] = []
    for i, r in enumerate(rows.tolist()):
        cap = max(1, int(st.node_devices[r]))
        d = min(max(1, int(st.devices[r])), cap)
        s, e = float(st.start[r]), float(st.end[r])
        slots = free.setdefault(int(st.node[r]), [-np.inf] * cap)
        run = 0
        chosen: list[int] = []
        for k in range(cap):  # first contiguous block of d free slots
            run = run + 1 if slots[k] <= s else 0
            if run == d:
                chosen = list(range(k - d + 1, k + 1))
                break
        if not chosen:  # fragmented: the free slots first, then those freed earliest
            chosen = sorted(sorted(range(cap), key=lambda k: (slots[k] > s, slots[k], k))[:d])
        for k in chosen:
            slots[k] = e
        start = prev = chosen[0]
        for k in [*chosen[1:], None]:
            if k is not None and k == prev + 1:
                prev = k
                continue
            out_stint.append(i)
            out_first.append(start)
            out_n.append(prev - start + 1)
            if k is not None:
                start = prev = k
    return (
        np.array(out_stint, dtype=np.int64),
        np.array(out_first, dtype=np.int64),
        np.array(out_n, dtype=np.int64),
    )


def placement(run: Run, from_h: float | None, to_h: float | None) -> Chart:
    """Nodes of the window, each row its devices: the jobs holding them over time."""
    title = "Placement by node"
    if run.stints_id is None:
        return empty(title, NO_STINTS)
    got = _jobs_and_window(run, title, from_h, to_h)
    if isinstance(got, Chart):
        return got
    frame, w = got
    st = stint_columns(run.stints_id)
    rows = st.overlapping(w.lo, w.hi)
    if len(rows) == 0:
        return empty(
            title,
            f"No job held devices during {w.label()}: choose another window "
            "(the Gantt shows when jobs waited and ran).",
        )
    nodes, counts = np.unique(st.node[rows], return_counts=True)
    fit = int(np.searchsorted(np.cumsum(counts), MAX_PLACEMENT_BARS, side="right"))
    k = min(MAX_PLACEMENT_NODES, max(1, fit), len(nodes))
    shown_nodes = nodes[:k]
    sel = rows[np.isin(st.node[rows], shown_nodes)]
    clipped = len(sel) > MAX_PLACEMENT_BARS  # one node alone is over the cap
    if clipped:
        sel = sel[:MAX_PLACEMENT_BARS]
    piece, slot, n_slots = _lanes(st, sel)
    rack = rack_label(run)
    first_row = {int(n): int(r) for n, r in zip(st.node[sel][::-1], sel[::-1], strict=True)}
    node_label = {
        n: f"node {n} · {rack(int(st.rack[r]))} · {_type_name(st, r)}"
        for n, r in sorted(first_row.items())
    }
    labels = [node_label[int(n)] for n in shown_nodes.tolist() if int(n) in node_label]
    p_row = sel[piece]  # stint row of each piece
    cap = np.maximum(st.node_devices[p_row], 1).astype(np.float64)
    held = np.minimum(st.devices[p_row], st.node_devices[p_row])
    job = st.job[p_row]
    ids = [str(x) for x in frame["job_id"].iloc[job].tolist()]
    users = [str(x) for x in frame["user"].iloc[job].tolist()]
    bucket = _bucket(frame["num_gpus"].to_numpy()[job])
    traces: list[dict[str, Any]] = []
    for b, ((name, _, _), colour) in enumerate(zip(GANG_BUCKETS, GANG_COLOURS, strict=True)):
        m = np.flatnonzero(bucket == b)
        if not len(m):
            continue
        rows_m = p_row[m]
        text = [
            f"job {ids[i]}" + (f" ({users[i]})" if users[i] else "") + ": "
            f"{int(held[i])} of {int(cap[i])} devices, "
            f"{w.fmt(st.start[p_row[i]])}–{w.fmt(st.end[p_row[i]])} {w.unit}"
            for i in m.tolist()
        ]
        traces.append(
            {
                "type": "bar",
                "orientation": "h",
                "name": f"job of {name}",
                "y": [node_label[int(n)] for n in st.node[rows_m].tolist()],
                "base": w.t(st.start[rows_m]),
                "x": w.t(st.end[rows_m] - st.start[rows_m]),
                "offset": rounded_array(-0.45 + 0.9 * slot[m] / cap[m], 4),
                "width": rounded_array(0.9 * n_slots[m] / cap[m], 4),
                "hovertext": text,
                "marker": {"color": colour, "line": {"color": "#ffffff", "width": 0.5}},
                "hovertemplate": "%{y}<br>%{hovertext}<extra></extra>",
            }
        )
    head = f"{title}: {len(nodes):,} nodes busy in {w.described()}"
    if k < len(nodes):
        cap = (
            f"at most {MAX_PLACEMENT_NODES} nodes"
            if k == MAX_PLACEMENT_NODES
            else f"at most {MAX_PLACEMENT_BARS:,} bars; narrow the window to see more"
        )
        head += f", first {k} shown ({cap})"
    if clipped:
        head += f"; first {MAX_PLACEMENT_BARS:,} of {int(counts[0]):,} stints"
    lay = layout(
        head,
        _time_axis(w),
        axis(
            "Node",
            type="category",
            autorange="reversed",
            categoryorder="array",
            categoryarray=labels,
            showgrid=False,
            showticklabels=k <= MAX_PLACEMENT_NODES,
        ),
        barmode="overlay",
        height=int(max(320, min(1400, 110 + 24 * k))),
    )
    note = (
        "Each row is one node's devices; a bar is a job holding some of them (bar height: "
        "devices held). The export lists every stint in the window, on every node."
    ) + _busiest_note(w)
    return Chart(
        title=title,
        figure={"data": traces, "layout": lay},
        data=lambda: stints_in_window(run, frame, w),
        note=note,
    )
