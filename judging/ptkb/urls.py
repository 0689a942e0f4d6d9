"""URLs of PTKB assessment tasks: the assessor's page, the admin's pages, and the REST API."""

from django.urls import path

from judging.ptkb import apis, views

urlpatterns: list = [
    path("judging/ptkb/assignments/<int:pk>/", views.judge, name="ptkb-judge"),
    path("judging/ptkb/admin/", views.tasks, name="ptkb-tasks"),
    path("judging/ptkb/admin/tasks/<int:pk>/", views.task_detail, name="ptkb-task"),
    path("judging/ptkb/admin/tasks/<int:pk>/status/", views.task_status, name="ptkb-task-status"),
    path("api/judging/ptkb/tasks/", apis.PtkbTaskCreateApi.as_view(), name="api-ptkb-task-create"),
    path("api/judging/ptkb/tasks/<int:pk>/", apis.PtkbTaskDetailApi.as_view(), name="api-ptkb-task"),
    path(
        "api/judging/ptkb/assignments/<int:pk>/turns/",
        apis.PtkbTurnSubmitApi.as_view(),
        name="api-ptkb-turn-submit",
    ),
]
