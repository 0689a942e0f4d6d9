"""The background work of an experiment, one chunk per conversation: the pinned BM25 index, sampling the
conversation's orders, retrieval for every order and system, scoring, storing, and finishing the experiment."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Exists, OuterRef
from django.utils import timezone

from ecast.core.bulk import rows_insert
from ecast.core.jobs import enqueue, reraise_transient
from ecast.models import Turn
from evaluation.models import (
    Permutation,
    PermutationExperiment,
    PermutationQuery,
    PermutationResult,
    Qrel,
)
from evaluation.permutations import retrieval
from evaluation.permutations import selectors as sel
from evaluation.permutations.services.experiments import PERMUTATION_COLUMNS, RESCORE_PENDING, SCORE_TASK, plan_orders
from evaluation.permutations.services.rescoring import experiment_figures_draw, per_turn_and_mean, query_values
from evaluation.selectors import qrels_dict


def permutation_index_prepare(*, experiment: PermutationExperiment) -> retrieval.Bm25Index:
    """Build (or load) the BM25 index of the experiment's corpus and pin its key on the experiment, unless a chunk
    pinned one first: every chunk then ranks against the same passages, even if more are imported meanwhile."""
    cache_dir = Path(settings.ECAST_CACHE_DIR)
    index = retrieval.index_for_corpus(cache_dir, *sel.experiment_corpus(experiment=experiment))
    with transaction.atomic():
        # Merged into the stored parameters: a rescore asked for meanwhile leaves its mark there. NO KEY: the
        # foreign keys of other chunks' rankings share-lock this row, and must not wait for this lock.
        locked = PermutationExperiment.objects.select_for_update(no_key=True).get(pk=experiment.pk)
        pinned = locked.parameters.get("index_key")
        if pinned is None:
            locked.parameters = {**locked.parameters, "index_key": index.key, "index_passages": len(index.doc_ids)}
            locked.save(update_fields=["parameters"])
    experiment.parameters = locked.parameters
    if pinned is not None and pinned != index.key:
        # Passages changed between two first chunks: the one pinned first wins, where this machine has it.
        index = retrieval.index_by_key(cache_dir, pinned) or index
    return index


def _index_for(exp: PermutationExperiment) -> retrieval.Bm25Index:
    # The first chunk of an experiment reads the corpus and pins its index; the others find it by key (in this
    # process's memory, else the cache directory). A worker on another machine (no shared cache directory)
    # rebuilds it from the passages.
    key = exp.parameters.get("index_key")
    if key is None:
        return permutation_index_prepare(experiment=exp)
    index = retrieval.index_by_key(Path(settings.ECAST_CACHE_DIR), key)
    return index or retrieval.index_for_corpus(Path(settings.ECAST_CACHE_DIR), *sel.experiment_corpus(experiment=exp))


def permutation_chunk_run(*, experiment_id: int, conversation_id: int, queue_scoring: bool = True) -> None:
    """Sample one conversation's orders (unless stored), retrieve for every order and every built-in system, and
    score the rankings against the experiment's qrels version, so the chunks share the scoring; idempotent per
    chunk."""
    exp = PermutationExperiment.objects.select_related("collection", "qrels_version").get(pk=experiment_id)
    if not exp.is_retrieving:
        return  # a redelivered chunk of a finished or failed experiment must not replace scored results
    try:
        index = _index_for(exp)
        turns = list(Turn.objects.filter(conversation_id=conversation_id).order_by("number"))
        orders, sampled = _chunk_orders(exp, conversation_id)
        wanted, mapping = _chunk_queries(exp, turns, orders)
        rankings, stored, new = _chunk_rankings(exp, index, wanted)
        scored = _chunk_scores(exp, turns, mapping, rankings)
        try:
            _chunk_store(exp, conversation_id, sampled, new, stored, mapping, scored, replace=False)
        except IntegrityError:
            # Another chunk stored one of these rankings meanwhile, or an earlier delivery of this chunk stored its
            # orders or results: store again, skipping the rankings and orders already there and replacing the
            # results. Only then: the savepoints that make a conflict recoverable cost four round trips, paid by
            # every chunk.
            _chunk_store(exp, conversation_id, sampled, new, stored, mapping, scored, replace=True)
        chunk_finished(exp, queue_scoring=queue_scoring)
    except Exception as exc:
        reraise_transient(exc)  # a lost connection or a deadlock: job_unit runs the chunk again
        PermutationExperiment.objects.filter(pk=exp.pk).update(
            status=PermutationExperiment.Status.FAILED, error=f"topic chunk {conversation_id}: {exc}"
        )
        raise


def _chunk_orders(exp: PermutationExperiment, conversation_id: int) -> tuple[list[tuple[int, list[int]]], list[tuple]]:
    """The conversation's orders as (index, order): the stored ones, else sampled from its plan entry (then also
    returned as the Permutation rows to store with the chunk's results, in one transaction)."""
    stored_orders = Permutation.objects.filter(experiment=exp, conversation_id=conversation_id)
    # In index order: the model's default ordering joins the experiment.
    orders = list(stored_orders.order_by("index").values_list("index", "order"))
    sampled: list[tuple] = []
    if not orders:
        # This chunk samples its conversation's orders; they are stored with its results, in one transaction.
        entry = next((e for e in exp.plan if e["conversation"] == conversation_id), None)
        if entry is None:
            raise ValueError("the conversation is not in the experiment's plan")
        sampled = plan_orders(exp, entry)
        orders = [(row[3], row[4]) for row in sampled]
    return orders, sampled


