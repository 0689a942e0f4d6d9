"""Answers of RAG systems: TREC RAG 2024 answer JSONL (real baseline files), TREC RAG 2025 (the guidelines' two
citation forms, hand-made), iKAT 2024 runs and participant responses, and the plain TSV; every bad row is named with
its line and reason."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from ecast.imports.formats.rag_answers import parse_ikat_responses, parse_rag_answers, parse_responses_tsv
from ecast.imports.parsing import parse_file
from tests.conftest import REPO

RAG24 = "rag/trec_rag_2024"
BASELINES = ("gpt-4o", "command-r-plus", "l31_70b_instruct")


def _reasons(parsed):
    return [(e["line"], e["reason"]) for e in parsed.errors]


def test_each_organiser_baseline_answers_the_301_topics_with_citations_as_segment_ids(shared_data):
    for model in BASELINES:
        parsed = parse_file(
            parse_rag_answers, shared_data / RAG24 / f"baseline_rag24.test_{model}_top20.jsonl.fixed.gz"
        )
        assert (parsed.counts["runs"], parsed.counts["responses"]) == (1, 301)
        assert parsed.records[0].run == f"baseline_rag24.test_{model}_top20"
    first = parse_file(parse_rag_answers, shared_data / RAG24 / "baseline_rag24.test_gpt-4o_top20.jsonl.fixed.gz")
    record = first.records[0]
    assert (record.qid, record.length, len(record.references)) == ("2024-105741", 268, 7)
    assert record.sentences[1][1] == [record.references[0], record.references[1]]
    assert record.text == " ".join(t for t, _c in record.sentences)
    assert first.extra["queries"]["2024-105741"] == "is it dangerous to have wbc over 15,000 without treatment?"


def _rag25(citations) -> str:
    return json.dumps(
        {
            "metadata": {"team_id": "t", "run_id": "r25", "type": "automatic", "narrative_id": 58, "narrative": "N."},
            "references": ["seg_a", "seg_b"],
            "answer": [{"text": "One.", "citations": citations}, {"text": "Two.", "citations": []}],
        }
    )


def test_the_2025_format_reads_its_metadata_and_citations_as_indices_or_as_segment_ids():
    by_index = parse_rag_answers(_rag25([1, 0]), file="a.jsonl")
    by_id = parse_rag_answers(_rag25(["seg_b", "seg_a"]), file="b.jsonl")
    for parsed in (by_index, by_id):
        assert parsed.errors == [] and parsed.extra["format"] == "rag25"
        (record,) = parsed.records
        assert (record.run, record.qid, record.query, record.text) == ("r25", "58", "N.", "One. Two.")
        assert record.sentences == [("One.", ["seg_b", "seg_a"]), ("Two.", [])]
        assert record.metadata == {"team_id": "t", "type": "automatic"}


def test_bad_answer_lines_are_each_named_and_the_good_ones_still_read():
    good = {"run_id": "r", "topic_id": "q1", "references": ["s"], "answer": [{"text": "A.", "citations": [0]}]}
    lines = [
        json.dumps(good),
        "{not json",
        json.dumps({**good, "topic_id": "q2", "answer": [{"text": "B.", "citations": [3]}]}),
        json.dumps({**good, "topic_id": "q3", "answer": []}),
        json.dumps({**good, "run_id": None, "topic_id": "q4"}),
        json.dumps(good),
        json.dumps({**good, "topic_id": "q5", "response_length": -2}),
    ]
    parsed = parse_rag_answers("\n".join(lines), file="bad.jsonl")
    assert _reasons(parsed) == [
        (2, "invalid JSON: Expecting property name enclosed in double quotes (column 2)"),
        (3, "r / q2, sentence 0: citation 3 is not an index into its 1 references"),
        (4, "r / q3: 'answer' must be a non-empty list of sentences {text, citations}"),
        (5, "missing 'run_id' (a string)"),
        (7, "r / q5: 'response_length' must be a whole number, got -2"),
        (6, "run 'r' answers q1 twice (first on line 1)"),
    ]


def test_the_ikat_participant_responses_hold_23_runs_over_79_turns(shared_data):
    automatic = parse_file(parse_ikat_responses, shared_data / "rag/ikat_2024_cone_rag/automatic_responses.json.gz")
    manual = parse_file(parse_ikat_responses, shared_data / "rag/ikat_2024_cone_rag/manual_responses.json")
    assert (automatic.counts["runs"], automatic.counts["responses"]) == (19, 1501)
    assert (manual.counts["runs"], manual.counts["responses"]) == (4, 316)
    assert len({r.qid for r in manual.records}) == 79
    assert manual.records[0].line == 2 and manual.records[0].sentences is None


def test_an_ikat_run_keeps_its_best_response_with_passage_provenance_in_score_order():
    run = {
        "run_name": "team-run",
        "run_type": "automatic",
        "turns": [
            {
                "turn_id": "8_5",
                "responses": [
                    {"rank": 2, "text": "Worse.", "citations": []},
                    {"rank": 1, "text": "Best.", "citations": {"p1": 0.2, "p2": 0.9}, "ptkb_provenance": [1]},
                ],
            },
            {"turn_id": "8_6", "responses": [{"rank": 1, "text": "X.", "citations": "p1"}]},
        ],
    }
    parsed = parse_ikat_responses(json.dumps(run, indent=1), file="run.json")
    assert _reasons(parsed) == [(26, "turn 8_6: 'citations' must be {passage id: score} or a list of passage ids")]
    (record,) = parsed.records
    assert (record.run, record.qid, record.text, record.references) == ("team-run", "8_5", "Best.", ["p2", "p1"])
    assert record.metadata == {"ptkb_provenance": [1], "run_type": "automatic"}
    assert [w["reason"] for w in parsed.warnings] == ["turn 8_5: 2 responses, kept the best-ranked one"]


def test_the_tsv_skips_its_header_and_names_short_rows_and_repeats(tmp_path: Path):
    text = "turn\trun\tresponse\n1_1\tr1\tAn answer. Two sentences.\n1_2\tr1\n1_1\tr1\tAgain.\n"
    parsed = parse_responses_tsv(text, file="r.tsv")
    assert _reasons(parsed) == [
        (3, "expected 'turn<TAB>run<TAB>response' with three non-empty columns"),
        (4, "run 'r1' answers 1_1 twice (first on line 2)"),
    ]
    assert parsed.records[0].text == "An answer. Two sentences."


def test_the_answer_and_nugget_parsers_load_neither_django_nor_celery():
    modules = "ecast.imports.formats.rag_answers, ecast.imports.formats.nuggets"
    code = f"import sys, {modules}; assert not {{'django', 'celery'}} & set(sys.modules), sys.modules"
    subprocess.run([sys.executable, "-c", code], cwd=REPO, check=True)
