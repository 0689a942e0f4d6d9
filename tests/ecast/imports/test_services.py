"""import_file on the real shared data files and on crafted bad files: atomic, complete error reports, idempotent."""

from __future__ import annotations

import json

import pytest

from ecast.imports.errors import ImportFailed
from ecast.imports.services import import_file, qrels_import, run_import
from ecast.models import Collection, ImportJob, Paraphrase, Passage, Turn
from evaluation import events
from evaluation.models import Qrel, QrelsVersion, Run, RunTurn
from tests.ecast.imports.conftest import ok

pytestmark = pytest.mark.django_db


def _failed(kind, path, **kw):
    job = import_file(kind=kind, path=path, **kw)
    assert job.status == ImportJob.Status.FAILED
    return job


def test_it_imports_2019_topics_with_the_crlf_resolved_rewrites_and_is_idempotent(cast):
    opts = {"resolved_tsv": str(cast / "2019/evaluation_topics_annotated_resolved_v1.0.tsv")}
    job = ok("cast_topics", cast / "2019/evaluation_topics_v1.0.json", options=opts)
    coll = Collection.objects.get(name="CAsT 2019")
    assert (coll.year, coll.relevance_threshold, job.collection) == (2019, 1, coll)
    assert job.counts["turns_created"] == 479 and job.counts["conversations_created"] == 50
    turn = Turn.objects.get(collection=coll, turn_id="31_2")
    assert turn.raw_utterance == "Is it treatable?"
    assert turn.manual_rewrite == "Is throat cancer treatable?"  # no trailing \r from the CRLF file
    assert not Turn.objects.filter(manual_rewrite__contains="\r").exists()
    again = ok("cast_topics", cast / "2019/evaluation_topics_v1.0.json", options=opts)
    assert again.counts["turns_created"] == 0 and again.counts["turns_updated"] == 0
    # Train topics go into the same collection.
    ok("cast_topics", cast / "2019/train_topics_v1.0.json")
    assert coll.turns.count() == 748


def test_it_merges_the_2020_automatic_and_manual_files_and_stores_canonical_passages(cast):
    ok("cast_topics", cast / "2020/2020_automatic_evaluation_topics_v1.0.json")
    coll = Collection.objects.get(name="CAsT 2020")
    assert coll.relevance_threshold == 2
    auto_only = Turn.objects.get(collection=coll, turn_id="81_2")
    assert auto_only.automatic_rewrite and not auto_only.manual_rewrite
    job = ok("cast_topics", cast / "2020/2020_manual_evaluation_topics_v1.0_extended.json")
    assert job.counts["turns_created"] == 0 and job.counts["turns_updated"] == 216
    turn = Turn.objects.get(collection=coll, turn_id="81_2")
    assert turn.manual_rewrite == "Now my garage door opener stopped working. Why?"
    assert turn.automatic_rewrite == auto_only.automatic_rewrite
    assert turn.canonical_response_id == "MARCO_3942603"
    assert Passage.objects.get(passage_id="MARCO_3942603").text == turn.canonical_response_text
    # The automatic file afterwards does not override the manual file's canonical response.
    ok("cast_topics", cast / "2020/2020_automatic_evaluation_topics_v1.0.json")
    assert Turn.objects.get(pk=turn.pk).canonical_response_id == "MARCO_3942603"


def test_it_imports_2021_topics_with_document_passage_ids(cast):
    job = ok("cast_topics", cast / "2021/2021_manual_evaluation_topics_v1.0.json")
    assert job.collection.name == "CAsT 2021" and job.counts["turns_created"] == 239
    turn = Turn.objects.get(collection=job.collection, turn_id="106_2")
    assert turn.canonical_response_id == "MARCO_D684514-1" and turn.canonical_response_text


def test_it_reports_every_ecast_row_whose_turn_is_unknown_and_writes_nothing(tmp_path, small_collection):
    path = tmp_path / "e.csv"
    path.write_text(
        "TURN_ID,MANUAL PARAPHRASE,RAW PARAPHRASE\n1_1,What is throat cancer?,What is throat cancer?\n"
        "9_1,a,b\n1_2,Is throat cancer treatable?,Can it be treated?\n9_2,c,d\n",
        encoding="utf-8",
    )
    job = _failed("ecast_csv", path, collection=small_collection)
    assert [(e["file"], e["line"]) for e in job.errors] == [("e.csv", 3), ("e.csv", 5)]
    assert "unknown turn 9_1" in job.errors[0]["reason"]
    assert not Paraphrase.objects.exists()


