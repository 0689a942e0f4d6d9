"""Writes for utterance labels and permutation experiments: sampling, the background work (index, retrieval chunks,
scoring) with its status bookkeeping, and the debounced rescore when judgments change."""

from __future__ import annotations

import hashlib
import math
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import Exists, OuterRef
from django.utils import timezone

from ecast.core.bulk import rows_insert, rows_update
from ecast.core.jobs import debounce, debounce_release, enqueue
from ecast.models import Collection, Conversation, Turn
from ecast.selectors import turn_paths
from evaluation.metrics import evaluate, parse_measure
from evaluation.models import (
    Permutation,
    PermutationExperiment,
    PermutationQuery,
    PermutationResult,
    Qrel,
    QrelsVersion,
    UtteranceLabel,
)
from evaluation.permutations import orders as perms
from evaluation.permutations import retrieval
from evaluation.permutations import selectors as sel
from evaluation.selectors import qrels_dict, run_dict

CLASSES = set(perms.CLASSES)

# Registered names of the tasks in evaluation/permutations/tasks.py (queued by name: the tasks module imports this one).
CHUNK_TASK = "evaluation.permutations.chunk"
SCORE_TASK = "evaluation.permutations.experiment_score"
KIND = "permutation"  # the job kind the heartbeat and the sweeper know experiments by
# Set in an experiment's parameters when its qrels change while chunks are still retrieving and scoring.
RESCORE_PENDING = "rescore_pending"


# ---------------------------------------------------------------- utterance labels


def _turn_dependencies(turns: list[Turn]) -> dict[int, int | None]:
    """Turn number → number it depends on, read along the turn's path (in a tree its User ancestors, never a
    sibling branch; linear: every earlier turn); System turns depend on nothing."""
    paths = turn_paths(turns)
    deps: dict[int, int | None] = {}
    for t in turns:
        users = [p for p in paths[t.pk] if not p.is_system]
        deps[t.number] = None if t.is_system else _dependencies_along(users)[t.number]
    return deps


def _dependencies_along(turns: list[Turn]) -> dict[int, int | None]:
    """Turn number → number it depends on, for the turns of one path in order, tolerating unlabelled turns (they
    depend on nothing yet)."""
    deps: dict[int, int | None] = {}
    head: int | None = None
    first = turns[0].number if turns else None
    for i, t in enumerate(turns):
        cls = t.utterance_class
        if i == 0:
            deps[t.number] = None
            head = t.number
        elif cls == perms.SE:
            deps[t.number] = None
            head = t.number
        elif cls == perms.FT:
            deps[t.number] = first
        elif cls == perms.PT:
            deps[t.number] = head
        else:
            deps[t.number] = None
    return deps


def conversation_dependencies_refresh(*, conversation: Conversation) -> None:
    """Set ``Turn.depends_on`` from the classes: PT → nearest preceding SE (or turn 1), FT → turn 1."""
    turns = list(conversation.turns.order_by("number"))
    by_number = {t.number: t for t in turns}
    deps = _turn_dependencies(turns)
    for t in turns:
        dep = deps[t.number]
        target = by_number[dep].pk if dep is not None else None
        if t.depends_on_id != target:
            t.depends_on_id = target
            t.save(update_fields=["depends_on"])


@transaction.atomic
def utterance_label_set(*, turn: Turn, labeler: Any, utterance_class: str, apply: bool = False) -> UtteranceLabel:
    """Record a labeler's class for a turn; with ``apply`` (admins) it also becomes the turn's class."""
    if utterance_class not in CLASSES:
        raise ValidationError(f"class must be one of SE, FT, PT (got {utterance_class!r})")
    label, _ = UtteranceLabel.objects.update_or_create(
        turn=turn, labeler=labeler, defaults={"utterance_class": utterance_class}
    )
    if apply and turn.utterance_class != utterance_class:
        turn.utterance_class = utterance_class
        turn.save(update_fields=["utterance_class"])
        conversation_dependencies_refresh(conversation=turn.conversation)
    return label


