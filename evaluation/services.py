"""Writes for evaluation: stored scores (full, per run, per changed turn), history snapshots, jobs, run uploads.

Scores are written delete-then-bulk-insert per (run set × version [× turns]) so a full recompute is a handful of
statements per run, and a judgment touching one turn rewrites only that turn's rows for every run.
"""

from __future__ import annotations

import logging
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Count, Min
from django.utils import timezone

from ecast.core.jobs import debounce, debounce_release, enqueue, exclusive
from ecast.imports.errors import ImportFailed
from ecast.imports.services import run_import
from ecast.models import Collection, TestSet
from evaluation import metrics
from evaluation.models import (
    DirtyTurn,
    EvaluationJob,
    LeaderboardSnapshot,
    Qrel,
    QrelsVersion,
    Run,
)
from evaluation.scoring import MEASURES, Written, scores_write
from evaluation.selectors import score_means, scores_exist

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
    version_id: int, task: str, *args: Any, wait: float = PART_WAIT_S, shared: bool = False
) -> Iterator[bool]:
    """The version's writer lock, which every writer of its scores takes (drains and run or turns jobs alone, the
    parts of a full recompute together, ``shared``): yields False when another writer still holds it after ``wait``
    seconds, having queued ``task(*args)`` again in ``DRAIN_RETRY_S`` so the work is not lost."""
    with exclusive(DRAIN_LOCK, version_id, wait=wait, shared=shared) as free:
        if not free:
            enqueue(task, *args, countdown=DRAIN_RETRY_S)
        yield free


def recompute_delay_s() -> float:
    """Debounce window for the live recompute (setting ECAST_RECOMPUTE_DELAY_S, default 0: recompute at once when
    idle; judgments arriving while a drain is queued or running are coalesced into the next drain)."""
    return float(settings.ECAST_RECOMPUTE_DELAY_S)


def scores_compute_for_run(*, run: Run, measures: Sequence[str] = MEASURES) -> int:
    """Evaluate one run under every qrels version of its collection; returns rows written."""
    return sum(
        scores_write(version=v, run_ids=[run.pk], measures=measures).values
        for v in QrelsVersion.objects.filter(collection_id=run.collection_id).select_related("collection")
    )


def scores_compute_for_version(
    *, version: QrelsVersion, measures: Sequence[str] = MEASURES, progress: Callable[[int], None] | None = None
) -> int:
    """Evaluate every run of the version's collection under it (full recompute of one version)."""
    run_ids = list(Run.objects.filter(collection_id=version.collection_id).values_list("pk", flat=True))
    written = scores_write(version=version, run_ids=run_ids, measures=measures, progress=progress)
    leaderboard_snapshot_create(version=version, trigger="full recompute", counts=written)
    return written.values


def scores_recompute_turns(
    *, version: QrelsVersion, turn_pks: Sequence[int], measures: Sequence[str] = MEASURES
) -> int:
    """Rewrite the scores of the given turns for every run (turns no longer judged lose their rows)."""
    run_ids = list(Run.objects.filter(collection_id=version.collection_id).values_list("pk", flat=True))
    return scores_write(version=version, run_ids=run_ids, turn_pks=list(turn_pks), measures=measures).values


def version_needs_full_compute(*, version: QrelsVersion) -> bool:
    """True when runs exist but none has a score under this version (e.g. a freshly derived copy)."""
    has_runs = Run.objects.filter(collection_id=version.collection_id).exists()
    return has_runs and not scores_exist(version_ids=[version.pk])


