"""Leasing: no item above N, the nearest-to-complete item first, reloads and abandoned leases, closed campaigns,
and each rater's own seeded item order."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from django.utils import timezone

from judging.models import Rating, RatingAssignment, RatingItem
from judging.rating import leasing, services
from tests import factories
from tests.judging.rating.helpers import answer, rate_one

pytestmark = pytest.mark.django_db


def test_no_item_collects_more_than_n_ratings_and_no_rater_gets_an_item_twice():
    coll = factories.paraphrase_collection()
    c = factories.rating_campaign(coll, size=4, n=2)
    raters = factories.users(5)
    for _ in range(6):
        for u in raters:
            rate_one(c, u)
    counts = [it.completed_count for it in c.items.all()]
    assert counts == [2, 2, 2, 2]
    assert Rating.objects.filter(campaign=c).count() == 8
    pairs = list(RatingAssignment.objects.filter(campaign=c).values_list("item_id", "rater_id"))
    assert len(pairs) == len(set(pairs))
    assert leasing.assignment_next(campaign=c, rater=raters[0]) is None


def test_items_near_completion_are_served_first():
    coll = factories.paraphrase_collection()
    c = factories.rating_campaign(coll, size=4, n=3)
    a, b = factories.users(2)
    first = rate_one(c, a)
    nxt = leasing.assignment_next(campaign=c, rater=b)
    assert nxt.item_id == first.item_id


def test_a_reload_returns_the_same_lease_and_extends_it():
    coll = factories.paraphrase_collection()
    c = factories.rating_campaign(coll, size=4, n=1)
    (u,) = factories.users(1)
    a1 = leasing.assignment_next(campaign=c, rater=u)
    a2 = leasing.assignment_next(campaign=c, rater=u)
    assert a1.pk == a2.pk and a2.expires_at >= a1.expires_at


def test_an_abandoned_lease_returns_the_item_to_the_queue():
    coll = factories.paraphrase_collection()
    c = factories.rating_campaign(coll, size=1, n=1, lease_seconds=60)
    a, b = factories.users(2)
    lease = leasing.assignment_next(campaign=c, rater=a)
    assert leasing.assignment_next(campaign=c, rater=b) is None  # the only slot is leased
    later = timezone.now() + timedelta(seconds=61)
    other = leasing.assignment_next(campaign=c, rater=b, now=later)
    assert other is not None and other.item_id == lease.item_id
    # The late rater cannot push the item above N any more.
    with pytest.raises(services.RatingError) as exc:
        services.rating_submit(assignment_id=lease.pk, rater=a, values=answer(c), idempotency_key="late", now=later)
    assert exc.value.code == "gone"
    services.rating_submit(assignment_id=other.pk, rater=b, values=answer(c), idempotency_key="k", now=later)
    assert RatingItem.objects.get(pk=lease.item_id).completed_count == 1


def test_a_closed_campaign_hands_out_nothing_new():
    coll = factories.paraphrase_collection()
    c = factories.rating_campaign(coll, size=2, n=1)
    (u,) = factories.users(1)
    services.campaign_set_status(campaign=c, status="closed")
    assert leasing.assignment_next(campaign=c, rater=u) is None


def _sequence(c, user) -> list[int]:
    order = []
    while (a := leasing.assignment_next(campaign=c, rater=user)) is not None:
        order.append(a.item.position)
        services.rating_submit(assignment_id=a.pk, rater=user, values=answer(c), idempotency_key=uuid.uuid4().hex)
    return order


def test_each_rater_gets_the_items_in_their_own_seeded_order():
    coll = factories.paraphrase_collection(topics=4, turns=4)
    c = factories.rating_campaign(coll, size=12, n=5, gold_every=1000)
    first, second = factories.users(2)
    # Items with more ratings come first, so each rater here sees a whole level in their own order.
    seq_first, seq_second = _sequence(c, first), _sequence(c, second)
    positions = sorted(c.items.filter(is_gold=False).values_list("position", flat=True))
    assert sorted(seq_first) == sorted(seq_second) == positions
    assert seq_first != seq_second and seq_first != positions

    def expected(user):
        key = leasing.rater_order_key(seed=c.seed, rater_id=user.pk)
        return sorted(positions, key=lambda p: (leasing.rater_order_value(p, key), p))

    assert seq_first == expected(first) and seq_second == expected(second)
    again = factories.rating_campaign(coll, size=12, n=5, gold_every=1000, seed=c.seed)
    assert _sequence(again, first) == seq_first  # same seed, same rater: same order


def test_the_order_key_is_a_permutation_for_any_rater():
    for rater_id in range(1, 30):
        key = leasing.rater_order_key(seed=3, rater_id=rater_id)
        assert 0 < key[0] < leasing.SHUFFLE_PRIME and 0 <= key[1] < leasing.SHUFFLE_PRIME
        assert len({leasing.rater_order_value(p, key) for p in range(5000)}) == 5000


def test_raters_of_a_small_campaign_get_orders_of_their_own_not_the_plain_order_or_its_rotations():
    positions = list(range(12))
    orders = []
    for rater_id in range(1, 201):
        key = leasing.rater_order_key(seed=7, rater_id=rater_id)
        orders.append(tuple(sorted(positions, key=lambda p, key=key: (leasing.rater_order_value(p, key), p))))
    rotations = {tuple(positions[i:] + positions[:i]) for i in range(12)}
    rotations |= {tuple(reversed(r)) for r in rotations}
    # The affine map alone gives 32 of these 200 raters a rotation (or its reverse) and 148 distinct orders.
    assert sum(order in rotations for order in orders) <= 2
    assert len(set(orders)) >= 196
