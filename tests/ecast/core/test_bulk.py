"""rows_insert: what goes in by COPY (PostgreSQL) or executemany (elsewhere) reads back exactly as given."""

from __future__ import annotations

import math
import tracemalloc
from datetime import UTC, datetime

import pytest
from django.db import IntegrityError, connection, transaction

from ecast.core import bulk
from ecast.core.bulk import ANALYZE_AT, ids_reserve, objects_insert, objects_update, rows_insert, rows_update
from ecast.models import Paraphrase, Passage, Turn
from evaluation.models import RunTurn, TurnScores
from evaluation.models.core import DocIdsField, ScoresField
from tests import factories
from tests.concurrency_helpers import require_postgres

AWKWARD = [
    "tab\there",
    "line\nbreak and \r\n CRLF",
    "back\\slash \\N \\t \\\\",  # \N is COPY's text NULL marker: a string spelling it must stay a string
    "unicode: ñ é 中文 🙂 \u2028 zero-width\u200b",
    "",
    "  leading and trailing spaces  ",
    "quotes \" ' and , ; | {braces} [brackets]",
]
STAMP = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)


@pytest.fixture
def turn(small_collection) -> Turn:
    return Turn.objects.get(collection=small_collection, turn_id="1_1")


@pytest.fixture(params=["binary", "text"])
def copy_format(request, monkeypatch) -> str:
    """PostgreSQL takes binary COPY; text COPY is the way for a column type psycopg cannot name."""
    real = bulk._copy_types

    def types(cursor, fields):
        oids = real(cursor, fields)
        assert oids is not None, "every column of these models has a type binary COPY can name"
        return oids if request.param == "binary" else None

    monkeypatch.setattr(bulk, "_copy_types", types)
    return request.param


def test_awkward_text_round_trips_exactly(db, copy_format):
    rows = [(f"p{i}", text, "") for i, text in enumerate(AWKWARD)]
    rows.append(("p-null-source", "x", "src\twith tab"))

    rows_insert(Passage, ["passage_id", "text", "source"], rows)

    stored = set(Passage.objects.values_list("passage_id", "text", "source"))
    assert stored == set(rows)


def test_nulls_json_booleans_and_timestamps_round_trip(turn, copy_format):
    provenance = [
        {"source": "a\tb.csv", "line": 3, "nested": {"list": [1, 2.5, None, "x\ny"]}},
        {"quote": '"\\', "unicode": "中文"},
        {},
    ]
    rows = [
        (turn.pk, "manual", text, "approved", "imported", prov, i % 2 == 0, STAMP, STAMP, None)
        for i, (text, prov) in enumerate(zip(AWKWARD, provenance * 3, strict=False))
    ]
    fields = ["turn_id", "kind", "text", "status", "origin", "provenance", "is_current", "created_at", "updated_at"]

    rows_insert(Paraphrase, [*fields, "created_by"], rows)

    stored = sorted(Paraphrase.objects.values_list(*fields, "created_by"), key=lambda r: AWKWARD.index(r[2]))
    assert stored == rows


def test_float_arrays_and_packed_blobs_round_trip_exactly(turn, copy_format):
    run = factories.run(turn.collection, "r", {})
    version = factories.qrels_version(turn.collection)
    values = [0.1, 1 / 3, -0.0, 5e-324, 1.7976931348623157e308, math.pi, 0.0, 1.0]
    docs = ["d\\1", "d\u00e92", "d3"]

    rows_insert(
        TurnScores,
        ["run", "turn", "version", "measures", "values", "threshold", "computed_at"],
        [(run.pk, turn.pk, version.pk, "nDCG@3\nAP(rel=2)", values, 2, STAMP)],
    )
    ranking = (run.pk, turn.pk, DocIdsField.pack(docs), values)
    rows_insert(RunTurn, ["run_id", "turn_id", "doc_ids", "scores"], [ranking])

    got = TurnScores.objects.get()
    assert [v.hex() for v in got.values] == [v.hex() for v in values]  # bit for bit, signed zero included
    assert (got.measures, got.threshold, got.computed_at) == ("nDCG@3\nAP(rel=2)", 2, STAMP)
    ranking = RunTurn.objects.get()
    assert ranking.doc_ids == docs
    assert [v.hex() for v in ranking.scores] == [v.hex() for v in values]
    assert ScoresField.pack(ranking.scores) == ScoresField.pack(values)


