"""Parsers of conversation topic files: CAsT 2019–2021 JSON and TREC iKAT 2023–2025 JSON (with the PTKB).

Plain Python (no Django), the same contract as ``ecast.imports.parsers``: text in, records + every bad record as
{file, line, reason} out.
"""

from __future__ import annotations

import functools
import json
import re
from typing import Any

from ecast.imports.parsers import LineIndex, Parsed

# ---------------------------------------------------------------- CAsT topics (2019, 2020, 2021 JSON)


def str_field(p: Parsed, where: str, obj: dict, key: str, *, line: int | None, required: bool = False) -> str:
    value = obj.get(key)
    if value is None:
        if required:
            p.error(line, f"{where}: missing {key!r}")
        return ""
    if not isinstance(value, str):
        p.error(line, f"{where}: {key!r} must be a string, got {type(value).__name__}")
        return ""
    if required and not value.strip():
        p.error(line, f"{where}: {key!r} is empty")
    return value.strip()


def _int_field(p: Parsed, where: str, obj: dict, key: str, *, line: int | None) -> int | None:
    value = obj.get(key)
    if isinstance(value, bool) or not isinstance(value, int | str):
        p.error(line, f"{where}: {key!r} must be an integer, got {value!r}")
        return None
    try:
        number = int(value)
    except ValueError:
        p.error(line, f"{where}: {key!r} must be an integer, got {value!r}")
        return None
    if number < 1:
        p.error(line, f"{where}: {key!r} must be ≥ 1, got {number}")
        return None
    return number


_WS = re.compile(r"\s*")
_TURN_KEY = re.compile(r'"turn"\s*:\s*\[')


def array_spans(text: str, pos: int) -> list[tuple[int, int]]:
    """(start, end) offsets of the elements of the JSON array whose '[' is at ``pos`` (for error line numbers)."""
    decoder = json.JSONDecoder()
    spans: list[tuple[int, int]] = []
    pos = _WS.match(text, pos + 1).end()  # type: ignore[union-attr]
    try:
        while pos < len(text) and text[pos] != "]":
            _obj, end = decoder.raw_decode(text, pos)
            spans.append((pos, end))
            pos = _WS.match(text, end).end()  # type: ignore[union-attr]
            if text.startswith(",", pos):
                pos = _WS.match(text, pos + 1).end()  # type: ignore[union-attr]
            else:
                break
    except ValueError:
        pass
    return spans


def load_topic_list(p: Parsed, text: str, *, example: str) -> list[Any] | None:
    """The file's JSON list of topics; None (with the error recorded) when it is not JSON or not a non-empty list."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        p.error(exc.lineno, f"invalid JSON: {exc.msg} (column {exc.colno})")
        return None
    if not isinstance(data, list) or not data:
        p.error(None, f"expected a non-empty JSON list of topics like {example}")
        return None
    return data


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
    line_of = LineIndex(text)
    topic_spans = array_spans(text, _WS.match(text).end())  # type: ignore[union-attr]
    seen_topics: set[int] = set()
    for i, topic in enumerate(data, start=1):
        where = f"topic #{i}"
        span = topic_spans[i - 1] if i <= len(topic_spans) else None
        line = line_of(span[0]) if span else None
        if not isinstance(topic, dict):
            p.error(line, f"{where}: expected an object with 'number' and 'turn', got {type(topic).__name__}")
            continue
        number = _int_field(p, where, topic, "number", line=line)
        if number is not None:
            where = f"topic {number}"
            if number in seen_topics:
                p.error(line, f"{where}: topic number appears twice")
            seen_topics.add(number)
        turns = topic.get("turn")
        if not isinstance(turns, list) or not turns:
            p.error(line, f"{where}: 'turn' must be a non-empty list")
            continue
        key = _TURN_KEY.search(text, span[0], span[1]) if span else None
        turn_spans = array_spans(text, key.end() - 1) if key else []
        turn_records: list[dict[str, Any]] = []
        record: dict[str, Any] = {
            "number": number,
            "title": str_field(p, where, topic, "title", line=line),
            "description": str_field(p, where, topic, "description", line=line),
            "turns": turn_records,
        }
        seen_turns: set[int] = set()
        for j, turn in enumerate(turns, start=1):
            twhere = f"{where}, turn #{j}"
            tline = line_of(turn_spans[j - 1][0]) if j <= len(turn_spans) else line
            if not isinstance(turn, dict):
                p.error(tline, f"{twhere}: expected an object, got {type(turn).__name__}")
                continue
            tnum = _int_field(p, twhere, turn, "number", line=tline)
            if tnum is not None:
                twhere = f"{where}, turn {tnum}"
                if tnum in seen_turns:
                    p.error(tline, f"{twhere}: turn number appears twice")
                seen_turns.add(tnum)

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
    return p


# ---------------------------------------------------------------- TREC iKAT topics (2023, 2024, 2025 JSON)

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
    return list(dict.fromkeys(ids))


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
    line_of = LineIndex(text)
    topic_spans = array_spans(text, _WS.match(text).end())  # type: ignore[union-attr]
    seen_topics: dict[str, int | None] = {}
    layouts: dict[str, str] = {}  # layout → the first topic using it, for the mixed-layout error
    raw_numbers: list[Any] = []
    for i, topic in enumerate(data, start=1):
        where = f"topic #{i}"
        span = topic_spans[i - 1] if i <= len(topic_spans) else None
        line = line_of(span[0]) if span else None
        if not isinstance(topic, dict):
            p.error(line, f"{where}: expected an object with 'number', 'ptkb' and 'turns', got {type(topic).__name__}")
            continue
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
        ptkb = _ikat_ptkb(p, where, topic, line=line)
        turns = topic.get(fields["turns"])
        if not isinstance(turns, list) or not turns:
            p.error(line, f"{where}: {fields['turns']!r} must be a non-empty list of turns")
            continue
        key = _IKAT_TURNS_KEY.search(text, span[0], span[1]) if span else None
        turn_spans = array_spans(text, key.end() - 1) if key else []
        turn_records: list[dict[str, Any]] = []
        seen_turns: set[int] = set()
        for j, turn in enumerate(turns, start=1):
            twhere = f"{where}, turn #{j}"
            tline = line_of(turn_spans[j - 1][0]) if j <= len(turn_spans) else line
            if not isinstance(turn, dict):
                p.error(tline, f"{twhere}: expected an object, got {type(turn).__name__}")
                continue
            tnum = _int_field(p, twhere, turn, "turn_id", line=tline)
            if tnum is not None:
                twhere = f"{where}, turn {tnum}"
                if tnum in seen_turns:
                    p.error(tline, f"{twhere}: turn_id appears twice")
                seen_turns.add(tnum)
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
    }
    return p
