"""Bad response-level files fail with file, line and reason and write nothing; a re-import replaces a run's changed
answers and keeps the labels of unchanged ones; an imported label set never overwrites an assessed one."""

from __future__ import annotations

import json

import pytest

from ecast.imports.services import import_file
from ecast.models import ImportJob, Turn
from evaluation.models import (
    CitationLabel,
    Nugget,
    NuggetBank,
    Response,
    ResponseLabelSet,
    ResponseRun,
    ResponseSentence,
)
from tests import factories

pytestmark = pytest.mark.django_db


def _failed(kind, path, **kw):
    job = import_file(kind=kind, path=path, **kw)
    assert job.status == ImportJob.Status.FAILED, job.counts
    return [(e["file"], e["line"], e["reason"]) for e in job.errors]


def _nothing_written():
    for model in (ResponseRun, Response, ResponseSentence, NuggetBank, Nugget, ResponseLabelSet, CitationLabel):
        assert not model.objects.exists(), model


@pytest.fixture
def coll():
    return factories.collection_with_turns("C", 2020, {"1": ["What is A?", "And B?"]})


def _answer(qid, run="r", text="A is a letter.", citations=(0,)):
    return {
        "run_id": run,
        "topic_id": qid,
        "references": ["seg1"],
        "answer": [{"text": text, "citations": list(citations)}],
    }


def test_unknown_turns_are_named_with_their_lines_and_nothing_is_written(coll, tmp_path):
    path = tmp_path / "answers.jsonl"
    path.write_text("\n".join(json.dumps(_answer(q)) for q in ("1_1", "9_9", "1_2", "8_8")) + "\n")
    assert _failed("responses", path, collection=coll) == [
        (
            "answers.jsonl",
            2,
            "unknown turn 9_9 in C (import its topics first, or use create_turns=true for ad hoc topics)",
        ),
        (
            "answers.jsonl",
            4,
            "unknown turn 8_8 in C (import its topics first, or use create_turns=true for ad hoc topics)",
        ),
    ]
    _nothing_written()


def test_a_bad_line_anywhere_fails_the_whole_file(coll, tmp_path):
    path = tmp_path / "answers.jsonl"
    path.write_text(json.dumps(_answer("1_1")) + "\n" + json.dumps(_answer("1_2", citations=(5,))) + "\n")
    assert _failed("responses", path, collection=coll) == [
        ("answers.jsonl", 2, "r / 1_2, sentence 0: citation 5 is not an index into its 1 references")
    ]
    _nothing_written()


def test_the_name_option_renames_only_a_file_of_one_run(coll, tmp_path):
    path = tmp_path / "r.tsv"
    path.write_text("1_1\tr1\tA is a letter.\n1_1\tr2\tA is a vowel.\n")
    assert _failed("responses", path, collection=coll, options={"name": "mine"}) == [
        ("r.tsv", None, "option name renames a file's only run; this file holds 2 runs")
    ]
    _nothing_written()


def test_ikat_nuggets_of_turns_not_imported_are_refused(coll, tmp_path):
    path = tmp_path / "nuggets.json"
    path.write_text('{\n "1_1": {"[1]": {"text": "A fact", "relevance": "2"}},\n "5_5": {}\n}\n')
    reasons = _failed("nuggets", path, collection=coll)
    assert reasons == [
        (
            "nuggets.json",
            3,
            "unknown turn 5_5 in C (import its topics first, or use create_turns=true for ad hoc topics)",
        )
    ]
    _nothing_written()


