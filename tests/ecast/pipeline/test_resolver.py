"""The rule CQR resolver: a pronoun → its referent in the previous response or turn, with number agreement, or
the turn left alone when the resolver is not sure."""

from __future__ import annotations

from ecast.pipeline.resolver import resolve

BEES = "What are some interesting facts about bees?"
HONEY_RESPONSE = "Worker bees make honey from nectar. The average worker bee makes little honey. Honey never spoils."


def test_the_referent_can_come_from_the_previous_response():
    # The turn says nothing of honey; the response does ("Honey never spoils."), and "bees" is plural.
    assert resolve([BEES], "Why doesn't it spoil?", [HONEY_RESPONSE]) == "Why doesn't honey spoil?"


def test_without_a_response_a_singular_pronoun_is_not_given_a_plural_referent():
    assert resolve([BEES], "Why doesn't it spoil?") == "Why doesn't it spoil?"
    assert resolve(["Tell me about honey bees."], "Is it dangerous?") == "Is it dangerous?"


def test_the_pronoun_takes_a_referent_of_its_own_number():
    assert resolve(["Tell me about honey bees."], "Why are they dying?") == "Why are honey bees dying?"
    assert resolve(["What do bees make from nectar?"], "Does it spoil?") == "Does nectar spoil?"
    assert resolve(["Tell me about orange trees."], "What are their pests?") == "What are orange trees' pests?"
    assert resolve(["What is throat cancer?"], "What are its symptoms?") == "What are throat cancer's symptoms?"


def test_a_chain_of_pronouns_keeps_its_referent_and_a_new_topic_takes_over():
    history = ["What is throat cancer?", "Is it treatable?"]
    assert resolve(history, "How is it treated?") == "How is throat cancer treated?"
    assert resolve([*history, "Tell me about lung cancer."], "Is it curable?") == "Is lung cancer curable?"


def test_a_pronoun_that_may_refer_inside_the_turn_is_left_alone():
    text = "Once the cancer breaks out, how likely is it to spread?"
    assert resolve(["What is lobular carcinoma?"], text) == text


def test_an_expletive_it_and_unsure_cases_leave_the_turn_alone():
    for text in (
        "How long does it take to heal?",  # "it" refers to nothing
        "Is it safe to travel there?",
        "Is sealing worth it?",  # CAsT 2021 107_8 became "Is sealing worth asphalt?"
        "It sounds like a lot. What helps?",
        "What did they do to help?",  # people, never named
        "Yes, it'll be my first time.",
    ):
        assert resolve(["What is throat cancer?"], text) == text
    assert resolve([], "Is it treatable?") == "Is it treatable?"
    # Nothing of the pronoun's number in the previous turn: no guess.
    assert resolve(["How do I apply?"], "Is it hard?") == "Is it hard?"


def test_a_phrase_a_quantifier_opens_is_no_referent():
    # CAsT 2020 83_4 after "Why are so many dying?": "many dying" counts bees, it does not name them.
    history = ["What are some interesting facts about bees?", "Why doesn't it spoil?", "Why are so many dying?"]
    assert resolve(history, "What can be done to stop it?") == "What can be done to stop it?"
    # A phrase without a quantifier is still a referent.
    assert resolve(["Tell me about honey bees."], "Why are they dying?") == "Why are honey bees dying?"
    assert resolve(["Tell me about many honey bees."], "Why are they dying?") == "Why are they dying?"
