"""Pivot systems across evaluation environments (González Sáez, Goeuriot & Mulhem, CORIA 2021).

Plain Python + numpy; no Django. A *result delta* is RΔ(S, EE) = M(S, EE) − M(pivot, EE).

* Consistency of a pivot (paper §4.2, Fig. 5): Pearson correlation, over the systems other than the pivot,
  between their deltas measured in EE1 and in EE2; mean ± std over random 50/50 topic splits.
* Correctness of a pivot (paper §4.3, Fig. 8): the non-pivot systems are split at random into a group evaluated
  only in EE1 and a group evaluated only in EE2; all systems are ranked by their delta to the pivot (the pivot
  itself at delta 0) and that ranking is compared with Kendall τ to the ranking of mean scores on the full topic
  set (EE_ref).

Scores come in as a matrix ``[systems × topics]`` per metric (per-topic values, e.g. from
``evaluation.metrics.evaluate``). Everything is vectorised over splits, so 50 splits × 9 pivots × 6 metrics takes
well under a second.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import stats

from ecast.core.errors import DomainError


class PivotError(DomainError, ValueError):
    """A pivot analysis that cannot run on the scores, systems or environments given."""


DEFAULT_METRICS = ["AP", "Rprec", "Bpref", "RR", "nDCG@10", "P@10"]
DEFAULT_SPLITS = 50
# Consistency correlates the deltas of the systems other than the pivot: with 3 runs that is 2 points, whose Pearson
# r is always +1 or -1, so an analysis needs at least 4 runs (3 deltas) for the figure to say anything.
MIN_RUNS = 4
MIN_RUNS_REASON = (
    "consistency is the Pearson r between the other runs' deltas to the pivot, and with 3 runs there are only 2 "
    "deltas, whose r is always ±1"
)


def random_splits(n_topics: int, *, n_splits: int = DEFAULT_SPLITS, seed: int = 0, fraction: float = 0.5) -> np.ndarray:
    """Boolean masks ``[n_splits × n_topics]``: True = topic in EE1, False = in EE2 (seeded, reproducible)."""
    if n_topics < 4:
        raise PivotError(f"a topic split needs at least 4 topics, got {n_topics}")
    if not 0 < fraction < 1:
        raise PivotError(f"fraction must be in (0, 1), got {fraction}")
    rng = np.random.default_rng(seed)
    n1 = max(1, min(n_topics - 1, int(round(n_topics * fraction))))
    masks = np.zeros((n_splits, n_topics), dtype=bool)
    for k in range(n_splits):
        masks[k, rng.permutation(n_topics)[:n1]] = True
    return masks


def system_assignments(n_systems: int, pivot: int, *, n_splits: int, seed: int = 0) -> np.ndarray:
    """For correctness: ``[n_splits × n_systems]`` bool, True = system evaluated in EE1 (pivot: in both)."""
    rng = np.random.default_rng(seed + 7919 * (pivot + 1))
    others = [s for s in range(n_systems) if s != pivot]
    out = np.zeros((n_splits, n_systems), dtype=bool)
    half = len(others) // 2 + len(others) % 2
    for k in range(n_splits):
        chosen = rng.permutation(others)[:half]
        out[k, chosen] = True
    out[:, pivot] = True
    return out


def _rowwise_pearson(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Pearson r of each row of ``a`` with the same row of ``b`` (NaN where a row is constant)."""
    a = a - a.mean(axis=1, keepdims=True)
    b = b - b.mean(axis=1, keepdims=True)
    num = (a * b).sum(axis=1)
    den = np.sqrt((a * a).sum(axis=1) * (b * b).sum(axis=1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)


def split_means(scores: np.ndarray, masks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean score of every system in EE1 and EE2 of every split: two arrays ``[n_splits × n_systems]``."""
    m1 = masks.astype(float)
    m2 = (~masks).astype(float)
    ee1 = (m1 @ scores.T) / m1.sum(axis=1, keepdims=True)
    ee2 = (m2 @ scores.T) / m2.sum(axis=1, keepdims=True)
    return ee1, ee2


def consistency(scores: np.ndarray, masks: np.ndarray) -> np.ndarray:
    """Correlation of result deltas between EE1 and EE2: ``[n_splits × n_pivots]`` (pivot = each system)."""
    ee1, ee2 = split_means(np.asarray(scores, dtype=float), masks)
    n_sys = ee1.shape[1]
    if n_sys < 3:
        raise PivotError("consistency needs at least 3 systems (2 deltas besides the pivot)")
    out = np.empty((masks.shape[0], n_sys))
    for p in range(n_sys):
        keep = np.arange(n_sys) != p
        d1 = ee1[:, keep] - ee1[:, [p]]
        d2 = ee2[:, keep] - ee2[:, [p]]
        out[:, p] = _rowwise_pearson(d1, d2)
    return out


# Means from different summation orders differ in the last bits; rounding keeps equal scores tied for Kendall τ.
_DECIMALS = 12


def _kendall(x: np.ndarray, y: np.ndarray) -> float:
    tau = stats.kendalltau(np.round(x, _DECIMALS), np.round(y, _DECIMALS)).statistic
    return float(tau) if tau == tau else float("nan")


def kendall_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Kendall τ-b of every row of ``x [K × n]`` with the vector ``y [n]`` (as scipy's tau-b), vectorised."""
    x = np.round(np.asarray(x, dtype=float), _DECIMALS)
    y = np.round(np.asarray(y, dtype=float), _DECIMALS)
    i, j = np.triu_indices(x.shape[1], k=1)
    sx = np.sign(x[:, i] - x[:, j])
    sy = np.sign(y[i] - y[j])
    n0 = i.size
    denom = np.sqrt((n0 - (sx == 0).sum(axis=1)) * float(n0 - (sy == 0).sum()))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(denom > 0, (sx * sy).sum(axis=1) / np.where(denom > 0, denom, 1.0), np.nan)


def correctness(scores: np.ndarray, masks: np.ndarray, *, seed: int = 0) -> np.ndarray:
    """Kendall τ between the delta-built ranking (systems split across EE1/EE2) and the full-set ranking."""
    scores = np.asarray(scores, dtype=float)
    ee1, ee2 = split_means(scores, masks)
    reference = scores.mean(axis=1)
    n_splits, n_sys = ee1.shape
    out = np.empty((n_splits, n_sys))
    for p in range(n_sys):
        in_ee1 = system_assignments(n_sys, p, n_splits=n_splits, seed=seed)
        deltas = np.where(in_ee1, ee1 - ee1[:, [p]], ee2 - ee2[:, [p]])
        deltas[:, p] = 0.0
        out[:, p] = kendall_rows(deltas, reference)
    return out


@dataclass
class PivotResult:
    """Consistency/correctness per metric × pivot (mean, std over splits) plus the raw per-split values."""

    systems: list[str]
    metrics: list[str]
    n_splits: int
    seed: int
    consistency_mean: dict[str, list[float]] = field(default_factory=dict)
    consistency_std: dict[str, list[float]] = field(default_factory=dict)
    correctness_mean: dict[str, list[float]] = field(default_factory=dict)
    correctness_std: dict[str, list[float]] = field(default_factory=dict)
    consistency_splits: dict[str, list[list[float]]] = field(default_factory=dict)
    correctness_splits: dict[str, list[list[float]]] = field(default_factory=dict)
    reference_means: dict[str, list[float]] = field(default_factory=dict)
    pivot_order: list[int] = field(default_factory=list)

    def as_dict(self) -> dict:
        """JSON-ready dict (NaN → None)."""
        return clean_json(self.__dict__.copy())


def clean_json(v):
    """Replace NaN/inf floats by None, recursively, so results can be stored as JSON."""
    if isinstance(v, dict):
        return {k: clean_json(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [clean_json(x) for x in v]
    if isinstance(v, float) and (v != v or v in (float("inf"), float("-inf"))):
        return None
    return v


def _nan_stats(values: np.ndarray) -> tuple[list[float], list[float]]:
    with np.errstate(invalid="ignore"), _quiet():
        mean = np.nanmean(values, axis=0)
        std = np.nanstd(values, axis=0)
    return [float(x) for x in mean], [float(x) for x in std]


@contextmanager
def _quiet() -> Iterator[None]:
    """Silence numpy's 'mean of empty slice' for all-NaN columns (reported as NaN/None on purpose)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


def pivot_analysis(
    per_metric_scores: Mapping[str, np.ndarray],
    systems: Sequence[str],
    *,
    n_splits: int = DEFAULT_SPLITS,
    seed: int = 0,
    fraction: float = 0.5,
) -> PivotResult:
    """Run consistency and correctness for every metric × pivot over seeded random topic splits."""
    metrics = list(per_metric_scores)
    if not metrics:
        raise PivotError("no metrics given")
    first = np.asarray(per_metric_scores[metrics[0]])
    n_sys, n_top = first.shape
    if n_sys != len(systems):
        raise PivotError(f"{len(systems)} system names for a score matrix with {n_sys} rows")
    masks = random_splits(n_top, n_splits=n_splits, seed=seed, fraction=fraction)
    result = PivotResult(systems=list(systems), metrics=metrics, n_splits=n_splits, seed=seed)
    for metric in metrics:
        scores = np.asarray(per_metric_scores[metric], dtype=float)
        if scores.shape != (n_sys, n_top):
            raise PivotError(f"metric {metric}: shape {scores.shape}, expected {(n_sys, n_top)}")
        cons = consistency(scores, masks)
        corr = correctness(scores, masks, seed=seed)
        result.consistency_mean[metric], result.consistency_std[metric] = _nan_stats(cons)
        result.correctness_mean[metric], result.correctness_std[metric] = _nan_stats(corr)
        result.consistency_splits[metric] = cons.tolist()
        result.correctness_splits[metric] = corr.tolist()
        result.reference_means[metric] = [float(x) for x in scores.mean(axis=1)]
    # Pivots are shown in decreasing order of their full-set score on the first metric, as in the paper's figures.
    result.pivot_order = [int(i) for i in np.argsort(-np.asarray(result.reference_means[metrics[0]]), kind="stable")]
    return result


# ---------------------------------------------------------------------------------------------------------------
# Named evaluation environments (qrels versions, paraphrase test sets): one mean score per system and EE.


def ee_consistency(ee_means: np.ndarray, pivot: int) -> dict:
    """Pearson r of deltas for every pair of EEs (rows of ``ee_means [n_ee × n_systems]``, NaN = not evaluated)."""
    n_ee, n_sys = ee_means.shape
    pairs: list[dict] = []
    for a in range(n_ee):
        for b in range(a + 1, n_ee):
            ok = ~np.isnan(ee_means[a]) & ~np.isnan(ee_means[b])
            ok[pivot] = False
            if np.isnan(ee_means[a, pivot]) or np.isnan(ee_means[b, pivot]) or ok.sum() < 2:
                r = float("nan")
            else:
                d1 = ee_means[a, ok] - ee_means[a, pivot]
                d2 = ee_means[b, ok] - ee_means[b, pivot]
                r = float(_rowwise_pearson(d1[None, :], d2[None, :])[0])
            pairs.append({"ee1": a, "ee2": b, "r": r})
    values = np.array([p["r"] for p in pairs], dtype=float)
    finite = values[~np.isnan(values)]
    return {
        "pairs": pairs,
        "mean": float(finite.mean()) if finite.size else float("nan"),
        "std": float(finite.std()) if finite.size else float("nan"),
    }


def cross_ee_ranking(ee_means: Mapping[str, Mapping[str, float]], pivot: str, choices: Mapping[str, str]) -> list[dict]:
    """Estimated ranking of systems evaluated in different EEs, by their delta to ``pivot`` in their own EE.

    ``ee_means``: {ee: {system: mean score}}; ``choices``: {system: ee it is evaluated in}. The pivot must have a
    score in every chosen EE (paper §3, requirement 1). Returns rows sorted best first.
    """
    rows: list[dict[str, Any]] = []
    for system, ee in choices.items():
        if ee not in ee_means:
            raise PivotError(f"unknown evaluation environment {ee!r}")
        if pivot not in ee_means[ee]:
            raise PivotError(f"pivot {pivot!r} has no score in evaluation environment {ee!r}")
        if system not in ee_means[ee]:
            raise PivotError(f"system {system!r} has no score in evaluation environment {ee!r}")
        score = float(ee_means[ee][system])
        pscore = float(ee_means[ee][pivot])
        rows.append({"system": system, "ee": ee, "score": score, "pivot_score": pscore, "delta": score - pscore})
    rows.sort(key=lambda r: -float(r["delta"]))
    for i, row in enumerate(rows, start=1):
        row["rank"] = i
    return rows


def ee_correctness(ee_means: np.ndarray, reference: np.ndarray, pivot: int, *, rounds: int = 50, seed: int = 0) -> dict:
    """Kendall τ mean ± std of delta rankings when each system is seen in one random EE, vs ``reference``."""
    n_ee, n_sys = ee_means.shape
    rng = np.random.default_rng(seed)
    taus = []
    for _ in range(rounds):
        deltas = np.empty(n_sys)
        for s in range(n_sys):
            options = [e for e in range(n_ee) if not np.isnan(ee_means[e, s]) and not np.isnan(ee_means[e, pivot])]
            if not options:
                deltas[s] = np.nan
                continue
            e = options[int(rng.integers(len(options)))]
            deltas[s] = ee_means[e, s] - ee_means[e, pivot]
        deltas[pivot] = 0.0
        ok = ~np.isnan(deltas) & ~np.isnan(reference)
        taus.append(_kendall(deltas[ok], reference[ok]) if ok.sum() >= 2 else float("nan"))
    arr = np.array(taus, dtype=float)
    finite = arr[~np.isnan(arr)]
    return {
        "taus": [None if t != t else t for t in taus],
        "mean": float(finite.mean()) if finite.size else float("nan"),
        "std": float(finite.std()) if finite.size else float("nan"),
    }


def score_matrix(
    per_topic: Mapping[str, Mapping[str, float]], systems: Sequence[str], topics: Sequence[str]
) -> np.ndarray:
    """``{system: {topic: value}}`` → ``[systems × topics]`` with 0 for missing topics (trec_eval -c)."""
    out = np.zeros((len(systems), len(topics)))
    index = {t: j for j, t in enumerate(topics)}
    for i, s in enumerate(systems):
        for t, v in per_topic.get(s, {}).items():
            j = index.get(t)
            if j is not None:
                out[i, j] = float(v)
    return out


def named_ee_analysis(
    ee_means: Mapping[str, Mapping[str, Mapping[str, float]]], *, rounds: int = DEFAULT_SPLITS, seed: int = 0
) -> dict:
    """Consistency (all EE pairs) and correctness (random EE per system) of every pivot, per metric.

    ``ee_means``: {metric: {ee: {system: mean score}}}. The reference ranking is each system's mean over the EEs it
    was evaluated in. Output keys match :class:`PivotResult` so reports treat both kinds alike.
    """
    metrics = list(ee_means)
    ees = sorted({e for m in metrics for e in ee_means[m]})
    systems = sorted({s for m in metrics for e in ee_means[m] for s in ee_means[m][e]})
    if len(ees) < 2:
        raise PivotError("named evaluation environments need at least 2 environments")
    if len(systems) < 3:
        raise PivotError("consistency needs at least 3 systems (2 deltas besides the pivot)")
    out: dict = {
        "systems": systems,
        "metrics": metrics,
        "environments": ees,
        "rounds": rounds,
        "seed": seed,
        "consistency_mean": {},
        "consistency_std": {},
        "correctness_mean": {},
        "correctness_std": {},
        "reference_means": {},
        "ee_means": {m: {e: dict(ee_means[m].get(e, {})) for e in ees} for m in metrics},
    }
    for m in metrics:
        mat = np.full((len(ees), len(systems)), np.nan)
        for i, e in enumerate(ees):
            for j, s in enumerate(systems):
                v = ee_means[m].get(e, {}).get(s)
                if v is not None:
                    mat[i, j] = float(v)
        with _quiet():
            reference = np.nanmean(mat, axis=0)
        cm, cs, km, ks = [], [], [], []
        for p in range(len(systems)):
            c = ee_consistency(mat, p)
            k = ee_correctness(mat, reference, p, rounds=rounds, seed=seed)
            cm.append(c["mean"])
            cs.append(c["std"])
            km.append(k["mean"])
            ks.append(k["std"])
        out["consistency_mean"][m], out["consistency_std"][m] = cm, cs
        out["correctness_mean"][m], out["correctness_std"][m] = km, ks
        out["reference_means"][m] = [float(x) for x in reference]
    out["pivot_order"] = [
        int(i)
        for i in np.argsort(-np.nan_to_num(np.asarray(out["reference_means"][metrics[0]]), nan=-1e9), kind="stable")
    ]
    return clean_json(out)
