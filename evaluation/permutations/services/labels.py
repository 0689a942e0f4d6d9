"""Utterance labels: a labeler's SE/FT/PT class for a turn, the majority, classes derived from dependency
annotations, and the turn dependencies (``Turn.depends_on``) the classes imply."""

from __future__ import annotations

from collections import Counter
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction

from ecast.models import Collection, Conversation, Turn
from ecast.selectors import turn_paths
from evaluation.models import (
    UtteranceLabel,
)
from evaluation.permutations import orders as perms

CLASSES = set(perms.CLASSES)


def _turn_dependencies(turns: list[Turn]) -> dict[int, int | None]:
    """Turn number → number it depends on, read along the turn's path (in a tree its User ancestors, never a
    sibling branch; linear: every earlier turn); System turns depend on nothing."""
    paths = turn_paths(turns)
    deps: dict[int, int | None] = {}
    for t in turns:
        users = [p for p in paths[t.pk] if not p.is_system]
        deps[t.number] = None if t.is_system else _dependencies_along(users)[t.number]
    return deps


def _dependencies_along(turns: list[Turn]) -> dict[int, int | None]:
    """Turn number → number it depends on, for the turns of one path in order, tolerating unlabelled turns (they
    depend on nothing yet)."""
    deps: dict[int, int | None] = {}
    head: int | None = None
    first = turns[0].number if turns else None
    for i, t in enumerate(turns):
        cls = t.utterance_class
        if i == 0:
            deps[t.number] = None
            head = t.number
        elif cls == perms.SE:
            deps[t.number] = None
            head = t.number
        elif cls == perms.FT:
            deps[t.number] = first
        elif cls == perms.PT:
            deps[t.number] = head
        else:
            deps[t.number] = None
    return deps


def conversation_dependencies_refresh(*, conversation: Conversation) -> None:
    """Set ``Turn.depends_on`` from the classes: PT → nearest preceding SE (or turn 1), FT → turn 1."""
    turns = list(conversation.turns.order_by("number"))
    by_number = {t.number: t for t in turns}
    deps = _turn_dependencies(turns)
    for t in turns:
        dep = deps[t.number]
        target = by_number[dep].pk if dep is not None else None
        if t.depends_on_id != target:
            t.depends_on_id = target
            t.save(update_fields=["depends_on"])


@transaction.atomic
def utterance_label_set(*, turn: Turn, labeler: Any, utterance_class: str, apply: bool = False) -> UtteranceLabel:
    """Record a labeler's class for a turn; with ``apply`` (admins) it also becomes the turn's class."""
    if utterance_class not in CLASSES:
        raise ValidationError(f"class must be one of SE, FT, PT (got {utterance_class!r})")
    label, _ = UtteranceLabel.objects.update_or_create(
        turn=turn, labeler=labeler, defaults={"utterance_class": utterance_class}
    )
    if apply and turn.utterance_class != utterance_class:
        turn.utterance_class = utterance_class
        turn.save(update_fields=["utterance_class"])
        conversation_dependencies_refresh(conversation=turn.conversation)
    return label


@transaction.atomic
def utterance_labels_adopt_majority(*, collection: Collection) -> dict[str, int]:
    """Set each turn's class to its labelers' strict majority; ties and unlabelled turns are left alone."""
    counts: dict[int, Counter] = {}
    for turn_id, cls in UtteranceLabel.objects.filter(turn__collection=collection).values_list(
        "turn_id", "utterance_class"
    ):
        counts.setdefault(turn_id, Counter())[cls] += 1
    changed = ties = 0
    touched: set[int] = set()
    for turn in Turn.objects.filter(pk__in=counts):
        (top, n), *rest = counts[turn.pk].most_common()
        if rest and rest[0][1] == n:
            ties += 1
            continue
        if turn.utterance_class != top:
            turn.utterance_class = top
            turn.save(update_fields=["utterance_class"])
            touched.add(turn.conversation_id)
            changed += 1
    for conv in Conversation.objects.filter(pk__in=touched):
        conversation_dependencies_refresh(conversation=conv)
    return {"changed": changed, "ties": ties, "turns": len(counts)}


@transaction.atomic
def utterance_classes_derive(*, collection: Collection, overwrite: bool = False) -> dict[str, Any]:
    """Derive classes from the turns' dependency annotations (``relevant_turn_numbers``), see
    ``permutations.classes_from_dependencies``; returns counts and the dependencies the rules cannot guarantee."""
    set_count = 0
    unguaranteed: list[str] = []
    for conv in collection.conversations.all():
        turns = list(conv.turns.order_by("number"))
        if not turns or (not overwrite and any(t.utterance_class for t in turns)):
            continue
        numbers = [t.number for t in turns]
        deps = {t.number: [int(x) for x in (t.relevant_turn_numbers or [])] for t in turns}
        labels, missing = perms.classes_from_dependencies(numbers, deps)
        for t in turns:
            if t.utterance_class != labels[t.number]:
                t.utterance_class = labels[t.number]
                t.save(update_fields=["utterance_class"])
                set_count += 1
        conversation_dependencies_refresh(conversation=conv)
        unguaranteed += [f"{conv.topic_id}_{a} needs {conv.topic_id}_{b}" for a, b in missing]
    return {"turns_set": set_count, "unguaranteed": unguaranteed}
