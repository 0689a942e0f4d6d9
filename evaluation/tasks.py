"""Celery wrappers for stored scores: evaluation jobs and the debounced dirty-turn drain."""

from __future__ import annotations

from celery import shared_task

from evaluation import services


@shared_task(name="evaluation.evaluation_job_run")
def evaluation_job_run_task(job_id: int) -> str:
    """Run one EvaluationJob (a new run under all versions, or a full recompute)."""
    return services.evaluation_job_execute(job_id=job_id).status


@shared_task(name="evaluation.dirty_turns_drain")
def dirty_turns_drain_task(version_id: int) -> int | None:
    """Recompute all turns re-judged in a version since the last drain."""
    job = services.dirty_turns_drain(version_id=version_id)
    return job.pk if job else None
