"""Inter-rater agreement for rating campaigns (plain Python; no Django).

Reproduces the ECAsT aggregation (Haya Al Thani et al., PeerJ CS 2023, section "Paraphrase evaluation"):
Fleiss' kappa per measure on the raw 1–5 categories; then keep items with at least 40% agreement (share of raters
giving the item's most frequent score), group ratings into poor (1–2) / undecided (3) / good (4–5) and recompute
kappa on the kept items; an item's label for a measure is the score that at least 3 raters agree on (Fig. 7A).

Unequal numbers of ratings: Fleiss' kappa needs the same number of ratings per item. Our choice: an item enters
the kappa computations only when it has at least ``n`` ratings, and then with its **first n ratings by submission
order** (later ones can exist only after an admin reinstates a paused rater). Items with fewer ratings are counted
as "incomplete" and left out. Krippendorff's alpha has no such restriction and uses every rating of every item
with at least two ratings.

Input everywhere: ``ratings: dict[item_key, list[int]]`` — the scores of one measure per item, in submission order.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from ecast.core.errors import DomainError


class KappaError(DomainError, ValueError):
    """Ratings Fleiss' kappa cannot be computed from (unequal numbers of ratings per item)."""


SCALE = (1, 2, 3, 4, 5)
GROUPS = ("poor", "undecided", "good")
MIN_AGREEMENT = 0.4
LABEL_MIN_RATERS = 3


def group_of(score: int) -> int:
    """ECAsT grouping: 1–2 → 0 (poor), 3 → 1 (undecided), 4–5 → 2 (good)."""
    if score <= 2:
        return 0
    return 1 if score == 3 else 2


def complete_items(ratings: Mapping[Any, Sequence[int]], n: int) -> dict[Any, list[int]]:
    """Items with at least ``n`` ratings, each cut to its first ``n`` (the documented equal-count choice)."""
    return {key: list(scores[:n]) for key, scores in ratings.items() if len(scores) >= n}


def count_table(rows: Iterable[Sequence[int]], categories: Sequence[int] = SCALE) -> np.ndarray:
    """Items × categories matrix of counts (the input of statsmodels' ``fleiss_kappa``)."""
    index = {c: i for i, c in enumerate(categories)}
    rows = list(rows)
    table = np.zeros((len(rows), len(categories)), dtype=int)
    for r, scores in enumerate(rows):
        for s in scores:
            table[r, index[s]] += 1
    return table


def fleiss(rows: Iterable[Sequence[int]], categories: Sequence[int] = SCALE) -> float | None:
    """Fleiss' kappa (statsmodels) over items that all have the same number of ratings; None when undefined."""
    from statsmodels.stats.inter_rater import fleiss_kappa

    table = count_table(rows, categories)
    if table.shape[0] == 0 or table.sum(axis=1).min() < 2:
        return None
    if len(set(table.sum(axis=1).tolist())) != 1:
        raise KappaError("Fleiss' kappa needs the same number of ratings for every item")
    with np.errstate(divide="ignore", invalid="ignore"):
        value = float(fleiss_kappa(table, method="fleiss"))
    return None if np.isnan(value) else value


def item_agreement(scores: Sequence[int]) -> float:
    """Share of raters who gave the item's most frequent score (ECAsT's "% agreement")."""
    if not scores:
        return 0.0
    return Counter(scores).most_common(1)[0][1] / len(scores)


def item_label(scores: Sequence[int], min_raters: int = LABEL_MIN_RATERS) -> int | None:
    """The score at least ``min_raters`` raters agree on, else None (ECAsT Fig. 7 labels)."""
    if not scores:
        return None
    score, count = Counter(scores).most_common(1)[0]
    return score if count >= min_raters else None


@dataclass
class KappaResult:
    n_items: int = 0  # items with at least n ratings (used for the raw kappa)
    n_incomplete: int = 0  # items with ratings but fewer than n
    kappa_raw: float | None = None
    n_kept: int = 0  # items with >= min_agreement
    kappa_grouped: float | None = None
    kept: list = field(default_factory=list)


