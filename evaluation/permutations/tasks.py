"""Celery wrappers for permutation experiments, and the debounced rescore when a qrels version changes."""

from __future__ import annotations

import uuid

from celery import group, shared_task
from django.conf import settings
from django.core.cache import cache
from django.dispatch import receiver

from evaluation.events import qrels_version_changed

RESCORE_DEBOUNCE_S = int(getattr(settings, "ECAST_PERMUTATION_RESCORE_DEBOUNCE_S", 10))


@shared_task
def permutation_experiment_start(experiment_id: int) -> int:
    """Fan out one retrieval chunk per conversation; the last chunk to finish queues the scoring."""
    from evaluation.models import Permutation, PermutationExperiment
    from evaluation.permutations.services import permutation_index_prepare

    exp = PermutationExperiment.objects.select_related("collection").get(pk=experiment_id)
    try:
        permutation_index_prepare(experiment=exp)
    except Exception as exc:
        PermutationExperiment.objects.filter(pk=exp.pk).update(
            status=PermutationExperiment.Status.FAILED, error=f"index: {exc}"
        )
        raise
    conv_ids = sorted(
        set(Permutation.objects.filter(experiment_id=experiment_id).values_list("conversation_id", flat=True))
    )
    group(permutation_chunk.s(experiment_id, c) for c in conv_ids).apply_async()
    return len(conv_ids)


@shared_task
def permutation_chunk(experiment_id: int, conversation_id: int) -> None:
    from evaluation.permutations.services import permutation_chunk_run

    permutation_chunk_run(experiment_id=experiment_id, conversation_id=conversation_id)


@shared_task
def permutation_experiment_score(experiment_id: int, token: str | None = None) -> str:
    """Score (or rescore) an experiment; a debounced call runs only if no newer one was scheduled."""
    from evaluation.models import PermutationExperiment
    from evaluation.permutations.services import permutation_experiment_score as score

    if token is not None and cache.get(_key(experiment_id)) not in (None, token):
        return "superseded"
    exp = PermutationExperiment.objects.select_related("collection", "qrels_version").filter(pk=experiment_id).first()
    if exp is None:
        return "gone"
    if exp.status == PermutationExperiment.Status.RUNNING:
        return "retrieval still running; the last chunk scores against the current version"
    try:
        score(experiment=exp)
    except Exception as exc:
        # Earlier scores stay visible (and say which version they reflect); the error is shown on the page.
        PermutationExperiment.objects.filter(pk=exp.pk).update(
            error=f"scoring failed: {exc}",
            status=PermutationExperiment.Status.DONE if exp.scored_at else PermutationExperiment.Status.FAILED,
        )
        raise
    if exp.error.startswith("scoring failed"):
        PermutationExperiment.objects.filter(pk=exp.pk).update(error="")
    return "scored"


def _key(experiment_id: int) -> str:
    return f"perm-rescore:{experiment_id}"


def schedule_rescore(experiment_id: int) -> None:
    """Queue a rescore after a quiet period; a burst of judgments ends in one rescore."""
    token = uuid.uuid4().hex
    cache.set(_key(experiment_id), token, 3600)
    permutation_experiment_score.apply_async((experiment_id, token), countdown=RESCORE_DEBOUNCE_S)


@receiver(qrels_version_changed, dispatch_uid="permutations-rescore")
def _on_qrels_changed(sender, version_id: int, turn_ids: list[int], **kwargs) -> None:
    from evaluation.permutations.services import experiments_for_changed_qrels

    for exp_id in experiments_for_changed_qrels(version_id=version_id, turn_ids=turn_ids):
        schedule_rescore(exp_id)
