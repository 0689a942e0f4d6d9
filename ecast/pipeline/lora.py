"""Curation teaches the generator: a LoRA adapter (peft) for the shipped chat model, trained on a collection's
approved pairs, and the generation backend that prompts the model with it.

Training data (one example per approved pair): paraphrase m_i → p^m, context removal p^m → p^r. Each example is
the stage's zero-shot chat prompt (its system instruction and the source, :func:`prompts_for`) with the target as
the assistant's reply; the adapter backend prompts the same way, so the model is asked in the form it learnt. The
curated pairs replace the few-shot examples the plain model needs, and sequences ~5× shorter than the few-shot
prompt make CPU training affordable. The loss is on the reply's tokens only. The held-out pairs are whole
conversations (never a turn of a conversation seen in training), and their loss is measured before training and
after each epoch, so a curator sees whether the adapter learnt anything that carries over.

Low-rank adapters (Hu et al., "LoRA", 2021) on the attention query and value projections: a few hundred thousand
weights for SmolLM2-135M, small enough to keep in the database, so every worker can load them (none depends on
another's files). Plain Python + torch/peft; no Django.
"""

from __future__ import annotations

import copy
import hashlib
import io
import random
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ecast.core.errors import DomainError
from ecast.pipeline import backends, hf

STAGES = ("paraphrase", "cr")
BACKEND = "adapter"  # generation config: {"backend": "adapter", "params": {"adapter": <id>}}


class AdapterError(DomainError, ValueError):
    """Training cannot start (too few pairs, bad parameters) or an adapter cannot be loaded."""


class Cancelled(DomainError):
    """The job was cancelled between two steps."""


@dataclass(frozen=True)
class Example:
    """One training pair: the source text, the target a curator approved, and the conversation it came from."""

    source: str
    target: str
    group: str
    ref: Any = None  # the approved paraphrase's id, kept in the adapter's provenance


@dataclass
class TrainParams:
    """LoRA and optimiser settings; the defaults fit a few hundred pairs on two CPU cores in minutes."""

    rank: int = 8
    alpha: int = 16
    dropout: float = 0.05
    epochs: int = 2
    learning_rate: float = 1e-3
    batch_size: int = 8
    heldout_fraction: float = 0.15
    max_pairs: int = 2000
    max_tokens: int = 160
    seed: int = 0
    target_modules: tuple[str, ...] = ("q_proj", "v_proj")

    BOUNDS = {
        "rank": (1, 64),
        "alpha": (1, 256),
        "epochs": (1, 20),
        "batch_size": (1, 64),
        "max_pairs": (2, 100_000),
        "max_tokens": (32, 2048),
        "seed": (0, 2**31 - 1),
    }

    @classmethod
    def from_dict(cls, values: dict[str, Any] | None) -> TrainParams:
        """Parameters from a job's JSON; an AdapterError names the first bad one."""
        out = cls()
        for name, value in (values or {}).items():
            if name == "target_modules":
                continue
            if not hasattr(out, name) or name == "BOUNDS":
                raise AdapterError(f"params: unknown parameter {name!r}")
            try:
                number: float = float(value) if name in ("dropout", "learning_rate", "heldout_fraction") else int(value)
            except (TypeError, ValueError) as exc:
                raise AdapterError(f"params.{name}: {value!r} is not a number") from exc
            low, high = cls.BOUNDS.get(name, (0, 1))
            if name == "learning_rate":
                low, high = 1e-6, 1.0  # type: ignore[assignment]  # a float range
            if not low <= number <= high:
                raise AdapterError(f"params.{name}: {number} is outside {low}..{high}")
            setattr(out, name, number)
        return out

    def as_dict(self) -> dict[str, Any]:
        return {
            "rank": self.rank,
            "alpha": self.alpha,
            "dropout": self.dropout,
            "epochs": self.epochs,
            "learning_rate": self.learning_rate,
            "batch_size": self.batch_size,
            "heldout_fraction": self.heldout_fraction,
            "max_pairs": self.max_pairs,
            "max_tokens": self.max_tokens,
            "seed": self.seed,
            "target_modules": list(self.target_modules),
        }


@dataclass
class Trained:
    """A trained adapter: its weights (safetensors bytes), its peft configuration and what training measured."""

    weights: bytes
    config: dict[str, Any]
    metrics: dict[str, Any] = field(default_factory=dict)

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.weights).hexdigest()


ZERO_SHOT = {"paraphrase": (backends.PARA_SYSTEM, "Rewrite: "), "cr": (backends.CR_SYSTEM, "Question: ")}


def prompts_for(stage: str, sources: Sequence[str]) -> list[list[dict[str, str]]]:
    """The zero-shot chat prompts of ``stage``, as training shows them and the adapter backend sends them."""
    if stage not in ZERO_SHOT:
        raise AdapterError(f"stage {stage!r} cannot be fine-tuned; choose one of: {', '.join(STAGES)}")
    system, lead = ZERO_SHOT[stage]
    return [[{"role": "system", "content": system}, {"role": "user", "content": lead + s}] for s in sources]


