"""Permutation experiments: the plan (each labelled conversation with the labels its orders are sampled from),
creation, and the orders a conversation's plan entry samples."""

from __future__ import annotations

import hashlib
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from ecast.core.bulk import rows_insert
from ecast.core.jobs import enqueue
from ecast.models import Collection, Conversation
from evaluation.metrics import parse_measure
from evaluation.models import (
    Permutation,
    PermutationExperiment,
    QrelsVersion,
)
from evaluation.permutations import orders as perms
from evaluation.permutations import retrieval
from evaluation.permutations import selectors as sel
from evaluation.permutations.services.labels import CLASSES

# Registered names of the tasks in evaluation/permutations/tasks.py (queued by name: the tasks module imports this one).
CHUNK_TASK = "evaluation.permutations.chunk"
SCORE_TASK = "evaluation.permutations.experiment_score"
KIND = "permutation"  # the job kind the heartbeat and the sweeper know experiments by
# Set in an experiment's parameters when its qrels change while chunks are still retrieving and scoring.
RESCORE_PENDING = "rescore_pending"


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
        transaction.on_commit(lambda: chunks_queue(exp.pk, conversation_ids))
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


def chunks_queue(experiment_id: int, conversation_ids: list[int]) -> None:
    """Queue one retrieval chunk per conversation, in the order given (the plan's: largest first)."""
    for conv_id in conversation_ids:
        enqueue(CHUNK_TASK, experiment_id, conv_id)
