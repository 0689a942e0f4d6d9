"""Writes for pivot / meta-evaluation / calibration / stochastic-system analyses.

``*_create`` validate and store parameters (atomic; nothing written on bad input) and schedule the background
computation; ``analysis_compute`` (called by the Celery task) runs the plain algorithm modules and stores results,
qrels version and ``computed_at``. When a qrels version gains judgments, :func:`analyses_schedule_for_version`
re-queues every analysis built on it, debounced: each change replaces a cache token and only the task holding the
latest token computes, so a burst of judgments costs one recomputation.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from django.core.cache import cache
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from evaluation.analyses import metaeval, pivots
from evaluation.analyses.selectors import (
    ANALYSIS_MODELS,
    analyses_for_version,
    qrels_count,
)
from evaluation.analyses.services.base import DEBOUNCE_SECONDS, analysis_schedule, token_key
from evaluation.analyses.services.calibration import (
    DEFAULT_B_VALUES,
    calibration_report_compute,
    calibration_report_create,
    stochastic_system_compute,
    stochastic_system_create,
)
from evaluation.analyses.services.metaeval import (
    APP_SIMPLE,
    app_score_table,
    meta_evaluation_compute,
    meta_evaluation_create,
    parse_lengths,
)
from evaluation.analyses.services.pivots import (
    EE_KINDS,
    pivot_analysis_compute,
    pivot_analysis_create,
    pivot_cross_ee,
    split_ee_means,
)
from evaluation.models import (
    AnalysisStatus,
)

__all__ = [
    "APP_SIMPLE",
    "DEBOUNCE_SECONDS",
    "DEFAULT_B_VALUES",
    "EE_KINDS",
    "analyses_schedule_for_version",
    "analysis_compute",
    "analysis_compute_if_current",
    "analysis_delete",
    "analysis_schedule",
    "app_score_table",
    "calibration_report_create",
    "meta_evaluation_create",
    "parse_lengths",
    "pivot_analysis_create",
    "pivot_cross_ee",
    "split_ee_means",
    "stochastic_system_create",
]


def analyses_schedule_for_version(*, version_id: int, delay: int | None = None) -> list[tuple[str, int]]:
    """Re-queue (debounced) every auto-recomputed analysis that reads this qrels version."""
    targets = analyses_for_version(version_id=version_id)
    for kind, analysis_id in targets:
        analysis_schedule(kind=kind, analysis_id=analysis_id, delay=DEBOUNCE_SECONDS if delay is None else delay)
    return targets


def analysis_compute_if_current(*, kind: str, analysis_id: int, token: str | None) -> bool:
    """Compute unless a newer schedule replaced ``token`` (then that later task does the work)."""
    if token is not None and cache.get(token_key(kind, analysis_id)) not in (None, token):
        return False
    analysis_compute(kind=kind, analysis_id=analysis_id)
    return True


def analysis_compute(*, kind: str, analysis_id: int) -> None:
    """Run one analysis now and store results, or the error that stopped it."""
    model = ANALYSIS_MODELS[kind]
    obj = model.objects.select_related("collection", "qrels_version").get(pk=analysis_id)
    model.objects.filter(pk=obj.pk).update(status=AnalysisStatus.RUNNING, error="", progress_done=0)
    count = qrels_count(version=obj.qrels_version)
    try:
        results = COMPUTE[kind](obj)
    except (ValueError, ValidationError, KeyError, metaeval.TableError, FileNotFoundError) as exc:
        model.objects.filter(pk=obj.pk).update(status=AnalysisStatus.FAILED, error=str(exc))
        return
    except Exception as exc:
        # Never leave the page spinning on "running": record the failure, then let the worker log the traceback.
        model.objects.filter(pk=obj.pk).update(status=AnalysisStatus.FAILED, error=f"internal error: {exc!r}")
        raise
    with transaction.atomic():
        model.objects.filter(pk=obj.pk).update(
            results=pivots.clean_json(results),
            status=AnalysisStatus.DONE,
            computed_at=timezone.now(),
            qrels_count=count,
            error="",
        )


COMPUTE: dict[str, Callable[[Any], dict]] = {
    "pivots": pivot_analysis_compute,
    "metaeval": meta_evaluation_compute,
    "calibration": calibration_report_compute,
    "stochastic": stochastic_system_compute,
}


@transaction.atomic
def analysis_delete(*, kind: str, analysis_id: int) -> None:
    """Delete an analysis (and its stored upload)."""
    obj = ANALYSIS_MODELS[kind].objects.get(pk=analysis_id)
    table = getattr(obj, "table_file", "")
    obj.delete()
    if table:
        transaction.on_commit(lambda: Path(table).unlink(missing_ok=True))
