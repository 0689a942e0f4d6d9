"""What rating tests do as raters do it: answer every measure of a campaign, lease and rate one item. The
collection, raters and campaign themselves come from tests/factories.py (``paraphrase_collection``, ``users``,
``rating_campaign``)."""

from __future__ import annotations

import uuid

from judging.rating import leasing, services


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
