"""Built-in BM25 runs retrieve from their collection's corpus only, though passages of other corpora are stored beside
it."""

from __future__ import annotations

from pathlib import Path

import pytest

from ecast.models import Collection, Passage, TestSetItem
from evaluation.models import RunTurn
from evaluation.robustness import services
from tests import factories
from tests.ecast.imports.conftest import ok

pytestmark = pytest.mark.django_db

GARAGE = "Why did my garage door opener stop working?"


def _corpus(tmp_path: Path, name: str, texts: dict[str, str]) -> Path:
    path = tmp_path / f"{name}.tsv"
    path.write_text("".join(f"{pid}\t{text}\n" for pid, text in texts.items()), encoding="utf-8")
    return path


def _two_collections(tmp_path: Path) -> tuple[Collection, Collection]:
    """A and B ask the same question; B's corpus holds the passages that match it best."""
    a = factories.collection_with_turns("A", 2020, {"1": [GARAGE]})
    b = factories.collection_with_turns("B", 2023, {"1": [GARAGE]})
    a_texts = {
        "MARCO_1": "Misaligned safety sensors are why a garage door opener stops working.",
        "MARCO_2": "Plant tomatoes after the last frost.",
    }
    b_texts = {
        "clueweb22-b:1": "Garage door opener stopped working? Why my garage door opener stop working: garage door.",
        "clueweb22-b:2": "Meditation: why did my mind stop working? Breathe.",
    }
    ok("passages_tsv", _corpus(tmp_path, "a", a_texts), collection=a)
    ok("passages_tsv", _corpus(tmp_path, "b", b_texts), collection=b)
    return a, b


def test_a_test_sets_bm25_run_never_returns_a_passage_of_another_collections_corpus(tmp_path):
    a, _b = _two_collections(tmp_path)
    turn = a.turns.get()
    test_set = factories.testset(a)
    TestSetItem.objects.create(test_set=test_set, turn=turn, paraphrase=factories.paraphrase(turn, GARAGE))
    assert services.test_set_baseline_start(test_set=test_set) == "ecast-bm25-Rm_1"

    run = test_set.runs.get()  # made by the worker (tasks run inline in tests)
    ranked = RunTurn.objects.get(run=run).doc_ids
    assert ranked == ["MARCO_1"]  # B's passages match the question better, and are never retrieved
    assert "the corpus of A" in run.description and "(2 passages" in run.description


def test_without_passages_imported_for_the_collection_there_is_no_corpus_to_search(tmp_path):
    a, _b = _two_collections(tmp_path)
    other = factories.collection_with_turns("C", 2021, {"1": [GARAGE]})
    test_set = factories.testset(other)
    turn = other.turns.get()
    TestSetItem.objects.create(test_set=test_set, turn=turn, paraphrase=factories.paraphrase(turn, GARAGE))
    with pytest.raises(Exception, match="no passage of C's corpus has text yet"):
        services.test_set_baseline_start(test_set=test_set)
    assert services.corpus_with_text(collection=other) == ([], [])
    assert Passage.objects.count() == 4
