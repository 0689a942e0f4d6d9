"""URLs of the pivot, meta-evaluation and calibration analyses: pages and REST API."""

from django.urls import path

from evaluation.analyses import apis, budget_views, downloads, views

KINDS = "<str:kind>"

urlpatterns: list = [
    path("evaluation/analyses/pivots/", views.pivots_page, name="analyses-pivots"),
    path("evaluation/analyses/metaeval/", views.metaeval_page, name="analyses-metaeval"),
    path("evaluation/analyses/calibration/", views.calibration_page, name="analyses-calibration"),
    path("evaluation/analyses/budget/", budget_views.budget_page, name="analyses-budget"),
    path(f"evaluation/analyses/{KINDS}/<int:pk>/", views.analysis_detail, name="analyses-detail"),
    path(f"evaluation/analyses/{KINDS}/<int:pk>/recompute/", views.analysis_recompute, name="analyses-recompute"),
    path(f"evaluation/analyses/{KINDS}/<int:pk>/delete/", views.analysis_delete, name="analyses-delete"),
    path(
        f"evaluation/analyses/{KINDS}/<int:pk>/download.<str:fmt>",
        downloads.analysis_download,
        name="analyses-download",
    ),
    path("api/analyses/pivots/", apis.PivotAnalysisCreateApi.as_view(), name="api-analyses-pivots-create"),
    path("api/analyses/metaeval/", apis.MetaEvaluationCreateApi.as_view(), name="api-analyses-metaeval-create"),
    path(
        "api/analyses/calibration/", apis.CalibrationReportCreateApi.as_view(), name="api-analyses-calibration-create"
    ),
    path("api/analyses/stochastic/", apis.StochasticSystemCreateApi.as_view(), name="api-analyses-stochastic-create"),
    path("api/analyses/budget/", apis.BudgetSimulationCreateApi.as_view(), name="api-analyses-budget-create"),
    path("api/analyses/pivots/<int:pk>/compare/", apis.PivotCompareApi.as_view(), name="api-analyses-pivots-compare"),
    path(f"api/analyses/{KINDS}/<int:pk>/", apis.AnalysisDetailApi.as_view(), name="api-analyses-detail"),
]
