"""Chart pages: a run, runs compared side by side, and the chart part of the experiment page.

Pages only lay out containers; the charts come from :mod:`dashboard.charts`.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse

from dashboard import figures
from dashboard.charts import compare_chart_names
from dashboard.gantt import MAX_GANTT_ROWS
from dashboard.modelviews import run_models
from dashboard.numbers import RUN_ONCE, count_value, is_count
from dashboard.results import Grid, experiment_grid, label_of, owned_runs, parse_run_ids
from dashboard.versus import default_baseline
from planner.models import ACTIVE_STATES, Experiment, Run, RunState

#: Summary rows of the run and compare pages.
SUMMARY_ROWS = (
    "jobs_total",
    "jobs_completed",
    "jobs_dropped",
    "jobs_fit_nowhere",
    *figures.TABLE_METRICS[1:],
    "wait_p99_s",
    "queue_delay_p99_s",
    "preemptions",
    "migrations",
    "idle_while_queued",
    "avg_power_kw",
    "horizon_s",
    "cost_owned_capital_usd",
    "cost_owned_energy_usd",
    "electricity_cost_usd",
)
#: Rows of runs with node failures on (``docs/failures.md``), shown only when a run has them.
FAILURE_ROWS = (
    "node_failures",
    "device_hours_down",
    "restarts",
    "jobs_restarted",
    "lost_work_device_hours",
    "checkpoint_device_hours",
    "goodput",
    "effective_training_time_ratio",
)
#: Rows of runs with network contention on (``docs/network.md``), shown only when a run has them.
NETWORK_ROWS = ("network_lost_job_hours", "uplink_utilisation_mean", "uplink_utilisation_max")
#: Rows of runs with GPU sharing on (``docs/gpu-sharing.md``), shown only when a run has them.
GPUSHARE_ROWS = (
    "gpu_shared_jobs",
    "gpu_allocated_share_mean",
    "gpu_frag_rate_mean",
    "gpu_share_peak_milli",
)
#: Rows of runs with stragglers on (``docs/failures.md``), shown only when a run has them.
STRAGGLER_ROWS = ("slow_nodes", "jobs_slowed", "straggler_device_hours")
#: Rows of runs with spot reclaims on (``docs/failures.md``), shown only when a run has them.
SPOT_ROWS = (
    "spot_reclaims",
    "spot_device_hours_reclaimed",
    "spot_restarts",
    "spot_jobs_restarted",
    "spot_restarts_saved_by_notice",
    "spot_lost_work_device_hours",
    "checkpoint_device_hours",
    "goodput",
    "effective_training_time_ratio",
)
#: Rows of runs with host CPU and memory modelled (``docs/resources.md``), only when a run has
#: them.
AUX_ROWS = ("cpu_utilisation", "mem_utilisation", "jobs_aux_too_large")
#: Rows of runs on a cluster with spot pools (their device-hours at spot prices).
SPOT_COST_ROWS = ("spot_device_hours", "cost_cloud_spot_usd", "spot_savings_usd")
_UNITS = {
    "jobs_total": "jobs",
    "jobs_dropped": "jobs",
    "jobs_fit_nowhere": "jobs",
    "preemptions": "count",
    "migrations": "count",
    "idle_while_queued": "%",
    "avg_power_kw": "kW",
    "cost_owned_capital_usd": "USD",
    "cost_owned_energy_usd": "USD",
    "electricity_cost_usd": "USD",
    "node_failures": "count",
    "device_hours_down": "device-h",
    "restarts": "count",
    "lost_work_device_hours": "device-h",
    "checkpoint_device_hours": "device-h",
    "goodput": "%",
    "effective_training_time_ratio": "%",
    "network_lost_job_hours": "job-h",
    "uplink_utilisation_mean": "%",
    "uplink_utilisation_max": "%",
    "gpu_shared_jobs": "jobs",
    "gpu_allocated_share_mean": "%",
    "gpu_frag_rate_mean": "%",
    "gpu_share_peak_milli": "milli",
    "slow_nodes": "count",
    "jobs_slowed": "jobs",
    "straggler_device_hours": "device-h",
    "spot_reclaims": "count",
    "spot_device_hours_reclaimed": "device-h",
    "spot_restarts": "count",
    "spot_jobs_restarted": "jobs",
    "spot_restarts_saved_by_notice": "count",
    "spot_lost_work_device_hours": "device-h",
    "spot_device_hours": "device-h",
    "cost_cloud_spot_usd": "USD",
    "spot_savings_usd": "USD",
    "cpu_utilisation": "%",
    "mem_utilisation": "%",
    "jobs_aux_too_large": "jobs",
}
_LABELS = {
    "jobs_total": "Jobs",
    "jobs_dropped": "Jobs dropped",
    "jobs_fit_nowhere": "Jobs no device can hold (dropped)",
    "preemptions": "Preemptions",
    "migrations": "Migrations",
    "idle_while_queued": "Idle devices while jobs wait",
    "avg_power_kw": "Average facility power",
    "cost_owned_capital_usd": "Owned cost: amortised capital over the horizon",
    "cost_owned_energy_usd": "Owned cost: energy over the horizon",
    "electricity_cost_usd": "Electricity cost of the run (first submit to last busy)",
    "node_failures": "Node failures",
    "device_hours_down": "Device-hours down (failed nodes)",
    "restarts": "Job restarts after a failure",
    "jobs_restarted": "Jobs restarted at least once",
    "lost_work_device_hours": "Lost work (computing redone after failures)",
    "checkpoint_device_hours": "Checkpoint writing",
    "goodput": "Goodput (useful / held device time)",
    "effective_training_time_ratio": "Effective training time ratio",
    "network_lost_job_hours": "Time lost to network contention",
    "uplink_utilisation_mean": "Rack uplink utilisation (mean over racks)",
    "uplink_utilisation_max": "Rack uplink utilisation (busiest rack)",
    "gpu_shared_jobs": "Jobs sharing a GPU",
    "gpu_allocated_share_mean": "GPU milli allocated (time-averaged share)",
    "gpu_frag_rate_mean": "GPU fragmentation rate (FGD, time-averaged)",
    "gpu_share_peak_milli": "Most milli on one GPU",
    "slow_nodes": "Slow nodes",
    "jobs_slowed": "Jobs slowed by a slow node",
    "straggler_device_hours": "Device time lost to slow nodes",
    "spot_reclaims": "Spot reclaims",
    "spot_device_hours_reclaimed": "Device-hours reclaimed (spot nodes)",
    "spot_restarts": "Job restarts after a reclaim",
    "spot_jobs_restarted": "Jobs restarted after a reclaim at least once",
    "spot_restarts_saved_by_notice": "Of those, checkpointed in the notice (nothing lost)",
    "spot_lost_work_device_hours": "Lost work (computing redone after reclaims)",
    "spot_device_hours": "Device-hours held on spot nodes",
    "cost_cloud_spot_usd": "Cloud cost: the spot device-hours at spot prices",
    "spot_savings_usd": "Spot savings against on-demand prices",
    "cpu_utilisation": "CPU utilisation (cores held over cores of nodes with a limit)",
    "mem_utilisation": "Host memory utilisation (GB held over GB of nodes with a limit)",
    "jobs_aux_too_large": "Jobs whose CPU or memory demand exceeds every node (dropped)",
}


def summary_rows(
    summaries: list[dict[str, Any] | None], types: dict[str, str] | None = None
) -> list[dict[str, Any]]:
    """Rows ``{label, unit, values}`` of the given summaries, values in display units.

    The utilisation of each accelerator type (``utilisation_<key>``) follows the overall
    utilisation, named by ``types`` (``{key: type name}``, :func:`figures.type_names`).
    """
    rows = []
    keys = SUMMARY_ROWS
    for extra, marker in (
        (FAILURE_ROWS, "node_failures"),
        (NETWORK_ROWS, "network_lost_job_hours"),
        (GPUSHARE_ROWS, "gpu_shared_jobs"),
        (STRAGGLER_ROWS, "straggler_device_hours"),
        (SPOT_ROWS, "spot_reclaims"),
        (SPOT_COST_ROWS, "spot_device_hours"),
        (AUX_ROWS, "cpu_utilisation"),
    ):  # a physical model's rows only when a run had it on
        if any(marker in (s or {}) for s in summaries):
            keys = tuple(dict.fromkeys((*keys, *extra)))
    for key in keys:  # each in its own unit
        values = [(s or {}).get(key) for s in summaries]
        if key in figures.METRICS:
            m = figures.METRICS[key]
            unit, f = m.display(values)
            label = m.label
        else:
            unit = _UNITS.get(key, "")
            label = _LABELS.get(key, key)
            f = 1.0
            if unit == "%":
                f = 100.0
        if is_count(key):  # exact integers, whatever the template's number format
            shown: list[Any] = [count_value([v]) for v in values]
        else:
            shown = [None if v is None else v * f for v in values]
        rows.append({"key": key, "label": label, "unit": unit, "values": shown})
        if key == "utilisation":
            rows += _type_rows(summaries, types or {})
    return rows


def _type_rows(
    summaries: list[dict[str, Any] | None], types: dict[str, str]
) -> list[dict[str, Any]]:
    keys = figures.type_keys_in(summaries)
    if len(keys) < 2:  # one type: its utilisation is the overall one
        return []
    rows = []
    for k in keys:
        values = [(s or {}).get(figures.UTILISATION_PREFIX + k) for s in summaries]
        rows.append(
            {
                "key": figures.UTILISATION_PREFIX + k,
                "label": f"Utilisation of {types.get(k, k)}",
                "unit": "%",
                "values": [None if v is None else 100.0 * v for v in values],
            }
        )
    return rows


def trace_groups(summary: dict[str, Any] | None) -> list[str]:
    """Per-job columns (``user``, ``vc``) the workload names, from its summary's counts;
    a count the summary lacks (workloads parsed before it was kept) counts as present."""
    s = summary or {}
    counts = {"user": s.get("users"), "vc": s.get("vcs")}
    return [c for c in figures.GROUPS if (n := counts[c]) is None or n > 0]


def seed_note(exp: Experiment) -> str:
    """What the experiment page says of the runs made once for all seeds ("" if none)."""
    if len(exp.seeds or []) < 2:  # one seed: nothing was collapsed
        return ""
    pairs = sorted(set(exp.runs.filter(seed_independent=True).values_list("policy", "placement")))
    if not pairs:
        return ""
    which = ", ".join(f"{policy} with placement {where}" for policy, where in pairs)
    seeds = ", ".join(str(x) for x in exp.seeds or [])
    first = (exp.seeds or [0])[0]
    return (
        f"{which}: {RUN_ONCE} (neither the policy nor the placement draws from it), so each "
        f"of their cells is one run, with seed {first}, standing for seed(s) {seeds}."
    )


def hetero_clusters(cluster_ids: set[int]) -> set[int]:
    """Those of these clusters with more than one accelerator type."""
    from planner.models import Cluster

    rows = Cluster.objects.filter(pk__in=cluster_ids).values_list("pk", "device_types")
    return {pk for pk, types in rows if len(types or []) > 1}


def experiment_context(exp: Experiment, active: int) -> dict[str, Any]:
    """What the experiment page needs for its charts (added to the progress context)."""
    grid: Grid = experiment_grid(exp)
    succeeded = [r.pk for r in grid.runs]
    groups: dict[str, None] = {}
    for summary in exp.workloads.values_list("summary", flat=True):
        groups.update(dict.fromkeys(trace_groups(summary)))
    clusters = {c.cluster_id for c in grid.configs}
    return {
        "hetero": bool(grid.runs) and hetero_clusters(clusters),
        "seed_note": seed_note(exp),
        "charts_ready": bool(grid.runs) and not active,
        "grid": grid,
        "groups": [c for c in figures.GROUPS if c in groups],
        "configs": [(c.key, grid.config_label(c)) for c in grid.configs],
        "bar_metrics": figures.BAR_METRICS,
        "baseline": default_baseline(grid),
        "compare_url": (
            f"{reverse('dashboard:compare')}?runs={','.join(map(str, succeeded))}"
            if succeeded
            else ""
        ),
    }


@login_required
def run_detail(request: HttpRequest, pk: int) -> HttpResponse:
    run = get_object_or_404(
        Run.objects.owned_by(request.user).select_related("cluster", "workload", "experiment"),
        pk=pk,
    )
    siblings = list(
        Run.objects.filter(experiment_id=run.experiment_id, state=RunState.SUCCEEDED)
        .exclude(pk=run.pk)
        .values_list("pk", flat=True)[:7]
    )
    ctx = {
        "r": run,
        "policy": label_of(run),
        "rows": summary_rows([run.summary], figures.type_names([run.cluster_id])),
        "done": run.state == RunState.SUCCEEDED,
        "groups": trace_groups(run.workload.summary),
        "max_gantt_rows": MAX_GANTT_ROWS,
        "models": run_models(run),
        "compare_url": reverse("dashboard:compare")
        + "?runs="
        + ",".join(map(str, [run.pk, *siblings])),
    }
    return render(request, "dashboard/run_detail.html", ctx)


@login_required
def compare(request: HttpRequest) -> HttpResponse:
    """``/compare/?runs=1,2,3``: the chosen runs side by side; the URL is the share link."""
    raw = request.GET.getlist("runs")
    ids = parse_run_ids(raw)
    if len(raw) > 1:  # checkbox form: one `runs` per box; redirect to the short shareable URL
        return redirect(f"{reverse('dashboard:compare')}?runs={','.join(map(str, ids))}")
    runs = owned_runs(request.user, ids[:50]) if ids else []
    choices = (
        Run.objects.owned_by(request.user)
        .filter(state=RunState.SUCCEEDED)
        .select_related("cluster", "workload", "experiment")
        .only(
            "id",
            "policy",
            "params",
            "load_factor",
            "seed",
            "state",
            "cluster__name",
            "workload__name",
            "experiment__name",
        )
        .order_by("-id")[:200]
    )
    chosen = {r.pk for r in runs}
    done = [r for r in runs if r.state == RunState.SUCCEEDED]
    groups: dict[str, None] = {}
    from planner.models import Workload

    workloads = Workload.objects.filter(pk__in={r.workload_id for r in done})
    for summary in workloads.values_list("summary", flat=True):
        groups.update(dict.fromkeys(trace_groups(summary)))
    mixed = hetero_clusters({r.cluster_id for r in done})
    ctx = {
        "runs": runs,
        "labels": [figures.run_label(r) for r in runs],
        "rows": summary_rows(
            [r.summary for r in runs], figures.type_names([r.cluster_id for r in runs])
        ),
        "choices": choices,
        "chosen": chosen,
        "query": ",".join(str(r.pk) for r in runs),
        "chart_names": compare_chart_names(),
        "groups": [c for c in figures.GROUPS if c in groups],
        "hetero": [
            {"pk": r.pk, "label": figures.run_label(r)} for r in done if r.cluster_id in mixed
        ],
        "compare_metrics": figures.COMPARE_METRICS,
        "not_done": [r.pk for r in runs if r.state != RunState.SUCCEEDED],
        "active": any(r.state in ACTIVE_STATES for r in runs),
    }
    return render(request, "dashboard/compare.html", ctx)