def test_float_arrays_of_any_length_with_nan_and_integers_round_trip(turn, copy_format):
    import numpy as np

    run = factories.run(turn.collection, "r", {})
    version = factories.qrels_version(turn.collection)
    arrays = [[], [math.nan], [1, 2.5, np.float64(1 / 7)], [float(i) / 3 for i in range(40)]]
    others = Turn.objects.filter(collection=turn.collection).order_by("pk")[: len(arrays)]
    rows = [(run.pk, t.pk, version.pk, "AP", values, 1, STAMP) for t, values in zip(others, arrays, strict=True)]

    rows_insert(TurnScores, ["run", "turn", "version", "measures", "values", "threshold", "computed_at"], rows)

    got = dict(TurnScores.objects.values_list("turn_id", "values"))
    for t, values in zip(others, arrays, strict=True):
        assert [float(v).hex() for v in got[t.pk]] == [float(v).hex() for v in values]


def _passages(rows: list[tuple[str, str]], **kwargs: bool) -> None:
    rows_insert(Passage, ["passage_id", "text", "source"], [(pid, text, "test") for pid, text in rows], **kwargs)


def test_skip_conflicts_keeps_the_stored_row_and_inserts_the_rest(db):
    _passages([("a", "first")])

    _passages([("a", "second"), ("b", "new")], skip_conflicts=True)
    _passages([("b", "again")], skip_conflicts=True)  # twice in one transaction

    assert dict(Passage.objects.values_list("passage_id", "text")) == {"a": "first", "b": "new"}


def test_a_conflict_without_skip_conflicts_fails_and_writes_nothing(db):
    _passages([("a", "first")])
    with pytest.raises(IntegrityError), transaction.atomic():
        _passages([("b", "new"), ("a", "clash")])

    assert dict(Passage.objects.values_list("passage_id", "text")) == {"a": "first"}


def test_no_rows_and_generators_are_accepted(db):
    _passages([])
    rows_insert(Passage, ["passage_id", "text", "source"], ((f"g{i}", f"t{i}", "") for i in range(3)))

    assert Passage.objects.count() == 3


def test_analyze_refreshes_the_planner_statistics_after_a_large_load(db):
    require_postgres("planner statistics are PostgreSQL's")
    _passages([(f"s{i}", "x") for i in range(ANALYZE_AT)], analyze=True)

    with connection.cursor() as cursor:
        cursor.execute("SELECT reltuples FROM pg_class WHERE relname = %s", [Passage._meta.db_table])
        assert cursor.fetchone()[0] == ANALYZE_AT
        cursor.execute("SELECT attname FROM pg_stats WHERE tablename = %s", [Passage._meta.db_table])
        assert {name for (name,) in cursor.fetchall()} == {"passage_id"}  # the key column; texts are left to autovacuum


def test_rows_update_sets_only_the_named_fields_of_the_given_rows(db, copy_format):
    _passages([("a", "one"), ("b", "two"), ("c", "three")])
    pks = dict(Passage.objects.values_list("passage_id", "pk"))

    rows_update(Passage, ["text"], [(pks["a"], AWKWARD[2]), (pks["c"], AWKWARD[3])])

    stored = {pid: (text, source) for pid, text, source in Passage.objects.values_list("passage_id", "text", "source")}
    assert stored == {"a": (AWKWARD[2], "test"), "b": ("two", "test"), "c": (AWKWARD[3], "test")}


