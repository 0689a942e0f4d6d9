"""The live recompute: changed turns are marked dirty and drained, debounced, into one job per drain."""

from __future__ import annotations

from collections.abc import Iterable

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from ecast.core.jobs import debounce, debounce_release
from evaluation.models import (
    DirtyTurn,
    EvaluationJob,
    QrelsVersion,
)
from evaluation.services.jobs import DRAIN_TASK, evaluation_job_execute, version_writer
from evaluation.services.scores import version_needs_full_compute


def recompute_delay_s() -> float:
    """Debounce window for the live recompute (setting ECAST_RECOMPUTE_DELAY_S, default 0: recompute at once when
    idle; judgments arriving while a drain is queued or running are coalesced into the next drain)."""
    return float(settings.ECAST_RECOMPUTE_DELAY_S)


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
