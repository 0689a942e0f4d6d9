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


@pytest.mark.parametrize(
    ("turn_id", "question", "feedback", "revealment", "negative"),
    [
        ("106_1", "What are the most common types?", [], ["I just had a breast biopsy for cancer."], False),
        ("106_4", "I want to know about the deadliness of lobular carcinoma in situ.", ["What?"], [], True),
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


def test_every_cast_2021_turn_keeps_a_question_and_loses_no_sentence(cast2021):
    for turn in cast2021.values():
        result = preprocess(turn["raw_utterance"])
        assert result.final_question
        assert len(result.feedback) + len(result.revealment) + len(result.other) + 1 == len(result.sentences)


def test_negative_feedback_marks_the_previous_response_unreliable():
    assert unreliable_responses([False, False, True, False, True]) == [False, True, False, True, False]


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
