"""Topic leases, idempotent judgments, derived qrels versions written live, and the qrels_changed event."""

import pytest
from django.core.exceptions import ValidationError

from evaluation.events import qrels_version_changed
from evaluation.models import Qrel
from judging.models import AssessorJudgment, PoolPair
from judging.relevance import pools, services, versions
from tests.judging.relevance import helpers


def _heads(pool, assignment):
    return list(
        PoolPair.objects.filter(pool=pool, turn__conversation=assignment.conversation)
        .select_related("turn")
        .order_by("turn__number", "best_rank", "passage_id")
    )


@pytest.mark.django_db
def test_an_assessor_takes_one_topic_at_a_time_and_gets_their_unfinished_topic_back(small_collection, assessor):
    pool, _ = helpers.standard_pool(small_collection)
    first = services.assignment_take(pool=pool, assessor=assessor)
    assert first.conversation.topic_id == "1" and first.slot == 1
    assert services.assignment_take(pool=pool, assessor=assessor).pk == first.pk
    for pair in _heads(pool, first):
        services.judgment_submit(assignment=first, pair=pair, grade=1, assessor=assessor)
    first.refresh_from_db()
    assert first.completed_at is not None
    second = services.assignment_take(pool=pool, assessor=assessor)
    assert second.conversation.topic_id == "2"


@pytest.mark.django_db
def test_a_topic_gets_at_most_the_configured_number_of_assessors(small_collection, assessor):
    pool, _ = helpers.standard_pool(small_collection, assessors_per_pair=2)
    other = helpers.assessor_user("assessor2")
    third = helpers.assessor_user("assessor3")
    a1 = services.assignment_create(
        pool=pool, conversation=small_collection.conversations.get(topic_id="1"), assessor=assessor
    )
    a2 = services.assignment_create(pool=pool, conversation=a1.conversation, assessor=other)
    assert (a1.slot, a2.slot) == (1, 2)
    with pytest.raises(ValidationError, match="already has 2 assessor"):
        services.assignment_create(pool=pool, conversation=a1.conversation, assessor=third)
    assert services.assignment_take(pool=pool, assessor=third).conversation.topic_id == "2"


@pytest.mark.django_db
def test_only_listed_assessors_may_take_topics_of_a_restricted_pool(small_collection, assessor, rater):
    pool, _ = helpers.standard_pool(small_collection)
    other = helpers.assessor_user("assessor2")
    pool.assessors.add(other)
    with pytest.raises(ValidationError, match="not an assessor of pool"):
        services.assignment_take(pool=pool, assessor=assessor)
    with pytest.raises(ValidationError, match="Only assessors"):
        services.assignment_take(pool=pool, assessor=rater)


@pytest.mark.django_db
def test_a_repeated_submit_is_stored_once_and_a_change_keeps_history(small_collection, assessor):
    pool, _ = helpers.standard_pool(small_collection)
    a = services.assignment_take(pool=pool, assessor=assessor)
    pair = _heads(pool, a)[0]
    _, changed1 = services.judgment_submit(assignment=a, pair=pair, grade=3, assessor=assessor)
    _, changed2 = services.judgment_submit(assignment=a, pair=pair, grade=3, assessor=assessor)
    assert (changed1, changed2) == (True, False)
    assert AssessorJudgment.objects.count() == 1
    j, changed3 = services.judgment_submit(assignment=a, pair=pair, grade=1, assessor=assessor)
    assert changed3 and j.grade == 1 and [h["grade"] for h in j.history] == [3]
    assert AssessorJudgment.objects.count() == 1


@pytest.mark.django_db
def test_it_rejects_grades_and_pairs_outside_the_assessors_topic(small_collection, assessor):
    pool, _ = helpers.standard_pool(small_collection)
    a = services.assignment_take(pool=pool, assessor=assessor)
    mine = _heads(pool, a)[0]
    foreign = PoolPair.objects.get(pool=pool, passage_id="e2")  # topic 2
    with pytest.raises(ValidationError, match="not part of your topic"):
        services.judgment_submit(assignment=a, pair=foreign, grade=2, assessor=assessor)
    with pytest.raises(ValidationError, match="grade"):
        services.judgment_submit(assignment=a, pair=mine, grade=5, assessor=assessor)
    other = helpers.assessor_user("assessor2")
    with pytest.raises(ValidationError, match="not assigned to you"):
        services.judgment_submit(assignment=a, pair=mine, grade=2, assessor=other)
    assert AssessorJudgment.objects.count() == 0


@pytest.mark.django_db
def test_a_derived_version_copies_its_parent_and_receives_judgments_live(
    small_collection, assessor, django_capture_on_commit_callbacks
):
    pool, original = helpers.standard_pool(small_collection)
    derived = versions.qrels_version_derive(parent=original, pool=pool)
    assert derived.name == "original + new" and derived.parent_id == original.pk
    assert set(derived.qrels.values_list("passage_id", "grade", "source")) == {
        ("d1", 2, "imported"),
        ("e1", 0, "imported"),
    }
    events = []

    def receiver(sender, version_id, turn_ids, **kw):
        events.append((version_id, turn_ids))

    qrels_version_changed.connect(receiver)
    try:
        a = services.assignment_take(pool=pool, assessor=assessor)
        pair = PoolPair.objects.get(pool=pool, passage_id="d2")
        with django_capture_on_commit_callbacks(execute=True):
            services.judgment_submit(assignment=a, pair=pair, grade=4, assessor=assessor)
    finally:
        qrels_version_changed.disconnect(receiver)
    assert Qrel.objects.get(version=derived, passage_id="d2").grade == 4
    assert Qrel.objects.get(version=derived, passage_id="d2").source == "assessed"
    assert not Qrel.objects.filter(version=original, passage_id="d2").exists()
    assert events == [(derived.pk, [pair.turn_id])]


