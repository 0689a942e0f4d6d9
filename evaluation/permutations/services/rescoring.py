"""Scoring an experiment's stored rankings against its qrels version (no retrieval re-run), and the debounced
rescore when its judgments or its version change."""

from __future__ import annotations

import logging
import math
from collections import defaultdict
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from ecast.core.bulk import rows_update
from ecast.core.jobs import debounce, debounce_release, reraise_transient
from ecast.models import Turn
from evaluation.metrics import evaluate
from evaluation.models import (
    PermutationExperiment,
    PermutationQuery,
    PermutationResult,
    Qrel,
    QrelsVersion,
)
from evaluation.permutations import selectors as sel
from evaluation.permutations.plots import experiment_figures
from evaluation.permutations.services.experiments import RESCORE_PENDING, SCORE_TASK
from evaluation.selectors import qrels_dict, run_dict

logger = logging.getLogger(__name__)


def query_values(
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


def per_turn_and_mean(queries: dict[str, Any], values: dict[tuple[str, Any], float]) -> tuple[dict, float | None]:
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
    values = query_values(pairs, qdocs, qrels, measure=measure, threshold=threshold)
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
            r.per_turn, r.mean = per_turn_and_mean(r.queries, values)
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
        transaction.on_commit(lambda: experiment_figures_draw(experiment_id=experiment.pk))
    return len(results)


def experiment_figures_draw(*, experiment_id: int) -> None:
    """Draw the experiment page's figures as the page first shows them (every system, the first conversations), so
    its first visit after scoring finds them stored (``ecast.plots.stored_figure``). Drawn from the same selector
    the page reads, so the keys match. A figure that fails here is only logged: the page draws it itself."""
    experiment = PermutationExperiment.objects.select_related("scored_version").get(pk=experiment_id)
    try:
        experiment_figures(sel.experiment_analysis(experiment=experiment), experiment.measure)
    except Exception:
        logger.exception("drawing the figures of permutation experiment %s ahead failed", experiment_id)


def permutation_experiment_set_version(*, experiment: PermutationExperiment, version: QrelsVersion) -> None:
    """Point the experiment at another qrels version of its collection; rescoring follows in the background."""
    if version.collection_id != experiment.collection_id:
        raise ValidationError("the qrels version belongs to another collection")
    experiment.qrels_version = version
    experiment.save(update_fields=["qrels_version"])
    transaction.on_commit(lambda: permutation_experiment_rescore_schedule(experiment_id=experiment.pk))


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
        reraise_transient(exc)  # a lost connection or a deadlock: job_unit scores it again
        # Earlier scores stay visible (and say which version they reflect); the error is shown on the page.
        PermutationExperiment.objects.filter(pk=exp.pk).update(
            error=f"scoring failed: {exc}",
            status=PermutationExperiment.Status.SUCCEEDED if exp.scored_at else PermutationExperiment.Status.FAILED,
        )
        raise
    if exp.error.startswith("scoring failed"):
        PermutationExperiment.objects.filter(pk=exp.pk).update(error="")
    return "scored"


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
