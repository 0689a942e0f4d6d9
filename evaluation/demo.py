"""Demo scores: evaluate every run of the "CAsT 2020 demo" collection under each of its qrels versions."""

from __future__ import annotations

import sys
from typing import Any, TextIO

from ecast.models import Collection
from evaluation import selectors, services
from evaluation.models import DirtyTurn, EvaluationJob, LeaderboardSnapshot, QrelsVersion, Run

DEMO_COLLECTION = "CAsT 2020 demo"


def load(stdout: TextIO | Any = None) -> None:
    """Idempotent: (re)compute stored scores and take a leaderboard snapshot when none exists yet."""
    out = stdout or sys.stdout
    collection = Collection.objects.filter(name=DEMO_COLLECTION).first()
    if collection is None:
        out.write(f"evaluation demo: no collection {DEMO_COLLECTION!r}; skipped\n")
        return
    runs = Run.objects.filter(collection=collection).count()
    for version in QrelsVersion.objects.filter(collection=collection).select_related("collection"):
        expected = runs * version.qrels.values("turn_id").distinct().count() * len(services.MEASURES)
        have = selectors.score_count(version=version)
        if have == expected and LeaderboardSnapshot.objects.filter(version=version).exists():
            out.write(f"evaluation demo: scores for {version.name!r} already present\n")
            continue
        # Turns queued before this full compute are covered by it.
        stale_dirty = list(DirtyTurn.objects.filter(version=version).values_list("pk", flat=True))
        written = services.scores_compute_for_version(version=version)
        DirtyTurn.objects.filter(pk__in=stale_dirty).delete()
        out.write(f"evaluation demo: {written} scores for {runs} run(s) under {version.name!r}\n")
    # Without a running worker (the demo may load before one starts) the import's queued run evaluations would
    # show as pending; they are small, so run them here. A worker picking them up later finds them done.
    for job in EvaluationJob.objects.filter(collection=collection, status=EvaluationJob.Status.QUEUED):
        services.evaluation_job_execute(job_id=job.pk)
