"""Demo runs with text on "CAsT 2020 demo": ecast's built-in BM25 (``evaluation.permutations.retrieval``, the one
BM25 in the product) over the demo collection's corpus (its CAsT 2020 passages; the CAsT 2021 and iKAT passages
shipped beside them belong to no demo collection), for the original turns and every paraphrase test set.

Unlike the id-only DECAF runs, every passage these runs retrieve has text, so their pool can be judged in the
browser, Table 11 compares each test set with its original turns (ECAsT, "Assessing evaluation robustness"), and a
new judgment moves the leaderboard. Runs go through the one run import (``ecast.imports``), linked to their test set.

The plans and the retrieval are ``evaluation.robustness.services`` (also behind the report's "run BM25 on this test
set" button). ``load(stdout=...)`` is idempotent: a run whose name exists is kept as it is.
"""

from __future__ import annotations

import sys
from typing import Any, TextIO

from django.contrib.auth.models import User

from ecast.management.commands.load_demo import DEMO_ACCOUNTS, DEMO_COLLECTION
from ecast.models import Collection, TestSet
from evaluation.models import Run
from evaluation.robustness import services

# The demo corpus is small and rich in judged passages, so scores are not comparable with runs over all of CAsT.
CORPUS = (
    "the demo collection's corpus, the CAsT 2020 passages with public text (small and rich in judged passages: not "
    "comparable with the full CAsT 2020 corpus)"
)


def load(stdout: TextIO | Any = None) -> list[Run]:
    """Make (once) the BM25 demo runs over the demo corpus and import them; returns the runs made now."""
    out = stdout or sys.stdout
    collection = Collection.objects.filter(name=DEMO_COLLECTION).first()
    if collection is None:
        out.write(f"robustness demo: no collection {DEMO_COLLECTION!r}; skipped\n")
        return []
    existing = set(
        Run.objects.filter(collection=collection, name__startswith=services.PREFIX).values_list("name", flat=True)
    )
    plans = services.original_plans(collection=collection) + [
        services.test_set_plan(test_set=ts)
        for ts in TestSet.objects.filter(collection=collection).order_by("kind", "index", "name")  # manual, then raw
    ]
    todo = [plan for plan in plans if plan.name not in existing]
    if not todo:
        out.write("robustness demo: BM25 runs already present\n")
        return []
    ids, texts = services.corpus_with_text(collection=collection)
    if not ids:
        out.write("robustness demo: the demo corpus is not loaded; BM25 runs skipped\n")
        return []
    user = User.objects.filter(username=DEMO_ACCOUNTS[0][0]).first()
    made = services.baseline_runs_make(
        collection=collection, plans=todo, ids=ids, texts=texts, corpus=CORPUS, user=user
    )
    out.write(
        f"robustness demo: {len(made)} BM25 run(s) over {len(ids):,} passages: {', '.join(r.name for r in made)}\n"
    )
    return made
