"""Pages for relevance judging: the assessor's queue and judging page, the admin's pools & qrels pages."""

from __future__ import annotations

from typing import cast
from urllib.parse import urlencode

from django import forms
from django.contrib import messages
from django.contrib.auth import get_user_model
from django.core.paginator import Paginator
from django.db.models import Q
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from ecast.core.fields import IdChoiceField, IdMultipleChoiceField, out_of_range
from ecast.core.jobs import job_health
from ecast.core.pages import query_id, refusal_shown
from ecast.core.permissions import ASSESSOR, admin_required, role_required
from ecast.forms import preselect_single_choices
from ecast.imports.services import import_job_start
from ecast.imports.views import body_too_large
from ecast.models import Collection, Conversation, ImportJob, Passage
from evaluation.adjudication import DEFAULT_STRATEGY, STRATEGIES
from evaluation.models import QrelsVersion, Run
from evaluation.robustness.selectors import labelled_runs
from evaluation.robustness.views import robustness_params
from judging.models import GRADE_LABELS, Pool
from judging.nuggets import selectors as nugget_selectors
from judging.relevance import adjudication, ordering, pools, texts, versions
from judging.relevance import selectors as sel
from judging.relevance import services as svc
from judging.relevance.apis import export_file_name, qrels_streaming_response
from judging.relevance.qrels_export import AGGREGATIONS

assessor_required = role_required(ASSESSOR)


# ---------------------------------------------------------------- assessor pages


@assessor_required
def queue(request: HttpRequest) -> HttpResponse:
    """My judging queue: my topics with progress, the pools I can take a topic from, and the answer-judging tasks
    (nugget assignment, citation support) open to me."""
    assignments = list(sel.assignments_for(user=request.user))
    for a in assignments:
        a.progress = sel.assignment_progress(assignment=a)  # type: ignore[attr-defined]
    return render(
        request,
        "judging/relevance/queue.html",
        {
            "assignments": assignments,
            "pools": sel.pools_open_for(user=request.user),
            "adjudications": adjudication.adjudications_open(),
            "response_tasks": nugget_selectors.tasks_open_for(user=request.user),
        },
    )


@require_POST
@assessor_required
def take(request: HttpRequest, pk: int) -> HttpResponse:
    """Lease the next topic of a pool (or reopen my unfinished one) and go judge it."""
    open_pools = {p.pk: p for p in sel.pools_open_for(user=request.user)}
    if pk not in open_pools:
        messages.error(request, "That pool is not open to you.")
        return redirect("relevance-queue")
    with refusal_shown(request) as refused:
        assignment = svc.assignment_take(pool=open_pools[pk], assessor=request.user)
    if refused:
        return redirect("relevance-queue")
    return redirect("relevance-judge", pk=assignment.pk)


@assessor_required
def judge(request: HttpRequest, pk: int) -> HttpResponse:
    """Judge one topic, one passage at a time, keyboard first."""
    assignment = sel.assignment_for(user=request.user, pk=pk)
    if assignment.pool.kind == Pool.Kind.PTKB:
        return redirect("ptkb-judge", pk=pk)  # statements are judged a turn at a time, on their own page
    data = sel.assignment_items(assignment=assignment)
    data["progress"] = sel.assignment_progress(assignment=assignment)
    data["submit_url"] = reverse("api-relevance-judgment-submit", args=[assignment.pk])
    data["queue_url"] = reverse("relevance-queue")
    conv = assignment.conversation
    title = conv.title.strip()
    return render(
        request,
        "judging/relevance/judge.html",
        {
            "assignment": assignment,
            # Importers without titles name topics "Topic <id>"; repeating that next to the id is noise.
            "topic_title": "" if title.lower() == f"topic {conv.topic_id}".lower() else title,
            "data": data,
            "grades": [(g, *GRADE_LABELS[g]) for g in range(4, -1, -1)],
        },
    )


# ---------------------------------------------------------------- admin pages


