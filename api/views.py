"""API views. Every queryset is the requesting user's own rows, so others' objects are 404."""

from __future__ import annotations

import contextlib
import functools
import io
import json
import re
from collections.abc import Iterator
from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import connections, router
from django.db.models import Avg, Count, ProtectedError, Q
from django.http import HttpResponse
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import APIException, ErrorDetail, NotFound, ValidationError
from rest_framework.parsers import FormParser, JSONParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api import catalogue
from api import serializers as s
from api.filters import ClusterFilter, ExperimentFilter, RunFilter, WorkloadFilter
from planner import exports, runner, services
from planner.baselines import savings
from planner.models import (
    PARQUET,
    AcceleratorType,
    Artefact,
    Cluster,
    Experiment,
    Run,
    RunState,
    Workload,
)

NAME_TAKEN = OpenApiResponse(
    OpenApiTypes.OBJECT, description="you already have one of this name: {name: [message]}"
)
TOO_MANY_QUEUED = OpenApiResponse(
    s.DetailSerializer,
    description="the runs would take you past the limit of queued runs per user "
    "(CLUSTERSIM_MAX_QUEUED_RUNS_PER_USER); nothing was created or queued",
)


class OwnedMixin:
    """``get_queryset`` is the user's rows; ``perform_create`` sets the owner."""

    model: Any = None
    request: Request

    def base_queryset(self) -> Any:
        return self.model.objects.owned_by(self.request.user)

    def get_queryset(self) -> Any:
        return self.base_queryset()

    def perform_create(self, serializer: Any) -> None:
        serializer.save(owner=self.request.user)

    def perform_destroy(self, instance: Any) -> None:
        try:
            instance.delete()
        except ProtectedError:
            raise Conflict() from None

    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        # A list serializer whose fields all read model columns (a RowPlan) gets the page as
        # ``values_list`` rows: same data without building model instances only to read them
        # (with the date-times formatted by PostgreSQL, most of a run list's time). The rows
        # are the user's (``owned_by`` on a values_list queryset built once, see _rows); a
        # view whose get_queryset narrows them further keeps DRF's path. Filters, ordering and
        # pagination apply as before.
        view: Any = self
        serializer_class: Any = view.get_serializer_class()
        plan = serializer_class.row_plan() if hasattr(serializer_class, "row_plan") else None
        own_rows = (
            type(self).get_queryset is OwnedMixin.get_queryset
            and type(self).base_queryset is OwnedMixin.base_queryset
        )
        if plan is None or not own_rows:
            return super().list(request, *args, **kwargs)  # type: ignore[misc,no-any-return]
        db = router.db_for_read(self.model)
        rows = _rows(self.model, serializer_class, db, plan.utc_text(connections[db].vendor))
        queryset = view.filter_queryset(rows.owned_by(request.user))
        page = view.paginate_queryset(queryset)
        if page is None:
            return Response(serializer_class.represent_rows(queryset))
        return view.get_paginated_response(serializer_class.represent_rows(page))


@functools.lru_cache(maxsize=64)
def _rows(model: Any, serializer_class: Any, db: str, utc_text: bool) -> Any:
    """``values_list`` of the serializer's row plan on all the model's rows: built once (its
    twenty columns cost a run list about 0.2 ms a request), cloned by every ``owned_by``, never
    evaluated itself."""
    return model.objects.using(db).values_list(*serializer_class.row_plan().select(utc_text))


IN_USE = OpenApiResponse(
    s.InUseSerializer,
    description="used by experiments: queued or running ones (cancel them first), or finished "
    "ones (delete them first, or with ?cascade=true); `experiments` lists them",
)
SPEC_FROZEN = OpenApiResponse(
    s.InUseSerializer,
    description="the spec is frozen: runs of `experiments` used it; save the edit as a variant "
    "(POST clusters/{id}/clone/ with the spec)",
)
RUN_IN_USE = OpenApiResponse(
    s.InUseSerializer,
    description="queued or running (cancel first), or the only run of its experiment (delete "
    "the experiment)",
)
CASCADE = OpenApiParameter(
    "cascade",
    OpenApiTypes.BOOL,
    description="true: also delete the finished experiments that used it (their runs and "
    "stored results); default false: refuse (409) while any experiment uses it.",
)


