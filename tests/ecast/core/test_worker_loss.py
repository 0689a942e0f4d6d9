"""A worker killed mid-job (SIGKILL, by its pid) loses nothing: celery beat's sweeper re-queues the job and a new
worker finishes it with exactly the outputs of an uninterrupted run. Real workers and beat, on Redis + PostgreSQL.

Figures (jobs, units, duplicates, seconds from the kill to the finished job) go to test-artifacts/worker-loss.json.
"""

from __future__ import annotations

import os
import signal
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import pytest
from django.core.files import File
from django.db import connection

from ecast.celery import app
from ecast.core import jobs
from ecast.generation import services as generation
from ecast.imports import services as imports
from ecast.imports import tasks as import_tasks
from ecast.models import GenerationJob, GenerationTurn, ImportJob, JobRecovery, Paraphrase
from evaluation.models import Run, RunTurn
from tests import factories
from tests.ecast.pipeline.conftest import t5_config
from tests.worker_helpers import db_backends, go_live, pool_child, record, wait_for

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


def big_run_file(path: Path, turns: int, depth: int) -> Path:
    with path.open("w") as fh:
        for t in range(turns):
            qid = f"{1 + t // 10}_{1 + t % 10}"
            fh.writelines(
                f"{qid} Q0 doc{(t * 7919 + r) % 50000} {r + 1} {1000 - r * 0.5:.2f} big\n" for r in range(depth)
            )
    return path


