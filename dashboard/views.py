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
    WHAT_IF_FORMS,
    ClusterEditor,
    ClusterForm,
    DeriveForm,
    ExperimentForm,
    ImportClusterForm,
    SyntheticForm,
    UploadForm,
    WorkloadEditForm,
    attach_what_if_error,
    compare_initial,
    describe_recipe,
    experiment_initial,
    what_if_forms,
)
from planner import runner, services
from planner.models import (
    ACTIVE_STATES,
    Cluster,
    Experiment,
    Run,
    Study,
    Workload,
    WorkloadStatus,
)


@login_required
def home(request: HttpRequest) -> HttpResponse:
    user = request.user
    ctx = {
        "clusters": Cluster.objects.owned_by(user)[:20],
        "workloads": Workload.objects.owned_by(user).defer("report", "summary")[:20],
        "experiments": Experiment.objects.owned_by(user).annotate(
            progress_avg=Avg("runs__progress")
        )[:20],
        "studies": Study.objects.owned_by(user)[:20],
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
    request: HttpRequest,
    w: Workload,
    form: DeriveForm | None = None,
    edit_form: WorkloadEditForm | None = None,
    status: int = 200,
) -> HttpResponse:
    if form is None and w.status == WorkloadStatus.READY:
        form = DeriveForm(owner=request.user)
    ctx = {
        "w": w,
        "recipe_lines": describe_recipe(w),
        "derive_form": form,
        "edit_form": edit_form
        or WorkloadEditForm(
            prefix="rename", initial={"name": w.name, "description": w.description}
        ),
    }
    return render(request, "dashboard/workload_detail.html", ctx, status=status)


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
@require_POST
def workload_edit(request: HttpRequest, pk: int) -> HttpResponse:
    """Rename the workload (and edit its description)."""
    w = _workload(request, pk)
    form = WorkloadEditForm(request.POST, prefix="rename")
    if not form.is_valid():
        return _workload_page(request, w, edit_form=form, status=400)
    services.update_workload(w, **form.cleaned_data)
    messages.success(request, f"Saved {w.name!r}.")
    return redirect("dashboard:workload", pk=w.pk)


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
        except ValidationError as exc:  # the file's, or an alias's (they name aliases[...])
            for message in exc.messages:
                form.add_error("aliases" if ": aliases[" in message else "file", message)
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


def _cluster(request: HttpRequest, pk: int) -> Cluster:
    return get_object_or_404(Cluster.objects.owned_by(request.user), pk=pk)


def _accelerator_names(owner: Any) -> list[str]:
    """Names a pool may give: the owner's types and the catalog's keys (for a datalist)."""
    from clustersim.catalog import load_catalog
    from planner.models import AcceleratorType

    own = list(AcceleratorType.objects.filter(owner=owner).values_list("name", flat=True))
    return [*own, *load_catalog().names()]


def _cluster_page(
    request: HttpRequest, cluster: Cluster, bound: Any = None, status: int = 200
) -> HttpResponse:
    ctx = {
        "c": cluster,
        "reimport_url": _reimport_url(cluster) if cluster.import_report else "",
        "what_if_forms": what_if_forms(cluster, bound),
        "accelerator_names": _accelerator_names(request.user),
        "compare_url": _compare_url([cluster.parent, cluster]) if cluster.parent else "",
    }
    return render(request, "dashboard/cluster_detail.html", ctx, status=status)


@login_required
def cluster_detail(request: HttpRequest, pk: int) -> HttpResponse:
    return _cluster_page(request, _cluster(request, pk))


def _compare_url(clusters: list[Any]) -> str:
    from urllib.parse import urlencode

    query = urlencode([("compare", c.pk) for c in clusters if c is not None])
    return f"{reverse('dashboard:experiment-create')}?{query}"


@login_required
@require_POST
def cluster_what_if(request: HttpRequest, pk: int) -> HttpResponse:
    """Make a variant in one step (clustersim.variants); then offer to compare it."""
    cluster = _cluster(request, pk)
    op = next((op for op in WHAT_IF_FORMS if f"{op}-op" in request.POST), "")
    if not op:
        messages.error(request, "Choose a what-if: add devices, replace a type or scale.")
        return redirect("dashboard:cluster", pk=cluster.pk)
    form = WHAT_IF_FORMS[op](request.POST, cluster=cluster, prefix=op)
    if form.is_valid():
        try:
            variant = services.what_if(cluster, op, form.params(), form.cleaned_data["name"])
        except ValidationError as exc:
            attach_what_if_error(form, exc)
        else:
            messages.success(
                request,
                f"Created {variant.name!r}: {variant.total_devices} devices "
                f"(was {cluster.total_devices}). Compare the two in an experiment.",
            )
            return redirect("dashboard:cluster", pk=variant.pk)
    return _cluster_page(request, cluster, bound=form, status=400)


