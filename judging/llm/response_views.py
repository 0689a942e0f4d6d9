"""Response-LLM job pages (admins): the jobs and a form per task, a job's live progress and what it wrote, cancel."""

from __future__ import annotations

import json

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from ecast.core.jobs import job_health
from ecast.core.pages import refusal_shown
from ecast.core.permissions import admin_required
from judging.llm import response_prompts as rp
from judging.llm import response_selectors as sel
from judging.llm import response_services as services
from judging.llm import selectors as llm_sel
from judging.llm.response_forms import ResponseJobForm
from judging.models import ResponseLlmJob

TEMPLATES = {
    ResponseLlmJob.Task.CREATE_NUGGETS: rp.CREATE_TEMPLATE + "\n\n(local model: " + rp.IMPORTANCE_TEMPLATE + ")",
    ResponseLlmJob.Task.ASSIGN_NUGGETS: rp.ASSIGN_TEMPLATE,
    ResponseLlmJob.Task.CITATION_SUPPORT: rp.CITE_TEMPLATE,
}


@admin_required
def response_jobs(request: HttpRequest) -> HttpResponse:
    """The jobs with their progress, and one form per task."""
    posted = request.POST.get("task") if request.method == "POST" else None
    forms = {
        # Ids per form (id_baseline_k …): the page holds one form per task, and a label must name its own field.
        task: ResponseJobForm(request.POST if task == posted else None, initial={"task": task}, auto_id=f"id_{task}_%s")
        for task in ResponseLlmJob.Task.values
    }
    if posted in forms and forms[posted].is_valid():
        form = forms[posted]
        with refusal_shown(form) as refused:
            job = services.response_job_create(**form.job_kwargs(), created_by=request.user)
        if not refused:
            messages.success(request, f"Job {job.pk} queued: {job.progress_total} item(s).")
            return redirect(reverse("response-llm-job", args=[job.pk]) + "#top")
    rows = [(job, llm_sel.llm_job_progress(job=job)) for job in sel.response_job_list()[:100]]  # type: ignore[arg-type]
    return render(request, "judging/llm/response_jobs.html", {"forms": forms, "rows": rows, "posted": posted})


@admin_required
def response_job(request: HttpRequest, pk: int) -> HttpResponse:
    job = get_object_or_404(sel.response_job_list(), pk=pk)
    return render(
        request,
        "judging/llm/response_job.html",
        {
            "job": job,
            "progress": llm_sel.llm_job_progress(job=job),  # type: ignore[arg-type]
            "active": job.is_active,
            "health": job_health(services.KIND, job.pk),
            "counts": sel.response_job_label_counts(job=job),
            "rows": sel.response_job_rows(job=job),
            "provenance_json": json.dumps(job.provenance, indent=2),
            "prompt_template": TEMPLATES.get(ResponseLlmJob.Task(job.task), ""),
        },
    )


@admin_required
@require_POST
def response_job_cancel(request: HttpRequest, pk: int) -> HttpResponse:
    job = get_object_or_404(ResponseLlmJob, pk=pk)
    if services.response_job_cancel(job_id=job.pk):
        messages.success(request, f"Job {job.pk} cancelled; the batches stored so far stay.")
    else:
        messages.info(request, f"Job {job.pk} had already ended.")
    return redirect("response-llm-job", pk=job.pk)
