"""Pages of response-level judging (admins, like every evaluation page): a collection's runs of answers, nugget
banks and label sets; a run's answers; one answer with its citations and labels; a bank's nuggets; a label set's
leaderboard (live: read through the cached scores) and a run's per-topic figures; the downloads."""

from __future__ import annotations

from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, render
from django.urls import reverse

from ecast.core.pages import query_id
from ecast.core.permissions import admin_required
from ecast.models import Collection
from evaluation.models import NuggetBank, Response, ResponseLabelSet, ResponseRun
from evaluation.responses import exports, scores
from evaluation.responses import selectors as sel

MEASURE_HELP = {
    "V_strict": "vital nuggets supported / vital nuggets",
    "A_strict": "nuggets supported / nuggets",
    "V": "(vital supported + ½ vital partially supported) / vital nuggets",
    "A": "(supported + ½ partially supported) / nuggets",
    "precision": "Σ first-citation support (full 1, partial ½, none 0) / sentences whose first citation is judged",
    "recall": "Σ first-citation support / answer sentences (unjudged first citations left out)",
}


@admin_required
def index(request: HttpRequest) -> HttpResponse:
    cid = query_id(request.GET, "collection")
    collection = get_object_or_404(Collection, pk=cid) if cid else sel.collection_with_responses_default()
    runs = list(sel.response_run_list(collection=collection)) if collection else []
    banks = list(sel.nugget_bank_list(collection=collection)) if collection else []
    label_sets = list(sel.label_set_list(collection=collection)) if collection else []
    counts = sel.nugget_counts(bank_ids=[b.pk for b in banks])
    labels = sel.label_counts(label_sets=label_sets)
    return render(
        request,
        "evaluation/responses/index.html",
        {
            "collection": collection,
            "collections": Collection.objects.order_by("name"),
            "runs": runs,
            "banks": [(b, counts[b.pk]) for b in banks],
            "label_sets": [(ls, labels[ls.pk]) for ls in label_sets],
            "imports_url": reverse("imports"),
        },
    )


@admin_required
def run_detail(request: HttpRequest, pk: int) -> HttpResponse:
    run = get_object_or_404(ResponseRun.objects.select_related("collection"), pk=pk)
    page = Paginator(sel.response_ids_in_order(run=run), sel.PAGE_SIZE).get_page(request.GET.get("page"))
    rows = sel.response_page(ids=[r["pk"] for r in page])
    label_sets = sel.label_set_list(collection=run.collection)
    return render(
        request,
        "evaluation/responses/run.html",
        {"run": run, "collection": run.collection, "page": page, "rows": rows, "label_sets": label_sets},
    )


@admin_required
def response_detail(request: HttpRequest, pk: int) -> HttpResponse:
    response = get_object_or_404(Response.objects.select_related("run__collection", "turn"), pk=pk)
    detail = sel.response_detail(response=response)
    return render(
        request,
        "evaluation/responses/response.html",
        {"response": response, "run": response.run, "collection": response.run.collection, **detail},
    )


@admin_required
def bank_detail(request: HttpRequest, pk: int) -> HttpResponse:
    bank = get_object_or_404(NuggetBank.objects.select_related("collection", "parent"), pk=pk)
    turns = sel.bank_turns(bank=bank)
    counts = sel.nugget_counts(bank_ids=[bank.pk])[bank.pk]
    return render(
        request,
        "evaluation/responses/bank.html",
        {"bank": bank, "collection": bank.collection, "turns": turns, "counts": counts},
    )


def _measure(request: HttpRequest, label_set: ResponseLabelSet) -> str:
    measures = sel.measures_of(label_set)
    asked = request.GET.get("measure", "")
    return asked if asked in measures else measures[0]


@admin_required
def label_set_detail(request: HttpRequest, pk: int) -> HttpResponse:
    label_set = get_object_or_404(ResponseLabelSet.objects.select_related("collection", "bank"), pk=pk)
    measure = _measure(request, label_set)
    table = sel.label_set_scores(label_set=label_set)
    rows = sel.leaderboard(label_set=label_set, measure=measure, table=table)
    measures = sel.measures_of(label_set)
    return render(
        request,
        "evaluation/responses/label_set.html",
        {
            "label_set": label_set,
            "collection": label_set.collection,
            "measure": measure,
            "measures": [(m, MEASURE_HELP[m]) for m in measures],
            "rows": [(r, [r.values[m] for m in measures]) for r in rows],
            "is_nuggets": isinstance(table, scores.NuggetTable),
            "judged_topics": len(table.judged_turns) if isinstance(table, scores.CitationTable) else None,
            "any_labels": bool(table.labelled if isinstance(table, scores.NuggetTable) else table.judged_turns),
            "files": exports.files_for(label_set),
        },
    )


@admin_required
def label_set_run(request: HttpRequest, pk: int, run_pk: int) -> HttpResponse:
    label_set = get_object_or_404(ResponseLabelSet.objects.select_related("collection"), pk=pk)
    run = get_object_or_404(ResponseRun, pk=run_pk, collection_id=label_set.collection_id)
    measures = sel.measures_of(label_set)
    rows = sel.run_topic_rows(label_set=label_set, run=run)
    return render(
        request,
        "evaluation/responses/label_set_run.html",
        {
            "label_set": label_set,
            "collection": label_set.collection,
            "run": run,
            "measures": measures,
            "rows": [(r, [r["figures"][m] if r["figures"] else None for m in measures]) for r in rows],
        },
    )


@admin_required
def bank_download(request: HttpRequest, pk: int) -> StreamingHttpResponse:
    bank = get_object_or_404(NuggetBank.objects.select_related("collection"), pk=pk)
    return exports.bank_download(bank=bank)


@admin_required
def label_set_download(request: HttpRequest, pk: int, what: str) -> StreamingHttpResponse:
    label_set = get_object_or_404(ResponseLabelSet.objects.select_related("collection"), pk=pk)
    return exports.label_set_download(label_set=label_set, what=what)
