"""Relevance API and pages: pool creation, taking topics, idempotent submits, derived versions."""

from pathlib import Path
from unittest import mock

import pytest
from django.urls import reverse

from ecast.imports.services import import_file
from ecast.models import Collection
from judging.models import AssessorJudgment, Pool, PoolPair
from judging.relevance import pools, services
from tests.judging.relevance import helpers


@pytest.fixture
def pool(small_collection):
    pool, _ = helpers.standard_pool(small_collection)
    return pool


@pytest.mark.django_db
def test_an_admin_creates_a_pool_through_the_api(small_collection, admin_api):
    original = helpers.qrels(small_collection, {"1_1": {"d1": 1}})
    run = helpers.run(small_collection, "A", {"1_1": ["d1", "d2", "d3", "d4"]})
    resp = admin_api.post(
        reverse("api-relevance-pool-create"),
        {"collection": small_collection.pk, "qrels_version": original.pk, "runs": [run.pk], "depth": 3},
        format="json",
    )
    assert resp.status_code == 202, resp.content
    body = resp.json()
    assert body["status"] == "open"  # tasks run eagerly in tests: the worker has already built it
    assert body["stats"]["pairs"] == 2 and body["runs"] == ["A"] and body["depth"] == 3
    detail = admin_api.get(reverse("api-relevance-pool", args=[body["id"]])).json()
    assert detail["topics"][0]["topic_id"] == "1" and detail["judgments"]["judgments"] == 0
    bad = admin_api.post(
        reverse("api-relevance-pool-create"),
        {"collection": small_collection.pk, "qrels_version": original.pk, "runs": [run.pk], "turn_ids": ["7_7"]},
        format="json",
    )
    assert bad.status_code == 400 and "unknown" in bad.json()["detail"]


@pytest.mark.django_db
def test_a_double_submit_through_the_api_is_stored_once(pool, assessor_api):
    taken = assessor_api.post(reverse("api-relevance-pool-take", args=[pool.pk])).json()
    items = assessor_api.get(reverse("api-relevance-assignment", args=[taken["id"]])).json()
    pair_id = items["pairs"][0]["id"]
    url = reverse("api-relevance-judgment-submit", args=[taken["id"]])
    first = assessor_api.post(url, {"pair": pair_id, "grade": 2}, format="json")
    second = assessor_api.post(url, {"pair": pair_id, "grade": 2}, format="json")
    assert first.status_code == second.status_code == 200
    assert first.json()["changed"] is True and second.json()["changed"] is False
    assert AssessorJudgment.objects.filter(pair_id=pair_id).count() == 1
    assert second.json()["progress"] == {"done": 1, "total": len(items["pairs"])}
    assert assessor_api.post(url, {"pair": pair_id, "grade": 7}, format="json").status_code == 400


@pytest.mark.django_db
def test_the_items_show_the_conversation_rewrite_and_passage_text(small_collection, assessor_api):
    helpers.passages({"d2": "Throat cancer is treatable when found early."})
    pool, _ = helpers.standard_pool(small_collection)
    taken = assessor_api.post(reverse("api-relevance-pool-take", args=[pool.pk])).json()
    items = assessor_api.get(reverse("api-relevance-assignment", args=[taken["id"]])).json()
    assert [t["turn_id"] for t in items["turns"]] == ["1_1", "1_2", "1_3"]
    first = items["pairs"][0]
    assert first["turn_id"] == "1_1" and first["passage_id"] == "d2"
    assert first["text"] == "Throat cancer is treatable when found early." and first["grade"] is None


@pytest.mark.django_db
def test_an_assessor_takes_a_topic_from_the_queue_page_and_sees_the_judging_page(pool, assessor_client):
    queue = assessor_client.get(reverse("relevance-queue"))
    assert queue.status_code == 200 and pool.name in queue.content.decode()
    resp = assessor_client.post(reverse("relevance-take", args=[pool.pk]))
    assert resp.status_code == 302
    page = assessor_client.get(resp["Location"])
    html = page.content.decode()
    assert page.status_code == 200
    assert "Fully meets" in html and "Fails to meet" in html and "relevance-data" in html


