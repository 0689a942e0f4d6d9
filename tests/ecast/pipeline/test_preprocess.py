"""Preprocessing on real CAsT 2021 turns: Punkt, final question, feedback/revealment, unreliable responses."""

from __future__ import annotations

import json

import pytest

from ecast.pipeline import nlp_data
from ecast.pipeline.preprocess import (
    is_negative_feedback,
    pick_replacement,
    preprocess,
    split_sentences,
    unreliable_responses,
)


@pytest.fixture(scope="module")
def cast2021(shared_data):
    topics = json.loads((shared_data / "cast/2021/2021_manual_evaluation_topics_v1.0.json").read_text())
    return {f"{t['number']}_{u['number']}": u for t in topics for u in t["turn"]}


def test_punkt_keeps_abbreviations_inside_sentences():
    assert split_sentences("Dr. Smith moved to the U.S. in 1990. Why?") == [
        "Dr. Smith moved to the U.S. in 1990.",
        "Why?",
    ]


def test_vader_alone_misses_the_cue_phrase_but_the_detector_does_not():
    from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

    assert SentimentIntensityAnalyzer().polarity_scores("No, that's not what I meant.")["compound"] == 0.0
    assert is_negative_feedback("No, that's not what I meant.")
    assert not is_negative_feedback("Wow, that's better than I thought.")


def test_a_leading_clause_of_the_final_sentence_counts_as_negative_feedback():
    text = "Okay, but I meant their response to the EndSars protests."
    assert is_negative_feedback(text)
    result = preprocess(text)
    assert result.negative_feedback
    assert result.feedback == ["Okay"]
    assert result.final_question == "But I meant their response to the EndSars protests."


def test_complaints_without_a_classic_cue_are_negative_and_vader_topic_words_are_not():
    from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

    vader = SentimentIntensityAnalyzer()
    basic = "That’s too basic, I’d like a more scientific explanation."
    assert vader.polarity_scores(basic)["compound"] > 0  # VADER alone reads it as positive
    assert is_negative_feedback(basic) and preprocess(basic).negative_feedback
    # "depression" pulls VADER below zero, but the user says the answer was interesting.
    praise = "I found the Indian student's approach to treating depression interesting."
    assert vader.polarity_scores(praise)["compound"] < 0
    assert not is_negative_feedback(praise)
    # A preference, not a correction.
    assert not preprocess("I would rather be safe. Do the positives outweigh the negatives?").negative_feedback


def test_requests_with_first_person_words_are_not_revealment():
    for text in (
        "Can you tell me more about Chibanda's approach? How effective has it been?",
        "I’d like to learn more about frogs. What’s the biggest one?",
        "How about my diet, what should I consider changing?",
    ):
        assert preprocess(text).revealment == [], text
    result = preprocess("I’d like to stop. What are some treatment options?")  # a wish, not a request
    assert result.revealment == ["I’d like to stop."]


def test_clauses_are_split_only_where_categories_differ():
    assert preprocess("I have a larger chip, how do the options different?").revealment == ["I have a larger chip"]
    assert preprocess("Once it breaks out, how likely is it to spread?").final_question == (
        "Once it breaks out, how likely is it to spread?"
    )
    result = preprocess("No, I'm starting to train for a marathon, what is a one week diet?")
    assert (result.feedback, result.revealment, result.final_question) == (
        ["No"],
        ["I'm starting to train for a marathon"],
        "What is a one week diet?",
    )
    assert preprocess("No, I meant the funny car. How fast is it?").feedback == ["No, I meant the funny car."]
    assert preprocess("My mum loves a good, scented lotion. Which one?").revealment == [
        "My mum loves a good, scented lotion."
    ]
    assert split_sentences("OK. Tell me more.") == ["OK. Tell me more."]  # Punkt reads "OK." as an abbreviation
    assert preprocess("OK. Tell me more.").feedback == ["OK."]


@pytest.mark.parametrize(
    ("turn_id", "question", "feedback", "revealment", "negative"),
    [
        ("106_1", "What are the most common types?", [], ["I just had a breast biopsy for cancer."], False),
        # The comma-joined "No" is a feedback clause, as the sentence "No." is in 109_3.
        ("106_4", "I want to know about the deadliness of lobular carcinoma in situ.", ["What?", "No"], [], True),
        ("106_5", "What are common treatments?", ["Wow, that's better than I thought."], [], False),
        ("109_3", "Will eating plastic kill my cat?", ["What?", "No."], [], True),
        (
            "111_8",
            "How does its quickness compare to the Venom?",
            ["No, I meant the funny car.", "But, that’s interesting."],
            ["I heard it has a ludicrous mode."],
            True,
        ),
        ("110_7", "Which one would be the best to use?", [], ["I’m going to bake some cookies."], False),
    ],
)
def test_it_splits_real_cast_2021_turns(cast2021, turn_id, question, feedback, revealment, negative):
    result = preprocess(cast2021[turn_id]["raw_utterance"])
    assert result.final_question == question
    assert result.feedback == feedback
    assert result.revealment == revealment
    assert result.negative_feedback is negative


def test_every_cast_2021_turn_keeps_a_question_and_loses_no_part(cast2021):
    for turn in cast2021.values():
        result = preprocess(turn["raw_utterance"])
        assert result.final_question
        assert len(result.feedback) + len(result.revealment) + len(result.other) + 1 == len(result.parts)
        assert len(result.parts) >= len(result.sentences)
        # Parts are the sentences cut at clause boundaries: nothing is lost but the commas that joined them.
        assert _letters(" ".join(result.parts)) == _letters(" ".join(result.sentences))


def _letters(text: str) -> str:
    return "".join(c.lower() for c in text if c.isalnum())


def test_negative_feedback_marks_the_previous_response_unreliable():
    assert unreliable_responses([False, False, True, False, True]) == [False, True, False, True, False]
    # In a tree the turn blamed is the one the feedback follows (its parent), not the one numbered before it.
    assert unreliable_responses([False, False, True, True], [None, 0, 0, 1]) == [True, True, False, False]


def test_replacement_prefers_grade_4_then_3_and_passages_with_text():
    assert pick_replacement({"a": 3, "b": 4, "c": 4}) == "b"
    assert pick_replacement({"a": 3, "b": 4, "c": 4}, with_text={"c"}) == "c"
    assert pick_replacement({"a": 3, "z": 2}) == "a"
    assert pick_replacement({"z": 2}) is None


def test_missing_punkt_data_fails_with_the_install_command(tmp_path, monkeypatch):
    monkeypatch.setenv("ECAST_NLTK_DATA", str(tmp_path))
    with pytest.raises(nlp_data.NlpDataMissing, match="python -m ecast.pipeline.nlp_data"):
        nlp_data.ensure_punkt()
    nlp_data.install()
    assert nlp_data.ensure_punkt() == tmp_path / "tokenizers/punkt_tab/english"
    assert "dr" in (tmp_path / "tokenizers/punkt_tab/english/abbrev_types.txt").read_text().split()
