"""Celery wrappers for generation jobs: a dispatcher fans out chunk tasks, each chunk processes its turns."""

from __future__ import annotations

from celery import shared_task

from ecast.core import jobs
from ecast.generation import finetune, processing, selectors, services
from ecast.models import FinetuneJob, GenerationJob


@shared_task(name="ecast.generation.dispatch")
def generation_job_dispatch_task(job_id: int) -> int:
    """Begin the job and fan its pending turns out as parallel chunk tasks; returns the number of chunks."""
    return jobs.job_unit(services.KIND, job_id, lambda: services.generation_job_dispatch(job_id=job_id)) or 0


@shared_task(name="ecast.generation.chunk")
def generation_chunk_task(job_id: int, gen_turn_ids: list[int]) -> dict[str, int]:
    """Process one chunk of turns (idempotent: a redelivered chunk skips finished turns)."""
    work = lambda: processing.generation_chunk_process(job_id=job_id, gen_turn_ids=gen_turn_ids)  # noqa: E731
    return jobs.job_unit(services.KIND, job_id, work) or {}


jobs.register_kind(
    jobs.JobKind(
        name=services.KIND,
        active=services.generation_jobs_active,
        resume=lambda job_id: services.generation_job_requeue(job_id=job_id),
        fail=lambda job_id, reason: services.generation_job_fail(job_id=job_id, reason=reason),
        model=GenerationJob,
        detail=lambda job: selectors.generation_job_progress(job=job),
    )
)


@shared_task(name=finetune.RUN_TASK)
def finetune_run_task(job_id: int) -> int:
    """Train the job's adapter (one worker at a time; a redelivered copy trains again from the start)."""
    try:
        return jobs.job_unit(finetune.KIND, job_id, lambda: finetune.finetune_run(job_id=job_id), claim=True) or 0
    except Exception as exc:  # noqa: BLE001 - any failure is shown on the job page instead of lost in a log
        finetune.finetune_fail(job_id=job_id, reason=f"{type(exc).__name__}: {exc}")
        raise


jobs.register_kind(
    jobs.JobKind(
        name=finetune.KIND,
        active=finetune.finetune_jobs_active,
        resume=lambda job_id: finetune.finetune_requeue(job_id=job_id),
        fail=lambda job_id, reason: finetune.finetune_fail(job_id=job_id, reason=reason),
        model=FinetuneJob,
        detail=lambda job: finetune.finetune_progress(job=job),
    )
)
