"""URLs of the run, qrels and per-query score downloads (pages and API)."""

from django.urls import path

from evaluation.exports import apis, views

urlpatterns = [
    path(
        "evaluation/permutations/<int:pk>/runs.run.gz",
        views.experiment_download,
        name="evaluation-permutation-runs-download",
    ),
    path("evaluation/runs/<int:pk>/download/<str:fmt>/", views.run_download, name="evaluation-run-download"),
    path("evaluation/versions/<int:pk>/qrels/<str:fmt>/", views.qrels_download, name="evaluation-qrels-download"),
    path(
        "evaluation/versions/<int:pk>/per-query/<str:fmt>/",
        views.per_query_download,
        name="evaluation-per-query-download",
    ),
    path(
        "api/evaluation/runs/<int:pk>/download/<str:fmt>/", apis.RunDownloadApi.as_view(), name="api-eval-run-download"
    ),
    path(
        "api/evaluation/versions/<int:pk>/qrels/<str:fmt>/",
        apis.QrelsDownloadApi.as_view(),
        name="api-eval-qrels-download",
    ),
    path(
        "api/evaluation/versions/<int:pk>/per-query/<str:fmt>/",
        apis.PerQueryDownloadApi.as_view(),
        name="api-eval-per-query-download",
    ),
]
