"""Reads for LLM pre-judgment jobs: the list, a job's progress, its labels beside the human grades, the link to the
agreement report of the LLM version against its human parent."""

from __future__ import annotations

from collections import Counter
from typing import Any
from urllib.parse import urlencode

from django.db.models import QuerySet
from django.urls import reverse

from ecast.core.progress import eta_text
from evaluation.models import Qrel, QrelsVersion
from judging.llm import judge
from judging.models import LlmJudgeJob, LlmLabel


def llm_job_list() -> QuerySet[LlmJudgeJob]:
    """Every job, newest first, with what the list shows."""
    return LlmJudgeJob.objects.select_related("collection", "source_version", "target_version")


def llm_job_get(*, pk: int) -> LlmJudgeJob:
    return llm_job_list().get(pk=pk)


def human_versions() -> QuerySet[QrelsVersion]:
    """Qrels versions a job may label from: every version no LLM job writes."""
    return (
        QrelsVersion.objects.exclude(llm_jobs_writing__isnull=False)
        .select_related("collection")
        .order_by("collection__name", "created_at")
    )


def llm_job_progress(*, job: LlmJudgeJob) -> dict[str, Any]:
    """Status, pairs done of total, pairs per second of model time and the time left at that rate."""
    rate = job.progress_done / job.seconds if job.seconds > 0 else None
    left = job.progress_total - job.progress_done
    eta = int(left / rate) if rate and left > 0 else None
    return {
        "id": job.pk,
        "status": job.status,
        "done": job.progress_done,
        "total": job.progress_total,
        "percent": job.percent,
        "pairs_per_second": round(rate, 2) if rate else None,
        "eta_seconds": eta,
        "eta_text": eta_text(eta),
        "error": job.error,
    }


def llm_job_grade_counts(*, job: LlmJudgeJob) -> list[dict[str, Any]]:
    """Labels per grade 0–4 (every grade shown, even when the model never gave it)."""
    counts = Counter(LlmLabel.objects.filter(job=job).values_list("grade", flat=True))
    total = sum(counts.values()) or 1
    return [{"grade": g, "count": counts.get(g, 0), "share": counts.get(g, 0) / total} for g in judge.GRADES]


def llm_job_labels(*, job: LlmJudgeJob, limit: int | None = None) -> list[dict[str, Any]]:
    """The job's labels in order, each with the human grade of its pair in the source version."""
    labels = LlmLabel.objects.filter(job=job).select_related("turn").order_by("id")
    if limit is not None:
        labels = labels[:limit]
    rows = list(labels)
    human = {
        (t, p): g
        for t, p, g in Qrel.objects.filter(
            version_id=job.source_version_id, turn_id__in={r.turn_id for r in rows}
        ).values_list("turn_id", "passage_id", "grade")
    }
    return [
        {
            "turn_id": r.turn.turn_id,
            "passage_id": r.passage_id,
            "grade": r.grade,
            "human_grade": human.get((r.turn_id, r.passage_id)),
            "probabilities": r.probabilities,
            "digit_mass": r.digit_mass,
            "prompt": r.prompt,
            "provenance": r.provenance,
        }
        for r in rows
    ]


def agreement_url(*, job: LlmJudgeJob) -> str | None:
    """The agreement report of the LLM version (B) against its human parent (A)."""
    if job.target_version_id is None:
        return None
    query = urlencode({"a": job.source_version_id, "b": job.target_version_id})
    return f"{reverse('evaluation-agreement')}?{query}"
