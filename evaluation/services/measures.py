"""Measures on demand: any ir_measures string a page or the API asks for is stored for that qrels version.

A measure not stored yet is added to the version's requested measures (so every later recompute, the live one
included, keeps it current like the defaults) and computed for every run by a "measures" evaluation job in the
worker; its progress is served at ``/jobs/evaluation/<id>/progress/``.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from django.db import transaction

from ecast.core.models import ACTIVE_STATUSES
from evaluation.measures import measure_check
from evaluation.models import EvaluationJob, QrelsVersion, Run
from evaluation.scoring import MEASURES
from evaluation.selectors import scores_exist
from evaluation.services.jobs import enqueue_job


class MeasureState(NamedTuple):
    """A measure as stored under a version: its stored spelling, and the job computing it (None once stored)."""

    measure: str
    job: EvaluationJob | None

    @property
    def computing(self) -> bool:
        return self.job is not None


def _active_job(version: QrelsVersion, measure: str) -> EvaluationJob | None:
    jobs = EvaluationJob.objects.filter(version=version, kind=EvaluationJob.Kind.MEASURES, status__in=ACTIVE_STATUSES)
    return next((j for j in jobs.order_by("-id") if measure in (j.measures or [])), None)


def measure_request(*, version: QrelsVersion, measure: str, user: Any = None) -> MeasureState:
    """``measure`` (any ir_measures string) for ``version``: stored already, or from now on, with the job that
    computes it. ``MeasureError`` naming the string when ir_measures cannot parse it or pytrec_eval cannot compute it
    per turn."""
    name = measure_check(measure)
    if name in MEASURES:
        return MeasureState(name, None)
    with transaction.atomic():
        locked = QrelsVersion.objects.select_for_update().get(pk=version.pk)
        if name not in (locked.requested_measures or []):
            locked.requested_measures = [*(locked.requested_measures or []), name]
            locked.save(update_fields=["requested_measures", "updated_at"])
        version.requested_measures = locked.requested_measures
        running = _active_job(locked, name)
        if running is not None:
            return MeasureState(name, running)
        # Nothing to compute while no run has a score here: the first scoring of the version stores it with the rest.
        if not scores_exist(version_ids=[locked.pk]) or scores_exist(version_ids=[locked.pk], measure=name):
            return MeasureState(name, None)
        job = EvaluationJob(
            collection_id=locked.collection_id,
            kind=EvaluationJob.Kind.MEASURES,
            version=locked,
            measures=[name],
            progress_total=Run.objects.filter(collection_id=locked.collection_id).count(),
            created_by=user if getattr(user, "is_authenticated", False) else None,
        )
        job.full_clean()
        job.save()
        enqueue_job(job)
    return MeasureState(name, job)
