"""Root URLs: log-in, admin and API docs, the dataset (ecast's own domain), then each feature's URL module."""

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path, re_path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from ecast import apis, views
from ecast.core.auth import ThrottledLoginView
from ecast.core.progress import job_progress_view

urlpatterns = [
    # First: a rater's calls (next, submit) are the busiest requests, and Django tries the patterns in order; listed
    # after the rest, each of them was matched against some 250 patterns first (0.15-0.25 ms of CPU per call). Every
    # path in it starts with rating/ or api/rating/, which no other pattern matches.
    path("", include("judging.rating.urls")),
    path("", views.home, name="home"),
    # The progress of any background job, polled by its page (static/ecast/poll.js).
    path("jobs/<str:kind>/<int:pk>/progress/", job_progress_view, name="job-progress"),
    # Browsers ask for /favicon.ico on pages that name no icon (Django admin, API docs, JSON in a tab).
    path("favicon.ico", views.favicon, name="favicon"),
    path("accounts/login/", ThrottledLoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("django-admin/", admin.site.urls),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="api-schema"), name="api-docs"),
    # Dataset pages: the API-token page and curation (collections → conversations → turns → paraphrases).
    path("account/token/", views.account_token, name="account-token"),
    path("collections/", views.collection_list, name="collection-list"),
    path("collections/<int:pk>/", views.collection_detail, name="collection-detail"),
    path("conversations/<int:pk>/", views.conversation_detail, name="conversation-detail"),
    path("turns/<int:pk>/", views.turn_detail, name="turn-detail"),
    path("paraphrases/", views.paraphrase_search, name="paraphrase-search"),
    path("paraphrases/bulk/", views.paraphrase_bulk, name="paraphrase-bulk"),
    path("paraphrases/<int:pk>/approve/", views.paraphrase_approve, name="paraphrase-approve"),
    path("paraphrases/<int:pk>/reject/", views.paraphrase_reject, name="paraphrase-reject"),
    path("paraphrases/<int:pk>/reset/", views.paraphrase_reset, name="paraphrase-reset"),
    path("paraphrases/<int:pk>/edit/", views.paraphrase_edit, name="paraphrase-edit"),
    path("paraphrases/<int:pk>/history/", views.paraphrase_history, name="paraphrase-history"),
    # Dataset REST API.
    path("api/token/", apis.TokenApi.as_view(), name="api-token"),
    path("api/token/obtain/", apis.TokenObtainApi.as_view(), name="api-token-obtain"),
    path("api/collections/", apis.CollectionListApi.as_view(), name="api-collection-list"),
    path("api/collections/create/", apis.CollectionCreateApi.as_view(), name="api-collection-create"),
    path("api/collections/<int:pk>/", apis.CollectionDetailApi.as_view(), name="api-collection-detail"),
    path("api/collections/<int:pk>/update/", apis.CollectionUpdateApi.as_view(), name="api-collection-update"),
    path("api/conversations/", apis.ConversationListApi.as_view(), name="api-conversation-list"),
    path("api/conversations/<int:pk>/", apis.ConversationDetailApi.as_view(), name="api-conversation-detail"),
    path("api/turns/", apis.TurnListApi.as_view(), name="api-turn-list"),
    path("api/turns/<int:pk>/", apis.TurnDetailApi.as_view(), name="api-turn-detail"),
    path("api/passages/", apis.PassageListApi.as_view(), name="api-passage-list"),
    path("api/passages/<str:passage_id>/", apis.PassageDetailApi.as_view(), name="api-passage-detail"),
    path("api/paraphrases/", apis.ParaphraseListApi.as_view(), name="api-paraphrase-list"),
    path("api/paraphrases/add/", apis.ParaphraseAddApi.as_view(), name="api-paraphrase-add"),
    path("api/paraphrases/bulk-status/", apis.ParaphraseBulkStatusApi.as_view(), name="api-paraphrase-bulk-status"),
    path("api/paraphrases/<int:pk>/", apis.ParaphraseDetailApi.as_view(), name="api-paraphrase-detail"),
    path("api/paraphrases/<int:pk>/history/", apis.ParaphraseHistoryApi.as_view(), name="api-paraphrase-history"),
    path("api/paraphrases/<int:pk>/approve/", apis.ParaphraseApproveApi.as_view(), name="api-paraphrase-approve"),
    path("api/paraphrases/<int:pk>/reject/", apis.ParaphraseRejectApi.as_view(), name="api-paraphrase-reject"),
    path("api/paraphrases/<int:pk>/edit/", apis.ParaphraseEditApi.as_view(), name="api-paraphrase-edit"),
    # Features.
    path("", include("ecast.imports.urls")),
    path("", include("ecast.generation.urls")),
    path("", include("judging.urls")),
    path("", include("evaluation.urls")),
    # Last: any other /api/ path answers a JSON 404 (scripts parse it), not the HTML 404 page.
    re_path(r"^api/", apis.ApiNotFoundApi.as_view(), name="api-not-found"),
]

# Errors Django answers itself (an unexpected exception, a SuspiciousOperation) are JSON under /api/ too.
handler400 = "ecast.core.rest.bad_request"
handler403 = "ecast.core.rest.permission_denied"
handler404 = "ecast.core.rest.page_not_found"
handler500 = "ecast.core.rest.server_error"
