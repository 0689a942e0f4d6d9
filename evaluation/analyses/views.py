"""Pages of the pivot, meta-evaluation and calibration analyses (admin only): lists, create forms, reports,
CSV/JSON downloads, progress polling and recompute."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django import forms
from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from ecast.core.jobs import job_health
from ecast.core.pages import refusal_shown
from ecast.core.permissions import admin_required
from ecast.models import Collection
from evaluation.analyses import plots
from evaluation.analyses.forms import (
    CalibrationForm,
    MetaEvalForm,
    PivotForm,
    StochasticForm,
    parse_dimensions_text,
    split_list,
)
from evaluation.analyses.selectors import (
    ANALYSIS_MODELS,
    analysis_list,
    qrels_count,
)
from evaluation.analyses.services import calibration as calibration_services
from evaluation.analyses.services import common as services
from evaluation.analyses.services import metaeval as metaeval_services
from evaluation.analyses.services import pivots as pivot_services
from evaluation.analyses.services import toolkit
from evaluation.models import MetaEvaluation

KIND_TITLES = {
    "pivots": "Pivot analysis",
    "metaeval": "Meta-evaluation",
    "calibration": "Calibration report",
    "stochastic": "Stochastic system",
    "budget": "Budget simulation",
}
LIST_URL = {"pivots": "analyses-pivots", "metaeval": "analyses-metaeval", "calibration": "analyses-calibration"}
LIST_URL["stochastic"] = "analyses-calibration"
LIST_URL["budget"] = "analyses-budget"


def collection_for(request: HttpRequest, kind: str = "") -> Collection | None:
    """The chosen collection; by default the one holding the newest analysis of ``kind``, else the first with runs
    (a collection without runs, like the TREC DD table's, has nothing to analyse from a form)."""
    cid = request.GET.get("collection") or request.POST.get("collection")
    qs = Collection.objects.all()
    if cid:
        try:
            return qs.get(pk=int(cid))
        except (ValueError, Collection.DoesNotExist) as exc:
            raise Http404("unknown collection") from exc
    newest = analysis_list(kind=kind).first() if kind else None
    if newest is not None:
        return newest.collection
    return qs.filter(runs__isnull=False).distinct().first() or qs.first()


def get_analysis(kind: str, pk: int):
    """The analysis of this kind and id, or 404 (pages and downloads)."""
    if kind not in ANALYSIS_MODELS:
        raise Http404("unknown analysis kind")
    return get_object_or_404(ANALYSIS_MODELS[kind].objects.select_related("collection", "qrels_version"), pk=pk)


# ---- pivots --------------------------------------------------------------------------------------------------------


@admin_required
@require_http_methods(["GET", "POST"])
def pivots_page(request: HttpRequest) -> HttpResponse:
    """List of pivot analyses and the form to start one."""
    collection = collection_for(request)
    form = PivotForm(request.POST or None, collection=collection)
    if request.method == "POST" and form.is_valid() and collection is not None:
        d = form.cleaned_data
        created = create_and_open(
            request,
            form,
            "pivots",
            "Pivot analysis",
            lambda: pivot_services.pivot_analysis_create(
                collection=collection,
                runs=list(d["runs"]),
                qrels_version=d["qrels_version"],
                metrics=split_list(d["metrics"]),
                n_splits=d["n_splits"],
                seed=d["seed"],
                ee_kind=d["ee_kind"],
                qrels_versions=list(d["qrels_versions"] or []),
                name=d["name"],
                auto_recompute=d["auto_recompute"],
                created_by=request.user,
            ),
        )
        if created is not None:
            return created
    return list_page(request, "pivots", collection, form)


def create_and_open(
    request: HttpRequest, form: forms.Form, kind: str, what: str, create: Callable[[], Any]
) -> HttpResponse | None:
    """Run one create service: on success go to the new analysis' page; refused, show why on the form (None)."""
    # A refusal that names a field (runs, qrels_version) is shown next to that field.
    with refusal_shown(form) as refused:
        obj = create()
    if refused:
        return None
    messages.success(request, f"{what} queued.")
    return redirect("analyses-detail", kind=kind, pk=obj.pk)


def list_page(request: HttpRequest, kind: str, collection: Collection | None, form: forms.Form, **extra: Any):
    items: Any = analysis_list(kind=kind, collection=collection) if collection else []
    ctx = {
        "kind": kind,
        "title": {"pivots": "Pivots", "metaeval": "Meta-evaluation", "calibration": "Calibration", "budget": "Budget"}[
            kind
        ],
        "collections": Collection.objects.all(),
        "collection": collection,
        "form": form,
        "items": list(items[:200]),
        **extra,
    }
    return render(request, f"evaluation/analyses/{kind}_list.html", ctx, status=400 if form.errors else 200)


# ---- meta-evaluation -----------------------------------------------------------------------------------------------


@admin_required
@require_http_methods(["GET", "POST"])
def metaeval_page(request: HttpRequest) -> HttpResponse:
    """List of meta-evaluations and the form (upload a per-topic table, or use the app's scores)."""
    collection = collection_for(request, "metaeval")
    form = MetaEvalForm(request.POST or None, request.FILES or None, collection=collection)
    if request.method == "POST" and form.is_valid() and collection is not None:
        d = form.cleaned_data
        upload = d.get("upload")
        created = create_and_open(
            request,
            form,
            "metaeval",
            "Meta-evaluation",
            lambda: metaeval_services.meta_evaluation_create(
                collection=collection,
                complex_metrics=split_list(d["complex_metrics"]),
                dimensions=parse_dimensions_text(d["dimensions"]),
                upload=upload if d["source"] == MetaEvaluation.Source.UPLOAD else None,
                upload_name=upload.name if upload is not None else "table.csv",
                runs=list(d["runs"] or []),
                qrels_version=d["qrels_version"],
                depth=d["depth"] or 10,
                lengths_upload=d.get("lengths") if d["source"] == MetaEvaluation.Source.APP else None,
                lengths_name=d["lengths"].name if d.get("lengths") else "lengths.tsv",
                name=d["name"],
                created_by=request.user,
            ),
        )
        if created is not None:
            return created
    return list_page(request, "metaeval", collection, form)


# ---- calibration + stochastic systems ------------------------------------------------------------------------------


@admin_required
@require_http_methods(["GET", "POST"])
def calibration_page(request: HttpRequest) -> HttpResponse:
    """Calibration reports and stochastic systems: lists and both create forms."""
    collection = collection_for(request)
    which = request.POST.get("form") if request.method == "POST" else None
    cform = CalibrationForm(request.POST if which == "calibration" else None, collection=collection)
    sform = StochasticForm(request.POST if which == "stochastic" else None, collection=collection)
    created = None
    if which == "calibration" and cform.is_valid():
        d = cform.cleaned_data
        created = create_and_open(
            request,
            cform,
            "calibration",
            "Calibration report",
            lambda: calibration_services.calibration_report_create(
                run=d["run"],
                qrels_version=d["qrels_version"],
                normalisation=d["normalisation"],
                depth=d["depth"],
                n_buckets=d["n_buckets"],
                created_by=request.user,
            ),
        )
    if which == "stochastic" and sform.is_valid() and collection is not None:
        d = sform.cleaned_data
        created = create_and_open(
            request,
            sform,
            "stochastic",
            "Stochastic system analysis",
            lambda: calibration_services.stochastic_system_create(
                collection=collection,
                runs=list(d["runs"]),
                qrels_version=d["qrels_version"],
                b_values=d["b_values"],
                measure=d["measure"],
                depth=d["depth"],
                normalisation=d["normalisation"],
                name=d["name"],
                created_by=request.user,
            ),
        )
    if created is not None:
        return created
    stochastic = analysis_list(kind="stochastic", collection=collection) if collection else []
    return list_page(request, "calibration", collection, cform, sform=sform, stochastic=stochastic)


# ---- shared: detail, downloads, status, recompute --------------------------------------------------------------


@admin_required
def analysis_detail(request: HttpRequest, kind: str, pk: int) -> HttpResponse:
    """Report page of one analysis: parameters, qrels version, computed at, figures, tables, downloads."""
    obj = get_analysis(kind, pk)
    res = obj.results or {}
    ctx: dict[str, Any] = {
        "kind": kind,
        "title": KIND_TITLES[kind],
        "obj": obj,
        "res": res,
        "list_url": LIST_URL[kind],
        "stale": obj.computed_at is not None and qrels_count(version=obj.qrels_version) != obj.qrels_count,
        "running": obj.is_active,
        "health": job_health(services.analysis_job_kind(kind), obj.pk),
    }
    if res:
        ctx.update(DETAIL_CONTEXT[kind](request, obj, res))
    return render(request, f"evaluation/analyses/{kind}_detail.html", ctx)


def _pivot_context(request: HttpRequest, obj, res: dict) -> dict:
    if not res.get("metrics"):
        return {}
    systems = res["systems"]
    order = res.get("pivot_order") or list(range(len(systems)))
    rows = []
    for m in res["metrics"]:
        for i in order:
            rows.append(
                {
                    "metric": m,
                    "pivot": systems[i],
                    "reference": res["reference_means"][m][i],
                    "cons_mean": res["consistency_mean"][m][i],
                    "cons_std": res["consistency_std"][m][i],
                    "corr_mean": res["correctness_mean"][m][i],
                    "corr_std": res["correctness_std"][m][i],
                }
            )
    environments = res.get("environments") or ["EE1", "EE2"]
    tool: dict[str, Any] = {"environments": environments, "systems": systems}
    metric = request.GET.get("metric")
    pivot = request.GET.get("pivot")
    if metric and pivot:
        choices = {s: str(request.GET.get(f"ee_{s}")) for s in systems if request.GET.get(f"ee_{s}")}
        tool["chosen"] = {"metric": metric, "pivot": pivot, "choices": choices}
        with refusal_shown() as refused:
            tool["result"] = pivot_services.pivot_cross_ee(analysis=obj, metric=metric, pivot=pivot, choices=choices)
        if refused:
            tool["errors"] = refused.messages
    figures = plots.pivot_figures(
        res, dist_metric=request.GET.get("dist_metric"), dist_pivot=request.GET.get("dist_pivot")
    )
    return {"rows": rows, "tool": tool, **figures}


def _metaeval_context(request: HttpRequest, obj, res: dict) -> dict:
    if not res.get("settings"):
        return {}
    metrics = res["complex_metrics"]
    ranks = []
    for s in res["settings"]:
        for m in metrics:
            ranks.append(
                {
                    "dimension": s["dimension"],
                    "iterations": s["iterations"],
                    "metric": m,
                    "wins": s["intuitiveness_wins"][m],
                    "it_rank": s["intuitiveness_rank"][m],
                    "mu": s["unanimity"][m],
                    "mu_rank": s["unanimity_rank"][m],
                }
            )
    chosen = request.GET.get("setting")
    index = int(chosen) if chosen and chosen.isdigit() and int(chosen) < len(res["settings"]) else 0
    setting = dict(res["settings"][index])
    # Sign-test p-values reach 1e-200 on big tables: scientific notation below 1e-4 keeps the column readable.
    setting["pairs"] = [
        {**pr, "p_display": f"{pr['p_value']:.4f}" if pr["p_value"] >= 1e-4 else f"{pr['p_value']:.1e}"}
        for pr in setting["pairs"]
    ]
    setting_rows = [
        {
            "metric": m,
            "mu": setting["unanimity"][m],
            "mu_rank": setting["unanimity_rank"][m],
            "wins": setting["intuitiveness_wins"][m],
            "it_rank": setting["intuitiveness_rank"][m],
        }
        for m in metrics
    ]
    return {
        "setting_rows": setting_rows,
        "ranks": ranks,
        "setting": res["settings"][index],
        "setting_index": index,
        **plots.metaeval_figures(res),
    }


def _calibration_context(request: HttpRequest, obj, res: dict) -> dict:
    if not res.get("conditions"):
        return {}
    return plots.calibration_figures(res)


def _stochastic_context(request: HttpRequest, obj, res: dict) -> dict:
    if not res.get("curve"):
        return {}
    return plots.stochastic_figures(res)


def _budget_context(request: HttpRequest, obj, res: dict) -> dict:
    if not res.get("strategies"):
        return {}
    return {"summary": plots.budget_summary(res), **plots.budget_figures(res)}


DETAIL_CONTEXT = {
    "budget": _budget_context,
    "pivots": _pivot_context,
    "metaeval": _metaeval_context,
    "calibration": _calibration_context,
    "stochastic": _stochastic_context,
}


@admin_required
@require_POST
def analysis_recompute(request: HttpRequest, kind: str, pk: int) -> HttpResponse:
    """Queue a recomputation now (no debounce)."""
    obj = get_analysis(kind, pk)
    toolkit.analysis_queue(kind=kind, analysis_id=obj.pk)
    messages.info(request, "Recomputation queued.")
    return redirect("analyses-detail", kind=kind, pk=obj.pk)


@admin_required
@require_POST
def analysis_delete(request: HttpRequest, kind: str, pk: int) -> HttpResponse:
    """Delete an analysis."""
    obj = get_analysis(kind, pk)
    collection_id = obj.collection_id
    services.analysis_delete(kind=kind, analysis_id=obj.pk)
    messages.info(request, "Analysis deleted.")
    return redirect(f"{reverse(LIST_URL[kind])}?collection={collection_id}")
