"""Small factories for relevance-judging tests: runs, qrels and passages created directly as rows."""

from __future__ import annotations

from django.contrib.auth.models import Group, User

from ecast.models import Collection, Passage, Turn
from evaluation.models import Qrel, QrelsVersion, Run, RunTurn
from judging.models import Pool, PoolPair
from judging.relevance import ordering, pools, services


def turn(coll: Collection, turn_id: str) -> Turn:
    return Turn.objects.get(collection=coll, turn_id=turn_id)


def run(coll: Collection, name: str, rankings: dict[str, list[str]]) -> Run:
    r = Run.objects.create(collection=coll, name=name)
    for turn_id, docs in rankings.items():
        RunTurn.objects.create(
            run=r, turn=turn(coll, turn_id), doc_ids=list(docs), scores=[float(len(docs) - i) for i in range(len(docs))]
        )
    return r


def qrels(coll: Collection, judgments: dict[str, dict[str, int]], name: str = "original") -> QrelsVersion:
    version = QrelsVersion.objects.create(collection=coll, name=name)
    for turn_id, docs in judgments.items():
        for doc, grade in docs.items():
            Qrel.objects.create(version=version, turn=turn(coll, turn_id), passage_id=doc, grade=grade)
    return version


def passages(texts: dict[str, str]) -> None:
    for pid, text in texts.items():
        Passage.objects.create(passage_id=pid, text=text)


def assessor_user(username: str) -> User:
    user = User.objects.create_user(username=username, password="pass-" + username)
    user.groups.add(Group.objects.get_or_create(name="assessor")[0])
    return user


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
