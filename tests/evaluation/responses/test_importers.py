"""Response-level imports on the real TREC RAG 2024 and iKAT 2024 files: what each writes, counted, and what a
re-import keeps."""

from __future__ import annotations

from collections import Counter

import pytest

from ecast.models import Collection, Turn
from evaluation.models import (
    CitationLabel,
    Nugget,
    NuggetAssignment,
    NuggetBank,
    Response,
    ResponseLabelSet,
    ResponseRun,
    ResponseSentence,
)
from tests import factories
from tests.ecast.imports.conftest import ok

pytestmark = pytest.mark.django_db

NUGGETS = "rag/trec_rag_2024/nugget_assignment.20241108.jl.gz"
CITATIONS = "rag/trec_rag_2024/final.citation_judgments_without_prediction.20241025.jsonl"
BASELINE = "rag/trec_rag_2024/baseline_rag24.test_gpt-4o_top20.jsonl.fixed.gz"


@pytest.fixture
def rag() -> Collection:
    return factories.collection("TREC RAG 2024", year=2024)


def test_the_nist_nugget_file_makes_one_bank_one_label_set_and_the_answers_it_judges(shared_data, rag):
    job = ok("nuggets", shared_data / NUGGETS, collection=rag, options={"create_turns": True})
    bank = NuggetBank.objects.get()
    assert bank.name == "nugget_assignment.20241108"
    assert Nugget.objects.filter(bank=bank).count() == 298
    assert Counter(Nugget.objects.values_list("importance", flat=True)) == {"vital": 203, "okay": 95}
    assert Turn.objects.filter(collection=rag).count() == 21
    assert Turn.objects.get(turn_id="2024-142395").raw_utterance == "what have teen done to stop animal testing"
    label_set = ResponseLabelSet.objects.get()
    assert (label_set.kind, label_set.source, label_set.bank) == ("nuggets", "imported", bank)
    labels = Counter(NuggetAssignment.objects.filter(label_set=label_set).values_list("label", flat=True))
    assert labels == {"support": 4813, "partial_support": 436, "not_support": 7909}
    assert ResponseRun.objects.count() == 45 and Response.objects.count() == 927
    assert job.counts["labels_written"] == 13158 and job.counts["responses_created"] == 927
    # answer_text is split into sentences; the text is kept whole
    response = Response.objects.get(run__name="BEST_cot_gpt3.5", turn__turn_id="2024-142395")
    assert response.text.startswith("Teen activists have taken several acti")
    assert response.sentences.count() > 1


def test_importing_the_nugget_file_again_changes_nothing_and_keeps_the_same_rows(shared_data, rag):
    ok("nuggets", shared_data / NUGGETS, collection=rag, options={"create_turns": True})
    nuggets = set(Nugget.objects.values_list("pk", flat=True))
    responses = set(Response.objects.values_list("pk", flat=True))
    job = ok("nuggets", shared_data / NUGGETS, collection=rag, options={"create_turns": True})
    assert set(Nugget.objects.values_list("pk", flat=True)) == nuggets
    assert set(Response.objects.values_list("pk", flat=True)) == responses
    assert NuggetAssignment.objects.count() == 13158 and ResponseLabelSet.objects.count() == 1
    assert (job.counts["nuggets_created"], job.counts["turns_unchanged"], job.counts["responses_created"]) == (0, 21, 0)


def test_the_baseline_answers_keep_sentences_and_cite_segment_ids_and_meet_the_nugget_file(shared_data, rag):
    job = ok("responses", shared_data / BASELINE, collection=rag, options={"create_turns": True})
    assert (job.counts["runs"], job.counts["created"]) == (1, 301)
    run = ResponseRun.objects.get()
    assert (run.name, run.source_format) == ("baseline_rag24.test_gpt-4o_top20", "rag24")
    response = Response.objects.get(turn__turn_id="2024-105741")
    assert response.length == 268 and len(response.references) == 7
    first, second = response.sentences.all()[:2]
    assert first.citations == [] and first.text.startswith("Having a white blood cell (WBC) count over 15,000")
    assert second.citations == [
        "msmarco_v2.1_doc_11_1429319552#2_3022858430",
        "msmarco_v2.1_doc_11_1429319552#1_3022856821",
    ]
    assert Turn.objects.get(turn_id="2024-105741").raw_utterance.startswith("is it dangerous to have wbc over 15,000")
    # the same run again: every response kept as it was
    again = ok("responses", shared_data / BASELINE, collection=rag, options={"create_turns": True})
    assert (again.counts["unchanged"], again.counts["created"], again.counts["runs_replaced"]) == (301, 0, 1)


