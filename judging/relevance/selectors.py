"""Reads for relevance judging: user-scoped assignments, pool progress, streamed qrels exports."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterator
from typing import Any

from django.db.models import Count, Exists, F, OuterRef, Q, QuerySet
from django.http import Http404
from django.utils import timezone

from ecast import selectors as ecast_selectors
from ecast.models import Collection, Passage, Turn
from evaluation.models import Qrel, QrelsVersion
from judging.models import GRADE_LABELS, AssessorAssignment, AssessorJudgment, Pool, PoolPair
from judging.relevance import ordering
from judging.relevance.qrels_export import AGGREGATIONS, aggregate


def pool_list() -> QuerySet[Pool]:
    """Every pool with its collection and versions, newest first (admins only)."""
    return Pool.objects.select_related("collection", "qrels_version", "target_version").prefetch_related("runs")


def collections_for_pooling() -> list[Collection]:
    """Collections with turns (the TREC DD demo table has none), each with ``n_runs`` and ``n_versions``: a pool
    needs runs; without a qrels version it starts an empty one."""
    qs = Collection.objects.filter(Exists(Turn.objects.filter(collection=OuterRef("pk"))))
    qs = qs.annotate(n_runs=Count("runs", distinct=True), n_versions=Count("qrels_versions", distinct=True))
    return list(qs)


def pool_get(*, pk: int) -> Pool:
    """One pool or 404."""
    try:
        return pool_list().get(pk=pk)
    except Pool.DoesNotExist as exc:
        raise Http404("No such pool.") from exc


def pools_open_for(*, user: Any) -> list[Pool]:
    """Open pools this assessor may take topics from (pools without an assessor list are open to all)."""
    qs = Pool.objects.filter(status=Pool.Status.OPEN).select_related("collection")
    qs = qs.annotate(n_assessors=Count("assessors", distinct=True)).filter(Q(n_assessors=0) | Q(assessors=user))
    return list(qs.distinct().order_by("-created_at"))


def assignments_for(*, user: Any) -> QuerySet[AssessorAssignment]:
    """The user's own topic leases; nobody sees anyone else's."""
    return (
        AssessorAssignment.objects.filter(assessor=user)
        .select_related("pool", "pool__collection", "conversation")
        .order_by("completed_at", "-created_at")
    )


def assignment_for(*, user: Any, pk: int) -> AssessorAssignment:
    """One of the user's own assignments, or 404 (never 403: other leases are not even confirmed to exist)."""
    try:
        return assignments_for(user=user).get(pk=pk)
    except AssessorAssignment.DoesNotExist as exc:
        raise Http404("No such assignment.") from exc


def assignment_progress(*, assignment: AssessorAssignment) -> dict[str, int]:
    """Judged and total cluster heads of the assignment's topic, for this assessor."""
    heads = PoolPair.objects.filter(
        pool_id=assignment.pool_id, turn__conversation_id=assignment.conversation_id, cluster_head_id=F("pk")
    )
    total = heads.count()
    done = AssessorJudgment.objects.filter(assessor_id=assignment.assessor_id, pair__in=heads).count()
    return {"done": done, "total": total}


def conversation_context(*, conversation_id: int) -> dict[str, Any]:
    """What a judging page shows beside the item: the conversation's turns (with responses) and the user's PTKB."""
    turns = list(Turn.objects.filter(conversation_id=conversation_id).order_by("number"))
    # Each turn carries its path: the page shows the conversation so far as the path to the item's turn (in a
    # CAsT 2022 tree, never a sibling branch; in a linear conversation, every turn up to it).
    paths = ecast_selectors.turn_paths(turns)
    return {
        "turns": [
            {
                "number": t.number,
                "turn_id": t.turn_id,
                "raw": t.raw_utterance,
                "manual": t.manual_rewrite,
                "response": t.canonical_response_text,
                "ptkb_provenance": list(t.ptkb_provenance or []),
                "path": [p.number for p in paths[t.pk]],
                **{k: v for k, v in ecast_selectors.path_entry(t).items() if k not in ("number", "text")},
            }
            for t in turns
        ],
        # The user's PTKB (iKAT): judged relevance is personal, so the assessor reads it beside the conversation.
        "ptkb": [
            {"number": s["number"], "text": s["text"]}
            for s in ecast_selectors.ptkb_for_conversation(conversation_id=conversation_id)
        ],
    }


