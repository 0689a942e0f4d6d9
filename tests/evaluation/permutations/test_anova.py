"""MD0/MD1 from group means equal statsmodels' nested OLS comparison; ω² and Tukey HSD as in the paper."""

import warnings

import numpy as np
import pandas as pd
import pytest
import statsmodels.formula.api as smf
from scipy.stats import f as f_dist
from statsmodels.stats.anova import anova_lm

from evaluation.permutations import anova


def make_frame(perms_per_topic, systems=("A", "B", "C"), seed=0):
    rng = np.random.default_rng(seed)
    rows = []
    for t, n_perm in enumerate(perms_per_topic):
        topic_effect = rng.normal(0, 0.2)
        for p in range(n_perm):
            perm_effect = rng.normal(0, 0.05)
            for k, s in enumerate(systems):
                rows.append((f"t{t}", p, s, 0.3 + topic_effect + perm_effect + 0.02 * k + rng.normal(0, 0.05)))
    return pd.DataFrame(rows, columns=["topic", "perm", "system", "score"])


def statsmodels_md1(frame):
    warnings.filterwarnings("ignore", message="The design matrix is rank-deficient")
    f = frame.assign(tp=frame["topic"] + ":" + frame["perm"].astype(str))
    m0 = smf.ols("score ~ 1", f).fit()
    m1 = smf.ols("score ~ C(topic)", f).fit()
    m2 = smf.ols("score ~ C(topic) + C(tp)", f).fit()  # rank-deficient by design (nested)
    m3 = smf.ols("score ~ C(topic) + C(tp) + C(system)", f).fit()
    return anova_lm(m0, m1, m2, m3), m3


@pytest.mark.parametrize("perms", [[4, 4, 4, 4], [2, 5, 3, 7, 1]], ids=["balanced", "unbalanced"])
def test_md1_equals_statsmodels_nested_model_comparison(perms):
    frame = make_frame(perms)
    ours = anova.md1(frame)
    table, full = statsmodels_md1(frame)
    for i, source in enumerate(["topic", "perm(topic)", "system"], start=1):
        row = ours.row(source)
        assert row.ss == pytest.approx(table["ss_diff"].iloc[i], abs=1e-6)
        assert row.df == int(table["df_diff"].iloc[i])
        assert row.f == pytest.approx(table["F"].iloc[i], abs=1e-6)
        # statsmodels takes F from the largest model's scale but, for the earlier rows, the p-value from that row's
        # own model's residual df; the consistent p uses the full model's residual df for every row.
        assert row.p == pytest.approx(f_dist.sf(table["F"].iloc[i], table["df_diff"].iloc[i], full.df_resid), abs=1e-9)
    assert ours.row("system").p == pytest.approx(table["Pr(>F)"].iloc[3], abs=1e-6)
    assert ours.row("error").ss == pytest.approx(full.ssr, abs=1e-6)
    assert ours.df_error == int(full.df_resid)
    assert ours.row("total").ss == pytest.approx(float(((frame.score - frame.score.mean()) ** 2).sum()), abs=1e-9)


def test_md0_equals_statsmodels_two_way_fit():
    frame = make_frame([1] * 6, systems=("A", "B", "C", "D"), seed=3)
    ours = anova.md0(frame)
    table = anova_lm(smf.ols("score ~ C(topic) + C(system)", frame).fit(), typ=1)
    assert ours.row("topic").ss == pytest.approx(table.loc["C(topic)", "sum_sq"], abs=1e-6)
    assert ours.row("system").ss == pytest.approx(table.loc["C(system)", "sum_sq"], abs=1e-6)
    assert ours.row("system").p == pytest.approx(table.loc["C(system)", "PR(>F)"], abs=1e-6)
    assert ours.row("error").ss == pytest.approx(table.loc["Residual", "sum_sq"], abs=1e-6)
    assert ours.df_error == 6 * 4 - 6 - 4 + 1


def test_omega_squared_reproduces_the_papers_tables_4_and_5():
    assert anova.omega_squared(19, 17.454, 100) == pytest.approx(0.758, abs=5e-4)
    assert anova.omega_squared(19, 657.983, 4800) == pytest.approx(0.722, abs=5e-4)
    assert anova.omega_squared(4, 38.230, 4800) == pytest.approx(0.030, abs=5e-4)


