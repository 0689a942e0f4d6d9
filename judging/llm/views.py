"""LLM pre-judgment pages (admins): jobs and the form that starts one, a job's live progress, its labels as CSV."""

from __future__ import annotations

import json

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse

from ecast.core.csvfiles import csv_response
from ecast.core.jobs import job_health
from ecast.core.pages import refusal_shown
from ecast.core.permissions import admin_required
from judging.llm import judge, services
from judging.llm import selectors as sel
from judging.llm.forms import LlmJudgeJobForm

LABELS_SHOWN = 50


@admin_required
def llm_jobs(request: HttpRequest) -> HttpResponse:
    """The jobs with their progress, and the form that starts one."""
    form = LlmJudgeJobForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        with refusal_shown(form) as refused:
            job = services.llm_judge_job_create(**form.job_kwargs(), created_by=request.user)
        if not refused:
            messages.success(request, f"Job {job.pk} queued: {job.progress_total} pairs into “{job.target_version}”.")
            # "#top": the form posts to "#llm-job-form", and a browser carries that fragment over a redirect that
            # names none, leaving the job page scrolled to an anchor it does not have.
            return redirect(reverse("llm-job", args=[job.pk]) + "#top")
    rows = [(job, sel.llm_job_progress(job=job)) for job in sel.llm_job_list()[:100]]
    return render(request, "judging/llm/jobs.html", {"form": form, "rows": rows})


@admin_required
def llm_job(request: HttpRequest, pk: int) -> HttpResponse:
    """A job: progress (polled live), provenance, grade distribution, the first labels, the agreement link."""
    job = get_object_or_404(sel.llm_job_list(), pk=pk)
    return render(
        request,
        "judging/llm/job.html",
        {
            "job": job,
            "progress": sel.llm_job_progress(job=job),
            "active": job.is_active,
            "health": job_health(services.KIND, job.pk),
            "grades": sel.llm_job_grade_counts(job=job),
            "labels": sel.llm_job_labels(job=job, limit=LABELS_SHOWN),
            "labels_shown": LABELS_SHOWN,
            "agreement_url": sel.agreement_url(job=job),
            "provenance_json": json.dumps(job.provenance, indent=2),
            "prompt_template": judge.USER_TEMPLATE,
        },
    )


@admin_required
def llm_job_labels_csv(request: HttpRequest, pk: int) -> HttpResponse:
    """Every label with the human grade, the grade probabilities, the prompt and the provenance."""
    job = get_object_or_404(sel.llm_job_list(), pk=pk)
    rows = sel.llm_job_labels(job=job)
    return csv_response(
        f"llm-judge-{job.pk}-labels.csv",
        ["turn_id", "passage_id", "llm_grade", "human_grade", "p0", "p1", "p2", "p3", "p4", "digit_mass", "prompt"],
        [
            [r["turn_id"], r["passage_id"], r["grade"], r["human_grade"], *[round(p, 6) for p in r["probabilities"]]]
            + [round(r["digit_mass"], 6), r["prompt"]]
            for r in rows
        ],
        [
            f"collection={job.collection.name}",
            f"human version={job.source_version.name}",
            f"llm version={job.target_version.name if job.target_version else '(deleted)'}",
            f"provenance={json.dumps(job.provenance, sort_keys=True)}",
        ],
    )
