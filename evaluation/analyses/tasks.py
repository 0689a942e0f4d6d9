"""Celery wrapper for the analyses: takes ids and calls one service."""

from __future__ import annotations

from celery import shared_task

from ecast.core import jobs
from evaluation.analyses.selectors import ANALYSIS_MODELS
from evaluation.analyses.services import common as services
from evaluation.analyses.services import toolkit


@shared_task(name=toolkit.COMPUTE_TASK)
def analysis_compute_task(kind: str, analysis_id: int) -> None:
    """Compute one analysis (queued at once, or debounced after new judgments)."""
    work = lambda: services.analysis_run(kind=kind, analysis_id=analysis_id)  # noqa: E731
    jobs.job_unit(services.analysis_job_kind(kind), analysis_id, work)


def _register(kind: str) -> None:
    jobs.register_kind(
        jobs.JobKind(
            name=services.analysis_job_kind(kind),
            active=lambda: services.analyses_active(kind=kind),
            resume=lambda analysis_id: services.analysis_requeue(kind=kind, analysis_id=analysis_id),
            fail=lambda analysis_id, reason: services.analysis_fail(kind=kind, analysis_id=analysis_id, reason=reason),
            model=ANALYSIS_MODELS[kind],
            detail=lambda obj: {"computed_at": obj.computed_at.isoformat() if obj.computed_at else None},
        )
    )


for _kind in ANALYSIS_MODELS:
    _register(_kind)
