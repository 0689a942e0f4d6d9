"""Leaderboard snapshots are stored even before any run exists (qrels imported first)."""

import pytest

from evaluation.services import leaderboard_snapshot_create
from tests import factories


@pytest.mark.django_db
def test_it_stores_an_empty_snapshot_for_a_version_without_runs():
    coll = factories.collection(name="No runs yet")
    version = factories.qrels_version(coll)
    snap = leaderboard_snapshot_create(version=version, trigger="qrels imported")
    assert snap.pk is not None
    assert snap.entries == []
    assert snap.qrels_count == 0
