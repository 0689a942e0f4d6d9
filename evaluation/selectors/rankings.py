"""Qrels and rankings as the scorers read them: dicts for ir_measures, and the binary PostgreSQL reads and streams
of a run set's rankings."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from itertools import islice
from typing import Any, NamedTuple

import numpy as np
import psycopg
from django.db import connection

from ecast.models import Turn
from evaluation import metrics
from evaluation.models import (
    Qrel,
    QrelsVersion,
    Run,
    RunTurn,
)


def binary_rows(sql: str, params: Sequence[Any]) -> list[tuple]:
    """The rows of one query on this thread's PostgreSQL connection, read in binary: arrays and blobs arrive as
    psycopg's C loaders build them, not as text for this process to parse."""
    connection.ensure_connection()
    with psycopg.Cursor(connection.connection) as cursor:
        cursor.execute(sql, params, binary=True)
        return cursor.fetchall()


def binary_stream(sql: str, params: Sequence[Any]) -> Iterator[tuple]:
    """``binary_rows``, one row at a time as the server sends them: for a read whose rows are large and used one
    by one, so no more than one of them is held. Nothing else may use this thread's connection until it ends."""
    connection.ensure_connection()
    with psycopg.Cursor(connection.connection) as cursor:
        yield from cursor.stream(sql, params, binary=True)


def qrels_dict(*, version: QrelsVersion, turn_ids: Iterable[int] | None = None) -> dict[str, dict[str, int]]:
    """The version's judgments as {turn_id string: {passage_id: grade}} (optionally only some Turn pks)."""
    pks = None if turn_ids is None else [int(t) for t in turn_ids]
    if pks == []:
        return {}
    # Turn pks mapped to ids once, instead of a join repeating each turn id on every judgment row.
    turns = Turn.objects.filter(collection_id=version.collection_id)
    if pks is not None:
        turns = turns.filter(pk__in=pks)
    turn_of = dict(turns.values_list("pk", "turn_id"))
    if connection.vendor == "postgresql":
        # One row per turn with its passages and grades as two arrays, read in binary: the server groups (its own
        # process) and psycopg's C loaders build the lists, instead of 100k rows through the ORM in this process.
        table = connection.ops.quote_name(Qrel._meta.db_table)
        sql = f"SELECT turn_id, array_agg(passage_id), array_agg(grade) FROM {table} WHERE version_id = %s"
        params: list[Any] = [version.pk]
        if pks is not None:
            sql += " AND turn_id = ANY(%s)"
            params.append(pks)
        return {
            turn_of[tpk]: dict(zip(pids, grades, strict=True))
            for tpk, pids, grades in binary_rows(sql + " GROUP BY turn_id", params)
        }
    rows = Qrel.objects.filter(version=version)
    if pks is not None:
        rows = rows.filter(turn_id__in=pks)
    out: dict[str, dict[str, int]] = defaultdict(dict)
    for tpk, pid, grade in rows.values_list("turn_id", "passage_id", "grade").iterator(chunk_size=20000):
        out[turn_of[tpk]][pid] = grade
    return dict(out)


def ranking_scores(doc_ids: list[str], scores: list[Any] | None) -> dict[str, float]:
    # Stored scores are the run's own; when a run lacks them, descending pseudo-scores keep the stored rank order.
    # Building from the reversed lists keeps the first occurrence of a duplicated doc (C-speed, no Python loop).
    if not scores or len(scores) != len(doc_ids):
        scores = rank_scores(len(doc_ids))
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


class Ranking(NamedTuple):
    """One stored ranking ready for pytrec_eval: {doc: score}, and its top ``depth`` in Judged@k order (None when
    not asked for, or when the stored order cannot give it cheaply and it must be cut from the dict)."""

    docs: dict[str, float]
    top: list[str] | None


# Rankings come run by run: a recompute evaluates, and writes, one run at a time (the unique (run, turn) index
# holds them in this order).
RANKINGS_ORDER = " ORDER BY run_id, turn_id"
# What ``rankings_iter`` reads from each row, in its order.
RANKINGS_COLUMNS = "run_id, turn_id, doc_ids, scores"


