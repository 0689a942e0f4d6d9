"""Reads for generation pages and APIs."""

from __future__ import annotations

from typing import Any

from django.db.models import Count, Max, Q, QuerySet
from django.utils import timezone

from ecast.models import GenerationJob, GenerationTurn
from ecast.pipeline.clean import REASONS
from ecast.pipeline.run import STAGE_LABELS


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
    last = job.turns.aggregate(last=Max("finished_at"))["last"]
    if job.status == GenerationJob.Status.RUNNING and job.started_at and last and finished and counts["pending"]:
        # The pace of the turns finished so far, counted down since the last one finished: the estimate falls while
        # the next turn computes instead of growing with the time elapsed.
        per_turn = max(0.0, (last - job.started_at).total_seconds()) / finished
        since_last = (timezone.now() - last).total_seconds()
        eta = round(max(0.0, per_turn * counts["pending"] - since_last), 1)
    total = job.progress_total or 1
    return {
        "id": job.pk,
        "status": job.status,
        "total": job.progress_total,
        **counts,
        "paraphrase_pairs": outputs,
        "percent": round(100.0 * finished / total, 1),
        "eta_seconds": eta,
        "error": job.error,
        "cancel_requested": job.cancel_requested,
    }


def generation_turn_drops(*, details: dict[str, Any]) -> dict[str, dict[str, int]]:
    """One finished turn's dropped outputs per stage and reason. Turns finished before the stages counted their
    drops have only the paraphrase stage's list."""
    drops = details.get("drops")
    if isinstance(drops, dict):
        return drops
    counts: dict[str, int] = {}
    for d in details.get("dropped") or []:
        counts[d.get("reason", "")] = counts.get(d.get("reason", ""), 0) + 1
    return {"paraphrase": counts} if counts else {}


def generation_drop_rows(drops: dict[str, dict[str, int]]) -> list[dict[str, Any]]:
    """Drop counts as rows in pipeline order: stage, stage label, reason, count."""
    rows = []
    for stage in STAGE_LABELS:
        for reason in sorted(drops.get(stage) or {}, key=lambda r: (REASONS.index(r) if r in REASONS else 99, r)):
            rows.append({"stage": stage, "label": STAGE_LABELS[stage], "reason": reason, "count": drops[stage][reason]})
    return rows


def generation_job_drops(*, job: GenerationJob) -> dict[str, Any]:
    """Dropped outputs over the job's finished turns, per stage and reason, plus pairs kept and raw outputs."""
    totals: dict[str, dict[str, int]] = {}
    for details in job.turns.filter(status=GenerationTurn.Status.DONE).values_list("details", flat=True):
        for stage, reasons in generation_turn_drops(details=details or {}).items():
            bucket = totals.setdefault(stage, {})
            for reason, n in reasons.items():
                bucket[reason] = bucket.get(reason, 0) + n
    rows = generation_drop_rows(totals)
    return {"by_stage": totals, "rows": rows, "total": sum(r["count"] for r in rows)}
