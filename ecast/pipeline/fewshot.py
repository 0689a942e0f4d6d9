"""Few-shot examples for the paraphrase prompt, retrieved by similarity from curated pairs of *other*
conversations, and the ranking that keeps the best k paraphrases of a turn. Plain data in, plain data out: the
caller (a generation job, the bench) supplies the candidate pairs; nothing here reads a database.

Retrieval. A candidate example is a pair (source m_j, approved paraphrase p^m_j) of another conversation. Pairs
of the turn's own conversation (its topic) are never used, whatever the caller passed, so a paraphrase cannot be
copied from a curated answer to the same question. Usable pairs have a grammatical, question-like paraphrase
that differs from its source by more than a near-duplicate edit. They are scored against the text to paraphrase
by an IDF-weighted word overlap (cosine of TF-IDF vectors over lower-cased words, the IDF taken over the
candidate sources): questions of the same form ("What can be done to stop …") and topic words both count. The
best :data:`SHOTS` come in order of score, at most one per source text (so three paraphrases of one question do
not crowd out the rest). With no usable candidate scoring above zero the prompt gets :data:`FALLBACK`.

Ranking. After the drops (:mod:`ecast.pipeline.clean`, :mod:`ecast.pipeline.filters`) a paraphrase whose
MiniLM cosine to the turn's manual rewrite m_i is below the meaning floor (``clean.meaning_floor``, default 0.75)
is dropped as "below similarity floor": m_i is the meaning every pair must keep, whichever source (r_i or m_i) the
paraphrase came from, while the general floor compares it with its closest source only. A turn may still keep more
paraphrases than a curator wants to read. Each survivor is scored

    score = cos(p, m_i) − DIVERSITY_WEIGHT × overlap(p, source)

with cos the MiniLM cosine to the manual rewrite m_i (to the paraphrase's own source when the turn has none),
and overlap the share of p's word bigrams (start and end marks included) that its source also has: a reworded
question outranks a near copy of the same meaning, and a copy never outranks a faithful rewording by more than
the weight. The best ``keep`` are kept (ties: generation order); the rest are dropped as "ranked out"
(:data:`ecast.pipeline.clean.RANKED_OUT`). The pipeline takes the survivors best first (:func:`best_first`) and
keeps the best ``keep`` whose context removal also passes (:mod:`ecast.pipeline.run`).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache

from ecast.pipeline import clean, filters, grammar

SHOTS = 3
DIVERSITY_WEIGHT = 0.3


@dataclass(frozen=True)
class Example:
    """A curated pair usable as a few-shot example: its source, its paraphrase, and its conversation (topic)."""

    source: str
    paraphrase: str
    conversation: str = ""


# The fixed set a prompt falls back to (ECAsT-style rewordings of CAsT 2019 and 2020 turns): each keeps every
# entity and the polarity of its source, asks a question, and changes the wording and the sentence structure.
FALLBACK: tuple[Example, ...] = (
    Example("What is throat cancer?", "Can you explain what cancer of the throat is?", "fallback"),
    Example(
        "How do you know when your garage door opener is going bad?",
        "What are the signs that a garage door opener is failing?",
        "fallback",
    ),
    Example("What can be done to prevent heart disease?", "How can I lower my risk of heart disease?", "fallback"),
    Example("Why doesn't honey spoil?", "Why does honey never go bad?", "fallback"),
)


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+(?:'[a-z]+)?", text.lower().replace("’", "'"))


def usable(example: Example) -> bool:
    """A pair worth showing: a grammatical question-like paraphrase that is more than a near copy of its source."""
    p, s = example.paraphrase.strip(), example.source.strip()
    if not p or not s or clean.near_duplicate(p, s):
        return False
    return filters.opens_like_question(p) and grammar.is_grammatical(p)


@dataclass(frozen=True)
class Index:
    """The usable candidates with their TF-IDF vectors (built once per candidate set, :func:`index`)."""

    examples: tuple[Example, ...]
    vectors: tuple[dict[str, float], ...]
    norms: tuple[float, ...]
    idf: dict[str, float]


@lru_cache(maxsize=4)
def index(candidates: tuple[Example, ...]) -> Index:
    """The usable candidates of a set, vectorised: a worker builds it once per set of approved pairs."""
    pool = tuple(c for c in candidates if usable(c))
    docs = [Counter(_words(c.source)) for c in pool]
    df: Counter[str] = Counter()
    for d in docs:
        df.update(d.keys())
    idf = {w: math.log((1 + len(docs)) / (1 + n)) + 1.0 for w, n in df.items()}
    vectors = tuple({w: n * idf[w] for w, n in d.items()} for d in docs)
    norms = tuple(math.sqrt(sum(v * v for v in vec.values())) or 1.0 for vec in vectors)
    return Index(pool, vectors, norms, idf)


def select(
    text: str, candidates: Sequence[Example] | Index, *, conversation: str = "", k: int = SHOTS
) -> list[tuple[str, str]]:
    """The ``k`` candidate pairs most similar to ``text`` (module docstring), never of ``conversation``, as
    (source, paraphrase); the fixed fallback set when none scores above zero."""
    fallback = [(e.source, e.paraphrase) for e in FALLBACK[: max(k, 0)]]
    idx = candidates if isinstance(candidates, Index) else index(tuple(candidates))
    if not idx.examples or k <= 0:
        return fallback
    query = Counter(_words(text))
    qvec = {w: n * idx.idf.get(w, 0.0) for w, n in query.items()}
    qnorm = math.sqrt(sum(v * v for v in qvec.values())) or 1.0
    scored: list[tuple[float, int]] = []
    for i, (vec, norm) in enumerate(zip(idx.vectors, idx.norms, strict=True)):
        if conversation and idx.examples[i].conversation == conversation:
            continue
        dot = sum(q * vec[w] for w, q in qvec.items() if w in vec)
        if dot > 0:
            scored.append((dot / (qnorm * norm), i))
    scored.sort(key=lambda s: (-s[0], s[1]))
    chosen: list[tuple[str, str]] = []
    seen = {clean.normalise(text)}
    for _, i in scored:
        source = clean.normalise(idx.examples[i].source)
        if source in seen:
            continue
        seen.add(source)
        chosen.append((idx.examples[i].source, idx.examples[i].paraphrase))
        if len(chosen) == k:
            break
    return chosen or fallback


def _bigrams(text: str) -> list[tuple[str, str]]:
    words = ["<s>", *_words(text), "</s>"]
    return list(zip(words, words[1:], strict=False))


def overlap(text: str, source: str) -> float:
    """Share of the text's word bigrams (start and end marks included) that the source also has."""
    mine, theirs = _bigrams(text), set(_bigrams(source))
    return sum(1 for b in mine if b in theirs) / len(mine) if mine else 0.0


