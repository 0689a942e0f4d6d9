"""Pages for adjudication: start it from the agreement report (admins), work through its queue (admins and
assessors)."""

from __future__ import annotations

from urllib.parse import urlencode

from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from ecast.core.pages import query_id, refusal_shown
from ecast.core.permissions import ADMIN, ASSESSOR, admin_required, role_required
from evaluation.models import QrelsVersion
from judging.models import GRADE_LABELS
from judging.relevance import adjudication as adj

adjudicator_required = role_required(ADMIN, ASSESSOR)
# Both versions grade relevant or not (PTKB statements, binary crowd labels): so does the adjudicator.
BINARY_LABELS = [
    (1, "Relevant", "Relevant to the current turn."),
    (0, "Not relevant", "Not relevant to the current turn."),
]


def agreement_url(a_id: int, b_id: int) -> str:
    """The agreement report of A and B."""
    return f"{reverse('evaluation-agreement')}?{urlencode({'a': a_id, 'b': b_id})}"


@require_POST
@admin_required
def adjudication_start(request: HttpRequest) -> HttpResponse:
    """Make (or reopen) the adjudication of versions A and B and go to its queue."""
    a = get_object_or_404(QrelsVersion, pk=query_id(request.POST, "a", what="field") or 0)
    b = get_object_or_404(QrelsVersion, pk=query_id(request.POST, "b", what="field") or 0)
    with refusal_shown(request) as refused:
        made = adj.adjudication_create(a=a, b=b, created_by=request.user)
    if refused:
        return redirect(agreement_url(a.pk, b.pk))
    return redirect("relevance-adjudicate", pk=made.version_id)


@adjudicator_required
def adjudicate(request: HttpRequest, pk: int) -> HttpResponse:
    """One disagreement at a time: the conversation, the passage, A's and B's grades; keys set the final grade."""
    made = adj.adjudication_for_version(version_id=pk)
    data = adj.adjudication_batch(adjudication=made)
    data["progress"] = adj.adjudication_progress(adjudication=made)
    data["submit_url"] = reverse("api-relevance-adjudication-submit", args=[made.version_id])
    grades = BINARY_LABELS if made.binary else [(g, *GRADE_LABELS[g]) for g in range(4, -1, -1)]
    data["grade_names"] = {g: name for g, name, _text in grades}
    return render(
        request,
        "judging/relevance/adjudicate.html",
        {
            "adjudication": made,
            "data": data,
            "grades": grades,
            "agreement_url": agreement_url(made.version_a_id, made.version_b_id),
            "leaderboard_url": f"{reverse('evaluation-leaderboard')}?{urlencode({'version': made.version_id})}",
        },
    )
