"""Celery wrappers for generation jobs: a dispatcher fans out a group of chunk tasks."""

from __future__ import annotations

from celery import group, shared_task


@shared_task(name="ecast.generation.dispatch")
def generation_job_dispatch_task(job_id: int) -> int:
    """Begin the job and fan its pending turns out as parallel chunk tasks; returns the number of chunks."""
    from ecast.generation import services
    from ecast.models import GenerationJob

    job = services.generation_job_begin(job_id=job_id)
    if job.status == GenerationJob.Status.CANCELLED:
        return 0
    chunks = services.generation_job_chunks(job=job)
    if not chunks:
        services.generation_job_finish_if_complete(job_id=job_id)
        return 0
    group(generation_chunk_task.s(job_id, chunk) for chunk in chunks).apply_async()
    return len(chunks)


@shared_task(name="ecast.generation.chunk", acks_late=True)
def generation_chunk_task(job_id: int, gen_turn_ids: list[int]) -> dict[str, int]:
    """Process one chunk of turns (idempotent: a redelivered chunk skips finished turns)."""
    from ecast.generation import services

    return services.generation_chunk_process(job_id=job_id, gen_turn_ids=gen_turn_ids)
