"""Pages of PTKB assessment tasks: the assessor's turn-by-turn page, the admin's task list, form and progress."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from ecast.core.fields import IdChoiceField
from ecast.core.pages import refusal_shown
from ecast.core.permissions import ASSESSOR, admin_required, role_required
from ecast.models import Collection
from judging.models import Pool
from judging.ptkb import selectors as sel
from judging.ptkb import services as svc
from judging.relevance import pools
from judging.relevance import selectors as relevance_sel
from judging.relevance.qrels_export import AGGREGATIONS

assessor_required = role_required(ASSESSOR)


@assessor_required
def judge(request: HttpRequest, pk: int) -> HttpResponse:
    """Mark which PTKB statements matter for each turn of one topic, a turn at a time, keyboard first."""
    assignment = relevance_sel.assignment_for(user=request.user, pk=pk)
    if assignment.pool.kind != Pool.Kind.PTKB:
        return redirect("relevance-judge", pk=pk)
    data = sel.ptkb_assignment_items(assignment=assignment)
    data["progress"] = sel.ptkb_assignment_progress(assignment=assignment)
    data["submit_url"] = reverse("api-ptkb-turn-submit", args=[assignment.pk])
    return render(request, "judging/ptkb/judge.html", {"assignment": assignment, "data": data})


class TaskForm(forms.Form):
    collection = IdChoiceField(queryset=Collection.objects.none(), label="iKAT collection")
    name = forms.CharField(required=False, max_length=180)
    turn_ids = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 2}),
        help_text="Optional: only these turns (space or comma separated, e.g. 9-1_1 9-1_2); empty = every turn.",
    )
    assessors_per_pair = forms.IntegerField(
        min_value=1, max_value=10, initial=1, label="Assessors per turn", help_text="Each judges every statement."
    )
    aggregation = forms.ChoiceField(choices=[(a, a) for a in AGGREGATIONS], initial="majority")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["collection"].queryset = Collection.objects.filter(  # type: ignore[attr-defined]
            pk__in=[c.pk for c in sel.ptkb_collections()]
        )


@admin_required
def tasks(request: HttpRequest) -> HttpResponse:
    """PTKB tasks: every task with its progress, and the form that creates one."""
    form = TaskForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        d = form.cleaned_data
        with refusal_shown(form) as refused:
            pool = svc.ptkb_task_create(
                collection=d["collection"],
                turn_ids=pools.split_turn_ids(d["turn_ids"]),
                name=d["name"],
                assessors_per_pair=d["assessors_per_pair"],
                aggregation=d["aggregation"],
                created_by=request.user,
            )
        if not refused:
            messages.success(request, f"Task {pool.name!r} is open: {pool.stats['turns']} turns to assess.")
            return redirect("ptkb-task", pk=pool.pk)
    rows = list(sel.ptkb_task_list())
    for pool in rows:
        pool.progress = sel.ptkb_task_progress(pool=pool)  # type: ignore[attr-defined]
    return render(
        request,
        "judging/ptkb/tasks.html",
        {"tasks": rows, "form": form, "has_collections": bool(sel.ptkb_collections())},
    )


@admin_required
def task_detail(request: HttpRequest, pk: int) -> HttpResponse:
    """One task: progress overall, per topic and per assessor, and links to its qrels, agreement and leaderboard."""
    pool = sel.ptkb_task_get(pk=pk)
    return render(
        request,
        "judging/ptkb/task.html",
        {
            "task": pool,
            "progress": sel.ptkb_task_progress(pool=pool),
            "topics": relevance_sel.pool_topic_progress(pool=pool),
            "published": pool.collection.qrels_versions.exclude(pk__in=[pool.target_version_id]),
        },
    )


@require_POST
@admin_required
def task_status(request: HttpRequest, pk: int) -> HttpResponse:
    """Open or close a task; a closed task takes no new topics or marks."""
    pool = sel.ptkb_task_get(pk=pk)
    with refusal_shown(request) as refused:
        pools.pool_set_status(pool=pool, status=request.POST.get("status", ""))
    if not refused:
        messages.success(request, f"Task is now {pool.status}.")
    return redirect("ptkb-task", pk=pool.pk)
