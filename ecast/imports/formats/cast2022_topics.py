"""TREC CAsT 2022 topics (the ``cast2022_topics`` kind): the tree file or the flattened ("duplicated") file, parsed
and written as conversations whose User and System turns form a tree.

Tree file: a list of topics ``{"number": 132, "turn": [...]}`` whose turns carry a branch-aware ``number``
("1-1"), a ``participant`` (User or System) and, but for the first, a ``parent``. User turns have ``utterance``
and ``manual_rewritten_utterance`` (the automatic files ``automatic_rewritten_utterance`` instead), System turns
``response`` and ``provenance`` (passage ids, kept as listed, repeats included).

Flattened file: one entry per root-to-leaf path (a topic number repeats once per path), each a linear list of
User turns, each with the ``response`` and ``provenance`` of the System turn that follows it on that path. The
System turns' own numbers are not in the file; they are recovered by ``ecast.trees.flattened_system_number`` and
the paths are merged back into the tree, so both files import to the same turns.

Both parsers return the same records: {"number": "132", "layout": "tree" | "flattened", "paths": int,
"turns": [{"number": "1-1", "turn_id": "132_1-1", "participant", "parent": "1-1" | None, "raw_utterance",
"manual_rewrite", "automatic_rewrite", "response", "provenance": [ids], "mixed_initiative"}]} with parents before
their children; a rewrite the file does not carry is None, and the import leaves that field of a stored turn as it
is (the automatic files have no manual rewrites: importing one after the manual file keeps them, and the reverse).
Every field of the file is stored or listed as ignored in the import report (``ignored_fields`` and a warning).
Both import to the same turns; re-importing either changes nothing.
"""

from __future__ import annotations

import functools
import json
from collections import Counter
from collections.abc import Iterator
from typing import Any

from django.db import transaction

from ecast import trees
from ecast.imports.formats.cast_topics import collection_for_year
from ecast.imports.parsing import Located, Parsed, Unread, load_topic_list, str_field, topic_objects
from ecast.imports.writing import CHUNK, Context, Result, fields_set
from ecast.models import Conversation, Turn

MAX_PASSAGE_ID = 200  # Passage.passage_id
EXAMPLE = '[{"number": 132, "turn": [{"number": "1-1", "participant": "User", …}]}]'
# The fields each level of the files carries that the import stores; any other is reported as ignored.
TOPIC_FIELDS = {"number", "turn"}
REWRITES = {"manual_rewrite": "manual_rewritten_utterance", "automatic_rewrite": "automatic_rewritten_utterance"}
READ = {
    trees.USER: {"number", "participant", "parent", "utterance", *REWRITES.values()},
    trees.SYSTEM: {"number", "participant", "parent", "response", "provenance"},
    "flattened": {"number", "utterance", *REWRITES.values(), "response", "provenance"},
}


def _topics(
    p: Parsed, text: str, data: list[Any], unread: Unread
) -> Iterator[tuple[str, Located, list[tuple[Any, int | None]]]]:
    """(number, topic, [(turn, line)]) of each topic with a good number and turns; bad topics are reported."""
    for topic in topic_objects(p, text, data, expected="'number' and 'turn'"):
        unread.note("topic", topic.value, TOPIC_FIELDS)
        value = topic.value.get("number")
        if isinstance(value, bool) or not isinstance(value, int | str) or not str(value).strip().isdigit():
            p.error(topic.line, f"{topic.where}: 'number' must be a topic number such as 132, got {value!r}")
            continue
        turns = topic.value.get("turn")
        if not isinstance(turns, list) or not turns:
            p.error(topic.line, f"topic {value}: 'turn' must be a non-empty list")
            continue
        yield str(int(value)), topic, [(turn, topic.turn_line(j)) for j, turn in enumerate(turns, start=1)]


