"""Evaluation jobs: a run under every version, a full recompute fanned out in parts over the workers, or the turns
a drain took; the writer lock every writer of a version's scores takes."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from functools import partial
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from ecast.core.jobs import enqueue, exclusive, reraise_transient
from ecast.core.models import ACTIVE_STATUSES
from ecast.models import Collection
from evaluation.models import (
    EvaluationJob,
    QrelsVersion,
    Run,
)
from evaluation.scoring import scores_write
from evaluation.services.scores import leaderboard_snapshot_create, scores_recompute_turns, version_needs_full_compute

log = logging.getLogger(__name__)

# Job kinds the heartbeat and the sweeper know (ecast.core.jobs), and the tasks they queue.
JOB_KIND = "evaluation"  # evaluation jobs, by job id
RECOMPUTE_KIND = "recompute"  # a version's pending dirty turns, by version id
JOB_TASK = "evaluation.evaluation_job_run"
DRAIN_TASK = "evaluation.dirty_turns_drain"
PART_TASK = "evaluation.scores_part_compute"  # one part of a fanned-out full recompute

PART_LOCK = "evaluation-part"
# Held by a drain of a version (exclusive) and by the parts of its full recompute (shared).
DRAIN_LOCK = "evaluation-drain"
# How long a part waits for a drain of its version to finish before it queues itself again (drains take a turn's
# worth of work, well under a second; a part takes a whole worker's share of a recompute).
PART_WAIT_S = 30.0
# A drain that finds another drain of the same version computing tries again this soon (the marks wait for it).
DRAIN_RETRY_S = 0.5


@contextmanager
def version_writer(
    version_id: int, task: str, *args: Any, wait: float | None = None, shared: bool = False
) -> Iterator[bool]:
    """The version's writer lock, which every writer of its scores takes (drains and run or turns jobs alone, the
    parts of a full recompute together, ``shared``): yields False when another writer still holds it after ``wait``
    seconds, having queued ``task(*args)`` again in ``DRAIN_RETRY_S`` so the work is not lost."""
    # PART_WAIT_S is read at each call, not bound as a default, so a setting or a test can change it.
    with exclusive(DRAIN_LOCK, version_id, wait=PART_WAIT_S if wait is None else wait, shared=shared) as free:
        if not free:
            enqueue(task, *args, countdown=DRAIN_RETRY_S)
        yield free


def enqueue_job(job: EvaluationJob) -> None:
    """Queue ``job`` for the worker once the caller's transaction commits."""
    transaction.on_commit(lambda: enqueue(JOB_TASK, job.pk))


@transaction.atomic
def evaluation_job_create(
    *, collection: Collection, kind: str, run: Run | None = None, user: Any = None, start: bool = True
) -> EvaluationJob:
    """Create an evaluation job (a run under all versions, or a full recompute) and queue it for the worker."""
    if kind not in (EvaluationJob.Kind.RUN, EvaluationJob.Kind.FULL):
        raise ValidationError(f"kind: must be 'run' or 'full', got {kind!r}")
    if kind == EvaluationJob.Kind.RUN:
        if run is None:
            raise ValidationError("run: required for a run evaluation")
        if run.collection_id != collection.pk:
            raise ValidationError(f"run: {run.name!r} belongs to another collection")
        # Upload + run_created event both ask for it: one queued job is enough. A job already running may have
        # read the rankings a re-import just replaced, so it does not count.
        pending = EvaluationJob.objects.filter(run=run, kind=kind, status=EvaluationJob.Status.QUEUED).first()
        if pending is not None:
            return pending
    versions = QrelsVersion.objects.filter(collection=collection).count()
    runs = 1 if kind == EvaluationJob.Kind.RUN else Run.objects.filter(collection=collection).count()
    job = EvaluationJob(
        collection=collection,
        kind=kind,
        run=run,
        progress_total=versions * runs if kind == EvaluationJob.Kind.FULL else versions,
        created_by=user if getattr(user, "is_authenticated", False) else None,
    )
    job.full_clean()
    job.save()
    if start and not (kind == EvaluationJob.Kind.FULL and _parts_start(job, at_commit=True)):
        enqueue_job(job)
    return job


