"""Worker loss: what the sweeper (through ``ecast.core.jobs``) calls for a silent experiment."""

from __future__ import annotations

from typing import Any

from ecast.core.jobs import enqueue
from evaluation.models import (
    PermutationExperiment,
    PermutationResult,
)
from evaluation.permutations.services.chunks import chunk_finished
from evaluation.permutations.services.experiments import SCORE_TASK, chunks_queue


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
    chunks_queue(experiment_id, missing)
    if not missing:
        chunk_finished(exp)
    return f"queued {len(missing)} conversation chunk(s) without rankings"


def permutation_experiment_fail(*, experiment_id: int, reason: str) -> None:
    PermutationExperiment.objects.filter(pk=experiment_id, status=PermutationExperiment.Status.RUNNING).update(
        status=PermutationExperiment.Status.FAILED, error=reason
    )
