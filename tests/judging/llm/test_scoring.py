"""The judge's shared-prefix key/value cache: labels equal the whole-prompt computation's (same grades, probabilities
within float rounding), in the order the pairs were given, whatever the batch size and however prompts split."""

from __future__ import annotations

import pytest
import torch

from judging.llm import judge as j
from judging.llm import scoring
from tests.judging.llm.crowd_helpers import cast2020_turns, crowd_pairs

# Three turns, passages of very different lengths, interleaved so batching by turn and length reorders them.
PAIRS = [
    j.Pair("81_1", "p1", "What is throat cancer?", "Throat cancer is cancer of the larynx or the tonsils."),
    j.Pair(
        "81_2", "p2", "Is it treatable?", "The Eiffel tower is in Paris. " * 8, rewrite="Is throat cancer treatable?"
    ),
    j.Pair("81_1", "p3", "What is throat cancer?", "No."),
    j.Pair("81_2", "p4", "Is it treatable?", "Yes, mostly.", rewrite="Is throat cancer treatable?"),
    j.Pair("82_3", "p5", "And the cost?", "It costs a lot in most countries.", history=("one", "two")),
    j.Pair("81_1", "p6", "What is throat cancer?", "A cancer of the throat, " * 5),
]


def assert_same_labels(cached: list[j.Label], whole: list[j.Label], tol: float) -> None:
    assert [(x.turn_id, x.passage_id) for x in cached] == [(x.turn_id, x.passage_id) for x in whole]
    assert [x.grade for x in cached] == [x.grade for x in whole]
    for x, y in zip(cached, whole, strict=True):
        assert x.probabilities == pytest.approx(y.probabilities, abs=tol)
        assert x.digit_mass == pytest.approx(y.digit_mass, abs=tol)
        assert x.prompt == y.prompt


def test_common_prefix_length_is_the_longest_start_every_row_shares():
    assert scoring.common_prefix_length([[1, 2, 3, 4], [1, 2, 5], [1, 2, 3]]) == 2
    assert scoring.common_prefix_length([[7, 8], [7, 8]]) == 2
    assert scoring.common_prefix_length([[1], [2]]) == 0
    assert scoring.common_prefix_length([]) == 0


@pytest.mark.parametrize("batch_size", [1, 2, 4, 8])
def test_cached_prefix_labels_equal_whole_prompt_labels_in_the_given_order(tiny_causal, batch_size):
    spec = j.ModelSpec(model=str(tiny_causal), params={"batch_size": batch_size})
    cached = j.Judge(spec).label(PAIRS)
    whole = j.Judge(spec, reuse_prefix=False).label(PAIRS)
    assert_same_labels(cached, whole, 1e-5)


def test_the_shared_prefix_is_the_prompt_up_to_the_conversation(tiny_causal):
    judge = j.Judge(j.ModelSpec(model=str(tiny_causal)))
    text = judge.tok.decode(judge.shared_prefix())
    assert text.startswith("<|im_start|>system\n" + j.SYSTEM)
    assert "Important instruction" in text
    assert text.endswith("Conversation so far: ")  # the byte tokenizer splits before the first differing byte


def test_rows_that_do_not_start_with_the_cached_prefix_are_still_scored_exactly(tiny_causal):
    judge = j.Judge(j.ModelSpec(model=str(tiny_causal)))
    rows = [judge.tok.encode(judge.prompt(p), add_special_tokens=False) for p in PAIRS[:3]]
    scorer = scoring.PrefixScorer(judge.net, torch, pad_id=0)
    scorer.prefix([5, 6, 7])  # matches none of them: each batch shares only its own common start
    got = scorer.distributions(rows)
    for row, dist in zip(rows, got, strict=True):
        with torch.no_grad():
            alone = torch.softmax(judge.net(input_ids=torch.tensor([row])).logits[0, -1], dim=-1)
        assert torch.allclose(dist, alone, atol=1e-6)


@pytest.mark.slow
def test_the_shipped_model_gives_the_same_labels_with_and_without_the_cache(shared_data):
    turns = cast2020_turns(shared_data)
    pairs = []
    for p in crowd_pairs(shared_data)[:6]:
        raw, rewrite, history = turns[p.turn_id]
        pairs.append(j.Pair(p.turn_id, p.passage_id, raw, p.text, rewrite=rewrite, history=history))
    spec = j.ModelSpec(params={"batch_size": 4})
    assert_same_labels(j.Judge(spec).label(pairs), j.Judge(spec, reuse_prefix=False).label(pairs), 1e-4)


@pytest.mark.parametrize("batch_size", [1, 3, 8])
def test_response_labels_with_the_cache_equal_each_prompt_scored_whole(tiny_causal, batch_size):
    from judging.llm import response_labellers as rl
    from judging.llm import response_prompts as rp

    labeller = rl.LocalLabeller(j.ModelSpec(model=str(tiny_causal)), {"batch_size": batch_size})
    answer = "The Eiffel Tower is 330 metres tall. It stands in Paris."
    chats = [
        rp.assign_messages(question="How tall is the Eiffel Tower?", answer=answer, nugget=n)
        for n in ("330 metres tall", "In Paris", "Built in 1889 for the World's Fair", "Made of wrought iron")
    ] + [rp.assign_messages(question="What is throat cancer?", answer="A cancer.", nugget="Cancer of the larynx")]
    labelled = labeller.classify(chats, rp.ASSIGN)
    whole = labeller.judge.digit_probabilities([x.prompt for x in labelled])
    assert [x.prompt for x in labelled] == [
        labeller.tok.apply_chat_template(c, tokenize=False, add_generation_prompt=True) + rp.ANSWER_PREFIX
        for c in chats
    ]
    for x, probs in zip(labelled, whole, strict=True):
        label, dist, mass = rp.label_probabilities(probs, rp.ASSIGN)
        assert x.label == label
        assert x.probabilities == pytest.approx(dist, abs=1e-5) and x.mass == pytest.approx(mass, abs=1e-5)
