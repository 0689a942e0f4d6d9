"""A job queued again starts a fresh heartbeat epoch: the sweeper reads an old run's heartbeat as "waiting in the
queue", never as "lost", and counts worker losses since the job was last queued (analyses re-queued by a judgment
after a quiet spell were recorded as lost, then failed as "its worker died 6 times", while healthy)."""

from __future__ import annotations

import os
import time
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
    assert action["detail"].startswith("waited 4") and "with no worker starting it" in action["detail"]
    (recovery,) = JobRecovery.objects.all()
    assert recovery.reason == JobRecovery.Reason.REQUEUED
    assert recovery.last_heartbeat is None  # the 349 s old beat was the last run's, not this one's


def test_an_analysis_queued_again_shows_no_progress_of_its_last_run(computed_long_ago):
    PivotAnalysis.objects.filter(pk=computed_long_ago.pk).update(progress_done=13, progress_total=14)
    toolkit.analysis_mark_pending(kind="pivots", analysis_id=computed_long_ago.pk)
    computed_long_ago.refresh_from_db()
    assert (computed_long_ago.status, computed_long_ago.progress_done, computed_long_ago.progress_total) == (
        "queued",
        0,
        0,
    )


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


# ---------------------------------------------------------------- what pages and the API say about the current run


def test_a_job_queued_again_shows_no_heartbeat_and_no_losses_of_its_earlier_runs(computed_long_ago):
    JobRecovery.objects.create(kind=KIND, job_id=computed_long_ago.pk, reason=JobRecovery.Reason.WORKER_LOST)
    JobRecovery.objects.filter(kind=KIND).update(created_at=datetime.now(tz=UTC) - timedelta(hours=1))
    before = jobs.job_health(KIND, computed_long_ago.pk)
    assert before["last_heartbeat"] is not None and before["worker_loss_retries"] == 1

    toolkit.analysis_mark_pending(kind="pivots", analysis_id=computed_long_ago.pk)
    queued = jobs.job_health(KIND, computed_long_ago.pk)
    # Waiting for a worker: the 349 s old beat belongs to the last run, and so does its loss …
    assert queued["last_heartbeat"] is None and queued["worker_loss_retries"] == 0
    assert len(queued["recoveries"]) == 1  # … which the history still lists

    jobs.heartbeat_beat(KIND, computed_long_ago.pk)
    assert jobs.job_health(KIND, computed_long_ago.pk)["last_heartbeat"] is not None


# ---------------------------------------------------------------- a dead worker master is known within seconds

MASTER = "long@host#4242"


@pytest.fixture
def running_on_master(settings, computed_long_ago) -> PivotAnalysis:
    """The analysis runs on MASTER: its heartbeat names it, and both beat now."""
    settings.ECAST_WORKER_LOST_SECONDS = 15
    toolkit.analysis_mark_pending(kind="pivots", analysis_id=computed_long_ago.pk)
    jobs.heartbeat_beat(KIND, computed_long_ago.pk, MASTER)
    jobs.worker_beat(MASTER)
    return computed_long_ago


def test_a_job_whose_worker_master_went_silent_is_requeued_after_the_short_loss_time(running_on_master):
    assert sweep(after_s=10) == []  # three missed beats of a 5 s heartbeat are not yet a death
    (action,) = sweep(after_s=16)
    assert action["action"] == JobRecovery.Reason.WORKER_LOST
    assert f"its worker {MASTER} has not answered since" in action["detail"]


def test_a_master_that_stopped_cleanly_is_known_gone_at_once(running_on_master):
    cache.delete(jobs.worker_key(MASTER))  # what WorkerLiveness.close does at shutdown
    (action,) = sweep(after_s=16)
    assert f"its worker {MASTER} has not answered and it stopped" in action["detail"]


def test_a_long_quiet_job_on_a_live_master_waits_out_the_stale_time(running_on_master):
    # The pool process is busy (a long C call): the master still beats, so the job is not taken for lost …
    with mock.patch.object(jobs, "worker_seen", return_value=datetime.now(tz=UTC) + timedelta(seconds=200)):
        assert sweep(after_s=60) == []
        # … until the usual stale time has passed (a wedged pool process).
        (action,) = sweep(after_s=121)
    assert action["action"] == JobRecovery.Reason.WORKER_LOST and "has not answered" not in action["detail"]


def test_after_a_master_is_found_dead_its_requeued_job_is_not_counted_lost_again_while_it_waits(running_on_master):
    (first,) = sweep(after_s=16)
    # The re-queued unit waits behind others; sweeps every few seconds must not pile up losses (and give up).
    assert sweep(after_s=16 + 20) == []
    assert sweep(after_s=16 + 60) == []
    assert JobRecovery.objects.filter(kind=KIND, reason=JobRecovery.Reason.WORKER_LOST).count() == 1


def test_a_worker_master_beats_while_it_runs_and_removes_its_key_when_it_stops(settings):
    settings.ECAST_JOB_HEARTBEAT_SECONDS = 0.2
    liveness = jobs.WorkerLiveness("default@host")
    assert liveness.worker == f"default@host#{os.getpid()}"
    liveness.start()
    try:
        first = jobs.worker_seen(liveness.worker)
        assert first is not None
        deadline = time.monotonic() + 30
        while jobs.worker_seen(liveness.worker) == first and time.monotonic() < deadline:
            time.sleep(0.05)
        assert jobs.worker_seen(liveness.worker) > first
    finally:
        liveness.close()
    assert jobs.worker_seen(liveness.worker) is None


def test_outside_a_worker_a_heartbeat_names_no_worker():
    assert jobs.worker_identity() == ""
