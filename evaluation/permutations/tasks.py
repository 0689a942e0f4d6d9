"""Celery wrappers for permutation experiments: each takes ids and calls one service."""

from __future__ import annotations

from celery import shared_task

from evaluation.permutations import services


@shared_task(name=services.START_TASK)
def permutation_experiment_start_task(experiment_id: int) -> int:
    """Build the index and fan out one retrieval chunk per conversation."""
    return services.permutation_experiment_start(experiment_id=experiment_id)


@shared_task(name=services.CHUNK_TASK)
def permutation_chunk_task(experiment_id: int, conversation_id: int) -> None:
    """Retrieve every order of one conversation; the last chunk queues the scoring."""
    services.permutation_chunk_run(experiment_id=experiment_id, conversation_id=conversation_id)


@shared_task(name=services.SCORE_TASK)
def permutation_experiment_score_task(experiment_id: int) -> str:
    """Score (or rescore) an experiment against its qrels version."""
    return services.permutation_experiment_rescore(experiment_id=experiment_id)