@transaction.atomic
def utterance_labels_adopt_majority(*, collection: Collection) -> dict[str, int]:
    """Set each turn's class to its labelers' strict majority; ties and unlabelled turns are left alone."""
    counts: dict[int, Counter] = {}
    for turn_id, cls in UtteranceLabel.objects.filter(turn__collection=collection).values_list(
        "turn_id", "utterance_class"
    ):
        counts.setdefault(turn_id, Counter())[cls] += 1
    changed = ties = 0
    touched: set[int] = set()
    for turn in Turn.objects.filter(pk__in=counts):
        (top, n), *rest = counts[turn.pk].most_common()
        if rest and rest[0][1] == n:
            ties += 1
            continue
        if turn.utterance_class != top:
            turn.utterance_class = top
            turn.save(update_fields=["utterance_class"])
            touched.add(turn.conversation_id)
            changed += 1
    for conv in Conversation.objects.filter(pk__in=touched):
        conversation_dependencies_refresh(conversation=conv)
    return {"changed": changed, "ties": ties, "turns": len(counts)}


@transaction.atomic
def utterance_classes_derive(*, collection: Collection, overwrite: bool = False) -> dict[str, Any]:
    """Derive classes from the turns' dependency annotations (``relevant_turn_numbers``), see
    ``permutations.classes_from_dependencies``; returns counts and the dependencies the rules cannot guarantee."""
    set_count = 0
    unguaranteed: list[str] = []
    for conv in collection.conversations.all():
        turns = list(conv.turns.order_by("number"))
        if not turns or (not overwrite and any(t.utterance_class for t in turns)):
            continue
        numbers = [t.number for t in turns]
        deps = {t.number: [int(x) for x in (t.relevant_turn_numbers or [])] for t in turns}
        labels, missing = perms.classes_from_dependencies(numbers, deps)
        for t in turns:
            if t.utterance_class != labels[t.number]:
                t.utterance_class = labels[t.number]
                t.save(update_fields=["utterance_class"])
                set_count += 1
        conversation_dependencies_refresh(conversation=conv)
        unguaranteed += [f"{conv.topic_id}_{a} needs {conv.topic_id}_{b}" for a, b in missing]
    return {"turns_set": set_count, "unguaranteed": unguaranteed}


# ---------------------------------------------------------------- experiments


def _conversation_seed(seed: int, topic_id: str) -> int:
    digest = hashlib.sha1(f"{seed}:{topic_id}".encode(), usedforsecurity=False).hexdigest()
    return int(digest[:12], 16)


def _validate_measure(measure: str) -> None:
    try:
        parse_measure(measure)
    except ValueError as exc:
        raise ValidationError(f"unknown measure {measure!r}: {exc}") from exc


