"""Cleaning of generated paraphrases within one turn: empties, copies of the source, ungrammatical texts
(:mod:`ecast.pipeline.grammar`), exact and near duplicates, and an optional semantic-similarity floor
(ECAsT "Stage 4", automatic part). The reasons are the ones every pipeline stage counts its drops under."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ecast.pipeline import filters, grammar

NEAR_DUPLICATE_CHARS = 3  # "a few characters apart"
EMPTY = "empty"
IDENTICAL = "identical to source"
UNGRAMMATICAL = "ungrammatical"
NEAR_DUPLICATE = "near duplicate"
BELOW_FLOOR = "below similarity floor"
RANKED_OUT = "ranked out"  # passed every check but fell outside the best k (ecast.pipeline.fewshot.rank)
# In the order the checks run, which is the order pages list them in.
LOST_WORDS = filters.LOST_WORDS
REASONS = (
    EMPTY, IDENTICAL, UNGRAMMATICAL, *filters.REASONS, LOST_WORDS, NEAR_DUPLICATE, BELOW_FLOOR, RANKED_OUT
)  # fmt: skip


def strip_control(text: str) -> str:
    """Drop control characters (NUL and friends: PostgreSQL text cannot hold NUL) and collapse whitespace."""
    return " ".join("".join(ch for ch in text if unicodedata.category(ch) not in ("Cc", "Cs") or ch.isspace()).split())


_WORD = re.compile(r"[A-Za-z][\w'’-]*")


def restore_case(text: str, sources: Sequence[str]) -> str:
    """The text with the sources' spelling of their names and acronyms where it wrote them in lower case ("the role
    of co-extra in gmo food traceability in europe" → "… Co-Extra in GMO … Europe"). A source word counts as a name
    when it has a capital that does not just open its sentence."""
    cased: dict[str, str] = {}
    for source in sources:
        for sentence in re.split(r"(?<=[.?!])\s+", source):
            for i, m in enumerate(_WORD.finditer(sentence)):
                word = m.group()
                if word.lower() in grammar.FUNCTION_WORDS and word != "I":
                    continue  # "US" / "IT" must not turn "help us" or "is it" into names
                if any(c.isupper() for c in word[1:]) or (i > 0 and word[0].isupper()):
                    cased.setdefault(word.lower(), word)
    if not cased:
        return text
    return _WORD.sub(lambda m: cased.get(m.group(), m.group()) if m.group().islower() else m.group(), text)


def normalise(text: str) -> str:
    """Lower-case, collapse whitespace and drop punctuation: the form duplicates are compared in."""
    text = re.sub(r"[^\w\s]", "", text.lower())
    return " ".join(text.split())


def _levenshtein(a: Sequence, b: Sequence, limit: int) -> int:
    """Edit distance, giving up (returning limit + 1) once every path exceeds ``limit``."""
    if abs(len(a) - len(b)) > limit:
        return limit + 1
    prev = list(range(len(b) + 1))
    for i, x in enumerate(a, start=1):
        cur = [i] + [0] * len(b)
        for j, y in enumerate(b, start=1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (x != y))
        if min(cur) > limit:
            return limit + 1
        prev = cur
    return prev[-1]


def near_duplicate(a: str, b: str, *, max_chars: int = NEAR_DUPLICATE_CHARS) -> bool:
    """True when two texts are equal after normalisation, a few characters apart, or one word apart."""
    na, nb = normalise(a), normalise(b)
    if na == nb:
        return True
    if _levenshtein(na, nb, max_chars) <= max_chars:
        return True
    return _levenshtein(na.split(), nb.split(), 1) <= 1


@dataclass
class CleanResult:
    """Kept texts (in input order), why each dropped text was dropped, and the grammar rules each
    ungrammatical text broke."""

    kept: list[str] = field(default_factory=list)
    dropped: list[tuple[str, str]] = field(default_factory=list)
    rules: dict[str, list[str]] = field(default_factory=dict)

    @property
    def rejected_by_similarity(self) -> int:
        """How many texts fell below the semantic-similarity floor."""
        return sum(1 for _, reason in self.dropped if reason == BELOW_FLOOR)


def clean(
    candidates: Sequence[str],
    *,
    sources: Sequence[str],
    similarity: Callable[[list[str], list[str]], list[float]] | None = None,
    min_similarity: float | None = None,
    existing: Sequence[str] = (),
    check_grammar: bool = True,
    check: Callable[[str], str] | None = None,
) -> CleanResult:
    """Drop empties, copies of a source, texts the grammar check flags, texts ``check`` gives a reason for (the
    meaning rules of :mod:`ecast.pipeline.filters`), near duplicates of earlier kept texts (or of ``existing``
    ones), and, when a floor is given, texts whose similarity to their closest source is below it."""
    result = CleanResult()
    survivors: list[str] = []
    seen = list(existing)
    for text in candidates:
        text = strip_control(text)
        problems = grammar.problems(text) if check_grammar and normalise(text) else []
        if not normalise(text):
            result.dropped.append((text, EMPTY))
        elif any(normalise(text) == normalise(s) for s in sources):
            result.dropped.append((text, IDENTICAL))
        elif problems:
            result.dropped.append((text, UNGRAMMATICAL))
            result.rules[text] = problems
        elif check is not None and (reason := check(text)):
            result.dropped.append((text, reason))
        elif any(near_duplicate(text, other) for other in seen):
            result.dropped.append((text, NEAR_DUPLICATE))
        else:
            survivors.append(text)
            seen.append(text)
    if similarity is not None and min_similarity is not None and survivors:
        best = [0.0] * len(survivors)
        for source in sources:
            scores = similarity(survivors, [source] * len(survivors))
            best = [max(b, s) for b, s in zip(best, scores, strict=True)]
        for text, score in zip(survivors, best, strict=True):
            if score < min_similarity:
                result.dropped.append((text, BELOW_FLOOR))
            else:
                result.kept.append(text)
    else:
        result.kept = survivors
    return result
