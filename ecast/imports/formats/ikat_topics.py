"""TREC iKAT topics 2023–2025 (the ``ikat_topics`` kind): the topic JSON with each user's PTKB, parsed and written as
conversations, turns and PTKB statements. The year is told from the fields (2025) or the topic numbers."""

from __future__ import annotations

import functools
import re
from collections import Counter, defaultdict
from typing import Any

from django.db import transaction

from ecast.core.bulk import objects_insert, objects_update
from ecast.imports.errors import ImportFailed, row_error
from ecast.imports.parsing import Parsed, Unread, load_topic_list, numbered_turns, str_field, topic_objects
from ecast.imports.writing import CHUNK, Context, Result, fields_set
from ecast.models import Collection, Conversation, PtkbStatement, Turn

# iKAT grades passages 0–4 on the CAsT scale; binary measures start at grade 2 as for CAsT 2020–2022 (a collection
# setting: change it on the collection page when an evaluation uses another threshold).
IKAT_DEFAULTS = {2023: ("iKAT 2023", 2), 2024: ("iKAT 2024", 2), 2025: ("iKAT 2025", 2)}

# The field names of each layout: 2023/2024 ``turns`` with ``utterance``, ``ptkb_provenance`` (statement numbers)
# and ``response_provenance``; 2025 ``responses`` with ``user_utterance``, ``relevant_ptkbs`` (statement texts) and
# ``citations``, and a PTKB that is a list (statement n is the n-th) instead of an object keyed by number.
IKAT_LAYOUTS: dict[str, dict[str, str]] = {
    "2023/2024": {
        "turns": "turns",
        "utterance": "utterance",
        "ptkb_provenance": "ptkb_provenance",
        "response_provenance": "response_provenance",
    },
    "2025": {
        "turns": "responses",
        "utterance": "user_utterance",
        "ptkb_provenance": "relevant_ptkbs",
        "response_provenance": "citations",
    },
}
IKAT_TOPIC_NUMBER = re.compile(r"^[A-Za-z0-9][A-Za-z0-9.-]*$")  # "9-1" (2023, 2025) or 0 (2024); never "_"
_IKAT_TURNS_KEY = re.compile(r'"(?:turns|responses)"\s*:\s*\[')
MAX_TOPIC_ID = 32  # Conversation.topic_id
MAX_PASSAGE_ID = 200  # Passage.passage_id


def _ikat_layout(topic: dict) -> str:
    """Which layout a topic uses, from its fields: 2025 names its turns ``responses`` (and lists its PTKB)."""
    return "2025" if "responses" in topic or isinstance(topic.get("ptkb"), list) else "2023/2024"


def _ikat_year(layouts: set[str], numbers: list[Any]) -> int | None:
    """The iKAT year of a file: 2025 from its field names; else 2023 ("9-1" topic numbers) or 2024 (integers)."""
    if layouts == {"2025"}:
        return 2025
    if layouts != {"2023/2024"} or not numbers:
        return None
    if all(isinstance(n, str) and "-" in n for n in numbers):
        return 2023
    if all(isinstance(n, int) or (isinstance(n, str) and n.isdigit()) for n in numbers):
        return 2024
    return None


def _ikat_number(p: Parsed, where: str, topic: dict, *, line: int | None) -> str | None:
    value = topic.get("number")
    if isinstance(value, bool) or not isinstance(value, int | str):
        p.error(line, f"{where}: 'number' must be a topic number such as \"9-1\" or 3, got {value!r}")
        return None
    number = str(value).strip()
    if isinstance(value, int) and value < 0:
        p.error(line, f"{where}: 'number' must be ≥ 0, got {value}")
        return None
    if not IKAT_TOPIC_NUMBER.match(number) or len(number) > MAX_TOPIC_ID:
        p.error(
            line,
            f"{where}: 'number' {value!r} is not a topic number (letters, digits, '-' and '.', at most {MAX_TOPIC_ID} "
            "characters; '_' separates topic and turn in turn ids)",
        )
        return None
    return number


