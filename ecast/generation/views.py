"""Generation pages: jobs (create, progress, cancel, retry), backend status, BLEU reports, test sets."""

from __future__ import annotations

import json

from django.contrib import messages
from django.core.paginator import Paginator
from django.db.models import Count
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from ecast.core.csvfiles import csv_response
from ecast.core.jobs import job_health
from ecast.core.openai_endpoint import endpoint_status
from ecast.core.pages import refusal_shown
from ecast.core.permissions import admin_required
from ecast.generation import reports, selectors, services, testsets
from ecast.generation.forms import GenerationJobForm, TestSetForm
from ecast.models import Collection, GenerationJob, GenerationTurn, Paraphrase, TestSet
from ecast.pipeline.backends import status_table


@admin_required
def job_list(request: HttpRequest) -> HttpResponse:
    """Jobs with their progress, and the form that starts a new one."""
    form = GenerationJobForm(request.POST or None, initial={"collection": request.GET.get("collection")})
    if request.method == "POST" and form.is_valid():
        with refusal_shown(form) as refused:
            job = services.generation_job_create(**form.job_kwargs(), user=request.user)
        if not refused:
            services.generation_job_start(job=job)
            n = job.progress_total
            messages.success(request, f"Job {job.pk} queued: {n} turn{'' if n == 1 else 's'}.")
            return redirect("generation-job-detail", pk=job.pk)
    page = Paginator(selectors.generation_job_list(), 25).get_page(request.GET.get("page"))
    rows = [(job, selectors.generation_job_progress(job=job)) for job in page]
    return render(request, "ecast/generation/job_list.html", {"form": form, "page": page, "rows": rows})


@admin_required
def job_detail(request: HttpRequest, pk: int) -> HttpResponse:
    """Progress (polled live), configuration, per-turn status and the generated pairs linked to turn pages."""
    job = get_object_or_404(GenerationJob.objects.select_related("collection"), pk=pk)
    status = request.GET.get("status") or ""
    turns = job.turns.select_related("turn").order_by("position")
    if status:
        turns = turns.filter(status=status)
    page = Paginator(turns, 50).get_page(request.GET.get("page"))
    paras = Paraphrase.objects.filter(
        provenance__job=job.pk, kind="manual", origin="generated", turn__in=[gt.turn for gt in page]
    ).select_related("pair")
    by_turn: dict[int, list[Paraphrase]] = {}
    for p in paras:
        by_turn.setdefault(p.turn_id, []).append(p)
    rows = [
        (
            gt,
            by_turn.get(gt.turn_id, []),
            selectors.generation_drop_rows(selectors.generation_turn_drops(details=gt.details or {})),
            selectors.generation_turn_dropped_grouped(details=gt.details or {}),
        )
        for gt in page
    ]
    return render(
        request,
        "ecast/generation/job_detail.html",
        {
            "job": job,
            "progress": selectors.generation_job_progress(job=job),
            "active": job.is_active,
            "health": job_health(services.KIND, job.pk),
            "drops": selectors.generation_job_drops(job=job),
            "page": page,
            "rows": rows,
            "status": status,
            "statuses": GenerationTurn.Status.choices,
            "config_json": json.dumps(job.config, indent=2),
            "uses_endpoint": any(
                (job.config.get(stage) or {}).get("backend") == "openai" for stage in ("cqr", "paraphrase", "cr")
            ),
            "querystring": f"status={status}" if status else "",
        },
    )


def _job_action(request: HttpRequest, pk: int, action: str) -> HttpResponse:
    job = get_object_or_404(GenerationJob, pk=pk)
    with refusal_shown(request) as refused:
        if action == "retry":
            services.generation_job_retry(job=job, api_key=str(request.POST.get("api_key") or "")[:500])
        else:
            getattr(services, f"generation_job_{action}")(job=job)
    if not refused:
        messages.success(
            request,
            {
                "cancel": "Job cancelled.",
                "retry": "Failed turns queued again.",
                "resume": "Pending turns dispatched again.",
            }[action],
        )
    return redirect("generation-job-detail", pk=pk)


@require_POST
@admin_required
def job_cancel(request: HttpRequest, pk: int) -> HttpResponse:
    return _job_action(request, pk, "cancel")


@require_POST
@admin_required
def job_retry(request: HttpRequest, pk: int) -> HttpResponse:
    return _job_action(request, pk, "retry")


