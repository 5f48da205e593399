"""Serializers. Related objects are always looked up among the requesting user's own rows."""

from __future__ import annotations

from typing import Any, ClassVar

from django.conf import settings
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import DEFAULT_DB_ALIAS, connections, models
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    PolymorphicProxySerializer,
    extend_schema_field,
    extend_schema_serializer,
)
from rest_framework import serializers, status
from rest_framework.exceptions import APIException

from api.representation import FastRepresentationMixin
from api.strict import StrictInput
from planner import recipes, services
from planner.models import (
    COMPAT_CHOICES,
    AcceleratorType,
    Cluster,
    Experiment,
    Run,
    Workload,
    WorkloadStatus,
)


def _django_error(exc: DjangoValidationError) -> serializers.ValidationError:
    return serializers.ValidationError(exc.messages)


class QueuedRunsLimitExceeded(APIException):
    """429: the user has too many queued runs (``CLUSTERSIM_MAX_QUEUED_RUNS_PER_USER``)."""

    status_code = status.HTTP_429_TOO_MANY_REQUESTS
    default_detail = "too many queued runs"
    default_code = "queued_runs_limit"


def queued_runs_limit(exc: services.QueuedRunsLimit) -> QueuedRunsLimitExceeded:
    return QueuedRunsLimitExceeded(" ".join(exc.messages))


# no docstring: drf-spectacular would show it as the description of every serializer using it
class EditedFieldsMixin:
    # ``update`` saves only the fields the request edited (and ``updated``): a worker may be
    # writing the other columns of the same row (a workload's parse result) at the same time,
    # and a full save would write back what this request read before.

    def update(self, instance: Any, validated_data: dict[str, Any]) -> Any:
        if not validated_data:
            return instance
        for attr, value in validated_data.items():
            setattr(instance, attr, value)
        instance.save(update_fields=[*validated_data, "updated"])
        instance.refresh_from_db()  # answer with what the row holds now
        return instance


class OwnedPrimaryKeyRelatedField(serializers.PrimaryKeyRelatedField):
    """A primary key among the requesting user's rows; others' look like missing ones."""

    def get_queryset(self) -> Any:
        request = self.context.get("request")
        return self.queryset.owned_by(request.user if request else None)


# -- JSON fields, typed in the schema -----------------------------------------------------------
# The values are checked where they are used (the simulator's spec reader, planner.recipes);
# these fields say in the schema what they hold.

_OBJECT = {"type": "object", "additionalProperties": {}}


@extend_schema_field(_OBJECT)
class JSONObject(serializers.JSONField):
    """A JSON object."""


@extend_schema_field({"type": "array", "items": {"type": "string"}})
class StringList(serializers.JSONField):
    """A JSON list of strings."""


@extend_schema_field(
    {
        "type": "object",
        "additionalProperties": {"type": "string"},
        "description": "A JSON object of strings, sent as the text of a form field.",
    }
)
class JSONObjectText(serializers.JSONField):
    """A JSON object of strings sent as text (a multipart form's field)."""


@extend_schema_field(
    {
        "anyOf": [
            {"type": "boolean"},
            {"type": "integer"},
            {"type": "number"},
            {"type": "string"},
            {"type": "array", "items": {"type": "number"}},
        ],
        "nullable": True,
    }
)
class ParameterValue(serializers.JSONField):
    """A policy parameter's value: a boolean, a number, a string or a list of numbers."""


