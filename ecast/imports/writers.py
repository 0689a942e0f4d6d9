"""One writer per import kind: validate parsed records against the database, then write them atomically.

Every writer parses first (pure Python, progress reported), then inside one ``transaction.atomic`` checks every
record against the database, raises ``ImportFailed`` with *all* bad rows before writing anything, and writes with
bulk operations. Re-importing the same file changes nothing (idempotent).
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.db import transaction
from django.utils import timezone

from ecast.core.bulk import ids_reserve, objects_insert, objects_update, rows_insert
from ecast.imports import parsers, topics
from ecast.imports.errors import ImportFailed, row_error
from ecast.imports.readers import read_text
from ecast.models import Collection, Conversation, Paraphrase, Passage, PtkbStatement, Turn

CHUNK = 2000
# Default collection per CAsT year (threshold = the relevance level the year's published numbers use).
CAST_DEFAULTS = {2019: ("CAsT 2019", 1), 2020: ("CAsT 2020", 2), 2021: ("CAsT 2021", 2), 2022: ("CAsT 2022", 2)}
# iKAT grades passages 0–4 on the CAsT scale; binary measures start at grade 2 as for CAsT 2020–2022 (a collection
# setting: change it on the collection page when an evaluation uses another threshold).
IKAT_DEFAULTS = {2023: ("iKAT 2023", 2), 2024: ("iKAT 2024", 2), 2025: ("iKAT 2025", 2)}


@dataclass
class Context:
    """Everything a writer needs: the file, its display name, the target collection and the options."""

    path: Path
    name: str
    collection: Collection | None
    options: dict[str, Any]
    user: Any = None
    max_bytes: int | None = None
    progress: Callable[[int, int], None] | None = None
    warnings: list[dict[str, Any]] = field(default_factory=list)

    def text(self, path: Path | None = None, name: str | None = None) -> str:
        """The decoded text of the file (or of ``path``, a second file), within the upload limit."""
        return read_text(path or self.path, name=name or self.name, max_bytes=self.max_bytes)

    def flag(self, key: str) -> bool:
        """A boolean option: true for True, 1, "true", "yes" or "on"."""
        value = self.options.get(key, False)
        if isinstance(value, str):
            return value.strip().lower() in ("1", "true", "yes", "on")
        return bool(value)


@dataclass
class Result:
    """What a writer reports: counts for the job page, the collection written to, and ids for the caller."""

    counts: dict[str, Any]
    collection: Collection | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def raise_if(errors: list[dict[str, Any]]) -> None:
    """Raise ``ImportFailed`` with every error when there is any (writers validate everything before writing)."""
    if errors:
        raise ImportFailed(errors)


def _chunks(items: list, size: int = CHUNK) -> Iterable[list]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


def _turns_by_id(turn_ids: Iterable[str], collection: Collection | None) -> tuple[dict[str, Turn], set[str]]:
    """turn_id → Turn within the collection, or across collections when none is given; and the ambiguous ids."""
    ids = sorted(set(turn_ids))
    found: dict[str, list[Turn]] = defaultdict(list)
    for chunk in _chunks(ids):
        qs = Turn.objects.filter(turn_id__in=chunk)
        if collection is not None:
            qs = qs.filter(collection=collection)
        for t in qs:
            found[t.turn_id].append(t)
    ambiguous = {tid for tid, ts in found.items() if len(ts) > 1}
    return {tid: ts[0] for tid, ts in found.items() if len(ts) == 1}, ambiguous


def _turn_keys(turn_ids: Iterable[str], collection: Collection | None) -> list[tuple[str, int, int]]:
    """(turn_id, pk, collection pk) of the turns with these ids, in the collection or in any: plain values, for
    writers that only point rows at turns (loading Turn objects with their texts was a tenth of a run import)."""
    ids = sorted(set(turn_ids))
    keys: list[tuple[str, int, int]] = []
    for chunk in _chunks(ids):
        qs = Turn.objects.filter(turn_id__in=chunk)
        if collection is not None:
            qs = qs.filter(collection=collection)
        keys += qs.values_list("turn_id", "pk", "collection_id")
    return keys


def _infer_collection(turn_ids: Iterable[str]) -> Collection | None:
    """The collection holding most of these turn ids (ids collide across collections, e.g. 81_1)."""
    ids = sorted(set(turn_ids))
    votes: Counter[int] = Counter()
    for chunk in _chunks(ids):
        votes.update(Turn.objects.filter(turn_id__in=chunk).values_list("collection_id", flat=True))
    if not votes:
        return None
    return Collection.objects.get(pk=votes.most_common(1)[0][0])


def _target_collection(ctx: Context, turn_ids: Iterable[str]) -> Collection:
    collection = ctx.collection or _infer_collection(turn_ids)
    if collection is None:
        raise ImportFailed([row_error(ctx.name, None, "no collection given and none of its turn ids is known")])
    return collection


# ---------------------------------------------------------------- CAsT topics


def _year_for(topics: list[dict], ctx: Context) -> int | None:
    if ctx.options.get("year"):
        return int(ctx.options["year"])
    numbers = [t["number"] for t in topics if t["number"] is not None]
    if not numbers:
        return None
    top = max(numbers)
    return 2019 if top <= 80 else 2020 if top <= 105 else 2021 if top <= 131 else None


def collection_for_year(ctx: Context, year: int | None) -> Collection:
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
    parsed = topics.parse_cast_topics(ctx.text(), file=ctx.name)
    resolved: parsers.Parsed | None = None
    if ctx.options.get("resolved_tsv"):
        rpath = Path(str(ctx.options["resolved_tsv"]))
        resolved = parsers.parse_resolved_tsv(ctx.text(rpath, rpath.name), file=rpath.name)
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
            for n, turn_id, rewrite in resolved.records:
                turn = existing.get(turn_id)
                if turn is None:
                    errors.append(row_error(resolved.file, n, f"{turn_id} is not a turn of this topics file"))
                elif turn.manual_rewrite != rewrite:
                    turn.manual_rewrite = rewrite
                    if turn.pk:
                        to_update[turn_id] = turn
            counts["manual_rewrites"] = len(resolved.records)
        raise_if(errors)
        # COPY rather than bulk_create / bulk_update, whose per-value preparation and CASE expressions were most
        # of a topics import.
        objects_insert(to_create)
        objects_update(list(to_update.values()), [*TURN_FIELDS, "canonical_response_text"])
        counts.update(turns_created=len(to_create), turns_updated=len(to_update), topics=len(parsed.records))
        if passages:
            created, updated = passages_upsert(passages.items(), source=ctx.name)
            counts.update(passages_created=created, passages_updated=updated)
    return Result(counts=dict(counts), collection=collection)


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


def write_cast2019_resolved(ctx: Context) -> Result:
    """Resolved (manual) rewrites TSV for turns that already exist."""
    parsed = parsers.parse_resolved_tsv(ctx.text(), file=ctx.name)
    raise_if(parsed.errors)
    with transaction.atomic():
        collection = _target_collection(ctx, (r[1] for r in parsed.records))
        turns, _ = _turns_by_id((r[1] for r in parsed.records), collection)
        errors, changed = [], []
        for n, turn_id, rewrite in parsed.records:
            turn = turns.get(turn_id)
            if turn is None:
                errors.append(row_error(ctx.name, n, f"unknown turn {turn_id} in {collection.name}"))
            elif turn.manual_rewrite != rewrite:
                turn.manual_rewrite = rewrite
                changed.append(turn)
        raise_if(errors)
        objects_update(changed, ["manual_rewrite"])
    return Result(counts={"rewrites": len(parsed.records), "turns_updated": len(changed)}, collection=collection)


# ---------------------------------------------------------------- iKAT topics

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
    parsed = topics.parse_ikat_topics(ctx.text(), file=ctx.name)
    raise_if(parsed.errors)
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
                elif any(getattr(turn, k) != v for k, v in values.items()):
                    for k, v in values.items():
                        setattr(turn, k, v)
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
            ptkb_conversations_written=len(replace),
        )
    return Result(counts=dict(counts), collection=collection)


# ---------------------------------------------------------------- ECAsT paraphrases


def _norm(text: str) -> str:
    return " ".join(text.split())


def write_ecast_csv(ctx: Context) -> Result:
    """ECAsT CSV rows → approved manual + raw Paraphrase pairs; identical rows are kept as separate pairs.

    Idempotency key: (turn, manual text, raw text, occurrence number of that row within the turn), compared with
    the pairs an earlier import created, so re-importing adds nothing and a round trip keeps the multiset of rows.
    """
    parsed = parsers.parse_ecast_csv(ctx.text(), file=ctx.name)
    raise_if(parsed.errors)
    ids = {r[1] for r in parsed.records}
    with transaction.atomic():
        keys = _turn_keys(ids, ctx.collection)
        found = Counter(tid for tid, _pk, _c in keys)
        ambiguous = {tid for tid, n in found.items() if n > 1}
        turns = {tid: (pk, cid) for tid, pk, cid in keys if tid not in ambiguous}
        errors = []
        for n, turn_id, _m, _r in parsed.records:
            if turn_id in ambiguous:
                errors.append(row_error(ctx.name, n, f"turn {turn_id} exists in several collections; choose one"))
            elif turn_id not in turns:
                where = f" in {ctx.collection.name}" if ctx.collection else ""
                errors.append(row_error(ctx.name, n, f"unknown turn {turn_id}{where}: import its topics first"))
        raise_if(errors)
        turn_pks = {pk for pk, _c in turns.values()}
        existing: Counter[tuple[int, str, str]] = Counter()
        pairs = (
            Paraphrase.objects.filter(
                turn_id__in=turn_pks, kind=Paraphrase.Kind.MANUAL, origin=Paraphrase.Origin.IMPORTED
            )
            .exclude(pair=None)
            .values_list("turn_id", "text", "pair__text")
        )
        for turn_pk, manual, raw in pairs.iterator(chunk_size=CHUNK):
            existing[(turn_pk, _norm(manual), _norm(raw))] += 1
        seen: Counter[tuple[int, str, str]] = Counter()
        # (turn pk, manual text, raw text, provenance): rows without model objects, 18k of them for the full file
        new_pairs: list[tuple[int, str, str, dict[str, Any]]] = []
        for n, turn_id, manual, raw in parsed.records:
            turn_pk = turns[turn_id][0]
            key = (turn_pk, _norm(manual), _norm(raw))
            seen[key] += 1
            if seen[key] <= existing[key]:
                continue
            new_pairs.append((turn_pk, manual, raw, {"source": ctx.name, "line": n, "format": "ECAsT CSV"}))
        user_id = ctx.user.pk if ctx.user is not None and getattr(ctx.user, "pk", None) else None
        _insert_pairs(new_pairs, user_id)
    counts = {"rows": len(parsed.records), "pairs_created": len(new_pairs), "already_present": len(parsed.records)}
    counts["already_present"] -= len(new_pairs)
    counts["turns"] = len(ids)
    collection = ctx.collection
    if collection is None and turns:
        cids = {cid for _pk, cid in turns.values()}
        collection = Collection.objects.get(pk=cids.pop()) if len(cids) == 1 else None
    return Result(counts=counts, collection=collection)


def _insert_pairs(pairs: list[tuple[int, str, str, dict[str, Any]]], user_id: int | None) -> None:
    """Insert approved imported manual/raw paraphrase pairs, each row pointing at its partner.

    Both ids of every pair are reserved first, in one statement (``ids_reserve``), so both halves and both links go
    in one load: no second pass to find the manual rows again and point them at their partners. Every turn pk
    was resolved in the caller's transaction.
    """
    if not pairs:
        return
    now = timezone.now()
    cols = ["id", "turn_id", "kind", "text", "status", "origin", "provenance", "is_current", "created_at"]
    cols += ["updated_at", "created_by_id", "pair_id"]
    approved, imported = Paraphrase.Status.APPROVED.value, Paraphrase.Origin.IMPORTED.value
    manual_kind, raw_kind = Paraphrase.Kind.MANUAL.value, Paraphrase.Kind.RAW.value
    ids = ids_reserve(Paraphrase, 2 * len(pairs))
    rows = []
    for (turn_pk, manual, raw, prov), m_id, r_id in zip(pairs, ids[::2], ids[1::2], strict=True):
        rows += [
            (m_id, turn_pk, manual_kind, manual, approved, imported, prov, True, now, now, user_id, r_id),
            (r_id, turn_pk, raw_kind, raw, approved, imported, prov, True, now, now, user_id, m_id),
        ]
    rows_insert(Paraphrase, cols, rows, analyze=True)


# ---------------------------------------------------------------- utterance labels, CAsTUR


def write_utterance_labels(ctx: Context) -> Result:
    """SE/FT/PT labels; rows for unknown turns are errors, or skipped and counted with option skip_unknown."""
    parsed = parsers.parse_utterance_labels(ctx.text(), file=ctx.name)
    raise_if(parsed.errors)
    with transaction.atomic():
        collection = _target_collection(ctx, (r[1] for r in parsed.records))
        turns, _ = _turns_by_id((r[1] for r in parsed.records), collection)
        skip = ctx.flag("skip_unknown")
        errors, changed, skipped = [], [], 0
        for n, qid, label in parsed.records:
            turn = turns.get(qid)
            if turn is None:
                if skip:
                    skipped += 1
                    continue
                errors.append(
                    row_error(ctx.name, n, f"unknown turn {qid} in {collection.name} (use skip_unknown=true to skip)")
                )
            elif turn.is_system:
                errors.append(row_error(ctx.name, n, f"{qid} is a System turn: only User turns have a class"))
            elif turn.utterance_class != label:
                turn.utterance_class = label
                changed.append(turn)
        raise_if(errors)
        objects_update(changed, ["utterance_class"])
    if skipped:
        reason = f"skipped {skipped} row(s) for turns not in {collection.name}"
        ctx.warnings.append(row_error(ctx.name, None, reason, kind="unknown turn"))
    counts = {"labels": len(parsed.records) - skipped, "turns_updated": len(changed), "skipped_unknown": skipped}
    return Result(counts=counts, collection=collection)


def write_castur(ctx: Context) -> Result:
    """CAsTUR dependencies → relevant_turn_numbers (sorted) and depends_on (the nearest relevant earlier turn)."""
    parsed = parsers.parse_castur(ctx.text(), file=ctx.name)
    raise_if(parsed.errors)
    all_ids = {r[1] for r in parsed.records} | {r[2] for r in parsed.records if r[2]}
    with transaction.atomic():
        collection = _target_collection(ctx, all_ids)
        turns, _ = _turns_by_id(all_ids, collection)
        errors = []
        relevant: dict[str, set[int]] = defaultdict(set)
        for n, cur, rel in parsed.records:
            for tid in (cur, rel):
                if tid and tid not in turns:
                    errors.append(row_error(ctx.name, n, f"unknown turn {tid} in {collection.name}"))
            relevant.setdefault(cur, set())
            if rel:
                relevant[cur].add(int(rel.split("_")[1]))
        raise_if(errors)
        changed = []
        for cur, numbers in relevant.items():
            turn = turns[cur]
            nums = sorted(numbers)
            dep = turns[f"{cur.split('_')[0]}_{nums[-1]}"].pk if nums else None
            if turn.relevant_turn_numbers != nums or turn.depends_on_id != dep:
                turn.relevant_turn_numbers, turn.depends_on_id = nums, dep
                changed.append(turn)
        objects_update(changed, ["relevant_turn_numbers", "depends_on"])
    return Result(counts={"turns": len(relevant), "turns_updated": len(changed)}, collection=collection)


# ---------------------------------------------------------------- passages


def passages_upsert(records: Iterable[tuple[str, str]], *, source: str) -> tuple[int, int]:
    """Create or update passages by id, ``records`` being (id, text); returns (created, updated). Same text:
    untouched. The one way passage texts are written (topic files, crowd CSVs, streamed corpora)."""
    texts = dict(records)
    source = source[:300]
    created = updated = 0
    for chunk in _chunks(list(texts)):
        existing = {p.passage_id: p for p in Passage.objects.filter(passage_id__in=chunk)}
        new = [(pid, texts[pid], source) for pid in chunk if pid not in existing]
        changed = []
        for pid, row in existing.items():
            if row.text != texts[pid]:
                row.text, row.source = texts[pid], source
                changed.append(row)
        # Rows without model objects: bulk_create spends most of a large import in Python per value.
        rows_insert(Passage, ["passage_id", "text", "source"], new, analyze=True)
        objects_update(changed, ["text", "source"])
        created, updated = created + len(new), updated + len(changed)
    return created, updated


def _write_passages(ctx: Context, parsed: parsers.Parsed) -> Result:
    raise_if(parsed.errors)
    with transaction.atomic():
        created, updated = passages_upsert(((pid, body) for _n, pid, body in parsed.records), source=ctx.name)
    counts = {**parsed.counts, "passages_created": created, "passages_updated": updated}
    return Result(counts=counts, collection=ctx.collection)


# Passage TSV/JSONL corpus files are streamed by ecast.imports.corpus (the passages_tsv / passages_jsonl kinds).


def write_crowd_passages(ctx: Context) -> Result:
    """Passage texts from MTurk batch CSVs (one file, or every *.csv / *.csv.gz in a folder)."""
    files = sorted(ctx.path.glob("*.csv*")) if ctx.path.is_dir() else [ctx.path]
    merged = parsers.Parsed(ctx.name)
    seen: set[str] = set()
    for f in files:
        name = f.name if ctx.path.is_dir() else ctx.name
        one = parsers.parse_crowd_passages(ctx.text(f, name), file=name)
        merged.errors += one.errors
        merged.counts["rows"] = merged.counts.get("rows", 0) + one.counts.get("rows", 0)
        for rec in one.records:
            if rec[1] not in seen:
                seen.add(rec[1])
                merged.records.append(rec)
    merged.counts["files"] = len(files)
    return _write_passages(ctx, merged)


# ---------------------------------------------------------------- ad hoc turns (CLEF eHealth and the like)


def _queries(ctx: Context) -> dict[str, str]:
    qpath = ctx.options.get("queries")
    if not qpath:
        return {}
    path = Path(str(qpath))
    text = ctx.text(path, path.name)
    parsed = (
        parsers.parse_clef_queries(text, file=path.name)
        if "<query>" in text
        else parsers.parse_queries_tsv(text, file=path.name)
    )
    raise_if(parsed.errors)
    return parsers.read_queries_map(parsed)


def _create_adhoc_turns(collection: Collection, qids: Iterable[str], texts: dict[str, str]) -> dict[str, Turn]:
    """One single-turn conversation per qid (topic id = turn id = qid), created or updated in bulk."""
    qids = sorted(set(qids))
    convs = {c.topic_id: c for c in Conversation.objects.filter(collection=collection, topic_id__in=qids)}
    new_convs = [Conversation(collection=collection, topic_id=q) for q in qids if q not in convs]
    Conversation.objects.bulk_create(new_convs)
    convs.update({c.topic_id: c for c in new_convs})
    turns = {t.turn_id: t for t in Turn.objects.filter(collection=collection, turn_id__in=qids)}
    new_turns = [
        Turn(
            conversation=convs[q],
            collection=collection,
            number=1,
            turn_id=q,
            raw_utterance=texts.get(q, q),
            manual_rewrite=texts.get(q, q),
        )
        for q in qids
        if q not in turns
    ]
    Turn.objects.bulk_create(new_turns, batch_size=CHUNK)
    changed = []
    for q, t in turns.items():
        if q in texts and t.raw_utterance != texts[q]:
            t.raw_utterance = t.manual_rewrite = texts[q]
            changed.append(t)
    Turn.objects.bulk_update(changed, ["raw_utterance", "manual_rewrite"], batch_size=CHUNK)
    turns.update({t.turn_id: t for t in new_turns})
    return turns


def write_clef_queries(ctx: Context) -> Result:
    """CLEF eHealth queries file → one single-turn conversation per query in the chosen collection."""
    parsed = parsers.parse_clef_queries(ctx.text(), file=ctx.name)
    raise_if(parsed.errors)
    if ctx.collection is None:
        raise ImportFailed([row_error(ctx.name, None, "choose the collection the queries belong to")])
    with transaction.atomic():
        before = Turn.objects.filter(collection=ctx.collection).count()
        _create_adhoc_turns(ctx.collection, (r[1] for r in parsed.records), parsers.read_queries_map(parsed))
        created = Turn.objects.filter(collection=ctx.collection).count() - before
    return Result(counts={"queries": len(parsed.records), "turns_created": created}, collection=ctx.collection)


TURN_ID_SAFE = re.compile(r"^[\w.\-:]+$")


def resolve_qids(ctx: Context, qids: set[str], *, kind: str) -> tuple[Collection, dict[str, int], set[str]]:
    """The target collection, qid → turn pk, and the unknown qids (created as ad hoc turns with create_turns)."""
    if ctx.flag("create_turns"):
        if ctx.collection is None:
            raise ImportFailed([row_error(ctx.name, None, f"create_turns needs a collection for this {kind}")])
        bad = sorted(q for q in qids if not TURN_ID_SAFE.match(q) or len(q) > 64)
        if bad:
            raise ImportFailed([row_error(ctx.name, None, f"qid {q!r} cannot be a turn id") for q in bad])
        turns = _create_adhoc_turns(ctx.collection, qids, _queries(ctx))
        return ctx.collection, {q: t.pk for q, t in turns.items()}, set()
    # One query both finds the turns and, without a chosen collection, the collection holding most of them.
    keys = _turn_keys(qids, ctx.collection)
    collection = ctx.collection
    if collection is None:
        votes = Counter(cid for _tid, _pk, cid in keys)
        if not votes:
            raise ImportFailed([row_error(ctx.name, None, "no collection given and none of its turn ids is known")])
        collection = Collection.objects.get(pk=votes.most_common(1)[0][0])
    pks = {tid: pk for tid, pk, cid in keys if cid == collection.pk}
    return collection, pks, qids - set(pks)
