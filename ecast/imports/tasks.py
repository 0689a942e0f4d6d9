"""Celery wrapper: run a stored import job in the worker."""

from __future__ import annotations

from celery import shared_task

from ecast.imports import services


@shared_task(name="ecast.imports.run_job")
def import_job_run(job_id: int) -> None:
    """Run the import job ``job_id`` from its stored upload."""
    services.import_job_run_by_id(job_id=job_id)