def best_first(
    texts: Sequence[str],
    sources: Sequence[str],
    *,
    reference: str,
    similarity: Callable[[list[str], list[str]], list[float]] | None,
    floor: float | None = None,
) -> tuple[list[str], list[str], list[float]]:
    """(the texts at or above ``floor`` best first by the module docstring's score (ties: input order), the texts
    below it, the scores of the input texts). ``sources[i]`` is text i's own source; ``reference`` is m_i ("" when
    the turn has none: each text is then compared with its own source, and no floor applies)."""
    if not texts:
        return [], [], []
    refs = [reference or s for s in sources]
    sims = similarity(list(texts), refs) if similarity is not None else [1.0] * len(texts)
    scores = [sim - DIVERSITY_WEIGHT * overlap(t, s) for t, s, sim in zip(texts, sources, sims, strict=True)]
    low = {i for i, sim in enumerate(sims) if floor is not None and reference and similarity and sim < floor}
    order = [i for i in sorted(range(len(texts)), key=lambda i: (-scores[i], i)) if i not in low]
    return [texts[i] for i in order], [t for i, t in enumerate(texts) if i in low], scores


def rank(
    texts: Sequence[str],
    sources: Sequence[str],
    *,
    reference: str,
    similarity: Callable[[list[str], list[str]], list[float]] | None,
    keep: int | None,
    floor: float | None = None,
) -> tuple[list[str], list[str], list[str], list[float]]:
    """(kept, below the floor, ranked out, scores of the input texts): of the texts :func:`best_first` passes, the
    best ``keep`` in their input order (all of them when ``keep`` is None)."""
    ordered, below, scores = best_first(texts, sources, reference=reference, similarity=similarity, floor=floor)
    best = set(ordered if keep is None else ordered[: max(keep, 0)])
    return (
        [t for t in texts if t in best],
        below,
        [t for t in texts if t not in best and t not in below],
        scores,
    )
