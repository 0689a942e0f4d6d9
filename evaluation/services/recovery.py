"""Worker loss: what the sweeper (through ``ecast.core.jobs``) calls for silent evaluation jobs and for re-judged
turns waiting too long for their recompute."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.db.models import Min
from django.utils import timezone

from ecast.core.jobs import enqueue
from ecast.core.models import ACTIVE_STATUSES
from evaluation.models import (
    DirtyTurn,
    EvaluationJob,
    QrelsVersion,
)
from evaluation.services.jobs import DRAIN_TASK, JOB_TASK


def evaluation_jobs_active() -> list[tuple[int, Any]]:
    active = EvaluationJob.objects.filter(status__in=ACTIVE_STATUSES)
    return list(active.values_list("pk", "created_at"))


def evaluation_job_requeue(*, job_id: int) -> str:
    enqueue(JOB_TASK, job_id)
    return "queued the evaluation job again (scores are upserts)"


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