def test_ecast_pairs_are_approved_linked_both_ways_and_duplicates_survive_reimport(tmp_path, small_collection):
    path = tmp_path / "e.csv"
    path.write_text(
        "TURN_ID,MANUAL PARAPHRASE,RAW PARAPHRASE\n1_2,Is throat cancer curable?,Is it curable?\n"
        "1_2,Is throat cancer curable?,Is it curable?\n2_1,Tell me about bees.,Tell me about bees.\n",
        encoding="utf-8",
    )
    job = ok("ecast_csv", path, collection=small_collection)
    assert job.counts["pairs_created"] == 3
    manual = Paraphrase.objects.filter(kind="manual").order_by("pk")
    assert manual.count() == 3 and Paraphrase.objects.filter(kind="raw").count() == 3
    first = manual[0]
    assert first.pair.pair_id == first.pk and first.pair.kind == "raw"
    assert (first.status, first.origin) == ("approved", "imported")
    assert first.provenance == {"source": "e.csv", "line": 2, "format": "ECAsT CSV"}
    again = ok("ecast_csv", path, collection=small_collection)
    assert again.counts["pairs_created"] == 0 and Paraphrase.objects.count() == 6


def test_it_labels_turns_and_reports_or_skips_convquestions_ids(cast, shared_data):
    ok("cast_topics", cast / "2019/train_topics_v1.0.json")
    ok("cast_topics", cast / "2019/evaluation_topics_v1.0.json")
    ok("cast_topics", cast / "2020/2020_automatic_evaluation_topics_v1.0.json")
    labels = shared_data / "utterance_labels"
    ok("utterance_labels", labels / "mele2021_test_set.tsv")
    assert Turn.objects.get(turn_id="31_2").utterance_class == "FT"
    job = _failed("utterance_labels", labels / "mele2021_training_set.tsv")
    assert len(job.errors) == 1010 and job.errors[0]["line"] == 555
    assert "unknown turn 81_1 in CAsT 2019" in job.errors[0]["reason"]
    assert not Turn.objects.filter(collection__name="CAsT 2020").exclude(utterance_class="").exists()
    job = ok("utterance_labels", labels / "mele2021_training_set.tsv", options={"skip_unknown": "true"})
    assert job.counts["skipped_unknown"] == 1010 and job.counts["labels"] == 554
    assert Turn.objects.filter(collection__name="CAsT 2019", utterance_class="").count() == 0
    assert not Turn.objects.filter(collection__name="CAsT 2020").exclude(utterance_class="").exists()


def test_castur_fills_relevant_turn_numbers_and_depends_on(cast, shared_data):
    ok("cast_topics", cast / "2019/train_topics_v1.0.json")
    ok("cast_topics", cast / "2019/evaluation_topics_v1.0.json")
    job = ok("castur", shared_data / "utterance_labels/CAsTUR.tsv")
    assert job.counts["turns"] == 668
    t = Turn.objects.get(turn_id="10_2")
    assert t.relevant_turn_numbers == [1] and t.depends_on.turn_id == "10_1"
    assert Turn.objects.get(turn_id="10_3").relevant_turn_numbers == []


def _record_events(monkeypatch):
    calls = []
    monkeypatch.setattr(events, "qrels_changed", lambda **kw: calls.append(("qrels", kw)))
    monkeypatch.setattr(events, "run_imported", lambda **kw: calls.append(("run", kw)))
    return calls


def test_qrels_import_is_idempotent_and_announces_changed_turns(cast, monkeypatch):
    ok("cast_topics", cast / "2019/evaluation_topics_v1.0.json")
    coll = Collection.objects.get(name="CAsT 2019")
    calls = _record_events(monkeypatch)
    version = qrels_import(collection=coll, path=cast / "2019/2019qrels.txt")
    assert version.name == "original" and version.qrels.count() == 29350
    assert version.qrels.values("turn").distinct().count() == 173
    assert [c[0] for c in calls] == ["qrels"] and calls[0][1]["version_id"] == version.pk
    assert len(calls[0][1]["turn_ids"]) == 173
    assert (
        Qrel.objects.get(
            version=version, turn__turn_id="31_1", passage_id="CAR_1463f964653c5c9f614a0a88d26b175e4a8120f1"
        ).grade
        == 1
    )
    job = ok("qrels", cast / "2019/2019qrels.txt", collection=coll)
    assert job.counts["turns_changed"] == 0 and len(calls) == 1 and version.qrels.count() == 29350


def test_a_qrels_reimport_announces_exactly_the_turns_with_a_row_added_removed_or_regraded(
    tmp_path, small_collection, monkeypatch
):
    path = tmp_path / "q.txt"
    path.write_text("1_1 0 A 1\n1_1 0 B 0\n1_2 0 C 2\n1_3 0 D 1\n2_1 0 E 1\n", encoding="utf-8")
    ok("qrels", path, collection=small_collection)
    calls = _record_events(monkeypatch)
    # 1_1: B regraded; 1_2: C removed; 2_1: F added; 1_3 and 2_1's E unchanged.
    path.write_text("1_1 0 A 1\n1_1 0 B 3\n1_3 0 D 1\n2_1 0 E 1\n2_1 0 F 2\n", encoding="utf-8")
    job = ok("qrels", path, collection=small_collection)
    pks = dict(Turn.objects.filter(collection=small_collection).values_list("turn_id", "pk"))
    assert job.counts["turns_changed"] == 3
    assert sorted(calls[0][1]["turn_ids"]) == sorted(pks[t] for t in ("1_1", "1_2", "2_1"))


