"""Writes for relevance judging: pools, topic assignments, judgments, derived qrels versions."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import F, QuerySet
from django.utils import timezone

from ecast.models import Collection, Conversation, Passage, Turn
from ecast.permissions import is_assessor
from evaluation.models import Qrel, QrelsVersion, Run, RunTurn
from judging.models import AssessorAssignment, AssessorJudgment, Pool, PoolPair
from judging.relevance import dedup
from judging.relevance.versions import (  # noqa: F401 - re-exported: the services API of relevance judging
    pool_attach_version,
    pool_sync_to_version,
    qrels_version_derive,
    write_cluster_qrels,
)

MAX_DEPTH = 100
_CHUNK = 900  # below SQLite's bound-parameter limit on old builds


def _resolve_turns(collection: Collection, turn_ids: Iterable[Any] | None) -> list[Turn] | None:
    """Turn pks (ints) or "<topic>_<n>" ids (strings) → Turn rows of the collection; unknown ids are an error."""
    if turn_ids is None:
        return None
    wanted = list(turn_ids)
    pks = {int(t) for t in wanted if isinstance(t, int) or (isinstance(t, str) and t.isdigit())}
    names = {str(t) for t in wanted if not (isinstance(t, int) or (isinstance(t, str) and t.isdigit()))}
    found = list(Turn.objects.filter(collection=collection, pk__in=pks)) if pks else []
    if names:
        found += list(Turn.objects.filter(collection=collection, turn_id__in=names))
    missing = (pks - {t.pk for t in found}) | (names - {t.turn_id for t in found})
    if missing:
        raise ValidationError(
            f"turn_ids: {len(missing)} unknown in {collection.name}: {', '.join(sorted(map(str, missing))[:10])}"
        )
    return found


def _passage_texts(passage_ids: Iterable[str]) -> dict[str, str]:
    ids = sorted(set(passage_ids))
    texts: dict[str, str] = {}
    for i in range(0, len(ids), _CHUNK):
        texts.update(
            Passage.objects.filter(passage_id__in=ids[i : i + _CHUNK])
            .exclude(text="")
            .values_list("passage_id", "text")
        )
    return texts


def _pool_validate(
    *,
    collection: Collection,
    qrels_version: QrelsVersion,
    runs: Sequence[Run],
    depth: int,
    turn_ids: Iterable[Any] | None,
    cluster_near_duplicates: bool,
    cluster_threshold: float,
    assessors_per_pair: int,
    aggregation: str,
) -> tuple[list[Run], int, list[Turn] | None]:
    """Check a pool request; return the runs, the depth and the turns it is restricted to (None = all)."""
    runs = list(runs)
    if not runs:
        raise ValidationError("runs: select at least one run")
    if qrels_version.collection_id != collection.pk:
        raise ValidationError(f"qrels_version: {qrels_version.name!r} belongs to another collection")
    foreign = [r.name for r in runs if r.collection_id != collection.pk]
    if foreign:
        raise ValidationError(f"runs: {', '.join(foreign)} belong to another collection")
    if not 1 <= int(depth) <= MAX_DEPTH:
        raise ValidationError(f"depth: must be between 1 and {MAX_DEPTH}, got {depth}")
    if not 1 <= int(assessors_per_pair) <= 10:
        raise ValidationError("assessors_per_pair: must be between 1 and 10")
    if aggregation not in Pool.Aggregation.values:
        raise ValidationError(f"aggregation: must be one of {', '.join(Pool.Aggregation.values)}")
    if cluster_near_duplicates and not 0.0 < float(cluster_threshold) <= 1.0:
        raise ValidationError("cluster_threshold: must be in (0, 1]")
    depth = int(depth)
    turns = _resolve_turns(collection, turn_ids)
    if turns is not None and not turns:
        raise ValidationError("turn_ids: the list of turns is empty")
    return runs, depth, turns


def _pool_row(
    *,
    collection: Collection,
    qrels_version: QrelsVersion,
    runs: list[Run],
    depth: int,
    turns: list[Turn] | None,
    name: str,
    cluster_near_duplicates: bool,
    cluster_threshold: float,
    assessors_per_pair: int,
    aggregation: str,
    created_by: Any,
    status: str,
) -> Pool:
    """Store the pool row with its settings and runs (its pairs come from ``_pool_fill``)."""
    pool = Pool(
        collection=collection,
        name=name.strip() or f"{collection.name} depth-{depth} pool of {len(runs)} run(s)",
        qrels_version=qrels_version,
        depth=depth,
        turn_filter=sorted(t.turn_id for t in turns) if turns is not None else [],
        cluster_near_duplicates=cluster_near_duplicates,
        cluster_threshold=float(cluster_threshold),
        assessors_per_pair=int(assessors_per_pair),
        aggregation=aggregation,
        created_by=created_by,
        status=status,
    )
    pool.full_clean()
    pool.save()
    pool.runs.set(runs)
    return pool


def _pool_fill(*, pool: Pool, runs: list[Run], turns: list[Turn] | None) -> None:
    """Compute the pool's pairs from the runs' rankings, cluster near duplicates, and store the statistics."""
    depth = pool.depth
    qrels_version = pool.qrels_version
    cluster_near_duplicates = pool.cluster_near_duplicates
    cluster_threshold = pool.cluster_threshold
    ranking_qs = RunTurn.objects.filter(run__in=runs)
    judged_qs = Qrel.objects.filter(version=qrels_version)
    if turns is not None:
        ranking_qs = ranking_qs.filter(turn__in=turns)
        judged_qs = judged_qs.filter(turn__in=turns)
    judged = set(judged_qs.values_list("turn_id", "passage_id").iterator(chunk_size=5000))

    # (turn pk, passage) → {"runs": set, "rank": best rank}; per run: pairs contributed.
    pairs: dict[tuple[int, str], dict[str, Any]] = {}
    skipped_judged = 0
    for run_id, turn_pk, doc_ids in ranking_qs.values_list("run_id", "turn_id", "doc_ids").iterator(chunk_size=500):
        for rank, doc in enumerate(doc_ids[:depth], start=1):
            key = (turn_pk, doc)
            if key in judged:
                skipped_judged += 1
                continue
            entry = pairs.setdefault(key, {"runs": set(), "rank": rank})
            entry["runs"].add(run_id)
            entry["rank"] = min(entry["rank"], rank)

    run_names = {r.pk: r.name for r in runs}

    texts = _passage_texts(doc for _, doc in pairs)
    ordered = sorted(pairs.items(), key=lambda kv: (kv[0][0], kv[1]["rank"], kv[0][1]))
    objs = [
        PoolPair(
            pool=pool,
            turn_id=turn_pk,
            passage_id=doc,
            run_ids=sorted(entry["runs"]),
            best_rank=entry["rank"],
            has_text=doc in texts,
        )
        for (turn_pk, doc), entry in ordered
    ]
    PoolPair.objects.bulk_create(objs, batch_size=1000)
    if any(o.pk is None for o in objs):  # backends without RETURNING: read the ids back
        ids = dict(
            ((t, p), pk) for pk, t, p in PoolPair.objects.filter(pool=pool).values_list("pk", "turn_id", "passage_id")
        )
        for o in objs:
            o.pk = ids[(o.turn_id, o.passage_id)]

    by_turn: dict[int, list[PoolPair]] = defaultdict(list)
    for o in objs:
        by_turn[o.turn_id].append(o)
    for turn_pairs in by_turn.values():
        if cluster_near_duplicates:
            groups = dedup.cluster(
                [(p.passage_id, texts.get(p.passage_id)) for p in turn_pairs], threshold=float(cluster_threshold)
            )
            by_pid = {p.passage_id: p for p in turn_pairs}
            for group in groups:
                head = by_pid[group[0]]
                for pid in group:
                    by_pid[pid].cluster_head_id = head.pk
        else:
            for p in turn_pairs:
                p.cluster_head_id = p.pk
    PoolPair.objects.bulk_update(objs, ["cluster_head"], batch_size=1000)

    pool.stats = _pool_stats(objs, run_names, skipped_judged=skipped_judged)
    pool.save(update_fields=["stats"])


def _pool_prepare(
    *,
    status: str,
    collection: Collection,
    qrels_version: QrelsVersion,
    runs: Sequence[Run],
    depth: int = 3,
    turn_ids: Iterable[Any] | None = None,
    name: str = "",
    cluster_near_duplicates: bool = False,
    created_by: Any = None,
    cluster_threshold: float = 0.9,
    assessors_per_pair: int = 1,
    aggregation: str = "majority",
) -> tuple[Pool, list[Run], list[Turn] | None]:
    """Validate a pool request and store its row (no pairs yet); return the pool, its runs and its turns."""
    options: dict[str, Any] = dict(
        cluster_near_duplicates=cluster_near_duplicates,
        cluster_threshold=cluster_threshold,
        assessors_per_pair=assessors_per_pair,
        aggregation=aggregation,
    )
    run_list, depth, turns = _pool_validate(
        collection=collection, qrels_version=qrels_version, runs=runs, depth=depth, turn_ids=turn_ids, **options
    )
    pool = _pool_row(
        collection=collection, qrels_version=qrels_version, runs=run_list, depth=depth, turns=turns, name=name,
        created_by=created_by, status=status, **options,
    )  # fmt: skip
    return pool, run_list, turns


@transaction.atomic
def pool_create(
    *,
    collection: Collection,
    qrels_version: QrelsVersion,
    runs: Sequence[Run],
    depth: int = 3,
    turn_ids: Iterable[Any] | None = None,
    name: str = "",
    cluster_near_duplicates: bool = False,
    created_by: Any = None,
    cluster_threshold: float = 0.9,
    assessors_per_pair: int = 1,
    aggregation: str = "majority",
) -> Pool:
    """Pool the top-``depth`` passages per turn of ``runs`` that ``qrels_version`` has not judged (synchronously)."""
    pool, run_list, turns = _pool_prepare(
        status=Pool.Status.OPEN, collection=collection, qrels_version=qrels_version, runs=runs, depth=depth,
        turn_ids=turn_ids, name=name, cluster_near_duplicates=cluster_near_duplicates, created_by=created_by,
        cluster_threshold=cluster_threshold, assessors_per_pair=assessors_per_pair, aggregation=aggregation,
    )  # fmt: skip
    _pool_fill(pool=pool, runs=run_list, turns=turns)
    return pool


def pool_create_start(**request: Any) -> Pool:
    """Like ``pool_create`` (same arguments), but store the pool as "building" and let the worker fill it.

    Deep pools over many runs (and near-duplicate clustering) take long, so pages and the API never build them
    inside the request. Invalid requests fail here, before anything is stored or queued.
    """
    with transaction.atomic():
        pool, _, _ = _pool_prepare(status=Pool.Status.BUILDING, **request)
    from judging.relevance.tasks import pool_build_task  # the tasks module imports this one

    # Queued after the commit above, so the worker always finds the row.
    pool_build_task.delay(pool.pk)
    pool.refresh_from_db()
    return pool


@transaction.atomic
def pool_build(*, pool_id: int) -> Pool:
    """Compute the pairs of a "building" pool and open it; a redelivered task finds it built and does nothing."""
    pool = Pool.objects.select_for_update().select_related("qrels_version").get(pk=pool_id)
    if pool.status != Pool.Status.BUILDING:
        return pool
    # turn_filter holds "<topic>_<n>" ids (ad hoc collections may use bare numbers), so resolve them by id.
    turns = (
        list(Turn.objects.filter(collection=pool.collection, turn_id__in=pool.turn_filter))
        if pool.turn_filter
        else None
    )
    _pool_fill(pool=pool, runs=list(pool.runs.all()), turns=turns)
    pool.status = Pool.Status.OPEN
    pool.error = ""
    pool.save(update_fields=["status", "error"])
    return pool


def pool_build_failed(*, pool_id: int, error: str) -> None:
    """Record why the worker could not build a pool (shown on its page)."""
    Pool.objects.filter(pk=pool_id, status=Pool.Status.BUILDING).update(status=Pool.Status.FAILED, error=error[:2000])


def _pool_stats(pairs: list[PoolPair], run_names: dict[int, str], *, skipped_judged: int) -> dict[str, Any]:
    """Pool statistics: pairs per turn, per-run contribution and unique pairs, texts, clusters."""
    turn_names = dict(Turn.objects.filter(pk__in={p.turn_id for p in pairs}).values_list("pk", "turn_id"))
    per_turn: dict[str, int] = defaultdict(int)
    per_run = {name: {"contributed": 0, "unique": 0} for name in run_names.values()}
    heads = 0
    clustered = 0
    for p in pairs:
        per_turn[turn_names[p.turn_id]] += 1
        for rid in p.run_ids:
            per_run[run_names[rid]]["contributed"] += 1
        if len(p.run_ids) == 1:
            per_run[run_names[p.run_ids[0]]]["unique"] += 1
        if p.cluster_head_id == p.pk:
            heads += 1
        else:
            clustered += 1
    counts = sorted(per_turn.values())
    return {
        "pairs": len(pairs),
        "turns": len(per_turn),
        "judgments_needed": heads,
        "clustered_pairs": clustered,
        "with_text": sum(1 for p in pairs if p.has_text),
        "unique_to_one_run": sum(1 for p in pairs if len(p.run_ids) == 1),
        "already_judged_skipped": skipped_judged,
        "per_turn": dict(sorted(per_turn.items(), key=lambda kv: _turn_sort_key(kv[0]))),
        "per_turn_min": counts[0] if counts else 0,
        "per_turn_max": counts[-1] if counts else 0,
        "per_run": per_run,
    }


def _turn_sort_key(turn_id: str) -> tuple:
    parts = turn_id.split("_")
    return tuple((0, int(x), "") if x.isdigit() else (1, 0, x) for x in parts)


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
    if assignment.assessor_id != assessor.pk:
        raise ValidationError("This topic is not assigned to you.")
    if pair.pool_id != assignment.pool_id or pair.turn.conversation_id != assignment.conversation_id:
        raise ValidationError("This pair is not part of your topic.")
    if pair.cluster_head_id != pair.pk:
        raise ValidationError("This pair is judged through its near-duplicate cluster head.")
    if isinstance(grade, bool) or not isinstance(grade, int) or not 0 <= grade <= 4:
        raise ValidationError(f"grade: must be an integer 0–4, got {grade!r}")
    if assignment.pool.status != Pool.Status.OPEN:
        raise ValidationError("The pool is closed.")

    judgment = AssessorJudgment.objects.select_for_update().filter(pair=pair, assessor=assessor).first()
    created = False
    if judgment is None:
        try:
            with transaction.atomic():
                judgment = AssessorJudgment.objects.create(
                    pair=pair, assignment=assignment, assessor=assessor, grade=grade
                )
            created = True
        except IntegrityError:
            # A concurrent duplicate submit won the race: treat this one as a repeat of it.
            judgment = AssessorJudgment.objects.select_for_update().get(pair=pair, assessor=assessor)
    if not created:
        if judgment.grade == grade:
            return judgment, False
        judgment.history = [*judgment.history, {"grade": judgment.grade, "at": judgment.updated_at.isoformat()}]
        judgment.grade = grade
        judgment.save(update_fields=["grade", "history", "updated_at"])
    assignment_refresh_completion(assignment=assignment)
    if assignment.pool.target_version_id:
        write_cluster_qrels(pool=assignment.pool, heads=[pair])
    return judgment, True


@transaction.atomic
def pool_set_status(*, pool: Pool, status: str) -> Pool:
    """Open or close a pool; a closed pool accepts no new topics or judgments."""
    allowed = (Pool.Status.OPEN, Pool.Status.CLOSED)
    if status not in allowed:
        raise ValidationError(f"status: must be one of {', '.join(allowed)}")
    if pool.status not in allowed:
        raise ValidationError(f"the pool is {pool.status}; only a built pool can be opened or closed")
    pool.status = status
    pool.save(update_fields=["status"])
    return pool
