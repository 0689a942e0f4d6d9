"""Demo generation: the paraphrase test sets R^m_1..3 and R^r_1..3 drawn from the approved ECAsT paraphrases, and a
job with the rule baselines run synchronously on two conversations of "CAsT 2020 demo"."""

from __future__ import annotations

import sys
from typing import Any, TextIO

from ecast.generation import processing, services, testsets
from ecast.models import Collection, GenerationJob, Paraphrase, TestSet

DEMO_COLLECTION = "CAsT 2020 demo"
DEMO_JOB = "Demo: rule baselines"
TEST_SETS_PER_KIND = 3
TEST_SET_SEED = 0


def test_sets_load(*, collection: Collection, stdout: TextIO | Any) -> list[TestSet]:
    """Draw three manual and three raw test sets (seed 0) of each kind the collection has none of; idempotent."""
    created: list[TestSet] = []
    for kind in (TestSet.Kind.MANUAL, TestSet.Kind.RAW):
        approved = Paraphrase.objects.filter(
            turn__collection=collection, kind=kind, is_current=True, status__in=testsets.DEFAULT_STATUSES
        )
        if TestSet.objects.filter(collection=collection, kind=kind).exists() or not approved.exists():
            continue
        # Before the generation job below, so only the imported (approved) ECAsT paraphrases are drawn from.
        created += testsets.test_sets_create(
            collection=collection, kind=kind, n_sets=TEST_SETS_PER_KIND, seed=TEST_SET_SEED
        )
    if created:
        stdout.write(f"generation demo: test sets {', '.join(ts.name for ts in created)}\n")
    return created


def load(stdout: TextIO | Any = None) -> GenerationJob | None:
    """Create (once) the demo test sets and a finished generation job with the deterministic rule backends."""
    out = stdout or sys.stdout
    collection = Collection.objects.filter(name=DEMO_COLLECTION).first()
    if collection is None:
        out.write(f"generation demo skipped: no collection {DEMO_COLLECTION!r}\n")
        return None
    test_sets_load(collection=collection, stdout=out)
    existing = GenerationJob.objects.filter(collection=collection, name=DEMO_JOB).first()
    if existing:
        return existing
    topics = list(collection.conversations.order_by("id").values_list("topic_id", flat=True)[:2])
    rule = {"backend": "rule", "params": {"num_return_sequences": 3}}
    job = services.generation_job_create(
        collection=collection,
        name=DEMO_JOB,
        selection={"conversations": topics},
        config={
            "cqr": rule,
            "paraphrase": {**rule, "sources": ["r", "m"]},
            "cr": {"backend": "anaphora"},
            "clean": {"min_similarity": None},  # template paraphrases stay close to their source; no model to load
        },
        seed=0,
        chunk_size=50,
    )
    services.generation_job_begin(job_id=job.pk)
    for chunk in services.generation_job_chunks(job=job):
        processing.generation_chunk_process(job_id=job.pk, gen_turn_ids=chunk)
    job = processing.generation_job_finish_if_complete(job_id=job.pk)
    out.write(f"generation demo: job {job.pk} {job.status}, {job.progress_total} turns\n")
    return job
