"""Nuggets and the labels that judge answers against them: the parse side of the ``nuggets`` and
``citation_support`` kinds. Plain Python (no Django): the writers are evaluation's
(``evaluation.responses.importers``), since nugget banks and label sets live there.

- nuggetizer JSONL (castorini/nuggetizer), one topic a line: ``{"qid", "query"?, "nuggets": [{"text", "importance":
  "vital"|"okay"}]}``; with assignments (TREC RAG 2024 NIST judgments) one line per (topic, run) adds ``"run_id"``,
  ``"answer_text"`` and each nugget's ``"assignment"`` (support / partial_support / not_support); the TREC RAG 2025
  development nuggets add ``"mapped_sub_narrative"`` and ``"source": "post-edit"|"original"``;
- iKAT 2024 nugget JSON (CONE-RAG): ``{turn: {"[n]": {"text", "relevance": "1".."4"}}}``, the grade kept as given;
- TREC RAG 2024 citation support JSONL: ``{"topic_id", "run_id", "sentences": [{"sentenceID", "text",
  "citations": [{"citationID", "reference", "support": "0"|"1"|"2"}]}]}`` (2 full, 1 partial, 0 none; -1 not judged).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ecast.imports.parsing import Parsed, id_value, jsonl_objects, key_lines

IMPORTANCE = ("vital", "okay")
ASSIGNMENTS = ("support", "partial_support", "not_support")
# nuggetizer/RAG 2025 "source": a nugget an assessor post-edited, or the LLM's draft kept as it was.
ORIGINS = {"post-edit": "edited", "original": "imported"}
SUPPORT = {"2": "full", "1": "partial", "0": "none"}
NOT_JUDGED = "-1"


@dataclass(frozen=True)
class NuggetItem:
    text: str
    importance: str = "okay"
    origin: str = "imported"
    grade: int | None = None
    external_id: str = ""
    metadata: tuple[tuple[str, str], ...] = ()


@dataclass
class NuggetRow:
    """One line of a nugget file: a turn's nuggets, and (with assignments) one run's answer and their labels."""

    line: int | None
    qid: str
    nuggets: list[NuggetItem]
    query: str = ""
    run: str = ""
    answer_text: str = ""
    length: int | None = None
    assignments: list[str] | None = None


@dataclass
class JudgedSentence:
    index: int
    text: str
    citations: list[tuple[str, str | None]] = field(default_factory=list)  # (segment id, support or None)


@dataclass
class CitationRow:
    line: int
    qid: str
    run: str
    sentences: list[JudgedSentence]


def _nugget(p: Parsed, n: int, where: str, obj: Any, *, assigned: bool) -> tuple[NuggetItem, str | None] | None:
    if not isinstance(obj, dict) or not isinstance(obj.get("text"), str) or not obj["text"].strip():
        p.error(n, f"{where}: expected an object with a non-empty 'text'")
        return None
    importance = obj.get("importance", "okay")
    if importance not in IMPORTANCE:
        p.error(n, f"{where}: importance {importance!r} is not vital or okay")
        return None
    source = obj.get("source")
    if source is not None and source not in ORIGINS:
        p.error(n, f"{where}: source {source!r} is not post-edit or original")
        return None
    label = obj.get("assignment")
    if assigned and label not in ASSIGNMENTS:
        p.error(n, f"{where}: assignment {label!r} is not one of {', '.join(ASSIGNMENTS)}")
        return None
    meta = tuple((k, obj[k]) for k in ("mapped_sub_narrative",) if isinstance(obj.get(k), str))
    item = NuggetItem(obj["text"].strip(), importance, ORIGINS.get(source or "", "imported"), metadata=meta)
    return item, label


def parse_nuggets_jsonl(text: str, *, file: str) -> Parsed:
    """nuggetizer JSONL, with or without assignments (see the module). Records: NuggetRow. A topic's nuggets must be
    the same on every line that gives them (the RAG 2024 file repeats them for each run)."""
    p = Parsed(file)
    first: dict[str, tuple[int, list[NuggetItem]]] = {}
    seen_runs: dict[tuple[str, str], int] = {}
    with_runs = None
    for n, obj in jsonl_objects(p, text):
        qid = id_value(obj.get("qid"))
        if not qid:
            p.error(n, "missing 'qid'")
            continue
        nuggets = obj.get("nuggets")
        if not isinstance(nuggets, list) or not nuggets:
            p.error(n, f"{qid}: 'nuggets' must be a non-empty list")
            continue
        run = id_value(obj.get("run_id"))
        if with_runs is None:
            with_runs = bool(run)
        elif with_runs != bool(run):
            did = "did" if with_runs else "did not"
            p.error(n, f"{qid}: every line must name a run ('run_id') or none must (the first line {did})")
            continue
        parsed = [_nugget(p, n, f"{qid}, nugget {i}", x, assigned=bool(run)) for i, x in enumerate(nuggets)]
        if any(x is None for x in parsed):
            continue
        items = [x[0] for x in parsed if x]
        labels = [x[1] or "" for x in parsed if x]
        if qid in first and run:
            line0, items0 = first[qid]
            if [(i.text, i.importance) for i in items] != [(i.text, i.importance) for i in items0]:
                p.error(n, f"{qid}: its nuggets differ from those given on line {line0}")
                continue
        elif qid in first:
            p.error(n, f"{qid}: nuggets given twice (first on line {first[qid][0]})")
            continue
        first.setdefault(qid, (n, items))
        length = obj.get("response_length")
        row = NuggetRow(n, qid, items, id_value(obj.get("query")), run)
        if run:
            if (qid, run) in seen_runs:
                p.error(n, f"{qid}: run {run!r} assessed twice (first on line {seen_runs[(qid, run)]})")
                continue
            seen_runs[(qid, run)] = n
            answer = obj.get("answer_text", "")
            row.answer_text = answer.strip() if isinstance(answer, str) else ""
            row.length = length if isinstance(length, int) and not isinstance(length, bool) else None
            row.assignments = labels
        p.records.append(row)
    if not p.records and not p.errors:
        p.error(None, "no nuggets found")
    nuggets = [i for _line, items in first.values() for i in items]
    p.counts = {
        "topics": len(first),
        "nuggets": len(nuggets),
        "vital": sum(i.importance == "vital" for i in nuggets),
        "okay": sum(i.importance == "okay" for i in nuggets),
    }
    if with_runs:
        labels = [a for r in p.records for a in r.assignments or []]
        p.counts.update(
            runs=len({r.run for r in p.records}),
            rows=len(p.records),
            labels=len(labels),
            **{a: labels.count(a) for a in ASSIGNMENTS},
        )
    return p


def parse_ikat_nuggets(text: str, *, file: str) -> Parsed:
    """iKAT 2024 nugget JSON ``{turn: {"[n]": {"text", "relevance"}}}``. Records: NuggetRow (grade and id kept)."""
    p = Parsed(file)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        p.error(exc.lineno, f"invalid JSON: {exc.msg} (column {exc.colno})")
        return p
    if not isinstance(data, dict) or not data:
        p.error(None, 'expected a JSON object {turn: {"[n]": {"text", "relevance"}}}')
        return p
    lines = key_lines(text)
    for qid, nuggets in data.items():
        n = lines.get(qid)
        if not isinstance(nuggets, dict):
            p.error(n, f'turn {qid}: expected an object of nuggets {{"[n]": {{text, relevance}}}}')
            continue
        items = []
        for key, obj in nuggets.items():
            at = n
            if not isinstance(obj, dict) or not isinstance(obj.get("text"), str) or not obj["text"].strip():
                p.error(at, f"turn {qid}, nugget {key}: expected an object with a non-empty 'text'")
                continue
            grade = id_value(obj.get("relevance"))
            if grade not in ("1", "2", "3", "4"):
                p.error(at, f"turn {qid}, nugget {key}: relevance {obj.get('relevance')!r} is not 1–4")
                continue
            items.append(NuggetItem(obj["text"].strip(), grade=int(grade), external_id=key))
        p.records.append(NuggetRow(n, qid.strip(), items))
    empty = sum(not r.nuggets for r in p.records)
    if empty:
        # CONE-RAG's human file lists 38 turns whose passages gave no nugget: the turns are checked, nothing is made.
        p.warn(None, f"{empty} turn(s) without nuggets", kind="turns without nuggets")
    p.counts = {
        "turns": len(p.records),
        "turns_without_nuggets": empty,
        "nuggets": sum(len(r.nuggets) for r in p.records),
    }
    return p


def parse_citation_judgments(text: str, *, file: str) -> Parsed:
    """TREC RAG 2024 citation support JSONL (see the module). Records: CitationRow, supports as full / partial /
    none (None: not judged)."""
    p = Parsed(file)
    seen: dict[tuple[str, str], int] = {}
    textless = 0
    for n, obj in jsonl_objects(p, text):
        qid, run = id_value(obj.get("topic_id")), id_value(obj.get("run_id"))
        if not qid or not run:
            p.error(n, "missing 'topic_id' or 'run_id'")
            continue
        if (qid, run) in seen:
            p.error(n, f"{qid}: run {run!r} judged twice (first on line {seen[(qid, run)]})")
            continue
        seen[(qid, run)] = n
        sentences = obj.get("sentences")
        if not isinstance(sentences, list) or not sentences:
            p.error(n, f"{qid} / {run}: 'sentences' must be a non-empty list")
            continue
        judged: list[JudgedSentence] = []
        ok = True
        for s in sentences:
            index = s.get("sentenceID") if isinstance(s, dict) else None
            if isinstance(index, bool) or not isinstance(index, int) or index < 0:
                p.error(n, f"{qid} / {run}: each sentence needs an integer 'sentenceID' ≥ 0")
                ok = False
                break
            if any(j.index == index for j in judged):
                p.error(n, f"{qid} / {run}: sentence {index} given twice")
                ok = False
                break
            if not isinstance(s.get("text"), str):
                # The NIST file has 11 sentences whose text is NaN (pandas' empty cell): kept, empty, as the
                # support evaluation still counts them.
                textless += 1
            sentence = JudgedSentence(index, s["text"].strip() if isinstance(s.get("text"), str) else "")
            for c in s.get("citations") or []:
                ref = c.get("reference") if isinstance(c, dict) else None
                support = id_value(c.get("support")) if isinstance(c, dict) else ""
                if not isinstance(ref, str) or not ref.strip():
                    p.error(n, f"{qid} / {run}, sentence {index}: a citation without a 'reference'")
                    ok = False
                elif support not in SUPPORT and support != NOT_JUDGED:
                    p.error(n, f"{qid} / {run}, sentence {index}: support {c.get('support')!r} is not 0, 1, 2 or -1")
                    ok = False
                else:
                    sentence.citations.append((ref.strip(), SUPPORT.get(support)))
            judged.append(sentence)
        if ok:
            p.records.append(CitationRow(n, qid, run, sorted(judged, key=lambda j: j.index)))
    if not p.records and not p.errors:
        p.error(None, "no judged answers found")
    if textless:
        p.warn(None, f"{textless} sentence(s) without a text string, kept empty", kind="sentences without text")
    labels = [s for r in p.records for j in r.sentences for _ref, s in j.citations if s]
    p.counts = {
        "rows": len(p.records),
        "topics": len({r.qid for r in p.records}),
        "runs": len({r.run for r in p.records}),
        "sentences": sum(len(r.sentences) for r in p.records),
        "labels": len(labels),
        **{s: labels.count(s) for s in ("full", "partial", "none")},
    }
    return p
