"""Reads for runs, qrels versions and stored scores (the leaderboard, per-topic views, history)."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

from django.core.cache import cache
from django.db.models import Avg, Count, Max, QuerySet, StdDev

from ecast.models import Turn
from evaluation import metrics, stats
from evaluation.models import (
    DirtyTurn,
    EvaluationJob,
    LeaderboardSnapshot,
    Qrel,
    QrelsVersion,
    Run,
    RunTurn,
    Score,
)


def qrels_dict(*, version: QrelsVersion, turn_ids: Iterable[int] | None = None) -> dict[str, dict[str, int]]:
    """The version's judgments as {turn_id string: {passage_id: grade}} (optionally only some Turn pks)."""
    rows = Qrel.objects.filter(version=version)
    if turn_ids is not None:
        rows = rows.filter(turn_id__in=list(turn_ids))
    out: dict[str, dict[str, int]] = defaultdict(dict)
    for tid, pid, grade in rows.values_list("turn__turn_id", "passage_id", "grade").iterator(chunk_size=20000):
        out[tid][pid] = int(grade)
    return dict(out)


def ranking_scores(doc_ids: list[str], scores: list[Any] | None) -> dict[str, float]:
    # Stored scores are the run's own; when a run lacks them, descending pseudo-scores keep the stored rank order.
    # Building from the reversed lists keeps the first occurrence of a duplicated doc (C-speed, no Python loop).
    if not scores or len(scores) != len(doc_ids):
        scores = [float(len(doc_ids) - i) for i in range(len(doc_ids))]
    elif set(map(type, scores)) != {float}:
        scores = [float(s) for s in scores]
    return dict(zip(reversed(doc_ids), reversed(scores), strict=True))


def run_dict(*, run: Run, turn_ids: Iterable[int] | None = None) -> dict[str, dict[str, float]]:
    """The run's rankings as {turn_id string: {doc_id: score}} (optionally only some Turn pks)."""
    rows = RunTurn.objects.filter(run=run)
    if turn_ids is not None:
        rows = rows.filter(turn_id__in=list(turn_ids))
    return {
        tid: ranking_scores(list(doc_ids or []), list(scores or []))
        for tid, doc_ids, scores in rows.values_list("turn__turn_id", "doc_ids", "scores").iterator(chunk_size=200)
    }


def run_list_for_collection(*, collection_id: int) -> QuerySet[Run]:
    """Runs of a collection with their test set, by name."""
    return Run.objects.filter(collection_id=collection_id).select_related("test_set", "collection").order_by("name")


def qrels_version_list_for_collection(*, collection_id: int) -> QuerySet[QrelsVersion]:
    """Qrels versions of a collection, oldest first."""
    return (
        QrelsVersion.objects.filter(collection_id=collection_id).select_related("parent").order_by("created_at", "id")
    )


# --- stored scores -------------------------------------------------------------------------------------------


def score_means(
    *, version: QrelsVersion, measures: Sequence[str], run_ids: Iterable[int] | None = None
) -> dict[int, dict[str, float]]:
    """{run_id: {measure: mean over judged turns}} from stored scores (trec_eval -c means)."""
    rows = Score.objects.filter(version=version, measure__in=list(measures))
    if run_ids is not None:
        rows = rows.filter(run_id__in=list(run_ids))
    out: dict[int, dict[str, float]] = defaultdict(dict)
    for r in rows.values("run_id", "measure").annotate(mean=Avg("value")):
        out[r["run_id"]][r["measure"]] = float(r["mean"] or 0.0)
    return dict(out)


def per_turn_scores(*, run: Run, version: QrelsVersion, measure: str) -> dict[str, float]:
    """{turn_id: value} of one run under one version."""
    return dict(Score.objects.filter(run=run, version=version, measure=measure).values_list("turn__turn_id", "value"))


def per_turn_matrix(*, version: QrelsVersion, measure: str) -> dict[int, dict[str, float]]:
    """{run_id: {turn_id: value}} for every run under a version."""
    out: dict[int, dict[str, float]] = defaultdict(dict)
    for run_id, tid, value in Score.objects.filter(version=version, measure=measure).values_list(
        "run_id", "turn__turn_id", "value"
    ):
        out[run_id][tid] = value
    return dict(out)


