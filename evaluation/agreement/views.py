"""The agreement page (two qrels versions of one collection) and the CSV of the item pairs behind each number."""

from __future__ import annotations

import re
from typing import Any

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render

from ecast.core.csvfiles import csv_response
from ecast.core.pages import refusal_as_404, refusal_shown
from ecast.core.permissions import admin_required
from ecast.models import Collection
from evaluation import metrics
from evaluation import selectors as sel
from evaluation.agreement import response_selectors as rsel
from evaluation.agreement import selectors as asel
from evaluation.models import QrelsVersion, ResponseLabelSet


def version_param(value: str | None, field: str) -> QrelsVersion | None:
    """The qrels version a query parameter names (None when absent); 404 for anything else."""
    if not value:
        return None
    if not value.isdigit():
        raise Http404(f"{field}: not a qrels version id")
    return get_object_or_404(QrelsVersion.objects.select_related("collection"), pk=int(value))


def measure_param(value: str | None) -> str:
    """An ir_measures string (default the headline measure); 404 for one ir_measures cannot parse."""
    raw = (value or metrics.HEADLINE).strip()
    with refusal_as_404():
        metrics.parse_measure(raw)
    return raw


def pick_pair(request: HttpRequest) -> tuple[Collection | None, QrelsVersion | None, QrelsVersion | None]:
    """Collection and versions A and B from ?a=&b= (or ?collection=), with the defaults for what is missing."""
    a = version_param(request.GET.get("a"), "a")
    b = version_param(request.GET.get("b"), "b")
    cid = request.GET.get("collection") or ""
    collection: Collection | None
    if a is not None:
        collection = a.collection
    elif b is not None:
        collection = b.collection
    elif cid.isdigit():
        collection = get_object_or_404(Collection, pk=int(cid))
    else:
        collection = next(iter(asel.collections_with_versions()), None)
    if collection is None:
        return None, None, None
    if a is None and b is not None:
        # Only B given: A is the default, or B's parent when B is the default A itself.
        a, _ = asel.default_pair(collection=collection)
        if a is not None and a.pk == b.pk:
            a = b.parent or asel.default_pair(collection=collection, a=b)[1]
        return collection, a, b
    a, default_b = asel.default_pair(collection=collection, a=a)
    return collection, a, b or default_b


def _cells(
    matrix: list[list[int]], rows: list[int], columns: list[int]
) -> list[tuple[int, list[tuple[int, int, float]]]]:
    """Rows (grade of A, [(grade of B, count, share of the largest cell)]) for a shaded confusion table."""
    top = max((c for row in matrix for c in row), default=0) or 1
    return [
        (ga, [(gb, c, c / top) for gb, c in zip(columns, row, strict=True)])
        for ga, row in zip(rows, matrix, strict=True)
    ]


def _pct(share: float | None) -> str:
    return "—" if share is None else f"{100 * share:.1f}%"


@admin_required
def agreement(request: HttpRequest) -> HttpResponse:
    """The agreement report of two qrels versions (defaults: "original" against its newest derived version)."""
    collection, a, b = pick_pair(request)
    measure = measure_param(request.GET.get("measure"))
    versions = list(sel.qrels_version_list_for_collection(collection_id=collection.pk)) if collection else []
    context: dict[str, Any] = {
        "collections": asel.collections_with_versions(),
        "collection": collection,
        "versions": versions,
        "a": a,
        "b": b,
        "measure": measure,
        "measure_choices": metrics.DEFAULT_MEASURES,
        "report": None,
        "error": "",
    }
    if a is not None and b is not None:
        with refusal_shown() as refused:
            report = asel.agreement_report(a=a, b=b, measure=measure)
        if refused:
            context["error"] = refused.text
        else:
            context["report"] = report
            context["query"] = f"a={a.pk}&b={b.pk}"
            context["confusion"] = _cells(report["confusion"], report["scale_a"], report["scale_b"])
            context["binary_confusion"] = _cells(report["binary"]["confusion"], [0, 1], [0, 1])
            context["exact_pct"] = _pct(report["exact"])
            context["binary_exact_pct"] = _pct(report["binary"]["exact"])
            context["overlap_pct"] = _pct(report["binary"]["overlap"])
            ids = report["ranking"]["run_ids"]
            context["systems"] = [{**r, "run_id": ids.get(r["system"])} for r in report["ranking"]["systems"]]
            context["swapped"] = [
                {**r, "x_id": ids.get(r["x"]), "y_id": ids.get(r["y"])} for r in report["ranking"]["swapped"]
            ]
            # The adjudication of A and B (judging.relevance.adjudication) writes into a version named for both.
            context["disagreements"] = asel.disagreements(report)
            context["adjudicated"] = asel.adjudicated_version(a=a, b=b)
            context["topics"] = [
                {**t, "exact_pct": _pct(t["exact"]), "overlap_pct": _pct(t["overlap"])} for t in report["topics"]
            ]
    context.update(response_section(request, collection))
    return render(request, "evaluation/agreement.html", context)


def label_set_param(value: str | None, field: str) -> ResponseLabelSet | None:
    """The response label set a query parameter names (None when absent); 404 for anything else."""
    if not value:
        return None
    if not value.isdigit():
        raise Http404(f"{field}: not a label set id")
    return get_object_or_404(ResponseLabelSet.objects.select_related("collection", "bank"), pk=int(value))


