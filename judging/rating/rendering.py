"""The JSON of a rater's two busiest calls (next item, submit), built directly from their dicts.

The API's serializers (``AssignmentSerializer`` and the views' ``OutputSerializer``) still describe these answers in
the schema; building the answer through them walked every declared field of the assignment and its measures on each
call, a tenth of the web process's CPU for ``next``. These functions give the same JSON the serializers give (a test
holds them to it): numbers as ``int``, text as ``str``, times in DRF's ISO 8601 with ``Z``, ``None`` kept as null, and
a measure's ``shows`` only where the measure has one.
"""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

# Unbound, it formats as a serializer's field does: DRF's DATETIME_FORMAT in the current time zone.
_DATETIME = serializers.DateTimeField()


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def _int(value: Any) -> int | None:
    return None if value is None else int(value)


def _ints(values: dict[Any, Any] | None) -> dict[str, int | None] | None:
    return None if values is None else {str(k): None if v is None else int(v) for k, v in values.items()}


def _measure(m: dict[str, Any]) -> dict[str, Any]:
    out = {
        "key": _text(m["key"]),
        "name": _text(m["name"]),
        "question": _text(m["question"]),
        "anchors": None if m["anchors"] is None else [_text(a) for a in m["anchors"]],
    }
    if "shows" in m:
        out["shows"] = _text(m["shows"])
    return out


def assignment_json(payload: dict[str, Any] | None) -> dict[str, Any] | None:
    """``AssignmentSerializer(payload).data`` for ``selectors.assignment_payload``'s dict (None stays None)."""
    if payload is None:
        return None
    context, measures = payload["context"], payload["measures"]
    return {
        "assignment_id": _int(payload["assignment_id"]),
        "campaign_id": _int(payload["campaign_id"]),
        "item_id": _int(payload["item_id"]),
        "kind": _text(payload["kind"]),
        "expires_at": _DATETIME.to_representation(payload["expires_at"]),
        "context": None if context is None else {str(k): v for k, v in context.items()},
        "passage_id": _text(payload["passage_id"]),
        "passage_text": _text(payload["passage_text"]),
        "measures": None if measures is None else [_measure(m) for m in measures],
        "previous_values": _ints(payload["previous_values"]),
    }


def next_json(payload: dict[str, Any] | None, done: int) -> dict[str, Any]:
    """What ``AssignmentNextApi`` answers: the assignment (null when nothing is left) and the rater's done count."""
    return {"assignment": assignment_json(payload), "done": int(done)}


def submit_json(*, rating: Any, created: bool) -> dict[str, Any]:
    """What ``RatingSubmitApi`` answers for a stored (or replayed) rating."""
    values = rating.values
    return {
        "rating_id": int(rating.pk),
        "assignment_id": int(rating.assignment_id),
        "values": None if values is None else {str(k): v for k, v in values.items()},
        "submitted_at": _DATETIME.to_representation(rating.submitted_at),
        "created": bool(created),
    }
