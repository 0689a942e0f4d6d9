"""Demo rating campaign on "CAsT 2020 demo" (called by `manage.py load_demo`; idempotent).

Creates "ECAsT demo rating" over the collection's ECAsT paraphrases (5 raters per item, the five ECAsT measures)
and lets five simulated, log-in-less crowd raters finish half of the items with seeded scores, so the report shows
kappa, labels and plots at once while ``rater1..3`` still find items in their queue.
"""

from __future__ import annotations

import random
import uuid
from typing import Any

from django.contrib.auth.models import Group, User
from django.db import transaction

from ecast.core.permissions import ADMIN, RATER
from ecast.models import Collection
from judging.models import Campaign
from judging.rating import leasing, sampling, services

COLLECTION = "CAsT 2020 demo"
NAME = "ECAsT demo rating"
SIM_RATERS = [f"demo-crowd{i}" for i in range(1, 6)]


def _account(username: str, role: str) -> User:
    user, created = User.objects.get_or_create(
        username=username, defaults={"is_staff": role == ADMIN, "is_superuser": role == ADMIN}
    )
    if created:
        user.set_password(f"demo-{username}")
        user.save(update_fields=["password"])
    user.groups.add(Group.objects.get_or_create(name=role)[0])
    return user


def _simulated(username: str) -> User:
    user, created = User.objects.get_or_create(username=username, defaults={"is_active": False})
    if created:
        user.set_unusable_password()
        user.save(update_fields=["password"])
    # A rater role is needed to rate; the account is inactive, so it can never log in.
    user.groups.add(Group.objects.get_or_create(name=RATER)[0])
    return user


def load(stdout: Any = None) -> Campaign | None:
    """Create the demo campaign once; returns it (None when the demo collection is missing)."""

    def say(msg: str) -> None:
        if stdout is not None:
            stdout.write(msg)

    collection = Collection.objects.filter(name=COLLECTION).first()
    if collection is None:
        say(f"  rating demo: collection {COLLECTION!r} not found; skipped")
        return None
    admin = _account("admin", ADMIN)
    for name in ("rater1", "rater2", "rater3"):
        _account(name, RATER)
    existing = Campaign.objects.filter(name=NAME).first()
    if existing:
        say(f"  rating demo: {NAME!r} already loaded")
        return existing
    pool = sampling.paraphrase_pool(collections=[collection])
    if not pool:
        say("  rating demo: the demo collection has no paraphrases; skipped")
        return None
    with transaction.atomic():
        campaign = services.campaign_create(
            name=NAME,
            collections=[collection],
            sample_size=min(16, len(pool)),
            seed=2020,
            raters_per_item=5,
            lease_seconds=900,
            gold_every=50,  # no gold items in the demo; the setting keeps them out of the way
            guidelines="Read the conversation first. Rate each measure independently; 3 means undecided.",
            created_by=admin,
        )
        rng = random.Random(2020)
        truth = {it.pk: rng.choice([2, 4, 4, 5, 5]) for it in campaign.items.all()}
        half = len(truth) // 2
        for username in SIM_RATERS:
            user = _simulated(username)
            for _ in range(half):
                a = leasing.assignment_next(campaign=campaign, rater=user)
                if a is None:
                    break
                base = truth[a.item_id]
                values = {k: max(1, min(5, base + rng.choice([-1, 0, 0, 0, 1]))) for k in campaign.measure_keys}
                values["language_diversity"] = rng.choice([2, 3, 3, 4])
                services.rating_submit(
                    assignment_id=a.pk, rater=user, values=values, idempotency_key=uuid.uuid4().hex,
                    seconds_on_task=round(rng.uniform(20, 90), 1),
                )  # fmt: skip
    say(f"  rating demo: {NAME!r} with {campaign.items.count()} items, {campaign.ratings.count()} simulated ratings")
    return campaign
