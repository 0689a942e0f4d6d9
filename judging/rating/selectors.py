"""Reads for rating campaigns: queues, progress, counted ratings, agreement reports (cached), release selection."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from typing import Any

from django.core.cache import cache
from django.db.models import Count, Max, Q
from django.utils import timezone

from ecast.core.csvfiles import csv_line
from ecast.models import Paraphrase
from judging.models import MEASURES, Campaign, RaterStatus, Rating, RatingAssignment, RatingItem
from judging.rating import agreement

# A rater's every call needs the campaign (its measures, seed, kind); it is read from the shared cache and dropped
# whenever the campaign is saved or deleted (judging.apps). What decides a lease or a submission (status, N, lease
# length, gold settings) is read from the database inside those statements, so a stale copy cannot break them.
CAMPAIGN_CACHE_SECONDS = 300


def campaign_cache_key(campaign_id: int) -> str:
    return f"rating-campaign:v1:{campaign_id}"


def campaign_cached(*, campaign_id: int) -> Campaign:
    """The campaign, from the shared cache when it is there; ``Campaign.DoesNotExist`` when there is none."""
    key = campaign_cache_key(campaign_id)
    campaign = cache.get(key)
    if campaign is None:
        campaign = Campaign.objects.get(pk=campaign_id)
        cache.set(key, campaign, CAMPAIGN_CACHE_SECONDS)
    return campaign


def campaign_list() -> list[Campaign]:
    """All campaigns with item and rating counts."""
    return list(
        Campaign.objects.annotate(
            n_items=Count("items", filter=Q(items__is_gold=False), distinct=True),
            n_ratings=Count("ratings", distinct=True),
        ).order_by("-created_at")
    )


def campaign_progress(*, campaign: Campaign) -> dict[str, int]:
    """Items, finished items (N counted ratings), counted ratings and live leases."""
    items = RatingItem.objects.filter(campaign=campaign, is_gold=False)
    return {
        "items": items.count(),
        "finished": items.filter(completed_count__gte=campaign.raters_per_item).count(),
        "ratings": items.aggregate(n=Count("ratings"))["n"] or 0,
        "counted": sum(items.values_list("completed_count", flat=True)),
        "target": items.count() * campaign.raters_per_item,
        "live_leases": RatingAssignment.objects.filter(
            campaign=campaign, status=RatingAssignment.Status.LEASED, expires_at__gt=timezone.now()
        ).count(),
    }


def rater_queue(*, rater: Any) -> list[dict[str, Any]]:
    """Open campaigns for a rater with how many items they have done and whether they are paused."""
    done = dict(
        RatingAssignment.objects.filter(rater=rater, status=RatingAssignment.Status.COMPLETED)
        .values_list("campaign_id")
        .annotate(c=Count("pk"))
        .values_list("campaign_id", "c")
    )
    paused = set(RaterStatus.objects.filter(rater=rater, paused=True).values_list("campaign_id", flat=True))
    out = []
    for c in Campaign.objects.filter(status=Campaign.Status.OPEN).order_by("created_at"):
        left = rater_items_left(campaign=c, rater=rater)
        out.append({"campaign": c, "done": done.get(c.pk, 0), "paused": c.pk in paused, "left": left})
    return out


def rater_items_left(*, campaign: Campaign, rater: Any) -> int:
    """Items the rater may still answer in the campaign: those never leased to them, plus those leased to them and
    not yet answered (the one on screen, or one handed out before an undo brought an earlier item back). The queue
    and the item page both show this number, so a rater who leaves an item half done sees the same count on each."""
    never_leased = RatingItem.objects.filter(
        campaign=campaign, is_gold=False, completed_count__lt=campaign.raters_per_item
    ).exclude(pk__in=RatingAssignment.objects.filter(rater=rater, campaign=campaign).values("item_id"))
    return never_leased.count() + rater_open_leases(campaign=campaign, rater=rater)


def rater_measures(*, campaign: Campaign) -> list[dict[str, Any]]:
    """The campaign's measures in the words a rater reads: name, plain question, anchors (no paper symbols).

    Campaigns store their measure definitions; one created before the plain wording existed takes it from the
    registry, and a measure unknown to the registry keeps its own question."""
    out = []
    for m in campaign.measures:
        plain = m.get("rater_question") or MEASURES.get(m["key"], {}).get("rater_question") or m["question"]
        out.append({"key": m["key"], "name": m["name"], "question": plain, "anchors": list(m["anchors"])})
    return out


def previous_answer(*, assignment: RatingAssignment) -> dict[str, int]:
    """The answer the rater withdrew with undo (the latest one), so the page can show it again for correction."""
    history = assignment.history or []
    return dict(history[-1].get("values") or {}) if history else {}


def assignment_payload(*, assignment: RatingAssignment) -> dict[str, Any]:
    """What the rater page and API show for one assignment (never other raters' answers)."""
    item = assignment.item
    campaign = assignment.campaign
    return {
        "assignment_id": assignment.pk,
        "campaign_id": campaign.pk,
        "item_id": item.pk,
        "kind": campaign.kind,
        "expires_at": assignment.expires_at,
        "context": item.context,
        "passage_id": item.passage_id,
        "passage_text": item.passage_text,
        "measures": rater_measures(campaign=campaign),
        "previous_values": previous_answer(assignment=assignment),
    }


def rater_done_count(*, campaign: Campaign, rater: Any) -> int:
    """Items this rater has completed in the campaign."""
    return RatingAssignment.objects.filter(
        campaign=campaign, rater=rater, status=RatingAssignment.Status.COMPLETED
    ).count()


def rater_open_leases(*, campaign: Campaign, rater: Any) -> int:
    """Items leased to this rater in the campaign and not yet answered."""
    return RatingAssignment.objects.filter(
        campaign=campaign, rater=rater, status=RatingAssignment.Status.LEASED
    ).count()


def last_rating(*, campaign: Campaign, rater: Any) -> Rating | None:
    """The rater's most recent rating in the campaign (the undo candidate)."""
    return Rating.objects.filter(campaign=campaign, rater=rater).order_by("-submitted_at", "-pk").first()


def rating_page(
    *, campaign: Campaign, rater: Any, assignment: RatingAssignment | None, posted: dict[str, Any]
) -> dict[str, Any]:
    """What the rating page shows of the rater's item (``posted``: the answer a failed submission sent, shown again),
    their progress and the undo offer; without an item, only what the done page shows."""
    last = last_rating(campaign=campaign, rater=rater)
    undo = None
    if last and (timezone.now() - last.submitted_at).total_seconds() <= campaign.undo_seconds:
        undo = {"assignment_id": last.assignment_id, "seconds": campaign.undo_seconds}
    done = rater_done_count(campaign=campaign, rater=rater)
    if assignment is None:
        return {"campaign": campaign, "done": done, "undo": undo}
    left = rater_items_left(campaign=campaign, rater=rater)
    item = assignment.item
    # After an undo the withdrawn answer is shown again, so correcting one measure is one key press.
    previous = previous_answer(assignment=assignment)
    measures = []
    for m in rater_measures(campaign=campaign):
        chosen = str(posted.get(m["key"], previous.get(m["key"], "")))
        measures.append({**m, "options": list(enumerate(m["anchors"], start=1)), "chosen": chosen})
    return {
        "campaign": campaign,
        "assignment": assignment,
        "item": item,
        "ctx": item.context,
        "measures": measures,
        "done": done,
        "left": left,
        "total": done + left,
        "position": done + 1,
        "corrected": bool(previous) and not posted,
        "undo": undo,
    }


def counted_ratings(*, campaign: Campaign) -> list[Rating]:
    """Ratings that count: regular items, raters not paused; in submission order."""
    paused = RaterStatus.objects.filter(campaign=campaign, paused=True).values("rater_id")
    return list(
        Rating.objects.filter(campaign=campaign, item__is_gold=False)
        .exclude(rater_id__in=paused)
        .order_by("submitted_at", "pk")
        .only("item_id", "rater_id", "values", "submitted_at")
    )


def ratings_by_measure(ratings: list[Rating], keys: list[str]) -> dict[str, dict[int, list[int]]]:
    """measure → item id → scores in submission order."""
    out: dict[str, dict[int, list[int]]] = {k: defaultdict(list) for k in keys}
    for r in ratings:
        for k in keys:
            if k in r.values:
                out[k][r.item_id].append(int(r.values[k]))
    return {k: dict(v) for k, v in out.items()}


def _state_key(campaign: Campaign) -> str:
    # created_at keeps keys unique when a database is recreated and primary keys start over (tests, restores).
    agg = Rating.objects.filter(campaign=campaign).aggregate(n=Count("pk"), last=Max("pk"), at=Max("submitted_at"))
    statuses = list(RaterStatus.objects.filter(campaign=campaign, paused=True).values_list("rater_id", flat=True))
    stamp = (
        f"{campaign.created_at.timestamp() if campaign.created_at else 0}:{agg['at'].timestamp() if agg['at'] else 0}"
    )
    return f"rating-agreement:v2:{campaign.pk}:{stamp}:{agg['n']}:{agg['last']}:{sorted(statuses)}"


def campaign_agreement(*, campaign: Campaign, n_boot: int = 200) -> dict[str, Any]:
    """Per-measure kappa (raw, after ECAsT filtering), alpha with CI, labels, per-rater agreement; cached on state."""
    key = f"{_state_key(campaign)}:{n_boot}"
    cached = cache.get(key)
    if cached is not None:
        return cached
    ratings = counted_ratings(campaign=campaign)
    keys = campaign.measure_keys
    by_measure = ratings_by_measure(ratings, keys)
    n = campaign.raters_per_item
    measures = {}
    for m in campaign.measures:
        rep = agreement.measure_report(by_measure[m["key"]], n, n_boot=n_boot, seed=campaign.seed)
        rep["name"] = m["name"]
        measures[m["key"]] = rep
    rater_rows = defaultdict(list)
    for k in keys:
        for r in ratings:
            if k in r.values:
                rater_rows[k].append((r.item_id, r.rater_id, int(r.values[k])))
    per_rater: dict[int, dict[str, Any]] = {}
    for k in keys:
        for rater_id, st in agreement.rater_majority_agreement(rater_rows[k]).items():
            tot = per_rater.setdefault(rater_id, {"agree": 0, "compared": 0, "ratings": 0})
            tot["agree"] += st["agree"]
            tot["compared"] += st["compared"]
            tot["ratings"] += st["ratings"]
    for st in per_rater.values():
        st["rate"] = st["agree"] / st["compared"] if st["compared"] else None
    kept_any = set().union(*(set(rep["kept"]) for rep in measures.values())) if measures else set()
    result = {
        "measures": measures,
        "per_rater": per_rater,
        "n_ratings": len(ratings),
        "n_items_kept_any": len(kept_any),
        "raters_per_item": n,
    }
    cache.set(key, result, 3600)
    return result


def item_labels(*, campaign: Campaign, report: dict[str, Any] | None = None) -> dict[int, dict[str, int | None]]:
    """item id → measure → label (score ≥ 3 raters agree on among the first N, on kept items), None if none."""
    report = report or campaign_agreement(campaign=campaign)
    out: dict[int, dict[str, int | None]] = defaultdict(dict)
    for key, rep in report["measures"].items():
        for item_id, label in rep["labels"].items():
            out[item_id][key] = label
    return dict(out)


def qualifying_paraphrases(*, campaign: Campaign, thresholds: dict[str, int]):
    """Manual paraphrases whose item labels reach every threshold (e.g. {"semantic_similarity": 4})."""
    labels = item_labels(campaign=campaign)
    items = dict(
        RatingItem.objects.filter(campaign=campaign, is_gold=False, paraphrase__isnull=False).values_list(
            "pk", "paraphrase_id"
        )
    )

    def passes(lab: dict[str, int | None]) -> bool:
        return all((lab.get(k) or 0) >= v for k, v in thresholds.items())

    ok = [items[i] for i, lab in labels.items() if i in items and passes(lab)]
    return Paraphrase.objects.filter(pk__in=ok).select_related("turn", "pair").order_by("turn_id", "pk")


def rater_statuses(*, campaign: Campaign) -> list[RaterStatus]:
    """Every rater who took part, with gold accuracy and pause state."""
    return list(RaterStatus.objects.filter(campaign=campaign).select_related("rater").order_by("rater__username"))


def ratings_csv_lines(*, campaign: Campaign) -> Iterator[str]:
    """Every stored rating (gold and excluded ones flagged) with rater ids, as CSV lines."""
    keys = campaign.measure_keys
    paused = set(RaterStatus.objects.filter(campaign=campaign, paused=True).values_list("rater_id", flat=True))
    yield csv_line(
        ["rating_id", "item_id", "turn_id", "paraphrase_id", "passage_id", "source", "gold", "rater_id", "rater",
         *keys, "seconds_on_task", "server_seconds", "submitted_at", "excluded"]
    )  # fmt: skip
    qs = (
        Rating.objects.filter(campaign=campaign)
        .select_related("item", "rater")
        .order_by("submitted_at", "pk")
        .iterator(chunk_size=2000)
    )
    for r in qs:
        it = r.item
        yield csv_line(
            [r.pk, it.pk, it.turn_key, it.paraphrase_id or "", it.passage_id, it.source, int(it.is_gold), r.rater_id,
             r.rater.username, *[r.values.get(k, "") for k in keys], r.seconds_on_task if r.seconds_on_task is not None
             else "", round(r.server_seconds or 0, 3), r.submitted_at.isoformat(), int(r.rater_id in paused)]
        )  # fmt: skip


def labels_csv_lines(*, campaign: Campaign) -> Iterator[str]:
    """Per regular item: label per measure (empty when no 3 raters agree or the item was filtered out)."""
    report = campaign_agreement(campaign=campaign)
    labels = item_labels(campaign=campaign, report=report)
    keys = campaign.measure_keys
    counts = dict(
        Rating.objects.filter(campaign=campaign, item__is_gold=False)
        .values_list("item_id")
        .annotate(c=Count("pk"))
        .values_list("item_id", "c")
    )
    yield csv_line(["item_id", "turn_id", "paraphrase_id", "passage_id", "source", "stratum", "n_ratings", *keys])
    for it in RatingItem.objects.filter(campaign=campaign, is_gold=False).order_by("pk"):
        lab = labels.get(it.pk, {})
        yield csv_line(
            [it.pk, it.turn_key, it.paraphrase_id or "", it.passage_id, it.source, it.stratum, counts.get(it.pk, 0),
             *["" if lab.get(k) is None else lab[k] for k in keys]]
        )  # fmt: skip
