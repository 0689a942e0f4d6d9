"""Pages and downloads of the ECAsT robustness reports (Tables 11, 13, 14); the unjudged pool is judging's."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.core.exceptions import BadRequest
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from ecast.core.csvfiles import csv_response
from ecast.core.pages import refusal_shown
from ecast.core.permissions import admin_required
from ecast.models import TestSet
from evaluation.measures import measure_registry
from evaluation.models import Qrel, QrelsVersion, Run
from evaluation.robustness import selectors as rsel
from evaluation.robustness import services
from evaluation.robustness.plots import robustness_figures
from evaluation.selectors import collection_list
from evaluation.services import measure_request
from evaluation.views import pick_version


def robustness_params(request: HttpRequest) -> rsel.RobustnessParams | None:
    data = request.POST if request.method == "POST" else request.GET
    collection, base = pick_version(request)
    if collection is None or base is None:
        return None
    versions = {str(v.pk): v for v in QrelsVersion.objects.filter(collection=collection)}
    after = None
    if not data.get("version") and base.parent_id:
        # The picked default is a derived version gaining judgments: compare it with the version it came from.
        base, after = versions.get(str(base.parent_id), base), base
    base = versions.get(data.get("base", ""), base)
    extended = versions.get(data.get("extended", "")) or (after if after is not None and after != base else None)
    if extended is None:
        # Default "after": the newest version derived from the base one that completes it with judgments; an LLM
        # pre-judgment version re-labels the base's own items, so it is only compared when picked.
        extended = (
            QrelsVersion.objects.filter(collection=collection, parent=base)
            .exclude(qrels__source=Qrel.Source.LLM)
            .order_by("-created_at")
            .first()
        )
    try:
        depth = max(1, min(1000, int(data.get("depth") or 3)))
    except ValueError as exc:
        raise Http404("depth must be an integer") from exc
    runs = {str(r.pk): r for r in Run.objects.filter(collection=collection)}
    baselines: dict[str, Run] = {}
    for kind in rsel.KINDS:
        chosen = data.get(f"baseline_{kind}")
        if chosen == "none":
            continue
        run = runs.get(chosen or "") or rsel.default_baseline(collection=collection, kind=kind)
        if run is not None:
            baselines[kind] = run
    if "runs" in data:
        wanted = set(data.getlist("runs"))
        extra = [r for key, r in sorted(runs.items(), key=lambda kv: kv[1].name) if key in wanted]
    else:
        extra = rsel.default_extra_runs(collection=collection, baselines=baselines)
    return rsel.RobustnessParams(
        collection=collection, base=base, extended=extended, depth=depth, baselines=baselines, extra_runs=extra
    )


def robustness_measures(request: HttpRequest, p: rsel.RobustnessParams) -> tuple[list[Any], str]:
    """Tables 11 and 14 on the measures of ``?measures=`` (comma-separated ir_measures strings), each stored on
    demand under the original and the extended qrels: the jobs computing them, and the refusal of a string
    ("" when none; the tables then keep their default measures)."""
    data = request.POST if request.method == "POST" else request.GET
    raw = [m.strip() for m in (data.get("measures") or "").split(",") if m.strip()]
    if not raw:
        return [], ""
    jobs, names = [], []
    with refusal_shown(None) as refused:  # shown beside the measures field by the caller
        for m in raw:
            for version in filter(None, (p.base, p.extended)):
                state = measure_request(version=version, measure=m, user=request.user)
                if state.job is not None:
                    jobs.append(state.job)
            names.append(state.measure)
    if refused:
        return [], refused.text
    p.measures = list(dict.fromkeys(names))
    return jobs, ""


def _fmt(v: Any, pct: bool = False) -> str:
    if v is None:
        return "–"
    return f"{v:+.1f}%" if pct else f"{v:.4f}"


@admin_required
def robustness(request: HttpRequest) -> HttpResponse:
    p = robustness_params(request)
    if p is None:
        collection, _ = pick_version(request)  # the picked collection has no qrels version (or there is none)
        return render(
            request,
            "evaluation/robustness.html",
            {"empty": True, "collection": collection, "collections": collection_list()},
        )
    jobs, error = robustness_measures(request, p)
    report = rsel.robustness_report(p)
    return render(
        request,
        "evaluation/robustness.html",
        {
            "measure": ", ".join(p.measures),
            "measure_typed": request.GET.get("measures") or ", ".join(p.measures),
            "measure_error": error,
            "measure_job": jobs[0] if jobs else None,
            "measure_hints": measure_registry(),
            "version": p.base,
            "p": p,
            "report": report,
            "query": request.GET.urlencode(),
            **rsel.robustness_page(p, report),
            **robustness_figures(p, report),
        },
        status=400 if error else 200,
    )


@admin_required
def robustness_export(request: HttpRequest, table: str, fmt: str) -> HttpResponse:
    p = robustness_params(request)
    if p is None:
        raise Http404("no collection with qrels")
    jobs, error = robustness_measures(request, p)
    if error:
        raise BadRequest(error)
    report = rsel.robustness_report(p)
    if table not in ("table11", "table13", "table14", "all"):
        raise Http404("unknown table")
    if fmt == "json":
        payload = {k: v for k, v in report.items() if not k.startswith("table")}
        for name in ("table11", "table13", "table14") if table == "all" else (table,):
            payload[name] = report[name]
        if payload.get("table13"):
            payload["table13"] = {k: v for k, v in payload["table13"].items() if k != "unjudged_pairs"}
        return JsonResponse(payload, json_dumps_params={"indent": 1})
    preamble = [
        f"collection={report['collection']}",
        f"base_qrels_version={report['base_version']}",
        f"extended_qrels_version={report['extended_version']}",
        f"relevance_threshold={report['threshold']}",
        f"depth={report['depth']}",
        report["missing_turns"],
    ]
    if table == "table11":
        rows = [
            [r["label"], r["kind"], m, v["value"], v["baseline"], v["change_pct"]]
            for r in report["table11"]["rows"]
            for m, v in r["values"].items()
        ]
        return csv_response(
            "ecast-table11.csv",
            ["label", "kind", "measure", "value", "baseline", "change_pct"],
            rows,
            preamble=preamble,
        )
    if table == "table13":
        rows = []
        for label, r in report["table13"]["runs"].items():
            rows.append(
                [label, r["group"], r["top_k"], r["judged"], r["unjudged"], r["judged_pct"], r["unjudged_pct"]]
                + [r["grades"][g] for g in range(5)]
                + [r["pending"], r["unique"], r["unique_pct"]]
            )
        header = ["label", "group", "top_k", "judged", "unjudged", "judged_pct", "unjudged_pct"]
        header += [f"grade_{g}" for g in range(5)] + ["pending", "unique", "unique_pct"]
        return csv_response("ecast-table13.csv", header, rows, preamble=preamble)
    if table == "table14" and report["table14"]:
        rows = [
            [r["label"], m, v["before"], v["after"], v["delta"], v["change_pct"]]
            for r in report["table14"]["rows"]
            for m, v in r["values"].items()
        ]
        return csv_response(
            "ecast-table14.csv", ["label", "measure", "before", "after", "delta", "change_pct"], rows, preamble=preamble
        )
    raise Http404("table not available as CSV (choose an extended qrels version for Table 14)")


@admin_required
@require_POST
def robustness_baseline(request: HttpRequest, pk: int) -> HttpResponse:
    """Make the built-in BM25 run of one test set in the worker; the report shows it in Table 11 when done."""
    test_set = get_object_or_404(TestSet, pk=pk)
    # Back to the report as the admin left it (the query string only; never another site).
    back = redirect(f"{reverse('evaluation-robustness')}?{request.POST.get('query', '')}")
    with refusal_shown(request) as refused:
        name = services.test_set_baseline_start(test_set=test_set, user=request.user)
    if refused:
        return back
    messages.success(request, f"BM25 run “{name}” of {test_set.name} is being made; Table 11 shows it when it is done.")
    return back
