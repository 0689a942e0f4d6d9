"""Leasing rating items: the rater's next item (one statement on PostgreSQL, the general path elsewhere), the
per-rater item order, and the room check every lease and submission makes on the item row.

Concurrency: "completed + live leases <= N" is checked on the item row itself (``completed_count`` and the ``leases``
map), under its row lock, so it holds however many raters ask at once. Each rater's requests are serialised on their
``RaterStatus`` row. Rows are always locked in one order: status row, assignment, item. On PostgreSQL the common case
is a single statement (:mod:`judging.rating.statements`); on SQLite, ``transaction_mode=IMMEDIATE`` serialises
writers, which gives the same result.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db import IntegrityError, connection, transaction
from django.db.models import BigIntegerField, Count, F, OuterRef, Subquery, Value
from django.db.models.functions import Cast, Coalesce
from django.utils import timezone

from ecast.core.errors import DomainError
from judging.models import Campaign, RaterStatus, RatingAssignment, RatingItem
from judging.rating import statements


class RatingError(DomainError):
    """A refused rating operation; ``code`` (invalid, not_found, conflict, gone, paused) decides the HTTP status."""


def model_from_row(model: Any, values: dict[str, Any]) -> Any:
    """A model instance from some of its columns (the others load on first access, as with ``only()``)."""
    names = [f.attname for f in model._meta.concrete_fields if f.attname in values]
    return model.from_db("default", names, [values[n] for n in names])


def rater_status_locked(campaign: Campaign, rater: Any) -> RaterStatus:
    """The rater's status row, locked: serialises one rater's concurrent requests (double clicks, retries)."""
    # One statement on every request but a rater's first in the campaign.
    existing = RaterStatus.objects.select_for_update().filter(campaign=campaign, rater=rater).first()
    if existing is not None:
        return existing
    try:
        with transaction.atomic():
            RaterStatus.objects.get_or_create(campaign=campaign, rater=rater)
    except IntegrityError:  # a concurrent first request created it
        pass
    return RaterStatus.objects.select_for_update().get(campaign=campaign, rater=rater)


def live_leases(item: RatingItem, now: datetime, exclude_pk: int | None = None) -> int:
    """Leases on the item that have not run out (read from the item row, which the caller holds locked)."""
    cutoff, skip = now.timestamp(), str(exclude_pk)
    return sum(1 for pk, expires in (item.leases or {}).items() if float(expires) > cutoff and pk != skip)


def has_room(item: RatingItem, campaign: Campaign, now: datetime, exclude_pk: int | None = None) -> bool:
    if item.is_gold:
        return True
    return item.completed_count + live_leases(item, now, exclude_pk) < campaign.raters_per_item


def record_lease(item: RatingItem, assignment: RatingAssignment, now: datetime) -> None:
    """Write the assignment's expiry into its item's lease map, dropping entries that ran out (item row locked)."""
    cutoff = now.timestamp()
    leases = {pk: expires for pk, expires in (item.leases or {}).items() if float(expires) > cutoff}
    leases[str(assignment.pk)] = assignment.expires_at.timestamp()
    item.leases = leases
    RatingItem.objects.filter(pk=item.pk).update(leases=leases)


# Per-rater order: position ↦ ((position · a + b) mod P)² mod P, seeded by campaign seed and rater, computed in SQL
# on any backend in 64-bit integers. It is a quadratic in the position with coefficients that look random, so every
# rater gets an order of their own. The square matters: the affine map alone walks consecutive positions in steps of
# a, so on a small campaign about one rater in six got the items in their plain order, reversed, or a rotation of it.
# Two positions share a value only when they add up to one number fixed by (a, b) mod P (rare: the positions are far
# below P); the position breaks such a tie.
SHUFFLE_PRIME = 2_147_483_647


def rater_order_value(position: int, key: tuple[int, int]) -> int:
    """The sort value of an item's position in the rater's order (the SQL of both lease paths computes the same)."""
    a, b = key
    x = (position * a + b) % SHUFFLE_PRIME
    return x * x % SHUFFLE_PRIME


def rater_order_key(*, seed: int, rater_id: int) -> tuple[int, int]:
    """(a, b) of the rater's item permutation: the same for the same campaign seed and rater, different otherwise."""
    digest = hashlib.sha256(f"{seed}:{rater_id}".encode()).digest()
    a = int.from_bytes(digest[:8], "big") % (SHUFFLE_PRIME - 1) + 1
    b = int.from_bytes(digest[8:16], "big") % SHUFFLE_PRIME
    return a, b


