"""Fixtures for the pipeline tests: a tiny random T5 saved once per session."""

from __future__ import annotations

import os

import pytest

from ecast.pipeline.tiny import make_tiny_t5


@pytest.fixture(scope="session")
def tiny_t5(tmp_path_factory):
    # The CI machine has 2 shared cores: torch's default thread pool makes tiny models 5x slower there.
    os.environ.setdefault("ECAST_TORCH_THREADS", "1")
    return make_tiny_t5(tmp_path_factory.mktemp("tiny-t5"), seed=0)


def t5_config(model, *, n: int = 3) -> dict:
    """A job config running every stage on the tiny model (long minimum outputs so random texts are distinct)."""
    common = {"model": str(model), "max_new_tokens": 20, "min_new_tokens": 12}
    return {
        "cqr": {"backend": "t5", "params": common},
        "paraphrase": {"backend": "t5", "params": {**common, "num_return_sequences": n, "top_k": 50, "top_p": 0.95}},
        "cr": {"backend": "t5", "params": common},
        # random texts are never similar to anything, nor questions: no floor, no meaning checks, no ranking
        "clean": {"min_similarity": None, "keep": None, "meaning_checks": False},
    }
