"""Filters for list endpoints. Foreign keys filter by id number (never by a lookup that
would reveal whether another user's object exists)."""

import django_filters

from planner.models import Cluster, Experiment, Run, Workload


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
