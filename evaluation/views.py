"""Pages: leaderboard (live), runs (upload, per-turn scores, test-set link), run comparison, version history."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any, NamedTuple, TypeVar

from django.conf import settings
from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from ecast.core.csvfiles import csv_response
from ecast.core.jobs import jobs_health
from ecast.core.models import ACTIVE_STATUSES
from ecast.core.pages import query_id, refusal_as_404, refusal_shown
from ecast.core.permissions import admin_required
from ecast.models import Collection
from evaluation import metrics, significance
from evaluation import selectors as sel
from evaluation import services as svc
from evaluation.forms import BaselineForm, RunLinkForm, RunUploadForm
from evaluation.measures import measure_check, measure_registry
from evaluation.models import EvaluationJob, QrelsVersion
from evaluation.plots import history_figures, leaderboard_svg, turn_deltas_svg
from evaluation.scoring import version_measures

T = TypeVar("T")


def _found(obj: T | None, what: str) -> T:
    if obj is None:
        raise Http404(f"no such {what}")
    return obj


def pick_version(request: HttpRequest) -> tuple[Collection | None, QrelsVersion | None]:
    """The collection and qrels version a page is about: from ?version= or ?collection=, else the first collection;
    within a collection, the version judged most recently in ecast, else the oldest."""
    vid = request.GET.get("version") or request.POST.get("version")
    if vid and str(vid).isdigit():
        version = _found(sel.qrels_version_get(version_id=int(vid)), "qrels version")
        return version.collection, version
    cid = request.GET.get("collection") or request.POST.get("collection")
    collection = None
    if cid and str(cid).isdigit():
        collection = get_object_or_404(Collection, pk=int(cid))
    else:
        collection = sel.collection_default()
    if collection is None:
        return None, None
    return collection, sel.qrels_version_default(collection=collection)


def _measure(request: HttpRequest, default: str = metrics.HEADLINE) -> str:
    raw = (request.GET.get("measure") or default).strip()
    with refusal_as_404():
        return measure_check(raw)


class Asked(NamedTuple):
    """The measure a page shows (its stored spelling), the job computing it (None once stored), and the refusal of
    the string asked for ("" when none): the page then shows the headline measure and says why."""

    measure: str
    job: EvaluationJob | None
    error: str
    typed: str


def _measure_asked(request: HttpRequest, version: QrelsVersion | None) -> Asked:
    """The measure of ``?measure=`` for ``version``, stored on demand: any ir_measures string pytrec_eval computes."""
    raw = (request.GET.get("measure") or metrics.HEADLINE).strip()
    # Shown beside the measure field (the page falls back to the headline measure), not as a flash message.
    with refusal_shown(None) as refused:
        if version is None:
            return Asked(measure_check(raw), None, "", raw)
        state = svc.measure_request(version=version, measure=raw, user=request.user)
    if refused:
        return Asked(metrics.HEADLINE, None, refused.text, raw)
    return Asked(state.measure, state.job, "", state.measure)


def _measure_context(asked: Asked) -> dict[str, Any]:
    return {
        "measure": asked.measure,
        "measure_typed": asked.typed,
        "measure_error": asked.error,
        "measure_job": asked.job,
        "measure_choices": metrics.DEFAULT_MEASURES,
        "measure_hints": measure_registry(),
    }


@admin_required
def leaderboard(request: HttpRequest) -> HttpResponse:
    collection, version = pick_version(request)
    asked = _measure_asked(request, version)
    measure = asked.measure
    # Read before the scores, so a write landing in between still reaches the page as an event.
    stamp = sel.scores_stamp(version_id=version.pk) if version else ""
    data = sel.leaderboard_data(version=version, measure=measure) if version else None
    return render(
        request,
        "evaluation/leaderboard.html",
        {
            "collection": collection,
            "version": version,
            "scores_stamp": stamp,
            "collections": sel.collection_list(),
            "versions": sel.qrels_version_list_for_collection(collection_id=collection.pk) if collection else [],
            **_measure_context(asked),
            "data": data,
            "rows": sel.leaderboard_table(data) if data else [],
            "plot": leaderboard_svg(data) if data else "",
            "jobs": sel.job_list(collection_id=collection.pk, limit=sel.RECENT_JOBS) if collection else [],
        },
        status=400 if asked.error else 200,
    )


@admin_required
def leaderboard_plot(request: HttpRequest, pk: int) -> HttpResponse:
    version = _found(sel.qrels_version_get(version_id=pk), "qrels version")
    return HttpResponse(
        leaderboard_svg(sel.leaderboard_data(version=version, measure=_measure(request))), content_type="image/svg+xml"
    )


@admin_required
def leaderboard_export(request: HttpRequest, pk: int, fmt: str) -> HttpResponse:
    version = _found(sel.qrels_version_get(version_id=pk), "qrels version")
    data = sel.leaderboard_data(version=version, measure=_measure(request))
    if fmt == "json":
        resp = JsonResponse(data, json_dumps_params={"indent": 1})
        resp["Content-Disposition"] = f'attachment; filename="leaderboard-{version.pk}.json"'
        return resp
    header, rows, preamble = sel.leaderboard_csv(data)
    return csv_response(f"leaderboard-{version.pk}.csv", header, rows, preamble)


@admin_required
@require_POST
def recompute(request: HttpRequest) -> HttpResponse:
    collection = get_object_or_404(Collection, pk=query_id(request.POST, "collection", what="field") or 0)
    job = svc.evaluation_job_create(collection=collection, kind=EvaluationJob.Kind.FULL, user=request.user)
    messages.success(request, f"Full recompute queued (job {job.pk}); the leaderboard updates when it finishes.")
    return redirect(f"{reverse('evaluation-leaderboard')}?collection={collection.pk}")


# --- runs ---------------------------------------------------------------------------------------------------


@admin_required
def run_list(request: HttpRequest) -> HttpResponse:
    form = RunUploadForm(request.POST or None, request.FILES or None)
    if request.method == "POST" and form.is_valid():
        d = form.cleaned_data
        with refusal_shown(form, field="file") as refused:
            run, job = svc.run_upload(
                collection=d["collection"],
                uploaded=d["file"],
                name=d["name"] or None,
                test_set=d["test_set"],
                user=request.user,
            )
        if not refused:
            messages.success(request, f"Run “{run.name}” imported; evaluation job {job.pk} started.")
            return redirect("evaluation-run", pk=run.pk)
    runs = sel.run_list(collection_id=query_id(request.GET, "collection"))
    jobs = sel.job_list(limit=15)
    health = jobs_health(svc.JOB_KIND, [j.pk for j in jobs])
    active = ACTIVE_STATUSES
    return render(
        request,
        "evaluation/runs.html",
        {
            "form": form,
            "runs": runs[:500],
            "job_rows": [(j, health[j.pk], j.status in active) for j in jobs],
            "collections": sel.collection_list(by_name=False),
        },
    )


@admin_required
def run_detail(request: HttpRequest, pk: int) -> HttpResponse:
    run = _found(sel.run_get(run_id=pk), "run")
    form = RunLinkForm(request.POST or None, initial={"test_set": run.test_set, "description": run.description})
    form.fields["test_set"].queryset = sel.test_set_list(collection_id=run.collection_id)  # type: ignore[attr-defined]
    if request.method == "POST" and form.is_valid():
        with refusal_shown(form) as refused:
            svc.run_update(
                run=run, test_set=form.cleaned_data["test_set"], description=form.cleaned_data["description"]
            )
        if not refused:
            messages.success(request, "Run updated.")
            return redirect("evaluation-run", pk=run.pk)
    versions = list(sel.qrels_version_list_for_collection(collection_id=run.collection_id))
    vid = request.GET.get("version")
    version = next((v for v in versions if str(v.pk) == vid), versions[0] if versions else None)
    asked = _measure_asked(request, version)
    measure = asked.measure
    per_turn = sel.per_turn_scores(run=run, version=version, measure=measure) if version else {}
    other = next((v for v in versions if str(v.pk) == request.GET.get("against")), None)
    delta_plot = ""
    if other is not None and version is not None:
        theirs = sel.per_turn_scores(run=run, version=other, measure=measure)
        delta_plot = turn_deltas_svg(theirs, per_turn, ylabel=f"{measure}: {other.name} − {version.name}")
    return render(
        request,
        "evaluation/run_detail.html",
        {
            "run": run,
            "form": form,
            "versions": versions,
            "version": version,
            "other": other,
            **_measure_context(asked),
            **sel.run_turn_table(per_turn),
            "delta_plot": delta_plot,
            "jobs": sel.run_job_list(run=run),
            "threshold": run.collection.relevance_threshold,
        },
        status=400 if asked.error else 200,
    )


@admin_required
def run_scores_export(request: HttpRequest, pk: int, fmt: str) -> HttpResponse:
    run = _found(sel.run_get(run_id=pk), "run")
    rows = sel.run_score_table(run=run)
    if fmt == "json":
        payload = [{"version": v, "turn": t, "measure": m, "value": x, "threshold": th} for v, t, m, x, th in rows]
        return JsonResponse({"run": run.name, "collection": run.collection.name, "scores": payload})
    return csv_response(
        f"{run.name}-scores.csv",
        ["qrels_version", "turn_id", "measure", "value", "relevance_threshold"],
        [list(r) for r in rows],
        [f"run={run.name}", f"collection={run.collection.name}", "judged turns not ranked score 0 (trec_eval -c)"],
    )


# --- comparison and history -------------------------------------------------------------------------------


@admin_required
def compare(request: HttpRequest) -> HttpResponse:
    collection, version = pick_version(request)
    asked = _measure_asked(request, version)
    measure = asked.measure
    runs = list(sel.run_list_for_collection(collection_id=collection.pk)) if collection else []
    a = next((r for r in runs if str(r.pk) == request.GET.get("a")), None)
    b = next((r for r in runs if str(r.pk) == request.GET.get("b")), None)
    baseline_form, baseline, status, baseline_job = _baseline_form(request, collection, version)
    if baseline_job is not None and asked.job is None:
        asked = asked._replace(job=baseline_job)
    result = plot = None
    if a and b and version:
        pair = sel.run_pair_compare(a=a, b=b, version=version, measure=measure)
        sa, sb, common, result = pair["a"], pair["b"], pair["common"], pair["result"]
        plot = turn_deltas_svg(sa, sb, ylabel=f"{measure}: {a.name} − {b.name}")
        if request.GET.get("format") == "json":
            return JsonResponse(
                {
                    "a": a.name,
                    "b": b.name,
                    "version": version.name,
                    "measure": measure,
                    "threshold": int(version.collection.relevance_threshold),
                    "result": result,
                    "per_turn": {t: {"a": sa[t], "b": sb[t]} for t in common},
                }
            )
    return render(
        request,
        "evaluation/compare.html",
        {
            "collection": collection,
            "version": version,
            "versions": sel.qrels_version_list_for_collection(collection_id=collection.pk) if collection else [],
            "runs": runs,
            "a": a,
            "b": b,
            **_measure_context(asked),
            "result": result,
            "plot": plot,
            "baseline_form": baseline_form,
            "baseline": baseline,
            "test_label": significance.TESTS.get(baseline["test"], "") if baseline else "",
            "correction_label": significance.CORRECTIONS.get(baseline["correction"], "") if baseline else "",
            "resamples": f"{significance.RESAMPLES:,}",
            "seed": significance.SEED,
        },
        status=400 if asked.error else status,
    )


def _baseline_form(
    request: HttpRequest, collection: Collection | None, version: QrelsVersion | None
) -> tuple[BaselineForm, dict[str, Any] | None, int, EvaluationJob | None]:
    """The "every run against a baseline" form of the compare page, its table once submitted, the page status
    (400 when a parameter is refused, the form naming it) and the job computing a measure asked for, if any."""
    runs = sel.run_list_for_collection(collection_id=collection.pk) if collection else sel.run_list().none()
    stored = version_measures(version) if version is not None else None
    if "baseline" not in request.GET:
        return BaselineForm(runs=runs, stored=stored), None, 200, None
    form = BaselineForm(request.GET, runs=runs, stored=stored)
    if not form.is_valid() or version is None:
        return form, None, 400, None
    d = form.cleaned_data
    job = None
    with refusal_shown(form, field="more") as refused:
        measures = list(d["measures"])
        for m in significance.measures_parse(d["more"]) if (d["more"] or "").strip() else []:
            state = svc.measure_request(version=version, measure=m, user=request.user)
            job = job or state.job
            measures.append(state.measure)
    if refused:
        return form, None, 400, None
    if job is not None:
        return form, None, 200, job
    with refusal_shown(form, field="measures") as refused:
        table = sel.baseline_comparison(
            version=version,
            baseline=d["baseline"],
            measures=list(dict.fromkeys(measures)),
            test=d["test"],
            correction=d["correction"],
            alpha=d["alpha"],
        )
    if refused:
        return form, None, 400, None
    return form, table, 200, None


@admin_required
def history(request: HttpRequest) -> HttpResponse:
    collection, version = pick_version(request)
    measure = metrics.HEADLINE
    versions = list(sel.qrels_version_list_for_collection(collection_id=collection.pk)) if collection else []
    against = next((v for v in versions if str(v.pk) == request.GET.get("against")), None)
    data = sel.history_data(version, against, measure) if version else None
    if data is not None and request.GET.get("format") == "json":
        return JsonResponse(data)
    score_plot, rank_plot = history_figures(data["snapshots"] if data else [], measure=measure)
    return render(
        request,
        "evaluation/history.html",
        {
            "collection": collection,
            "version": version,
            "versions": versions,
            "against": against,
            "measure": measure,
            "data": data,
            "score_plot": score_plot,
            "rank_plot": rank_plot,
            "snapshots": list(reversed(data["snapshots"]))[:50] if data else [],
        },
    )


def to_json(value: Any) -> str:
    """Compact JSON for data attributes."""
    return json.dumps(value, separators=(",", ":"))


EVENTS_TICK_S = 0.1  # how often an open stream looks at the version's score stamp (one cache read)
EVENTS_KEEPALIVE_S = 10.0


def _score_events(version_id: int, since: str, seconds: float) -> Iterator[str]:
    # retry: the browser reconnects this soon after the stream ends, so a page is never deaf for long.
    yield "retry: 300\n\n"
    last, quiet_since, end = since, time.monotonic(), time.monotonic() + seconds
    while time.monotonic() < end:
        stamp = sel.scores_stamp(version_id=version_id)
        if stamp != last:
            last, quiet_since = stamp, time.monotonic()
            yield f"id: {stamp}\nevent: scores\ndata: {stamp}\n\n"
        elif time.monotonic() - quiet_since > EVENTS_KEEPALIVE_S:
            quiet_since = time.monotonic()
            yield ": keep-alive\n\n"  # a comment line keeps proxies from closing an idle stream
        time.sleep(EVENTS_TICK_S)


@admin_required
def score_events(request: HttpRequest, pk: int) -> StreamingHttpResponse:
    """Server-sent events: a "scores" event as soon as the version's stored scores change (pushed within a tenth of
    a second of the worker's commit). The stream ends after ECAST_EVENTS_STREAM_SECONDS and the browser reconnects,
    sending the last stamp it saw, so nothing is missed in between."""
    version = get_object_or_404(QrelsVersion, pk=pk)
    since = request.headers.get("Last-Event-ID") or request.GET.get("since") or sel.scores_stamp(version_id=version.pk)
    response = StreamingHttpResponse(
        _score_events(version.pk, since, float(settings.ECAST_EVENTS_STREAM_SECONDS)),
        content_type="text/event-stream",
    )
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"  # nginx: pass events through as they come
    return response
