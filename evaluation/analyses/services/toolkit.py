"""What the services of every analysis kind (pivots, metaeval, calibration) build on: input checks, the metric entry
point, progress, and queueing a computation. Dispatch and the debounced recompute live in ``common``."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import numpy as np
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from ecast.core.jobs import enqueue
from ecast.core.models import JobStatus
from ecast.models import Collection
from evaluation.analyses.selectors import ANALYSIS_MODELS
from evaluation.measures import measure_check
from evaluation.metrics import MeasureError, make_evaluator
from evaluation.models import QrelsVersion, Run

# Registered name of the task in evaluation/analyses/tasks.py (queued by name: the tasks module imports the services).
COMPUTE_TASK = "evaluation.analysis_compute"


# ---- input checks --------------------------------------------------------------------------------------------------


def check_measures(measures: Iterable[str]) -> list[str]:
    """Measure strings in their stored spelling (``evaluation.measures.measure_check``: any ir_measures string
    pytrec_eval computes per turn), or a ValidationError naming the bad one."""
    out = []
    for m in measures:
        m = str(m).strip()
        if not m:
            continue
        try:
            # The stored spelling, so an analysis names a measure as the leaderboard does; a measure pytrec_eval
            # cannot compute per turn is refused here as everywhere else.
            m = measure_check(m)
        except MeasureError as exc:
            raise ValidationError({"metrics": f"{exc} (use ir_measures names, e.g. nDCG@10, AP)"}) from exc
        out.append(m)
    if not out:
        raise ValidationError({"metrics": "choose at least one measure"})
    return out


def check_runs(
    collection: Collection, runs: Sequence[Run], minimum: int, field: str = "runs", why: str = ""
) -> list[Run]:
    """Runs of this collection, at least ``minimum`` of them (``why`` says why, in the refusal)."""
    runs = list(runs)
    foreign = [r.name for r in runs if r.collection_id != collection.id]
    if foreign:
        raise ValidationError({field: f"runs not in collection {collection.name}: {', '.join(foreign)}"})
    if len(runs) < minimum:
        reason = f": {why}" if why else ""
        raise ValidationError({field: f"choose at least {minimum} runs (got {len(runs)}){reason}"})
    return runs


def check_version(collection: Collection, version: QrelsVersion | None) -> QrelsVersion:
    """A qrels version of this collection."""
    if version is None:
        raise ValidationError({"qrels_version": "choose a qrels version"})
    if version.collection_id != collection.id:
        raise ValidationError({"qrels_version": f"qrels version {version.name} is not in collection {collection.name}"})
    return version


# ---- computing -----------------------------------------------------------------------------------------------------


def evaluator_for(qrels, measures: list[str], threshold: int) -> Callable[[dict], dict[str, dict[str, float]]]:
    """The evaluation app's entry point to pytrec_eval/ir_measures (trec_eval -c): index qrels once, score many runs."""
    return make_evaluator(qrels, measures, rel_threshold=threshold)


def mean_over(per_topic: dict[str, float], topics: Iterable[str]) -> float:
    """Mean over the given topics, 0 for topics without a value (trec_eval -c)."""
    vals = [per_topic.get(t, 0.0) for t in topics]
    return float(np.mean(vals)) if vals else float("nan")


def progress_set(obj, done: int, total: int) -> None:
    """Store progress without touching the rest of the row (the page polls it)."""
    type(obj).objects.filter(pk=obj.pk).update(progress_done=done, progress_total=total)


# ---- queueing ------------------------------------------------------------------------------------------------------


def analysis_mark_pending(*, kind: str, analysis_id: int) -> None:
    """Show the analysis as waiting for its computation (the page polls the status): the last run's progress goes,
    so a queued analysis never shows a nearly full bar."""
    ANALYSIS_MODELS[kind].objects.filter(pk=analysis_id).update(
        status=JobStatus.QUEUED, error="", queued_at=timezone.now(), progress_done=0, progress_total=0
    )


def analysis_queue(*, kind: str, analysis_id: int) -> None:
    """Compute the analysis in the worker as soon as this transaction commits (no debounce)."""
    analysis_mark_pending(kind=kind, analysis_id=analysis_id)
    transaction.on_commit(lambda: enqueue(COMPUTE_TASK, kind, analysis_id))