def rankings_fetch(*, run_ids: Sequence[int], turn_pks: Iterable[int] | None, stream: bool = False) -> Iterable[tuple]:
    """Raw (run_id, turn pk, doc-id blob, packed scores) rows of several runs in one query, in run order, for a
    recompute of a few turns or of one run: plain rows rather than model values (``rankings_iter`` decodes them).
    A full recompute of many runs streams them instead (``rankings_stream``). ``stream``: on PostgreSQL the rows
    come one at a time over this thread's connection (a whole run of 20,000 turns held at once took a gigabyte),
    which must then not be used until they are all read."""
    runs = [int(r) for r in run_ids]
    pks = None if turn_pks is None else [int(t) for t in turn_pks]
    if not runs or pks == []:
        return []
    table = connection.ops.quote_name(RunTurn._meta.db_table)
    if connection.vendor == "postgresql":
        # Binary results: the blobs arrive as raw bytes instead of hex text twice their size, which both the server
        # (encoding) and this process (decoding, holding the GIL the evaluating thread needs) paid for per byte.
        sql = f"SELECT {RANKINGS_COLUMNS} FROM {table} WHERE run_id = ANY(%s)"
        read = binary_stream if stream else binary_rows
        if pks is None:
            return read(sql + RANKINGS_ORDER, [runs])
        return read(sql + " AND turn_id = ANY(%s)" + RANKINGS_ORDER, [runs, pks])
    where = f"run_id IN ({', '.join(['%s'] * len(runs))})"
    params: list[Any] = list(runs)
    if pks is not None:
        where += f" AND turn_id IN ({', '.join(['%s'] * len(pks))})"
        params += pks
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {RANKINGS_COLUMNS} FROM {table} WHERE {where}{RANKINGS_ORDER}", params)
        return cursor.fetchall()


@contextmanager
def rankings_stream(*, run_ids: Sequence[int], version_id: int | None = None) -> Iterator[Iterator[tuple]]:
    """``rankings_fetch`` rows of whole runs streamed one at a time from PostgreSQL in run order, for a full
    recompute: the server reads ahead into the socket while the caller evaluates, and no run is held whole in
    memory. The rows come over a connection of their own, closed at the end, so the caller's stays free to write
    the scores meanwhile. With ``version_id``, only the rankings of turns that version judges: no other turn gets
    a score, and a run may rank every turn of an evaluation set (479 in CAsT 2019) where the qrels judge some (173)."""
    table = connection.ops.quote_name(RunTurn._meta.db_table)
    sql = f"SELECT {RANKINGS_COLUMNS} FROM {table} r WHERE run_id = ANY(%s)"
    params: list[Any] = [[int(r) for r in run_ids]]
    if version_id is not None:
        qrels = connection.ops.quote_name(Qrel._meta.db_table)
        # One index probe per ranking rather than collecting the version's judged turns from all its judgments:
        # 12 ms instead of 31 ms of the server's time for 2,000 rankings against 100,000 judgments.
        sql += f" AND EXISTS (SELECT 1 FROM {qrels} q WHERE q.version_id = %s AND q.turn_id = r.turn_id)"
        params.append(int(version_id))
    with psycopg.connect(**connection.get_connection_params(), autocommit=True) as conn:
        with psycopg.Cursor(conn) as cursor:
            yield cursor.stream(sql + RANKINGS_ORDER, params, binary=True, size=50)


_rank_scores: dict[int, list[float]] = {}


def rank_scores(n: int) -> list[float]:
    """n strictly descending scores (n … 1), one shared list per length: what a ranking whose own scores strictly
    descend is evaluated with. trec_eval reads scores only to order a ranking (ties broken by doc id), so any
    strictly descending scores give it the same order and the same values; sharing them saves building and
    freeing a float per ranked document."""
    scores = _rank_scores.get(n)
    if scores is None:
        scores = _rank_scores[n] = [float(n - i) for i in range(n)]
    return scores


# Rankings whose scores ``rankings_iter`` checks in one numpy pass: each numpy call costs about a microsecond
# whatever its size, and the check of one ranking took five of them (half the decoding of a 100-document ranking).
CHECK_CHUNK = 16


