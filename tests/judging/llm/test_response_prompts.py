"""Prompt building and reply reading for LLM judging of responses (no model, no Django)."""

from __future__ import annotations

import pytest

from judging.llm import response_prompts as rp


@pytest.mark.parametrize(
    ("reply", "label"),
    [
        ("##label: 2", "support"),
        ("##label: 1", "partial_support"),
        ("**Label:** 0", "not_support"),
        ("I'd say 2.", "support"),
        ("Not supported.", "not_support"),
        ("partial support", "partial_support"),
        ("The answer supports it.", "support"),
        ("2.5", None),  # a decimal is no label digit
        ("3", None),  # outside the scale
        ("", None),
        ("I cannot tell.", None),
        ("I am not sure.", None),
    ],
)
def test_a_nugget_assignment_reply_is_read_as_digit_then_word(reply, label):
    assert rp.label_of(reply, rp.ASSIGN) == label


@pytest.mark.parametrize(
    ("reply", "label"),
    [("##label: 2", "full"), ("1", "partial"), ("No support at all", "none"), ("Full support.", "full"), ("?", None)],
)
def test_a_citation_reply_is_read_on_the_trec_scale(reply, label):
    assert rp.label_of(reply, rp.CITE) == label


def test_label_probabilities_renormalise_over_the_task_labels_ties_to_the_lower_digit():
    # digits 0..4 as judge.digit_probabilities gives them; the assignment task reads 0..2 only.
    label, dist, mass = rp.label_probabilities([0.1, 0.3, 0.1, 0.4, 0.1], rp.ASSIGN)
    assert label == "partial_support" and dist == pytest.approx([0.2, 0.6, 0.2]) and mass == pytest.approx(0.5)
    assert rp.label_probabilities([0.2, 0.2, 0.0], rp.CITE)[0] == "none"  # tie 0/1: the lower digit
    assert rp.label_probabilities([0.0, 0.0, 0.0], rp.ASSIGN) == ("not_support", [1 / 3] * 3, 0.0)
    assert rp.label_probabilities([0.1, 0.3], rp.IMPORTANCE)[0] == "vital"


def test_nuggets_are_read_from_lines_brackets_or_json_and_deduplicated():
    reply = "Here are the nuggets:\n1. vital: Throat cancer starts in the pharynx\n- **okay**: Smoking raises risk\n"
    reply += "* vital - throat cancer starts in the pharynx\nSurgery cures early cases (okay)\nno nugget here"
    assert rp.nuggets_of(reply, max_nuggets=10) == [
        rp.DraftNugget("Throat cancer starts in the pharynx", "vital"),
        rp.DraftNugget("Smoking raises risk", "okay"),
        rp.DraftNugget("Surgery cures early cases", "okay"),
    ]
    as_json = 'Sure: [{"text": "Bees pollinate", "importance": "vital"}, {"text": "Mites kill", "importance": "x"}]'
    assert rp.nuggets_of(as_json, max_nuggets=1) == [rp.DraftNugget("Bees pollinate", "vital")]
    assert rp.nuggets_of("I do not know.", max_nuggets=5) is None


def test_candidate_nuggets_are_the_sentences_closest_to_the_question():
    passages = [
        "Bees are insects. Colony collapse disorder kills honey bee colonies in winter.",
        "Neonicotinoid pesticides harm honey bee colonies. Short.",
    ]
    got = rp.candidate_nuggets("Why do honey bee colonies collapse?", passages, max_nuggets=2)
    # 4 shared content words, then 3 ("honey", "bee", "colonies"); "Bees are insects." (< 20 chars) is no fact.
    assert got == [
        "Colony collapse disorder kills honey bee colonies in winter.",
        "Neonicotinoid pesticides harm honey bee colonies.",
    ]


def test_prompts_show_the_question_with_its_rewrite_and_the_texts():
    q = rp.question_text("Is it curable?", "Is throat cancer curable?")
    assert q == "Is it curable? (meaning: Is throat cancer curable?)"
    assert rp.question_text("Same", "Same") == "Same"
    user = rp.assign_messages(question=q, answer="Yes.", nugget="Curable early")[1]["content"]
    assert "Question: Is it curable? (meaning" in user and "Answer: Yes." in user and "Nugget: Curable early" in user
    cite = rp.cite_messages(sentence="S.", passage="P.")[1]["content"]
    assert "Sentence: S.\nCited passage: P." in cite
    create = rp.create_messages(question="Q?", passages=["a", "b"], max_nuggets=4)[1]["content"]
    assert "Passage 1: a\nPassage 2: b" in create and "at most 4 nuggets" in create
