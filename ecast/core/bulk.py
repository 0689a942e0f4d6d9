"""Bulk INSERT of plain rows: the one way imports, score writes and analyses load many rows at once.

PostgreSQL gets one binary ``COPY`` (no SQL to build, no text escaping, no per-row round trip); other databases get
``executemany`` batches. Rows are tuples of Python values as the model's fields hold them (ints for foreign keys,
str, bytes, lists for JSON or float arrays, aware datetimes), never model objects: building objects and running
``bulk_create``'s per-value preparation was most of a large import's time.
"""

from __future__ import annotations

import json
import re
import struct
from collections.abc import Callable, Iterable, Sequence
from functools import partial
from itertools import chain, repeat
from typing import Any

from django.db import IntegrityError, connection, connections, models, transaction
from django.db.models.constants import OnConflict
from django.db.models.fields import AutoFieldMixin

BATCH = 5000
CACHED_VALUES = 4096  # prepared values a column keeps for repeats
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


# Never a cell's value: what the last-value shortcut of ``_preparer`` starts from.
_NO_VALUE = object()


def _preparer(field: models.Field) -> Callable[[Any], Any] | None:
    """What turns a Python value into the database's for this field; None when it is the value itself."""
    if _stored_as_is(field):
        return None
    cache: dict[tuple[type, Any], Any] = {}
    # The thread's own connection, not the ``connection`` proxy: each attribute a field reads of the proxy (its
    # vendor, its ops) goes through a thread-local lookup, which made preparing a full recompute's 17-value score
    # lists (one a row) three times dearer.
    db = connections[connection.alias]
    prep_container = _json_preparer(field) or partial(field.get_db_prep_save, connection=db)

    last: list[Any] = [_NO_VALUE, None]  # (value, prepared) of the last hashable value prepared

    def prep(value: Any) -> Any:
        # Repeated values (one timestamp for a whole import) are prepared once; lists and dicts every time. Keyed
        # by type too: True == 1, but a JSON column stores them differently. The very object of the row before
        # skips even the lookup (hashing an aware datetime for each of 70,000 qrels was a tenth of their load).
        if value is last[0]:
            return last[1]
        kind = type(value)
        if kind in (dict, list):
            return prep_container(value)
        if kind is bytes:  # a blob (a ranking's packed ids): seldom repeated, and a cache of them held a whole load
            return field.get_db_prep_save(value, db)
        key = (kind, value)
        try:
            out = cache[key]
        except KeyError:
            out = field.get_db_prep_save(value, db)
            if len(cache) < CACHED_VALUES:  # distinct values past that are prepared each time: memory stays flat
                cache[key] = out
        except TypeError:  # another unhashable value
            return field.get_db_prep_save(value, db)
        last[0], last[1] = value, out
        return out

    return prep


def _json_preparer(field: models.Field) -> Callable[[Any], Any] | None:
    """For a plain JSONField on PostgreSQL, what ``get_db_prep_save`` gives a dict or list (psycopg's ``Jsonb``
    with the field's encoder) without its per-value detour through the connection's operations: that detour was
    twice the JSON encoding itself for the provenance of 18,000 imported paraphrases. None for other fields."""
    if type(field) is not models.JSONField or connection.vendor != "postgresql":
        return None
    from psycopg.types.json import Jsonb

    encode = partial(json.dumps, cls=field.encoder)
    return partial(Jsonb, dumps=encode)


def _prepared(rows: Iterable[Sequence[Any]], columns: list[models.Field]) -> Iterable[Sequence[Any]]:
    """The rows with the values of the columns that need it prepared; the other cells are left as they are."""
    todo = [(i, p) for i, p in enumerate(map(_preparer, columns)) if p is not None]
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
    PostgreSQL's planner statistics of the key columns after a load of ``ANALYZE_AT`` rows or more (right after a
    bulk load the planner estimates one row and picks nested loops: a release export ran 10x slower until
    autovacuum caught up)."""
    if isinstance(rows, Sequence) and not rows:
        return
    meta = model._meta
    columns = [_column(meta, name) for name in fields]
    qn = connection.ops.quote_name
    table, names = qn(meta.db_table), ", ".join(qn(str(f.column)) for f in columns)
    with transaction.atomic(savepoint=False), connection.cursor() as cursor:
        if connection.vendor != "postgresql":
            ops = connection.ops
            on_conflict = OnConflict.IGNORE if skip_conflicts else None
            marks = ", ".join(["%s"] * len(columns))
            suffix = ops.on_conflict_suffix_sql(columns, on_conflict, None, None)
            sql = f"{ops.insert_statement(on_conflict=on_conflict)} {table} ({names}) VALUES ({marks}) {suffix}"
            _execute_batches(cursor, sql.rstrip(), _prepared(rows, columns))
            return
        if not skip_conflicts:
            count = _copy(cursor, table, names, columns, rows)
        else:
            count = _copy_skipping_conflicts(cursor, table, names, columns, rows)
        if analyze and count >= ANALYZE_AT:
            keys = _key_columns(meta)
            cursor.execute(f"ANALYZE {table} ({', '.join(qn(c) for c in keys)})" if keys else f"ANALYZE {table}")


def _key_columns(meta: Any) -> list[str]:
    """The columns joins and filters use: those of foreign keys, indexes and unique constraints. Analyzing only
    them takes a third of the time and still tells the planner the table's size; a column-limited ANALYZE leaves
    the table's change counter alone, so autovacuum still analyzes every column soon after."""
    names = [f.name for f in meta.concrete_fields if not f.primary_key and (f.is_relation or f.db_index or f.unique)]
    for item in [*meta.indexes, *meta.constraints]:
        names += [name.lstrip("-") for name in getattr(item, "fields", ())]
    return sorted({str(meta.get_field(name).column) for name in names})