def _chunk_queries(
    exp: PermutationExperiment, turns: list[Turn], orders: list[tuple[int, list[int]]]
) -> tuple[dict[str, list], dict[tuple[int, str], dict[str, str]]]:
    """The queries every order asks of every system: each distinct query by its ranking key, and for each (order's
    index, system) the ranking key of each turn id."""
    utter = {t.number: t.raw_utterance for t in turns}
    tid = {t.number: t.turn_id for t in turns}
    wanted: dict[str, list] = {}
    mapping: dict[tuple[int, str], dict[str, str]] = {}  # (order's index, system) → turn id → ranking key
    for position, order in orders:
        for system in exp.systems:
            qs = retrieval.queries_for_order(system, order, utter)
            m = {}
            for n, q in qs.items():
                key = retrieval.query_key(q)
                wanted.setdefault(key, q)
                m[tid[n]] = key
            mapping[(position, system)] = m
    return wanted, mapping


def _chunk_rankings(
    exp: PermutationExperiment, index: retrieval.Bm25Index, wanted: dict[str, list]
) -> tuple[dict[str, dict[str, float]], dict[str, int], list[tuple]]:
    """Every wanted ranking (key → {doc: score}): the stored ones (key → pk in ``stored``) and the ones retrieved
    now (``new``, as PermutationQuery rows to store)."""
    # Rankings another chunk (or an earlier delivery) stored; retrieval is deterministic, so they are the same.
    rankings: dict[str, dict[str, float]] = {}
    stored: dict[str, int] = {}  # key → pk of the stored ones
    for key, pk, d, s in PermutationQuery.objects.filter(experiment=exp, key__in=wanted).values_list(
        "key", "pk", "doc_ids", "scores"
    ):
        rankings[key] = dict(zip(d, s, strict=True))
        stored[key] = pk
    new = []
    for key, q in wanted.items():
        if key not in rankings:
            docs, scores = index.search(q, exp.depth)
            new.append((exp.pk, key, q, docs, scores))
            rankings[key] = dict(zip(docs, scores, strict=True))
    return rankings, stored, new


def _chunk_scores(
    exp: PermutationExperiment,
    turns: list[Turn],
    mapping: dict[tuple[int, str], dict[str, str]],
    rankings: dict[str, dict[str, float]],
) -> dict[tuple[int, str], tuple[dict, float | None]]:
    """Per-turn scores and mean of every (order's index, system), against the experiment's qrels version."""
    qrels = qrels_dict(version=exp.qrels_version, turn_ids=[t.pk for t in turns])
    values = query_values(
        {(t, k) for m in mapping.values() for t, k in m.items()},
        rankings,
        qrels,
        measure=exp.measure,
        threshold=exp.collection.relevance_threshold,
    )
    return {pair: per_turn_and_mean(m, values) for pair, m in mapping.items()}