def assignment_items(*, assignment: AssessorAssignment) -> dict[str, Any]:
    """Everything the judging page needs: the conversation's turns and the pairs to grade, in judging order."""
    heads = list(
        PoolPair.objects.filter(
            pool_id=assignment.pool_id, turn__conversation_id=assignment.conversation_id, cluster_head_id=F("pk")
        )
        .annotate(cluster_size=Count("members"))
        .select_related("turn")
        .order_by("turn__number", "best_rank", "passage_id")
    )
    texts = dict(Passage.objects.filter(passage_id__in=[h.passage_id for h in heads]).values_list("passage_id", "text"))
    mine = dict(
        AssessorJudgment.objects.filter(assessor_id=assignment.assessor_id, pair__in=heads)
        .order_by("id")
        .values_list("pair_id", "grade")
    )
    ordered = ordering.is_ordered(assignment.pool)
    if ordered:
        # Adaptive order: what I judged, in the order I judged it, then the strategy's queue (its first is exact).
        position = {pk: i for i, pk in enumerate([*mine, *ordering.assignment_queue(assignment=assignment)])}
        heads.sort(key=lambda h: position.get(h.pk, len(position)))
    return {
        **conversation_context(conversation_id=assignment.conversation_id),
        "ordered": ordered,
        "strategy": assignment.pool.strategy,
        "pairs": [
            {
                "id": h.pk,
                "turn_id": h.turn.turn_id,
                "turn_number": h.turn.number,
                "passage_id": h.passage_id,
                "text": texts.get(h.passage_id, ""),
                "cluster_size": h.cluster_size,
                "grade": mine.get(h.pk),
            }
            for h in heads
        ],
    }


def pool_topic_progress(*, pool: Pool) -> list[dict[str, Any]]:
    """Per topic: pairs, judgments needed, assessors and how far each got (admin pool page)."""
    topics: dict[int, dict[str, Any]] = {}
    for conv_id, topic_id, head_flag in (
        PoolPair.objects.filter(pool=pool)
        .annotate(head_flag=Q(cluster_head_id=F("pk")))
        .values_list("turn__conversation_id", "turn__conversation__topic_id", "head_flag")
    ):
        entry = topics.setdefault(
            conv_id, {"conversation_id": conv_id, "topic_id": topic_id, "pairs": 0, "heads": 0, "assessors": []}
        )
        entry["pairs"] += 1
        entry["heads"] += int(bool(head_flag))
    done: Counter[int] = Counter(
        AssessorJudgment.objects.filter(pair__pool=pool).values_list("assignment_id", flat=True)
    )
    for a in AssessorAssignment.objects.filter(pool=pool).select_related("assessor").order_by("slot"):
        if a.conversation_id in topics:
            topics[a.conversation_id]["assessors"].append(
                {"username": a.assessor.username, "slot": a.slot, "done": done[a.pk], "complete": bool(a.completed_at)}
            )
    return sorted(topics.values(), key=lambda t: (len(t["topic_id"]), t["topic_id"]))


def pool_judgment_summary(*, pool: Pool) -> dict[str, Any]:
    """Grade distribution of the pool's judgments (Table 13: grades of formerly unjudged passages)."""
    grades = Counter(AssessorJudgment.objects.filter(pair__pool=pool).values_list("grade", flat=True))
    total = sum(grades.values())
    return {
        "judgments": total,
        "grades": {g: grades.get(g, 0) for g in range(4, -1, -1)},
        "percent": {g: (100.0 * grades.get(g, 0) / total if total else 0.0) for g in range(4, -1, -1)},
        "heads_judged": AssessorJudgment.objects.filter(pair__pool=pool).values("pair_id").distinct().count(),
        "rows": [
            {
                "grade": g,
                "name": GRADE_LABELS[g][0],
                "n": grades.get(g, 0),
                "percent": 100.0 * grades.get(g, 0) / total if total else 0.0,
            }
            for g in range(4, -1, -1)
        ],
    }


