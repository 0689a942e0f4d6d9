"""Parsers and readers on crafted input: every bad row is reported with its line, and runs are normalised."""

from __future__ import annotations

import gzip
import json

import pytest

from ecast.imports.errors import ImportFailed
from ecast.imports.formats import (
    cast2019_resolved,
    cast_topics,
    clef_queries,
    ecast_csv,
    qrels,
    runs,
    utterance_labels,
)
from ecast.imports.formats.castur import parse_castur
from ecast.imports.readers import read_text


def test_it_reranks_a_run_by_score_then_docid_descending_like_trec_eval():
    text = "1_1 Q0 a 0 1.0 t\n1_1 Q0 c 1 2.0 t\n1_1 Q0 b 2 1.0 t\n1_1 Q0 d 3 1.0 t\n"
    parsed = runs.parse_run(text, file="r")
    data = parsed.records[0]
    assert data.rankings["1_1"] == (["c", "d", "b", "a"], [2.0, 1.0, 1.0, 1.0])


def test_it_keeps_the_best_scored_duplicate_and_counts_duplicates():
    text = "q 0 a 1 1.0 t\nq q0 a 2 5.0 t\nq Q0 a 3 3.0 t\nq Q0 b 4 4.0 t\n"
    parsed = runs.parse_run(text, file="r")
    data = parsed.records[0]
    assert data.rankings["q"] == (["a", "b"], [5.0, 4.0])
    assert data.report["duplicate_lines"] == 2
    assert parsed.counts["duplicate_lines"] == 2
    assert parsed.warnings and "2 duplicate" in parsed.warnings[0]["reason"]


def test_it_reports_every_bad_run_line_not_just_the_first():
    text = "q Q0 a 1 1.0 t\nq X0 b 2 1.0 t\nq Q0 c x 1.0 t\nq Q0 d 4 nan t\nq Q0 e 5 high t\nq Q0 f 6\n"
    parsed = runs.parse_run(text, file="run.txt")
    assert [e["line"] for e in parsed.errors] == [2, 3, 4, 5, 6]
    assert all(e["file"] == "run.txt" for e in parsed.errors)
    assert "column 2" in parsed.errors[0]["reason"]


def test_a_qid_whose_lines_come_back_later_keeps_all_its_lines_and_its_first_line():
    text = "a Q0 x 1 3.0 t\nb Q0 y 1 2.0 t\n\na Q0 z -2 4.0 u\na Q0 x +3 5.0 t\nb Q0 w ٣ 1.0 t\n"
    parsed = runs.parse_run(text, file="r")
    data = parsed.records[0]
    assert parsed.errors == []  # signed and non-ASCII decimal ranks are integers, as int() reads them
    assert data.rankings == {"a": (["x", "z"], [5.0, 4.0]), "b": (["y", "w"], [2.0, 1.0])}
    assert data.first_line == {"a": 1, "b": 2}
    assert (data.report["lines"], data.report["duplicate_lines"], data.report["tags"]) == (5, 1, ["t", "u"])
    bad = runs.parse_run("a Q0 x ² 1.0 t\n", file="r")  # a digit that is not a decimal digit
    assert [e["reason"] for e in bad.errors] == ["rank '²' is not an integer"]


def test_the_run_file_reader_keeps_the_best_scored_duplicate_like_the_import(tmp_path):
    path = tmp_path / "run.txt.gz"
    path.write_bytes(gzip.compress(b"q Q0 a 1 1.0 t\nq Q0 a 2 5.0 t\nq Q0 b 3 4.0 t\nr Q0 c 1 2.0 t\n"))
    assert runs.read_run(path) == {"q": {"a": 5.0, "b": 4.0}, "r": {"c": 2.0}}
    path.write_text("q Q0 a 1 1.0 t\nq Q0 b x 1.0 t\n")
    with pytest.raises(ImportFailed) as exc:
        runs.read_run(path)
    assert [e["line"] for e in exc.value.errors] == [2]


