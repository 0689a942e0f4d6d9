"""Import and release URLs: admin pages and the REST API."""

from django.urls import path

from ecast.imports import apis, views

urlpatterns = [
    path("imports/", views.import_page, name="imports"),
    path("imports/<int:pk>/", views.import_job_page, name="import-job"),
    path("imports/<int:pk>/errors.csv", views.import_job_errors_csv, name="import-job-errors"),
    path("imports/<int:pk>/warnings.csv", views.import_job_warnings_csv, name="import-job-warnings"),
    path("releases/", views.release_page, name="releases"),
    path("api/imports/", apis.ImportStartApi.as_view(), name="api-import-start"),
    path("api/imports/<int:pk>/", apis.ImportJobApi.as_view(), name="api-import-job"),
    path("api/releases/ecast.csv", apis.ReleaseCsvApi.as_view(), name="api-release-csv"),
    path("api/releases/ecast.jsonl", apis.ReleaseJsonlApi.as_view(), name="api-release-jsonl"),
]
