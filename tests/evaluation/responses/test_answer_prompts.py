"""The generative baseline's prompt and the reading of its replies, on hand-made replies: sentences by Punkt,
[n] mapped to the n-th passage, marks out of the text, marks opening a sentence given to the one before, numbers
outside 1..k dropped and counted, uncited sentences kept uncited, and what makes a reply malformed."""

from __future__ import annotations

import json
import subprocess
import sys

from evaluation.responses import answer_prompts as ap

IDS = ["msmarco_v2.1_doc_00#1", "msmarco_v2.1_doc_07#3", "msmarco_v2.1_doc_09#0"]


def test_each_mark_cites_the_passage_of_its_number_and_leaves_the_text():
    got = ap.parse_answer("Bees pollinate crops [1]. Pesticides harm them [2, 3].", IDS)
    assert got is not None
    assert [(s.text, s.citations) for s in got.sentences] == [
        ("Bees pollinate crops.", (IDS[0],)),
        ("Pesticides harm them.", (IDS[1], IDS[2])),
    ]
    assert got.text == "Bees pollinate crops. Pesticides harm them." and got.dropped == [] and got.uncited == 0


def test_marks_after_the_full_stop_belong_to_the_sentence_before():
    got = ap.parse_answer("Bees pollinate crops. [2] Mites spread disease. [Passage 3][1]", IDS)
    assert got is not None
    assert [(s.text, s.citations) for s in got.sentences] == [
        ("Bees pollinate crops.", (IDS[1],)),
        ("Mites spread disease.", (IDS[2], IDS[0])),
    ]


def test_a_reply_opening_with_a_mark_gives_it_to_its_first_sentence():
    got = ap.parse_answer("[3] The U.S. Army was founded in 1775. It is large [1; 1].", IDS)
    assert got is not None
    # Punkt keeps "U.S." inside the sentence; a passage cited twice in a sentence is cited once.
    assert [(s.text, s.citations) for s in got.sentences] == [
        ("The U.S. Army was founded in 1775.", (IDS[2],)),
        ("It is large.", (IDS[0],)),
    ]


def test_numbers_outside_the_passages_are_dropped_and_counted_and_uncited_sentences_stay_uncited():
    got = ap.parse_answer("Bees are dying [4]. Mites harm them [0][2]. I hope this helps.", IDS)
    assert got is not None
    assert [(s.text, s.citations) for s in got.sentences] == [
        ("Bees are dying.", ()),
        ("Mites harm them.", (IDS[1],)),
        ("I hope this helps.", ()),
    ]
    assert got.dropped == [4, 0] and got.uncited == 2


def test_a_reply_without_a_sentence_or_without_any_usable_citation_when_required_is_malformed():
    assert ap.parse_answer("", IDS) is None
    assert ap.parse_answer("  [1] [2]  ", IDS) is None
    assert ap.parse_answer("Bees are dying.", IDS) is not None
    assert ap.parse_answer("Bees are dying.", IDS, require_citation=True) is None
    assert ap.parse_answer("Bees are dying [9].", IDS, require_citation=True) is None
    assert ap.parse_answer("Bees are dying [2].", IDS, require_citation=True) is not None


def test_the_prompt_numbers_the_passages_after_one_worked_example():
    chat = ap.messages(question="Why are bees dying?", passages=["Mites  harm\nbees.", "Pesticides too."], sentences=2)
    assert [m["role"] for m in chat] == ["system", "user", "assistant", "user"]
    assert chat[2]["content"] == ap.EXAMPLE_ANSWER and "[3] Mount Fuji" in chat[1]["content"]
    assert "[1] Mites harm bees.\n[2] Pesticides too." in chat[3]["content"]
    assert "Question: Why are bees dying?" in chat[3]["content"] and "at most 2 sentences" in chat[3]["content"]
    # The example's own answer reads back with its citations (the format the model is shown is the one parsed).
    example = ap.parse_answer(ap.EXAMPLE_ANSWER, ["e1", "e2", "e3"], require_citation=True)
    assert example is not None and [s.citations for s in example.sentences] == [("e1",), ("e2",), ("e1",)]
    assert json.loads(ap.template())[3]["content"].startswith("Passages:\n[1] {passage 1}")


def test_the_module_loads_without_django():
    code = "import sys, evaluation.responses.answer_prompts; sys.exit('django' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


def test_a_repeated_sentence_is_kept_once_and_a_last_piece_cut_off_mid_sentence_is_dropped():
    reply = "Openers last ten years [1]. Springs break [2]. Openers last ten years [3]. If you are on the market"
    got = ap.parse_answer(reply, IDS)
    assert got is not None
    assert [(s.text, s.citations) for s in got.sentences] == [
        ("Openers last ten years.", (IDS[0], IDS[2])),
        ("Springs break.", (IDS[1],)),
    ]
    only = ap.parse_answer("Openers last ten years [1]", IDS)
    assert only is not None and [(s.text, s.citations) for s in only.sentences] == [
        ("Openers last ten years", (IDS[0],))
    ]
