"""Judging's rows on the admin dashboard: open rating campaigns and relevance pools being built or judged."""

from __future__ import annotations

from django.db.models import Count, Q, Sum
from django.urls import reverse

from ecast.dashboard import SOURCE_LIMIT, ActivityRow, activity_source_register, progress_text
from judging.models import AssessorJudgment, Campaign, Pool


def campaigns_open() -> list[ActivityRow]:
    """Open rating campaigns with counted ratings of the target (items × raters per item)."""
    campaigns = (
        Campaign.objects.filter(status=Campaign.Status.OPEN)
        .annotate(
            n_items=Count("items", filter=Q(items__is_gold=False), distinct=True),
            n_counted=Sum("items__completed_count", filter=Q(items__is_gold=False)),
        )
        .prefetch_related("collections")
        .order_by("-created_at")[:SOURCE_LIMIT]
    )
    return [
        ActivityRow(
            kind="Rating campaign",
            name=c.name,
            url=reverse("rating-campaign", args=[c.pk]),
            status=c.get_status_display(),
            collection=", ".join(coll.name for coll in c.collections.all()),
            progress=progress_text(c.n_counted, c.n_items * c.raters_per_item),  # type: ignore[attr-defined]
            since=c.created_at,
        )
        for c in campaigns
    ]


def pools_in_progress() -> list[ActivityRow]:
    """Pools the worker is building, and open pools, with pairs judged of those needing a judgment."""
    pools = list(
        Pool.objects.filter(status__in=[Pool.Status.BUILDING, Pool.Status.OPEN])
        .select_related("collection")
        .order_by("-created_at")[:SOURCE_LIMIT]
    )
    judged = dict(
        AssessorJudgment.objects.filter(pair__pool__in=pools)
        .values("pair__pool")
        .annotate(n=Count("pair", distinct=True))
        .values_list("pair__pool", "n")
    )
    return [
        ActivityRow(
            kind="Relevance pool",
            name=p.name,
            url=reverse("relevance-pool", args=[p.pk]),
            status=p.get_status_display(),
            collection=p.collection.name,
            progress=progress_text(judged.get(p.pk, 0), (p.stats or {}).get("judgments_needed")),
            since=p.created_at,
        )
        for p in pools
    ]


def register() -> None:
    """Add judging's sections to the dashboard (called from ``JudgingConfig.ready()``)."""
    activity_source_register(section="campaigns", name="rating-campaigns", source=campaigns_open)
    activity_source_register(section="pools", name="relevance-pools", source=pools_in_progress)
