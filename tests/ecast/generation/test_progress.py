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


@pytest.mark.django_db
def test_the_eta_leaves_out_the_first_turns_model_loading_once_three_turns_are_done(small_collection):
    now = timezone.now()
    job = GenerationJob.objects.create(
        collection=small_collection, status="running", started_at=now - timedelta(seconds=100), progress_total=5
    )
    turns = list(small_collection.turns.order_by("pk")[:5])
    # The first turn took 80 s (the models loaded), the next two 10 s each; the last finished just now.
    ends = [-20, -10, 0]
    for i, turn in enumerate(turns):
        finished = {"status": "done", "finished_at": now + timedelta(seconds=ends[i])} if i < 3 else {}
        GenerationTurn.objects.create(job=job, turn=turn, position=i, **finished)
    # Pace from the first finished turn: 20 s for two turns, 10 s each; two pending turns: 20 s (not 2 × 100 / 3).
    assert generation_job_progress(job=job)["eta_seconds"] == pytest.approx(20.0, abs=1.0)


def _batched_job(collection, *, started_ago: int, first_batch_ago: int) -> GenerationJob:
    """A running job of 16 turns whose first two batches of four finished ``first_batch_ago`` and 40 s later
    (committed a few milliseconds apart, as a chunk commits them): 10 s a turn, eight turns pending."""
    from tests import factories

    conv = factories.conversation(collection, "9")
    extra = [factories.turn(conv, n, f"Question {n}?") for n in range(1, 11)]
    turns = [*collection.turns.order_by("pk")[:6], *extra][:16]
    now = timezone.now()
    job = GenerationJob.objects.create(
        collection=collection, status="running", started_at=now - timedelta(seconds=started_ago), progress_total=16
    )
    for i, turn in enumerate(turns):
        batch = i // 4
        ended = now - timedelta(seconds=first_batch_ago - 40 * batch, milliseconds=-5 * i)
        finished = {"status": "done", "finished_at": ended} if batch < 2 else {}
        GenerationTurn.objects.create(job=job, turn=turn, position=i, **finished)
    return job


@pytest.mark.django_db
def test_the_eta_reads_the_pace_between_batches_when_a_chunk_commits_turns_together(small_collection):
    # The first batch (with the model load) 60 s ago, the second 20 s ago: 40 s a batch, 10 s a turn. Eight pending
    # turns: 80 s, 20 of which have passed.
    job = _batched_job(small_collection, started_ago=100, first_batch_ago=60)
    assert generation_job_progress(job=job)["eta_seconds"] == pytest.approx(60.0, abs=1.0)


@pytest.mark.django_db
def test_the_eta_runs_down_by_at_most_one_batch_while_a_batch_computes(small_collection):
    # The last batch 100 s ago: the next one is slow, not done. Eight pending turns need 80 s; at most one batch
    # (40 s) of it can have passed, so the ETA stays at 40 s, not 0 s.
    job = _batched_job(small_collection, started_ago=200, first_batch_ago=140)
    assert generation_job_progress(job=job)["eta_seconds"] == pytest.approx(40.0, abs=1.0)