@transaction.atomic
def permutation_experiment_create(
    *,
    collection: Collection,
    name: str,
    qrels_version: QrelsVersion,
    systems: list[str],
    k: int = 100,
    seed: int = 0,
    measure: str = "nDCG@3",
    corpus: str = "qrels",
    depth: int = 100,
    conversations: list[Conversation] | None = None,
    created_by: Any = None,
    start: bool = True,
) -> PermutationExperiment:
    """Plan the experiment (each labelled conversation with the labels its orders are sampled from) and queue one
    chunk per conversation, which samples its orders, retrieves and scores; conversations with unlabelled turns are
    skipped and listed in ``warnings``. Without systems the orders are sampled here (there are no chunks)."""
    if qrels_version.collection_id != collection.pk:
        raise ValidationError("the qrels version belongs to another collection")
    for s in systems:
        if s not in retrieval.SYSTEMS:
            raise ValidationError(f"unknown system {s!r}; choose from {', '.join(retrieval.SYSTEMS)}")
    if corpus not in ("qrels", "all"):
        raise ValidationError("corpus must be 'qrels' or 'all'")
    if not 0 <= k <= 10_000:
        raise ValidationError("k must be between 0 and 10000")
    if not 1 <= depth <= 1000:
        raise ValidationError("depth must be between 1 and 1000")
    _validate_measure(measure)
    exp = PermutationExperiment(
        collection=collection,
        name=name,
        qrels_version=qrels_version,
        systems=list(dict.fromkeys(systems)),
        k=k,
        seed=seed,
        measure=measure,
        corpus=corpus,
        depth=depth,
        created_by=created_by,
        parameters={"lp_lambda": retrieval.LP_LAMBDA, "k1": retrieval.K1, "b": retrieval.B},
    )
    exp.full_clean()
    exp.save()
    convs = conversations if conversations is not None else list(collection.conversations.all())
    for conv in convs:
        if conv.collection_id != collection.pk:
            raise ValidationError(f"conversation {conv.topic_id} belongs to another collection")
    # The plan only: each conversation's chunk samples its orders (from the labels kept here), so the request
    # neither samples nor writes the orders (a 2,400-order experiment's COPY and commit were most of its creation,
    # which every worker waited for), and the sampling runs in parallel on the workers.
    plan: list[dict[str, Any]] = []
    warnings: list[str] = []
    conv_paths = sel.conversations_permutation_paths(conversation_ids=[conv.pk for conv in convs])
    for conv in convs:
        # A linear conversation is one path (""); a tree is permuted path by path (see ``orders``).
        paths = [(path, labels) for path, labels in conv_paths[conv.pk] if labels]
        missing = sorted({n for _path, labels in paths for n, c in labels[1:] if c not in CLASSES})
        if missing:
            numbers = dict(conv.turns.filter(number__in=missing).values_list("number", "tree_number"))
            warnings.append(
                f"topic {conv.topic_id} skipped: turns {[numbers[n] or n for n in missing]} have no SE/FT/PT class"
            )
            continue
        if not paths:
            continue
        # Turns over all its orders (what its chunk costs, roughly): the sample holds min(k + 1, distinct orders).
        size = sum(
            min(k + 1, perms.distinct_order_count(perms.structure_from_labels(labels))) * len(labels)
            for _path, labels in paths
        )
        plan.append(
            {
                "conversation": conv.pk,
                "topic": conv.topic_id,
                "size": size,
                "paths": [[path, [list(label) for label in labels]] for path, labels in paths],
            }
        )
    if not plan:
        raise ValidationError("no conversation has SE/FT/PT classes on every turn; label them first")
    # Largest first, so the workers do not end on one long chunk while the others idle.
    exp.plan = sorted(plan, key=lambda e: (-e["size"], e["conversation"]))
    exp.warnings = warnings
    exp.progress_total = len(plan) if exp.systems else 0
    exp.status = PermutationExperiment.Status.RUNNING if exp.systems else PermutationExperiment.Status.SUCCEEDED
    exp.message = PermutationExperiment.RETRIEVING if exp.systems else ""
    exp.started_at = timezone.now()
    exp.save(update_fields=["plan", "warnings", "progress_total", "status", "message", "started_at"])
    if not exp.systems:
        # Orders only: there are no chunks to sample them.
        rows = [row for entry in exp.plan for row in plan_orders(exp, entry)]
        rows_insert(Permutation, PERMUTATION_COLUMNS, rows)
    elif start:
        # The chunks are queued as the experiment commits, with no start task between: that hop (a worker picking
        # it up, reading the corpus, queueing) was a twentieth of a two-worker experiment, with the workers idle.
        conversation_ids = [entry["conversation"] for entry in exp.plan]
        transaction.on_commit(lambda: _chunks_queue(exp.pk, conversation_ids))
    return exp


PERMUTATION_COLUMNS = ["experiment_id", "conversation_id", "path", "index", "order", "is_original"]


