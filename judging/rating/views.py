"""Pages of rating campaigns: the rater's queue and keyboard-first rating page; the admin's campaigns and report."""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Callable
from typing import Any, TypeVar

from django.contrib import messages
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from ecast.core.pages import refusal_shown
from ecast.core.permissions import RATER, admin_required, role_required
from ecast.models import Collection
from judging.models import DEFAULT_MEASURES, MEASURES, Campaign
from judging.rating import agreement, leasing, sampling
from judging.rating import plots as rating_plots
from judging.rating import selectors as sel
from judging.rating import services as svc

rater_required = role_required(RATER)
T = TypeVar("T")


# ---------------------------------------------------------------------------------------------- rater pages


@rater_required
def rating_queue(request: HttpRequest) -> HttpResponse:
    """The rater's open campaigns with their own progress."""
    return render(request, "judging/rating_queue.html", {"rows": sel.rater_queue(rater=request.user)})


def _values_from_post(request: HttpRequest, campaign: Campaign) -> dict[str, Any]:
    # Unanswered measures are left out so the error names them as missing.
    return {k: request.POST[f"m_{k}"] for k in campaign.measure_keys if request.POST.get(f"m_{k}")}


@rater_required
def rating_rate(request: HttpRequest, campaign_id: int) -> HttpResponse:
    """One item per page. GET leases (or re-shows) the rater's item; POST stores the answer, then shows the next."""
    campaign = get_object_or_404(Campaign, pk=campaign_id)
    error = ""
    posted: dict[str, Any] = {}
    if request.method == "POST":
        posted = _values_from_post(request, campaign)
        with refusal_shown() as refused:
            seconds = request.POST.get("seconds_on_task") or None
            svc.rating_submit(
                assignment_id=_number(int, request.POST.get("assignment_id", "0") or 0),
                rater=request.user,
                values=posted,
                idempotency_key=request.POST.get("idempotency_key", ""),
                seconds_on_task=_number(float, seconds) if seconds else None,
            )
            messages.success(request, "Saved.")
            return redirect("rating-rate", campaign_id=campaign.pk)
        if refused.code == "conflict" and "already submitted" in refused.text:
            return redirect("rating-rate", campaign_id=campaign.pk)
        error = refused.text
    with refusal_shown() as refused:
        assignment = leasing.assignment_next(campaign=campaign, rater=request.user)
    if refused:
        return render(request, "judging/rating_done.html", {"campaign": campaign, "message": refused.text}, status=403)
    page = sel.rating_page(campaign=campaign, rater=request.user, assignment=assignment, posted=posted)
    if assignment is None:
        return render(
            request, "judging/rating_done.html", {**page, "message": "No more items for you in this campaign."}
        )
    return render(request, "judging/rating_rate.html", {**page, "idempotency_key": uuid.uuid4().hex, "error": error})


@rater_required
@require_POST
def rating_undo(request: HttpRequest, campaign_id: int) -> HttpResponse:
    """Withdraw the rater's last submission (within the undo window) and show that item again."""
    with refusal_shown(request):
        # The page that follows says the withdrawn answer is filled in; no second message.
        svc.rating_undo(assignment_id=_number(int, request.POST.get("assignment_id", "0") or 0), rater=request.user)
    return redirect("rating-rate", campaign_id=campaign_id)


# ---------------------------------------------------------------------------------------------- admin pages


def _number(kind: Callable[[Any], T], raw: Any) -> T:
    """``int(raw)`` or ``float(raw)``, a malformed posted number being refused with the conversion's own words."""
    try:
        return kind(raw)
    except ValueError as exc:
        raise ValidationError(str(exc)) from exc


def _int(request: HttpRequest, name: str, default: int) -> int:
    raw = request.POST.get(name, "")
    if raw == "":
        return default
    try:
        return int(raw)
    except ValueError as exc:
        raise ValidationError(f"{name.replace('_', ' ')} must be a whole number") from exc


def _gold_threshold(request: HttpRequest) -> float:
    try:
        return float(request.POST.get("gold_threshold") or 0.6)
    except ValueError as exc:
        raise ValidationError("the gold threshold must be a number between 0 and 1") from exc


