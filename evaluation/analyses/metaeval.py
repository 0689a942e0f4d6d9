"""Meta-evaluation of complex metrics (Albahem, Spina, Scholer & Cavedon, ECIR 2019).

Plain Python + numpy/pandas/scipy; no Django.

* Intuitiveness Test (paper Algorithm 1, multi-simple-metric version of Sakai's test): over run pairs × cases
  (topic, or topic × iteration) where two complex metrics disagree (δMc1·δMc2 < 0), count how often each agrees
  with *all* simple metrics (δMc·δMs > 0 for every Ms; a tie of a simple metric never counts as agreement, so
  ties are discarded from the successes). Intuitiveness = Correct / Disagreements. Sign test over
  Correct1 + Correct2 trials with p = 0.5 (``scipy.stats.binomtest``), as in the paper §2.1.
* Metric Unanimity (Algorithm 2, after Amigó et al.): PMI between "Mc captures a difference" (1 per case, 0.5 on
  a tie of Mc) and "all simple metrics agree" (all ≥ or all ≤), with the joint event counted over Ms ∪ {Mc}.
* Rankings of complex metrics (Tables 2 and 3): count of significant intuitiveness wins / of higher MU values,
  turned into dense ranks (1 = best); Spearman correlation of the two rankings (Table 4).

Vectorised: all run pairs × cases for one metric pair is one numpy expression.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from ecast.core.errors import DomainError

# Columns of the TREC DD table (aalbahem/ir-eval-meta-analysis) and their meaning.
DD_COMPLEX = ["act", "nct", "nEU", "nsDCG", "alpha-nDCG", "nERR-IA", "rbu_0.990_0.001"]
DD_SIMPLE = {"precision": "p", "subtopic recall": "strec", "r-it": "rtime", "neg-it": "ntime", "tot-time": "ttime"}
DEFAULT_DIMENSIONS: dict[str, list[str]] = {
    "Rel": ["p"],
    "Div": ["strec"],
    "Eff": ["ttime"],
    "Rel+Div": ["p", "strec"],
    "Rel+Div+Eff": ["p", "strec", "ttime"],
}
SIGNIFICANCE = 0.05


class TableError(DomainError, ValueError):
    """A per-topic score table that cannot be used (message names the file/line/column)."""


def load_table(path_or_buffer, *, name: str = "table") -> pd.DataFrame:
    """Read a per-topic CSV (columns run, [iteration,] topic, metrics...), drop ``topic == all`` rows."""
    try:
        df = pd.read_csv(path_or_buffer, compression="infer")
    except (pd.errors.ParserError, UnicodeDecodeError, ValueError) as exc:
        raise TableError(f"{name}: cannot parse as CSV: {exc}") from exc
    df = df.loc[:, [c for c in df.columns if not str(c).startswith("Unnamed")]]
    for required in ("run", "topic"):
        if required not in df.columns:
            raise TableError(f"{name}: line 1: missing required column {required!r}")
    if "iteration" not in df.columns:
        df["iteration"] = 1
    df["topic"] = df["topic"].astype(str)
    df["run"] = df["run"].astype(str)
    df = df[df["topic"].str.lower() != "all"].copy()
    metric_cols = [c for c in df.columns if c not in ("run", "topic", "iteration")]
    if not metric_cols:
        raise TableError(f"{name}: line 1: no metric columns besides run/iteration/topic")
    for col in metric_cols:
        converted = pd.to_numeric(df[col], errors="coerce")
        bad = converted.isna() & df[col].notna()
        if bad.any():
            line = int(bad.to_numpy().nonzero()[0][0])
            # +2: header line and 1-based lines; the index survives the topic filter.
            raise TableError(
                f"{name}: line {int(df.index[line]) + 2}: column {col!r} is not numeric: {df[col].iloc[line]!r}"
            )
        df[col] = converted
    try:
        df["iteration"] = pd.to_numeric(df["iteration"]).astype(int)
    except (ValueError, TypeError) as exc:
        raise TableError(f"{name}: column 'iteration' is not an integer column") from exc
    dup = df.duplicated(["run", "iteration", "topic"])
    if dup.any():
        row = df[dup].iloc[0]
        raise TableError(
            f"{name}: duplicate row for run {row['run']!r}, iteration {row['iteration']}, topic {row['topic']!r}"
        )
    return df.reset_index(drop=True)


def metric_columns(df: pd.DataFrame) -> list[str]:
    """Metric columns of a loaded table."""
    return [c for c in df.columns if c not in ("run", "topic", "iteration")]


@dataclass
class PairArrays:
    """Deltas of every metric over run pairs (i < j) × cases, flattened; NaN where a run lacks the case."""

    runs: list[str]
    deltas: dict[str, np.ndarray]
    valid: np.ndarray


def pair_deltas(df: pd.DataFrame, metrics: Iterable[str], *, iterations: Iterable[int] | None = None) -> PairArrays:
    """Build the ``[pairs × cases]`` delta arrays for the chosen iterations (None = all, pooled)."""
    metrics = list(dict.fromkeys(metrics))
    missing = [m for m in metrics if m not in df.columns]
    if missing:
        raise TableError(f"unknown metric column(s): {', '.join(missing)}")
    sub = df if iterations is None else df[df["iteration"].isin(list(iterations))]
    if sub.empty:
        raise TableError("no rows for the chosen iterations")
    runs = sorted(sub["run"].unique())
    cases = sub[["iteration", "topic"]].drop_duplicates().sort_values(["iteration", "topic"])
    case_index = pd.MultiIndex.from_frame(cases)
    r_idx = pd.Index(runs).get_indexer(sub["run"])
    c_idx = case_index.get_indexer(pd.MultiIndex.from_frame(sub[["iteration", "topic"]]))
    i, j = np.triu_indices(len(runs), k=1)
    deltas = {}
    valid = np.ones((len(i), len(case_index)), dtype=bool)
    for m in metrics:
        mat = np.full((len(runs), len(case_index)), np.nan)
        mat[r_idx, c_idx] = sub[m].to_numpy(dtype=float)
        d = mat[i] - mat[j]
        valid &= ~np.isnan(d)
        deltas[m] = d
    flat = valid.ravel()
    return PairArrays(runs=runs, deltas={m: d.ravel()[flat] for m, d in deltas.items()}, valid=flat)


def intuitiveness(pa: PairArrays, c1: str, c2: str, simple: Sequence[str]) -> dict:
    """Algorithm 1 for one pair of complex metrics; returns counts, scores and the sign test."""
    d1, d2 = pa.deltas[c1], pa.deltas[c2]
    ds = np.vstack([pa.deltas[s] for s in simple])
    all_pos = (ds > 0).all(axis=0)
    all_neg = (ds < 0).all(axis=0)
    dis = d1 * d2 < 0
    correct1 = int((dis & (((d1 > 0) & all_pos) | ((d1 < 0) & all_neg))).sum())
    correct2 = int((dis & (((d2 > 0) & all_pos) | ((d2 < 0) & all_neg))).sum())
    n_dis = int(dis.sum())
    simple_ties = int((dis & (ds == 0).any(axis=0)).sum())
    return _intuitiveness_result(c1, c2, len(d1), n_dis, correct1, correct2, simple_ties)


def _intuitiveness_result(c1, c2, total, n_dis, correct1, correct2, simple_ties) -> dict:
    trials = correct1 + correct2
    p_value = float(stats.binomtest(max(correct1, correct2), trials, 0.5).pvalue) if trials else 1.0
    winner = None
    if p_value < SIGNIFICANCE and correct1 != correct2:
        winner = c1 if correct1 > correct2 else c2
    return {
        "metric1": c1,
        "metric2": c2,
        "cases": total,
        "disagreements": n_dis,
        "disagreement_fraction": n_dis / total if total else 0.0,
        "correct1": correct1,
        "correct2": correct2,
        "simple_ties": simple_ties,
        "intuitiveness1": correct1 / n_dis if n_dis else 0.0,
        "intuitiveness2": correct2 / n_dis if n_dis else 0.0,
        "p_value": p_value,
        "significant_winner": winner,
    }


def unanimity(pa: PairArrays, complex_metric: str, simple: Sequence[str]) -> float:
    """Algorithm 2: Metric Unanimity (PMI, natural log) of one complex metric with a set of simple metrics."""
    dc = pa.deltas[complex_metric]
    n = len(dc)
    if n == 0:
        return float("nan")
    ds = np.vstack([pa.deltas[s] for s in simple])
    s_ge = (ds >= 0).all(axis=0)
    s_le = (ds <= 0).all(axis=0)
    dm = float(np.where(dc == 0, 0.5, 1.0).sum())
    dms = float((s_ge | s_le).sum())
    dmms = float(((s_ge & (dc >= 0)) | (s_le & (dc <= 0))).sum())
    if dmms == 0 or dms == 0:
        return float("-inf") if dms else float("nan")
    return math.log((dmms / n) / ((dm / n) * (dms / n)))


def dense_rank_desc(values: Sequence[float]) -> list[int]:
    """Dense ranks, 1 = largest value (ties share a rank), as in the paper's Tables 2–3."""
    arr = np.asarray(values, dtype=float)
    return [int(r) for r in stats.rankdata(-arr, method="dense")]


