"""The rating hot path's tables carry no index that another one makes redundant, and every foreign key still leads
an index (its look-ups and the cascades of a deleted campaign, item or user read through it)."""

from __future__ import annotations

import pytest
from django.db import connection

from judging.models import Rating, RatingAssignment

HOT_TABLES = [RatingAssignment, Rating]


def _indexes(model) -> list[tuple[list[str], bool]]:
    """(columns, unique) of every index on ``model``'s table, primary key included, as the database reports them."""
    with connection.cursor() as cursor:
        found = connection.introspection.get_constraints(cursor, model._meta.db_table)
    return [(list(c["columns"]), bool(c["unique"])) for c in found.values() if c["index"] or c["unique"]]


@pytest.mark.django_db
@pytest.mark.parametrize("model", HOT_TABLES, ids=lambda m: m.__name__)
def test_no_single_column_index_repeats_the_leading_column_of_another(model):
    indexes = _indexes(model)
    leading_wider = {cols[0] for cols, _ in indexes if len(cols) > 1}
    redundant = [cols for cols, unique in indexes if len(cols) == 1 and not unique and cols[0] in leading_wider]
    assert redundant == [], f"{model._meta.db_table}: {redundant} duplicate the head of a composite index"


@pytest.mark.django_db
@pytest.mark.parametrize("model", HOT_TABLES, ids=lambda m: m.__name__)
def test_every_foreign_key_leads_an_index(model):
    leading = {cols[0] for cols, _ in _indexes(model) if cols}
    foreign = [f.column for f in model._meta.concrete_fields if f.is_relation]
    assert foreign and set(foreign) <= leading, f"unindexed: {sorted(set(foreign) - leading)}"
