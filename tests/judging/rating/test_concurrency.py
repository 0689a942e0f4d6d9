"""Many raters at once on PostgreSQL: no item above N, no duplicate (item, rater), no lost or doubled rating."""

from __future__ import annotations

import threading
import uuid

import pytest
from django.db import connections

from judging.models import Rating, RatingAssignment
from judging.rating import leasing, services
from tests import factories
from tests.concurrency_helpers import require_postgres
from tests.judging.rating.helpers import answer


@pytest.mark.django_db(transaction=True)
def test_concurrent_raters_never_overfill_items_or_duplicate_ratings():
    require_postgres("row-lock concurrency is exercised on PostgreSQL (SQLite serialises every writer)")
    coll = factories.paraphrase_collection(topics=3, turns=4)
    c = factories.rating_campaign(coll, size=12, n=3)
    raters = factories.users(16)
    errors: list[BaseException] = []
    submitted: list[int] = []
    lock = threading.Lock()
    barrier = threading.Barrier(len(raters))

    def work(user):
        try:
            barrier.wait()
            for _ in range(12):
                a = leasing.assignment_next(campaign=c, rater=user)
                if a is None:
                    break
                key = uuid.uuid4().hex
                # A double click: the same submission twice; it must be stored once.
                for _ in range(2):
                    rating, created = services.rating_submit(
                        assignment_id=a.pk, rater=user, values=answer(c), idempotency_key=key
                    )
                    if created:
                        with lock:
                            submitted.append(rating.pk)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=work, args=(u,)) for u in raters]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors
    assert len(submitted) == len(set(submitted)) == Rating.objects.filter(campaign=c).count() == 36
    for item in c.items.all():
        assert item.completed_count == item.ratings.count() == 3
    pairs = list(RatingAssignment.objects.filter(campaign=c).values_list("item_id", "rater_id"))
    assert len(pairs) == len(set(pairs))


@pytest.mark.django_db(transaction=True)
def test_simultaneous_retries_of_one_submission_store_one_rating():
    require_postgres("row-lock concurrency is exercised on PostgreSQL (SQLite serialises every writer)")
    c = factories.rating_campaign(factories.paraphrase_collection(), size=2, n=2)
    (user,) = factories.users(1)
    a = leasing.assignment_next(campaign=c, rater=user)
    barrier = threading.Barrier(8)
    results: list = []
    errors: list[BaseException] = []

    def submit():
        try:
            barrier.wait()
            results.append(
                services.rating_submit(assignment_id=a.pk, rater=user, values=answer(c), idempotency_key="same")
            )
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=submit) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not errors, errors
    assert len({r.pk for r, _ in results}) == 1 and sum(created for _, created in results) == 1
    assert Rating.objects.count() == 1 and c.items.get(pk=a.item_id).completed_count == 1
