"""JSON chart endpoints (the djangoproject.com dashboard pattern) and the local plotly.js.

A page renders empty containers that name one of these URLs; ``static/dashboard/charts.js``
fetches it and draws the Plotly figure (or table) it answers. Every endpoint:

- answers only the owner of the object, signed in or with an API token; anyone else gets
  404 (API clients get JSON errors, 401 without credentials: :mod:`dashboard.access`);
- answers ``{"title", "figure" | "table" | "empty", "note"}``, where ``empty`` says what to
  do when there is nothing to draw;
- with ``?format=csv`` or ``?format=json`` answers the full data behind the chart (not
  downsampled) as a download;
- caches its JSON answer keyed by the stored results it was built from, so a re-run (new
  artefacts) or a state change is never served stale.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import re
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
from django.core.cache import cache
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404
from django.views.decorators.http import require_GET

from dashboard import fairviews, figures, gantt, modelviews, versus
from dashboard.access import chart_access
from dashboard.plotting import Chart, empty
from dashboard.results import (
    experiment_grid,
    grid_of,
    owned_runs,
    parquet_columns,
    parse_run_ids,
    version_of,
)
from planner import exports
from planner.models import Cluster, Experiment, Run, RunState, Workload, WorkloadStatus

CACHE_SECONDS = 3600
_FORMATS = ("csv", "json")


def _cache_key(kind: str, pk: Any, name: str, request: HttpRequest, version: str) -> str:
    params = sorted((k, v) for k, v in request.GET.items() if k != "format")
    digest = hashlib.sha256(f"{version}|{name}|{params}".encode()).hexdigest()[:32]
    return f"dashboard:chart:v1:{kind}:{pk}:{digest}"


def _export(chart: Chart, fmt: str, filename: str) -> HttpResponse:
    frame = chart.export_frame()
    if fmt == "csv":
        response = HttpResponse(exports.csv_text(frame), content_type="text/csv; charset=utf-8")
    else:
        response = HttpResponse(
            frame.to_json(orient="records", date_format="iso"), content_type="application/json"
        )
    response["Content-Disposition"] = f'attachment; filename="{filename}.{fmt}"'
    return response


def respond(
    request: HttpRequest,
    build: Callable[[], Chart],
    *,
    kind: str,
    pk: Any,
    name: str,
    version: str | None,
) -> HttpResponse:
    """The chart as JSON (cached under ``version`` unless it is ``None``) or as an export."""
    fmt = request.GET.get("format", "")
    if fmt:
        if fmt not in _FORMATS:
            return JsonResponse({"detail": "format is csv or json"}, status=400)
        safe = re.sub(r"[^A-Za-z0-9_.-]+", "-", f"{kind}-{pk}-{name}")
        return _export(build(), fmt, safe)
    key = _cache_key(kind, pk, name, request, version) if version is not None else None
    body = cache.get(key) if key else None
    hit = body is not None
    if body is None:
        body = json.dumps(build().payload(), allow_nan=False, separators=(",", ":"))
        if key:
            cache.set(key, body, CACHE_SECONDS)
    response = HttpResponse(body, content_type="application/json")
    response["Cache-Control"] = "private, no-cache"
    response["X-Chart-Cache"] = "hit" if hit else "miss"
    return response


def _split(name: str) -> tuple[str, str]:
    head, _, arg = name.partition("-")
    return head, arg


# -- experiments -----------------------------------------------------------------------------


def experiment_chart_names() -> list[str]:
    names = ["table", "cdf", "load", "types"]
    names += [f"bars-{m}" for m in figures.BAR_METRICS]
    names += [f"pareto-{a}" for a in figures.PARETO_AXES]
    names += [f"timeline-{k}" for k in figures.TIMELINES]
    names += [f"groups-{c}" for c in figures.GROUPS]
    names += [f"{v}-{c}" for v in FAIR_VIEWS for c in figures.GROUPS]
    return [*names, "typealloc", "versus"]


#: Per-user fairness views (:mod:`dashboard.fairviews`), each for users and for VCs.
FAIR_VIEWS = ("fairshare", "rho")


@chart_access
@require_GET
def experiment_chart(request: HttpRequest, pk: int, name: str) -> HttpResponse:
    exp = get_object_or_404(Experiment.objects.owned_by(request.user), pk=pk)
    if name not in experiment_chart_names():
        raise Http404(f"no chart {name!r}")
    grid = experiment_grid(exp)
    head, arg = _split(name)
    config = request.GET.get("config") or None

    def build() -> Chart:
        if head == "table":
            return figures.metric_table(grid)
        if head == "versus":
            return versus.versus_table(grid, request.GET.get("baseline") or None)
        if head == "cdf":
            return figures.experiment_cdf(grid, config)
        if head == "load":
            return figures.load_curve(grid)
        if head == "bars":
            return figures.metric_bars(grid, arg)
        if head == "pareto":
            return figures.pareto(grid, arg)
        if head == "types":
            return figures.type_utilisation(grid, config)
        if head == "groups":
            return figures.group_jct(grid, config, arg)
        if head in FAIR_VIEWS or head == "typealloc":
            return _experiment_fair_view(grid, config, head, arg, request.GET.get("policy"))
        return figures.experiment_timeline(grid, config, arg)

    version = f"{exp.state}|{grid.total}|{version_of(grid.runs)}"
    return respond(request, build, kind="experiment", pk=pk, name=name, version=version)


def _experiment_fair_view(
    grid: Any, key: str | None, head: str, column: str, policy: str | None
) -> Chart:
    titles = {
        "fairshare": "Device-time received vs fair share",
        "rho": "Finish-time fairness ρ by group",
        "typealloc": "Who ran on which accelerator type, over time",
    }
    config = figures._config_or_empty(grid, key, titles[head])
    if isinstance(config, Chart):
        return config
    label = grid.config_label(config)
    if head == "typealloc":
        names = [p for p in grid.policies if (p, config) in grid.cells]
        if not names:
            return empty(titles[head], figures.NO_RUNS)
        chosen = policy if policy in names else names[0]
        run = grid.cells[(chosen, config)][0]
        seed = f" · seed {run.seed}" if len(grid.cells[(chosen, config)]) > 1 else ""
        return fairviews.type_allocation(run, f"{chosen} · {label}{seed}")
    series = figures.policy_series(grid, config)
    if head == "fairshare":
        return fairviews.fair_share(series, column, label)
    return fairviews.rho_by_group(series, column, label)


# -- runs ----------------------------------------------------------------------------------------

#: Run charts shown only when the run has the model (:func:`dashboard.modelviews.run_models`).
MODEL_RUN_CHARTS = (
    "power",
    "uplinks",
    "failures",
    "devices",
    "resources",
    "fragmentation",
    "share-map",
)
RUN_CHARTS = (
    "gantt",
    "placement",
    "ftf",
    "slowest",
    "timeline-utilisation",
    "timeline-queue",
    "groups-user",
    "groups-vc",
    *MODEL_RUN_CHARTS,
)


def _float_param(request: HttpRequest, name: str) -> float | None:
    raw = request.GET.get(name, "").strip()
    if not raw:
        return None
    try:
        value = float(raw)
    except ValueError:
        raise Http404(f"{name} is a number of hours") from None
    return value if np.isfinite(value) else None


@chart_access
@require_GET
def run_chart(request: HttpRequest, pk: int, name: str) -> HttpResponse:
    run = get_object_or_404(
        Run.objects.owned_by(request.user).select_related("cluster", "workload"), pk=pk
    )
    if name not in RUN_CHARTS:
        raise Http404(f"no chart {name!r}")
    from_h, to_h = _float_param(request, "from_h"), _float_param(request, "to_h")

    def build() -> Chart:
        if run.state != RunState.SUCCEEDED or run.per_job_id is None:
            return empty(
                name,
                f"Run {run.pk} is {run.state}: its charts appear once it has succeeded"
                + (" (see its error above and re-run the experiment)." if run.error else "."),
            )
        if name == "gantt":
            return gantt.gantt(run, from_h, to_h)
        if name == "placement":
            return gantt.placement(run, from_h, to_h)
        if name == "ftf":
            return figures.ftf_distribution(run)
        if name == "slowest":
            return figures.slowest_jobs(run)
        if name.startswith("groups-"):
            return figures.group_table(run, name.partition("-")[2])
        if name == "power":
            return modelviews.power_carbon(run)
        if name == "uplinks":
            return modelviews.uplinks(run)
        if name == "failures":
            return modelviews.failures(run)
        if name == "devices":
            return modelviews.device_count(run)
        if name == "resources":
            return modelviews.resources(run)
        if name == "fragmentation":
            return modelviews.fragmentation(run)
        if name == "share-map":
            return modelviews.share_map(run)
        kind = name.partition("-")[2]
        series = figures.compare_series([run])
        return figures.timeline_chart(
            "Utilisation over time" if kind == "utilisation" else "Queue length over time",
            series,
            kind,
        )

    version = version_of([run])
    return respond(request, build, kind="run", pk=pk, name=name, version=version)


# -- workloads -----------------------------------------------------------------------------------

WORKLOAD_CHARTS = ("arrivals", "gpus", "duration", "users", "vcs", "warnings")
_JOB_COLUMNS = ("job_id", "submit_time", "num_gpus", "user", "vc")


def reference_duration(artefact_id: int) -> np.ndarray:
    from dashboard.results import content_key

    return _reference_duration(artefact_id, content_key(artefact_id))


@lru_cache(maxsize=16)
def _reference_duration(artefact_id: int, sha: str) -> np.ndarray:
    """Seconds each job of a job table takes on the reference type (P100), consolidated."""
    from clustersim.perf import REFERENCE_TYPE, PerformanceModel
    from clustersim.spec import cluster_from_spec
    from planner.jobtable import from_parquet
    from planner.models import Artefact

    jobs = from_parquet(Artefact.objects.get(pk=artefact_id).read())
    if len(jobs) == 0:
        return np.zeros(0)
    biggest = int(jobs.num_gpus.max())
    ref = cluster_from_spec(
        {
            "pools": [
                {"accelerator": REFERENCE_TYPE, "nodes": -(-biggest // 8), "devices_per_node": 8}
            ]
        }
    )
    rate = PerformanceModel().prepare(jobs, ref).rate[:, 0]
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(rate > 0, jobs.work / rate, np.nan)
    return np.asarray(out, dtype=np.float64)


@chart_access
@require_GET
def workload_chart(request: HttpRequest, pk: int, name: str) -> HttpResponse:
    w = get_object_or_404(Workload.objects.owned_by(request.user).defer("summary"), pk=pk)
    if name not in WORKLOAD_CHARTS:
        raise Http404(f"no chart {name!r}")

    def build() -> Chart:
        if name == "warnings":
            if w.status == WorkloadStatus.FAILED:
                return empty(name, f"Parsing failed: {w.error} Fix the file and upload it again.")
            return figures.parse_warnings(w.report)
        if w.status != WorkloadStatus.READY or w.jobs_id is None:
            if w.status == WorkloadStatus.FAILED:
                return empty(
                    name, "Parsing failed (see the error above): fix the file and upload it again."
                )
            return empty(
                name, "The trace is still being parsed; this page reloads when it is ready."
            )
        frame = parquet_columns(w.jobs_id, _JOB_COLUMNS)
        if name == "arrivals":
            return figures.arrivals(frame)
        if name == "gpus":
            return figures.gpu_demand(frame)
        if name == "duration":
            return figures.duration_cdf(frame, reference_duration(w.jobs_id))
        if name == "users":
            return figures.jobs_by(frame, "user")
        return figures.jobs_by(frame, "vc")

    version = f"{w.status}|{w.jobs_id}|{w.parsed_at}"
    return respond(request, build, kind="workload", pk=pk, name=name, version=version)


# -- clusters ------------------------------------------------------------------------------------

CLUSTER_CHARTS = ("devices", "racks", "power", "cost", "carbon")


@chart_access
@require_GET
def cluster_chart(request: HttpRequest, pk: int, name: str) -> HttpResponse:
    c = get_object_or_404(Cluster.objects.owned_by(request.user), pk=pk)
    if name not in CLUSTER_CHARTS:
        raise Http404(f"no chart {name!r}")

    def build() -> Chart:
        from clustersim.errors import ClustersimError
        from clustersim.spec import cluster_from_spec

        try:
            sim = cluster_from_spec(c.effective_spec())
        except ClustersimError as exc:
            return empty(name, f"The spec no longer validates ({exc}); clone it and fix the spec.")
        if name == "devices":
            return figures.devices_by_type(sim)
        if name == "racks":
            return figures.devices_by_rack(sim, c.spec)
        if name == "power":
            return figures.power(sim)
        if name == "cost":
            return figures.cost(sim)
        return figures.carbon_profile(sim)

    # accelerator types the owner edits change the effective spec: they are part of the key
    from planner.models import AcceleratorType

    types = AcceleratorType.objects.filter(owner_id=c.owner_id).values_list("pk", "updated")
    version = f"{c.updated.isoformat()}|{list(types)}"
    return respond(request, build, kind="cluster", pk=pk, name=name, version=version)


# -- compare -------------------------------------------------------------------------------------


def compare_chart_names() -> list[str]:
    names = ["cdf", "timeline-utilisation", "timeline-queue"]
    names += [f"bars-{m}" for m in figures.COMPARE_METRICS]
    names += [f"{v}-{c}" for v in FAIR_VIEWS for c in figures.GROUPS]
    return [*names, "typealloc", "pareto-carbon"]


@chart_access
@require_GET
def compare_chart(request: HttpRequest, name: str) -> HttpResponse:
    if name not in compare_chart_names():
        raise Http404(f"no chart {name!r}")
    ids = parse_run_ids(request.GET.getlist("runs"))
    if not ids or len(ids) > 50:
        raise Http404("give between 1 and 50 run ids: ?runs=1,2,3")
    runs = owned_runs(request.user, ids)
    ok = grid_of(runs).runs
    ok_ids = {r.pk for r in ok}
    ok = [r for r in runs if r.pk in ok_ids]
    head, arg = _split(name)

    def build() -> Chart:
        if head == "bars":
            return figures.compare_bars(ok, arg)
        if head == "pareto":
            wanted = request.GET.get("baseline", "")
            chosen = next((r for r in ok if str(r.pk) == wanted), None)
            return modelviews.carbon_pareto(ok, chosen)
        if head == "typealloc":
            if not ok:
                return empty("Who ran on which accelerator type, over time", figures.NO_RUNS)
            from dashboard.pages import hetero_clusters

            wanted = request.GET.get("run", "")
            mixed = hetero_clusters({r.cluster_id for r in ok})
            first = next((r for r in ok if r.cluster_id in mixed), ok[0])
            run = next((r for r in ok if str(r.pk) == wanted), first)
            return fairviews.type_allocation(run, figures.run_label(run))
        series = figures.compare_series(ok)
        if head == "fairshare":
            return fairviews.fair_share(series, arg, "")
        if head == "rho":
            return fairviews.rho_by_group(series, arg, "")
        if head == "cdf":
            return figures.cdf_chart(
                "JCT distribution (CDF) by run", series, note="Downsampled to 2,000 points per run."
            )
        what = "Utilisation" if arg == "utilisation" else "Queue length"
        return figures.timeline_chart(f"{what} over time", series, arg)

    version = version_of(runs)
    key_pk = hashlib.sha256(",".join(map(str, ids)).encode()).hexdigest()[:16]
    return respond(request, build, kind="compare", pk=key_pk, name=name, version=version)


# -- plotly.js, served from the installed package -----------------------------------------------


def plotly_version() -> str:
    import plotly

    return str(plotly.__version__)


@lru_cache(maxsize=1)
def _plotly_bundle() -> tuple[bytes, bytes]:
    import plotly

    path = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
    raw = path.read_bytes()
    return raw, gzip.compress(raw, compresslevel=9, mtime=0)


@require_GET
def plotly_js(request: HttpRequest, version: str) -> HttpResponse:
    """plotly.min.js of the installed ``plotly`` package (no CDN); immutable per version."""
    if version != plotly_version():
        raise Http404("unknown plotly.js version")
    raw, packed = _plotly_bundle()
    etag = f'"plotly-{version}"'
    if request.headers.get("If-None-Match") == etag:
        response = HttpResponse(status=304)
    elif "gzip" in request.headers.get("Accept-Encoding", ""):
        response = HttpResponse(packed, content_type="text/javascript; charset=utf-8")
        response["Content-Encoding"] = "gzip"
    else:
        response = HttpResponse(raw, content_type="text/javascript; charset=utf-8")
    response["ETag"] = etag
    response["Vary"] = "Accept-Encoding"
    response["Cache-Control"] = "public, max-age=31536000, immutable"
    return response
