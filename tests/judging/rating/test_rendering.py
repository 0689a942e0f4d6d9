"""The hand-built JSON of next and submit is what the API's serializers give for the same dicts (the serializers are
the oracle: they describe these answers in the schema)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from types import SimpleNamespace

import pytest

from judging.rating import rendering
from judging.rating.apis import AssignmentNextApi, AssignmentSerializer, RatingSubmitApi

MEASURES = [
    {"key": "fluency", "name": "Fluency", "question": "Is it fluent?", "anchors": ["1", "2", "3", "4", "5"]},
    {"key": "adequacy", "name": "Adequacy", "question": "Same?", "anchors": ["a", "b"], "shows": "question"},
]


def _assignment(**changes):
    payload = {
        "assignment_id": 7,
        "campaign_id": 2,
        "item_id": 11,
        "kind": "paraphrase",
        "expires_at": datetime(2026, 11, 25, 3, 4, 5, 678901, tzinfo=UTC),
        "context": {"history": [{"turn": "1", "text": "é"}], "utterance": "what about it?", 3: None},
        "passage_id": "MARCO_1-2",
        "passage_text": "A passage.",
        "measures": MEASURES,
        "previous_values": {"fluency": 4, "adequacy": "2"},
    }
    return {**payload, **changes}


ASSIGNMENTS = [
    _assignment(),
    _assignment(previous_values={}, measures=[]),
    # A time in another zone comes out in the server's, as the serializer gives it; a whole second has no fraction.
    _assignment(expires_at=datetime(2026, 1, 1, 12, tzinfo=timezone(timedelta(hours=5)))),
    # Nulls stay null, a number given as a passage id comes out as text, a measure's shows may be null.
    _assignment(passage_id=123, context=None, passage_text=None, expires_at=None),
    _assignment(measures=[{**MEASURES[1], "shows": None, "anchors": ["x", None]}], previous_values={"a": None}),
]


@pytest.mark.parametrize("payload", ASSIGNMENTS)
def test_an_assignment_renders_as_its_serializer_renders_it(payload):
    assert rendering.assignment_json(payload) == AssignmentSerializer(payload).data


@pytest.mark.parametrize("payload", [*ASSIGNMENTS, None])
def test_the_next_answer_renders_as_its_serializer_renders_it(payload):
    expected = AssignmentNextApi.OutputSerializer({"assignment": payload, "done": 3}).data
    assert rendering.next_json(payload, 3) == expected


def test_the_next_answer_with_nothing_left_is_a_null_assignment_and_the_count():
    assert rendering.next_json(None, 12) == {"assignment": None, "done": 12}


@pytest.mark.parametrize("created", [True, False])
@pytest.mark.parametrize(
    "at", [datetime(2026, 11, 25, tzinfo=UTC), datetime(2026, 11, 25, 1, 2, 3, 4, tzinfo=timezone(timedelta(hours=-3)))]
)
def test_a_submitted_rating_renders_as_its_serializer_renders_it(created, at):
    rating = SimpleNamespace(pk=5, assignment_id=7, values={"fluency": 3, "adequacy": 5}, submitted_at=at)
    expected = RatingSubmitApi.OutputSerializer(
        {"pk": 5, "assignment_id": 7, "values": rating.values, "submitted_at": at, "created": created}
    ).data
    assert rendering.submit_json(rating=rating, created=created) == expected


def test_a_submitted_rating_renders_its_time_in_utc_with_z():
    rating = SimpleNamespace(
        pk=5, assignment_id=7, values={"fluency": 3}, submitted_at=datetime(2026, 11, 25, tzinfo=UTC)
    )
    assert rendering.submit_json(rating=rating, created=True) == {
        "rating_id": 5,
        "assignment_id": 7,
        "values": {"fluency": 3},
        "submitted_at": "2026-11-25T00:00:00Z",
        "created": True,
    }