def meta_evaluate(
    df: pd.DataFrame,
    complex_metrics: Sequence[str],
    dimensions: Mapping[str, Sequence[str]],
    *,
    iteration_groups: Mapping[str, Sequence[int] | None] | None = None,
) -> dict:
    """Intuitiveness, unanimity, both rankings and their Spearman ρ for every dimension × iteration group."""
    complex_metrics = list(complex_metrics)
    if len(complex_metrics) < 2:
        raise TableError("choose at least two complex metrics")
    if not dimensions:
        raise TableError("choose at least one set of simple metrics")
    if iteration_groups is None:
        iteration_groups = default_iteration_groups(df)
    simple_all = sorted({s for ss in dimensions.values() for s in ss})
    overlap = set(simple_all) & set(complex_metrics)
    if overlap:
        raise TableError(f"metric(s) used as both simple and complex: {', '.join(sorted(overlap))}")
    results = []
    for group_name, its in iteration_groups.items():
        pa = pair_deltas(df, complex_metrics + simple_all, iterations=its)
        for dim_name, simple in dimensions.items():
            results.append(_one_setting(pa, complex_metrics, list(simple), dim_name, group_name))
    return {
        "complex_metrics": complex_metrics,
        "dimensions": {k: list(v) for k, v in dimensions.items()},
        "iteration_groups": {k: (list(v) if v is not None else None) for k, v in iteration_groups.items()},
        "runs": sorted(df["run"].unique().tolist()),
        "n_topics": int(df["topic"].nunique()),
        "settings": results,
    }


