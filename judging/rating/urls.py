"""URLs of rating campaigns: rater pages, admin pages, and the REST API under /api/rating/."""

from django.urls import path

from judging.rating import apis, views

urlpatterns: list = [
    # API first, a rater's calls at the head: patterns are tried in order, and these are the busiest.
    path("api/rating/campaigns/<int:campaign_id>/next/", apis.AssignmentNextApi.as_view(), name="api-rating-next"),
    path(
        "api/rating/assignments/<int:assignment_id>/submit/",
        apis.RatingSubmitApi.as_view(),
        name="api-rating-submit",
    ),
    path("api/rating/me/", apis.MeApi.as_view(), name="api-rating-me"),
    path("api/rating/measures/", apis.MeasureListApi.as_view(), name="api-rating-measures"),
    path("api/rating/queue/", apis.RaterQueueApi.as_view(), name="api-rating-queue"),
    path("api/rating/campaigns/", apis.CampaignListApi.as_view(), name="api-rating-campaigns"),
    path("api/rating/campaigns/create/", apis.CampaignCreateApi.as_view(), name="api-rating-campaign-create"),
    path("api/rating/campaigns/<int:campaign_id>/", apis.CampaignDetailApi.as_view(), name="api-rating-campaign"),
    path(
        "api/rating/campaigns/<int:campaign_id>/mine/",
        apis.AssignmentListMineApi.as_view(),
        name="api-rating-mine",
    ),
    path(
        "api/rating/campaigns/<int:campaign_id>/agreement/",
        apis.CampaignAgreementApi.as_view(),
        name="api-rating-agreement",
    ),
    path(
        "api/rating/campaigns/<int:campaign_id>/ratings.csv",
        apis.CampaignRatingsCsvApi.as_view(),
        name="api-rating-ratings-csv",
    ),
    path(
        "api/rating/campaigns/<int:campaign_id>/labels.csv",
        apis.CampaignLabelsCsvApi.as_view(),
        name="api-rating-labels-csv",
    ),
    path(
        "api/rating/campaigns/<int:campaign_id>/release/",
        apis.CampaignReleaseApi.as_view(),
        name="api-rating-release",
    ),
    path(
        "api/rating/campaigns/<int:campaign_id>/raters/<int:user_id>/pause/",
        apis.RaterPauseApi.as_view(),
        name="api-rating-rater-pause",
    ),
    path("api/rating/assignments/<int:assignment_id>/undo/", apis.RatingUndoApi.as_view(), name="api-rating-undo"),
    # pages
    path("rating/", views.rating_queue, name="rating-queue"),
    path("rating/campaigns/<int:campaign_id>/rate/", views.rating_rate, name="rating-rate"),
    path("rating/campaigns/<int:campaign_id>/undo/", views.rating_undo, name="rating-undo"),
    path("rating/campaigns/", views.campaign_list, name="rating-campaigns"),
    path("rating/campaigns/<int:campaign_id>/", views.campaign_report, name="rating-campaign"),
    path(
        "rating/campaigns/<int:campaign_id>/raters/<int:user_id>/pause/",
        views.campaign_rater_pause,
        name="rating-rater-pause",
    ),
    path("rating/campaigns/<int:campaign_id>/status/", views.campaign_status, name="rating-campaign-status"),
]
