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


# A ChatML-style template (as SmolLM2's) so chat prompts render the same way for the tiny model as for real ones.
TINY_CHAT_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def make_tiny_causal(path: Path, *, seed: int = 0) -> Path:
    """Save a ~100k-parameter Llama (ByT5 byte tokenizer with a chat template, vocab 384) to ``path``."""
    import torch
    from transformers import ByT5Tokenizer, LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    config = LlamaConfig(
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
        vocab_size=384,
        max_position_embeddings=4096,
        pad_token_id=0,
        eos_token_id=1,
        bos_token_id=1,
    )
    LlamaForCausalLM(config).save_pretrained(path)
    tok = ByT5Tokenizer()
    tok.chat_template = TINY_CHAT_TEMPLATE
    tok.save_pretrained(path)
    return Path(path)
