"""The rater's hot path: how many SQL statements next and submit cost, and that what is cached never outlives a change.

Statement counts are deterministic, so they are asserted exactly; transaction control (BEGIN, COMMIT, savepoints) is
not counted as a statement.
"""

from __future__ import annotations

import importlib
import threading
from datetime import timedelta

import pytest
from django.apps import apps
from django.contrib.auth.models import Group
from django.db import connection, connections
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from ecast.core.permissions import RATER
from judging.models import Campaign, RaterStatus, Rating, RatingAssignment, RatingItem
from judging.rating import leasing, selectors, services
from tests import factories
from tests.concurrency_helpers import require_postgres
from tests.judging.rating.helpers import answer

pytestmark = pytest.mark.django_db

TRANSACTION_CONTROL = ("BEGIN", "COMMIT", "ROLLBACK", "SAVEPOINT", "RELEASE SAVEPOINT", "ROLLBACK TO SAVEPOINT")


def _needs_postgresql() -> None:
    require_postgres("the one-statement paths are PostgreSQL's (SQLite keeps the general path)")


def _statements(queries: CaptureQueriesContext) -> list[str]:
    return [q["sql"] for q in queries.captured_queries if not q["sql"].strip().upper().startswith(TRANSACTION_CONTROL)]


def _client(user) -> APIClient:
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    return api


def _next(api: APIClient, c: Campaign):
    return api.post(reverse("api-rating-next", args=[c.pk]))


def _submit(api: APIClient, assignment_id: int, c: Campaign, key: str):
    url = reverse("api-rating-submit", args=[assignment_id])
    return api.post(url, {"values": answer(c), "idempotency_key": key}, format="json")


@pytest.fixture
def camp(db) -> Campaign:
    return factories.rating_campaign(factories.paraphrase_collection(topics=2, turns=4), size=8, n=2, gold_every=1000)


def test_next_leases_a_new_item_in_one_statement_and_submit_stores_it_in_two(camp):
    _needs_postgresql()
    (user,) = factories.users(1)
    api = _client(user)
    selectors.campaign_cached(campaign_id=camp.pk)  # as after any other rater's request
    with CaptureQueriesContext(connection) as queries:
        first = _next(api, camp).json()["assignment"]
    # A rater's first call (its token and role are looked up once, then cached): the statement finds no status row;
    # the row is made (look-up, insert) and the statement leases at once, rather than the general path's search.
    rating = [q for q in _statements(queries) if "judging_" in q]
    assert len(rating) == 4, rating
    assert "judging_raterstatus" in rating[2] and rating[2].startswith("INSERT"), rating
    status = RaterStatus.objects.get(campaign=camp, rater=user)
    assert first is not None and status.open_leases == 1
    assert RatingAssignment.objects.get(pk=first["assignment_id"]).status == "leased"
    assert str(first["assignment_id"]) in RatingItem.objects.get(pk=first["item_id"]).leases
    assert _submit(api, first["assignment_id"], camp, "k1").status_code == 201

    with CaptureQueriesContext(connection) as queries:
        r = _next(api, camp)
    assert r.status_code == 200 and r.json()["done"] == 1
    leased = r.json()["assignment"]
    assert len(_statements(queries)) == 1, _statements(queries)
    assert leased["item_id"] != first["item_id"] and leased["passage_text"] and leased["measures"]
    assert RatingAssignment.objects.get(pk=leased["assignment_id"]).status == "leased"
    assert str(leased["assignment_id"]) in RatingItem.objects.get(pk=leased["item_id"]).leases

    with CaptureQueriesContext(connection) as queries:
        r = _submit(api, leased["assignment_id"], camp, "k2")
    assert r.status_code == 201 and len(_statements(queries)) == 2, _statements(queries)
    item = RatingItem.objects.get(pk=leased["item_id"])
    assert item.completed_count == 1 and item.leases == {}
    assert RaterStatus.objects.get(campaign=camp, rater=user).open_leases == 0

    with CaptureQueriesContext(connection) as queries:
        again = _submit(api, leased["assignment_id"], camp, "k2")  # a double click
    assert again.status_code == 200 and again.json()["rating_id"] == r.json()["rating_id"]
    assert len(_statements(queries)) == 2
    assert Rating.objects.filter(rater=user).count() == 2