def _ikat_ptkb(p: Parsed, where: str, topic: dict, *, line: int | None) -> list[tuple[int, str]] | None:
    """The PTKB as (number, text) in number order: an object {"1": "I'm vegetarian.", …} or (2025) a list."""
    ptkb = topic.get("ptkb")
    if ptkb is None:
        p.error(line, f"{where}: missing 'ptkb' (the user's statements, an object of numbered texts or a list)")
        return None
    if isinstance(ptkb, list):
        items: list[tuple[Any, Any]] = [(n, text) for n, text in enumerate(ptkb, start=1)]
    elif isinstance(ptkb, dict):
        items = list(ptkb.items())
    else:
        p.error(line, f"{where}: 'ptkb' must be an object of numbered statements or a list, got {type(ptkb).__name__}")
        return None
    statements: list[tuple[int, str]] = []
    ok = True
    for key, text in items:
        number = key if isinstance(key, int) else int(key) if isinstance(key, str) and key.strip().isdigit() else None
        if number is None or number < 1:
            p.error(line, f"{where}: PTKB statement number {key!r} is not a positive integer")
            ok = False
        elif not isinstance(text, str) or not text.strip():
            p.error(line, f"{where}: PTKB statement {number} must be a non-empty text, got {text!r}")
            ok = False
        else:
            statements.append((number, text.strip()))
    return sorted(statements) if ok else None


def _id_list(p: Parsed, where: str, turn: dict, key: str, *, line: int | None) -> list[str]:
    value = turn.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        p.error(line, f'{where}: {key!r} must be a list of passage ids such as "clueweb22-en0034-09-03452:1"')
        return []
    ids = [v.strip() for v in value]
    long = [v for v in ids if len(v) > MAX_PASSAGE_ID]
    if long:
        p.error(line, f"{where}: passage id longer than {MAX_PASSAGE_ID} characters in {key!r}: {long[0][:40]}…")
    # Kept as listed: a response may cite one passage twice (iKAT 2025 2-1_12 cites one of its 6 passages twice).
    repeated = sorted(v for v, n in Counter(ids).items() if n > 1)
    if repeated:
        p.warn(line, f"{where}: {key!r} cites {', '.join(repeated)} more than once; kept as listed", kind="repeated")
    return ids


def _ptkb_refs(
    p: Parsed, where: str, turn: dict, key: str, ptkb: list[tuple[int, str]] | None, *, line: int | None
) -> list[int]:
    """The PTKB statement numbers a turn's response used: numbers (2023/2024) or statement texts (2025)."""
    value = turn.get(key, [])
    if not isinstance(value, list):
        p.error(line, f"{where}: {key!r} must be a list, got {type(value).__name__}")
        return []
    if ptkb is None:  # the topic's PTKB is bad: already reported
        return []
    numbers = {n for n, _text in ptkb}
    by_text = {" ".join(text.split()): n for n, text in reversed(ptkb)}
    refs: list[int] = []
    for ref in value:
        if isinstance(ref, str) and not ref.strip().isdigit():
            found = by_text.get(" ".join(ref.split()))
            if found is None:
                p.error(line, f"{where}: {key!r} names the statement {ref!r}, which is not in the topic's PTKB")
                continue
            refs.append(found)
        elif isinstance(ref, int | str) and not isinstance(ref, bool):
            number = int(ref)
            if number not in numbers:
                p.error(line, f"{where}: {key!r} names PTKB statement {number}, which the topic's PTKB does not have")
                continue
            refs.append(number)
        else:
            p.error(line, f"{where}: {key!r} holds {ref!r}, neither a statement number nor a statement text")
    return list(dict.fromkeys(refs))


