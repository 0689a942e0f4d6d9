"""An analysis whose worker died shows its last heartbeat and the retry on its page, its polled status JSON and the
API; each analysis kind is its own job kind."""

from __future__ import annotations

import pytest

from evaluation.analyses.services.common import analysis_job_kind
from evaluation.models import AnalysisStatus, MetaEvaluation, PivotAnalysis
from tests import factories
from tests.job_health_helpers import (  # noqa: F401 - fresh_cache is a fixture
    assert_api_health,
    assert_no_health,
    assert_page_health,
    fresh_cache,
    recovered,
)

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_cache")]


@pytest.fixture
def running_pivots() -> PivotAnalysis:
    coll = factories.collection(name="Analysis health")
    return PivotAnalysis.objects.create(collection=coll, name="pv", status=AnalysisStatus.RUNNING, progress_total=10)


def test_analysis_api_reports_last_heartbeat_and_retries_after_worker_loss(admin_api, running_pivots):
    beat = recovered(analysis_job_kind("pivots"), running_pivots.pk)
    assert_api_health(admin_api.get(f"/api/analyses/pivots/{running_pivots.pk}/").json(), beat)


def test_analysis_health_is_read_under_its_own_kind(admin_api, running_pivots):
    # Same id, other kind of analysis: the meta-evaluation's retry is not the pivot analysis'.
    meta = MetaEvaluation.objects.create(pk=running_pivots.pk, collection=running_pivots.collection, name="m")
    beat = recovered(analysis_job_kind("metaeval"), meta.pk)
    assert_api_health(admin_api.get(f"/api/analyses/metaeval/{meta.pk}/").json(), beat)
    assert_no_health(admin_api.get(f"/api/analyses/pivots/{running_pivots.pk}/").json())


def test_analysis_page_shows_last_heartbeat_and_retries(admin_client, running_pivots):
    recovered(analysis_job_kind("pivots"), running_pivots.pk)
    assert_page_health(admin_client.get(f"/evaluation/analyses/pivots/{running_pivots.pk}/").content.decode())


def test_analysis_status_json_polled_by_the_page_carries_the_health(admin_client, running_pivots):
    beat = recovered(analysis_job_kind("pivots"), running_pivots.pk)
    data = admin_client.get(f"/evaluation/analyses/pivots/{running_pivots.pk}/status/").json()
    assert data["status"] == "running"
    assert_api_health(data, beat)
