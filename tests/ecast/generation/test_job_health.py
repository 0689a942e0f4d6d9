"""A generation job whose worker died shows its last heartbeat and the retry on its page, its polled JSON and the
API; the job list reads the health of the whole page at once."""

from __future__ import annotations

import pytest

from ecast.generation.services import KIND
from ecast.models import GenerationJob
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
def running_job() -> GenerationJob:
    coll = factories.collection(name="Gen health")
    return GenerationJob.objects.create(collection=coll, name="g", status=GenerationJob.Status.RUNNING)


def test_generation_api_reports_last_heartbeat_and_retries_after_worker_loss(admin_api, running_job):
    beat = recovered(KIND, running_job.pk)
    assert_api_health(admin_api.get(f"/api/generation/jobs/{running_job.pk}/").json(), beat)


def test_generation_job_list_reads_every_jobs_health_in_one_query(admin_api, running_job):
    others = [GenerationJob.objects.create(collection=running_job.collection, name=f"o{i}") for i in range(3)]
    beat = recovered(KIND, running_job.pk)
    responses = []
    assert recovery_queries(lambda: responses.append(admin_api.get("/api/generation/jobs/"))) == 1
    by_id = {row["id"]: row for row in responses[0].json()}
    assert_api_health(by_id[running_job.pk], beat)
    for job in others:
        assert_no_health(by_id[job.pk])


def test_generation_page_shows_last_heartbeat_and_retries(admin_client, running_job):
    recovered(KIND, running_job.pk)
    assert_page_health(admin_client.get(f"/generation/jobs/{running_job.pk}/").content.decode())


def test_generation_progress_json_polled_by_the_page_carries_the_health(admin_client, running_job):
    beat = recovered(KIND, running_job.pk)
    data = admin_client.get(f"/generation/jobs/{running_job.pk}/progress/").json()
    assert data["status"] == "running"
    assert_api_health(data, beat)