def test_a_citation_file_realigns_an_unlabelled_answer_and_refuses_one_labelled_by_another_set(coll, tmp_path):
    answers = tmp_path / "answers.jsonl"
    answers.write_text(json.dumps(_answer("1_1", run="t.r")) + "\n" + json.dumps(_answer("1_2", run="t.r")) + "\n")
    assert import_file(kind="responses", path=answers, collection=coll).status == ImportJob.Status.SUCCEEDED
    mine = ResponseLabelSet.objects.create(collection=coll, name="mine", kind="citations", source="assessed")
    labelled = ResponseSentence.objects.get(response__turn__turn_id="1_2")
    CitationLabel.objects.create(label_set=mine, sentence=labelled, passage_id="seg1", support="full")
    judged = tmp_path / "support.jsonl"
    cite = {"citationID": 0, "reference": "seg1", "support": "2"}
    sentences = [{"sentenceID": i, "text": f"Sentence {i}.", "citations": [cite]} for i in (0, 1)]
    judged.write_text(
        "".join(json.dumps({"topic_id": q, "run_id": "t.r", "sentences": sentences}) + "\n" for q in ("1_1", "1_2"))
    )
    assert _failed("citation_support", judged, collection=coll) == [
        (
            "support.jsonl",
            2,
            "1_2 / t.r: the stored answer's sentences differ from the file's and carry citation labels of another set",
        )
    ]
    assert ResponseLabelSet.objects.get() == mine and CitationLabel.objects.count() == 1
    assert ResponseSentence.objects.filter(response__turn__turn_id="1_1").count() == 1  # rolled back
    CitationLabel.objects.all().delete()
    job = import_file(kind="citation_support", path=judged, collection=coll)
    assert job.counts["responses_realigned"] == 2 and job.counts["labels_written"] == 4
    assert list(ResponseSentence.objects.filter(response__turn__turn_id="1_1").values_list("text", flat=True)) == [
        "Sentence 0.",
        "Sentence 1.",
    ]


def test_an_imported_label_set_never_overwrites_an_assessed_one(coll, tmp_path):
    ResponseLabelSet.objects.create(collection=coll, name="support", kind="citations", source="assessed")
    judged = tmp_path / "support.jsonl"
    row = {"topic_id": "1_1", "run_id": "t.r", "sentences": [{"sentenceID": 0, "text": "A.", "citations": []}]}
    judged.write_text(json.dumps(row) + "\n")
    assert _failed("citation_support", judged, collection=coll) == [
        (
            "support.jsonl",
            None,
            "label set 'support' exists as citation support (assessed in ecast): choose another name with label_set=…",
        )
    ]
    assert not ResponseRun.objects.exists()


def test_reimporting_a_run_rewrites_changed_answers_keeps_unchanged_ones_and_drops_missing_ones(coll, tmp_path):
    path = tmp_path / "r.tsv"
    path.write_text("1_1\tr\tA is a letter. It comes first.\n1_2\tr\tB is a letter.\n")
    assert import_file(kind="responses", path=path, collection=coll).status == ImportJob.Status.SUCCEEDED
    kept = Response.objects.get(turn__turn_id="1_1")
    assert list(kept.sentences.values_list("text", flat=True)) == ["A is a letter.", "It comes first."]
    label_set = ResponseLabelSet.objects.create(collection=coll, name="mine", kind="citations", source="assessed")
    CitationLabel.objects.create(label_set=label_set, sentence=kept.sentences.first(), passage_id="p", support="full")
    path.write_text("1_1\tr\tA is a letter. It comes first.\n")
    job = import_file(kind="responses", path=path, collection=coll)
    assert (job.counts["unchanged"], job.counts["deleted"], job.counts["runs_replaced"]) == (1, 1, 1)
    assert list(Response.objects.values_list("pk", flat=True)) == [kept.pk]
    assert CitationLabel.objects.count() == 1
    path.write_text("1_1\tr\tA is a vowel.\n")
    job = import_file(kind="responses", path=path, collection=coll)
    assert job.counts["rewritten"] == 1 and Response.objects.get().text == "A is a vowel."
    assert not CitationLabel.objects.exists()  # its sentence changed


def test_create_turns_makes_ad_hoc_turns_named_by_the_file(tmp_path):
    coll = factories.collection("RAG", 2024)
    path = tmp_path / "answers.jsonl"
    path.write_text(json.dumps({**_answer("2024-1"), "topic": "what is a?"}) + "\n")
    job = import_file(kind="responses", path=path, collection=coll, options={"create_turns": True})
    assert job.status == ImportJob.Status.SUCCEEDED, job.errors
    assert Turn.objects.get(collection=coll, turn_id="2024-1").raw_utterance == "what is a?"
