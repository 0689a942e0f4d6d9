"""Repeated words and expressions across a turn's paraphrases (plain Python, no Django).

ECAsT's curators diversify paraphrases by rewording expressions that many candidates share; this module finds
those 1–3-grams (stopwords ignored at n-gram edges, so "cost of living" counts but "of the" does not) and marks
them in a text.
"""

from __future__ import annotations

import html
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

# A compact English stopword list; shipped here because NLTK data may never be downloaded at run time.
STOPWORDS = frozenset(
    """
    a about above after again against all am an and any are as at be because been before being below between both
    but by can could did do does doing down during each few for from further had has have having he her here hers
    herself him himself his how i if in into is it its itself just me more most my myself no nor not now of off on
    once only or other our ours ourselves out over own same she should so some such than that the their theirs them
    themselves then there these they this those through to too under until up very was we were what when where
    which while who whom why will with would you your yours yourself yourselves s t don doesn isn aren wasn weren
    won can't i'm it's what's let tell know much many one ones also get
    """.split()
)

_WORD = re.compile(r"[A-Za-z0-9]+(?:['’][A-Za-z]+)?")


@dataclass(frozen=True)
class Token:
    """A word with its character span in the original text."""

    norm: str
    start: int
    end: int


def tokenize(text: str) -> list[Token]:
    """Lower-cased word tokens with their offsets."""
    return [Token(m.group(0).lower().replace("’", "'"), m.start(), m.end()) for m in _WORD.finditer(text)]


def _ngrams(tokens: Sequence[Token], max_n: int) -> Iterable[tuple[int, int, tuple[str, ...]]]:
    for n in range(1, max_n + 1):
        for i in range(len(tokens) - n + 1):
            gram = tuple(t.norm for t in tokens[i : i + n])
            if gram[0] in STOPWORDS or gram[-1] in STOPWORDS:
                continue
            yield i, i + n, gram


def repeated_ngrams(texts: Sequence[str], *, max_n: int = 3, min_texts: int = 2) -> dict[tuple[str, ...], int]:
    """N-grams (1..max_n) that occur in at least ``min_texts`` of ``texts``, with the number of texts holding each.

    An n-gram that is part of a longer repeated n-gram occurring in exactly as many texts is dropped, so the
    summary lists "throat cancer" once rather than also "throat" and "cancer".
    """
    document_frequency: Counter[tuple[str, ...]] = Counter()
    for text in texts:
        document_frequency.update({gram for _, _, gram in _ngrams(tokenize(text), max_n)})
    repeated = {gram: count for gram, count in document_frequency.items() if count >= min_texts}
    kept: dict[tuple[str, ...], int] = {}
    for gram, count in repeated.items():
        subsumed = any(
            len(other) > len(gram) and other_count == count and _contains(other, gram)
            for other, other_count in repeated.items()
        )
        if not subsumed:
            kept[gram] = count
    return dict(sorted(kept.items(), key=lambda item: (-item[1], -len(item[0]), item[0])))


def _contains(longer: tuple[str, ...], shorter: tuple[str, ...]) -> bool:
    n = len(shorter)
    return any(longer[i : i + n] == shorter for i in range(len(longer) - n + 1))


def highlight(text: str, grams: Iterable[tuple[str, ...]], *, max_n: int = 3) -> str:
    """HTML-escaped ``text`` with every occurrence of ``grams`` wrapped in ``<mark class="repeat">``.

    Overlapping or adjacent matches merge into one mark so the curator sees whole expressions.
    """
    wanted = set(grams)
    tokens = tokenize(text)
    covered = [False] * len(tokens)
    for start, end, gram in _ngrams(tokens, max_n):
        if gram in wanted:
            for i in range(start, end):
                covered[i] = True
    spans: list[tuple[int, int]] = []
    for i, token in enumerate(tokens):
        if not covered[i]:
            continue
        if spans and i > 0 and covered[i - 1]:
            spans[-1] = (spans[-1][0], token.end)
        else:
            spans.append((token.start, token.end))
    out: list[str] = []
    pos = 0
    for start, end in spans:
        out.append(html.escape(text[pos:start]))
        out.append('<mark class="repeat">' + html.escape(text[start:end]) + "</mark>")
        pos = end
    out.append(html.escape(text[pos:]))
    return "".join(out)


def self_bleu(texts: Sequence[str]) -> float | None:
    """Mean sentence BLEU (0–100) of each text against all the others; lower means more diverse.

    The usual diversity measure for a set of paraphrases (ECAsT's curation step compares it before and after
    rewording). ``None`` for fewer than two texts.
    """
    from sacrebleu.metrics import BLEU

    items = [t for t in texts if t.strip()]
    if len(items) < 2:
        return None
    bleu = BLEU(effective_order=True)
    scores = [bleu.sentence_score(t, items[:i] + items[i + 1 :]).score for i, t in enumerate(items)]
    return sum(scores) / len(scores)
