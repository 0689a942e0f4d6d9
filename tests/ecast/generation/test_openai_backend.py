"""Generation jobs on an OpenAI-compatible endpoint served by a real HTTP server: outputs with the endpoint, model,
parameters and prompt in their provenance; retried failures; a turn that fails for good fails with its reason and
writes nothing; the reply cache; the key in no page, API answer, provenance or log; the backends page."""

from __future__ import annotations

import json
import logging

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from ecast.generation import services
from ecast.generation.tasks import generation_job_dispatch_task
from ecast.models import GenerationJob, Paraphrase
from ecast.pipeline import backends
from tests.openai_helpers import Step, endpoint_settings_reset, openai_server, rule_reply, smollm_reply

pytestmark = pytest.mark.django_db

KEY = "sk-job-7f3a-never-shown"
ALL_OPENAI = {
    "cqr": {"backend": "openai", "params": {}},
    "paraphrase": {"backend": "openai", "params": {"num_return_sequences": 2, "temperature": 0.8}},
    "cr": {"backend": "openai", "params": {}},
    "clean": {"min_similarity": None},
}


@pytest.fixture
def endpoint_settings(settings, fresh_cache):
    """Fast retries, and no endpoint in the settings unless a test names one."""
    return endpoint_settings_reset(settings, retries=2, timeout=0.5)


def _configure(settings, server, model="served-model"):
    settings.ECAST_OPENAI_BASE_URL = server.base_url
    settings.ECAST_OPENAI_MODEL = model


def _run(job):
    generation_job_dispatch_task(job.pk)
    job.refresh_from_db()
    return job


def test_a_job_on_an_endpoint_writes_pairs_with_endpoint_model_parameters_and_prompt(
    endpoint_settings, small_collection
):
    with openai_server() as server:
        _configure(endpoint_settings, server)
        job = _run(services.generation_job_create(collection=small_collection, config=ALL_OPENAI, seed=3))
    assert job.status == "succeeded", [gt.error for gt in job.turns.all()]
    manual = Paraphrase.objects.filter(kind="manual", origin="generated")
    assert manual.exists()
    for p in manual:
        prov = p.provenance
        assert prov["backend"] == "openai" and prov["base_url"] == server.base_url and prov["model"] == "served-model"
        assert prov["params"]["num_return_sequences"] == 2 and prov["params"]["temperature"] == 0.8
        assert prov["prompt_template"] == backends.prompt_template("paraphrase")
        assert prov["cqr"]["backend"] == "openai" and prov["cqr"]["prompt_template"]["name"] == "few-shot-cqr/v1"
        if p.turn.number > 1:
            assert p.pair.provenance["prompt_template"] == backends.prompt_template("cr")
    bodies = [r["body"] for r in server.requests]
    assert {b["model"] for b in bodies} == {"served-model"}
    assert {b["n"] for b in bodies} == {1, 2} and {b["temperature"] for b in bodies} == {0.0, 0.8}


def test_a_500_is_retried_and_the_turn_succeeds(endpoint_settings, small_collection):
    with openai_server(script=[Step(500, "upstream crashed")]) as server:
        _configure(endpoint_settings, server)
        job = _run(
            services.generation_job_create(collection=small_collection, config=ALL_OPENAI, selection={"turns": ["1_2"]})
        )
    assert job.status == "succeeded" and job.turns.get().outputs > 0
    assert len(server.requests) >= 2


@pytest.mark.parametrize(
    ("step", "reason"),
    [
        (Step(500, '{"error": {"message": "CUDA out of memory"}}'), "HTTP 500: CUDA out of memory"),
        (Step(hang=True), "no reply within 0.5 s"),
        (Step(200, "<html>gateway</html>"), "malformed reply: not JSON"),
        (Step(200, json.dumps({"id": "x", "choices": []})), "malformed reply: no 'choices'"),
    ],
)
def test_an_endpoint_failing_every_attempt_fails_the_turn_with_the_reason_and_writes_nothing(
    endpoint_settings, small_collection, step, reason
):
    with openai_server(script=[step] * 3) as server:
        _configure(endpoint_settings, server)
        job = _run(
            services.generation_job_create(collection=small_collection, config=ALL_OPENAI, selection={"turns": ["1_2"]})
        )
    gt = job.turns.get()
    assert job.status == "failed" and gt.status == "failed"
    assert "failed 3 attempt(s)" in gt.error and reason in gt.error
    assert len(server.requests) == 3
    assert not Paraphrase.objects.exists()