def plan_orders(exp: PermutationExperiment, entry: dict[str, Any]) -> list[tuple[int, int, str, int, list[int], bool]]:
    """The orders of one conversation of the experiment's plan, as Permutation rows: the original and up to k
    sampled ones per path, numbered on within the conversation. Deterministic: the same rows on every call."""
    rows: list[tuple[int, int, str, int, list[int], bool]] = []
    for path, labels in entry["paths"]:
        structure = perms.structure_from_labels([(n, c) for n, c in labels])
        # Each conversation (path) gets its own stream, so adding one never changes another's sample.
        stream = _conversation_seed(exp.seed, f"{entry['topic']}/{path}" if path else entry["topic"])
        first = len(rows)  # a tree's paths are numbered on within the conversation
        for i, o in enumerate(perms.sample_orders(structure, exp.k, seed=stream)):
            rows.append((exp.pk, entry["conversation"], path, first + i, list(o), i == 0))
    return rows


def _chunks_queue(experiment_id: int, conversation_ids: list[int]) -> None:
    """Queue one retrieval chunk per conversation, in the order given (the plan's: largest first)."""
    for conv_id in conversation_ids:
        enqueue(CHUNK_TASK, experiment_id, conv_id)


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
        utter = {t.number: t.raw_utterance for t in turns}
        tid = {t.number: t.turn_id for t in turns}
        stored_orders = Permutation.objects.filter(experiment=exp, conversation_id=conversation_id)
        # In index order: the model's default ordering joins the experiment.
        orders = list(stored_orders.order_by("index").values_list("index", "order"))
        sampled = []
        if not orders:
            # This chunk samples its conversation's orders; they are stored with its results, in one transaction.
            entry = next((e for e in exp.plan if e["conversation"] == conversation_id), None)
            if entry is None:
                raise ValueError("the conversation is not in the experiment's plan")
            sampled = plan_orders(exp, entry)
            orders = [(row[3], row[4]) for row in sampled]
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
        qrels = qrels_dict(version=exp.qrels_version, turn_ids=[t.pk for t in turns])
        values = _query_values(
            {(t, k) for m in mapping.values() for t, k in m.items()},
            rankings,
            qrels,
            measure=exp.measure,
            threshold=exp.collection.relevance_threshold,
        )
        scored = {pair: _per_turn_and_mean(m, values) for pair, m in mapping.items()}
        try:
            _chunk_store(exp, conversation_id, sampled, new, stored, mapping, scored, replace=False)
        except IntegrityError:
            # Another chunk stored one of these rankings meanwhile, or an earlier delivery of this chunk stored its
            # orders or results: store again, skipping the rankings and orders already there and replacing the
            # results. Only then: the savepoints that make a conflict recoverable cost four round trips, paid by
            # every chunk.
            _chunk_store(exp, conversation_id, sampled, new, stored, mapping, scored, replace=True)
        _chunk_finished(exp, queue_scoring=queue_scoring)
    except Exception as exc:
        PermutationExperiment.objects.filter(pk=exp.pk).update(
            status=PermutationExperiment.Status.FAILED, error=f"topic chunk {conversation_id}: {exc}"
        )
        raise


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


def _chunk_finished(exp: PermutationExperiment, *, queue_scoring: bool = True) -> None:
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


def _query_values(
    pairs: set[tuple[str, Any]],
    rankings: dict[Any, dict[str, float]],
    qrels: dict[str, dict[str, int]],
    *,
    measure: str,
    threshold: int,
) -> dict[tuple[str, Any], float]:
    """The measure for each judged (turn id, ranking key) pair, in one evaluate call; a pair whose ranking is empty
    scores 0 (it is judged but ranks nothing)."""
    judged = [(t, k) for t, k in pairs if t in qrels]
    if not judged:
        return {}
    run = {f"{t}@@{k}": rankings[k] for t, k in judged if rankings.get(k)}
    sub_qrels = {f"{t}@@{k}": qrels[t] for t, k in judged}
    values = evaluate(sub_qrels, run, [measure], rel_threshold=threshold, judged_qids=sub_qrels)[measure]
    return {(t, k): float(values[f"{t}@@{k}"]) for t, k in judged if f"{t}@@{k}" in values}


