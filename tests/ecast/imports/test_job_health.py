"""An import whose worker died shows its last heartbeat and the retry on its page, its polled JSON and the API."""

from __future__ import annotations

import pytest

from ecast.imports.services import KIND
from ecast.models import ImportJob
from tests.job_health_helpers import (  # noqa: F401 - fresh_cache is a fixture
    assert_api_health,
    assert_no_health,
    assert_page_health,
    fresh_cache,
    recovered,
)

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_cache")]


@pytest.fixture
def running_import() -> ImportJob:
    return ImportJob.objects.create(kind="cast_topics", file_name="topics.json", status=ImportJob.Status.RUNNING)


def test_import_api_reports_last_heartbeat_and_retries_after_worker_loss(admin_api, running_import):
    beat = recovered(KIND, running_import.pk)
    data = admin_api.get(f"/api/imports/{running_import.pk}/").json()
    assert_api_health(data, beat)


def test_import_api_of_a_job_never_recovered_has_empty_health(admin_api, running_import):
    assert_no_health(admin_api.get(f"/api/imports/{running_import.pk}/").json())


def test_import_page_shows_last_heartbeat_and_retries(admin_client, running_import):
    recovered(KIND, running_import.pk)
    assert_page_health(admin_client.get(f"/imports/{running_import.pk}/").content.decode())


def test_import_progress_json_polled_by_the_page_carries_the_health(admin_client, running_import):
    beat = recovered(KIND, running_import.pk)
    assert_api_health(admin_client.get(f"/imports/{running_import.pk}/progress.json").json(), beat)


def test_running_import_shows_its_heartbeat_before_any_loss(admin_client, running_import):
    html = admin_client.get(f"/imports/{running_import.pk}/").content.decode()
    assert "Last heartbeat:" in html and "none yet" in html
    assert "Retried after worker loss" not in html


def test_finished_import_never_recovered_shows_no_health(admin_client, running_import):
    running_import.status = ImportJob.Status.SUCCEEDED
    running_import.save()
    assert "Last heartbeat" not in admin_client.get(f"/imports/{running_import.pk}/").content.decode()
