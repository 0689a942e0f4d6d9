"""Reads for generation pages and APIs."""

from __future__ import annotations

from typing import Any

from django.db.models import Count, Q, QuerySet
from django.utils import timezone

from ecast.models import GenerationJob, GenerationTurn


def generation_job_list() -> QuerySet[GenerationJob]:
    """Jobs, newest first, with the collection joined."""
    return GenerationJob.objects.select_related("collection", "created_by")


def generation_job_progress(*, job: GenerationJob) -> dict[str, Any]:
    """Turns done / failed / pending / total, outputs, and an ETA from the elapsed time per finished turn."""
    counts = job.turns.aggregate(
        done=Count("id", filter=Q(status=GenerationTurn.Status.DONE)),
        failed=Count("id", filter=Q(status=GenerationTurn.Status.FAILED)),
        cancelled=Count("id", filter=Q(status=GenerationTurn.Status.CANCELLED)),
        pending=Count("id", filter=Q(status=GenerationTurn.Status.PENDING)),
    )
    outputs = sum(job.turns.values_list("outputs", flat=True))
    finished = counts["done"] + counts["failed"]
    eta = None
    if job.status == GenerationJob.Status.RUNNING and job.started_at and finished and counts["pending"]:
        elapsed = (timezone.now() - job.started_at).total_seconds()
        eta = round(elapsed / finished * counts["pending"], 1)
    total = job.total_turns or 1
    return {
        "id": job.pk,
        "status": job.status,
        "total": job.total_turns,
        **counts,
        "paraphrase_pairs": outputs,
        "percent": round(100.0 * finished / total, 1),
        "eta_seconds": eta,
        "error": job.error,
        "cancel_requested": job.cancel_requested,
    }
