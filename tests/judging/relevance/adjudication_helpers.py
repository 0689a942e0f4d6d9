"""Two assessments of the mini collection for adjudication tests: A ("assessor 1") and B ("assessor 2")."""

from __future__ import annotations

from ecast.models import Collection
from evaluation.models import QrelsVersion
from tests import factories

# Agreed: 1_1 d1 (2), 2_1 e1 (0). Disagreements: 1_1 d2 (A 3, B 1), 1_2 f1 (A 0, B 4). Only in A: 1_1 d3 (1).
# Only in B: 2_2 e2 (2).
A = {"1_1": {"d1": 2, "d2": 3, "d3": 1}, "1_2": {"f1": 0}, "2_1": {"e1": 0}}
B = {"1_1": {"d1": 2, "d2": 1}, "1_2": {"f1": 4}, "2_1": {"e1": 0}, "2_2": {"e2": 2}}
TEXTS = {"d2": "Throat cancer is treatable when found early.", "f1": "Smoking and alcohol cause most throat cancers."}


def two_assessments(coll: Collection) -> tuple[QrelsVersion, QrelsVersion]:
    """Versions A and B of ``coll`` (the passages in dispute have text)."""
    factories.passages(TEXTS)
    return factories.qrels_version(coll, "assessor 1", A), factories.qrels_version(coll, "assessor 2", B)