def _best_item_by_brute_force(c: Campaign, user, now) -> int | None:
    """The item the rater should get: open regular items with room they never had, most completed first, then in
    their own seeded order (what the general path's query orders by), from the rows as Python reads them."""
    key = leasing.rater_order_key(seed=c.seed, rater_id=user.pk)
    taken = set(RatingAssignment.objects.filter(campaign=c, rater=user).values_list("item_id", flat=True))
    open_items = [
        it
        for it in RatingItem.objects.filter(campaign=c, is_gold=False)
        if it.pk not in taken and leasing.has_room(it, c, now)
    ]
    open_items.sort(key=lambda it: (-it.completed_count, leasing.rater_order_value(it.position, key), it.position))
    return open_items[0].pk if open_items else None


@pytest.mark.parametrize("seed", range(6))
def test_the_one_statement_lease_picks_the_item_brute_force_picks_at_every_level(seed):
    _needs_postgresql()
    import random

    rng = random.Random(seed)
    n = 4
    c = factories.rating_campaign(factories.paraphrase_collection(topics=5, turns=6), size=30, n=n, gold_every=1000)
    raters = factories.users(3, prefix=f"lvl{seed}-")
    user, others = raters[0], raters[1:]
    now = timezone.now()
    live, expired = (now + timedelta(minutes=5)).timestamp(), (now - timedelta(minutes=5)).timestamp()
    items = list(c.items.filter(is_gold=False))
    # Counts spread over every level (full items included), lease maps with live and run-out entries, and items
    # the rater already had, which must be passed over whatever their level.
    for i, it in enumerate(items):
        it.completed_count = rng.choice([0, 0, 1, 2, 3, n])
        it.leases = {str(900_000 + 10 * i + k): rng.choice([live, expired]) for k in range(rng.randint(0, 2))}
        it.save(update_fields=["completed_count", "leases"])
    for it in rng.sample(items, 8):
        RatingAssignment.objects.create(item=it, campaign=c, rater=user, status="completed", leased_at=now,
                                        expires_at=now, completed_at=now)  # fmt: skip
    RaterStatus.objects.create(campaign=c, rater=user)
    for other in others:
        RaterStatus.objects.create(campaign=c, rater=other)
    picked = []
    for _ in range(6):
        expected = _best_item_by_brute_force(c, user, now)
        with CaptureQueriesContext(connection) as queries:
            lease = leasing.assignment_lease(campaign=c, rater=user, now=now)
        got = lease.assignment.item_id if lease.assignment else None
        assert got == expected
        if got is None:
            break
        assert len(_statements(queries)) == 1  # the one statement chose it, not the general path
        picked.append(RatingItem.objects.get(pk=got).completed_count)
        # The rater answers it (so their next call takes the one statement again) and another rater's lease
        # changes the room elsewhere.
        services.rating_submit(assignment_id=lease.assignment.pk, rater=user, values=answer(c),
                               idempotency_key=f"k{len(picked)}", now=now)  # fmt: skip
        leasing.assignment_lease(campaign=c, rater=others[len(picked) % 2], now=now)
    assert picked and picked == sorted(picked, reverse=True)  # most completed first, level by level


def test_a_late_submit_checks_the_room_in_a_third_statement(camp):
    _needs_postgresql()
    (user,) = factories.users(1)
    a = leasing.assignment_next(campaign=camp, rater=user)
    RatingAssignment.objects.filter(pk=a.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    with CaptureQueriesContext(connection) as queries:
        _, created = services.rating_submit(assignment_id=a.pk, rater=user, values=answer(camp), idempotency_key="x")
    assert created and len(_statements(queries)) == 3


def test_a_reload_with_an_open_lease_renews_it_on_the_general_path(camp):
    _needs_postgresql()
    (user,) = factories.users(1)
    first = leasing.assignment_next(campaign=camp, rater=user)
    status = RaterStatus.objects.get(campaign=camp, rater=user)
    assert status.open_leases == 1
    again = leasing.assignment_next(campaign=camp, rater=user, now=timezone.now() + timedelta(seconds=5))
    assert again.pk == first.pk and again.expires_at > first.expires_at
    leases = RatingItem.objects.get(pk=first.item_id).leases
    assert leases == {str(first.pk): again.expires_at.timestamp()}


@pytest.mark.django_db(transaction=True)
def test_simultaneous_next_calls_of_one_rater_lease_one_item():
    _needs_postgresql()
    c = factories.rating_campaign(factories.paraphrase_collection(topics=2, turns=4), size=8, n=2, gold_every=1000)
    (user,) = factories.users(1)
    first = leasing.assignment_next(campaign=c, rater=user)
    services.rating_submit(assignment_id=first.pk, rater=user, values=answer(c), idempotency_key="warm")
    barrier = threading.Barrier(8)
    got: list[int | None] = []
    errors: list[BaseException] = []

    def click():
        try:
            barrier.wait()
            a = leasing.assignment_next(campaign=c, rater=user)
            got.append(a.pk if a else None)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=click) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not errors, errors
    assert len(set(got)) == 1 and None not in got
    assert RatingAssignment.objects.filter(rater=user, status="leased").count() == 1
    assert RaterStatus.objects.get(campaign=c, rater=user).open_leases == 1


