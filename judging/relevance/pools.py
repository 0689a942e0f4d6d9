"""Services for relevance pools: depth-k pools of unjudged (turn, passage) pairs from runs, built in the request or
by the worker, with near-duplicate clusters and statistics; their text coverage before they are made; opening and
closing them.

A pool can take only passages with text (``text_only``): each run's ranking is then walked past the passages that
have no text until ``depth`` passages with text are taken, so "depth" counts over passages an assessor can read.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from ecast.core.bulk import ids_reserve, rows_insert
from ecast.core.jobs import enqueue
from ecast.core.models import ACTIVE_STATUSES
from ecast.models import Collection, Turn
from evaluation.adjudication import BANDITS, DEFAULT_STRATEGY, STRATEGIES
from evaluation.models import QrelsVersion, Run
from judging.models import Pool, PoolBuild, PoolPair
from judging.relevance import dedup, versions
from judging.relevance.pool_pairs import (
    TextIndex,
    judged_pairs,
    pairs_walk,
    passage_texts,
    rankings_read,
    turn_chunks,
)

MAX_DEPTH = 100


def split_turn_ids(text: str) -> list[str] | None:
    """Turn ids typed into a form (space or comma separated); None when none is given (= every turn)."""
    return [t for t in text.replace(",", " ").split() if t] or None


def resolve_turns(collection: Collection, turn_ids: Iterable[Any] | None) -> list[Turn] | None:
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


def _pool_check(
    *,
    collection: Collection,
    qrels_version: QrelsVersion | None,
    runs: Sequence[Run],
    depth: int = 3,
    turn_ids: Iterable[Any] | None = None,
) -> tuple[list[Run], list[Turn] | None, int]:
    """Validate what a pool is made from: its runs, the version that decides "judged", depth and turns. No version
    is allowed only while the collection has none (the pool then starts an empty one, ``versions.judging_base``)."""
    run_list = list(runs)
    if not run_list:
        raise ValidationError("runs: select at least one run")
    if qrels_version is None:
        versions.judging_base_check(collection=collection)
    elif qrels_version.collection_id != collection.pk:
        raise ValidationError(f"qrels_version: {qrels_version.name!r} belongs to another collection")
    foreign = [r.name for r in run_list if r.collection_id != collection.pk]
    if foreign:
        raise ValidationError(f"runs: {', '.join(foreign)} belong to another collection")
    if not 1 <= int(depth) <= MAX_DEPTH:
        raise ValidationError(f"depth: must be between 1 and {MAX_DEPTH}, got {depth}")
    turns = resolve_turns(collection, turn_ids)
    if turns is not None and not turns:
        raise ValidationError("turn_ids: the list of turns is empty")
    return run_list, turns, int(depth)


def pool_preview(
    *,
    collection: Collection,
    qrels_version: QrelsVersion | None,
    runs: Sequence[Run],
    depth: int = 3,
    turn_ids: Iterable[Any] | None = None,
) -> dict[str, Any]:
    """What a pool would hold, before it is made: its pairs and passages and how many have text, and the pool that
    "only passages with text" would make instead (depth counted over passages with text). Stores nothing."""
    run_list, turns, depth = _pool_check(
        collection=collection, qrels_version=qrels_version, runs=runs, depth=depth, turn_ids=turn_ids
    )
    # A chunk of turns at a time, as a build goes (memory: the pool's distinct passages, not the runs' rankings).
    pairs = pairs_with_text = skipped = 0
    pooled_turns: set[int] = set()
    passages: set[str] = set()
    with_text: set[str] = set()
    texted = {"pairs": 0, "skipped": 0, "deepest": 0}
    texted_turns: set[int] = set()
    texted_passages: set[str] = set()
    for chunk in turn_chunks(run_list, turns):
        rankings = rankings_read(run_list, chunk)
        judged = judged_pairs(qrels_version, chunk)
        index = TextIndex()
        plain = pairs_walk(rankings, depth=depth, judged=judged, text_only=False, index=index)
        pairs += len(plain.pairs)
        skipped += plain.skipped_judged
        for turn, doc in plain.pairs:
            pooled_turns.add(turn)
            passages.add(doc)
            if doc in index:
                pairs_with_text += 1
                with_text.add(doc)
        del plain
        walk = pairs_walk(rankings, depth=depth, judged=judged, text_only=True, index=index)
        texted["pairs"] += len(walk.pairs)
        texted["skipped"] += walk.skipped_judged
        texted["deepest"] = max(texted["deepest"], walk.deepest_rank)
        texted_turns.update(turn for turn, _ in walk.pairs)
        texted_passages.update(doc for _, doc in walk.pairs)
    return {
        "depth": depth,
        "runs": len(run_list),
        "turns": len(pooled_turns),
        "pairs": pairs,
        "pairs_with_text": pairs_with_text,
        "passages": len(passages),
        "passages_with_text": len(with_text),
        "already_judged_skipped": skipped,
        "text_only": {
            "pairs": texted["pairs"],
            "passages": len(texted_passages),
            "turns": len(texted_turns),
            "already_judged_skipped": texted["skipped"],
            "deepest_rank": texted["deepest"],
        },
        # "Only passages with text" is on by default when any passage of the pool has text.
        "text_only_default": bool(with_text),
    }


def _any_text(qrels_version: QrelsVersion | None, runs: list[Run], turns: list[Turn] | None, *, depth: int) -> bool:
    """Whether any passage of the plain pool has text: the default of ``text_only``, as the preview shows it."""
    for chunk in turn_chunks(runs, turns):
        index = TextIndex()
        rankings, judged = rankings_read(runs, chunk, keep=depth), judged_pairs(qrels_version, chunk)
        walk = pairs_walk(rankings, depth=depth, judged=judged, text_only=False, index=index)
        if any(doc in index for _, doc in walk.pairs):
            return True
    return False


def _pool_prepare(
    *,
    status: str,
    collection: Collection,
    qrels_version: QrelsVersion | None,
    runs: Sequence[Run],
    depth: int = 3,
    turn_ids: Iterable[Any] | None = None,
    name: str = "",
    text_only: bool | None = False,
    feed_version: bool = False,
    cluster_near_duplicates: bool = False,
    created_by: Any = None,
    cluster_threshold: float = 0.9,
    assessors_per_pair: int = 1,
    aggregation: str = "majority",
    strategy: str = DEFAULT_STRATEGY,
    prior_version: QrelsVersion | None = None,
) -> tuple[Pool, list[Run], list[Turn] | None]:
    """Check a pool request and store its row with its settings and runs (its pairs come from ``_pool_fill``);
    return the pool, its runs and the turns it is restricted to (None = all).

    ``text_only`` None: on when any top-``depth`` passage has text. ``feed_version``: the pool's judgments go into
    the derived version "<qrels_version> + <pool name>", created if missing. ``qrels_version`` None (a collection
    without qrels): the pool checks, and its judgments derive from, a new empty "judged here" version.
    """
    run_list, turns, depth = _pool_check(
        collection=collection, qrels_version=qrels_version, runs=runs, depth=depth, turn_ids=turn_ids
    )
    if not 1 <= int(assessors_per_pair) <= 10:
        raise ValidationError("assessors_per_pair: must be between 1 and 10")
    if aggregation not in Pool.Aggregation.values:
        raise ValidationError(f"aggregation: must be one of {', '.join(Pool.Aggregation.values)}")
    if strategy not in STRATEGIES:
        raise ValidationError(f"strategy: must be one of {', '.join(STRATEGIES)}")
    if prior_version is not None and prior_version.collection_id != collection.pk:
        raise ValidationError(f"prior_version: {prior_version.name!r} belongs to another collection")
    if prior_version is not None and strategy not in BANDITS:
        raise ValidationError("prior_version: only the bandit orders (MM, MM-NS) take a prior")
    if cluster_near_duplicates and not 0.0 < float(cluster_threshold) <= 1.0:
        raise ValidationError("cluster_threshold: must be in (0, 1]")
    if qrels_version is None:
        qrels_version = versions.judging_base(collection=collection, created_by=created_by)
    if text_only is None:
        text_only = _any_text(qrels_version, run_list, turns, depth=depth)
    pool = Pool(
        collection=collection,
        name=name.strip() or f"{collection.name} depth-{depth} pool of {len(run_list)} run(s)",
        qrels_version=qrels_version,
        depth=depth,
        turn_filter=sorted(t.turn_id for t in turns) if turns is not None else [],
        text_only=bool(text_only),
        cluster_near_duplicates=cluster_near_duplicates,
        cluster_threshold=float(cluster_threshold),
        assessors_per_pair=int(assessors_per_pair),
        aggregation=aggregation,
        strategy=strategy,
        prior_version=prior_version,
        created_by=created_by,
        status=status,
    )
    pool.full_clean()
    pool.save()
    pool.runs.set(run_list)
    if feed_version:
        versions.pool_feed_derived_version(pool=pool, created_by=created_by)
    return pool, run_list, turns


@dataclass
class _PoolStats:
    """What the statistics of a pool count, added up chunk by chunk (the pairs themselves are not kept)."""

    run_names: dict[int, str]
    per_turn: dict[int, int] = field(default_factory=dict)
    per_run: dict[str, dict[str, int]] = field(default_factory=dict)
    pairs: int = 0
    heads: int = 0
    with_text: int = 0
    unique: int = 0
    skipped_judged: int = 0

    def __post_init__(self) -> None:
        self.per_run = {name: {"contributed": 0, "unique": 0} for name in self.run_names.values()}

    def add(self, turn_pk: int, run_ids: list[int], has_text: bool, head: bool) -> None:
        self.pairs += 1
        self.per_turn[turn_pk] = self.per_turn.get(turn_pk, 0) + 1
        for rid in run_ids:
            self.per_run[self.run_names[rid]]["contributed"] += 1
        if len(run_ids) == 1:
            self.per_run[self.run_names[run_ids[0]]]["unique"] += 1
            self.unique += 1
        self.heads += head
        self.with_text += has_text

    def result(self) -> dict[str, Any]:
        """Pool statistics: pairs per turn, per-run contribution and unique pairs, texts, clusters."""
        turn_names = dict(Turn.objects.filter(pk__in=self.per_turn).values_list("pk", "turn_id"))
        per_turn = {turn_names[pk]: n for pk, n in self.per_turn.items()}
        counts = sorted(per_turn.values())
        return {
            "pairs": self.pairs,
            "turns": len(per_turn),
            "judgments_needed": self.heads,
            "clustered_pairs": self.pairs - self.heads,
            "with_text": self.with_text,
            "unique_to_one_run": self.unique,
            "already_judged_skipped": self.skipped_judged,
            "per_turn": dict(sorted(per_turn.items(), key=lambda kv: _turn_sort_key(kv[0]))),
            "per_turn_min": counts[0] if counts else 0,
            "per_turn_max": counts[-1] if counts else 0,
            "per_run": self.per_run,
        }


def _pool_fill(*, pool: Pool, runs: list[Run], turns: list[Turn] | None) -> None:
    """Compute the pool's pairs from the runs' rankings, cluster near duplicates, and store the statistics.

    Turn by turn, in chunks of turns (``turn_chunks``): each chunk's rankings are walked, its pairs get their ids
    first (so a cluster's members can point at their head as they are written) and are written in one load, and
    only the statistics' counts outlive the chunk, so memory does not grow with the pool."""
    stats = _PoolStats({r.pk: r.name for r in runs})
    deepest_rank = 0
    fields = ["id", "pool_id", "turn_id", "passage_id", "run_ids", "best_rank", "has_text", "cluster_head_id"]
    for chunk in turn_chunks(runs, turns):
        index = TextIndex()
        walk = pairs_walk(
            rankings_read(runs, chunk, keep=None if pool.text_only else pool.depth),
            depth=pool.depth,
            judged=judged_pairs(pool.qrels_version, chunk),
            text_only=pool.text_only,
            index=index,
        )
        stats.skipped_judged += walk.skipped_judged
        deepest_rank = max(deepest_rank, walk.deepest_rank)
        if not walk.pairs:
            continue
        ordered = sorted(walk.pairs.items(), key=lambda kv: (kv[0][0], kv[1]["rank"], kv[0][1]))
        del walk
        pks = ids_reserve(PoolPair, len(ordered))
        heads = _cluster_heads(pool, ordered, pks)
        rows = []
        for ((turn_pk, doc), entry), pk, head in zip(ordered, pks, heads, strict=True):
            run_ids, has_text = sorted(entry["runs"]), doc in index
            rows.append((pk, pool.pk, turn_pk, doc, run_ids, entry["rank"], has_text, head))
            stats.add(turn_pk, run_ids, has_text, head == pk)
        rows_insert(PoolPair, fields, rows)
    pool.stats = stats.result()
    if pool.text_only:
        pool.stats["deepest_rank"] = deepest_rank
    pool.save(update_fields=["stats"])


def _cluster_heads(pool: Pool, ordered: list[tuple[tuple[int, str], dict[str, Any]]], pks: list[int]) -> list[int]:
    """The pk of each pair's cluster head, in the order of ``ordered`` (a pair heads itself unless near-duplicate
    clustering put it in another pair's cluster)."""
    if not pool.cluster_near_duplicates:
        return list(pks)
    texts = passage_texts(doc for (_t, doc), _e in ordered)
    by_turn: dict[int, list[tuple[str, int]]] = defaultdict(list)
    for ((turn_pk, doc), _entry), pk in zip(ordered, pks, strict=True):
        by_turn[turn_pk].append((doc, pk))
    head_of: dict[tuple[int, str], int] = {}
    for turn_pk, turn_pairs in by_turn.items():
        pk_of = dict(turn_pairs)
        groups = dedup.cluster(
            [(doc, texts.get(doc)) for doc, _pk in turn_pairs], threshold=float(pool.cluster_threshold)
        )
        for group in groups:
            for doc in group:
                head_of[(turn_pk, doc)] = pk_of[group[0]]
    return [head_of[key] for key, _entry in ordered]


def _turn_sort_key(turn_id: str) -> tuple:
    parts = turn_id.split("_")
    return tuple((0, int(x), "") if x.isdigit() else (1, 0, x) for x in parts)


@transaction.atomic
def pool_create(**request: Any) -> Pool:
    """Pool the top-``depth`` passages per turn of ``runs`` that ``qrels_version`` has not judged (synchronously).

    Takes the keyword arguments of ``_pool_prepare``, which validates them.
    """
    pool, run_list, turns = _pool_prepare(status=Pool.Status.OPEN, **request)
    _pool_fill(pool=pool, runs=run_list, turns=turns)
    return pool


def pool_create_start(**request: Any) -> Pool:
    """Like ``pool_create`` (same arguments), but store the pool as "building" and let the worker fill it.

    Deep pools over many runs (and near-duplicate clustering) take long, so pages and the API never build them
    inside the request. Invalid requests fail here, before anything is stored or queued.
    """
    with transaction.atomic():
        pool, _, _ = _pool_prepare(status=Pool.Status.BUILDING, **request)
        PoolBuild.objects.create(pool=pool, created_by=pool.created_by, progress_total=1)
    # Queued after the commit above, so the worker always finds the row.
    enqueue(BUILD_TASK, pool.pk)
    pool.refresh_from_db()
    return pool


def pool_build(*, pool_id: int) -> Pool:
    """Compute the pairs of a "building" pool and open it; a redelivered task finds it built and does nothing."""
    # Running from now on its page; the pairs, the open pool and the finished build commit together below.
    PoolBuild.objects.filter(pk=pool_id, status=PoolBuild.Status.QUEUED).update(
        status=PoolBuild.Status.RUNNING, started_at=timezone.now()
    )
    with transaction.atomic():
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
        PoolBuild.objects.filter(pk=pool_id).update(
            status=PoolBuild.Status.SUCCEEDED, progress_done=1, error="", finished_at=timezone.now()
        )
    return pool


def pool_build_failed(*, pool_id: int, error: str) -> None:
    """Record why the worker could not build a pool (shown on its page)."""
    with transaction.atomic():
        failed = Pool.objects.filter(pk=pool_id, status=Pool.Status.BUILDING).update(
            status=Pool.Status.FAILED, error=error[:2000]
        )
        if failed:
            PoolBuild.objects.filter(pk=pool_id).update(
                status=PoolBuild.Status.FAILED, error=error[:2000], finished_at=timezone.now()
            )


KIND = "pool"  # the job kind the heartbeat and the sweeper know pool builds by
BUILD_TASK = "judging.relevance.pool_build"


def pools_building() -> list[tuple[int, Any]]:
    """Pool builds the sweeper watches: queued or running."""
    return list(PoolBuild.objects.filter(status__in=ACTIVE_STATUSES).values_list("pk", "created_at"))


def pool_build_requeue(*, pool_id: int) -> str:
    """Queue the build again (a build commits all its pairs at once, so a dead build left nothing behind)."""
    enqueue(BUILD_TASK, pool_id)
    return "queued the pool build again"


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