def _candidates(campaign: Campaign, rater: Any, now: datetime):
    """Open regular items the rater has never had, with room, nearest to completion first, then in the rater's own
    seeded order (so no two raters see the items in the same sequence)."""
    taken = RatingAssignment.objects.filter(campaign=campaign, rater=rater).values("item_id")
    live = (
        RatingAssignment.objects.filter(item=OuterRef("pk"), status=RatingAssignment.Status.LEASED, expires_at__gt=now)
        .order_by()
        .values("item")
        .annotate(c=Count("pk"))
        .values("c")
    )
    a, b = rater_order_key(seed=campaign.seed, rater_id=rater.pk)
    big = BigIntegerField()
    return (
        RatingItem.objects.filter(campaign=campaign, is_gold=False, completed_count__lt=campaign.raters_per_item)
        .exclude(pk__in=taken)
        .annotate(load=F("completed_count") + Coalesce(Subquery(live), Value(0)))
        .filter(load__lt=campaign.raters_per_item)
        .annotate(
            step=(Cast("position", big) * Value(a, output_field=big) + Value(b, output_field=big))
            % Value(SHUFFLE_PRIME, output_field=big)
        )
        .annotate(shuffle=F("step") * F("step") % Value(SHUFFLE_PRIME, output_field=big))
        # Most completed ratings first (finished items accumulate), then the rater's own order.
        .order_by("-completed_count", "shuffle", "position")
    )


def _lease(item: RatingItem, campaign: Campaign, rater: Any, now: datetime) -> RatingAssignment:
    assignment = RatingAssignment.objects.create(
        item=item,
        campaign=campaign,
        rater=rater,
        leased_at=now,
        expires_at=now + timedelta(seconds=campaign.lease_seconds),
    )
    record_lease(item, assignment, now)
    return assignment


def _next_gold(campaign: Campaign, rater: Any, now: datetime, done: int) -> RatingAssignment | None:
    if (done + 1) % campaign.gold_every:
        return None
    taken = RatingAssignment.objects.filter(campaign=campaign, rater=rater).values("item_id")
    gold = (
        RatingItem.objects.select_for_update()
        .filter(campaign=campaign, is_gold=True)
        .exclude(pk__in=taken)
        .order_by("position")
        .first()
    )
    return _lease(gold, campaign, rater, now) if gold else None


def _next_regular(campaign: Campaign, rater: Any, now: datetime) -> RatingAssignment | None:
    for attempt in range(4):
        qs = _candidates(campaign, rater, now)
        # The last attempt waits for the lock instead of skipping, so a busy queue never reads as empty.
        locked = qs.select_for_update(skip_locked=attempt < 3, of=("self",))[:1]
        candidate = next(iter(locked), None)
        if candidate is None:
            if attempt < 3 and qs.exists():
                continue
            return None
        # The room check reads the locked row's lease map: the candidate query's snapshot may predate a lease.
        if has_room(candidate, campaign, now):
            return _lease(candidate, campaign, rater, now)
    return None


@dataclass(frozen=True)
class Lease:
    """What ``next`` answers: the rater's assignment (None when nothing is left) and how many items they finished."""

    assignment: RatingAssignment | None
    done: int


