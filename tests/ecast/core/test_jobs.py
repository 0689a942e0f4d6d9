"""The job sweeper and the worker-side unit wrapper: silent jobs of every kind come back, live ones are left alone,
a job that keeps killing its worker fails with the reason, and a claimed job runs in one worker at a time.

Tasks run inline here (eager), so a job the sweeper re-queues is finished when the sweep returns. The real-worker
SIGKILL tests are in test_worker_loss.py.
"""

from __future__ import annotations

import os
from datetime import timedelta
from unittest import mock

import pytest
from django.core.cache import cache
from django.db import connections
from django.utils import timezone

from ecast.core import jobs
from ecast.generation import services as generation
from ecast.imports import services as imports
from ecast.models import GenerationJob, GenerationTurn, ImportJob, JobRecovery, Paraphrase
from evaluation import services as evaluation
from evaluation.models import DirtyTurn, EvaluationJob
from judging.models import Pool
from judging.relevance import pools
from tests.concurrency_helpers import require_postgres
from tests.ecast.pipeline.conftest import t5_config
from tests.evaluation import helpers as eval_helpers
from tests.judging.relevance import helpers

LATER = timedelta(hours=1)  # sweep as if an hour had passed: every heartbeat so far is stale


def stored_import(tmp_path, small_collection) -> ImportJob:
    """An import job as a dead worker leaves it: running, with its stored upload."""
    upload = tmp_path / "q.txt"
    upload.write_text("1_1 0 d1 2\n1_2 0 d4 1\n")
    return ImportJob.objects.create(
        kind="qrels",
        collection=small_collection,
        file_name="q.txt",
        stored_path=str(upload),
        status=ImportJob.Status.RUNNING,
        progress_done=1,
        progress_total=2,
    )


def sweep():
    return jobs.jobs_sweep(now=timezone.now() + LATER)


@pytest.mark.django_db
def test_a_running_import_whose_heartbeat_stopped_is_restarted_from_its_upload_and_says_so(tmp_path, small_collection):
    job = stored_import(tmp_path, small_collection)
    jobs.heartbeat_beat(imports.KIND, job.pk)

    actions = sweep()

    job.refresh_from_db()
    assert job.status == ImportJob.Status.SUCCEEDED and job.counts["qrels"] == 2
    assert [a["action"] for a in actions if a["job"] == job.pk and a["kind"] == "import"] == ["worker_lost"]
    health = jobs.job_health(imports.KIND, job.pk)
    assert health["worker_loss_retries"] == 1 and health["last_heartbeat"] is not None
    assert "restarted the import of q.txt from its stored upload" in health["recoveries"][0]["detail"]
    assert health["recoveries"][0]["label"] == "Retried after worker loss"


@pytest.mark.django_db
def test_a_job_whose_worker_still_beats_is_left_alone(tmp_path, small_collection):
    job = stored_import(tmp_path, small_collection)
    jobs.heartbeat_beat(imports.KIND, job.pk)
    assert not [a for a in jobs.jobs_sweep() if a["kind"] == "import"]
    job.refresh_from_db()
    assert job.status == ImportJob.Status.RUNNING and not JobRecovery.objects.exists()


@pytest.mark.django_db
def test_a_job_no_worker_started_waits_while_the_queue_is_busy_and_is_requeued_once_it_is_empty(
    tmp_path, small_collection
):
    job = stored_import(tmp_path, small_collection)
    ImportJob.objects.filter(pk=job.pk).update(status=ImportJob.Status.QUEUED)
    cache.delete(jobs.heartbeat_key(imports.KIND, job.pk))

    with mock.patch.object(jobs, "broker_backlog", return_value=7):
        assert not [a for a in sweep() if a["kind"] == "import"]
    with mock.patch.object(jobs, "broker_backlog", return_value=0):
        sweep()
    job.refresh_from_db()
    assert job.status == ImportJob.Status.SUCCEEDED
    assert list(JobRecovery.objects.values_list("reason", flat=True)) == [JobRecovery.Reason.REQUEUED]


