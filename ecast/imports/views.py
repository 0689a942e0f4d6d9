"""Admin pages: the import form with recent imports, a job page with live progress, and the release page."""

from __future__ import annotations

from typing import Any

from django import forms
from django.conf import settings
from django.contrib import messages
from django.db.models import F
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse

from ecast.core.csvfiles import csv_response
from ecast.core.fields import IdChoiceField
from ecast.core.jobs import job_health
from ecast.core.permissions import admin_required
from ecast.imports import irds_source, registry, services
from ecast.imports.errors import warning_kind, warnings_summary
from ecast.imports.formats import irds
from ecast.models import Collection, ImportJob, Paraphrase
from ecast.releases import STATUSES, release_pairs


def parse_options(text: str) -> dict[str, str]:
    """``key=value`` pairs, one per line or separated by commas/semicolons."""
    options: dict[str, str] = {}
    for part in text.replace(";", "\n").replace(",", "\n").splitlines():
        if not part.strip():
            continue
        if "=" not in part:
            raise forms.ValidationError(f"option {part.strip()!r} is not key=value")
        key, value = part.split("=", 1)
        options[key.strip()] = value.strip()
    return options


def _file_kinds() -> list[tuple[str, str]]:
    # The ir_datasets kind takes a dataset id, not a file: it has a form of its own.
    return [(name, label) for name, label in registry.choices() if name != irds.KIND]


class ImportForm(forms.Form):
    kind = forms.ChoiceField(choices=_file_kinds)
    file = forms.FileField(help_text="Plain or .gz; UTF-8.")
    collection = IdChoiceField(
        queryset=Collection.objects.all(),
        required=False,
        empty_label="(automatic: CAsT/iKAT year / collection of the turn ids)",
        help_text="Passage texts join the chosen collection's corpus, which its built-in BM25 runs search; "
        "without one they belong to no collection's corpus.",
    )
    extra_file = forms.FileField(
        required=False,
        label="Second file",
        help_text="CAsT topics: the resolved rewrites TSV. Qrels/runs with create_turns: a queries file.",
    )
    options = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 3, "placeholder": "name=my-run\nstrict=true"}),
        help_text="key=value per line, e.g. version=original, name=…, strict=true, create_turns=true, "
        "skip_unknown=true, year=2019.",
    )

    def clean_options(self) -> dict[str, str]:
        return parse_options(self.cleaned_data.get("options") or "")


DATASET_PREFIX = "irds"  # the two forms share the page: their collection fields must not share an id


class DatasetImportForm(forms.Form):
    dataset = forms.CharField(
        max_length=200,
        label="ir_datasets id",
        widget=forms.TextInput(
            attrs={"list": "ir-datasets-ids", "placeholder": "trec-cast/v1/2020/judged", "size": 36}
        ),
    )
    collection = IdChoiceField(
        queryset=Collection.objects.all(),
        required=False,
        empty_label="(automatic: the CAsT year's collection, else one named after the dataset)",
    )
    passages = forms.BooleanField(
        required=False,
        label="Passage texts from the local corpus",
        help_text="The judged and canonical passages, where ir_datasets has the dataset's corpus locally.",
    )


def body_too_large(request: HttpRequest) -> str | None:
    """The refusal message when the declared request size exceeds the upload limit (checked before reading it)."""
    limit = settings.ECAST_MAX_UPLOAD_BYTES
    try:
        declared = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        return None
    # A little slack for the multipart envelope and the other form fields.
    if declared > limit + 64 * 1024:
        return f"upload is {declared:,} bytes; the upload limit (ECAST_MAX_UPLOAD_BYTES) is {limit:,} bytes"
    return None


@admin_required
def import_page(request: HttpRequest) -> HttpResponse:
    """Upload form (kind, file, collection, options) and the list of recent imports."""
    too_large = body_too_large(request) if request.method == "POST" else None
    if too_large:
        messages.error(request, too_large)
        return redirect("imports")
    posted_dataset = request.method == "POST" and f"{DATASET_PREFIX}-dataset" in request.POST
    dataset_form = DatasetImportForm(request.POST if posted_dataset else None, prefix=DATASET_PREFIX)
    if posted_dataset and dataset_form.is_valid():
        job = services.import_dataset_start(
            dataset_id=dataset_form.cleaned_data["dataset"],
            collection=dataset_form.cleaned_data.get("collection"),
            options={"passages": True} if dataset_form.cleaned_data["passages"] else {},
            user=request.user,
        )
        return redirect("import-job", pk=job.pk)
    # Only the form that was sent is bound: the other is shown empty.
    sent = request.method == "POST" and not posted_dataset
    # Back from making a collection (or a link naming a kind): that kind and collection chosen.
    chosen = {k: request.GET[k] for k in ("kind", "collection") if request.GET.get(k)}
    form = ImportForm(request.POST if sent else None, request.FILES if sent else None, initial=chosen)
    if sent and form.is_valid():
        data = form.cleaned_data
        extras = {}
        if data.get("extra_file"):
            key = registry.second_file(data["kind"])
            if key is None:
                form.add_error("extra_file", "this kind takes no second file")
            else:
                extras[key] = data["extra_file"]
        if not form.errors:
            job = services.import_job_start(
                kind=data["kind"],
                uploaded=data["file"],
                collection=data.get("collection"),
                options=data["options"],
                user=request.user,
                extra_uploads=extras,
            )
            return redirect("import-job", pk=job.pk)
    jobs = ImportJob.objects.select_related("collection", "created_by").order_by("-created_at")[:30]
    option_help = {
        k.name: (", ".join(k.options) if k.options else "no options") + (f". {k.help}" if k.help else "")
        for k in registry.kinds()
    }
    context = {
        "form": form,
        "dataset_form": dataset_form,
        "dataset_ids": irds_source.offered_ids(),
        "dataset_home": irds_source.home(),
        "dataset_downloads": settings.ECAST_IR_DATASETS_DOWNLOAD,
        "jobs": jobs,
        "option_help": option_help,
    }
    return render(request, "ecast/imports/import_page.html", context)