def qrels_versions(*, collection_id: int | None = None) -> QuerySet[QrelsVersion]:
    """Qrels versions with row counts (admin page)."""
    qs = QrelsVersion.objects.select_related("collection", "parent").annotate(
        n_rows=Count("qrels"), n_assessed=Count("qrels", filter=Q(qrels__source=Qrel.Source.ASSESSED))
    )
    if collection_id:
        qs = qs.filter(collection_id=collection_id)
    return qs.order_by("collection__name", "created_at")


def _version_chain(version: QrelsVersion) -> list[int]:
    chain, seen = [], set()
    current: QrelsVersion | None = version
    while current is not None and current.pk not in seen:
        chain.append(current.pk)
        seen.add(current.pk)
        current = current.parent
    return chain


def qrels_export_rows(*, version: QrelsVersion, aggregation: str) -> Iterator[tuple[str, str, int]]:
    """Stream ``(turn_id, passage_id, grade)`` for a version, re-aggregating assessed rows with ``aggregation``.

    Memory stays flat: qrels rows and judgments are both read in turn order through server-side iterators and
    merged one turn at a time, so at most one turn's judgments are held.
    """
    if aggregation not in AGGREGATIONS:
        raise ValueError(f"aggregation must be one of {', '.join(AGGREGATIONS)}")
    rows = (
        Qrel.objects.filter(version=version)
        .order_by("turn_id", "passage_id")
        .values_list("turn_id", "turn__turn_id", "passage_id", "grade", "source")
        .iterator(chunk_size=5000)
    )
    judgments = (
        PoolPair.objects.filter(
            pool__target_version_id__in=_version_chain(version), cluster_head__judgments__isnull=False
        )
        # Turn order drives the merge; judgment id order within a turn keeps "primary" = first judgment.
        .order_by("turn_id", "cluster_head__judgments__id")
        .values_list("turn_id", "passage_id", "cluster_head__judgments__grade")
        .iterator(chunk_size=5000)
    )
    pending = next(judgments, None)
    current_turn: int | None = None
    grades: dict[str, list[int]] = defaultdict(list)
    for turn_pk, qid, pid, grade, source in rows:
        if turn_pk != current_turn:
            current_turn = turn_pk
            grades = defaultdict(list)
            while pending is not None and pending[0] < turn_pk:
                pending = next(judgments, None)
            while pending is not None and pending[0] == turn_pk:
                grades[pending[1]].append(pending[2])
                pending = next(judgments, None)
        if source == Qrel.Source.ASSESSED and pid in grades:
            grade = aggregate(grades[pid], aggregation)
        yield qid, pid, grade


PASSAGE_SCALE = {
    "4": "fully meets",
    "3": "highly meets",
    "2": "moderately meets",
    "1": "slightly meets",
    "0": "fails to meet",
}
PTKB_SCALE = {"1": "the statement matters for the turn", "0": "it does not"}