def parse_ikat_topics(text: str, *, file: str) -> Parsed:
    """TREC iKAT topics JSON, 2023–2025: a list of topics, each a conversation with the user's PTKB.

    2023/2024: ``{"number": "9-1" | 0, "title", "ptkb": {"1": "…", …}, "turns": [{"turn_id", "utterance",
    "resolved_utterance", "response", "ptkb_provenance": [1, …], "response_provenance": ["<doc>:<psg>", …]}]}``;
    2025 renames ``turns`` → ``responses``, ``utterance`` → ``user_utterance``, ``ptkb_provenance`` →
    ``relevant_ptkbs`` (statement texts) and ``response_provenance`` → ``citations``, and lists the PTKB.
    Records: {"number", "title", "layout", "ptkb": [(n, text)], "turns": [{"number", "turn_id", "raw_utterance",
    "manual_rewrite", "response", "response_provenance", "ptkb_provenance"}]}; ``counts["year"]`` is the iKAT year
    the fields and topic numbers tell (None when they do not).
    """
    p = Parsed(file)
    data = load_topic_list(p, text, example='[{"number": "9-1", "ptkb": …, "turns": [...]}]')
    if data is None:
        return p
    seen_topics: dict[str, int | None] = {}
    layouts: dict[str, str] = {}  # layout → the first topic using it, for the mixed-layout error
    raw_numbers: list[Any] = []
    expected = "'number', 'ptkb' and 'turns'"
    unread = Unread()
    for located in topic_objects(p, text, data, expected=expected, turns_key=_IKAT_TURNS_KEY):
        topic, where, line = located.value, located.where, located.line
        number = _ikat_number(p, where, topic, line=line)
        if number is not None:
            where = f"topic {number}"
            raw_numbers.append(topic["number"])
            if number in seen_topics:
                first = seen_topics[number]
                p.error(line, f"{where}: topic number appears twice" + (f" (first on line {first})" if first else ""))
            else:
                seen_topics[number] = line
        layout = _ikat_layout(topic)
        layouts.setdefault(layout, where)
        fields = IKAT_LAYOUTS[layout]
        unread.note("topic", topic, {"number", "title", "ptkb", fields["turns"]})
        ptkb = _ikat_ptkb(p, where, topic, line=line)
        turns = topic.get(fields["turns"])
        if not isinstance(turns, list) or not turns:
            p.error(line, f"{where}: {fields['turns']!r} must be a non-empty list of turns")
            continue
        turn_records: list[dict[str, Any]] = []
        for turn, tnum, twhere, tline in numbered_turns(p, located, where, turns, key="turn_id", name="turn_id"):
            unread.note("turn", turn, {"turn_id", "resolved_utterance", "response", *fields.values()} - {"turns"})
            field = functools.partial(str_field, p, twhere, turn, line=tline)
            turn_records.append(
                {
                    "number": tnum,
                    "turn_id": f"{number}_{tnum}",
                    "raw_utterance": field(fields["utterance"], required=True),
                    "manual_rewrite": field("resolved_utterance"),
                    "response": field("response"),
                    "response_provenance": _id_list(p, twhere, turn, fields["response_provenance"], line=tline),
                    "ptkb_provenance": _ptkb_refs(p, twhere, turn, fields["ptkb_provenance"], ptkb, line=tline),
                }
            )
        p.records.append(
            {
                "number": number,
                "title": str_field(p, where, topic, "title", line=line),
                "layout": layout,
                "ptkb": ptkb or [],
                "turns": turn_records,
            }
        )
    if len(layouts) > 1:
        first_2025, first_old = layouts["2025"], layouts["2023/2024"]
        p.error(
            None,
            f"{first_2025} uses the 2025 field names ('responses', a PTKB list) but {first_old} the 2023/2024 ones "
            "('turns', a numbered PTKB): one file holds one year's topics",
        )
    p.counts = {
        "year": _ikat_year(set(layouts), raw_numbers),
        "topics": len(p.records),
        "turns": sum(len(t["turns"]) for t in p.records),
        "ptkb_statements": sum(len(t["ptkb"]) for t in p.records),
        "citations": sum(len(r["response_provenance"]) for t in p.records for r in t["turns"]),
    }
    unread.report(p)
    return p


IKAT_TURN_FIELDS = [
    "raw_utterance",
    "manual_rewrite",
    "canonical_response_text",
    "response_provenance",
    "ptkb_provenance",
]


def _ikat_collection(ctx: Context, year: int | None) -> Collection:
    if ctx.collection is not None:
        return ctx.collection
    if ctx.options.get("year"):
        try:
            year = int(str(ctx.options["year"]))
        except ValueError:
            year = None
    if year not in IKAT_DEFAULTS:
        reason = "cannot tell the iKAT year from the file: choose a collection or pass year=2023, 2024 or 2025"
        raise ImportFailed([row_error(ctx.name, None, reason)])
    name, threshold = IKAT_DEFAULTS[year]
    collection, _ = Collection.objects.get_or_create(
        name=name,
        defaults={
            "year": year,
            "relevance_threshold": threshold,
            "corpus_note": "TREC iKAT passages of ClueWeb22-B, ids <doc_id>:<passage_id>",
        },
    )
    return collection


