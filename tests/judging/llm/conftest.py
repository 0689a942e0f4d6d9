"""Fixtures for the LLM judge tests: a tiny random causal model saved once per session (no download)."""

from __future__ import annotations

import os

import pytest

from ecast.pipeline.tiny import make_tiny_causal


@pytest.fixture(scope="session")
def tiny_causal(tmp_path_factory):
    # Two shared cores: torch's default thread pool makes tiny models slower there.
    os.environ.setdefault("ECAST_TORCH_THREADS", "1")
    return make_tiny_causal(tmp_path_factory.mktemp("tiny-causal"), seed=0)