class InUseConflict(APIException):
    """409 with the reason and the experiments in the way (``planner.services.InUse``)."""

    status_code = status.HTTP_409_CONFLICT
    default_code = "in_use"

    def __init__(self, exc: services.InUse) -> None:
        message = " ".join(exc.messages)
        super().__init__(message)
        # the answer's body as is (APIException would turn the ids into strings)
        self.detail = {
            "detail": ErrorDetail(message, self.default_code),
            "experiments": exc.experiments,
        }


@contextlib.contextmanager
def _as_409() -> Iterator[None]:
    try:
        yield
    except services.InUse as exc:
        raise InUseConflict(exc) from None


def _cascade(request: Request) -> bool:
    value = request.query_params.get("cascade", "false")
    if value not in ("true", "false"):
        raise ValidationError({"cascade": ["true or false"]})
    return value == "true"


class Conflict(ValidationError):
    status_code = status.HTTP_409_CONFLICT
    default_detail = "still used by experiment runs; delete those experiments first"

    def __init__(self) -> None:
        super().__init__({"detail": self.default_detail})


TYPE_CONFLICT = OpenApiResponse(
    OpenApiTypes.OBJECT,
    description="you already have a type of this name ({name: [message]}), or clusters naming "
    "the type ran in experiments ({detail, experiments}): its figures are frozen",
)


@extend_schema(tags=["accelerators"])
@extend_schema(methods=["DELETE"], responses={204: None, 409: IN_USE})
@extend_schema(methods=["POST"], responses={201: s.AcceleratorTypeSerializer, 409: NAME_TAKEN})
@extend_schema(
    methods=["PUT", "PATCH"], responses={200: s.AcceleratorTypeSerializer, 409: TYPE_CONFLICT}
)
class AcceleratorTypeViewSet(OwnedMixin, viewsets.ModelViewSet):
    """Your accelerator types. Built-in ones: ``/api/v1/catalog/accelerators/``. A type that
    clusters simulated in experiments name is frozen but for its notes (409)."""

    model = AcceleratorType
    serializer_class = s.AcceleratorTypeSerializer
    filterset_fields = ("kind",)
    ordering_fields = ("name", "created", "release_year")

    def perform_update(self, serializer: Any) -> None:
        with _as_409():
            services.check_type_editable(serializer.instance, dict(serializer.validated_data))
        serializer.save()

    def perform_destroy(self, instance: Any) -> None:
        with _as_409():
            services.check_type_editable(instance, None)
        super().perform_destroy(instance)


@extend_schema(tags=["accelerators"])
class BuiltinAcceleratorsView(APIView):
    """The built-in accelerator catalog (read-only)."""

    @extend_schema(responses=s.BuiltinAcceleratorSerializer(many=True))
    def get(self, request: Request) -> Response:
        from clustersim.catalog import catalog_rows

        data = [
            {
                "name": t.name,
                "kind": t.kind,
                "fp16_tflops": t.fp16_tflops,
                "memory_gb": t.memory_gb,
                "memory_bw_tbs": t.memory_bw_tbs,
                "busy_w": t.busy_w,
                "idle_w": t.idle_w,
                "price_per_hour": t.price_per_hour,
                "price_source": row.price_source,
                "price_date": row.price_date,
                "purchase_usd": t.capital_usd,
                "amortisation_years": t.amortisation_years,
                "release_year": t.release_year,
                "aliases": list(t.aliases),
            }
            for row in catalog_rows()
            for t in (row.type,)
        ]
        return Response(s.BuiltinAcceleratorSerializer(data, many=True).data)


@extend_schema(tags=["clusters"])
class PresetsView(APIView):
    """Cluster presets built from real clusters; create one with ``clusters/from-preset/``."""

    @extend_schema(responses=s.PresetSerializer(many=True))
    def get(self, request: Request) -> Response:
        from clustersim.presets import PRESETS, preset_spec

        data = [
            {"name": n, "description": p.description, "source": p.source, "spec": preset_spec(n)}
            for n, p in PRESETS.items()
        ]
        return Response(s.PresetSerializer(data, many=True).data)


