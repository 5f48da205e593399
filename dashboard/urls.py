from django.urls import path

from dashboard import charts, pages, studies, views

app_name = "dashboard"
urlpatterns = [
    path("", views.home, name="home"),
    path("workloads/upload/", views.workload_upload, name="workload-upload"),
    path("workloads/synthetic/", views.workload_synthetic, name="workload-synthetic"),
    path("workloads/<int:pk>/", views.workload_detail, name="workload"),
    path("workloads/<int:pk>/derive/", views.workload_derive, name="workload-derive"),
    path("workloads/<int:pk>/status/", views.workload_status, name="workload-status"),
    path("workloads/<int:pk>/edit/", views.workload_edit, name="workload-edit"),
    path("workloads/<int:pk>/delete/", views.workload_delete, name="workload-delete"),
    path("clusters/new/", views.cluster_create, name="cluster-create"),
    path("clusters/import/", views.cluster_import, name="cluster-import"),
    path("clusters/<int:pk>/", views.cluster_detail, name="cluster"),
    path("clusters/<int:pk>/clone/", views.cluster_clone, name="cluster-clone"),
    path("clusters/<int:pk>/edit/", views.cluster_edit, name="cluster-edit"),
    path("clusters/<int:pk>/what-if/", views.cluster_what_if, name="cluster-what-if"),
    path("clusters/<int:pk>/delete/", views.cluster_delete, name="cluster-delete"),
    path("experiments/new/", views.experiment_create, name="experiment-create"),
    path("experiments/<int:pk>/", views.experiment_detail, name="experiment"),
    path("experiments/<int:pk>/progress/", views.experiment_progress, name="experiment-progress"),
    path("experiments/<int:pk>/cancel/", views.experiment_cancel, name="experiment-cancel"),
    path("experiments/<int:pk>/delete/", views.experiment_delete, name="experiment-delete"),
    path("runs/<int:pk>/delete/", views.run_delete, name="run-delete"),
    path("studies/new/", studies.study_create, name="study-create"),
    path("studies/<int:pk>/", studies.study_detail, name="study"),
    path("studies/<int:pk>/progress/", studies.study_progress, name="study-progress"),
    path("studies/<int:pk>/cancel/", studies.study_cancel, name="study-cancel"),
    path("studies/<int:pk>/resume/", studies.study_resume, name="study-resume"),
    path("studies/<int:pk>/apply/", studies.study_apply, name="study-apply"),
    path("charts/studies/<int:pk>/<slug:name>/", studies.study_chart, name="study-chart"),
    path("runs/<int:pk>/cancel/", views.run_cancel, name="run-cancel"),
    # chart pages and their JSON endpoints (dashboard.charts)
    path("runs/<int:pk>/", pages.run_detail, name="run"),
    path("compare/", pages.compare, name="compare"),
    path(
        "charts/experiments/<int:pk>/<slug:name>/",
        charts.experiment_chart,
        name="experiment-chart",
    ),
    path("charts/runs/<int:pk>/<slug:name>/", charts.run_chart, name="run-chart"),
    path("charts/workloads/<int:pk>/<slug:name>/", charts.workload_chart, name="workload-chart"),
    path("charts/clusters/<int:pk>/<slug:name>/", charts.cluster_chart, name="cluster-chart"),
    path("charts/compare/<slug:name>/", charts.compare_chart, name="compare-chart"),
    path("vendor/plotly-<str:version>.min.js", charts.plotly_js, name="plotly-js"),
]
