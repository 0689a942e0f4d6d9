"""The analyses' entry point: compute dispatch (what the Celery task runs), the debounced recompute when judgments
arrive, recompute now, delete. Each kind's create/compute services live in its own module beside this one.

``*_create`` (in the kind modules) validate and store parameters (atomic; nothing written on bad input) and queue the
computation; :func:`analysis_compute` runs the plain algorithm modules and stores results, qrels version and
``computed_at``. When a qrels version gains judgments, :func:`analyses_schedule_for_version` re-queues every analysis
built on it through the one debounce (``ecast.core.jobs``): the first change queues a computation in
``ECAST_ANALYSIS_DEBOUNCE_SECONDS``, later ones fold into it until it starts, so a burst of judgments costs one.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from ecast.core.jobs import debounce, debounce_release, enqueue, reraise_transient
from ecast.core.models import ACTIVE_STATUSES, JobStatus
from evaluation.analyses import metaeval, pivots, plots
from evaluation.analyses.selectors import (
    ANALYSIS_MODELS,
    analyses_for_version,
    qrels_count,
)
from evaluation.analyses.services.budget import budget_simulation_compute
from evaluation.analyses.services.calibration import calibration_report_compute, stochastic_system_compute
from evaluation.analyses.services.metaeval import meta_evaluation_compute
from evaluation.analyses.services.pivots import pivot_analysis_compute
from evaluation.analyses.services.toolkit import COMPUTE_TASK, analysis_mark_pending

logger = logging.getLogger(__name__)


def recompute_key(kind: str, analysis_id: int) -> str:
    """Debounce key of an analysis' recompute."""
    return f"analyses:{kind}:{analysis_id}"


def analyses_schedule_for_version(*, version_id: int) -> list[tuple[str, int]]:
    """Re-queue (debounced, after commit) every auto-recomputed analysis that reads this qrels version."""
    targets = analyses_for_version(version_id=version_id)
    delay = settings.ECAST_ANALYSIS_DEBOUNCE_SECONDS
    for kind, analysis_id in targets:
        analysis_mark_pending(kind=kind, analysis_id=analysis_id)
        transaction.on_commit(
            partial(debounce, recompute_key(kind, analysis_id), COMPUTE_TASK, kind, analysis_id, delay=delay)
        )
    return targets


def analysis_run(*, kind: str, analysis_id: int) -> None:
    """What the task runs: changes from now on schedule another run, then compute this one."""
    debounce_release(recompute_key(kind, analysis_id))
    analysis_compute(kind=kind, analysis_id=analysis_id)


def analysis_compute(*, kind: str, analysis_id: int) -> None:
    """Run one analysis now and store results, or the error that stopped it."""
    model = ANALYSIS_MODELS[kind]
    obj = model.objects.select_related("collection", "qrels_version").get(pk=analysis_id)
    model.objects.filter(pk=obj.pk).update(
        status=JobStatus.RUNNING, error="", progress_done=0, started_at=timezone.now()
    )
    count = qrels_count(version=obj.qrels_version)
    try:
        results = COMPUTE[kind](obj)
    except (ValueError, ValidationError, KeyError, metaeval.TableError, FileNotFoundError) as exc:
        model.objects.filter(pk=obj.pk).update(status=JobStatus.FAILED, error=str(exc), finished_at=timezone.now())
        return
    except Exception as exc:
        reraise_transient(exc)  # a lost connection or a deadlock: job_unit computes it again
        # Never leave the page spinning on "running": record the failure, then let the worker log the traceback.
        model.objects.filter(pk=obj.pk).update(
            status=JobStatus.FAILED, error=f"internal error: {exc!r}", finished_at=timezone.now()
        )
        raise
    with transaction.atomic():
        now = timezone.now()
        model.objects.filter(pk=obj.pk).update(
            results=pivots.clean_json(results),
            status=JobStatus.SUCCEEDED,
            computed_at=now,
            finished_at=now,
            qrels_count=count,
            error="",
        )
    analysis_figures_draw(kind=kind, analysis_id=obj.pk)


def analysis_figures_draw(*, kind: str, analysis_id: int) -> None:
    """Draw the report's figures now, in the job, so the page's first visit finds them stored. They are drawn from
    the results as stored (read back, as the page reads them), so their keys are the ones the page asks for. A
    figure that fails here is only logged: the page draws it, or shows why, itself."""
    results = ANALYSIS_MODELS[kind].objects.values_list("results", flat=True).get(pk=analysis_id)
    try:
        plots.REPORT_FIGURES[kind](results or {})
    except Exception:
        logger.exception("drawing the figures of %s analysis %s ahead failed", kind, analysis_id)


COMPUTE: dict[str, Callable[[Any], dict]] = {
    "pivots": pivot_analysis_compute,
    "metaeval": meta_evaluation_compute,
    "calibration": calibration_report_compute,
    "stochastic": stochastic_system_compute,
    "budget": budget_simulation_compute,
}


@transaction.atomic
def analysis_delete(*, kind: str, analysis_id: int) -> None:
    """Delete an analysis (and its stored upload)."""
    obj = ANALYSIS_MODELS[kind].objects.get(pk=analysis_id)
    table = getattr(obj, "table_file", "")
    obj.delete()
    if table:
        transaction.on_commit(lambda: Path(table).unlink(missing_ok=True))


# --- worker loss (the sweeper, through ecast.core.jobs) --------------------------------------------------------------


def analysis_job_kind(kind: str) -> str:
    """The job kind the heartbeat and the sweeper know analyses of ``kind`` by."""
    return f"analysis-{kind}"


def analyses_active(*, kind: str) -> list[tuple[int, Any]]:
    """Analyses of ``kind`` the sweeper watches: queued or computing."""
    active = ANALYSIS_MODELS[kind].objects.filter(status__in=ACTIVE_STATUSES)
    return list(active.values_list("pk", "created_at"))


def analysis_requeue(*, kind: str, analysis_id: int) -> str:
    enqueue(COMPUTE_TASK, kind, analysis_id)
    return "queued the analysis again"


def analysis_fail(*, kind: str, analysis_id: int, reason: str) -> None:
    ANALYSIS_MODELS[kind].objects.filter(pk=analysis_id, status__in=ACTIVE_STATUSES).update(
        status=JobStatus.FAILED, error=reason
    )
