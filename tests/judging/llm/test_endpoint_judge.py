"""The LLM judge on an OpenAI-compatible endpoint served by a real HTTP server: grades read from the replies,
provenance with the endpoint and model, a failing endpoint fails the job with the reason (committed batches stay, the
failed one writes nothing), and the per-job key in no page, API answer, provenance or log."""

from __future__ import annotations

import json
import logging

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from evaluation.models import Qrel
from judging.llm import endpoint_judge, services
from judging.models import LlmJudgeJob, LlmLabel
from tests.judging.llm.helpers import TEXTS, judged_collection
from tests.openai_helpers import endpoint_settings_reset, openai_server, smollm_reply

pytestmark = pytest.mark.django_db

KEY = "sk-judge-91c2-never-shown"


def graded(messages, body):
    """Bees passages get 3, the rest 1; the format a model follows."""
    passage = messages[-1]["content"].split("Passage: ", 1)[1]
    return [f"##final score: {3 if 'bee' in passage.lower() else 1}"]


@pytest.fixture
def endpoint_settings(settings, fresh_cache):
    return endpoint_settings_reset(settings, retries=1, timeout=2.0)


@pytest.fixture
def start(django_capture_on_commit_callbacks):
    def run(**kw):
        coll, original, _ = judged_collection()
        with django_capture_on_commit_callbacks(execute=True):
            job = services.llm_judge_job_create(collection=coll, source_version=original, model="openai", **kw)
        job.refresh_from_db()
        return job

    return run


@pytest.mark.parametrize(
    ("reply", "grade"),
    [
        ("##final score: 3", 3),
        ("M: 2, T: 4\n##final score: 1", 1),
        ("**Final score:** 4", 4),
        ("I would say 2.", 2),
        ("The score is 3.5 or so", None),
        ("Not relevant at all.", None),
    ],
)
def test_the_grade_is_read_from_the_final_score_else_the_first_lone_digit(reply, grade):
    assert endpoint_judge.grade_of(reply) == grade


def test_an_endpoint_job_labels_every_pair_with_the_grade_its_replies_give(endpoint_settings, start):
    with openai_server(reply=graded) as server:
        endpoint_settings.ECAST_OPENAI_BASE_URL = server.base_url
        endpoint_settings.ECAST_OPENAI_MODEL = "Qwen/Qwen2.5-7B-Instruct"
        job = start(params={"batch_size": 3})
    assert (job.status, job.progress_done, job.progress_total) == ("succeeded", 7, 7)
    assert job.target_version.name == "llm: Qwen/Qwen2.5-7B-Instruct"
    grades = dict(Qrel.objects.filter(version=job.target_version).values_list("passage_id", "grade"))
    assert grades == {pid: 3 if "bee" in text.lower() else 1 for pid, text in TEXTS.items()}
    label = LlmLabel.objects.filter(job=job).first()
    assert label.digit_mass == 1.0 and sum(label.probabilities) == 1.0
    assert json.loads(label.prompt)[0]["role"] == "system"
    prov = label.provenance
    assert prov["backend"] == "openai" and prov["base_url"] == server.base_url
    assert prov["model"] == "Qwen/Qwen2.5-7B-Instruct" and prov["decision"] == endpoint_judge.DECISION
    assert {r["body"]["temperature"] for r in server.requests} == {0.0} and len(server.requests) == 7


def test_a_reply_without_a_grade_is_the_unusable_label(endpoint_settings, start):
    with openai_server(reply=lambda m, b: ["It depends on the question."]) as server:
        job = start(params={"base_url": server.base_url, "served_model": "m"}, limit=2)
    labels = list(LlmLabel.objects.filter(job=job))
    assert job.status == "succeeded" and len(labels) == 2
    assert all(la.grade == 0 and la.digit_mass == 0.0 and la.probabilities == [0.2] * 5 for la in labels)


def test_an_endpoint_failing_every_attempt_fails_the_job_and_keeps_only_whole_batches(endpoint_settings, start):
    answered = []

    def fails_after_three(messages, body):
        if len(answered) >= 3:
            raise RuntimeError("the model server ran out of memory")
        answered.append(1)
        return ["##final score: 2"]

    with openai_server(reply=fails_after_three) as server:
        job = start(params={"base_url": server.base_url, "served_model": "m", "batch_size": 3})
    assert job.status == "failed" and "HTTP 500: the model server ran out of memory" in job.error
    assert "failed 2 attempt(s)" in job.error
    assert LlmLabel.objects.filter(job=job).count() == 3  # the first batch; nothing of the second
    assert Qrel.objects.filter(version=job.target_version).count() == 3


def test_an_endpoint_job_without_a_base_url_is_refused_and_writes_nothing(endpoint_settings, start):
    with pytest.raises(ValidationError, match="needs a base URL"):
        start()
    assert not LlmJudgeJob.objects.exists()


def test_the_per_job_key_reaches_the_server_and_no_page_api_or_log(
    endpoint_settings, admin_client, admin_api, caplog, django_capture_on_commit_callbacks
):
    caplog.set_level(logging.DEBUG)
    coll, original, _ = judged_collection()
    with openai_server(reply=graded) as server:
        data = {
            "source_version": original.pk,
            "model": "openai",
            "base_url": server.base_url,
            "served_model": "served",
            "api_key": KEY,
            "batch_size": 4,
            "max_passage_tokens": 64,
        }
        with django_capture_on_commit_callbacks(execute=True):
            response = admin_client.post(reverse("llm-jobs"), data)
        job = LlmJudgeJob.objects.get()
    assert response.status_code == 302 and job.status == "succeeded", job.error
    assert {r["headers"]["Authorization"] for r in server.requests} == {f"Bearer {KEY}"}
    seen = [
        admin_client.get(reverse("llm-jobs")).content.decode(),
        admin_client.get(reverse("llm-job", args=[job.pk])).content.decode(),
        admin_api.get(reverse("api-llm-jobs")).content.decode(),
        admin_api.get(reverse("api-llm-job", args=[job.pk])).content.decode(),
        json.dumps(list(LlmLabel.objects.values_list("provenance", "prompt"))),
        caplog.text,
    ]
    assert server.base_url in seen[1]
    assert all(KEY not in text for text in seen)
    assert job.api_key == ""  # kept only while the job could use it


@pytest.mark.slow
def test_the_shipped_smollm_served_over_http_labels_pairs(endpoint_settings, start):
    endpoint_settings.ECAST_OPENAI_TIMEOUT = 300
    with openai_server(reply=smollm_reply) as server:
        job = start(
            params={"base_url": server.base_url, "served_model": "HuggingFaceTB/SmolLM2-135M-Instruct"}, limit=2
        )
    labels = list(LlmLabel.objects.filter(job=job))
    assert job.status == "succeeded" and len(labels) == 2 and len(server.requests) == 2
    assert all(la.grade in (0, 1, 2, 3, 4) and la.digit_mass in (0.0, 1.0) for la in labels)