def _ikat_turn_values(rec: dict[str, Any]) -> dict[str, Any]:
    # The response is the turn's canonical response c_i: a written answer, so it has no passage id.
    return {
        "raw_utterance": rec["raw_utterance"],
        "manual_rewrite": rec["manual_rewrite"],
        "canonical_response_text": rec["response"],
        "response_provenance": rec["response_provenance"],
        "ptkb_provenance": rec["ptkb_provenance"],
    }


def write_ikat_topics(ctx: Context) -> Result:
    """iKAT topics JSON (2023, 2024 or 2025, told from the fields): conversations, turns and each conversation's
    PTKB, in one transaction; a re-import brings them in line with the file and changes nothing when they are."""
    parsed = ctx.parsed(parse_ikat_topics)
    counts = Counter[str]()
    with transaction.atomic():
        collection = _ikat_collection(ctx, parsed.counts.get("year"))
        convs = {c.topic_id: c for c in Conversation.objects.filter(collection=collection)}
        new_convs, changed_convs = [], []
        for topic in parsed.records:
            conv = convs.get(topic["number"])
            title = topic["title"][:500]
            if conv is None:
                conv = Conversation(collection=collection, topic_id=topic["number"], title=title)
                convs[conv.topic_id] = conv
                new_convs.append(conv)
            elif title and conv.title != title:
                conv.title = title
                changed_convs.append(conv)
        Conversation.objects.bulk_create(new_convs)
        Conversation.objects.bulk_update(changed_convs, ["title"])
        if new_convs and not all(c.pk for c in new_convs):  # backends that do not return ids from bulk inserts
            convs = {c.topic_id: c for c in Conversation.objects.filter(collection=collection)}

        # PTKB: a conversation whose statements differ from the file's gets the file's, all of them.
        wanted = {convs[t["number"]].pk: t["ptkb"] for t in parsed.records}
        stored: dict[int, list[tuple[int, str]]] = defaultdict(list)
        for conv_pk, number, text in PtkbStatement.objects.filter(conversation_id__in=list(wanted)).values_list(
            "conversation_id", "number", "text"
        ):
            stored[conv_pk].append((number, text))
        replace = [pk for pk, statements in wanted.items() if sorted(stored.get(pk, [])) != statements]
        PtkbStatement.objects.filter(conversation_id__in=replace).delete()
        PtkbStatement.objects.bulk_create(
            [PtkbStatement(conversation_id=pk, number=n, text=text) for pk in replace for n, text in wanted[pk]],
            batch_size=CHUNK,
        )

        existing = {t.turn_id: t for t in Turn.objects.filter(collection=collection)}
        to_create: list[Turn] = []
        to_update: list[Turn] = []
        for topic in parsed.records:
            conv = convs[topic["number"]]
            for rec in topic["turns"]:
                values = _ikat_turn_values(rec)
                turn = existing.get(rec["turn_id"])
                if turn is None:
                    turn = Turn(
                        conversation=conv, collection=collection, number=rec["number"], turn_id=rec["turn_id"], **values
                    )
                    existing[turn.turn_id] = turn
                    to_create.append(turn)
                elif fields_set(turn, values):
                    to_update.append(turn)
        objects_insert(to_create)
        objects_update(to_update, IKAT_TURN_FIELDS)
        if parsed.counts.get("year"):
            counts["year"] = parsed.counts["year"]
        counts.update(
            topics=len(parsed.records),
            conversations_created=len(new_convs),
            turns=parsed.counts["turns"],
            turns_created=len(to_create),
            turns_updated=len(to_update),
            ptkb_statements=parsed.counts["ptkb_statements"],
            citations=parsed.counts["citations"],
            ptkb_conversations_written=len(replace),
        )
    ctx.warnings.extend(parsed.warnings)
    ignored = {"ignored_fields": parsed.counts["ignored_fields"]} if "ignored_fields" in parsed.counts else {}
    return Result(counts={**counts, **ignored}, collection=collection)
