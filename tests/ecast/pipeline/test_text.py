"""Cleaning, BLEU settings, rule baselines and the CQR contract, on hand-worked inputs."""

from __future__ import annotations

import pytest

from ecast.pipeline import cqr_rewrite
from ecast.pipeline.bleu import corpus_bleu
from ecast.pipeline.clean import clean, near_duplicate
from ecast.pipeline.rules import entity_removal, pos_tag, template_paraphrases, tokenize
from ecast.pipeline.testsets import draw_test_sets


@pytest.mark.parametrize(
    ("a", "b", "dup"),
    [
        ("What is throat cancer?", "what is throat cancer", True),
        ("What is throat cancer?", "What's throat cancer?", True),  # a few characters
        ("What is throat cancer?", "What is laryngeal cancer?", True),  # one word
        ("What is throat cancer?", "Can you explain cancer of the throat?", False),
    ],
)
def test_near_duplicates(a, b, dup):
    assert near_duplicate(a, b) is dup


def test_clean_drops_copies_duplicates_and_low_similarity():
    result = clean(
        [
            "Is throat cancer treatable?",
            "Can throat cancer be treated?",
            "Can throat cancer be treated ?",
            "How do I bake cookies?",
            "",
        ],
        sources=["Is throat cancer treatable?"],
        similarity=lambda a, b: [0.1 if "cookies" in x else 0.9 for x in a],
        min_similarity=0.5,
    )
    assert result.kept == ["Can throat cancer be treated?"]
    assert [r for _, r in result.dropped] == [
        "identical to source",
        "near duplicate",
        "empty",
        "below similarity floor",
    ]
    assert result.rejected_by_similarity == 1


def test_clean_strips_control_characters_that_postgres_rejects():
    assert clean(["Why\x00 are\x1a bees\n dying?"], sources=["x"]).kept == ["Why are bees dying?"]


def test_bleu_is_sacrebleu_13a_without_smoothing():
    # Identical → 100; no 4-gram match and no smoothing → 0 (smoothing would give > 0).
    assert corpus_bleu(["Is throat cancer treatable ?"], ["Is throat cancer treatable?"]) == pytest.approx(100.0)
    assert corpus_bleu(["Is it treatable?"], ["Is throat cancer treatable?"]) == 0.0
    assert corpus_bleu([], []) is None


def test_entity_removal_drops_nouns_and_proper_nouns():
    assert entity_removal("What are the symptoms of throat cancer?") == "What are the of?"
    assert entity_removal("What did Barack Obama say about climate change?") == "What did say about?"
    text = "How does the Tesla Model S compare with the Venom?"
    tokens = tokenize(text)
    kept = [t for t, tag in zip(tokens, pos_tag(tokens), strict=True) if tag not in ("NOUN", "PROPN")]
    assert entity_removal(text).replace(" ", "") == "".join(kept)


def test_template_paraphrases_handle_questions_and_requests():
    assert template_paraphrases("What is throat cancer?")[0] == "Can you tell me what is throat cancer?"
    assert template_paraphrases("Tell me about bees.")[:2] == [
        "What can you tell me about bees?",
        "I would like to learn about bees.",
    ]
    assert template_paraphrases("  ") == []
    # the last sentence only, and only where a template makes English of it
    assert template_paraphrases("I would like to learn about GMO food labeling.")[0] == (
        "What can you tell me about GMO food labeling?"
    )
    assert template_paraphrases("Is it treatable?") == ["I'm curious: is it treatable?"]
    assert template_paraphrases("Now my garage door opener stopped working. Why?") == []
    assert template_paraphrases("My opener broke. How do I fix it?")[0] == "Can you tell me how do I fix it?"


def test_the_cqr_contract_is_batched_and_ordered():
    out = cqr_rewrite(
        [["What is throat cancer?"], ["Tell me about honey bees."]], ["Is it treatable?", "Why are they dying?"]
    )
    assert out == ["Is throat cancer treatable?", "Why are honey bees dying?"]
    assert cqr_rewrite([], []) == []
    with pytest.raises(ValueError, match="histories"):
        cqr_rewrite([[]], [])
    with pytest.raises(ValueError, match="choose one of"):
        cqr_rewrite([[]], ["x"], backend="nope")


def test_test_sets_use_each_text_once_even_when_two_records_repeat_it():
    cands = {"116_4": [10, 11, 12, 13], "116_5": [20, 21]}
    texts = {10: "What devices?", 11: "What  devices?", 12: "Which devices?", 13: "Name the devices.", 20: "A", 21: "B"}
    sets = draw_test_sets(cands, n_sets=4, seed=0, texts=texts)
    picked = [s["116_4"] for s in sets]
    assert picked.count(None) == 1 and 11 not in picked  # 10 and 11 are one text; the lower id stands for it
    shown = [" ".join(texts[p].split()) for p in picked if p is not None]
    assert sorted(shown) == ["Name the devices.", "What devices?", "Which devices?"]
    # Brute force over seeds: never the same text twice for a turn across the sets.
    for seed in range(200):
        drawn = draw_test_sets(cands, n_sets=3, seed=seed, texts=texts)
        for turn in ("116_4", "116_5"):
            got = [" ".join(texts[p].split()) for s in drawn if (p := s[turn]) is not None]
            assert len(got) == len(set(got))


def test_distinct_texts_draw_exactly_what_they_drew_before():
    cands = {"1_1": [1, 2, 3, 4], "1_2": [5, 6], "2_1": [7, 8, 9]}
    texts = {i: f"text {i}" for i in range(1, 10)}
    for seed in range(50):
        assert draw_test_sets(cands, n_sets=3, seed=seed, texts=texts) == draw_test_sets(cands, n_sets=3, seed=seed)


def test_test_sets_use_each_paraphrase_once_and_are_seeded():
    cands = {"1_1": [1, 2, 3, 4], "1_2": [5, 6], "2_1": [7, 8, 9]}
    sets = draw_test_sets(cands, n_sets=3, seed=4)
    assert sets == draw_test_sets(cands, n_sets=3, seed=4)
    used = [p for s in sets for p in s.values() if p is not None]
    assert len(used) == len(set(used)) == 8
    assert [s["1_2"] is None for s in sets] == [False, False, True]
    assert all(s["1_1"] in cands["1_1"] for s in sets)