def default_iteration_groups(df: pd.DataFrame) -> dict[str, list[int] | None]:
    """First, third and last iteration separately plus all pooled (the paper's 1 / 3 / 10 / All)."""
    its = sorted(int(x) for x in df["iteration"].unique())
    if len(its) == 1:
        return {"All": None}
    groups: dict[str, list[int] | None] = {}
    for it in dict.fromkeys([its[0], its[min(2, len(its) - 1)], its[-1]]):
        groups[str(it)] = [it]
    groups["All"] = None
    return groups


def _one_setting(pa: PairArrays, complex_metrics: list[str], simple: list[str], dim: str, group: str) -> dict:
    pairs = []
    sig_wins = dict.fromkeys(complex_metrics, 0)
    for a in range(len(complex_metrics)):
        for b in range(a + 1, len(complex_metrics)):
            res = intuitiveness(pa, complex_metrics[a], complex_metrics[b], simple)
            pairs.append(res)
            if res["significant_winner"]:
                sig_wins[res["significant_winner"]] += 1
    mu = {c: unanimity(pa, c, simple) for c in complex_metrics}
    mu_wins = {c: sum(1 for d in complex_metrics if d != c and mu[c] > mu[d]) for c in complex_metrics}
    it_rank = dense_rank_desc([sig_wins[c] for c in complex_metrics])
    mu_rank = dense_rank_desc([mu_wins[c] for c in complex_metrics])
    rho, p = _spearman(it_rank, mu_rank)
    return {
        "dimension": dim,
        "simple_metrics": simple,
        "iterations": group,
        "cases": int(len(next(iter(pa.deltas.values())))),
        "pairs": pairs,
        "intuitiveness_wins": sig_wins,
        "unanimity": {c: (None if not math.isfinite(v) else v) for c, v in mu.items()},
        "unanimity_wins": mu_wins,
        "intuitiveness_rank": dict(zip(complex_metrics, it_rank, strict=True)),
        "unanimity_rank": dict(zip(complex_metrics, mu_rank, strict=True)),
        "spearman": rho,
        "spearman_p": p,
    }


def _spearman(a: Sequence[int], b: Sequence[int]) -> tuple[float | None, float | None]:
    if len(set(a)) < 2 or len(set(b)) < 2:
        return None, None  # a constant ranking has no defined correlation
    res = stats.spearmanr(a, b)
    return float(res.statistic), float(res.pvalue)


# ---------------------------------------------------------------------------------------------------------------
# ECAsT application: stability of system rankings across paraphrase test sets, per measure.


def ranking_stability(means: Mapping[str, Mapping[str, Mapping[str, float]]]) -> list[dict]:
    """For each measure, mean ± std Kendall τ between system rankings on every pair of test sets.

    ``means``: {measure: {test set: {system: mean score}}}; only systems present in both sets of a pair count.
    Returned best (most stable) first.
    """
    out: list[dict[str, Any]] = []
    for measure, by_set in means.items():
        names = sorted(by_set)
        taus = []
        for a in range(len(names)):
            for b in range(a + 1, len(names)):
                common = sorted(set(by_set[names[a]]) & set(by_set[names[b]]))
                if len(common) < 2:
                    continue
                x = [by_set[names[a]][s] for s in common]
                y = [by_set[names[b]][s] for s in common]
                tau = stats.kendalltau(x, y).statistic
                if tau == tau:
                    taus.append({"set1": names[a], "set2": names[b], "tau": float(tau), "systems": len(common)})
        vals = np.array([t["tau"] for t in taus])
        out.append(
            {
                "measure": measure,
                "pairs": taus,
                "mean_tau": float(vals.mean()) if vals.size else None,
                "std_tau": float(vals.std()) if vals.size else None,
            }
        )
    out.sort(key=lambda r: -(float(r["mean_tau"]) if r["mean_tau"] is not None else -2.0))
    return out