def leaderboard_snapshot_create(
    *, version: QrelsVersion, trigger: str = "", measure: str = metrics.HEADLINE, counts: Written | None = None
) -> LeaderboardSnapshot:
    """Store the current means and ranks of every run under ``version`` for the history page. ``counts``: what a
    full write of the version's scores just evaluated against, so its judgments need not be counted again."""
    threshold = int(version.collection.relevance_threshold)
    means = score_means(version=version, measures=[measure])
    names = dict(Run.objects.filter(pk__in=list(means)).values_list("pk", "name"))
    rows = [(run_id, names[run_id], m[measure]) for run_id, m in means.items() if run_id in names and measure in m]
    ordered = sorted(rows, key=lambda r: (-r[2], r[1]))
    entries: list[dict[str, Any]] = []
    for i, (run_id, name, mean) in enumerate(ordered):
        # Competition ranking: equal means share the better rank.
        rank = entries[-1]["rank"] if entries and abs(entries[-1]["mean"] - mean) < 1e-12 else i + 1
        entries.append({"run_id": run_id, "run": name, "mean": float(mean), "rank": rank})
    if counts is not None:
        judgments, judged_turns = counts.judgments, counts.judged_turns
    else:
        counted = Qrel.objects.filter(version=version).aggregate(n=Count("id"), turns=Count("turn_id", distinct=True))
        judgments, judged_turns = counted["n"] or 0, counted["turns"] or 0
    snap = LeaderboardSnapshot(
        version=version,
        measure=measure,
        threshold=threshold,
        judged_turns=judged_turns,
        qrels_count=judgments,
        entries=entries,
        trigger=trigger[:200],
    )
    snap.full_clean()
    snap.save()
    return snap


# --- jobs ---------------------------------------------------------------------------------------------------


def _enqueue(job: EvaluationJob) -> None:
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
        _enqueue(job)
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
        status, error = EvaluationJob.Status.SUCCEEDED, ""
    except Exception as exc:  # noqa: BLE001 - the job page shows what went wrong
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


# --- live recompute (debounced) -----------------------------------------------------------------------------


def recompute_key(version_id: int) -> str:
    """Debounce key of a version's live recompute."""
    return f"evaluation:recompute:{version_id}"


def dirty_turns_mark(*, version_id: int, turn_ids: Iterable[int]) -> bool:
    """Remember changed turns and schedule one drain after the debounce window; True if a task was scheduled."""
    pks = sorted(set(int(t) for t in turn_ids))
    if not QrelsVersion.objects.filter(pk=version_id).exists():
        return False
    DirtyTurn.objects.bulk_create([DirtyTurn(version_id=version_id, turn_id=t) for t in pks], ignore_conflicts=True)
    return debounce(recompute_key(version_id), DRAIN_TASK, version_id, delay=recompute_delay_s())


def version_schedule_initial(*, version_id: int) -> bool:
    """Schedule the first scoring of a new version (an empty drain of an unscored version is a full compute)."""
    version = QrelsVersion.objects.filter(pk=version_id).first()
    if version is None or not version_needs_full_compute(version=version):
        return False
    return dirty_turns_mark(version_id=version_id, turn_ids=())


def dirty_turns_drain(*, version_id: int) -> EvaluationJob | None:
    """Recompute all turns marked dirty for the version, for every run; one job record per drain.

    The dirty marks become the job's ``turn_ids`` in one transaction, so a worker that dies after taking them
    leaves a job the sweeper restarts, never turns nobody recomputes.
    """
    debounce_release(recompute_key(version_id))
    version = QrelsVersion.objects.select_related("collection").filter(pk=version_id).first()
    if version is None:
        return None
    # One drain per version at a time, and none while a full recompute's parts write the version (they take this
    # lock shared): two writers of the same rows would collide on TurnScores' unique constraint. A drain queued
    # meanwhile tries again shortly, then takes every mark made in between.
    with version_writer(version_id, DRAIN_TASK, version_id, wait=0) as mine:
        if not mine:
            return None
        return _drain_locked(version)


def _drain_locked(version: QrelsVersion) -> EvaluationJob | None:
    with transaction.atomic():
        rows = list(DirtyTurn.objects.select_for_update().filter(version=version).values_list("pk", "turn_id"))
        if not rows and not version_needs_full_compute(version=version):
            return None
        DirtyTurn.objects.filter(pk__in=[pk for pk, _ in rows]).delete()
        job = EvaluationJob.objects.create(
            collection=version.collection,
            kind=EvaluationJob.Kind.TURNS,
            version=version,
            turn_ids=sorted({t for _, t in rows}),
            status=EvaluationJob.Status.RUNNING,
            progress_total=1,
            started_at=timezone.now(),
        )
    return evaluation_job_execute(job_id=job.pk)


# --- runs from outside --------------------------------------------------------------------------------------


def _error_text(error: Any, default_file: str) -> str:
    """``file:line: reason`` (line left out when the error is about the whole file)."""
    if not isinstance(error, dict):
        return str(error)
    where = str(error.get("file") or default_file)
    if error.get("line"):
        where += f":{error['line']}"
    return f"{where}: {error.get('reason', error)}"