def _save_edit(
    request: HttpRequest, cluster: Cluster, editor: ClusterEditor, spec: dict[str, Any]
) -> HttpResponse:
    meta = editor.meta.cleaned_data
    if "variant" in request.POST:
        name = meta["variant_name"] or f"{meta['name']} (edited)"
        variant = services.create_variant(cluster, spec, name, meta["description"])
        messages.success(
            request,
            f"Saved as the new variant {variant.name!r} ({variant.total_devices} devices); "
            f"{cluster.name!r} is unchanged.",
        )
        return redirect("dashboard:cluster", pk=variant.pk)
    services.update_cluster(cluster, name=meta["name"], description=meta["description"], spec=spec)
    messages.success(request, f"Saved {cluster.name!r}: {cluster.total_devices} devices.")
    return redirect("dashboard:cluster", pk=cluster.pk)


@login_required
def cluster_edit(request: HttpRequest, pk: int) -> HttpResponse:
    """Every part of the spec in forms. A spec that runs used is frozen (their results refer
    to it): changes to it are saved as a new variant; name and description stay editable."""
    cluster = _cluster(request, pk)
    editor = ClusterEditor(cluster, request.POST if request.method == "POST" else None)
    status = 200
    if request.method == "POST":
        status = 400
        if editor.is_valid():
            spec = editor.spec()
            if not editor.has_errors():
                try:
                    return _save_edit(request, cluster, editor, spec)
                except services.InUse as exc:
                    editor.errors.append(" ".join(exc.messages))
                    status = 409
                except ValidationError as exc:
                    editor.add_spec_error(exc)
    ctx = {
        "c": cluster,
        "editor": editor,
        "users": services.spec_users(cluster),
        "accelerator_names": _accelerator_names(request.user),
    }
    return render(request, "dashboard/cluster_edit.html", ctx, status=status)


@login_required
@require_POST
def cluster_clone(request: HttpRequest, pk: int) -> HttpResponse:
    cluster = get_object_or_404(Cluster.objects.owned_by(request.user), pk=pk)
    copy = cluster.clone()
    messages.success(request, f"Cloned into {copy.name!r}.")
    return redirect("dashboard:cluster", pk=copy.pk)


# -- experiments -----------------------------------------------------------------------------


def _experiment_initial(request: HttpRequest) -> dict[str, Any] | None:
    """Initial values of the create form: ``?from=<id>`` re-runs an experiment with changes,
    ``?compare=<id>&compare=<id>`` compares clusters (a what-if variant and its original)."""
    user = request.user
    source = request.GET.get("from", "")
    if source.isdigit():
        return experiment_initial(get_object_or_404(Experiment.objects.owned_by(user), pk=source))
    ids = [int(x) for x in request.GET.getlist("compare") if x.isdigit()]
    if ids:
        found = {c.pk: c for c in Cluster.objects.owned_by(user).filter(pk__in=ids)}
        return compare_initial(user, [found[i] for i in dict.fromkeys(ids) if i in found])
    return None


@login_required
def experiment_create(request: HttpRequest) -> HttpResponse:
    data = request.POST if request.method == "POST" else None
    initial = _experiment_initial(request) if data is None else None
    form = ExperimentForm(data, owner=request.user, initial=initial)
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
                failures=d.get("failure_settings"),
                network=d.get("network_settings"),
                stragglers=d.get("straggler_settings"),
                spot=d.get("spot_settings"),
                elastic=d.get("elastic") or "",
                aux_demand=d.get("aux_demand") or "",
            )
        except ValidationError as exc:
            form.add_service_error(exc)
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


# -- deleting (confirmation page on GET, the deletion on POST) ---------------------------------


def _confirm(
    request: HttpRequest,
    *,
    kind: str,
    obj: Any,
    back: str,
    blocked: str,
    consequences: list[str],
    dependents: list[Experiment] | None = None,
    cancel_url: str = "",
    status: int = 200,
) -> HttpResponse:
    ctx = {
        "kind": kind,
        "obj": obj,
        "back": back,
        "blocked": blocked,
        "consequences": consequences,
        "dependents": dependents or [],
        "cancel_url": cancel_url,
    }
    return render(request, "dashboard/confirm_delete.html", ctx, status=status)


