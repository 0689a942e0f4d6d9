"""Built-in BM25 baseline runs for the robustness report: the original turns and each paraphrase test set.

One BM25 in the product (``evaluation.permutations.retrieval``, bm25s) over the passages of the collection's corpus
(those imported for it) that have text; runs go through the one run import (``ecast.imports``), linked to their test
set, so Table 11 compares each test set with its original turns (ECAsT, "Assessing evaluation robustness"). Raw
test sets are reformulated before retrieval, as the paper does, by ecast's rule-based CQR given the set's earlier
turns.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError

from ecast.core.errors import DomainError
from ecast.core.jobs import enqueue
from ecast.imports.services import run_import
from ecast.models import Collection, TestSet, Turn
from ecast.selectors import leaf_paths
from evaluation.models import Run
from evaluation.permutations import retrieval

PREFIX = "ecast-bm25-"
DEPTH = 100
BASELINE_TASK = "evaluation.robustness.test_set_baseline"
MAX_PASSAGES = 2_000_000  # an in-memory bm25s index beyond this belongs on a machine of its own


@dataclass
class BaselinePlan:
    """One run to make: its name, test set (None for the original turns), what it queries, the query per turn id."""

    name: str
    test_set: TestSet | None
    what: str
    queries: dict[str, retrieval.WeightedQuery]


def corpus_with_text(*, collection: Collection) -> tuple[list[str], list[str]]:
    """(ids, texts) of the passages of the collection's corpus that have text, in id order: its built-in runs never
    retrieve a passage of another corpus stored beside it."""
    rows = collection.corpus.exclude(text="").order_by("passage_id").values_list("passage_id", "text")
    ids, texts = [], []
    for pid, text in rows.iterator(chunk_size=5000):
        ids.append(pid)
        texts.append(text)
    return ids, texts


def corpus_label(collection: Collection) -> str:
    """How a run's description names the corpus it searched."""
    return f"the corpus of {collection.name} (the passages imported for it)"


def _conversations(collection: Collection) -> list[list[Turn]]:
    """Each conversation's User turns in order; a tree (CAsT 2022) gives one list per root-to-leaf path, so a turn is
    reformulated given its own path (a turn on several paths gets the same query from each)."""
    out: dict[int, list[Turn]] = {}
    for turn in Turn.objects.filter(collection=collection).order_by("conversation_id", "number"):
        out.setdefault(turn.conversation_id, []).append(turn)
    return [[t for t in path if not t.is_system] for turns in out.values() for path in leaf_paths(turns)]


def _plain(texts: dict[str, str]) -> dict[str, retrieval.WeightedQuery]:
    return {tid: [(text, 1.0)] for tid, text in texts.items()}


def original_plans(*, collection: Collection) -> list[BaselinePlan]:
    """Runs over the original turns: raw utterances, manual rewrites, CAsT's automatic rewrites."""
    turns = [t for conv in _conversations(collection) for t in conv]
    originals = {
        "raw": ("the raw utterances u_i as they are (no context)", {t.turn_id: t.raw_utterance for t in turns}),
        "manual": ("the manual rewrites m_i (CAsT)", {t.turn_id: t.manual_rewrite or t.raw_utterance for t in turns}),
        "auto": (
            "the automatic rewrites r_i that CAsT ships (its neural CQR of u_i)",
            {t.turn_id: t.automatic_rewrite or t.raw_utterance for t in turns},
        ),
    }
    return [BaselinePlan(PREFIX + key, None, what, _plain(texts)) for key, (what, texts) in originals.items()]


def test_set_run_name(test_set: TestSet) -> str:
    """The name of a test set's BM25 run, e.g. ecast-bm25-Rm_2."""
    letter = "r" if test_set.kind == TestSet.Kind.RAW else "m"
    return f"{PREFIX}R{letter}_{test_set.index}"


