"""Writes for PTKB assessment tasks (TREC iKAT): which of the user's PTKB statements matter for a turn.

A task is a relevance pool of kind ``ptkb`` on the collection's PTKB companion (``ptkb_collection_sync``): one pair
per (turn, statement number), so topics are leased to assessors by the relevance queue and judgments are stored,
aggregated and written into a qrels version by the relevance services. What differs is the unit of work: an assessor
submits a whole turn at once (the statements marked relevant get 1, the others 0).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import F

from ecast.models import Collection, PtkbStatement, Turn
from ecast.services import ptkb_collection_sync
from evaluation.models import QrelsVersion
from judging.models import AssessorAssignment, Pool, PoolPair
from judging.relevance.pools import resolve_turns
from judging.relevance.services import judgments_submit


def _version_name(name: str) -> str:
    limit = QrelsVersion._meta.get_field("name").max_length or 100
    return f"assessed: {name}"[:limit].strip()


@transaction.atomic
def ptkb_task_create(
    *,
    collection: Collection,
    turn_ids: Iterable[str] | None = None,
    name: str = "",
    assessors_per_pair: int = 1,
    aggregation: str = Pool.Aggregation.MAJORITY,
    created_by: Any = None,
) -> Pool:
    """A PTKB assessment task over every turn of an iKAT collection (or the turns named), open at once.

    Its judgments feed a new qrels version "assessed: <name>" of the PTKB companion, which the agreement report
    compares with the published assessments and the leaderboard scores statement runs against.
    """
    companion = ptkb_collection_sync(collection=collection)
    chosen = resolve_turns(companion, list(turn_ids) if turn_ids is not None else None)
    if chosen is not None and not chosen:
        raise ValidationError("turn_ids: the list of turns is empty")
    turns = chosen if chosen is not None else list(Turn.objects.filter(collection=companion))
    statements: dict[int, list[int]] = {}
    for conv_pk, number in PtkbStatement.objects.filter(conversation__collection=companion).values_list(
        "conversation_id", "number"
    ):
        statements.setdefault(conv_pk, []).append(number)
    turns = sorted((t for t in turns if statements.get(t.conversation_id)), key=lambda t: (t.conversation_id, t.number))
    if not turns:
        raise ValidationError("turn_ids: none of these turns has PTKB statements")
    if not 1 <= int(assessors_per_pair) <= 10:
        raise ValidationError("assessors_per_pair: must be between 1 and 10")
    source = companion.ptkb_source
    name = name.strip() or f"PTKB relevance of {len(turns)} turns of {source.name}"
    version_name = _version_name(name)
    if QrelsVersion.objects.filter(collection=companion, name=version_name).exists():
        raise ValidationError(f"name: {companion.name} already has a qrels version named {version_name!r}")
    version = QrelsVersion(
        collection=companion,
        name=version_name,
        description=f"PTKB statement relevance assessed in task {name!r}",
        created_by=created_by,
    )
    version.full_clean()
    version.save()
    # The version starts empty, so "unjudged in" it is every pair; the task's judgments are written into it.
    pool = Pool(
        kind=Pool.Kind.PTKB,
        collection=companion,
        name=name,
        qrels_version=version,
        target_version=version,
        turn_filter=sorted(t.turn_id for t in chosen) if chosen is not None else [],
        text_only=True,
        assessors_per_pair=int(assessors_per_pair),
        aggregation=aggregation,
        status=Pool.Status.OPEN,
        created_by=created_by,
    )
    pool.full_clean()
    pool.save()
    PoolPair.objects.bulk_create(
        [
            PoolPair(pool=pool, turn=t, passage_id=str(n), run_ids=[], best_rank=n, has_text=True)
            for t in turns
            for n in sorted(statements[t.conversation_id])
        ],
        batch_size=1000,
    )
    # Statements are never near duplicates of each other: every pair is its own cluster head.
    PoolPair.objects.filter(pool=pool).update(cluster_head_id=F("pk"))
    per_turn = {t.turn_id: len(statements[t.conversation_id]) for t in turns}
    pool.stats = {
        "pairs": sum(per_turn.values()),
        "turns": len(turns),
        "topics": len({t.conversation_id for t in turns}),
        "judgments_needed": sum(per_turn.values()),
        "with_text": sum(per_turn.values()),
        "per_turn": per_turn,
    }
    pool.save(update_fields=["stats"])
    return pool


@transaction.atomic
def ptkb_turn_submit(
    *, assignment: AssessorAssignment, turn_id: str, relevant: Iterable[int], assessor: Any
) -> dict[str, int]:
    """Judge every PTKB statement of one turn of the assessor's topic: those in ``relevant`` 1, the others 0.

    A re-submit replaces the turn's grades (each judgment keeps its earlier grades in its history); an identical
    re-submit changes nothing. Returns how many statements changed and how many are marked relevant.
    """
    if assignment.pool.kind != Pool.Kind.PTKB:
        raise ValidationError("This topic is not a PTKB assessment.")
    pairs = list(
        PoolPair.objects.filter(
            pool_id=assignment.pool_id, turn__conversation_id=assignment.conversation_id, turn__turn_id=turn_id
        ).select_related("turn")
    )
    if not pairs:
        raise ValidationError(f"turn: {turn_id} is not part of your topic")
    numbers = {int(p.passage_id) for p in pairs}
    marked = {int(n) for n in relevant}
    unknown = sorted(marked - numbers)
    if unknown:
        raise ValidationError(f"relevant: the user has no statement {', '.join(map(str, unknown))}")
    grades = [(pair, int(int(pair.passage_id) in marked)) for pair in sorted(pairs, key=lambda p: int(p.passage_id))]
    stored = judgments_submit(assignment=assignment, grades=grades, assessor=assessor)
    changed = sum(was_changed for _judgment, was_changed in stored)
    return {"changed": changed, "relevant": len(marked), "statements": len(pairs)}
