"""Generation jobs in eager mode: counts, provenance, idempotence, resume after a crash, cancel, retry."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from ecast.generation import processing, services
from ecast.generation.tasks import generation_job_dispatch_task
from ecast.models import GenerationJob, GenerationTurn, Paraphrase
from tests import factories
from tests.ecast.pipeline.conftest import t5_config

pytestmark = pytest.mark.django_db


def _run(job):
    generation_job_dispatch_task(job.pk)
    job.refresh_from_db()
    return job


def test_it_generates_paired_manual_and_raw_paraphrases_with_provenance(small_collection, tiny_t5):
    job = services.generation_job_create(collection=small_collection, config=t5_config(tiny_t5), seed=7, chunk_size=2)
    assert job.progress_total == 6 and job.turns.count() == 6
    job = _run(job)
    assert job.status == GenerationJob.Status.SUCCEEDED
    manual = Paraphrase.objects.filter(kind="manual", origin="generated")
    raw = Paraphrase.objects.filter(kind="raw", origin="generated")
    assert manual.count() == raw.count() == sum(job.turns.values_list("outputs", flat=True)) > 0
    for p in manual:
        assert p.pair.pair_id == p.pk and p.pair.kind == "raw" and p.status == "candidate"
        prov = p.provenance
        assert prov["job"] == job.pk and prov["stage"] == "paraphrase" and prov["backend"] == "t5"
        assert prov["model"] == str(tiny_t5) and prov["params"]["num_return_sequences"] == 3
        assert prov["source"] in ("r", "m") and prov["source_text"] and isinstance(prov["seed"], int)
        if p.turn.number == 1:
            assert p.pair.text == p.text and p.pair.provenance["stage"] == "first-turn copy"
        else:
            assert p.pair.provenance["stage"] == "cr"
    # at most n per source, two sources (r_i and m_i; equal for first turns here, so one)
    for gt in job.turns.all():
        assert gt.outputs <= 6 and gt.status == "done" and gt.details["generated"] in (3, 6)


def test_it_reproduces_outputs_with_the_same_seed_and_differs_with_another(small_collection, tiny_t5):
    texts = []
    for seed in (3, 3, 4):
        Paraphrase.objects.all().delete()
        job = services.generation_job_create(
            collection=small_collection, config=t5_config(tiny_t5), seed=seed, selection={"turns": ["1_1", "1_2"]}
        )
        job = _run(job)
        texts.append(sorted(Paraphrase.objects.filter(provenance__job=job.pk).values_list("text", flat=True)))
    assert texts[0] == texts[1]
    assert texts[0] != texts[2]


def test_it_resumes_after_a_crash_without_duplicating_outputs(small_collection, tiny_t5):
    job = services.generation_job_create(collection=small_collection, config=t5_config(tiny_t5), seed=1, chunk_size=6)
    services.generation_job_begin(job_id=job.pk)
    ids = list(job.turns.order_by("position").values_list("id", flat=True))
    processing.generation_turn_process(gen_turn_id=ids[0])
    processing.generation_turn_process(gen_turn_id=ids[1])
    with pytest.raises(SystemExit):
        processing.generation_turn_process(gen_turn_id=ids[2], crash_after_compute=True)
    assert GenerationTurn.objects.get(pk=ids[2]).status == "pending"
    before = Paraphrase.objects.count()
    # The redelivered chunk runs the whole chunk again: finished turns are skipped.
    processing.generation_chunk_process(job_id=job.pk, gen_turn_ids=ids)
    job.refresh_from_db()
    assert job.status == GenerationJob.Status.SUCCEEDED
    assert Paraphrase.objects.count() == 2 * sum(job.turns.values_list("outputs", flat=True))
    assert Paraphrase.objects.count() > before
    assert all(gt.attempts == 1 for gt in job.turns.all())


def test_cancel_stops_pending_turns_and_retry_runs_them(small_collection, tiny_t5):
    job = services.generation_job_create(collection=small_collection, config=t5_config(tiny_t5), seed=1, chunk_size=1)
    services.generation_job_begin(job_id=job.pk)
    first = job.turns.order_by("position").first()
    processing.generation_turn_process(gen_turn_id=first.pk)
    services.generation_job_cancel(job=job)
    job.refresh_from_db()
    assert job.status == "cancelled"
    assert job.turns.filter(status="cancelled").count() == 5
    processing.generation_chunk_process(job_id=job.pk, gen_turn_ids=list(job.turns.values_list("id", flat=True)))
    assert job.turns.filter(status="done").count() == 1
    services.generation_job_retry(job=job)  # eager: on_commit runs immediately under pytest-django? run explicitly
    _run(job)
    job.refresh_from_db()
    assert job.status == "succeeded" and job.turns.filter(status="done").count() == 6


def test_a_failing_backend_fails_the_turn_with_its_reason_and_retry_is_offered(small_collection, tmp_path):
    config = {"paraphrase": {"backend": "t5", "params": {"model": str(tmp_path / "missing")}}}
    job = _run(services.generation_job_create(collection=small_collection, config=config))
    assert job.status == "failed" and "retry" in job.error
    gt = job.turns.first()
    assert gt.status == "failed" and "cannot load seq2seq model" in gt.error
    assert not Paraphrase.objects.exists()


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"config": {"cqr": {"backend": "nope"}}}, "cqr"),
        ({"config": {"paraphrase": {"backend": "t5", "params": {}}}}, "paraphrase"),
        ({"config": {"paraphrase": {"backend": "rule", "sources": ["x"]}}}, "paraphrase"),
        ({"selection": {"turns": ["9_9"]}}, "selection"),
        ({"config": {"clean": {"min_similarity": 3}}}, "clean"),
        ({"chunk_size": 0}, "chunk_size"),
    ],
)
def test_it_rejects_bad_job_input_and_writes_nothing(small_collection, kwargs, field):
    with pytest.raises(ValidationError) as err:
        services.generation_job_create(collection=small_collection, **kwargs)
    assert field in err.value.message_dict
    assert not GenerationJob.objects.exists()


def test_selection_by_conversation_and_turn_ids(small_collection):
    job = services.generation_job_create(
        collection=small_collection, selection={"conversations": ["2"], "turns": ["1_1"]}
    )
    assert sorted(job.turns.values_list("turn__turn_id", flat=True)) == ["1_1", "2_1", "2_2", "2_3"]


def test_negative_feedback_marks_the_previous_response_unreliable_and_picks_a_qrels_replacement(small_collection):
    t1, t2 = small_collection.turns.get(turn_id="1_1"), small_collection.turns.get(turn_id="1_2")
    t2.raw_utterance = "No, that's not what I meant. I live in Seattle. Is it treatable?"
    t2.save()
    factories.qrels_version(
        small_collection, judgments={t1.turn_id: {"MARCO_3": 3, "MARCO_9": 4, "MARCO_1": 4, "MARCO_0": 2}}
    )
    services.turn_preprocess_conversation(conversation=t1.conversation)
    t1.refresh_from_db()
    t2.refresh_from_db()
    assert t1.canonical_response_unreliable and t1.replacement_response_id == "MARCO_1"
    assert not t2.canonical_response_unreliable
    assert t2.feedback_sentences == ["No, that's not what I meant."]
    assert t2.revealment_sentences == ["I live in Seattle."]


@pytest.mark.slow
def test_a_chunk_samples_its_turns_together_and_each_turn_keeps_what_it_gets_alone(small_collection):
    config = {
        "cqr": {"backend": "rule"},
        "paraphrase": {"backend": "smollm", "params": {"num_return_sequences": 4, "max_new_tokens": 24}},
        "cr": {"backend": "anaphora"},
        "clean": {"min_similarity": None, "keep": None},
    }
    texts = []
    for chunk_size in (3, 1):  # one batch of three turns, then one turn at a time
        Paraphrase.objects.all().delete()
        selection = {"conversations": ["2"]}
        job = services.generation_job_create(
            collection=small_collection, config=config, seed=3, chunk_size=chunk_size, selection=selection
        )
        job = _run(job)
        assert job.status == GenerationJob.Status.SUCCEEDED
        seconds = set(job.turns.values_list("seconds", flat=True))
        assert len(seconds) == (1 if chunk_size == 3 else 3)  # a batch's time is shared by its turns
        texts.append(sorted(Paraphrase.objects.filter(provenance__job=job.pk).values_list("text", flat=True)))
    assert texts[0] == texts[1] and texts[0]
