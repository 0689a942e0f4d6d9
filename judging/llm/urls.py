"""URLs of LLM pre-judgments: admin pages and the REST API."""

from django.urls import path

from judging.llm import apis, views

urlpatterns: list = [
    path("judging/llm/", views.llm_jobs, name="llm-jobs"),
    path("judging/llm/<int:pk>/", views.llm_job, name="llm-job"),
    path("judging/llm/<int:pk>/labels.csv", views.llm_job_labels_csv, name="llm-job-labels-csv"),
    path("api/judging/llm/jobs/", apis.LlmJobListCreateApi.as_view(), name="api-llm-jobs"),
    path("api/judging/llm/jobs/<int:pk>/", apis.LlmJobDetailApi.as_view(), name="api-llm-job"),
    path("api/judging/llm/jobs/<int:pk>/labels/", apis.LlmJobLabelsApi.as_view(), name="api-llm-job-labels"),
]
