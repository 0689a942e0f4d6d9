"""Celery wrapper for the analyses: takes ids and calls one service."""

from __future__ import annotations

from celery import shared_task

from evaluation.analyses.services import common as services
from evaluation.analyses.services import toolkit


@shared_task(name=toolkit.COMPUTE_TASK)
def analysis_compute_task(kind: str, analysis_id: int) -> None:
    """Compute one analysis (queued at once, or debounced after new judgments)."""
    services.analysis_run(kind=kind, analysis_id=analysis_id)