def qrels_export_sidecar(*, version: QrelsVersion, aggregation: str) -> dict[str, Any]:
    """What an export contains and how it was made: threshold, pools (runs, depth), assessors, counts."""
    chain = _version_chain(version)
    pools = list(
        Pool.objects.filter(target_version_id__in=chain).prefetch_related("runs").select_related("qrels_version")
    )
    by_source = dict(Qrel.objects.filter(version=version).values_list("source").annotate(n=Count("id")))
    by_grade = dict(Qrel.objects.filter(version=version).values_list("grade").annotate(n=Count("id")))
    assessors = (
        AssessorJudgment.objects.filter(pair__pool__in=pools)
        .values("assessor__username")
        .annotate(judgments=Count("id"))
        .order_by("assessor__username")
    )
    multi = (
        AssessorJudgment.objects.filter(pair__pool__in=pools)
        .values("pair_id")
        .annotate(n=Count("id"))
        .filter(n__gt=1)
        .count()
    )
    # A PTKB companion's items are statement numbers graded 0/1: the iKAT PTKB relevance format.
    ptkb = version.collection.ptkb_of_id is not None
    return {
        "format": "iKAT PTKB relevance: turn_id 0 statement_number 0|1"
        if ptkb
        else "TREC qrels: turn_id 0 passage_id grade",
        "collection": version.collection.name,
        "qrels_version": version.name,
        "parent_version": version.parent.name if version.parent else None,
        "relevance_threshold": version.collection.relevance_threshold,
        "grade_scale": PTKB_SCALE if ptkb else PASSAGE_SCALE,
        "aggregation": aggregation,
        "pools": [
            {
                "name": p.name,
                "runs": sorted(r.name for r in p.runs.all()),
                "depth": p.depth,
                "unjudged_in": p.qrels_version.name,
                "turn_filter": p.turn_filter,
                "cluster_near_duplicates": p.cluster_near_duplicates,
                "cluster_threshold": p.cluster_threshold if p.cluster_near_duplicates else None,
                "assessors_per_pair": p.assessors_per_pair,
                "pairs": p.stats.get("pairs"),
            }
            for p in pools
        ],
        "assessors": [{"username": a["assessor__username"], "judgments": a["judgments"]} for a in assessors],
        "counts": {
            "rows": sum(by_source.values()),
            "imported": by_source.get(Qrel.Source.IMPORTED, 0),
            "assessed": by_source.get(Qrel.Source.ASSESSED, 0),
            "stored_grades": {str(g): by_grade[g] for g in sorted(by_grade)},
            "pairs_with_several_assessors": multi,
        },
        "generated_at": timezone.now().isoformat(),
    }


def pool_pairs(*, pool: Pool, turn_id: str = "", only: str = "") -> list[dict[str, Any]]:
    """Every pair of a pool with its runs, cluster and each assessor's grade (admin drill-down from the stats).

    ``only``: "judged", "unjudged" or "disagreements" (pairs whose assessors gave different grades).
    """
    qs = PoolPair.objects.filter(pool=pool).select_related("turn", "cluster_head")
    if turn_id:
        qs = qs.filter(turn__turn_id=turn_id)
    pairs = list(qs.order_by("turn__conversation_id", "turn__number", "best_rank", "passage_id"))
    run_names = dict(pool.runs.values_list("pk", "name"))
    by_head: dict[int, list[tuple[str, int]]] = defaultdict(list)
    for head_id, username, grade in (
        AssessorJudgment.objects.filter(pair__pool=pool)
        .order_by("id")
        .values_list("pair_id", "assessor__username", "grade")
    ):
        by_head[head_id].append((username, grade))
    rows = []
    for p in pairs:
        judgments = by_head.get(p.cluster_head_id or p.pk, [])
        grades = [g for _, g in judgments]
        if only == "judged" and not grades:
            continue
        if only == "unjudged" and grades:
            continue
        if only == "disagreements" and len(set(grades)) < 2:
            continue
        rows.append(
            {
                "turn_id": p.turn.turn_id,
                "passage_id": p.passage_id,
                "best_rank": p.best_rank,
                "runs": sorted(run_names.get(r, str(r)) for r in p.run_ids),
                "has_text": p.has_text,
                "cluster_head": (
                    p.cluster_head.passage_id if p.cluster_head is not None and p.cluster_head_id != p.pk else None
                ),
                "judgments": [{"assessor": u, "grade": g} for u, g in judgments],
                "aggregated": aggregate(grades, pool.aggregation) if grades else None,
            }
        )
    return rows
