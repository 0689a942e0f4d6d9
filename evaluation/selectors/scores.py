"""Stored scores: rows in their public shape, summaries and means, the leaderboard, history snapshots, the latest
jobs and the fingerprint pages poll."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, NamedTuple

import numpy as np
from django.core.cache import cache
from django.db import connection
from django.db.models import Count, Max, QuerySet
from django.utils import timezone

from ecast.core.models import ACTIVE_STATUSES
from evaluation import metrics, stats
from evaluation.models import (
    DirtyTurn,
    EvaluationJob,
    LeaderboardSnapshot,
    QrelsVersion,
    Run,
    TurnScores,
)
from evaluation.selectors.rankings import binary_stream


def run_list_for_collection(*, collection_id: int) -> QuerySet[Run]:
    """Runs of a collection with their test set, by name."""
    return Run.objects.filter(collection_id=collection_id).select_related("test_set", "collection").order_by("name")


def qrels_version_list_for_collection(*, collection_id: int) -> QuerySet[QrelsVersion]:
    """Qrels versions of a collection, oldest first."""
    return (
        QrelsVersion.objects.filter(collection_id=collection_id).select_related("parent").order_by("created_at", "id")
    )


class ScoreRow(NamedTuple):
    """One stored value in the public shape every reader sees: (run, turn, version, measure, value)."""

    run_id: int
    turn_pk: int
    turn_id: str
    version_id: int
    measure: str
    value: float
    threshold: int
    computed_at: Any


def score_rows(
    *,
    version_ids: Iterable[int] | None = None,
    measures: Iterable[str] | None = None,
    run_ids: Iterable[int] | None = None,
    turn_pks: Iterable[int] | None = None,
) -> Iterator[ScoreRow]:
    """Stored scores one value at a time, whatever their physical layout (one row per run × turn × version holds
    all measures): the one reader of ``TurnScores``."""
    rows = TurnScores.objects.all()
    if version_ids is not None:
        rows = rows.filter(version_id__in=list(version_ids))
    if run_ids is not None:
        rows = rows.filter(run_id__in=list(run_ids))
    if turn_pks is not None:
        rows = rows.filter(turn_id__in=list(turn_pks))
    wanted = None if measures is None else set(measures)
    layouts: dict[str, list[tuple[int, str]]] = {}  # every row of a recompute shares one measure list
    fields = ("run_id", "turn_id", "turn__turn_id", "version_id", "measures", "values", "threshold", "computed_at")
    for run_id, tpk, tid, vid, names, values, threshold, at in rows.values_list(*fields).iterator(chunk_size=2000):
        slots = layouts.get(names)
        if slots is None:
            slots = layouts[names] = [(i, m) for i, m in enumerate(names.split("\n")) if wanted is None or m in wanted]
        for i, m in slots:
            yield ScoreRow(run_id, tpk, tid, vid, m, values[i], threshold, at)


def scores_exist(*, version_ids: Iterable[int], measure: str | None = None) -> bool:
    """True when any score (of ``measure``, when given) is stored under one of the versions."""
    rows = TurnScores.objects.filter(version_id__in=list(version_ids))
    if measure is None:
        return rows.exists()
    return any(measure in names.split("\n") for names in rows.values_list("measures", flat=True).distinct())


def score_count(*, version: QrelsVersion) -> int:
    """How many values (run × turn × measure) are stored under a version."""
    return sum(
        n * (names.count("\n") + 1)
        for names, n in TurnScores.objects.filter(version=version)
        .values("measures")
        .annotate(n=Count("id"))
        .values_list("measures", "n")
    )


class ScoreSummary(NamedTuple):
    """Mean, count and sample standard deviation of one run's values of one measure under a version."""

    mean: float
    n: int
    sd: float | None


