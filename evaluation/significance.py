"""Every run against one baseline, as ``pyterrier.Experiment(..., baseline=, correction=)`` reports it.

Per measure and run: the mean over the turns both runs score, the baseline's mean over the same turns, how many
turns the run wins (+) and loses (−), the two-sided p-value of a paired test, and that p-value corrected for
multiple comparisons with ``statsmodels.stats.multitest.multipletests`` over the family of runs compared on the
measure (the baseline excluded), with whether the null hypothesis is rejected at ``alpha``.

Tests (two-sided, paired on the common turns):

* ``t``: ``scipy.stats.ttest_rel``.
* ``wilcoxon``: ``scipy.stats.wilcoxon`` (signed-rank; zero differences dropped, scipy's default).
* ``randomised``: ``scipy.stats.permutation_test`` with ``permutation_type="samples"`` on the mean difference —
  every turn's pair of scores is swapped or not (Fisher's paired randomisation, Smucker et al. 2007). With up to
  ``RESAMPLES`` distinct swap patterns (2^n ≤ 10,000, i.e. n ≤ 13 turns) scipy enumerates them all (exact);
  beyond, it draws ``RESAMPLES`` patterns from a generator seeded with ``SEED``, so a table never changes between
  two loads.

A run that scores every common turn exactly as the baseline does has p = 1 under every test (no evidence of a
difference; scipy leaves it undefined). Where a test is undefined otherwise (fewer than two common turns, or a
t-test on a constant non-zero difference) p is NaN; such p-values are left out of the correction and never reject.

Plain Python + numpy/scipy/statsmodels; no Django.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from scipy import stats
from statsmodels.stats.multitest import multipletests

from ecast.core.errors import DomainError
from evaluation import metrics

TESTS: dict[str, str] = {
    "t": "paired t-test (scipy ttest_rel)",
    "wilcoxon": "Wilcoxon signed-rank (scipy wilcoxon)",
    "randomised": "randomised test (scipy permutation_test, paired)",
}
# Names as statsmodels spells them (multipletests ``method``); "none" reports the raw p-values.
CORRECTIONS: dict[str, str] = {
    "holm": "Holm",
    "bonferroni": "Bonferroni",
    "holm-sidak": "Holm–Sidak",
    "fdr_bh": "Benjamini–Hochberg",
    "none": "none",
}
DEFAULT_TEST = "t"
DEFAULT_CORRECTION = "holm"
DEFAULT_ALPHA = 0.05
RESAMPLES = 10_000
SEED = 42


class SignificanceError(DomainError, ValueError):
    """A parameter outside what the comparison accepts; ``field`` names it (a 400 that names the parameter)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message

    def payload(self) -> dict[str, Any]:
        """The API body: the one error shape, with the parameter's own list of messages."""
        return {**super().payload(), self.field: [self.message]}