@pytest.mark.django_db
def test_a_job_that_keeps_killing_its_worker_fails_with_the_reason_instead_of_looping(
    tmp_path, small_collection, settings
):
    settings.ECAST_JOB_MAX_RETRIES = 2
    job = stored_import(tmp_path, small_collection)
    jobs.heartbeat_beat(imports.KIND, job.pk)
    for _ in range(2):
        jobs.recovery_record(imports.KIND, job.pk, JobRecovery.Reason.WORKER_LOST, "earlier loss")

    with mock.patch.object(imports, "import_job_requeue") as requeue:
        sweep()
    requeue.assert_not_called()
    job.refresh_from_db()
    assert job.status == ImportJob.Status.FAILED
    assert "its worker died 3 times" in job.errors[0]["reason"] and job.errors[0]["file"] == "q.txt"
    assert JobRecovery.objects.filter(reason=JobRecovery.Reason.GAVE_UP).count() == 1
    assert not [a for a in sweep() if a["kind"] == "import"]  # a failed job is no longer watched


@pytest.mark.django_db
def test_an_import_whose_stored_upload_is_gone_fails_and_asks_for_the_file_again(tmp_path, small_collection):
    job = stored_import(tmp_path, small_collection)
    jobs.heartbeat_beat(imports.KIND, job.pk)
    os.remove(job.stored_path)
    sweep()
    job.refresh_from_db()
    assert job.status == ImportJob.Status.FAILED and "upload the file again" in job.errors[0]["reason"]


@pytest.mark.django_db
def test_a_generation_job_stranded_mid_way_finishes_its_pending_turns_and_keeps_the_finished_ones(
    small_collection, tiny_t5, django_capture_on_commit_callbacks
):
    job = generation.generation_job_create(collection=small_collection, config=t5_config(tiny_t5, n=2), seed=3)
    generation.generation_job_dispatch(job_id=job.pk)
    job.refresh_from_db()
    kept = set(job.turns.filter(position__lt=3).values_list("pk", flat=True))
    # As a dead worker leaves it: three turns were never done.
    job.turns.exclude(pk__in=kept).update(status=GenerationTurn.Status.PENDING, outputs=0)
    Paraphrase.objects.filter(provenance__job=job.pk).exclude(turn__generation_turns__pk__in=kept).delete()
    before = Paraphrase.objects.filter(provenance__job=job.pk).count()
    GenerationJob.objects.filter(pk=job.pk).update(status=GenerationJob.Status.RUNNING)
    jobs.heartbeat_beat(generation.KIND, job.pk)

    with django_capture_on_commit_callbacks(execute=True):
        sweep()

    job.refresh_from_db()
    assert job.status == GenerationJob.Status.SUCCEEDED
    assert job.turns.filter(status=GenerationTurn.Status.DONE).count() == 6
    assert Paraphrase.objects.filter(provenance__job=job.pk).count() > before
    assert "re-dispatched 3 pending turn(s) of 6" in JobRecovery.objects.get(kind="generation").detail


@pytest.mark.django_db
def test_a_pool_build_that_lost_its_worker_is_built_again(small_collection):
    original = helpers.qrels(small_collection, {"1_1": {"d1": 1}})
    run = helpers.run(small_collection, "A", {"1_1": ["d1", "d2", "d3"]})
    with mock.patch("judging.relevance.pools.enqueue"):  # the first build's message is lost
        pool = pools.pool_create_start(collection=small_collection, qrels_version=original, runs=[run], depth=3)
    jobs.heartbeat_beat(pools.KIND, pool.pk)
    sweep()
    pool.refresh_from_db()
    assert pool.status == Pool.Status.OPEN and pool.pairs.count() == 2


@pytest.mark.django_db
def test_rejudged_turns_whose_recompute_was_lost_are_recomputed(settings):
    coll, version, runs = eval_helpers.build()
    evaluation.evaluation_job_execute(job_id=evaluation.evaluation_job_create(collection=coll, kind="full").pk)
    turn = coll.turns.get(turn_id="1_1")
    (p1,) = eval_helpers.stored(run=runs["strong"], turn=turn, version=version, measure="P@1")
    assert p1.value == 1.0
    version.qrels.filter(turn=turn, passage_id="d1").update(grade=0)  # a judgment whose debounced drain was lost
    DirtyTurn.objects.create(version=version, turn=turn)
    jobs.heartbeat_beat(evaluation.RECOMPUTE_KIND, version.pk)

    sweep()

    assert not DirtyTurn.objects.exists()
    drained = EvaluationJob.objects.get(kind=EvaluationJob.Kind.TURNS)
    assert drained.status == EvaluationJob.Status.SUCCEEDED and drained.turn_ids == [turn.pk]
    assert eval_helpers.stored(run=runs["strong"], turn=turn, version=version, measure="P@1")[0].value == 0.0


