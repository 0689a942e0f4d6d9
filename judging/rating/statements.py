"""The two hot statements of crowd rating, on PostgreSQL: lease the next item, and store an answer.

Why one statement is safe here. Under READ COMMITTED every statement reads one snapshot, and a row that
``FOR UPDATE`` waits for is re-read at its newest version and its conditions re-checked — but only that row; what the
statement reads from other tables stays as old as the snapshot. So everything that decides whether an item has room
lives on the item row (``completed_count`` and the ``leases`` map), and everything that decides whether a rater may
take a new item lives on the rater's status row (``paused`` and ``open_leases``). Both rows are locked by the
statement and both are written by every lease, so a concurrent lease of the same item or by the same rater is always
seen: the item then fails its room check (and the next one is tried), or the rater's row fails its check (and the
service takes the general, many-statement path).

The service (:mod:`judging.rating.services`) decides; these functions only run the SQL and return plain values.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any

import psycopg
from django.db import connection
from django.db.backends.utils import CursorDebugWrapper, CursorWrapper


class _Prepared(psycopg.Cursor[Any]):
    """A server-side-binding cursor whose statements are prepared on the connection at their first execution."""

    def execute(
        self, query: Any, params: Any = None, *, prepare: bool | None = None, binary: bool | None = None
    ) -> Any:
        return super().execute(query, params, prepare=True, binary=binary)


class _PreparedDebug(CursorDebugWrapper):
    """Logs the statement's text as written: Django reads the executed text back from client-side cursors only."""

    def debug_sql(self, sql: Any = None, params: Any = None, use_last_executed_query: bool = False, many: bool = False):
        return super().debug_sql(sql, params, use_last_executed_query=False, many=many)


@contextmanager
def prepared_cursor() -> Iterator[Any]:
    """A Django cursor over which each statement is planned once per connection: planning the lease statement cost
    more CPU than running it (1.1-1.4 ms against about 1 ms), and Django's cursors send every statement as new text
    with its values inlined. Query logging, execute wrappers and error translation stay Django's. Behind PgBouncer
    in transaction mode this needs ``max_prepared_statements`` set (PgBouncer 1.21 or later)."""
    connection.close_if_health_check_failed()
    connection.ensure_connection()
    raw = _Prepared(connection.connection)
    wrapper = _PreparedDebug if connection.queries_logged else CursorWrapper
    with wrapper(raw, connection) as cursor:
        yield cursor


# The rater's status row is locked first (an InitPlan of ``pick``), then one item; ``ok`` is empty when the fast
# path does not apply (no status row yet, paused, a lease still open, campaign closed, a gold item due).
LEASE_NEXT = """
WITH camp AS (
    SELECT c.raters_per_item AS n, c.lease_seconds, c.gold_every
    FROM judging_campaign c WHERE c.id = %(campaign)s AND c.status = 'open'
), st AS (
    SELECT s.id FROM judging_raterstatus s
    WHERE s.campaign_id = %(campaign)s AND s.rater_id = %(rater)s AND NOT s.paused AND s.open_leases = 0
    FOR UPDATE
), mine AS (
    SELECT count(*) FILTER (WHERE a.status = 'completed') AS done, coalesce(array_agg(a.item_id), '{}') AS taken
    FROM judging_ratingassignment a WHERE a.campaign_id = %(campaign)s AND a.rater_id = %(rater)s
), ok AS (
    SELECT camp.n, camp.lease_seconds, mine.done, mine.taken FROM camp, mine
    WHERE EXISTS (SELECT 1 FROM st)
      AND ((mine.done + 1) %% camp.gold_every <> 0
           OR NOT EXISTS (SELECT 1 FROM judging_ratingitem g WHERE g.campaign_id = %(campaign)s AND g.is_gold))
), pick AS (
    -- Level by level from the most completed down (``ok`` is empty when the fast path does not apply, and then so
    -- is this): each level's open items are read through the (campaign, is_gold, completed_count, position) index
    -- and the first in the rater's order is locked, so a lease reads the items of the highest level that has room
    -- for the rater, not every open item of the campaign. The levels are read in the series' order and the outer
    -- LIMIT stops at the first that yields an item (a WITH query is evaluated only as far as it is read).
    SELECT p.id FROM ok CROSS JOIN generate_series(ok.n - 1, 0, -1) AS lvl(c) CROSS JOIN LATERAL (
        SELECT i.id FROM judging_ratingitem i
        WHERE i.campaign_id = %(campaign)s AND NOT i.is_gold AND i.completed_count = lvl.c
          -- The rater's own items as one array (read once), and the lease map read only where it has entries.
          AND i.id <> ALL (ok.taken::bigint[])
          AND (i.leases = '{}'::jsonb
               OR i.completed_count
                  + (SELECT count(*) FROM jsonb_each_text(i.leases) e WHERE e.value::float8 > %(now_s)s) < ok.n)
        ORDER BY ((i.position::bigint * %(a)s + %(b)s) %% %(prime)s)
                 * ((i.position::bigint * %(a)s + %(b)s) %% %(prime)s) %% %(prime)s,
                 i.position
        LIMIT 1
        FOR UPDATE SKIP LOCKED
    ) p
    LIMIT 1
), ins AS (
    INSERT INTO judging_ratingassignment
        (item_id, campaign_id, rater_id, status, leased_at, expires_at, completed_at, history)
    SELECT pick.id, %(campaign)s, %(rater)s, 'leased', %(now)s, %(now)s + make_interval(secs => ok.lease_seconds),
           NULL, '[]'::jsonb
    FROM pick, ok
    RETURNING id, item_id, expires_at
), upd AS (
    UPDATE judging_ratingitem i
    SET leases = (SELECT coalesce(jsonb_object_agg(e.key, e.value), '{}'::jsonb)
                  FROM jsonb_each(i.leases) e WHERE (e.value #>> '{}')::float8 > %(now_s)s)
                 || jsonb_build_object(ins.id::text, extract(epoch FROM ins.expires_at)::float8)
    FROM ins WHERE i.id = ins.item_id
    RETURNING i.id, i.context, i.passage_id, i.passage_text
), bump AS (
    UPDATE judging_raterstatus s SET open_leases = s.open_leases + 1
    FROM st, ins WHERE s.id = st.id
)
SELECT ok.done, ins.id, ins.item_id, ins.expires_at, upd.context, upd.passage_id, upd.passage_text
FROM ok LEFT JOIN (ins JOIN upd ON upd.id = ins.item_id) ON true
"""


