"""Adjudication of two qrels versions: only disagreements are queued, the new version holds what the two agree on
and what one alone judged, final grades go into it (once), and every page and endpoint admits only adjudicators."""

from __future__ import annotations

import pytest
from django.urls import reverse

from evaluation import selectors as esel
from evaluation.models import QrelsVersion
from judging.models import AdjudicationItem
from judging.relevance import adjudication as adj
from tests.judging.relevance.adjudication_helpers import two_assessments


def grades(version: QrelsVersion) -> dict[str, dict[str, int]]:
    return {t: dict(docs) for t, docs in esel.qrels_dict(version=version).items()}


def queued(made) -> dict[tuple[str, str], tuple[int, int]]:
    return {(i.turn.turn_id, i.passage_id): (i.grade_a, i.grade_b) for i in made.items.select_related("turn")}


@pytest.fixture
def made(small_collection, admin_user):
    a, b = two_assessments(small_collection)
    return adj.adjudication_create(a=a, b=b, created_by=admin_user)


@pytest.mark.django_db
def test_only_the_items_both_versions_grade_differently_are_queued(made):
    assert queued(made) == {("1_1", "d2"): (3, 1), ("1_2", "f1"): (0, 4)}
    assert adj.adjudication_progress(adjudication=made) == {"done": 0, "total": 2}


@pytest.mark.django_db
def test_the_new_version_holds_agreed_and_one_sided_items_but_no_disagreement_yet(made):
    v = made.version
    assert v.name == "adjudicated: assessor 1 vs assessor 2" and v.parent == made.version_a
    assert grades(v) == {"1_1": {"d1": 2, "d3": 1}, "2_1": {"e1": 0}, "2_2": {"e2": 2}}


@pytest.mark.django_db
def test_making_it_twice_returns_the_same_adjudication(made, admin_user):
    again = adj.adjudication_create(a=made.version_a, b=made.version_b, created_by=admin_user)
    assert again.pk == made.pk and AdjudicationItem.objects.count() == 2
    assert QrelsVersion.objects.filter(name__startswith="adjudicated").count() == 1


@pytest.mark.django_db
def test_adjudicating_writes_the_final_grade_into_the_new_version(made, admin_user):
    item = made.items.get(passage_id="d2")
    item, changed = adj.adjudication_submit(item=item, grade=2, user=admin_user)
    assert changed and item.grade == 2 and item.adjudicated_by == admin_user
    f1 = made.items.get(passage_id="f1")
    adj.adjudication_submit(item=f1, grade="b", user=admin_user)
    assert grades(made.version)["1_1"]["d2"] == 2 and grades(made.version)["1_2"] == {"f1": 4}
    assert adj.adjudication_progress(adjudication=made) == {"done": 2, "total": 2}


@pytest.mark.django_db
def test_a_repeated_submit_changes_nothing_and_a_new_grade_keeps_the_old_in_history(made, admin_user):
    item = made.items.get(passage_id="d2")
    adj.adjudication_submit(item=item, grade=3, user=admin_user)
    item, changed = adj.adjudication_submit(item=item, grade=3, user=admin_user)
    assert not changed and item.history == []
    item, changed = adj.adjudication_submit(item=item, grade="b", user=admin_user)
    assert changed and item.grade == 1 and [h["grade"] for h in item.history] == [3]
    assert grades(made.version)["1_1"]["d2"] == 1


@pytest.mark.django_db
def test_undo_takes_the_grade_out_of_the_version_and_puts_the_item_back_in_the_queue(made, admin_user):
    item = made.items.get(passage_id="f1")
    adj.adjudication_submit(item=item, grade=4, user=admin_user)
    item, changed = adj.adjudication_submit(item=item, grade=None, user=admin_user)
    assert changed and item.grade is None and "1_2" not in grades(made.version)
    assert [i["passage_id"] for i in adj.adjudication_batch(adjudication=made)["items"]] == ["d2", "f1"]


@pytest.mark.django_db
def test_a_final_grade_tells_evaluation_the_turn_changed(made, admin_user, django_capture_on_commit_callbacks):
    from evaluation.events import qrels_version_changed

    seen = []

    def receiver(sender, version_id, turn_ids, **kwargs):
        seen.append((version_id, turn_ids))

    qrels_version_changed.connect(receiver)
    try:
        with django_capture_on_commit_callbacks(execute=True):
            adj.adjudication_submit(item=made.items.get(passage_id="d2"), grade=0, user=admin_user)
    finally:
        qrels_version_changed.disconnect(receiver)
    turn_pk = made.items.get(passage_id="d2").turn_id
    assert seen == [(made.version_id, [turn_pk])]


@pytest.mark.django_db
def test_versions_of_different_collections_cannot_be_adjudicated(small_collection):
    from tests import factories

    a, _ = two_assessments(small_collection)
    other = factories.qrels_version(factories.collection("Other"), "x", {})
    with pytest.raises(Exception, match="different collections"):
        adj.adjudication_create(a=a, b=other)


