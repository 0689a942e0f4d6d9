"""Chat generation stops each reply at the end of its first line (the only part kept): the kept lines are the ones
generating to ``max_new_tokens`` gives, with fewer steps."""

from __future__ import annotations

import pytest
import torch
from transformers import ByT5Tokenizer

from ecast.pipeline import backends, hf


def test_a_row_is_done_once_its_reply_has_text_then_a_newline():
    tok = ByT5Tokenizer()
    prompt = tok.encode("prompt\n", add_special_tokens=False)
    replies = ["\n  ", "\n What is it", "What is it?\n", "Why?\nAnd", "no newline"]
    rows = [prompt + tok.encode(r, add_special_tokens=False) for r in replies]
    width = max(len(r) for r in rows)
    ids = torch.tensor([r + [tok.pad_token_id] * (width - len(r)) for r in rows])
    done = hf.FirstLineDone(tok, len(prompt))(ids, None)
    # A leading newline starts no line (the reply is stripped before its first line is read).
    assert done.tolist() == [False, False, True, True, False]


@pytest.mark.slow
def test_stopping_at_the_first_line_keeps_the_same_lines_as_generating_to_the_cap(monkeypatch):
    params = {"num_return_sequences": 3, "max_new_tokens": 24, "seed": 7}
    sources = ["Why are so many bees dying?"]
    net, _ = hf.load_smollm()
    steps: list[int] = []
    forward = net.forward

    def counted(*args, **kwargs):
        steps[-1] += 1
        return forward(*args, **kwargs)

    monkeypatch.setattr(net, "forward", counted)
    steps.append(0)
    stopped = backends.get("paraphrase", "smollm").paraphrase(sources, params)
    monkeypatch.setattr(hf.FirstLineDone, "__call__", lambda self, ids, scores, **kw: torch.zeros(len(ids), dtype=bool))
    steps.append(0)
    full = backends.get("paraphrase", "smollm").paraphrase(sources, params)
    assert full == stopped
    assert steps[0] <= steps[1]
