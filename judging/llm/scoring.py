"""Next-token probabilities at the end of many prompts that share a long token prefix, on a causal transformers model
(plain Python; no Django).

Every judge prompt begins with the same ~240 tokens (chat template, system message, the grading instructions), and
the prompts of one turn share the conversation and the question too. The shared prefix's key/value cache is computed
once (:meth:`PrefixScorer.prefix`) and, per batch, extended by what the batch's prompts still have in common; only
each prompt's own suffix (passage, closing instructions, reply prefix) goes through the model, and only the last
position's logits are computed (the lm_head over 49k tokens at every position cost a fifth of the work). The result
equals a full forward pass over each prompt within float rounding: same tokens, same positions, same attention.

A prompt whose token ids do not begin with the cached prefix (a tokenizer merging across the boundary) is still
scored exactly: the batch then shares only the prefix its own prompts have in common.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

KV = list[tuple[Any, Any]]  # per layer: (keys, values), each [batch, kv heads, tokens, head dim]


def common_prefix_length(rows: Sequence[Sequence[int]]) -> int:
    """Length of the longest token prefix every row shares (0 for no rows)."""
    if not rows:
        return 0
    first, n = rows[0], min(len(r) for r in rows)
    for row in rows[1:]:
        i = 0
        while i < n and row[i] == first[i]:
            i += 1
        n = i
    return n


class PrefixScorer:
    """Last-position next-token distributions of token-id prompts, reusing a cached prefix where they share one."""

    def __init__(self, net: Any, torch: Any, pad_id: int) -> None:
        self.net = net
        self.torch = torch
        self.pad_id = pad_id
        self.shared: list[int] = []  # the prefix every prompt is expected to start with
        self.shared_kv: KV = []

    def prefix(self, ids: Sequence[int]) -> None:
        """Compute and keep the key/value cache of ``ids`` (batch of one) for every later prompt starting with it."""
        self.shared = list(ids)
        self.shared_kv = self._extend([], 0, self.shared) if self.shared else []

    def _extend(self, kv: KV, start: int, ids: Sequence[int]) -> KV:
        """The cache of a batch-of-one sequence whose first ``start`` tokens ``kv`` holds, extended by ``ids``."""
        torch = self.torch
        with torch.inference_mode():
            cache = self._cache(kv, 1)
            positions = torch.arange(start, start + len(ids)).unsqueeze(0)
            out = self.net(
                input_ids=torch.tensor([list(ids)], device=self.net.device),
                position_ids=positions.to(self.net.device),
                past_key_values=cache,
                use_cache=True,
                logits_to_keep=1,
            )
            return [(layer.keys, layer.values) for layer in out.past_key_values.layers]

    def _cache(self, kv: KV, batch: int) -> Any:
        """A fresh DynamicCache holding ``kv`` repeated ``batch`` times (expanded views: the model's update
        concatenates, so the kept prefix is never written to)."""
        from transformers import DynamicCache

        if not kv:
            return DynamicCache(config=self.net.config)
        data = [(k.expand(batch, -1, -1, -1), v.expand(batch, -1, -1, -1)) for k, v in kv]
        return DynamicCache(ddp_cache_data=data, config=self.net.config)

    def distributions(self, rows: Sequence[Sequence[int]]) -> Any:
        """The softmax over the vocabulary after the last token of each row ([rows, vocab], float32), one batch."""
        torch = self.torch
        if not rows:
            return torch.empty(0)
        kv: KV = []
        start = 0
        # At least one token of every row stays outside the prefix: its logits are the ones read.
        common = min(common_prefix_length(rows), min(len(r) for r in rows) - 1)
        n = len(self.shared)
        if n and common >= n and list(rows[0][:n]) == self.shared:
            kv, start = self.shared_kv, n
        if common > start:
            kv, start = self._extend(kv, start, rows[0][start:common]), common
        suffixes = [list(r[start:]) for r in rows]
        width = max(len(s) for s in suffixes)
        ids = torch.tensor([[self.pad_id] * (width - len(s)) + s for s in suffixes])
        own = torch.tensor([[0] * (width - len(s)) + [1] * len(s) for s in suffixes])
        # Left padding sits between the prefix and each suffix: masked out, and positions count real tokens
        # only, so a padded row scores as it would alone.
        mask = torch.cat([torch.ones(len(rows), start, dtype=own.dtype), own], dim=1)
        positions = (start + own.cumsum(-1) - 1).clamp(min=start if start else 0)
        device = self.net.device
        with torch.inference_mode():
            logits = self.net(
                input_ids=ids.to(device),
                attention_mask=mask.to(device),
                position_ids=positions.to(device),
                past_key_values=self._cache(kv, len(rows)) if kv else None,
                use_cache=bool(kv),
                logits_to_keep=1,
            ).logits
            return torch.softmax(logits[:, -1, :].float(), dim=-1)