def test_a_generation_job_whose_worker_is_killed_mid_job_ends_with_the_outputs_of_an_uninterrupted_run(
    fleet, settings, tiny_t5
):
    topics = {str(i): [f"What is topic {i}?", "How does it work?", "Why is it used?", "Who made it?"] for i in range(8)}
    # Context removal by the rule: the tiny model's random texts would all fail the grammar check there.
    config = {**t5_config(tiny_t5, n=2), "cr": {"backend": "rule"}}

    def outputs(job: GenerationJob) -> Counter:
        rows = Paraphrase.objects.filter(provenance__job=job.pk)
        return Counter(rows.values_list("turn__turn_id", "provenance__stage", "text"))

    ref_coll = factories.collection_with_turns(name="Uninterrupted", year=2020, conversations=topics)
    reference = generation.generation_job_create(collection=ref_coll, config=config, seed=11, chunk_size=4)
    generation.generation_job_dispatch(job_id=reference.pk)  # inline: the uninterrupted run
    reference.refresh_from_db()
    assert reference.status == GenerationJob.Status.SUCCEEDED
    expected = Counter({(t.split("_", 1)[1], stage, text): n for (t, stage, text), n in outputs(reference).items()})
    assert {t for t, _, _ in expected} - {"1"}, "later turns must have outputs too, or the comparison proves little"

    coll = factories.collection_with_turns(name="Killed", year=2021, conversations=topics)
    job = generation.generation_job_create(collection=coll, config=config, seed=11, chunk_size=4)
    go_live(settings)
    fleet.beat()
    first = fleet.worker()
    generation.generation_job_start(job=job)
    total = job.turns.count()
    done = lambda: job.turns.filter(status=GenerationTurn.Status.DONE).count()  # noqa: E731
    killed_at, done_at_kill = fleet.kill_mid_job(first, done, total, at_least=2, before_end=8)
    job = wait_for(
        lambda: GenerationJob.objects.filter(pk=job.pk, status=GenerationJob.Status.SUCCEEDED).first(),
        timeout=180, poll=0.2, fleet=fleet, what="the killed job to finish",
    )  # fmt: skip
    recovered_s = time.monotonic() - killed_at

    got = Counter({(t.split("_", 1)[1], stage, text): n for (t, stage, text), n in outputs(job).items()})
    missing, extra = expected - got, got - expected
    assert not missing and not extra, (missing, extra)
    assert job.turns.filter(status=GenerationTurn.Status.DONE).count() == total
    losses = JobRecovery.objects.filter(kind=generation.KIND, job_id=job.pk, reason=JobRecovery.Reason.WORKER_LOST)
    assert losses.count() >= 1
    health = jobs.job_health(generation.KIND, job.pk)
    assert health["last_heartbeat"] is not None and health["worker_loss_retries"] == losses.count()
    record(
        "generation",
        {
            "turns": total,
            "chunks": -(-total // 4),
            "turns_done_at_kill": done_at_kill,
            "outputs": sum(got.values()),
            "duplicates": sum(extra.values()),
            "missing": sum(missing.values()),
            "seconds_from_kill_to_done": round(recovered_s, 1),
            "recoveries": [r["detail"] for r in health["recoveries"]],
        },
    )


def test_an_import_whose_worker_is_killed_mid_file_restarts_from_its_upload_and_writes_every_row_once(
    fleet, settings, tmp_path
):
    turns, depth = 600, 1000
    path = big_run_file(tmp_path / "big.run", turns, depth)
    options = {"create_turns": "true", "name": "big"}

    ref_coll = factories.collection(name="Uninterrupted", year=2020)
    reference = imports.import_file(kind="run", path=path, collection=ref_coll, options=options)
    assert reference.status == ImportJob.Status.SUCCEEDED, reference.errors

    def rows(coll) -> Counter:
        return Counter(
            (qid, doc)
            for qid, docs in RunTurn.objects.filter(run__collection=coll).values_list("turn__turn_id", "doc_ids")
            for doc in docs
        )

    coll = factories.collection(name="Killed", year=2021)
    go_live(settings)
    fleet.beat()
    first = fleet.worker()
    with path.open("rb") as fh:
        job = imports.import_job_start(kind="run", uploaded=File(fh, name="big.run"), collection=coll, options=options)
    wait_for(
        lambda: ImportJob.objects.filter(pk=job.pk, status=ImportJob.Status.RUNNING, progress_done__gt=0).exists(),
        timeout=120, fleet=fleet, what="the import to be under way",
    )  # fmt: skip
    os.kill(first.pid, signal.SIGKILL)
    killed_at = time.monotonic()
    first.wait(timeout=10)
    at_kill = ImportJob.objects.get(pk=job.pk)
    assert at_kill.status == ImportJob.Status.RUNNING and not Run.objects.filter(collection=coll).exists()

    fleet.worker()
    job = wait_for(
        lambda: ImportJob.objects.filter(pk=job.pk).exclude(status=ImportJob.Status.RUNNING).first(),
        timeout=180, poll=0.2, fleet=fleet, what="the killed import to finish",
    )  # fmt: skip
    recovered_s = time.monotonic() - killed_at
    assert job.status == ImportJob.Status.SUCCEEDED, job.errors
    ignore = {"run_id"}  # each import makes its own run
    assert {k: v for k, v in job.counts.items() if k not in ignore} == {
        k: v for k, v in reference.counts.items() if k not in ignore
    }
    expected, got = rows(ref_coll), rows(coll)
    assert sum(got.values()) == turns * depth
    assert got == expected and max(got.values()) == 1
    assert Run.objects.filter(collection=coll).count() == 1
    health = jobs.job_health(imports.KIND, job.pk)
    assert health["worker_loss_retries"] >= 1
    record(
        "import",
        {
            "lines": turns * depth,
            "megabytes": round(path.stat().st_size / 1e6, 1),
            "lines_read_at_kill": at_kill.progress_done,
            "rows_written": sum(got.values()),
            "duplicates": sum((got - expected).values()),
            "missing": sum((expected - got).values()),
            "seconds_from_kill_to_done": round(recovered_s, 1),
            "recoveries": [r["detail"] for r in health["recoveries"]],
        },
    )


def import_under_way(fleet, path: Path, coll) -> ImportJob:
    """Start importing the run file ``path`` into ``coll`` on the fleet and wait until its first lines are read."""
    with path.open("rb") as fh:
        job = imports.import_job_start(
            kind="run", uploaded=File(fh, name="big.run"), collection=coll, options={"create_turns": "true"}
        )
    wait_for(
        lambda: ImportJob.objects.filter(pk=job.pk, status=ImportJob.Status.RUNNING, progress_done__gt=0).exists(),
        timeout=120, fleet=fleet, what="the import to be under way",
    )  # fmt: skip
    return job


def test_a_killed_pool_process_has_its_import_redelivered_at_once_without_waiting_for_the_sweeper(
    fleet, settings, tmp_path
):
    path = big_run_file(tmp_path / "big.run", 400, 1000)
    coll = factories.collection(name="Killed child", year=2021)
    go_live(settings)
    master = fleet.prefork_worker()  # no beat: only the broker's redelivery can bring the task back
    job = import_under_way(fleet, path, coll)
    os.kill(pool_child(master.pid), signal.SIGKILL)
    killed_at = time.monotonic()
    job = wait_for(
        lambda: ImportJob.objects.filter(pk=job.pk).exclude(status=ImportJob.Status.RUNNING).first(),
        timeout=120, poll=0.2, fleet=fleet, what="the redelivered import to finish",
    )  # fmt: skip
    assert job.status == ImportJob.Status.SUCCEEDED, job.errors
    assert RunTurn.objects.filter(run__collection=coll).count() == 400
    health = jobs.job_health(imports.KIND, job.pk)
    assert [r["detail"] for r in health["recoveries"]] == [
        "its worker died while running this unit; the broker delivered it again"
    ]
    record(
        "import, pool process killed",
        {"lines": 400_000, "seconds_from_kill_to_done": round(time.monotonic() - killed_at, 1)},
    )


def test_a_killed_worker_master_is_found_dead_from_its_silence_not_after_the_stale_time(fleet, settings, tmp_path):
    # A stale time no test waits out: only the master's silent liveness beat can bring the job back in time.
    fleet.env["ECAST_JOB_STALE_SECONDS"] = "600"
    path = big_run_file(tmp_path / "big.run", 600, 1000)
    coll = factories.collection(name="Killed master", year=2021)
    go_live(settings)
    fleet.beat()
    master = fleet.prefork_worker()
    job = import_under_way(fleet, path, coll)
    os.kill(master.pid, signal.SIGKILL)  # the master only; its pool process dies with it (pdeathsig)
    killed_at, killed_wall = time.monotonic(), datetime.now(tz=UTC)
    master.wait(timeout=10)
    fleet.prefork_worker()
    job = wait_for(
        lambda: ImportJob.objects.filter(pk=job.pk).exclude(status=ImportJob.Status.RUNNING).first(),
        timeout=240, poll=0.2, fleet=fleet, what="the import of the killed master to finish",
    )  # fmt: skip
    assert job.status == ImportJob.Status.SUCCEEDED, job.errors
    assert RunTurn.objects.filter(run__collection=coll).count() == 600
    health = jobs.job_health(imports.KIND, job.pk)
    (lost,) = [r for r in health["recoveries"] if r["reason"] == JobRecovery.Reason.WORKER_LOST]
    assert f"#{master.pid} has not answered" in lost["detail"], health["recoveries"]
    record(
        "import, worker master killed",
        {
            "lines": 600_000,
            "stale_seconds": 600,
            "worker_lost_seconds": int(fleet.env["ECAST_WORKER_LOST_SECONDS"]),
            "seconds_from_kill_to_requeue": round((lost["at"] - killed_wall).total_seconds(), 1),
            "seconds_from_kill_to_done": round(time.monotonic() - killed_at, 1),
            "recoveries": [r["detail"] for r in health["recoveries"]],
        },
    )


def test_a_unit_a_worker_hands_back_at_a_clean_shutdown_is_not_reported_as_a_worker_loss(fleet, settings, tmp_path):
    upload = tmp_path / "q.txt"
    upload.write_text("1_1 0 d1 2\n1_2 0 d4 1\n")
    coll = factories.collection_with_turns(name="Clean stop", year=2021, conversations={"1": ["a?", "b?"]})
    job = ImportJob.objects.create(
        kind="qrels", collection=coll, file_name="q.txt", stored_path=str(upload), status=ImportJob.Status.QUEUED
    )
    go_live(settings)
    first = fleet.prefork_worker()
    # The countdown runs from here, once the worker answers (a loaded machine takes a while to start one).
    wait_for(lambda: app.control.inspect(timeout=1).ping(), timeout=120, fleet=fleet, what="the worker to start")
    # A worker holds a countdown message until it is due, as it does a debounced analysis.
    jobs.enqueue(import_tasks.RUN_TASK, job.pk, countdown=20)
    wait_for(
        lambda: any((app.control.inspect(timeout=1).scheduled() or {}).values()),
        timeout=60, fleet=fleet, what="the worker to hold the countdown message",
    )  # fmt: skip
    first.send_signal(signal.SIGTERM)  # a warm shutdown: it hands back the message it held, unstarted
    first.wait(timeout=60)
    held = ImportJob.objects.get(pk=job.pk)
    assert held.status == ImportJob.Status.QUEUED, (held.error, fleet.output())
    fleet.prefork_worker()
    job = wait_for(
        lambda: ImportJob.objects.filter(pk=job.pk).exclude(status=ImportJob.Status.QUEUED).exclude(
            status=ImportJob.Status.RUNNING).first(),
        timeout=120, poll=0.2, fleet=fleet, what="the handed-back import to run",
    )  # fmt: skip
    assert job.status == ImportJob.Status.SUCCEEDED, job.errors
    health = jobs.job_health(imports.KIND, job.pk)
    assert health["worker_loss_retries"] == 0
    assert [r["label"] for r in health["recoveries"]] == ["Re-queued (no worker had started it)"]
    assert "handed this unit back before starting it" in health["recoveries"][0]["detail"]


def sweep_in_worker() -> None:
    """Run one task that reads the database in the worker, and wait for it (its error, if any, is raised here)."""
    app.send_task("ecast.jobs_sweep").get(timeout=120)
    # The pool process stores the result, then ends the task (where it would close its connection); it takes the
    # next task only after that, so once a no-op task has run, the sweep's end is over too.
    app.send_task("celery.accumulate", args=(0,)).get(timeout=120)


def test_a_worker_keeps_its_database_connection_from_task_to_task_and_replaces_one_the_database_dropped(
    fleet, settings
):
    others = db_backends()
    go_live(settings)
    fleet.prefork_worker()
    sweep_in_worker()
    kept = db_backends() - others
    assert len(kept) == 1, f"the worker holds {len(kept)} connections between tasks\n{fleet.output()}"
    for _ in range(4):
        sweep_in_worker()
    assert db_backends() - others == kept, "each task opened a connection of its own"
    # The database drops the kept connection (a restart, an administrator): the next task checks it before use
    # and reconnects, instead of failing on it.
    (pid,) = kept
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_terminate_backend(%s)", [pid])
    wait_for(lambda: pid not in db_backends(), timeout=10, fleet=fleet, what="the backend to end")
    sweep_in_worker()
    replaced = db_backends() - others
    assert len(replaced) == 1 and pid not in replaced, fleet.output()