def _job_json(job: ImportJob) -> dict[str, Any]:
    return {
        "id": job.pk,
        "kind": job.kind,
        "file_name": job.file_name,
        "collection": job.collection.name if job.collection else None,
        "status": job.status,
        "progress_done": job.progress_done,
        "progress_total": job.progress_total,
        "errors": job.errors,
        "counts": job.counts,
        "created_at": job.created_at.isoformat(),
        "finished_at": job.finished_at.isoformat() if job.finished_at else None,
    }


@admin_required
def import_job_page(request: HttpRequest, pk: int) -> HttpResponse:
    """One import: progress while it runs, then counts and warnings, or the full error table."""
    job = get_object_or_404(ImportJob.objects.select_related("collection", "created_by"), pk=pk)
    counts = {k: v for k, v in (job.counts or {}).items() if k not in ("warnings", "warnings_total")}
    warnings = (job.counts or {}).get("warnings", [])
    links: dict[str, str] = {}
    if job.collection_id:
        links["Collection"] = reverse("collection-detail", args=[job.collection_id])
    kind = registry.get(job.kind)
    if kind is not None and kind.links is not None:
        links.update(kind.links(job))
    if job.errors:
        links["Error report (CSV)"] = reverse("import-job-errors", args=[job.pk])
    if warnings:
        links["Warnings (CSV)"] = reverse("import-job-warnings", args=[job.pk])
    finished = job.status in (ImportJob.Status.SUCCEEDED, ImportJob.Status.FAILED)
    return render(
        request,
        "ecast/imports/job.html",
        {
            "job": job,
            "counts": counts,
            "warnings": warnings,
            "warnings_total": (job.counts or {}).get("warnings_total", len(warnings)),
            "warning_groups": warnings_summary(warnings, examples=3),
            "links": links,
            "percent": int(100 * job.progress_done / job.progress_total) if job.progress_total else 0,
            "finished": finished,
            "active": not finished,
            "health": job_health(services.KIND, job.pk),
        },
    )


@admin_required
def import_job_errors_csv(request: HttpRequest, pk: int) -> HttpResponse:
    """The full error report as CSV (file, line, reason), for fixing a big file offline."""
    job = get_object_or_404(ImportJob, pk=pk)
    rows = [[e.get("file", ""), e.get("line") or "", e.get("reason", "")] for e in job.errors]
    return csv_response(f"import-{job.pk}-errors.csv", ["file", "line", "reason"], rows)


@admin_required
def import_job_warnings_csv(request: HttpRequest, pk: int) -> HttpResponse:
    """Every warning kept for the job as CSV (kind, file, line, reason): the page shows only a summary."""
    job = get_object_or_404(ImportJob, pk=pk)
    warnings = (job.counts or {}).get("warnings", [])
    rows = [[warning_kind(w), w.get("file", ""), w.get("line") or "", w.get("reason", "")] for w in warnings]
    return csv_response(f"import-{job.pk}-warnings.csv", ["kind", "file", "line", "reason"], rows)


@admin_required
def release_page(request: HttpRequest) -> HttpResponse:
    """Download links for the ECAsT CSV and the JSONL release, per collection and status, with the number of rows
    each download has and the half-decided pairs it leaves out."""
    status = request.GET.get("status", "approved")
    if status not in STATUSES:
        status = "approved"
    rows = []
    for c in Collection.objects.order_by("year", "name"):
        half = Paraphrase.objects.filter(
            turn__collection=c, kind=Paraphrase.Kind.MANUAL, is_current=True, pair__is_current=True
        ).exclude(status=F("pair__status"))
        # The count comes from the very queryset the download streams, so page and file always agree.
        rows.append(
            {"collection": c, "rows": release_pairs(collection=c, status=status).count(), "half_decided": half.count()}
        )
    return render(
        request,
        "ecast/releases/release_page.html",
        {"rows": rows, "status": status, "statuses": STATUSES, "total_rows": sum(r["rows"] for r in rows)},
    )