@admin_required
def campaign_list(request: HttpRequest) -> HttpResponse:
    """All campaigns and the creation form (measures with their questions and anchors shown)."""
    form: dict[str, Any] = {
        "raters_per_item": 5,
        "lease_seconds": 600,
        "undo_seconds": 30,
        "gold_threshold": 0.6,
        "gold_every": 5,
        "seed": 0,
        "sample_size": 50,
        "measures": DEFAULT_MEASURES,
        "collections": [],
        "include_candidates": "",
    }
    errors: list[str] = []
    if request.method == "POST":
        form.update({k: request.POST.get(k, "") for k in request.POST if k not in ("measures", "collections")})
        form["measures"] = request.POST.getlist("measures")
        form["collections"] = [int(x) for x in request.POST.getlist("collections") if x.isdigit()]
        with refusal_shown() as refused:
            keys = form["measures"]
            gold = sampling.parse_gold_spec(request.POST.get("gold", ""), measure_keys=keys)
            campaign = svc.campaign_create(
                name=request.POST.get("name", "").strip(),
                collections=list(Collection.objects.filter(pk__in=form["collections"])),
                sample_size=_int(request, "sample_size", 0),
                seed=_int(request, "seed", 0),
                measure_keys=keys,
                raters_per_item=_int(request, "raters_per_item", 5),
                lease_seconds=max(_int(request, "lease_seconds", 600), 30),
                undo_seconds=_int(request, "undo_seconds", 30),
                gold=gold,
                gold_threshold=_gold_threshold(request),
                gold_every=_int(request, "gold_every", 5),
                guidelines=request.POST.get("guidelines", ""),
                created_by=request.user,
                include_candidates=request.POST.get("include_candidates") == "on",
            )
            messages.success(request, f"Campaign {campaign.name} created with {campaign.items.count()} items.")
            return redirect("rating-campaign", campaign_id=campaign.pk)
        errors = refused.messages
    measures = [
        {"key": k, **MEASURES[k]} for k in [*DEFAULT_MEASURES, *[m for m in MEASURES if m not in DEFAULT_MEASURES]]
    ]
    return render(
        request,
        "judging/campaign_list.html",
        {
            "campaigns": sel.campaign_list(),
            "collections": Collection.objects.order_by("year", "name"),
            "measures": measures,
            "form": form,
            "errors": errors,
        },
    )


def _figures(campaign: Campaign, report: dict[str, Any]) -> tuple[str, str]:
    names = {m["key"]: m["name"] for m in campaign.measures}
    sources = dict(campaign.items.filter(is_gold=False).values_list("pk", "source"))
    labels: dict[str, list[int]] = {}
    groups: dict[str, dict[str, dict[str, int]]] = {}
    for key, rep in report["measures"].items():
        labels[key] = [v for v in rep["labels"].values() if v is not None]
        by_src: dict[str, dict[str, int]] = defaultdict(lambda: {g: 0 for g in agreement.GROUPS})
        for item_id, v in rep["labels"].items():
            if v is not None:
                by_src[sources.get(item_id, "unknown") or "unknown"][agreement.GROUPS[agreement.group_of(v)]] += 1
        groups[key] = dict(by_src)
    return rating_plots.label_boxplot_svg(labels, names), rating_plots.source_bars_svg(groups, names)


@admin_required
def campaign_report(request: HttpRequest, campaign_id: int) -> HttpResponse:
    """Progress, kappa before/after filtering, alpha with CI, Fig. 7A/7B, raters (gold, pause), downloads, release."""
    campaign = get_object_or_404(Campaign, pk=campaign_id)
    report = sel.campaign_agreement(campaign=campaign)
    box_svg, source_svg = _figures(campaign, report)
    users = dict(get_user_model().objects.filter(pk__in=report["per_rater"]).values_list("pk", "username"))
    statuses = sel.rater_statuses(campaign=campaign)
    raters = [
        {
            "status": st,
            "agreement": report["per_rater"].get(st.rater_id),
            "name": users.get(st.rater_id, st.rater.username),
        }
        for st in statuses
    ]
    rows = [{"key": k, **rep} for k, rep in report["measures"].items()]
    return render(
        request,
        "judging/campaign_report.html",
        {
            "campaign": campaign,
            "progress": sel.campaign_progress(campaign=campaign),
            "rows": rows,
            "report": report,
            "box_svg": box_svg,
            "source_svg": source_svg,
            "raters": raters,
            "gold_items": campaign.items.filter(is_gold=True).count(),
            "agreement_url": reverse("api-rating-agreement", args=[campaign.pk]),
        },
    )


@admin_required
@require_POST
def campaign_rater_pause(request: HttpRequest, campaign_id: int, user_id: int) -> HttpResponse:
    """Pause (exclude) or reinstate a rater from the report page."""
    campaign = get_object_or_404(Campaign, pk=campaign_id)
    user = get_object_or_404(get_user_model(), pk=user_id)
    if request.POST.get("paused") == "1":
        svc.rater_pause(campaign=campaign, rater=user, reason="paused by an admin")
        messages.info(request, f"{user.username} paused; their ratings are excluded.")
    else:
        svc.rater_resume(campaign=campaign, rater=user)
        messages.info(request, f"{user.username} reinstated; their ratings count again.")
    return redirect("rating-campaign", campaign_id=campaign.pk)


@admin_required
@require_POST
def campaign_status(request: HttpRequest, campaign_id: int) -> HttpResponse:
    """Open or close a campaign."""
    campaign = get_object_or_404(Campaign, pk=campaign_id)
    with refusal_shown(request):
        svc.campaign_set_status(campaign=campaign, status=request.POST.get("status", ""))
    return redirect("rating-campaign", campaign_id=campaign.pk)
