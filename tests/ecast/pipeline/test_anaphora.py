"""The anaphora context-removal rule (the default CR) on hand-worked and real CAsT 2020 examples."""

from __future__ import annotations

import json

import pytest

from ecast.pipeline import backends
from ecast.pipeline.anaphora import anaphora_cr, singular
from ecast.pipeline.bleu import corpus_bleu
from ecast.pipeline.grammar import problems
from ecast.pipeline.rules import entity_removal

THROAT = ["What is throat cancer?", "Is it treatable?"]
BEES = ["What are some interesting facts about bees?", "Why doesn't it spoil?"]
OPENER = ["How do you know when your garage door opener is going bad?"]


@pytest.mark.parametrize(
    ("text", "history", "expected"),
    [
        # "the X of E" → "its X": the entity after "of" becomes a possessive
        ("What are the symptoms of throat cancer?", THROAT, "What are its symptoms?"),
        ("What is the main economic activity of Salt Lake City?", ["How does Salt Lake City differ?"],
         "What is its main economic activity?"),
        # subject it / they, object it / them, by number and place
        ("Is throat cancer treatable?", THROAT[:1], "Is it treatable?"),
        ("What can be done to stop bees from dying?", BEES, "What can be done to stop them from dying?"),
        ("What would happen if the bees died out?", BEES, "What would happen if they died out?"),
        ("How could smart garage door openers be hacked?", [*OPENER, "What does a smart one do?"],
         "How could they be hacked?"),
        # a quantifier keeps its "of"
        ("Why are so many bees dying?", BEES, "Why are so many of them dying?"),
        # a proper-noun place after "in" → "there"
        ("What was the culture like in the Ottoman Empire?", ["Can I have information on the Ottoman Empire?"],
         "What was the culture like there?"),
        # "E's X" → "its X"
        ("What was Boeing's response to the Airbus A380's success?", ["Tell me about the Airbus A380."],
         "What was Boeing's response to its success?"),
        # only the head was said before, after an adjective: "one"
        ("How do I choose a new garage door opener?", OPENER, "How do I choose a new one?"),
        # after type / kind / variety the entity is left out
        ("What type of orange tree has thorns?", ["What are the different types of orange trees?"],
         "What type has thorns?"),
        # a modifier said before (as a plural) becomes a possessive
        ("What has happened to bee habitat?", BEES, "What has happened to their habitat?"),
        # "which" + the entity → "which one"
        ("Which vegan milk is best for baking?", ["What is vegan milk?"], "Which one is best for baking?"),
        # "DNA-based" modifies "testing": a default job wrote "Can Co-Extra enhance DNA-based it?"
        ("Can Co-Extra enhance DNA-based testing for GMO contamination?", ["How is food tested for GMO contamination?"],
         "Can Co-Extra enhance DNA-based testing for it?"),
    ],
)  # fmt: skip
def test_the_established_entity_becomes_its_anaphor(text, history, expected):
    assert anaphora_cr(text, history) == expected


@pytest.mark.parametrize(
    ("text", "history"),
    [
        ("Why doesn't honey spoil?", BEES),  # honey was never mentioned
        ("What is throat cancer?", ["What is throat cancer?"]),  # "What is it?" keeps no content word
        ("What is the role of slavery?", ["What was the role of storytellers?"]),  # "role" is generic
        ("How do populations of predators and prey relate?", ["What is the relationship between predator and prey?"]),
        ("Is throat cancer treatable?", []),  # first turns keep their context
        # one item of a list, a name given in quotes or after "call them", a superlative, a restrictive clause
        ("Which of the milk options (almond, oat, hemp, rice milk) is the healthiest?", ["Why is oat milk popular?"]),
        ("Why do people call them funny cars?", ["What are funny cars?"]),
        ('What does the story of the "Funny Cars" mean?', ["What are Funny Cars?"]),
        ("What's the best vegan milk for a latte?", ["What is the best vegan milk for baking?"]),
        ("What was the first car that goes fast?", ["What was the first car?"]),
        # "almond" (tagged as a preposition) modifies "milk": "making almond it" would be no English
        ("What is the process of making almond milk?", ["What are the benefits of cow milk?"]),
        # a gerund after "of E" needs its "of": not "What's its odds spreading to lobular cancer?"
        ("What's the odds of breast cancer spreading to lobular cancer?", ["Do I have breast cancer?"]),
    ],
)
def test_it_leaves_the_text_alone_when_no_anaphor_fits(text, history):
    assert anaphora_cr(text, history) == text


def test_it_uses_he_or_she_for_a_name_when_the_conversation_does():
    history = ["Who was Michael Jackson?", "What happened to his skin?"]
    assert anaphora_cr("How did Michael Jackson's skin conditions affect his art?", history) == (
        "How did his skin conditions affect his art?"
    )


def test_singular_forms_match_plural_mentions():
    assert [singular(w) for w in ("bees", "varieties", "boxes", "analysis", "series", "people", "plastics")] == [
        "bee",
        "variety",
        "box",
        "analysis",
        "series",
        "person",
        "plastic",
    ]


