"""The relevance demo builds a depth-3 pool of the demo runs, "original + new" and assessor1's first topic."""

import io
import json
from pathlib import Path

import pytest

from ecast.models import Collection, Conversation, Passage, Turn
from evaluation.models import Qrel, QrelsVersion, Run, RunTurn
from judging.models import AssessorAssignment, Pool, PoolPair
from judging.relevance import demo as relevance_demo

DEMO = Path(__file__).resolve().parents[3] / "ecast" / "demo"


def _demo_collection() -> Collection:
    """The demo collection built straight from ecast/demo files (the importers are another feature's)."""
    coll = Collection.objects.create(name="CAsT 2020 demo", year=2020, relevance_threshold=2)
    turns = {}
    for topic in json.loads((DEMO / "2020_manual_evaluation_topics_v1.0_extended.json").read_text()):
        conv = Conversation.objects.create(collection=coll, topic_id=str(topic["number"]))
        for t in topic["turn"]:
            tid = f"{topic['number']}_{t['number']}"
            turns[tid] = Turn.objects.create(
                conversation=conv,
                collection=coll,
                number=t["number"],
                turn_id=tid,
                raw_utterance=t["raw_utterance"],
                manual_rewrite=t["manual_rewritten_utterance"],
            )
    version = QrelsVersion.objects.create(collection=coll, name="original")
    Qrel.objects.bulk_create(
        Qrel(version=version, turn=turns[q], passage_id=d, grade=int(g))
        for q, _, d, g in (line.split() for line in (DEMO / "2020qrels_81-83.txt").read_text().splitlines())
        if q in turns
    )
    for name, file in (("decaf-exp1", "decaf_exp1_81-83.run"), ("decaf-exp2", "decaf_exp2_81-83.run")):
        run = Run.objects.create(collection=coll, name=name)
        ranking: dict[str, list[str]] = {}
        for line in (DEMO / file).read_text().splitlines():
            q, _, d, *_ = line.split()
            ranking.setdefault(q, []).append(d)
        RunTurn.objects.bulk_create(RunTurn(run=run, turn=turns[q], doc_ids=docs) for q, docs in ranking.items())
    for line in (DEMO / "passages_81-83.tsv").read_text().splitlines():
        pid, text = line.split("\t", 1)
        Passage.objects.get_or_create(passage_id=pid, defaults={"text": text})
    return coll


@pytest.mark.django_db
def test_the_demo_builds_its_pool_version_and_lease_once():
    coll = _demo_collection()
    out = io.StringIO()
    pool = relevance_demo.load(stdout=out)
    assert pool is not None and pool.depth == 3 and pool.runs.count() == 2
    assert pool.target_version.name == "original + new"
    judged = set(Qrel.objects.filter(version__name="original").values_list("turn__turn_id", "passage_id"))
    pooled = set(PoolPair.objects.filter(pool=pool).values_list("turn__turn_id", "passage_id"))
    assert pooled and not pooled & judged
    assert pool.target_version.qrels.count() == len(judged)
    lease = AssessorAssignment.objects.get(pool=pool)
    assert lease.assessor.username == "assessor1" and lease.conversation.topic_id == "81"
    relevance_demo.load(stdout=out)
    assert Pool.objects.filter(collection=coll).count() == 1 and AssessorAssignment.objects.count() == 1
    assert "already there" in out.getvalue()


@pytest.mark.django_db
def test_the_demo_skips_quietly_without_the_demo_collection():
    out = io.StringIO()
    assert relevance_demo.load(stdout=out) is None
    assert "skipped" in out.getvalue()
