"""Rating campaigns: creation with stratified sampling, submission, undo, gold checks, pausing raters.

Leasing the next item, and the room check both paths make, live in :mod:`judging.rating.leasing`. A submission
locks in the same order as a lease (status row, assignment, item), so a double click can never create two ratings,
and an idempotency key is stored once. On PostgreSQL the common cases are single statements
(:mod:`judging.rating.statements`); on SQLite, ``transaction_mode=IMMEDIATE`` serialises writers, which gives the
same result.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from typing import Any

from django.core.exceptions import ValidationError
from django.db import connection, transaction
from django.db.models import Count, F, Q, Subquery
from django.utils import timezone

from ecast.models import Collection, Paraphrase
from judging.models import DEFAULT_MEASURES, Campaign, RaterStatus, Rating, RatingAssignment, RatingItem
from judging.rating import leasing, statements
from judging.rating.leasing import RatingError
from judging.rating.sampling import (
    SCALE_MAX,
    SCALE_MIN,
    item_from_paraphrase,
    measures_for,
    paraphrase_pool,
    stratified_sample,
)

# ---------------------------------------------------------------------------------------------- campaigns


@transaction.atomic
def campaign_create(
    *,
    name: str,
    collections: Sequence[Collection],
    sample_size: int,
    seed: int = 0,
    measure_keys: Sequence[str] | None = None,
    raters_per_item: int = 5,
    lease_seconds: int = 600,
    undo_seconds: int = 30,
    gold: Sequence[tuple[int, dict[str, int]]] = (),
    gold_threshold: float = 0.6,
    gold_min_answers: int = 3,
    gold_every: int = 5,
    gold_tolerance: int = 1,
    description: str = "",
    guidelines: str = "",
    created_by: Any = None,
    include_candidates: bool = False,
) -> Campaign:
    """Create a paraphrase rating campaign from a seeded stratified sample of the collections' approved
    paraphrases (and their unapproved candidates too when ``include_candidates``)."""
    measures = measures_for(list(measure_keys or DEFAULT_MEASURES))
    if not collections:
        raise ValidationError("choose at least one collection")
    if sample_size < 1:
        raise ValidationError("the sample size must be at least 1")
    if raters_per_item < 1:
        raise ValidationError("raters per item must be at least 1")
    if not 0 <= gold_threshold <= 1:
        raise ValidationError("the gold threshold is a fraction between 0 and 1")
    if Campaign.objects.filter(name=name).exists():
        raise ValidationError(f"a campaign named {name!r} already exists")
    pool = paraphrase_pool(collections=collections, include_candidates=include_candidates)
    if not pool:
        if include_candidates:
            raise ValidationError("the chosen collections have no manual paraphrases to rate")
        raise ValidationError(
            "the chosen collections have no approved manual paraphrases to rate; approve some on the turn pages, "
            "or include unapproved candidates"
        )
    gold_ids = {pid for pid, _ in gold}
    sample, strata = stratified_sample([p for p in pool if p.pk not in gold_ids], size=sample_size, seed=seed)
    campaign = Campaign(
        name=name,
        kind=Campaign.Kind.PARAPHRASE,
        description=description,
        guidelines=guidelines,
        measures=measures,
        raters_per_item=raters_per_item,
        lease_seconds=lease_seconds,
        undo_seconds=undo_seconds,
        gold_threshold=gold_threshold,
        gold_min_answers=gold_min_answers,
        gold_every=max(gold_every, 1),
        gold_tolerance=gold_tolerance,
        sample_size=sample_size,
        include_candidates=include_candidates,
        seed=seed,
        strata=strata,
        created_by=created_by,
    )
    campaign.full_clean()
    campaign.save()
    campaign.collections.set(collections)
    order = list(range(len(sample)))
    random.Random(seed + 1).shuffle(order)
    items = [item_from_paraphrase(campaign, p, position=pos) for p, pos in zip(sample, order, strict=True)]
    gold_paraphrases = Paraphrase.objects.select_related("turn", "turn__collection", "pair").in_bulk(gold_ids)
    for i, (pid, expected) in enumerate(gold):
        if pid not in gold_paraphrases:
            raise ValidationError(f"gold item: paraphrase {pid} does not exist")
        if not expected:
            raise ValidationError(f"gold item: paraphrase {pid} has no expected answer")
        items.append(item_from_paraphrase(campaign, gold_paraphrases[pid], position=i, gold=expected))
    RatingItem.objects.bulk_create(items)
    return campaign


@transaction.atomic
def campaign_set_status(*, campaign: Campaign, status: str) -> Campaign:
    """Open or close a campaign; a closed campaign hands out no new items (leases in flight may still submit)."""
    if status not in Campaign.Status.values:
        raise ValidationError(f"unknown status {status!r}")
    campaign.status = status
    campaign.save(update_fields=["status"])
    return campaign


# ---------------------------------------------------------------------------------------------- submission


def _validate_values(campaign: Campaign, values: Any) -> dict[str, int]:
    if not isinstance(values, dict):
        raise RatingError("values must be an object {measure: score}")
    keys = campaign.measure_keys
    missing = [k for k in keys if k not in values]
    extra = [k for k in values if k not in keys]
    if missing or extra:
        raise RatingError(f"answer every measure exactly once (missing: {missing or '-'}, unknown: {extra or '-'})")
    clean = {}
    for k in keys:
        v = values[k]
        if isinstance(v, str) and v.strip().isdigit():
            v = int(v)
        if isinstance(v, bool) or not isinstance(v, int) or not SCALE_MIN <= v <= SCALE_MAX:
            raise RatingError(f"{k}: score must be an integer {SCALE_MIN}..{SCALE_MAX}")
        clean[k] = v
    return clean


def _gold_correct(campaign: Campaign, item: RatingItem, values: dict[str, int]) -> bool:
    return all(abs(values.get(k, 0) - v) <= campaign.gold_tolerance for k, v in item.gold_expected.items())


def _recount(item_ids: Iterable[int], campaign: Campaign) -> None:
    """completed_count = ratings of non-paused raters, for the given items (rows locked first)."""
    ids = sorted(set(item_ids))
    if not ids:
        return
    list(RatingItem.objects.select_for_update().filter(pk__in=ids).order_by("pk").values_list("pk", flat=True))
    paused = RaterStatus.objects.filter(campaign=campaign, paused=True).values("rater_id")
    counts = dict(
        Rating.objects.filter(item_id__in=ids)
        .exclude(rater_id__in=paused)
        .values_list("item_id")
        .annotate(c=Count("pk"))
        .values_list("item_id", "c")
    )
    for pk in ids:
        RatingItem.objects.filter(pk=pk).update(completed_count=counts.get(pk, 0))


def _apply_pause(status: RaterStatus, paused: bool, reason: str) -> None:
    status.paused = paused
    status.paused_reason = reason if paused else ""
    status.save(update_fields=["paused", "paused_reason", "override", "updated_at"])
    _recount(
        Rating.objects.filter(campaign=status.campaign, rater=status.rater).values_list("item_id", flat=True),
        status.campaign,
    )


def _assignment_for_submit(assignment_id: int, rater: Any, key: str) -> tuple[RatingAssignment | None, int | None]:
    """The rater's assignment, locked, with its campaign and item; and the id of the rating stored under ``key``."""
    if connection.vendor == "postgresql":  # one hand-written statement: the ORM's query building costs more CPU
        row = statements.load_for_submit(assignment_id=assignment_id, rater_id=rater.pk, key=key)
        if row is None:
            campaign = Campaign.objects.filter(assignments__pk=assignment_id, assignments__rater=rater).first()
            if campaign is None:
                return None, None
            leasing.rater_status_locked(campaign, rater)  # an assignment made without one (imports, fixtures)
            row = statements.load_for_submit(assignment_id=assignment_id, rater_id=rater.pk, key=key)
            if row is None:
                return None, None
        a, c, i = row["assignment"], row["campaign"], row["item"]
        assignment = leasing.model_from_row(RatingAssignment, {**a, "rater_id": rater.pk})
        assignment.campaign = leasing.model_from_row(Campaign, {"id": a["campaign_id"], **c})
        assignment.item = leasing.model_from_row(RatingItem, {"id": a["item_id"], "campaign_id": a["campaign_id"], **i})
        return assignment, row["replay_id"]["id"]
    stored_under_key = Rating.objects.filter(rater=rater, idempotency_key=key).values("pk")[:1]
    found = (
        RatingAssignment.objects.select_related("campaign", "item")
        .annotate(replay_id=Subquery(stored_under_key))
        .filter(pk=assignment_id, rater=rater)
        .first()
    )
    return (found, found.replay_id) if found else (None, None)


