"""Celery wrappers for permutation experiments: each takes ids and calls one service."""

from __future__ import annotations

import logging
from typing import Any

from celery import shared_task
from celery.signals import worker_init

from ecast.core import jobs
from evaluation.models import PermutationExperiment
from evaluation.permutations import retrieval, selectors, services


@worker_init.connect
def retrieval_warm(**_: Any) -> None:
    """Load the retrieval libraries once in the worker's main process, before its pool processes fork, so no
    experiment's chunk pays for them (every worker would, in parallel, at its first chunk: time on the critical
    path of a fanned-out experiment)."""
    try:
        retrieval.warm()
    except Exception:  # noqa: BLE001 - a worker must start anyway; the first chunk loads what it needs, or fails
        logging.getLogger(__name__).warning("could not warm the permutation retrieval", exc_info=True)


# No result stored: nothing reads it, and storing it was a round trip to Redis per chunk.
@shared_task(name=services.CHUNK_TASK, ignore_result=True)
def permutation_chunk_task(experiment_id: int, conversation_id: int) -> None:
    """Sample, retrieve and score every order of one conversation (the first chunk also pins the index); the last
    chunk finishes the experiment."""
    work = lambda: services.permutation_chunk_run(experiment_id=experiment_id, conversation_id=conversation_id)  # noqa: E731
    jobs.job_unit(services.KIND, experiment_id, work)


@shared_task(name=services.SCORE_TASK)
def permutation_experiment_score_task(experiment_id: int) -> str:
    """Score (or rescore) an experiment against its qrels version."""
    # Not claimed: a rescore queued after new judgments must run even while an older scoring is still running.
    work = lambda: services.permutation_experiment_rescore(experiment_id=experiment_id)  # noqa: E731
    return jobs.job_unit(services.KIND, experiment_id, work) or ""


jobs.register_kind(
    jobs.JobKind(
        name=services.KIND,
        active=services.permutation_experiments_active,
        resume=lambda experiment_id: services.permutation_experiment_requeue(experiment_id=experiment_id),
        fail=lambda experiment_id, reason: services.permutation_experiment_fail(
            experiment_id=experiment_id, reason=reason
        ),
        model=PermutationExperiment,
        detail=lambda experiment: selectors.experiment_progress(experiment=experiment),
    )
)
