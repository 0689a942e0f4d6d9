"""URLs of LLM pre-judgments: admin pages and the REST API."""

from django.urls import path

from judging.llm import apis, response_apis, response_views, views

urlpatterns: list = [
    path("judging/llm/", views.llm_jobs, name="llm-jobs"),
    path("judging/llm/<int:pk>/", views.llm_job, name="llm-job"),
    path("judging/llm/<int:pk>/labels.csv", views.llm_job_labels_csv, name="llm-job-labels-csv"),
    path("judging/llm/responses/", response_views.response_jobs, name="response-llm-jobs"),
    path("judging/llm/responses/<int:pk>/", response_views.response_job, name="response-llm-job"),
    path("judging/llm/responses/<int:pk>/cancel/", response_views.response_job_cancel, name="response-llm-job-cancel"),
    path("api/judging/llm/responses/", response_apis.ResponseJobListApi.as_view(), name="api-response-llm-jobs"),
    path(
        "api/judging/llm/responses/<int:pk>/", response_apis.ResponseJobDetailApi.as_view(), name="api-response-llm-job"
    ),
    path("api/judging/llm/jobs/", apis.LlmJobListCreateApi.as_view(), name="api-llm-jobs"),
    path("api/judging/llm/jobs/<int:pk>/", apis.LlmJobDetailApi.as_view(), name="api-llm-job"),
    path("api/judging/llm/jobs/<int:pk>/labels/", apis.LlmJobLabelsApi.as_view(), name="api-llm-job-labels"),
]
