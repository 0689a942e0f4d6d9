"""Ad hoc queries, one single-turn conversation each: CLEF eHealth topics XML (the ``clef_queries`` kind) and the
``qid<TAB>text`` queries file that qrels and run imports read with ``create_turns`` (``resolve_qids``, which their
writers in ``evaluation.importers`` call to find or make the turns of a file's qids)."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from xml.etree.ElementTree import Element, ParseError

from defusedxml import DefusedXmlException
from defusedxml.ElementTree import fromstring as safe_fromstring
from django.db import transaction

from ecast.imports.errors import ImportFailed, row_error
from ecast.imports.parsing import LineIndex, Parsed, text_lines
from ecast.imports.writing import CHUNK, Context, Result, fields_set, raise_if, turn_keys
from ecast.models import Collection, Conversation, Turn

# CLEF eHealth topics come in two layouts: 2016–2018 ``<queries><query><id>…</id><en>…</en>…</query>`` (the query
# text in <en>, or <title>) and 2021 ``<topics><topic><id>…</id><query>…</query><narrative>…</narrative></topic>``.
CLEF_LAYOUTS = {"topic": ("query",), "query": ("en", "title")}
_XML_DECLARATIONS = re.compile(r"<!(DOCTYPE|ENTITY)\b", re.I)
_XML_POSITION = re.compile(r":? line \d+, column \d+$")
# "&" not starting an entity or character reference: the organisers' 2021 narratives hold a few bare ones.
_BARE_AMPERSAND = re.compile(r"&(?!(?:#\d+|#x[0-9a-fA-F]+|[A-Za-z_][\w.-]*);)")


def _xml_element(block: str) -> Element:
    """One element, parsed by the standard library's parser through defusedxml (no DTD, no entity expansion)."""
    return safe_fromstring(_BARE_AMPERSAND.sub("&amp;", block), forbid_dtd=True)


def _xml_text(element: Element | None) -> str:
    return " ".join("".join(element.itertext()).split()) if element is not None else ""


def parse_clef_queries(text: str, *, file: str) -> Parsed:
    """CLEF eHealth topics, 2016–2018 ``<queries><query><id>…</id><en>…</en>`` or 2021 ``<topics><topic><id>…</id>
    <query>…</query>``. Records (line, qid, text), the line being that of the element's opening tag; the topics'
    ``<narrative>`` texts (2021), by qid, in ``extra["narratives"]``.

    Each <query>/<topic> element is parsed on its own (XML, no DTD or entities), so one malformed element is
    reported with its line and the others are still checked; a bare "&" in a text is read as itself, as the
    organisers meant it.
    """
    p = Parsed(file)
    declaration = _XML_DECLARATIONS.search(text)
    if declaration:
        n = text.count("\n", 0, declaration.start()) + 1
        p.error(n, "a DTD or entity declaration (<!DOCTYPE, <!ENTITY) is not allowed in a topics file")
        return p
    tag = "topic" if re.search(r"<topic\b", text) else "query" if re.search(r"<query\b", text) else ""
    if not tag:
        p.error(None, "no <topic> or <query> elements found; expected CLEF eHealth topics (XML)")
        return p
    opening = re.compile(rf"<{tag}\b[^>]*>")
    closing = re.compile(rf"</{tag}\s*>")
    line_of = LineIndex(text)
    seen: dict[str, int] = {}
    narratives: dict[str, str] = {}
    pos = 0
    while match := opening.search(text, pos):
        n = line_of(match.start())
        close = closing.search(text, match.end())
        following = opening.search(text, match.end())
        if close is None or (following is not None and following.start() < close.start()):
            until = f"the next <{tag}>" if following else "the end of the file"
            p.error(n, f"<{tag}> is not closed before {until}")
            if following is None:
                break
            pos = following.start()
            continue
        pos = close.end()
        try:
            element = _xml_element(text[match.start() : close.end()])
        except (ParseError, DefusedXmlException) as exc:
            row = getattr(exc, "position", (1, 0))[0]
            reason = _XML_POSITION.sub("", str(exc))  # the position is the element's, not the file's: the line says it
            p.error(n + row - 1, f"<{tag}> is not well-formed XML: {reason}")
            continue
        qid = _xml_text(element.find("id"))
        body = next((t for t in (_xml_text(element.find(k)) for k in CLEF_LAYOUTS[tag]) if t), "")
        wanted = " or ".join(f"<{k}>" for k in CLEF_LAYOUTS[tag])
        if not qid:
            p.error(n, f"<{tag}> without an <id>")
        elif not body:
            p.error(n, f"{tag} {qid}: no query text in {wanted}")
        elif qid in seen:
            p.error(n, f"{tag} {qid} appears twice (first on line {seen[qid]})")
        else:
            seen[qid] = n
            p.records.append((n, qid, body))
            if narrative := _xml_text(element.find("narrative")):
                narratives[qid] = narrative
    p.counts = {"queries": len(p.records)}
    p.extra["narratives"] = narratives
    return p


