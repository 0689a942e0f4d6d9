"""Every relevance endpoint refuses the wrong roles; assessors reach only their own assignments."""

import pytest
from django.urls import reverse

from judging.models import AssessorJudgment, PoolPair
from judging.relevance import services, versions
from tests.judging.relevance import helpers


@pytest.fixture
def setup(small_collection, assessor):
    pool, original = helpers.standard_pool(small_collection)
    derived = versions.qrels_version_derive(parent=original, pool=pool)
    mine = services.assignment_take(pool=pool, assessor=assessor)
    other_user = helpers.assessor_user("assessor2")
    theirs = services.assignment_take(pool=pool, assessor=other_user)
    pair = PoolPair.objects.filter(pool=pool, turn__conversation=theirs.conversation).first()
    services.judgment_submit(assignment=theirs, pair=pair, grade=3, assessor=other_user)
    return {"pool": pool, "version": derived, "mine": mine, "theirs": theirs, "their_pair": pair}


def admin_pages(s):
    p, v = s["pool"].pk, s["version"].pk
    return [
        ("get", reverse("relevance-admin")),
        ("get", reverse("relevance-pool", args=[p])),
        ("get", reverse("relevance-pool-pairs", args=[p])),
        ("post", reverse("relevance-pool-assign", args=[p])),
        ("post", reverse("relevance-pool-assessors", args=[p])),
        ("post", reverse("relevance-pool-derive", args=[p])),
        ("post", reverse("relevance-pool-status", args=[p])),
        ("post", reverse("relevance-pool-sync", args=[p])),
        ("post", reverse("relevance-pool-texts", args=[p])),
        ("get", reverse("relevance-version-export", args=[v])),
        ("get", reverse("relevance-version-sidecar", args=[v])),
    ]


def admin_apis(s):
    p, v = s["pool"].pk, s["version"].pk
    return [
        ("get", reverse("api-relevance-pools")),
        ("post", reverse("api-relevance-pool-create")),
        ("get", reverse("api-relevance-pool-preview")),
        ("get", reverse("api-relevance-pool", args=[p])),
        ("get", reverse("api-relevance-pool-pairs", args=[p])),
        ("post", reverse("api-relevance-version-derive")),
        ("get", reverse("api-relevance-version-export", args=[v])),
        ("get", reverse("api-relevance-version-sidecar", args=[v])),
    ]


def assessor_pages(s):
    return [
        ("get", reverse("relevance-queue")),
        ("post", reverse("relevance-take", args=[s["pool"].pk])),
        ("get", reverse("relevance-judge", args=[s["mine"].pk])),
    ]


def assessor_apis(s):
    return [
        ("get", reverse("api-relevance-assignments")),
        ("post", reverse("api-relevance-pool-take", args=[s["pool"].pk])),
        ("get", reverse("api-relevance-assignment", args=[s["mine"].pk])),
        ("post", reverse("api-relevance-judgment-submit", args=[s["mine"].pk])),
    ]


@pytest.mark.django_db
def test_assessors_and_raters_cannot_reach_admin_pages(setup, client, assessor, rater):
    for user in (assessor, rater):
        client.force_login(user)
        for method, url in admin_pages(setup):
            assert getattr(client, method)(url).status_code == 403, (user.username, url)


@pytest.mark.django_db
def test_anonymous_users_are_sent_to_log_in(setup, client):
    for method, url in admin_pages(setup) + assessor_pages(setup):
        resp = getattr(client, method)(url)
        assert resp.status_code == 302 and "/accounts/login/" in resp["Location"], url


@pytest.mark.django_db
def test_assessors_and_raters_cannot_call_admin_apis(setup, assessor_api, rater_api, anon_api):
    for api in (assessor_api, rater_api):
        for method, url in admin_apis(setup):
            assert getattr(api, method)(url).status_code == 403, url
    # Anonymous callers are asked to authenticate (token first: 401 with a WWW-Authenticate challenge).
    for method, url in admin_apis(setup):
        resp = getattr(anon_api, method)(url)
        assert resp.status_code == 401 and resp["WWW-Authenticate"].startswith("Token"), url


@pytest.mark.django_db
def test_raters_cannot_reach_assessor_pages_or_apis(setup, client, rater, rater_api, anon_api):
    client.force_login(rater)
    for method, url in assessor_pages(setup):
        assert getattr(client, method)(url).status_code == 403, url
    for method, url in assessor_apis(setup):
        assert getattr(rater_api, method)(url, {}, format="json").status_code == 403, url
        assert getattr(anon_api, method)(url, {}, format="json").status_code == 401, url  # asked to authenticate


@pytest.mark.django_db
def test_an_assessor_cannot_see_or_judge_another_assessors_topic(setup, assessor_client, assessor_api):
    theirs = setup["theirs"]
    assert assessor_client.get(reverse("relevance-judge", args=[theirs.pk])).status_code == 404
    assert assessor_api.get(reverse("api-relevance-assignment", args=[theirs.pk])).status_code == 404
    resp = assessor_api.post(
        reverse("api-relevance-judgment-submit", args=[theirs.pk]),
        {"pair": setup["their_pair"].pk, "grade": 0},
        format="json",
    )
    assert resp.status_code == 404
    listed = assessor_api.get(reverse("api-relevance-assignments")).json()
    assert [a["id"] for a in listed] == [setup["mine"].pk]
    # Their grade is nowhere in my data
    page = assessor_client.get(reverse("relevance-queue"))
    assert str(theirs.conversation.topic_id) not in [a.conversation.topic_id for a in page.context["assignments"]]
    assert AssessorJudgment.objects.get(pair=setup["their_pair"]).grade == 3


@pytest.mark.django_db
def test_an_assessor_cannot_submit_a_pair_of_another_topic_through_their_own_assignment(setup, assessor_api):
    resp = assessor_api.post(
        reverse("api-relevance-judgment-submit", args=[setup["mine"].pk]),
        {"pair": setup["their_pair"].pk, "grade": 0},
        format="json",
    )
    assert resp.status_code == 400
    assert AssessorJudgment.objects.filter(pair=setup["their_pair"]).count() == 1


@pytest.mark.django_db
def test_a_pool_restricted_to_other_assessors_is_neither_listed_nor_takeable(
    small_collection, assessor_client, assessor_api
):
    pool, _ = helpers.standard_pool(small_collection)
    pool.assessors.add(helpers.assessor_user("assessor2"))
    assert pool not in assessor_client.get(reverse("relevance-queue")).context["pools"]
    assert assessor_api.post(reverse("api-relevance-pool-take", args=[pool.pk])).status_code == 404
    assert assessor_client.post(reverse("relevance-take", args=[pool.pk])).status_code == 302
    assert not pool.assignments.exists()
