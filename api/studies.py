"""``/api/v1/studies/``: capacity-planning studies (:mod:`planner.studies`).

Creating one answers 202: the search runs on the workers. Every error in the problem is a 400
naming its field (``types[1].max_nodes``, ``constraints[0]``, ``capital_budget_usd``, ...)
before anything is stored or queued.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from api.serializers import JSONObject, OwnedPrimaryKeyRelatedField, PolicyChoiceSerializer
from api.strict import StrictInput
from planner import studies
from planner.models import Cluster, Study, StudyEvaluation, Workload, WorkloadStatus


class StudyTypeSerializer(StrictInput, serializers.Serializer):
    accelerator = serializers.CharField(help_text="A catalog type (name or alias).")
    max_nodes = serializers.IntegerField(min_value=0, max_value=10_000)
    min_nodes = serializers.IntegerField(min_value=0, max_value=10_000, default=0)
    step = serializers.IntegerField(min_value=1, max_value=10_000, default=1)
    devices_per_node = serializers.IntegerField(min_value=1, max_value=64, default=8)
    region = serializers.CharField(
        required=False, allow_null=True, default=None, help_text="A region of the base cluster."
    )
    purchase_usd = serializers.FloatField(
        required=False, allow_null=True, default=None, min_value=0, help_text="Per device."
    )
    amortisation_years = serializers.FloatField(
        required=False, allow_null=True, default=None, min_value=0.01
    )
    price_per_hour = serializers.FloatField(
        required=False,
        allow_null=True,
        default=None,
        min_value=0,
        help_text="Rental, per device-hour.",
    )
    spot_share = serializers.FloatField(
        min_value=0.0,
        max_value=1.0,
        default=0.0,
        help_text="Share of the type's nodes rented as spot capacity (reclaimed while "
        "simulated; priced at the default discount).",
    )


class ObjectiveSerializer(StrictInput, serializers.Serializer):
    metric = serializers.CharField(help_text="A summary metric or capital_usd, hourly_usd, ...")
    sense = serializers.ChoiceField(
        choices=("min", "max"), required=False, help_text="Default: the metric's natural one."
    )


class ConstraintSerializer(StrictInput, serializers.Serializer):
    metric = serializers.CharField()
    op = serializers.ChoiceField(choices=("<=", ">="))
    bound = serializers.FloatField()


class StudyCreateSerializer(StrictInput, serializers.Serializer):
    name = serializers.CharField(max_length=200)
    description = serializers.CharField(required=False, allow_blank=True, default="")
    workload = OwnedPrimaryKeyRelatedField(queryset=Workload.objects.all())
    base_cluster = OwnedPrimaryKeyRelatedField(
        queryset=Cluster.objects.all(),
        required=False,
        allow_null=True,
        default=None,
        help_text="Pools every candidate keeps; null: a green field.",
    )
    policies = PolicyChoiceSerializer(many=True, allow_empty=False)
    types = StudyTypeSerializer(many=True, help_text="The decision space, in nodes per type.")
    objectives = ObjectiveSerializer(
        many=True,
        required=False,
        help_text="Default: cost_usd then jct_p95_s; the first decides the recommendation.",
    )
    constraints = ConstraintSerializer(many=True, required=False, default=list)
    capital_budget_usd = serializers.FloatField(required=False, allow_null=True, default=None)
    hourly_budget_usd = serializers.FloatField(required=False, allow_null=True, default=None)
    rent = serializers.BooleanField(
        default=False, help_text="Price the added devices by the hour instead of buying them."
    )
    seeds = serializers.ListField(
        child=serializers.IntegerField(min_value=0, max_value=2**31 - 1),
        default=[0],
        allow_empty=False,
        max_length=10,
    )
    load_factor = serializers.FloatField(min_value=0.001, max_value=1000.0, default=1.0)
    horizon_hours = serializers.FloatField(
        required=False, allow_null=True, default=None, min_value=0.001
    )
    growth = serializers.ListField(
        child=serializers.FloatField(min_value=0.001, max_value=1000.0),
        default=list,
        max_length=40,
        help_text="Load factors of a growth scenario (e.g. [1.3, 1.69, 2.2, 2.86]): a purchase "
        "plan.",
    )
    budget = serializers.IntegerField(
        min_value=1, max_value=studies.MAX_BUDGET, default=40, help_text="Evaluations."
    )
    seed = serializers.IntegerField(min_value=0, max_value=2**31 - 1, default=0)
    batch = serializers.IntegerField(
        min_value=1,
        max_value=studies.MAX_BATCH,
        default=2,
        help_text="Candidates evaluated in parallel.",
    )
    prefix = serializers.FloatField(
        min_value=0.01, max_value=1.0, default=0.25, help_text="Successive halving (1: off)."
    )

    def validate_workload(self, value: Workload) -> Workload:
        if value.status != WorkloadStatus.READY:
            raise serializers.ValidationError(f"not parsed (yet): {value.name}")
        return value

    def validate_policies(self, value: list[dict[str, Any]]) -> list[dict[str, Any]]:
        from scheduling.params import policies_errors

        errors = policies_errors(value)
        if errors:
            raise serializers.ValidationError(errors)
        return value

    def create(self, validated_data: dict[str, Any]) -> Study:
        d = dict(validated_data)
        base = d.pop("base_cluster")
        try:
            problem = studies.build_problem(
                types=d.pop("types"),
                policies=d.pop("policies"),
                objectives=d.pop("objectives", None) or ("cost_usd", "jct_p95_s"),
                constraints=d.pop("constraints"),
                capital_budget_usd=d.pop("capital_budget_usd"),
                hourly_budget_usd=d.pop("hourly_budget_usd"),
                base_spec=None if base is None else base.effective_spec(),
                seeds=d.pop("seeds"),
                load_factor=d.pop("load_factor"),
                horizon_hours=d.pop("horizon_hours"),
                rent=d.pop("rent"),
                prefix=d.pop("prefix"),
            )
            return studies.create_study(
                self.context["request"].user, problem=problem, base_cluster=base, **d
            )
        except DjangoValidationError as exc:
            raise _named(exc) from None


def _named(exc: DjangoValidationError) -> ValidationError:
    """The service's refusal under the field it names (``params["field"]``)."""
    field = (getattr(exc, "params", None) or {}).get("field", "non_field_errors")
    return ValidationError({field: exc.messages})


