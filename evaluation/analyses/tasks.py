"""Celery wrappers for the analyses, and the receiver that re-queues them when judgments arrive."""

from __future__ import annotations

from celery import shared_task

from evaluation.events import qrels_version_changed


@shared_task(name="evaluation.analysis_compute")
def analysis_compute_task(kind: str, analysis_id: int, token: str | None = None) -> bool:
    """Compute one analysis unless a newer schedule superseded this one."""
    from evaluation.analyses.services.common import analysis_compute_if_current

    return analysis_compute_if_current(kind=kind, analysis_id=analysis_id, token=token)


def on_qrels_version_changed(sender, version_id: int, turn_ids=(), **kwargs) -> None:
    """Debounced recompute of every analysis built on the changed qrels version."""
    from evaluation.analyses.services.common import analyses_schedule_for_version

    analyses_schedule_for_version(version_id=version_id)


qrels_version_changed.connect(on_qrels_version_changed, dispatch_uid="evaluation.analyses.qrels_changed")
