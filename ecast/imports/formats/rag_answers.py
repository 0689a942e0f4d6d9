"""Generated answers of RAG systems: the parse side of the ``responses`` kind. Plain Python (no Django): the kind's
writer is evaluation's (``evaluation.responses.importers``), since responses live there.

Four layouts, each giving one :class:`ResponseRecord` per (run, turn):

- TREC RAG 2024 answer JSONL, one answer a line: ``{"run_id", "topic_id", "topic", "references": [segment ids],
  "response_length", "answer": [{"text", "citations": [indices into references]}]}``;
- TREC RAG 2025 answer JSONL (track guidelines, "AG Output"): the same with ``run_id``, ``narrative_id`` and
  ``narrative`` (and ``team_id``, ``type``, ``prompt``) under ``"metadata"``, citations given as indices into
  ``references`` (format 1) or as segment ids (format 2);
- TREC iKAT 2024 run JSON ``{"run_name", "run_type", "turns": [{"turn_id", "responses": [{"rank", "text",
  "citations": {passage id: score} or [passage ids], "ptkb_provenance"}]}]}`` and the participant responses of
  CONE-RAG ``{turn: {run_id: response}}`` (many runs, no citations);
- a plain TSV ``turn<TAB>run<TAB>response`` (a header line ``turn run response`` is skipped).

A file may hold several runs (the iKAT responses file holds 23): each becomes its own response run. iKAT responses
cite passages for the whole response, not per sentence: their citations are kept as the response's references and
its sentences (split by the writer) cite nothing.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from ecast.imports.parsing import LineIndex, Parsed, array_spans, id_value, jsonl_objects, key_lines, text_lines

RAG24, RAG25, IKAT, TSV = "rag24", "rag25", "ikat", "tsv"
RESPONSES_HEADER = ("turn", "run", "response")


@dataclass
class ResponseRecord:
    """One run's answer to one turn. ``sentences`` None: the file does not split it (the writer does)."""

    line: int | None
    run: str
    qid: str
    text: str
    sentences: list[tuple[str, list[str]]] | None = None
    references: list[str] = field(default_factory=list)
    query: str = ""
    length: int | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


def _finish(p: Parsed, fmt: str) -> Parsed:
    """Counts, the query texts the file carries (``extra["queries"]``) and duplicates (run, turn) as errors."""
    seen: dict[tuple[str, str], int | None] = {}
    for r in p.records:
        key = (r.run, r.qid)
        if key in seen:
            p.error(r.line, f"run {r.run!r} answers {r.qid} twice (first on line {seen[key]})")
        seen.setdefault(key, r.line)
    if not p.records and not p.errors:
        p.error(None, "no responses found")
    p.extra["format"] = fmt
    p.extra["queries"] = {r.qid: r.query for r in p.records if r.query}
    p.counts = {
        "runs": len({r.run for r in p.records}),
        "responses": len(p.records),
        "sentences": sum(len(r.sentences) for r in p.records if r.sentences is not None),
        "citations": sum(len(c) for r in p.records if r.sentences for _t, c in r.sentences),
    }
    return p


def _answer(p: Parsed, n: int, where: str, answer: Any, references: list[str]) -> list[tuple[str, list[str]]] | None:
    """The sentences of a TREC RAG answer with their citations as segment ids; None (errors recorded) when bad."""
    if not isinstance(answer, list) or not answer:
        p.error(n, f"{where}: 'answer' must be a non-empty list of sentences {{text, citations}}")
        return None
    sentences: list[tuple[str, list[str]]] = []
    ok = True
    for i, sentence in enumerate(answer):
        at = f"{where}, sentence {i}"
        if not isinstance(sentence, dict) or not isinstance(sentence.get("text"), str):
            p.error(n, f"{at}: expected an object with a string 'text'")
            ok = False
            continue
        citations = sentence.get("citations", [])
        if not isinstance(citations, list):
            p.error(n, f"{at}: 'citations' must be a list")
            ok = False
            continue
        ids: list[str] = []
        for c in citations:
            if isinstance(c, int) and not isinstance(c, bool):
                if not 0 <= c < len(references):
                    p.error(n, f"{at}: citation {c} is not an index into its {len(references)} references")
                    ok = False
                    continue
                ids.append(references[c])
            elif isinstance(c, str) and c.strip():
                ids.append(c.strip())
            else:
                p.error(n, f"{at}: citation {c!r} is neither an index into 'references' nor a segment id")
                ok = False
        sentences.append((sentence["text"].strip(), ids))
    return sentences if ok else None


def parse_rag_answers(text: str, *, file: str) -> Parsed:
    """TREC RAG 2024 or 2025 answer JSONL (see the module). Records: ResponseRecord, sentences with segment ids."""
    p = Parsed(file)
    fmt = RAG24
    for n, obj in jsonl_objects(p, text):
        meta = obj.get("metadata")
        if isinstance(meta, dict):
            fmt = RAG25
            run, qid = id_value(meta.get("run_id")), id_value(meta.get("narrative_id", meta.get("topic_id")))
            query = id_value(meta.get("narrative", meta.get("topic", "")))
            extra = {k: meta[k] for k in ("team_id", "type", "prompt") if isinstance(meta.get(k), str)}
        else:
            run, qid, query = id_value(obj.get("run_id")), id_value(obj.get("topic_id")), id_value(obj.get("topic", ""))
            extra = {}
        where = f"{run or '?'} / {qid or '?'}"
        if not run:
            p.error(n, "missing 'run_id' (a string)" + (" in 'metadata'" if fmt == RAG25 else ""))
        if not qid:
            p.error(n, "missing 'topic_id' (or 'narrative_id' in 'metadata')")
        references = obj.get("references", [])
        if not isinstance(references, list) or not all(isinstance(r, str) and r.strip() for r in references):
            p.error(n, f"{where}: 'references' must be a list of segment ids")
            continue
        references = [r.strip() for r in references]
        length = obj.get("response_length")
        if length is not None and (isinstance(length, bool) or not isinstance(length, int) or length < 0):
            p.error(n, f"{where}: 'response_length' must be a whole number, got {length!r}")
            continue
        sentences = _answer(p, n, where, obj.get("answer"), references)
        if sentences is None or not run or not qid:
            continue
        body = " ".join(t for t, _c in sentences if t)
        p.records.append(ResponseRecord(n, run, qid, body, sentences, references, query, length, extra))
    return _finish(p, fmt)


