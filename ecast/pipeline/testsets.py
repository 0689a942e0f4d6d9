"""Random paraphrase test sets R_1..R_n (ECAsT, "Assessing evaluation robustness"): for each conversation, one
paraphrase per turn picked at random (seeded), each paraphrase used in at most one set."""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence


def draw_test_sets(
    candidates: Mapping[str, Sequence[int]], *, n_sets: int = 3, seed: int = 0
) -> list[dict[str, int | None]]:
    """``candidates`` maps turn id → paraphrase ids. Returns ``n_sets`` dicts turn id → paraphrase id, or None
    where a turn has run out of unused paraphrases (the set then keeps the original turn there)."""
    if n_sets < 1:
        raise ValueError("n_sets must be at least 1")
    rng = random.Random(seed)
    sets: list[dict[str, int | None]] = [{} for _ in range(n_sets)]
    for turn_id in sorted(candidates):
        pool = sorted(set(candidates[turn_id]))
        # Sampling without replacement is what makes every paraphrase appear in at most one set.
        picks = rng.sample(pool, k=min(n_sets, len(pool)))
        for i in range(n_sets):
            sets[i][turn_id] = picks[i] if i < len(picks) else None
    return sets
