"""Every PTKB task endpoint refuses the wrong roles; assessors reach only their own topics; admins get the pages."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from judging.models import AssessorJudgment
from judging.relevance import services as relevance_svc
from tests.judging.relevance import helpers

pytestmark = pytest.mark.django_db


@pytest.fixture
def setup(task, assessor, ikat_train):
    mine = relevance_svc.assignment_take(pool=task, assessor=assessor)
    return {"task": task, "mine": mine, "collection": ikat_train}


def admin_pages(s):
    return [
        ("get", reverse("ptkb-tasks")),
        ("post", reverse("ptkb-tasks")),
        ("get", reverse("ptkb-task", args=[s["task"].pk])),
        ("post", reverse("ptkb-task-status", args=[s["task"].pk])),
    ]


def admin_apis(s):
    return [("post", reverse("api-ptkb-task-create")), ("get", reverse("api-ptkb-task", args=[s["task"].pk]))]


def test_assessors_and_raters_cannot_reach_the_admin_pages_or_apis(
    setup, client, assessor, rater, assessor_api, rater_api
):
    for user in (assessor, rater):
        client.force_login(user)
        for method, url in admin_pages(setup):
            assert getattr(client, method)(url).status_code == 403, (user.username, url)
    for api in (assessor_api, rater_api):
        for method, url in admin_apis(setup):
            assert getattr(api, method)(url, {}, format="json").status_code == 403, url


def test_anonymous_users_are_sent_to_log_in_or_asked_to_authenticate(setup, client, anon_api):
    for method, url in [*admin_pages(setup), ("get", reverse("ptkb-judge", args=[setup["mine"].pk]))]:
        resp = getattr(client, method)(url)
        assert resp.status_code == 302 and "/accounts/login/" in resp["Location"], url
    submit = reverse("api-ptkb-turn-submit", args=[setup["mine"].pk])
    for method, url in [*admin_apis(setup), ("post", submit)]:
        resp = getattr(anon_api, method)(url, {}, format="json")
        assert resp.status_code == 401 and resp["WWW-Authenticate"].startswith("Token"), url


def test_raters_cannot_judge(setup, client, rater, rater_api):
    client.force_login(rater)
    assert client.get(reverse("ptkb-judge", args=[setup["mine"].pk])).status_code == 403
    url = reverse("api-ptkb-turn-submit", args=[setup["mine"].pk])
    assert rater_api.post(url, {"turn": "1-1_1", "relevant": [1]}, format="json").status_code == 403


def test_an_assessor_cannot_see_or_submit_another_assessors_topic(setup, assessor_client, assessor_api):
    other = helpers.assessor_user("assessor2")
    setup["task"].assessors_per_pair = 2
    setup["task"].save()
    theirs = relevance_svc.assignment_take(pool=setup["task"], assessor=other)
    assert theirs.assessor == other and theirs.pk != setup["mine"].pk
    assert assessor_client.get(reverse("ptkb-judge", args=[theirs.pk])).status_code == 404
    url = reverse("api-ptkb-turn-submit", args=[theirs.pk])
    assert assessor_api.post(url, {"turn": "1-1_1", "relevant": [1]}, format="json").status_code == 404
    assert not AssessorJudgment.objects.exists()


def test_the_right_roles_get_their_pages_and_apis(setup, admin_user, assessor, admin_api, assessor_api):
    task, mine = setup["task"], setup["mine"]
    admin_client, assessor_client = Client(), Client()
    admin_client.force_login(admin_user)
    assessor_client.force_login(assessor)
    tasks_page = admin_client.get(reverse("ptkb-tasks")).content.decode()
    assert "PTKB of topic 1-1" in tasks_page and "0 / 3" in tasks_page
    assert admin_client.get(reverse("ptkb-task", args=[task.pk])).status_code == 200
    detail = admin_api.get(reverse("api-ptkb-task", args=[task.pk])).json()
    assert (detail["turns"], detail["statements"], detail["progress"]["turns_done"]) == (3, 33, 0)
    created = admin_api.post(
        reverse("api-ptkb-task-create"), {"collection": setup["collection"].pk, "turn_ids": ["2-1_1"]}, format="json"
    )
    assert created.status_code == 201 and created.json()["turns"] == 1 and created.json()["collection"] == "iKAT 2023"
    resp = admin_client.post(
        reverse("ptkb-tasks"),
        {
            "collection": setup["collection"].pk,
            "name": "topic 3",
            "turn_ids": "3-1_1, 3-1_2",
            "assessors_per_pair": 1,
            "aggregation": "majority",
        },
    )
    assert resp.status_code == 302
    closed = admin_client.post(reverse("ptkb-task-status", args=[task.pk]), {"status": "closed"})
    assert closed.status_code == 302
    task.refresh_from_db()
    assert task.status == "closed"
    task.status = "open"
    task.save()

    page = assessor_client.get(reverse("ptkb-judge", args=[mine.pk])).content.decode()
    assert "Which of the user's statements matter for this turn?" in page
    # The relevance judging URL of a PTKB topic leads to the PTKB page.
    assert assessor_client.get(reverse("relevance-judge", args=[mine.pk]))["Location"] == reverse(
        "ptkb-judge", args=[mine.pk]
    )
    resp = assessor_api.post(
        reverse("api-ptkb-turn-submit", args=[mine.pk]), {"turn": "1-1_2", "relevant": [3, 4]}, format="json"
    )
    assert resp.status_code == 200
    assert resp.json()["progress"] == {"turns_done": 1, "turns_total": 3, "relevant": 2}
