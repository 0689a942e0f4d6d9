"""Receivers that keep stored scores current: judgments → debounced turn recompute; new run → evaluate it."""

from __future__ import annotations

from typing import Any

from evaluation.events import qrels_version_changed, run_created


def on_qrels_version_changed(sender: Any, version_id: int, turn_ids: Any = (), **kwargs: Any) -> None:
    """Accumulate the changed turns and schedule one recompute after the debounce window."""
    from evaluation.services import dirty_turns_mark

    dirty_turns_mark(version_id=version_id, turn_ids=turn_ids or ())


def on_run_created(sender: Any, run_id: int, **kwargs: Any) -> None:
    """Evaluate a newly imported run against every qrels version of its collection, in the worker."""
    from evaluation.models import EvaluationJob, Run
    from evaluation.services import evaluation_job_create

    run = Run.objects.select_related("collection").filter(pk=run_id).first()
    if run is not None:
        evaluation_job_create(collection=run.collection, kind=EvaluationJob.Kind.RUN, run=run)


def on_qrels_version_saved(sender: Any, instance: Any, created: bool = False, **kwargs: Any) -> None:
    """A new version (derived copy or import) gets every run scored once its rows are committed."""
    if not created:
        return
    from django.db import transaction

    from evaluation.services import version_schedule_initial

    transaction.on_commit(lambda: version_schedule_initial(version_id=instance.pk))


def connect() -> None:
    """Connect once (dispatch_uid makes repeated ready() calls harmless)."""
    from django.db.models.signals import post_save

    from evaluation.models import QrelsVersion

    post_save.connect(on_qrels_version_saved, sender=QrelsVersion, dispatch_uid="evaluation.scores.version_saved")
    qrels_version_changed.connect(on_qrels_version_changed, dispatch_uid="evaluation.scores.qrels_changed")
    run_created.connect(on_run_created, dispatch_uid="evaluation.scores.run_created")
