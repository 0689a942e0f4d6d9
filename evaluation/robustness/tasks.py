"""Celery wrapper: make a test set's BM25 baseline run in the worker."""

from __future__ import annotations

from celery import shared_task

from evaluation.robustness import services


@shared_task(name=services.BASELINE_TASK)
def test_set_baseline_task(test_set_id: int, user_id: int | None = None) -> str:
    """BM25 over the collection's corpus for one test set, imported as a run linked to it."""
    run = services.test_set_baseline_make(test_set_id=test_set_id, user_id=user_id)
    return run.name if run else "nothing to do"
