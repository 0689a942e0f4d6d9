"""Response-LLM jobs on an OpenAI-compatible endpoint (a real HTTP server): labels parsed from replies, HTTP errors
and timeouts retried, a malformed reply asked again and, when it stays malformed, the job failed with the reply in its
reason and nothing of that batch written; the per-job key in no provenance."""

from __future__ import annotations

import json

import pytest

from evaluation.models import CitationLabel, Nugget, NuggetAssignment
from judging.llm import response_services
from judging.models import ResponseLlmJob
from tests.judging.llm.response_helpers import response_collection
from tests.openai_helpers import Step, completion, endpoint_settings_reset, openai_server

pytestmark = pytest.mark.django_db
Task = ResponseLlmJob.Task
KEY = "sk-response-judge-never-shown"


def judged(messages, body):
    """Support when the nugget or sentence speaks of bees or throat cancer, else not; nugget lists for creation."""
    user = messages[-1]["content"]
    if "Nuggets:" in user:
        return ["1. vital: The passage says something\n2. okay: Another fact"]
    probe = user.split("Nugget: ", 1)[-1].split("Sentence: ", 1)[-1].split("\n", 1)[0].lower()
    return ["##label: 2" if ("bee" in probe or "throat" in probe) else "##label: 0"]


@pytest.fixture
def endpoint_settings(settings, fresh_cache):
    return endpoint_settings_reset(settings, retries=1, timeout=1.0)


@pytest.fixture
def start(django_capture_on_commit_callbacks):
    def run(**kw):
        with django_capture_on_commit_callbacks(execute=True):
            job = response_services.response_job_create(model="openai", **kw)
        job.refresh_from_db()
        return job

    return run


def test_assignments_are_read_from_the_replies(endpoint_settings, start):
    coll, _, runs, bank = response_collection()
    with openai_server(judged) as server:
        job = start(
            task=Task.ASSIGN_NUGGETS,
            collection=coll,
            bank=bank,
            runs=list(runs.values()),
            params={"base_url": server.base_url, "served_model": "m1"},
            api_key=KEY,
        )
    assert job.status == "succeeded"
    got = sorted(
        NuggetAssignment.objects.filter(label_set=job.label_set).values_list(
            "response__run__name", "nugget__text", "label"
        )
    )
    assert got == [
        ("sysA", "Pesticides harm bees", "support"),
        ("sysA", "Smoking is a risk factor", "not_support"),
        ("sysA", "Throat cancer develops in the pharynx or larynx", "support"),
        ("sysB", "Smoking is a risk factor", "not_support"),
        ("sysB", "Throat cancer develops in the pharynx or larynx", "support"),
    ]
    one = NuggetAssignment.objects.filter(label_set=job.label_set).first()
    assert one.provenance["backend"] == "openai" and one.provenance["model"] == "m1"
    assert one.provenance["reply"] in ("##label: 2", "##label: 0") and json.loads(one.prompt)[1]["role"] == "user"
    assert all(r["headers"].get("Authorization") == f"Bearer {KEY}" for r in server.requests)
    assert KEY not in json.dumps(one.provenance) and KEY not in json.dumps(job.provenance)
    assert job.api_key == ""  # kept only while the job could use it


def test_http_500s_and_timeouts_are_retried(endpoint_settings, start):
    coll, _, runs, _ = response_collection()
    script = [Step(status=500, body="{}"), Step(hang=True)]
    with openai_server(judged, script=script) as server:
        job = start(
            task=Task.CITATION_SUPPORT,
            collection=coll,
            runs=[runs["sysB"]],
            params={"base_url": server.base_url, "served_model": "m1", "batch_size": 1},
        )
        # sysB cites d2 once; the first request got a 500, its retry (retries=1) hung past the timeout.
    assert job.status == "failed" and "failed 2 attempt(s)" in job.error and "no reply within" in job.error
    assert not CitationLabel.objects.filter(label_set=job.label_set).exists()
    with openai_server(judged, script=[Step(status=500, body="{}")]) as server:
        job = start(
            task=Task.CITATION_SUPPORT,
            collection=coll,
            runs=[runs["sysB"]],
            params={"base_url": server.base_url, "served_model": "m1"},
        )
    assert job.status == "succeeded"
    assert list(CitationLabel.objects.filter(label_set=job.label_set).values_list("support", flat=True)) == ["full"]


def test_a_malformed_reply_is_asked_again_and_a_lasting_one_fails_the_job_writing_nothing(endpoint_settings, start):
    coll, _, runs, bank = response_collection()
    bad = Step(status=200, body=completion(["I am not sure what you mean."], "m1"))
    with openai_server(judged, script=[bad]) as server:
        job = start(
            task=Task.ASSIGN_NUGGETS,
            collection=coll,
            bank=bank,
            runs=[runs["sysB"]],
            params={"base_url": server.base_url, "served_model": "m1"},
        )
    assert job.status == "succeeded" and len(server.requests) == 3  # two nuggets, one asked again
    with openai_server(lambda m, b: ["Hmm."]) as server:
        job = start(
            task=Task.ASSIGN_NUGGETS,
            collection=coll,
            bank=bank,
            runs=[runs["sysB"]],
            params={"base_url": server.base_url, "served_model": "m2", "malformed_retries": 1},
        )
    assert job.status == "failed" and "gave no usable label in 2 tries" in job.error and "'Hmm.'" in job.error
    assert not NuggetAssignment.objects.filter(label_set=job.label_set).exists()
    assert len(server.requests) == 4  # two nuggets, each asked twice


