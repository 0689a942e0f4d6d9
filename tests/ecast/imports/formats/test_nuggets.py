"""Nugget files (TREC RAG 2024 NIST assignments, RAG 2025 development nuggets, iKAT 2024 gold nuggets) and the
TREC RAG 2024 citation support judgments, counted on the real files; bad rows named with line and reason."""

from __future__ import annotations

import json

from ecast.imports.formats.nuggets import parse_citation_judgments, parse_ikat_nuggets, parse_nuggets_jsonl
from ecast.imports.parsing import parse_file


def _reasons(parsed):
    return [(e["line"], e["reason"]) for e in parsed.errors]


def test_the_nist_assignments_hold_21_topics_45_runs_298_nuggets_and_13158_labels(shared_data):
    parsed = parse_file(parse_nuggets_jsonl, shared_data / "rag/trec_rag_2024/nugget_assignment.20241108.jl.gz")
    assert parsed.counts == {
        "topics": 21,
        "nuggets": 298,
        "vital": 203,
        "okay": 95,
        "runs": 45,
        "rows": 927,
        "labels": 13158,
        "support": 4813,
        "partial_support": 436,
        "not_support": 7909,
    }


def test_the_2025_development_nuggets_keep_post_edits_as_edited(shared_data):
    parsed = parse_file(parse_nuggets_jsonl, shared_data / "rag/trec_rag_2025/rag25-dev-nuggets.jsonl")
    assert parsed.counts == {"topics": 22, "nuggets": 1255, "vital": 925, "okay": 330}
    first = parsed.records[0].nuggets
    assert (first[0].origin, first[1].origin) == ("imported", "edited")
    assert dict(first[0].metadata) == {"mapped_sub_narrative": '"Key advantages of nuclear energy"'}


def test_bad_nugget_lines_are_named():
    nugget = {"text": "A fact", "importance": "vital", "assignment": "support"}
    lines = [
        json.dumps({"qid": "q1", "run_id": "r1", "nuggets": [nugget], "answer_text": "A."}),
        json.dumps({"qid": "q1", "run_id": "r2", "nuggets": [{**nugget, "text": "Another"}]}),
        json.dumps({"qid": "q2", "run_id": "r1", "nuggets": [{**nugget, "importance": "high"}]}),
        json.dumps({"qid": "q3", "run_id": "r1", "nuggets": [{**nugget, "assignment": "yes"}]}),
        json.dumps({"qid": "q4", "nuggets": [nugget]}),
        json.dumps({"qid": "q1", "run_id": "r1", "nuggets": [nugget]}),
    ]
    parsed = parse_nuggets_jsonl("\n".join(lines), file="n.jsonl")
    assert _reasons(parsed) == [
        (2, "q1: its nuggets differ from those given on line 1"),
        (3, "q2, nugget 0: importance 'high' is not vital or okay"),
        (4, "q3, nugget 0: assignment 'yes' is not one of support, partial_support, not_support"),
        (5, "q4: every line must name a run ('run_id') or none must (the first line did)"),
        (6, "q1: run 'r1' assessed twice (first on line 1)"),
    ]


def test_the_ikat_human_nuggets_hold_116_turns_and_2279_nuggets_with_their_grades(shared_data):
    parsed = parse_file(parse_ikat_nuggets, shared_data / "rag/ikat_2024_cone_rag/gold_nuggets_human.json")
    assert parsed.counts == {"turns": 116, "turns_without_nuggets": 38, "nuggets": 2279}
    first = parsed.records[0]
    assert (first.qid, first.line, first.nuggets[1].external_id, first.nuggets[1].grade) == ("8_5", 2, "[2]", 4)


def test_a_bad_ikat_grade_is_named_with_its_turn():
    text = '{\n "1_1": {\n  "[1]": {"text": "x", "relevance": "7"}\n },\n "1_2": []\n}'
    parsed = parse_ikat_nuggets(text, file="n.json")
    assert _reasons(parsed) == [
        (2, "turn 1_1, nugget [1]: relevance '7' is not 1–4"),
        (5, 'turn 1_2: expected an object of nuggets {"[n]": {text, relevance}}'),
    ]


def test_the_nist_citation_judgments_hold_9_topics_45_runs_and_2840_labels(shared_data):
    parsed = parse_file(
        parse_citation_judgments,
        shared_data / "rag/trec_rag_2024/final.citation_judgments_without_prediction.20241025.jsonl",
    )
    assert parsed.counts == {
        "rows": 381,
        "topics": 9,
        "runs": 45,
        "sentences": 3406,
        "labels": 2840,
        "full": 1237,
        "partial": 731,
        "none": 872,
    }


def test_bad_citation_rows_are_named():
    good = {"topic_id": "q", "run_id": "t.r", "sentences": [{"sentenceID": 0, "text": "A.", "citations": []}]}
    cite = {"citationID": 0, "reference": "seg", "support": "3"}
    lines = [
        json.dumps(good),
        json.dumps(good),
        json.dumps({**good, "topic_id": "q2", "sentences": [{"sentenceID": 0, "text": "A.", "citations": [cite]}]}),
        json.dumps({**good, "topic_id": "q3", "sentences": [{"sentenceID": "x", "text": "A."}]}),
    ]
    parsed = parse_citation_judgments("\n".join(lines), file="c.jsonl")
    assert _reasons(parsed) == [
        (2, "q: run 't.r' judged twice (first on line 1)"),
        (3, "q2 / t.r, sentence 0: support '3' is not 0, 1, 2 or -1"),
        (4, "q3 / t.r: each sentence needs an integer 'sentenceID' ≥ 0"),
    ]
