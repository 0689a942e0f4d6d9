"""Builders for evaluation tests: a collection with judged turns, qrels versions and runs, created directly."""

from __future__ import annotations

from pathlib import Path

from ecast.imports.formats.qrels import read_qrels
from ecast.imports.formats.runs import read_run
from ecast.models import Collection, Conversation, TestSet, Turn
from evaluation.models import Qrel, QrelsVersion, Run, RunTurn
from tests import factories

QRELS = {
    "1_1": {"d1": 2, "d2": 0, "d3": 1},
    "1_2": {"d4": 3, "d5": 0},
    "2_1": {"d6": 1, "d7": 2},
    "2_2": {"d8": 0},
}
# 1_3 and 2_3 are unjudged turns; run "weak" has no ranking for 2_1 (scores 0 there, trec_eval -c).
RUNS = {
    "strong": {
        "1_1": ["d1", "d3", "d2", "x1"],
        "1_2": ["d4", "x2", "d5"],
        "1_3": ["x3"],
        "2_1": ["d7", "d6"],
        "2_2": ["x4", "d8"],
    },
    "weak": {
        "1_1": ["x1", "d2", "d1"],
        "1_2": ["x2", "d5", "d4"],
        "2_2": ["d8"],
    },
}


def build(threshold: int = 1, name: str = "EvalMini") -> tuple[Collection, QrelsVersion, dict[str, Run]]:
    """Collection with two 3-turn conversations, an "original" qrels version and two runs."""
    coll = factories.collection_with_turns(
        name=name,
        year=2020,
        conversations={"1": ["a", "b", "c"], "2": ["d", "e", "f"]},
        threshold=threshold,
    )
    turns = {t.turn_id: t for t in coll.turns.all()}
    version = QrelsVersion.objects.create(collection=coll, name="original")
    Qrel.objects.bulk_create(
        [
            Qrel(version=version, turn=turns[q], passage_id=d, grade=g)
            for q, docs in QRELS.items()
            for d, g in docs.items()
        ]
    )
    runs = {}
    for name_, ranking in RUNS.items():
        run = Run.objects.create(collection=coll, name=name_)
        RunTurn.objects.bulk_create(
            [
                RunTurn(run=run, turn=turns[q], doc_ids=docs, scores=[float(len(docs) - i) for i in range(len(docs))])
                for q, docs in ranking.items()
            ]
        )
        runs[name_] = run
    return coll, version, runs


def add_run(coll: Collection, name: str, ranking: dict[str, list[str]], test_set: TestSet | None = None) -> Run:
    """Another run over the collection's turns."""
    from ecast.models import Turn

    turns = {t.turn_id: t for t in Turn.objects.filter(collection=coll)}
    run = Run.objects.create(collection=coll, name=name, test_set=test_set)
    RunTurn.objects.bulk_create(
        [
            RunTurn(run=run, turn=turns[q], doc_ids=docs, scores=[float(len(docs) - i) for i in range(len(docs))])
            for q, docs in ranking.items()
        ]
    )
    return run


def derive(version: QrelsVersion, name: str, extra: dict[str, dict[str, int]]) -> QrelsVersion:
    """A derived version: full copy of the parent's rows plus ``extra`` (grades override the parent's)."""
    from ecast.models import Turn

    child = QrelsVersion.objects.create(collection=version.collection, name=name, parent=version)
    turns = {t.turn_id: t for t in Turn.objects.filter(collection=version.collection)}
    rows = {
        (q.turn.turn_id, q.passage_id): q.grade for q in Qrel.objects.filter(version=version).select_related("turn")
    }
    for q, docs in extra.items():
        for d, g in docs.items():
            rows[(q, d)] = g
    Qrel.objects.bulk_create(
        [Qrel(version=child, turn=turns[q], passage_id=d, grade=g, source="assessed") for (q, d), g in rows.items()]
    )
    return child


def stored(*, version=None, run=None, turn=None, measure=None) -> list:
    """Stored scores in their public (run, turn, version, measure, value) shape, read through the one selector."""
    from evaluation.selectors import score_rows

    return list(
        score_rows(
            version_ids=None if version is None else [version.pk],
            run_ids=None if run is None else [run.pk],
            turn_pks=None if turn is None else [turn.pk],
            measures=None if measure is None else [measure],
        )
    )


def cast2019_decaf(shared_data: Path, runs: tuple[int, ...], name: str) -> tuple[Collection, QrelsVersion]:
    """CAsT 2019 (threshold 1) with its official qrels as "original" and the given DECAF runs ``exp<n>``, ranked as
    the run importer ranks (by score, ties by docid descending: trec_eval's order)."""
    qrels = read_qrels(shared_data / "cast/2019/2019qrels.txt")
    read = {n: read_run(shared_data / f"runs/cast2019_decaf/exp{n}.run.gz") for n in runs}
    coll = Collection.objects.create(name=name, year=2019, relevance_threshold=1)
    qids = sorted(set(qrels) | {q for r in read.values() for q in r})
    convs = {
        t: Conversation.objects.create(collection=coll, topic_id=t) for t in sorted({q.split("_")[0] for q in qids})
    }
    Turn.objects.bulk_create(
        [
            Turn(conversation=convs[q.split("_")[0]], collection=coll, number=int(q.split("_")[1]), turn_id=q)
            for q in qids
        ]
    )
    pk = dict(Turn.objects.filter(collection=coll).values_list("turn_id", "pk"))
    version = QrelsVersion.objects.create(collection=coll, name="original")
    Qrel.objects.bulk_create(
        [
            Qrel(version=version, turn_id=pk[q], passage_id=d, grade=g)
            for q, docs in qrels.items()
            for d, g in docs.items()
        ],
        batch_size=5000,
    )
    for n, run in read.items():
        r = Run.objects.create(collection=coll, name=f"exp{n}")
        rows = []
        for q, docs in run.items():
            ranked = sorted(docs.items(), key=lambda kv: (kv[1], kv[0]), reverse=True)
            rows.append(RunTurn(run=r, turn_id=pk[q], doc_ids=[d for d, _ in ranked], scores=[s for _, s in ranked]))
        RunTurn.objects.bulk_create(rows)
    return coll, version
