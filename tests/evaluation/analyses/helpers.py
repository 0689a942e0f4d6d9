"""Builders for analysis tests: a collection with judged turns, runs of known quality, qrels versions."""

from __future__ import annotations

import random

from ecast.models import TestSet, Turn
from tests import factories


def collection_with_qrels(n_topics: int = 3, turns_per_topic: int = 3, threshold: int = 1, name: str = "Analyses"):
    """Collection of n_topics × turns_per_topic turns; qrels: docs r<k> relevant (grade 2), n<k> judged non-relevant."""
    coll = factories.collection_with_turns(
        name=name,
        year=2020,
        conversations={str(t): [f"question {t}.{i}" for i in range(turns_per_topic)] for t in range(1, n_topics + 1)},
        threshold=threshold,
    )
    graded = {**{f"r{k}": 2 for k in range(3)}, **{f"n{k}": 0 for k in range(3)}}
    version = factories.qrels_version(coll, "original", {t.turn_id: graded for t in coll.turns.all()})
    return coll, version


def make_run(coll, name: str, quality: float, *, seed: int = 0, test_set: TestSet | None = None, probs: bool = False):
    """A run whose relevant docs rank high with probability ``quality`` (seeded), 6 docs per turn."""
    rng = random.Random(f"{name}-{seed}")
    rankings, scores = {}, {}
    for turn in Turn.objects.filter(collection=coll).order_by("turn_id"):
        docs = [f"r{k}" for k in range(3)] + [f"n{k}" for k in range(3)]
        rankings[turn.turn_id] = sorted(docs, key=lambda d: -(rng.random() + (quality if d.startswith("r") else 0)))
        scores[turn.turn_id] = (
            [round(1 - (i + rng.random() * 0.5) / 7, 4) for i in range(len(docs))]
            if probs
            else [float(10 - i) for i in range(len(docs))]
        )
    return factories.run(coll, name, rankings, test_set=test_set, scores=scores)


def make_test_set(coll, name: str, index: int = 1) -> TestSet:
    return factories.testset(coll, name, TestSet.Kind.MANUAL, index)
