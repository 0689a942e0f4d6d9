"""A job queued again starts a fresh heartbeat epoch: the sweeper reads an old run's heartbeat as "waiting in the
queue", never as "lost", and counts worker losses since the job was last queued (analyses re-queued by a judgment
after a quiet spell were recorded as lost, then failed as "its worker died 6 times", while healthy)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from unittest import mock

import pytest
from django.core.cache import cache

from ecast.core import jobs
from ecast.models import JobRecovery
from evaluation.analyses.services import toolkit
from evaluation.models import PivotAnalysis
from tests import factories

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_cache")]
KIND = "analysis-pivots"


@pytest.fixture
def computed_long_ago(settings) -> PivotAnalysis:
    settings.ECAST_JOB_STALE_SECONDS = 120
    settings.ECAST_JOB_MAX_RETRIES = 5
    coll = factories.collection(name="Epochs")
    analysis = PivotAnalysis.objects.create(collection=coll, name="pv", status="succeeded")
    PivotAnalysis.objects.filter(pk=analysis.pk).update(created_at=datetime.now(tz=UTC) - timedelta(hours=2))
    # Its last run beat 349 s ago; then it was quiet.
    cache.set(jobs.heartbeat_key(KIND, analysis.pk), (datetime.now(tz=UTC) - timedelta(seconds=349)).timestamp())
    return analysis


def sweep(after_s: float, backlog: int = 0) -> list[dict]:
    # The re-queue itself is not run: the test reads what the sweeper decided and recorded.
    with (
        mock.patch.object(jobs, "broker_backlog", return_value=backlog),
        mock.patch("evaluation.analyses.services.common.enqueue"),
    ):
        return [a for a in jobs.sweep_once(now=datetime.now(tz=UTC) + timedelta(seconds=after_s)) if a["kind"] == KIND]


def test_an_analysis_queued_again_after_a_quiet_spell_is_not_taken_for_lost(computed_long_ago):
    toolkit.analysis_mark_pending(kind="pivots", analysis_id=computed_long_ago.pk)  # a judgment re-queued it
    assert sweep(after_s=21) == []
    assert not JobRecovery.objects.exists()


def test_a_job_waiting_in_the_queue_longer_than_the_stale_time_waits_while_the_queue_is_busy(computed_long_ago):
    toolkit.analysis_mark_pending(kind="pivots", analysis_id=computed_long_ago.pk)
    assert sweep(after_s=400, backlog=3) == []
    (action,) = sweep(after_s=400, backlog=0)
    # Re-queued because nothing was waiting before it, and said so: no worker was lost.
    assert action["action"] == JobRecovery.Reason.REQUEUED
    assert list(JobRecovery.objects.values_list("reason", flat=True)) == [JobRecovery.Reason.REQUEUED]


def test_a_job_that_beat_in_this_run_and_went_silent_is_still_retried_after_worker_loss(computed_long_ago):
    toolkit.analysis_mark_pending(kind="pivots", analysis_id=computed_long_ago.pk)
    jobs.heartbeat_beat(KIND, computed_long_ago.pk)  # this run started, then its worker died
    (action,) = sweep(after_s=400)
    assert action["action"] == JobRecovery.Reason.WORKER_LOST


def test_losses_before_the_job_was_queued_again_do_not_make_the_sweeper_give_up(computed_long_ago):
    for _ in range(5):  # an earlier run's losses
        JobRecovery.objects.create(kind=KIND, job_id=computed_long_ago.pk, reason=JobRecovery.Reason.WORKER_LOST)
    JobRecovery.objects.filter(kind=KIND).update(created_at=datetime.now(tz=UTC) - timedelta(hours=1))
    toolkit.analysis_mark_pending(kind="pivots", analysis_id=computed_long_ago.pk)
    jobs.heartbeat_beat(KIND, computed_long_ago.pk)
    (action,) = sweep(after_s=400)
    assert action["action"] == JobRecovery.Reason.WORKER_LOST  # retried, not "failed after repeated worker loss"
    computed_long_ago.refresh_from_db()
    assert computed_long_ago.status == "queued"
