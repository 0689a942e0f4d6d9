"""LLM pre-judgment pages and API: admins start and follow jobs; everyone else is refused."""

from __future__ import annotations

import csv
import io

import pytest
from django.urls import reverse

from judging.models import LlmJudgeJob
from tests.judging.llm.helpers import judged_collection

pytestmark = pytest.mark.django_db


@pytest.fixture
def setup():
    return judged_collection()


@pytest.fixture
def job(setup, tiny_causal, admin_api, django_capture_on_commit_callbacks):
    _, original, _ = setup
    with django_capture_on_commit_callbacks(execute=True):
        resp = admin_api.post(
            reverse("api-llm-jobs"),
            {"source_version": original.pk, "model": str(tiny_causal), "params": {"batch_size": 4}},
            format="json",
        )
    assert resp.status_code == 202, resp.json()
    return LlmJudgeJob.objects.get(pk=resp.json()["id"])


def endpoints(job):
    pages = [
        ("get", reverse("llm-jobs")),
        ("post", reverse("llm-jobs")),
        ("get", reverse("llm-job", args=[job.pk])),
        ("get", reverse("job-progress", args=["llm_judge", job.pk])),
        ("get", reverse("llm-job-labels-csv", args=[job.pk])),
    ]
    apis = [
        ("get", reverse("api-llm-jobs")),
        ("post", reverse("api-llm-jobs")),
        ("get", reverse("api-llm-job", args=[job.pk])),
        ("get", reverse("api-llm-job-labels", args=[job.pk])),
    ]
    return pages, apis


def test_the_api_starts_a_job_and_reports_its_version_rate_and_agreement_link(job, admin_api):
    data = admin_api.get(reverse("api-llm-job", args=[job.pk])).json()
    assert data["status"] == "succeeded" and (data["done"], data["total"]) == (7, 7)
    assert data["target_version_name"].startswith("llm: ")
    assert data["pairs_per_second"] > 0
    assert data["agreement_url"] == (
        f"{reverse('evaluation-agreement')}?a={job.source_version_id}&b={job.target_version_id}"
    )
    assert data["provenance"]["prompt_structure"].startswith("UMBRELA")
    labels = admin_api.get(reverse("api-llm-job-labels", args=[job.pk])).json()
    assert len(labels) == 7 and all(lb["prompt"].endswith("##final score: ") for lb in labels)
    assert {lb["passage_id"]: lb["human_grade"] for lb in labels}["d4"] == 3


def test_the_api_refuses_a_bad_request_with_the_reason(setup, admin_api):
    _, original, _ = setup
    resp = admin_api.post(
        reverse("api-llm-jobs"), {"source_version": original.pk, "model": "org/some-hub-model"}, format="json"
    )
    assert resp.status_code == 400 and "not 'smollm'" in resp.json()["detail"]
    assert not LlmJudgeJob.objects.exists()


def test_the_jobs_page_says_what_to_do_when_empty_and_starts_a_job_from_the_form(
    setup, tiny_causal, admin_client, django_capture_on_commit_callbacks
):
    _, original, _ = setup
    page = admin_client.get(reverse("llm-jobs")).content.decode()
    assert "No LLM pre-judgment job yet" in page and "LlmMini / original" in page
    with django_capture_on_commit_callbacks(execute=True):
        resp = admin_client.post(
            reverse("llm-jobs"),
            {"source_version": original.pk, "model": str(tiny_causal), "batch_size": 2, "max_passage_tokens": 64},
        )
    job = LlmJudgeJob.objects.get()
    assert resp.status_code == 302 and resp["Location"] == reverse("llm-job", args=[job.pk]) + "#top"
    listing = admin_client.get(reverse("llm-jobs")).content.decode()
    assert f"#{job.pk}" in listing and "7/7" in listing


def test_the_job_page_shows_progress_grades_labels_and_the_one_click_agreement_link(job, admin_client):
    page = admin_client.get(reverse("llm-job", args=[job.pk])).content.decode()
    assert "7 / 7 pairs labelled" in page
    agreement = f"{reverse('evaluation-agreement')}?a={job.source_version_id}&amp;b={job.target_version_id}"
    assert f'id="agreement-link" href="{agreement}"' in page
    assert "UMBRELA" in page and "##final score" in page
    report = admin_client.get(agreement.replace("&amp;", "&")).content.decode()
    assert job.target_version.name in report and "Per-grade precision and recall" in report


def test_the_progress_json_and_the_labels_csv(job, admin_client):
    progress = admin_client.get(reverse("job-progress", args=["llm_judge", job.pk])).json()
    assert progress["status"] == "succeeded" and progress["percent"] == 100.0 and "last_heartbeat" in progress
    body = admin_client.get(reverse("llm-job-labels-csv", args=[job.pk])).content.decode()
    rows = [r for r in csv.reader(io.StringIO(body)) if r and not r[0].startswith("#")]
    assert rows[0][:4] == ["turn_id", "passage_id", "llm_grade", "human_grade"]
    assert len(rows) == 8 and all(r[-1].startswith("<|im_start|>system") for r in rows[1:])


def test_raters_and_assessors_are_refused_and_anonymous_users_sent_to_log_in(
    job, client, rater, assessor, rater_api, assessor_api, anon_api
):
    pages, apis = endpoints(job)
    for user in (rater, assessor):
        client.force_login(user)
        for method, url in pages:
            assert getattr(client, method)(url).status_code == 403, (user.username, url)
    client.logout()
    for method, url in pages:
        resp = getattr(client, method)(url)
        assert resp.status_code == 302 and "/accounts/login/" in resp["Location"], url
    for api in (rater_api, assessor_api):
        for method, url in apis:
            assert getattr(api, method)(url, {}, format="json").status_code == 403, url
    for method, url in apis:
        resp = getattr(anon_api, method)(url, {}, format="json")
        assert resp.status_code == 401, url
    assert LlmJudgeJob.objects.count() == 1  # nobody but the admin started one


def test_admins_reach_every_endpoint(job, admin_client, admin_api):
    pages, apis = endpoints(job)
    for method, url in pages:
        if method == "get":
            assert admin_client.get(url).status_code == 200, url
    for method, url in apis:
        if method == "get":
            assert admin_api.get(url).status_code == 200, url
