"""A small pair of assessments for agreement tests: the mini collection's "original" and a derived version."""

from __future__ import annotations

from ecast.models import Collection
from evaluation import services
from evaluation.models import QrelsVersion, Run
from tests import factories
from tests.evaluation.helpers import add_run, build, derive

# Re-judged in B: d1 2 → 0 and d4 3 → 2; x1 (ranked first by "weak" for 1_1) judged only in B.
CHANGES = {"1_1": {"d1": 0, "x1": 4}, "1_2": {"d4": 2}}
# The nine items both judge, in report order (1_1 d1 d2 d3, 1_2 d4 d5, 2_1 d6 d7, 2_2 d8, 3_1 d9).
GRADES_A = [2, 0, 1, 3, 0, 1, 2, 0, 0]
GRADES_B = [0, 0, 1, 2, 0, 1, 2, 0, 0]


def build_pair() -> tuple[Collection, QrelsVersion, QrelsVersion, dict[str, Run]]:
    """Original and "original + new" with three runs scored under both; topic 3 has one item both grade 0."""
    coll, original, runs = build()
    turn = factories.turn(factories.conversation(coll, "3"), 1, "third topic")
    factories.qrels(original, {turn.turn_id: {"d9": 0}})
    runs["middle"] = add_run(coll, "middle", {"1_1": ["d3", "d1"], "1_2": ["d5", "d4"], "2_1": ["d6"]})
    derived = derive(original, "original + new", CHANGES)
    for v in (original, derived):
        services.scores_compute_for_version(version=v, measures=["nDCG@3", "AP"])
    return coll, original, derived, runs
