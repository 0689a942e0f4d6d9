"""Every run against a baseline: p-values and corrections equal scipy and statsmodels called directly."""

from __future__ import annotations

import itertools
import json
import math
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as sps
from statsmodels.stats.multitest import multipletests

from evaluation import significance as sig

REPO = Path(__file__).resolve().parents[2]
TURNS = [f"t{i}" for i in range(8)]
BASE = dict(zip(TURNS, [0.50, 0.40, 0.60, 0.50, 0.55, 0.30, 0.20, 0.45], strict=True))
RUNS = {
    "base": {"nDCG@3": BASE, "AP": {t: v / 2 for t, v in BASE.items()}},
    "big": {"nDCG@3": dict(zip(TURNS, [0.90, 0.80, 0.70, 0.95, 0.60, 0.85, 0.40, 0.70], strict=True))},
    "small": {"nDCG@3": dict(zip(TURNS, [0.55, 0.35, 0.65, 0.52, 0.50, 0.40, 0.10, 0.47], strict=True))},
    "mixed": {"nDCG@3": dict(zip(TURNS, [0.60, 0.20, 0.90, 0.10, 0.70, 0.35, 0.25, 0.50], strict=True))},
}


def _vectors(run: str) -> tuple[list[float], list[float]]:
    return [RUNS[run]["nDCG@3"][t] for t in TURNS], [BASE[t] for t in TURNS]


@pytest.mark.parametrize("test", ["t", "wilcoxon", "randomised"])
def test_each_tests_p_value_equals_scipy_called_directly(test):
    rows = sig.against_baseline(RUNS, "base", measures=["nDCG@3"], test=test, correction="none")
    for row in rows:
        x, y = _vectors(row.run)
        if test == "t":
            expected = sps.ttest_rel(x, y).pvalue
        elif test == "wilcoxon":
            expected = sps.wilcoxon(x, y).pvalue
        else:
            expected = sps.permutation_test(
                (np.array(x), np.array(y)),
                lambda a, b, axis: np.mean(a - b, axis=axis),
                permutation_type="samples",
                vectorized=True,
                n_resamples=10_000,
                rng=np.random.default_rng(42),
            ).pvalue
        assert row.pvalue == float(expected), row.run


@pytest.mark.parametrize("correction", ["bonferroni", "holm", "holm-sidak", "fdr_bh"])
def test_corrected_p_values_and_rejections_equal_statsmodels_over_one_measures_runs(correction):
    rows = sig.against_baseline(RUNS, "base", measures=["nDCG@3"], test="t", correction=correction, alpha=0.05)
    raw = [sps.ttest_rel(*_vectors(r)).pvalue for r in ("big", "mixed", "small")]
    reject, corrected, _, _ = multipletests(raw, alpha=0.05, method=correction)
    assert [r.run for r in rows] == ["big", "mixed", "small"]
    assert [r.corrected for r in rows] == [float(p) for p in corrected]
    assert [r.reject for r in rows] == [bool(x) for x in reject]
    assert any(r.reject for r in rows) and not all(r.reject for r in rows)


def test_the_randomised_test_equals_brute_force_over_every_swap_pattern():
    # Five turns: 32 swap patterns, fewer than the resamples, so scipy enumerates them all.
    x = [0.9, 0.3, 0.75, 0.6, 0.8]
    y = [0.5, 0.4, 0.25, 0.55, 0.2]
    d = [a - b for a, b in zip(x, y, strict=True)]
    observed = abs(sum(d))
    extreme = sum(
        abs(sum(s * v for s, v in zip(signs, d, strict=True))) >= observed - 1e-12
        for signs in itertools.product((1, -1), repeat=len(d))
    )
    assert extreme == 6  # by hand: d sums to 1.45; ±(as is), ±(−0.1 flipped: 1.65), ±(−0.1 and 0.05 flipped: 1.55)
    assert Fraction(sig.paired_pvalue(x, y, test="randomised")).limit_denominator(64) == Fraction(extreme, 32)


