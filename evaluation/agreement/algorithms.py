"""Agreement between two assessments of the same items, after Voorhees (2000) (plain Python; no Django).

Voorhees, "Variations in relevance judgments and the measurement of retrieval effectiveness", IP&M 36(5), 2000:
two assessors judge the same (topic, document) items; how much they agree is measured item by item, and what the
disagreement does to evaluation is measured by Kendall's τ between the system rankings each set of judgments gives.
Here, over the items both assessments judged:

* Cohen's κ from scikit-learn (``cohen_kappa_score``), linear-weighted when the scale is graded (0–4: a 3 against a
  4 is a smaller disagreement than a 0 against a 4), unweighted when it is binary; its confidence interval is the
  asymptotic one, κ ± z·SE with the SE of Fleiss, Cohen & Everitt (1969) as statsmodels' ``cohens_kappa`` computes
  it from the confusion table (items taken as independent);
* the confusion matrix (grades of A × grades of B), exact agreement, and the same after binarising at a relevance
  threshold, with Voorhees' overlap |A ∩ B| / |A ∪ B| of the two relevant sets;
* per grade, the precision and recall of B against A (scikit-learn ``precision_recall_fscore_support``, A taken
  as the truth): of the items B gave grade g, the share A gave g too; of the items A gave g, the share B found —
  what tells a judge that puts everything in one grade (an LLM, a hurried assessor) from one that disagrees evenly;
* the same per topic;
* Kendall's τ-b (scipy, through :func:`evaluation.stats.kendall_tau`) between the systems' scores under each
  assessment, with the pairs of systems the two order differently.

Input everywhere: ``{(turn_id, item_id): grade}`` — any two assessments keyed the same way (qrels versions,
PTKB statement relevance, crowd labels) plug in. Linear weights are index distances in the label list, so the label
list is always the contiguous run of integer grades: then the weight of a disagreement is its grade distance.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from ecast.trees import natural_key
from evaluation import stats

Item = tuple[str, str]
Grades = Mapping[Item, int]

# The relevance scale of the product (CAsT, ECAsT Table 6): a graded assessment's table always shows all of it.
RELEVANCE_SCALE = (0, 1, 2, 3, 4)
LEVEL = 0.95
# κ of fewer items is not reported: one item either agrees or not, which exact agreement already says.
MIN_KAPPA_ITEMS = 2
# A ranking of runs is their means over turns; from fewer shared turns than this, τ is not reported.
MIN_SHARED_TURNS = 2
CI_METHOD = (
    "asymptotic 95% interval κ ± 1.96·SE, SE of Fleiss, Cohen & Everitt (1969) from statsmodels cohens_kappa "
    "on the confusion table (items taken as independent)"
)


def topic_of(turn_id: str) -> str:
    """The topic of a turn id ``<topic>_<turn>`` (CAsT ``81_3`` → ``81``, iKAT ``9-1_3`` → ``9-1``)."""
    return turn_id.rsplit("_", 1)[0]


@dataclass(frozen=True)
class PairedItem:
    """One item both assessments judged, with its two grades."""

    topic: str
    turn: str
    item: str
    a: int
    b: int


def paired_items(a: Grades, b: Grades, *, topic: Callable[[str], str] = topic_of) -> list[PairedItem]:
    """The items judged by both, in (topic, turn, item) order."""
    common = set(a) & set(b)
    # One topic lookup and sort key per turn, not per item: a collection has tens of thousands of items.
    topics = {t: topic(t) for t in {t for t, _ in common}}
    order = {t: (natural_key(topics[t]), natural_key(t)) for t in topics}
    keys = sorted(common, key=lambda k: (order[k[0]], k[1]))
    return [PairedItem(topics[t], t, i, int(a[(t, i)]), int(b[(t, i)])) for t, i in keys]


def is_graded(grades: Iterable[int]) -> bool:
    """Whether a set of grades uses more than the binary 0/1 scale."""
    return any(g not in (0, 1) for g in grades)


def scale_of(grades: Iterable[int]) -> list[int]:
    """The contiguous grades from the lowest to the highest seen, always covering 0–1 (binary) or 0–4 (graded)."""
    seen = {int(g) for g in grades}
    floor = RELEVANCE_SCALE if is_graded(seen) else (0, 1)
    seen |= set(floor)
    return list(range(min(seen), max(seen) + 1))


def cuts(a: Sequence[int], b: Sequence[int], *, threshold: int) -> tuple[int, int]:
    """The grade at which each side of the paired items counts as relevant: the threshold for a graded side, 1 for a
    binary one (its 1 is relevant as it stands). Decided on the items both judged, as the report is."""
    return (threshold if is_graded(a) else 1), (threshold if is_graded(b) else 1)


def binarise(grade: int, threshold: int) -> int:
    """1 when the grade reaches the relevance threshold, else 0."""
    return int(grade >= threshold)


def exact(a: Sequence[int], b: Sequence[int]) -> float | None:
    """Share of items given the same grade by both (None without items)."""
    return sum(x == y for x, y in zip(a, b, strict=True)) / len(a) if a else None


def overlap(a: Sequence[int], b: Sequence[int]) -> float | None:
    """Voorhees' overlap of binary labels: |A ∩ B| / |A ∪ B| of the items each calls relevant (None if neither)."""
    union = sum(1 for x, y in zip(a, b, strict=True) if x or y)
    both = sum(1 for x, y in zip(a, b, strict=True) if x and y)
    return both / union if union else None