def test_nugget_creation_parses_the_listed_nuggets(endpoint_settings, start):
    coll, original, _, _ = response_collection()
    with openai_server(judged) as server:
        job = start(
            task=Task.CREATE_NUGGETS,
            collection=coll,
            qrels_version=original,
            threshold=2,
            params={"base_url": server.base_url, "served_model": "m1"},
        )
    # Judged >= 2 with text: 1_1 (d1), 1_2 (d4), 2_1 (d7).
    assert job.status == "succeeded" and job.progress_done == 3
    rows = list(Nugget.objects.filter(bank=job.bank).values_list("turn__turn_id", "text", "importance"))
    assert len(rows) == 6 and ("1_1", "The passage says something", "vital") in rows
    assert ("2_1", "Another fact", "okay") in rows
    assert job.bank.name == "LLM draft: m1"


def asked_collection():
    """The response collection with real questions on 1_1 and 2_1 (BM25 finds passages for them)."""
    from ecast.models import Turn

    coll, *_ = response_collection()
    for turn_id, question in (("1_1", "What is throat cancer?"), ("2_1", "Why are bees dying?")):
        Turn.objects.filter(collection=coll, turn_id=turn_id).update(
            raw_utterance=question, manual_rewrite=question, automatic_rewrite=""
        )
    return coll


def cited_answer(messages, body):
    """A baseline answer citing the first two passages shown, one number past them, and one sentence uncited."""
    shown = messages[-1]["content"].split("Question:", 1)[0]
    assert "[1] " in shown and messages[2]["role"] == "assistant"  # the worked example came first
    return ["The first passage says so [1]. So does the second [2, 9]. I hope this helps."]


def test_the_generative_baseline_maps_each_cited_number_to_its_passage_and_records_how(endpoint_settings, start):
    from evaluation.models import Response, ResponseSentence

    coll = asked_collection()
    with openai_server(cited_answer) as server:
        job = start(
            task=Task.BASELINE,
            collection=coll,
            turns=["1_1", "2_1"],
            params={"base_url": server.base_url, "served_model": "m1", "k": 3},
            api_key=KEY,
        )
    assert (job.status, job.progress_done, job.progress_total) == ("succeeded", 2, 2), job.error
    run = job.run
    assert run.name == "ecast-baseline-bm25-top3-m1" and run.source_format == "baseline"
    prov = run.provenance
    assert (prov["backend"], prov["model"], prov["prompt_version"]) == ("openai", "m1", "ecast-baseline-rag/v1")
    assert (
        prov["params"]["k"] == 3
        and prov["params"]["require_citation"] == 1
        and "{passage 1}" in prov["prompt_template"]
    )
    assert KEY not in json.dumps(prov)
    for response in Response.objects.filter(run=run):
        top = response.references
        assert len(top) == 3
        rows = list(
            ResponseSentence.objects.filter(response=response).order_by("index").values_list("text", "citations")
        )
        assert rows == [
            ("The first passage says so.", [top[0]]),
            ("So does the second.", [top[1]]),
            ("I hope this helps.", []),
        ]
        assert response.metadata["dropped_citations"] == [9] and response.metadata["uncited_sentences"] == 1
        assert json.loads(response.metadata["prompt"])[-1]["content"].startswith("Passages:\n[1] ")
        assert response.metadata["reply"].startswith("The first passage says so [1].")
    asked = [r["body"] for r in server.requests]
    assert {b["temperature"] for b in asked} == {0.0} and {b["model"] for b in asked} == {"m1"}


def test_a_baseline_reply_citing_nothing_is_asked_again_and_a_lasting_one_fails_the_job_writing_nothing(
    endpoint_settings, start
):
    from evaluation.models import Response

    coll = asked_collection()
    uncited = Step(status=200, body=completion(["Bees are dying, I think."], "m1"))
    with openai_server(cited_answer, script=[uncited]) as server:
        job = start(
            task=Task.BASELINE,
            collection=coll,
            turns=["1_1"],
            params={"base_url": server.base_url, "served_model": "m1"},
        )
    assert job.status == "succeeded" and len(server.requests) == 2
    assert Response.objects.get(run=job.run).sentences.count() == 3
    with openai_server(lambda m, b: ["Bees are dying [7]."]) as server:
        job = start(
            task=Task.BASELINE,
            collection=coll,
            turns=["1_1"],
            run_name="never cites a shown passage",
            params={"base_url": server.base_url, "served_model": "m2", "malformed_retries": 1},
        )
    assert (
        job.status == "failed" and "gave no usable answer (a sentence citing a listed passage) in 2 tries" in job.error
    )
    assert "'Bees are dying [7].'" in job.error and len(server.requests) == 2
    assert not Response.objects.filter(run=job.run).exists()
