"""The built-in baseline answer: extractive, with a citation on every sentence (plain Python; no Django).

For a turn, BM25 (``evaluation.permutations.retrieval``, the one BM25 of the product) returns the top ``k``
passages of the collection's corpus. The answer is made of their best sentences: every sentence of those passages
is scored by the share of the query's content words it contains (stop words and words under three letters left
out), weighted by its passage's rank (1 / rank); the ``sentences`` best-scoring ones are kept, at most
``per_passage`` from one passage, and are given in the order of their passages' ranks, each citing its passage. No
model writes text, so every sentence is a sentence of the passage it cites: a baseline whose citations should
be judged "full support" — what an assessor's and an LLM's citation labels can be checked against.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

BACKEND = "extractive"
DEFAULT_PARAMS: dict[str, Any] = {"k": 5, "sentences": 3, "per_passage": 1, "max_sentence_chars": 400}
DECISION = (
    "extractive: the sentences of the BM25 top-k passages with the largest share of the query's content words, "
    "weighted by 1/rank of their passage; at most per_passage sentences a passage; each cites its passage"
)
# A sentence ends at . ! or ? followed by a space and an upper-case letter, a digit or a quote (no abbreviation
# list: "U.S. Army" splits wrongly, which an extractive answer survives).
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'“(A-Z0-9])")
WORD = re.compile(r"[a-z0-9]+")
STOP = frozenset(
    "the a an and or of to in on for with is are was were be been it its this that these those what which who whom "
    "how why when where do does did can could should would will may might about from by as at into than then there "
    "their they them you your i me my we our he she his her not no yes any some more most much many tell".split()
)


def sentences_of(text: str) -> list[str]:
    """The sentences of a text (whitespace folded)."""
    folded = " ".join(text.split())
    return [s.strip() for s in SENTENCE_END.split(folded) if s.strip()]


def content_words(text: str) -> set[str]:
    return {w for w in WORD.findall(text.lower()) if len(w) > 2 and w not in STOP}


@dataclass(frozen=True)
class AnswerSentence:
    text: str
    citations: tuple[str, ...]


@dataclass(frozen=True)
class Answer:
    text: str
    sentences: list[AnswerSentence] = field(default_factory=list)
    references: list[str] = field(default_factory=list)


def extractive_answer(query: str, passages: Sequence[tuple[str, str]], *, params: dict[str, Any]) -> Answer:
    """The answer to ``query`` from ``passages`` ([(passage id, text)] in rank order)."""
    merged = {**DEFAULT_PARAMS, **params}
    want = content_words(query)
    limit = int(merged["max_sentence_chars"])
    scored: list[tuple[float, int, int, str, str]] = []
    for rank, (pid, text) in enumerate(passages, start=1):
        for pos, sentence in enumerate(sentences_of(text)):
            words = content_words(sentence)
            share = len(want & words) / len(want) if want else 0.0
            cut = sentence if len(sentence) <= limit else sentence[:limit].rsplit(" ", 1)[0] + " …"
            scored.append((share / rank, rank, pos, pid, cut))
    # Best first; ties to the better-ranked passage, then the earlier sentence (deterministic).
    scored.sort(key=lambda s: (-s[0], s[1], s[2]))
    taken: dict[str, int] = {}
    chosen: list[tuple[int, int, str, str]] = []
    for score, rank, pos, pid, sentence in scored:
        if len(chosen) >= int(merged["sentences"]):
            break
        if taken.get(pid, 0) >= int(merged["per_passage"]) or (score == 0 and chosen):
            continue
        taken[pid] = taken.get(pid, 0) + 1
        chosen.append((rank, pos, pid, sentence))
    chosen.sort()
    out = [AnswerSentence(text=s, citations=(pid,)) for _, _, pid, s in chosen]
    return Answer(text=" ".join(s.text for s in out), sentences=out, references=[pid for pid, _ in passages])
