"""Everything that keeps results current, in one place: the receivers of "qrels changed", "run created" and "qrels
version saved", connected by ``EvaluationConfig.ready()``.

Each receiver hands its work to a service that queues it through the one debounce (``ecast.core.jobs.debounce``):
stored scores (changed turns only), permutation experiments (rescore) and analyses (recompute).
"""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.db.models.signals import post_save

from evaluation import services
from evaluation.analyses.services import common as analyses
from evaluation.events import qrels_version_changed, run_created
from evaluation.models import EvaluationJob, QrelsVersion, Run
from evaluation.permutations import services as permutations


def on_qrels_version_changed(sender: Any, version_id: int, turn_ids: Any = (), **kwargs: Any) -> None:
    """Judgments changed: recompute the changed turns' scores, rescore experiments, recompute analyses."""
    services.dirty_turns_mark(version_id=version_id, turn_ids=turn_ids or ())
    permutations.experiments_rescore_for_changed_qrels(version_id=version_id, turn_ids=list(turn_ids or ()))
    analyses.analyses_schedule_for_version(version_id=version_id)


def on_run_created(sender: Any, run_id: int, **kwargs: Any) -> None:
    """Evaluate a newly imported run against every qrels version of its collection, in the worker."""
    run = Run.objects.select_related("collection").filter(pk=run_id).first()
    if run is not None:
        services.evaluation_job_create(collection=run.collection, kind=EvaluationJob.Kind.RUN, run=run)


def on_qrels_version_saved(sender: Any, instance: Any, created: bool = False, **kwargs: Any) -> None:
    """A new version (derived copy or import) gets every run scored once its rows are committed."""
    if created:
        transaction.on_commit(lambda: services.version_schedule_initial(version_id=instance.pk))


def connect() -> None:
    """Connect every receiver once (dispatch_uid makes repeated ready() calls harmless)."""
    post_save.connect(on_qrels_version_saved, sender=QrelsVersion, dispatch_uid="evaluation.recompute.version_saved")
    qrels_version_changed.connect(on_qrels_version_changed, dispatch_uid="evaluation.recompute.qrels_changed")
    run_created.connect(on_run_created, dispatch_uid="evaluation.recompute.run_created")
