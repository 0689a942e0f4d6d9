"""Celery wrapper for the job sweeper, which celery beat runs every ECAST_SWEEP_SECONDS."""

from __future__ import annotations

from typing import Any

from celery import shared_task

from ecast.core import jobs


@shared_task(name="ecast.jobs_sweep")
def jobs_sweep_task() -> list[dict[str, Any]]:
    """Re-queue jobs whose worker died; fail those that keep killing their worker."""
    return jobs.jobs_sweep()
