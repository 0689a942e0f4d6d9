"""Celery wrappers for relevance judging: take ids, call one service."""

from __future__ import annotations

from celery import shared_task

from judging import relevance_services as svc
from judging.models import Pool


@shared_task(name="judging.relevance.pool_sync")
def pool_sync_task(pool_id: int) -> int:
    """Re-aggregate a pool's judgments into its target qrels version."""
    return svc.pool_sync_to_version(pool=Pool.objects.get(pk=pool_id))
