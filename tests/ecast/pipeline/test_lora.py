"""LoRA fine-tuning of the chat model (ecast.pipeline.lora): held-out split by conversation, loss on the reply only,
an adapter that round-trips through its stored bytes and changes what the model says."""

from __future__ import annotations

import pytest

from ecast.pipeline import hf, lora

EXAMPLES = [
    lora.Example(source=f"What is the capital of country {i}?", target=f"Which city is country {i}'s capital?", group=g)
    for i, g in enumerate(["a", "a", "b", "b", "c", "c", "d", "d"])
]


def test_params_refuse_unknown_names_and_values_out_of_bounds():
    assert lora.TrainParams.from_dict({"epochs": "3", "learning_rate": "0.01"}).epochs == 3
    with pytest.raises(lora.AdapterError, match="unknown parameter 'layers'"):
        lora.TrainParams.from_dict({"layers": 2})
    with pytest.raises(lora.AdapterError, match=r"params.rank: 0 is outside 1..64"):
        lora.TrainParams.from_dict({"rank": 0})
    with pytest.raises(lora.AdapterError, match="not a number"):
        lora.TrainParams.from_dict({"epochs": "many"})


def test_the_held_out_pairs_are_whole_conversations_never_seen_in_training():
    train, held = lora.split(EXAMPLES, 0.25, seed=3)
    assert {e.group for e in train}.isdisjoint({e.group for e in held})
    assert len({e.group for e in held}) == 1  # 25 % of 4 conversations
    assert len(train) + len(held) == len(EXAMPLES)
    assert lora.split(EXAMPLES, 0.25, seed=3) == (train, held)  # seeded


def test_one_conversation_cannot_be_split_and_says_so():
    with pytest.raises(lora.AdapterError, match="1 conversation"):
        lora.split(EXAMPLES[:2], 0.5, seed=0)


def test_the_loss_is_on_the_reply_tokens_only(tiny_causal):
    _net, tok = hf.load_causal(str(tiny_causal))
    ids, labels = lora.encode(tok, "paraphrase", EXAMPLES[0], max_tokens=100_000)
    reply = tok(EXAMPLES[0].target + tok.eos_token, add_special_tokens=False)["input_ids"]
    assert labels[-len(reply) :] == reply == ids[-len(reply) :]
    assert set(labels[: -len(reply)]) == {-100}
    # the prompt is the one the backend sends at generation time
    prompt = tok.apply_chat_template(
        lora.prompts_for("paraphrase", [EXAMPLES[0].source])[0], tokenize=False, add_generation_prompt=True
    )
    assert ids[: -len(reply)] == tok(prompt, add_special_tokens=False)["input_ids"]


def test_an_adapter_trains_lowers_the_held_out_loss_and_round_trips_through_its_bytes(tiny_causal):
    base = hf.load_causal(str(tiny_causal))
    before = [p.detach().clone() for p in base[0].parameters()]
    steps: list[int] = []
    params = lora.TrainParams(epochs=3, batch_size=4, learning_rate=0.02, max_tokens=256, heldout_fraction=0.25)
    trained = lora.train(base, "paraphrase", EXAMPLES, params, progress=lambda d, t, m: steps.append(d))
    m = trained.metrics
    assert m["train_pairs"] == 6 and m["heldout_pairs"] == 2 and len(m["heldout_conversations"]) == 1
    assert len(m["heldout_loss"]) == params.epochs + 1 and len(m["train_loss"]) == params.epochs
    assert m["heldout_loss"][-1] < m["heldout_loss"][0]  # the pairs share a pattern a held-out pair also has
    assert steps[-1] == params.epochs * 2  # 6 training pairs in batches of 4
    assert all((a == b).all() for a, b in zip(before, base[0].parameters(), strict=True))  # base untouched
    stored = lora.StoredAdapter(1, str(tiny_causal), trained.weights, trained.config, trained.sha256)
    merged, _tok = lora.load(stored)
    assert lora.load(stored)[0] is merged  # cached by weights hash
    prompts = lora.prompts_for("paraphrase", ["What is the capital of country 9?"])
    plain = hf.causal_chat_generate(prompts, {"max_new_tokens": 12}, sample=False, model=base)
    tuned = hf.causal_chat_generate(prompts, {"max_new_tokens": 12}, sample=False, model=(merged, _tok))
    assert plain != tuned


def test_cancelling_stops_training_before_the_next_step(tiny_causal):
    base = hf.load_causal(str(tiny_causal))
    with pytest.raises(lora.Cancelled):
        lora.train(base, "cr", EXAMPLES, lora.TrainParams(epochs=1, batch_size=2), cancelled=lambda: True)
