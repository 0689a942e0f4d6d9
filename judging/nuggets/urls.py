"""URLs of response judging: assessor pages, the admin's tasks, nugget banks by hand, and the REST API."""

from django.urls import path

from judging.nuggets import apis, views

urlpatterns: list = [
    # assessors and admins
    path("judging/nuggets/tasks/<int:pk>/", views.judge, name="nuggets-judge"),
    path("judging/nuggets/banks/", views.bank_list, name="nuggets-banks"),
    path("judging/nuggets/banks/<int:pk>/", views.bank_detail, name="nuggets-bank"),
    path("judging/nuggets/banks/<int:pk>/turns/<int:turn>/", views.bank_turn, name="nuggets-bank-turn"),
    # admins
    path("judging/nuggets/admin/", views.tasks_admin, name="nuggets-admin"),
    path("judging/nuggets/admin/tasks/<int:pk>/status/", views.task_status, name="nuggets-task-status"),
    # API
    path("api/judging/nuggets/tasks/", apis.TaskListApi.as_view(), name="api-nuggets-tasks"),
    path("api/judging/nuggets/tasks/create/", apis.TaskCreateApi.as_view(), name="api-nuggets-task-create"),
    path("api/judging/nuggets/tasks/<int:pk>/next/", apis.TaskNextApi.as_view(), name="api-nuggets-task-next"),
    path(
        "api/judging/nuggets/tasks/<int:pk>/previous/",
        apis.TaskPreviousApi.as_view(),
        name="api-nuggets-task-previous",
    ),
    path("api/judging/nuggets/leases/<int:pk>/labels/", apis.LeaseLabelsApi.as_view(), name="api-nuggets-lease-labels"),
    path(
        "api/judging/nuggets/leases/<int:pk>/complete/",
        apis.LeaseCompleteApi.as_view(),
        name="api-nuggets-lease-complete",
    ),
    path("api/judging/nuggets/banks/create/", apis.BankCreateApi.as_view(), name="api-nuggets-bank-create"),
    path(
        "api/judging/nuggets/banks/<int:pk>/turns/<int:turn>/",
        apis.BankTurnApi.as_view(),
        name="api-nuggets-bank-turn",
    ),
    path(
        "api/judging/nuggets/banks/<int:pk>/turns/<int:turn>/nuggets/",
        apis.NuggetAddApi.as_view(),
        name="api-nuggets-nugget-add",
    ),
    path("api/judging/nuggets/nuggets/<int:pk>/edit/", apis.NuggetEditApi.as_view(), name="api-nuggets-nugget-edit"),
    path(
        "api/judging/nuggets/nuggets/<int:pk>/delete/",
        apis.NuggetDeleteApi.as_view(),
        name="api-nuggets-nugget-delete",
    ),
    path("api/judging/nuggets/nuggets/<int:pk>/merge/", apis.NuggetMergeApi.as_view(), name="api-nuggets-nugget-merge"),
]
