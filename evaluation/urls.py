"""Evaluation URLs: metrics/leaderboards, permutation experiments, and pivot/meta-evaluation/calibration."""

from django.urls import include, path

urlpatterns: list = [
    path("", include("evaluation.urls_permutations")),
    path("", include("evaluation.urls_analyses")),
]
