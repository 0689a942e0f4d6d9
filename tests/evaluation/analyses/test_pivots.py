"""Pivot consistency/correctness (González Sáez et al. 2021) on hand-worked data and on CLEF eHealth 2018."""

from __future__ import annotations

import numpy as np
import pytest

from evaluation.analyses import pivots
from tests.evaluation.analyses.clef_helpers import clef_matrices

# 4 systems × 4 topics; EE1 = topics {0, 1}, EE2 = topics {2, 3}.
SCORES = np.array(
    [
        [0.2, 0.4, 0.6, 0.8],  # means EE1 .3, EE2 .7
        [0.1, 0.3, 0.2, 0.4],  # .2, .3
        [0.5, 0.5, 0.1, 0.1],  # .5, .1
        [0.0, 0.2, 0.3, 0.1],  # .1, .2
    ]
)
MASK = np.array([[True, True, False, False]])


def test_consistency_is_the_pearson_correlation_of_deltas_between_the_two_environments():
    cons = pivots.consistency(SCORES, MASK)
    # Pivot S0: deltas EE1 (-.1, .2, -.2), EE2 (-.4, -.6, -.5): r = -0.03 / sqrt(0.08667 * 0.02) = -0.7206.
    assert cons[0, 0] == pytest.approx(-0.7206, abs=1e-4)
    # Pivot S2: deltas EE1 (-.2, -.3, -.4), EE2 (.6, .2, .1): r = 0.05 / sqrt(0.02 * 0.1400) = 0.9449.
    assert cons[0, 2] == pytest.approx(0.9449, abs=1e-4)


def test_split_means_average_each_half_of_the_topics():
    ee1, ee2 = pivots.split_means(SCORES, MASK)
    assert ee1[0].tolist() == pytest.approx([0.3, 0.2, 0.5, 0.1])
    assert ee2[0].tolist() == pytest.approx([0.7, 0.3, 0.1, 0.2])


def test_correctness_is_perfect_when_every_topic_ranks_systems_the_same_way():
    rng = np.random.default_rng(1)
    base = rng.random((1, 20))
    scores = base + np.array([[0.4], [0.3], [0.2], [0.1], [0.0]])  # same order on every topic
    masks = pivots.random_splits(20, n_splits=5, seed=3)
    assert np.allclose(pivots.correctness(scores, masks), 1.0)
    assert np.allclose(pivots.consistency(scores, masks), 1.0)


def test_correctness_drops_when_a_system_wins_only_on_one_half():
    # S1 is best on topics 0-1 and worst on 2-3: seen only in EE1 it ranks above S0, though worse overall.
    scores = np.array([[0.6, 0.6, 0.6, 0.6], [0.9, 0.9, 0.0, 0.0], [0.5, 0.5, 0.5, 0.5]])
    masks = np.array([[True, True, False, False]] * 8)
    taus = pivots.correctness(scores, masks, seed=0)
    assert taus.min() < 1.0


def test_random_splits_are_seeded_and_halve_the_topics():
    a = pivots.random_splits(50, n_splits=50, seed=7)
    b = pivots.random_splits(50, n_splits=50, seed=7)
    assert (a == b).all()
    assert (a.sum(axis=1) == 25).all()
    assert len({row.tobytes() for row in a}) == 50
    with pytest.raises(ValueError, match="at least 4 topics"):
        pivots.random_splits(3)


def test_cross_ee_ranking_orders_systems_by_their_delta_to_the_pivot():
    means = {"Rm1": {"piv": 0.30, "A": 0.40}, "Rm2": {"piv": 0.20, "B": 0.35, "C": 0.10}}
    rows = pivots.cross_ee_ranking(means, "piv", {"A": "Rm1", "B": "Rm2", "C": "Rm2"})
    assert [r["system"] for r in rows] == ["B", "A", "C"]
    assert rows[0]["delta"] == pytest.approx(0.15)
    with pytest.raises(ValueError, match="pivot 'piv' has no score"):
        pivots.cross_ee_ranking({"X": {"A": 1.0}}, "piv", {"A": "X"})


def test_ee_consistency_and_correctness_over_named_environments():
    ee = np.array([[0.5, 0.4, 0.3, 0.1], [0.6, 0.5, 0.35, 0.2], [0.4, 0.3, 0.25, 0.05]])
    res = pivots.ee_consistency(ee, pivot=0)
    assert len(res["pairs"]) == 3
    assert res["mean"] == pytest.approx(np.mean([p["r"] for p in res["pairs"]]))
    corr = pivots.ee_correctness(ee, ee.mean(axis=0), pivot=0, rounds=10)
    assert corr["mean"] == pytest.approx(1.0)


def test_pivot_analysis_on_clef_ehealth_2018(shared_data):
    systems, topics, mats, _ = clef_matrices(shared_data, ["AP", "nDCG@10", "RR"])
    ielab = systems.index("IELAB_01")
    # README: trec_eval on CLEF2018_qrel_20180914.txt gives IELAB_01 map 0.2644, ndcg_cut_10 0.6886; IMS 0.2291.
    assert mats["AP"][ielab].mean() == pytest.approx(0.2644, abs=5e-5)
    assert mats["nDCG@10"][ielab].mean() == pytest.approx(0.6886, abs=5e-5)
    assert mats["AP"][systems.index("IMS_baseline")].mean() == pytest.approx(0.2291, abs=5e-5)
    assert len(topics) == 50
    res = pivots.pivot_analysis(mats, systems, n_splits=10, seed=0)
    assert len(res.consistency_mean["AP"]) == 9
    # The paper's finding (Fig. 5): AP deltas correlate near 0.98 across halves; RR much less.
    assert min(res.consistency_mean["AP"]) > 0.95
    assert np.mean(res.consistency_mean["RR"]) < np.mean(res.consistency_mean["AP"])
    assert all(0.3 < t <= 1.0 for t in res.correctness_mean["AP"])
    assert res.pivot_order[0] == int(np.argmax(mats["AP"].mean(axis=1)))
    again = pivots.pivot_analysis(mats, systems, n_splits=10, seed=0)
    assert again.as_dict() == res.as_dict()


def test_vectorised_kendall_matches_scipy_tau_b_with_ties():
    from scipy import stats

    rng = np.random.default_rng(5)
    x = rng.integers(0, 4, size=(20, 9)).astype(float)
    y = rng.integers(0, 3, size=9).astype(float)
    expected = [stats.kendalltau(row, y).statistic for row in x]
    assert np.allclose(pivots.kendall_rows(x, y), expected, equal_nan=True)
