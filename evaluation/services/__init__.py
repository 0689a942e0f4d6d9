"""Writes for evaluation, one module per concern: stored scores and leaderboard snapshots (scores), evaluation jobs
and the parts of a fanned-out full recompute (jobs), the debounced live recompute of re-judged turns (live), run
uploads and edits (runs), and what the sweeper calls after a worker is lost (recovery).

Scores are written delete-then-bulk-insert per (run set × version [× turns]) so a full recompute is a handful of
statements per run, and a judgment touching one turn rewrites only that turn's rows for every run."""

from __future__ import annotations

from evaluation.scoring import MEASURES
from evaluation.services.jobs import (
    DRAIN_LOCK,
    DRAIN_RETRY_S,
    DRAIN_TASK,
    JOB_KIND,
    JOB_TASK,
    PART_LOCK,
    PART_TASK,
    PART_WAIT_S,
    RECOMPUTE_KIND,
    evaluation_job_create,
    evaluation_job_execute,
    evaluation_job_fail,
    scores_part_compute,
    version_writer,
)
from evaluation.services.live import (
    dirty_turns_drain,
    dirty_turns_mark,
    recompute_delay_s,
    recompute_key,
    version_schedule_initial,
)
from evaluation.services.measures import MeasureState, measure_request
from evaluation.services.recovery import (
    dirty_turns_fail,
    dirty_turns_requeue,
    dirty_versions_waiting,
    evaluation_job_requeue,
    evaluation_jobs_active,
)
from evaluation.services.runs import (
    run_update,
    run_upload,
)
from evaluation.services.scores import (
    leaderboard_snapshot_create,
    scores_compute_for_run,
    scores_compute_for_version,
    scores_recompute_turns,
    version_needs_full_compute,
)

__all__ = [
    "scores_compute_for_run",
    "scores_compute_for_version",
    "scores_recompute_turns",
    "version_needs_full_compute",
    "leaderboard_snapshot_create",
    "JOB_KIND",
    "RECOMPUTE_KIND",
    "JOB_TASK",
    "DRAIN_TASK",
    "PART_TASK",
    "PART_LOCK",
    "DRAIN_LOCK",
    "PART_WAIT_S",
    "DRAIN_RETRY_S",
    "version_writer",
    "evaluation_job_create",
    "evaluation_job_execute",
    "scores_part_compute",
    "evaluation_job_fail",
    "recompute_delay_s",
    "recompute_key",
    "dirty_turns_mark",
    "version_schedule_initial",
    "dirty_turns_drain",
    "run_upload",
    "run_update",
    "evaluation_jobs_active",
    "evaluation_job_requeue",
    "dirty_versions_waiting",
    "dirty_turns_requeue",
    "dirty_turns_fail",
    "MEASURES",
    "MeasureState",
    "measure_request",
]
