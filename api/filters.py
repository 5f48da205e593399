"""Filters for list endpoints. Foreign keys filter by id number (never by a lookup that
would reveal whether another user's object exists)."""

from typing import Any

import django_filters
from django_filters.rest_framework import DjangoFilterBackend

from planner.models import Cluster, Experiment, Run, Workload

# query parameters that are not filters: pagination and ordering (rest_framework.filters)
NOT_FILTERS = frozenset({"page", "page_size", "ordering"})


class FilterBackend(DjangoFilterBackend):
    """django-filter's backend, skipped when the request names no filter at all.

    Building a FilterSet (and its form) costs about a millisecond a request; with no filter
    parameter every filter is a no-op, so the queryset is returned as it is.
    """

    def filter_queryset(self, request: Any, queryset: Any, view: Any) -> Any:
        if NOT_FILTERS.issuperset(request.query_params):
            return queryset
        return super().filter_queryset(request, queryset, view)


class ClusterFilter(django_filters.FilterSet):
    name = django_filters.CharFilter(lookup_expr="icontains")

    class Meta:
        model = Cluster
        fields = ("preset",)


class WorkloadFilter(django_filters.FilterSet):
    name = django_filters.CharFilter(lookup_expr="icontains")

    class Meta:
        model = Workload
        fields = ("status", "detected_format")


class ExperimentFilter(django_filters.FilterSet):
    name = django_filters.CharFilter(lookup_expr="icontains")

    class Meta:
        model = Experiment
        fields = ("state",)


class RunFilter(django_filters.FilterSet):
    experiment = django_filters.NumberFilter(field_name="experiment_id")
    cluster = django_filters.NumberFilter(field_name="cluster_id")
    workload = django_filters.NumberFilter(field_name="workload_id")

    class Meta:
        model = Run
        fields = ("state", "policy", "seed", "load_factor")