def run_upload(
    *,
    collection: Collection,
    uploaded: Any,
    name: str | None = None,
    test_set: TestSet | None = None,
    user: Any = None,
    link_hook: Callable[[Run], None] | None = None,
) -> tuple[Run, EvaluationJob]:
    """Import an uploaded TREC run via the importer and start its evaluation in the background.

    ``link_hook`` lets another feature (permutations) attach the new run to its own objects.
    Raises ``ValidationError`` with the importer's file/line/reason messages on bad input.
    """
    if test_set is not None and test_set.collection_id != collection.pk:
        raise ValidationError(f"test_set: {test_set.name!r} belongs to another collection")
    suffix = Path(getattr(uploaded, "name", "run.txt")).name
    with tempfile.TemporaryDirectory(prefix="ecast-run-") as tmp:
        path = Path(tmp) / suffix
        with path.open("wb") as fh:
            for chunk in uploaded.chunks() if hasattr(uploaded, "chunks") else [uploaded.read()]:
                fh.write(chunk)
        try:
            run = run_import(collection=collection, path=path, name=name or None, user=user, test_set=test_set)
        except ImportFailed as exc:
            messages = [_error_text(e, suffix) for e in getattr(exc, "errors", [])] or [str(exc)]
            raise ValidationError(messages) from exc
    if link_hook is not None:
        link_hook(run)
    # The importer's run_created event may already have queued (or, with eager tasks, finished) the evaluation.
    job = EvaluationJob.objects.filter(run=run, kind=EvaluationJob.Kind.RUN).order_by("-id").first()
    if job is None:
        job = evaluation_job_create(collection=collection, kind=EvaluationJob.Kind.RUN, run=run, user=user)
    return run, job


@transaction.atomic
def run_update(*, run: Run, test_set: TestSet | None, description: str | None = None) -> Run:
    """Link a run to a paraphrase test set (or unlink it) and edit its description."""
    if test_set is not None and test_set.collection_id != run.collection_id:
        raise ValidationError(f"test_set: {test_set.name!r} belongs to another collection")
    run.test_set = test_set
    if description is not None:
        run.description = description
    run.full_clean()
    run.save(update_fields=["test_set", "description"])
    return run


# --- worker loss (the sweeper calls these through ecast.core.jobs) ----------------------------------------------------


def evaluation_jobs_active() -> list[tuple[int, Any]]:
    active = EvaluationJob.objects.filter(status__in=[EvaluationJob.Status.QUEUED, EvaluationJob.Status.RUNNING])
    return list(active.values_list("pk", "created_at"))


def evaluation_job_requeue(*, job_id: int) -> str:
    enqueue(JOB_TASK, job_id)
    return "queued the evaluation job again (scores are upserts)"


def evaluation_job_fail(*, job_id: int, reason: str) -> None:
    EvaluationJob.objects.filter(
        pk=job_id, status__in=[EvaluationJob.Status.QUEUED, EvaluationJob.Status.RUNNING]
    ).update(status=EvaluationJob.Status.FAILED, error=reason, finished_at=timezone.now())


def dirty_versions_waiting() -> list[tuple[int, Any]]:
    """Versions with re-judged turns, and since when the oldest has waited for its recompute."""
    rows = DirtyTurn.objects.values("version_id").annotate(since=Min("created_at"))
    return [(r["version_id"], r["since"]) for r in rows]


def dirty_turns_requeue(*, version_id: int) -> str:
    enqueue(DRAIN_TASK, version_id)
    return "queued the recompute of the re-judged turns"


@transaction.atomic
def dirty_turns_fail(*, version_id: int, reason: str) -> None:
    """Give up on a version's dirty turns: a failed job records which turns were not recomputed."""
    version = QrelsVersion.objects.get(pk=version_id)
    rows = list(DirtyTurn.objects.select_for_update().filter(version=version).values_list("pk", "turn_id"))
    DirtyTurn.objects.filter(pk__in=[pk for pk, _ in rows]).delete()
    EvaluationJob.objects.create(
        collection_id=version.collection_id,
        kind=EvaluationJob.Kind.TURNS,
        version=version,
        turn_ids=sorted({t for _, t in rows}),
        status=EvaluationJob.Status.FAILED,
        error=reason,
        finished_at=timezone.now(),
    )