def test_objects_insert_fills_defaults_and_objects_update_writes_foreign_keys_by_id(small_collection):
    conv = small_collection.conversations.get(topic_id="1")
    first = Turn.objects.get(collection=small_collection, turn_id="1_1")

    objects_insert([Turn(conversation=conv, collection=small_collection, number=9, turn_id="1_9", raw_utterance="x")])
    added = Turn.objects.get(turn_id="1_9")
    added.depends_on = first
    added.relevant_turn_numbers = [1]
    objects_update([added], ["depends_on", "relevant_turn_numbers"])

    added.refresh_from_db()
    assert (added.depends_on_id, added.relevant_turn_numbers, added.feedback_sentences) == (first.pk, [1], [])
    assert added.participant == Turn._meta.get_field("participant").default


def test_ids_reserve_gives_a_consecutive_block_that_no_later_insert_reuses(turn):
    assert ids_reserve(Paraphrase, 0) == []
    first = ids_reserve(Paraphrase, 3)  # a table never written to (SQLite has no counter row for it yet)
    earlier = factories.paraphrase(turn, "before", origin="added")
    ids = ids_reserve(Paraphrase, 5)

    assert first == list(range(first[0], first[0] + 3)) and earlier.pk > first[-1]
    assert ids == list(range(ids[0], ids[0] + 5)) and ids[0] > earlier.pk
    assert factories.paraphrase(turn, "after", origin="added").pk > ids[-1]
    cols = ["id", "turn_id", "kind", "text", "status", "origin", "provenance", "is_current", "created_at", "updated_at"]
    rows_insert(Paraphrase, cols, [(i, turn.pk, "raw", "r", "candidate", "added", {}, True, STAMP, STAMP) for i in ids])
    assert sorted(Paraphrase.objects.filter(kind="raw").values_list("pk", flat=True)) == ids


def test_ids_reserve_refuses_a_model_without_an_automatic_key(db):
    from django.contrib.sessions.models import Session

    with pytest.raises(ValueError, match="no automatic primary key"):
        ids_reserve(Session, 2)


def test_skip_conflicts_takes_a_generator_and_keeps_what_the_transaction_wrote_before(db):
    with transaction.atomic():
        _passages([("a", "first")])
        rows = ((pid, text, "test") for pid, text in [("b", "new"), ("a", "clash"), ("c", "more")])
        rows_insert(Passage, ["passage_id", "text", "source"], rows, skip_conflicts=True)

    assert dict(Passage.objects.values_list("passage_id", "text")) == {"a": "first", "b": "new", "c": "more"}


def test_a_doc_id_holding_a_newline_is_refused_rather_than_read_back_as_two():
    assert DocIdsField.pack(["a", "b c"]) == b"a\nb c"
    with pytest.raises(ValueError, match="a doc id holds a newline: 'b\\\\nc'"):
        DocIdsField.pack(["a", "b\nc"])


def test_a_load_streamed_from_a_generator_holds_one_row_not_every_distinct_blob(db):
    coll = factories.collection_of_turn_ids("Blobs", 2020, [f"{t}_1" for t in range(1, 401)])
    run = factories.run(coll, "r", {})
    turns = dict(Turn.objects.filter(collection=coll).values_list("turn_id", "pk"))

    def rows():
        for t in range(1, 401):  # 400 distinct rankings of 40 kB each: 16 MB in all
            docs = [f"t{t}-{r:06d}" for r in range(3000)]
            yield run.pk, turns[f"{t}_1"], DocIdsField.pack(docs), ScoresField.pack([1.0] * 3000)

    tracemalloc.start()
    try:
        rows_insert(RunTurn, ["run_id", "turn_id", "doc_ids", "scores"], rows())
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 6 << 20, f"peak {peak / (1 << 20):.1f} MiB"
    assert RunTurn.objects.filter(run=run).count() == 400
    assert RunTurn.objects.get(run=run, turn__turn_id="400_1").doc_ids[-1] == "t400-002999"
