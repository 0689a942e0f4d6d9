"""Celery wrapper: run a stored import job in the worker, and let the sweeper restart one whose worker died."""

from __future__ import annotations

from celery import shared_task

from ecast.core import jobs
from ecast.imports import services
from ecast.models import ImportJob

KIND = services.KIND
RUN_TASK = "ecast.imports.run_job"


@shared_task(name=RUN_TASK)
def import_job_run(job_id: int) -> None:
    """Run the import job ``job_id`` from its stored upload (one worker at a time; imports are atomic)."""
    jobs.job_unit(KIND, job_id, lambda: services.import_job_run_by_id(job_id=job_id), claim=True)


jobs.register_kind(
    jobs.JobKind(
        name=KIND,
        active=services.import_jobs_active,
        resume=lambda job_id: services.import_job_requeue(job_id=job_id, task=RUN_TASK),
        fail=lambda job_id, reason: services.import_job_fail(job_id=job_id, reason=reason),
        model=ImportJob,
        # The error list itself comes with the finished page: it can be long.
        detail=lambda job: {"errors": len(job.errors)},
    )
)
