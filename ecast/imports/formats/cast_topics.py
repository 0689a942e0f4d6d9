"""CAsT topics 2019–2021 (the ``cast_topics`` kind): the topic JSON, parsed and written as conversations and turns.

One file per year and variant (2019 train/eval, 2020 automatic/manual with the optional ``_extended`` canonical
passage texts, 2021 with canonical passages), optionally with the 2019 resolved rewrites TSV as its second file
(parsed by ``cast2019_resolved``). Importing the automatic and the manual file of a year merges them field by field.
"""

from __future__ import annotations

import functools
from collections import Counter
from pathlib import Path
from typing import Any

from django.db import transaction

from ecast.core.bulk import objects_insert, objects_update
from ecast.imports.errors import ImportFailed, row_error
from ecast.imports.formats.cast2019_resolved import parse_resolved_tsv, rewrites_set
from ecast.imports.parsing import Parsed, Unread, int_field, load_topic_list, numbered_turns, str_field, topic_objects
from ecast.imports.writing import Context, Result, passages_upsert, raise_if
from ecast.models import Collection, Conversation, Turn

# Default collection per CAsT year (threshold = the relevance level the year's published numbers use).
CAST_DEFAULTS = {2019: ("CAsT 2019", 1), 2020: ("CAsT 2020", 2), 2021: ("CAsT 2021", 2), 2022: ("CAsT 2022", 2)}
# The fields of a topic and of a turn the import stores; any other is reported as ignored (e.g. the turn
# dependencies of the 2020 annotated v1.1 file).
TOPIC_FIELDS = {"number", "title", "description", "turn"}
TURN_FIELDS_READ = {
    "number",
    "raw_utterance",
    "manual_rewritten_utterance",
    "automatic_rewritten_utterance",
    "manual_canonical_result_id",
    "automatic_canonical_result_id",
    "canonical_result_id",
    "passage_id",
    "canonical_passage",
    "passage",
}


def parse_cast_topics(text: str, *, file: str) -> Parsed:
    """CAsT topic JSON (2019 train/eval, 2020 automatic/manual/_extended, 2021): a list of topics with turns.

    Records: {"number", "title", "description", "turns": [{"number", "turn_id", "raw_utterance", "manual_rewrite",
    "automatic_rewrite", "canonical_response_id", "canonical_response_text", "canonical_from"}]}; empty strings mean
    "not in this file" so that importing the automatic and the manual file of a year merge instead of erasing.
    """
    p = Parsed(file)
    data = load_topic_list(p, text, example='[{"number": 31, "turn": [...]}]')
    if data is None:
        return p
    seen_topics: set[int] = set()
    unread = Unread()
    for located in topic_objects(p, text, data, expected="'number' and 'turn'"):
        topic, where, line = located.value, located.where, located.line
        unread.note("topic", topic, TOPIC_FIELDS)
        number = int_field(p, where, topic, "number", line=line)
        if number is not None:
            where = f"topic {number}"
            if number in seen_topics:
                p.error(line, f"{where}: topic number appears twice")
            seen_topics.add(number)
        turns = topic.get("turn")
        if not isinstance(turns, list) or not turns:
            p.error(line, f"{where}: 'turn' must be a non-empty list")
            continue
        turn_records: list[dict[str, Any]] = []
        record: dict[str, Any] = {
            "number": number,
            "title": str_field(p, where, topic, "title", line=line),
            "description": str_field(p, where, topic, "description", line=line),
            "turns": turn_records,
        }
        for turn, tnum, twhere, tline in numbered_turns(p, located, where, turns, key="number", name="turn number"):
            unread.note("turn", turn, TURN_FIELDS_READ)
            field = functools.partial(str_field, p, twhere, turn, line=tline)
            manual_id = field("manual_canonical_result_id")
            auto_id = field("automatic_canonical_result_id")
            doc_id = field("canonical_result_id")
            canonical_from = ""
            canonical = ""
            if manual_id:
                canonical, canonical_from = manual_id, "manual"
            elif doc_id:
                # CAsT 2021 names a document plus the index of the canonical passage inside it.
                pidx = turn.get("passage_id")
                canonical = f"{doc_id}-{pidx}" if isinstance(pidx, int | str) and str(pidx) != "" else doc_id
                canonical_from = "manual"
            elif auto_id:
                canonical, canonical_from = auto_id, "automatic"
            passage_text = field("canonical_passage") or field("passage")
            turn_records.append(
                {
                    "number": tnum,
                    "turn_id": f"{number}_{tnum}",
                    "raw_utterance": field("raw_utterance", required=True),
                    "manual_rewrite": field("manual_rewritten_utterance"),
                    "automatic_rewrite": field("automatic_rewritten_utterance"),
                    "canonical_response_id": canonical,
                    "canonical_response_text": passage_text,
                    "canonical_from": canonical_from,
                }
            )
        p.records.append(record)
    p.counts = {"topics": len(p.records), "turns": sum(len(t["turns"]) for t in p.records)}
    unread.report(p)
    return p


def _year_for(topics: list[dict], ctx: Context) -> int | None:
    if ctx.options.get("year"):
        return int(ctx.options["year"])
    numbers = [t["number"] for t in topics if t["number"] is not None]
    if not numbers:
        return None
    top = max(numbers)
    return 2019 if top <= 80 else 2020 if top <= 105 else 2021 if top <= 131 else None