@pytest.mark.django_db
def test_an_admin_creates_a_pool_and_a_derived_version_from_the_pages(small_collection, admin_client, assessor):
    original = helpers.qrels(small_collection, {"1_1": {"d1": 1}})
    run = helpers.run(small_collection, "A", {"1_1": ["d1", "d2"], "2_1": ["e1"]})
    page = admin_client.get(reverse("relevance-admin"))
    assert page.status_code == 200 and "New pool" in page.content.decode()
    resp = admin_client.post(
        reverse("relevance-admin"),
        {
            "collection": small_collection.pk,
            "qrels_version": original.pk,
            "runs": [run.pk],
            "depth": 3,
            "cluster_threshold": 0.9,
            "assessors_per_pair": 1,
            "aggregation": "majority",
            "name": "My pool",
        },
    )
    assert resp.status_code == 302, resp.content.decode()[:2000]
    pool = Pool.objects.get(name="My pool")
    assert PoolPair.objects.filter(pool=pool).count() == 2
    detail = admin_client.get(reverse("relevance-pool", args=[pool.pk]))
    assert detail.status_code == 200 and "Pool statistics" in detail.content.decode()
    admin_client.post(reverse("relevance-pool-derive", args=[pool.pk]), {"parent": original.pk, "name": ""})
    pool.refresh_from_db()
    assert pool.target_version.name == "original + new"
    conv = small_collection.conversations.get(topic_id="2")
    admin_client.post(
        reverse("relevance-pool-assign", args=[pool.pk]), {"conversation": conv.pk, "assessor": assessor.pk}
    )
    assert pool.assignments.get().assessor == assessor
    admin_client.post(reverse("relevance-pool-sync", args=[pool.pk]), {"aggregation": "median"})
    pool.refresh_from_db()
    assert pool.aggregation == "median"


@pytest.mark.django_db
def test_resyncing_a_pool_that_feeds_no_version_is_refused_and_queues_nothing(pool, admin_client):
    with mock.patch("judging.relevance.versions.enqueue") as enqueue:
        resp = admin_client.post(reverse("relevance-pool-sync", args=[pool.pk]), {"aggregation": "median"}, follow=True)
    assert "feeds no qrels version" in resp.content.decode()
    enqueue.assert_not_called()


@pytest.mark.django_db
def test_nav_shows_the_judging_links_by_role(admin_client, client, assessor):
    assert "Pools &amp; qrels" in admin_client.get("/").content.decode()
    client.force_login(assessor)
    assert "My judging queue" in client.get("/").content.decode()


@pytest.mark.django_db
def test_the_openapi_schema_covers_the_relevance_api_without_warnings(capsys):
    from drf_spectacular.generators import SchemaGenerator

    schema = SchemaGenerator().get_schema(request=None, public=True)
    paths = [p for p in schema["paths"] if p.startswith("/api/judging/relevance/")]
    assert len(paths) == 15  # with pools/preview/ and the three adjudication endpoints
    err = capsys.readouterr().err
    assert "relevance_apis" not in err and "Pool" not in err and "Assignment" not in err
    assert "adjudication" not in err.lower()