def confusion(a: Sequence[int], b: Sequence[int], *, scale: Sequence[int]) -> list[list[int]]:
    """Counts of items per (grade of A, grade of B): rows A, columns B, in ``scale`` order (scikit-learn)."""
    from sklearn.metrics import confusion_matrix

    if not a:
        return [[0] * len(scale) for _ in scale]
    return confusion_matrix(list(a), list(b), labels=list(scale)).tolist()


def per_grade(a: Sequence[int], b: Sequence[int], *, scale: Sequence[int]) -> list[dict[str, Any]]:
    """Per grade of ``scale``: precision, recall and F1 of B against A (scikit-learn), with how many items A and B
    gave it; a value is None where it is 0/0 (B never gave the grade, or A never did)."""
    from sklearn.metrics import precision_recall_fscore_support

    if not a:
        return [{"grade": g, "precision": None, "recall": None, "f1": None, "in_a": 0, "in_b": 0} for g in scale]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        precision, recall, f1, support = precision_recall_fscore_support(
            list(a), list(b), labels=list(scale), zero_division=np.nan
        )
    predicted = [sum(1 for y in b if y == g) for g in scale]

    def value(x: float) -> float | None:
        return None if math.isnan(float(x)) else float(x)

    return [
        {
            "grade": g,
            "precision": value(precision[i]),
            "recall": value(recall[i]),
            "f1": value(f1[i]),
            "in_a": int(support[i]),
            "in_b": predicted[i],
        }
        for i, g in enumerate(scale)
    ]


@dataclass(frozen=True)
class Kappa:
    """Cohen's κ of two label lists, its interval, or why it is undefined."""

    value: float | None
    weights: str | None
    n: int
    why_undefined: str = ""
    se: float | None = None
    low: float | None = None
    high: float | None = None

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return asdict(self)


def why_kappa_undefined(a: Sequence[int], b: Sequence[int]) -> str:
    """The reason κ = (p_o − p_e) / (1 − p_e) has no value for these labels, or "" when it has one.

    κ is 0/0 when chance agreement is certain: both assessments put every item in one and the same category (for
    linear weights too: the expected weighted disagreement is 0 only then). When only one side puts every item in
    one category, observed and chance agreement are equal whatever the other side says, so κ is 0 by construction
    with a zero standard error: a number that measures nothing, reported as undefined rather than as "0.000 (95% CI
    0.000 to 0.000)".
    """
    if not a:
        return "no item was judged in both assessments"
    values = set(a) | set(b)
    if len(values) == 1:
        return f"both gave all {len(a)} item(s) grade {next(iter(values))}: chance agreement is 100%, so κ is 0/0"
    if len(a) < MIN_KAPPA_ITEMS:
        return f"only {len(a)} item was judged in both assessments; κ needs at least {MIN_KAPPA_ITEMS}"
    for side, labels in (("A", a), ("B", b)):
        if len(set(labels)) == 1:
            return (
                f"{side} gave all {len(labels)} item(s) grade {labels[0]}: with a single grade on one side, "
                "agreement equals chance agreement whatever the other side says, so κ would be 0 by construction"
            )
    return ""


def kappa(a: Sequence[int], b: Sequence[int], *, scale: Sequence[int], weighted: bool, interval: bool = True) -> Kappa:
    """Cohen's κ (scikit-learn), linear-weighted when ``weighted``, with the asymptotic interval (statsmodels)."""
    from sklearn.metrics import cohen_kappa_score

    weights = "linear" if weighted else None
    why = why_kappa_undefined(a, b)
    if why:
        return Kappa(None, weights, len(a), why)
    value = float(cohen_kappa_score(list(a), list(b), labels=list(scale), weights=weights))
    if math.isnan(value):
        return Kappa(None, weights, len(a), "κ is undefined for these labels")
    if not interval:
        return Kappa(value, weights, len(a))
    se, low, high = kappa_interval(confusion(a, b, scale=scale), weighted=weighted, value=value)
    return Kappa(value, weights, len(a), se=se, low=low, high=high)


