"""The relevance demo pools the BM25 demo runs (passages with text), derives "original + new" and leases topic 81
to assessor1; a judgment in that pool moves the leaderboard."""

import io

import pytest
from django.contrib.auth.models import User

from ecast.generation import demo as generation_demo
from ecast.management.commands.load_demo import COLLECTION_CORPUS, demo_collection_load, demo_corpus_ids
from ecast.models import Collection, Passage
from evaluation import demo as evaluation_demo
from evaluation.models import Qrel, QrelsVersion, RunTurn
from evaluation.robustness import demo as robustness_demo
from evaluation.selectors import leaderboard
from judging.models import AssessorAssignment, Pool, PoolPair
from judging.relevance import demo as relevance_demo
from judging.relevance import services as svc

pytestmark = pytest.mark.django_db


@pytest.fixture
def demo() -> Collection:
    """The demo collection as load_demo builds it up to the relevance demo: imports, test sets, BM25 runs."""
    out = io.StringIO()
    collection = demo_collection_load(stdout=out)
    generation_demo.test_sets_load(collection=collection, stdout=out)
    robustness_demo.load(stdout=out)
    return collection


def test_the_demo_pools_the_bm25_runs_whose_unjudged_passages_have_text(demo):
    out = io.StringIO()
    pool = relevance_demo.load(stdout=out)
    assert pool is not None and pool.depth == 3
    assert pool.runs.count() == 9 and all(r.name.startswith("ecast-bm25-") for r in pool.runs.all())
    pairs = PoolPair.objects.filter(pool=pool)
    assert pairs.count() == pool.stats["pairs"] > 0
    assert pool.stats["with_text"] == pairs.filter(has_text=True).count() == pairs.count()
    judged = set(Qrel.objects.filter(version__name="original").values_list("turn__turn_id", "passage_id"))
    pooled = set(pairs.values_list("turn__turn_id", "passage_id"))
    assert not pooled & judged
    assert Passage.objects.filter(passage_id__in={p for _, p in pooled}).exclude(text="").count() == len(
        {p for _, p in pooled}
    )
    assert pool.target_version.name == "original + new" and pool.target_version.qrels.count() == len(judged)
    lease = AssessorAssignment.objects.get(pool=pool)
    assert lease.assessor.username == "assessor1" and lease.conversation.topic_id == "81"

    relevance_demo.load(stdout=out)
    assert Pool.objects.filter(collection=demo).count() == 1 and AssessorAssignment.objects.count() == 1
    assert "already there" in out.getvalue()


def test_the_demo_pool_holds_only_passages_of_the_cast_2020_corpus(demo):
    pool = relevance_demo.load(stdout=io.StringIO())
    cast2020 = set(demo_corpus_ids(COLLECTION_CORPUS))
    pooled = set(PoolPair.objects.filter(pool=pool).values_list("passage_id", flat=True))
    assert pooled and pooled <= cast2020
    # Nothing of CAsT 2021 (MARCO_D…, KILT_…) or iKAT (ClueWeb22), whose texts the demo also stores.
    assert not {p for p in pooled if p.startswith(("MARCO_D", "KILT_", "WAPO_", "clueweb22-"))}
    # "Now it stopped working. Why?" (81_2, a garage door opener): the raw utterance's best passage is about garage
    # door openers, not a ClueWeb22 page on meditation ("So stop being…").
    for run in ("ecast-bm25-raw", "ecast-bm25-manual", "ecast-bm25-auto"):
        top = RunTurn.objects.get(run__name=run, turn__turn_id="81_2").doc_ids[0]
        assert top in cast2020 and "garage door" in Passage.objects.get(passage_id=top).text.lower()


def _means(version: QrelsVersion) -> dict[str, float]:
    return {row["run"]: row["headline"] for row in leaderboard(version=version, measures=["nDCG@3"])}


def test_a_judgment_in_the_demo_pool_changes_the_leaderboard(demo, django_capture_on_commit_callbacks):
    pool = relevance_demo.load(stdout=io.StringIO())
    evaluation_demo.load(stdout=io.StringIO())
    derived, original = pool.target_version, QrelsVersion.objects.get(collection=demo, name="original")
    before, before_original = _means(derived), _means(original)
    assert before == before_original  # nothing judged yet: the copy scores like the original

    lease = AssessorAssignment.objects.get(pool=pool)
    pair = (
        PoolPair.objects.filter(pool=pool, turn__conversation=lease.conversation, best_rank=1, has_text=True)
        .select_related("turn")
        .order_by("turn__number", "passage_id")
        .first()
    )
    assert pair is not None and pair.cluster_head_id == pair.pk
    with django_capture_on_commit_callbacks(execute=True):  # the live recompute runs as it does after a commit
        svc.judgment_submit(assignment=lease, pair=pair, grade=4, assessor=User.objects.get(username="assessor1"))

    after = _means(derived)
    rankings = RunTurn.objects.filter(run_id__in=pair.run_ids, turn=pair.turn).values_list("run__name", "doc_ids")
    first = {name for name, docs in rankings if docs[0] == pair.passage_id}
    # A formerly unjudged passage at rank 1 is now fully relevant: those runs gain nDCG@3 (others may move too, as
    # the ideal ranking of the turn changed); the original qrels, and their leaderboard, are untouched.
    assert first and all(after[name] > before[name] for name in first)
    assert _means(original) == before_original


def test_the_demo_skips_quietly_without_the_demo_collection():
    out = io.StringIO()
    assert relevance_demo.load(stdout=out) is None
    assert "skipped" in out.getvalue()
