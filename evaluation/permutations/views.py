"""Pages: permutation experiments (create, progress, reports, downloads, run import) and SE/FT/PT labelling."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator
from itertools import chain
from pathlib import Path
from typing import Any

from django import forms
from django.contrib import messages
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse, JsonResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from ecast.core.csvfiles import csv_lines, csv_streaming_response
from ecast.core.fields import IdChoiceField
from ecast.core.jobs import job_health
from ecast.core.pages import query_id, refusal_shown
from ecast.core.permissions import ADMIN, RATER, admin_required, is_admin, role_required
from ecast.forms import preselect_single_choices
from ecast.models import Collection, Conversation
from evaluation.models import Permutation, PermutationExperiment, PermutationResult, QrelsVersion
from evaluation.permutations import orders as perms
from evaluation.permutations import selectors as sel
from evaluation.permutations import services as svc
from evaluation.permutations.plots import experiment_figures
from evaluation.permutations.retrieval import SYSTEMS
from evaluation.permutations.runs import permutation_run_import

labeler_required = role_required(ADMIN, RATER)


class ExperimentForm(forms.Form):
    collection = IdChoiceField(queryset=Collection.objects.filter(turns__isnull=False).distinct())
    name = forms.CharField(max_length=200)
    qrels_version = IdChoiceField(queryset=QrelsVersion.objects.select_related("collection"))
    systems = forms.MultipleChoiceField(
        choices=[(s.id, f"{s.label} — {s.description}") for s in SYSTEMS.values()],
        widget=forms.CheckboxSelectMultiple,
        required=False,
    )
    k = forms.IntegerField(min_value=0, max_value=10_000, initial=100, label="Permutations per conversation (K)")
    seed = forms.IntegerField(initial=0)
    measure = forms.CharField(initial="nDCG@3")
    corpus = forms.ChoiceField(choices=[("qrels", "Judged passages with text"), ("all", "Its whole corpus")])
    depth = forms.IntegerField(min_value=1, max_value=1000, initial=100)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        preselect_single_choices(self)


@admin_required
def experiment_list(request: HttpRequest) -> HttpResponse:
    form = ExperimentForm(request.POST or None, initial={"systems": list(SYSTEMS)})
    if request.method == "POST" and form.is_valid():
        d = form.cleaned_data
        with refusal_shown(form) as refused:
            exp = svc.permutation_experiment_create(
                collection=d["collection"],
                name=d["name"],
                qrels_version=d["qrels_version"],
                systems=d["systems"],
                k=d["k"],
                seed=d["seed"],
                measure=d["measure"],
                corpus=d["corpus"],
                depth=d["depth"],
                created_by=request.user,
            )
        if not refused:
            messages.success(
                request, f"Experiment “{exp.name}” created; its orders are sampled and retrieved in the background."
            )
            return redirect("permutation-experiment", pk=exp.pk)
    page = Paginator(sel.experiment_list(), 25).get_page(request.GET.get("page"))
    return render(request, "evaluation/permutations/list.html", {"form": form, "page": page})


def _systems_param(request: HttpRequest) -> list[str]:
    return [s for s in request.GET.getlist("systems") if s]


@admin_required
def experiment_detail(request: HttpRequest, pk: int) -> HttpResponse:
    exp = get_object_or_404(sel.experiment_list(), pk=pk)
    chosen = _systems_param(request)
    analysis = sel.experiment_analysis(experiment=exp, systems=chosen or None) if exp.scored_at else {}
    all_systems = sorted(
        set(PermutationResult.objects.filter(permutation__experiment=exp).values_list("system", flat=True))
    )
    figures = experiment_figures(analysis, exp.measure, request.GET.getlist("topic"))
    t3 = analysis.get("table3")
    table3 = [(s, t3["matrix"][i], t3["best_margin"].get(s)) for i, s in enumerate(t3["systems"])] if t3 else []
    return render(
        request,
        "evaluation/permutations/detail.html",
        {
            "exp": exp,
            "analysis": analysis,
            **figures,
            "table3": table3,
            "all_systems": [(s, sel.system_label(s), not chosen or s in chosen) for s in all_systems],
            "topics": list(analysis.get("win_fractions", {})),
            "summary": sel.experiment_conversation_summary(experiment=exp),
            "versions": QrelsVersion.objects.filter(collection=exp.collection),
            "progress": sel.experiment_progress(experiment=exp),
            "health": job_health(svc.KIND, exp.pk),
            "active": exp.status not in (PermutationExperiment.Status.SUCCEEDED, PermutationExperiment.Status.FAILED),
        },
    )


@admin_required
def experiment_permutations(request: HttpRequest, pk: int) -> HttpResponse:
    exp = get_object_or_404(PermutationExperiment, pk=pk)
    qs = Permutation.objects.filter(experiment=exp).select_related("conversation").prefetch_related("results")
    if request.GET.get("topic"):
        qs = qs.filter(conversation__topic_id=request.GET["topic"])
    page = Paginator(qs, 50).get_page(request.GET.get("page"))
    systems = sorted({r.system for p in page for r in p.results.all()})
    rows = [
        {"p": p, "scores": [next((r.mean for r in p.results.all() if r.system == s), None) for s in systems]}
        for p in page
    ]
    return render(
        request,
        "evaluation/permutations/permutations.html",
        {"exp": exp, "page": page, "rows": rows, "systems": [sel.system_label(s) for s in systems]},
    )


@admin_required
def experiment_export(request: HttpRequest, pk: int) -> HttpResponse:
    exp = get_object_or_404(PermutationExperiment, pk=pk)
    conv = None
    if request.GET.get("topic"):
        conv = get_object_or_404(Conversation, collection=exp.collection, topic_id=request.GET["topic"])
    topics = sel.permutation_topics(experiment=exp, conversation=conv)
    resp = HttpResponse(json.dumps(topics, indent=1, ensure_ascii=False), content_type="application/json")
    resp["Content-Disposition"] = f'attachment; filename="permutations-{exp.pk}.json"'
    return resp


@admin_required
def experiment_scores_csv(request: HttpRequest, pk: int) -> StreamingHttpResponse:
    exp = get_object_or_404(PermutationExperiment, pk=pk)
    header = ["topic", "permutation_id", "index", "is_original", "order", "system", "turn_id", exp.measure,
              "qrels_version"]  # fmt: skip
    version = exp.scored_version.name if exp.scored_version else ""
    qs = PermutationResult.objects.filter(permutation__experiment=exp).select_related("permutation__conversation")

    def rows() -> Iterator[list[Any]]:
        for r in qs.order_by("permutation__conversation_id", "permutation__index", "system").iterator(chunk_size=2000):
            p = r.permutation
            base = [p.conversation.topic_id, f"perm{p.pk}", p.index, p.is_original, " ".join(map(str, p.order))]
            yield [*base, sel.system_label(r.system), "mean", "" if r.mean is None else f"{r.mean:.6f}", version]
            for tid, v in sorted(r.per_turn.items()):
                yield [*base, sel.system_label(r.system), tid, f"{v:.6f}", version]

    return csv_streaming_response(f"permutation-scores-{exp.pk}.csv", csv_lines(chain([header], rows())))


@admin_required
def experiment_analysis_json(request: HttpRequest, pk: int) -> HttpResponse:
    exp = get_object_or_404(sel.experiment_list(), pk=pk)
    data = sel.experiment_analysis(experiment=exp, systems=_systems_param(request) or None)
    resp = JsonResponse(data, json_dumps_params={"indent": 1})
    resp["Content-Disposition"] = f'attachment; filename="permutation-analysis-{exp.pk}.json"'
    return resp


@admin_required
@require_POST
def experiment_set_version(request: HttpRequest, pk: int) -> HttpResponse:
    exp = get_object_or_404(PermutationExperiment, pk=pk)
    version = get_object_or_404(QrelsVersion, pk=request.POST.get("version"))
    with refusal_shown(request) as refused:
        svc.permutation_experiment_set_version(experiment=exp, version=version)
    if not refused:
        messages.success(request, f"Rescoring against “{version.name}” in the background.")
    return redirect("permutation-experiment", pk=pk)


@admin_required
@require_POST
def experiment_import_runs(request: HttpRequest, pk: int) -> HttpResponse:
    exp = get_object_or_404(PermutationExperiment, pk=pk)
    files = request.FILES.getlist("runs")
    if not files:
        messages.error(request, "Choose one or more run files.")
    for f in files:
        name = f.name or "run.txt"
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / Path(name).name
            with path.open("wb") as out:
                for chunk in f.chunks():
                    out.write(chunk)
            with refusal_shown(request) as refused:
                res = permutation_run_import(experiment=exp, path=path, file_name=name, user=request.user)
            if not refused:
                messages.success(request, f"{name}: linked to perm{res.permutation_id} as system “{res.system}”.")
    return redirect("permutation-experiment", pk=pk)


# ---------------------------------------------------------------- labelling


@labeler_required
def labels_index(request: HttpRequest) -> HttpResponse:
    collections = Collection.objects.all()
    coll = None
    chosen = query_id(request.GET, "collection")
    if chosen is not None:
        coll = get_object_or_404(Collection, pk=chosen)
    else:  # the first collection with conversations to label (a meta-evaluation table has none)
        coll = collections.filter(conversations__isnull=False).first() or collections.first()
    ctx: dict = {"collections": collections, "coll": coll, "admin": is_admin(request.user)}
    if coll is not None:
        ctx["rows"] = sel.conversations_with_label_status(collection=coll, user=request.user)
        if ctx["admin"]:
            ctx["agreement"] = sel.label_agreement(collection=coll)
    return render(request, "evaluation/permutations/labels_index.html", ctx)


@admin_required
@require_POST
def labels_adopt_majority(request: HttpRequest, pk: int) -> HttpResponse:
    coll = get_object_or_404(Collection, pk=pk)
    r = svc.utterance_labels_adopt_majority(collection=coll)
    messages.success(request, f"Majority adopted: {r['changed']} turns changed, {r['ties']} ties left alone.")
    return redirect(f"{reverse('utterance-labels')}?collection={coll.pk}")


@admin_required
@require_POST
def labels_derive(request: HttpRequest, pk: int) -> HttpResponse:
    coll = get_object_or_404(Collection, pk=pk)
    r = svc.utterance_classes_derive(collection=coll, overwrite=bool(request.POST.get("overwrite")))
    messages.success(
        request,
        f"Derived classes for {r['turns_set']} turns; {len(r['unguaranteed'])} annotated dependencies are chains "
        "the SE/FT/PT rules cannot guarantee"
        + (f" (e.g. {', '.join(r['unguaranteed'][:5])})." if r["unguaranteed"] else "."),
    )
    return redirect(f"{reverse('utterance-labels')}?collection={coll.pk}")


@labeler_required
def labels_conversation(request: HttpRequest, pk: int) -> HttpResponse:
    conv = get_object_or_404(Conversation.objects.select_related("collection"), pk=pk)
    # A tree (CAsT 2022) is labelled path by path, as it is permuted: the page shows one path's User turns to label
    # with the System turns between them as context, and j/k, the forest and the order count follow that path.
    paths = sel.conversation_paths(conversation=conv)
    names = [name for name, _turns in paths]
    at = names.index(request.GET["path"]) if request.GET.get("path") in names else 0
    path, turns = paths[at]
    visible = sel.labels_visible_to(user=request.user, conversation=conv)
    siblings = list(conv.collection.conversations.order_by("id").values_list("pk", flat=True))
    i = siblings.index(conv.pk)
    here = reverse("utterance-label-conversation", args=[conv.pk])
    neighbours = [reverse("utterance-label-conversation", args=[c]) for c in siblings]
    previous = f"{here}?path={names[at - 1]}" if at > 0 else (neighbours[i - 1] if i > 0 else None)
    following = (
        f"{here}?path={names[at + 1]}"
        if at + 1 < len(names)
        else (neighbours[i + 1] if i + 1 < len(siblings) else None)
    )
    data = [
        {
            "id": t.pk,
            "number": t.number,
            "label": t.label,
            "turn_id": t.turn_id,
            "system": t.is_system,
            "mixed_initiative": t.get_mixed_initiative_display() if t.mixed_initiative else "",
            "text": t.canonical_response_text if t.is_system else t.raw_utterance,
            "cls": visible.get(t.pk, ""),
        }
        for t in turns
    ]
    return render(
        request,
        "evaluation/permutations/label.html",
        {
            "conv": conv,
            "turns": data,
            "path": path,
            "paths": [(name, f"{here}?path={name}", n == at) for n, name in enumerate(names)] if path else [],
            "admin": is_admin(request.user),
            "prev_url": previous,
            "next_url": following,
            "classes": perms.CLASSES,
        },
    )
