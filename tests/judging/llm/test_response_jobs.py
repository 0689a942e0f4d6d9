"""Response-LLM jobs with the tiny local model: nugget drafts, nugget assignment and citation support land in a bank
or label set of their own with prompt and provenance per row; a job resumes after a dead worker, cancels, and the
built-in baseline answers every turn with cited sentences."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from evaluation.models import CitationLabel, Nugget, NuggetAssignment, Response, ResponseLabelSet, ResponseSentence
from judging.llm import response_items, response_services
from judging.models import ResponseLlmJob
from tests.judging.llm.response_helpers import response_collection

pytestmark = pytest.mark.django_db
Task = ResponseLlmJob.Task


@pytest.fixture
def setup():
    return response_collection()


@pytest.fixture
def start(django_capture_on_commit_callbacks):
    def run(**kw):
        with django_capture_on_commit_callbacks(execute=True):
            job = response_services.response_job_create(**kw)
        job.refresh_from_db()
        return job

    return run


def test_nugget_assignment_labels_every_response_nugget_pair_into_an_llm_set(setup, start, tiny_causal):
    coll, _, runs, bank = setup
    job = start(
        task=Task.ASSIGN_NUGGETS,
        collection=coll,
        model=str(tiny_causal),
        bank=bank,
        runs=list(runs.values()),
        params={"batch_size": 2},
    )
    assert (job.status, job.progress_done, job.progress_total) == ("succeeded", 5, 5)
    ls = job.label_set
    assert (ls.kind, ls.source, ls.bank_id, ls.name) == ("nuggets", "llm", bank.pk, f"llm nuggets: {tiny_causal.name}")
    rows = NuggetAssignment.objects.filter(label_set=ls)
    # sysA answers 1_1 (2 nuggets) and 2_1 (1), sysB 1_1 (2).
    assert rows.count() == 5
    one = rows.first()
    assert one.label in ("support", "partial_support", "not_support")
    assert one.prompt.endswith("##label: ") and "Nugget: " in one.prompt
    assert one.provenance["backend"] == "local" and one.provenance["model"] == tiny_causal.name
    assert len(one.provenance["probabilities"]) == 3 and abs(sum(one.provenance["probabilities"]) - 1) < 1e-6
    assert one.condition == ""


def test_citation_support_labels_each_cited_passage_with_text(setup, start, tiny_causal):
    coll, _, runs, _ = setup
    job = start(task=Task.CITATION_SUPPORT, collection=coll, model=str(tiny_causal), runs=list(runs.values()))
    assert (job.status, job.progress_total) == ("succeeded", 5)
    got = sorted(CitationLabel.objects.filter(label_set=job.label_set).values_list("sentence__text", "passage_id"))
    assert got == [
        ("Bees pollinate crops.", "d2"),
        ("Neonicotinoids harm bees.", "d7"),
        ("Smoking raises the risk.", "d2"),
        ("Smoking raises the risk.", "d3"),
        ("Throat cancer develops in the pharynx.", "d1"),
    ]
    assert set(CitationLabel.objects.filter(label_set=job.label_set).values_list("support", flat=True)) <= {
        "full",
        "partial",
        "none",
    }
    assert job.label_set.kind == ResponseLabelSet.Kind.CITATIONS


def test_nugget_creation_drafts_a_bank_from_relevant_passages_with_importance(setup, start, tiny_causal):
    coll, original, _, _ = setup
    job = start(task=Task.CREATE_NUGGETS, collection=coll, model=str(tiny_causal), qrels_version=original, threshold=1)
    # Turns with a passage judged >= 1 that has text: 1_1 (d1, d3), 1_2 (d4), 2_1 (d6, d7).
    assert (job.status, job.progress_total, job.progress_done) == ("succeeded", 3, 3)
    bank = job.bank
    assert bank.name == f"LLM draft: {tiny_causal.name}" and bank.provenance["qrels_version"] == "original"
    nuggets = list(Nugget.objects.filter(bank=bank).order_by("turn__turn_id", "position"))
    assert {n.turn.turn_id for n in nuggets} == {"1_1", "1_2", "2_1"}
    assert {n.origin for n in nuggets} == {"auto"} and {n.importance for n in nuggets} <= {"vital", "okay"}
    first = next(n for n in nuggets if n.turn.turn_id == "1_1")
    assert first.source_passages == ["d1", "d3"]  # best grade first
    assert first.text == "Throat cancer is cancer that develops in the pharynx, larynx or tonsils."
    assert first.provenance["prompt"].endswith("##label: ") and len(first.provenance["importance_probabilities"]) == 2


def test_a_job_resumes_after_a_dead_worker_without_labelling_twice(setup, start, tiny_causal):
    coll, _, runs, bank = setup
    job = response_services.response_job_create(
        task=Task.ASSIGN_NUGGETS, collection=coll, model=str(tiny_causal), bank=bank, runs=[runs["sysA"]], queue=False
    )
    # A first worker stored one batch, then died.
    model = response_services.labeller(job)
    first = response_items.pending_items(job)[:2]
    response_services.response_rows_write(
        job_id=job.pk, keys=first, rows=response_items.label_batch(job, model, first), seconds=0.1
    )
    before = dict(NuggetAssignment.objects.filter(label_set=job.label_set).values_list("nugget_id", "label"))
    assert response_services.response_job_run(job_id=job.pk) == 1
    job.refresh_from_db()
    assert (job.status, job.progress_done) == ("succeeded", 3)
    after = dict(NuggetAssignment.objects.filter(label_set=job.label_set).values_list("nugget_id", "label"))
    assert len(after) == 3 and all(after[k] == v for k, v in before.items())


def test_a_cancelled_job_writes_nothing_more(setup, tiny_causal):
    coll, _, runs, bank = setup
    job = response_services.response_job_create(
        task=Task.ASSIGN_NUGGETS, collection=coll, model=str(tiny_causal), bank=bank, runs=[runs["sysA"]], queue=False
    )
    assert response_services.response_job_cancel(job_id=job.pk) is True
    assert response_services.response_job_run(job_id=job.pk) == 0
    job.refresh_from_db()
    assert job.status == "cancelled" and not NuggetAssignment.objects.filter(label_set=job.label_set).exists()
    assert response_services.response_job_cancel(job_id=job.pk) is False


def test_a_job_cancelled_mid_run_keeps_the_batches_stored_before_and_stores_none_after(setup, tiny_causal, monkeypatch):
    coll, _, runs, bank = setup
    job = response_services.response_job_create(
        task=Task.ASSIGN_NUGGETS,
        collection=coll,
        model=str(tiny_causal),
        bank=bank,
        runs=[runs["sysA"]],
        params={"batch_size": 1},
        queue=False,
    )
    label_batch = response_items.label_batch
    calls: list[int] = []

    def cancelled_after_first(job_, model, batch):
        # The admin presses Cancel while the worker labels the second batch.
        calls.append(len(batch))
        if len(calls) == 2:
            assert response_services.response_job_cancel(job_id=job_.pk) is True
        return label_batch(job_, model, batch)

    monkeypatch.setattr(response_items, "label_batch", cancelled_after_first)
    assert response_services.response_job_run(job_id=job.pk) == 1
    job.refresh_from_db()
    assert job.status == "cancelled" and job.progress_done == 1
    assert NuggetAssignment.objects.filter(label_set=job.label_set).count() == 1
    assert len(calls) == 2  # nothing was labelled after the cancel was seen


def test_a_job_with_nothing_to_label_is_refused_and_writes_nothing(setup, tiny_causal):
    coll, _, _, bank = setup
    with pytest.raises(ValidationError, match="no response answers a turn"):
        response_services.response_job_create(
            task=Task.ASSIGN_NUGGETS,
            collection=coll,
            model=str(tiny_causal),
            bank=bank,
            runs=[_empty_run(coll)],
            queue=False,
        )
    assert not ResponseLlmJob.objects.exists() and not ResponseLabelSet.objects.filter(source="llm").exists()


def _empty_run(coll):
    from evaluation.models import ResponseRun

    return ResponseRun.objects.create(collection=coll, name="empty")


def test_a_missing_model_is_refused(setup):
    coll, _, runs, bank = setup
    with pytest.raises(ValidationError, match="model"):
        response_services.response_job_create(
            task=Task.ASSIGN_NUGGETS, collection=coll, model="/no/such/model", bank=bank, runs=[runs["sysA"]]
        )


def test_the_baseline_answers_every_turn_with_sentences_citing_their_passage(setup, start):
    coll, *_ = setup
    job = start(task=Task.BASELINE, collection=coll, params={"k": 3, "sentences": 2})
    assert job.status == "succeeded" and job.progress_done == job.progress_total == 6
    run = job.run
    assert run.name == "ecast-baseline-bm25-top3" and run.source_format == "baseline"
    assert run.provenance["params"]["k"] == 3
    assert Response.objects.filter(run=run).count() == 6
    for s in ResponseSentence.objects.filter(response__run=run):
        assert len(s.citations) == 1 and s.citations[0] in s.response.references
    with pytest.raises(ValidationError, match="already has a response run"):
        response_services.response_job_create(task=Task.BASELINE, collection=coll, params={"k": 3})


@pytest.mark.slow
def test_the_shipped_model_writes_baseline_answers_whose_citations_name_the_passages_shown(setup, start):
    """A real run of the generative baseline with SmolLM2-135M-Instruct (2 turns, k = 3): every turn is answered,
    each citation is one of the turn's three BM25 passages, and the run records the prompt, model and parameters."""
    from ecast.models import Turn

    coll, *_ = setup
    for turn_id, question in (("1_1", "What is throat cancer?"), ("2_1", "Why are bees dying?")):
        Turn.objects.filter(collection=coll, turn_id=turn_id).update(raw_utterance=question, manual_rewrite=question)
    job = start(task=Task.BASELINE, collection=coll, model="smollm", turns=["1_1", "2_1"], params={"k": 3})
    assert (job.status, job.progress_done) == ("succeeded", 2), job.error
    prov = job.run.provenance
    assert prov["model"] == "HuggingFaceTB/SmolLM2-135M-Instruct" and prov["backend"] == "local"
    assert prov["params"]["k"] == 3 and prov["params"]["require_citation"] == 0 and prov["revision"].startswith("llm")
    responses = list(Response.objects.filter(run=job.run))
    assert len(responses) == 2
    for response in responses:
        sentences = list(response.sentences.all())
        assert sentences and response.text and len(response.references) == 3
        assert response.metadata["prompt"].startswith("<|im_start|>system") and response.metadata["reply"]
        for s in sentences:
            assert set(s.citations) <= set(response.references) and "[" not in s.text