def collection_for_year(ctx: Context, year: int | None) -> Collection:
    """The chosen collection, else the CAsT year's own (made with the year's relevance threshold on first use)."""
    if ctx.collection is not None:
        return ctx.collection
    if year not in CAST_DEFAULTS:
        raise ImportFailed([row_error(ctx.name, None, "cannot tell the CAsT year: choose a collection or pass year")])
    name, threshold = CAST_DEFAULTS[year]
    collection, _ = Collection.objects.get_or_create(
        name=name, defaults={"year": year, "relevance_threshold": threshold}
    )
    return collection


TURN_FIELDS = ["raw_utterance", "manual_rewrite", "automatic_rewrite", "canonical_response_id"]


def write_cast_topics(ctx: Context) -> Result:
    """CAsT topics JSON (+ optional resolved TSV): conversations and turns, merged field by field on re-import."""
    parsed = parse_cast_topics(ctx.text(), file=ctx.name)
    resolved: Parsed | None = None
    if ctx.options.get("resolved_tsv"):
        rpath = Path(str(ctx.options["resolved_tsv"]))
        resolved = parse_resolved_tsv(ctx.text(rpath, rpath.name), file=rpath.name)
    raise_if(parsed.errors + (resolved.errors if resolved else []))
    counts = Counter[str]()
    with transaction.atomic():
        collection = collection_for_year(ctx, _year_for(parsed.records, ctx))
        convs = {c.topic_id: c for c in Conversation.objects.filter(collection=collection)}
        new_convs = []
        for topic in parsed.records:
            conv = convs.get(str(topic["number"]))
            if conv is None:
                conv = Conversation(collection=collection, topic_id=str(topic["number"]))
                convs[conv.topic_id] = conv
                new_convs.append(conv)
            changed = False
            for key in ("title", "description"):
                if topic[key] and getattr(conv, key) != topic[key][: 500 if key == "title" else None]:
                    setattr(conv, key, topic[key][:500] if key == "title" else topic[key])
                    changed = True
            if changed and conv.pk:
                conv.save(update_fields=["title", "description"])
        Conversation.objects.bulk_create(new_convs)
        counts["conversations_created"] = len(new_convs)
        if not new_convs:
            convs = {c.topic_id: c for c in Conversation.objects.filter(collection=collection)}
        existing = {t.turn_id: t for t in Turn.objects.filter(collection=collection)}
        to_create: list[Turn] = []
        to_update: dict[str, Turn] = {}
        passages: dict[str, str] = {}
        for topic in parsed.records:
            conv = convs[str(topic["number"])]
            for rec in topic["turns"]:
                turn = existing.get(rec["turn_id"])
                if turn is None:
                    turn = Turn(conversation=conv, collection=collection, number=rec["number"], turn_id=rec["turn_id"])
                    existing[rec["turn_id"]] = turn
                    to_create.append(turn)
                if _merge_turn(turn, rec) and turn.pk:
                    to_update[turn.turn_id] = turn
                if rec["canonical_response_id"] and rec["canonical_response_text"]:
                    passages[rec["canonical_response_id"]] = rec["canonical_response_text"]
        errors: list[dict[str, Any]] = []
        if resolved:
            errors, rewritten = rewrites_set(
                resolved, existing, unknown=lambda tid: f"{tid} is not a turn of this topics file"
            )
            to_update.update((turn.turn_id, turn) for turn in rewritten if turn.pk)
            counts["manual_rewrites"] = len(resolved.records)
        raise_if(errors)
        # COPY rather than bulk_create / bulk_update, whose per-value preparation and CASE expressions were most
        # of a topics import.
        objects_insert(to_create)
        objects_update(list(to_update.values()), [*TURN_FIELDS, "canonical_response_text"])
        counts.update(turns_created=len(to_create), turns_updated=len(to_update), topics=len(parsed.records))
        if passages:
            created, updated = passages_upsert(passages.items(), source=ctx.name, collection=collection)
            counts.update(passages_created=created, passages_updated=updated)
    ctx.warnings.extend(parsed.warnings)
    ignored = {"ignored_fields": parsed.counts["ignored_fields"]} if "ignored_fields" in parsed.counts else {}
    return Result(counts={**counts, **ignored}, collection=collection)


def _merge_turn(turn: Turn, rec: dict[str, Any]) -> bool:
    """Copy the fields this file has onto the turn; the manual file's canonical id beats the automatic one's."""
    changed = False
    for key in ("raw_utterance", "manual_rewrite", "automatic_rewrite"):
        if rec[key] and getattr(turn, key) != rec[key]:
            setattr(turn, key, rec[key])
            changed = True
    cid, ctext = rec["canonical_response_id"], rec["canonical_response_text"]
    take = cid and (rec["canonical_from"] == "manual" or not turn.canonical_response_id)
    if take and turn.canonical_response_id != cid:
        turn.canonical_response_id = cid
        turn.canonical_response_text = ctext
        changed = True
    elif take and ctext and turn.canonical_response_text != ctext:
        turn.canonical_response_text = ctext
        changed = True
    return changed
