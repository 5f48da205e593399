"""Filters for list endpoints. Foreign keys filter by id number (never by a lookup that
would reveal whether another user's object exists).

A filter named in the query must have a value of its type, as the schema says: an id is a
whole number from 1 to 2**63 - 1, a seed a 32-bit integer, a load factor a finite number, a
state one of its values; an empty or malformed value is a 400 naming the parameter (not an
unfiltered list, nor a database error on an id too large for its column).
"""

from typing import Any

import django_filters
import django_filters.rest_framework
from django import forms
from django_filters.rest_framework import DjangoFilterBackend
from drf_spectacular.utils import extend_schema_field

from planner.models import Cluster, Experiment, Run, Workload

INT64_MAX = 2**63 - 1
INT32 = 2**31

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


class _NoEmptyValues(forms.Form):
    """A typed filter given with an empty value is an error, not "no filter"."""

    def clean(self) -> dict[str, Any]:
        cleaned: dict[str, Any] = super().clean()
        for name, field in self.fields.items():
            if not isinstance(field, forms.CharField) and self.data.get(name, None) == "":
                self.add_error(name, "give a value, or leave the parameter out")
        return cleaned


class FilterSet(django_filters.rest_framework.FilterSet):
    """django-filter's FilterSet with :class:`_NoEmptyValues` (also the base of the filter
    sets the backend builds from a view's ``filterset_fields``)."""

    def get_form_class(self) -> Any:
        base = super().get_form_class()
        return type(base.__name__, (_NoEmptyValues, base), {})


@extend_schema_field({"type": "integer", "minimum": 1, "maximum": INT64_MAX})
class IdFilter(django_filters.NumberFilter):
    """An object's id: a whole number the id column can hold."""

    field_class = forms.IntegerField

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, min_value=1, max_value=INT64_MAX, **kwargs)


@extend_schema_field({"type": "integer", "minimum": -INT32, "maximum": INT32 - 1})
class Int32Filter(django_filters.NumberFilter):
    field_class = forms.IntegerField

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, min_value=-INT32, max_value=INT32 - 1, **kwargs)


@extend_schema_field({"type": "number", "format": "double", "minimum": -1e50, "maximum": 1e50})
class FloatFilter(django_filters.NumberFilter):
    """A finite number (Django's FloatField refuses inf and nan) within ±1e50 (the bound
    django-filter gives every number filter)."""

    field_class = forms.FloatField

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, min_value=-1e50, max_value=1e50, **kwargs)


class ClusterFilter(FilterSet):
    name = django_filters.CharFilter(lookup_expr="icontains")

    class Meta:
        model = Cluster
        fields = ("preset",)


class WorkloadFilter(FilterSet):
    name = django_filters.CharFilter(lookup_expr="icontains")

    class Meta:
        model = Workload
        fields = ("status", "detected_format")


class ExperimentFilter(FilterSet):
    name = django_filters.CharFilter(lookup_expr="icontains")

    class Meta:
        model = Experiment
        fields = ("state",)


class RunFilter(FilterSet):
    experiment = IdFilter(field_name="experiment_id")
    cluster = IdFilter(field_name="cluster_id")
    workload = IdFilter(field_name="workload_id")
    seed = Int32Filter()
    load_factor = FloatFilter()

    class Meta:
        model = Run
        fields = ("state", "policy", "seed", "load_factor")


FilterBackend.filterset_base = FilterSet
