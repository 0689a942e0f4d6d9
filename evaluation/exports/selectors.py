"""Reads behind the downloads: a run's rankings, a version's qrels and its per-query scores, streamed in turn order."""

from __future__ import annotations

from collections.abc import Iterator
from functools import cache

from evaluation import metrics
from evaluation.exports.formats import Ranking
from evaluation.models import (
    PermutationExperiment,
    PermutationQuery,
    PermutationResult,
    Qrel,
    QrelsVersion,
    Run,
    RunTurn,
)
from evaluation.selectors import score_rows
from evaluation.selectors.pages import turn_sort_key
from evaluation.selectors.rankings import rank_scores

TURNS_PER_READ = 50  # rankings read a few turns at a time: a deep run never sits in memory whole


def run_rankings(*, run: Run) -> Iterator[Ranking]:
    """(qid, doc ids, scores) of each ranked turn of a run, in topic/turn order; stored scores exactly (a ranking
    stored without scores gets the descending pseudo-scores evaluation uses for it)."""
    turns = sorted(
        RunTurn.objects.filter(run=run).values_list("turn_id", "turn__turn_id"), key=lambda t: turn_sort_key(t[1])
    )
    for start in range(0, len(turns), TURNS_PER_READ):
        part = dict(turns[start : start + TURNS_PER_READ])
        rows = dict(
            (tpk, (docs, scores))
            for tpk, docs, scores in RunTurn.objects.filter(run=run, turn_id__in=list(part)).values_list(
                "turn_id", "doc_ids", "scores"
            )
        )
        for tpk, qid in part.items():
            docs, scores = rows[tpk]
            docs = list(docs or [])
            scores = list(scores or [])
            if len(scores) != len(docs):
                scores = rank_scores(len(docs))
            yield qid, docs, scores


def qrels_rows(*, version: QrelsVersion) -> Iterator[tuple[str, str, int]]:
    """(qid, docno, label) of a version as evaluation reads it (the stored grades), grouped by turn."""
    yield from (
        Qrel.objects.filter(version=version)
        .order_by("turn_id", "passage_id")
        .values_list("turn__turn_id", "passage_id", "grade")
        .iterator(chunk_size=5000)
    )


@cache
def _measure_with_threshold(measure: str, threshold: int) -> str:
    return str(metrics.parse_measure(measure, rel_threshold=threshold))


def per_query_rows(*, version: QrelsVersion) -> Iterator[tuple[str, str, str, float]]:
    """(run name, qid, measure, value) of every stored score under a version; a binary measure is named with the
    relevance threshold it was computed with (``AP(rel=2)``), so ir_measures recomputes exactly that figure."""
    names = dict(Run.objects.filter(collection_id=version.collection_id).values_list("pk", "name"))
    for row in score_rows(version_ids=[version.pk]):
        name = names.get(row.run_id)
        if name is not None:
            yield name, row.turn_id, _measure_with_threshold(row.measure, row.threshold), row.value


RESULTS_PER_READ = 200


def experiment_tag(system: str, index: int, original: bool) -> str:
    """The run tag of one system on one order of a permutation experiment: ``<system>@original`` or ``@order<i>``."""
    return f"{system}@{'original' if original else f'order{index}'}"


def experiment_rankings(*, experiment: PermutationExperiment) -> Iterator[tuple[str, Ranking]]:
    """(tag, ranking) of every built-in system on every order of every conversation of an experiment, conversation
    by conversation and order by order, turns in the order's sequence: the runs the experiment scored. Imported
    runs are runs of their own (downloaded as runs) and are left out."""
    results = (
        PermutationResult.objects.filter(permutation__experiment=experiment, run__isnull=True)
        .order_by("permutation__conversation__topic_id", "permutation__path", "permutation__index", "system")
        .values_list("system", "permutation__index", "permutation__is_original", "queries")
    )
    batch: list[tuple[str, int, bool, dict[str, int]]] = []

    def flush() -> Iterator[tuple[str, Ranking]]:
        wanted = {int(q) for *_, queries in batch for q in (queries or {}).values()}
        rankings = {
            pk: (list(docs or []), list(scores or []))
            for pk, docs, scores in PermutationQuery.objects.filter(pk__in=wanted).values_list(
                "pk", "doc_ids", "scores"
            )
        }
        for system, index, original, queries in batch:
            tag = experiment_tag(system, index, original)
            for turn_id, query_pk in (queries or {}).items():
                docs, scores = rankings.get(int(query_pk), ([], []))
                if len(scores) != len(docs):
                    scores = rank_scores(len(docs))
                yield tag, (turn_id, docs, scores)

    for row in results.iterator(chunk_size=RESULTS_PER_READ):
        batch.append(row)
        if len(batch) >= RESULTS_PER_READ:
            yield from flush()
            batch = []
    if batch:
        yield from flush()
