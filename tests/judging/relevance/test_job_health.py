"""A pool build whose worker died shows its last heartbeat and the retry on the pool page and in the pool API."""

from __future__ import annotations

import pytest

from judging.models import Pool
from judging.relevance.pools import KIND
from tests import factories
from tests.job_health_helpers import (  # noqa: F401 - fresh_cache is a fixture
    assert_api_health,
    assert_no_health,
    assert_page_health,
    fresh_cache,
    recovered,
    recovery_queries,
)

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_cache")]


@pytest.fixture
def building_pool() -> Pool:
    coll = factories.collection(name="Pool health")
    return Pool.objects.create(
        collection=coll, name="p", qrels_version=factories.qrels_version(coll), status=Pool.Status.BUILDING
    )


def test_pool_api_reports_last_heartbeat_and_retries_after_worker_loss(admin_api, building_pool):
    beat = recovered(KIND, building_pool.pk)
    assert_api_health(admin_api.get(f"/api/judging/relevance/pools/{building_pool.pk}/").json(), beat)


def test_pool_list_reads_every_pools_health_in_one_query(admin_api, building_pool):
    other = Pool.objects.create(
        collection=building_pool.collection, name="q", qrels_version=building_pool.qrels_version
    )
    beat = recovered(KIND, building_pool.pk)
    responses = []
    assert recovery_queries(lambda: responses.append(admin_api.get("/api/judging/relevance/pools/"))) == 1
    by_id = {row["id"]: row for row in responses[0].json()}
    assert_api_health(by_id[building_pool.pk], beat)
    assert_no_health(by_id[other.pk])


def test_pool_page_shows_last_heartbeat_and_retries(admin_client, building_pool):
    recovered(KIND, building_pool.pk)
    html = admin_client.get(f"/judging/relevance/admin/pools/{building_pool.pk}/").content.decode()
    assert "computing this pool" in html
    assert_page_health(html)
