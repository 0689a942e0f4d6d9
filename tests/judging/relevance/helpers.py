"""Pools for relevance-judging tests and judging them as an assessor does; the rows under them (runs, qrels,
passages, assessors) come from tests/factories.py, by the short names these tests use."""

from __future__ import annotations

from django.contrib.auth.models import User

from ecast.core.permissions import ASSESSOR
from ecast.models import Collection, Turn
from evaluation.models import QrelsVersion, Run
from judging.models import Pool, PoolPair
from judging.relevance import ordering, pools, services
from tests import factories


def turn(coll: Collection, turn_id: str) -> Turn:
    return Turn.objects.get(collection=coll, turn_id=turn_id)


def run(coll: Collection, name: str, rankings: dict[str, list[str]]) -> Run:
    return factories.run(coll, name, rankings)


def qrels(coll: Collection, judgments: dict[str, dict[str, int]], name: str = "original") -> QrelsVersion:
    return factories.qrels_version(coll, name, judgments)


def passages(texts: dict[str, str]) -> None:
    factories.passages(texts)


def assessor_user(username: str) -> User:
    return factories.user(username, ASSESSOR)


def standard_pool(coll: Collection, **kwargs) -> tuple[Pool, QrelsVersion]:
    """Topic 1 turns 1–2 and topic 2 turn 1 ranked by two runs; a few pairs already judged in "original"."""
    original = qrels(coll, {"1_1": {"d1": 2}, "2_1": {"e1": 0}})
    run_a = run(coll, "A", {"1_1": ["d1", "d2", "d3", "d9"], "1_2": ["f1", "f2", "f3"], "2_1": ["e1", "e2", "e3"]})
    run_b = run(coll, "B", {"1_1": ["d2", "d4", "d1"], "1_2": ["f1", "f5", "f6"], "2_1": ["e4", "e1", "e2"]})
    pool = pools.pool_create(collection=coll, qrels_version=original, runs=[run_a, run_b], **kwargs)
    return pool, original


# An MTF-friendly topic: three runs on 1_1, two on 1_2 (hand-worked orders in test_ordering.py).
ORDERED_RUNS = {
    "A": {"1_1": ["d1", "d2", "d3"], "1_2": ["f1", "f2"], "2_1": ["e1", "e2"]},
    "B": {"1_1": ["d4", "d1", "d5"], "1_2": ["f2", "f3"], "2_1": ["e2", "e3"]},
    "C": {"1_1": ["d6", "d7"], "2_1": ["e4", "e1"]},
}


def ordered_pool(coll: Collection, strategy: str, **kwargs) -> Pool:
    """Topics 1 and 2 ranked by runs A, B, C; nothing judged before."""
    original = qrels(coll, {"2_2": {"zz": 0}}, name=f"original {Pool.objects.count()}")
    runs = [run(coll, f"{name}{Pool.objects.count() or ''}", rankings) for name, rankings in ORDERED_RUNS.items()]
    return pools.pool_create(collection=coll, qrels_version=original, runs=runs, strategy=strategy, **kwargs)


def judge_by_queue(assignment, relevant: set[str], assessor) -> list[str]:
    """Judge a topic pair by pair as the queue hands them out: 3 if in ``relevant``, else 0."""
    seen = []
    while (pk := ordering.next_pair(assignment=assignment)) is not None:
        pair = PoolPair.objects.select_related("turn").get(pk=pk)
        seen.append(pair.passage_id)
        services.judgment_submit(
            assignment=assignment, pair=pair, grade=3 if pair.passage_id in relevant else 0, assessor=assessor
        )
    return seen