def test_qrels_with_a_bad_grade_or_unknown_turns_write_nothing(tmp_path, small_collection):
    path = tmp_path / "q.txt"
    path.write_text("1_1 0 MARCO_1 1\n1_2 0 MARCO_2 high\n7_1 0 MARCO_3 1\n8_1 0 MARCO_4 2\n", encoding="utf-8")
    job = _failed("qrels", path, collection=small_collection)
    assert [e["line"] for e in job.errors] == [2]  # parse errors come first; fix them and turn errors follow
    path.write_text("1_1 0 MARCO_1 1\n7_1 0 MARCO_3 1\n8_1 0 MARCO_4 2\n", encoding="utf-8")
    with pytest.raises(ImportFailed) as exc:
        qrels_import(collection=small_collection, path=path)
    assert [(e["line"], e["reason"].split(" in ")[0]) for e in exc.value.errors] == [
        (2, "unknown turn 7_1"),
        (3, "unknown turn 8_1"),
    ]
    assert not QrelsVersion.objects.exists() and not Qrel.objects.exists()


def test_runs_are_normalised_replaced_by_name_and_announced(cast, shared_data, monkeypatch):
    ok("cast_topics", cast / "2019/evaluation_topics_v1.0.json")
    coll = Collection.objects.get(name="CAsT 2019")
    runs = shared_data / "runs/cast2019_decaf"
    calls = _record_events(monkeypatch)
    run = run_import(collection=coll, path=runs / "exp1.run.gz")
    assert calls == [("run", {"run_id": run.pk})]
    assert run.name == "exp1" and run.rankings.count() == 194
    ranking = RunTurn.objects.get(run=run, turn__turn_id="31_1")
    assert ranking.doc_ids[0] == "MARCO_789620" and len(ranking.doc_ids) == 100
    assert ranking.scores == sorted(ranking.scores, reverse=True)
    assert run.import_report["rank_tie_break"].startswith("score descending")
    # Same name again (from another file) replaces the rankings instead of duplicating them.
    again = run_import(collection=coll, path=runs / "exp16.run.gz", name="exp1")
    assert again.pk == run.pk and RunTurn.objects.filter(run=run).count() == 194
    assert RunTurn.objects.get(run=run, turn__turn_id="31_1").doc_ids != ranking.doc_ids
    assert Run.objects.count() == 1


def test_unknown_run_turns_are_warnings_by_default_and_errors_when_strict(cast, shared_data):
    ok("cast_topics", cast / "2020/2020_automatic_evaluation_topics_v1.0.json")
    path = shared_data / "runs/cast2020_decaf/exp5.run.gz"
    job = ok("run", path)
    assert job.counts["unknown_turns"] == 1 and job.counts["turns"] == 216
    assert "unknown turn 81_9" in job.counts["warnings"][0]["reason"]
    run = Run.objects.get(pk=job.counts["run_id"])
    assert run.import_report["unknown_turns"] == ["81_9"]
    strict = _failed("run", path, options={"strict": "true", "name": "strict-exp5"})
    assert "unknown turn 81_9" in strict.errors[0]["reason"] and strict.errors[0]["line"]
    assert not Run.objects.filter(name="strict-exp5").exists()


def test_clef_runs_create_ad_hoc_turns_and_count_duplicates(shared_data):
    clef = shared_data / "clef_ehealth_2018"
    coll = Collection.objects.create(name="CLEF eHealth 2018", year=2018)
    queries = clef / "clef2018_queries_task1_task4.txt"
    qrels = ok(
        "qrels",
        clef / "qrels/CLEF2018_qrel_20180914.txt",
        collection=coll,
        options={"create_turns": "true", "queries": str(queries)},
    )
    assert qrels.counts["turns"] == 50
    turn = Turn.objects.get(collection=coll, turn_id="151001")
    assert (turn.number, turn.raw_utterance, turn.conversation.topic_id) == (1, "anemia diet therapy", "151001")
    job = ok("run", clef / "runs_irtask1/baselines__terrier_BM25_noqe.out.gz", collection=coll)
    assert job.counts["duplicate_lines"] == 862
    assert job.counts["documents"] == 50000 - 862


