"""URLs of response-level judging: pages, downloads and the REST API."""

from django.urls import path

from evaluation.responses import apis, views

urlpatterns = [
    path("evaluation/responses/", views.index, name="responses-index"),
    path("evaluation/responses/runs/<int:pk>/", views.run_detail, name="responses-run"),
    path("evaluation/responses/answers/<int:pk>/", views.response_detail, name="responses-response"),
    path("evaluation/responses/banks/<int:pk>/", views.bank_detail, name="responses-bank"),
    path("evaluation/responses/banks/<int:pk>/nuggets.jsonl", views.bank_download, name="responses-bank-download"),
    path("evaluation/responses/label-sets/<int:pk>/", views.label_set_detail, name="responses-label-set"),
    path(
        "evaluation/responses/label-sets/<int:pk>/runs/<int:run_pk>/",
        views.label_set_run,
        name="responses-label-set-run",
    ),
    path(
        "evaluation/responses/label-sets/<int:pk>/download/<str:what>",
        views.label_set_download,
        name="responses-label-set-download",
    ),
    # REST API: assessors and admins read, admins delete.
    path("api/responses/runs/", apis.RunListApi.as_view(), name="api-responses-runs"),
    path("api/responses/runs/<int:pk>/", apis.RunDetailApi.as_view(), name="api-responses-run"),
    path("api/responses/runs/<int:pk>/responses/", apis.RunResponsesApi.as_view(), name="api-responses-run-responses"),
    path("api/responses/answers/<int:pk>/", apis.ResponseDetailApi.as_view(), name="api-responses-response"),
    path("api/responses/banks/", apis.BankListApi.as_view(), name="api-responses-banks"),
    path("api/responses/banks/<int:pk>/", apis.BankDetailApi.as_view(), name="api-responses-bank"),
    path(
        "api/responses/banks/<int:pk>/nuggets.jsonl", apis.BankDownloadApi.as_view(), name="api-responses-bank-download"
    ),
    path("api/responses/label-sets/", apis.LabelSetListApi.as_view(), name="api-responses-label-sets"),
    path("api/responses/label-sets/<int:pk>/", apis.LabelSetDetailApi.as_view(), name="api-responses-label-set"),
    path("api/responses/label-sets/<int:pk>/labels/", apis.LabelSetLabelsApi.as_view(), name="api-responses-labels"),
    path("api/responses/label-sets/<int:pk>/scores/", apis.LabelSetScoresApi.as_view(), name="api-responses-scores"),
    path(
        "api/responses/label-sets/<int:pk>/download/<str:what>",
        apis.LabelSetDownloadApi.as_view(),
        name="api-responses-label-set-download",
    ),
]