class StudySerializer(serializers.ModelSerializer):
    problem = JSONObject(read_only=True)
    phase = serializers.CharField(
        read_only=True, help_text="search, sensitivity, growth or done (planner.studies)."
    )
    growth = serializers.ListField(
        child=serializers.FloatField(), read_only=True, help_text="Load factors; [] none."
    )
    progress = serializers.SerializerMethodField()

    class Meta:
        model = Study
        fields = (
            "id",
            "name",
            "description",
            "workload",
            "base_cluster",
            "problem",
            "growth",
            "budget",
            "seed",
            "batch",
            "state",
            "phase",
            "progress",
            "error",
            "created",
            "started_at",
            "finished_at",
            "cluster",
            "experiment",
        )
        read_only_fields = fields

    def get_progress(self, obj: Study) -> dict[str, Any]:
        return studies.progress(obj)


class StudyEvaluationSerializer(serializers.ModelSerializer):
    result = JSONObject(read_only=True, allow_null=True)
    kind = serializers.CharField(read_only=True, help_text="The phase that asked for it.")
    counts = serializers.ListField(child=serializers.IntegerField(), read_only=True)

    class Meta:
        model = StudyEvaluation
        fields = ("id", "kind", "index", "counts", "state", "attempts", "worker", "result", "error")
        read_only_fields = fields