def test_the_citation_file_makes_a_blind_label_set_and_the_judged_answers(shared_data, rag):
    job = ok("citation_support", shared_data / CITATIONS, collection=rag, options={"create_turns": True})
    label_set = ResponseLabelSet.objects.get()
    assert (label_set.kind, label_set.source) == ("citations", "imported")
    assert ResponseRun.objects.count() == 45 and Response.objects.count() == 381
    assert ResponseSentence.objects.count() == 3406
    assert Counter(CitationLabel.objects.values_list("support", flat=True)) == {
        "full": 1237,
        "partial": 731,
        "none": 872,
    }
    assert set(CitationLabel.objects.values_list("condition", flat=True)) == {"blind"}
    assert job.counts["labels_written"] == 2840
    sentence = ResponseSentence.objects.get(
        response__run__name="IITD-IRL.zeph_test_rag_rrf_expand_query", response__turn__turn_id="2024-143869", index=0
    )
    assert sentence.citations == ["msmarco_v2.1_doc_36_1381771658#3_2852387502"]
    assert sentence.citation_labels.get().support == "full"


def test_ikat_human_nuggets_keep_grade_and_id_on_the_ikat_turns(shared_data):
    ok("ikat_topics", shared_data / "ikat/2024/2024_test_topics.json")
    job = ok("nuggets", shared_data / "rag/ikat_2024_cone_rag/gold_nuggets_human.json")
    assert (job.counts["turns"], job.counts["nuggets"]) == (116, 2279)
    nugget = Nugget.objects.get(turn__turn_id="8_5", external_id="[2]")
    assert (nugget.grade, nugget.text) == (4, "This allows you to maneuver your vehicle more confidently.")
    assert Nugget.objects.count() == 2279 and not ResponseLabelSet.objects.exists()


def test_ikat_participant_responses_make_one_run_each(shared_data):
    ok("ikat_topics", shared_data / "ikat/2024/2024_test_topics.json")
    job = ok("responses", shared_data / "rag/ikat_2024_cone_rag/manual_responses.json")
    assert (job.counts["runs"], job.counts["created"]) == (4, 316)
    response = Response.objects.get(run__name="manual-out-rr-debertav3", turn__turn_id="0_2")
    assert response.text.startswith("Yes, you will need a visa to travel to Egypt.")
    assert response.sentences.first().text == "Yes, you will need a visa to travel to Egypt."


def test_the_rag_2025_development_nuggets_make_a_bank_alone_with_post_edits_marked_edited(shared_data, rag):
    path = shared_data / "rag/trec_rag_2025/rag25-dev-nuggets.jsonl"
    job = ok("nuggets", path, collection=rag, options={"create_turns": True, "bank": "post-edited"})
    assert (job.counts["nuggets_created"], job.counts["topics"]) == (1255, 22)
    bank = NuggetBank.objects.get(name="post-edited")
    first = Nugget.objects.filter(bank=bank, turn__turn_id="58").order_by("position")[:2]
    assert [n.origin for n in first] == ["imported", "edited"]
    assert first[0].provenance == {"mapped_sub_narrative": '"Key advantages of nuclear energy"'}
    assert not ResponseLabelSet.objects.exists() and not ResponseRun.objects.exists()


def test_drop_team_puts_the_citation_labels_on_the_runs_the_nugget_file_made(shared_data, rag):
    ok("nuggets", shared_data / NUGGETS, collection=rag, options={"create_turns": True})
    options = {"drop_team": True, "create_turns": True}
    job = ok("citation_support", shared_data / CITATIONS, collection=rag, options=options)
    # 44 of NIST's 45 "<team>.<run>" names are runs of the nugget file; "webis-manual" is new
    assert ResponseRun.objects.count() == 46 and job.counts["labels_written"] == 2840
    # the 170 answers both files judge take the citation file's sentences (their Punkt split had no citations)
    assert (job.counts["responses_realigned"], job.counts["responses_created"]) == (170, 211)
    label = CitationLabel.objects.filter(sentence__response__run__name="ISIR-IRIT-zephyr_p2").first()
    assert label is not None
