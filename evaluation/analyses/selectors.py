"""Reads for the pivot / meta-evaluation / calibration analyses (plain dicts for the algorithm modules)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from django.db.models import QuerySet

from ecast.models import Collection, Passage
from evaluation.models import (
    BudgetSimulation,
    CalibrationReport,
    MetaEvaluation,
    PivotAnalysis,
    Qrel,
    QrelsVersion,
    Run,
    RunTurn,
    StochasticSystem,
)

ANALYSIS_MODELS: dict[str, Any] = {
    "pivots": PivotAnalysis,
    "metaeval": MetaEvaluation,
    "calibration": CalibrationReport,
    "stochastic": StochasticSystem,
    "budget": BudgetSimulation,
}


def qrels_for_version(*, version: QrelsVersion | None) -> dict[str, dict[str, int]]:
    """{turn_id: {passage_id: grade}} of one qrels version (a derived version holds full copies)."""
    if version is None:
        raise ValueError("the analysis' qrels version no longer exists")
    out: dict[str, dict[str, int]] = {}
    rows = Qrel.objects.filter(version=version).values_list("turn__turn_id", "passage_id", "grade")
    for turn_id, pid, grade in rows.iterator(chunk_size=5000):
        out.setdefault(turn_id, {})[pid] = int(grade)
    return out


def qrels_count(*, version: QrelsVersion | None) -> int:
    """Number of judgments in a version (0 for none): a cheap 'has it changed since' marker."""
    return Qrel.objects.filter(version=version).count() if version is not None else 0


def run_as_dict(*, run: Run) -> dict[str, dict[str, float]]:
    """{turn_id: {doc: score}}; runs without scores get decreasing rank-based scores."""
    out: dict[str, dict[str, float]] = {}
    for turn_id, doc_ids, scores in RunTurn.objects.filter(run=run).values_list("turn__turn_id", "doc_ids", "scores"):
        if scores and len(scores) == len(doc_ids):
            out[turn_id] = {d: float(s) for d, s in zip(doc_ids, scores, strict=True)}
        else:
            out[turn_id] = {d: float(len(doc_ids) - i) for i, d in enumerate(doc_ids)}
    return out


def runs_for_collection(*, collection: Collection) -> QuerySet[Run]:
    """Runs of a collection with their test sets, by name."""
    return Run.objects.filter(collection=collection).select_related("test_set").order_by("name")


def qrels_versions_for_collection(*, collection: Collection) -> QuerySet[QrelsVersion]:
    """Qrels versions of a collection, oldest first."""
    return QrelsVersion.objects.filter(collection=collection).order_by("created_at")


def system_key(run: Run) -> str:
    """The system a run belongs to across paraphrase test sets: its name without the test set's name.

    ``bm25_R1m`` on test set ``R1m`` → ``bm25``; a run without a test set is its own system.
    """
    if run.test_set_id is None or run.test_set is None:
        return run.name
    pattern = re.compile(re.escape(run.test_set.name), re.IGNORECASE)
    stripped = pattern.sub("", run.name).strip(" _-.:/")
    return stripped or run.name


def doc_lengths(*, passage_ids: Iterable[str]) -> dict[str, int]:
    """Word counts of the passages the store has text for."""
    ids = list(set(passage_ids))
    out: dict[str, int] = {}
    for start in range(0, len(ids), 5000):
        for pid, text in Passage.objects.filter(passage_id__in=ids[start : start + 5000]).values_list(
            "passage_id", "text"
        ):
            out[pid] = len(text.split())
    return out


def analysis_list(*, kind: str, collection: Collection | None = None) -> QuerySet:
    """Analyses of one kind, newest first."""
    qs = ANALYSIS_MODELS[kind].objects.select_related("collection", "qrels_version", "created_by")
    if collection is not None:
        qs = qs.filter(collection=collection)
    return qs.order_by("-created_at")


def analyses_for_version(*, version_id: int) -> list[tuple[str, int]]:
    """(kind, id) of every auto-recomputed analysis built on this qrels version."""
    out: list[tuple[str, int]] = []
    for kind, model in ANALYSIS_MODELS.items():
        if kind == "metaeval":
            ids = model.objects.filter(
                qrels_version_id=version_id, auto_recompute=True, source=MetaEvaluation.Source.APP
            ).values_list("id", flat=True)
        else:
            ids = model.objects.filter(qrels_version_id=version_id, auto_recompute=True).values_list("id", flat=True)
        out.extend((kind, i) for i in ids)
    # Pivot analyses across qrels versions depend on every version they list.
    for pa in PivotAnalysis.objects.filter(auto_recompute=True).exclude(qrels_version_id=version_id):
        if version_id in (pa.parameters or {}).get("qrels_version_ids", []):
            out.append(("pivots", pa.id))
    return out


__all__ = [
    "ANALYSIS_MODELS",
    "CalibrationReport",
    "analyses_for_version",
    "analysis_list",
    "doc_lengths",
    "qrels_count",
    "qrels_for_version",
    "qrels_versions_for_collection",
    "run_as_dict",
    "runs_for_collection",
    "system_key",
]
