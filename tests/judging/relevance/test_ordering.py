"""The assessor queue follows the pool's judging strategy live; the pool page shows relevant found so far."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from judging.models import AssessorJudgment, PoolPair
from judging.relevance import ordering, services
from tests.judging.relevance import helpers

REL_1_1 = {"d1", "d2", "d5", "d7"}


@pytest.mark.django_db
def test_a_move_to_front_queue_hands_out_the_hand_worked_order_turn_by_turn(small_collection, assessor):
    pool = helpers.ordered_pool(small_collection, "mtf")
    a = services.assignment_take(pool=pool, assessor=assessor)
    # 1_1 (runs A, B, C): the order worked out in test_strategies (d1 d2 rel, d3 d4 d6 not, d5 d7 rel).
    # 1_2 (runs A, B; C has none): A f1 not → A −1 → B: f2 not → B −1 → A has nothing left → B: f3.
    assert helpers.judge_by_queue(a, REL_1_1, assessor) == ["d1", "d2", "d3", "d4", "d6", "d5", "d7", "f1", "f2", "f3"]
    a.refresh_from_db()
    assert a.completed_at is not None


@pytest.mark.django_db
def test_each_judgment_changes_what_comes_next(small_collection, assessor):
    pool = helpers.ordered_pool(small_collection, "mtf")
    a = services.assignment_take(pool=pool, assessor=assessor)
    d1 = PoolPair.objects.get(pool=pool, passage_id="d1")
    assert ordering.next_pair(assignment=a) == d1.pk
    services.judgment_submit(assignment=a, pair=d1, grade=2, assessor=assessor)
    assert PoolPair.objects.get(pk=ordering.next_pair(assignment=a)).passage_id == "d2"  # A keeps the turn
    # Regraded non-relevant, A loses the turn: B's top document comes next.
    services.judgment_submit(assignment=a, pair=d1, grade=0, assessor=assessor)
    assert PoolPair.objects.get(pk=ordering.next_pair(assignment=a)).passage_id == "d4"


@pytest.mark.django_db
def test_a_depth_first_pool_keeps_the_classic_order(small_collection, assessor):
    pool = helpers.ordered_pool(small_collection, "depth_first")
    assert pool.strategy == "depth_first"
    a = services.assignment_take(pool=pool, assessor=assessor)
    # turn, then best rank (1-based in the run), then id: d1 d4 d6 (rank 1) d2 d7 (2) d3 d5 (3); f1 f2, f3
    assert helpers.judge_by_queue(a, REL_1_1, assessor) == ["d1", "d4", "d6", "d2", "d7", "d3", "d5", "f1", "f2", "f3"]


@pytest.mark.django_db
def test_a_second_assessor_of_a_topic_walks_the_strategy_on_their_own_grades(small_collection, assessor):
    pool = helpers.ordered_pool(small_collection, "mtf", assessors_per_pair=2)
    other = helpers.assessor_user("assessor2")
    a1 = services.assignment_take(pool=pool, assessor=assessor)
    a2 = services.assignment_take(pool=pool, assessor=other)
    assert a1.conversation_id == a2.conversation_id
    first = helpers.judge_by_queue(a1, REL_1_1, assessor)
    # Nothing judged relevant: A d1 → B d4 → C d6 → (all −1, after C) A d2 → B d5 → C d7 → A d3; then 1_2.
    assert helpers.judge_by_queue(a2, set(), other) == ["d1", "d4", "d6", "d2", "d5", "d7", "d3", "f1", "f2", "f3"]
    assert len(first) == 10
    assert AssessorJudgment.objects.filter(pair__pool=pool).count() == 20


@pytest.mark.django_db
def test_the_judging_api_returns_the_queue_and_the_page_data_is_in_queue_order(
    small_collection, assessor, assessor_api
):
    pool = helpers.ordered_pool(small_collection, "mm_ns")
    a = services.assignment_take(pool=pool, assessor=assessor)
    items = assessor_api.get(reverse("api-relevance-assignment", args=[a.pk])).json()
    assert items["ordered"] is True and items["strategy"] == "mm_ns"
    first = items["pairs"][0]
    assert first["id"] == ordering.next_pair(assignment=a)
    resp = assessor_api.post(
        reverse("api-relevance-judgment-submit", args=[a.pk]), {"pair": first["id"], "grade": 0}, format="json"
    )
    assert resp.status_code == 200
    queue = resp.json()["queue"]
    assert first["id"] not in queue and queue[0] == ordering.next_pair(assignment=a)
    assert len(queue) == 9


@pytest.mark.django_db
def test_pools_are_created_with_a_strategy_through_the_api(small_collection, admin_api):
    original = helpers.qrels(small_collection, {"2_2": {"zz": 0}})
    run = helpers.run(small_collection, "A", {"1_1": ["d1", "d2"]})
    body = {"collection": small_collection.pk, "qrels_version": original.pk, "runs": [run.pk], "depth": 2}
    bad = admin_api.post(reverse("api-relevance-pool-create"), {**body, "strategy": "random"}, format="json")
    assert bad.status_code == 400 and "strategy" in bad.json()
    ok = admin_api.post(reverse("api-relevance-pool-create"), {**body, "strategy": "mtf"}, format="json")
    assert ok.status_code == 202 and ok.json()["strategy"] == "mtf"
    default = admin_api.post(reverse("api-relevance-pool-create"), body, format="json")
    assert default.json()["strategy"] == "depth_first" and default.json()["prior_version"] is None
    unknown = admin_api.post(
        reverse("api-relevance-pool-create"), {**body, "strategy": "mm_ns", "prior_version": 999}, format="json"
    )
    assert unknown.status_code == 400 and "prior_version" in str(unknown.json())
    seeded = admin_api.post(
        reverse("api-relevance-pool-create"),
        {**body, "strategy": "mm_ns", "prior_version": original.pk, "name": "seeded"},
        format="json",
    )
    assert seeded.status_code == 202 and seeded.json()["prior_version"] == original.name


@pytest.mark.django_db
def test_the_pool_page_shows_relevant_found_against_judgments(small_collection, assessor, admin_client):
    pool = helpers.ordered_pool(small_collection, "mtf")
    page = admin_client.get(reverse("relevance-pool", args=[pool.pk])).content.decode()
    assert "No judgments yet" in page and "Move-to-front" in page
    a = services.assignment_take(pool=pool, assessor=assessor)
    for passage, grade in (("d1", 3), ("d2", 0), ("d4", 2)):
        services.judgment_submit(
            assignment=a, pair=PoolPair.objects.get(pool=pool, passage_id=passage), grade=grade, assessor=assessor
        )
    page = admin_client.get(reverse("relevance-pool", args=[pool.pk])).content.decode()
    assert '<strong id="found-now">2</strong> relevant found in <strong id="judgments-now">3</strong>' in page
    curve = admin_client.get(reverse("api-relevance-pool", args=[pool.pk])).json()["found_curve"]
    assert [(r["judgments"], r["found"]) for r in curve["rows"]] == [(0, 0), (1, 1), (2, 1), (3, 2)]
    # A second pool of the collection, judged in another order, lists the first beside its own curve.
    other = helpers.ordered_pool(small_collection, "mm_ns", name="bandit")
    b = services.assignment_take(pool=other, assessor=assessor)
    services.judgment_submit(
        assignment=b, pair=PoolPair.objects.get(pool=other, passage_id="d1"), grade=0, assessor=assessor
    )
    page = admin_client.get(reverse("relevance-pool", args=[other.pk])).content.decode()
    assert "MM-NS bandit" in page and 'id="found-others"' in page
    assert '<td>Move-to-front (Cormack et al. 1998)</td><td class="num">3</td><td class="num">2</td>' in page


@pytest.mark.django_db
def test_a_prior_qrels_version_seeds_the_bandit(small_collection, assessor):
    prior = helpers.qrels(small_collection, {"1_1": {"d4": 3, "d5": 2}}, name="earlier labels")
    plain = helpers.ordered_pool(small_collection, "mm_ns")
    seeded = helpers.ordered_pool(small_collection, "mm_ns", prior_version=prior, name="seeded")
    # Unseeded, all arms tie at 1/2 → A (by name): d1. Seeded, B's d4 and d5 were relevant (B 2.9/3.9) → B: d4.
    first = services.assignment_take(pool=plain, assessor=assessor)
    assert PoolPair.objects.get(pk=ordering.next_pair(assignment=first)).passage_id == "d1"
    other = helpers.assessor_user("assessor2")
    second = services.assignment_take(pool=seeded, assessor=other)
    assert PoolPair.objects.get(pk=ordering.next_pair(assignment=second)).passage_id == "d4"
    with pytest.raises(ValidationError, match="only the bandit orders"):
        helpers.ordered_pool(small_collection, "mtf", prior_version=prior, name="mtf with prior")


@pytest.mark.django_db
def test_a_depth_first_pool_answers_a_grade_without_a_queue(small_collection, assessor, assessor_api):
    pool = helpers.ordered_pool(small_collection, "depth_first")
    a = services.assignment_take(pool=pool, assessor=assessor)
    first = assessor_api.get(reverse("api-relevance-assignment", args=[a.pk])).json()["pairs"][0]
    resp = assessor_api.post(
        reverse("api-relevance-judgment-submit", args=[a.pk]), {"pair": first["id"], "grade": 2}, format="json"
    )
    assert resp.status_code == 200 and resp.json()["queue"] == [] and resp.json()["progress"]["done"] == 1


@pytest.mark.django_db
def test_the_other_pools_listing_matches_each_pools_own_curve_in_one_query(
    small_collection, assessor, django_assert_num_queries
):
    shown = helpers.ordered_pool(small_collection, "mm_ns", name="shown")
    second = helpers.assessor_user("assessor2")
    others = []
    for i, (strategy, grades) in enumerate((("mtf", (3, 0, 2, 4)), ("mm", (0, 1)), ("depth_first", (2,)))):
        pool = helpers.ordered_pool(small_collection, strategy, name=f"other {i}", assessors_per_pair=2)
        for who in (assessor, second):  # two assessors: judgments count twice, a head is found once
            a = services.assignment_take(pool=pool, assessor=who)
            for grade in grades:
                pair = PoolPair.objects.get(pk=ordering.next_pair(assignment=a))
                services.judgment_submit(assignment=a, pair=pair, grade=grade, assessor=who)
        others.append(pool)
    helpers.ordered_pool(small_collection, "mtf", name="never judged")
    with django_assert_num_queries(1):  # one aggregate over every pool of the collection
        rows = ordering.collection_found_by_pool(pool=shown)
    assert [r["name"] for r in rows] == ["other 2", "other 1", "other 0"]
    for row, pool in zip(rows, reversed(others), strict=True):
        curve = ordering.pool_found_curve(pool=pool)
        assert (row["judgments"], row["found"], row["heads"], row["strategy_label"]) == (
            curve["judgments"],
            curve["found"],
            curve["heads"],
            curve["strategy_label"],
        )
    assert [(r["judgments"], r["found"]) for r in rows] == [(2, 1), (4, 1), (8, 3)]