@pytest.mark.django_db
def test_a_version_already_holding_the_name_is_not_overwritten(small_collection):
    from django.core.exceptions import ValidationError

    from tests import factories

    a, b = two_assessments(small_collection)
    factories.qrels_version(small_collection, "adjudicated: assessor 1 vs assessor 2", {"1_1": {"d1": 0}})
    with pytest.raises(ValidationError, match="already exists"):
        adj.adjudication_create(a=a, b=b)
    assert not AdjudicationItem.objects.exists()


# ---------------------------------------------------------------- API


def submit_url(made) -> str:
    return reverse("api-relevance-adjudication-submit", args=[made.version_id])


@pytest.mark.django_db
def test_a_bad_grade_is_refused_with_400_naming_it(made, assessor_api):
    item = made.items.get(passage_id="d2")
    for bad in (7, "x", True, -1):
        resp = assessor_api.post(submit_url(made), {"item": item.pk, "grade": bad}, format="json")
        assert resp.status_code == 400, bad
        assert "grade" in resp.json()["detail"] and repr(bad) in resp.json()["detail"]
    item.refresh_from_db()
    assert item.grade is None and "d2" not in grades(made.version)["1_1"]


@pytest.mark.django_db
def test_an_assessor_adjudicates_through_the_api_and_a_repeat_is_stored_once(made, assessor_api, assessor):
    item = made.items.get(passage_id="f1")
    first = assessor_api.post(submit_url(made), {"item": item.pk, "grade": "a"}, format="json").json()
    second = assessor_api.post(submit_url(made), {"item": item.pk, "grade": 0}, format="json").json()
    assert first == {"item": item.pk, "grade": 0, "changed": True, "progress": {"done": 1, "total": 2}}
    assert second["changed"] is False and second["progress"] == {"done": 1, "total": 2}
    assert made.items.get(pk=item.pk).adjudicated_by == assessor


@pytest.mark.django_db
def test_an_item_of_another_adjudication_is_not_found(made, small_collection, admin_api):
    a, b = made.version_a, made.version_b
    reverse_made = adj.adjudication_create(a=b, b=a)
    other_item = reverse_made.items.first()
    resp = admin_api.post(submit_url(made), {"item": other_item.pk, "grade": 1}, format="json")
    assert resp.status_code == 404


@pytest.mark.django_db
def test_admins_create_it_through_the_api_and_read_its_queue(small_collection, admin_api):
    a, b = two_assessments(small_collection)
    resp = admin_api.post(reverse("api-relevance-adjudication-create"), {"a": a.pk, "b": b.pk}, format="json")
    assert resp.status_code == 201
    body = resp.json()
    assert body["name"] == "adjudicated: assessor 1 vs assessor 2" and body["progress"] == {"done": 0, "total": 2}
    read = admin_api.get(reverse("api-relevance-adjudication", args=[body["version"]])).json()
    assert [(i["passage_id"], i["a"], i["b"]) for i in read["items"]] == [("d2", 3, 1), ("f1", 0, 4)]
    same = admin_api.post(reverse("api-relevance-adjudication-create"), {"a": a.pk, "b": b.pk}, format="json")
    assert same.json()["version"] == body["version"]


@pytest.mark.django_db
def test_every_endpoint_admits_only_its_roles(made, small_collection, anon_api, rater_api, assessor_api, admin_api):
    a, b = made.version_a, made.version_b
    item = made.items.first()
    create = reverse("api-relevance-adjudication-create")
    read = reverse("api-relevance-adjudication", args=[made.version_id])
    for api in (anon_api, rater_api, assessor_api):
        resp = api.post(create, {"a": b.pk, "b": a.pk}, format="json")
        assert resp.status_code == (401 if api is anon_api else 403)
    assert anon_api.get(read).status_code == 401 and rater_api.get(read).status_code == 403
    assert anon_api.post(submit_url(made), {"item": item.pk, "grade": 1}, format="json").status_code == 401
    assert rater_api.post(submit_url(made), {"item": item.pk, "grade": 1}, format="json").status_code == 403
    for api in (assessor_api, admin_api):
        assert api.get(read).status_code == 200
        assert api.post(submit_url(made), {"item": item.pk, "grade": 1}, format="json").status_code == 200
    assert admin_api.post(create, {"a": b.pk, "b": a.pk}, format="json").status_code == 201


# ---------------------------------------------------------------- pages


