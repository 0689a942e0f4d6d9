"""Celery wrappers for stored scores: evaluation jobs and the debounced dirty-turn drain."""

from __future__ import annotations

from celery import shared_task

from ecast.core import jobs
from evaluation import services
from evaluation.models import EvaluationJob


@shared_task(name=services.JOB_TASK)
def evaluation_job_run_task(job_id: int) -> str:
    """Run one EvaluationJob (a new run under all versions, a full recompute, or re-judged turns)."""
    job = jobs.job_unit(services.JOB_KIND, job_id, lambda: services.evaluation_job_execute(job_id=job_id), claim=True)
    return job.status if job else "running in another worker"


@shared_task(name=services.PART_TASK)
def scores_part_compute_task(job_id: int, version_id: int, run_ids: list[int]) -> str | None:
    """Score some runs under one version: one part of a full recompute shared among workers."""
    work = lambda: services.scores_part_compute(job_id=job_id, version_id=version_id, run_ids=run_ids)  # noqa: E731
    job = jobs.job_unit(services.JOB_KIND, job_id, work)
    return job.status if job else None


@shared_task(name=services.DRAIN_TASK)
def dirty_turns_drain_task(version_id: int) -> int | None:
    """Recompute all turns re-judged in a version since the last drain."""
    job = jobs.job_unit(services.RECOMPUTE_KIND, version_id, lambda: services.dirty_turns_drain(version_id=version_id))
    return job.pk if job else None


jobs.register_kind(
    jobs.JobKind(
        name=services.JOB_KIND,
        active=services.evaluation_jobs_active,
        resume=lambda job_id: services.evaluation_job_requeue(job_id=job_id),
        fail=lambda job_id, reason: services.evaluation_job_fail(job_id=job_id, reason=reason),
        model=EvaluationJob,
        detail=lambda job: {"job_kind": job.kind, "job_kind_label": job.get_kind_display()},
    )
)
jobs.register_kind(
    jobs.JobKind(
        name=services.RECOMPUTE_KIND,
        active=services.dirty_versions_waiting,
        resume=lambda version_id: services.dirty_turns_requeue(version_id=version_id),
        fail=lambda version_id, reason: services.dirty_turns_fail(version_id=version_id, reason=reason),
    )
)