class _ExclusiveFloat(serializers.FloatField):
    """A number checked elsewhere, documented with exclusive bounds (api.schema.AutoSchema)."""

    def __init__(
        self,
        *,
        exclusive_minimum: float | None = None,
        exclusive_maximum: float | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if exclusive_minimum is not None:
            self.exclusive_minimum = exclusive_minimum
        if exclusive_maximum is not None:
            self.exclusive_maximum = exclusive_maximum


_OPTIONAL: dict[str, Any] = {"required": False, "allow_null": True}


def _hour_field(help_text: str) -> _ExclusiveFloat:
    return _ExclusiveFloat(
        required=False, allow_null=True, min_value=0, exclusive_maximum=24, help_text=help_text
    )


class SyntheticRecipeSerializer(serializers.Serializer):
    """A synthetic workload's recipe (planner.recipes; the models: clustersim.synth). Give
    ``jobs`` or ``duration_s`` (or both); a field left out or null takes its default."""

    def get_fields(self) -> dict[str, Any]:
        from clustersim.synth import MAX_JOBS

        opt = _OPTIONAL
        return {
            "model": serializers.ChoiceField(
                recipes.MODELS,
                **opt,
                help_text="gavel (multi-GPU jobs), gavel-single, or fit (to fit_workload); "
                "default gavel",
            ),
            "fit_workload": serializers.IntegerField(
                **opt, help_text="With model fit: one of your ready workloads."
            ),
            "jobs": serializers.IntegerField(
                min_value=1, max_value=MAX_JOBS, **opt, help_text="How many jobs."
            ),
            "duration_s": _ExclusiveFloat(
                exclusive_minimum=0, **opt, help_text="Arrivals stop after this long (s)."
            ),
            "arrival": serializers.ChoiceField(
                recipes.ARRIVALS, **opt, help_text="Arrival process; default the model's."
            ),
            "rate_per_hour": _ExclusiveFloat(
                exclusive_minimum=0, **opt, help_text="Mean arrivals per hour."
            ),
            "amplitude": serializers.FloatField(
                min_value=0, max_value=1, **opt, help_text="Diurnal swing, 0 to 1; default 0.5."
            ),
            "peak_hour": _hour_field("Diurnal: busiest hour of day, [0, 24); default 14."),
            "start_hour": _hour_field("Diurnal: hour of day at t = 0, [0, 24); default 0."),
            "duration_model": serializers.ChoiceField(
                recipes.DURATION_MODELS, **opt, help_text="Fitted models: how durations are drawn."
            ),
            "job_types": serializers.BooleanField(
                required=False, help_text="Give jobs model types (throughputs); default true."
            ),
            "seed": serializers.IntegerField(min_value=0, max_value=2**32 - 1, **opt),
        }


class StepSerializer(serializers.Serializer):
    """One transformation (planner.recipes, clustersim.transform); an op takes only its own
    fields: window (start_s, end_s), sample (fraction or n, seed), scale (factor), cap
    (cluster, mode), rebase (start, keep)."""

    op = serializers.ChoiceField(recipes.OPS)
    start_s = serializers.FloatField(
        min_value=0, **_OPTIONAL, help_text="window: from (s after the trace's start)"
    )
    end_s = _ExclusiveFloat(exclusive_minimum=0, **_OPTIONAL, help_text="window: to (s)")
    fraction = _ExclusiveFloat(
        exclusive_minimum=0, max_value=1, **_OPTIONAL, help_text="sample: the share kept"
    )
    n = serializers.IntegerField(
        min_value=1, max_value=10_000_000, **_OPTIONAL, help_text="sample: how many jobs kept"
    )
    seed = serializers.IntegerField(
        min_value=0, max_value=2**32 - 1, **_OPTIONAL, help_text="sample: its seed"
    )
    factor = _ExclusiveFloat(exclusive_minimum=0, required=False, help_text="scale: load factor")
    cluster = serializers.IntegerField(required=False, help_text="cap: one of your clusters")
    mode = serializers.ChoiceField(
        ("cap", "drop"), **_OPTIONAL, help_text="cap: cap larger jobs, or drop them"
    )
    start = serializers.CharField(
        required=False, help_text="rebase: ISO 8601 time, e.g. 2023-06-01T00:00:00Z"
    )
    keep = serializers.ChoiceField(
        ("time_of_day", "weekday", "none"), **_OPTIONAL, help_text="rebase: what to keep"
    )


@extend_schema_field(SyntheticRecipeSerializer)
class RecipeInput(serializers.JSONField):
    """A synthetic recipe (checked by planner.recipes)."""


@extend_schema_field(StepSerializer(many=True))
class StepsInput(serializers.JSONField):
    """Derive steps (checked by planner.recipes)."""

    min_items = 1  # api.schema.AutoSchema documents them
    max_items = recipes.MAX_STEPS


@extend_schema_serializer(component_name="StoredSyntheticRecipe")
class StoredSyntheticRecipeSerializer(SyntheticRecipeSerializer):
    """A synthetic workload's recipe as stored: every field, blank ones at their defaults."""

    def get_fields(self) -> dict[str, Any]:
        fields = super().get_fields()
        fields["model"].required = True  # what tells it from a derived workload's recipe
        return fields


class DerivedRecipeSerializer(serializers.Serializer):
    """A derived workload's recipe: its parent and the steps applied to its jobs."""

    parent = serializers.IntegerField()
    steps = StepSerializer(many=True)


@extend_schema_field(
    PolymorphicProxySerializer(
        component_name="Recipe",
        serializers=[StoredSyntheticRecipeSerializer, DerivedRecipeSerializer],
        resource_type_field_name=None,
    )
)
class RecipeOutput(serializers.JSONField):
    """A workload's recipe as stored (normalised)."""


# -- accelerators -------------------------------------------------------------------------------


class PositiveFloatField(serializers.FloatField):
    """A number above 0 (the schema says ``minimum: 0, exclusiveMinimum: true``)."""

    exclusive_minimum = 0.0  # api.schema.AutoSchema documents it

    def to_internal_value(self, data: Any) -> float:
        value = float(super().to_internal_value(data))
        if not value > 0:
            raise serializers.ValidationError("must be above 0")
        return value


class NameTaken(APIException):
    """409: a name the user already gave another object of the kind."""

    status_code = 409
    default_code = "conflict"

    def __init__(self, message: str) -> None:
        super().__init__({"name": [message]})


class AcceleratorTypeSerializer(
    StrictInput, EditedFieldsMixin, FastRepresentationMixin, serializers.ModelSerializer
):
    fp16_tflops = PositiveFloatField(help_text="dense FP16/BF16 peak, TFLOPS")
    memory_gb = PositiveFloatField()
    memory_bw_tbs = PositiveFloatField(help_text="memory bandwidth, TB/s")
    busy_w = PositiveFloatField(help_text="power when busy, W")
    amortisation_years = PositiveFloatField(
        required=False,
        help_text="years over which an owner spreads the purchase price (default 4)",
    )

    class Meta:
        model = AcceleratorType
        fields = (
            "id",
            "name",
            "kind",
            "fp16_tflops",
            "memory_gb",
            "memory_bw_tbs",
            "busy_w",
            "idle_w",
            "price_per_hour",
            "release_year",
            "purchase_usd",
            "amortisation_years",
            "notes",
            "created",
            "updated",
        )
        read_only_fields = ("created", "updated")
        extra_kwargs: ClassVar[dict[str, Any]] = {
            "idle_w": {"min_value": 0.0},
            "price_per_hour": {"min_value": 0.0},
            "purchase_usd": {"min_value": 0.0},
            "release_year": {"min_value": 1990, "max_value": 2100},
        }

    def validate_name(self, value: str) -> str:
        user = self.context["request"].user
        clash = AcceleratorType.objects.filter(owner=user, name=value)
        if self.instance is not None:
            clash = clash.exclude(pk=self.instance.pk)
        if clash.exists():
            raise NameTaken("you already have an accelerator type of this name")
        return value

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        from clustersim.catalog import check_type
        from clustersim.cluster import AcceleratorType as SimType
        from clustersim.errors import ClustersimError

        merged = {**(self.instance.to_spec() if self.instance else {}), **attrs}
        try:
            busy = float(merged["busy_w"])
            check_type(
                SimType(
                    name=merged["name"],
                    kind=merged.get("kind", "gpu"),
                    fp16_tflops=float(merged["fp16_tflops"]),
                    memory_gb=float(merged["memory_gb"]),
                    memory_bw_tbs=float(merged["memory_bw_tbs"]),
                    busy_w=busy,
                    idle_w=float(merged.get("idle_w") or 0.114 * busy),
                    price_per_hour=float(merged["price_per_hour"]),
                    release_year=int(merged["release_year"]),
                    purchase_usd=merged.get("purchase_usd"),
                    amortisation_years=float(merged.get("amortisation_years") or 4.0),
                )
            )
        except (ClustersimError, TypeError, ValueError) as exc:
            raise serializers.ValidationError(str(exc)) from None
        except KeyError:
            pass  # a required field is missing: the field validation reports it
        return attrs


class BuiltinAcceleratorSerializer(serializers.Serializer):
    name = serializers.CharField()
    kind = serializers.CharField()
    fp16_tflops = serializers.FloatField()
    memory_gb = serializers.FloatField()
    memory_bw_tbs = serializers.FloatField()
    busy_w = serializers.FloatField()
    idle_w = serializers.FloatField()
    price_per_hour = serializers.FloatField(help_text="on-demand (cloud) $ per device-hour")
    price_source = serializers.CharField(help_text="where price_per_hour comes from")
    price_date = serializers.DateField(help_text="date of price_per_hour")
    purchase_usd = serializers.FloatField(help_text="capital cost of one device, $")
    amortisation_years = serializers.FloatField()
    release_year = serializers.IntegerField()
    aliases = serializers.ListField(child=serializers.CharField())


# -- clusters -------------------------------------------------------------------------------------


class ClusterSerializer(
    StrictInput, EditedFieldsMixin, FastRepresentationMixin, serializers.ModelSerializer
):
    spec = JSONObject(
        help_text="The simulator's cluster spec (see clustersim.spec): pools, racks, regions, "
        "accelerators."
    )
    device_types = StringList(read_only=True, help_text="accelerator type names present")
    import_report = JSONObject(
        read_only=True,
        allow_null=True,
        help_text="what the importer understood (imported node lists)",
    )

    class Meta:
        model = Cluster
        fields = (
            "id",
            "name",
            "description",
            "spec",
            "preset",
            "parent",
            "total_devices",
            "device_types",
            "import_report",
            "created",
            "updated",
        )
        read_only_fields = (
            "preset",
            "parent",
            "total_devices",
            "device_types",
            "import_report",
            "created",
            "updated",
        )

    def validate_spec(self, value: Any) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise serializers.ValidationError("a cluster spec is a JSON object")
        try:
            total, types = services.cluster_summary(value, self.context["request"].user)
        except DjangoValidationError as exc:
            raise _django_error(exc) from None
        self._derived = {"total_devices": total, "device_types": types}
        return value

    def create(self, validated_data: dict[str, Any]) -> Cluster:
        return super().create({**validated_data, **getattr(self, "_derived", {})})

    def update(self, instance: Cluster, validated_data: dict[str, Any]) -> Cluster:
        return super().update(instance, {**validated_data, **getattr(self, "_derived", {})})


def _names_field(what: str, names: list[str], **kwargs: Any) -> serializers.ChoiceField:
    """A choice of ``names`` (an enum in the schema, built when a serializer's fields are:
    the web process imports the simulator's registries only then)."""
    known = ", ".join(names)
    return serializers.ChoiceField(
        choices=names,
        error_messages={"invalid_choice": f'unknown {what} "{{input}}"; known: {known}'},
        **kwargs,
    )


class ClusterFromPresetSerializer(StrictInput, serializers.Serializer):
    name = serializers.CharField(max_length=200, required=False)

    def get_fields(self) -> dict[str, Any]:
        from clustersim.presets import preset_names

        return {
            "preset": _names_field(
                "preset", list(preset_names()), help_text="A preset from /api/v1/presets/."
            ),
            **super().get_fields(),
        }


class CloneSerializer(StrictInput, serializers.Serializer):
    name = serializers.CharField(max_length=200, required=False)
    description = serializers.CharField(required=False, allow_blank=True)
    spec = JSONObject(
        required=False,
        help_text="An edited spec for the copy (a variant); default: the cluster's own. The way "
        "to edit a spec that runs have used (its cluster's spec is frozen).",
    )

    def validate_spec(self, value: Any) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise serializers.ValidationError("a cluster spec is a JSON object")
        return value


#: The parameters each what-if operation takes (required ones first).
WHAT_IF_PARAMS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "add_pool": (("accelerator", "devices"), ("devices_per_node", "region", "rack", "pool")),
    "replace_type": (("pool", "accelerator"), ()),
    "scale": (("factor",), ("pool",)),
}