def _fast_lease(campaign: Campaign, rater: Any, now: datetime) -> Lease | None:
    """The one-statement lease (PostgreSQL); None when the general path must decide."""
    row = statements.lease_next(
        campaign_id=campaign.pk,
        rater_id=rater.pk,
        now=now,
        order_key=rater_order_key(seed=campaign.seed, rater_id=rater.pk),
        prime=SHUFFLE_PRIME,
    )
    if row is None or row["assignment_id"] is None:
        return None  # not applicable, or no item free at a glance: the general path also waits for locked ones
    item = model_from_row(
        RatingItem,
        {"id": row["item_id"], "campaign_id": campaign.pk, "context": row["context"],
         "passage_id": row["passage_id"], "passage_text": row["passage_text"]},
    )  # fmt: skip
    assignment = model_from_row(
        RatingAssignment,
        {"id": row["assignment_id"], "item_id": item.pk, "campaign_id": campaign.pk, "rater_id": rater.pk,
         "status": RatingAssignment.Status.LEASED, "leased_at": now, "expires_at": row["expires_at"],
         "completed_at": None, "history": []},
    )  # fmt: skip
    assignment.item, assignment.campaign = item, campaign
    return Lease(assignment=assignment, done=row["done"])


def assignment_lease(*, campaign: Campaign, rater: Any, now: datetime | None = None) -> Lease:
    """The rater's live lease (renewed), else a new lease on the best open item, with the rater's finished count.

    On PostgreSQL a rater without an open lease gets the new one in a single statement (see
    :mod:`judging.rating.statements`, which is atomic by itself), after their status row is made on their first
    request; everything else takes the general path."""
    now = now or timezone.now()
    if connection.vendor == "postgresql":
        fast = _fast_lease(campaign, rater, now)
        if fast is None and RaterStatus.objects.get_or_create(campaign=campaign, rater=rater)[1]:
            # A rater's first request in the campaign: the statement needs their status row, which is there now.
            # Without this every rater's first item took the general path, whose search for an item is many times
            # the statement's: when raters arrive together, those first requests were the whole latency tail.
            fast = _fast_lease(campaign, rater, now)
        if fast is not None:
            return fast
    return _lease_general(campaign, rater, now)


def assignment_next(*, campaign: Campaign, rater: Any, now: datetime | None = None) -> RatingAssignment | None:
    """The rater's live lease (renewed), else a new lease on the best open item; None when nothing is left."""
    return assignment_lease(campaign=campaign, rater=rater, now=now).assignment


@transaction.atomic
def _lease_general(campaign: Campaign, rater: Any, now: datetime) -> Lease:
    status = rater_status_locked(campaign, rater)
    if status.paused:
        raise RatingError("You are paused in this campaign; please contact the organisers.", code="paused")
    # The campaign may come from the shared cache: the fields that decide a lease are read fresh.
    campaign.refresh_from_db(fields=["status", "raters_per_item", "lease_seconds", "gold_every"])
    lease = timedelta(seconds=campaign.lease_seconds)
    mine = RatingAssignment.objects.filter(campaign=campaign, rater=rater, status=RatingAssignment.Status.LEASED)
    found = None
    for current in mine.order_by("-leased_at"):
        item = RatingItem.objects.select_for_update().get(pk=current.item_id)
        if current.expires_at > now:
            current.expires_at = now + lease
            current.save(update_fields=["expires_at"])
        elif campaign.status == Campaign.Status.OPEN and has_room(item, campaign, now, exclude_pk=current.pk):
            current.leased_at, current.expires_at = now, now + lease
            current.save(update_fields=["leased_at", "expires_at"])
        else:
            current.status = RatingAssignment.Status.EXPIRED
            current.save(update_fields=["status"])
            continue
        record_lease(item, current, now)
        found = current
        break
    done = RatingAssignment.objects.filter(
        campaign=campaign, rater=rater, status=RatingAssignment.Status.COMPLETED
    ).count()
    if found is None and campaign.status == Campaign.Status.OPEN:
        found = _next_gold(campaign, rater, now, done) or _next_regular(campaign, rater, now)
    # The exact count, so this rater's next request can take the one-statement path again.
    status.open_leases = mine.count()
    status.save(update_fields=["open_leases"])
    return Lease(assignment=found, done=done)
