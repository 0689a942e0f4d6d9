"""Every response-judging page and endpoint by role: admins reach everything, assessors judge and edit what they
are allowed to, raters get 403, anonymous callers are sent to log in (pages) or asked to authenticate (API)."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from evaluation.models import Nugget, NuggetAssignment, NuggetBank
from judging.models import ResponseTask
from judging.nuggets import leasing
from tests import factories
from tests.judging.nuggets import helpers

pytestmark = pytest.mark.django_db


@pytest.fixture
def setup(assessor, admin_user):
    s = helpers.scene()
    task = helpers.nugget_task(s, name="N", created_by=admin_user)
    lease = leasing.lease_next(task=task, assessor=assessor)
    nugget = s.nuggets("1_1")[0]
    return {"s": s, "task": task, "lease": lease, "nugget": nugget, "turn": s.turns["1_1"]}


def judge_pages(x):
    bank, turn = x["s"].bank.pk, x["turn"].pk
    return [
        ("get", reverse("nuggets-judge", args=[x["task"].pk])),
        ("get", reverse("nuggets-banks")),
        ("get", reverse("nuggets-bank", args=[bank])),
        ("get", reverse("nuggets-bank-turn", args=[bank, turn])),
    ]


def admin_pages(x):
    return [
        ("get", reverse("nuggets-admin")),
        ("post", reverse("nuggets-admin")),
        ("post", reverse("nuggets-task-status", args=[x["task"].pk])),
    ]


def judge_apis(x):
    bank, turn, lease, nugget = x["s"].bank.pk, x["turn"].pk, x["lease"].pk, x["nugget"].pk
    return [
        ("post", reverse("api-nuggets-task-next", args=[x["task"].pk])),
        ("get", reverse("api-nuggets-task-previous", args=[x["task"].pk])),
        ("post", reverse("api-nuggets-lease-labels", args=[lease])),
        ("post", reverse("api-nuggets-lease-complete", args=[lease])),
        ("post", reverse("api-nuggets-bank-create")),
        ("get", reverse("api-nuggets-bank-turn", args=[bank, turn])),
        ("post", reverse("api-nuggets-nugget-add", args=[bank, turn])),
        ("post", reverse("api-nuggets-nugget-edit", args=[nugget])),
        ("post", reverse("api-nuggets-nugget-delete", args=[nugget])),
        ("post", reverse("api-nuggets-nugget-merge", args=[nugget])),
    ]


def admin_apis(x):
    return [("get", reverse("api-nuggets-tasks")), ("post", reverse("api-nuggets-task-create"))]


def test_anonymous_users_are_sent_to_log_in_or_asked_to_authenticate(setup, client, anon_api):
    for method, url in [*judge_pages(setup), *admin_pages(setup)]:
        resp = getattr(client, method)(url)
        assert resp.status_code == 302 and "/accounts/login/" in resp["Location"], url
    for method, url in [*judge_apis(setup), *admin_apis(setup)]:
        resp = getattr(anon_api, method)(url, {}, format="json")
        assert resp.status_code == 401 and resp["WWW-Authenticate"].startswith("Token"), url


def test_raters_get_403_everywhere(setup, client, rater, rater_api):
    client.force_login(rater)
    for method, url in [*judge_pages(setup), *admin_pages(setup)]:
        assert getattr(client, method)(url).status_code == 403, url
    for method, url in [*judge_apis(setup), *admin_apis(setup)]:
        assert getattr(rater_api, method)(url, {}, format="json").status_code == 403, url
    assert not NuggetAssignment.objects.filter(label_set=setup["task"].label_set).exists()
    assert Nugget.objects.count() == 4


def test_assessors_cannot_reach_the_admin_pages_or_apis(setup, assessor_client, assessor_api):
    for method, url in admin_pages(setup):
        assert getattr(assessor_client, method)(url).status_code == 403, url
    for method, url in admin_apis(setup):
        assert getattr(assessor_api, method)(url, {}, format="json").status_code == 403, url
    assert ResponseTask.objects.get().status == "open"


def test_assessors_judge_and_edit_the_bank_of_a_task_open_to_them(setup, assessor_client, assessor_api):
    x = setup
    for method, url in judge_pages(x):
        assert getattr(assessor_client, method)(url).status_code == 200, url
    nxt = assessor_api.post(reverse("api-nuggets-task-next", args=[x["task"].pk])).json()
    assert nxt["item"]["lease"] == x["lease"].pk and nxt["progress"] == {"done": 0, "total": 4, "mine": 0}
    labels = {str(n.pk): "support" for n in x["s"].nuggets("1_1")}
    url = reverse("api-nuggets-lease-labels", args=[x["lease"].pk])
    answer = assessor_api.post(url, {"labels": {str(x["nugget"].pk): "support"}}, format="json")
    others = sorted(n.pk for n in x["s"].nuggets("1_1") if n.pk != x["nugget"].pk)
    assert answer.status_code == 200 and answer.json() == {"changed": 1, "missing": others}
    refused = assessor_api.post(url, {"labels": {str(x["nugget"].pk): "full"}}, format="json")
    assert refused.status_code == 400 and "the label is one of" in refused.json()["detail"]
    complete = reverse("api-nuggets-lease-complete", args=[x["lease"].pk])
    done = assessor_api.post(complete, {"labels": labels}, format="json")
    assert done.status_code == 200 and done.json()["progress"]["done"] == 1
    assert done.json()["item"]["turn"]["turn_id"] == "1_1"  # the next answer of the same turn
    previous = assessor_api.get(reverse("api-nuggets-task-previous", args=[x["task"].pk]))
    assert previous.status_code == 200 and previous.json()["item"]["lease"] == x["lease"].pk

    turn_url = reverse("api-nuggets-bank-turn", args=[x["s"].bank.pk, x["turn"].pk])
    assert [n["text"] for n in assessor_api.get(turn_url).json()["nuggets"]][:1] == ["Built for the 1889 World's Fair"]
    add = reverse("api-nuggets-nugget-add", args=[x["s"].bank.pk, x["turn"].pk])
    added = assessor_api.post(add, {"text": "Completed in 1889", "source_passages": ["p2"]}, format="json")
    assert added.status_code == 201
    new = Nugget.objects.get(pk=added.json()["id"])
    assert (new.origin, new.source_passages, new.position) == ("added", ["p2"], 3)
    edit = reverse("api-nuggets-nugget-edit", args=[new.pk])
    assert assessor_api.post(edit, {"importance": "vital"}, format="json").json()["changed"] is True
    merge = reverse("api-nuggets-nugget-merge", args=[new.pk])
    assert assessor_api.post(merge, {"into": x["nugget"].pk}, format="json").status_code == 200
    new.refresh_from_db()
    assert new.merged_into == x["nugget"] and new.importance == "vital"
    # A nugget with labels is merged, never deleted.
    delete = assessor_api.post(reverse("api-nuggets-nugget-delete", args=[x["nugget"].pk]))
    assert delete.status_code == 409
    assert assessor_api.post(reverse("api-nuggets-nugget-delete", args=[new.pk])).status_code == 200
    created = assessor_api.post(
        reverse("api-nuggets-bank-create"),
        {"collection": x["s"].collection.pk, "name": "post-edited", "copy_of": x["s"].bank.pk},
        format="json",
    )
    assert created.status_code == 201 and created.json()["nuggets"] == 4


def test_an_assessor_outside_the_task_list_sees_neither_the_task_nor_its_bank(setup, assessor_client, assessor_api):
    x = setup
    x["task"].assessors.set([factories.user("assessor2", "assessor")])
    for method, url in judge_pages(x):
        expected = 200 if url == reverse("nuggets-banks") else 404
        assert getattr(assessor_client, method)(url).status_code == expected, url
    for method, url in judge_apis(x):
        if url == reverse("api-nuggets-bank-create"):
            continue
        resp = getattr(assessor_api, method)(url, {"labels": {}}, format="json")
        assert resp.status_code == 404, url
    assert "No answer-judging task is open to you" in assessor_client.get(reverse("relevance-queue")).content.decode()


def test_another_assessors_answer_is_not_theirs_to_label(setup, assessor_api):
    other = factories.user("assessor2", "assessor")
    theirs = leasing.lease_next(task=setup["task"], assessor=other)
    url = reverse("api-nuggets-lease-labels", args=[theirs.pk])
    assert assessor_api.post(url, {"labels": {}}, format="json").status_code == 404


def test_admins_get_every_page_and_create_tasks_and_banks(setup, admin_user, admin_api):
    x = setup
    client = Client()
    client.force_login(admin_user)
    for method, url in [*judge_pages(x), ("get", reverse("nuggets-admin"))]:
        assert getattr(client, method)(url).status_code == 200, url
    page = client.get(reverse("nuggets-admin")).content.decode()
    assert "0 of 4" in page and "LLM draft" in page
    tasks = admin_api.get(reverse("api-nuggets-tasks")).json()
    assert [(t["name"], t["kind"], t["condition"], t["progress"]) for t in tasks] == [
        ("N", "nuggets", "blind", {"done": 0, "total": 4})
    ]
    body = {
        "collection": x["s"].collection.pk,
        "kind": "citations",
        "runs": [x["s"].runs["runA"].pk],
        "llm_label_set": x["s"].llm_citations.pk,
        "name": "C",
    }
    created = admin_api.post(reverse("api-nuggets-task-create"), body, format="json")
    assert created.status_code == 201, created.json()
    assert (created.json()["condition"], created.json()["progress"]) == ("post_edit", {"done": 0, "total": 2})
    form = {"collection": x["s"].collection.pk, "kind": "nuggets", "runs": [x["s"].runs["runB"].pk], "name": "F",
            "bank": x["s"].bank.pk, "lease_seconds": 900}  # fmt: skip
    assert client.post(reverse("nuggets-admin"), form).status_code == 302
    assert ResponseTask.objects.get(name="F").lease_seconds == 900
    assert client.post(reverse("nuggets-task-status", args=[x["task"].pk]), {"status": "closed"}).status_code == 302
    x["task"].refresh_from_db()
    assert x["task"].status == "closed"
    bank_form = {"collection": x["s"].collection.pk, "name": "hand"}
    assert client.post(reverse("nuggets-banks"), bank_form).status_code == 302
    assert NuggetBank.objects.get(name="hand").nuggets.count() == 0
