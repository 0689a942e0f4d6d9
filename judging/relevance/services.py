"""Writes for relevance judging: topic assignments of assessors and their judgments.

Pools are created in ``judging.relevance.pools``; derived qrels versions, which judgments feed, in
``judging.relevance.versions``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import F, QuerySet
from django.utils import timezone

from ecast.core.permissions import is_assessor
from ecast.models import Conversation
from judging.models import AssessorAssignment, AssessorJudgment, Pool, PoolPair
from judging.relevance.versions import write_cluster_qrels

# ---------------------------------------------------------------- assignments


def _check_may_judge(pool: Pool, user: Any) -> None:
    if not is_assessor(user):
        raise ValidationError("Only assessors can take topics.")
    if pool.status != Pool.Status.OPEN:
        raise ValidationError(f"Pool {pool.name!r} is closed.")
    if pool.assessors.exists() and not pool.assessors.filter(pk=user.pk).exists():
        raise ValidationError(f"You are not an assessor of pool {pool.name!r}.")


def _conversations_with_pairs(pool: Pool) -> list[int]:
    return list(
        PoolPair.objects.filter(pool=pool)
        .values_list("turn__conversation_id", flat=True)
        .distinct()
        .order_by("turn__conversation_id")
    )


@transaction.atomic
def assignment_create(
    *, pool: Pool, conversation: Conversation, assessor: Any, assigned_by: Any = None
) -> AssessorAssignment:
    """Lease one topic of a pool to an assessor (idempotent: an existing lease is returned)."""
    if conversation.collection_id != pool.collection_id:
        raise ValidationError("conversation: not in the pool's collection")
    if not PoolPair.objects.filter(pool=pool, turn__conversation=conversation).exists():
        raise ValidationError(f"Topic {conversation.topic_id} has no pairs in pool {pool.name!r}.")
    _check_may_judge(pool, assessor)
    existing = AssessorAssignment.objects.filter(pool=pool, conversation=conversation, assessor=assessor).first()
    if existing:
        return existing
    # Lock the pool row so two concurrent takes cannot both grab the last slot.
    Pool.objects.select_for_update().filter(pk=pool.pk).first()
    taken = AssessorAssignment.objects.filter(pool=pool, conversation=conversation).count()
    if taken >= pool.assessors_per_pair:
        raise ValidationError(
            f"Topic {conversation.topic_id} already has {taken} assessor(s); "
            f"the pool asks for {pool.assessors_per_pair}."
        )
    assignment = AssessorAssignment(
        pool=pool, conversation=conversation, assessor=assessor, slot=taken + 1, assigned_by=assigned_by
    )
    assignment.full_clean()
    assignment.save()
    return assignment


def assignment_take(*, pool: Pool, assessor: Any) -> AssessorAssignment:
    """Give an assessor their unfinished topic of the pool, or lease them the next topic that needs an assessor."""
    _check_may_judge(pool, assessor)
    current = (
        AssessorAssignment.objects.filter(pool=pool, assessor=assessor, completed_at__isnull=True)
        .order_by("created_at")
        .first()
    )
    if current:
        return current
    mine = set(
        AssessorAssignment.objects.filter(pool=pool, assessor=assessor).values_list("conversation_id", flat=True)
    )
    for _attempt in range(3):
        counts: dict[int, int] = defaultdict(int)
        for conv_id in AssessorAssignment.objects.filter(pool=pool).values_list("conversation_id", flat=True):
            counts[conv_id] += 1
        for conv_id in _conversations_with_pairs(pool):
            if conv_id in mine or counts[conv_id] >= pool.assessors_per_pair:
                continue
            try:
                return assignment_create(
                    pool=pool, conversation=Conversation.objects.get(pk=conv_id), assessor=assessor
                )
            except (IntegrityError, ValidationError):
                continue  # someone took the slot meanwhile; try the next topic
    raise ValidationError(f"Every topic of pool {pool.name!r} already has its assessors.")


def _assignment_heads(assignment: AssessorAssignment) -> QuerySet[PoolPair]:
    return PoolPair.objects.filter(
        pool_id=assignment.pool_id, turn__conversation_id=assignment.conversation_id, cluster_head_id=F("pk")
    )


def assignment_refresh_completion(*, assignment: AssessorAssignment) -> bool:
    """Mark the lease complete when every cluster head of its topic has this assessor's grade."""
    heads = _assignment_heads(assignment)
    total = heads.count()
    done = AssessorJudgment.objects.filter(assessor_id=assignment.assessor_id, pair__in=heads).count()
    complete = total > 0 and done >= total
    if complete and assignment.completed_at is None:
        assignment.completed_at = timezone.now()
        assignment.save(update_fields=["completed_at"])
    elif not complete and assignment.completed_at is not None:
        assignment.completed_at = None
        assignment.save(update_fields=["completed_at"])
    return complete


