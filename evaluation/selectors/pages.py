"""What the evaluation pages show: the collection and version a page is about, run lists, and the rows of the
leaderboard, run, comparison and history pages and of their downloads."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from ecast.models import Collection, TestSet
from evaluation import metrics, significance, stats
from evaluation.models import EvaluationJob, Qrel, QrelsVersion, Run
from evaluation.selectors.scores import (
    per_turn_matrix,
    per_turn_scores,
    run_list_for_collection,
    score_means,
    score_rows,
    snapshot_history,
)


def collection_list(*, by_name: bool = True) -> QuerySet[Collection]:
    """Every collection, by name (else in the model's order: year, name)."""
    return Collection.objects.order_by("name") if by_name else Collection.objects.all()


def collection_list_with_turns() -> QuerySet[Collection]:
    """Collections a run can rank (those with turns; the TREC DD demo table has none), by name."""
    return Collection.objects.filter(turns__isnull=False).distinct().order_by("name")


def test_set_list(*, collection_id: int | None = None) -> QuerySet[TestSet]:
    """Paraphrase test sets (optionally of one collection) by kind and number; across collections, by collection."""
    if collection_id is None:
        return TestSet.objects.select_related("collection").order_by("collection__name", "kind", "index", "name")
    return TestSet.objects.filter(collection_id=collection_id).order_by("kind", "index", "name")


def collection_default() -> Collection | None:
    """The collection a page shows when none is asked for: the first, by name, that has a qrels version."""
    return Collection.objects.filter(qrels_versions__isnull=False).order_by("name").first()


def qrels_version_get(*, version_id: int) -> QrelsVersion | None:
    """A qrels version with its collection."""
    return QrelsVersion.objects.select_related("collection").filter(pk=version_id).first()


def qrels_version_default(*, collection: Collection) -> QrelsVersion | None:
    """The version of a collection a page shows when none is asked for: the one judged most recently in ecast, else
    the oldest ("original")."""
    # The version that gained a judgment most recently is the one a person watching the page expects to move.
    judged = (
        Qrel.objects.filter(version__collection=collection, source=Qrel.Source.ASSESSED)
        .order_by("-created_at", "-id")
        .values_list("version_id", flat=True)
        .first()
    )
    versions = QrelsVersion.objects.select_related("collection").filter(collection=collection)
    version = versions.filter(pk=judged).first() if judged else None
    return version or versions.order_by("created_at", "id").first()


def run_get(*, run_id: int) -> Run | None:
    """A run with its collection and test set."""
    return Run.objects.select_related("collection", "test_set").filter(pk=run_id).first()


def run_list(*, collection_id: int | None = None) -> QuerySet[Run]:
    """Runs (optionally of one collection) with their collection and test set, by collection and name."""
    runs = Run.objects.select_related("collection", "test_set").order_by("collection__name", "name")
    return runs if collection_id is None else runs.filter(collection_id=collection_id)


def run_job_list(*, run: Run, limit: int = 5) -> QuerySet[EvaluationJob]:
    """A run's latest evaluation jobs."""
    return EvaluationJob.objects.filter(run=run).order_by("-created_at")[:limit]


def leaderboard_table(data: dict[str, Any]) -> list[tuple[dict[str, Any], list[float | None]]]:
    """The leaderboard page's rows: each run's row with its means in the order of ``data["measures"]``."""
    return [(r, [r["means"].get(m) for m in data["measures"]]) for r in data["rows"]]


def leaderboard_csv(data: dict[str, Any]) -> tuple[list[str], list[list[Any]], list[str]]:
    """Header, rows and preamble of the leaderboard's CSV download."""
    header = ["rank", "run", "test_set", "turns", *data["measures"], f"stderr_{data['measure']}"]
    rows = [
        [r["rank"], r["run"], r["test_set"], r["turns"], *[r["means"].get(m) for m in data["measures"]], r["stderr"]]
        for r in data["rows"]
    ]
    preamble = [
        f"collection={data['collection']}",
        f"qrels_version={data['version']['name']}",
        f"relevance_threshold={data['threshold']}",
        "measures are ir_measures strings; binary ones use the threshold",
        data["missing_turns"],
    ]
    return header, rows, preamble


def run_score_table(*, run: Run) -> list[tuple[str, str, str, float, int]]:
    """Every stored score of a run as (qrels version name, turn id, measure, value, threshold), sorted."""
    version_names = dict(QrelsVersion.objects.filter(collection_id=run.collection_id).values_list("pk", "name"))
    stored = sorted((r.version_id, r.turn_id, r.measure, r.value, r.threshold) for r in score_rows(run_ids=[run.pk]))
    return [(version_names.get(v, ""), t, m, x, th) for v, t, m, x, th in stored]


def turn_sort_key(turn_id: str) -> tuple:
    """Turn ids in topic then turn order, numerically where they are numbers ("2_10" after "2_9")."""
    head, _, tail = turn_id.partition("_")
    return (int(head) if head.isdigit() else 0, head, int(tail) if tail.isdigit() else 0, tail)


def run_turn_table(per_turn: dict[str, float]) -> dict[str, Any]:
    """A run's per-turn scores in turn order, per topic (topic, mean, turns), and their mean."""
    topics: dict[str, list[float]] = {}
    for tid, value in per_turn.items():
        topics.setdefault(tid.split("_")[0], []).append(value)
    return {
        "per_turn": sorted(per_turn.items(), key=lambda kv: turn_sort_key(kv[0])),
        "topics": sorted(
            ((t, sum(v) / len(v), len(v)) for t, v in topics.items()), key=lambda row: turn_sort_key(str(row[0]))
        ),
        "mean": metrics.mean(per_turn),
    }


def run_pair_compare(*, a: Run, b: Run, version: QrelsVersion, measure: str) -> dict[str, Any]:
    """Two runs' per-turn scores under one version (``a``, ``b``), the turns both score (``common``) and the paired
    comparison (``result``)."""
    sa = per_turn_scores(run=a, version=version, measure=measure)
    sb = per_turn_scores(run=b, version=version, measure=measure)
    return {"a": sa, "b": sb, "common": sorted(set(sa) & set(sb)), "result": stats.paired_compare(sa, sb).as_dict()}


def baseline_comparison(
    *,
    version: QrelsVersion,
    baseline: Run,
    measures: list[str],
    test: str = significance.DEFAULT_TEST,
    correction: str = significance.DEFAULT_CORRECTION,
    alpha: float = significance.DEFAULT_ALPHA,
) -> dict[str, Any]:
    """Every other run of the version's collection against ``baseline`` on ``measures``, from the stored per-turn
    scores the leaderboard reads; a measure the baseline has no stored score for is refused (``measures``)."""
    if baseline.collection_id != version.collection_id:
        raise significance.SignificanceError("baseline", f"run {baseline.pk} is not a run of {version.collection}")
    names = {r.pk: r.name for r in run_list_for_collection(collection_id=version.collection_id)}
    runs: dict[str, dict[str, dict[str, float]]] = {name: {} for name in names.values()}
    for measure in measures:
        for run_id, turns in per_turn_matrix(version=version, measure=measure).items():
            runs[names[run_id]][measure] = turns
        if not runs[baseline.name].get(measure):
            raise significance.SignificanceError(
                "measures", f"no stored {measure} scores for {baseline.name} under {version.name}"
            )
    rows = significance.against_baseline(
        runs, baseline.name, measures=measures, test=test, correction=correction, alpha=alpha
    )
    return {
        "version": version.name,
        "baseline": baseline.name,
        "measures": measures,
        "test": test,
        "correction": correction,
        "alpha": alpha,
        "resamples": significance.RESAMPLES,
        "seed": significance.SEED,
        "threshold": int(version.collection.relevance_threshold),
        "rows": [r.as_dict() for r in rows],
    }


def history_data(version: QrelsVersion, against: QrelsVersion | None, measure: str) -> dict[str, Any]:
    """Snapshots of one version, and (optionally) ranking stability against another version."""
    snaps = snapshot_history(version=version)
    stability = None
    if against is not None:
        ma = {str(r): v[measure] for r, v in score_means(version=version, measures=[measure]).items()}
        mb = {str(r): v[measure] for r, v in score_means(version=against, measures=[measure]).items()}
        names = dict(Run.objects.filter(pk__in=[int(x) for x in ma]).values_list("pk", "name"))
        res = stats.kendall_tau(
            {names[int(k)]: v for k, v in ma.items()}, {names.get(int(k), k): v for k, v in mb.items()}
        )
        stability = {"from": version.name, "to": against.name, "measure": measure, **res}
    return {
        "version": version.name,
        "threshold": int(version.collection.relevance_threshold),
        "snapshots": [
            {
                "id": s.pk,
                "at": s.created_at.isoformat(),
                "trigger": s.trigger,
                "measure": s.measure,
                "judged_turns": s.judged_turns,
                "qrels": s.qrels_count,
                "entries": s.entries,
            }
            for s in snaps
        ],
        "stability": stability,
    }