class PoolCreateForm(forms.Form):
    name = forms.CharField(required=False, max_length=200)
    qrels_version = IdChoiceField(queryset=QrelsVersion.objects.none(), label="Unjudged in qrels version")
    runs = IdMultipleChoiceField(queryset=Run.objects.none(), widget=forms.CheckboxSelectMultiple)
    depth = forms.IntegerField(min_value=1, max_value=pools.MAX_DEPTH, initial=3)
    turn_ids = forms.CharField(
        required=False, help_text="Optional: restrict to these turn ids (space or comma separated, e.g. 81_1 81_2)."
    )
    text_only = forms.BooleanField(
        required=False,
        label="Only passages with text",
        help_text="Depth counted over passages with text: each ranking is walked past passages without text.",
    )
    feed_version = forms.BooleanField(
        required=False,
        initial=True,
        label="Feed a derived qrels version",
        help_text="Judgments go into “<qrels version> + <pool name>”, created if missing.",
    )
    cluster_near_duplicates = forms.BooleanField(required=False, label="Cluster near-duplicate passages")
    cluster_threshold = forms.FloatField(min_value=0.01, max_value=1.0, initial=0.9, label="Shingle Jaccard ≥")
    assessors_per_pair = forms.IntegerField(min_value=1, max_value=10, initial=1)
    aggregation = forms.ChoiceField(choices=[(a, a) for a in AGGREGATIONS], initial="majority")
    strategy = forms.ChoiceField(
        required=False,  # scripts posting the older form get the classic order
        choices=list(STRATEGIES.items()),
        initial=DEFAULT_STRATEGY,
        label="Judging order",
        help_text="Move-to-front and MM-NS hand out next the pair most likely relevant, learning from each judgment.",
    )

    prior_version = IdChoiceField(
        queryset=QrelsVersion.objects.none(),
        required=False,
        label="Prior for the bandit",
        help_text="MM / MM-NS only: documents this version already grades seed each run's weight.",
    )

    def __init__(self, *args, collection: Collection, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["prior_version"].queryset = QrelsVersion.objects.filter(collection=collection)  # type: ignore[attr-defined]
        self.fields["prior_version"].label_from_instance = lambda v: v.name  # type: ignore[attr-defined]
        self.fields["qrels_version"].queryset = QrelsVersion.objects.filter(collection=collection)  # type: ignore[attr-defined]
        self.fields["qrels_version"].label_from_instance = lambda v: v.name  # type: ignore[attr-defined]
        # Without qrels (CAsT 2022, iKAT straight after import) the pool starts an empty "judged here" version.
        self.empty_base = not QrelsVersion.objects.filter(collection=collection).exists()
        if self.empty_base:
            field = self.fields["qrels_version"]
            field.required = False
            field.empty_label = f"{versions.JUDGING_BASE_NAME} (new, empty)"  # type: ignore[attr-defined]
            field.help_text = (
                f"This collection has no qrels yet: the pool creates an empty “{versions.JUDGING_BASE_NAME}” "
                "version, so every pooled passage is unjudged, and its judgments go into the version derived from it."
            )
        # Pools usually complete the imported judgments: start on the first imported version ("original").
        imported = QrelsVersion.objects.filter(collection=collection, parent__isnull=True).order_by("created_at")
        if imported.exists():
            self.fields["qrels_version"].initial = imported.first().pk  # type: ignore[union-attr]
        self.fields["runs"].queryset = Run.objects.filter(collection=collection)  # type: ignore[attr-defined]
        # On by default when any text exists; the coverage preview then sets it from the chosen runs' passages.
        self.fields["text_only"].initial = Passage.objects.exclude(text="").exists()
        preselect_single_choices(self)


class PassageTextsForm(forms.Form):
    file = forms.FileField(label="Passage texts", help_text="TSV id<TAB>text or JSONL (.jsonl), plain or .gz; UTF-8.")
    only_needed = forms.BooleanField(
        required=False,
        initial=True,
        label="Store only the texts this collection needs",
        help_text="Passages pooled, judged or ranked by a run of the collection; the rest of the file is skipped.",
    )


def _pool_created_message(pool: Pool) -> str:
    if pool.status == Pool.Status.BUILDING:
        return f"Pool {pool.name!r} is being built in the background; this page refreshes until it is ready."
    return f"Pool {pool.name!r} created with {pool.stats.get('pairs', 0)} pairs."


@admin_required
def admin_index(request: HttpRequest) -> HttpResponse:
    """Pools & qrels: every pool, every qrels version with exports, and the pool-creation form."""
    # Pools are made from runs: every collection with turns is listed, those without runs marked and not offered.
    collections = sel.collections_for_pooling()
    poolable = [c for c in collections if c.n_runs]  # type: ignore[attr-defined]
    coll_id = request.POST.get("collection") or request.GET.get("collection")
    collection = next((c for c in poolable if str(c.pk) == str(coll_id)), poolable[0] if poolable else None)
    form = None
    if collection is not None:
        form = PoolCreateForm(request.POST or None, collection=collection)
        if request.method == "POST" and form.is_valid():
            d = form.cleaned_data
            with refusal_shown(form) as refused:
                pool = pools.pool_create_start(
                    collection=collection,
                    qrels_version=d["qrels_version"],
                    runs=list(d["runs"]),
                    depth=d["depth"],
                    turn_ids=pools.split_turn_ids(d["turn_ids"]),
                    name=d["name"],
                    text_only=d["text_only"],
                    feed_version=d["feed_version"],
                    cluster_near_duplicates=d["cluster_near_duplicates"],
                    cluster_threshold=d["cluster_threshold"],
                    assessors_per_pair=d["assessors_per_pair"],
                    aggregation=d["aggregation"],
                    strategy=d["strategy"] or DEFAULT_STRATEGY,
                    prior_version=d["prior_version"],
                    created_by=request.user,
                )
            if not refused:
                messages.success(request, _pool_created_message(pool))
                return redirect("relevance-pool", pk=pool.pk)
    return render(
        request,
        "judging/relevance/admin_index.html",
        {
            # PTKB tasks have their own page (judging/ptkb); this one lists the passage pools.
            "pools": sel.pool_list().filter(kind=Pool.Kind.PASSAGES),
            "versions": sel.qrels_versions(),
            "collections": collections,
            "collection": collection,
            "form": form,
            "aggregations": AGGREGATIONS,
            "preview_url": reverse("api-relevance-pool-preview"),
            "base_name": versions.JUDGING_BASE_NAME,
        },
    )


@admin_required
def pool_detail(request: HttpRequest, pk: int) -> HttpResponse:
    """A pool: statistics, per-run contribution, per-topic progress, grades so far, and its admin actions."""
    pool = sel.pool_get(pk=pk)
    if pool.kind == Pool.Kind.PTKB:
        return redirect("ptkb-task", pk=pk)
    user_model = get_user_model()
    assessors = user_model.objects.filter(Q(groups__name=ASSESSOR)).distinct().order_by("username")
    per_turn = pool.stats.get("per_turn", {})
    topics = sel.pool_topic_progress(pool=pool)
    return render(
        request,
        "judging/relevance/pool.html",
        {
            "pool": pool,
            "health": job_health(pools.KIND, pool.pk),
            "building": pool.status == Pool.Status.BUILDING,
            "per_run": sorted(pool.stats.get("per_run", {}).items()),
            "per_turn": list(per_turn.items()),
            "topics": topics,
            "summary": sel.pool_judgment_summary(pool=pool),
            "curve": ordering.pool_found_curve(pool=pool),
            "other_curves": ordering.collection_found_by_pool(pool=pool),
            "assessors": assessors,
            "pool_assessors": set(pool.assessors.values_list("pk", flat=True)),
            "conversations": Conversation.objects.filter(pk__in=[t["conversation_id"] for t in topics]),
            "parents": QrelsVersion.objects.filter(collection=pool.collection),
            "derived": QrelsVersion.objects.filter(collection=pool.collection, parent__isnull=False),
            "grade_labels": GRADE_LABELS,
            "aggregations": AGGREGATIONS,
            "texts_form": PassageTextsForm(),
            "text_imports": ImportJob.objects.filter(kind__in=texts.PASSAGE_KINDS, collection=pool.collection).order_by(
                "-created_at"
            )[:5],
            "without_text": pool.stats.get("pairs", 0) - pool.stats.get("with_text", 0),
        },
    )


def _corpus_kind(file_name: str) -> str:
    """JSONL by its extension (.jsonl, .json, .ndjson, optionally .gz), else TSV."""
    name = file_name.lower().removesuffix(".gz")
    return "passages_jsonl" if name.endswith((".jsonl", ".json", ".ndjson")) else "passages_tsv"


@require_POST
@admin_required
def pool_texts(request: HttpRequest, pk: int) -> HttpResponse:
    """Upload passage texts for the pool's collection: a background corpus import (progress on its job page); when
    it succeeds, the pairs whose passage got text are marked (``texts.pool_texts_refresh``)."""
    pool = get_object_or_404(Pool, pk=pk)
    too_large = body_too_large(request)
    if too_large:
        messages.error(request, too_large)
        return redirect("relevance-pool", pk=pool.pk)
    form = PassageTextsForm(request.POST, request.FILES)
    if not form.is_valid():
        messages.error(request, "Choose a TSV or JSONL file of passage texts.")
        return redirect("relevance-pool", pk=pool.pk)
    upload = form.cleaned_data["file"]
    job = import_job_start(
        kind=_corpus_kind(upload.name),
        uploaded=upload,
        collection=pool.collection,
        options={"only_needed": "true"} if form.cleaned_data["only_needed"] else {},
        user=request.user,
    )
    return redirect("import-job", pk=job.pk)


PAIR_FILTERS = ("", "judged", "unjudged", "disagreements")


@admin_required
def pool_pairs(request: HttpRequest, pk: int) -> HttpResponse:
    """The pool's pairs with runs, clusters and every assessor's grade; filter by turn and status."""
    pool = sel.pool_get(pk=pk)
    only = request.GET.get("only", "")
    only = only if only in PAIR_FILTERS else ""
    turn_id = request.GET.get("turn", "").strip()
    rows = sel.pool_pairs(pool=pool, turn_id=turn_id, only=only)
    page = Paginator(rows, 100).get_page(request.GET.get("page"))
    querystring = urlencode({k: v for k, v in (("turn", turn_id), ("only", only)) if v})
    return render(
        request,
        "judging/relevance/pairs.html",
        {
            "pool": pool,
            "page": page,
            "only": only,
            "turn": turn_id,
            "filters": PAIR_FILTERS,
            "querystring": querystring,
        },
    )


def _back(request: HttpRequest, pool: Pool, ok: str = "") -> HttpResponse:
    if ok:
        messages.success(request, ok)
    return redirect("relevance-pool", pk=pool.pk)


@require_POST
@admin_required
def pool_assign(request: HttpRequest, pk: int) -> HttpResponse:
    """Lease a topic of the pool to a named assessor."""
    pool = get_object_or_404(Pool, pk=pk)
    user = get_object_or_404(get_user_model(), pk=query_id(request.POST, "assessor", what="field") or 0)
    conversation = get_object_or_404(Conversation, pk=query_id(request.POST, "conversation", what="field") or 0)
    with refusal_shown(request) as refused:
        a = svc.assignment_create(pool=pool, conversation=conversation, assessor=user, assigned_by=request.user)
    if refused:
        return _back(request, pool)
    return _back(request, pool, ok=f"Topic {conversation.topic_id} assigned to {user.username} (slot {a.slot}).")


@require_POST
@admin_required
def pool_assessors(request: HttpRequest, pk: int) -> HttpResponse:
    """Restrict which assessors may take topics (none ticked = every assessor)."""
    pool = get_object_or_404(Pool, pk=pk)
    ids = [int(x) for x in request.POST.getlist("assessors") if x.isdigit() and not out_of_range(x)]
    pool.assessors.set(get_user_model().objects.filter(pk__in=ids, groups__name=ASSESSOR))
    return _back(request, pool, ok="Assessors updated.")


@require_POST
@admin_required
def pool_derive(request: HttpRequest, pk: int) -> HttpResponse:
    """Create "<parent> + new" fed by this pool, or attach the pool to an existing derived version."""
    pool = get_object_or_404(Pool, pk=pk)
    with refusal_shown(request) as refused:
        if request.POST.get("existing"):
            version = get_object_or_404(QrelsVersion, pk=query_id(request.POST, "existing", what="field"))
            versions.pool_attach_version(pool=pool, version=version)
        else:
            parent = get_object_or_404(QrelsVersion, pk=query_id(request.POST, "parent", what="field") or 0)
            version = versions.qrels_version_derive(
                parent=parent, pool=pool, name=request.POST.get("name", ""), created_by=request.user
            )
    if refused:
        return _back(request, pool)
    return _back(request, pool, ok=f"Judgments of this pool now go into {version.name!r}.")


@require_POST
@admin_required
def pool_status(request: HttpRequest, pk: int) -> HttpResponse:
    """Open or close a pool."""
    pool = get_object_or_404(Pool, pk=pk)
    with refusal_shown(request) as refused:
        pools.pool_set_status(pool=pool, status=request.POST.get("status", ""))
    if refused:
        return _back(request, pool)
    return _back(request, pool, ok=f"Pool is now {pool.status}.")


@require_POST
@admin_required
def pool_sync(request: HttpRequest, pk: int) -> HttpResponse:
    """Re-aggregate all judgments into the target version in the background (after an aggregation change)."""
    pool = get_object_or_404(Pool, pk=pk)
    with refusal_shown(request) as refused:
        versions.pool_sync_start(pool=pool, aggregation=request.POST.get("aggregation"))
    if refused:
        return _back(request, pool)
    return _back(request, pool, ok="Re-sync of the target version started.")


def _aggregation_or_400(request: HttpRequest) -> str | None:
    value = request.GET.get("aggregation", "majority")
    return value if value in AGGREGATIONS else None


@admin_required
def version_export(request: HttpRequest, pk: int) -> HttpResponse:
    """Download a qrels version in TREC format (streamed)."""
    version = get_object_or_404(QrelsVersion.objects.select_related("collection"), pk=pk)
    aggregation = _aggregation_or_400(request)
    if aggregation is None:
        return HttpResponse(f"aggregation must be one of {', '.join(AGGREGATIONS)}", status=400)
    # The decorators are typed for HttpResponse; a streamed response is served the same way.
    return cast(HttpResponse, qrels_streaming_response(version=version, aggregation=aggregation))


@admin_required
def version_sidecar(request: HttpRequest, pk: int) -> HttpResponse:
    """Download the JSON sidecar of a qrels export."""
    version = get_object_or_404(QrelsVersion.objects.select_related("collection", "parent"), pk=pk)
    aggregation = _aggregation_or_400(request)
    if aggregation is None:
        return HttpResponse(f"aggregation must be one of {', '.join(AGGREGATIONS)}", status=400)
    response = JsonResponse(sel.qrels_export_sidecar(version=version, aggregation=aggregation))
    response["Content-Disposition"] = f'attachment; filename="{export_file_name(version, aggregation, ".json")}"'
    return response


@admin_required
@require_POST
def robustness_pool(request: HttpRequest) -> HttpResponse:
    """Create an assessor pool of the unjudged top-k passages of the test-set runs and baselines (ECAsT Table 13)."""
    p = robustness_params(request)
    if p is None:
        raise Http404("no collection with qrels")
    runs = [run for _, _, run in labelled_runs(p)]
    judged_turns = sorted(set(p.base.qrels.values_list("turn_id", flat=True)))
    with refusal_shown(request) as refused:
        pool = pools.pool_create_start(
            collection=p.collection,
            qrels_version=p.base,
            runs=runs,
            depth=p.depth,
            turn_ids=judged_turns,
            name=f"Unjudged top-{p.depth} of {len(runs)} robustness runs ({p.base.name})",
            feed_version=True,
            created_by=request.user,
        )
    if refused:
        return redirect(f"{reverse('evaluation-robustness')}?collection={p.collection.pk}")
    messages.success(request, f"Pool “{pool.name}” is being built for the assessors ({pool.status}).")
    return redirect("relevance-pool", pk=pool.pk)
