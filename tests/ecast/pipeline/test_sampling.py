"""Sampled chat generation reads each prompt once and seeds each sample on its own, so the turns of a chunk can be
sampled in one batch and each still gets the replies it gets alone."""

from __future__ import annotations

import pytest
import torch
from transformers.generation.logits_process import (
    TemperatureLogitsWarper,
    TopKLogitsWarper,
    TopPLogitsWarper,
)

from ecast.pipeline import backends, hf, sampling
from ecast.pipeline.run import TurnInput, run_turn, run_turns


@pytest.mark.parametrize(("temperature", "top_k", "top_p"), [(0.7, 50, 0.95), (1.0, 5, 1.0), (1.3, 0, 0.5)])
def test_the_warpers_are_transformers_temperature_top_k_and_top_p(temperature, top_k, top_p):
    torch.manual_seed(0)
    scores = torch.randn(4, 300) * 3
    expected = scores.clone()
    if temperature != 1.0:
        expected = TemperatureLogitsWarper(temperature)(None, expected)
    if top_k:
        expected = TopKLogitsWarper(top_k)(None, expected)
    if top_p < 1.0:
        expected = TopPLogitsWarper(top_p)(None, expected)
    ours = sampling.warp(scores, temperature=temperature, top_k=top_k, top_p=top_p)
    assert torch.equal(torch.isinf(ours), torch.isinf(expected))
    assert torch.allclose(ours[~torch.isinf(ours)], expected[~torch.isinf(expected)])


def test_a_turn_s_prompt_seeds_do_not_depend_on_the_other_turns():
    assert sampling.prompt_seeds(5, 2) == [80, 81]
    assert sampling.sample_seed(80, 0) != sampling.sample_seed(80, 1) != sampling.sample_seed(81, 0)


PARAMS = {"num_return_sequences": 4, "top_k": 50, "top_p": 0.95, "temperature": 0.7, "max_new_tokens": 24}


@pytest.mark.slow
def test_a_prompt_gets_the_same_samples_alone_and_in_a_batch_and_is_read_once(monkeypatch):
    smollm = backends.get("paraphrase", "smollm")
    sources = ["Why doesn't honey spoil?", "What can be done to stop bees dying?"]
    alone = smollm.paraphrase(sources, {**PARAMS, "seed": 5})
    net, _ = hf.load_smollm()
    prefill_rows: list[int] = []
    forward = net.forward

    def counted(*args, **kwargs):
        if kwargs["input_ids"].shape[1] > 1:
            prefill_rows.append(kwargs["input_ids"].shape[0])
        return forward(*args, **kwargs)

    monkeypatch.setattr(net, "forward", counted)
    others = ["How do I build a cheap driveway?", "How can fires help an ecosystem?"]
    seeds = sampling.prompt_seeds(5, 2) + sampling.prompt_seeds(9, 2)
    batched = smollm.paraphrase(sources + others, {**PARAMS, "seeds": seeds})
    assert batched[:2] == alone
    assert all(len(set(r)) > 1 for r in batched)  # samples differ from one another
    assert prefill_rows == [4]  # four prompts read once each, not once per sample (16)
    # Another seed gives other samples.
    assert smollm.paraphrase(sources, {**PARAMS, "seed": 6}) != alone


@pytest.mark.slow
def test_turns_run_together_get_the_outputs_each_gets_alone():
    config = {
        "cqr": {"backend": "rule"},
        "paraphrase": {"backend": "smollm", "params": PARAMS, "sources": ["r", "m"]},
        "cr": {"backend": "anaphora"},
        "clean": {"min_similarity": None, "keep": None, "meaning_checks": True},
    }
    first = "What are some interesting facts about bees?"
    turns = [
        TurnInput("83_1", 1, first, first),
        TurnInput(
            "83_3", 3, "Why are so many dying?", "Why are so many bees dying?",
            ["What are some interesting facts about bees?", "Why doesn't it spoil?"],
        ),
    ]  # fmt: skip
    together = run_turns(turns, config, seed=0)
    for turn, result in zip(turns, together, strict=True):
        alone = run_turn(turn, config, seed=0)
        assert result["outputs"] == alone["outputs"] and result["dropped"] == alone["dropped"]
    assert any(r["outputs"] for r in together)