def test_set_plan(*, test_set: TestSet) -> BaselinePlan:
    """The run of one test set: p^m as it is (R^m), or p^r reformulated given the set's earlier turns (R^r)."""
    conversations = _conversations(test_set.collection)
    chosen = dict(test_set.items.values_list("turn_id", "paraphrase__text"))
    name = test_set_run_name(test_set)
    if test_set.kind == TestSet.Kind.MANUAL:
        turns = [t for conv in conversations for t in conv]
        texts = {t.turn_id: chosen.get(t.pk) or t.manual_rewrite or t.raw_utterance for t in turns}
        what = f"manual paraphrase test set {test_set.name}: each turn's paraphrase p^m as it is (its m_i where none)"
        return BaselinePlan(name, test_set, what, _plain(texts))
    queries: dict[str, retrieval.WeightedQuery] = {}
    for conv in conversations:
        utterances = {t.number: chosen.get(t.pk) or t.raw_utterance for t in conv}
        by_number = retrieval.queries_for_order("rewrite", [t.number for t in conv], utterances)
        queries.update({t.turn_id: by_number[t.number] for t in conv})
    what = (
        f"raw paraphrase test set {test_set.name}: each turn's paraphrase p^r (its u_i where none), reformulated by "
        "ecast's rule-based CQR given the set's earlier turns"
    )
    return BaselinePlan(name, test_set, what, queries)


def description(what: str, n_passages: int, corpus: str) -> str:
    return (
        f"ecast's built-in BM25 baseline (bm25s, k1={retrieval.K1}, b={retrieval.B}) over {corpus} "
        f"({n_passages:,} passages, all with text), top {DEPTH} per turn; queries: {what}."
    )


def baseline_runs_make(
    *, collection: Collection, plans: Sequence[BaselinePlan], ids: list[str], texts: list[str], corpus: str, user: Any
) -> list[Run]:
    """Retrieve for every plan with one index and import each as a run (a run of the same name is replaced)."""
    index = retrieval.index_for_corpus(Path(settings.ECAST_CACHE_DIR), ids, texts)
    made = []
    with tempfile.TemporaryDirectory(prefix="ecast-bm25-runs-") as tmp:
        for plan in plans:
            path = Path(tmp) / f"{plan.name}.run"
            with open(path, "w", encoding="utf-8") as fh:
                for turn_id, query in plan.queries.items():
                    docs, scores = index.search(query, DEPTH)
                    for rank, (doc, score) in enumerate(zip(docs, scores, strict=True), start=1):
                        fh.write(f"{turn_id} Q0 {doc} {rank} {score:.6f} {plan.name}\n")
            run = run_import(
                collection=collection,
                path=path,
                name=plan.name,
                user=user,
                test_set=plan.test_set,
                options={"description": description(plan.what, len(ids), corpus)},
            )
            made.append(run)
    return made


def test_set_baseline_start(*, test_set: TestSet, user: Any = None) -> str:
    """Check that a BM25 run of the test set can be made, then make it in the worker; returns the run's name."""
    if not test_set.items.exists():
        raise ValidationError(f"test set {test_set.name} has no paraphrases")
    n = test_set.collection.corpus.exclude(text="").count()
    if n == 0:
        raise DomainError(
            f"no passage of {test_set.collection.name}'s corpus has text yet: import passage texts for it (Data → "
            "Imports, kind “passages”, this collection chosen) so BM25 has a corpus",
            code="conflict",
        )
    if n > MAX_PASSAGES:
        raise DomainError(f"{n:,} passages with text: more than the built-in BM25 indexes ({MAX_PASSAGES:,})")
    enqueue(BASELINE_TASK, test_set.pk, getattr(user, "pk", None))
    return test_set_run_name(test_set)


def test_set_baseline_make(*, test_set_id: int, user_id: int | None = None) -> Run | None:
    """Worker: BM25 over the collection's corpus for one test set (idempotent: replaces a run of the same name)."""
    test_set = TestSet.objects.select_related("collection").filter(pk=test_set_id).first()
    if test_set is None:
        return None
    ids, texts = corpus_with_text(collection=test_set.collection)
    if not ids:
        return None
    user = get_user_model().objects.filter(pk=user_id).first() if user_id else None
    plan = test_set_plan(test_set=test_set)
    corpus = corpus_label(test_set.collection)
    return baseline_runs_make(
        collection=test_set.collection, plans=[plan], ids=ids, texts=texts, corpus=corpus, user=user
    )[0]
