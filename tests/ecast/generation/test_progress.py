"""A generation job's ETA comes from the pace of its finished turns and counts down while the next one computes."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from ecast.generation.selectors import generation_job_progress
from ecast.models import GenerationJob, GenerationTurn


@pytest.mark.django_db
def test_the_eta_counts_down_between_finished_turns_instead_of_growing(small_collection):
    now = timezone.now()
    job = GenerationJob.objects.create(
        collection=small_collection, status="running", started_at=now - timedelta(seconds=100), progress_total=4
    )
    turns = list(small_collection.turns.order_by("pk")[:4])
    for i, turn in enumerate(turns):
        finished = {"status": "done", "finished_at": now - timedelta(seconds=60 - 40 * i)} if i < 2 else {}
        GenerationTurn.objects.create(job=job, turn=turn, position=i, **finished)
    # Two turns in 80 s (40 s each), the last one 20 s ago: two pending turns need 80 s, 20 of which have passed.
    assert generation_job_progress(job=job)["eta_seconds"] == pytest.approx(60.0, abs=1.0)
