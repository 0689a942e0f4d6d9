"""Response-LLM pages: an admin starts a job from a task's form, follows it on a page with the one poller, cancels
it; every other role is refused. The agreement report shows the LLM set against a human one."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from evaluation.models import NuggetAssignment, ResponseLabelSet
from judging.llm import response_services
from judging.models import ResponseLlmJob
from tests.judging.llm.response_helpers import response_collection

pytestmark = pytest.mark.django_db
Task = ResponseLlmJob.Task


@pytest.fixture
def setup():
    return response_collection()


@pytest.fixture
def queued(setup, tiny_causal):
    coll, _, runs, bank = setup
    return response_services.response_job_create(
        task=Task.ASSIGN_NUGGETS, collection=coll, model=str(tiny_causal), bank=bank, runs=[runs["sysA"]], queue=False
    )


def test_an_admin_starts_a_baseline_from_its_form_and_follows_it(
    setup, admin_client, django_capture_on_commit_callbacks
):
    coll, *_ = setup
    page = admin_client.get(reverse("response-llm-jobs")).content.decode()
    for task in Task.values:
        assert f'id="form-{task}"' in page
    with django_capture_on_commit_callbacks(execute=True):
        resp = admin_client.post(reverse("response-llm-jobs"), {"task": "baseline", "collection": coll.pk, "k": 2})
    job = ResponseLlmJob.objects.get()
    assert resp.status_code == 302 and resp["Location"] == reverse("response-llm-job", args=[job.pk]) + "#top"
    job.refresh_from_db()
    assert job.status == "succeeded" and job.run.responses.count() == 6
    page = admin_client.get(reverse("response-llm-job", args=[job.pk])).content.decode()
    assert f'data-job-progress="{reverse("job-progress", args=["response_llm", job.pk])}"' in page
    assert "ecast-baseline-bm25-top2" in page
    progress = admin_client.get(reverse("job-progress", args=["response_llm", job.pk])).json()
    assert progress["status"] == "succeeded" and progress["percent"] == 100.0


def test_a_refused_form_shows_why_and_starts_nothing(setup, admin_client):
    _, _, runs, _ = setup
    resp = admin_client.post(reverse("response-llm-jobs"), {"task": "assign_nuggets", "runs": [runs["sysA"].pk]})
    assert resp.status_code == 200 and "bank: a nugget bank of this collection" in resp.content.decode()
    assert not ResponseLlmJob.objects.exists() and not ResponseLabelSet.objects.exists()


def test_an_admin_cancels_a_queued_job(queued, admin_client):
    page = admin_client.get(reverse("response-llm-job", args=[queued.pk])).content.decode()
    assert 'id="cancel-job"' in page
    resp = admin_client.post(reverse("response-llm-job-cancel", args=[queued.pk]))
    assert resp.status_code == 302
    queued.refresh_from_db()
    assert queued.status == "cancelled"
    assert 'id="cancel-job"' not in admin_client.get(reverse("response-llm-job", args=[queued.pk])).content.decode()


def test_raters_and_assessors_are_refused_and_anonymous_users_sent_to_log_in(queued, client, rater, assessor):
    pages = [
        ("get", reverse("response-llm-jobs")),
        ("post", reverse("response-llm-jobs")),
        ("get", reverse("response-llm-job", args=[queued.pk])),
        ("post", reverse("response-llm-job-cancel", args=[queued.pk])),
        ("get", reverse("job-progress", args=["response_llm", queued.pk])),
    ]
    for user in (rater, assessor):
        client.force_login(user)
        for method, url in pages:
            assert getattr(client, method)(url).status_code == 403, (user.username, url)
    client.logout()
    for method, url in pages:
        resp = getattr(client, method)(url)
        assert resp.status_code == 302 and "/accounts/login/" in resp["Location"], url
    queued.refresh_from_db()
    assert queued.status == "queued" and ResponseLlmJob.objects.count() == 1


def test_the_agreement_report_compares_the_llm_set_with_a_human_one(setup, admin_client, tiny_causal):
    coll, _, runs, bank = setup
    job = response_services.response_job_create(
        task=Task.ASSIGN_NUGGETS,
        collection=coll,
        model=str(tiny_causal),
        bank=bank,
        runs=list(runs.values()),
        queue=False,
    )
    response_services.response_job_run(job_id=job.pk)
    human = ResponseLabelSet.objects.create(collection=coll, name="NIST", kind="nuggets", source="imported", bank=bank)
    # The human labels: the LLM's own, one flipped, the first three assessed blind and the rest post-edited.
    llm = list(NuggetAssignment.objects.filter(label_set=job.label_set).order_by("id"))
    flip = {"support": "not_support", "not_support": "support", "partial_support": "support"}
    for i, a in enumerate(llm):
        NuggetAssignment.objects.create(
            label_set=human,
            response=a.response,
            nugget=a.nugget,
            label=flip[a.label] if i == 0 else a.label,
            condition="blind" if i < 3 else "post_edit",
        )
    page = admin_client.get(reverse("evaluation-agreement"), {"collection": coll.pk}).content.decode()
    assert 'id="response-agreement"' in page and "NIST" in page and job.label_set.name in page
    assert '<strong id="response-items">5</strong>' in page and '<strong id="response-exact">80.0%</strong>' in page
    assert "blind (no LLM label shown)" in page and "post-editing an LLM label" in page
    assert 'id="response-taus"' in page and "V_strict" in page
    via_job = admin_client.get(reverse("evaluation-agreement"), {"rb": job.label_set_id}).content.decode()
    assert '<strong id="response-items">5</strong>' in via_job


def test_the_agreement_report_says_what_is_missing_without_two_sets(setup, admin_client):
    coll, *_ = setup
    page = admin_client.get(reverse("evaluation-agreement"), {"collection": coll.pk}).content.decode()
    assert 'id="response-agreement-empty"' in page and "has 0 response label set(s)" in page


def test_the_baseline_form_offers_its_backends_and_the_endpoint_writes_the_answers(
    setup, admin_client, django_capture_on_commit_callbacks, settings, fresh_cache
):
    from ecast.models import Turn
    from tests.openai_helpers import endpoint_settings_reset, openai_server

    endpoint_settings_reset(settings, retries=1, timeout=2.0)
    coll, *_ = setup
    Turn.objects.filter(collection=coll, turn_id="2_1").update(
        raw_utterance="Why are bees dying?", manual_rewrite="Why are bees dying?"
    )
    page = admin_client.get(reverse("response-llm-jobs")).content.decode()
    for value in ("extractive", "smollm", "openai"):
        assert f'name="backend" value="{value}"' in page
    # Extractive is chosen unless the admin picks a model (SmolLM2 is slow here and cites little).
    assert re.search(r'<input type="radio" name="backend" value="extractive"[^>]*checked', page)
    with openai_server(lambda m, b: ["Neonicotinoids harm bees [1]."]) as server:
        with django_capture_on_commit_callbacks(execute=True):
            resp = admin_client.post(
                reverse("response-llm-jobs"),
                {
                    "task": "baseline",
                    "collection": coll.pk,
                    "backend": "openai",
                    "base_url": server.base_url,
                    "served_model": "m1",
                    "turn_ids": "2_1",
                },
            )
    assert resp.status_code == 302
    job = ResponseLlmJob.objects.get()
    job.refresh_from_db()
    assert (job.status, job.model, job.turns) == ("succeeded", "openai", ["2_1"])
    response = job.run.responses.get()
    assert response.text == "Neonicotinoids harm bees." and response.sentences.get().citations == [
        response.references[0]
    ]
    page = admin_client.get(reverse("response-llm-job", args=[job.pk])).content.decode()
    assert "ecast-baseline-bm25-top3-m1" in page and "ecast-baseline-rag/v1" in page


def test_an_llm_form_labels_only_the_turns_or_topics_chosen_and_names_unknown_ones(setup, admin_client, tiny_causal):
    coll, _, runs, bank = setup
    form = {"task": "assign_nuggets", "bank": bank.pk, "runs": [runs["sysA"].pk], "model": str(tiny_causal)}
    resp = admin_client.post(reverse("response-llm-jobs"), {**form, "turn_ids": "1_1, 9_9 7"})
    assert resp.status_code == 200 and "turns: LlmMini has no turn or topic 9_9, 7" in resp.content.decode()
    assert not ResponseLlmJob.objects.exists() and not ResponseLabelSet.objects.exists()
    resp = admin_client.post(reverse("response-llm-jobs"), {**form, "turn_ids": "2"})
    job = ResponseLlmJob.objects.get()
    # Topic 2: its turns; sysA answers 2_1 only, and the bank has one nugget for it.
    assert resp.status_code == 302 and job.turns == ["2_1", "2_2", "2_3"] and job.progress_total == 1
