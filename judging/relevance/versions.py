"""Writes for qrels versions pools feed: the empty base of a collection without qrels, "<parent> + new" copies, and
assessor judgments aggregated into them."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from django.core.exceptions import ValidationError
from django.db import connection, transaction
from django.db.models import F
from django.utils import timezone

from ecast.core.jobs import enqueue
from evaluation import events
from evaluation.models import Qrel, QrelsVersion
from judging.models import AssessorJudgment, Pool, PoolPair
from judging.relevance.qrels_export import AGGREGATIONS, aggregate

# The empty base version a collection without qrels gets with its first pool: what "judged" means there (nothing).
JUDGING_BASE_NAME = "judged here"


def judging_base_check(*, collection: Any) -> None:
    """Refuse a pool without a qrels version when the collection has one (the pool must say which decides)."""
    if QrelsVersion.objects.filter(collection=collection).exists():
        raise ValidationError("qrels_version: choose the qrels version that decides what is already judged")


@transaction.atomic
def judging_base(*, collection: Any, created_by: Any = None) -> QrelsVersion:
    """Create the empty "judged here" version of a collection that has no qrels, for its first pool to check and
    to derive the version its judgments go into from (CAsT 2022 and iKAT topics and runs come without qrels)."""
    judging_base_check(collection=collection)
    version = QrelsVersion(
        collection=collection,
        name=JUDGING_BASE_NAME,
        description="Empty when created: the collection had no qrels; judgments made in ecast go into versions "
        "derived from it.",
        created_by=created_by,
    )
    version.full_clean()
    version.save()
    return version


def write_cluster_qrels(*, pool: Pool, heads: Iterable[PoolPair] | None = None) -> int:
    """Write the aggregated grade of each judged head (and its cluster members) into the pool's target version.

    ``heads=None`` re-syncs the whole pool. Returns the number of qrels rows written.
    """
    version_id = pool.target_version_id
    if version_id is None:
        return 0
    head_qs = PoolPair.objects.filter(pool=pool, cluster_head_id=F("pk"))
    if heads is not None:
        head_qs = head_qs.filter(pk__in=[h.pk for h in heads])
    grades: dict[int, list[int]] = defaultdict(list)
    for head_id, grade in (
        AssessorJudgment.objects.filter(pair__in=head_qs).order_by("pair_id", "id").values_list("pair_id", "grade")
    ):
        grades[head_id].append(grade)
    if not grades:
        return 0
    keys = set(
        PoolPair.objects.filter(pool=pool, cluster_head_id__in=list(grades)).values_list("turn_id", "passage_id")
    )
    turn_pks = sorted({t for t, _ in keys})
    # Every pool feeding the version counts, so a pair pooled twice gets one grade from all its judgments,
    # the same one the export computes; judgment id order keeps "primary" = first judgment.
    all_grades: dict[tuple[int, str], list[int]] = defaultdict(list)
    for turn_pk, pid, grade in (
        PoolPair.objects.filter(
            pool__target_version_id=version_id, turn_id__in=turn_pks, cluster_head__judgments__isnull=False
        )
        .order_by("cluster_head__judgments__id")
        .values_list("turn_id", "passage_id", "cluster_head__judgments__grade")
    ):
        if (turn_pk, pid) in keys:
            all_grades[(turn_pk, pid)].append(grade)
    wanted = {key: aggregate(all_grades[key], pool.aggregation) for key in keys}
    existing = {
        (q.turn_id, q.passage_id): q
        for q in Qrel.objects.filter(version_id=version_id, turn_id__in=turn_pks)
        if (q.turn_id, q.passage_id) in wanted
    }
    to_create, to_update = [], []
    for (turn_pk, pid), grade in wanted.items():
        row = existing.get((turn_pk, pid))
        if row is None:
            to_create.append(
                Qrel(version_id=version_id, turn_id=turn_pk, passage_id=pid, grade=grade, source=Qrel.Source.ASSESSED)
            )
        elif row.grade != grade or row.source != Qrel.Source.ASSESSED:
            row.grade, row.source = grade, Qrel.Source.ASSESSED
            to_update.append(row)
    Qrel.objects.bulk_create(to_create, batch_size=1000)
    Qrel.objects.bulk_update(to_update, ["grade", "source"], batch_size=1000)
    if to_create or to_update:
        changed_turns = {q.turn_id for q in to_create} | {q.turn_id for q in to_update}
        QrelsVersion.objects.filter(pk=version_id).update(updated_at=timezone.now())
        events.qrels_changed(version_id=version_id, turn_ids=changed_turns)
    return len(to_create) + len(to_update)


@transaction.atomic
def pool_sync_to_version(*, pool: Pool) -> int:
    """Re-aggregate every judgment of the pool into its target version (after linking or an aggregation change)."""
    return write_cluster_qrels(pool=pool)


def pool_sync_start(*, pool: Pool, aggregation: str | None = None) -> None:
    """Switch the pool to ``aggregation`` (when it names another one) and re-sync its target version in the worker."""
    if aggregation in AGGREGATIONS and aggregation != pool.aggregation:
        pool.aggregation = aggregation
        pool.save(update_fields=["aggregation"])
    if pool.target_version_id is None:
        raise ValidationError("The pool feeds no qrels version yet.")
    enqueue("judging.relevance.pool_sync", pool.pk)


@transaction.atomic
def qrels_version_derive(
    *, parent: QrelsVersion, pool: Pool, name: str = "", description: str = "", created_by: Any = None
) -> QrelsVersion:
    """Create "<parent> + new": a copy of the parent's rows that the pool's judgments are written into."""
    if parent.collection_id != pool.collection_id:
        raise ValidationError("parent: the qrels version and the pool belong to different collections")
    name = name.strip() or f"{parent.name} + new"
    if QrelsVersion.objects.filter(collection_id=parent.collection_id, name=name).exists():
        raise ValidationError(f"name: a qrels version named {name!r} already exists in this collection")
    version = QrelsVersion(
        collection_id=parent.collection_id,
        name=name,
        parent=parent,
        description=description or f"{parent.name} plus the judgments of pool {pool.name!r}",
        created_by=created_by,
    )
    version.full_clean()
    version.save()
    _copy_qrels(source_id=parent.pk, target_id=version.pk)
    pool.target_version = version
    pool.save(update_fields=["target_version"])
    write_cluster_qrels(pool=pool)
    return version


def derived_version_name(*, parent: QrelsVersion, pool_name: str) -> str:
    """The name of the version a new pool feeds by default: "<parent> + <pool name>" (cut to the field's length)."""
    limit = QrelsVersion._meta.get_field("name").max_length or 100
    return f"{parent.name} + {pool_name.strip()}"[:limit].strip()


@transaction.atomic
def pool_feed_derived_version(*, pool: Pool, created_by: Any = None) -> QrelsVersion:
    """Make a new pool feed "<its qrels version> + <pool name>": derived from the version the pool checks, created
    if missing, attached to if it exists (a second pool of the same name feeds the same version)."""
    name = derived_version_name(parent=pool.qrels_version, pool_name=pool.name)
    existing = QrelsVersion.objects.filter(collection_id=pool.collection_id, name=name).first()
    if existing is None:
        return qrels_version_derive(parent=pool.qrels_version, pool=pool, name=name, created_by=created_by)
    if existing.parent_id is None:
        raise ValidationError(
            f"feed_version: {name!r} is an imported qrels version; name the pool differently or feed no version"
        )
    pool_attach_version(pool=pool, version=existing)
    return existing


def _copy_qrels(*, source_id: int, target_id: int) -> None:
    """Copy a version's rows in one INSERT … SELECT: 40k rows never travel through Python."""
    table = connection.ops.quote_name(Qrel._meta.db_table)
    cols = ["turn_id", "passage_id", "grade", "source"]
    col_sql = ", ".join(connection.ops.quote_name(c) for c in cols)
    version_col = connection.ops.quote_name("version_id")
    created_col = connection.ops.quote_name("created_at")
    with connection.cursor() as cur:
        cur.execute(
            f"INSERT INTO {table} ({version_col}, {col_sql}, {created_col}) "  # noqa: S608 - quoted identifiers only
            f"SELECT %s, {col_sql}, %s FROM {table} WHERE {version_col} = %s",
            [target_id, timezone.now(), source_id],
        )


@transaction.atomic
def pool_attach_version(*, pool: Pool, version: QrelsVersion) -> Pool:
    """Send a pool's judgments into an existing derived version (several pools may feed one version)."""
    if version.collection_id != pool.collection_id:
        raise ValidationError("version: belongs to another collection")
    if version.parent_id is None:
        raise ValidationError("version: judgments go only into derived versions, never into an imported one")
    pool.target_version = version
    pool.save(update_fields=["target_version"])
    write_cluster_qrels(pool=pool)
    return pool