def test_a_turn_whose_context_removal_fails_keeps_none_of_its_paraphrases(endpoint_settings, small_collection):
    def no_context_removal(messages, body):
        if messages[-1]["content"].startswith("Question: "):
            raise RuntimeError("model crashed")
        return rule_reply(messages, body)

    with openai_server(reply=no_context_removal) as server:
        _configure(endpoint_settings, server)
        job = _run(
            services.generation_job_create(
                collection=small_collection, config=ALL_OPENAI, selection={"turns": ["1_1", "1_2"]}
            )
        )
    first, second = job.turns.order_by("position")
    assert first.status == "done" and first.outputs > 0  # a first turn needs no context removal
    assert second.status == "failed" and "model crashed" in second.error
    assert not Paraphrase.objects.filter(turn=second.turn).exists()
    assert any(r["body"]["messages"][-1]["content"].startswith("Rewrite: ") for r in server.requests)


def test_a_repeated_job_is_answered_from_the_reply_cache(endpoint_settings, small_collection):
    with openai_server() as server:
        _configure(endpoint_settings, server)
        first = _run(services.generation_job_create(collection=small_collection, config=ALL_OPENAI, seed=1))
        asked = len(server.requests)
        second = _run(services.generation_job_create(collection=small_collection, config=ALL_OPENAI, seed=1))
    assert first.status == second.status == "succeeded" and asked > 0
    assert len(server.requests) == asked
    assert sum(second.turns.values_list("outputs", flat=True)) == sum(first.turns.values_list("outputs", flat=True))


def test_a_job_without_an_endpoint_is_refused_and_names_what_to_set(endpoint_settings, small_collection):
    with pytest.raises(ValidationError) as refused:
        services.generation_job_create(collection=small_collection, config=ALL_OPENAI)
    assert "ECAST_OPENAI_BASE_URL or per job" in str(refused.value.message_dict["paraphrase"])
    assert not GenerationJob.objects.exists()


def test_the_per_job_key_reaches_the_server_and_no_page_api_provenance_or_log(
    endpoint_settings, small_collection, admin_client, admin_api, caplog, django_capture_on_commit_callbacks
):
    caplog.set_level(logging.DEBUG)
    endpoint_settings.ECAST_OPENAI_API_KEY = "sk-settings-key"
    with openai_server() as server:
        data = {
            "collection": small_collection.pk,
            "conversations": "1",
            "cqr_backend": "openai",
            "cqr_model": "per-job-model",
            "paraphrase_backend": "openai",
            "paraphrase_model": "per-job-model",
            "cr_backend": "openai",
            "cr_model": "per-job-model",
            "openai_base_url": server.base_url,
            "openai_api_key": KEY,
            "source_m": "on",
            "num_return_sequences": 2,
            "top_k": 50,
            "top_p": 0.9,
            "temperature": 1,
            "max_new_tokens": 24,
            "min_similarity": "",
            "seed": 0,
            "chunk_size": 5,
        }
        with django_capture_on_commit_callbacks(execute=True):
            response = admin_client.post(reverse("generation-jobs"), data)
        job = GenerationJob.objects.get()
        api_params = {"base_url": server.base_url, "model": "per-job-model", "api_key": KEY}
        api_job = admin_api.post(
            reverse("api-generation-job-create"),
            {"collection": small_collection.pk, "config": {"paraphrase": {"backend": "openai", "params": api_params}}},
            format="json",
        )
    assert response.status_code == 302 and job.status == "succeeded"
    assert {r["headers"]["Authorization"] for r in server.requests} == {f"Bearer {KEY}"}
    assert {r["body"]["model"] for r in server.requests} == {"per-job-model"}
    assert api_job.status_code == 201 and KEY not in api_job.content.decode()
    assert GenerationJob.objects.get(pk=api_job.json()["id"]).api_key == KEY  # a key in the params is the job's key
    seen = [
        admin_client.get(reverse("generation-jobs")).content.decode(),
        admin_client.get(reverse("generation-job-detail", args=[job.pk])).content.decode(),
        admin_client.get(reverse("generation-backends")).content.decode(),
        admin_api.get(reverse("api-generation-jobs")).content.decode(),
        admin_api.get(reverse("api-generation-job-detail", args=[job.pk])).content.decode(),
        admin_api.get(reverse("api-generation-backends")).content.decode(),
        json.dumps(list(Paraphrase.objects.values_list("provenance", flat=True))),
        json.dumps(list(GenerationJob.objects.values_list("config", flat=True))),
        caplog.text,
    ]
    assert server.base_url in seen[1]  # the job page shows which endpoint it used ...
    assert all(KEY not in text and "sk-settings-key" not in text for text in seen)  # ... never a key
    assert job.api_key == ""  # and the finished job keeps no key