def _parts_start(job: EvaluationJob, *, at_commit: bool = False) -> bool:
    """Fan a full recompute out: a part task per version and share of the runs, so several workers share it and
    the part that finishes last ends the job and takes the snapshots. ``at_commit``: queued once the caller's
    transaction commits, straight from job creation rather than by a job task of its own, so the workers start on
    the scores at once. False when there is no run."""
    run_ids = list(Run.objects.filter(collection_id=job.collection_id).order_by("pk").values_list("pk", flat=True))
    version_ids = list(
        QrelsVersion.objects.filter(collection_id=job.collection_id).order_by("pk").values_list("pk", flat=True)
    )
    parts = [(v, chunk) for v in version_ids for chunk in _split(run_ids, settings.ECAST_RECOMPUTE_PARTS)]
    if not parts:
        return False
    EvaluationJob.objects.filter(pk=job.pk).update(
        status=EvaluationJob.Status.RUNNING,
        progress_done=0,
        progress_total=len(parts),
        parts_done=[],
        started_at=timezone.now(),
    )
    job.status, job.progress_done, job.progress_total, job.parts_done = EvaluationJob.Status.RUNNING, 0, len(parts), []
    for version_id, chunk in parts:
        if at_commit:
            transaction.on_commit(partial(enqueue, PART_TASK, job.pk, version_id, chunk))
        else:
            enqueue(PART_TASK, job.pk, version_id, chunk)
    return True


def _progress(job: EvaluationJob) -> Callable[[int], None]:
    def step(n: int) -> None:
        job.progress_done += n
        EvaluationJob.objects.filter(pk=job.pk).update(progress_done=job.progress_done)

    return step


def evaluation_job_execute(*, job_id: int) -> EvaluationJob:
    """Run a job to completion, recording progress; failures are stored on the job, not raised.

    Every kind recomputes from the job's own record (a run, the whole collection, or the turns a drain took), and
    scores are upserts, so a job restarted after its worker died recomputes the same values.
    """
    job = EvaluationJob.objects.select_related("collection", "run", "version").get(pk=job_id)
    if job.status in (EvaluationJob.Status.SUCCEEDED, EvaluationJob.Status.FAILED):
        return job
    EvaluationJob.objects.filter(pk=job.pk).update(
        status=EvaluationJob.Status.RUNNING, progress_done=0, started_at=timezone.now()
    )
    job.progress_done = 0
    step = _progress(job)
    try:
        versions = list(QrelsVersion.objects.filter(collection=job.collection).select_related("collection"))
        if job.kind == EvaluationJob.Kind.RUN and job.run is not None:
            # Versions made after the job was queued (the demo's "original + new") are evaluated too: count them,
            # or the page reads "2/1".
            EvaluationJob.objects.filter(pk=job.pk).update(progress_total=len(versions))
            for v in versions:
                # Alone on the version, like a drain: a drain or a full recompute's part writes this run's rows too.
                with version_writer(v.pk, JOB_TASK, job.pk) as free:
                    if not free:
                        return job
                    scores_write(version=v, run_ids=[job.run.pk])
                leaderboard_snapshot_create(version=v, trigger=f"run {job.run.name} evaluated")
                step(1)
        elif job.kind == EvaluationJob.Kind.FULL:
            # Queued again by the sweeper, or created without starting: fan out as a started job does.
            if _parts_start(job):
                job.refresh_from_db()
                return job
            for v in versions:
                leaderboard_snapshot_create(version=v, trigger="full recompute")
        elif job.kind == EvaluationJob.Kind.TURNS and job.version is not None:
            # A drain holds this lock already (the same session takes it again); a TURNS job the sweeper queued
            # again after its worker died must take it as the drain did.
            with version_writer(job.version.pk, JOB_TASK, job.pk) as free:
                if not free:
                    return job
                _turns_recompute(job=job)
            step(1)
        elif job.kind == EvaluationJob.Kind.MEASURES and job.version is not None:
            # Every run rescored with the version's measures, now including the requested ones; alone on the
            # version like a drain, whose rows carry the requested measures too from the moment they were asked for.
            with version_writer(job.version.pk, JOB_TASK, job.pk) as free:
                if not free:
                    return job
                version = QrelsVersion.objects.select_related("collection").get(pk=job.version.pk)
                run_ids = list(Run.objects.filter(collection_id=version.collection_id).values_list("pk", flat=True))
                EvaluationJob.objects.filter(pk=job.pk).update(progress_total=len(run_ids))
                scores_write(version=version, run_ids=run_ids, progress=step)
        status, error = EvaluationJob.Status.SUCCEEDED, ""
    except Exception as exc:  # noqa: BLE001 - the job page shows what went wrong
        reraise_transient(exc)  # a lost connection or a deadlock: job_unit runs the job again
        log.exception("evaluation job %s failed", job.pk)
        status, error = EvaluationJob.Status.FAILED, f"{type(exc).__name__}: {exc}"
    EvaluationJob.objects.filter(pk=job.pk).update(status=status, error=error, finished_at=timezone.now())
    job.refresh_from_db()
    return job


