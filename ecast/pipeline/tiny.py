"""A tiny randomly initialised T5 with a byte-level tokenizer: drives tests and benchmarks with no download."""

from __future__ import annotations

from pathlib import Path


def make_tiny_t5(path: Path, *, seed: int = 0) -> Path:
    """Save a ~200k-parameter T5 (ByT5 tokenizer, vocab 384) to ``path`` and return it."""
    import torch
    from transformers import ByT5Tokenizer, T5Config, T5ForConditionalGeneration

    torch.manual_seed(seed)
    config = T5Config(  # type: ignore[call-arg]  # extra kwargs are PretrainedConfig's
        d_model=64,
        d_ff=128,
        d_kv=32,
        num_layers=2,
        num_decoder_layers=2,
        num_heads=2,
        vocab_size=384,
        decoder_start_token_id=0,
        pad_token_id=0,
        eos_token_id=1,
    )
    T5ForConditionalGeneration(config).save_pretrained(path)
    ByT5Tokenizer().save_pretrained(path)
    return Path(path)