def rows_update(model: type[models.Model], fields: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
    """Set ``fields`` of existing rows of ``model``, each row being (pk, value per field): on PostgreSQL one COPY
    into a temporary table and one ``UPDATE … FROM`` (``bulk_update`` builds a CASE expression per column and
    row, and prepares every value in Python), elsewhere ``executemany``."""
    if isinstance(rows, Sequence) and not rows:
        return
    meta = model._meta
    columns = [meta.pk, *(_column(meta, name) for name in fields)]
    qn = connection.ops.quote_name
    table, pk = qn(meta.db_table), qn(str(meta.pk.column))
    names = [qn(str(f.column)) for f in columns]
    with transaction.atomic(savepoint=False), connection.cursor() as cursor:
        if connection.vendor != "postgresql":
            sets = ", ".join(f"{n} = %s" for n in names[1:])
            moved = ([*row[1:], row[0]] for row in _prepared(rows, columns))  # the key goes last, into WHERE
            _execute_batches(cursor, f"UPDATE {table} SET {sets} WHERE {pk} = %s", moved)
            return
        listed = ", ".join(names)
        cursor.execute(f"CREATE TEMP TABLE {TEMP_TABLE} ON COMMIT DROP AS SELECT {listed} FROM {table} LIMIT 0")
        _copy(cursor, TEMP_TABLE, listed, columns, rows)
        sets = ", ".join(f"{n} = s.{n}" for n in names[1:])
        cursor.execute(f"UPDATE {table} AS t SET {sets} FROM {TEMP_TABLE} AS s WHERE t.{pk} = s.{pk}")
        cursor.execute(f"DROP TABLE {TEMP_TABLE}")


def ids_reserve(model: type[models.Model], count: int) -> list[int]:
    """``count`` new primary keys of ``model``, taken from its id generator in one statement, for rows that must
    point at each other before they are written (a manual/raw paraphrase pair goes in with both links in one load).

    PostgreSQL: ``nextval`` over ``generate_series`` — one round trip, unique however many imports run at once,
    consecutive unless another session draws from the same sequence meanwhile. SQLite (``AUTOINCREMENT`` keys):
    the table's ``sqlite_sequence`` counter moves past the block in one ``UPDATE … RETURNING``, which also takes
    the write lock, so the block is always consecutive and no later insert reuses it. Call inside the
    transaction that inserts the rows."""
    if count <= 0:
        return []
    meta = model._meta
    if not isinstance(meta.pk, AutoFieldMixin):
        raise ValueError(f"{meta.label} has no automatic primary key")
    table, pk = meta.db_table, str(meta.pk.column)
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            # The sequence is looked up once (OFFSET 0 keeps the subquery from being folded into the outer query):
            # nextval(pg_get_serial_sequence(…)) resolves the name again for every row, 12x the cost of the draws.
            sql = (
                "SELECT nextval(s.seq) FROM (SELECT pg_get_serial_sequence(%s, %s)::regclass AS seq OFFSET 0) AS s, "
                "generate_series(1, %s)"
            )
            cursor.execute(sql, [table, pk, count])
            return [row[0] for row in cursor.fetchall()]
        if connection.vendor != "sqlite":
            raise NotImplementedError(f"ids_reserve supports PostgreSQL and SQLite, not {connection.vendor}")
        qn = connection.ops.quote_name
        # The counter row appears with a table's first insert; a table never written to gets one first.
        cursor.execute(
            f"INSERT INTO sqlite_sequence (name, seq) SELECT %s, COALESCE(MAX({qn(pk)}), 0) FROM {qn(table)} "
            "WHERE NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = %s)",
            [table, table],
        )
        cursor.execute(
            f"UPDATE sqlite_sequence SET seq = MAX(seq, (SELECT COALESCE(MAX({qn(pk)}), 0) FROM {qn(table)})) + %s "
            "WHERE name = %s RETURNING seq",
            [count, table],
        )
        last = cursor.fetchone()[0]
    return list(range(last - count + 1, last + 1))


def objects_insert(objs: Sequence[models.Model]) -> None:
    """Insert new objects of one model through ``rows_insert``: every column but an automatic primary key, with
    ``auto_now`` stamps; the objects get no pks. For writers that build objects to merge fields into before
    writing; bulk rows are better built as tuples straight away."""
    if not objs:
        return
    model = type(objs[0])
    fields = [f for f in model._meta.concrete_fields if not isinstance(f, AutoFieldMixin)]
    rows = [[f.pre_save(obj, True) for f in fields] for obj in objs]
    rows_insert(model, [f.attname for f in fields], rows)


def objects_update(objs: Sequence[models.Model], fields: Sequence[str]) -> None:
    """Write ``fields`` of existing objects of one model through ``rows_update`` (``bulk_update``'s job)."""
    if not objs:
        return
    model = type(objs[0])
    attnames = [_column(model._meta, name).attname for name in fields]  # a foreign key's id, not its object
    rows_update(model, attnames, [[obj.pk, *(getattr(obj, a) for a in attnames)] for obj in objs])


_FLOAT8_ARRAY = "double precision[]"
_float8_array_layouts: dict[int, struct.Struct] = {}


def _float8_array_dumper(cursor: Any) -> type[Any]:
    """A binary dumper of ``double precision[]`` for ``cursor``'s COPY: psycopg's own walks each list in Python,
    which was most of writing a full recompute's scores (17 values a row); a one-dimensional list of numbers (what
    the column's field prepares) packs in one struct call."""
    from psycopg import pq
    from psycopg.adapt import Dumper

    element = cursor.adapters.types.get_oid("double precision")

    class Float8ArrayDumper(Dumper):
        format = pq.Format.BINARY
        oid = cursor.adapters.types.get_oid(_FLOAT8_ARRAY)

        def dump(self, obj: Any) -> bytes:
            n = len(obj)
            layout = _float8_array_layouts.get(n)
            if layout is None:  # dimensions, no NULLs, element type, length, lower bound; then (size, value) pairs
                layout = _float8_array_layouts[n] = struct.Struct(">5i" + "id" * n)
            return layout.pack(1, 0, element, n, 1, *chain.from_iterable(zip(repeat(8), obj)))

    return Float8ArrayDumper


def _copy(cursor: Any, target: str, names: str, columns: list[models.Field], rows: Iterable[Sequence[Any]]) -> int:
    """COPY the rows into ``target``: binary when psycopg can name every column's type, else text; the count."""
    oids = _copy_types(cursor.cursor, columns)
    binary = " (FORMAT BINARY)" if oids is not None else ""
    count = 0
    # COPY goes to psycopg's own cursor: wrapped so its errors are Django's (IntegrityError …), as elsewhere.
    with connection.wrap_database_errors, cursor.cursor.copy(f"COPY {target} ({names}) FROM STDIN{binary}") as copy:
        if oids is not None:
            if cursor.cursor.adapters.types.get_oid(_FLOAT8_ARRAY) in oids:
                cursor.cursor.adapters.register_dumper(None, _float8_array_dumper(cursor.cursor))
            copy.set_types(oids)
        for row in _prepared(rows, columns):
            copy.write_row(row)
            count += 1
    return count


def _copy_skipping_conflicts(
    cursor: Any, table: str, names: str, columns: list[models.Field], rows: Iterable[Sequence[Any]]
) -> int:
    """COPY the rows into ``table``, dropping those that hit a unique constraint; the count copied.

    COPY has no ON CONFLICT. The rows are copied straight in under a savepoint, and only when one of them conflicts
    does the load start again through a temporary table and one ``INSERT … SELECT … ON CONFLICT DO NOTHING``. The
    callers expect conflicts to be rare (rows another worker stored meanwhile): the temporary table's round, which
    writes every row twice, was most of the database time of a permutation chunk's rankings."""
    rows = rows if isinstance(rows, Sequence) else list(rows)  # read twice when a conflict sends them round again
    try:
        with transaction.atomic():
            return _copy(cursor, table, names, columns, rows)
    except IntegrityError:
        pass
    cursor.execute(f"CREATE TEMP TABLE {TEMP_TABLE} ON COMMIT DROP AS SELECT {names} FROM {table} LIMIT 0")
    count = _copy(cursor, TEMP_TABLE, names, columns, rows)
    cursor.execute(f"INSERT INTO {table} ({names}) SELECT {names} FROM {TEMP_TABLE} ON CONFLICT DO NOTHING")
    cursor.execute(f"DROP TABLE {TEMP_TABLE}")
    return count


def _execute_batches(cursor: Any, sql: str, rows: Iterable[Sequence[Any]]) -> None:
    batch: list[Sequence[Any]] = []
    for row in rows:
        batch.append(row)
        if len(batch) == BATCH:
            cursor.executemany(sql, batch)
            batch = []
    if batch:
        cursor.executemany(sql, batch)
