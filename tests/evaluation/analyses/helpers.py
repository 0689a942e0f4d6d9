"""Builders for analysis tests: a collection with judged turns, runs of known quality, qrels versions."""

from __future__ import annotations

import random

from ecast.models import TestSet, Turn
from evaluation.models import Qrel, QrelsVersion, Run, RunTurn
from tests import factories


def collection_with_qrels(n_topics: int = 3, turns_per_topic: int = 3, threshold: int = 1, name: str = "Analyses"):
    """Collection of n_topics × turns_per_topic turns; qrels: docs r<k> relevant (grade 2), n<k> judged non-relevant."""
    coll = factories.collection_with_turns(
        name=name,
        year=2020,
        conversations={str(t): [f"question {t}.{i}" for i in range(turns_per_topic)] for t in range(1, n_topics + 1)},
        threshold=threshold,
    )
    version = QrelsVersion.objects.create(collection=coll, name="original")
    for turn in Turn.objects.filter(collection=coll):
        Qrel.objects.bulk_create(
            [Qrel(version=version, turn=turn, passage_id=f"r{k}", grade=2) for k in range(3)]
            + [Qrel(version=version, turn=turn, passage_id=f"n{k}", grade=0) for k in range(3)]
        )
    return coll, version


def make_run(coll, name: str, quality: float, *, seed: int = 0, test_set: TestSet | None = None, probs: bool = False):
    """A run whose relevant docs rank high with probability ``quality`` (seeded), 6 docs per turn."""
    rng = random.Random(f"{name}-{seed}")
    run = Run.objects.create(collection=coll, name=name, test_set=test_set)
    rows = []
    for turn in Turn.objects.filter(collection=coll).order_by("turn_id"):
        docs = [f"r{k}" for k in range(3)] + [f"n{k}" for k in range(3)]
        keyed = sorted(docs, key=lambda d: -(rng.random() + (quality if d.startswith("r") else 0)))
        scores = (
            [round(1 - (i + rng.random() * 0.5) / 7, 4) for i in range(len(keyed))]
            if probs
            else [float(10 - i) for i in range(len(keyed))]
        )
        rows.append(RunTurn(run=run, turn=turn, doc_ids=keyed, scores=scores))
    RunTurn.objects.bulk_create(rows)
    return run


def make_test_set(coll, name: str, index: int = 1) -> TestSet:
    return TestSet.objects.create(collection=coll, name=name, kind=TestSet.Kind.MANUAL, index=index, seed=index)
