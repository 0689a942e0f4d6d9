"""ECAsT Tables 11, 13 and 14 computations (hand-worked values)."""

from __future__ import annotations

import pytest

from evaluation.robustness import tables as robustness


def test_table11_change_is_relative_to_the_baseline_and_averaged_per_kind():
    rows = [
        {"label": "R^m_1", "kind": "manual", "means": {"nDCG@3": 0.490}},
        {"label": "R^m_2", "kind": "manual", "means": {"nDCG@3": 0.467}},
    ]
    out = robustness.test_sets_vs_baseline(rows, {"manual": {"nDCG@3": 0.600}}, ["nDCG@3"])
    # ECAsT Table 11, CAsT 2020 manual: 0.490 vs 0.600 → −18.3%; 0.467 → −22.2%
    assert out[0]["values"]["nDCG@3"]["change_pct"] == pytest.approx(-18.333, abs=1e-3)
    assert out[1]["values"]["nDCG@3"]["change_pct"] == pytest.approx(-22.167, abs=1e-3)
    avg = out[2]
    assert avg["average"] and avg["values"]["nDCG@3"]["value"] == pytest.approx(0.4785)
    assert avg["values"]["nDCG@3"]["change_pct"] == pytest.approx((-18.333 - 22.167) / 2, abs=1e-3)
    assert robustness.drop_percent(0.5, 0) is None


def test_table13_counts_judged_unjudged_grades_and_uniqueness():
    base = {"1": {"a": 1, "b": 0}, "2": {"c": 2}}
    extended = {"1": {"a": 1, "b": 0, "x": 3, "y": 0}, "2": {"c": 2, "z": 4}}
    rankings = {
        "Rm1": {"1": ["a", "x", "y"], "2": ["z", "c", "q"], "3": ["n1", "n2", "n3"]},
        "Rm2": {"1": ["x", "b", "a"], "2": ["c", "w", "z"]},
        "base": {"1": ["a", "b", "x"], "2": ["c"]},
    }
    out = robustness.unjudged_analysis(
        rankings, base, extended_qrels=extended, groups={"Rm1": "manual", "Rm2": "manual"}, depth=3
    )
    rm1 = out["runs"]["Rm1"]
    # turn 3 has no judgments in base → left out. Rm1 top-3: (1,a)J (1,x)U (1,y)U (2,z)U (2,c)J (2,q)U
    assert (rm1["top_k"], rm1["judged"], rm1["unjudged"]) == (6, 2, 4)
    assert rm1["unjudged_pct"] == pytest.approx(100 * 4 / 6)
    assert rm1["grades"] == {0: 1, 1: 0, 2: 0, 3: 1, 4: 1} and rm1["pending"] == 1  # q never assessed
    # Rm2's unjudged: (1,x), (2,w), (2,z). Rm1's unique ones: (1,y), (2,q).
    assert rm1["unique"] == 2 and rm1["unique_pct"] == 50.0
    assert out["runs"]["Rm2"]["unique"] == 1  # (2,w)
    grp = out["groups"]["manual"]
    assert grp["distinct_unjudged"] == 5 and grp["unique"] == 3
    assert out["runs"]["base"]["unique"] is None  # baselines are not in a group
    assert out["runs"]["base"]["unjudged"] == 1
    assert (("1", "x") in out["unjudged_pairs"]) and (("3", "n1") not in out["unjudged_pairs"])


def test_table14_puts_before_and_after_side_by_side():
    rows = robustness.before_after({"R": {"AP": 0.2}}, {"R": {"AP": 0.25}}, ["AP", "nDCG@3"])
    assert rows[0]["values"]["AP"]["delta"] == pytest.approx(0.05)
    assert rows[0]["values"]["AP"]["change_pct"] == pytest.approx(25.0)
    assert rows[0]["values"]["nDCG@3"]["after"] is None