@require_POST
@admin_required
def job_resume(request: HttpRequest, pk: int) -> HttpResponse:
    return _job_action(request, pk, "resume")


@admin_required
def backend_status(request: HttpRequest) -> HttpResponse:
    """Every backend, the stages it serves, whether it is usable on this machine, and why not."""
    return render(request, "ecast/generation/backends.html", {"rows": status_table({"openai": endpoint_status()})})


def _fmt(v: float | None) -> str:
    return "" if v is None else f"{v:.2f}"


@admin_required
def diversity_report(request: HttpRequest) -> HttpResponse:
    """ECAsT Table 10: BLEU to the source turn before (ParaAuto) and after (ParaDiverse) curation."""
    rows = reports.diversity_rows()
    if request.GET.get("format") == "csv":
        return csv_response(
            "bleu_diversity.csv",
            ["collection", "paraphrases", "edited", "para_auto", "para_diverse", "change_pct"],
            [
                [
                    r["collection"],
                    r["paraphrases"],
                    r["edited"],
                    _fmt(r["para_auto"]),
                    _fmt(r["para_diverse"]),
                    _fmt(r["change_pct"]),
                ]
                for r in rows
            ],
        )
    return render(request, "ecast/generation/diversity.html", {"rows": rows})


@admin_required
def cr_report(request: HttpRequest) -> HttpResponse:
    """ECAsT Table 9: BLEU against the real raw turns for original manual, entity removal and CR jobs."""
    collections = list(Collection.objects.annotate(n=Count("turns")).filter(n__gt=0))
    selected = request.GET.get("collection")
    collection = next((c for c in collections if str(c.pk) == selected), collections[0] if collections else None)
    rows = reports.context_removal_rows(collection=collection) if collection else []
    if request.GET.get("format") == "csv" and collection:
        return csv_response(
            f"context_removal_{collection.pk}.csv",
            ["collection", "system", "turns", "bleu", "job", "paper"],
            [
                [collection.name, r["system"], r["turns"], _fmt(r["bleu"]), r["job"] or "", _fmt(r["paper"])]
                for r in rows
            ],
            preamble=[f"Turns: {reports.TABLE9_TURNS}"],
        )
    return render(
        request,
        "ecast/generation/cr_report.html",
        {"rows": rows, "collections": collections, "collection": collection, "turns_rule": reports.TABLE9_TURNS},
    )


@admin_required
def test_set_list(request: HttpRequest) -> HttpResponse:
    """Random paraphrase test sets R^r_i / R^m_i: list and create."""
    form = TestSetForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        d = form.cleaned_data
        statuses = ("approved", "candidate") if d["include_candidates"] else ("approved",)
        with refusal_shown(form) as refused:
            created = testsets.test_sets_create(
                collection=d["collection"], kind=d["kind"], n_sets=d["n_sets"], seed=d["seed"], statuses=statuses
            )
        if not refused:
            messages.success(request, f"Created {', '.join(t.name for t in created)}.")
            return redirect("generation-test-sets")
    sets = (
        TestSet.objects.select_related("collection")
        .annotate(n_items=Count("items"))
        .order_by("collection__name", "kind", "index")
    )
    return render(request, "ecast/generation/test_sets.html", {"form": form, "sets": sets})


@admin_required
def test_set_detail(request: HttpRequest, pk: int) -> HttpResponse:
    """One test set: the chosen paraphrase of every turn, with links to curation pages and runs made from it."""
    test_set = get_object_or_404(TestSet.objects.select_related("collection"), pk=pk)
    items = test_set.items.select_related("turn", "paraphrase").order_by("turn__conversation_id", "turn__number")
    page = Paginator(items, 100).get_page(request.GET.get("page"))
    runs = test_set.runs.all()
    return render(request, "ecast/generation/test_set_detail.html", {"ts": test_set, "page": page, "runs": runs})


@admin_required
def test_set_export(request: HttpRequest, pk: int) -> HttpResponse:
    """CAsT-format topic JSON of a test set (download)."""
    test_set = get_object_or_404(TestSet, pk=pk)
    response = HttpResponse(
        json.dumps(testsets.test_set_export(test_set=test_set), indent=2), content_type="application/json"
    )
    response["Content-Disposition"] = (
        f'attachment; filename="testset_{test_set.pk}_{test_set.kind}_{test_set.index}.json"'
    )
    return response
