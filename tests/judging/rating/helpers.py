"""Builders shared by the rating-campaign tests: a small collection with paraphrase pairs and campaigns on it."""

from __future__ import annotations

import uuid

from django.contrib.auth.models import Group, User

from ecast.core.permissions import RATER
from ecast.models import Paraphrase
from judging.rating import leasing, services
from tests import factories


def paraphrase_collection(
    name: str = "Rate2020", year: int = 2020, topics: int = 2, turns: int = 3, status: str = "approved"
):
    """Topics × turns, each turn with one manual/raw paraphrase pair (half tagged as coming from r_i), approved
    (campaigns sample approved pairs) unless ``status`` says otherwise."""
    coll = factories.collection(name=name, year=year)
    k = 0
    for t in range(1, topics + 1):
        conv = factories.conversation(coll, str(t))
        for n in range(1, turns + 1):
            turn = factories.turn(conv, n, f"raw {t}.{n}?", manual=f"manual question {t}.{n}?")
            turn.canonical_response_id = f"MARCO_{t}{n}"
            turn.canonical_response_text = f"Canonical answer for {t}.{n}."
            turn.save()
            k += 1
            source = "automatic" if k % 2 else "manual"
            m = Paraphrase.objects.create(
                turn=turn,
                kind="manual",
                text=f"para {t}.{n}",
                origin="generated",
                provenance={"source": source},
                status=status,
            )
            r = Paraphrase.objects.create(
                turn=turn,
                kind="raw",
                text=f"raw para {t}.{n}",
                origin="generated",
                pair=m,
                provenance={},
                status=status,
            )
            m.pair = r
            m.save()
    return coll


def make_raters(count: int, prefix: str = "crowd") -> list[User]:
    group, _ = Group.objects.get_or_create(name=RATER)
    users = []
    for i in range(count):
        u = User.objects.create_user(username=f"{prefix}{i}", password=f"pass-{prefix}{i}")
        u.groups.add(group)
        users.append(u)
    return users


def campaign(coll, *, size: int = 6, n: int = 3, measures=("semantic_similarity", "passage_relevance"), **kw):
    return services.campaign_create(
        name=kw.pop("name", f"C-{uuid.uuid4().hex[:6]}"),
        collections=[coll],
        sample_size=size,
        seed=kw.pop("seed", 7),
        measure_keys=list(measures),
        raters_per_item=n,
        **kw,
    )


def answer(c, score: int = 4) -> dict[str, int]:
    return {k: score for k in c.measure_keys}


def rate_one(c, user, score: int = 4):
    """Lease the next item for ``user`` and submit ``score`` for every measure; returns the rating or None."""
    a = leasing.assignment_next(campaign=c, rater=user)
    if a is None:
        return None
    rating, _ = services.rating_submit(
        assignment_id=a.pk, rater=user, values=answer(c, score), idempotency_key=uuid.uuid4().hex
    )
    return rating