def ecast_kappa(ratings: Mapping[Any, Sequence[int]], n: int, *, min_agreement: float = MIN_AGREEMENT) -> KappaResult:
    """Kappa on the raw 5 categories, then on kept items (agreement >= 40%) with ratings grouped into 3."""
    full = complete_items(ratings, n)
    result = KappaResult(n_items=len(full), n_incomplete=sum(1 for s in ratings.values() if 0 < len(s) < n))
    result.kappa_raw = fleiss(full.values())
    # A small epsilon so that 2 of 5 raters (exactly 0.4) pass despite binary floating point.
    kept = {k: s for k, s in full.items() if item_agreement(s) >= min_agreement - 1e-9}
    result.kept = list(kept)
    result.n_kept = len(kept)
    result.kappa_grouped = fleiss(([group_of(x) for x in s] for s in kept.values()), categories=(0, 1, 2))
    return result


def krippendorff_ordinal(
    ratings: Mapping[Any, Sequence[int]],
    *,
    categories: Sequence[int] = SCALE,
    n_boot: int = 200,
    seed: int = 0,
    confidence: float = 0.95,
) -> dict[str, float | None]:
    """Krippendorff's alpha (ordinal) with a percentile bootstrap CI over items (items resampled with replacement)."""
    import krippendorff

    rows = [s for s in ratings.values() if len(s) >= 2]
    if not rows:
        return {"alpha": None, "low": None, "high": None, "n_items": 0}
    counts = count_table(rows, categories).astype(float)

    def alpha_of(table: np.ndarray) -> float | None:
        # alpha is undefined when every pairable value is identical (no expected disagreement).
        if np.count_nonzero(table.sum(axis=0)) < 2:
            return None
        with np.errstate(divide="ignore", invalid="ignore"):
            value = float(
                krippendorff.alpha(value_counts=table, value_domain=list(categories), level_of_measurement="ordinal")
            )
        return None if np.isnan(value) else value

    alpha = alpha_of(counts)
    rng = np.random.default_rng(seed)
    samples = []
    for _ in range(n_boot):
        value = alpha_of(counts[rng.integers(0, len(rows), size=len(rows))])
        if value is not None:
            samples.append(value)
    tail = (1 - confidence) / 2 * 100
    low = float(np.percentile(samples, tail)) if samples else None
    high = float(np.percentile(samples, 100 - tail)) if samples else None
    return {"alpha": alpha, "low": low, "high": high, "n_items": len(rows)}


def rater_majority_agreement(rows: Iterable[tuple[Any, Any, int]]) -> dict[Any, dict[str, Any]]:
    """Per rater: how often their score equals the strict majority of the *other* raters of the same item.

    ``rows`` are (item, rater, score). Leave-one-out keeps a rater from agreeing with themselves; items where the
    other raters have no strict majority (e.g. 1–1) are not counted for that rater.
    """
    by_item: dict[Any, list[tuple[Any, int]]] = {}
    for item, rater, score in rows:
        by_item.setdefault(item, []).append((rater, score))
    stats: dict[Any, dict[str, Any]] = {}
    for entries in by_item.values():
        for i, (rater, score) in enumerate(entries):
            others = [s for j, (_, s) in enumerate(entries) if j != i]
            st = stats.setdefault(rater, {"agree": 0, "compared": 0, "ratings": 0})
            st["ratings"] += 1
            if not others:
                continue
            top = Counter(others).most_common(2)
            if len(top) > 1 and top[0][1] == top[1][1]:
                continue
            if top[0][1] * 2 <= len(others):
                continue
            st["compared"] += 1
            st["agree"] += int(score == top[0][0])
    for st in stats.values():
        st["rate"] = st["agree"] / st["compared"] if st["compared"] else None
    return stats


def measure_report(
    ratings: Mapping[Any, Sequence[int]],
    n: int,
    *,
    min_agreement: float = MIN_AGREEMENT,
    label_min_raters: int = LABEL_MIN_RATERS,
    n_boot: int = 200,
    seed: int = 0,
) -> dict[str, Any]:
    """Everything the report shows for one measure: both kappas, alpha with CI, and per-item labels."""
    kappa = ecast_kappa(ratings, n, min_agreement=min_agreement)
    full = complete_items(ratings, n)
    kept = set(kappa.kept)
    labels = {key: item_label(scores, label_min_raters) for key, scores in full.items() if key in kept}
    out = asdict(kappa)
    out.pop("kept")
    out["kept"] = kappa.kept
    out["alpha"] = krippendorff_ordinal(ratings, n_boot=n_boot, seed=seed)
    out["labels"] = labels
    out["n_labelled"] = sum(1 for v in labels.values() if v is not None)
    return out
