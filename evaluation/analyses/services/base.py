"""Shared pieces of the analysis services: input checks, the metric entry point, progress, and scheduling."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Sequence

import numpy as np
from django.conf import settings
from django.core.cache import cache
from django.core.exceptions import ValidationError
from django.db import transaction

from ecast.models import Collection
from evaluation.analyses.selectors import (
    ANALYSIS_MODELS,
)
from evaluation.models import (
    AnalysisStatus,
    QrelsVersion,
    Run,
)

DEBOUNCE_SECONDS = int(getattr(settings, "ECAST_ANALYSIS_DEBOUNCE_SECONDS", 30))


# ---- helpers -------------------------------------------------------------------------------------------------------


def evaluator_for(qrels, measures: list[str], threshold: int) -> Callable[[dict], dict[str, dict[str, float]]]:
    """The evaluation app's entry point to pytrec_eval/ir_measures (trec_eval -c): index qrels once, score many runs."""
    from evaluation.metrics import make_evaluator

    return make_evaluator(qrels, measures, rel_threshold=threshold)


def check_measures(measures: Iterable[str]) -> list[str]:
    """Measure strings ir_measures can parse (via evaluation.metrics), or a ValidationError naming the bad one."""
    from evaluation.metrics import MeasureError, parse_measure

    out = []
    for m in measures:
        m = str(m).strip()
        if not m:
            continue
        try:
            parse_measure(m)
        except MeasureError as exc:
            message = f"unknown measure {m!r} (use ir_measures names, e.g. nDCG@10, AP)"
            raise ValidationError({"metrics": message}) from exc
        out.append(m)
    if not out:
        raise ValidationError({"metrics": "choose at least one measure"})
    return out


def check_runs(collection: Collection, runs: Sequence[Run], minimum: int, field: str = "runs") -> list[Run]:
    """Runs of this collection, at least ``minimum`` of them."""
    runs = list(runs)
    foreign = [r.name for r in runs if r.collection_id != collection.id]
    if foreign:
        raise ValidationError({field: f"runs not in collection {collection.name}: {', '.join(foreign)}"})
    if len(runs) < minimum:
        raise ValidationError({field: f"choose at least {minimum} runs (got {len(runs)})"})
    return runs


def check_version(collection: Collection, version: QrelsVersion | None) -> QrelsVersion:
    """A qrels version of this collection."""
    if version is None:
        raise ValidationError({"qrels_version": "choose a qrels version"})
    if version.collection_id != collection.id:
        raise ValidationError({"qrels_version": f"qrels version {version.name} is not in collection {collection.name}"})
    return version


def progress_set(obj, done: int, total: int) -> None:
    """Store progress without touching the rest of the row (the page polls it)."""
    type(obj).objects.filter(pk=obj.pk).update(progress_done=done, progress_total=total)


def mean_over(per_topic: dict[str, float], topics: Iterable[str]) -> float:
    """Mean over the given topics, 0 for topics without a value (trec_eval -c)."""
    vals = [per_topic.get(t, 0.0) for t in topics]
    return float(np.mean(vals)) if vals else float("nan")


# ---- scheduling ----------------------------------------------------------------------------------------------------


def token_key(kind: str, analysis_id: int) -> str:
    """Cache key of the debounce token of one analysis."""
    return f"ecast:analysis-recompute:{kind}:{analysis_id}"


def analysis_schedule(*, kind: str, analysis_id: int, delay: int = 0) -> str:
    """Queue a (re)computation after commit; a later call supersedes this one (debounce token)."""
    from evaluation.analyses.tasks import analysis_compute_task

    token = uuid.uuid4().hex
    cache.set(token_key(kind, analysis_id), token, timeout=delay + 24 * 3600)
    ANALYSIS_MODELS[kind].objects.filter(pk=analysis_id).update(status=AnalysisStatus.PENDING, error="")
    transaction.on_commit(lambda: analysis_compute_task.apply_async(args=[kind, analysis_id, token], countdown=delay))
    return token
