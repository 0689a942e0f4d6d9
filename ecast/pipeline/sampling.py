"""Sampled chat generation that reads each prompt once and seeds each sample on its own.

transformers' ``generate(num_return_sequences=n)`` copies every prompt n times *before* reading it, so the prompt
(a few-shot prompt is a few hundred tokens; a reply is about twenty) is read n times: on SmolLM2 with 8 samples
that prefill was 60 % of a turn's CPU time. Here each prompt is read once and its key/value cache is copied to
its n samples, which then decode together.

Sampling draws every sample's tokens from its own ``torch.Generator`` seeded by (the prompt's seed, the sample's
index), so a prompt's replies do not depend on which other prompts share the batch: the turns of a chunk can be
generated in one batch and each turn still gets the replies it gets alone (up to float rounding of padded
batches), whatever the chunking or retries. The warpers are transformers' (temperature, then top-k, then top-p,
keeping at least one token), applied in that order.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ecast.core.errors import DomainError
from ecast.pipeline import hf


class SamplingError(DomainError, ValueError):
    """Sampling was given seeds that do not match its prompts."""


SEED_MIX = 1_000_003  # spreads a prompt's sample seeds apart from the next prompt's


def sample_seed(seed: int, index: int) -> int:
    """The generator seed of sample ``index`` of a prompt seeded ``seed``."""
    return (int(seed) * SEED_MIX + index) % (2**63 - 1)


def prompt_seeds(seed: int, count: int) -> list[int]:
    """The seeds of a turn's ``count`` prompts (its sources) from the turn's seed: the same whether the turn is
    generated alone or batched with others."""
    return [int(seed) * 16 + i for i in range(count)]


def warp(scores: Any, *, temperature: float, top_k: int, top_p: float) -> Any:
    """Logits after temperature, top-k and top-p (as transformers' warpers do; masked tokens get -inf)."""
    torch = hf.torch_module()
    if temperature and temperature != 1.0:
        scores = scores / temperature
    if 0 < top_k < scores.shape[-1]:
        kth = torch.topk(scores, top_k)[0][..., -1, None]
        scores = scores.masked_fill(scores < kth, -float("inf"))
    if top_p < 1.0:
        sorted_logits, sorted_indices = torch.sort(scores, descending=False)
        cumulative = sorted_logits.softmax(dim=-1).cumsum(dim=-1)
        remove = cumulative <= (1 - top_p)
        remove[..., -1:] = False
        scores = scores.masked_fill(remove.scatter(1, sorted_indices, remove), -float("inf"))
    return scores


def sample_chat(
    net: Any,
    tok: Any,
    texts: Sequence[str],
    seeds: Sequence[int],
    params: dict[str, Any],
    *,
    done: Callable[[Any, Any], Any],
) -> list[list[str]]:
    """``num_return_sequences`` sampled continuations of each chat-formatted text (one batch; the tokenizer pads
    on the left). ``done(new_ids, None)``, a transformers stopping criterion, says which rows have finished (a
    complete first line); decoding stops once every row has finished, reached end of sequence, or
    ``max_new_tokens``."""
    torch = hf.torch_module()
    n = int(params.get("num_return_sequences", 5))
    max_new = int(params.get("max_new_tokens", 48))
    temperature = float(params.get("temperature", 1.0))
    top_k, top_p = int(params.get("top_k", 50)), float(params.get("top_p", 0.95))
    eos = net.generation_config.eos_token_id
    stops = set(eos if isinstance(eos, list) else [eos]) | {tok.eos_token_id}
    pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
    enc = tok(list(texts), return_tensors="pt", padding=True)
    ids, mask = enc["input_ids"].to(net.device), enc["attention_mask"].to(net.device)
    positions = (mask.cumsum(-1) - 1).clamp(min=0)
    generators = [torch.Generator(device=net.device).manual_seed(sample_seed(s, j)) for s in seeds for j in range(n)]
    rows = len(generators)
    stop_ids = torch.tensor(sorted(i for i in stops if i is not None), device=net.device)
    with torch.inference_mode():
        out = net(input_ids=ids, attention_mask=mask, position_ids=positions, use_cache=True, logits_to_keep=1)
        cache = out.past_key_values
        cache.batch_repeat_interleave(n)
        logits = out.logits[:, -1, :].repeat_interleave(n, dim=0)
        mask = mask.repeat_interleave(n, dim=0)
        position = positions[:, -1:].repeat_interleave(n, dim=0)
        new = torch.empty((rows, 0), dtype=torch.long, device=net.device)
        finished = torch.zeros(rows, dtype=torch.bool, device=net.device)
        for _ in range(max_new):
            probs = warp(logits.float(), temperature=temperature, top_k=top_k, top_p=top_p).softmax(dim=-1)
            token = torch.cat([torch.multinomial(probs[i], 1, generator=generators[i]) for i in range(rows)])
            token = torch.where(finished, torch.full_like(token, pad), token)
            new = torch.cat([new, token[:, None]], dim=1)
            finished |= torch.isin(token, stop_ids) | done(new, None)
            if bool(finished.all()):
                break
            mask = torch.cat([mask, torch.ones((rows, 1), dtype=mask.dtype, device=mask.device)], dim=1)
            position = position + 1
            out = net(
                input_ids=token[:, None],
                attention_mask=mask,
                position_ids=position,
                past_key_values=cache,
                use_cache=True,
            )
            logits = out.logits[:, -1, :]
    replies = tok.batch_decode(new, skip_special_tokens=True)
    return [replies[i * n : (i + 1) * n] for i in range(len(texts))]
