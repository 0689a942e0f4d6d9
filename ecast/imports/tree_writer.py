"""The writer of CAsT 2022 topics (tree or flattened file): conversations whose turns form a tree.

Kept out of ``writers.py`` (already long); same contract: parse, validate everything, then write in one
transaction; re-importing the same file changes nothing.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from django.db import transaction

from ecast.imports import cast2022
from ecast.imports.writers import CHUNK, Context, Result, collection_for_year, raise_if
from ecast.models import Conversation, Turn

TREE_FIELDS = [
    "participant",
    "tree_number",
    "raw_utterance",
    "manual_rewrite",
    "canonical_response_text",
    "response_provenance",
    "mixed_initiative",
]


def _values(rec: dict[str, Any]) -> dict[str, Any]:
    # A System turn is the system's side of the conversation: its response is the turn's canonical response text
    # (a written summary, so no passage id) and its provenance the passages it was written from.
    return {
        "participant": rec["participant"],
        "tree_number": rec["number"],
        "raw_utterance": rec["raw_utterance"],
        "manual_rewrite": rec["manual_rewrite"],
        "canonical_response_text": rec["response"],
        "response_provenance": rec["provenance"],
        "mixed_initiative": rec["mixed_initiative"],
    }


def write_cast2022_topics(ctx: Context) -> Result:
    """CAsT 2022 topics, tree or flattened file: conversations, User and System turns, and each turn's parent."""
    parsed = cast2022.parse_cast2022_topics(ctx.text(), file=ctx.name)
    raise_if(parsed.errors)
    ctx.warnings.extend(parsed.warnings)
    counts = Counter[str]()
    with transaction.atomic():
        collection = collection_for_year(ctx, 2022)
        convs = {c.topic_id: c for c in Conversation.objects.filter(collection=collection)}
        new_convs = [Conversation(collection=collection, topic_id=t["number"]) for t in parsed.records]
        new_convs = [c for c in new_convs if c.topic_id not in convs]
        Conversation.objects.bulk_create(new_convs)
        convs = {c.topic_id: c for c in Conversation.objects.filter(collection=collection)}
        existing = {t.turn_id: t for t in Turn.objects.filter(collection=collection)}
        last_number = Counter[int]()
        for turn in existing.values():
            last_number[turn.conversation_id] = max(last_number[turn.conversation_id], turn.number)
        to_create: list[Turn] = []
        to_update: list[Turn] = []
        relink: list[Turn] = []
        depth: dict[str, int] = {}
        for topic in parsed.records:
            conv = convs[topic["number"]]
            for rec in topic["turns"]:
                values = _values(rec)
                parent = existing[f"{topic['number']}_{rec['parent']}"] if rec["parent"] else None
                depth[rec["turn_id"]] = depth[parent.turn_id] + 1 if parent is not None else 0
                found = existing.get(rec["turn_id"])
                if found is None:
                    # New turns go after the conversation's others, in file order: parents keep lower numbers.
                    last_number[conv.pk] += 1
                    turn = Turn(
                        conversation=conv,
                        collection=collection,
                        number=last_number[conv.pk],
                        turn_id=rec["turn_id"],
                        **values,
                    )
                    turn.parent = parent
                    existing[turn.turn_id] = turn
                    to_create.append(turn)
                    continue
                if any(getattr(found, k) != v for k, v in values.items()):
                    for k, v in values.items():
                        setattr(found, k, v)
                    to_update.append(found)
                if found.parent_id != (parent.pk if parent is not None else None):
                    found.parent = parent
                    relink.append(found)
        # A new turn's parent must have its id before the turn is inserted: one insert per depth of the trees
        # (a few dozen), cheaper than linking parents afterwards with a bulk update of every turn.
        for level in sorted({depth[t.turn_id] for t in to_create}):
            batch = [t for t in to_create if depth[t.turn_id] == level]
            for turn in batch:
                turn.parent_id = turn.parent.pk if turn.parent is not None else None
            Turn.objects.bulk_create(batch, batch_size=CHUNK)
        Turn.objects.bulk_update(to_update, TREE_FIELDS, batch_size=CHUNK)
        for turn in relink:  # a turn already stored that now follows another turn (perhaps one just inserted)
            turn.parent_id = turn.parent.pk if turn.parent is not None else None
        Turn.objects.bulk_update(relink, ["parent"], batch_size=CHUNK)
        created = {t.turn_id for t in to_create}
        counts.update(
            {k: v for k, v in parsed.counts.items() if k != "layout"},
            conversations_created=len(new_convs),
            turns_created=len(created),
            turns_updated=len({t.turn_id for t in [*to_update, *relink]} - created),
        )
    return Result(counts={"layout": parsed.counts["layout"], **counts}, collection=collection)