def read_queries_map(parsed: Parsed) -> dict[str, str]:
    """qid → query text from a parsed queries file (TSV or CLEF)."""
    return {qid: body for _n, qid, body in parsed.records}


def parse_queries_tsv(text: str, *, file: str) -> Parsed:
    """Queries as ``qid<TAB>text``. Records (line, qid, text)."""
    p = Parsed(file)
    for n, line in enumerate(text_lines(text), start=1):
        if not line.strip():
            continue
        if "\t" not in line:
            p.error(n, "expected 'qid<TAB>text'")
            continue
        qid, body = line.split("\t", 1)
        p.records.append((n, qid.strip(), body.strip()))
    return p


def _queries(ctx: Context) -> Parsed | None:
    qpath = ctx.options.get("queries")
    if not qpath:
        return None
    path = Path(str(qpath))
    text = ctx.text(path, path.name)
    parsed = parse_clef_queries(text, file=path.name) if "<query>" in text else parse_queries_tsv(text, file=path.name)
    raise_if(parsed.errors)
    return parsed


def _create_adhoc_turns(
    collection: Collection, qids: Iterable[str], queries: Parsed | None, texts: dict[str, str] | None = None
) -> dict[str, Turn]:
    """One single-turn conversation per qid (topic id = turn id = qid), created or updated in bulk. A topic's
    narrative (CLEF eHealth 2021) is its conversation's description: the task assessors judge against. The query
    texts come from ``texts`` (those a file carries beside its rows: a TREC RAG answer's ``topic``), then from the
    queries file, which wins."""
    qids = sorted(set(qids))
    texts = {**(texts or {}), **(read_queries_map(queries) if queries else {})}
    narratives: dict[str, str] = queries.extra.get("narratives", {}) if queries else {}
    convs = {c.topic_id: c for c in Conversation.objects.filter(collection=collection, topic_id__in=qids)}
    new_convs = [
        Conversation(collection=collection, topic_id=q, description=narratives.get(q, ""))
        for q in qids
        if q not in convs
    ]
    Conversation.objects.bulk_create(new_convs)
    described = [c for q, c in convs.items() if q in narratives and fields_set(c, {"description": narratives[q]})]
    Conversation.objects.bulk_update(described, ["description"], batch_size=CHUNK)
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
    parsed = ctx.parsed(parse_clef_queries)
    if ctx.collection is None:
        raise ImportFailed([row_error(ctx.name, None, "choose the collection the queries belong to")])
    with transaction.atomic():
        before = Turn.objects.filter(collection=ctx.collection).count()
        _create_adhoc_turns(ctx.collection, (r[1] for r in parsed.records), parsed)
        created = Turn.objects.filter(collection=ctx.collection).count() - before
    counts = {"queries": len(parsed.records), "turns_created": created}
    if narratives := parsed.extra["narratives"]:
        counts["narratives"] = len(narratives)  # stored as the topics' descriptions
    return Result(counts=counts, collection=ctx.collection)


TURN_ID_SAFE = re.compile(r"^[\w.\-:]+$")


def resolve_qids(
    ctx: Context, qids: set[str], *, kind: str, texts: dict[str, str] | None = None
) -> tuple[Collection, dict[str, int], set[str]]:
    """The target collection, qid → turn pk, and the unknown qids (created as ad hoc turns with create_turns, their
    query texts from ``texts`` — what the file itself says of its qids — or the ``queries`` file)."""
    if ctx.flag("create_turns"):
        if ctx.collection is None:
            reason = f"create_turns needs a collection for this {kind}: choose one, or make one (Data → Collections)"
            raise ImportFailed([row_error(ctx.name, None, reason)])
        bad = sorted(q for q in qids if not TURN_ID_SAFE.match(q) or len(q) > 64)
        if bad:
            raise ImportFailed([row_error(ctx.name, None, f"qid {q!r} cannot be a turn id") for q in bad])
        turns = _create_adhoc_turns(ctx.collection, qids, _queries(ctx), texts)
        return ctx.collection, {q: t.pk for q, t in turns.items()}, set()
    # One query both finds the turns and, without a chosen collection, the collection holding most of them.
    keys = turn_keys(qids, ctx.collection)
    collection = ctx.collection
    if collection is None:
        votes = Counter(cid for _tid, _pk, cid in keys)
        if not votes:
            raise ImportFailed([row_error(ctx.name, None, "no collection given and none of its turn ids is known")])
        collection = Collection.objects.get(pk=votes.most_common(1)[0][0])
    pks = {tid: pk for tid, pk, cid in keys if cid == collection.pk}
    return collection, pks, qids - set(pks)
