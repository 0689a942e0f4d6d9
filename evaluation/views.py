"""Pages: leaderboard (live), runs (upload, per-turn scores, test-set link), run comparison, version history."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

from django import forms
from django.conf import settings
from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from ecast.core.csvfiles import csv_response
from ecast.core.jobs import jobs_health
from ecast.core.pages import refusal_as_404, refusal_shown
from ecast.core.permissions import admin_required
from ecast.forms import preselect_single_choices
from ecast.models import Collection, TestSet
from evaluation import metrics, stats
from evaluation import selectors as sel
from evaluation import services as svc
from evaluation.models import EvaluationJob, Qrel, QrelsVersion, Run
from evaluation.plots import bars_svg, deltas_svg, history_svg


def pick_version(request: HttpRequest) -> tuple[Collection | None, QrelsVersion | None]:
    """The collection and qrels version a page is about: from ?version= or ?collection=, else the first collection;
    within a collection, the version judged most recently in ecast, else the oldest."""
    vid = request.GET.get("version") or request.POST.get("version")
    if vid and str(vid).isdigit():
        version = QrelsVersion.objects.select_related("collection").filter(pk=int(vid)).first()
        if version is None:
            raise Http404("no such qrels version")
        return version.collection, version
    cid = request.GET.get("collection") or request.POST.get("collection")
    collection = None
    if cid and str(cid).isdigit():
        collection = get_object_or_404(Collection, pk=int(cid))
    else:
        collection = Collection.objects.filter(qrels_versions__isnull=False).order_by("name").first()
    if collection is None:
        return None, None
    # The version that gained a judgment most recently is the one a person watching the page expects to move;
    # without judgments made in ecast, the oldest ("original").
    judged = (
        Qrel.objects.filter(version__collection=collection, source=Qrel.Source.ASSESSED)
        .order_by("-created_at", "-id")
        .values_list("version_id", flat=True)
        .first()
    )
    versions = QrelsVersion.objects.select_related("collection").filter(collection=collection)
    version = versions.filter(pk=judged).first() if judged else None
    return collection, version or versions.order_by("created_at", "id").first()


def _measure(request: HttpRequest, default: str = metrics.HEADLINE) -> str:
    raw = (request.GET.get("measure") or default).strip()
    with refusal_as_404():
        metrics.parse_measure(raw)
    return raw


def _leaderboard_svg(data: dict[str, Any]) -> str:
    evaluated = [r for r in data["rows"] if r["headline"] is not None]
    return bars_svg(
        [r["run"] for r in evaluated],
        [r["headline"] for r in evaluated],
        [r["stderr"] for r in evaluated],
        ylabel=f"mean {data['measure']} ± s.e. ({data['version']['name']})",
    )


@admin_required
def leaderboard(request: HttpRequest) -> HttpResponse:
    collection, version = pick_version(request)
    measure = _measure(request)
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
            "collections": Collection.objects.order_by("name"),
            "versions": QrelsVersion.objects.filter(collection=collection) if collection else [],
            "measure": measure,
            "measure_choices": metrics.DEFAULT_MEASURES,
            "data": data,
            "rows": [(r, [r["means"].get(m) for m in data["measures"]]) for r in data["rows"]] if data else [],
            "plot": _leaderboard_svg(data) if data else "",
            "jobs": sel.job_list(collection_id=collection.pk, limit=sel.RECENT_JOBS) if collection else [],
        },
    )


@admin_required
def leaderboard_plot(request: HttpRequest, pk: int) -> HttpResponse:
    version = get_object_or_404(QrelsVersion.objects.select_related("collection"), pk=pk)
    return HttpResponse(
        _leaderboard_svg(sel.leaderboard_data(version=version, measure=_measure(request))), content_type="image/svg+xml"
    )


@admin_required
def leaderboard_export(request: HttpRequest, pk: int, fmt: str) -> HttpResponse:
    version = get_object_or_404(QrelsVersion.objects.select_related("collection"), pk=pk)
    data = sel.leaderboard_data(version=version, measure=_measure(request))
    if fmt == "json":
        resp = JsonResponse(data, json_dumps_params={"indent": 1})
        resp["Content-Disposition"] = f'attachment; filename="leaderboard-{version.pk}.json"'
        return resp
    header = ["rank", "run", "test_set", "turns", *data["measures"], f"stderr_{data['measure']}"]
    rows = [
        [r["rank"], r["run"], r["test_set"], r["turns"], *[r["means"].get(m) for m in data["measures"]], r["stderr"]]
        for r in data["rows"]
    ]
    return csv_response(
        f"leaderboard-{version.pk}.csv",
        header,
        rows,
        [
            f"collection={data['collection']}",
            f"qrels_version={version.name}",
            f"relevance_threshold={data['threshold']}",
            "measures are ir_measures strings; binary ones use the threshold",
            data["missing_turns"],
        ],
    )


@admin_required
@require_POST
def recompute(request: HttpRequest) -> HttpResponse:
    collection = get_object_or_404(Collection, pk=request.POST.get("collection") or 0)
    job = svc.evaluation_job_create(collection=collection, kind=EvaluationJob.Kind.FULL, user=request.user)
    messages.success(request, f"Full recompute queued (job {job.pk}); the leaderboard updates when it finishes.")
    return redirect(f"{reverse('evaluation-leaderboard')}?collection={collection.pk}")


# --- runs ---------------------------------------------------------------------------------------------------


class RunUploadForm(forms.Form):
    # A run ranks turns: only collections with turns can take one (the TREC DD demo table has none).
    collection = forms.ModelChoiceField(
        queryset=Collection.objects.filter(turns__isnull=False).distinct().order_by("name")
    )
    file = forms.FileField(help_text="TREC run: qid Q0 docid rank score tag (gzip accepted if the importer does)")
    name = forms.CharField(max_length=200, required=False, help_text="Run name; defaults to the run tag")
    test_set = forms.ModelChoiceField(
        queryset=TestSet.objects.select_related("collection").order_by("collection__name", "kind", "index", "name"),
        required=False,
        empty_label="(none)",
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # The list spans collections, and every collection has its own Rm_1, Rr_1, …
        self.fields["test_set"].label_from_instance = lambda ts: f"{ts.name} · {ts.collection.name}"  # type: ignore[attr-defined]
        preselect_single_choices(self)


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
    collection_id = request.GET.get("collection")
    runs = Run.objects.select_related("collection", "test_set").order_by("collection__name", "name")
    if collection_id and collection_id.isdigit():
        runs = runs.filter(collection_id=int(collection_id))
    jobs = sel.job_list(limit=15)
    health = jobs_health(svc.JOB_KIND, [j.pk for j in jobs])
    active = (EvaluationJob.Status.QUEUED, EvaluationJob.Status.RUNNING)
    return render(
        request,
        "evaluation/runs.html",
        {
            "form": form,
            "runs": runs[:500],
            "job_rows": [(j, health[j.pk], j.status in active) for j in jobs],
            "collections": Collection.objects.all(),
        },
    )


class RunLinkForm(forms.Form):
    test_set = forms.ModelChoiceField(queryset=TestSet.objects.none(), required=False)
    description = forms.CharField(widget=forms.Textarea(attrs={"rows": 2}), required=False)


@admin_required
def run_detail(request: HttpRequest, pk: int) -> HttpResponse:
    run = get_object_or_404(Run.objects.select_related("collection", "test_set"), pk=pk)
    form = RunLinkForm(request.POST or None, initial={"test_set": run.test_set, "description": run.description})
    sets = TestSet.objects.filter(collection=run.collection).order_by("kind", "index", "name")
    form.fields["test_set"].queryset = sets  # type: ignore[attr-defined]
    if request.method == "POST" and form.is_valid():
        with refusal_shown(form) as refused:
            svc.run_update(
                run=run, test_set=form.cleaned_data["test_set"], description=form.cleaned_data["description"]
            )
        if not refused:
            messages.success(request, "Run updated.")
            return redirect("evaluation-run", pk=run.pk)
    versions = list(QrelsVersion.objects.filter(collection=run.collection).order_by("created_at", "id"))
    vid = request.GET.get("version")
    version = next((v for v in versions if str(v.pk) == vid), versions[0] if versions else None)
    measure = _measure(request)
    per_turn = sel.per_turn_scores(run=run, version=version, measure=measure) if version else {}
    other = next((v for v in versions if str(v.pk) == request.GET.get("against")), None)
    delta_plot = ""
    if other is not None and version is not None:
        theirs = sel.per_turn_scores(run=run, version=other, measure=measure)
        common = sorted(set(per_turn) & set(theirs))
        delta_plot = deltas_svg(
            common, [theirs[t] - per_turn[t] for t in common], ylabel=f"{measure}: {other.name} − {version.name}"
        )
    topics: dict[str, list[float]] = {}
    for tid, value in per_turn.items():
        topics.setdefault(tid.split("_")[0], []).append(value)
    return render(
        request,
        "evaluation/run_detail.html",
        {
            "run": run,
            "form": form,
            "versions": versions,
            "version": version,
            "other": other,
            "measure": measure,
            "measure_choices": metrics.DEFAULT_MEASURES,
            "per_turn": sorted(per_turn.items(), key=lambda kv: _turn_key(kv[0])),
            "topics": sorted(((t, sum(v) / len(v), len(v)) for t, v in topics.items()), key=_tkey),
            "mean": metrics.mean(per_turn),
            "delta_plot": delta_plot,
            "jobs": EvaluationJob.objects.filter(run=run).order_by("-created_at")[:5],
            "threshold": run.collection.relevance_threshold,
        },
    )


def _turn_key(turn_id: str) -> tuple:
    head, _, tail = turn_id.partition("_")
    return (int(head) if head.isdigit() else 0, head, int(tail) if tail.isdigit() else 0, tail)


def _tkey(row: tuple) -> tuple:
    return _turn_key(str(row[0]))


@admin_required
def run_scores_export(request: HttpRequest, pk: int, fmt: str) -> HttpResponse:
    run = get_object_or_404(Run.objects.select_related("collection"), pk=pk)
    version_names = dict(QrelsVersion.objects.filter(collection_id=run.collection_id).values_list("pk", "name"))
    stored = sorted(
        (r.version_id, r.turn_id, r.measure, r.value, r.threshold) for r in sel.score_rows(run_ids=[run.pk])
    )
    rows = [(version_names.get(v, ""), t, m, x, th) for v, t, m, x, th in stored]
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
    measure = _measure(request)
    runs = list(Run.objects.filter(collection=collection).order_by("name")) if collection else []
    a = next((r for r in runs if str(r.pk) == request.GET.get("a")), None)
    b = next((r for r in runs if str(r.pk) == request.GET.get("b")), None)
    result = plot = None
    if a and b and version:
        sa = sel.per_turn_scores(run=a, version=version, measure=measure)
        sb = sel.per_turn_scores(run=b, version=version, measure=measure)
        result = stats.paired_compare(sa, sb).as_dict()
        common = sorted(set(sa) & set(sb))
        plot = deltas_svg(common, [sa[t] - sb[t] for t in common], ylabel=f"{measure}: {a.name} − {b.name}")
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
            "versions": QrelsVersion.objects.filter(collection=collection) if collection else [],
            "runs": runs,
            "a": a,
            "b": b,
            "measure": measure,
            "measure_choices": metrics.DEFAULT_MEASURES,
            "result": result,
            "plot": plot,
        },
    )


def history_data(version: QrelsVersion, against: QrelsVersion | None, measure: str) -> dict[str, Any]:
    """Snapshots of one version, and (optionally) ranking stability against another version."""
    snaps = sel.snapshot_history(version=version)
    stability = None
    if against is not None:
        ma = {str(r): v[measure] for r, v in sel.score_means(version=version, measures=[measure]).items()}
        mb = {str(r): v[measure] for r, v in sel.score_means(version=against, measures=[measure]).items()}
        names = dict(Run.objects.filter(pk__in=[int(x) for x in ma]).values_list("pk", "name"))
        res = stats.kendall_tau(
            {names[int(k)]: v for k, v in ma.items()}, {names.get(int(k), k): v for k, v in mb.items()}
        )
        stability = {"from": version.name, "to": against.name, "measure": measure, **res}
    return {
        "version": version.name,
        "threshold": int(version.collection.relevance_threshold),
        "snapshots": [
            {
                "id": s.pk,
                "at": s.created_at.isoformat(),
                "trigger": s.trigger,
                "measure": s.measure,
                "judged_turns": s.judged_turns,
                "qrels": s.qrels_count,
                "entries": s.entries,
            }
            for s in snaps
        ],
        "stability": stability,
    }


@admin_required
def history(request: HttpRequest) -> HttpResponse:
    collection, version = pick_version(request)
    measure = metrics.HEADLINE
    versions = (
        list(QrelsVersion.objects.filter(collection=collection).order_by("created_at", "id")) if collection else []
    )
    against = next((v for v in versions if str(v.pk) == request.GET.get("against")), None)
    data = history_data(version, against, measure) if version else None
    if data is not None and request.GET.get("format") == "json":
        return JsonResponse(data)
    score_series: dict[str, list[tuple[int, float]]] = {}
    rank_series: dict[str, list[tuple[int, float]]] = {}
    for i, snap in enumerate(data["snapshots"] if data else []):
        for e in snap["entries"]:
            score_series.setdefault(e["run"], []).append((i, e["mean"]))
            rank_series.setdefault(e["run"], []).append((i, e["rank"]))
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
            "score_plot": history_svg(score_series, ylabel=f"mean {measure}"),
            "rank_plot": history_svg(rank_series, ylabel="rank", invert=True),
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