def _per_turn_and_mean(queries: dict[str, Any], values: dict[tuple[str, Any], float]) -> tuple[dict, float | None]:
    """A result's per-turn scores (turn id → ranking key in ``queries``) and their mean."""
    per_turn = {t: values[(t, k)] for t, k in queries.items() if (t, k) in values}
    return per_turn, _mean(per_turn)


def _mean(per_turn: dict[str, float]) -> float | None:
    # fsum is exactly rounded, so the mean does not depend on the (permuted) order of the turns
    return math.fsum(per_turn.values()) / len(per_turn) if per_turn else None


def permutation_experiment_score(*, experiment: PermutationExperiment) -> int:
    """(Re)score every stored ranking against the experiment's qrels version; no retrieval is re-run."""
    version = experiment.qrels_version
    qrels = qrels_dict(version=version)
    measure = experiment.measure
    threshold = experiment.collection.relevance_threshold
    results = list(
        PermutationResult.objects.filter(permutation__experiment=experiment).select_related("run", "permutation")
    )
    pairs = {(t, qpk) for r in results for t, qpk in r.queries.items()}
    qdocs = {
        pk: dict(zip(d, s, strict=True))
        for pk, d, s in PermutationQuery.objects.filter(pk__in={p for _, p in pairs}).values_list(
            "pk", "doc_ids", "scores"
        )
    }
    values = _query_values(pairs, qdocs, qrels, measure=measure, threshold=threshold)
    # Turn ids of every conversation with imported runs, in one query (not one per conversation).
    conv_turns: dict[int, dict[int, str]] = defaultdict(dict)
    with_runs = {r.permutation.conversation_id for r in results if r.run is not None}
    for conv_id, number, turn_id in Turn.objects.filter(conversation_id__in=with_runs).values_list(
        "conversation_id", "number", "turn_id"
    ):
        conv_turns[conv_id][number] = turn_id
    for r in results:
        if r.run is not None:
            pconv = r.permutation.conversation_id
            # The turns of the permutation's order: every turn of a linear conversation, one path of a tree.
            ids = {conv_turns[pconv][n] for n in r.permutation.order}
            judged = {t: qrels[t] for t in ids if t in qrels}
            rd = {q: docs for q, docs in run_dict(run=r.run).items() if q in judged}
            per = (
                evaluate(judged, rd, [measure], rel_threshold=threshold, judged_qids=judged)[measure] if judged else {}
            )
            r.per_turn = {t: float(v) for t, v in per.items()}
            r.mean = _mean(r.per_turn)
        else:
            r.per_turn, r.mean = _per_turn_and_mean(r.queries, values)
    with transaction.atomic():
        # bulk_update builds a CASE expression per column and batch, which made it most of a scoring run.
        rows_update(PermutationResult, ["per_turn", "mean"], [(r.pk, r.per_turn, r.mean) for r in results])
        PermutationExperiment.objects.filter(pk=experiment.pk).update(
            status=PermutationExperiment.Status.SUCCEEDED,
            scored_version=version,
            scored_qrels_count=Qrel.objects.filter(version=version).count(),
            scored_at=timezone.now(),
            finished_at=experiment.finished_at or timezone.now(),
        )
    return len(results)


def permutation_experiment_set_version(*, experiment: PermutationExperiment, version: QrelsVersion) -> None:
    """Point the experiment at another qrels version of its collection; rescoring follows in the background."""
    if version.collection_id != experiment.collection_id:
        raise ValidationError("the qrels version belongs to another collection")
    experiment.qrels_version = version
    experiment.save(update_fields=["qrels_version"])
    transaction.on_commit(lambda: permutation_experiment_rescore_schedule(experiment_id=experiment.pk))


