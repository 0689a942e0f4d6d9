"""The built-in extractive baseline answer, hand-worked."""

from __future__ import annotations

from evaluation.responses import baseline


def test_sentences_are_punkt_sentences_so_abbreviations_do_not_end_one():
    text = "Throat cancer is rare.  It is treatable! The U.S. Army saw 3 cases. Dr. Smith treats it."
    assert baseline.sentences_of(text) == [
        "Throat cancer is rare.",
        "It is treatable!",
        "The U.S. Army saw 3 cases.",
        "Dr. Smith treats it.",
    ]


def test_the_answer_takes_the_best_sentences_weighted_by_rank_one_per_passage_in_rank_order():
    passages = [
        ("p1", "Paris is in France. The Eiffel tower is in Paris and is tall."),
        ("p2", "The Eiffel tower was built in 1889 for the fair."),
        ("p3", "The Eiffel tower is a tower in Paris, built by Eiffel."),
    ]
    # Query words {eiffel, tower, built}. p1: s2 has 2/3 → 0.667/1; p2: s1 has 3/3 → 1/2 = 0.5;
    # p3: s1 has 3/3 → 1/3 = 0.333. Two sentences: p1's second and p2's, in rank order.
    answer = baseline.extractive_answer("When was the Eiffel tower built?", passages, params={"sentences": 2})
    assert [(s.text, s.citations) for s in answer.sentences] == [
        ("The Eiffel tower is in Paris and is tall.", ("p1",)),
        ("The Eiffel tower was built in 1889 for the fair.", ("p2",)),
    ]
    assert answer.text == "The Eiffel tower is in Paris and is tall. The Eiffel tower was built in 1889 for the fair."
    assert answer.references == ["p1", "p2", "p3"]


def test_no_passage_gives_an_empty_answer():
    assert baseline.extractive_answer("anything", [], params={}).sentences == []
