"""Passage texts for pools: which passages a collection needs, and has_text kept true after texts arrive.

``register()`` (run when ``judging.relevance.tasks`` loads, which every process does at start) tells ecast's corpus
import where the needed passage ids come from (runs, qrels and pools: rows ecast cannot import), and marks the pool
pairs whose passage got its text once a passage import succeeds, wherever it was started (pool page, import page,
API or ``import_data``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from django.db import transaction
from django.db.models.signals import post_save

from ecast.imports.formats import passages
from ecast.models import Collection, ImportJob, Passage
from evaluation.models import Qrel, RunTurn
from judging.models import Pool, PoolPair

PASSAGE_KINDS = ("passages_tsv", "passages_jsonl")  # the corpus import kinds (the pool page starts these)


def needed_passage_ids(collection: Collection | None) -> Iterator[str]:
    """Passage ids the collection's runs rank (at any depth), its qrels judge (any version) or its pools hold; every
    collection's when None."""
    rankings = RunTurn.objects.all()
    qrels = Qrel.objects.all()
    pairs = PoolPair.objects.all()
    if collection is not None:
        rankings = rankings.filter(run__collection=collection)
        qrels = qrels.filter(version__collection=collection)
        pairs = pairs.filter(pool__collection=collection)
    for doc_ids in rankings.values_list("doc_ids", flat=True).iterator(chunk_size=200):
        yield from doc_ids
    yield from qrels.values_list("passage_id", flat=True).distinct().iterator(chunk_size=5000)
    yield from pairs.values_list("passage_id", flat=True).distinct().iterator(chunk_size=5000)


def pool_texts_refresh(*, pool_ids: Iterable[int] | None = None) -> int:
    """Mark the pairs whose passage has text now (after a passage import) and update their pools' ``with_text``
    count; returns the pairs marked. Clusters stay as built: near duplicates are found at build time."""
    with_text = Passage.objects.exclude(text="").values("passage_id")
    stale = PoolPair.objects.filter(has_text=False, passage_id__in=with_text)
    if pool_ids is not None:
        stale = stale.filter(pool_id__in=list(pool_ids))
    with transaction.atomic():
        touched = set(stale.values_list("pool_id", flat=True).distinct())
        if not touched:
            return 0
        marked = PoolPair.objects.filter(pool_id__in=touched, has_text=False, passage_id__in=with_text).update(
            has_text=True
        )
        for pool in Pool.objects.select_for_update().filter(pk__in=touched):
            pool.stats = {**pool.stats, "with_text": pool.pairs.filter(has_text=True).count()}
            pool.save(update_fields=["stats"])
    return marked


def _after_import(sender: Any, instance: ImportJob, **kwargs: Any) -> None:
    counts = instance.counts or {}
    if instance.status == ImportJob.Status.SUCCEEDED and (
        counts.get("passages_created") or counts.get("passages_updated")
    ):
        transaction.on_commit(lambda: pool_texts_refresh())


def register() -> None:
    """Give ecast's corpus import the needed passage ids, and refresh has_text after passage imports (idempotent)."""
    passages.needed_ids_register("judging.relevance", needed_passage_ids)
    post_save.connect(_after_import, sender=ImportJob, dispatch_uid="judging.relevance.texts.after_import")