def test_the_qrels_file_reader_returns_grades_and_refuses_contradictions(tmp_path):
    path = tmp_path / "qrels.txt"
    path.write_text("q 0 a 2\nq 0 b 0\nq 0 a 2\nr 0 c 1\n")
    assert qrels.read_qrels(path) == {"q": {"a": 2, "b": 0}, "r": {"c": 1}}
    path.write_text("q 0 a 2\nq 0 a 3\n")
    with pytest.raises(ImportFailed, match="contradicts"):
        qrels.read_qrels(path)


def test_it_rejects_a_bad_qrels_grade_and_contradicting_duplicates():
    text = "1_1 0 a 1\n1_1 0 b two\n1_1 0 a 2\n1_1 0 c 1\n1_1 0 c 1\n1_1 0 d\n"
    parsed = qrels.parse_qrels(text, file="q")
    assert [(e["line"], e["reason"].split()[0]) for e in parsed.errors] == [(2, "grade"), (3, "1_1"), (6, "expected")]
    assert parsed.counts["duplicate_lines"] == 1


def test_it_reads_the_crlf_resolved_tsv_without_carriage_returns():
    parsed = cast2019_resolved.parse_resolved_tsv(
        "31_1\tWhat is throat cancer?\r\n31_2\tIs it treatable?\r\n", file="r.tsv"
    )
    assert parsed.records == [(1, "31_1", "What is throat cancer?"), (2, "31_2", "Is it treatable?")]


def test_it_rejects_topics_json_of_the_wrong_shape():
    parsed = cast_topics.parse_cast_topics('{"number": 1}', file="t.json")
    assert parsed.errors and "JSON list of topics" in parsed.errors[0]["reason"]
    parsed = cast_topics.parse_cast_topics(
        '[{"number": 1, "turn": [{"number": 1}, {"number": "x", "raw_utterance": 3}]}]', file="t"
    )
    reasons = [e["reason"] for e in parsed.errors]
    assert any("missing 'raw_utterance'" in r for r in reasons)
    assert any("'number' must be an integer" in r for r in reasons)
    assert any("must be a string" in r for r in reasons)
    turns = '[{"number": 1, "raw_utterance": "a"},\n {"number": 1, "raw_utterance": ""}]'
    parsed = cast_topics.parse_cast_topics(
        f'[\n{{"number": 5,\n "turn": {turns}}},\n{{"number": 5, "turn": 3}}]', file="t"
    )
    assert [(e["line"], e["reason"]) for e in parsed.errors] == [
        (4, "topic 5, turn 1: turn number appears twice"),
        (4, "topic 5, turn 1: 'raw_utterance' is empty"),
        (5, "topic 5: topic number appears twice"),
        (5, "topic 5: 'turn' must be a non-empty list"),
    ]
    parsed = cast_topics.parse_cast_topics("[{\n  'number': 1\n}]", file="t")
    assert parsed.errors[0]["line"] == 2 and "invalid JSON" in parsed.errors[0]["reason"]


def test_it_builds_2021_canonical_passage_ids_from_document_and_index():
    turn = {"number": 1, "raw_utterance": "u", "canonical_result_id": "MARCO_D5", "passage_id": 3, "passage": "p"}
    text = json.dumps([{"number": 106, "turn": [turn]}])
    turn = cast_topics.parse_cast_topics(text, file="t").records[0]["turns"][0]
    assert (turn["turn_id"], turn["canonical_response_id"], turn["canonical_response_text"]) == (
        "106_1",
        "MARCO_D5-3",
        "p",
    )


def test_it_keeps_identical_ecast_rows_and_reports_bad_ones_with_physical_lines():
    text = (
        'TURN_ID,MANUAL PARAPHRASE,RAW PARAPHRASE\n1_1,"A, b",A\n1_1,"A, b",A\n"1_2","multi\nline",x\nbad,a,b\n1_3,,b\n'
    )
    parsed = ecast_csv.parse_ecast_csv(text, file="e.csv")
    assert [r[0] for r in parsed.records] == [2, 3, 4]
    assert parsed.records[0][1:] == ("1_1", "A, b", "A")
    assert [e["line"] for e in parsed.errors] == [6, 7]


