"""Reads for the judging order of a pool: which pair an assessor gets next, and the pool's relevant-found curve.

The strategy (``evaluation.adjudication``) sees one turn at a time: a conversation is leased whole to an
assessor, its turns are walked in turn order, and each turn is a topic with its own run lists (each run's ranking
of that turn restricted to the pool's pairs, a near-duplicate standing for its cluster head). Its input is the
assessor's own grades of that turn, so the next pair is a function of the judgments alone; a pair leased to
another assessor is never offered, because topic leases are exclusive per slot (``services.assignment_take``), and
a second assessor of a topic (``assessors_per_pair`` > 1) walks the strategy on their own grades.

A depth-first pool keeps the classic order (turn, best rank over the runs, passage id) exactly.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from django.db.models import Count, F, Q

from evaluation import adjudication as strategies
from evaluation.models import Qrel, RunTurn
from judging.models import AssessorAssignment, AssessorJudgment, Pool, PoolPair

DEPTH_FIRST = strategies.DEFAULT_STRATEGY


def is_ordered(pool: Pool) -> bool:
    """Whether the pool's order depends on the judgments (anything but depth-first)."""
    return pool.strategy != DEPTH_FIRST


def _topic_pairs(pool_id: int, conversation_id: int) -> list[PoolPair]:
    return list(
        PoolPair.objects.filter(pool_id=pool_id, turn__conversation_id=conversation_id)
        .select_related("turn")
        .order_by("turn__number", "best_rank", "passage_id")
    )


def topic_run_lists(pool: Pool, pairs: list[PoolPair]) -> dict[int, dict[str, list[str]]]:
    """Per turn pk: {run name: the run's ranking of the turn's cluster heads}, as the strategy takes them."""
    head_of = {(p.turn_id, p.passage_id): p.cluster_head_id or p.pk for p in pairs}
    head_pid = {p.pk: p.passage_id for p in pairs}
    run_names = dict(pool.runs.values_list("pk", "name"))
    lists: dict[int, dict[str, list[str]]] = defaultdict(dict)
    rows = RunTurn.objects.filter(run_id__in=run_names, turn_id__in={p.turn_id for p in pairs}).values_list(
        "run_id", "turn_id", "doc_ids"
    )
    for run_id, turn_pk, doc_ids in rows:
        ranked = [head_pid[head_of[(turn_pk, d)]] for d in doc_ids if (turn_pk, d) in head_of]
        if ranked:
            lists[turn_pk][run_names[run_id]] = list(dict.fromkeys(ranked))
    return lists


def topic_priors(pool: Pool, pairs: list[PoolPair]) -> dict[int, dict[str, list[bool]]]:
    """Per turn pk: {run name: relevance of the run's top documents the prior version grades, in rank order}.

    A run's top ``depth`` documents count (down to the deepest rank pooled when the pool skipped passages without
    text), whether or not they are in the pool: a prior version of (say) automatic labels may grade pool pairs.
    """
    if pool.prior_version_id is None:
        return {}
    turn_pks = {p.turn_id for p in pairs}
    threshold = pool.collection.relevance_threshold
    graded = {
        (turn_pk, pid): grade >= threshold
        for turn_pk, pid, grade in Qrel.objects.filter(
            version_id=pool.prior_version_id, turn_id__in=turn_pks
        ).values_list("turn_id", "passage_id", "grade")
    }
    limit = max(pool.depth, int(pool.stats.get("deepest_rank") or 0))
    run_names = dict(pool.runs.values_list("pk", "name"))
    priors: dict[int, dict[str, list[bool]]] = defaultdict(dict)
    rows = RunTurn.objects.filter(run_id__in=run_names, turn_id__in=turn_pks).values_list(
        "run_id", "turn_id", "doc_ids"
    )
    for run_id, turn_pk, doc_ids in rows:
        seen = [graded[(turn_pk, d)] for d in doc_ids[:limit] if (turn_pk, d) in graded]
        if seen:
            priors[turn_pk][run_names[run_id]] = seen
    return priors