@extend_schema(tags=["clusters"])
@extend_schema(methods=["DELETE"], parameters=[CASCADE], responses={204: None, 409: IN_USE})
@extend_schema(
    methods=["PUT", "PATCH"],
    description="Edit the cluster; the spec is validated. A spec that runs have used is frozen "
    "(their results refer to it): changing it answers 409, and `clone` with the edited spec "
    "saves it as a variant; the name and description stay editable.",
    responses={200: s.ClusterSerializer, 409: SPEC_FROZEN},
)
class ClusterViewSet(OwnedMixin, viewsets.ModelViewSet):
    """Inventories: the simulator's cluster spec, validated on every write."""

    model = Cluster
    serializer_class = s.ClusterSerializer
    filterset_class = ClusterFilter
    expensive_actions = ("import_nodes",)  # api.throttling.ExpensiveRateThrottle
    ordering_fields = ("name", "created", "total_devices")

    @extend_schema(request=s.ClusterFromPresetSerializer, responses={201: s.ClusterSerializer})
    @action(detail=False, methods=["post"], url_path="from-preset")
    def from_preset(self, request: Request) -> Response:
        """Create a cluster from a preset (its spec is copied; edit it freely)."""
        from clustersim.presets import preset_spec

        form = s.ClusterFromPresetSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        name = form.validated_data["preset"]
        spec = preset_spec(name)
        cluster = services.create_cluster(
            request.user, form.validated_data.get("name") or name, spec, preset=name
        )
        return Response(s.ClusterSerializer(cluster).data, status=status.HTTP_201_CREATED)

    @extend_schema(
        request={"multipart/form-data": s.ClusterImportSerializer},
        responses={201: s.ClusterSerializer},
    )
    @action(
        detail=False,
        methods=["post"],
        url_path="import",
        parser_classes=(MultiPartParser, FormParser),
    )
    def import_nodes(self, request: Request) -> Response:
        """Create a cluster from a node list; ``import_report`` says what was understood
        (models resolved, unmapped models and the nodes left out, warnings). A file that
        cannot be read answers 400 naming its line and field, and nothing is stored."""
        form = s.ClusterImportSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        data = form.validated_data
        upload = data["file"]
        with _as_400("file"):
            cluster = services.import_cluster(
                request.user,
                upload.read(),
                upload.name,
                fmt=data.get("format", ""),
                aliases=data.get("aliases") or None,
                name=data.get("name", ""),
                nodes_per_rack=data.get("nodes_per_rack"),
                description=data.get("description", ""),
            )
        return Response(s.ClusterSerializer(cluster).data, status=status.HTTP_201_CREATED)

    def perform_update(self, serializer: Any) -> None:
        with _as_409():
            services.check_spec_editable(serializer.instance, serializer.validated_data.get("spec"))
        serializer.save()

    def destroy(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """Delete the cluster: 409 while experiments use it, unless they have finished and
        ``cascade`` is true (then they are deleted with it, runs and results too)."""
        cascade = _cascade(request)
        with _as_409():
            services.delete_cluster(self.get_object(), cascade=cascade)
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(request=s.CloneSerializer, responses={201: s.ClusterSerializer})
    @action(detail=True, methods=["post"])
    def clone(self, request: Request, pk: str | None = None) -> Response:
        """Copy the cluster for a what-if; the copy's ``parent`` is this one. With ``spec``,
        the copy gets that spec (validated): an edit saved as a variant."""
        form = s.CloneSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        data = form.validated_data
        cluster = self.get_object()
        if "spec" not in data:
            copy = cluster.clone(data.get("name"))
            if data.get("description") is not None:
                services.update_cluster(copy, description=data["description"])
        else:
            with _as_400("spec"):
                copy = services.create_variant(
                    cluster,
                    data["spec"],
                    data.get("name") or f"{cluster.name} (variant)",
                    data.get("description", ""),
                )
        return Response(s.ClusterSerializer(copy).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=s.WhatIfSerializer, responses={201: s.ClusterSerializer})
    @action(detail=True, methods=["post"], url_path="what-if")
    def what_if(self, request: Request, pk: str | None = None) -> Response:
        """Make a variant in one step: add devices in a new pool, replace a pool's type, or
        scale pools (``op``). The variant's ``parent`` is this cluster; launch an experiment
        with both to compare them. A parameter the simulator refuses answers 400 naming it."""
        form = s.WhatIfSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        data = dict(form.validated_data)
        op, name = data.pop("op"), data.pop("name", "")
        try:
            variant = services.what_if(self.get_object(), op, data, name)
        except DjangoValidationError as exc:
            raise ValidationError(_by_field(exc, (*data, "name"))) from None
        return Response(s.ClusterSerializer(variant).data, status=status.HTTP_201_CREATED)


def _by_field(exc: DjangoValidationError, fields: Any) -> dict[str, list[str]]:
    """A service error ``"<field>: message"`` under its field (else ``non_field_errors``)."""
    out: dict[str, list[str]] = {}
    for message in exc.messages:
        head, sep, rest = message.partition(": ")
        key = head if sep and head in fields else "non_field_errors"
        out.setdefault(key, []).append(rest if key == head else message)
    return out


@extend_schema(tags=["workloads"])
@extend_schema(methods=["DELETE"], parameters=[CASCADE], responses={204: None, 409: IN_USE})
class WorkloadViewSet(
    OwnedMixin,
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.UpdateModelMixin,
    mixins.DestroyModelMixin,
    viewsets.GenericViewSet,
):
    """Uploaded traces. Uploading answers 202: poll the workload until ``status`` is
    ``ready`` (parse report and summary filled in) or ``failed`` (``error`` says where)."""

    model = Workload
    filterset_class = WorkloadFilter
    expensive_actions = ("create", "synthetic", "derive")  # api.throttling
    ordering_fields = ("name", "created", "status")

    def get_parsers(self) -> list[Any]:
        # an upload is a multipart form; everything else here is JSON
        action = getattr(self, "action", None)
        if action is None and getattr(self, "request", None) is not None:
            action = getattr(self, "action_map", {}).get(self.request.method.lower())
        return [MultiPartParser()] if action == "create" else [JSONParser()]

    # lists read only their serializer's columns (OwnedMixin.list): no report, no summary

    def destroy(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """Delete the workload with its upload and job table (409 while experiments use it,
        unless ``cascade`` and they have finished)."""
        cascade = _cascade(request)
        with _as_409():
            services.delete_workload(self.get_object(), cascade=cascade)
        return Response(status=status.HTTP_204_NO_CONTENT)

    def get_serializer_class(self) -> Any:
        if self.action == "list":
            return s.WorkloadListSerializer
        if self.action == "create":
            return s.WorkloadUploadSerializer
        return s.WorkloadSerializer

    @extend_schema(
        request={"multipart/form-data": s.WorkloadUploadSerializer},
        responses={202: s.WorkloadSerializer},
    )
    def create(self, request: Request) -> Response:
        """Upload a trace; it is parsed in the background."""
        form = s.WorkloadUploadSerializer(data=request.data, context={"request": request})
        form.is_valid(raise_exception=True)
        workload = form.save()
        return Response(s.WorkloadSerializer(workload).data, status=status.HTTP_202_ACCEPTED)

    @extend_schema(request=s.SyntheticWorkloadSerializer, responses={202: s.WorkloadSerializer})
    @action(detail=False, methods=["post"], parser_classes=(JSONParser,))
    def synthetic(self, request: Request) -> Response:
        """Generate a synthetic workload (Poisson or diurnal arrivals; sizes and durations from
        Gavel's generator or fitted to one of your workloads). A worker builds it: poll until
        ``status`` is ``ready``. A bad recipe answers 400 naming ``recipe.<field>``."""
        form = s.SyntheticWorkloadSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        data = form.validated_data
        with _as_400("recipe"):
            workload = services.create_synthetic_workload(
                request.user, data.get("name", ""), data["recipe"], data.get("description", "")
            )
        return Response(s.WorkloadSerializer(workload).data, status=status.HTTP_202_ACCEPTED)

    @extend_schema(request=s.DeriveWorkloadSerializer, responses={202: s.WorkloadSerializer})
    @action(detail=True, methods=["post"], parser_classes=(JSONParser,))
    def derive(self, request: Request, pk: str | None = None) -> Response:
        """A new workload from this one's job table through transformation ``steps`` (time
        window, sample, load factor, demand capped to a cluster, calendar rebase), built by
        a worker. A bad step answers 400 naming ``steps[i].<field>``."""
        parent = self.get_object()
        form = s.DeriveWorkloadSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        data = form.validated_data
        with _as_400("steps"):
            workload = services.derive_workload(
                request.user,
                parent,
                data.get("name", ""),
                data["steps"],
                data.get("description", ""),
            )
        return Response(s.WorkloadSerializer(workload).data, status=status.HTTP_202_ACCEPTED)


@contextlib.contextmanager
def _as_400(field: str) -> Iterator[None]:
    """A service's ``ValidationError`` (it names the field) as a 400 under ``field``."""
    try:
        yield
    except DjangoValidationError as exc:
        raise ValidationError({field: exc.messages}) from None


@functools.cache
def _annotated_experiments() -> Any:
    """Experiments with their run counts by state and mean progress (built once: resolving the
    six aggregates costs about a millisecond; every request clones it)."""
    counts = {f"n_{state}": Count("runs", filter=Q(runs__state=state)) for state in RunState.values}
    return Experiment.objects.annotate(progress_avg=Avg("runs__progress"), **counts).order_by(
        "-created", "-id"
    )


def _experiment_queryset(user: Any) -> Any:
    # the clusters' and workloads' ids: s.attach_grid_ids (one query for a whole page)
    return _annotated_experiments().owned_by(user)


@extend_schema(tags=["experiments"])
class ExperimentViewSet(
    OwnedMixin,
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.DestroyModelMixin,
    viewsets.GenericViewSet,
):
    """Grids of clusters × workloads × policies × load factors × seeds; one run per point
    (one for all the seeds where neither the policy nor the placement draws from the seed).

    Creating one answers 202: the runs are queued and Celery workers simulate them.
    """

    model = Experiment
    serializer_class = s.ExperimentSerializer
    filterset_class = ExperimentFilter
    expensive_actions = ("create", "rerun")  # api.throttling.ExpensiveRateThrottle
    ordering_fields = ("name", "created", "state")

    def get_queryset(self) -> Any:
        return _experiment_queryset(self.request.user)

    @extend_schema(
        request=s.ExperimentCreateSerializer,
        responses={202: s.ExperimentSerializer, 429: TOO_MANY_QUEUED},
    )
    def create(self, request: Request) -> Response:
        form = s.ExperimentCreateSerializer(data=request.data, context={"request": request})
        form.is_valid(raise_exception=True)
        exp = form.save()
        data = s.ExperimentSerializer(self.get_queryset().get(pk=exp.pk)).data
        return Response(data, status=status.HTTP_202_ACCEPTED)

    @extend_schema(responses={204: None, 409: IN_USE})
    def destroy(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """Delete the experiment with its runs and their stored results; 409 while runs are
        queued or running (cancel it first)."""
        with _as_409():
            services.delete_experiment(self.get_object())
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(request=None, responses=s.ExperimentSerializer)
    @action(detail=True, methods=["post"])
    def cancel(self, request: Request, pk: str | None = None) -> Response:
        """Cancel every queued or running run; running ones stop within a heartbeat."""
        exp = self.get_object()
        runner.cancel_runs(exp.runs.all())
        return Response(s.ExperimentSerializer(self.get_queryset().get(pk=exp.pk)).data)

    @extend_schema(request=None, responses={202: s.ExperimentSerializer, 429: TOO_MANY_QUEUED})
    @action(detail=True, methods=["post"])
    def rerun(self, request: Request, pk: str | None = None) -> Response:
        """Queue the failed and cancelled runs again."""
        exp = self.get_object()
        try:
            services.rerun(exp)
        except services.QueuedRunsLimit as exc:
            raise s.queued_runs_limit(exc) from None
        data = s.ExperimentSerializer(self.get_queryset().get(pk=exp.pk)).data
        return Response(data, status=status.HTTP_202_ACCEPTED)


#: schema of a table download (``?as=csv|parquet``)
_TABLE_DOWNLOAD = extend_schema(
    parameters=[
        OpenApiParameter(
            "as", str, enum=["csv", "parquet"], default="csv", description="File format."
        )
    ],
    responses={
        (200, "text/csv"): OpenApiTypes.BINARY,
        (200, PARQUET): OpenApiTypes.BINARY,
    },
)


def _table_download(request: Request, artefact_id: int | None, stem: str) -> HttpResponse:
    """A stored Parquet table as an attachment, as Parquet or (``?as=csv``, default) CSV."""
    kind = request.query_params.get("as", "csv")
    if kind not in ("csv", "parquet"):
        raise ValidationError({"as": "csv or parquet"})
    data = get_object_or_404(Artefact, pk=artefact_id).read()
    if kind == "parquet":
        response = HttpResponse(data, content_type=PARQUET)
    else:
        import pandas as pd

        text = exports.csv_text(pd.read_parquet(io.BytesIO(data)))
        response = HttpResponse(text, content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{stem}.{kind}"'
    return response


def _finished(run: Run) -> None:
    if run.state != RunState.SUCCEEDED:
        raise NotFound(f"run {run.pk} is {run.state}; results exist once it has succeeded")


@extend_schema(tags=["runs"])
class RunViewSet(OwnedMixin, mixins.DestroyModelMixin, viewsets.ReadOnlyModelViewSet):
    """Runs (one simulation each) and their results."""

    model = Run
    serializer_class = s.RunSerializer
    filterset_class = RunFilter
    ordering_fields = ("id", "state", "policy", "load_factor", "seed", "finished_at")

    # lists read only their serializer's columns (OwnedMixin.list): no summary

    def get_serializer_class(self) -> Any:
        if self.action == "list":
            return s.RunListSerializer
        return s.RunSerializer

    @extend_schema(responses={204: None, 409: RUN_IN_USE})
    def destroy(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """Delete a finished run and its stored results (its experiment counts one run less);
        409 while it is queued or running, or when it is its experiment's only run."""
        with _as_409():
            services.delete_run(self.get_object())
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(request=None, responses=s.RunSerializer)
    @action(detail=True, methods=["post"])
    def cancel(self, request: Request, pk: str | None = None) -> Response:
        """Cancel the run if it is queued or running (a running one stops within a beat)."""
        run = self.get_object()
        runner.cancel_runs(Run.objects.filter(pk=run.pk))
        run.refresh_from_db()
        return Response(s.RunSerializer(run).data)

    @extend_schema(responses={200: OpenApiTypes.OBJECT})
    @action(detail=True, methods=["get"])
    def summary(self, request: Request, pk: str | None = None) -> Response:
        """Summary metrics (flat object; definitions in docs/metrics.md).

        Costs: ``cost_owned_usd`` (alias ``cost_usd``) is an owned cluster's amortised capital
        plus energy over the cost horizon ``horizon_s``, the same for every policy;
        ``cost_cloud_usd`` prices the device-hours actually held at on-demand rates. Waiting:
        ``wait_*_s`` is the total wait (JCT minus time holding devices, so it counts waiting
        after a preemption); ``queue_delay_*_s`` is the delay before the first start only.
        """
        run = self.get_object()
        _finished(run)
        return Response(run.summary)

    @extend_schema(responses={200: s.TimeseriesSerializer})
    @action(detail=True, methods=["get"])
    def timeseries(self, request: Request, pk: str | None = None) -> Response:
        """The run's timeline, at most 2,000 time-weighted points."""
        run = self.get_object()
        _finished(run)
        art = get_object_or_404(Artefact, pk=run.timeseries_id)
        series = json.loads(art.read())
        series.pop("models", None)  # the optional models' records (dashboard charts)
        return Response({"series": series})

    @_TABLE_DOWNLOAD
    @action(detail=True, methods=["get"])
    def jobs(self, request: Request, pk: str | None = None) -> HttpResponse:
        """Per-job outcomes (submit, start, finish, JCT, queueing delay, ...) as CSV or Parquet."""
        run = self.get_object()
        _finished(run)
        return _table_download(request, run.per_job_id, f"run-{run.pk}-jobs")

    @_TABLE_DOWNLOAD
    @action(detail=True, methods=["get"])
    def stints(self, request: Request, pk: str | None = None) -> HttpResponse:
        """Device stints: one row per job, node and uninterrupted stint, as CSV or Parquet.

        Columns ``job`` (row in the per-job table), ``job_id``, ``node``, ``node_devices``,
        ``rack``, ``accel_type``, ``devices`` (held on that node), ``start``, ``end`` (s);
        sorted by start. 404 for runs stored before stints were recorded.
        """
        run = self.get_object()
        _finished(run)
        if run.stints_id is None:
            raise NotFound(f"run {run.pk} was stored before device stints were recorded")
        return _table_download(request, run.stints_id, f"run-{run.pk}-stints")


#: ``?runs=`` of the comparison: 1 to 200 ids (each below 2**63, as the database keeps them)
_RUN_IDS = re.compile(r"[0-9]{1,18}(,[0-9]{1,18}){0,199}")


@extend_schema(
    tags=["runs"],
    parameters=[
        OpenApiParameter(
            "runs",
            str,
            required=True,
            description="Comma-separated run ids (at most 200).",
            pattern=f"^{_RUN_IDS.pattern}$",
        ),
        OpenApiParameter(
            "baseline",
            int,
            required=False,
            description="One of the runs: the baseline of every other run's savings. "
            "Default: each run's own baseline among the runs (docs/carbon.md).",
        ),
    ],
    responses={
        200: s.CompareSerializer,
        404: OpenApiResponse(
            s.DetailSerializer,
            description="some of the runs are not yours, or the baseline is not one of them",
        ),
    },
)
class CompareView(APIView):
    """Summary metrics of any set of your runs side by side."""

    def get(self, request: Request) -> Response:
        raw = request.query_params.get("runs", "")
        if not _RUN_IDS.fullmatch(raw):
            raise ValidationError({"runs": "between 1 and 200 comma-separated run ids"})
        ids = [int(x) for x in raw.split(",")]
        baseline_raw = request.query_params.get("baseline", "")
        if baseline_raw and not re.fullmatch(r"[-+]?\d+", baseline_raw):
            raise ValidationError({"baseline": "a run id, one of the ids in runs"})
        runs = {
            r.pk: r
            for r in Run.objects.owned_by(request.user)
            .filter(pk__in=ids)
            .select_related("cluster", "workload")
            .only(
                "id",
                "experiment_id",
                "cluster_id",
                "workload_id",
                "policy",
                "params",
                "load_factor",
                "seed",
                "seed_independent",
                "state",
                "summary",
                "cluster__name",
                "workload__name",
            )
        }
        missing = [i for i in ids if i not in runs]
        if missing:
            raise NotFound(f"no such runs: {', '.join(map(str, missing))}")
        baseline_id = None
        if baseline_raw:
            # a well-formed id that is not among the runs compared: not found among them
            if int(baseline_raw) not in runs:
                raise NotFound(f"baseline: run {int(baseline_raw)} is not one of the runs")
            baseline_id = int(baseline_raw)
        ordered = [runs[i] for i in dict.fromkeys(ids)]
        keys: list[str] = []
        for r in ordered:
            for k, v in (r.summary or {}).items():
                if k not in keys and (v is None or isinstance(v, int | float)):
                    keys.append(k)
        metrics = {k: [(r.summary or {}).get(k) for r in ordered] for k in keys}
        data = {
            "runs": [
                {
                    "id": r.pk,
                    "experiment": r.experiment_id,
                    "cluster": r.cluster.name,
                    "workload": r.workload.name,
                    "policy": r.policy,
                    "params": r.params,
                    "load_factor": r.load_factor,
                    "seed": r.seed,
                    "state": r.state,
                }
                for r in ordered
            ],
            "metrics": metrics,
            "savings": savings(ordered, None if baseline_id is None else runs[baseline_id]),
        }
        return Response(data)


@extend_schema(tags=["catalogue"])
class PolicyListView(APIView):
    """The policy catalogue: what each policy does, its hyper-parameters and its paper."""

    @extend_schema(responses=s.PolicySerializer(many=True))
    def get(self, request: Request) -> Response:
        return Response(s.PolicySerializer(catalogue.policies(), many=True).data)


@extend_schema(tags=["catalogue"])
class PlacementListView(APIView):
    """Placement strategies (which nodes a job's devices come from)."""

    @extend_schema(responses=s.PlacementSerializer(many=True))
    def get(self, request: Request) -> Response:
        return Response(s.PlacementSerializer(catalogue.placements(), many=True).data)


@extend_schema(tags=["catalogue"])
class TraceFormatListView(APIView):
    """Trace formats the upload understands (auto-detected when none is given)."""

    @extend_schema(responses=s.TraceFormatSerializer(many=True))
    def get(self, request: Request) -> Response:
        from clustersim.traces import formats

        data = [{"name": k, "description": v} for k, v in formats().items()]
        return Response(s.TraceFormatSerializer(data, many=True).data)