def _strictly_descending(packed_scores: Sequence[bytes]) -> list[bool]:
    """For each blob of packed doubles: do its values strictly descend (True for fewer than two)? One numpy pass
    over all of them: the positions where a value does not exceed the next, and for each blob whether one of them
    falls inside it (the pair straddling two blobs never counts)."""
    lengths = [len(raw) // 8 for raw in packed_scores]
    values = np.frombuffer(b"".join(packed_scores), dtype=np.float64)
    ends = np.cumsum(lengths)
    starts = ends - lengths
    # NaN compares false both ways: a ranking holding one is "not descending" and takes the general path.
    bad = np.flatnonzero(~(values[1:] < values[:-1]))
    inside = np.searchsorted(bad, np.maximum(ends - 1, starts)) - np.searchsorted(bad, starts)
    return (inside == 0).tolist()


def rankings_iter(rows: Iterable[tuple], *, judged_depth: int | None) -> Iterator[tuple[int, int, Ranking]]:
    """(run_id, turn pk, Ranking) for each ``rankings_fetch`` row, decoded one at a time so a caller can evaluate
    a few rankings while they are still in the CPU caches. The doc-id blob is split by its own field; the packed
    scores are checked for descending order with numpy, ``CHECK_CHUNK`` rankings at a time (rankings are stored in
    rank order, so Judged@k needs only the head, and strictly descending scores need not be decoded at all: see
    ``rank_scores``)."""
    rows = iter(rows)
    while chunk := list(islice(rows, CHECK_CHUNK)):
        descending = _strictly_descending([raw_scores or b"" for *_, raw_scores in chunk])
        for (run_id, tpk, raw_ids, raw_scores), strict in zip(chunk, descending, strict=True):
            # DocIdsField.from_db_value, inlined: it runs once per ranking, thousands of times per recompute.
            doc_ids = bytes(raw_ids).decode("utf-8").split("\n") if raw_ids else []
            n = len(doc_ids)
            top = None
            if strict and len(raw_scores or b"") == 8 * n:
                docs = dict(zip(doc_ids, rank_scores(n), strict=True))
                if len(docs) != n:  # a duplicated doc: its first occurrence wins, as in ``ranking_scores``
                    docs = dict(zip(reversed(doc_ids), reversed(rank_scores(n)), strict=True))
                elif judged_depth is not None:  # no tie to break: the stored head is the top
                    top = doc_ids[:judged_depth] if judged_depth else doc_ids
                yield run_id, tpk, Ranking(docs, top)
                continue
            packed = np.frombuffer(raw_scores or b"", dtype=np.float64)
            if len(packed) != n:
                docs = ranking_scores(doc_ids, packed.tolist())
            else:
                # Stored scores are floats already: no per-value check as in ``ranking_scores``. Built from the
                # reversed lists so the first occurrence of a duplicated doc wins, at C speed.
                scores = packed.tolist()
                docs = dict(zip(reversed(doc_ids), reversed(scores), strict=True))
                if judged_depth is not None and len(docs) == n and bool((packed[1:] <= packed[:-1]).all()):
                    top = metrics.top_slice(doc_ids, scores, judged_depth, descending=True)
            yield run_id, tpk, Ranking(docs, top)


def rankings_top(*, run: Run, depth: int, turn_ids: Iterable[str] | None = None) -> dict[str, list[str]]:
    """{turn_id: top-``depth`` doc ids} of a run, in stored rank order."""
    rows = RunTurn.objects.filter(run=run)
    if turn_ids is not None:
        rows = rows.filter(turn__turn_id__in=list(turn_ids))
    return {tid: list(docs or [])[:depth] for tid, docs in rows.values_list("turn__turn_id", "doc_ids")}


def turn_qrels(turn: Turn, version_name: str, min_grade: int) -> dict[str, int]:
    """{passage_id: grade} of a turn's qrels in the named version, graded at least ``min_grade``."""
    rows = Qrel.objects.filter(turn=turn, version__name=version_name, grade__gte=min_grade)
    return {pid: int(grade) for pid, grade in rows.values_list("passage_id", "grade")}
