from django.urls import include, path
from rest_framework.routers import DefaultRouter

from api import views


class Router(DefaultRouter):
    include_format_suffixes = False


router = Router()
router.register("accelerators", views.AcceleratorTypeViewSet, basename="accelerator")
router.register("clusters", views.ClusterViewSet, basename="cluster")
router.register("workloads", views.WorkloadViewSet, basename="workload")
router.register("experiments", views.ExperimentViewSet, basename="experiment")
router.register("runs", views.RunViewSet, basename="run")

app_name = "api"
urlpatterns = [
    path("catalog/accelerators/", views.BuiltinAcceleratorsView.as_view(), name="catalog"),
    path("presets/", views.PresetsView.as_view(), name="presets"),
    path("compare/", views.CompareView.as_view(), name="compare"),
    path("policies/", views.PolicyListView.as_view(), name="policies"),
    path("placements/", views.PlacementListView.as_view(), name="placements"),
    path("formats/", views.TraceFormatListView.as_view(), name="formats"),
    path("", include(router.urls)),
]