def response_section(request: HttpRequest, collection: Collection | None) -> dict[str, Any]:
    """The response-label part of the report: two label sets of one kind (?ra=&rb=, defaults as for versions)."""
    ra = label_set_param(request.GET.get("ra"), "ra")
    rb = label_set_param(request.GET.get("rb"), "rb")
    picked = ra or rb
    owner = picked.collection if picked else collection or next(iter(rsel.collections_with_label_sets()), None)
    out: dict[str, Any] = {"response_collection": owner, "response_sets": [], "response_report": None}
    if owner is None:
        return out
    sets = out["response_sets"] = rsel.response_label_sets(collection=owner)
    if ra is None:
        ra, default_b = rsel.response_default_pair(sets)
        if rb is not None and (ra is None or ra.pk == rb.pk):
            # Only B given (an LLM job's "Agreement" link): A is a set of its kind other than B itself.
            ra = rsel.response_default_pair(sets, a=rb)[1]
    else:
        default_b = rsel.response_default_pair(sets, a=ra)[1]
    rb = rb or default_b
    out.update(ra=ra, rb=rb)
    if (ra is None) != (rb is None):
        # One set named (a link from its page or its LLM job) and nothing labels its items: say so, rather than
        # pairing it with a set of another kind that shares no item with it.
        alone = ra or rb
        assert alone is not None
        out["response_error"] = (
            f"nothing to compare {alone.name!r} with: no other set of {owner.name} labels "
            f"{alone.get_kind_display().lower()}{' of its nugget bank' if alone.bank_id else ''}. Have an LLM or a "
            "second assessor label the same answers."
        )
        out["response_partners"] = []
        return out
    if ra is None or rb is None:
        return out
    with refusal_shown() as refused:
        report = rsel.response_agreement_report(a=ra, b=rb)
    if refused:
        out["response_error"] = refused.text
        # What A can be compared with, so the admin can pick it.
        out["response_partners"] = rsel.partners_of(ra, sets)
        return out
    labels = report["labels"]
    top = max((c for row in report["confusion"] for c in row), default=0) or 1
    out["response_report"] = report
    out["response_confusion"] = [
        (la, [(lb, c, c / top) for lb, c in zip(labels, row, strict=True)])
        for la, row in zip(labels, report["confusion"], strict=True)
    ]
    out["response_exact_pct"] = _pct(report["exact"])
    out["response_topics"] = [{**t, "exact_pct": _pct(t["exact"])} for t in report["topics"]]
    out["response_conditions"] = [{**c, "exact_pct": _pct(c["exact"])} for c in report["conditions"]]
    return out


def _int_param(request: HttpRequest, name: str) -> int | None:
    value = request.GET.get(name, "")
    if value == "":
        return None
    try:
        return int(value)
    except ValueError as exc:
        raise Http404(f"{name}: not an integer") from exc


@admin_required
def agreement_items_csv(request: HttpRequest) -> HttpResponse:
    """The item pairs behind a number of the report, as CSV (filters: topic, ga/gb grades, binary, only)."""
    a = version_param(request.GET.get("a"), "a")
    b = version_param(request.GET.get("b"), "b")
    if a is None or b is None:
        raise Http404("a and b (qrels version ids) are required")
    topic = request.GET.get("topic") or None
    grade_a, grade_b = _int_param(request, "ga"), _int_param(request, "gb")
    binary = request.GET.get("binary") == "1"
    only = request.GET.get("only") or None
    if only not in (None, "a", "b"):
        raise Http404("only: a or b")
    with refusal_shown() as refused:
        rows = asel.agreement_items(a=a, b=b, topic=topic, grade_a=grade_a, grade_b=grade_b, binary=binary, only=only)
    if refused:
        return HttpResponse(refused.text, status=400, content_type="text/plain; charset=utf-8")
    label = "relevant" if binary else "grade"
    chosen = [
        f"topic {topic}" if topic is not None else "",
        f"{label} under A = {grade_a}" if grade_a is not None else "",
        f"{label} under B = {grade_b}" if grade_b is not None else "",
        f"judged only in {only.upper()}" if only else "",
    ]
    parts = [
        str(a.pk),
        str(b.pk),
        "bin" if binary else "",
        f"topic{topic}" if topic is not None else "",
        f"a{grade_a}" if grade_a is not None else "",
        f"b{grade_b}" if grade_b is not None else "",
        f"only-{only}" if only else "",
    ]
    # The topic comes from the query string: only safe characters reach the Content-Disposition header.
    name = re.sub(r"[^\w.-]", "_", "-".join(["agreement", *(p for p in parts if p)]))
    return csv_response(
        f"{name}.csv",
        ["topic", "turn_id", "item_id", "grade_a", "grade_b", "relevant_a", "relevant_b", "same_grade"],
        [
            [
                r["topic"],
                r["turn"],
                r["item"],
                r["a"],
                r["b"],
                r["relevant_a"],
                r["relevant_b"],
                "" if r["a"] is None or r["b"] is None else int(r["a"] == r["b"]),
            ]
            for r in rows
        ],
        [
            f"collection={a.collection.name}",
            f"A={a.name} (qrels version {a.pk})",
            f"B={b.name} (qrels version {b.pk})",
            f"relevance_threshold={rows[0]['threshold'] if rows else a.collection.relevance_threshold}"
            " (relevant = grade at or above it)",
            "items: " + ("; ".join(c for c in chosen if c) or "every item judged in both"),
            f"rows={len(rows)}",
        ],
    )