def lease_next(
    *, campaign_id: int, rater_id: int, now: datetime, order_key: tuple[int, int], prime: int
) -> dict[str, Any] | None:
    """Lease the best open item to a rater in one statement. None: the fast path does not apply (the caller takes
    the general path); otherwise ``done`` and, when an item was leased, the assignment and item fields."""
    params: dict[str, Any] = {
        "campaign": campaign_id,
        "rater": rater_id,
        "now": now,
        "now_s": now.timestamp(),
        "a": order_key[0],
        "b": order_key[1],
        "prime": prime,
    }
    with prepared_cursor() as cursor:
        cursor.execute(LEASE_NEXT, params)
        row = cursor.fetchone()
    if row is None:
        return None
    done, assignment_id, item_id, expires_at, context, passage_id, passage_text = row
    if assignment_id is None:
        return {"done": int(done), "assignment_id": None}
    return {
        "done": int(done),
        "assignment_id": assignment_id,
        "item_id": item_id,
        "expires_at": expires_at,
        "context": _json(context),
        "passage_id": passage_id,
        "passage_text": passage_text,
    }


# The rating row first; everything else only if it was stored (a key already used by this rater inserts nothing).
# The status row is updated before the item (the lock order of every rating service), and its ``paused`` decides
# whether the rating counts towards the item.
STORE_RATING = """
WITH r AS (
    INSERT INTO judging_rating
        (assignment_id, item_id, campaign_id, rater_id, "values", idempotency_key, seconds_on_task, server_seconds,
         submitted_at)
    VALUES (%(assignment)s, %(item)s, %(campaign)s, %(rater)s, %(values)s::jsonb, %(key)s, %(seconds)s, %(server)s,
            %(at)s)
    ON CONFLICT (rater_id, idempotency_key) DO NOTHING
    RETURNING id, submitted_at
), a AS (
    UPDATE judging_ratingassignment SET status = 'completed', completed_at = %(now)s
    WHERE id = %(assignment)s AND EXISTS (SELECT 1 FROM r)
), s AS (
    UPDATE judging_raterstatus
    SET open_leases = greatest(open_leases - %(was_leased)s, 0), gold_answers = gold_answers + %(gold)s,
        gold_correct = gold_correct + %(gold_ok)s
    WHERE campaign_id = %(campaign)s AND rater_id = %(rater)s AND EXISTS (SELECT 1 FROM r)
    RETURNING paused, override, gold_answers, gold_correct
), i AS (
    UPDATE judging_ratingitem
    SET completed_count = completed_count + CASE WHEN coalesce((SELECT paused FROM s), false) THEN 0 ELSE 1 END,
        leases = leases - %(lease_key)s
    WHERE id = %(item)s AND EXISTS (SELECT 1 FROM r)
)
SELECT r.id, r.submitted_at, s.paused, s.override, s.gold_answers, s.gold_correct FROM r LEFT JOIN s ON true
"""


