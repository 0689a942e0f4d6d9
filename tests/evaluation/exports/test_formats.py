"""The run, qrels and per-query writers: TREC round trips exactly, ranx JSON and PyTerrier CSV have their shapes."""

from __future__ import annotations

import csv
import gzip
import io
import json

import ir_measures
import pytest

from ecast.imports.formats.runs import parse_run
from evaluation.exports import formats

RANKINGS = [
    ("1_1", ["d9", "d3", "d2", "d1"], [12.5, 0.1 + 0.2, 0.30000000000000004, -1e-05]),
    ("1_2", ["b", "a"], [3.0, 3.0]),  # a tie, stored in trec_eval's order (docno descending)
    ("2_1", ["=cmd", "x"], [7.0, 1e300]),
]


def _text(chunks) -> str:
    return "".join(chunks)


def test_a_trec_run_reads_back_as_the_same_rankings_and_exact_scores():
    text = _text(formats.trec_run_chunks(iter(RANKINGS), tag="my run"))
    parsed = parse_run(text, file="x.run")
    assert not parsed.errors
    rankings = parsed.records[0].rankings
    # The reader re-ranks by score, then docno descending: the stored order, exact doubles, the tie kept a tie.
    assert rankings["1_1"] == (["d9", "d3", "d2", "d1"], [12.5, 0.30000000000000004, 0.30000000000000004, -1e-05])
    assert rankings["1_2"] == (["b", "a"], [3.0, 3.0])
    assert rankings["2_1"][1] == [1e300, 7.0]
    assert text.splitlines()[0] == "1_1 Q0 d9 1 12.5 my_run"
    assert parsed.records[0].report["tags"] == ["my_run"]


def test_ir_measures_gives_the_same_numbers_on_the_trec_and_ranx_files_as_on_the_rankings():
    qrels = {"1_1": {"d3": 2, "d2": 1, "d1": 0}, "1_2": {"a": 1}, "2_1": {"x": 3}}
    run = {q: dict(zip(d, s, strict=True)) for q, d, s in RANKINGS}
    measures = [ir_measures.parse_measure(m) for m in ("nDCG@3", "AP(rel=1)", "P@1", "RR")]
    trec = list(ir_measures.read_trec_run(io.StringIO(_text(formats.trec_run_chunks(RANKINGS, tag="r")))))
    ranx = json.loads(_text(formats.run_ranx_chunks(RANKINGS)))
    expected = ir_measures.calc_aggregate(measures, qrels, run)
    assert ir_measures.calc_aggregate(measures, qrels, trec) == expected
    assert ir_measures.calc_aggregate(measures, qrels, ranx) == expected


def test_ranx_json_maps_each_qid_to_its_documents_and_scores():
    data = json.loads(_text(formats.run_ranx_chunks(RANKINGS)))
    assert list(data) == ["1_1", "1_2", "2_1"]
    assert data["1_2"] == {"b": 3.0, "a": 3.0} and data["2_1"] == {"=cmd": 7.0, "x": 1e300}
    assert json.loads(_text(formats.run_ranx_chunks([]))) == {}


def test_the_run_csv_has_pyterrier_columns_ranks_from_zero_and_safe_cells():
    rows = list(csv.reader(io.StringIO(_text(formats.run_csv_chunks(RANKINGS)))))
    assert rows[0] == ["qid", "docno", "score", "rank"]
    assert rows[1] == ["1_1", "d9", "12.5", "0"] and rows[4] == ["1_1", "d1", "-1e-05", "3"]
    assert rows[7] == ["2_1", "'=cmd", "7.0", "0"]  # formula-like text made safe for spreadsheets


def test_qrels_come_as_trec_csv_and_ranx_json():
    rows = [("1_1", "d1", 2), ("1_1", "d2", 0), ("2_1", "x", 3)]
    assert _text(formats.qrels_trec_chunks(rows)) == "1_1 0 d1 2\n1_1 0 d2 0\n2_1 0 x 3\n"
    assert _text(formats.qrels_csv_chunks(rows)) == "qid,docno,label\n1_1,d1,2\n1_1,d2,0\n2_1,x,3\n"
    assert json.loads(_text(formats.qrels_ranx_chunks(rows))) == {"1_1": {"d1": 2, "d2": 0}, "2_1": {"x": 3}}


def test_the_per_query_table_is_name_qid_measure_value():
    text = _text(formats.per_query_csv_chunks([("bm25", "1_1", "AP(rel=2)", 0.5)]))
    assert text == "name,qid,measure,value\nbm25,1_1,AP(rel=2),0.5\n"


def test_a_gzipped_stream_inflates_to_the_text():
    chunks = ["a" * 5000, "b\n", "ü\n"]
    assert gzip.decompress(b"".join(formats.gzipped(iter(chunks)))).decode() == "".join(chunks)


def test_an_id_with_whitespace_is_refused_rather_than_shifting_columns():
    with pytest.raises(formats.ExportError, match="whitespace"):
        _text(formats.trec_run_chunks([("1_1", ["a b"], [1.0])], tag="r"))