def test_a_job_s_key_is_cleared_whenever_it_ends_and_a_retry_is_given_one_again(
    endpoint_settings, small_collection, admin_client, admin_api, django_capture_on_commit_callbacks
):
    one_turn = {"turns": ["1_2"]}
    # The server fails the first three requests (every attempt of the first run), then answers.
    with openai_server(script=[Step(500, "down")] * 3) as server:
        _configure(endpoint_settings, server)
        failed = _run(
            services.generation_job_create(
                collection=small_collection, config=ALL_OPENAI, selection=one_turn, api_key=KEY
            )
        )
        assert failed.status == "failed" and failed.api_key == ""
        # Cancelled, and failed by the sweeper after repeated worker loss: no key either.
        queued = services.generation_job_create(collection=small_collection, config=ALL_OPENAI, api_key=KEY)
        assert queued.api_key == KEY
        services.generation_job_cancel(job=queued)
        queued.refresh_from_db()
        assert queued.status == "cancelled" and queued.api_key == ""
        lost = services.generation_job_create(collection=small_collection, config=ALL_OPENAI, api_key=KEY)
        services.generation_job_fail(job_id=lost.pk, reason="worker lost 3 times")
        lost.refresh_from_db()
        assert lost.status == "failed" and lost.api_key == ""
        # The job page asks for a key for the retry; the one given reaches the server; the job ends without it.
        page = admin_client.get(reverse("generation-job-detail", args=[failed.pk])).content.decode()
        assert 'name="api_key"' in page and "cleared when it ended" in page
        with django_capture_on_commit_callbacks(execute=True):
            retried = admin_api.post(
                reverse("api-generation-job-retry", args=[failed.pk]), {"api_key": "sk-retry-key"}, format="json"
            )
        assert retried.status_code == 200 and "sk-retry-key" not in retried.content.decode()
    failed.refresh_from_db()
    assert failed.status == "succeeded" and failed.api_key == ""
    keys = [r["headers"]["Authorization"] for r in server.requests]
    assert keys[:3] == [f"Bearer {KEY}"] * 3 and set(keys[3:]) == {"Bearer sk-retry-key"}


def test_the_backends_page_says_what_to_set_until_an_endpoint_is_configured(endpoint_settings, admin_client):
    page = admin_client.get(reverse("generation-backends")).content.decode()
    assert "not configured: set ECAST_OPENAI_BASE_URL" in page and "ECAST_OPENAI_MODEL" in page
    endpoint_settings.ECAST_OPENAI_BASE_URL = "http://vllm.internal:8000/v1"
    endpoint_settings.ECAST_OPENAI_MODEL = "Qwen/Qwen2.5-7B-Instruct"
    endpoint_settings.ECAST_OPENAI_API_KEY = KEY
    page = admin_client.get(reverse("generation-backends")).content.decode()
    assert "http://vllm.internal:8000/v1, model Qwen/Qwen2.5-7B-Instruct; an API key is set" in page
    assert KEY not in page


@pytest.mark.slow
def test_the_shipped_smollm_served_over_http_generates_a_turn(endpoint_settings, small_collection):
    endpoint_settings.ECAST_OPENAI_TIMEOUT = 300
    with openai_server(reply=smollm_reply) as server:
        _configure(endpoint_settings, server, model="HuggingFaceTB/SmolLM2-135M-Instruct")
        config = {**ALL_OPENAI, "cqr": {"backend": "rule"}, "cr": {"backend": "anaphora"}}
        job = _run(
            services.generation_job_create(collection=small_collection, config=config, selection={"turns": ["1_1"]})
        )
    gt = job.turns.get()
    assert gt.status == "done", gt.error
    assert gt.details["generated"] == 2 and len(server.requests) >= 1
