"""Fine-tune a seq2seq (T5) model on (input, target) pairs from JSONL, on whatever device torch sees.

This is how a lab trains the paper's three models: CANARD-style pairs for CQR (history ||| utterance → rewrite)
and CR (rewrite → raw utterance), QQP duplicate pairs for paraphrasing.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ecast.core.errors import DomainError
from ecast.pipeline.hf import device, offline


class TrainingDataError(DomainError, ValueError):
    """A bad JSONL file: the message names file, line and reason."""


@dataclass
class Pair:
    source: str
    target: str


def read_pairs(path: Path, *, input_key: str = "input", target_key: str = "target") -> list[Pair]:
    """Read JSONL lines {input, target}; any bad line raises TrainingDataError naming file and line."""
    pairs = []
    with open(path, encoding="utf-8") as fh:
        for n, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise TrainingDataError(f"{path}:{n}: not JSON ({exc.msg})") from exc
            if not isinstance(row, dict):
                raise TrainingDataError(f"{path}:{n}: expected an object with {input_key!r} and {target_key!r}")
            src, tgt = row.get(input_key), row.get(target_key)
            if not isinstance(src, str) or not src.strip() or not isinstance(tgt, str) or not tgt.strip():
                raise TrainingDataError(f"{path}:{n}: {input_key!r} and {target_key!r} must be non-empty strings")
            pairs.append(Pair(src, tgt))
    if not pairs:
        raise TrainingDataError(f"{path}: no training pairs")
    return pairs


def finetune(
    *,
    base: str,
    pairs: list[Pair],
    output: Path,
    epochs: int = 1,
    max_steps: int | None = None,
    batch_size: int = 8,
    learning_rate: float = 3e-4,
    seed: int = 0,
    prefix: str = "",
    revision: str | None = None,
    log: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Train with AdamW and teacher forcing; save model + tokenizer to ``output``; return the loss history."""
    # torch and transformers take seconds to import: only training loads them, not reading pairs.
    import torch
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    random.seed(seed)
    torch.manual_seed(seed)
    local = Path(base).is_dir()
    kwargs: dict[str, Any] = {"local_files_only": local or offline()}
    if revision and not local:
        kwargs["revision"] = revision
    tok = AutoTokenizer.from_pretrained(base, **kwargs)
    model = AutoModelForSeq2SeqLM.from_pretrained(base, **kwargs).to(device())
    model.train()
    optimiser = torch.optim.AdamW(model.parameters(), lr=learning_rate)
    losses: list[float] = []
    step = 0
    for epoch in range(epochs):
        order = list(range(len(pairs)))
        random.shuffle(order)
        for start in range(0, len(order), batch_size):
            batch = [pairs[i] for i in order[start : start + batch_size]]
            enc = tok(
                [prefix + p.source for p in batch], return_tensors="pt", padding=True, truncation=True, max_length=512
            )
            labels = tok(
                [p.target for p in batch], return_tensors="pt", padding=True, truncation=True, max_length=128
            ).input_ids
            labels[labels == tok.pad_token_id] = -100  # padding does not count in the loss
            out = model(**{k: v.to(model.device) for k, v in enc.items()}, labels=labels.to(model.device))
            out.loss.backward()
            optimiser.step()
            optimiser.zero_grad()
            losses.append(float(out.loss.detach()))
            step += 1
            if step % 10 == 0 or step == 1:
                log(f"epoch {epoch + 1} step {step} loss {losses[-1]:.4f}")
            if max_steps and step >= max_steps:
                break
        if max_steps and step >= max_steps:
            break
    output.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(output)
    tok.save_pretrained(output)
    summary = {
        "base": base,
        "revision": revision,
        "steps": step,
        "pairs": len(pairs),
        "losses": losses,
        "device": str(model.device),
    }
    (output / "ecast_training.json").write_text(json.dumps(summary, indent=2))
    return summary
