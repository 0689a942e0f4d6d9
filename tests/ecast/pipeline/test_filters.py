"""The meaning rules drop what issue 38's new user got (worked by hand on those outputs) and pass the curated ECAsT
paraphrases of CAsT 2019–2020 almost always."""

from __future__ import annotations

import pytest

from ecast.pipeline import fewshot, filters
from ecast.pipeline.fewshot import Example
from tests.ecast.pipeline.ecast_helpers import ecast_pairs

BEES = "What can be done to stop bees dying?"
HONEY = "Why does honey not spoil?"


@pytest.mark.parametrize(
    ("source", "text", "reason"),
    [
        # "stop X" asked for a means; "what is stopping X" asks what keeps them alive: the meaning is reversed.
        (BEES, "What is stopping bees from dying?", filters.POLARITY),
        (BEES, "Can you add this: What is done to stop them from dying?", filters.ECHO),
        (BEES, "Rewrite: How can bees be saved?", filters.ECHO),
        (BEES, "Here is the question with different words: how do we save bees?", filters.ECHO),
        (HONEY, "The reason honey does not spoil is that they eat honey, so why not?", filters.STATEMENT),
        (HONEY, "Honey never spoils.", filters.STATEMENT),
        # the bees are gone and "demise" / "purpose" came from nowhere in the conversation
        (BEES, "What is the purpose of their demise?", filters.ENTITIES),
        (HONEY, "How does their lack spoil something?", filters.ENTITIES),
        (HONEY, "Why does honey spoil?", filters.POLARITY),  # the negation was dropped
        ("What causes throat cancer?", "What prevents throat cancer?", filters.POLARITY),
        ("What are the benefits of a vegan diet?", "What are the risks of a vegan diet?", filters.POLARITY),
        ("How does Netflix compare to Hulu?", "How does Amazon compare to Hulu?", filters.ENTITIES),
        # an exclamation is no question, whatever else it lost (it was counted as a polarity flip)
        ("Why doesn't it spoil?", "What an enigma.", filters.STATEMENT),
        (HONEY, "How strange!", filters.STATEMENT),
        # a second question about something else, and words said again that the source says once
        ("Why do cats eat plastic?", "Why do cats eat plastic? What is their primary predator?", filters.ADDITIONS),
        (
            "How likely is lobular carcinoma breast cancer to spread?",
            "How likely is cancer to spread from breast cancer to lobular cancer breast cancer?",
            filters.ADDITIONS,
        ),
        (
            "Will eating plastic kill a cat?",
            "Is eating plastic a cruel and cruel way to kill a cat?",
            filters.ADDITIONS,
        ),
        (
            "What does a cat's slow blink mean?",
            "What is a cat's slow blink, it's a sign of a cat's slow blink.",
            filters.ADDITIONS,
        ),
    ],
)
def test_each_rule_drops_the_outputs_that_change_what_the_source_asks(source, text, reason):
    assert filters.first_failure(text, source, "") == reason


@pytest.mark.parametrize(
    ("source", "text"),
    [
        (BEES, "How can we prevent bees from dying?"),
        (BEES, "What can stop bees from dying?"),
        (HONEY, "Why doesn't honey go bad?"),
        (HONEY, "What keeps honey from spoiling? Why doesn't it go off?"),
        ("Is throat cancer treatable?", "Can cancer of the throat be cured?"),
        ("Tell me about the Bronze Age collapse.", "What do we know about the collapse of the Bronze Age?"),
        ("What is throat cancer?", "I would like to know what throat cancer is."),
        ("What happens if Lyme Disease goes untreated?", "What happens if Lyme disease is not treated?"),
        ("Did the Justice League or The Avengers come first?", "Which came first: the Avengers or the Justice League?"),
        ("What do Mako sharks eat?", "What is the diet of a mako shark?"),
        # "No," answers the system; it negates nothing the paraphrase must keep
        (
            "No, I meant the alternatives to surgery for lobular cancer.",
            "What are the alternatives to surgery for lobular cancer?",
        ),
        ("What? No. Will eating plastic kill my cat?", "Can eating plastic kill my cat?"),
        (
            "What are the health effects of being vegan?",
            "What is the health effect of eating a vegan diet versus eating meat?",
        ),
    ],
)
def test_faithful_rewordings_pass_every_rule(source, text):
    assert filters.first_failure(text, source, "") == ""


