"""Dashboard pages. Thin: forms validate, :mod:`planner.services` does the work.

Pages that wait for a worker (a parsing upload, a running experiment) render a fragment that
``static/dashboard/poll.js`` re-fetches until the work is done.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.db.models import Avg, Count, Q
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from dashboard.forms import (
    ClusterForm,
    DeriveForm,
    ExperimentForm,
    ImportClusterForm,
    SyntheticForm,
    UploadForm,
    describe_recipe,
)
from planner import runner, services
from planner.models import ACTIVE_STATES, Cluster, Experiment, Run, Workload, WorkloadStatus


@login_required
def home(request: HttpRequest) -> HttpResponse:
    user = request.user
    ctx = {
        "clusters": Cluster.objects.owned_by(user)[:20],
        "workloads": Workload.objects.owned_by(user).defer("report", "summary")[:20],
        "experiments": Experiment.objects.owned_by(user).annotate(
            progress_avg=Avg("runs__progress")
        )[:20],
    }
    return render(request, "dashboard/home.html", ctx)


# -- workloads -------------------------------------------------------------------------------


@login_required
def workload_upload(request: HttpRequest) -> HttpResponse:
    form = UploadForm(request.POST, request.FILES) if request.method == "POST" else UploadForm()
    if request.method == "POST" and form.is_valid():
        upload = form.cleaned_data["file"]
        workload = services.create_workload(
            request.user,
            name=form.cleaned_data["name"] or upload.name,
            filename=upload.name,
            raw=upload,  # streamed into storage, never read whole
            fmt=form.cleaned_data["format"],
        )
        url = reverse("dashboard:workload", args=[workload.pk])
        if request.headers.get("X-Requested-With") == "XMLHttpRequest":
            return JsonResponse({"id": workload.pk, "url": url}, status=202)
        return redirect(url)
    if request.method == "POST" and request.headers.get("X-Requested-With") == "XMLHttpRequest":
        return JsonResponse({"errors": form.errors}, status=400)
    return render(request, "dashboard/workload_upload.html", {"form": form})


@login_required
def workload_synthetic(request: HttpRequest) -> HttpResponse:
    data = request.POST if request.method == "POST" else None
    form = SyntheticForm(data, owner=request.user)
    if request.method == "POST" and form.is_valid():
        try:
            workload = services.create_synthetic_workload(
                request.user, form.cleaned_data["name"], form.recipe()
            )
        except ValidationError as exc:
            form.add_service_error(exc)
        else:
            return redirect("dashboard:workload", pk=workload.pk)
    return render(request, "dashboard/workload_synthetic.html", {"form": form})


def _workload(request: HttpRequest, pk: int) -> Workload:
    return get_object_or_404(
        Workload.objects.owned_by(request.user).select_related("parent"), pk=pk
    )


def _workload_page(
    request: HttpRequest, w: Workload, form: DeriveForm | None = None
) -> HttpResponse:
    if form is None and w.status == WorkloadStatus.READY:
        form = DeriveForm(owner=request.user)
    ctx = {"w": w, "recipe_lines": describe_recipe(w), "derive_form": form}
    return render(request, "dashboard/workload_detail.html", ctx)


@login_required
def workload_detail(request: HttpRequest, pk: int) -> HttpResponse:
    return _workload_page(request, _workload(request, pk))


@login_required
@require_POST
def workload_derive(request: HttpRequest, pk: int) -> HttpResponse:
    parent = _workload(request, pk)
    form = DeriveForm(request.POST, owner=request.user)
    if form.is_valid():
        steps = form.steps()
        try:
            workload = services.derive_workload(
                request.user, parent, form.cleaned_data["name"], steps
            )
        except ValidationError as exc:
            form.add_service_error(exc, steps)
        else:
            return redirect("dashboard:workload", pk=workload.pk)
    return _workload_page(request, parent, form)


@login_required
def workload_status(request: HttpRequest, pk: int) -> HttpResponse:
    w = _workload(request, pk)
    done = w.status in (WorkloadStatus.READY, WorkloadStatus.FAILED)
    response = render(request, "dashboard/_workload_status.html", {"w": w})
    response["X-Poll-Done"] = "1" if done else "0"
    return response


# -- clusters --------------------------------------------------------------------------------


@login_required
def cluster_create(request: HttpRequest) -> HttpResponse:
    data = request.POST if request.method == "POST" else None
    form = ClusterForm(data, owner=request.user)
    if request.method == "POST" and form.is_valid():
        d = form.cleaned_data
        cluster = Cluster.objects.create(
            owner=request.user,
            name=d["name"],
            spec=d["spec_obj"],
            preset=d.get("preset") or "",
            total_devices=d["total_devices"],
            device_types=d["device_types"],
        )
        messages.success(
            request, f"Cluster {cluster.name!r} created: {cluster.total_devices} devices."
        )
        return redirect("dashboard:cluster", pk=cluster.pk)
    return render(request, "dashboard/cluster_form.html", {"form": form})


@login_required
def cluster_import(request: HttpRequest) -> HttpResponse:
    if request.method == "POST":
        form = ImportClusterForm(request.POST, request.FILES)
    else:  # the cluster page's "re-import with an alias" link fills in the form
        keys = ("format", "name", "aliases", "nodes_per_rack")
        form = ImportClusterForm(initial={k: request.GET[k] for k in keys if k in request.GET})
    if request.method == "POST" and form.is_valid():
        d = form.cleaned_data
        upload = d["file"]
        try:
            cluster = services.import_cluster(
                request.user,
                upload.read(),
                upload.name,
                fmt=d["format"],
                aliases=d["aliases"],
                name=d["name"],
                nodes_per_rack=d["nodes_per_rack"],
            )
        except ValidationError as exc:
            for message in exc.messages:
                form.add_error("aliases" if ": aliases[" in message else None, message)
        else:
            report = cluster.import_report or {}
            text = (
                f"Imported {cluster.name!r}: {cluster.total_devices} devices on "
                f"{report.get('nodes_kept', 0)} of {report.get('nodes_read', 0)} nodes."
            )
            if report.get("unmapped"):
                text += " Some models are unmapped: see below."
            messages.success(request, text)
            return redirect("dashboard:cluster", pk=cluster.pk)
    return render(request, "dashboard/cluster_import.html", {"form": form})


def _reimport_url(c: Cluster) -> str:
    """The import form, filled in to map the cluster's unmapped models (the file is re-chosen)."""
    from urllib.parse import urlencode

    report = c.import_report or {}
    query = {
        "format": report.get("format", ""),
        "name": c.name,
        "aliases": "\n".join(f"{model} = " for model in report.get("unmapped", {})),
    }
    return f"{reverse('dashboard:cluster-import')}?{urlencode(query)}"