def leaderboard(
    *, version: QrelsVersion, measures: Sequence[str], sort_by: str = metrics.HEADLINE
) -> list[dict[str, Any]]:
    """One row per run of the collection: means of ``measures``, turns scored, std error and rank of ``sort_by``."""
    measures = list(dict.fromkeys([sort_by, *measures]))
    means = score_means(version=version, measures=measures)
    spread: dict[int, dict[str, Any]] = {
        r["run_id"]: dict(r)
        for r in Score.objects.filter(version=version, measure=sort_by)
        .values("run_id")
        .annotate(n=Count("id"), sd=StdDev("value", sample=True))
    }
    runs = list(run_list_for_collection(collection_id=version.collection_id))
    ranks = stats.ranks({str(r.pk): means[r.pk][sort_by] for r in runs if sort_by in means.get(r.pk, {})})
    rows = []
    for run in runs:
        m = means.get(run.pk, {})
        n = spread.get(run.pk, {}).get("n", 0)
        sd = spread.get(run.pk, {}).get("sd")
        rows.append(
            {
                "run_id": run.pk,
                "run": run.name,
                "test_set": run.test_set.name if run.test_set is not None else "",
                "turns": n,
                "means": {k: m.get(k) for k in measures},
                "headline": m.get(sort_by),
                "stderr": (float(sd) / math.sqrt(n)) if sd is not None and n > 1 else 0.0,
                "rank": ranks.get(str(run.pk)),
                "evaluated": bool(m),
            }
        )
    rows.sort(key=lambda r: (r["rank"] is None, r["rank"] or 0, r["run"]))
    return rows


def snapshot_history(*, version: QrelsVersion, limit: int = 200) -> list[LeaderboardSnapshot]:
    """The most recent snapshots of a version, oldest first."""
    snaps = list(LeaderboardSnapshot.objects.filter(version=version).order_by("-created_at", "-id")[:limit])
    return snaps[::-1]


def job_list(*, collection_id: int | None = None, limit: int = 20) -> list[EvaluationJob]:
    """Latest evaluation jobs (optionally of one collection)."""
    qs = EvaluationJob.objects.select_related("run", "version", "collection")
    if collection_id is not None:
        qs = qs.filter(collection_id=collection_id)
    return list(qs.order_by("-created_at", "-id")[:limit])


def pending_dirty_turns(*, version: QrelsVersion) -> int:
    """How many re-judged turns still wait for the debounced recompute."""
    return DirtyTurn.objects.filter(version=version).count()


def status_for_version(*, version: QrelsVersion) -> dict[str, Any]:
    """A cheap fingerprint of a version's scores for polling: pages reload their data when it changes."""
    latest = Score.objects.filter(version=version).aggregate(last=Max("computed_at"), n=Count("id"))
    snap = LeaderboardSnapshot.objects.filter(version=version).order_by("-created_at", "-id").first()
    running = EvaluationJob.objects.filter(
        collection_id=version.collection_id, status__in=[EvaluationJob.Status.PENDING, EvaluationJob.Status.RUNNING]
    )
    return {
        "version": version.pk,
        "scores": latest["n"],
        "last_computed": latest["last"].isoformat() if latest["last"] else None,
        "snapshot": snap.pk if snap else None,
        "pending_turns": pending_dirty_turns(version=version),
        "jobs": [{"id": j.pk, "kind": j.kind, "status": j.status, "done": j.done, "total": j.total} for j in running],
    }


def rankings_top(*, run: Run, depth: int, turn_ids: Iterable[str] | None = None) -> dict[str, list[str]]:
    """{turn_id: top-``depth`` doc ids} of a run, in stored rank order."""
    rows = RunTurn.objects.filter(run=run)
    if turn_ids is not None:
        rows = rows.filter(turn__turn_id__in=list(turn_ids))
    return {tid: list(docs or [])[:depth] for tid, docs in rows.values_list("turn__turn_id", "doc_ids")}


# The measures the leaderboard shows beside the one it is sorted by.
SHOWN = ["nDCG@3", "nDCG@10", "AP", "R@1000", "Bpref", "infAP", "RR", "P@3", "Judged@3"]


def leaderboard_data(*, version: QrelsVersion, measure: str) -> dict[str, Any]:
    """Everything the leaderboard shows, as JSON-ready data (page, JSON download and the polling endpoint)."""
    rows = leaderboard(version=version, measures=SHOWN, sort_by=measure)
    return {
        "collection": version.collection.name,
        "version": {"id": version.pk, "name": version.name},
        "measure": measure,
        "measures": list(dict.fromkeys([measure, *SHOWN])),
        "threshold": int(version.collection.relevance_threshold),
        "missing_turns": "judged turns a run did not rank score 0 (trec_eval -c)",
        "status": status_for_version(version=version),
        "rows": rows,
    }


def turn_qrels(turn: Turn, version_name: str, min_grade: int) -> dict[str, int]:
    """{passage_id: grade} of a turn's qrels in the named version, graded at least ``min_grade``."""
    rows = Qrel.objects.filter(turn=turn, version__name=version_name, grade__gte=min_grade)
    return {pid: int(grade) for pid, grade in rows.values_list("passage_id", "grade")}


def scores_stamp(*, version_id: int) -> str:
    """The shared-cache stamp of the version's last score write ("" before any): cheap enough to ask ten times a
    second from the live event stream."""
    return str(cache.get(f"evaluation:scores-stamp:{version_id}") or "")