class WhatIfSerializer(StrictInput, serializers.Serializer):
    op = serializers.ChoiceField(
        choices=list(WHAT_IF_PARAMS),
        help_text="add_pool: add `devices` of type `accelerator` in a new pool of nodes of "
        "`devices_per_node` (a divisor of `devices`; default by kind, 8 for GPUs), optionally in "
        "`region` or declared `rack`, named `pool`. replace_type: pool `pool` gets "
        "`accelerator` devices (same nodes; its intra_gbs reset to the type's default). scale: "
        "every pool's nodes (or pool `pool`'s) times `factor`, to the nearest whole node, halves "
        "up (clustersim.variants).",
    )
    name = serializers.CharField(
        max_length=200,
        required=False,
        allow_blank=True,
        help_text='Blank: the cluster\'s name and the change, e.g. "small + 64 H100-SXM5-80GB".',
    )
    accelerator = serializers.CharField(max_length=100, required=False)
    devices = serializers.IntegerField(min_value=1, max_value=1_000_000_000, required=False)
    devices_per_node = serializers.IntegerField(min_value=1, max_value=1024, required=False)
    region = serializers.CharField(max_length=200, required=False)
    rack = serializers.CharField(max_length=200, required=False)
    pool = serializers.CharField(max_length=200, required=False)
    factor = PositiveFloatField(required=False, max_value=1000.0)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        required, optional = WHAT_IF_PARAMS[attrs["op"]]
        errors = {k: [f"required by {attrs['op']}"] for k in required if k not in attrs}
        for k in attrs:
            if k not in ("op", "name", *required, *optional):
                errors[k] = [f"{attrs['op']} takes no {k}"]
        if errors:
            raise serializers.ValidationError(errors)
        return attrs


