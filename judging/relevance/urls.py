"""URLs for relevance judging: assessor pages, admin pools & qrels pages, and the REST API."""

from django.urls import path

from judging.relevance import adjudication_apis, adjudication_views, apis, views

urlpatterns: list = [
    # assessor
    path("judging/relevance/", views.queue, name="relevance-queue"),
    path("judging/relevance/pools/<int:pk>/take/", views.take, name="relevance-take"),
    path("judging/relevance/assignments/<int:pk>/", views.judge, name="relevance-judge"),
    path("judging/relevance/adjudications/<int:pk>/", adjudication_views.adjudicate, name="relevance-adjudicate"),
    # admin
    path(
        "judging/relevance/admin/adjudications/start/",
        adjudication_views.adjudication_start,
        name="relevance-adjudication-start",
    ),
    path("judging/relevance/admin/", views.admin_index, name="relevance-admin"),
    path("judging/relevance/admin/pools/<int:pk>/", views.pool_detail, name="relevance-pool"),
    path("judging/relevance/admin/pools/<int:pk>/pairs/", views.pool_pairs, name="relevance-pool-pairs"),
    path("judging/relevance/admin/pools/<int:pk>/assign/", views.pool_assign, name="relevance-pool-assign"),
    path("judging/relevance/admin/pools/<int:pk>/assessors/", views.pool_assessors, name="relevance-pool-assessors"),
    path("judging/relevance/admin/pools/<int:pk>/derive/", views.pool_derive, name="relevance-pool-derive"),
    path("judging/relevance/admin/pools/<int:pk>/status/", views.pool_status, name="relevance-pool-status"),
    path("judging/relevance/admin/pools/<int:pk>/sync/", views.pool_sync, name="relevance-pool-sync"),
    path("judging/relevance/admin/pools/<int:pk>/texts/", views.pool_texts, name="relevance-pool-texts"),
    path("judging/relevance/admin/versions/<int:pk>/qrels/", views.version_export, name="relevance-version-export"),
    path("judging/relevance/admin/versions/<int:pk>/sidecar/", views.version_sidecar, name="relevance-version-sidecar"),
    path("evaluation/robustness/pool/", views.robustness_pool, name="evaluation-robustness-pool"),
    # API
    path("api/judging/relevance/pools/", apis.PoolListApi.as_view(), name="api-relevance-pools"),
    path("api/judging/relevance/pools/create/", apis.PoolCreateApi.as_view(), name="api-relevance-pool-create"),
    path("api/judging/relevance/pools/preview/", apis.PoolPreviewApi.as_view(), name="api-relevance-pool-preview"),
    path("api/judging/relevance/pools/<int:pk>/", apis.PoolDetailApi.as_view(), name="api-relevance-pool"),
    path("api/judging/relevance/pools/<int:pk>/pairs/", apis.PoolPairsApi.as_view(), name="api-relevance-pool-pairs"),
    path("api/judging/relevance/pools/<int:pk>/take/", apis.PoolTakeApi.as_view(), name="api-relevance-pool-take"),
    path("api/judging/relevance/assignments/", apis.AssignmentListApi.as_view(), name="api-relevance-assignments"),
    path(
        "api/judging/relevance/assignments/<int:pk>/",
        apis.AssignmentItemsApi.as_view(),
        name="api-relevance-assignment",
    ),
    path(
        "api/judging/relevance/assignments/<int:pk>/judgments/",
        apis.JudgmentSubmitApi.as_view(),
        name="api-relevance-judgment-submit",
    ),
    path(
        "api/judging/relevance/adjudications/",
        adjudication_apis.AdjudicationCreateApi.as_view(),
        name="api-relevance-adjudication-create",
    ),
    path(
        "api/judging/relevance/adjudications/<int:pk>/",
        adjudication_apis.AdjudicationApi.as_view(),
        name="api-relevance-adjudication",
    ),
    path(
        "api/judging/relevance/adjudications/<int:pk>/items/",
        adjudication_apis.AdjudicationSubmitApi.as_view(),
        name="api-relevance-adjudication-submit",
    ),
    path(
        "api/judging/relevance/qrels-versions/derive/",
        apis.QrelsVersionDeriveApi.as_view(),
        name="api-relevance-version-derive",
    ),
    path(
        "api/judging/relevance/qrels-versions/<int:pk>/export/",
        apis.QrelsExportApi.as_view(),
        name="api-relevance-version-export",
    ),
    path(
        "api/judging/relevance/qrels-versions/<int:pk>/sidecar/",
        apis.QrelsSidecarApi.as_view(),
        name="api-relevance-version-sidecar",
    ),
]
