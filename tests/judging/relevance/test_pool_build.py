"""Pools requested from pages and the API are built by the worker: building → open, or failed with a reason."""

from unittest import mock

import pytest
from django.urls import reverse

from ecast.core import jobs
from judging.models import Pool, PoolPair
from judging.relevance import pools
from judging.relevance import selectors as sel
from tests.judging.relevance import helpers


@pytest.fixture
def inputs(small_collection):
    original = helpers.qrels(small_collection, {"1_1": {"d1": 1}})
    run = helpers.run(small_collection, "A", {"1_1": ["d1", "d2", "d3"], "1_2": ["d5"]})
    return small_collection, original, run


@pytest.mark.django_db
def test_a_started_pool_is_stored_as_building_until_the_worker_fills_it(inputs):
    coll, original, run = inputs
    with mock.patch("judging.relevance.pools.enqueue") as enqueue:
        pool = pools.pool_create_start(collection=coll, qrels_version=original, runs=[run], depth=2, turn_ids=["1_1"])
    enqueue.assert_called_once_with("judging.relevance.pool_build", pool.pk)
    assert pool.status == Pool.Status.BUILDING and not PoolPair.objects.filter(pool=pool).exists()
    # Assessors never see a pool that is still being built.
    assert pool not in sel.pools_open_for(user=helpers.assessor_user("a-build"))

    jobs.enqueue(*enqueue.call_args.args)  # the worker runs the queued task
    pool.refresh_from_db()
    assert pool.status == Pool.Status.OPEN
    assert sorted(PoolPair.objects.filter(pool=pool).values_list("passage_id", flat=True)) == ["d2"]
    # A redelivered task changes nothing.
    jobs.enqueue(*enqueue.call_args.args)
    assert PoolPair.objects.filter(pool=pool).count() == 1


@pytest.mark.django_db
def test_a_pool_that_cannot_be_built_is_marked_failed_with_the_reason(inputs):
    coll, original, run = inputs
    with mock.patch("judging.relevance.dedup.cluster", side_effect=RuntimeError("disk full")):
        with pytest.raises(RuntimeError):
            pools.pool_create_start(collection=coll, qrels_version=original, runs=[run], cluster_near_duplicates=True)
    pool = Pool.objects.get()
    assert pool.status == Pool.Status.FAILED and "disk full" in pool.error
    with pytest.raises(Exception, match="only a built pool"):
        pools.pool_set_status(pool=pool, status="open")


@pytest.mark.django_db
def test_an_invalid_request_stores_nothing_and_queues_nothing(inputs):
    coll, original, run = inputs
    with mock.patch("judging.relevance.pools.enqueue") as enqueue:
        with pytest.raises(Exception, match="depth"):
            pools.pool_create_start(collection=coll, qrels_version=original, runs=[run], depth=0)
        with pytest.raises(Exception, match="empty"):
            pools.pool_create_start(collection=coll, qrels_version=original, runs=[run], turn_ids=[])
    enqueue.assert_not_called()
    assert not Pool.objects.exists()


@pytest.mark.django_db
def test_the_pool_page_says_it_is_building_and_follows_the_build(inputs, admin_client):
    coll, original, run = inputs
    with mock.patch("judging.relevance.pools.enqueue"):
        pool = pools.pool_create_start(collection=coll, qrels_version=original, runs=[run])
    page = admin_client.get(reverse("relevance-pool", args=[pool.pk])).content.decode()
    assert "computing this pool" in page and f'data-job-progress="/jobs/pool/{pool.pk}/progress/"' in page


@pytest.mark.django_db
def test_a_pool_still_building_or_failed_offers_neither_close_nor_reopen(inputs, admin_client):
    coll, original, run = inputs
    with mock.patch("judging.relevance.pools.enqueue"):
        pool = pools.pool_create_start(collection=coll, qrels_version=original, runs=[run])
    url = reverse("relevance-pool", args=[pool.pk])
    page = admin_client.get(url).content.decode()
    assert "Reopen pool" not in page and "Close pool" not in page
    pools.pool_build_failed(pool_id=pool.pk, error="disk full")
    page = admin_client.get(url).content.decode()
    assert "could not be built: disk full" in page and "Reopen pool" not in page