def _replay(assignment: RatingAssignment, rater: Any, key: str) -> tuple[Rating, bool]:
    """The answer already stored under ``key``, or the reason a new one is refused."""
    stored = Rating.objects.filter(rater=rater, idempotency_key=key).first()
    if stored is None:
        raise RatingError("this item was already submitted", code="conflict")
    if stored.assignment_id != assignment.pk:
        raise RatingError("this idempotency key was already used for another item", code="conflict")
    return stored, False


def _store(
    assignment: RatingAssignment, rater: Any, clean: dict[str, int], key: str, seconds: float | None, now: datetime
) -> tuple[Rating | None, dict[str, Any] | None]:
    """Write the rating and its counts; (None, None) when the rater already used ``key``. The second value is the
    rater's status after the write (None when they have no status row)."""
    item, campaign = assignment.item, assignment.campaign
    gold_ok = item.is_gold and _gold_correct(campaign, item, clean)
    submitted_at = timezone.now()
    server_seconds = (now - assignment.leased_at).total_seconds()
    was_leased = assignment.status == RatingAssignment.Status.LEASED
    if connection.vendor == "postgresql":
        row = statements.store_rating(
            assignment_id=assignment.pk, item_id=item.pk, campaign_id=campaign.pk, rater_id=rater.pk, values=clean,
            key=key, seconds_on_task=seconds, server_seconds=server_seconds, submitted_at=submitted_at, now=now,
            was_leased=was_leased, gold=item.is_gold, gold_ok=gold_ok,
        )  # fmt: skip
        if row is None:
            return None, None
        rating_id, submitted_at, after = row["rating_id"], row["submitted_at"], row["status"]
    else:  # SQLite serialises writers: the same writes, one by one
        rating_id = Rating.objects.create(
            assignment=assignment, item=item, campaign=campaign, rater=rater, values=clean, idempotency_key=key,
            seconds_on_task=seconds, server_seconds=server_seconds,
        ).pk  # fmt: skip
        RatingAssignment.objects.filter(pk=assignment.pk).update(
            status=RatingAssignment.Status.COMPLETED, completed_at=now
        )
        status = RaterStatus.objects.filter(campaign=campaign, rater=rater).first()
        after = None
        if status is not None:
            status.open_leases = max(status.open_leases - int(was_leased), 0)
            status.gold_answers += int(item.is_gold)
            status.gold_correct += int(gold_ok)
            status.save(update_fields=["open_leases", "gold_answers", "gold_correct", "updated_at"])
            after = {k: getattr(status, k) for k in ("paused", "override", "gold_answers", "gold_correct")}
        leases = {pk: exp for pk, exp in (item.leases or {}).items() if pk != str(assignment.pk)}
        counts = 0 if after and after["paused"] else 1
        RatingItem.objects.filter(pk=item.pk).update(completed_count=F("completed_count") + counts, leases=leases)
    rating = Rating(
        pk=rating_id, assignment=assignment, item=item, campaign=campaign, rater=rater, values=clean,
        idempotency_key=key, seconds_on_task=seconds, server_seconds=server_seconds, submitted_at=submitted_at,
    )  # fmt: skip
    rating._state.adding, rating._state.db = False, "default"
    return rating, after


