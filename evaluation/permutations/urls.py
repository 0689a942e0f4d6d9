"""URLs of permutation experiments and SE/FT/PT labelling (pages under /permutations/, API under /api/permutations/)."""

from django.urls import path

from evaluation.permutations import apis, views

urlpatterns: list = [
    path("permutations/", views.experiment_list, name="permutation-experiments"),
    path("permutations/<int:pk>/", views.experiment_detail, name="permutation-experiment"),
    path("permutations/<int:pk>/permutations/", views.experiment_permutations, name="permutation-list"),
    path("permutations/<int:pk>/topics.json", views.experiment_export, name="permutation-export"),
    path("permutations/<int:pk>/scores.csv", views.experiment_scores_csv, name="permutation-scores-csv"),
    path("permutations/<int:pk>/analysis.json", views.experiment_analysis_json, name="permutation-analysis-json"),
    path("permutations/<int:pk>/version/", views.experiment_set_version, name="permutation-set-version"),
    path("permutations/<int:pk>/runs/", views.experiment_import_runs, name="permutation-import-runs"),
    path("permutations/labels/", views.labels_index, name="utterance-labels"),
    path("permutations/labels/conversation/<int:pk>/", views.labels_conversation, name="utterance-label-conversation"),
    path("permutations/labels/<int:pk>/adopt/", views.labels_adopt_majority, name="utterance-labels-adopt"),
    path("permutations/labels/<int:pk>/derive/", views.labels_derive, name="utterance-labels-derive"),
    path("api/permutations/labels/", apis.UtteranceLabelSetApi.as_view(), name="api-utterance-label-set"),
    path(
        "api/permutations/collections/<int:pk>/agreement/",
        apis.LabelAgreementApi.as_view(),
        name="api-utterance-label-agreement",
    ),
    path("api/permutations/experiments/", apis.ExperimentCreateApi.as_view(), name="api-permutation-create"),
    path("api/permutations/experiments/<int:pk>/", apis.ExperimentStatusApi.as_view(), name="api-permutation-status"),
    path(
        "api/permutations/experiments/<int:pk>/analysis/",
        apis.ExperimentAnalysisApi.as_view(),
        name="api-permutation-analysis",
    ),
    path(
        "api/permutations/experiments/<int:pk>/topics/",
        apis.ExperimentTopicsApi.as_view(),
        name="api-permutation-topics",
    ),
]
