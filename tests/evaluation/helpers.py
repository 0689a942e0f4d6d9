"""Builders for evaluation tests: a collection with judged turns, qrels versions and runs, created directly."""

from __future__ import annotations

from pathlib import Path

from ecast.imports.formats.qrels import read_qrels
from ecast.imports.formats.runs import read_run
from ecast.models import Collection, TestSet
from evaluation.models import QrelsVersion, Run
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
    version = factories.qrels_version(coll, "original", QRELS)
    return coll, version, {name_: factories.run(coll, name_, ranking) for name_, ranking in RUNS.items()}


def add_run(coll: Collection, name: str, ranking: dict[str, list[str]], test_set: TestSet | None = None) -> Run:
    """Another run over the collection's turns."""
    return factories.run(coll, name, ranking, test_set=test_set)


def derive(version: QrelsVersion, name: str, extra: dict[str, dict[str, int]]) -> QrelsVersion:
    """A derived version: full copy of the parent's rows plus ``extra`` (grades override the parent's)."""
    return factories.qrels_derived(version, name, extra, source="assessed")


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
    coll = factories.collection_of_turn_ids(name, 2019, [*qrels, *(q for r in read.values() for q in r)], threshold=1)
    version = factories.qrels_version(coll, "original", qrels)
    for n, run in read.items():
        factories.run_scored(coll, f"exp{n}", run)
    return coll, version