def _cast2020(shared_data):
    topics = json.loads((shared_data / "cast/2020/2020_manual_evaluation_topics_v1.0.json").read_text())
    for topic in topics:
        history: list[str] = []
        for turn in topic["turn"]:
            manual = turn.get("manual_rewritten_utterance") or ""
            if turn["number"] > 1 and manual:
                yield f"{topic['number']}_{turn['number']}", turn["raw_utterance"], manual, list(history)
            history += [turn["raw_utterance"], manual]


def test_on_cast_2020_it_never_leaves_broken_text_and_often_writes_the_real_raw_turn(shared_data):
    outputs = {tid: (raw, manual, anaphora_cr(manual, history)) for tid, raw, manual, history in _cast2020(shared_data)}
    assert len(outputs) == 191
    assert not [out for _, manual, out in outputs.values() if problems(out) and not problems(manual)]
    changed = [tid for tid, (_, manual, out) in outputs.items() if out != manual]
    assert len(changed) > 90  # 106 of 191 when this was written
    # Turns where the rule writes exactly what the CAsT user typed (checked by hand).
    same_as_user = {tid for tid, (raw, _, out) in outputs.items() if out == raw}
    assert {
        "81_2", "81_5", "81_6", "81_7", "81_8", "82_10", "83_5", "83_8", "84_3", "85_2", "86_3", "87_3", "87_4",
        "88_3", "88_4", "89_4", "90_3", "90_6", "92_7", "93_6", "95_7",
    } <= same_as_user  # fmt: skip


def test_the_anaphora_backend_reads_the_earlier_manual_rewrites():
    cr = backends.get("cr", "anaphora")
    # The raw history only says "it"; the manual rewrite of turn 2 names the entity.
    out = cr.cr(
        ["Why are so many bees dying?"],
        [["What are some interesting facts about honey?", "Why do they make it?"]],
        {"manual_history": ["What are some interesting facts about honey?", "Why do bees make honey?"]},
    )
    assert out == ["Why are so many of them dying?"]
    assert backends.get("cr", "rule").cr(["Is throat cancer treatable?"], [THROAT[:1]], {}) == ["Is it treatable?"]


def test_entity_removal_stays_as_the_papers_named_baseline():
    cr = backends.get("cr", "entity_removal")
    assert cr.cr(["What are the symptoms of throat cancer?"], [THROAT], {}) == ["What are the of?"]


def test_on_cast_2020_it_is_closer_to_the_real_raw_turns_than_manual_rewrites_and_entity_removal(shared_data):
    # ECAsT Table 9 on every turn (turn 1 kept as m_1): manual 44.72, Entity Removal 33.62 here (paper 30.16),
    # the paper's T5-CR 53.70; the anaphora rule scored 53.62 when this was written.
    topics = json.loads((shared_data / "cast/2020/2020_manual_evaluation_topics_v1.0.json").read_text())
    refs, manual, anaphora = [], [], []
    for topic in topics:
        raws: list[str] = []
        manuals: list[str] = []
        for turn in topic["turn"]:
            m = turn["manual_rewritten_utterance"]
            refs.append(turn["raw_utterance"])
            manual.append(m)
            cr = backends.get("cr", "anaphora").cr([m], [raws], {"manual_history": manuals})[0]
            anaphora.append(cr if turn["number"] > 1 else m)
            raws.append(turn["raw_utterance"])
            manuals.append(m)
    assert corpus_bleu(manual, refs) == pytest.approx(44.72, abs=0.01)
    assert corpus_bleu([entity_removal(m) for m in manual], refs) < 35 < 50 < corpus_bleu(anaphora, refs)


def test_the_entity_of_the_previous_response_is_established():
    cr = backends.get("cr", "anaphora")
    history = [["Once it breaks out, how likely is it to spread?"]]
    response = "Most women with lobular carcinoma in situ never develop invasive cancer."
    text = ["How deadly is lobular carcinoma in situ?"]
    assert cr.cr(text, history, {"responses": [response]}) == ["How deadly is it?"]
    assert cr.cr(text, history, {}) == text  # the user never said it


def test_with_no_anaphor_a_final_phrase_the_conversation_named_is_left_out():
    # a superlative entity takes no pronoun; users leave the phrase out
    history = ["What is the most common breast cancer?"]
    text = "What is the alternative to surgery for the most common breast cancer?"
    assert anaphora_cr(text, history) == "What is the alternative to surgery?"
    # "rare" was never said: the phrase stays, its head said before becomes "one"
    rare = "What is the alternative to surgery for a rare breast cancer?"
    assert anaphora_cr(rare, history) == "What is the alternative to surgery for a rare one?"


def test_a_name_only_the_response_mentioned_is_not_turned_into_a_pronoun():
    history = ["What are traceability tools for GMO food?"]
    response = "Projects such as Co-Extra study how GM and non-GM supply chains can coexist."
    text = "What is the role of Co-Extra in GMO food traceability?"
    assert "Co-Extra" in anaphora_cr(text, history, response)
    assert anaphora_cr(text, [*history, "Tell me about Co-Extra."], response) == "What is its role?"


def test_a_word_the_user_said_keeps_the_users_number_after_a_response_that_says_it_otherwise():
    # "bees" (plural) from the user, "a bee" from the passage: the user's plural makes "their habitat"
    response = "A bee colony collapses when a worker bee leaves."
    assert anaphora_cr("What has happened to bee habitat?", ["Why are so many bees dying?"], response) == (
        "What has happened to their habitat?"
    )