def split(examples: Sequence[Example], fraction: float, seed: int) -> tuple[list[Example], list[Example]]:
    """Train and held-out examples, held out by whole conversation (seeded), at least one group on each side."""
    groups = sorted({e.group for e in examples})
    if len(groups) < 2:
        raise AdapterError(
            f"approved pairs come from {len(groups)} conversation(s); training needs at least 2 (one is held out)"
        )
    random.Random(seed).shuffle(groups)
    n_held = min(len(groups) - 1, max(1, round(len(groups) * fraction)))
    held = set(groups[:n_held])
    return [e for e in examples if e.group not in held], [e for e in examples if e.group in held]


def encode(tok: Any, stage: str, example: Example, max_tokens: int) -> tuple[list[int], list[int]]:
    """Token ids of prompt + reply, and labels that are -100 on the prompt (loss on the reply only)."""
    prompt = tok.apply_chat_template(
        prompts_for(stage, [example.source])[0], tokenize=False, add_generation_prompt=True
    )
    eos = tok.eos_token or ""
    p_ids = tok(prompt, add_special_tokens=False)["input_ids"]
    t_ids = tok(example.target.strip() + eos, add_special_tokens=False)["input_ids"]
    ids = (p_ids + t_ids)[-max_tokens:]
    labels = ([-100] * len(p_ids) + t_ids)[-max_tokens:]
    return ids, labels


def _batches(encoded: list[tuple[list[int], list[int]]], size: int, pad: int, torch: Any) -> list[dict[str, Any]]:
    out = []
    for start in range(0, len(encoded), size):
        chunk = encoded[start : start + size]
        width = max(len(ids) for ids, _ in chunk)
        ids = [i + [pad] * (width - len(i)) for i, _ in chunk]
        labels = [lab + [-100] * (width - len(lab)) for _, lab in chunk]
        mask = [[1] * len(i) + [0] * (width - len(i)) for i, _ in chunk]
        out.append(
            {"input_ids": torch.tensor(ids), "labels": torch.tensor(labels), "attention_mask": torch.tensor(mask)}
        )
    return out


def _mean_loss(net: Any, batches: list[dict[str, Any]], torch: Any) -> float:
    """Token-weighted mean loss over batches (the model averages within a batch; weight by its reply tokens)."""
    net.eval()
    total = weight = 0.0
    with torch.inference_mode():
        for b in batches:
            tokens = int((b["labels"][:, 1:] != -100).sum())
            if not tokens:
                continue
            total += float(net(**{k: v.to(net.device) for k, v in b.items()}).loss) * tokens
            weight += tokens
    return total / weight if weight else float("nan")


def _lora_config(params: TrainParams) -> Any:
    from peft import LoraConfig

    return LoraConfig(
        task_type="CAUSAL_LM",
        r=params.rank,
        lora_alpha=params.alpha,
        lora_dropout=params.dropout,
        target_modules=list(params.target_modules),
    )


def train(
    base: tuple[Any, Any],
    stage: str,
    examples: Sequence[Example],
    params: TrainParams,
    *,
    progress: Callable[[int, int, str], None] = lambda done, total, message: None,
    cancelled: Callable[[], bool] = lambda: False,
) -> Trained:
    """Train a LoRA adapter on a copy of ``base`` (model, tokenizer); the cached base model is never modified."""
    from peft import get_peft_model, get_peft_model_state_dict
    from safetensors.torch import save as safetensors_save

    torch = hf.torch_module()
    examples = list(examples)[: params.max_pairs]
    train_set, held_set = split(examples, params.heldout_fraction, params.seed)
    net0, tok = base
    hf.seed_all(params.seed)
    pad = tok.pad_token_id if tok.pad_token_id is not None else (tok.eos_token_id or 0)
    encoded_train = [encode(tok, stage, e, params.max_tokens) for e in train_set]
    random.Random(params.seed).shuffle(encoded_train)
    batches = _batches(encoded_train, params.batch_size, pad, torch)
    held = _batches([encode(tok, stage, e, params.max_tokens) for e in held_set], params.batch_size, pad, torch)
    net = get_peft_model(copy.deepcopy(net0), _lora_config(params))
    trainable = sum(p.numel() for p in net.parameters() if p.requires_grad)
    optimiser = torch.optim.AdamW([p for p in net.parameters() if p.requires_grad], lr=params.learning_rate)
    total = params.epochs * len(batches)
    began = time.perf_counter()
    heldout = [_mean_loss(net, held, torch)]
    train_losses: list[float] = []
    progress(0, total, f"held-out loss before training {heldout[0]:.4f}")
    step = 0
    for epoch in range(params.epochs):
        net.train()
        running = 0.0
        for b in batches:
            if cancelled():
                raise Cancelled("the job was cancelled")
            loss = net(**{k: v.to(net.device) for k, v in b.items()}).loss
            loss.backward()
            optimiser.step()
            optimiser.zero_grad()
            running += loss.item()
            step += 1
            progress(step, total, f"epoch {epoch + 1}/{params.epochs}, step {step}/{total}, loss {loss.item():.4f}")
        train_losses.append(running / max(len(batches), 1))
        heldout.append(_mean_loss(net, held, torch))
        progress(step, total, f"epoch {epoch + 1}: held-out loss {heldout[-1]:.4f} (before {heldout[0]:.4f})")
    state = {k: v.detach().cpu().contiguous() for k, v in get_peft_model_state_dict(net).items()}
    config = {
        k: (sorted(v) if isinstance(v, set) else v)
        for k, v in net.peft_config["default"].to_dict().items()
        if isinstance(v, (str, int, float, bool, list, set, type(None)))
    }
    return Trained(
        weights=safetensors_save(state),
        config=config,
        metrics={
            "train_pairs": len(train_set),
            "heldout_pairs": len(held_set),
            "heldout_conversations": sorted({e.group for e in held_set}),
            "trainable_parameters": trainable,
            "train_loss": train_losses,
            "heldout_loss": heldout,
            "seconds": round(time.perf_counter() - began, 2),
            "device": str(net.device),
        },
    )


