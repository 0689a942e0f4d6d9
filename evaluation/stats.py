"""Statistics over per-turn scores: paired significance between two runs, ranking stability between qrels versions.

Plain Python + scipy/numpy, no Django. Inputs are {qid: value} dicts and {run: mean} dicts.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from itertools import combinations
from typing import Any

import numpy as np
from scipy import stats


@dataclass(frozen=True)
class PairedResult:
    """Outcome of comparing two runs on the same turns."""

    n: int
    mean_a: float
    mean_b: float
    mean_diff: float
    t_statistic: float
    t_pvalue: float
    randomization_pvalue: float
    permutations: int
    seed: int

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready dict (NaN → None)."""
        return {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in asdict(self).items()}


def paired_compare(
    a: Mapping[str, float], b: Mapping[str, float], *, permutations: int = 10_000, seed: int = 42
) -> PairedResult:
    """Paired t-test (scipy ttest_rel) and a two-sided sign-flip randomization test over the common turns.

    The randomization test flips the sign of each per-turn difference with probability 1/2 (Fisher's paired
    randomization, as in Smucker et al. 2007), counts |mean| ≥ observed, and adds one to numerator and
    denominator so the p-value is never 0.
    """
    qids = sorted(set(a) & set(b))
    x = np.array([a[q] for q in qids], dtype=float)
    y = np.array([b[q] for q in qids], dtype=float)
    n = len(qids)
    if n == 0:
        nan = float("nan")
        return PairedResult(0, nan, nan, nan, nan, nan, nan, permutations, seed)
    d = x - y
    if n < 2 or np.allclose(d, d[0]):
        # ttest_rel is undefined for constant differences; identical runs are "no difference" (p = 1).
        t_stat, t_p = (0.0, 1.0) if np.allclose(d, 0) else (float("inf") * np.sign(d[0]), 0.0)
    else:
        res = stats.ttest_rel(x, y)
        t_stat, t_p = float(res.statistic), float(res.pvalue)
    observed = abs(d.mean())
    rng = np.random.default_rng(seed)
    signs = rng.choice(np.array([-1.0, 1.0]), size=(permutations, n))
    perm_means = np.abs((signs * d).mean(axis=1))
    extreme = int(np.sum(perm_means >= observed - 1e-12))
    p_rand = (extreme + 1) / (permutations + 1)
    return PairedResult(
        n=n,
        mean_a=float(x.mean()),
        mean_b=float(y.mean()),
        mean_diff=float(d.mean()),
        t_statistic=float(t_stat),
        t_pvalue=float(t_p),
        randomization_pvalue=float(p_rand),
        permutations=permutations,
        seed=seed,
    )


def kendall_tau(a: Mapping[str, float], b: Mapping[str, float]) -> dict[str, Any]:
    """Kendall's tau-b (scipy) between two system orderings by score, and the pairs whose order swapped.

    Only systems present in both mappings count. A pair "swaps" when one ordering strictly prefers one system and
    the other strictly prefers the other; ties on one side are reported separately.
    """
    systems = sorted(set(a) & set(b))
    if len(systems) < 2:
        return {"tau": None, "pvalue": None, "n": len(systems), "swapped": [], "tied": []}
    xa = [a[s] for s in systems]
    xb = [b[s] for s in systems]
    res = stats.kendalltau(xa, xb)
    swapped: list[dict[str, Any]] = []
    tied: list[list[str]] = []
    for s, t in combinations(systems, 2):
        da, db = a[s] - a[t], b[s] - b[t]
        if da * db < 0:
            hi_a, lo_a = (s, t) if da > 0 else (t, s)
            swapped.append(
                {"before_higher": hi_a, "before_lower": lo_a, "delta_before": abs(da), "delta_after": abs(db)}
            )
        elif (da == 0) != (db == 0):
            tied.append([s, t])
    tau = None if math.isnan(res.statistic) else float(res.statistic)
    pvalue = None if math.isnan(res.pvalue) else float(res.pvalue)
    return {"tau": tau, "pvalue": pvalue, "n": len(systems), "swapped": swapped, "tied": tied}


def ranks(means: Mapping[str, float]) -> dict[str, int]:
    """Competition ranks (1 = best; equal scores share the better rank)."""
    ordered = sorted(means.items(), key=lambda kv: (-kv[1], kv[0]))
    out: dict[str, int] = {}
    prev: float | None = None
    rank = 0
    for i, (name, value) in enumerate(ordered, start=1):
        if prev is None or value != prev:
            rank = i
            prev = value
        out[name] = rank
    return out


def std_error(values: list[float]) -> float:
    """Standard error of the mean (0 for fewer than two values), for error bars."""
    if len(values) < 2:
        return 0.0
    return float(np.std(values, ddof=1) / math.sqrt(len(values)))