class PresetSerializer(serializers.Serializer):
    name = serializers.CharField()
    description = serializers.CharField()
    source = serializers.CharField()
    spec = JSONObject(help_text="The cluster spec, as POST /api/v1/clusters/ takes it.")


# -- workloads ------------------------------------------------------------------------------------


class WorkloadSerializer(
    StrictInput, EditedFieldsMixin, FastRepresentationMixin, serializers.ModelSerializer
):
    recipe = RecipeOutput(
        read_only=True,
        allow_null=True,
        help_text="What a synthetic or derived workload was made of (null: an upload).",
    )
    report = JSONObject(
        read_only=True,
        allow_null=True,
        help_text="The parse (or build) report: format, jobs read, kept and dropped (with "
        "reasons and first lines), warnings, assumptions; or the error's line and field.",
    )
    summary = JSONObject(
        read_only=True,
        allow_null=True,
        help_text="Jobs, time span, arrival rate, GPU-demand histogram and arrivals over time.",
    )

    class Meta:
        model = Workload
        fields = (
            "id",
            "name",
            "description",
            "origin",
            "parent",
            "recipe",
            "format",
            "detected_format",
            "status",
            "original_filename",
            "upload_size",
            "report",
            "summary",
            "error",
            "created",
            "updated",
            "parse_started",
            "parsed_at",
        )
        read_only_fields = tuple(f for f in fields if f not in ("name", "description"))


class WorkloadListSerializer(WorkloadSerializer):
    """Lists leave out the report and summary (they can be large)."""

    class Meta(WorkloadSerializer.Meta):
        fields = tuple(
            f for f in WorkloadSerializer.Meta.fields if f not in ("report", "summary", "recipe")
        )
        read_only_fields = fields


class WorkloadUploadSerializer(StrictInput, serializers.Serializer):
    file = serializers.FileField(help_text="The trace (plain or gzip-compressed).")
    name = serializers.CharField(max_length=200, required=False, allow_blank=True)
    description = serializers.CharField(required=False, allow_blank=True)

    def get_fields(self) -> dict[str, Any]:
        from clustersim.traces import formats

        return {
            **super().get_fields(),
            "format": _names_field(
                "format",
                list(formats()),
                required=False,
                allow_blank=True,
                help_text="A reader from /api/v1/formats/; blank: detect from the content.",
            ),
        }

    def validate_file(self, value: Any) -> Any:
        if value.size > settings.CLUSTERSIM_UPLOAD_MAX_BYTES:
            raise serializers.ValidationError(
                f"file is {value.size} bytes; the limit is {settings.CLUSTERSIM_UPLOAD_MAX_BYTES}"
            )
        if value.size == 0:
            raise serializers.ValidationError("the file is empty")
        return value

    def create(self, validated_data: dict[str, Any]) -> Workload:
        upload = validated_data["file"]
        return services.create_workload(
            self.context["request"].user,
            name=validated_data.get("name") or upload.name,
            filename=upload.name,
            raw=upload,  # streamed into storage, never read whole
            fmt=validated_data.get("format", ""),
            description=validated_data.get("description", ""),
        )


class _NewWorkloadSerializer(StrictInput, serializers.Serializer):
    name = serializers.CharField(max_length=200, required=False, allow_blank=True)
    description = serializers.CharField(required=False, allow_blank=True)


class SyntheticWorkloadSerializer(_NewWorkloadSerializer):
    recipe = RecipeInput(
        help_text="What to draw (planner.recipes); give jobs or duration_s (or both). Blank "
        "fields take the model's values."
    )


class DeriveWorkloadSerializer(_NewWorkloadSerializer):
    steps = StepsInput(help_text="Transformations applied in order (planner.recipes).")


class ClusterImportSerializer(StrictInput, serializers.Serializer):
    file = serializers.FileField(
        help_text="A node list: kubectl get nodes -o json, Slurm scontrol show node, an "
        "Alibaba node CSV (pai_machine_spec, openb, spot), or a Tiresias cluster spec CSV "
        "(num_switch,num_node_p_switch,num_gpu_p_node,num_cpu_p_node,mem_p_node)."
    )
    format = serializers.ChoiceField(
        choices=("kubectl", "slurm", "pai", "openb", "spot", "tiresias"),
        required=False,
        allow_blank=True,
        help_text="Blank: detect from the content.",
    )
    name = serializers.CharField(max_length=200, required=False, allow_blank=True)
    description = serializers.CharField(required=False, allow_blank=True)
    aliases = JSONObjectText(
        required=False,
        binary=True,
        help_text="A JSON object mapping model names in the file to catalog types, e.g. "
        '{"NVIDIA-L40S": "L40"}; unmapped models are reported, never guessed.',
    )
    nodes_per_rack = serializers.IntegerField(required=False, min_value=1, max_value=100_000)

    def validate_file(self, value: Any) -> Any:
        # checked before the file is read into memory (planner.services.import_cluster)
        if value.size > services.MAX_INVENTORY_BYTES:
            raise serializers.ValidationError(
                f"file is {value.size} bytes; node lists of at most "
                f"{services.MAX_INVENTORY_BYTES} bytes are imported"
            )
        return value

    def validate_aliases(self, value: Any) -> dict[str, str]:
        if value in (None, ""):
            return {}
        if not isinstance(value, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in value.items()
        ):
            raise serializers.ValidationError('an object of strings, e.g. {"G2": "A10"}')
        return value


# -- experiments and runs -------------------------------------------------------------------------


class PolicyChoiceSerializer(StrictInput, serializers.Serializer):
    params = serializers.DictField(
        required=False, default=dict, help_text="Hyper-parameters (see the catalogue)."
    )

    def get_fields(self) -> dict[str, Any]:
        from scheduling.registry import POLICIES

        name = _names_field("policy", list(POLICIES), help_text="A policy from /api/v1/policies/.")
        return {"name": name, **super().get_fields()}


