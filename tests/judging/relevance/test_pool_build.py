"""Pools requested from pages and the API are built by the worker: building → open, or failed with a reason."""

from unittest import mock

import pytest
from django.urls import reverse

from judging.models import Pool, PoolPair
from judging.relevance import services as svc
from tests.judging.relevance import helpers


@pytest.fixture
def inputs(small_collection):
    original = helpers.qrels(small_collection, {"1_1": {"d1": 1}})
    run = helpers.run(small_collection, "A", {"1_1": ["d1", "d2", "d3"], "1_2": ["d5"]})
    return small_collection, original, run


@pytest.mark.django_db
def test_a_started_pool_is_stored_as_building_until_the_worker_fills_it(inputs):
    coll, original, run = inputs
    with mock.patch("judging.relevance.tasks.pool_build_task.delay") as delay:
        pool = svc.pool_create_start(collection=coll, qrels_version=original, runs=[run], depth=2, turn_ids=["1_1"])
    delay.assert_called_once_with(pool.pk)
    assert pool.status == Pool.Status.BUILDING and not PoolPair.objects.filter(pool=pool).exists()
    # Assessors never see a pool that is still being built.
    from judging.relevance import selectors as sel

    assert pool not in sel.pools_open_for(user=helpers.assessor_user("a-build"))

    built = svc.pool_build(pool_id=pool.pk)
    assert built.status == Pool.Status.OPEN
    assert sorted(PoolPair.objects.filter(pool=pool).values_list("passage_id", flat=True)) == ["d2"]
    # A redelivered task changes nothing.
    svc.pool_build(pool_id=pool.pk)
    assert PoolPair.objects.filter(pool=pool).count() == 1


@pytest.mark.django_db
def test_a_pool_that_cannot_be_built_is_marked_failed_with_the_reason(inputs):
    coll, original, run = inputs
    with mock.patch("judging.relevance.services._pool_fill", side_effect=RuntimeError("disk full")):
        with pytest.raises(RuntimeError):
            svc.pool_create_start(collection=coll, qrels_version=original, runs=[run])
    pool = Pool.objects.get()
    assert pool.status == Pool.Status.FAILED and "disk full" in pool.error
    with pytest.raises(Exception, match="only a built pool"):
        svc.pool_set_status(pool=pool, status="open")


@pytest.mark.django_db
def test_an_invalid_request_stores_nothing_and_queues_nothing(inputs):
    coll, original, run = inputs
    with mock.patch("judging.relevance.tasks.pool_build_task.delay") as delay:
        with pytest.raises(Exception, match="depth"):
            svc.pool_create_start(collection=coll, qrels_version=original, runs=[run], depth=0)
        with pytest.raises(Exception, match="empty"):
            svc.pool_create_start(collection=coll, qrels_version=original, runs=[run], turn_ids=[])
    delay.assert_not_called()
    assert not Pool.objects.exists()


@pytest.mark.django_db
def test_the_pool_page_says_it_is_building_and_refreshes(inputs, admin_client):
    coll, original, run = inputs
    with mock.patch("judging.relevance.tasks.pool_build_task.delay"):
        pool = svc.pool_create_start(collection=coll, qrels_version=original, runs=[run])
    page = admin_client.get(reverse("relevance-pool", args=[pool.pk])).content.decode()
    assert "computing this pool" in page and 'http-equiv="refresh"' in page