@transaction.atomic
def rating_submit(
    *,
    assignment_id: int,
    rater: Any,
    values: Any,
    idempotency_key: str,
    seconds_on_task: float | None = None,
    now: datetime | None = None,
) -> tuple[Rating, bool]:
    """Store the rater's answer for their assignment once; returns (rating, created). A replayed key returns the
    stored rating unchanged.

    Two statements on PostgreSQL: lock the rater's status row and the assignment and read them (with the campaign,
    the item and any rating stored under the key), then write. Retries of one submission queue on those locks; a
    late retry sees the assignment completed and answers with the stored rating."""
    now = now or timezone.now()
    key = (idempotency_key or "").strip()
    if not key or len(key) > 64:
        raise RatingError("an idempotency key (1–64 characters) is required")
    assignment, replay_id = _assignment_for_submit(assignment_id, rater, key)
    if assignment is None:
        raise RatingError("no such assignment for you", code="not_found")
    if replay_id is not None or assignment.status == RatingAssignment.Status.COMPLETED:
        return _replay(assignment, rater, key)
    campaign = assignment.campaign
    clean = _validate_values(campaign, values)
    if assignment.status != RatingAssignment.Status.LEASED or assignment.expires_at <= now:
        # A late answer counts only while the item still has room: check it on the item row, locked and fresh.
        assignment.item = RatingItem.objects.select_for_update().get(pk=assignment.item_id)
        if not leasing.has_room(assignment.item, campaign, now, exclude_pk=assignment.pk):
            raise RatingError("your lease on this item ran out and other raters completed it", code="gone")
    if seconds_on_task is not None and not 0 <= float(seconds_on_task) < 86400:
        raise RatingError("seconds_on_task must be between 0 and 86400")
    rating, after = _store(assignment, rater, clean, key, seconds_on_task, now)
    if rating is None:  # the key was used meanwhile by another submission of this rater
        return _replay(assignment, rater, key)
    if assignment.item.is_gold and after is not None:
        _auto_pause_check(campaign, rater, after)
    return rating, True