def test_a_removed_role_and_a_revoked_token_stop_next_and_submit_at_once(camp, rater):
    api = _client(rater)
    a = _next(api, camp).json()["assignment"]  # caches the token, the roles and the campaign
    assert _next(api, camp).status_code == 200
    rater.groups.remove(Group.objects.get(name=RATER))
    assert _next(api, camp).status_code == 403
    assert _submit(api, a["assignment_id"], camp, "k").status_code == 403
    rater.groups.add(Group.objects.get(name=RATER))
    assert _next(api, camp).status_code == 200
    Token.objects.filter(user=rater).delete()
    assert _next(api, camp).status_code == 401
    assert _submit(api, a["assignment_id"], camp, "k").status_code == 401
    assert not Rating.objects.exists()


def test_renaming_or_deleting_the_rater_group_takes_the_role_away_at_once(camp, rater):
    api = _client(rater)
    assert _next(api, camp).status_code == 200
    group = Group.objects.get(name=RATER)
    group.name = "former raters"
    group.save()
    assert _next(api, camp).status_code == 403
    group.name = RATER
    group.save()
    assert _next(api, camp).status_code == 200
    group.delete()
    assert _next(api, camp).status_code == 403


def test_a_changed_campaign_is_never_served_from_the_cache(camp, rater):
    api = _client(rater)
    a = _next(api, camp).json()["assignment"]
    assert [m["key"] for m in a["measures"]] == camp.measure_keys
    camp.measures = camp.measures[:1]
    camp.save()
    again = _next(api, camp).json()["assignment"]
    assert [m["key"] for m in again["measures"]] == camp.measure_keys[:1]
    assert _submit(api, a["assignment_id"], camp, "k").status_code == 201
    services.campaign_set_status(campaign=camp, status="closed")
    assert _next(api, camp).json()["assignment"] is None
    pk = camp.pk
    camp.delete()
    assert api.post(reverse("api-rating-next", args=[pk])).status_code == 404


def test_anonymous_callers_cannot_submit_or_undo(anon_api, camp, other_rater):
    a = leasing.assignment_next(campaign=camp, rater=other_rater)
    assert anon_api.post(reverse("api-rating-submit", args=[a.pk]), {}, format="json").status_code == 401
    assert anon_api.post(reverse("api-rating-undo", args=[a.pk])).status_code == 401
    assert anon_api.post(reverse("api-rating-next", args=[999999])).status_code == 401


def test_an_unknown_campaign_is_not_found(rater_api):
    assert rater_api.post(reverse("api-rating-next", args=[999999])).status_code == 404


def test_the_migration_copies_open_leases_onto_items_and_rater_counts(camp):
    raters = factories.users(2)
    leases = [leasing.assignment_next(campaign=camp, rater=u) for u in raters]
    RatingItem.objects.update(leases={})
    RaterStatus.objects.update(open_leases=0)
    migration = importlib.import_module("judging.migrations.0007_item_leases")
    migration.leases_from_assignments(apps, None)
    expected: dict[int, dict[str, float]] = {}
    for a in leases:  # two raters may hold leases on the same item
        expected.setdefault(a.item_id, {})[str(a.pk)] = a.expires_at.timestamp()
    for item_id, item_leases in expected.items():
        assert RatingItem.objects.get(pk=item_id).leases == item_leases
    for a in leases:
        assert RaterStatus.objects.get(campaign=camp, rater=a.rater).open_leases == 1


def test_an_assignment_whose_rater_has_no_status_row_can_still_be_submitted(camp):
    (user,) = factories.users(1)
    a = leasing.assignment_next(campaign=camp, rater=user)
    RaterStatus.objects.filter(rater=user).delete()  # as for assignments written by an import or by hand
    rating, created = services.rating_submit(assignment_id=a.pk, rater=user, values=answer(camp), idempotency_key="k")
    assert created and rating.assignment_id == a.pk
    assert RatingItem.objects.get(pk=a.item_id).completed_count == 1