def score_summary(
    *, version: QrelsVersion, measures: Sequence[str], run_ids: Iterable[int] | None = None
) -> dict[int, dict[str, ScoreSummary]]:
    """{run_id: {measure: ScoreSummary}} over the turns scored under a version: the leaderboard's read.

    The stored rows come grouped by run and measure layout, each group a (turns × measures) block that numpy slices
    by column. On PostgreSQL the server stacks each group's arrays (``array_agg``) and psycopg reads them in
    binary: on the benchmark's 20 runs × 200 turns, 20 rows instead of 4,000 and 17 ms where picking the values out
    in SQL took 140 ms. The groups stream in one at a time and only the wanted columns of each are kept, so a
    version's summary holds one run's block at a time, not every stored value (a leaderboard snapshot after a full
    recompute of 200 runs × 200 turns held 30 MB of them)."""
    ids = None if run_ids is None else [int(r) for r in run_ids]
    blocks: Iterable[tuple[int, str, Any]]
    if connection.vendor == "postgresql":
        sql = (
            f"SELECT run_id, measures, array_agg(values) FROM {connection.ops.quote_name(TurnScores._meta.db_table)}"
            " WHERE version_id = %s" + (" AND run_id = ANY(%s)" if ids is not None else "") + " GROUP BY 1, 2"
        )
        blocks = binary_stream(sql, [version.pk] + ([ids] if ids is not None else []))
    else:
        rows = TurnScores.objects.filter(version=version)
        if ids is not None:
            rows = rows.filter(run_id__in=ids)
        grouped: dict[tuple[int, str], list[list[float]]] = defaultdict(list)
        for run_id, names, values in rows.values_list("run_id", "measures", "values").iterator(chunk_size=5000):
            grouped[run_id, names].append(values)
        blocks = [(run_id, names, block) for (run_id, names), block in grouped.items()]
    columns: dict[int, dict[str, list[np.ndarray]]] = defaultdict(lambda: defaultdict(list))
    wanted = list(dict.fromkeys(measures))
    for run_id, names, block in blocks:
        table = np.asarray(block, dtype=np.float64)
        slot = {m: i for i, m in enumerate(names.split("\n"))}
        for m in wanted:
            if m in slot:
                columns[run_id][m].append(table[:, slot[m]].copy())  # a copy: the block is freed with the row
    out: dict[int, dict[str, ScoreSummary]] = defaultdict(dict)
    for run_id, by_measure in columns.items():
        for m, parts in by_measure.items():
            xs = np.concatenate(parts)
            n = len(xs)
            # fsum: a correctly rounded sum, so the mean does not depend on the order the rows arrive in.
            out[run_id][m] = ScoreSummary(math.fsum(xs) / n, n, float(np.std(xs, ddof=1)) if n > 1 else None)
    return dict(out)


def score_means(
    *, version: QrelsVersion, measures: Sequence[str], run_ids: Iterable[int] | None = None
) -> dict[int, dict[str, float]]:
    """{run_id: {measure: mean over judged turns}} from stored scores (trec_eval -c means)."""
    summary = score_summary(version=version, measures=measures, run_ids=run_ids)
    return {run_id: {m: x.mean for m, x in by_measure.items()} for run_id, by_measure in summary.items()}


def per_turn_scores(*, run: Run, version: QrelsVersion, measure: str) -> dict[str, float]:
    """{turn_id: value} of one run under one version."""
    return {r.turn_id: r.value for r in score_rows(version_ids=[version.pk], measures=[measure], run_ids=[run.pk])}


def per_turn_matrix(*, version: QrelsVersion, measure: str) -> dict[int, dict[str, float]]:
    """{run_id: {turn_id: value}} for every run under a version."""
    out: dict[int, dict[str, float]] = defaultdict(dict)
    for r in score_rows(version_ids=[version.pk], measures=[measure]):
        out[r.run_id][r.turn_id] = r.value
    return dict(out)


def leaderboard(
    *, version: QrelsVersion, measures: Sequence[str], sort_by: str = metrics.HEADLINE
) -> list[dict[str, Any]]:
    """One row per run of the collection: means of ``measures``, turns scored, std error and rank of ``sort_by``."""
    measures = list(dict.fromkeys([sort_by, *measures]))
    summary = score_summary(version=version, measures=measures)
    means = {run_id: {m: x.mean for m, x in by_measure.items()} for run_id, by_measure in summary.items()}
    spread: dict[int, dict[str, Any]] = {}
    for run_id, by_measure in summary.items():
        head = by_measure.get(sort_by)
        spread[run_id] = {"n": head.n if head else 0, "sd": head.sd if head else None}
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


# How many of a collection's latest evaluation jobs the leaderboard lists.
RECENT_JOBS = 8


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
    latest = {
        "n": score_count(version=version),
        "last": TurnScores.objects.filter(version=version).aggregate(last=Max("computed_at"))["last"],
    }
    snap = LeaderboardSnapshot.objects.filter(version=version).order_by("-created_at", "-id").first()
    running = EvaluationJob.objects.filter(collection_id=version.collection_id, status__in=ACTIVE_STATUSES)
    return {
        "version": version.pk,
        "scores": latest["n"],
        "last_computed": latest["last"].isoformat() if latest["last"] else None,
        "snapshot": snap.pk if snap else None,
        "pending_turns": pending_dirty_turns(version=version),
        "jobs": [
            {"id": j.pk, "kind": j.kind, "status": j.status, "done": j.progress_done, "total": j.progress_total}
            for j in running
        ],
        # The leaderboard's "Recent evaluation jobs" rows, so a job started there shows its progress and end live.
        "recent_jobs": [
            {
                "id": j.pk,
                "status": j.status,
                "done": j.progress_done,
                "total": j.progress_total,
                "finished": timezone.localtime(j.finished_at).strftime("%Y-%m-%d %H:%M:%S") if j.finished_at else "",
                "error": j.error,
            }
            for j in job_list(collection_id=version.collection_id, limit=RECENT_JOBS)
        ],
    }


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


def scores_stamp(*, version_id: int) -> str:
    """The shared-cache stamp of the version's last score write ("" before any): cheap enough to ask ten times a
    second from the live event stream."""
    return str(cache.get(f"evaluation:scores-stamp:{version_id}") or "")
