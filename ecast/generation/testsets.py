"""Random paraphrase test sets R^r_i / R^m_i stored as TestSet/TestSetItem, and their CAsT-format export."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction

from ecast.models import Collection, Paraphrase, TestSet, TestSetItem, Turn
from ecast.pipeline.testsets import draw_test_sets

DEFAULT_STATUSES = ("approved",)


@transaction.atomic
def test_sets_create(
    *,
    collection: Collection,
    kind: str,
    n_sets: int = 3,
    seed: int = 0,
    statuses: tuple[str, ...] = DEFAULT_STATUSES,
    prefix: str = "",
) -> list[TestSet]:
    """Draw ``n_sets`` random test sets of one kind (raw → R^r, manual → R^m) from current paraphrases."""
    if kind not in (TestSet.Kind.RAW, TestSet.Kind.MANUAL):
        raise ValidationError({"kind": "kind must be 'raw' or 'manual'"})
    bad = [s for s in statuses if s not in Paraphrase.Status.values]
    if bad or not statuses:
        raise ValidationError({"statuses": f"unknown paraphrase statuses: {', '.join(bad) or '(none given)'}"})
    if not 1 <= n_sets <= 20:
        raise ValidationError({"n_sets": "between 1 and 20 sets"})
    rows = Paraphrase.objects.filter(turn__collection=collection, kind=kind, is_current=True, status__in=statuses)
    candidates: dict[str, list[int]] = {}
    texts: dict[int, str] = {}
    for turn_id, pid, text in rows.values_list("turn__turn_id", "id", "text"):
        candidates.setdefault(turn_id, []).append(pid)
        texts[pid] = text
    if not candidates:
        raise ValidationError(f"no {'/'.join(statuses)} {kind} paraphrases in {collection.name}")
    letter = "r" if kind == TestSet.Kind.RAW else "m"
    prefix = prefix or f"R{letter}"
    start = 1 + (
        TestSet.objects.filter(collection=collection, kind=kind)
        .order_by("-index")
        .values_list("index", flat=True)
        .first()
        or 0
    )
    turns = {t.turn_id: t for t in Turn.objects.filter(collection=collection, turn_id__in=list(candidates))}
    created = []
    for offset, chosen in enumerate(draw_test_sets(candidates, n_sets=n_sets, seed=seed, texts=texts)):
        index = start + offset
        name = f"{prefix}_{index}" + (f" (seed {seed})" if prefix == f"R{letter}" else "")
        if TestSet.objects.filter(collection=collection, name=name).exists():
            raise ValidationError({"prefix": f"a test set named {name!r} already exists in {collection.name}"})
        ts = TestSet(
            collection=collection,
            name=name,
            kind=kind,
            index=index,
            seed=seed,
            parameters={
                "statuses": list(statuses),
                "n_sets": n_sets,
                "position": offset,
                "fallback_turns": sorted(t for t, p in chosen.items() if p is None),
            },
        )
        ts.full_clean()
        ts.save()
        TestSetItem.objects.bulk_create(
            TestSetItem(test_set=ts, turn=turns[t], paraphrase_id=p) for t, p in sorted(chosen.items()) if p is not None
        )
        created.append(ts)
    return created


def test_set_export(*, test_set: TestSet) -> list[dict[str, Any]]:
    """CAsT topic JSON: every conversation of the collection, the paraphrase in ``raw_utterance`` (R^r) or
    ``manual_rewritten_utterance`` (R^m); turns without a paraphrase keep their original text."""
    items = {i.turn_id: i.paraphrase for i in test_set.items.select_related("paraphrase")}
    field = "raw_utterance" if test_set.kind == TestSet.Kind.RAW else "manual_rewritten_utterance"
    topics: dict[int, dict[str, Any]] = {}
    turns = (
        Turn.objects.filter(collection=test_set.collection)
        .select_related("conversation", "parent")
        .order_by("conversation_id", "number")
    )
    for turn in turns:
        conv = turn.conversation
        topic = topics.setdefault(
            conv.pk, {"number": _num(conv.topic_id), "title": conv.title, "description": conv.description, "turn": []}
        )
        if turn.tree_number:
            topic["turn"].append(_tree_entry(turn, field, items.get(turn.pk)))
            continue
        para = items.get(turn.pk)
        original = turn.raw_utterance if field == "raw_utterance" else (turn.manual_rewrite or turn.raw_utterance)
        entry: dict[str, Any] = {"number": turn.number, field: para.text if para else original}
        entry["paraphrase_id"] = para.pk if para else None
        if turn.canonical_response_id:
            entry["canonical_result_id"] = turn.canonical_response_id
        topic["turn"].append(entry)
    return list(topics.values())


def _tree_entry(turn: Turn, field: str, para: Paraphrase | None) -> dict[str, Any]:
    """A turn of a conversation tree in the CAsT 2022 tree layout, so every path of the test set is a path of the
    original tree (and the file imports back as one): System turns keep their response, User turns get the
    paraphrase."""
    entry: dict[str, Any] = {"number": turn.tree_number, "participant": turn.participant}
    if turn.parent is not None:
        entry["parent"] = turn.parent.tree_number
    if turn.is_system:
        entry.update(response=turn.canonical_response_text, provenance=list(turn.response_provenance or []))
        return entry
    original = turn.raw_utterance if field == "raw_utterance" else (turn.manual_rewrite or turn.raw_utterance)
    key = "utterance" if field == "raw_utterance" else field
    entry.update({key: para.text if para else original, "paraphrase_id": para.pk if para else None})
    if key != "utterance":
        entry["utterance"] = turn.raw_utterance  # the tree layout needs every User turn's utterance
    return entry


def _num(topic_id: str) -> int | str:
    return int(topic_id) if topic_id.isdigit() else topic_id