@login_required
def cluster_detail(request: HttpRequest, pk: int) -> HttpResponse:
    cluster = get_object_or_404(Cluster.objects.owned_by(request.user), pk=pk)
    ctx = {"c": cluster, "reimport_url": _reimport_url(cluster) if cluster.import_report else ""}
    return render(request, "dashboard/cluster_detail.html", ctx)


@login_required
@require_POST
def cluster_clone(request: HttpRequest, pk: int) -> HttpResponse:
    cluster = get_object_or_404(Cluster.objects.owned_by(request.user), pk=pk)
    copy = cluster.clone()
    messages.success(request, f"Cloned into {copy.name!r}.")
    return redirect("dashboard:cluster", pk=copy.pk)


# -- experiments -----------------------------------------------------------------------------


@login_required
def experiment_create(request: HttpRequest) -> HttpResponse:
    data = request.POST if request.method == "POST" else None
    form = ExperimentForm(data, owner=request.user)
    if request.method == "POST" and form.is_valid():
        d = form.cleaned_data
        try:
            exp = services.create_experiment(
                request.user,
                name=d["name"],
                clusters=d["clusters"],
                workloads=d["workloads"],
                policies=form.policy_list(),
                load_factors=d["load_factors"],
                seeds=d["seeds"],
                placement=d["placement"] or None,
                compat=d["compat"] or "",
                cost_horizon_hours=d.get("cost_horizon_hours"),
            )
        except ValidationError as exc:
            form.add_error(None, exc)
        else:
            return redirect("dashboard:experiment", pk=exp.pk)
    return render(request, "dashboard/experiment_form.html", {"form": form})


def _experiment(request: HttpRequest, pk: int) -> Experiment:
    return get_object_or_404(Experiment.objects.owned_by(request.user), pk=pk)


def _progress_context(exp: Experiment) -> dict[str, Any]:
    runs = Run.objects.filter(experiment=exp).select_related("cluster", "workload")
    agg = runs.aggregate(
        progress=Avg("progress"), active=Count("id", filter=Q(state__in=ACTIVE_STATES))
    )
    return {
        "e": exp,
        "runs": runs,
        "progress_pct": round(100 * float(agg["progress"] or 0.0), 1),
        "active": agg["active"],
    }


@login_required
def experiment_detail(request: HttpRequest, pk: int) -> HttpResponse:
    from dashboard.pages import experiment_context

    ctx = _progress_context(_experiment(request, pk))
    ctx.update(experiment_context(ctx["e"], ctx["active"]))
    return render(request, "dashboard/experiment_detail.html", ctx)


@login_required
def experiment_progress(request: HttpRequest, pk: int) -> HttpResponse:
    ctx = _progress_context(_experiment(request, pk))
    response = render(request, "dashboard/_experiment_progress.html", ctx)
    response["X-Poll-Done"] = "0" if ctx["active"] else "1"
    return response


@login_required
@require_POST
def experiment_cancel(request: HttpRequest, pk: int) -> HttpResponse:
    exp = _experiment(request, pk)
    n = runner.cancel_runs(exp.runs.all())
    messages.info(request, f"Cancelled {n} run(s).")
    return redirect("dashboard:experiment", pk=exp.pk)
