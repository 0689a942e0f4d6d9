"""REST API of rating campaigns: the rater flow, idempotency, exports, release filter, and every permission."""

from __future__ import annotations

import csv
import io

import pytest
from django.urls import reverse

from judging.models import Campaign, Rating, RatingAssignment
from judging.rating import leasing, services
from tests import factories
from tests.judging.rating.helpers import answer, rate_one

pytestmark = pytest.mark.django_db


@pytest.fixture
def camp(db):
    coll = factories.paraphrase_collection()
    return factories.rating_campaign(coll, size=4, n=2)


def _next(api, c):
    return api.post(reverse("api-rating-next", args=[c.pk]))


def test_a_rater_leases_submits_once_despite_a_retry_and_undoes(rater_api, rater, camp):
    r = _next(rater_api, camp)
    assert r.status_code == 200
    a = r.json()["assignment"]
    assert set(m["key"] for m in a["measures"]) == set(camp.measure_keys)
    assert a["context"]["paraphrase_manual"].startswith("para")
    assert _next(rater_api, camp).json()["assignment"]["assignment_id"] == a["assignment_id"]  # reload keeps lease
    body = {"values": answer(camp), "idempotency_key": "abc", "seconds_on_task": 3.5}
    url = reverse("api-rating-submit", args=[a["assignment_id"]])
    first = rater_api.post(url, body, format="json")
    again = rater_api.post(url, body, format="json")
    assert (first.status_code, again.status_code) == (201, 200)
    assert first.json()["rating_id"] == again.json()["rating_id"]
    assert Rating.objects.count() == 1 and Rating.objects.get().seconds_on_task == 3.5
    other = rater_api.post(url, {**body, "idempotency_key": "zzz"}, format="json")
    assert other.status_code == 409
    undo = rater_api.post(reverse("api-rating-undo", args=[a["assignment_id"]]))
    assert undo.status_code == 200 and Rating.objects.count() == 0


def test_bad_answers_are_refused_with_a_reason(rater_api, camp):
    a = _next(rater_api, camp).json()["assignment"]
    url = reverse("api-rating-submit", args=[a["assignment_id"]])
    r = rater_api.post(url, {"values": {"semantic_similarity": 9}, "idempotency_key": "k"}, format="json")
    assert r.status_code == 400 and "missing" in r.json()["detail"]
    assert Rating.objects.count() == 0


def test_a_rater_cannot_submit_or_undo_another_raters_assignment(rater_api, other_rater, camp):
    theirs = leasing.assignment_next(campaign=camp, rater=other_rater)
    r = rater_api.post(
        reverse("api-rating-submit", args=[theirs.pk]), {"values": answer(camp), "idempotency_key": "k"}, format="json"
    )
    assert r.status_code == 404
    assert rater_api.post(reverse("api-rating-undo", args=[theirs.pk])).status_code == 404
    mine = rater_api.get(reverse("api-rating-mine", args=[camp.pk])).json()
    assert all(row["id"] != theirs.pk for row in mine)


def test_the_queue_shows_own_progress(rater_api, rater, camp):
    rate_one(camp, rater)
    rows = rater_api.get(reverse("api-rating-queue")).json()
    assert rows == [{"id": camp.pk, "name": camp.name, "done": 1, "left": 3, "paused": False}]


def test_admin_creates_a_campaign_through_the_api(admin_api, db):
    coll = factories.paraphrase_collection()
    r = admin_api.post(
        reverse("api-rating-campaign-create"),
        {"name": "api", "collection_ids": [coll.pk], "sample_size": 4, "seed": 1, "gold": ""},
        format="json",
    )
    assert r.status_code == 201, r.json()
    assert r.json()["raters_per_item"] == 5 and len(r.json()["measures"]) == 5
    bad = admin_api.post(
        reverse("api-rating-campaign-create"),
        {"name": "api2", "collection_ids": [coll.pk], "sample_size": 4, "measures": ["nope"]},
        format="json",
    )
    assert bad.status_code == 400 and "unknown measure" in bad.json()["detail"]
    assert not Campaign.objects.filter(name="api2").exists()


def test_agreement_and_csv_exports_reflect_the_ratings(admin_api, camp):
    raters = factories.users(2)
    for score, u in zip((4, 4), raters, strict=True):
        for _ in range(4):
            rate_one(camp, u, score)
    data = admin_api.get(reverse("api-rating-agreement", args=[camp.pk])).json()
    m = {row["key"]: row for row in data["measures"]}
    assert m["semantic_similarity"]["n_items"] == 4 and m["semantic_similarity"]["n_kept"] == 4
    assert data["progress"]["finished"] == 4
    raw = admin_api.get(reverse("api-rating-ratings-csv", args=[camp.pk]))
    rows = list(csv.DictReader(io.StringIO(b"".join(raw.streaming_content).decode())))
    assert len(rows) == 8 and {r["rater"] for r in rows} == {"crowd0", "crowd1"}
    labels = admin_api.get(reverse("api-rating-labels-csv", args=[camp.pk]))
    lrows = list(csv.DictReader(io.StringIO(b"".join(labels.streaming_content).decode())))
    # Two raters cannot reach "3 agree": no labels, but every item is listed with its count.
    assert len(lrows) == 4 and all(r["n_ratings"] == "2" and r["semantic_similarity"] == "" for r in lrows)


