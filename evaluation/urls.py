"""Evaluation URLs: metrics/leaderboards, permutation experiments, and pivot/meta-evaluation/calibration."""

from django.urls import include, path

from evaluation import apis, views

urlpatterns: list = [
    path("", include("evaluation.permutations.urls")),
    path("", include("evaluation.analyses.urls")),
    path("", include("evaluation.robustness.urls")),
    path("", include("evaluation.agreement.urls")),
    path("", include("evaluation.exports.urls")),
    path("", include("evaluation.responses.urls")),
    # Stored scores: leaderboard (live), runs, comparison, history.
    path("evaluation/", views.leaderboard, name="evaluation-leaderboard"),
    path("evaluation/recompute/", views.recompute, name="evaluation-recompute"),
    path("evaluation/versions/<int:pk>/leaderboard.svg", views.leaderboard_plot, name="evaluation-leaderboard-svg"),
    path(
        "evaluation/versions/<int:pk>/leaderboard.<str:fmt>",
        views.leaderboard_export,
        name="evaluation-leaderboard-export",
    ),
    path("evaluation/runs/", views.run_list, name="evaluation-runs"),
    path("evaluation/runs/<int:pk>/", views.run_detail, name="evaluation-run"),
    path("evaluation/runs/<int:pk>/scores.<str:fmt>", views.run_scores_export, name="evaluation-run-export"),
    path("evaluation/compare/", views.compare, name="evaluation-compare"),
    path("evaluation/history/", views.history, name="evaluation-history"),
    path("evaluation/versions/<int:pk>/events/", views.score_events, name="evaluation-score-events"),
    path("api/evaluation/versions/<int:pk>/leaderboard/", apis.LeaderboardApi.as_view(), name="api-eval-leaderboard"),
    path("api/evaluation/versions/<int:pk>/status/", apis.VersionStatusApi.as_view(), name="api-eval-status"),
    path("api/evaluation/runs/", apis.RunsApi.as_view(), name="api-eval-run-upload"),
    path("api/evaluation/runs/<int:pk>/scores/", apis.RunScoresApi.as_view(), name="api-eval-run-scores"),
    path("api/evaluation/jobs/<int:pk>/", apis.JobStatusApi.as_view(), name="api-eval-job"),
    path("api/evaluation/collections/<int:pk>/recompute/", apis.RecomputeApi.as_view(), name="api-eval-recompute"),
    path("api/evaluation/significance/", apis.SignificanceApi.as_view(), name="api-eval-significance"),
    path(
        "api/evaluation/significance/baseline/",
        apis.BaselineSignificanceApi.as_view(),
        name="api-eval-significance-baseline",
    ),
    path("api/evaluation/stability/", apis.StabilityApi.as_view(), name="api-eval-stability"),
]