def _used_page(
    request: HttpRequest, obj: Cluster | Workload, kind: str, back: str, delete: Any
) -> HttpResponse:
    """The confirmation page of a cluster or workload, and its deletion on POST: refused
    while a queued or running experiment uses it; finished experiments that used it are
    listed, and deleted with it only when the user ticks ``cascade``."""
    if request.method == "POST":
        try:
            deleted = delete(obj, cascade=request.POST.get("cascade") == "on")
        except services.InUse as exc:
            messages.error(request, " ".join(exc.messages))
            status = 409
        else:
            text = f"Deleted {kind} {obj.name!r}"
            if deleted:
                text += f" and {len(deleted)} experiment{'s' if len(deleted) > 1 else ''}"
            messages.success(request, text + ".")
            return redirect("dashboard:home")
    else:
        status = 200
    blocked, _ = services.usage_blockers(obj, cascade=True)
    dependents = [] if blocked else list(services.experiments_using(obj))
    what = "its upload and job table" if kind == "workload" else "its spec"
    return _confirm(
        request,
        kind=kind,
        obj=obj,
        back=back,
        blocked=blocked,
        consequences=[f"The {kind} and {what} are deleted for good."],
        dependents=dependents,
        status=status,
    )


@login_required
def cluster_delete(request: HttpRequest, pk: int) -> HttpResponse:
    cluster = _cluster(request, pk)
    back = reverse("dashboard:cluster", args=[cluster.pk])
    return _used_page(request, cluster, "cluster", back, services.delete_cluster)


@login_required
def workload_delete(request: HttpRequest, pk: int) -> HttpResponse:
    w = _workload(request, pk)
    back = reverse("dashboard:workload", args=[w.pk])
    return _used_page(request, w, "workload", back, services.delete_workload)


@login_required
def experiment_delete(request: HttpRequest, pk: int) -> HttpResponse:
    exp = _experiment(request, pk)
    status = 200
    if request.method == "POST":
        try:
            services.delete_experiment(exp)
        except services.InUse as exc:
            messages.error(request, " ".join(exc.messages))
            status = 409
        else:
            messages.success(request, f"Deleted experiment {exp.name!r} and its runs.")
            return redirect("dashboard:home")
    n = exp.runs.count()
    blocked = services.experiment_blockers(exp)
    return _confirm(
        request,
        kind="experiment",
        obj=exp,
        back=reverse("dashboard:experiment", args=[exp.pk]),
        blocked=blocked,
        consequences=[
            f"Its {n} run{'s' if n != 1 else ''} and their stored results (per-job tables, "
            "time series) are deleted for good; its clusters and workloads are kept."
        ],
        cancel_url=reverse("dashboard:experiment-cancel", args=[exp.pk]) if blocked else "",
        status=status,
    )


def _run(request: HttpRequest, pk: int) -> Run:
    return get_object_or_404(Run.objects.owned_by(request.user).select_related("experiment"), pk=pk)


@login_required
def run_delete(request: HttpRequest, pk: int) -> HttpResponse:
    from planner.models import ACTIVE_STATES

    run = _run(request, pk)
    back = reverse("dashboard:experiment", args=[run.experiment_id])
    status = 200
    if request.method == "POST":
        try:
            services.delete_run(run)
        except services.InUse as exc:
            messages.error(request, " ".join(exc.messages))
            status = 409
        else:
            messages.success(request, f"Deleted run #{run.pk} and its results.")
            return redirect(back)
    blocked = services.run_blockers(run)
    active = run.state in ACTIVE_STATES
    return _confirm(
        request,
        kind="run",
        obj=run,
        back=back,
        blocked=blocked,
        consequences=[
            f"Run #{run.pk} ({run.policy}, load ×{run.load_factor:g}, seed {run.seed}) and its "
            f"stored results are deleted for good; experiment {run.experiment.name!r} keeps "
            "its other runs."
        ],
        cancel_url=reverse("dashboard:run-cancel", args=[run.pk]) if active else "",
        status=status,
    )


@login_required
@require_POST
def run_cancel(request: HttpRequest, pk: int) -> HttpResponse:
    run = _run(request, pk)
    n = runner.cancel_runs(Run.objects.filter(pk=run.pk))
    messages.info(request, f"Cancelled run #{run.pk}." if n else f"Run #{run.pk} had finished.")
    return redirect("dashboard:run", pk=run.pk)