def test_pause_through_the_api_excludes_the_raters_ratings(admin_api, camp):
    (u,) = factories.users(1)
    rating = rate_one(camp, u)
    url = reverse("api-rating-rater-pause", args=[camp.pk, u.pk])
    assert admin_api.post(url, {"paused": True}, format="json").json()["paused"] is True
    assert admin_api.get(reverse("api-rating-agreement", args=[camp.pk])).json()["n_ratings"] == 0
    rating.item.refresh_from_db()
    assert rating.item.completed_count == 0
    assert admin_api.post(url, {"paused": False}, format="json").json()["paused"] is False
    assert admin_api.get(reverse("api-rating-agreement", args=[camp.pk])).json()["n_ratings"] == 1


def test_a_paused_rater_is_refused_new_items_with_the_reason(admin_api, rater_api, rater, camp):
    admin_api.post(reverse("api-rating-rater-pause", args=[camp.pk, rater.pk]), {"paused": True}, format="json")
    r = _next(rater_api, camp)
    assert r.status_code == 403 and r.json()["code"] == "paused" and "paused" in r.json()["detail"]


ADMIN_ENDPOINTS = [
    ("get", "api-rating-campaigns", False),
    ("post", "api-rating-campaign-create", False),
    ("get", "api-rating-measures", False),
    ("get", "api-rating-campaign", True),
    ("get", "api-rating-agreement", True),
    ("get", "api-rating-ratings-csv", True),
    ("get", "api-rating-labels-csv", True),
    ("get", "api-rating-release", True),
]


@pytest.mark.parametrize("method,name,with_id", ADMIN_ENDPOINTS)
def test_raters_and_assessors_cannot_reach_admin_endpoints(
    rater_api, assessor_api, anon_api, camp, method, name, with_id
):
    url = reverse(name, args=[camp.pk] if with_id else [])
    for client in (rater_api, assessor_api, anon_api):
        assert getattr(client, method)(url).status_code in (401, 403), name


def test_nobody_but_admins_can_pause_raters(rater_api, rater, camp):
    url = reverse("api-rating-rater-pause", args=[camp.pk, rater.pk])
    assert rater_api.post(url, {"paused": False}, format="json").status_code == 403


@pytest.mark.parametrize("name", ["api-rating-next", "api-rating-mine", "api-rating-queue"])
def test_assessors_and_anonymous_cannot_use_rater_endpoints(assessor_api, anon_api, camp, name):
    url = reverse(name, args=[] if name == "api-rating-queue" else [camp.pk])
    method = "post" if name == "api-rating-next" else "get"
    assert getattr(assessor_api, method)(url).status_code == 403
    assert getattr(anon_api, method)(url).status_code in (401, 403)


def test_assessors_cannot_submit_or_undo(assessor_api, camp, other_rater):
    a = leasing.assignment_next(campaign=camp, rater=other_rater)
    assert assessor_api.post(reverse("api-rating-submit", args=[a.pk]), {}, format="json").status_code == 403
    assert assessor_api.post(reverse("api-rating-undo", args=[a.pk])).status_code == 403
    assert RatingAssignment.objects.filter(rater=other_rater, status="leased").count() == 1


def test_me_is_the_cheap_authenticated_baseline(rater_api, anon_api):
    assert rater_api.get(reverse("api-rating-me")).json() == {"username": "rater1", "roles": ["rater"]}
    assert anon_api.get(reverse("api-rating-me")).status_code in (401, 403)


def test_the_release_exports_only_paraphrases_passing_the_thresholds(admin_api, db):
    coll = factories.paraphrase_collection()
    c = factories.rating_campaign(coll, size=2, n=3)
    good_text = None
    for u in factories.users(3):
        for _ in range(2):
            a = leasing.assignment_next(campaign=c, rater=u)
            s = 5 if a.item.position == 0 else 2
            if s == 5:
                good_text = a.item.context["paraphrase_manual"]
            services.rating_submit(assignment_id=a.pk, rater=u, values=answer(c, s), idempotency_key=f"{u.pk}-{a.pk}")
    r = admin_api.get(reverse("api-rating-release", args=[c.pk]), {"min_semantic_similarity": 4, "output": "csv"})
    assert r.status_code == 200, getattr(r, "data", None)
    rows = list(csv.reader(io.StringIO(b"".join(r.streaming_content).decode())))
    assert rows[0] == ["TURN_ID", "MANUAL PARAPHRASE", "RAW PARAPHRASE"]
    assert [row[1] for row in rows[1:]] == [good_text]
    j = admin_api.get(reverse("api-rating-release", args=[c.pk]), {"min_passage_relevance": 1, "output": "jsonl"})
    lines = b"".join(j.streaming_content).decode().splitlines()
    assert len(lines) == 2 and '"manual_paraphrase"' in lines[0]
    bad = admin_api.get(reverse("api-rating-release", args=[c.pk]), {"min_semantic_similarity": 9})
    assert bad.status_code == 400 and "1..5" in bad.json()["detail"]