def kappa_interval(
    table: Sequence[Sequence[int]], *, weighted: bool, value: float, level: float = LEVEL
) -> tuple[float | None, float | None, float | None]:
    """(SE, low, high) of κ from a confusion table over a contiguous scale; Nones when the SE is not defined."""
    from scipy.stats import norm
    from statsmodels.stats.inter_rater import cohens_kappa

    arr = np.asarray(table, dtype=float)
    if arr.sum() < 2:
        return None, None, None
    with np.errstate(divide="ignore", invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        res = cohens_kappa(arr, wt="linear" if weighted else None)
    var = float(res.var_kappa)
    if not math.isfinite(var) or var < 0:
        return None, None, None
    se = math.sqrt(var)
    z = float(norm.ppf(0.5 + level / 2))
    return se, max(-1.0, value - z * se), min(1.0, value + z * se)


def agreement(a: Grades, b: Grades, *, threshold: int, topic: Callable[[str], str] = topic_of) -> dict[str, Any]:
    """The whole item-level report of two assessments: κ with interval, confusion, binarised view, per topic.

    ``threshold`` is the relevance threshold graded scales are binarised at; a binary scale is its own binary view.
    When one assessment is graded and the other binary (NIST grades against crowd "holds an answer" labels), a
    weighted κ over 0–4 would count a binary 1 against a 4 as three steps of disagreement, so the headline κ is the
    binary one (the graded side cut at the threshold) and the confusion table keeps each side's own scale.
    """
    items = paired_items(a, b, topic=topic)
    ga, gb = [p.a for p in items], [p.b for p in items]
    graded_a, graded_b = is_graded(ga), is_graded(gb)
    mixed = graded_a != graded_b
    graded = graded_a and graded_b
    scale_a, scale_b = (scale_of(ga), scale_of(gb)) if mixed else (scale_of([*ga, *gb]),) * 2
    cut_a, cut_b = cuts(ga, gb, threshold=threshold)
    ba, bb = [binarise(g, cut_a) for g in ga], [binarise(g, cut_b) for g in gb]
    # The labels κ is computed on: the grades themselves, or the binary view when the scales differ.
    ka, kb, kscale = (ba, bb, [0, 1]) if mixed else (ga, gb, scale_a)
    by_topic: dict[str, list[int]] = {}
    for i, p in enumerate(items):
        by_topic.setdefault(p.topic, []).append(i)
    topics = []
    for name, idx in by_topic.items():
        ta, tb = [ka[i] for i in idx], [kb[i] for i in idx]
        k = kappa(ta, tb, scale=kscale, weighted=graded, interval=False)
        topics.append(
            {
                "topic": name,
                "items": len(idx),
                "exact": exact(ta, tb),
                "kappa": k.value,
                "why_undefined": k.why_undefined,
                "overlap": overlap([ba[i] for i in idx], [bb[i] for i in idx]),
            }
        )
    only_a = len(set(a) - set(b))
    only_b = len(set(b) - set(a))
    return {
        "items": len(items),
        "only_a": only_a,
        "only_b": only_b,
        "graded": graded,
        "mixed": mixed,
        "scale": kscale,
        "scale_a": scale_a,
        "scale_b": scale_b,
        "weights": "linear" if graded else None,
        "ci_method": CI_METHOD,
        "exact": exact(ka, kb),
        "kappa": kappa(ka, kb, scale=kscale, weighted=graded).as_dict(),
        "confusion": cross_table(ga, gb, rows=scale_a, columns=scale_b),
        "per_grade": per_grade(ka, kb, scale=kscale),
        "binary": {
            "threshold": threshold if (graded_a or graded_b) else 1,
            "cut_a": cut_a,
            "cut_b": cut_b,
            "already_binary": not (graded_a or graded_b),
            "exact": exact(ba, bb),
            "kappa": kappa(ba, bb, scale=[0, 1], weighted=False).as_dict(),
            "confusion": confusion(ba, bb, scale=[0, 1]),
            "per_grade": per_grade(ba, bb, scale=[0, 1]),
            "relevant_a": sum(ba),
            "relevant_b": sum(bb),
            "relevant_both": sum(1 for x, y in zip(ba, bb, strict=True) if x and y),
            "overlap": overlap(ba, bb),
        },
        "topics": topics,
    }


def cross_table(a: Sequence[int], b: Sequence[int], *, rows: Sequence[int], columns: Sequence[int]) -> list[list[int]]:
    """Counts per (grade of A, grade of B) with A's scale as rows and B's as columns (they differ when one side is
    binary): the square confusion matrix over both scales, cut to the rows and columns each side can take."""
    labels = sorted(set(rows) | set(columns))
    full = confusion(a, b, scale=labels)
    return [[full[labels.index(r)][labels.index(c)] for c in columns] for r in rows]


def ranking_agreement(a: Mapping[str, float], b: Mapping[str, float]) -> dict[str, Any]:
    """Kendall's τ-b (scipy) between the system orderings by score under A and under B, the systems with their
    scores and ranks under both, and each pair of systems the two order differently with its four scores."""
    res = stats.kendall_tau(a, b)
    common = set(a) & set(b)
    rank_a = stats.ranks({s: a[s] for s in common})
    rank_b = stats.ranks({s: b[s] for s in common})
    systems = [
        {"system": s, "a": a[s], "b": b[s], "rank_a": rank_a[s], "rank_b": rank_b[s]}
        for s in sorted(common, key=lambda s: (rank_a[s], rank_b[s], s))
    ]
    swapped = []
    for pair in res["swapped"]:
        x, y = pair["before_higher"], pair["before_lower"]  # x above y under A, below it under B
        swapped.append({"x": x, "y": y, "a_x": a[x], "a_y": a[y], "b_x": b[x], "b_y": b[y]})
    swapped.sort(key=lambda s: (rank_a[s["x"]], rank_a[s["y"]]))
    return {
        "tau": res["tau"],
        "pvalue": res["pvalue"],
        "n": res["n"],
        "systems": systems,
        "swapped": swapped,
        "tied": res["tied"],
        "why_undefined": _why_no_tau(res["tau"], res["n"], common, a, b),
    }


def _why_no_tau(
    tau: float | None, n: int, common: Collection[str], a: Mapping[str, float], b: Mapping[str, float]
) -> str:
    """Why τ is undefined (empty when it is not): too few runs, or one side gives every run the same score."""
    if tau is not None:
        return ""
    if n < 2:
        return "τ needs at least two runs scored under both"
    tied = [side for side, scores in (("A", a), ("B", b)) if len({scores[s] for s in common}) == 1]
    if tied:
        return f"every run scores the same under {' and '.join(tied)}, so there is no order to compare"
    return "τ is undefined for these rankings"


def means_over_turns(per_turn: Mapping[str, Mapping[str, float]], turns: Iterable[str]) -> dict[str, float]:
    """{system: mean of its per-turn values over ``turns``} (a system with no value on any of them is left out);
    ``math.fsum`` as the leaderboard sums, so over the same turns the two means are the same number."""
    wanted = set(turns)
    out = {}
    for system, values in per_turn.items():
        xs = [v for t, v in values.items() if t in wanted]
        if xs:
            out[system] = math.fsum(xs) / len(xs)
    return out


def shared_turn_ranking(
    per_turn_a: Mapping[str, Mapping[str, float]],
    per_turn_b: Mapping[str, Mapping[str, float]],
    *,
    turns_a: Iterable[str],
    turns_b: Iterable[str],
    min_turns: int = MIN_SHARED_TURNS,
) -> dict[str, Any]:
    """Kendall's τ between the run rankings of A and B over the turns both judged.

    A version that judged a single turn ranks the runs by that turn alone; set against the means over every turn
    of a full version, τ would mix what the judgments change with what the choice of turns changes. So each run's
    score under either version is its mean over the shared turns only, and with fewer than ``min_turns`` of them τ
    is not reported. ``per_turn_*``: {system: {turn: value}}; ``turns_*``: the turns each version judged.
    """
    set_a, set_b = set(turns_a), set(turns_b)
    shared = set_a & set_b
    res = ranking_agreement(means_over_turns(per_turn_a, shared), means_over_turns(per_turn_b, shared))
    res.update(shared_turns=len(shared), turns_a=len(set_a), turns_b=len(set_b), restricted=set_a != set_b)
    if len(shared) < min_turns:
        said = "no turn was" if not shared else f"only {len(shared)} turn was"
        res.update(
            tau=None,
            pvalue=None,
            swapped=[],
            tied=[],
            why_undefined=(
                f"{said} judged in both versions; a ranking of runs needs their means over at least {min_turns} "
                "shared turns"
            ),
        )
    return res