class RunCountsSerializer(serializers.Serializer):
    queued = serializers.IntegerField()
    running = serializers.IntegerField()
    succeeded = serializers.IntegerField()
    failed = serializers.IntegerField()
    cancelled = serializers.IntegerField()


def attach_grid_ids(experiments: list[Experiment]) -> None:
    """Set ``cluster_ids`` and ``workload_ids`` (newest first) on each experiment that lacks
    them, with one query over both many-to-many tables for all of them.

    Plain SQL (portable: SQLite and PostgreSQL): the ORM's UNION of two ``values_list``
    querysets costs more to compile than the query takes to run, and a prefetch is two
    queries that build model instances only to read their ids.
    """
    todo = {e.pk: e for e in experiments if not hasattr(e, "cluster_ids")}
    if not todo:
        return
    for e in todo.values():
        e.cluster_ids, e.workload_ids = [], []
    conn = connections[next(iter(todo.values()))._state.db or DEFAULT_DB_ALIAS]
    q = conn.ops.quote_name
    marks = ", ".join(["%s"] * len(todo))
    parts = []
    for kind, m2m in enumerate((Experiment.clusters, Experiment.workloads)):
        through = m2m.through._meta
        own = q(m2m.field.m2m_column_name())
        other = q(m2m.field.m2m_reverse_name())
        parts.append(
            f"SELECT {own}, {other}, {kind} FROM {q(through.db_table)} WHERE {own} IN ({marks})"
        )
    with conn.cursor() as cursor:
        cursor.execute(" UNION ALL ".join(parts), [*todo, *todo])
        rows = cursor.fetchall()
    for exp_id, other_id, kind in rows:
        (todo[exp_id].workload_ids if kind else todo[exp_id].cluster_ids).append(other_id)
    for e in todo.values():
        e.cluster_ids.sort(reverse=True)
        e.workload_ids.sort(reverse=True)


class FailureSettingsSerializer(StrictInput, serializers.Serializer):
    """Node failures and restarts from checkpoints for every run of an experiment
    (``docs/failures.md``); each pool's ``mtbf_hours``/``repair_hours`` come from the
    cluster's spec unless overridden here."""

    checkpoint_interval_s = PositiveFloatField(
        required=False,
        default=3600.0,
        help_text="Seconds of a job's computing between two checkpoints (> 0).",
    )
    checkpoint_overhead_s = serializers.FloatField(
        required=False,
        default=60.0,
        min_value=0.0,
        help_text="Seconds one checkpoint costs a job, with no progress (>= 0).",
    )
    mtbf_hours = PositiveFloatField(
        required=False,
        allow_null=True,
        default=None,
        help_text="Every node's mean time between failures, hours (> 0); null: each pool's "
        "`mtbf_hours`, else the documented default.",
    )
    repair_hours = PositiveFloatField(
        required=False,
        allow_null=True,
        default=None,
        help_text="Every node's mean repair time, hours (> 0); null: each pool's "
        "`repair_hours`, else the documented default.",
    )

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, dict):
            unknown = sorted(set(data) - set(self.fields))
            if unknown:
                raise serializers.ValidationError(
                    {k: [f"unknown setting; known: {', '.join(self.fields)}"] for k in unknown}
                )
        return super().to_internal_value(data)


class NetworkSettingsSerializer(StrictInput, serializers.Serializer):
    """Network contention for every run of an experiment (``docs/network.md``): multi-node
    jobs share NICs and rack uplinks, max-min fair."""

    share_nics = serializers.BooleanField(
        required=False,
        default=True,
        help_text="Jobs on a common node also share its NIC; false: only rack uplinks are shared.",
    )

    def to_internal_value(self, data: Any) -> Any:
        return super().to_internal_value(_known_settings(self, data))


class StragglerSettingsSerializer(StrictInput, serializers.Serializer):
    """Slow nodes for every run of an experiment (``docs/failures.md``, "Stragglers"): a
    share of the nodes, drawn from the seed, runs slower, and a gang touching one runs at
    its pace."""

    share = serializers.FloatField(
        min_value=0.0,
        max_value=1.0,
        help_text="Share of the nodes that are slow, 0..1 (round(share × nodes), drawn from"
        " the seed).",
    )
    speed = PositiveFloatField(
        required=False,
        default=0.5,
        max_value=1.0,
        help_text="Pace of a slow node relative to its normal one, 0 < speed <= 1.",
    )
    avoid = serializers.BooleanField(
        required=False,
        default=False,
        help_text="Mitigation: place gangs on fast nodes when they can hold them.",
    )

    def to_internal_value(self, data: Any) -> Any:
        return super().to_internal_value(_known_settings(self, data))


class SpotReclaimSerializer(StrictInput, serializers.Serializer):
    """One reclaim of a spot node (a row of a reclaim trace)."""

    node = serializers.IntegerField(
        min_value=0, help_text="Node index in the cluster (pool by pool, from 0); a spot node."
    )
    reclaimed_at_s = serializers.FloatField(
        min_value=0.0, help_text="When the provider takes the node back, s of simulated time."
    )
    returned_at_s = serializers.FloatField(
        help_text="When its capacity returns, s (after `reclaimed_at_s`)."
    )

    def to_internal_value(self, data: Any) -> Any:
        return super().to_internal_value(_known_settings(self, data))


class SpotSettingsSerializer(StrictInput, serializers.Serializer):
    """Reclaims of the clusters' spot pools for every run of an experiment
    (``docs/failures.md``, "Spot capacity"); each spot pool's price, reclaim rate, return
    time and notice come from the cluster's spec."""

    trace = serializers.ListField(
        child=SpotReclaimSerializer(),
        required=False,
        allow_null=True,
        default=None,
        max_length=100_000,
        help_text="Reclaims to replay instead of drawing them (a node's intervals disjoint);"
        " null: each spot node is reclaimed at its pool's `spot_reclaim_hours`.",
    )
    checkpoint_interval_s = PositiveFloatField(
        required=False,
        default=3600.0,
        help_text="Seconds of a job's computing between two checkpoints (> 0); with failures"
        " on too, the same as theirs.",
    )
    checkpoint_overhead_s = serializers.FloatField(
        required=False,
        default=60.0,
        min_value=0.0,
        help_text="Seconds one checkpoint costs a job (>= 0): a reclaim whose notice is at"
        " least this long loses no work.",
    )

    def to_internal_value(self, data: Any) -> Any:
        return super().to_internal_value(_known_settings(self, data))


