"""Evaluation's rows on the admin dashboard: evaluation jobs, permutation experiments and analyses in progress."""

from __future__ import annotations

from django.urls import reverse

from ecast.core.models import ACTIVE_STATUSES
from ecast.dashboard import SOURCE_LIMIT, ActivityRow, activity_source_register, progress_text
from evaluation.analyses.selectors import ANALYSIS_MODELS
from evaluation.models import EvaluationJob, PermutationExperiment

ANALYSIS_LABELS = {
    "pivots": "Pivot analysis",
    "metaeval": "Meta-evaluation",
    "calibration": "Calibration report",
    "stochastic": "Stochastic system",
}


def _job_name(job: EvaluationJob) -> str:
    if job.run is not None:
        return job.run.name
    if job.version is not None:
        return f"{len(job.turn_ids)} turn(s) under {job.version.name}"
    return "every run under every qrels version"


def evaluation_jobs_in_progress() -> list[ActivityRow]:
    """Evaluation jobs queued or running; the leaderboard of their collection lists them with progress."""
    jobs = (
        EvaluationJob.objects.filter(status__in=ACTIVE_STATUSES)
        .select_related("collection", "run", "version")
        .order_by("-created_at")[:SOURCE_LIMIT]
    )
    return [
        ActivityRow(
            kind=job.get_kind_display(),
            name=_job_name(job),
            url=f"{reverse('evaluation-leaderboard')}?collection={job.collection_id}",
            status=job.status_label,
            collection=job.collection.name,
            progress=progress_text(job.progress_done, job.progress_total),
            since=job.queued_at or job.created_at,
        )
        for job in jobs
    ]


def permutation_experiments_in_progress() -> list[ActivityRow]:
    """Permutation experiments retrieving or scoring."""
    active = ACTIVE_STATUSES
    experiments = (
        PermutationExperiment.objects.filter(status__in=active)
        .select_related("collection")
        .order_by("-created_at")[:SOURCE_LIMIT]
    )
    return [
        ActivityRow(
            kind="Permutation experiment",
            name=e.name,
            url=reverse("permutation-experiment", args=[e.pk]),
            status=e.status_label,
            collection=e.collection.name,
            progress=progress_text(e.progress_done, e.progress_total),
            since=e.queued_at or e.created_at,
        )
        for e in experiments
    ]


def analyses_in_progress() -> list[ActivityRow]:
    """Pivot, meta-evaluation, calibration and risk-aware analyses queued or running."""
    rows = []
    for kind, model in ANALYSIS_MODELS.items():
        analyses = (
            model.objects.filter(status__in=ACTIVE_STATUSES)
            .select_related("collection")
            .order_by("-created_at")[:SOURCE_LIMIT]
        )
        rows += [
            ActivityRow(
                kind=ANALYSIS_LABELS.get(kind, kind),
                name=a.name,
                url=reverse("analyses-detail", args=[kind, a.pk]),
                status=a.status_label,
                collection=a.collection.name,
                progress=progress_text(a.progress_done, a.progress_total),
                since=a.queued_at or a.created_at,
            )
            for a in analyses
        ]
    return rows


def register() -> None:
    """Add evaluation's jobs to the dashboard (called from ``EvaluationConfig.ready()``)."""
    activity_source_register(section="jobs", name="evaluation", source=evaluation_jobs_in_progress)
    activity_source_register(section="jobs", name="permutations", source=permutation_experiments_in_progress)
    activity_source_register(section="jobs", name="analyses", source=analyses_in_progress)