# ---------------------------------------------------------------- judgments


@transaction.atomic
def judgment_submit(
    *, assignment: AssessorAssignment, pair: PoolPair, grade: int, assessor: Any
) -> tuple[AssessorJudgment, bool]:
    """Store an assessor's grade for a pair of their topic; a repeated identical submit changes nothing.

    Returns ``(judgment, changed)``. A different grade for an already judged pair replaces it and keeps the old one
    in ``history``. When the pool feeds a derived qrels version, the pair's (and its cluster's) aggregated grade is
    written there and evaluation is told which turn changed.
    """
    return judgments_submit(assignment=assignment, grades=[(pair, grade)], assessor=assessor)[0]


@transaction.atomic
def judgments_submit(
    *, assignment: AssessorAssignment, grades: Sequence[tuple[PoolPair, int]], assessor: Any
) -> list[tuple[AssessorJudgment, bool]]:
    """Store several grades of one assessor's topic at once (:func:`judgment_submit` for each pair, in one
    transaction): every grade is checked before any is stored, the lease's completion is refreshed once and the
    derived qrels version gets the changed clusters in one write. Returns ``(judgment, changed)`` per pair, in order.
    """
    if assignment.assessor_id != assessor.pk:
        raise ValidationError("This topic is not assigned to you.")
    if assignment.pool.status != Pool.Status.OPEN:
        raise ValidationError("The pool is closed.")
    for pair, grade in grades:
        _check_grade(assignment, pair, grade)
    out: list[tuple[AssessorJudgment, bool]] = []
    changed: list[PoolPair] = []
    for pair, grade in grades:
        judgment, was_changed = _judgment_store(assignment, pair, grade, assessor)
        out.append((judgment, was_changed))
        if was_changed:
            changed.append(pair)
    if changed:
        assignment_refresh_completion(assignment=assignment)
        if assignment.pool.target_version_id:
            write_cluster_qrels(pool=assignment.pool, heads=changed)
    return out


def _check_grade(assignment: AssessorAssignment, pair: PoolPair, grade: int) -> None:
    if pair.pool_id != assignment.pool_id or pair.turn.conversation_id != assignment.conversation_id:
        raise ValidationError("This pair is not part of your topic.")
    if pair.cluster_head_id != pair.pk:
        raise ValidationError("This pair is judged through its near-duplicate cluster head.")
    if isinstance(grade, bool) or not isinstance(grade, int) or not 0 <= grade <= 4:
        raise ValidationError(f"grade: must be an integer 0–4, got {grade!r}")
    if assignment.pool.kind == Pool.Kind.PTKB and grade not in (0, 1):
        raise ValidationError(f"grade: a PTKB statement is relevant (1) or not (0), got {grade}")


def _judgment_store(
    assignment: AssessorAssignment, pair: PoolPair, grade: int, assessor: Any
) -> tuple[AssessorJudgment, bool]:
    """Create or regrade one judgment (locked); ``changed`` is False for a repeat of the stored grade."""
    judgment = AssessorJudgment.objects.select_for_update().filter(pair=pair, assessor=assessor).first()
    if judgment is None:
        try:
            with transaction.atomic():
                judgment = AssessorJudgment.objects.create(
                    pair=pair, assignment=assignment, assessor=assessor, grade=grade
                )
            return judgment, True
        except IntegrityError:
            # A concurrent duplicate submit won the race: treat this one as a repeat of it.
            judgment = AssessorJudgment.objects.select_for_update().get(pair=pair, assessor=assessor)
    if judgment.grade == grade:
        return judgment, False
    judgment.history = [*judgment.history, {"grade": judgment.grade, "at": judgment.updated_at.isoformat()}]
    judgment.grade = grade
    judgment.save(update_fields=["grade", "history", "updated_at"])
    return judgment, True
