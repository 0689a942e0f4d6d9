"""Celery wrappers for rating campaigns: take ids, call one service or selector."""

from __future__ import annotations

from celery import shared_task

from judging.models import Campaign
from judging.rating import selectors, services


@shared_task(name="judging.rating.leases_expire")
def leases_expire_task() -> int:
    """Housekeeping: mark long-dead leases expired (assignment correctness never depends on this)."""
    return services.lease_expire_stale()


@shared_task(name="judging.rating.agreement_warm")
def agreement_warm_task(campaign_id: int) -> int:
    """Compute a campaign's agreement report into the cache so the report page opens instantly."""
    report = selectors.campaign_agreement(campaign=Campaign.objects.get(pk=campaign_id))
    return int(report["n_ratings"])