def _known_settings(serializer: serializers.Serializer, data: Any) -> Any:
    """``data``, or a 400 naming each key that is not one of ``serializer``'s fields."""
    if isinstance(data, dict):
        unknown = sorted(set(data) - set(serializer.fields))
        if unknown:
            raise serializers.ValidationError(
                {k: [f"unknown setting; known: {', '.join(serializer.fields)}"] for k in unknown}
            )
    return data


class ExperimentListSerializer(serializers.ListSerializer):
    """Looks up the clusters and workloads of all the listed experiments at once."""

    def to_representation(self, data: Any) -> list[Any]:
        items = list(data.all() if isinstance(data, models.manager.BaseManager) else data)
        attach_grid_ids(items)
        return super().to_representation(items)


# run counts and mean progress come from the annotations of api.views._experiment_queryset,
# the clusters' and workloads' ids from attach_grid_ids
class ExperimentSerializer(FastRepresentationMixin, serializers.ModelSerializer):
    clusters = serializers.ListField(
        child=serializers.IntegerField(), read_only=True, source="cluster_ids"
    )
    workloads = serializers.ListField(
        child=serializers.IntegerField(), read_only=True, source="workload_ids"
    )
    policies = PolicyChoiceSerializer(many=True, read_only=True)
    load_factors = serializers.ListField(child=serializers.FloatField(), read_only=True)
    seeds = serializers.ListField(child=serializers.IntegerField(), read_only=True)
    progress = serializers.SerializerMethodField()
    run_counts = serializers.SerializerMethodField()
    # blank (the full model) is a value too, which the model field's choices leave out
    compat = serializers.ChoiceField(
        choices=[name for name, _ in COMPAT_CHOICES], allow_blank=True, read_only=True
    )
    failures = FailureSettingsSerializer(
        read_only=True, allow_null=True, help_text="Node failures; null: off."
    )
    network = NetworkSettingsSerializer(
        read_only=True, allow_null=True, help_text="Network contention; null: off."
    )
    stragglers = StragglerSettingsSerializer(
        read_only=True, allow_null=True, help_text="Slow nodes; null: off."
    )
    spot = SpotSettingsSerializer(
        read_only=True, allow_null=True, help_text="Spot reclaims; null: off."
    )
    elastic = serializers.CharField(
        read_only=True,
        help_text="Device-count bounds of the rigid jobs (docs/elastic.md); blank: as the "
        "workloads say.",
    )
    aux_demand = serializers.CharField(
        read_only=True,
        help_text="CPU/memory demand rule of the jobs without one (docs/resources.md); blank:"
        " the workloads' own demands only.",
    )

    class Meta:
        model = Experiment
        fields = (
            "id",
            "name",
            "description",
            "clusters",
            "workloads",
            "policies",
            "placement",
            "compat",
            "load_factors",
            "seeds",
            "until_s",
            "cost_horizon_hours",
            "failures",
            "network",
            "stragglers",
            "spot",
            "elastic",
            "aux_demand",
            "state",
            "runs_total",
            "progress",
            "run_counts",
            "created",
            "finished_at",
        )
        read_only_fields = fields
        list_serializer_class = ExperimentListSerializer

    def to_representation(self, instance: Experiment) -> dict[str, Any]:
        attach_grid_ids([instance])
        return super().to_representation(instance)

    @extend_schema_field(OpenApiTypes.FLOAT)
    def get_progress(self, obj: Experiment) -> float:
        """Mean progress of the runs, 0..1."""
        value = getattr(obj, "progress_avg", None)
        return round(float(value or 0.0), 4)

    @extend_schema_field(RunCountsSerializer)
    def get_run_counts(self, obj: Experiment) -> dict[str, int]:
        return {
            s: int(getattr(obj, f"n_{s}", 0) or 0) for s in RunCountsSerializer._declared_fields
        }


