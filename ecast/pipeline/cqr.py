"""Conversational query reformulation (ECAsT Stage 1): (h_i, u_i) → r_i, batched, via the stage registry.

The input is the earlier turns only (with, where known, their canonical responses and the turn's own imported
automatic rewrite). For TREC iKAT turns the user's PTKB ("I'm vegetarian.") is not part of it yet, so no backend
resolves a personal reference from it; the manual rewrite m_i, which the organisers resolved with the PTKB, carries
that knowledge into the paraphrases made from m_i.

The default backend, ``best``, is chosen per collection by :func:`choose`: of the raw utterance (r_i = u_i), the rule
resolver and, where the collection's turns carry them, the imported automatic rewrites, the one with the highest
corpus BLEU (:func:`ecast.pipeline.bleu.corpus_bleu`) against the collection's manual rewrites m_i over every turn
with a history and an m_i. So the default never scores below the raw turn, nor below the organisers' rewrites, on
the collection's own turns. Ties go to the one that changes less (raw, then rule, then imported). A collection
without manual rewrites gives nothing to measure: the rule resolver, which leaves a turn alone when unsure.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ecast.core.errors import DomainError
from ecast.pipeline import backends
from ecast.pipeline.bleu import corpus_bleu


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


@dataclass
class CqrTurn:
    """One turn as CQR sees it: earlier raw turns with their canonical responses ("" when unknown), the
    utterance, its imported automatic rewrite ("" when none) and its manual rewrite m_i ("" when none)."""

    history: list[str]
    utterance: str
    responses: list[str] = field(default_factory=list)
    automatic_rewrite: str = ""
    manual: str = ""


def rewrites(backend: str, turns: Sequence[CqrTurn], params: dict[str, Any] | None = None) -> list[str]:
    """r_i of each turn by one CQR backend, batched; a turn without history is its own rewrite."""
    params = {
        **(params or {}),
        "responses": [list(t.responses) for t in turns],
        "automatic_rewrites": [t.automatic_rewrite for t in turns],
    }
    out = backends.get("cqr", backend).cqr([list(t.history) for t in turns], [t.utterance for t in turns], params)
    return [r if t.history else t.utterance for r, t in zip(out, turns, strict=True)]


def scored_turns(turns: Sequence[CqrTurn]) -> list[CqrTurn]:
    """The turns a CQR is measured on: turn 2 or later (a history) with a manual rewrite."""
    return [t for t in turns if t.history and t.manual.strip()]


def scores(turns: Sequence[CqrTurn]) -> dict[str, float | None]:
    """Corpus BLEU against m_i over :func:`scored_turns` of every backend ``best`` chooses from; imported only
    when a turn carries an automatic rewrite."""
    scored = scored_turns(turns)
    names = [n for n in backends.BEST_CHOICES if n != "imported" or any(t.automatic_rewrite for t in turns)]
    return {name: corpus_bleu(rewrites(name, scored), [t.manual for t in scored]) for name in names}


# Corpus BLEU over fewer turns than this says more about those turns than about the backends (on 10 turns one
# rewrite moves it by several points): below it, ``best`` keeps the rule resolver, which leaves a turn alone
# when unsure.
MIN_SCORED_TURNS = 30


def choose(turns: Sequence[CqrTurn]) -> dict[str, Any]:
    """The ``best`` backend's parameters for a collection: the backend it uses, why, and every score."""
    measured = scores(turns)
    ranked = [(s, -i, n) for i, (n, s) in enumerate(measured.items()) if s is not None]
    if not ranked:
        return {"use": "rule", "scores": measured, "turns": 0, "why": "no turn 2 or later has a manual rewrite"}
    rounded = {n: None if s is None else round(s, 2) for n, s in measured.items()}
    scored = len(scored_turns(turns))
    if scored < MIN_SCORED_TURNS:
        why = (
            f"only {scored} turns 2 and later have a manual rewrite (fewer than {MIN_SCORED_TURNS}): too few to choose"
        )
        return {"use": "rule", "scores": rounded, "turns": scored, "why": why}
    score, _, use = max(ranked)
    return {
        "use": use,
        "scores": rounded,
        "turns": scored,
        "why": "highest corpus BLEU against the manual rewrites of turns 2 and later",
    }


def source(config: dict[str, Any], automatic_rewrite: str, utterance: str = "") -> str:
    """What r_i was made from, for a turn's provenance, when the backend takes a stored text: "automatic rewrite",
    "raw utterance (no automatic rewrite)" where the turn has none, or the rule resolver where the automatic
    rewrite flips the turn's negation or breaks agreement; "" for a backend that rewrites."""
    spec = config.get("cqr") or {}
    name = spec.get("backend") or ""
    if name == "best":
        name = str((spec.get("params") or {}).get("use") or "rule")
    if name == "imported":
        if not automatic_rewrite.strip():
            return "raw utterance (no automatic rewrite)"
        if utterance and not backends.imported_sound(automatic_rewrite.strip(), utterance):
            return "rule resolver (the automatic rewrite flips the negation or breaks number agreement)"
        return "automatic rewrite"
    if name == "raw":
        return "raw utterance"
    return ""