def _branch_number(p: Parsed, where: str, turn: dict, key: str, *, line: int | None) -> str | None:
    value = turn.get(key)
    if not isinstance(value, str) or trees.split_branch_number(value.strip()) is None:
        p.error(line, f'{where}: {key!r} must be a branch-aware turn number such as "1-3", got {value!r}')
        return None
    return value.strip()


def _provenance(p: Parsed, where: str, turn: dict, *, line: int | None) -> list[str]:
    value = turn.get("provenance", [])
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        p.error(line, f"{where}: 'provenance' must be a list of passage ids such as \"MARCO_26_222804180-1\"")
        return []
    ids = [v.strip() for v in value]
    if any(len(v) > MAX_PASSAGE_ID for v in ids):
        p.error(line, f"{where}: a passage id in 'provenance' is longer than {MAX_PASSAGE_ID} characters")
    for v in ids:
        if any(c.isspace() for c in v):
            # The 2022 tree file has one ("MARCO_50_2268879788 -3"): kept as written, but no qrels line can name it.
            p.warn(line, f"{where}: passage id {v!r} in 'provenance' contains a space", kind="provenance")
    return ids


def _rewrites(p: Parsed, where: str, turn: dict, *, line: int | None) -> dict[str, str | None]:
    """The turn's manual and automatic rewrites; None for one the file does not carry."""
    return {name: str_field(p, where, turn, key, line=line) if key in turn else None for name, key in REWRITES.items()}


def _record(topic: str, number: str, participant: str, parent: str | None, **values: Any) -> dict[str, Any]:
    response = values.get("response", "")
    return {
        "number": number,
        "turn_id": f"{topic}_{number}",
        "participant": participant,
        "parent": parent,
        "raw_utterance": values.get("raw_utterance", ""),
        "manual_rewrite": values.get("manual_rewrite"),
        "automatic_rewrite": values.get("automatic_rewrite"),
        "response": response,
        "provenance": values.get("provenance", []),
        "mixed_initiative": trees.mixed_initiative(response) if participant == trees.SYSTEM else "",
    }


def _finish(p: Parsed, layout: str, unread: Unread) -> Parsed:
    turns = [t for topic in p.records for t in topic["turns"]]
    kinds = Counter(t["participant"] for t in turns)
    initiative = Counter(t["mixed_initiative"] for t in turns if t["mixed_initiative"])
    p.counts = {
        "layout": layout,
        "topics": len(p.records),
        "paths": sum(topic["paths"] for topic in p.records),
        "turns": len(turns),
        "user_turns": kinds[trees.USER],
        "system_turns": kinds[trees.SYSTEM],
        "clarifications": initiative[trees.CLARIFICATION],
        "suggestions": initiative[trees.SUGGESTION],
        **{f"{name}s": sum(bool(t[name]) for t in turns) for name in REWRITES},
    }
    unread.report(p)
    return p


def _paths(records: list[dict[str, Any]]) -> int:
    return len(trees.leaves({t["number"]: t["parent"] for t in records}))


