"""On PostgreSQL, simultaneous duplicate submits and simultaneous topic takes never double anything."""

from __future__ import annotations

import os
import threading

import pytest
from django.db import connection, connections

from judging.models import AssessorAssignment, AssessorJudgment, PoolPair
from judging.relevance import services, versions
from tests.judging.relevance import helpers


def _require_postgres() -> None:
    if connection.vendor != "postgresql":
        if os.environ.get("CI"):
            pytest.fail("CI must run this test on PostgreSQL")
        pytest.skip("row-lock concurrency is exercised on PostgreSQL (SQLite serialises every writer)")


def _in_threads(n: int, fn) -> list[BaseException]:
    errors: list[BaseException] = []
    barrier = threading.Barrier(n)

    def work(i: int) -> None:
        try:
            barrier.wait()
            fn(i)
        except BaseException as exc:  # collected and re-raised by the test
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=work, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return errors


@pytest.mark.django_db(transaction=True)
def test_simultaneous_duplicate_submits_store_one_judgment(small_collection, assessor):
    _require_postgres()
    pool, original = helpers.standard_pool(small_collection)
    derived = versions.qrels_version_derive(parent=original, pool=pool)
    a = services.assignment_take(pool=pool, assessor=assessor)
    pair = PoolPair.objects.get(pool=pool, passage_id="d2")
    changed: list[bool] = []

    def submit(_: int) -> None:
        _, did_change = services.judgment_submit(assignment=a, pair=pair, grade=3, assessor=assessor)
        changed.append(did_change)

    assert _in_threads(6, submit) == []
    assert AssessorJudgment.objects.filter(pair=pair).count() == 1
    assert sorted(changed) == [False] * 5 + [True]
    assert derived.qrels.get(passage_id="d2").grade == 3


@pytest.mark.django_db(transaction=True)
def test_simultaneous_takes_never_give_a_topic_more_assessors_than_asked(small_collection):
    _require_postgres()
    pool, _ = helpers.standard_pool(small_collection, assessors_per_pair=2)
    users = [helpers.assessor_user(f"assessor{i}") for i in range(2, 8)]

    def take(i: int) -> None:
        try:
            services.assignment_take(pool=pool, assessor=users[i])
        except Exception as exc:  # "every topic already has its assessors" is the expected answer for some
            if "already has its assessors" not in str(exc):
                raise

    assert _in_threads(len(users), take) == []
    per_topic = {}
    for conv_id in AssessorAssignment.objects.values_list("conversation_id", flat=True):
        per_topic[conv_id] = per_topic.get(conv_id, 0) + 1
    assert sorted(per_topic.values()) == [2, 2]
    assert AssessorAssignment.objects.values("assessor").distinct().count() == 4