def assignment_queue(*, assignment: AssessorAssignment) -> list[int]:
    """The unjudged cluster heads of the assessor's topic, in the order they will be handed out.

    The first is the strategy's exact choice; for an adaptive strategy the rest is its forecast if every pair
    left were non-relevant, and changes as judgments arrive.
    """
    pool = assignment.pool
    pairs = _topic_pairs(assignment.pool_id, assignment.conversation_id)
    heads = [p for p in pairs if p.cluster_head_id == p.pk]
    grades = dict(
        AssessorJudgment.objects.filter(assessor_id=assignment.assessor_id, pair__in=heads).values_list(
            "pair_id", "grade"
        )
    )
    if not is_ordered(pool):
        return [p.pk for p in heads if p.pk not in grades]
    threshold = pool.collection.relevance_threshold
    lists = topic_run_lists(pool, pairs)
    priors = topic_priors(pool, pairs)
    by_turn: dict[int, dict[str, int]] = defaultdict(dict)
    turn_order: list[int] = []
    for p in heads:
        if p.turn_id not in by_turn:
            turn_order.append(p.turn_id)
        by_turn[p.turn_id][p.passage_id] = p.pk
    queue: list[int] = []
    for turn_pk in turn_order:
        ids = by_turn[turn_pk]
        judged = {pid: grades[pk] >= threshold for pid, pk in ids.items() if pk in grades}
        planned = strategies.planned_order(pool.strategy, lists.get(turn_pk, {}), judged, prior=priors.get(turn_pk))
        queue += [ids[pid] for pid in planned]
        # A head no run ranks (its runs were removed since) still has to be judged: it comes last in its turn.
        planned_set = set(planned)
        queue += [pk for pid, pk in ids.items() if pk not in grades and pid not in planned_set]
    return queue


def next_pair(*, assignment: AssessorAssignment) -> int | None:
    """The pair the assessor judges next (None when the topic is done)."""
    queue = assignment_queue(assignment=assignment)
    return queue[0] if queue else None


def pool_found_curve(*, pool: Pool, points: int = 12) -> dict[str, Any]:
    """Relevant pairs found against judgments made so far, in the order the judgments were made.

    A judgment counts once per assessor and pair; a cluster head is "found" the first time any assessor grades
    it at or above the collection's relevance threshold.
    """
    threshold = pool.collection.relevance_threshold
    found: set[int] = set()
    curve: list[tuple[int, int]] = [(0, 0)]
    for pair_id, grade in (
        AssessorJudgment.objects.filter(pair__pool=pool).order_by("created_at", "id").values_list("pair_id", "grade")
    ):
        if grade >= threshold:
            found.add(pair_id)
        curve.append((len(curve), len(found)))
    heads = PoolPair.objects.filter(pool=pool, cluster_head_id=F("pk")).count()
    total = len(curve) - 1
    step = max(1, -(-total // points))
    shown = [c for c in curve if c[0] % step == 0]
    if shown[-1] != curve[-1]:
        shown.append(curve[-1])
    return {
        "strategy": pool.strategy,
        "strategy_label": strategies.STRATEGIES.get(pool.strategy, pool.strategy),
        "threshold": threshold,
        "judgments": total,
        "found": len(found),
        "heads": heads,
        "rows": [{"judgments": j, "found": f} for j, f in shown],
        "polyline": _polyline(curve, width=240, height=60, x_max=max(heads, total, 1), y_max=max(heads, 1)),
    }


def collection_found_by_pool(*, pool: Pool) -> list[dict[str, Any]]:
    """The other judged pools of the pool's collection: their order, judgments made and relevant found, so orders
    in use can be compared side by side.

    One aggregate query, whatever the number of pools: per pool the judgments, the cluster heads graded at or above
    the threshold by some assessor (what ``pool_found_curve`` calls found) and the cluster heads.
    """
    threshold = pool.collection.relevance_threshold
    others = (
        Pool.objects.filter(collection_id=pool.collection_id)
        .exclude(pk=pool.pk)
        .annotate(
            n_judgments=Count("pairs__judgments"),
            n_found=Count("pairs", filter=Q(pairs__judgments__grade__gte=threshold), distinct=True),
            n_heads=Count("pairs", filter=Q(pairs__cluster_head_id=F("pairs__id")), distinct=True),
        )
        .filter(n_judgments__gt=0)
        .order_by("-created_at")
        .values("pk", "name", "strategy", "n_judgments", "n_found", "n_heads")
    )
    return [
        {
            "pk": row["pk"],
            "name": row["name"],
            "strategy_label": strategies.STRATEGIES.get(row["strategy"], row["strategy"]),
            "judgments": row["n_judgments"],
            "found": row["n_found"],
            "heads": row["n_heads"],
        }
        for row in others
    ]


def _polyline(curve: list[tuple[int, int]], *, width: int, height: int, x_max: int, y_max: int) -> str:
    """SVG polyline points for a small step chart drawn by the template."""
    return " ".join(f"{width * x / x_max:.1f},{height - height * y / y_max:.1f}" for x, y in curve)
