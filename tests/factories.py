"""Plain factory functions for tests (no extra dependency): build valid rows with sensible defaults."""

from __future__ import annotations

from ecast.models import Collection, Conversation, Paraphrase, Turn
from evaluation.models import QrelsVersion


def collection(name: str = "Test collection", year: int = 2020, threshold: int = 1) -> Collection:
    return Collection.objects.create(name=name, year=year, relevance_threshold=threshold)


def conversation(coll: Collection, topic_id: str = "1", title: str = "") -> Conversation:
    return Conversation.objects.create(collection=coll, topic_id=topic_id, title=title or f"Topic {topic_id}")


def turn(conv: Conversation, number: int, raw: str, manual: str = "") -> Turn:
    return Turn.objects.create(
        conversation=conv,
        collection=conv.collection,
        number=number,
        turn_id=f"{conv.topic_id}_{number}",
        raw_utterance=raw,
        manual_rewrite=manual or raw,
    )


def paraphrase(t: Turn, text: str, kind: str = "manual", status: str = "candidate", origin: str = "imported"):
    return Paraphrase.objects.create(turn=t, kind=kind, text=text, status=status, origin=origin)


def collection_with_turns(name: str, year: int, conversations: dict[str, list[str]], threshold: int = 1):
    coll = collection(name=name, year=year, threshold=threshold)
    for topic_id, utterances in conversations.items():
        conv = conversation(coll, topic_id)
        for i, text in enumerate(utterances, start=1):
            turn(conv, i, text)
    return coll


def qrels_version(coll: Collection, name: str = "original") -> QrelsVersion:
    return QrelsVersion.objects.create(collection=coll, name=name)
