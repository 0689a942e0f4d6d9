"""Pages of response judging: the keyboard pages for nugget assignment and citation support, the admin's tasks, and
nugget banks by hand. The pages load and save through the API (judging.nuggets.apis), every write through
static/ecast/send.js."""

from __future__ import annotations

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from ecast.core.pages import query_id, refusal_shown
from ecast.core.permissions import ADMIN, ASSESSOR, admin_required, role_required
from ecast.models import Collection, Turn
from evaluation.models import NuggetBank, QrelsVersion, ResponseLabelSet
from judging.models import ResponseTask
from judging.nuggets import banks, leasing, services
from judging.nuggets import selectors as sel
from judging.nuggets.forms import BankCreateForm, TaskCreateForm
from judging.relevance.pools import split_turn_ids

judge_required = role_required(ASSESSOR, ADMIN)

NUGGET_KEYS = [("s", "support", "Support"), ("p", "partial_support", "Partial"), ("n", "not_support", "Not")]
CITATION_KEYS = [
    ("f", "full", "Full"),
    ("p", "partial", "Partial"),
    ("n", "none", "None"),
    ("x", "not_needed", "Needs no citation"),
]


@judge_required
def judge(request: HttpRequest, pk: int) -> HttpResponse:
    """Judge a task's answers one at a time, keyboard first (the page asks the API for the next answer)."""
    task = ResponseTask.objects.select_related("collection", "bank", "llm_label_set").filter(pk=pk).first()
    if task is None or not leasing.may_judge(task, request.user):
        raise Http404("No such judging task open to you.")
    nuggets = task.kind == ResponseLabelSet.Kind.NUGGETS
    data = {
        "kind": task.kind,
        "condition": task.condition,
        "keys": [{"key": k, "value": v, "name": n} for k, v, n in (NUGGET_KEYS if nuggets else CITATION_KEYS)],
        "next_url": reverse("api-nuggets-task-next", args=[task.pk]),
        "previous_url": reverse("api-nuggets-task-previous", args=[task.pk]),
        "labels_url": reverse("api-nuggets-lease-labels", args=[0]),
        "complete_url": reverse("api-nuggets-lease-complete", args=[0]),
    }
    return render(
        request,
        "judging/nuggets/judge.html",
        {"task": task, "data": data, "nuggets": nuggets, "keys": NUGGET_KEYS if nuggets else CITATION_KEYS},
    )


# ---------------------------------------------------------------- admin


@admin_required
def tasks_admin(request: HttpRequest) -> HttpResponse:
    """Every response-judging task with progress, and the form that makes one."""
    collections = list(Collection.objects.filter(response_runs__isnull=False).distinct().order_by("name"))
    coll_id = request.POST.get("collection") or request.GET.get("collection")
    collection = next((c for c in collections if str(c.pk) == str(coll_id)), collections[0] if collections else None)
    form = None
    if collection is not None:
        form = TaskCreateForm(request.POST or None, collection=collection)
        if request.method == "POST" and form.is_valid():
            d = form.cleaned_data
            with refusal_shown(form) as refused:
                task = services.task_create(
                    collection=collection,
                    kind=d["kind"],
                    runs=list(d["runs"]),
                    name=d["name"],
                    turn_ids=split_turn_ids(d["turn_ids"]) or [],
                    bank=d["bank"],
                    llm_label_set=d["llm_label_set"],
                    assessors=list(d["assessors"]),
                    lease_seconds=d["lease_seconds"],
                    created_by=request.user,
                )
            if not refused:
                messages.success(request, f"Task {task.name!r} created: assessors find it in their queue.")
                return redirect(f"{reverse('nuggets-admin')}?collection={collection.pk}")
    tasks = list(sel.task_list())
    progress = leasing.tasks_progress(tasks)
    for t in tasks:
        t.progress = progress[t.pk]  # type: ignore[attr-defined]
    return render(
        request,
        "judging/nuggets/admin.html",
        {"tasks": tasks, "form": form, "collections": collections, "collection": collection},
    )


@require_POST
@admin_required
def task_status(request: HttpRequest, pk: int) -> HttpResponse:
    task = get_object_or_404(ResponseTask, pk=pk)
    with refusal_shown(request) as refused:
        services.task_set_status(task=task, status=request.POST.get("status", ""))
    if not refused:
        messages.success(request, f"Task {task.name!r} is now {task.status}.")
    return redirect("nuggets-admin")


# ---------------------------------------------------------------- banks


@judge_required
def bank_list(request: HttpRequest) -> HttpResponse:
    """The nugget banks the user may edit, and the form that makes a new one (empty, or a copy to post-edit)."""
    form = BankCreateForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        d = form.cleaned_data
        with refusal_shown(form) as refused:
            bank = banks.bank_create(
                collection=d["collection"], name=d["name"], copy_of=d["copy_of"], user=request.user
            )
        if not refused:
            messages.success(request, f"Bank {bank.name!r} created with {bank.nuggets.count()} nuggets.")
            return redirect("nuggets-bank", pk=bank.pk)
    editable = banks.banks_editable_by(request.user).select_related("collection", "parent")
    return render(request, "judging/nuggets/banks.html", {"banks": editable, "form": form})


def _bank(request: HttpRequest, pk: int) -> NuggetBank:
    bank = NuggetBank.objects.select_related("collection").filter(pk=pk).first()
    if bank is None or not banks.may_edit(request.user, bank):
        raise Http404("No such nugget bank among those you may edit.")
    return bank


@judge_required
def bank_detail(request: HttpRequest, pk: int) -> HttpResponse:
    """A bank's turns with how many nuggets each has; each opens the turn's editor."""
    bank = _bank(request, pk)
    return render(request, "judging/nuggets/bank.html", {"bank": bank, "turns": sel.bank_turns(bank=bank)})


@judge_required
def bank_turn(request: HttpRequest, pk: int, turn: int) -> HttpResponse:
    """One turn of a bank: the turn, its judged-relevant passages (select a span → nugget) and its nuggets."""
    bank = _bank(request, pk)
    turns = Turn.objects.select_related("conversation", "collection")
    turn_row = get_object_or_404(turns, pk=turn, collection=bank.collection)
    versions = list(QrelsVersion.objects.filter(collection=bank.collection).order_by("created_at", "id"))
    version_id = query_id(request.GET, "qrels")
    version = next((v for v in versions if v.pk == version_id), versions[0] if versions else None)
    previous, following = sel.turn_neighbours(bank=bank, turn_id=turn_row.pk)
    title = turn_row.conversation.title.strip()
    data = {
        "nuggets": sel.nugget_rows(bank=bank, turn_id=turn_row.pk),
        "turn_url": reverse("api-nuggets-bank-turn", args=[bank.pk, turn_row.pk]),
        "add_url": reverse("api-nuggets-nugget-add", args=[bank.pk, turn_row.pk]),
        "edit_url": reverse("api-nuggets-nugget-edit", args=[0]),
        "delete_url": reverse("api-nuggets-nugget-delete", args=[0]),
        "merge_url": reverse("api-nuggets-nugget-merge", args=[0]),
    }
    return render(
        request,
        "judging/nuggets/bank_turn.html",
        {
            "bank": bank,
            "turn": turn_row,
            # Importers without titles name topics "Topic <id>"; repeating that beside the id is noise.
            "topic_title": "" if title.lower() == f"topic {turn_row.conversation.topic_id}".lower() else title,
            "passages": sel.relevant_passages(turn=turn_row, version=version),
            "versions": versions,
            "version": version,
            "previous": previous,
            "next": following,
            "data": data,
        },
    )
