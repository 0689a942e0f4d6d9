"""Generation URLs: job pages, backend status, BLEU reports, random test sets, and their REST API."""

from django.urls import path

from ecast.generation import apis, finetune_apis, finetune_views, views

urlpatterns = [
    path("generation/", views.job_list, name="generation-jobs"),
    path("generation/jobs/<int:pk>/", views.job_detail, name="generation-job-detail"),
    path("generation/jobs/<int:pk>/cancel/", views.job_cancel, name="generation-job-cancel"),
    path("generation/jobs/<int:pk>/retry/", views.job_retry, name="generation-job-retry"),
    path("generation/jobs/<int:pk>/resume/", views.job_resume, name="generation-job-resume"),
    path("generation/backends/", views.backend_status, name="generation-backends"),
    path("generation/diversity/", views.diversity_report, name="generation-diversity"),
    path("generation/context-removal/", views.cr_report, name="generation-cr-report"),
    path("generation/test-sets/", views.test_set_list, name="generation-test-sets"),
    path("generation/test-sets/<int:pk>/", views.test_set_detail, name="generation-test-set-detail"),
    path("generation/test-sets/<int:pk>/export/", views.test_set_export, name="generation-test-set-export"),
    path("generation/finetune/", finetune_views.finetune_list, name="generation-finetune"),
    path("generation/finetune/<int:pk>/", finetune_views.finetune_detail, name="generation-finetune-detail"),
    path("generation/finetune/<int:pk>/cancel/", finetune_views.finetune_cancel, name="generation-finetune-cancel"),
    # REST API
    path("api/generation/finetune/", finetune_apis.FinetuneJobListApi.as_view(), name="api-finetune-jobs"),
    path(
        "api/generation/finetune/create/", finetune_apis.FinetuneJobCreateApi.as_view(), name="api-finetune-job-create"
    ),
    path(
        "api/generation/finetune/<int:pk>/",
        finetune_apis.FinetuneJobDetailApi.as_view(),
        name="api-finetune-job-detail",
    ),
    path(
        "api/generation/finetune/<int:pk>/cancel/",
        finetune_apis.FinetuneJobCancelApi.as_view(),
        name="api-finetune-job-cancel",
    ),
    path("api/generation/adapters/", finetune_apis.AdapterListApi.as_view(), name="api-generation-adapters"),
    path("api/generation/jobs/", apis.GenerationJobListApi.as_view(), name="api-generation-jobs"),
    path("api/generation/jobs/create/", apis.GenerationJobCreateApi.as_view(), name="api-generation-job-create"),
    path("api/generation/jobs/<int:pk>/", apis.GenerationJobDetailApi.as_view(), name="api-generation-job-detail"),
    path(
        "api/generation/jobs/<int:pk>/dropped/",
        apis.GenerationJobDroppedApi.as_view(),
        name="api-generation-job-dropped",
    ),
    path(
        "api/generation/jobs/<int:pk>/cancel/", apis.GenerationJobCancelApi.as_view(), name="api-generation-job-cancel"
    ),
    path("api/generation/jobs/<int:pk>/retry/", apis.GenerationJobRetryApi.as_view(), name="api-generation-job-retry"),
    path(
        "api/generation/jobs/<int:pk>/resume/", apis.GenerationJobResumeApi.as_view(), name="api-generation-job-resume"
    ),
    path("api/generation/backends/", apis.BackendStatusApi.as_view(), name="api-generation-backends"),
    path("api/generation/diversity/", apis.DiversityReportApi.as_view(), name="api-generation-diversity"),
    path(
        "api/generation/context-removal/<int:collection_pk>/",
        apis.CrReportApi.as_view(),
        name="api-generation-cr-report",
    ),
    path("api/generation/test-sets/", apis.TestSetListApi.as_view(), name="api-generation-test-sets"),
    path("api/generation/test-sets/create/", apis.TestSetCreateApi.as_view(), name="api-generation-test-set-create"),
    path(
        "api/generation/test-sets/<int:pk>/export/",
        apis.TestSetExportApi.as_view(),
        name="api-generation-test-set-export",
    ),
]