@pytest.mark.django_db
def test_the_pages_admit_only_their_roles(made, client, rater, assessor, admin_user):
    page = reverse("relevance-adjudicate", args=[made.version_id])
    start = reverse("relevance-adjudication-start")
    form = {"a": made.version_b_id, "b": made.version_a_id}
    for method, url in (("get", page), ("post", start)):
        resp = getattr(client, method)(url, form) if method == "post" else client.get(url)
        assert resp.status_code == 302 and "/accounts/login/" in resp["Location"]
    client.force_login(rater)
    assert client.get(page).status_code == 403 and client.post(start, form).status_code == 403
    client.force_login(assessor)
    assert client.get(page).status_code == 200 and client.post(start, form).status_code == 403
    client.force_login(admin_user)
    assert client.get(page).status_code == 200 and client.post(start, form).status_code == 302


@pytest.mark.django_db
def test_the_page_shows_both_labels_the_passage_and_the_progress(made, assessor_client):
    resp = assessor_client.get(reverse("relevance-adjudicate", args=[made.version_id]))
    html = resp.content.decode()
    assert "0 of 2 adjudicated" in html and "A · assessor 1" in html and "B · assessor 2" in html
    data = resp.context["data"]
    first = data["items"][0]
    assert (first["turn_id"], first["a"], first["b"]) == ("1_1", 3, 1)
    assert first["text"] == "Throat cancer is treatable when found early."
    assert [t["raw"] for t in data["conversations"][str(first["conversation"])]["turns"]][0] == "What is throat cancer?"


@pytest.mark.django_db
def test_when_all_are_adjudicated_the_page_links_back_to_the_report_and_the_leaderboard(made, admin_client, admin_user):
    for item in made.items.all():
        adj.adjudication_submit(item=item, grade="a", user=admin_user)
    html = admin_client.get(reverse("relevance-adjudicate", args=[made.version_id])).content.decode()
    assert "All 2 disagreements adjudicated" in html
    assert f"a={made.version_a_id}&amp;b={made.version_b_id}" in html
    assert f"{reverse('evaluation-leaderboard')}?version={made.version_id}" in html


@pytest.mark.django_db
def test_the_agreement_report_offers_to_adjudicate_the_disagreements_then_links_to_it(small_collection, admin_client):
    a, b = two_assessments(small_collection)
    report = reverse("evaluation-agreement") + f"?a={a.pk}&b={b.pk}"
    html = admin_client.get(report).content.decode()
    assert "Adjudicate the 2 disagreements" in html
    resp = admin_client.post(reverse("relevance-adjudication-start"), {"a": a.pk, "b": b.pk})
    version = QrelsVersion.objects.get(name="adjudicated: assessor 1 vs assessor 2")
    assert resp["Location"] == reverse("relevance-adjudicate", args=[version.pk])
    html = admin_client.get(report).content.decode()
    assert "Adjudicate the 2 disagreements" not in html
    assert reverse("relevance-adjudicate", args=[version.pk]) in html


@pytest.mark.django_db
def test_assessors_find_open_adjudications_in_their_queue(made, assessor_client, admin_user):
    page = assessor_client.get(reverse("relevance-queue")).content.decode()
    assert "assessor 1 vs assessor 2" in page and "0 of 2" in page
    for item in made.items.all():
        adj.adjudication_submit(item=item, grade="b", user=admin_user)
    assert "Disagreements to adjudicate" not in assessor_client.get(reverse("relevance-queue")).content.decode()


@pytest.mark.django_db
def test_binary_versions_are_adjudicated_relevant_or_not_and_ptkb_items_show_their_statement(
    shared_data, admin_api, admin_client
):
    from ecast.models import PtkbStatement
    from ecast.services import ptkb_collection_sync
    from tests import factories
    from tests.ecast.imports.conftest import ok

    companion = ptkb_collection_sync(
        collection=ok("ikat_topics", shared_data / "ikat/2023/2023_train_topics.json").collection
    )
    statement = PtkbStatement.objects.filter(conversation__collection=companion).order_by("id").first()
    turn = statement.conversation.turns.order_by("number").first()
    n = str(statement.number)
    a = factories.qrels_version(companion, "NIST", {turn.turn_id: {n: 1, "99": 0}})
    b = factories.qrels_version(companion, "organisers", {turn.turn_id: {n: 0, "99": 0}})
    made = adj.adjudication_create(a=a, b=b)
    assert made.binary and queued(made) == {(turn.turn_id, n): (1, 0)}
    item = made.items.get()
    resp = admin_api.post(submit_url(made), {"item": item.pk, "grade": 3}, format="json")
    assert resp.status_code == 400 and "0 or 1" in resp.json()["detail"] and "3" in resp.json()["detail"]
    page = admin_client.get(reverse("relevance-adjudicate", args=[made.version_id]))
    assert page.context["data"]["items"][0]["text"] == statement.text
    assert [g for g, *_ in page.context["grades"]] == [1, 0] and "Not relevant" in page.content.decode()
    assert admin_api.post(submit_url(made), {"item": item.pk, "grade": 1}, format="json").json()["grade"] == 1
