"""ANOVA over permuted conversations (Faggioli et al., ECIR 2022, Sec. 3.2, Tables 4–5) and Tukey HSD tiers.

MD0: score ~ topic + system (original order only, one observation per topic × system).
MD1: score ~ topic + perm(topic) + system (permutations nested in topics; permutation counts may differ per topic).

Sums of squares come straight from group means (np.bincount), which is exact here because every permutation is
scored for every system exactly once: the system factor is then orthogonal to topic and perm(topic), so the
sequential (type I) sums of squares equal Σ n_g (mean_g − mean_parent)² for each nested term, and the residual is
y − mean_perm − mean_system + grand mean. Results equal statsmodels' nested-model comparison of successive OLS
fits (tests/evaluation/permutations/test_anova.py) at a fraction of the cost.

Effect size: ω̂²⟨fact⟩ = df_fact (F_fact − 1) / (df_fact (F_fact − 1) + N), N = number of observations. The paper
states no formula; this one reproduces its Tables 4 and 5 (topic 0.758 from F=17.454, df=19, N=100; model 0.030
from F=38.230, df=4, N=4800). As in the paper it is not reported (None) for non-significant factors.

Tukey HSD uses the fitted model's residual mean square and degrees of freedom with the studentized range
distribution (scipy.stats.studentized_range), not a one-way ANOVA of the system factor.

Plain Python: no Django imports.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from ecast.core.errors import DomainError


class AnovaError(DomainError, ValueError):
    """Observations an ANOVA model cannot be fitted to (missing, non-finite, unbalanced)."""


@dataclass
class AnovaRow:
    source: str
    ss: float
    df: int
    ms: float | None = None
    f: float | None = None
    p: float | None = None
    omega2: float | None = None


@dataclass
class AnovaResult:
    """An ANOVA table plus what post-hoc tests need (residual MS/df and per-system means and counts)."""

    model: str
    rows: list[AnovaRow]
    n: int
    ms_error: float
    df_error: int
    system_means: dict[str, float]
    system_n: dict[str, int]
    alpha: float = 0.05
    extra: dict[str, Any] = field(default_factory=dict)

    def row(self, source: str) -> AnovaRow:
        return next(r for r in self.rows if r.source == source)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def omega_squared(df: int, f: float, n: int) -> float:
    """Partial ω̂² = df(F−1) / (df(F−1) + N) (reproduces Faggioli et al. Tables 4–5)."""
    num = df * (f - 1.0)
    return float(num / (num + n))


def _factorize(values: Any) -> tuple[np.ndarray, np.ndarray]:
    codes, uniques = pd.factorize(pd.Series(values), sort=True)
    if (codes < 0).any():
        raise AnovaError("missing values in a factor column")
    return codes.astype(np.int64), np.asarray(uniques)


def _fit(
    y: np.ndarray,
    topic: np.ndarray,
    perm: np.ndarray | None,
    system: np.ndarray,
    system_labels: np.ndarray,
    model: str,
    alpha: float,
) -> AnovaResult:
    n = y.size
    if n == 0:
        raise AnovaError("no observations")
    if not np.isfinite(y).all():
        raise AnovaError("scores must be finite numbers")
    n_sys = int(system.max()) + 1
    cell = perm if perm is not None else topic
    n_cells = int(cell.max()) + 1
    counts = np.bincount(cell * n_sys + system, minlength=n_cells * n_sys)
    if (counts != 1).any():
        what = "permutation" if perm is not None else "topic"
        raise AnovaError(f"every {what} needs exactly one score per system (unbalanced or duplicated cells found)")
    grand = y.mean()
    nt = np.bincount(topic)
    mt = np.bincount(topic, weights=y) / nt
    ns = np.bincount(system)
    ms_ = np.bincount(system, weights=y) / ns
    ss_total = float(((y - grand) ** 2).sum())
    ss_topic = float((nt * (mt - grand) ** 2).sum())
    ss_sys = float((ns * (ms_ - grand) ** 2).sum())
    n_topics = nt.size
    rows: list[AnovaRow] = [AnovaRow("topic", ss_topic, n_topics - 1)]
    if perm is not None:
        npc = np.bincount(perm)
        mp = np.bincount(perm, weights=y) / npc
        topic_of_perm = np.zeros(npc.size, dtype=np.int64)
        topic_of_perm[perm] = topic
        ss_perm = float((npc * (mp - mt[topic_of_perm]) ** 2).sum())
        rows.append(AnovaRow("perm(topic)", ss_perm, npc.size - n_topics))
        fitted_cell = mp[perm]
    else:
        fitted_cell = mt[topic]
    rows.append(AnovaRow("system", ss_sys, n_sys - 1))
    resid = y - fitted_cell - ms_[system] + grand
    ss_err = float((resid**2).sum())
    df_err = n - n_cells - n_sys + 1
    if df_err <= 0:
        raise AnovaError("not enough observations for a residual term")
    ms_err = ss_err / df_err
    for r in rows:
        if r.df <= 0:
            r.ms = None
            continue
        r.ms = r.ss / r.df
        r.f = r.ms / ms_err if ms_err > 0 else float("inf")
        r.p = float(stats.f.sf(r.f, r.df, df_err)) if ms_err > 0 else 0.0
        r.omega2 = omega_squared(r.df, r.f, n) if r.p < alpha and r.f > 1 else None
    rows.append(AnovaRow("error", ss_err, df_err, ms_err))
    rows.append(AnovaRow("total", ss_total, n - 1))
    return AnovaResult(
        model=model,
        rows=rows,
        n=n,
        ms_error=ms_err,
        df_error=df_err,
        system_means={str(system_labels[i]): float(ms_[i]) for i in range(n_sys)},
        system_n={str(system_labels[i]): int(ns[i]) for i in range(n_sys)},
        alpha=alpha,
    )


def md0(frame: pd.DataFrame, *, alpha: float = 0.05) -> AnovaResult:
    """MD0: score ~ topic + system; ``frame`` has columns topic, system, score (one row per topic × system)."""
    topic, _ = _factorize(frame["topic"])
    system, labels = _factorize(frame["system"])
    y = frame["score"].to_numpy(dtype=float)
    return _fit(y, topic, None, system, labels, "MD0", alpha)


def md1(frame: pd.DataFrame, *, alpha: float = 0.05) -> AnovaResult:
    """MD1: score ~ topic + perm(topic) + system; columns topic, perm, system, score (perm ids may repeat across
    topics: a permutation is always one topic's permutation)."""
    topic, _ = _factorize(frame["topic"])
    perm_local, _ = _factorize(frame["perm"])
    perm, _ = _factorize(topic * (int(perm_local.max()) + 1) + perm_local)
    system, labels = _factorize(frame["system"])
    y = frame["score"].to_numpy(dtype=float)
    return _fit(y, topic, perm, system, labels, "MD1", alpha)


@dataclass
class TukeyPair:
    a: str
    b: str
    diff: float
    q: float
    p: float
    significant: bool


def tukey_hsd(result: AnovaResult) -> list[TukeyPair]:
    """All system pairs (better first) with q = |Δ| / sqrt(MS_err / n) and p from the studentized range."""
    names = sorted(result.system_means, key=lambda s: -result.system_means[s])
    k = len(names)
    pairs: list[TukeyPair] = []
    if k < 2:
        return pairs
    idx = [(i, j) for i in range(k) for j in range(i + 1, k)]
    diffs = np.array([result.system_means[names[i]] - result.system_means[names[j]] for i, j in idx])
    # n per system is equal in a complete design; harmonic mean (Tukey–Kramer) keeps it honest otherwise.
    se = np.array(
        [
            np.sqrt(result.ms_error / 2.0 * (1.0 / result.system_n[names[i]] + 1.0 / result.system_n[names[j]]))
            for i, j in idx
        ]
    )
    with np.errstate(divide="ignore", invalid="ignore"):
        q = np.where(se > 0, np.abs(diffs) / se, np.inf)
    p = stats.studentized_range.sf(q, k, result.df_error)
    for (i, j), d, qq, pp in zip(idx, diffs, q, p, strict=True):
        pairs.append(TukeyPair(names[i], names[j], float(d), float(qq), float(pp), bool(pp < result.alpha)))
    return pairs


def tiers(result: AnovaResult, pairs: list[TukeyPair] | None = None) -> list[list[str]]:
    """Tiers of systems, best first: a tier starts at the best system not yet placed and takes every following
    system (by mean) not significantly different from that first member (as read in Faggioli et al. Sec. 4.4)."""
    pairs = pairs if pairs is not None else tukey_hsd(result)
    sig = {(pr.a, pr.b): pr.significant for pr in pairs}
    sig.update({(pr.b, pr.a): pr.significant for pr in pairs})
    names = sorted(result.system_means, key=lambda s: -result.system_means[s])
    out: list[list[str]] = []
    for name in names:
        if out and not sig.get((out[-1][0], name), False):
            out[-1].append(name)
        else:
            out.append([name])
    return out


# ---------------------------------------------------------------- descriptive analyses (Fig. 1, Tables 2–3, Fig. 2)
# ``frame`` columns: topic, perm, is_original (bool), system, score — one row per permutation × system.


def _wide(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.pivot_table(index=["topic", "perm"], columns="system", values="score", aggfunc="first")


def min_mean_max(frame: pd.DataFrame) -> pd.DataFrame:
    """Table 2: per system, the mean over topics of the original-order score and of the per-topic min/mean/max over
    permutations (min/max = the worst/best mean a cherry-picked permutation per topic can produce)."""
    per_topic = frame.groupby(["system", "topic"])["score"].agg(["min", "mean", "max"])
    orig = frame[frame["is_original"]].groupby(["system", "topic"])["score"].first().rename("original")
    both = per_topic.join(orig)
    out = both.groupby(level="system")[["original", "min", "mean", "max"]].mean()
    return out.sort_values("mean", ascending=False)


def max_distance(frame: pd.DataFrame) -> tuple[pd.DataFrame, pd.Series]:
    """Table 3: cell (a, b) = mean over topics of max over permutations of score_a − score_b; diagonal = mean over
    topics of max over permutations of score_a − mean(other systems). Also returns, per system, the mean over topics
    of max over permutations of score_a − max(other systems): when positive, choosing those permutations makes the
    system's mean strictly higher than every other system's (a certificate that it "can be made the best")."""
    wide = _wide(frame)
    systems = list(wide.columns)
    mat = pd.DataFrame(index=systems, columns=systems, dtype=float)
    margin = pd.Series(index=systems, dtype=float)
    for a in systems:
        others = [b for b in systems if b != a]
        for b in others:
            mat.loc[a, b] = (wide[a] - wide[b]).groupby(level="topic").max().mean()
        if others:
            mat.loc[a, a] = (wide[a] - wide[others].mean(axis=1)).groupby(level="topic").max().mean()
            margin[a] = (wide[a] - wide[others].max(axis=1)).groupby(level="topic").max().mean()
    return mat, margin


def win_fractions(frame: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Fig. 2: per topic, the fraction of its permutations in which the row system scores strictly higher than the
    column system (ties count for neither)."""
    wide = _wide(frame)
    out: dict[str, pd.DataFrame] = {}
    systems = list(wide.columns)
    for topic, block in wide.groupby(level="topic"):
        vals = block.to_numpy(dtype=float)
        wins = (vals[:, :, None] > vals[:, None, :]).mean(axis=0)
        out[str(topic)] = pd.DataFrame(wins, index=systems, columns=systems)
    return out


def permutation_means(frame: pd.DataFrame) -> pd.DataFrame:
    """Fig. 1 data: per topic and permutation, the mean score over systems, with the original order flagged."""
    g = frame.groupby(["topic", "perm"]).agg(score=("score", "mean"), is_original=("is_original", "any"))
    return g.reset_index()