@transaction.atomic
def _chunk_store(
    exp: PermutationExperiment,
    conversation_id: int,
    sampled: list[tuple],
    new: list[tuple],
    stored: dict[str, int],
    mapping: dict[tuple[int, str], dict[str, str]],
    scored: dict[tuple[int, str], tuple[dict, float | None]],
    *,
    replace: bool,
) -> None:
    """Store a chunk's orders (``sampled``: the rows it sampled, none when they were stored), its new rankings and
    its results in one transaction (``stored``: key → pk of the rankings it found stored). ``replace``: skip orders
    and rankings stored meanwhile and replace the conversation's results, instead of failing on them."""
    rows_insert(Permutation, PERMUTATION_COLUMNS, sampled, skip_conflicts=replace)
    # A redelivered copy of this chunk may run at the same time as the original: the conversation's orders are
    # locked so one replaces the other's results instead of both inserting. Only these rows, in key order: the
    # model's default ordering joins the experiment, and FOR UPDATE of its row made every other chunk's transaction
    # wait for this one (their rankings' foreign keys share-lock that row). The same read gives the orders' pks.
    mine = Permutation.objects.select_for_update(of=("self",)).filter(experiment=exp, conversation_id=conversation_id)
    pks = {index: pk for pk, index in mine.order_by("pk").values_list("pk", "index")}
    rows_insert(PermutationQuery, ["experiment_id", "key", "query", "doc_ids", "scores"], new, skip_conflicts=replace)
    # Only the new rankings' pks are read back (a skipped one is the row stored meanwhile, under the same key).
    have = dict(stored)
    if new:
        have.update(
            PermutationQuery.objects.filter(experiment=exp, key__in=[r[1] for r in new]).values_list("key", "pk")
        )
    results = [
        (pks[index], system, {t: have[k] for t, k in m.items()}, scored[(index, system)][0], scored[(index, system)][1])
        for (index, system), m in mapping.items()
    ]
    if replace:
        PermutationResult.objects.filter(permutation__in=list(pks.values()), run__isnull=True).delete()
    rows_insert(PermutationResult, ["permutation_id", "system", "queries", "per_turn", "mean"], results)


def _chunks_done(exp: PermutationExperiment) -> int:
    """Conversations whose chunk has stored its rankings: a chunk writes the results of all its conversation's
    orders in one transaction, so a conversation is done when its first order (index 0) has the first system's.
    One probe of the (permutation, system) unique index per conversation: probing ``run IS NULL`` instead made the
    planner scan that column's index over every result of every experiment, per conversation."""
    ranked = PermutationResult.objects.filter(permutation=OuterRef("pk"), system=exp.systems[0], run__isnull=True)
    return Permutation.objects.filter(experiment=exp, index=0).filter(Exists(ranked)).count()


def chunk_finished(exp: PermutationExperiment, *, queue_scoring: bool = True) -> None:
    """Count the conversations done; the chunk that finds them all done finishes the experiment. ``exp`` as the
    chunk read it: its systems and chunk total do not change while it runs."""
    if not exp.systems:
        return
    experiment_id = exp.pk
    # Counted without the experiment's row lock, so finishing chunks do not queue behind each other: every chunk
    # counts after its own results are committed, so the last chunk to commit sees every conversation done.
    done = _chunks_done(exp)
    PermutationExperiment.objects.filter(pk=experiment_id, progress_done__lt=done).update(progress_done=done)
    if done < exp.progress_total:
        return
    with transaction.atomic():
        # Two chunks may both see the last conversation done: the row lock lets one of them finish the experiment.
        exp = PermutationExperiment.objects.select_for_update().get(pk=experiment_id)
        if not exp.is_retrieving:
            return
        if exp.parameters.get(RESCORE_PENDING):
            # Judgments or the version changed while chunks were scoring: some chunks may have used the old qrels.
            exp.parameters = {k: v for k, v in exp.parameters.items() if k != RESCORE_PENDING}
            exp.message = PermutationExperiment.SCORING
            exp.save(update_fields=["message", "parameters"])
            if queue_scoring:
                transaction.on_commit(lambda: enqueue(SCORE_TASK, experiment_id))
            return
        # Every chunk scored its own rankings against the current version: the experiment is done.
        exp.status = PermutationExperiment.Status.SUCCEEDED
        exp.scored_version_id = exp.qrels_version_id
        exp.scored_qrels_count = Qrel.objects.filter(version_id=exp.qrels_version_id).count()
        exp.scored_at = timezone.now()
        exp.finished_at = exp.finished_at or exp.scored_at
        exp.save(update_fields=["status", "scored_version", "scored_qrels_count", "scored_at", "finished_at"])
        transaction.on_commit(lambda: experiment_figures_draw(experiment_id=experiment_id))