# ---- generation with an adapter -------------------------------------------------------------------------------


@dataclass(frozen=True)
class StoredAdapter:
    """What the backend needs to load an adapter: the base model, the weights and their configuration."""

    adapter_id: int
    base_model: str
    weights: bytes
    config: dict[str, Any]
    sha256: str
    label: str = ""


# The application registers how to read an adapter by id (the database holds them, so any worker can load any).
_source: Callable[[int], StoredAdapter] | None = None
_LOADED: dict[str, tuple[Any, Any]] = {}
_LOCK = threading.Lock()


def register_source(source: Callable[[int], StoredAdapter]) -> None:
    """Set the function that reads a stored adapter (the dataset app registers it at start-up)."""
    global _source
    _source = source


def stored(adapter_id: Any) -> StoredAdapter:
    if _source is None:
        raise AdapterError("no adapter source registered")
    try:
        number = int(adapter_id)
    except (TypeError, ValueError) as exc:
        raise AdapterError(f"params.adapter: {adapter_id!r} is not an adapter id") from exc
    return _source(number)


def base_model(name: str) -> tuple[Any, Any]:
    """The base chat model: the shipped SmolLM2 for "smollm", else a local causal model folder or .gguf file."""
    return hf.load_smollm() if name in ("", "smollm") else hf.load_causal(name)


def load(adapter: StoredAdapter) -> tuple[Any, Any]:
    """The base model with the adapter merged in (cached per weights hash), and its tokenizer."""
    from peft import LoraConfig, get_peft_model, set_peft_model_state_dict
    from safetensors.torch import load as safetensors_load

    with _LOCK:
        if adapter.sha256 in _LOADED:
            return _LOADED[adapter.sha256]
    net0, tok = base_model(adapter.base_model)
    known = set(LoraConfig.__dataclass_fields__)
    config = LoraConfig(**{k: v for k, v in adapter.config.items() if k in known and k != "peft_type"})
    net = get_peft_model(copy.deepcopy(net0), config)
    set_peft_model_state_dict(net, safetensors_load(io.BytesIO(adapter.weights).getvalue()))
    merged = net.merge_and_unload().eval()
    with _LOCK:
        _LOADED[adapter.sha256] = (merged, tok)
    return merged, tok


@dataclass
class AdapterBackend:
    """The shipped chat model with a LoRA adapter a collection's curation trained (params.adapter = its id)."""

    name: str = BACKEND
    samples: bool = True  # outputs vary with the seed: a turn whose samples copied its source is resampled
    batches_turns: bool = True  # seeds each prompt on its own (ecast.pipeline.sampling)
    stages: tuple[str, ...] = STAGES
    description: str = "SmolLM2 + an adapter fine-tuned on a collection's approved pairs (the fine-tune job)."

    def status(self) -> tuple[bool, str]:
        import importlib.util

        if importlib.util.find_spec("peft") is None:
            return False, "python package 'peft' is not installed"
        return True, "adapters trained by the fine-tune job; choose one in the generation form"

    def _generate(self, prompts: list[list[dict[str, str]]], params: dict[str, Any], sample: bool) -> list[list[str]]:
        model = load(stored(params.get("adapter")))
        return hf.causal_chat_generate(prompts, params, sample=sample, model=model)

    def paraphrase(self, sources: list[str], params: dict[str, Any]) -> list[list[str]]:
        return self._generate(prompts_for("paraphrase", sources), params, True)

    def cr(self, texts: list[str], histories: list[list[str]], params: dict[str, Any]) -> list[str]:
        outs = self._generate(prompts_for("cr", texts), params, False)
        return [o[0] if o and o[0] else t for o, t in zip(outs, texts, strict=True)]


backends.register(AdapterBackend())
