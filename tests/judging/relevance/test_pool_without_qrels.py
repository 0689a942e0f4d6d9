"""Pools for a collection with topics and runs but no qrels (CAsT 2022, iKAT straight after import): the first pool
creates an empty "judged here" version, its pairs are judgeable and their grades land in the version it feeds."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from evaluation.models import Qrel, QrelsVersion
from judging.models import Pool, PoolPair
from judging.relevance import pools
from tests import factories
from tests.judging.relevance import helpers

pytestmark = pytest.mark.django_db

RANKINGS = {"1_1": ["d1", "d2", "d3", "d4"], "2_1": ["e1", "e2"]}


def _post_pool(admin_client, coll, run, **extra):
    return admin_client.post(
        reverse("relevance-admin"),
        {
            "collection": coll.pk,
            "qrels_version": "",
            "runs": [run.pk],
            "depth": 3,
            "feed_version": "on",
            "cluster_threshold": 0.9,
            "assessors_per_pair": 1,
            "aggregation": "majority",
            "name": "First pool",
            **extra,
        },
    )


def test_the_pool_form_offers_a_collection_without_qrels_and_says_what_pooling_creates(small_collection, admin_client):
    helpers.run(small_collection, "A", RANKINGS)
    html = admin_client.get(reverse("relevance-admin"), {"collection": small_collection.pk}).content.decode()
    assert 'id="pool-form"' in html
    assert f"{small_collection.name} has no qrels version yet" in html
    assert "creates an empty “judged here” version" in html
    assert '<option value="" selected>judged here (new, empty)</option>' in html


def test_a_pool_on_a_collection_without_qrels_is_judged_into_the_version_it_feeds(
    small_collection, admin_client, assessor_api
):
    run = helpers.run(small_collection, "A", RANKINGS)
    resp = _post_pool(admin_client, small_collection, run)
    assert resp.status_code == 302, resp.content.decode()[:3000]
    pool = Pool.objects.get(name="First pool")
    base = QrelsVersion.objects.get(collection=small_collection, name="judged here")
    assert pool.qrels_version == base and not base.qrels.exists() and base.parent is None
    assert pool.status == Pool.Status.OPEN  # tasks run eagerly in tests
    assert pool.target_version.name == "judged here + First pool" and pool.target_version.parent == base
    # Nothing was judged before: every top-3 passage is pooled.
    assert PoolPair.objects.filter(pool=pool).count() == 5

    taken = assessor_api.post(reverse("api-relevance-pool-take", args=[pool.pk])).json()
    items = assessor_api.get(reverse("api-relevance-assignment", args=[taken["id"]])).json()
    pair = items["pairs"][0]
    url = reverse("api-relevance-judgment-submit", args=[taken["id"]])
    assert assessor_api.post(url, {"pair": pair["id"], "grade": 3}, format="json").status_code == 200
    stored = Qrel.objects.get(version=pool.target_version)
    assert (stored.turn.turn_id, stored.passage_id, stored.grade) == (pair["turn_id"], pair["passage_id"], 3)
    assert stored.source == Qrel.Source.ASSESSED and not base.qrels.exists()


def test_a_second_pool_chooses_among_the_versions_the_first_one_made(small_collection, admin_client):
    run = helpers.run(small_collection, "A", RANKINGS)
    pools.pool_create(collection=small_collection, qrels_version=None, runs=[run], name="First", feed_version=True)
    html = admin_client.get(reverse("relevance-admin"), {"collection": small_collection.pk}).content.decode()
    assert "has no qrels version yet" not in html
    assert ">judged here</option>" in html and ">judged here + First</option>" in html
    with pytest.raises(ValidationError, match="qrels_version: choose"):
        pools.pool_create(collection=small_collection, qrels_version=None, runs=[run], name="Second")
    assert Pool.objects.count() == 1 and QrelsVersion.objects.filter(collection=small_collection).count() == 2


def test_a_pool_without_a_version_is_refused_where_the_collection_has_qrels(small_collection, admin_client):
    helpers.qrels(small_collection, {"1_1": {"d1": 2}})
    run = helpers.run(small_collection, "A", RANKINGS)
    resp = _post_pool(admin_client, small_collection, run)
    assert resp.status_code == 200
    assert "This field is required." in resp.content.decode()
    assert not Pool.objects.exists() and not QrelsVersion.objects.filter(name="judged here").exists()


def test_collections_without_runs_are_listed_with_the_reason_and_not_offered(small_collection, admin_client):
    other = factories.collection_with_turns(name="Runless", year=2022, conversations={"1": ["a"]})
    html = admin_client.get(reverse("relevance-admin")).content.decode()
    assert 'id="no-runs"' in html and "Import runs" in html and "Runless" in html
    assert 'id="pool-form"' not in html
    helpers.run(small_collection, "A", RANKINGS)
    html = admin_client.get(reverse("relevance-admin"), {"collection": other.pk}).content.decode()
    assert f'<option value="{other.pk}" disabled>Runless — no runs yet: import runs first</option>' in html
    assert f'data-collection="{small_collection.pk}"' in html  # the form is for the collection that has runs


def test_the_api_pools_and_previews_a_collection_without_qrels(small_collection, admin_api):
    run = helpers.run(small_collection, "A", RANKINGS)
    preview = admin_api.get(
        reverse("api-relevance-pool-preview"), {"collection": small_collection.pk, "runs": [run.pk]}
    )
    assert preview.status_code == 200, preview.content
    assert preview.json()["pairs"] == 5 and preview.json()["already_judged_skipped"] == 0
    assert not QrelsVersion.objects.exists()  # a preview stores nothing
    resp = admin_api.post(
        reverse("api-relevance-pool-create"), {"collection": small_collection.pk, "runs": [run.pk]}, format="json"
    )
    assert resp.status_code == 202, resp.content
    assert resp.json()["qrels_version"] == "judged here" and resp.json()["stats"]["pairs"] == 5
    again = admin_api.post(
        reverse("api-relevance-pool-create"), {"collection": small_collection.pk, "runs": [run.pk]}, format="json"
    )
    assert again.status_code == 400 and "qrels_version" in again.json()["detail"]


def test_a_cast_2022_tree_is_pooled_and_judged_straight_after_its_topics_and_a_run_are_imported(
    shared_data, admin_client, assessor_api
):
    from ecast.models import Turn
    from tests.ecast.imports.conftest import ok

    coll = ok("cast2022_topics", shared_data / "cast/2022/2022_evaluation_topics_tree_v1.0.json").collection
    users = list(
        Turn.objects.filter(collection=coll, participant="User").order_by("pk").values_list("turn_id", flat=True)[:3]
    )
    run = helpers.run(coll, "team-run", {t: [f"{t}-p{i}" for i in range(3)] for t in users})
    assert not QrelsVersion.objects.filter(collection=coll).exists()
    assert _post_pool(admin_client, coll, run).status_code == 302
    pool = Pool.objects.get(name="First pool", collection=coll)
    assert pool.qrels_version.name == "judged here" and PoolPair.objects.filter(pool=pool).count() == 9
    taken = assessor_api.post(reverse("api-relevance-pool-take", args=[pool.pk])).json()
    pair = assessor_api.get(reverse("api-relevance-assignment", args=[taken["id"]])).json()["pairs"][0]
    url = reverse("api-relevance-judgment-submit", args=[taken["id"]])
    assert assessor_api.post(url, {"pair": pair["id"], "grade": 2}, format="json").status_code == 200
    assert Qrel.objects.filter(version=pool.target_version, passage_id=pair["passage_id"], grade=2).exists()
