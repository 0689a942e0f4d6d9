"""CSV/JSON downloads of the analyses: one table per CSV, everything (with parameters and qrels version) in JSON."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from django.http import Http404, HttpRequest, HttpResponse

from ecast.core.csvfiles import csv_response
from ecast.core.permissions import admin_required
from evaluation.analyses import budget
from evaluation.analyses.views import get_analysis


def budget_csv_rows(res: dict, table: str) -> tuple[list[str], list[list[Any]]]:
    """Budget simulation: relevant found per budget (default) or Kendall τ per pool fraction (``table=tau``)."""
    strategies = budget.strategy_results(res)
    if table == "tau":
        measures = res.get("measures", [])
        head = ["strategy", "fraction_of_pool", "judgments", *[f"tau_{m}" for m in measures]]
        rows = [
            [name, r["fraction"], r["judgments"], *[r[m] for m in measures]] for name, s in strategies for r in s["tau"]
        ]
        return head, rows
    head = ["strategy", "budget_per_topic", "judgments", "relevant_found", "relevant_in_pool"]
    total = res.get("relevant_in_pool")
    rows = [[name, p["budget"], p["judgments"], p["found"], total] for name, s in strategies for p in s["curve"]]
    return head, rows


def _meta(obj) -> dict:
    return {
        "id": obj.pk,
        "kind": obj.__class__.__name__,
        "name": obj.name,
        "collection": obj.collection.name,
        "qrels_version": obj.qrels_version.name if obj.qrels_version else None,
        "qrels_count": obj.qrels_count,
        "computed_at": obj.computed_at.isoformat() if obj.computed_at else None,
        "status": obj.status,
        "parameters": obj.parameters,
    }


def pivots_csv_rows(res: dict, table: str) -> tuple[list[str], list[list[Any]]]:
    """Pivots: consistency and correctness per metric and pivot (default) or per random split (``table=splits``)."""
    if table == "splits":
        head = ["metric", "pivot", "split", "consistency", "correctness"]
        rows = [
            [m, s, k, res["consistency_splits"][m][k][i], res["correctness_splits"][m][k][i]]
            for m in res.get("metrics", [])
            for i, s in enumerate(res["systems"])
            for k in range(len(res.get("consistency_splits", {}).get(m, [])))
        ]
        return head, rows
    head = [
        "metric",
        "pivot",
        "full_set_mean",
        "consistency_mean",
        "consistency_std",
        "correctness_mean",
        "correctness_std",
    ]
    rows = [
        [
            m,
            s,
            res["reference_means"][m][i],
            res["consistency_mean"][m][i],
            res["consistency_std"][m][i],
            res["correctness_mean"][m][i],
            res["correctness_std"][m][i],
        ]
        for m in res.get("metrics", [])
        for i, s in enumerate(res["systems"])
    ]
    return head, rows


def metaeval_csv_rows(res: dict, table: str) -> tuple[list[str], list[list[Any]]]:
    """Meta-evaluation: each pair of complex metrics per setting (default) or each metric's ranks (``table=ranks``)."""
    if table == "ranks":
        head = [
            "dimension",
            "iterations",
            "metric",
            "intuitiveness_wins",
            "intuitiveness_rank",
            "unanimity",
            "unanimity_rank",
        ]
        rows = [
            [
                s["dimension"],
                s["iterations"],
                m,
                s["intuitiveness_wins"][m],
                s["intuitiveness_rank"][m],
                s["unanimity"][m],
                s["unanimity_rank"][m],
            ]  # fmt: skip
            for s in res.get("settings", [])
            for m in res["complex_metrics"]
        ]
        return head, rows
    keys = ["cases", "disagreements", "disagreement_fraction", "correct1", "correct2", "simple_ties",
            "intuitiveness1", "intuitiveness2", "p_value", "significant_winner"]  # fmt: skip
    head = ["dimension", "simple_metrics", "iterations", "metric1", "metric2", *keys]
    rows = [
        [
            s["dimension"],
            "+".join(s["simple_metrics"]),
            s["iterations"],
            p["metric1"],
            p["metric2"],
            *[p[k] for k in keys],
        ]
        for s in res.get("settings", [])
        for p in s["pairs"]
    ]
    return head, rows


def calibration_csv_rows(res: dict, table: str) -> tuple[list[str], list[list[Any]]]:
    """Calibration: each condition's ECE and reliability buckets."""
    head = ["condition", "ece", "bucket_lower", "bucket_upper", "count", "mean_confidence", "fraction_relevant"]
    rows = [
        [c["label"], c["ece"], b["lower"], b["upper"], b["count"], b["confidence"], b["accuracy"]]
        for c in res.get("conditions", [])
        for b in c["buckets"]
    ]
    return head, rows


def stochastic_csv_rows(res: dict, table: str) -> tuple[list[str], list[list[Any]]]:
    """Risk-aware ranking: value and gain at each risk weight b."""
    head = ["b", "value", "gain", "relative_gain"]
    return head, [[c["b"], c["value"], c["gain"], c["relative_gain"]] for c in res.get("curve", [])]


# Each analysis kind's CSV row builder: (results, table) → (header, rows).
CSV_ROWS: dict[str, Callable[[dict, str], tuple[list[str], list[list[Any]]]]] = {
    "pivots": pivots_csv_rows,
    "metaeval": metaeval_csv_rows,
    "calibration": calibration_csv_rows,
    "budget": budget_csv_rows,
    "stochastic": stochastic_csv_rows,
}


def csv_rows(kind: str, res: dict, table: str = "") -> tuple[list[str], list[list[Any]]]:
    """Header and rows of an analysis' CSV download (``table`` picks a secondary table)."""
    return CSV_ROWS.get(kind, stochastic_csv_rows)(res, table)


@admin_required
def analysis_download(request: HttpRequest, kind: str, pk: int, fmt: str) -> HttpResponse:
    """CSV (one table) or JSON (parameters, qrels version, computed_at and all results) of an analysis."""
    if fmt not in ("csv", "json"):
        raise Http404("downloads are csv or json")
    obj = get_analysis(kind, pk)
    if not obj.results:
        return HttpResponse("This analysis has no results yet.", status=409, content_type="text/plain")
    base = f"{kind}-{obj.pk}"
    if fmt == "json":
        body = json.dumps({"meta": _meta(obj), "results": obj.results}, indent=1)
        resp = HttpResponse(body, content_type="application/json")
        resp["Content-Disposition"] = f'attachment; filename="{base}.json"'
        return resp
    table = request.GET.get("table", "")
    head, rows = csv_rows(kind, obj.results, table)
    return csv_response(f"{base}{'-' + table if table else ''}.csv", head, rows)