def parse_cast2022_tree(text: str, *, file: str) -> Parsed:
    """The CAsT 2022 tree topics file: every turn with its participant and parent (see the module docstring)."""
    p = Parsed(file)
    data = load_topic_list(p, text, example=EXAMPLE)
    if data is None:
        return p
    unread = Unread()
    seen_topics: set[str] = set()
    for number, topic, located in _topics(p, text, data, unread):
        line, where = topic.line, f"topic {number}"
        if number in seen_topics:
            p.error(line, f"{where}: topic number appears twice")
        seen_topics.add(number)
        records: list[dict[str, Any]] = []
        known: set[str] = set()
        for j, (turn, tline) in enumerate(located, start=1):
            twhere = f"{where}, turn #{j}"
            if not isinstance(turn, dict):
                p.error(tline, f"{twhere}: expected an object, got {type(turn).__name__}")
                continue
            tnum = _branch_number(p, twhere, turn, "number", line=tline)
            if tnum is None:
                continue
            twhere = f"{where}, turn {tnum}"
            if tnum in known:
                p.error(tline, f"{twhere}: turn number appears twice")
                continue
            known.add(tnum)  # even when the turn is bad, so that its children are not reported too
            participant = turn.get("participant")
            if participant not in (trees.USER, trees.SYSTEM):
                p.error(tline, f'{twhere}: \'participant\' must be "User" or "System", got {participant!r}')
                continue
            unread.note(f"{participant} turn", turn, READ[participant])
            parent = turn.get("parent")
            if parent is None and len(known) > 1:
                p.error(tline, f"{twhere}: only the first turn of a topic may have no 'parent'")
            elif parent is not None and parent not in known:
                p.error(tline, f"{twhere}: 'parent' {parent!r} is not an earlier turn of this topic")
            field = functools.partial(str_field, p, twhere, turn, line=tline)
            values: dict[str, Any]
            if participant == trees.USER:
                values = {
                    "raw_utterance": field("utterance", required=True),
                    **_rewrites(p, twhere, turn, line=tline),
                }
            else:
                values = {
                    "response": field("response", required=True),
                    "provenance": _provenance(p, twhere, turn, line=tline),
                }
            records.append(_record(number, tnum, participant, parent, **values))
        p.records.append({"number": number, "layout": "tree", "turns": records, "paths": _paths(records)})
    return _finish(p, "tree", unread)


def _merge(
    p: Parsed, nodes: dict[str, dict[str, Any]], rec: dict[str, Any], *, where: str, line: int | None
) -> dict[str, Any]:
    """Add a turn met on a path, or check it against the same turn met on an earlier path; returns the kept one."""
    seen = nodes.setdefault(rec["number"], rec)
    for key in ("parent", "raw_utterance", *REWRITES, "response", "provenance"):
        if seen[key] != rec[key]:
            p.error(line, f"{where}: its {key.replace('_', ' ')} differs from the same turn on an earlier path")
            break
    return seen


def _flattened_paths(
    p: Parsed, text: str, data: list[Any], unread: Unread
) -> dict[str, list[list[tuple[dict, int | None]]]]:
    """topic → its paths, each a list of (User record, line) with the response on the record; bad turns reported."""
    paths: dict[str, list[list[tuple[dict, int | None]]]] = {}
    for number, _topic, located in _topics(p, text, data, unread):
        path: list[tuple[dict, int | None]] = []
        paths.setdefault(number, []).append(path)
        where = f"topic {number} path {len(paths[number])}"
        for j, (turn, tline) in enumerate(located, start=1):
            if not isinstance(turn, dict):
                p.error(tline, f"{where}, turn #{j}: expected an object, got {type(turn).__name__}")
                break
            tnum = _branch_number(p, f"{where}, turn #{j}", turn, "number", line=tline)
            if tnum is None:
                break
            twhere = f"{where}, turn {tnum}"
            unread.note("turn", turn, READ["flattened"])
            field = functools.partial(str_field, p, twhere, turn, line=tline)
            rec = _record(
                number,
                tnum,
                trees.USER,
                None,
                raw_utterance=field("utterance", required=True),
                **_rewrites(p, twhere, turn, line=tline),
            )
            rec["answer"] = (field("response"), tuple(_provenance(p, twhere, turn, line=tline)))
            if not rec["answer"][0] and j < len(located):
                p.error(tline, f"{twhere}: only the last turn of a path may have no 'response'")
            path.append((rec, tline))
    return paths