class ApplySerializer(serializers.Serializer):
    cluster = serializers.IntegerField()
    experiment = serializers.IntegerField()


@extend_schema(tags=["studies"])
class StudyViewSet(
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.DestroyModelMixin,
    viewsets.GenericViewSet,
):
    """Capacity-planning studies: a search over inventories with the simulator in the loop.

    Creating one answers 202; ``results/`` gives the Pareto front, the recommendation, its
    margins and sensitivity once it has succeeded; ``apply/`` turns the recommendation into
    a cluster and an experiment comparing it with the base cluster.
    """

    serializer_class = StudySerializer
    expensive_actions = ("create", "resume", "apply")  # api.throttling
    ordering_fields = ("name", "created", "state")

    def get_queryset(self) -> Any:
        return Study.objects.owned_by(self.request.user)

    @extend_schema(request=StudyCreateSerializer, responses={202: StudySerializer})
    def create(self, request: Request) -> Response:
        form = StudyCreateSerializer(data=request.data, context={"request": request})
        form.is_valid(raise_exception=True)
        study = form.save()
        study.refresh_from_db()
        return Response(StudySerializer(study).data, status=status.HTTP_202_ACCEPTED)

    @extend_schema(responses={204: None})
    def destroy(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """Delete the study and its evaluations (a running one is cancelled first)."""
        study = self.get_object()
        studies.cancel(study)
        study.delete()
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(request=None, responses=StudySerializer)
    @action(detail=True, methods=["post"])
    def cancel(self, request: Request, pk: str | None = None) -> Response:
        """Stop the study; its finished evaluations stay (``resume/`` goes on from them)."""
        study = self.get_object()
        studies.cancel(study)
        study.refresh_from_db()
        return Response(StudySerializer(study).data)

    @extend_schema(request=None, responses={202: StudySerializer})
    @action(detail=True, methods=["post"])
    def resume(self, request: Request, pk: str | None = None) -> Response:
        """Go on with a cancelled or failed study from its finished evaluations."""
        study = self.get_object()
        if not studies.resume(study):
            raise ValidationError({"state": [f"a {study.state} study cannot be resumed"]})
        study.refresh_from_db()
        return Response(StudySerializer(study).data, status=status.HTTP_202_ACCEPTED)

    @extend_schema(responses=StudyEvaluationSerializer(many=True))
    @action(detail=True, methods=["get"])
    def evaluations(self, request: Request, pk: str | None = None) -> Response:
        """Every candidate evaluated so far, in the order asked."""
        study = self.get_object()
        rows = study.evaluations.order_by("index")
        return Response(StudyEvaluationSerializer(rows, many=True).data)

    @extend_schema(responses=OpenApiTypes.OBJECT)
    @action(detail=True, methods=["get"])
    def results(self, request: Request, pk: str | None = None) -> Response:
        """The answer: every evaluation, the Pareto front and the recommendation (indices
        into ``evaluations``), ``infeasible`` with the ``closest`` candidates when nothing
        met the constraints, ``sensitivity`` rows, ``growth`` (the purchase plan) and
        ``inventory``; while the study runs, the answer so far (``partial``: true)."""
        study = self.get_object()
        if study.answer is not None and study.state == Study.State.SUCCEEDED:
            return Response({**study.answer, "partial": False})
        return Response({**studies.answer(study), "partial": True})

    @extend_schema(request=None, responses={201: ApplySerializer})
    @action(detail=True, methods=["post"])
    def apply(self, request: Request, pk: str | None = None) -> Response:
        """Make the recommendation a cluster and queue an experiment comparing it with the
        base cluster under every policy of the study."""
        study = self.get_object()
        try:
            cluster, experiment = studies.apply(study)
        except DjangoValidationError as exc:
            raise _named(exc) from None
        return Response(
            {"cluster": cluster.pk, "experiment": experiment.pk}, status=status.HTTP_201_CREATED
        )
