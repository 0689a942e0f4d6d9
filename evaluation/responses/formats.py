"""Writers of response judgments in the formats the tracks' tools read. Plain Python (no Django).

* nuggetizer JSONL (castorini/nuggetizer): nuggets ``{"query", "qid", "nuggets": [{"text", "importance"}]}`` and
  assignments ``{"query", "qid", "nuggets": [{"text", "importance", "assignment"}], "run_id", "answer_text",
  "response_length"}`` — the shape of the TREC 2024 RAG file ``nugget_assignment.20241108.jl``.
* TREC 2024 RAG citation support JSONL: ``{"topic_id", "run_id", "sentences": [{"sentenceID", "text",
  "citations": [{"citationID", "reference", "support"}]}]}`` with support ``"2"`` full, ``"1"`` partial, ``"0"``
  none and ``"-1"`` not judged. "Needs no citation" has no grade of its own in the format; it is written ``"-1"``,
  which the support evaluation leaves out of both denominators exactly as ecast does.
* Score CSVs, every cell through :mod:`ecast.core.csvfiles` (spreadsheet-safe).

JSON values are written exactly (JSON strings are never evaluated), one object per line.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from ecast.core.csvfiles import csv_lines

SUPPORT_GRADE = {"full": "2", "partial": "1", "none": "0", "not_needed": "-1"}
NOT_JUDGED = "-1"


def _line(obj: dict[str, Any]) -> str:
    return json.dumps(obj, ensure_ascii=False) + "\n"


def nuggets_jsonl(topics: Iterable[tuple[str, str, Sequence[tuple[str, str]]]]) -> Iterator[str]:
    """nuggetizer nuggets, one line per (qid, query, [(text, importance)])."""
    for qid, query, nuggets in topics:
        yield _line({"query": query, "qid": qid, "nuggets": [{"text": t, "importance": i} for t, i in nuggets]})


def assignments_jsonl(
    rows: Iterable[tuple[str, str, str, str, int | None, Sequence[tuple[str, str, str]]]],
) -> Iterator[str]:
    """nuggetizer assignments, one line per (qid, query, run id, answer text, length, [(text, importance,
    assignment)])."""
    for qid, query, run_id, answer, length, nuggets in rows:
        yield _line(
            {
                "query": query,
                "qid": qid,
                "nuggets": [{"text": t, "importance": i, "assignment": a} for t, i, a in nuggets],
                "run_id": run_id,
                "answer_text": answer,
                "response_length": length,
            }
        )


def citations_jsonl(
    rows: Iterable[tuple[str, str, Sequence[tuple[int, str, Sequence[str], dict[str, str]]]]],
) -> Iterator[str]:
    """TREC 2024 RAG support JSONL, one line per (topic id, run id, [(sentence index, text, cited passages,
    {passage: support label})])."""
    for topic_id, run_id, sentences in rows:
        out = []
        for index, text, cited, labels in sentences:
            citations = [
                {"citationID": i, "reference": p, "support": SUPPORT_GRADE.get(labels.get(p, ""), NOT_JUDGED)}
                for i, p in enumerate(cited)
            ]
            out.append({"sentenceID": index, "text": text, "citations": citations})
        yield _line({"topic_id": topic_id, "run_id": run_id, "sentences": out})


def score_csv(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> Iterator[str]:
    """A score table as CSV lines, header first, cells spreadsheet-safe."""
    yield from csv_lines([header])
    yield from csv_lines(rows)