def parse_cast2022_flattened(text: str, *, file: str) -> Parsed:
    """The CAsT 2022 flattened file: one linear path per entry, merged back into each topic's tree.

    A System turn is told apart from another by the User turn it answers and its response; its number comes from
    the User turns that follow it (``ecast.trees.flattened_system_number``).
    """
    p = Parsed(file)
    data = load_topic_list(p, text, example=EXAMPLE)
    if data is None:
        return p
    unread = Unread()
    for number, paths in _flattened_paths(p, text, data, unread).items():
        # First pass: which User turns follow each System turn (a System turn = its User turn + its answer).
        following: dict[tuple[str, tuple], list[str]] = {}
        for path in paths:
            for k, (rec, _line) in enumerate(path):
                if rec["answer"][0]:
                    after = [path[k + 1][0]["number"]] if k + 1 < len(path) else []
                    following.setdefault((rec["number"], rec["answer"]), []).extend(after)
        system_number = {key: trees.flattened_system_number(key[0], after) for key, after in following.items()}
        clash = Counter(system_number.values())
        for key, snum in system_number.items():
            if clash[snum] > 1:
                p.error(None, f"topic {number}: two System turns would be numbered {snum} (after {key[0]})")
        # Second pass: the tree, parents before children, each turn checked against its copies on other paths.
        nodes: dict[str, dict[str, Any]] = {}
        for n, path in enumerate(paths, start=1):
            parent: str | None = None
            for rec, line in path:
                answer = rec.pop("answer")
                user = _merge(
                    p,
                    nodes,
                    {**rec, "parent": parent},
                    where=f"topic {number} path {n}, turn {rec['number']}",
                    line=line,
                )
                if not answer[0]:
                    break
                snum = system_number[(user["number"], answer)]
                system = _record(
                    number, snum, trees.SYSTEM, user["number"], response=answer[0], provenance=list(answer[1])
                )
                _merge(p, nodes, system, where=f"topic {number} path {n}, System turn {snum}", line=line)
                parent = snum
        records = list(nodes.values())
        p.records.append({"number": number, "layout": "flattened", "turns": records, "paths": _paths(records)})
        if p.records[-1]["paths"] != len(paths):
            p.warn(None, f"topic {number}: {len(paths)} paths in the file, {_paths(records)} once merged into a tree")
    return _finish(p, "flattened", unread)


def is_tree(data_head: Any) -> bool:
    """Whether the first topic of a parsed file is in the tree layout (its turns name a participant)."""
    turns = data_head.get("turn") if isinstance(data_head, dict) else None
    return isinstance(turns, list) and any(isinstance(t, dict) and "participant" in t for t in turns)


def parse_cast2022_topics(text: str, *, file: str) -> Parsed:
    """Either CAsT 2022 file, told by its turns: tree turns name their participant, flattened ones do not."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        data = None
    if isinstance(data, list) and data and not is_tree(data[0]):
        return parse_cast2022_flattened(text, file=file)
    return parse_cast2022_tree(text, file=file)


TREE_FIELDS = [
    "participant",
    "tree_number",
    "raw_utterance",
    "manual_rewrite",
    "automatic_rewrite",
    "canonical_response_text",
    "response_provenance",
    "mixed_initiative",
]


def _values(rec: dict[str, Any]) -> dict[str, Any]:
    # A System turn is the system's side of the conversation: its response is the turn's canonical response text
    # (a written summary, so no passage id) and its provenance the passages it was written from. A rewrite the file
    # does not carry (None) is left as stored.
    values = {
        "participant": rec["participant"],
        "tree_number": rec["number"],
        "raw_utterance": rec["raw_utterance"],
        "manual_rewrite": rec["manual_rewrite"],
        "automatic_rewrite": rec["automatic_rewrite"],
        "canonical_response_text": rec["response"],
        "response_provenance": rec["provenance"],
        "mixed_initiative": rec["mixed_initiative"],
    }
    return {k: v for k, v in values.items() if v is not None}


def write_cast2022_topics(ctx: Context) -> Result:
    """CAsT 2022 topics, tree or flattened file: conversations, User and System turns, and each turn's parent."""
    parsed = ctx.parsed(parse_cast2022_topics)
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
                if fields_set(found, values):
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
