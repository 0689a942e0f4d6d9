"""The serializer built once per process renders and validates exactly as a serializer built per request does,
and keeps nothing of one call for the next."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta, timezone

import pytest
from rest_framework import serializers
from rest_framework.exceptions import ValidationError

from ecast.core.rest import render, validated
from judging.rating.apis import AssignmentNextApi, RatingSubmitApi

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
        "context": {"history": [{"turn": "1", "text": "é"}], "utterance": "what about it?"},
        "passage_id": "MARCO_1-2",
        "passage_text": "A passage.",
        "measures": MEASURES,
        "previous_values": {"fluency": 4},
    }
    return {**payload, **changes}


NEXT_OUTPUTS = [
    {"assignment": _assignment(), "done": 3},
    {"assignment": None, "done": 0},
    {"assignment": _assignment(previous_values={}, measures=[]), "done": 12},
    # A time in another zone comes out in the server's, as the serializer gives it.
    {"assignment": _assignment(expires_at=datetime(2026, 1, 1, 12, tzinfo=timezone(timedelta(hours=5)))), "done": 1},
]


@pytest.mark.parametrize("output", NEXT_OUTPUTS)
def test_the_next_answer_renders_as_a_serializer_built_for_it_does(output):
    assert render(AssignmentNextApi.OutputSerializer, output) == AssignmentNextApi.OutputSerializer(output).data


def test_a_submitted_rating_renders_as_a_serializer_built_for_it_does():
    out = {"pk": 5, "assignment_id": 7, "values": {"fluency": 3}, "submitted_at": datetime(2026, 11, 25, tzinfo=UTC),
           "created": True}  # fmt: skip
    rendered = render(RatingSubmitApi.OutputSerializer, out)
    assert rendered == RatingSubmitApi.OutputSerializer(out).data
    assert rendered == {"rating_id": 5, "assignment_id": 7, "values": {"fluency": 3},
                        "submitted_at": "2026-11-25T00:00:00Z", "created": True}  # fmt: skip


def _per_request(data):
    s = RatingSubmitApi.InputSerializer(data=data)
    try:
        s.is_valid(raise_exception=True)
    except ValidationError as exc:
        return "invalid", exc.detail
    return "valid", dict(s.validated_data)


def _shared(data):
    try:
        return "valid", dict(validated(RatingSubmitApi.InputSerializer, data))
    except ValidationError as exc:
        return "invalid", exc.detail


SUBMISSIONS = [
    {"values": {"fluency": 4}, "idempotency_key": "k1", "seconds_on_task": 12.5},
    {"values": {"fluency": "4"}, "idempotency_key": "  k2  "},  # coerced and trimmed
    {"values": {"fluency": 4}, "idempotency_key": "k3", "seconds_on_task": None, "extra": 1},
    {"values": {"fluency": "four"}, "idempotency_key": "k4"},
    {"values": [4], "idempotency_key": "k5"},
    {"values": {"fluency": 4}, "idempotency_key": "x" * 65},
    {"values": {"fluency": 4}, "idempotency_key": ""},
    {"idempotency_key": "k6"},
    {"values": {"fluency": 4}, "idempotency_key": "k7", "seconds_on_task": "soon"},
    [],
    None,
]


@pytest.mark.parametrize("data", SUBMISSIONS)
def test_a_submission_is_validated_as_a_serializer_built_for_it_validates_it(data):
    assert _shared(data) == _per_request(data)


def test_the_shared_serializer_keeps_nothing_between_calls_from_many_threads():
    errors: list[str] = []

    def work(i: int) -> None:
        for j in range(200):
            good = {"values": {"fluency": (i + j) % 5 + 1}, "idempotency_key": f"{i}-{j}"}
            if _shared(good) != ("valid", {"values": good["values"], "idempotency_key": good["idempotency_key"]}):
                errors.append(f"valid {i} {j}")
            if _shared({"values": "no"})[0] != "invalid":
                errors.append(f"invalid {i} {j}")
            out = {"assignment": _assignment(assignment_id=i * 1000 + j), "done": j}
            if render(AssignmentNextApi.OutputSerializer, out)["assignment"]["assignment_id"] != i * 1000 + j:
                errors.append(f"render {i} {j}")

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


class _Named(serializers.Serializer):
    name = serializers.CharField()


def test_each_serializer_class_gets_its_own_built_instance():
    assert render(_Named, {"name": "a"}) == {"name": "a"}
    assert render(RatingSubmitApi.OutputSerializer, {"pk": 1, "assignment_id": 2, "values": {}, "submitted_at": None,
                                                     "created": False})["rating_id"] == 1  # fmt: skip
