"""Random paraphrase test sets R_1..R_n (ECAsT, "Assessing evaluation robustness"): for each conversation, one
paraphrase per turn picked at random (seeded), each paraphrase used in at most one set.

"At most one set" holds for texts, not only records: ECAsT.csv has rows that repeat a text for the same turn (116_4
has two rows "What literary devices are used in Islamic poetry?"), and two sets asking the same question would not
be two different paraphrase sets. With ``texts`` given, a turn's candidates are first reduced to one per distinct
text (the lowest id); when every text is distinct this changes nothing, so earlier draws stay the same.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence

from ecast.core.errors import DomainError


class DrawError(DomainError, ValueError):
    """A test-set draw that cannot be made as asked."""


def distinct_by_text(ids: Sequence[int], texts: Mapping[int, str]) -> list[int]:
    """The lowest id of each distinct text (whitespace runs count as one space), in id order."""
    first: dict[str, int] = {}
    for pid in sorted(set(ids)):
        first.setdefault(" ".join(texts[pid].split()), pid)
    return sorted(first.values())


def draw_test_sets(
    candidates: Mapping[str, Sequence[int]],
    *,
    n_sets: int = 3,
    seed: int = 0,
    texts: Mapping[int, str] | None = None,
) -> list[dict[str, int | None]]:
    """``candidates`` maps turn id → paraphrase ids (``texts``: id → text). Returns ``n_sets`` dicts turn id →
    paraphrase id, or None where a turn has run out of unused paraphrases (the set then keeps the original turn)."""
    if n_sets < 1:
        raise DrawError("n_sets must be at least 1")
    rng = random.Random(seed)
    sets: list[dict[str, int | None]] = [{} for _ in range(n_sets)]
    for turn_id in sorted(candidates):
        pool = distinct_by_text(candidates[turn_id], texts) if texts is not None else sorted(set(candidates[turn_id]))
        # Sampling without replacement is what makes every paraphrase (and text) appear in at most one set.
        picks = rng.sample(pool, k=min(n_sets, len(pool)))
        for i in range(n_sets):
            sets[i][turn_id] = picks[i] if i < len(picks) else None
    return sets
