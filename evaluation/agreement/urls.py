"""URLs of the inter-assessor agreement report: page, item CSV, JSON API."""

from django.urls import path

from evaluation.agreement import apis, views

urlpatterns: list = [
    path("evaluation/agreement/", views.agreement, name="evaluation-agreement"),
    path("evaluation/agreement/items.csv", views.agreement_items_csv, name="evaluation-agreement-items"),
    path("api/evaluation/agreement/", apis.AgreementApi.as_view(), name="api-eval-agreement"),
]
