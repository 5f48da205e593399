from typing import Any, ClassVar

from django.urls import NoReverseMatch, include, path
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.reverse import reverse
from rest_framework.routers import APIRootView, DefaultRouter

from api import views
from api.studies import StudyViewSet


class ApiRootView(APIRootView):
    """Every endpoint of the API that needs no object id, by path; the operations on one
    object (``clusters/{id}/clone/``, ``workloads/{id}/derive/``, ``runs/{id}/jobs/``, ...)
    are in the schema (``schema``) and its interactive docs (``docs``)."""

    #: keys → URL names outside the API's namespace
    outside: ClassVar[dict[str, str]] = {"schema": "schema", "docs": "api-docs"}

    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        response = super().get(request, *args, **kwargs)
        for key, name in self.outside.items():
            try:
                response.data[key] = reverse(name, request=request)
            except NoReverseMatch:  # a project that mounts the API without them
                continue
        return response


class Router(DefaultRouter):
    """The router's viewsets and, in its root, the endpoints beside them (:data:`ROOT`)."""

    include_format_suffixes = False
    APIRootView = ApiRootView

    def get_api_root_view(self, api_urls: Any = None) -> Any:
        lists = {prefix: f"{basename}-list" for prefix, _, basename in self.registry}
        return self.APIRootView.as_view(api_root_dict={**ROOT, **lists})


#: The API root's entries, in order: path → URL name
ROOT: dict[str, str] = {
    "accelerators": "accelerator-list",
    "catalog/accelerators": "catalog",
    "clusters": "cluster-list",
    "clusters/from-preset": "cluster-from-preset",
    "clusters/import": "cluster-import-nodes",
    "presets": "presets",
    "workloads": "workload-list",
    "workloads/synthetic": "workload-synthetic",
    "formats": "formats",
    "experiments": "experiment-list",
    "policies": "policies",
    "placements": "placements",
    "runs": "run-list",
    "compare": "compare",
    "studies": "study-list",
}

router = Router()
router.register("accelerators", views.AcceleratorTypeViewSet, basename="accelerator")
router.register("clusters", views.ClusterViewSet, basename="cluster")
router.register("workloads", views.WorkloadViewSet, basename="workload")
router.register("experiments", views.ExperimentViewSet, basename="experiment")
router.register("runs", views.RunViewSet, basename="run")
router.register("studies", StudyViewSet, basename="study")

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