def test_omega_squared_is_not_reported_for_a_non_significant_factor():
    # Each topic gives the systems a rotation of the same three scores: equal system means, F = 0.
    triplet = [0.1, 0.2, 0.4]
    frame = pd.DataFrame(
        [(f"t{t}", s, t * 0.2 + triplet[(i + t) % 3]) for t in range(9) for i, s in enumerate("ABC")],
        columns=["topic", "system", "score"],
    )
    result = anova.md0(frame)
    assert result.row("system").p > 0.05 and result.row("system").omega2 is None
    assert result.row("topic").omega2 is not None


def test_tukey_uses_the_model_residual_and_matches_a_hand_computation():
    frame = make_frame([3, 3, 3], systems=("A", "B", "C"), seed=5)
    result = anova.md1(frame)
    pairs = anova.tukey_hsd(result)
    from scipy.stats import studentized_range

    means = frame.groupby("system")["score"].mean()
    pair = next(p for p in pairs if {p.a, p.b} == {"A", "C"})
    q = abs(means["C"] - means["A"]) / np.sqrt(result.ms_error / 9)
    assert pair.q == pytest.approx(q)
    assert pair.p == pytest.approx(studentized_range.sf(q, 3, result.df_error))


def test_tiers_group_systems_that_are_not_significantly_different():
    result = anova.AnovaResult(
        model="MD1",
        rows=[],
        n=400,
        ms_error=0.01,
        df_error=380,
        system_means={"a": 0.50, "b": 0.499, "c": 0.40, "d": 0.399, "e": 0.30},
        system_n={k: 80 for k in "abcde"},
    )
    assert anova.tiers(result) == [["a", "b"], ["c", "d"], ["e"]]


def test_it_rejects_a_permutation_missing_a_system():
    frame = make_frame([2, 2]).iloc[:-1]
    with pytest.raises(ValueError, match="exactly one score per system"):
        anova.md1(frame)


def tiny_experiment():
    # topic t1: 3 permutations (p0 original), systems A, B; topic t2: 2 permutations.
    rows = [
        ("t1", 0, True, "A", 0.5), ("t1", 0, True, "B", 0.4),
        ("t1", 1, False, "A", 0.2), ("t1", 1, False, "B", 0.6),
        ("t1", 2, False, "A", 0.8), ("t1", 2, False, "B", 0.8),
        ("t2", 0, True, "A", 0.1), ("t2", 0, True, "B", 0.3),
        ("t2", 1, False, "A", 0.4), ("t2", 1, False, "B", 0.2),
    ]  # fmt: skip
    return pd.DataFrame(rows, columns=["topic", "perm", "is_original", "system", "score"])


def test_table_2_min_mean_max_are_hand_worked():
    t = anova.min_mean_max(tiny_experiment())
    assert t.loc["A", "original"] == pytest.approx((0.5 + 0.1) / 2)
    assert t.loc["A", "min"] == pytest.approx((0.2 + 0.1) / 2)
    assert t.loc["A", "max"] == pytest.approx((0.8 + 0.4) / 2)
    assert t.loc["B", "mean"] == pytest.approx(((0.4 + 0.6 + 0.8) / 3 + (0.3 + 0.2) / 2) / 2)


def test_table_3_max_distance_and_the_best_certificate():
    mat, margin = anova.max_distance(tiny_experiment())
    # A − B per perm: t1 [0.1, −0.4, 0] → max 0.1; t2 [−0.2, 0.2] → 0.2; mean 0.15
    assert mat.loc["A", "B"] == pytest.approx(0.15)
    # B − A: t1 max 0.4, t2 max 0.2 → 0.3
    assert mat.loc["B", "A"] == pytest.approx(0.3)
    assert margin["A"] == pytest.approx(0.15) and margin["B"] == pytest.approx(0.3)


def test_fig_2_win_fractions_count_strict_wins():
    wins = anova.win_fractions(tiny_experiment())
    assert wins["t1"].loc["A", "B"] == pytest.approx(1 / 3)  # tie in p2 counts for neither
    assert wins["t1"].loc["B", "A"] == pytest.approx(1 / 3)
    assert wins["t2"].loc["A", "B"] == pytest.approx(0.5)


def test_fig_1_means_flag_the_original():
    pm = anova.permutation_means(tiny_experiment())
    orig = pm[pm.is_original]
    assert list(orig.topic) == ["t1", "t2"] and orig.score.tolist() == pytest.approx([0.45, 0.2])
