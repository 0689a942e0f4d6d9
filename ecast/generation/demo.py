"""Demo generation job: the rule baselines run synchronously on two conversations of "CAsT 2020 demo"."""

from __future__ import annotations

import sys
from typing import Any, TextIO

from ecast.generation import services
from ecast.models import Collection, GenerationJob

DEMO_COLLECTION = "CAsT 2020 demo"
DEMO_JOB = "Demo: rule baselines"


def load(stdout: TextIO | Any = None) -> GenerationJob | None:
    """Create (once) a finished generation job with the deterministic rule backends; idempotent."""
    out = stdout or sys.stdout
    collection = Collection.objects.filter(name=DEMO_COLLECTION).first()
    if collection is None:
        out.write(f"generation demo skipped: no collection {DEMO_COLLECTION!r}\n")
        return None
    existing = GenerationJob.objects.filter(collection=collection, name=DEMO_JOB).first()
    if existing:
        return existing
    topics = list(collection.conversations.order_by("id").values_list("topic_id", flat=True)[:2])
    rule = {"backend": "rule", "params": {"num_return_sequences": 3}}
    job = services.generation_job_create(
        collection=collection,
        name=DEMO_JOB,
        selection={"conversations": topics},
        config={"cqr": rule, "paraphrase": {**rule, "sources": ["r", "m"]}, "cr": rule},
        seed=0,
        chunk_size=50,
    )
    services.generation_job_begin(job_id=job.pk)
    for chunk in services.generation_job_chunks(job=job):
        services.generation_chunk_process(job_id=job.pk, gen_turn_ids=chunk)
    job = services.generation_job_finish_if_complete(job_id=job.pk)
    out.write(f"generation demo: job {job.pk} {job.status}, {job.total_turns} turns\n")
    return job