def _split(items: list[int], parts: int) -> list[list[int]]:
    """``items`` in at most ``parts`` contiguous chunks of near-equal size (none empty)."""
    n = min(parts, len(items))
    return [items[i * len(items) // n : (i + 1) * len(items) // n] for i in range(n)]


def scores_part_compute(*, job_id: int, version_id: int, run_ids: Sequence[int]) -> EvaluationJob | None:
    """One part of a fanned-out full recompute: some runs under one version; the last part to finish ends the job.

    A part is rewritten whole in one transaction per run, so a part run twice (redelivered after its worker died,
    or queued again by the sweeper) writes the same rows; its lock keeps two copies from writing at once."""
    job = EvaluationJob.objects.filter(pk=job_id).first()
    version = QrelsVersion.objects.select_related("collection").filter(pk=version_id).first()
    if job is None or version is None or job.status in (EvaluationJob.Status.SUCCEEDED, EvaluationJob.Status.FAILED):
        return job
    try:
        with exclusive(f"{PART_LOCK}-{version_id}", int(run_ids[0]) if run_ids else 0, wait=600) as mine:
            if not mine:
                # Another live copy of this part is writing it and will count it done: writing too would race it.
                return job
            # The parts of one version run side by side (they write disjoint runs), but never beside a drain of
            # the version: both delete and insert the same rows and would collide on TurnScores' unique constraint.
            with version_writer(version_id, PART_TASK, job_id, version_id, list(run_ids), shared=True) as free:
                if not free:
                    return job
                existing = list(Run.objects.filter(pk__in=list(run_ids)).values_list("pk", flat=True))
                scores_write(version=version, run_ids=existing)
    except Exception as exc:  # noqa: BLE001 - the job page shows what went wrong
        reraise_transient(exc)  # a lost connection or a deadlock: job_unit runs the part again
        log.exception("evaluation job %s part failed", job_id)
        evaluation_job_fail(job_id=job_id, reason=f"{type(exc).__name__}: {exc}")
        return EvaluationJob.objects.get(pk=job_id)
    with transaction.atomic():
        locked = EvaluationJob.objects.select_for_update().get(pk=job_id)
        if locked.status != EvaluationJob.Status.RUNNING:
            return locked
        locked.parts_done = sorted({*locked.parts_done, f"{version_id}:{run_ids[0] if run_ids else 0}"})
        locked.progress_done = len(locked.parts_done)
        if locked.progress_done >= locked.progress_total:
            for v in QrelsVersion.objects.filter(collection_id=locked.collection_id).select_related("collection"):
                leaderboard_snapshot_create(version=v, trigger="full recompute")
            locked.status, locked.finished_at = EvaluationJob.Status.SUCCEEDED, timezone.now()
        locked.save(update_fields=["parts_done", "progress_done", "status", "finished_at"])
    return locked


def _turns_recompute(*, job: EvaluationJob) -> None:
    version = job.version
    assert version is not None
    if version_needs_full_compute(version=version):
        run_ids = list(Run.objects.filter(collection_id=version.collection_id).values_list("pk", flat=True))
        scores_write(version=version, run_ids=run_ids)
    else:
        scores_recompute_turns(version=version, turn_pks=list(job.turn_ids))
    leaderboard_snapshot_create(version=version, trigger=f"{len(job.turn_ids)} turn(s) re-judged")


def evaluation_job_fail(*, job_id: int, reason: str) -> None:
    EvaluationJob.objects.filter(pk=job_id, status__in=ACTIVE_STATUSES).update(
        status=EvaluationJob.Status.FAILED, error=reason, finished_at=timezone.now()
    )
