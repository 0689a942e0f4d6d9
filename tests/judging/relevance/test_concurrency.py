"""On PostgreSQL, simultaneous duplicate submits and simultaneous topic takes never double anything."""

from __future__ import annotations

import pytest

from evaluation import adjudication as strategies
from judging.models import AssessorAssignment, AssessorJudgment, PoolPair
from judging.relevance import services, versions
from tests.concurrency_helpers import in_threads, require_postgres
from tests.judging.relevance import helpers


@pytest.mark.django_db(transaction=True)
def test_simultaneous_duplicate_submits_store_one_judgment(small_collection, assessor):
    require_postgres("row-lock concurrency is exercised on PostgreSQL (SQLite serialises every writer)")
    pool, original = helpers.standard_pool(small_collection)
    derived = versions.qrels_version_derive(parent=original, pool=pool)
    a = services.assignment_take(pool=pool, assessor=assessor)
    pair = PoolPair.objects.get(pool=pool, passage_id="d2")
    changed: list[bool] = []

    def submit(_: int) -> None:
        _, did_change = services.judgment_submit(assignment=a, pair=pair, grade=3, assessor=assessor)
        changed.append(did_change)

    assert in_threads(6, submit) == []
    assert AssessorJudgment.objects.filter(pair=pair).count() == 1
    assert sorted(changed) == [False] * 5 + [True]
    assert derived.qrels.get(passage_id="d2").grade == 3


@pytest.mark.django_db(transaction=True)
def test_simultaneous_takes_never_give_a_topic_more_assessors_than_asked(small_collection):
    require_postgres("row-lock concurrency is exercised on PostgreSQL (SQLite serialises every writer)")
    pool, _ = helpers.standard_pool(small_collection, assessors_per_pair=2)
    users = [helpers.assessor_user(f"assessor{i}") for i in range(2, 8)]

    def take(i: int) -> None:
        try:
            services.assignment_take(pool=pool, assessor=users[i])
        except Exception as exc:  # "every topic already has its assessors" is the expected answer for some
            if "already has its assessors" not in str(exc):
                raise

    assert in_threads(len(users), take) == []
    per_topic = {}
    for conv_id in AssessorAssignment.objects.values_list("conversation_id", flat=True):
        per_topic[conv_id] = per_topic.get(conv_id, 0) + 1
    assert sorted(per_topic.values()) == [2, 2]
    assert AssessorAssignment.objects.values("assessor").distinct().count() == 4


@pytest.mark.django_db(transaction=True)
def test_assessors_judging_a_move_to_front_pool_at_once_each_get_the_strategys_order(small_collection):
    require_postgres("row-lock concurrency is exercised on PostgreSQL (SQLite serialises every writer)")
    pool = helpers.ordered_pool(small_collection, "mtf", assessors_per_pair=2)
    users = [helpers.assessor_user(f"assessor{i}") for i in range(4)]
    # Each assessor has their own view of relevance, so their queues differ and interleave in the database.
    relevant = [{"d1", "d2", "d5", "f2", "e1"}, set(), {"d4", "d6", "d7", "f1", "f3", "e2", "e4"}, {"d3", "e3"}]
    seen: dict[int, tuple[str, list[str]]] = {}

    def work(i: int) -> None:
        a = services.assignment_take(pool=pool, assessor=users[i])
        seen[i] = (a.conversation.topic_id, helpers.judge_by_queue(a, relevant[i], users[i]))

    assert in_threads(len(users), work) == []
    assert sorted(topic for topic, _ in seen.values()) == ["1", "1", "2", "2"]
    for i, (topic, order) in seen.items():
        turns = ["1_1", "1_2"] if topic == "1" else ["2_1"]
        expected = []
        for t in turns:
            runs = {name: r[t] for name, r in helpers.ORDERED_RUNS.items() if t in r}
            expected += strategies.judging_order("mtf", runs, relevant[i])
        assert order == expected, (users[i].username, topic)
        assert AssessorJudgment.objects.filter(assessor=users[i]).count() == len(expected)
    assert AssessorAssignment.objects.filter(pool=pool, completed_at__isnull=False).count() == 4