def test_queries_file_kind_creates_single_turn_conversations(shared_data):
    coll = Collection.objects.create(name="CLEF q", year=2018)
    job = ok("clef_queries", shared_data / "clef_ehealth_2018/clef2018_queries_task1_task4.txt", collection=coll)
    assert job.counts == {"queries": 50, "turns_created": 50}


def test_passages_from_tsv_jsonl_and_gzipped_crowd_csv(tmp_path, shared_data):
    (tmp_path / "p.tsv").write_text("MARCO_1\tfirst text\nMARCO_2\tsecond\n", encoding="utf-8")
    ok("passages_tsv", tmp_path / "p.tsv")
    (tmp_path / "p.jsonl").write_text(json.dumps({"passage_id": "MARCO_1", "contents": "changed"}) + "\n")
    job = ok("passages_jsonl", tmp_path / "p.jsonl")
    assert job.counts["passages_updated"] == 1 and Passage.objects.get(passage_id="MARCO_1").text == "changed"
    crowd = shared_data / "crowd/cast2020_snippets_lajewska2023/group-A_batch-1_paragraph_regular.csv.gz"
    job = ok("crowd_passages", crowd)
    assert (job.counts["rows"], job.counts["passages_created"]) == (120, 37)  # 3 workers per passage, 1st text kept
    assert Passage.objects.get(passage_id="MARCO_1104225").source == crowd.name


@pytest.mark.parametrize(
    ("kind", "content"),
    [
        ("cast_topics", b'{"topics": []}'),
        ("cast_topics", b"\x00\x01\x02binary"),
        ("qrels", b""),
        ("passages_tsv", "MARCO_1\tcaf\xe9 au lait\n".encode("latin-1")),
        ("ecast_csv", b"TURN_ID;MANUAL;RAW\n"),
    ],
)
def test_malformed_files_fail_with_a_clear_error_and_write_nothing(tmp_path, kind, content):
    path = tmp_path / "bad.txt"
    path.write_bytes(content)
    job = _failed(kind, path)
    assert job.errors and job.errors[0]["file"] == "bad.txt" and job.errors[0]["reason"]
    assert not Turn.objects.exists() and not Passage.objects.exists() and not Collection.objects.exists()


def test_it_refuses_a_file_over_the_upload_limit(tmp_path, settings):
    settings.ECAST_MAX_UPLOAD_BYTES = 10
    path = tmp_path / "p.tsv"
    path.write_text("MARCO_1\tsome passage text\n", encoding="utf-8")
    job = _failed("passages_tsv", path)
    assert "upload limit" in job.errors[0]["reason"] and not Passage.objects.exists()


def test_an_unknown_kind_or_option_is_a_clear_error(tmp_path):
    path = tmp_path / "p.tsv"
    path.write_text("MARCO_1\tx\n", encoding="utf-8")
    assert "unknown import kind" in _failed("nope", path).errors[0]["reason"]
    assert "unknown option(s) colour" in _failed("passages_tsv", path, options={"colour": "red"}).errors[0]["reason"]


def test_a_deep_run_imports_as_one_row_per_turn(tmp_path):
    coll = Collection.objects.create(name="Deep", year=2020)
    lines = [f"{q} Q0 D{d} {d} {1000 - d}.5 deep\n" for q in range(1, 201) for d in range(1000)]
    (tmp_path / "q.txt").write_text("".join(f"{q} 0 D1 1\n" for q in range(1, 201)))
    ok("qrels", tmp_path / "q.txt", collection=coll, options={"create_turns": "true"})
    (tmp_path / "deep.run").write_text("".join(lines))
    job = ok("run", tmp_path / "deep.run", collection=coll)
    assert job.counts["turns"] == 200 and job.counts["documents"] == 200_000
    assert RunTurn.objects.filter(run_id=job.counts["run_id"]).count() == 200


def test_an_ecast_import_writes_its_pairs_with_one_consecutive_block_of_ids(tmp_path, small_collection):
    path = tmp_path / "e.csv"
    body = "".join(f"1_{k % 3 + 1},Manual {k}?,Raw {k}?\n" for k in range(50))
    path.write_text("TURN_ID,MANUAL PARAPHRASE,RAW PARAPHRASE\n" + body, encoding="utf-8")
    ok("ecast_csv", path, collection=small_collection)
    rows = list(Paraphrase.objects.order_by("pk").values_list("pk", "kind", "text", "pair_id", "provenance"))
    pks = [r[0] for r in rows]
    assert pks == list(range(pks[0], pks[0] + 100))
    for pk, kind, text, pair, provenance in rows:  # manual then raw, line by line, each pointing at the other
        manual = kind == "manual"
        assert pair == (pk + 1 if manual else pk - 1)
        k = (pk - pks[0]) // 2
        assert (text, provenance["line"]) == (f"{'Manual' if manual else 'Raw'} {k}?", k + 2)