def test_it_rejects_an_ecast_csv_with_the_wrong_header():
    parsed = ecast_csv.parse_ecast_csv("id,manual,raw\n1_1,a,b\n", file="e.csv")
    assert parsed.errors[0]["line"] == 1 and "header must be" in parsed.errors[0]["reason"]


def test_it_validates_utterance_labels_and_castur_rows():
    labels = utterance_labels.parse_utterance_labels("31_1\tWhat?\tSE\n31_2\tIs it?\tXX\n31_3\tonly two\n", file="l")
    assert [e["line"] for e in labels.errors] == [2, 3]
    castur = parse_castur("current_turn\trelevant_turn\n10_2\t10_1\n10_3\tx\n10_4\t11_1\n10_5\t10_6\n", file="c")
    assert castur.records == [(2, "10_2", "10_1"), (3, "10_3", None)]
    assert [e["line"] for e in castur.errors] == [4, 5]


def test_it_parses_clef_queries():
    text = "<queries>\n<query>\n<id> 151001 </id>\n<en> anemia diet therapy </en>\n<fr> x </fr>\n</query>\n</queries>\n"
    assert clef_queries.parse_clef_queries(text, file="q").records == [(2, "151001", "anemia diet therapy")]


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b"", "empty"),
        (b"  \n\n", "empty"),
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00IHDR", "binary"),
        ("31_1\tcaf\u00e9\n".encode("latin-1"), "not valid UTF-8"),
    ],
)
def test_the_reader_rejects_empty_binary_and_non_utf8_files(tmp_path, content, reason):
    path = tmp_path / "f.tsv"
    path.write_bytes(content)
    with pytest.raises(ImportFailed) as exc:
        read_text(path)
    assert reason in exc.value.errors[0]["reason"]
    assert exc.value.errors[0]["file"] == "f.tsv"


def test_the_reader_checks_the_size_limit_before_reading_and_gunzips(tmp_path):
    path = tmp_path / "big.txt"
    path.write_bytes(b"x" * 100)
    with pytest.raises(ImportFailed, match="upload limit"):
        read_text(path, max_bytes=50)
    gz = tmp_path / "small.txt.gz"
    gz.write_bytes(gzip.compress("héllo\n".encode()))
    assert read_text(gz) == "héllo\n"
    bomb = tmp_path / "bomb.gz"
    bomb.write_bytes(gzip.compress(b"a" * 10_000))
    with pytest.raises(ImportFailed, match="decompressed content exceeds"):
        read_text(bomb, max_bytes=1000)
    latin = tmp_path / "l.tsv"
    latin.write_bytes(b"ok\nline two \xe9t\xe9\n")
    with pytest.raises(ImportFailed) as exc:
        read_text(latin)
    assert exc.value.errors[0]["line"] == 2


def test_cast_topic_fields_no_column_stores_are_listed_as_ignored(shared_data):
    # The 2020 annotated v1.1 file's turn dependencies have no column here: the import says so instead of dropping them.
    path = shared_data / "cast/2020/automatic_evaluation_topics_annotated_v1.1.json"
    parsed = cast_topics.parse_cast_topics(path.read_text(), file=path.name)
    assert parsed.counts["ignored_fields"] == {
        "turn.query_turn_dependence": 123,
        "turn.result_turn_dependence": 60,
    }
    assert {w["kind"] for w in parsed.warnings} == {"ignored field"}
    full = shared_data / "cast/2020/2020_manual_evaluation_topics_v1.0_extended.json"
    assert "ignored_fields" not in cast_topics.parse_cast_topics(full.read_text(), file=full.name).counts
