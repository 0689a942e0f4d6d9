"""Writing stored scores: evaluate runs under a qrels version and replace their rows (one per run × turn × version,
every measure in it), the core every recompute path in ``evaluation.services`` calls."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor

from django.core.cache import cache
from django.db import connection, connections, transaction
from django.utils import timezone

from ecast.bulk import rows_insert
from ecast.models import Turn
from evaluation import metrics
from evaluation.models import QrelsVersion, TurnScores
from evaluation.selectors import qrels_dict, rankings_fetch, rankings_iter

MEASURES: list[str] = list(metrics.DEFAULT_MEASURES)


def _turn_pks(collection_id: int) -> dict[str, int]:
    return dict(Turn.objects.filter(collection_id=collection_id).values_list("turn_id", "pk"))


# Rankings decoded and evaluated together (see ``evaluate`` in ``scores_write``).
EVALUATE_BATCH = 4

_SCORE_COLUMNS = ("run", "turn", "version", "measures", "values", "threshold", "computed_at")


def scores_write(
    *,
    version: QrelsVersion,
    run_ids: Sequence[int],
    turn_pks: Sequence[int] | None = None,
    measures: Sequence[str] = MEASURES,
    progress: Callable[[int], None] | None = None,
) -> int:
    """Evaluate ``run_ids`` under ``version`` (optionally only some turns) and replace their stored scores;
    returns the number of values written (runs × judged turns × measures)."""
    # Per run for a full recompute (bounded memory); all runs at once when only a few turns changed.
    chunks: list[list[int]] = [[r] for r in run_ids] if turn_pks is None else [list(run_ids)]
    # Many runs outside a transaction (a worker's full recompute): a helper thread with its own connection fetches
    # the next run's rankings and writes the previous run's scores while this one evaluates, so the database's
    # share of the time (its own process, the other core) overlaps the evaluation instead of adding to it.
    overlapped = len(chunks) > 1 and connection.vendor == "postgresql" and not connection.in_atomic_block
    helper = ThreadPoolExecutor(max_workers=1) if overlapped else None
    try:
        # The first run's rankings (every turn: only a full recompute overlaps) are on their way meanwhile.
        next_raw = helper.submit(rankings_fetch, run_ids=chunks[0], turn_pks=None) if helper is not None else None
        collection = version.collection
        threshold = int(collection.relevance_threshold)
        qrels = qrels_dict(version=version, turn_ids=turn_pks)
        pk_of = _turn_pks(collection.pk)
        tid_of = {pk: tid for tid, pk in pk_of.items()}
        evaluator = metrics.RankingEvaluator(qrels, list(measures), rel_threshold=threshold)
        names = "\n".join(evaluator.measures)
        only = [pk_of[q] for q in qrels if q in pk_of] if turn_pks is not None else None
        depth, width = evaluator.judged_depth, len(evaluator.measures)

        def store(chunk: list[int], rows: list[tuple]) -> None:
            with transaction.atomic():
                stale = TurnScores.objects.filter(version=version, run_id__in=chunk)
                if turn_pks is not None:
                    stale = stale.filter(turn_id__in=list(turn_pks))
                stale.delete()  # no signals or cascades hang off TurnScores, so Django issues one DELETE statement
                rows_insert(TurnScores, _SCORE_COLUMNS, rows)
                transaction.on_commit(lambda: scores_stamp_touch(version_id=version.pk))

        def evaluate(chunk: list[int], raw: list[tuple]) -> list[tuple]:
            rows: list[tuple] = []
            now = timezone.now()
            seen: dict[int, set[str]] = {run_id: set() for run_id in chunk}
            # A few rankings of one run at a time, each decoded just before pytrec_eval reads it: the dicts of a
            # whole run (a million entries) fall out of the CPU caches before they are evaluated, which made
            # decoding and evaluating a run slower than this.
            docs: dict[str, dict[str, float]] = {}
            tops: dict[str, list[str]] = {}
            current = 0

            def flush() -> None:
                for qid, values in evaluator.values_ranked(docs, tops, floats=True).items():
                    seen[current].add(qid)
                    rows.append((current, pk_of[qid], version.pk, names, values, threshold, now))
                docs.clear()
                tops.clear()

            for run_id, tpk, ranking in rankings_iter(raw, judged_depth=depth):
                qid = tid_of.get(tpk)
                if qid is None:
                    continue
                if run_id != current or len(docs) >= EVALUATE_BATCH:
                    flush()
                    current = run_id
                docs[qid] = ranking.docs
                if ranking.top is not None:
                    tops[qid] = ranking.top
            flush()
            # A judged turn the run ranks nothing for scores 0 on every measure (trec_eval -c).
            for run_id in chunk:
                rows.extend(
                    (run_id, pk_of[q], version.pk, names, [0.0] * width, threshold, now)
                    for q in evaluator.qids
                    if q not in seen[run_id] and q in pk_of
                )
            return rows

        written = 0
        if helper is not None and next_raw is not None:
            stored: Future | None = None
            for i, chunk in enumerate(chunks):
                raw = next_raw.result()
                if i + 1 < len(chunks):
                    next_raw = helper.submit(rankings_fetch, run_ids=chunks[i + 1], turn_pks=None)
                rows = evaluate(chunk, raw)
                if stored is not None:
                    stored.result()
                    if progress:
                        progress(len(chunks[i - 1]))
                stored = helper.submit(store, chunk, rows)
                written += len(rows) * len(evaluator.measures)
            if stored is not None:
                stored.result()
                if progress:
                    progress(len(chunks[-1]))
            return written
        for chunk in chunks:
            rows = evaluate(chunk, rankings_fetch(run_ids=chunk, turn_pks=only))
            store(chunk, rows)
            written += len(rows) * len(evaluator.measures)
            if progress:
                progress(len(chunk))
        return written
    finally:
        if helper is not None:
            helper.submit(connections.close_all).result()
            helper.shutdown()


def scores_stamp_touch(*, version_id: int) -> None:
    """Record in the shared cache that the version's stored scores just changed (read by the live event stream
    through ``selectors.scores_stamp``, so a watching page hears of new scores without asking the database)."""
    cache.set(f"evaluation:scores-stamp:{version_id}", str(time.time_ns()), timeout=None)
