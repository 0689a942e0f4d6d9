"""Writing stored scores: evaluate runs under a qrels version and replace their rows (one per run × turn × version,
every measure in it), the core every recompute path in ``evaluation.services`` calls."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import NamedTuple

from django.core.cache import cache
from django.db import connection, connections, transaction
from django.utils import timezone

from ecast.core.bulk import rows_insert
from ecast.models import Turn
from evaluation import metrics
from evaluation.models import QrelsVersion, TurnScores
from evaluation.selectors import qrels_dict, rankings_fetch, rankings_iter, rankings_stream

MEASURES: list[str] = list(metrics.DEFAULT_MEASURES)


def version_measures(version: QrelsVersion) -> list[str]:
    """The measures stored under ``version``: the defaults, then those asked for on demand (kept live alike)."""
    return list(dict.fromkeys([*MEASURES, *(version.requested_measures or [])]))


# Rankings decoded and evaluated together (see ``Scorer.runs``).
EVALUATE_BATCH = 8


class Written(NamedTuple):
    """What ``scores_write`` stored: ``values`` (runs × judged turns × measures), and the ``judgments`` over
    ``judged_turns`` turns it evaluated against (the whole version's, or those of the turns it rewrote)."""

    values: int
    judgments: int
    judged_turns: int

    @classmethod
    def of(cls, values: int, qrels: metrics.Qrels) -> Written:
        return cls(values, sum(map(len, qrels.values())), sum(1 for docs in qrels.values() if docs))


_SCORE_COLUMNS = ("run", "turn", "version", "measures", "values", "threshold", "computed_at")


def _turn_pks(collection_id: int) -> dict[str, int]:
    return dict(Turn.objects.filter(collection_id=collection_id).values_list("turn_id", "pk"))


class Scorer:
    """One version's evaluator and the turn maps its score rows need. The qrels may still be loading (a future):
    rankings are decoded meanwhile, and the evaluator is built when the first of them is evaluated."""

    def __init__(
        self,
        version: QrelsVersion,
        pk_of: dict[str, int],
        qrels: metrics.Qrels | Future[dict[str, dict[str, int]]],
        measures: Sequence[str],
    ):
        self.version = version
        self.threshold = int(version.collection.relevance_threshold)
        self.pk_of = pk_of
        self.tid_of = {pk: tid for tid, pk in pk_of.items()}
        self.measures = list(measures)
        self.names = "\n".join(self.measures)
        self.judged_depth = metrics.judged_depth(self.measures)  # known before the qrels are
        self.now = timezone.now()
        self._qrels = qrels
        self._evaluator: metrics.RankingEvaluator | None = None

    @property
    def evaluator(self) -> metrics.RankingEvaluator:
        if self._evaluator is None:
            qrels = self._qrels.result() if isinstance(self._qrels, Future) else self._qrels
            self._evaluator = metrics.RankingEvaluator(qrels, self.measures, rel_threshold=self.threshold)
        return self._evaluator

    def _ready(self) -> bool:
        return self._evaluator is not None or not isinstance(self._qrels, Future) or self._qrels.done()

    def runs(self, raw: Iterable[tuple], run_ids: Sequence[int]) -> Iterator[tuple[int, list[tuple]]]:
        """(run id, its score rows) for each of ``run_ids`` (ascending), from ``rankings_fetch`` rows in run order.
        A judged turn the run ranks nothing for scores 0 on every measure (trec_eval -c), as does every judged turn
        of a run with no ranking at all."""
        tid_of, pk_of = self.tid_of, self.pk_of
        version_id, names, threshold, now = self.version.pk, self.names, self.threshold, self.now
        # A few rankings of one run at a time, each decoded just before pytrec_eval reads it: the dicts of a whole
        # run (a million entries) fall out of the CPU caches before they are evaluated, which made decoding and
        # evaluating a run slower than this. While the qrels load, rankings of the first run are decoded ahead.
        docs: dict[str, dict[str, float]] = {}
        tops: dict[str, list[str]] = {}
        rows: list[tuple] = []
        current = -1

        def flush() -> None:
            rows.extend(
                (current, pk_of[qid], version_id, names, values, threshold, now)
                for qid, values in self.evaluator.values_ranked(docs, tops, floats=True).items()
            )
            docs.clear()
            tops.clear()

        def finished(run_id: int) -> tuple[int, list[tuple]]:
            flush()
            seen = {row[1] for row in rows}
            zeros = [0.0] * len(self.measures)
            rows.extend(
                (run_id, pk, version_id, names, list(zeros), threshold, now)
                for q in self.evaluator.qids
                if (pk := pk_of.get(q)) is not None and pk not in seen
            )
            done = (run_id, rows.copy())
            rows.clear()
            return done

        pending = iter(run_ids)
        for run_id, tpk, ranking in rankings_iter(raw, judged_depth=self.judged_depth):
            qid = tid_of.get(tpk)
            if qid is None:
                continue
            if run_id != current:
                if current >= 0:
                    yield finished(current)
                for earlier in pending:  # runs without a single ranking, which come in order too
                    if earlier == run_id:
                        break
                    current = earlier
                    yield finished(earlier)
                current = run_id
            elif len(docs) >= EVALUATE_BATCH and self._ready():
                flush()
            docs[qid] = ranking.docs
            if ranking.top is not None:
                tops[qid] = ranking.top
        if current >= 0:
            yield finished(current)
        for run_id in pending:
            current = run_id
            yield finished(run_id)


def _scores_replace(
    version: QrelsVersion,
    run_ids: Sequence[int],
    rows: Iterable[tuple],
    turn_pks: Sequence[int] | None = None,
    *,
    flush: bool = True,
) -> None:
    """Replace the stored rows of ``run_ids`` (of ``turn_pks`` only, when given) with ``rows``, atomically.
    ``flush=False``: the commit does not wait for the disk, for a caller whose own next commit (a snapshot, a job's
    status) does, and with it, the WAL being written in order, for this one."""
    with transaction.atomic():
        if not flush and connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SET LOCAL synchronous_commit TO off")
        stale = TurnScores.objects.filter(version=version, run_id__in=list(run_ids))
        if turn_pks is not None:
            stale = stale.filter(turn_id__in=list(turn_pks))
        stale.delete()  # no signals or cascades hang off TurnScores, so Django issues one DELETE statement
        rows_insert(TurnScores, _SCORE_COLUMNS, rows)
        transaction.on_commit(lambda: scores_stamp_touch(version_id=version.pk))


def scores_write(
    *,
    version: QrelsVersion,
    run_ids: Sequence[int],
    turn_pks: Sequence[int] | None = None,
    measures: Sequence[str] | None = None,
    progress: Callable[[int], None] | None = None,
) -> Written:
    """Evaluate ``run_ids`` under ``version`` (optionally only some turns) and replace their stored scores
    (``measures``: the version's own, ``version_measures``, unless given)."""
    if measures is None:
        measures = version_measures(version)
    run_ids = sorted({int(r) for r in run_ids})  # the order rankings come in
    if turn_pks is None and len(run_ids) > 1 and connection.vendor == "postgresql" and not connection.in_atomic_block:
        return _scores_write_streamed(version=version, run_ids=run_ids, measures=measures, progress=progress)
    qrels = qrels_dict(version=version, turn_ids=turn_pks)
    scorer = Scorer(version, _turn_pks(version.collection_id), qrels, measures)
    only = None if turn_pks is None else [scorer.pk_of[q] for q in qrels if q in scorer.pk_of]
    # Per run for a full recompute (bounded memory); all runs at once when only a few turns changed.
    chunks = [[r] for r in run_ids] if turn_pks is None else [run_ids]
    written = 0
    for chunk in chunks:
        # A whole run's rankings stream (they are all read before this connection writes the scores below).
        raw = rankings_fetch(run_ids=chunk, turn_pks=only, stream=turn_pks is None)
        rows = [row for _, part in scorer.runs(raw, chunk) for row in part]
        _scores_replace(version, chunk, rows, turn_pks)
        written += len(rows) * len(scorer.measures)
        if progress:
            progress(len(chunk))
    return Written.of(written, qrels)


def _scores_write_streamed(
    *, version: QrelsVersion, run_ids: list[int], measures: Sequence[str], progress: Callable[[int], None] | None
) -> Written:
    """A full recompute of several runs on PostgreSQL outside a transaction (a worker's), in one transaction. The
    rankings stream in run order over a connection of their own while this thread evaluates them, and each run's
    rows go straight into one COPY on this thread's connection: the server reads ahead and writes behind on the
    other core, and no run is held whole in memory. A helper thread with its own connection loads the qrels
    meanwhile and reports progress.

    Measured before settling on this: a helper thread that fetched each run's rankings, or wrote each run's rows,
    while this one evaluated made the whole 10-15 % slower than doing neither. It needs the GIL after every
    network read, and pytrec_eval holds it for a millisecond at a time."""
    helper = ThreadPoolExecutor(max_workers=1)
    counted: list[int] = []
    try:
        qrels = helper.submit(qrels_dict, version=version)
        pk_of = _turn_pks(version.collection_id)
        # Built before the COPY starts: nothing may ask this connection anything until it ends.
        scorer = Scorer(version, pk_of, qrels, measures)
        with rankings_stream(run_ids=run_ids, version_id=version.pk) as raw:

            def rows() -> Iterator[tuple]:
                # Pulled by the COPY once the stale rows are deleted: that deletion and the first rankings' decoding
                # overlap the qrels load.
                for _, run_rows in scorer.runs(raw, run_ids):
                    counted.append(len(run_rows))
                    if progress:
                        helper.submit(progress, 1)
                    yield from run_rows

            _scores_replace(version, run_ids, rows(), flush=False)
        return Written.of(len(scorer.measures) * sum(counted), qrels.result())
    finally:
        helper.submit(connections.close_all).result()
        helper.shutdown()


def scores_stamp_touch(*, version_id: int) -> None:
    """Record in the shared cache that the version's stored scores just changed (read by the live event stream
    through ``selectors.scores_stamp``, so a watching page hears of new scores without asking the database)."""
    cache.set(f"evaluation:scores-stamp:{version_id}", str(time.time_ns()), timeout=None)