def test_the_randomised_test_is_seeded_when_it_samples_swap_patterns():
    rng = np.random.default_rng(3)
    x, y = rng.random(20), rng.random(20)  # 2^20 patterns: scipy samples RESAMPLES of them
    first = sig.paired_pvalue(x, y, test="randomised")
    assert first == sig.paired_pvalue(x, y, test="randomised") and 0 < first < 1


def test_rows_count_wins_and_losses_and_means_over_the_common_turns():
    runs = {
        "base": {"m": {"a": 0.5, "b": 0.5, "c": 0.5, "d": 0.9}},
        "r": {"m": {"a": 0.7, "b": 0.2, "c": 0.5, "e": 1.0}},
    }
    (row,) = sig.against_baseline(runs, "base", measures=["m"], correction="none")
    assert (row.n, row.better, row.worse) == (3, 1, 1)
    assert row.mean == pytest.approx((0.7 + 0.2 + 0.5) / 3) and row.baseline_mean == pytest.approx(0.5)


def test_each_measure_is_its_own_family_and_rows_go_by_measure_then_run():
    rows = sig.against_baseline(RUNS, "base", measures=["nDCG@3", "AP"])
    assert [(r.measure, r.run) for r in rows] == [
        ("nDCG@3", "big"),
        ("nDCG@3", "mixed"),
        ("nDCG@3", "small"),
        ("AP", "big"),
        ("AP", "mixed"),
        ("AP", "small"),
    ]
    # No run scores AP but the baseline: no turns in common, no p-value, nothing rejected.
    assert all(r.n == 0 and math.isnan(r.pvalue) and not r.reject for r in rows[3:])
    assert rows[3].as_dict()["pvalue"] is None


@pytest.mark.parametrize("test", ["t", "wilcoxon", "randomised"])
def test_a_run_equal_to_the_baseline_is_not_different(test):
    runs = {"base": {"m": BASE}, "same": {"m": dict(BASE)}}
    (row,) = sig.against_baseline(runs, "base", measures=["m"], test=test)
    assert row.pvalue == 1.0 and row.corrected == 1.0 and not row.reject


def test_an_undefined_p_value_stays_out_of_the_correction():
    p, reject = sig.correct([0.01, float("nan"), 0.04], correction="bonferroni", alpha=0.05)
    assert p[0] == 0.02 and math.isnan(p[1]) and p[2] == 0.08
    assert reject == [True, False, False]


@pytest.mark.parametrize(
    "kwargs,field",
    [
        ({"test": "sign"}, "test"),
        ({"correction": "sidak-ish"}, "correction"),
        ({"alpha": 0.0}, "alpha"),
        ({"alpha": 1.5}, "alpha"),
    ],
)
def test_bad_parameters_are_refused_naming_the_parameter(kwargs, field):
    with pytest.raises(sig.SignificanceError) as exc:
        sig.against_baseline(RUNS, "base", measures=["nDCG@3"], **kwargs)
    assert exc.value.field == field and str(exc.value).startswith(f"{field}: ")


def test_a_baseline_without_scores_is_refused():
    with pytest.raises(sig.SignificanceError, match="^baseline: "):
        sig.against_baseline(RUNS, "nobody", measures=["nDCG@3"])


def test_bad_parameters_reach_the_api_as_a_400_body_naming_the_parameter():
    err = sig.SignificanceError("alpha", "must lie strictly between 0 and 1, not 2")
    assert err.status_code == 400
    assert err.payload() == {
        "detail": "alpha: must lie strictly between 0 and 1, not 2",
        "code": "invalid",
        "alpha": ["must lie strictly between 0 and 1, not 2"],
    }


def test_importing_the_module_loads_neither_django_nor_celery():
    probe = (
        "import json, sys; import evaluation.significance; "
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in ('django', 'celery'))))"
    )
    done = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []
