"""Writes for utterance labels and permutation experiments, one module per concern: labels (SE/FT/PT classes and
the turn dependencies they imply), experiments (planning and creation), chunks (the background work: index,
retrieval and scoring per conversation, finishing), rescoring (scoring stored rankings, the debounced rescore when
judgments change) and recovery (what the sweeper calls after a worker is lost)."""

from __future__ import annotations

from evaluation.permutations.services.chunks import (
    permutation_chunk_run,
    permutation_index_prepare,
)
from evaluation.permutations.services.experiments import (
    CHUNK_TASK,
    KIND,
    PERMUTATION_COLUMNS,
    RESCORE_PENDING,
    SCORE_TASK,
    permutation_experiment_create,
    plan_orders,
)
from evaluation.permutations.services.labels import (
    CLASSES,
    conversation_dependencies_refresh,
    utterance_classes_derive,
    utterance_label_set,
    utterance_labels_adopt_majority,
)
from evaluation.permutations.services.recovery import (
    permutation_experiment_fail,
    permutation_experiment_requeue,
    permutation_experiments_active,
)
from evaluation.permutations.services.rescoring import (
    experiments_rescore_for_changed_qrels,
    permutation_experiment_rescore,
    permutation_experiment_rescore_schedule,
    permutation_experiment_score,
    permutation_experiment_set_version,
    rescore_key,
)

__all__ = [
    "CLASSES",
    "conversation_dependencies_refresh",
    "utterance_label_set",
    "utterance_labels_adopt_majority",
    "utterance_classes_derive",
    "CHUNK_TASK",
    "SCORE_TASK",
    "KIND",
    "RESCORE_PENDING",
    "permutation_experiment_create",
    "PERMUTATION_COLUMNS",
    "plan_orders",
    "permutation_experiment_score",
    "permutation_experiment_set_version",
    "permutation_experiment_rescore",
    "rescore_key",
    "permutation_experiment_rescore_schedule",
    "experiments_rescore_for_changed_qrels",
    "permutation_index_prepare",
    "permutation_chunk_run",
    "permutation_experiments_active",
    "permutation_experiment_requeue",
    "permutation_experiment_fail",
]
