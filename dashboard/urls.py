from django.urls import path

from dashboard import views

app_name = "dashboard"
urlpatterns = [
    path("", views.home, name="home"),
    path("workloads/upload/", views.workload_upload, name="workload-upload"),
    path("workloads/<int:pk>/", views.workload_detail, name="workload"),
    path("workloads/<int:pk>/status/", views.workload_status, name="workload-status"),
    path("clusters/new/", views.cluster_create, name="cluster-create"),
    path("clusters/<int:pk>/", views.cluster_detail, name="cluster"),
    path("clusters/<int:pk>/clone/", views.cluster_clone, name="cluster-clone"),
    path("experiments/new/", views.experiment_create, name="experiment-create"),
    path("experiments/<int:pk>/", views.experiment_detail, name="experiment"),
    path("experiments/<int:pk>/progress/", views.experiment_progress, name="experiment-progress"),
    path("experiments/<int:pk>/cancel/", views.experiment_cancel, name="experiment-cancel"),
]