def store_rating(
    *,
    assignment_id: int,
    item_id: int,
    campaign_id: int,
    rater_id: int,
    values: dict[str, int],
    key: str,
    seconds_on_task: float | None,
    server_seconds: float,
    submitted_at: datetime,
    now: datetime,
    was_leased: bool,
    gold: bool,
    gold_ok: bool,
) -> dict[str, Any] | None:
    """Insert the rating, complete the assignment, count it on the item and the rater's status, in one statement.
    None when the rater already used ``key`` (nothing written)."""
    params: dict[str, Any] = {
        "assignment": assignment_id,
        "item": item_id,
        "campaign": campaign_id,
        "rater": rater_id,
        "values": json.dumps(values),
        "key": key,
        "seconds": seconds_on_task,
        "server": server_seconds,
        "at": submitted_at,
        "now": now,
        "was_leased": int(was_leased),
        "gold": int(gold),
        "gold_ok": int(gold and gold_ok),
        "lease_key": str(assignment_id),
    }
    with prepared_cursor() as cursor:
        cursor.execute(STORE_RATING, params)
        row = cursor.fetchone()
    if row is None:
        return None
    rating_id, at, paused, override, gold_answers, gold_correct = row
    return {
        "rating_id": rating_id,
        "submitted_at": at,
        "status": None
        if paused is None
        else {"paused": paused, "override": override, "gold_answers": gold_answers, "gold_correct": gold_correct},
    }


# The rater's status row, then the assignment, are locked (the order every rating service locks in: a submission
# never waits for the status row while holding the assignment); retries of one submission queue here. The campaign
# and item are read, not locked.
LOAD_FOR_SUBMIT = """
SELECT a.id, a.item_id, a.campaign_id, a.status, a.leased_at, a.expires_at, a.completed_at,
       c.measures, c.raters_per_item, c.gold_threshold, c.gold_min_answers, c.gold_tolerance,
       i.is_gold, i.gold_expected, i.completed_count, i.leases,
       (SELECT r.id FROM judging_rating r WHERE r.rater_id = %(rater)s AND r.idempotency_key = %(key)s) AS replay_id
FROM judging_raterstatus s
JOIN judging_ratingassignment a ON a.campaign_id = s.campaign_id AND a.rater_id = s.rater_id
JOIN judging_campaign c ON c.id = a.campaign_id
JOIN judging_ratingitem i ON i.id = a.item_id
WHERE a.id = %(assignment)s AND a.rater_id = %(rater)s
FOR UPDATE OF s, a
"""
ASSIGNMENT_FIELDS = ["id", "item_id", "campaign_id", "status", "leased_at", "expires_at", "completed_at"]
CAMPAIGN_FIELDS = ["measures", "raters_per_item", "gold_threshold", "gold_min_answers", "gold_tolerance"]
ITEM_FIELDS = ["is_gold", "gold_expected", "completed_count", "leases"]


def _json(value: Any) -> Any:
    # Django reads jsonb as text and leaves decoding to JSONField; raw statements decode it here.
    return json.loads(value) if isinstance(value, str) else value


def load_for_submit(*, assignment_id: int, rater_id: int, key: str) -> dict[str, dict[str, Any]] | None:
    """The rater's assignment, locked after their status row, with the campaign and item fields a submission needs
    and the id of a rating the rater stored under ``key`` (``replay_id``); None when the assignment is not theirs
    (or they have no status row in its campaign)."""
    with prepared_cursor() as cursor:
        cursor.execute(LOAD_FOR_SUBMIT, {"assignment": assignment_id, "rater": rater_id, "key": key})
        row = cursor.fetchone()
    if row is None:
        return None
    n_a, n_c = len(ASSIGNMENT_FIELDS), len(CAMPAIGN_FIELDS)
    n_i = len(ITEM_FIELDS)
    campaign = dict(zip(CAMPAIGN_FIELDS, row[n_a : n_a + n_c], strict=True))
    item = dict(zip(ITEM_FIELDS, row[n_a + n_c : n_a + n_c + n_i], strict=True))
    campaign["measures"] = _json(campaign["measures"])
    item["gold_expected"], item["leases"] = _json(item["gold_expected"]), _json(item["leases"])
    return {
        "assignment": dict(zip(ASSIGNMENT_FIELDS, row[:n_a], strict=True)),
        "campaign": campaign,
        "item": item,
        "replay_id": {"id": row[-1]},
    }
