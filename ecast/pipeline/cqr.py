"""Conversational query reformulation (ECAsT Stage 1): (h_i, u_i) → r_i, batched, via the stage registry.

The input is the earlier turns only. For TREC iKAT turns the user's PTKB ("I'm vegetarian.") is not part of it yet,
so no backend resolves a personal reference from it; the manual rewrite m_i, which the organisers resolved with the
PTKB, carries that knowledge into the paraphrases made from m_i.
"""

from __future__ import annotations

from typing import Any

from ecast.core.errors import DomainError
from ecast.pipeline import backends


class CqrError(DomainError, ValueError):
    """Reformulation refused its input (histories and utterances differ in number)."""


def cqr_rewrite(
    histories: list[list[str]], utterances: list[str], *, backend: str = "rule", params: dict[str, Any] | None = None
) -> list[str]:
    """Rewrite each utterance given its history (earlier raw turns); one output per input, in order."""
    if len(histories) != len(utterances):
        raise CqrError(f"{len(histories)} histories but {len(utterances)} utterances")
    if not utterances:
        return []
    return list(backends.get("cqr", backend).cqr([list(h) for h in histories], list(utterances), dict(params or {})))