@pytest.mark.django_db
def test_the_pairs_page_and_api_show_every_assessors_grade_and_filter_disagreements(
    small_collection, admin_client, admin_api, assessor
):
    pool, _ = helpers.standard_pool(small_collection, assessors_per_pair=2)
    other = helpers.assessor_user("assessor2")
    d2 = PoolPair.objects.get(pool=pool, passage_id="d2")
    d3 = PoolPair.objects.get(pool=pool, passage_id="d3")
    for user, g2, g3 in ((assessor, 4, 1), (other, 2, 1)):
        a = services.assignment_create(pool=pool, conversation=d2.turn.conversation, assessor=user)
        services.judgment_submit(assignment=a, pair=d2, grade=g2, assessor=user)
        services.judgment_submit(assignment=a, pair=d3, grade=g3, assessor=user)
    body = admin_api.get(reverse("api-relevance-pool-pairs", args=[pool.pk]), {"only": "disagreements"}).json()
    assert body["count"] == 1
    row = body["results"][0]
    assert row["passage_id"] == "d2" and row["aggregated"] == 2  # majority tie 4 vs 2 → lowest
    assert row["judgments"] == [{"assessor": "assessor1", "grade": 4}, {"assessor": "assessor2", "grade": 2}]
    unjudged = admin_api.get(
        reverse("api-relevance-pool-pairs", args=[pool.pk]), {"only": "unjudged", "turn": "1_1"}
    ).json()
    assert [r["passage_id"] for r in unjudged["results"]] == ["d4"]
    page = admin_client.get(reverse("relevance-pool-pairs", args=[pool.pk]), {"only": "judged"})
    assert page.status_code == 200 and "assessor2: <strong>2</strong>" in page.content.decode()


@pytest.mark.django_db
def test_assessors_judge_an_ikat_topic_beside_the_users_ptkb(shared_data, assessor_client, assessor_api):
    job = import_file(kind="ikat_topics", path=shared_data / "ikat/2023/2023_train_topics.json")
    coll = job.collection
    helpers.passages({"clueweb22-en0034-09-03452:1": "Computer science universities in the Netherlands."})
    original = helpers.qrels(coll, {"1-1_1": {"clueweb22-en0016-21-09213:0": 1}})
    ranked = ["clueweb22-en0034-09-03452:1", "clueweb22-en0016-21-09213:0", "clueweb22-en0041-44-05546:3"]
    run = helpers.run(coll, "A", {"1-1_3": ranked})
    pool = pools.pool_create(collection=coll, qrels_version=original, runs=[run], depth=3)
    taken = assessor_api.post(reverse("api-relevance-pool-take", args=[pool.pk])).json()
    items = assessor_api.get(reverse("api-relevance-assignment", args=[taken["id"]])).json()
    statements = coll.conversations.get(topic_id="1-1").ptkb.order_by("number")
    assert items["ptkb"] == [{"number": s.number, "text": s.text} for s in statements]
    assert {t["turn_id"]: t["ptkb_provenance"] for t in items["turns"]}["1-1_3"] == [5, 2]
    html = assessor_client.get(reverse("relevance-judge", args=[taken["id"]])).content.decode()
    assert "Personal knowledge (PTKB)" in html and 'id="ptkb-list"' in html
    assert '<li value="5" data-number="5">I have a bachelor&#x27;s degree in computer science.</li>' in html


@pytest.mark.django_db
def test_assessors_see_a_clef_ehealth_narrative_as_the_task_description(assessor_client, assessor_api):
    narratives = Path(__file__).parents[2] / "ecast/imports/data/clef_ehealth_2021/topics_narrative.txt"
    coll = Collection.objects.create(name="CLEF eHealth 2021", year=2021)
    import_file(kind="clef_queries", path=narratives, collection=coll)
    helpers.passages({"doc-a": "Nausea after meals is common with POTS.", "doc-b": "Ehlers-Danlos syndrome."})
    original = helpers.qrels(coll, {"109": {"doc-z": 0}})
    run = helpers.run(coll, "A", {"109": ["doc-a", "doc-b"]})
    pool = pools.pool_create(collection=coll, qrels_version=original, runs=[run], depth=3)
    taken = assessor_api.post(reverse("api-relevance-pool-take", args=[pool.pk])).json()
    html = assessor_client.get(reverse("relevance-judge", args=[taken["id"]])).content.decode()
    assert "<h2>Task description</h2>" in html
    assert (
        '<p id="task-description">i’ve been diagnosed w ehlers danlos syndrome &amp; POTS but recently i’ve been '
        "experiencing really bad nausea &amp; stomach pain after i eat."
    ) in html