def test_nouns_the_conversation_already_named_are_not_new():
    source, text = "What are its symptoms?", "How do I know if I have throat cancer?"
    assert not filters.is_entity_swap(text, source, "What is throat cancer?")
    assert filters.is_entity_swap(text, source, "")  # "symptoms" gone, "throat cancer" from nowhere


GARAGE_SHOTS = [
    ("How much does it cost to replace a garage door opener?", "What does a new garage door opener cost?"),
    ("What does a smart garage door opener do?", "What can a smart garage door opener do?"),
]


def test_an_output_that_brings_in_the_topic_of_the_prompts_examples_is_dropped():
    # The demo's few-shot pool is about garage doors; that topic leaked into a paraphrase of a bee question.
    context = "What are some interesting facts about bees?"
    text, source = "Why are so many bees dying near a garage door?", "Why are so many bees dying?"
    assert filters.first_failure(text, source, context, GARAGE_SHOTS) == filters.ENTITIES
    assert filters.first_failure(text, source, context) == ""  # without the examples nothing says it leaked
    # the examples' rewording words are no topic: "price" is shared by a faithful output and an example
    shots = [("How much is a Lamborghini?", "What is the price of a Lamborghini?")]
    assert filters.first_failure("What is the price of a garage door?", "How much is a garage door?", "", shots) == ""


def test_a_word_the_conversation_already_has_is_no_leak_even_when_the_examples_have_it():
    context = "How do I fix my garage door?"
    text, source = "What is wrong with the garage door opener?", "What is wrong with its opener?"
    assert not filters.is_entity_swap(text, source, context, GARAGE_SHOTS)


def test_a_statement_source_may_be_paraphrased_by_a_statement():
    assert not filters.is_statement("I would like to learn about sharks.", "Tell me about sharks.")
    assert not filters.is_statement("Sharks fascinate me.", "I like sharks.")


def test_the_rules_pass_almost_every_curated_ecast_paraphrase(shared_data):
    pairs = [p for p in ecast_pairs(shared_data, (2019, 2020)) if p.para_manual.lower() != p.manual.lower()]
    failed = {rule.name: 0 for rule in filters.RULES}
    for p in pairs:
        for rule in filters.RULES:
            failed[rule.name] += rule.drops(p.para_manual, p.manual, "")
    # The examples a prompt would have retrieved for the pair (other conversations) bring in no topic it drops.
    pool = [Example(p.manual, p.para_manual, p.topic) for p in pairs]
    leaks = sum(
        filters.is_entity_swap(p.para_manual, p.manual, "", fewshot.select(p.manual, pool, conversation=p.topic))
        and not filters.is_entity_swap(p.para_manual, p.manual, "")
        for p in pairs[::10]
    )
    assert leaks <= 0.02 * len(pairs[::10])  # measured on a random 600 of them: 5
    # Measured: 5,456 pairs; echo 0, statement 9, polarity 58, entities 255 (curators kept some drift:
    # "Was the Neverending Story film a book first?" → "Is The NeverEnding Story a novel adaptation?"), additions
    # 56 (curators kept some second questions: "What is TREC? Who are the founders?").
    assert len(pairs) == 5456
    assert failed["echo"] <= 5 and failed["statement"] <= 15 and failed["polarity"] <= 60
    assert failed["entities"] <= 0.05 * len(pairs) and failed["additions"] <= 0.015 * len(pairs)


def test_a_rewrite_loses_only_words_the_conversation_already_said():
    manual = "What is the primary reason behind the death of bees?"
    context = "What are some interesting facts about bees? Why are so many dying?"
    assert filters.lost_words("What is the primary reason?", manual, context) == {"death"}
    assert filters.lost_words("What is the primary reason behind their death?", manual, context) == set()