class ExperimentCreateSerializer(StrictInput, serializers.Serializer):
    name = serializers.CharField(max_length=200)
    description = serializers.CharField(required=False, allow_blank=True, default="")
    clusters = OwnedPrimaryKeyRelatedField(
        many=True, allow_empty=False, queryset=Cluster.objects.all()
    )
    workloads = OwnedPrimaryKeyRelatedField(
        many=True, allow_empty=False, queryset=Workload.objects.all()
    )
    policies = PolicyChoiceSerializer(many=True, allow_empty=False)
    load_factors = serializers.ListField(
        child=serializers.FloatField(min_value=0.001, max_value=1000.0),
        default=[1.0],
        allow_empty=False,
        help_text="Arrival-rate scaling: submit times are divided by the factor.",
    )
    seeds = serializers.ListField(
        child=serializers.IntegerField(min_value=0, max_value=2**31 - 1),
        default=[0],
        allow_empty=False,
        help_text="Seeds only matter where the policy or the placement draws from them "
        "(`uses_seed` in /api/v1/policies/ and /api/v1/placements/, e.g. placement `random`). "
        "A combination that draws nothing is run once, with the first seed, for all the seeds "
        "(its run says `seed_independent`).",
    )
    compat = serializers.ChoiceField(
        choices=[name for name, _ in COMPAT_CHOICES],
        required=False,
        allow_blank=True,
        default="",
        help_text="Model only what this reference simulator models, to compare with its"
        " numbers (docs/gavel-fidelity.md, docs/tiresias-fidelity.md,"
        " docs/pollux-fidelity.md); a mode refuses a policy or placement its simulator does"
        " not have.",
    )
    until_s = serializers.FloatField(required=False, allow_null=True, min_value=0.0)
    cost_horizon_hours = PositiveFloatField(
        required=False,
        allow_null=True,
        default=None,
        help_text="Planning horizon of the owned-cluster cost, hours; the same for every run."
        " Null: each workload's arrival span at its load factor, at least 1 h"
        " (docs/metrics.md).",
    )
    failures = FailureSettingsSerializer(
        required=False,
        allow_null=True,
        default=None,
        help_text="Turn node failures on for every run: nodes fail and are repaired, the jobs"
        " on a failed node restart from their last checkpoint, and the summaries gain goodput,"
        " lost work, restarts and the effective training time ratio (docs/failures.md)."
        " Drawn failures depend on the seed: every run is repeated per seed. Null: off.",
    )
    network = NetworkSettingsSerializer(
        required=False,
        allow_null=True,
        default=None,
        help_text="Turn network contention on for every run: multi-node jobs share NICs and"
        " rack uplinks (max-min fair) and run at their share; the summaries gain the time lost"
        " to contention and the uplinks' utilisation (docs/network.md). Refused with a"
        " co-locating policy, one with the power model, or compat gavel. Null: off.",
    )
    stragglers = StragglerSettingsSerializer(
        required=False,
        allow_null=True,
        default=None,
        help_text="Turn slow nodes on for every run: a share of the nodes runs at `speed`, and"
        " a gang touching one runs at its pace; the summaries gain the slow nodes, the jobs"
        " slowed and the device-hours lost (docs/failures.md, Stragglers). Slow nodes drawn"
        " from a share between 0 and 1 depend on the seed: every run is repeated per seed."
        " Refused with a co-locating policy, one with the power model, or compat gavel."
        " Null: off.",
    )
    spot = SpotSettingsSerializer(
        required=False,
        allow_null=True,
        default=None,
        help_text="Turn the reclaims of the clusters' spot pools (`spot: true` in their specs)"
        " on for every run: by their rate, or by `trace`; a job whose checkpoint fits in the"
        " pool's notice keeps its work, the others restart from their last checkpoint. The"
        " summaries gain spot_reclaims, spot_restarts, spot_lost_work_device_hours, goodput and"
        " the effective training time ratio (docs/failures.md, Spot capacity). Drawn reclaims"
        " depend on the seed: every run is repeated per seed. Refused with the power model."
        " Null: off.",
    )
    elastic = serializers.CharField(
        required=False,
        allow_blank=True,
        default="",
        max_length=32,
        help_text="Let the rigid jobs of every run shrink and grow: `LO-HI`, each side `xF` (F"
        " times the job's num_gpus) or a device count, e.g. `x0.5-x2` (half to twice),"
        " `1-x1` (only shrink), `x1-64` (only grow); jobs a workload already made elastic"
        " keep their bounds. Only elastic policies (afs, optimus, pollux) resize jobs"
        " (docs/elastic.md; singularity resizes any job by splicing, docs/singularity.md)."
        " Blank or `none`: as the workloads say.",
    )
    aux_demand = serializers.CharField(
        required=False,
        allow_blank=True,
        default="",
        max_length=40,
        help_text="Give every run's jobs without a CPU or memory demand one: `synergy` (3 cores"
        " and 62.5 GB per device, Synergy's servers), `proportional` (the clusters' smallest"
        " per-device share), `per-gpu:C,M` (C cores and M GB per device, e.g. `per-gpu:4,32`),"
        " `ignore` (drop every demand, the workloads' too). Demands bind only on nodes whose"
        " spec gives `cpu_cores` or `host_mem_gb`; the summaries then gain cpu_utilisation and"
        " mem_utilisation (docs/resources.md). A rule giving demands is refused with a"
        " co-locating policy. Blank or `none`: the workloads' own demands only.",
    )

    def get_fields(self) -> dict[str, Any]:
        from scheduling.registry import PLACEMENTS

        fields = super().get_fields()
        fields["placement"] = _names_field(
            "placement",
            list(PLACEMENTS),
            required=False,
            allow_blank=True,
            allow_null=True,
            default=None,
            help_text="Placement strategy; blank: consolidate, or each policy's placement in "
            "the compatibility mode's simulator.",
        )
        return fields

    def validate_policies(self, value: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Typed and in range as each policy's signature says (:mod:`scheduling.params`)."""
        from scheduling.params import policies_errors

        errors = policies_errors(value)
        if errors:
            raise serializers.ValidationError(errors)
        return value

    def validate_elastic(self, value: str) -> str:
        """A rule :func:`clustersim.elastic.parse_rule` accepts, normalised."""
        try:
            return services.checked_elastic(value)
        except DjangoValidationError as exc:
            raise serializers.ValidationError(
                [m.removeprefix("elastic: ") for m in exc.messages]
            ) from None

    def validate_aux_demand(self, value: str) -> str:
        """A rule :func:`clustersim.resources.parse_rule` accepts, normalised (the check
        against the policies is the service's, naming this field too)."""
        try:
            return services.checked_aux_demand(value)
        except DjangoValidationError as exc:
            raise serializers.ValidationError(
                [m.removeprefix("aux_demand: ") for m in exc.messages]
            ) from None

    def validate_workloads(self, value: list[Workload]) -> list[Workload]:
        not_ready = [w.name for w in value if w.status != WorkloadStatus.READY]
        if not_ready:
            raise serializers.ValidationError(f"not parsed (yet): {', '.join(not_ready)}")
        return value

    def create(self, validated_data: dict[str, Any]) -> Experiment:
        try:
            return services.create_experiment(self.context["request"].user, **validated_data)
        except services.QueuedRunsLimit as exc:
            raise queued_runs_limit(exc) from None
        except DjangoValidationError as exc:
            raise _experiment_error(exc) from None


def _experiment_error(exc: DjangoValidationError) -> serializers.ValidationError:
    """The service's refusal, under the field it names when every message names one of the
    physical models (``network: ...``, ``stragglers.share: ...``), else as a list."""
    fields = ("failures", "network", "stragglers", "spot", "elastic", "aux_demand")
    named: dict[str, list[str]] = {}
    for message in exc.messages:
        field = message.split(":", 1)[0].split(".", 1)[0]
        if field not in fields:
            return _django_error(exc)
        named.setdefault(field, []).append(message)
    return serializers.ValidationError(named)


class RunSerializer(FastRepresentationMixin, serializers.ModelSerializer):
    params = JSONObject(read_only=True, help_text="The policy's hyper-parameters.")
    summary = JSONObject(
        read_only=True,
        allow_null=True,
        help_text="Metrics of a finished run by stable name (jobs_total, jct_mean_s, "
        "utilisation, cost_usd, carbon_kg, ...); null before it succeeds.",
    )

    class Meta:
        model = Run
        fields = (
            "id",
            "experiment",
            "cluster",
            "workload",
            "policy",
            "params",
            "placement",
            "load_factor",
            "seed",
            "seed_independent",
            "state",
            "progress",
            "attempts",
            "worker",
            "heartbeat",
            "queued_at",
            "started_at",
            "finished_at",
            "wall_s",
            "events",
            "error",
            "summary",
        )
        read_only_fields = fields


class RunListSerializer(RunSerializer):
    """Lists leave out the summary metrics: read them from a run
    (``/api/v1/runs/{id}/``) or side by side for many runs (``/api/v1/compare/``)."""

    class Meta(RunSerializer.Meta):
        fields = tuple(f for f in RunSerializer.Meta.fields if f != "summary")
        read_only_fields = fields


class CompareRunSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    experiment = serializers.IntegerField()
    cluster = serializers.CharField()
    workload = serializers.CharField()
    policy = serializers.CharField()
    params = serializers.DictField()
    load_factor = serializers.FloatField()
    seed = serializers.IntegerField()
    state = serializers.CharField()


class CompareSavingsSerializer(serializers.Serializer):
    run = serializers.IntegerField(help_text="The run (a carbon- or power-aware policy).")
    baseline = serializers.IntegerField(help_text="The run it is compared with.")
    baseline_policy = serializers.CharField()
    carbon_saved_kg = serializers.FloatField(
        allow_null=True, help_text="Baseline's carbon_kg minus the run's."
    )
    carbon_saved_pct = serializers.FloatField(
        allow_null=True, help_text="carbon_saved_kg, % of the baseline's carbon_kg."
    )
    carbon_per_ref_gpu_hour_saved_kg = serializers.FloatField(
        allow_null=True, help_text="The same per reference GPU-hour of completed work."
    )
    jct_mean_cost_s = serializers.FloatField(
        allow_null=True, help_text="The run's mean JCT minus the baseline's."
    )
    jct_mean_cost_pct = serializers.FloatField(
        allow_null=True, help_text="jct_mean_cost_s, % of the baseline's mean JCT."
    )
    jct_p95_cost_s = serializers.FloatField(allow_null=True)
    completed_delta = serializers.FloatField(
        allow_null=True, help_text="Jobs completed, the run's minus the baseline's."
    )


class CompareSerializer(serializers.Serializer):
    runs = CompareRunSerializer(many=True)
    savings = CompareSavingsSerializer(
        many=True,
        help_text="Carbon saved against the same run without shifting, and the JCT it cost: "
        "one entry per run that has a baseline among the compared runs (a run of its base "
        "policy alone on the same cluster, workload, load and seed; docs/carbon.md), or "
        "against the run named by `baseline`.",
    )
    metrics = serializers.DictField(
        child=serializers.ListField(child=serializers.FloatField(allow_null=True)),
        help_text="Metric name → one value per run, in the order of `runs` (null: undefined "
        "or not finished).",
    )


class PolicyParameterSerializer(serializers.Serializer):
    name = serializers.CharField()
    type = serializers.CharField(
        help_text="bool, int, float, str or tuple[float, ...] (a JSON list); '| None': null "
        "is accepted."
    )
    default = ParameterValue(allow_null=True)
    required = serializers.BooleanField()
    description = serializers.CharField()
    choices = serializers.ListField(
        child=serializers.CharField(), allow_null=True, help_text="The values allowed, if listed."
    )
    minimum = serializers.FloatField(
        allow_null=True, help_text="Smallest value allowed (of each item of a list), if any."
    )
    exclusive_minimum = serializers.BooleanField(help_text="The minimum itself is not allowed.")


class PolicySerializer(serializers.Serializer):
    name = serializers.CharField()
    summary = serializers.CharField()
    description = serializers.CharField()
    citation = serializers.CharField()
    preemptive = serializers.BooleanField()
    round_s = serializers.FloatField(allow_null=True)
    parameters = PolicyParameterSerializer(many=True)
    compat = serializers.ListField(
        child=serializers.CharField(),
        help_text="Compatibility modes (reference simulators) that cover this policy.",
    )
    uses_seed = serializers.BooleanField(
        help_text="The policy draws from the run's seed; false: its decisions do not depend on "
        "it (with a placement that does not either, an experiment runs it once for all seeds)."
    )


class PlacementSerializer(serializers.Serializer):
    name = serializers.CharField()
    summary = serializers.CharField()
    description = serializers.CharField()
    uses_seed = serializers.BooleanField(
        help_text="The strategy draws from the run's seed (e.g. random); false: deterministic."
    )


class TraceFormatSerializer(serializers.Serializer):
    name = serializers.CharField()
    description = serializers.CharField()


class TimeseriesSerializer(serializers.Serializer):
    series = serializers.DictField(
        child=serializers.ListField(child=serializers.FloatField()),
        help_text="t_s, dt_s, utilisation, busy_<type>, queued, running, power_kw, "
        "power_busy_kw, power_idle_kw, power_wake_kw, "
        "carbon_rate_kg_per_h, carbon_intensity_g_per_kwh; all of one length.",
    )


class DetailSerializer(serializers.Serializer):
    detail = serializers.CharField()


class InUseSerializer(serializers.Serializer):
    detail = serializers.CharField(help_text="Why, and what to do first.")
    experiments = serializers.ListField(
        child=serializers.IntegerField(), help_text="The experiments in the way."
    )