# ---------------------------------------------------------------- background work (called by the tasks)


def permutation_experiment_rescore(*, experiment_id: int) -> str:
    """Score (or rescore) an experiment now, unless it is gone or still retrieving; a failure is kept on it."""
    debounce_release(rescore_key(experiment_id))
    exp = PermutationExperiment.objects.select_related("collection", "qrels_version").filter(pk=experiment_id).first()
    if exp is None:
        return "gone"
    if exp.is_retrieving:
        with transaction.atomic():
            locked = PermutationExperiment.objects.select_for_update().get(pk=experiment_id)
            if locked.is_retrieving:
                # Chunks already finished scored against the old qrels: the last chunk queues a full scoring.
                locked.parameters = {**locked.parameters, RESCORE_PENDING: True}
                locked.save(update_fields=["parameters"])
                return "retrieval still running; the whole experiment is scored again when it ends"
        exp.refresh_from_db()
    try:
        permutation_experiment_score(experiment=exp)
    except Exception as exc:
        # Earlier scores stay visible (and say which version they reflect); the error is shown on the page.
        PermutationExperiment.objects.filter(pk=exp.pk).update(
            error=f"scoring failed: {exc}",
            status=PermutationExperiment.Status.SUCCEEDED if exp.scored_at else PermutationExperiment.Status.FAILED,
        )
        raise
    if exp.error.startswith("scoring failed"):
        PermutationExperiment.objects.filter(pk=exp.pk).update(error="")
    return "scored"


# ---------------------------------------------------------------- debounced rescore


def rescore_key(experiment_id: int) -> str:
    """Debounce key of an experiment's rescore."""
    return f"permutations:rescore:{experiment_id}"


def permutation_experiment_rescore_schedule(*, experiment_id: int) -> bool:
    """Rescore after the debounce window; a burst of judgments or run imports ends in one rescore."""
    return debounce(
        rescore_key(experiment_id),
        SCORE_TASK,
        experiment_id,
        delay=settings.ECAST_PERMUTATION_RESCORE_DEBOUNCE_S,
    )


def experiments_rescore_for_changed_qrels(*, version_id: int, turn_ids: list[int]) -> list[int]:
    """Schedule a rescore of every experiment scored on this version that contains a changed turn."""
    ids = sel.experiment_ids_for_changed_qrels(version_id=version_id, turn_ids=turn_ids)
    for experiment_id in ids:
        permutation_experiment_rescore_schedule(experiment_id=experiment_id)
    return ids


# ---------------------------------------------------------------- worker loss (the sweeper, through ecast.core.jobs)


def permutation_experiments_active() -> list[tuple[int, Any]]:
    """Experiments the sweeper watches: retrieving or scoring."""
    active = PermutationExperiment.objects.filter(status=PermutationExperiment.Status.RUNNING)
    return list(active.values_list("pk", "created_at"))


def permutation_experiment_requeue(*, experiment_id: int) -> str:
    """Queue what a silent experiment still lacks: the conversations without rankings, or the scoring."""
    exp = PermutationExperiment.objects.get(pk=experiment_id)
    if exp.is_scoring:
        enqueue(SCORE_TASK, experiment_id)
        return "queued the scoring again"
    done = set(
        PermutationResult.objects.filter(permutation__experiment=exp, run__isnull=True).values_list(
            "permutation__conversation_id", flat=True
        )
    )
    missing = [entry["conversation"] for entry in exp.plan if entry["conversation"] not in done]
    _chunks_queue(experiment_id, missing)
    if not missing:
        _chunk_finished(exp)
    return f"queued {len(missing)} conversation chunk(s) without rankings"


def permutation_experiment_fail(*, experiment_id: int, reason: str) -> None:
    PermutationExperiment.objects.filter(pk=experiment_id, status=PermutationExperiment.Status.RUNNING).update(
        status=PermutationExperiment.Status.FAILED, error=reason
    )