@pytest.mark.django_db
def test_a_drain_that_died_after_taking_the_dirty_turns_is_finished_from_its_job_record():
    coll, version, runs = eval_helpers.build()
    turn = coll.turns.get(turn_id="1_2")
    job = EvaluationJob.objects.create(
        collection=coll,
        kind=EvaluationJob.Kind.TURNS,
        version=version,
        turn_ids=[turn.pk],
        status="running",
        progress_total=1,
    )
    jobs.heartbeat_beat(evaluation.JOB_KIND, job.pk)
    sweep()
    job.refresh_from_db()
    assert job.status == EvaluationJob.Status.SUCCEEDED
    assert eval_helpers.stored(version=version, turn=turn, run=runs["strong"])


def redelivered_run(job: ImportJob, task_id: str) -> None:
    with (
        mock.patch.object(jobs, "redelivered", return_value=True),
        mock.patch.object(jobs, "running_task_id", return_value=task_id),
    ):
        jobs.job_unit(imports.KIND, job.pk, lambda: imports.import_job_run_by_id(job_id=job.pk), claim=True)


@pytest.mark.django_db
@pytest.mark.usefixtures("fresh_cache")
def test_a_unit_redelivered_after_its_worker_died_running_it_is_recorded_as_retried_after_worker_loss(
    tmp_path, small_collection
):
    job = stored_import(tmp_path, small_collection)
    cache.set(jobs.unit_started_key("task-1"), "1")  # the first delivery started, then its worker died
    redelivered_run(job, "task-1")
    job.refresh_from_db()
    assert job.status == ImportJob.Status.SUCCEEDED
    health = jobs.job_health(imports.KIND, job.pk)
    assert health["worker_loss_retries"] == 1
    assert [r["detail"] for r in health["recoveries"]] == [
        "its worker died while running this unit; the broker delivered it again"
    ]
    assert cache.get(jobs.unit_started_key("task-1")) is None  # finished: a later redelivery would be a new story


@pytest.mark.django_db
@pytest.mark.usefixtures("fresh_cache")
def test_a_unit_a_stopping_worker_handed_back_unstarted_is_not_called_a_worker_loss(tmp_path, small_collection):
    job = stored_import(tmp_path, small_collection)
    redelivered_run(job, "task-2")  # a clean shutdown returned it before it began (e.g. a countdown task it held)
    job.refresh_from_db()
    assert job.status == ImportJob.Status.SUCCEEDED
    health = jobs.job_health(imports.KIND, job.pk)
    assert health["worker_loss_retries"] == 0
    assert [(r["reason"], r["label"]) for r in health["recoveries"]] == [
        (JobRecovery.Reason.REQUEUED, "Re-queued (no worker had started it)")
    ]
    assert "handed this unit back before starting it" in health["recoveries"][0]["detail"]


@pytest.mark.django_db
def test_only_one_sweep_runs_at_a_time():
    cache.add("ecast:jobs-sweep", "1", timeout=30)
    try:
        with mock.patch.object(jobs, "sweep_once") as once:
            assert jobs.jobs_sweep() == []
        once.assert_not_called()
    finally:
        cache.delete("ecast:jobs-sweep")


@pytest.mark.django_db(transaction=True)
def test_a_claimed_job_running_in_another_worker_is_not_run_twice_and_is_free_once_that_worker_is_gone():
    require_postgres("the claim is a PostgreSQL advisory lock; the SQLite setup runs one worker")
    other = connections.create_connection("default")  # another worker's database session
    try:
        with other.cursor() as cursor:
            cursor.execute("SELECT pg_try_advisory_lock(%s, %s)", [jobs.advisory_key("import"), 424242])
        ran = []
        assert jobs.job_unit("import", 424242, lambda: ran.append(1), claim=True) is None
        assert ran == []
    finally:
        other.close()  # the worker dies: the database drops its lock
    assert jobs.job_unit("import", 424242, lambda: "ran", claim=True) == "ran"
