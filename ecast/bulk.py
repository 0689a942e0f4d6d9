"""Bulk INSERT of plain rows: the one way imports, score writes and analyses load many rows at once.

PostgreSQL gets one binary ``COPY`` (no SQL to build, no text escaping, no per-row round trip); other databases get
``executemany`` batches. Rows are tuples of Python values as the model's fields hold them (ints for foreign keys,
str, bytes, lists for JSON or float arrays, aware datetimes), never model objects: building objects and running
``bulk_create``'s per-value preparation was most of a large import's time.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from django.db import connection, models, transaction
from django.db.models.constants import OnConflict

BATCH = 5000
ANALYZE_AT = 1000
TEMP_TABLE = "ecast_rows_in"

# Fields whose database value is the Python value itself (given values of the field's own type): no per-value
# preparation. Exact classes only, so a subclass that changes how it stores values still gets prepared.
_AS_IS: tuple[type[models.Field], ...] = (
    models.AutoField,
    models.BigAutoField,
    models.SmallAutoField,
    models.IntegerField,
    models.BigIntegerField,
    models.SmallIntegerField,
    models.PositiveIntegerField,
    models.PositiveBigIntegerField,
    models.PositiveSmallIntegerField,
    models.FloatField,
    models.CharField,
    models.TextField,
    models.BooleanField,
)
_TYPE_MODIFIER = re.compile(r"\(.*?\)")


def _column(meta: Any, name: str) -> models.Field:
    field = meta.get_field(name)
    if not isinstance(field, models.Field) or not field.concrete:
        raise ValueError(f"{name} is not a column of {meta.label}")
    return field


def _stored_as_is(field: models.Field) -> bool:
    if isinstance(field, models.ForeignKey):  # a foreign key holds its target's value
        return type(field.target_field) in _AS_IS
    return type(field) in _AS_IS


def _preparer(field: models.Field) -> Callable[[Any], Any] | None:
    """What turns a Python value into the database's for this field; None when it is the value itself."""
    if _stored_as_is(field):
        return None
    cache: dict[tuple[type, Any], Any] = {}

    def prep(value: Any) -> Any:
        # Repeated values (one timestamp for a whole import) are prepared once; lists and dicts every time. Keyed
        # by type too: True == 1, but a JSON column stores them differently.
        key = (type(value), value)
        try:
            return cache[key]
        except KeyError:
            cache[key] = out = field.get_db_prep_save(value, connection)
            return out
        except TypeError:
            return field.get_db_prep_save(value, connection)

    return prep


def _prepared(rows: Iterable[Sequence[Any]], preparers: list[Callable[[Any], Any] | None]) -> Iterable[Sequence[Any]]:
    """The rows with the values of the columns that need it prepared; the other cells are left as they are."""
    todo = [(i, p) for i, p in enumerate(preparers) if p is not None]
    if not todo:
        yield from rows
        return
    for row in rows:
        out = list(row)
        for i, prep in todo:
            out[i] = prep(out[i])
        yield out


def _copy_types(cursor: Any, fields: list[models.Field]) -> list[int] | None:
    """PostgreSQL type oids of the columns, which a binary COPY needs; None if one has no type psycopg knows."""
    registry = cursor.adapters.types
    oids = []
    for field in fields:
        name = _TYPE_MODIFIER.sub("", field.db_type(connection) or "").strip()
        try:
            oids.append(registry.get_oid(name))
        except KeyError:
            return None
    return oids


def rows_insert(
    model: type[models.Model],
    fields: Sequence[str],
    rows: Iterable[Sequence[Any]],
    *,
    skip_conflicts: bool = False,
    analyze: bool = False,
) -> None:
    """Insert ``rows`` (one value per name in ``fields``: field names or attnames such as ``turn_id``) into
    ``model``'s table. ``skip_conflicts`` drops rows that hit a unique constraint; ``analyze`` refreshes
    PostgreSQL's planner statistics after a load of ``ANALYZE_AT`` rows or more (right after a bulk load the planner
    estimates one row and picks nested loops: a release export ran 10x slower until autovacuum caught up)."""
    if isinstance(rows, Sequence) and not rows:
        return
    meta = model._meta
    columns = [_column(meta, name) for name in fields]
    preparers = [_preparer(f) for f in columns]
    qn = connection.ops.quote_name
    table, names = qn(meta.db_table), ", ".join(qn(str(f.column)) for f in columns)
    with transaction.atomic(savepoint=False), connection.cursor() as cursor:
        if connection.vendor != "postgresql":
            _insert_batches(cursor, table, names, columns, _prepared(rows, preparers), skip_conflicts=skip_conflicts)
            return
        target = table
        if skip_conflicts:
            # COPY has no ON CONFLICT: the rows go to a temporary table first, then across in one INSERT … SELECT.
            target = TEMP_TABLE
            cursor.execute(f"CREATE TEMP TABLE {target} ON COMMIT DROP AS SELECT {names} FROM {table} LIMIT 0")
        oids = _copy_types(cursor.cursor, columns)
        count = 0
        binary = " (FORMAT BINARY)" if oids is not None else ""
        # COPY goes to psycopg's own cursor: wrapped so its errors are Django's (IntegrityError …), as elsewhere.
        with connection.wrap_database_errors, cursor.cursor.copy(f"COPY {target} ({names}) FROM STDIN{binary}") as copy:
            if oids is not None:
                copy.set_types(oids)
            for row in _prepared(rows, preparers):
                copy.write_row(row)
                count += 1
        if skip_conflicts:
            cursor.execute(f"INSERT INTO {table} ({names}) SELECT {names} FROM {target} ON CONFLICT DO NOTHING")
            cursor.execute(f"DROP TABLE {target}")
        if analyze and count >= ANALYZE_AT:
            cursor.execute(f"ANALYZE {table}")


def _insert_batches(
    cursor: Any,
    table: str,
    names: str,
    columns: list[models.Field],
    rows: Iterable[Sequence[Any]],
    *,
    skip_conflicts: bool,
) -> None:
    ops = connection.ops
    on_conflict = OnConflict.IGNORE if skip_conflicts else None
    marks = ", ".join(["%s"] * len(columns))
    suffix = ops.on_conflict_suffix_sql(columns, on_conflict, None, None)
    sql = f"{ops.insert_statement(on_conflict=on_conflict)} {table} ({names}) VALUES ({marks}) {suffix}".rstrip()
    batch: list[Sequence[Any]] = []
    for row in rows:
        batch.append(row)
        if len(batch) == BATCH:
            cursor.executemany(sql, batch)
            batch = []
    if batch:
        cursor.executemany(sql, batch)