def _auto_pause_check(campaign: Campaign, rater: Any, after: dict[str, Any]) -> None:
    acc = after["gold_correct"] / after["gold_answers"] if after["gold_answers"] else None
    if after["override"] or after["paused"] or acc is None or after["gold_answers"] < campaign.gold_min_answers:
        return
    if acc < campaign.gold_threshold:
        status = leasing.rater_status_locked(campaign, rater)
        _apply_pause(status, True, f"gold accuracy {acc:.0%} below {campaign.gold_threshold:.0%}")


@transaction.atomic
def rating_undo(*, assignment_id: int, rater: Any, now: datetime | None = None) -> RatingAssignment:
    """Withdraw the rater's last submission within the undo window; the item is leased to them again."""
    now = now or timezone.now()
    assignment = RatingAssignment.objects.select_related("campaign").filter(pk=assignment_id, rater=rater).first()
    if assignment is None:
        raise RatingError("no such assignment for you", code="not_found")
    campaign = assignment.campaign
    status = leasing.rater_status_locked(campaign, rater)
    assignment = RatingAssignment.objects.select_for_update().get(pk=assignment.pk)
    rating = Rating.objects.filter(assignment=assignment).first()
    if rating is None:
        raise RatingError("nothing to undo: this item has no stored rating", code="conflict")
    if (now - rating.submitted_at).total_seconds() > campaign.undo_seconds:
        raise RatingError(f"undo is possible for {campaign.undo_seconds} s after submitting", code="conflict")
    item = RatingItem.objects.select_for_update().get(pk=assignment.item_id)
    assignment.history = [
        *assignment.history,
        {"values": rating.values, "submitted_at": rating.submitted_at.isoformat(), "undone_at": now.isoformat()},
    ]
    rating.delete()
    assignment.status = RatingAssignment.Status.LEASED
    assignment.leased_at, assignment.expires_at = now, now + timedelta(seconds=campaign.lease_seconds)
    assignment.completed_at = None
    assignment.save(update_fields=["history", "status", "leased_at", "expires_at", "completed_at"])
    leasing.record_lease(item, assignment, now)
    if not status.paused:
        RatingItem.objects.filter(pk=item.pk).update(completed_count=F("completed_count") - 1)
    status.open_leases += 1
    if item.is_gold and status.gold_answers:
        status.gold_answers -= 1
        status.gold_correct -= int(_gold_correct(campaign, item, rating.values))
    status.save(update_fields=["open_leases", "gold_answers", "gold_correct", "updated_at"])
    return assignment


@transaction.atomic
def rater_pause(*, campaign: Campaign, rater: Any, reason: str = "paused by an admin") -> RaterStatus:
    """Pause a rater: no new items, and their ratings are excluded (items return to the queue)."""
    status = leasing.rater_status_locked(campaign, rater)
    _apply_pause(status, True, reason)
    return status


@transaction.atomic
def rater_resume(*, campaign: Campaign, rater: Any) -> RaterStatus:
    """Reinstate a paused rater: their ratings count again and automatic gold pausing stops for them."""
    status = leasing.rater_status_locked(campaign, rater)
    status.override = True
    _apply_pause(status, False, "")
    return status


def lease_expire_stale(*, now: datetime | None = None) -> int:
    """Mark leases past their expiry as expired (housekeeping; correctness never depends on it)."""
    now = now or timezone.now()
    return (
        RatingAssignment.objects.filter(
            status=RatingAssignment.Status.LEASED, expires_at__lte=now - timedelta(minutes=5)
        )
        .filter(~Q(rating__isnull=False))
        .update(status=RatingAssignment.Status.EXPIRED)
    )
