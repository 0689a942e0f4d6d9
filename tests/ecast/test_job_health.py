"""Job health reads: many jobs' heartbeats and recoveries in one go, equal to reading them one by one."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from ecast.core import jobs
from ecast.core.rest import job_health_data
from ecast.selectors import job_health, jobs_health
from ecast.templatetags.job_health import heartbeat_age
from tests.job_health_helpers import assert_api_health, assert_no_health, fresh_cache, recovered  # noqa: F401

pytestmark = pytest.mark.usefixtures("fresh_cache")


@pytest.mark.django_db
def test_jobs_health_reads_a_page_of_jobs_with_one_query_and_matches_reading_them_one_by_one(
    django_assert_num_queries,
):
    recovered("import", 7)
    jobs.heartbeat_beat("import", 8)
    with django_assert_num_queries(1):
        health = jobs_health("import", [7, 8, 9, 7])
    assert list(health) == [7, 8, 9]
    for job_id in (7, 8, 9):
        assert health[job_id] == job_health("import", job_id)
    assert health[7]["worker_loss_retries"] == 1 and len(health[7]["recoveries"]) == 2
    assert health[8]["last_heartbeat"] is not None and health[8]["recoveries"] == []
    assert health[9] == {"last_heartbeat": None, "worker_loss_retries": 0, "recoveries": []}


@pytest.mark.django_db
def test_jobs_health_keeps_kinds_apart():
    recovered("generation", 3)
    assert jobs_health("import", [3])[3]["recoveries"] == []
    assert jobs_health("generation", [3])[3]["worker_loss_retries"] == 1


@pytest.mark.django_db
def test_jobs_health_of_no_jobs_reads_nothing(django_assert_num_queries):
    with django_assert_num_queries(0):
        assert jobs_health("import", []) == {}


@pytest.mark.django_db
def test_job_health_data_is_the_api_shape_with_iso_datetimes():
    beat = recovered("pool", 4)
    assert_api_health(job_health_data("pool", 4), beat)
    assert_no_health(job_health_data("pool", 5))


def test_heartbeat_age_counts_seconds_while_recent_then_coarser_units():
    now = timezone.now()
    assert heartbeat_age(None) == ""
    assert heartbeat_age(now - timedelta(seconds=12)) == "12 s ago"
    assert heartbeat_age(now - timedelta(minutes=4)) == "4 min ago"
    assert heartbeat_age(now - timedelta(hours=3)) == "3 h ago"
    assert heartbeat_age(now - timedelta(days=2)) == "2 d ago"
