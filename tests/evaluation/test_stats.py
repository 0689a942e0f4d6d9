"""Significance between runs and ranking stability between versions (hand-worked values)."""

from __future__ import annotations

import pytest
from scipy import stats as sps

from evaluation import stats


def test_the_paired_t_test_matches_scipy_and_the_randomization_test_is_seeded():
    a = {"q1": 0.9, "q2": 0.8, "q3": 0.7, "q4": 0.95, "q5": 0.6, "q6": 0.85}
    b = {"q1": 0.5, "q2": 0.4, "q3": 0.6, "q4": 0.5, "q5": 0.55, "q6": 0.3, "extra": 1.0}
    res = stats.paired_compare(a, b, permutations=10_000, seed=7)
    ref = sps.ttest_rel([a[q] for q in sorted(a)], [b[q] for q in sorted(a)])
    assert res.n == 6
    assert res.t_pvalue == pytest.approx(ref.pvalue)
    assert res.mean_diff == pytest.approx(sum(a[q] - b[q] for q in a) / 6)
    # All six differences are positive: only the all-plus and all-minus sign patterns (2 of 64) are as extreme.
    assert res.randomization_pvalue == pytest.approx(2 / 64, abs=0.01)
    assert stats.paired_compare(a, b, seed=7) == stats.paired_compare(a, b, seed=7)


def test_identical_runs_are_not_significantly_different():
    a = {"q1": 0.5, "q2": 0.2}
    res = stats.paired_compare(a, dict(a), permutations=500)
    assert res.t_pvalue == 1.0 and res.randomization_pvalue == 1.0 and res.mean_diff == 0.0


def test_kendall_tau_lists_the_pairs_that_swapped():
    before = {"A": 0.5, "B": 0.4, "C": 0.3, "D": 0.2}
    after = {"A": 0.5, "B": 0.25, "C": 0.3, "D": 0.1}
    res = stats.kendall_tau(before, after)
    # 6 pairs, one discordant (B, C): tau = (5 - 1) / 6
    assert res["tau"] == pytest.approx(4 / 6)
    assert res["swapped"] == [
        {
            "before_higher": "B",
            "before_lower": "C",
            "delta_before": pytest.approx(0.1),
            "delta_after": pytest.approx(0.05),
        }
    ]


def test_ranks_share_the_better_rank_on_ties():
    assert stats.ranks({"a": 0.5, "b": 0.7, "c": 0.5, "d": 0.1}) == {"b": 1, "a": 2, "c": 2, "d": 4}
