"""Fine-tune pages: start a job (admins), follow it with the one poller, cancel it, and the trained adapters."""

from __future__ import annotations

import json

from django import forms
from django.contrib import messages
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from ecast.core.fields import IdChoiceField
from ecast.core.jobs import job_health
from ecast.core.pages import refusal_shown
from ecast.core.permissions import admin_required
from ecast.generation import finetune
from ecast.models import Adapter, Collection, FinetuneJob
from ecast.pipeline import lora


class FinetuneForm(forms.Form):
    collection = IdChoiceField(queryset=Collection.objects.all(), help_text="Its approved pairs are the training data.")
    stage = forms.ChoiceField(choices=FinetuneJob.Stage.choices, initial=FinetuneJob.Stage.PARAPHRASE)
    epochs = forms.IntegerField(min_value=1, max_value=20, initial=lora.TrainParams.epochs)
    learning_rate = forms.FloatField(min_value=1e-6, max_value=1.0, initial=lora.TrainParams.learning_rate)
    rank = forms.IntegerField(min_value=1, max_value=64, initial=lora.TrainParams.rank, help_text="LoRA rank r")
    batch_size = forms.IntegerField(min_value=1, max_value=64, initial=lora.TrainParams.batch_size)
    seed = forms.IntegerField(min_value=0, initial=0)
    exclude_topics = forms.CharField(
        required=False,
        help_text="Conversations (topic ids, comma or space separated) kept out of training, e.g. a test split.",
    )

    def job_kwargs(self) -> dict[str, object]:
        d = self.cleaned_data
        return {
            "collection": d["collection"],
            "stage": d["stage"],
            "params": {k: d[k] for k in ("epochs", "learning_rate", "rank", "batch_size", "seed")},
            "exclude_topics": [t for t in (d.get("exclude_topics") or "").replace(",", " ").split() if t],
        }


@admin_required
def finetune_list(request: HttpRequest) -> HttpResponse:
    """The jobs, the adapters they trained (each a generation backend), and the form that starts one."""
    form = FinetuneForm(request.POST or None, initial={"collection": request.GET.get("collection")})
    if request.method == "POST" and form.is_valid():
        with refusal_shown(form) as refused:
            job = finetune.finetune_job_create(**form.job_kwargs(), created_by=request.user)  # type: ignore[arg-type]
        if not refused:
            messages.success(request, f"Fine-tune job {job.pk} queued: {job.message}.")
            return redirect("generation-finetune-detail", pk=job.pk)
    jobs = Paginator(FinetuneJob.objects.select_related("collection"), 25).get_page(request.GET.get("page"))
    adapters = Adapter.objects.select_related("collection", "job").defer("weights")[:100]
    return render(request, "ecast/generation/finetune_list.html", {"form": form, "page": jobs, "adapters": adapters})


@admin_required
def finetune_detail(request: HttpRequest, pk: int) -> HttpResponse:
    """Progress (polled live), losses before and after each epoch, and the adapter it registered."""
    job = get_object_or_404(FinetuneJob.objects.select_related("collection"), pk=pk)
    adapter = Adapter.objects.filter(job=job).defer("weights").first()
    context = {
        "job": job,
        "adapter": adapter,
        "health": job_health(finetune.KIND, job.pk),
        "active": job.is_active,
        "params_json": json.dumps(job.params, indent=2),
        "metrics": job.metrics,
    }
    return render(request, "ecast/generation/finetune_detail.html", context)


@require_POST
@admin_required
def finetune_cancel(request: HttpRequest, pk: int) -> HttpResponse:
    job = get_object_or_404(FinetuneJob, pk=pk)
    with refusal_shown(request) as refused:  # the job had already ended
        finetune.finetune_cancel(job=job)
    if not refused:
        messages.success(request, f"Fine-tune job {job.pk} cancelled; no adapter is stored.")
    return redirect("generation-finetune-detail", pk=pk)
