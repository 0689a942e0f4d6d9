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

from ecast.curation import STOPWORDS
from ecast.pipeline.preprocess import split_sentences

BACKEND = "extractive"
DEFAULT_PARAMS: dict[str, Any] = {"k": 5, "sentences": 3, "per_passage": 1, "max_sentence_chars": 400}
DECISION = (
    "extractive: the sentences of the BM25 top-k passages with the largest share of the query's content words, "
    "weighted by 1/rank of their passage; at most per_passage sentences a passage; each cites its passage"
)
WORD = re.compile(r"[a-z0-9]+")
# The curation page's stopwords, and the few question words it keeps that say nothing of a topic.
STOP = STOPWORDS | {"may", "might", "yes"}
# Punkt, as everywhere in ecast (abbreviations such as "U.S." or "Dr." do not end a sentence).
sentences_of = split_sentences


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
