"""pool_create: depth-k unjudged pairs from runs, statistics, near-duplicate clusters."""

import pytest
from django.core.exceptions import ValidationError

from judging.models import PoolPair
from judging.relevance import pool_pairs, pools
from tests import factories
from tests.judging.relevance import helpers


def _pairs(pool):
    return {(p.turn.turn_id, p.passage_id) for p in PoolPair.objects.filter(pool=pool).select_related("turn")}


@pytest.mark.django_db
def test_it_pools_the_top_k_passages_not_judged_in_the_chosen_version(small_collection):
    pool, _ = helpers.standard_pool(small_collection, depth=3)
    assert _pairs(pool) == {
        ("1_1", "d2"), ("1_1", "d3"), ("1_1", "d4"),  # d1 judged, d9 below depth 3
        ("1_2", "f1"), ("1_2", "f2"), ("1_2", "f3"), ("1_2", "f5"), ("1_2", "f6"),
        ("2_1", "e2"), ("2_1", "e3"), ("2_1", "e4"),  # e1 judged
    }  # fmt: skip
    d2 = PoolPair.objects.get(pool=pool, passage_id="d2")
    assert d2.best_rank == 1 and len(d2.run_ids) == 2


@pytest.mark.django_db
def test_it_reports_pairs_per_turn_run_contribution_and_unique_pairs(small_collection):
    helpers.passages({"d2": "some text", "f1": "other text"})
    pool, _ = helpers.standard_pool(small_collection, depth=3)
    stats = pool.stats
    assert stats["pairs"] == 11
    assert stats["per_turn"] == {"1_1": 3, "1_2": 5, "2_1": 3}
    # A: d2 d3 f1 f2 f3 e2 e3 = 7; B: d2 d4 f1 f5 f6 e4 e2 = 7; shared: d2 f1 e2
    assert stats["per_run"] == {"A": {"contributed": 7, "unique": 4}, "B": {"contributed": 7, "unique": 4}}
    assert stats["unique_to_one_run"] == 8
    assert stats["with_text"] == 2
    assert stats["already_judged_skipped"] == 4  # d1 (A, B), e1 (A, B)
    assert stats["judgments_needed"] == 11


@pytest.mark.django_db
def test_depth_and_turn_filter_restrict_the_pool(small_collection):
    pool, _ = helpers.standard_pool(small_collection, depth=1, turn_ids=["1_1", "1_2"])
    assert _pairs(pool) == {("1_1", "d2"), ("1_2", "f1")}
    assert pool.turn_filter == ["1_1", "1_2"]


@pytest.mark.django_db
def test_turn_filter_accepts_turn_primary_keys(small_collection):
    t = helpers.turn(small_collection, "2_1")
    pool, _ = helpers.standard_pool(small_collection, depth=2, turn_ids=[t.pk])
    assert _pairs(pool) == {("2_1", "e2"), ("2_1", "e4")}


@pytest.mark.django_db
def test_near_duplicates_share_one_cluster_head_and_passages_without_text_stay_alone(small_collection):
    helpers.passages(
        {
            "f1": "The garage door opener light stopped working after the storm last night.",
            "f2": "the garage door opener light stopped working after the storm last night!",
            "f3": "Completely different passage about bees and why they are dying.",
        }
    )
    pool, _ = helpers.standard_pool(small_collection, depth=3, cluster_near_duplicates=True)
    f1 = PoolPair.objects.get(pool=pool, passage_id="f1")
    f2 = PoolPair.objects.get(pool=pool, passage_id="f2")
    assert f1.cluster_head_id == f1.pk and f2.cluster_head_id == f1.pk
    for pid in ("f3", "f5", "f6", "d2"):
        p = PoolPair.objects.get(pool=pool, passage_id=pid)
        assert p.cluster_head_id == p.pk
    assert pool.stats["judgments_needed"] == 10 and pool.stats["clustered_pairs"] == 1


@pytest.mark.django_db
def test_it_rejects_runs_and_versions_of_another_collection(small_collection):
    other = factories.collection(name="Other")
    foreign_version = factories.qrels_version(other)
    run = helpers.run(small_collection, "A", {"1_1": ["d1"]})
    with pytest.raises(ValidationError, match="another collection"):
        pools.pool_create(collection=small_collection, qrels_version=foreign_version, runs=[run])
    version = factories.qrels_version(small_collection)
    with pytest.raises(ValidationError, match="select at least one run"):
        pools.pool_create(collection=small_collection, qrels_version=version, runs=[])
    with pytest.raises(ValidationError, match="depth"):
        pools.pool_create(collection=small_collection, qrels_version=version, runs=[run], depth=0)
    with pytest.raises(ValidationError, match="unknown"):
        pools.pool_create(collection=small_collection, qrels_version=version, runs=[run], turn_ids=["9_9"])


def _stored_pairs(pool):
    """Every pair as stored, with its cluster head named by passage, in pk order."""
    rows = PoolPair.objects.filter(pool=pool).select_related("turn", "cluster_head").order_by("pk")
    return [
        (p.turn.turn_id, p.passage_id, [r for r in p.run_ids], p.best_rank, p.has_text, p.cluster_head.passage_id)
        for p in rows
    ]


@pytest.mark.django_db
@pytest.mark.parametrize("options", [{}, {"cluster_near_duplicates": True}, {"text_only": True}])
def test_a_pool_built_a_turn_at_a_time_stores_the_same_pairs_clusters_and_statistics(
    small_collection, monkeypatch, options
):
    helpers.passages(
        {
            "f1": "The garage door opener light stopped working after the storm last night.",
            "f2": "the garage door opener light stopped working after the storm last night!",
            "d3": "A passage about throat cancer.",
            "e2": "Bees.",
        }
    )
    whole, _ = helpers.standard_pool(small_collection, depth=3, name="whole", **options)
    monkeypatch.setattr(pool_pairs, "POOL_CHUNK", 1)  # one turn per chunk: three chunks
    chunked = pools.pool_create(
        collection=small_collection, qrels_version=whole.qrels_version, runs=list(whole.runs.all()), depth=3,
        name="chunked", **options,
    )  # fmt: skip
    names = {r.pk: r.name for r in whole.runs.all()}
    as_names = [(*p[:2], sorted(names[r] for r in p[2]), *p[3:]) for p in _stored_pairs(whole)]
    assert [(*p[:2], sorted(names[r] for r in p[2]), *p[3:]) for p in _stored_pairs(chunked)] == as_names
    assert len(as_names) >= 4 and chunked.stats == whole.stats