@pytest.mark.django_db
def test_one_judgment_covers_the_whole_near_duplicate_cluster(small_collection, assessor):
    helpers.passages(
        {
            "f1": "Garage door opener light stopped working after a storm.",
            "f2": "garage door opener light STOPPED working after a storm",
        }
    )
    pool, original = helpers.standard_pool(small_collection, cluster_near_duplicates=True)
    derived = versions.qrels_version_derive(parent=original, pool=pool, name="with clusters")
    a = services.assignment_take(pool=pool, assessor=assessor)
    head = PoolPair.objects.get(pool=pool, passage_id="f1")
    member = PoolPair.objects.get(pool=pool, passage_id="f2")
    with pytest.raises(ValidationError, match="cluster head"):
        services.judgment_submit(assignment=a, pair=member, grade=3, assessor=assessor)
    services.judgment_submit(assignment=a, pair=head, grade=3, assessor=assessor)
    assert dict(derived.qrels.filter(passage_id__in=["f1", "f2"]).values_list("passage_id", "grade")) == {
        "f1": 3,
        "f2": 3,
    }


@pytest.mark.django_db
def test_several_assessors_are_aggregated_into_the_version_with_the_pool_setting(small_collection, assessor):
    pool, original = helpers.standard_pool(small_collection, assessors_per_pair=3, aggregation="median")
    derived = versions.qrels_version_derive(parent=original, pool=pool)
    pair = PoolPair.objects.get(pool=pool, passage_id="d2")
    users = [assessor, helpers.assessor_user("assessor2"), helpers.assessor_user("assessor3")]
    for user, grade in zip(users, [4, 0, 1], strict=True):
        a = services.assignment_create(pool=pool, conversation=pair.turn.conversation, assessor=user)
        services.judgment_submit(assignment=a, pair=pair, grade=grade, assessor=user)
    assert derived.qrels.get(passage_id="d2").grade == 1  # median of 4, 0, 1
    pool.aggregation = "primary"
    pool.save()
    versions.pool_sync_to_version(pool=pool)
    assert derived.qrels.get(passage_id="d2").grade == 4


@pytest.mark.django_db
def test_judgments_made_before_the_version_existed_are_written_when_it_is_derived(small_collection, assessor):
    pool, original = helpers.standard_pool(small_collection)
    a = services.assignment_take(pool=pool, assessor=assessor)
    services.judgment_submit(
        assignment=a, pair=PoolPair.objects.get(pool=pool, passage_id="d3"), grade=2, assessor=assessor
    )
    derived = versions.qrels_version_derive(parent=original, pool=pool)
    assert derived.qrels.get(passage_id="d3").grade == 2
    with pytest.raises(ValidationError, match="already exists"):
        versions.qrels_version_derive(parent=original, pool=pool)


@pytest.mark.django_db
def test_a_closed_pool_accepts_no_judgments(small_collection, assessor):
    pool, _ = helpers.standard_pool(small_collection)
    a = services.assignment_take(pool=pool, assessor=assessor)
    pools.pool_set_status(pool=pool, status="closed")
    a.pool.refresh_from_db()
    with pytest.raises(ValidationError, match="closed"):
        services.judgment_submit(assignment=a, pair=_heads(pool, a)[0], grade=2, assessor=assessor)


@pytest.mark.django_db
def test_a_pair_pooled_twice_for_one_version_is_graded_from_all_its_judgments(small_collection, assessor):
    pool_a, original = helpers.standard_pool(small_collection, aggregation="median")
    derived = versions.qrels_version_derive(parent=original, pool=pool_a)
    run_c = helpers.run(small_collection, "C", {"1_1": ["d2"]})
    pool_b = pools.pool_create(collection=small_collection, qrels_version=original, runs=[run_c], aggregation="median")
    versions.pool_attach_version(pool=pool_b, version=derived)
    other = helpers.assessor_user("assessor2")
    third = helpers.assessor_user("assessor3")
    conv = helpers.turn(small_collection, "1_1").conversation
    for pool, user, grade in ((pool_a, assessor, 4), (pool_b, other, 0), (pool_b, third, 2)):
        if pool is pool_b:
            pool.assessors_per_pair = 2
            pool.save()
        a = services.assignment_create(pool=pool, conversation=conv, assessor=user)
        services.judgment_submit(
            assignment=a, pair=PoolPair.objects.get(pool=pool, passage_id="d2"), grade=grade, assessor=user
        )
    assert derived.qrels.get(passage_id="d2").grade == 2  # median of 4, 0, 2
