"""judging.rating.agreement against hand-worked values (Fleiss 1971 / Wikipedia example, the ECAsT procedure)."""

from __future__ import annotations

import numpy as np
import pytest

from judging.rating import agreement

# Wikipedia's worked Fleiss example: 10 items, 14 raters, 5 categories; kappa = 0.210.
WIKI = [
    [0, 0, 0, 0, 14],
    [0, 2, 6, 4, 2],
    [0, 0, 3, 5, 6],
    [0, 3, 9, 2, 0],
    [2, 2, 8, 1, 1],
    [7, 7, 0, 0, 0],
    [3, 2, 6, 3, 0],
    [2, 5, 3, 2, 2],
    [6, 5, 2, 1, 0],
    [0, 2, 2, 3, 7],
]


def _rows(table):
    return [[c + 1 for c, k in enumerate(row) for _ in range(k)] for row in table]


def test_fleiss_matches_the_worked_example():
    assert agreement.fleiss(_rows(WIKI)) == pytest.approx(0.20993, abs=1e-4)


def test_fleiss_refuses_unequal_counts_and_is_none_without_data():
    with pytest.raises(ValueError, match="same number"):
        agreement.fleiss([[1, 2], [1, 2, 3]])
    assert agreement.fleiss([]) is None
    assert agreement.fleiss([[5, 5], [5, 5]]) is None  # no expected disagreement: undefined


def test_ecast_procedure_keeps_items_with_40_percent_agreement_and_groups_ratings():
    ratings = {
        "A": [1, 1, 2, 4, 5],  # 2/5 = 40% → kept, no label
        "B": [3, 3, 3, 4, 4],  # kept, label 3
        "C": [1, 2, 3, 4, 5],  # 20% → dropped
        "D": [5, 5, 5, 5, 4],  # kept, label 5
        "E": [4, 4],  # incomplete: left out
    }
    res = agreement.ecast_kappa(ratings, 5)
    assert res.n_items == 4 and res.n_incomplete == 1
    assert res.kept == ["A", "B", "D"] and res.n_kept == 3
    # Hand-worked: P_i = .4, .4, 1 → P̄ = .6; p = (.2, .2, .6) → P_e = .44; κ = .16/.56.
    assert res.kappa_grouped == pytest.approx(0.16 / 0.56)
    rep = agreement.measure_report(ratings, 5, n_boot=20)
    assert rep["labels"] == {"A": None, "B": 3, "D": 5}
    assert rep["n_labelled"] == 2


def test_items_with_more_than_n_ratings_use_their_first_n():
    assert agreement.complete_items({"x": [1, 2, 3, 4], "y": [1]}, 3) == {"x": [1, 2, 3]}


def test_labels_need_three_agreeing_raters():
    assert agreement.item_label([4, 4, 4, 5, 1]) == 4
    assert agreement.item_label([4, 4, 5, 5, 1]) is None
    assert agreement.group_of(2) == 0 and agreement.group_of(3) == 1 and agreement.group_of(4) == 2


def test_krippendorff_alpha_matches_the_package_on_a_raters_by_items_matrix_and_has_a_ci():
    import krippendorff

    ratings = {"a": [1, 2, 1], "b": [4, 5, 5], "c": [3, 3], "d": [2, 2, 3], "e": [5, 4, 5]}
    matrix = np.full((3, 5), np.nan)
    for j, scores in enumerate(ratings.values()):
        matrix[: len(scores), j] = scores
    expected = krippendorff.alpha(reliability_data=matrix, level_of_measurement="ordinal", value_domain=[1, 2, 3, 4, 5])
    res = agreement.krippendorff_ordinal(ratings, n_boot=100, seed=1)
    assert res["alpha"] == pytest.approx(expected)
    assert res["low"] <= res["alpha"] <= res["high"]
    assert agreement.krippendorff_ordinal(ratings, n_boot=100, seed=1) == res  # seeded


def test_per_rater_agreement_uses_the_majority_of_the_other_raters():
    rows = [
        ("i1", "r1", 4), ("i1", "r2", 4), ("i1", "r3", 1),
        ("i2", "r1", 2), ("i2", "r2", 3), ("i2", "r3", 3),
    ]  # fmt: skip
    stats = agreement.rater_majority_agreement(rows)
    # r1: i1 others (4,1) tie → skipped; i2 others (3,3) → 2≠3 → 0/1.
    assert stats["r1"] == {"agree": 0, "compared": 1, "ratings": 2, "rate": 0.0}
    # r3: i1 others (4,4) → 1≠4; i2 others (2,3) tie → skipped.
    assert stats["r3"]["compared"] == 1 and stats["r3"]["agree"] == 0
    # r2: both items tie among the others → never compared.
    assert stats["r2"]["compared"] == 0 and stats["r2"]["rate"] is None
