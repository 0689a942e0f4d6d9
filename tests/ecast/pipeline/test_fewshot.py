"""Few-shot retrieval from curated pairs of other conversations, and the ranking that keeps the best k."""

from __future__ import annotations

import pytest

from ecast.pipeline import fewshot
from ecast.pipeline.fewshot import Example

POOL = [
    Example("What are the different types of sharks?", "How many kinds of sharks are there?", "40"),
    Example("What are the different types of orange trees?", "Which varieties of orange trees exist?", "90"),
    Example("What are the different types of orange trees?", "Can you name the kinds of orange trees?", "90"),
    Example("How is throat cancer treated?", "What treatments exist for cancer of the throat?", "31"),
    Example("Why do cats purr?", "Why do cats purr?", "60"),  # a copy: never shown
    Example("What is a tiger shark?", "Tiger sharks are big.", "41"),  # a statement: never shown
]


def test_the_most_similar_pairs_of_other_conversations_are_chosen_one_per_source():
    shots = fewshot.select("What are the different types of lavender?", POOL, conversation="55", k=2)
    assert shots == [
        ("What are the different types of sharks?", "How many kinds of sharks are there?"),
        ("What are the different types of orange trees?", "Which varieties of orange trees exist?"),
    ]


def test_pairs_of_the_same_conversation_are_never_chosen():
    shots = fewshot.select("What are the different types of sharks?", POOL, conversation="40", k=1)
    assert shots == [("What are the different types of orange trees?", "Which varieties of orange trees exist?")]


def test_copies_and_statements_are_not_usable_examples():
    assert not fewshot.usable(POOL[4]) and not fewshot.usable(POOL[5]) and fewshot.usable(POOL[0])


def test_without_a_similar_pair_the_fixed_set_is_used():
    fixed = [(e.source, e.paraphrase) for e in fewshot.FALLBACK[:3]]
    assert fewshot.select("Why do cats purr?", [], k=3) == fixed
    assert fewshot.select("Zebras?", POOL, k=3) == fixed  # no word in common with any pool source


def test_the_fixed_set_passes_its_own_checks():
    from ecast.pipeline import filters

    assert all(fewshot.usable(e) and not filters.first_failure(e.paraphrase, e.source) for e in fewshot.FALLBACK)


def test_overlap_is_the_share_of_bigrams_the_source_also_has():
    # <s> what, what is, is x, x </s>: all four in the source
    assert fewshot.overlap("What is X?", "what is x") == 1.0
    # <s> how, how is, is x, x </s> against <s> what, what is, is x, x </s>: 2 of 4
    assert fewshot.overlap("How is X?", "What is X?") == 0.5


def test_ranking_keeps_the_best_k_by_meaning_less_a_diversity_penalty():
    texts = ["Is throat cancer treatable?!", "Can throat cancer be cured?", "How do I bake bread?"]
    sims = {texts[0]: 0.95, texts[1]: 0.9, texts[2]: 0.2}
    kept, below, out, scores = fewshot.rank(
        texts,
        ["Is throat cancer treatable?"] * 3,
        reference="Is throat cancer treatable?",
        similarity=lambda a, b: [sims[x] for x in a],
        keep=1,
    )
    # the near copy: 0.95 − 0.3 × 1.0 = 0.65; the rewording: 0.9 − 0.3 × 2/6 (<s> can … ; "cancer be" etc. differ)
    assert scores[0] == pytest.approx(0.65)
    assert scores[1] == pytest.approx(0.9 - 0.3 * fewshot.overlap(texts[1], "Is throat cancer treatable?"))
    assert kept == ["Can throat cancer be cured?"] and below == [] and out == [texts[0], texts[2]]


def test_paraphrases_far_from_the_manual_rewrite_fall_below_the_meaning_floor():
    texts = ["Can throat cancer be cured?", "How do I bake bread?"]
    sims = {texts[0]: 0.9, texts[1]: 0.2}
    kept, below, out, _ = fewshot.rank(
        texts,
        ["x", "x"],
        reference="Is throat cancer treatable?",
        similarity=lambda a, b: [sims[t] for t in a],
        keep=4,
        floor=0.75,
    )
    assert (kept, below, out) == (["Can throat cancer be cured?"], ["How do I bake bread?"], [])


def test_ranking_keeps_everything_without_a_limit():
    kept, below, out, _ = fewshot.rank(["a b", "c d"], ["x", "y"], reference="", similarity=None, keep=None)
    assert kept == ["a b", "c d"] and below == out == []