def _citations(value: Any) -> list[str] | None:
    """iKAT response citations: {passage id: score} (ordered by score, best first) or a list of ids; None if bad."""
    if value is None:
        return []
    if isinstance(value, dict):
        if not all(isinstance(s, int | float) and not isinstance(s, bool) for s in value.values()):
            return None
        return [str(k) for k, _s in sorted(value.items(), key=lambda kv: -kv[1])]
    if isinstance(value, list) and all(isinstance(c, str) for c in value):
        return list(value)
    return None


def _ikat_run(p: Parsed, data: dict[str, Any], lines: dict[str, int], text: str) -> None:
    key = re.search(r'"turns"\s*:\s*\[', text)
    line_of = LineIndex(text)
    starts = [line_of(start) for start, _end in array_spans(text, key.end() - 1)] if key else []
    run = id_value(data.get("run_name"))
    if not run:
        p.error(lines.get("turns"), "an iKAT run file needs a 'run_name'")
    turns = data.get("turns")
    if not isinstance(turns, list):
        p.error(lines.get("turns"), "'turns' must be a list of {turn_id, responses}")
        return
    for j, turn in enumerate(turns, start=1):
        qid = id_value(turn.get("turn_id")) if isinstance(turn, dict) else ""
        n = starts[j - 1] if j <= len(starts) else lines.get("turns")
        if not qid:
            p.error(n, f"turn #{j}: expected an object with a 'turn_id'")
            continue
        responses = turn.get("responses")
        if not isinstance(responses, list) or not responses:
            p.error(n, f"turn {qid}: 'responses' must be a non-empty list")
            continue
        ranked = [r for r in responses if isinstance(r, dict) and isinstance(r.get("text"), str)]
        if len(ranked) != len(responses):
            p.error(n, f"turn {qid}: each response must be an object with a string 'text'")
            continue
        best = min(ranked, key=lambda r: r.get("rank", 1) if isinstance(r.get("rank"), int) else 1)
        citations = _citations(best.get("citations"))
        if citations is None:
            p.error(n, f"turn {qid}: 'citations' must be {{passage id: score}} or a list of passage ids")
            continue
        if len(ranked) > 1:
            p.warn(n, f"turn {qid}: {len(ranked)} responses, kept the best-ranked one", kind="several responses")
        meta = {"ptkb_provenance": best["ptkb_provenance"]} if "ptkb_provenance" in best else {}
        if run_type := id_value(data.get("run_type")):
            meta["run_type"] = run_type
        p.records.append(ResponseRecord(n, run, qid, best["text"].strip(), None, citations, metadata=meta))


def parse_ikat_responses(text: str, *, file: str) -> Parsed:
    """An iKAT 2024 run JSON (``run_name``, ``turns``) or a ``{turn: {run_id: response}}`` JSON (see the module)."""
    p = Parsed(file)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        p.error(exc.lineno, f"invalid JSON: {exc.msg} (column {exc.colno})")
        return p
    if not isinstance(data, dict) or not data:
        p.error(None, "expected a JSON object: an iKAT run {run_name, turns} or {turn: {run_id: response}}")
        return p
    lines = key_lines(text)
    if "turns" in data and "run_name" in data:
        _ikat_run(p, data, lines, text)
        return _finish(p, IKAT)
    for qid, runs in data.items():
        n = lines.get(qid)
        if not isinstance(runs, dict) or not all(isinstance(v, str) for v in runs.values()):
            p.error(n, f"turn {qid}: expected an object {{run_id: response text}}")
            continue
        for run, body in runs.items():
            if not run.strip() or not body.strip():
                p.error(n, f"turn {qid}: empty run id or response")
                continue
            p.records.append(ResponseRecord(n, run.strip(), qid.strip(), body.strip()))
    return _finish(p, IKAT)


def parse_responses_tsv(text: str, *, file: str) -> Parsed:
    """``turn<TAB>run<TAB>response``, one response a line; the response is split into sentences by the writer."""
    p = Parsed(file)
    for n, line in enumerate(text_lines(text), start=1):
        if not line.strip():
            continue
        cols = line.split("\t", 2)
        if n == 1 and tuple(c.strip().lower() for c in cols) == RESPONSES_HEADER:
            continue
        if len(cols) != 3 or not all(c.strip() for c in cols):
            p.error(n, "expected 'turn<TAB>run<TAB>response' with three non-empty columns")
            continue
        qid, run, body = (c.strip() for c in cols)
        p.records.append(ResponseRecord(n, run, qid, body))
    return _finish(p, TSV)