@dataclass(frozen=True)
class Row:
    """One run on one measure against the baseline."""

    run: str
    measure: str
    n: int
    mean: float
    baseline_mean: float
    better: int
    worse: int
    pvalue: float
    corrected: float
    reject: bool

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready dict (NaN → None)."""
        return {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in asdict(self).items()}


def check(*, test: str, correction: str, alpha: float) -> None:
    """Refuse an unknown test or correction, or an alpha outside (0, 1)."""
    if test not in TESTS:
        raise SignificanceError("test", f"unknown test {test!r}; one of {', '.join(TESTS)}")
    if correction not in CORRECTIONS:
        raise SignificanceError("correction", f"unknown correction {correction!r}; one of {', '.join(CORRECTIONS)}")
    if not (isinstance(alpha, float | int) and 0 < alpha < 1):
        raise SignificanceError("alpha", f"must lie strictly between 0 and 1, not {alpha!r}")


def measures_parse(raw: str | Sequence[str]) -> list[str]:
    """Measures as typed (comma-separated, or a list) → their ir_measures names, once each, in order given."""
    items = raw.split(",") if isinstance(raw, str) else [m for part in raw for m in part.split(",")]
    out: list[str] = []
    for item in (m.strip() for m in items):
        if not item:
            continue
        try:
            name = metrics.canonical_name(item)
        except metrics.MeasureError as exc:
            raise SignificanceError("measures", str(exc)) from exc
        if name not in out:
            out.append(name)
    if not out:
        raise SignificanceError("measures", "name at least one measure, e.g. nDCG@3")
    return out


def _mean_difference(x: np.ndarray, y: np.ndarray, axis: int) -> Any:
    return np.mean(x - y, axis=axis)


def paired_pvalue(x: ArrayLike, y: ArrayLike, *, test: str) -> float:
    """Two-sided p-value of ``test`` on paired scores ``x`` (run) and ``y`` (baseline)."""
    a, b = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if len(a) and np.array_equal(a, b):
        return 1.0
    if len(a) < 2:
        return float("nan")
    if test == "t":
        return float(stats.ttest_rel(a, b).pvalue)
    if test == "wilcoxon":
        return float(stats.wilcoxon(a, b).pvalue)
    if test == "randomised":
        res = stats.permutation_test(
            (a, b),
            _mean_difference,
            permutation_type="samples",
            vectorized=True,
            n_resamples=RESAMPLES,
            alternative="two-sided",
            rng=np.random.default_rng(SEED),
        )
        return float(res.pvalue)
    raise SignificanceError("test", f"unknown test {test!r}; one of {', '.join(TESTS)}")


def correct(pvalues: Sequence[float], *, correction: str, alpha: float) -> tuple[list[float], list[bool]]:
    """Corrected p-values and reject flags for one family (multipletests); NaN stays NaN and never rejects."""
    out = [float("nan")] * len(pvalues)
    rej = [False] * len(pvalues)
    finite = [i for i, p in enumerate(pvalues) if not math.isnan(p)]
    if not finite:
        return out, rej
    family = [pvalues[i] for i in finite]
    if correction == "none":
        flags, fixed = [p <= alpha for p in family], family
    else:
        reject, corrected, _, _ = multipletests(family, alpha=alpha, method=correction)
        flags, fixed = [bool(r) for r in reject], [float(p) for p in corrected]
    for i, p, r in zip(finite, fixed, flags, strict=True):
        out[i], rej[i] = p, r
    return out, rej


def against_baseline(
    runs: Mapping[str, Mapping[str, Mapping[str, float]]],
    baseline: str,
    *,
    measures: Sequence[str],
    test: str = DEFAULT_TEST,
    correction: str = DEFAULT_CORRECTION,
    alpha: float = DEFAULT_ALPHA,
) -> list[Row]:
    """Rows for every run but ``baseline`` on each measure, by measure then run name.

    ``runs`` is {run: {measure: {turn: value}}} and must hold ``baseline``; a run is paired with the baseline on the
    turns both score. The correction family is one measure's runs, as in pyterrier's Experiment.
    """
    check(test=test, correction=correction, alpha=alpha)
    if baseline not in runs:
        raise SignificanceError("baseline", f"no scores for the baseline {baseline!r}")
    rows: list[Row] = []
    for measure in measures:
        base = runs[baseline].get(measure, {})
        found: list[tuple[str, int, float, float, int, int, float]] = []
        for name in sorted(runs):
            if name == baseline:
                continue
            scores = runs[name].get(measure, {})
            turns = sorted(set(scores) & set(base))
            x = np.array([scores[t] for t in turns], dtype=float)
            y = np.array([base[t] for t in turns], dtype=float)
            nan = float("nan")
            mean_x, mean_y = (float(x.mean()), float(y.mean())) if turns else (nan, nan)
            p = paired_pvalue(x, y, test=test) if turns else nan
            found.append((name, len(turns), mean_x, mean_y, int(np.sum(x > y)), int(np.sum(x < y)), p))
        corrected, reject = correct([f[6] for f in found], correction=correction, alpha=alpha)
        for (name, n, mx, my, plus, minus, p), cp, r in zip(found, corrected, reject, strict=True):
            rows.append(Row(name, measure, n, mx, my, plus, minus, p, cp, r))
    return rows
