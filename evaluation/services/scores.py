"""Stored scores of runs under qrels versions (full, per run, per changed turn) and the leaderboard snapshots of the
history page."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from django.db.models import Count

from evaluation import metrics
from evaluation.models import (
    LeaderboardSnapshot,
    Qrel,
    QrelsVersion,
    Run,
)
from evaluation.scoring import Written, scores_write
from evaluation.selectors import score_means, scores_exist


def scores_compute_for_run(*, run: Run, measures: Sequence[str] | None = None) -> int:
    """Evaluate one run under every qrels version of its collection; returns rows written."""
    return sum(
        scores_write(version=v, run_ids=[run.pk], measures=measures).values
        for v in QrelsVersion.objects.filter(collection_id=run.collection_id).select_related("collection")
    )


def scores_compute_for_version(
    *, version: QrelsVersion, measures: Sequence[str] | None = None, progress: Callable[[int], None] | None = None
) -> int:
    """Evaluate every run of the version's collection under it (full recompute of one version)."""
    run_ids = list(Run.objects.filter(collection_id=version.collection_id).values_list("pk", flat=True))
    written = scores_write(version=version, run_ids=run_ids, measures=measures, progress=progress)
    leaderboard_snapshot_create(version=version, trigger="full recompute", counts=written)
    return written.values


def scores_recompute_turns(
    *, version: QrelsVersion, turn_pks: Sequence[int], measures: Sequence[str] | None = None
) -> int:
    """Rewrite the scores of the given turns for every run (turns no longer judged lose their rows)."""
    run_ids = list(Run.objects.filter(collection_id=version.collection_id).values_list("pk", flat=True))
    return scores_write(version=version, run_ids=run_ids, turn_pks=list(turn_pks), measures=measures).values


def version_needs_full_compute(*, version: QrelsVersion) -> bool:
    """True when runs exist but none has a score under this version (e.g. a freshly derived copy)."""
    has_runs = Run.objects.filter(collection_id=version.collection_id).exists()
    return has_runs and not scores_exist(version_ids=[version.pk])


def leaderboard_snapshot_create(
    *, version: QrelsVersion, trigger: str = "", measure: str = metrics.HEADLINE, counts: Written | None = None
) -> LeaderboardSnapshot:
    """Store the current means and ranks of every run under ``version`` for the history page. ``counts``: what a
    full write of the version's scores just evaluated against, so its judgments need not be counted again."""
    threshold = int(version.collection.relevance_threshold)
    means = score_means(version=version, measures=[measure])
    names = dict(Run.objects.filter(pk__in=list(means)).values_list("pk", "name"))
    rows = [(run_id, names[run_id], m[measure]) for run_id, m in means.items() if run_id in names and measure in m]
    ordered = sorted(rows, key=lambda r: (-r[2], r[1]))
    entries: list[dict[str, Any]] = []
    for i, (run_id, name, mean) in enumerate(ordered):
        # Competition ranking: equal means share the better rank.
        rank = entries[-1]["rank"] if entries and abs(entries[-1]["mean"] - mean) < 1e-12 else i + 1
        entries.append({"run_id": run_id, "run": name, "mean": float(mean), "rank": rank})
    if counts is not None:
        judgments, judged_turns = counts.judgments, counts.judged_turns
    else:
        counted = Qrel.objects.filter(version=version).aggregate(n=Count("id"), turns=Count("turn_id", distinct=True))
        judgments, judged_turns = counted["n"] or 0, counted["turns"] or 0
    snap = LeaderboardSnapshot(
        version=version,
        measure=measure,
        threshold=threshold,
        judged_turns=judged_turns,
        qrels_count=judgments,
        entries=entries,
        trigger=trigger[:200],
    )
    snap.full_clean()
    snap.save()
    return snap
