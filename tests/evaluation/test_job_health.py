"""An evaluation job whose worker died shows its last heartbeat and the retry in the job API, the JSON the runs
page polls, and the runs page's job table."""

from __future__ import annotations

import pytest

from evaluation.models import EvaluationJob
from evaluation.services import JOB_KIND
from tests import factories
from tests.job_health_helpers import (  # noqa: F401 - fresh_cache is a fixture
    assert_api_health,
    assert_page_health,
    fresh_cache,
    recovered,
    recovery_queries,
)

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_cache")]


@pytest.fixture
def running_job() -> EvaluationJob:
    coll = factories.collection(name="Eval health")
    return EvaluationJob.objects.create(
        collection=coll, kind=EvaluationJob.Kind.FULL, status=EvaluationJob.Status.RUNNING, total=5
    )


def test_evaluation_job_api_reports_last_heartbeat_and_retries_after_worker_loss(admin_api, running_job):
    beat = recovered(JOB_KIND, running_job.pk)
    assert_api_health(admin_api.get(f"/api/evaluation/jobs/{running_job.pk}/").json(), beat)


def test_evaluation_job_json_polled_by_the_runs_page_carries_the_health(admin_client, running_job):
    beat = recovered(JOB_KIND, running_job.pk)
    assert_api_health(admin_client.get(f"/evaluation/jobs/{running_job.pk}/").json(), beat)


def test_runs_page_shows_each_jobs_heartbeat_and_retries_reading_them_once(admin_client, running_job):
    for _ in range(3):
        EvaluationJob.objects.create(collection=running_job.collection, kind=EvaluationJob.Kind.FULL)
    recovered(JOB_KIND, running_job.pk)
    pages = []
    assert recovery_queries(lambda: pages.append(admin_client.get("/evaluation/runs/"))) == 1
    assert_page_health(pages[0].content.decode())
