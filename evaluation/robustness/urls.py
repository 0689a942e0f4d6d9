"""URLs of the ECAsT robustness report (Tables 11, 13, 14) and its downloads; its unjudged pool is judging's."""

from django.urls import path

from evaluation.robustness import views

urlpatterns: list = [
    path("evaluation/robustness/", views.robustness, name="evaluation-robustness"),
    path("evaluation/robustness/baseline/<int:pk>/", views.robustness_baseline, name="evaluation-robustness-baseline"),
    path("evaluation/robustness/<str:table>.<str:fmt>", views.robustness_export, name="evaluation-robustness-export"),
]
