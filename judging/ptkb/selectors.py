"""Reads for PTKB assessment tasks: the assessor's page data (conversation, turns, statements, their marks) and the
admin's list and progress of tasks."""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

from django.db.models import Count, Q, QuerySet
from django.http import Http404

from ecast.models import Collection, PtkbStatement
from judging.models import AssessorAssignment, AssessorJudgment, Pool, PoolPair
from judging.relevance import selectors as relevance_sel


def ptkb_collections() -> list[Collection]:
    """The collections a PTKB task can be made for: those with PTKB statements (iKAT), companions excluded."""
    ids = PtkbStatement.objects.filter(conversation__collection__ptkb_of__isnull=True).values(
        "conversation__collection_id"
    )
    return list(Collection.objects.filter(pk__in=ids).order_by("name"))


def ptkb_task_list() -> QuerySet[Pool]:
    """Every PTKB task, newest first, with its judgments so far."""
    return (
        Pool.objects.filter(kind=Pool.Kind.PTKB)
        .select_related("collection", "collection__ptkb_of", "target_version")
        .annotate(judgments=Count("pairs__judgments"))
        .order_by("-created_at")
    )


def ptkb_task_get(*, pk: int) -> Pool:
    """One PTKB task or 404."""
    try:
        return ptkb_task_list().get(pk=pk)
    except Pool.DoesNotExist as exc:
        raise Http404("No such PTKB task.") from exc


def ptkb_task_progress(*, pool: Pool) -> dict[str, Any]:
    """Turns and statements judged (by anyone), statements marked relevant, and how far each assessor got."""
    judged = AssessorJudgment.objects.filter(pair__pool=pool)
    by_turn: dict[str, set[int]] = defaultdict(set)
    for turn_id, pair_id in judged.values_list("pair__turn__turn_id", "pair_id"):
        by_turn[turn_id].add(pair_id)
    per_turn = pool.stats.get("per_turn", {})
    grades = Counter(judged.values_list("grade", flat=True))
    assessors = (
        judged.values("assessor__username")
        .annotate(statements=Count("id"), relevant=Count("id", filter=Q(grade=1)))
        .order_by("assessor__username")
    )
    return {
        "turns_total": len(per_turn),
        "turns_done": sum(1 for t, n in per_turn.items() if len(by_turn.get(t, ())) >= n),
        "statements_total": pool.stats.get("pairs", 0),
        "statements_judged": judged.values("pair_id").distinct().count(),
        "judgments": sum(grades.values()),
        "relevant": grades.get(1, 0),
        "assessors": [
            {"username": a["assessor__username"], "statements": a["statements"], "relevant": a["relevant"]}
            for a in assessors
        ],
    }


def ptkb_assignment_items(*, assignment: AssessorAssignment) -> dict[str, Any]:
    """The judging page's data: the whole conversation (for "so far"), the user's PTKB, and per turn to judge its
    statements with this assessor's marks (None until the turn is submitted)."""
    pairs = list(
        PoolPair.objects.filter(pool_id=assignment.pool_id, turn__conversation_id=assignment.conversation_id)
        .select_related("turn")
        .order_by("turn__number", "best_rank")
    )
    mine = dict(
        AssessorJudgment.objects.filter(assessor_id=assignment.assessor_id, pair__in=pairs).values_list(
            "pair_id", "grade"
        )
    )
    items: dict[str, dict[str, Any]] = {}
    for p in pairs:
        item = items.setdefault(
            p.turn.turn_id, {"turn_id": p.turn.turn_id, "turn_number": p.turn.number, "statements": {}}
        )
        item["statements"][p.passage_id] = mine.get(p.pk)
    for item in items.values():
        marks = item["statements"].values()
        item["done"] = all(g is not None for g in marks)
        item["relevant"] = sorted(int(n) for n, g in item["statements"].items() if g == 1)
    return {
        **relevance_sel.conversation_context(conversation_id=assignment.conversation_id),
        "items": list(items.values()),
    }


def ptkb_assignment_progress(*, assignment: AssessorAssignment) -> dict[str, int]:
    """Turns this assessor has submitted of their topic, and statements they marked relevant."""
    items = ptkb_assignment_items(assignment=assignment)["items"]
    return {
        "turns_done": sum(1 for i in items if i["done"]),
        "turns_total": len(items),
        "relevant": sum(len(i["relevant"]) for i in items),
    }
