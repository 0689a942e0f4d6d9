"""Celery wrappers for generation jobs: a dispatcher fans out chunk tasks, each chunk processes its turns."""

from __future__ import annotations

from celery import shared_task

from ecast.generation import services


@shared_task(name="ecast.generation.dispatch")
def generation_job_dispatch_task(job_id: int) -> int:
    """Begin the job and fan its pending turns out as parallel chunk tasks; returns the number of chunks."""
    return services.generation_job_dispatch(job_id=job_id)


@shared_task(name="ecast.generation.chunk", acks_late=True)
def generation_chunk_task(job_id: int, gen_turn_ids: list[int]) -> dict[str, int]:
    """Process one chunk of turns (idempotent: a redelivered chunk skips finished turns)."""
    return services.generation_chunk_process(job_id=job_id, gen_turn_ids=gen_turn_ids)
