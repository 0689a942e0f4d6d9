"""ECE, normalisations and risk-aware ranking (Penha & Hauff 2021) on hand-worked values."""

from __future__ import annotations

import numpy as np
import pytest

from evaluation.analyses import calibration as cal


def test_ece_weights_each_bucket_gap_by_its_size():
    res = cal.ece([0.05, 0.15, 0.95, 0.85], [0, 0, 1, 0])
    assert res["ece"] == pytest.approx((0.05 + 0.15 + 0.05 + 0.85) / 4)
    assert [b["count"] for b in res["buckets"]] == [1, 1, 0, 0, 0, 0, 0, 0, 1, 1]
    two = cal.ece([0.31, 0.39], [1, 0])
    assert two["ece"] == pytest.approx(0.15)  # one bucket: avg .35 vs 50% relevant
    assert two["buckets"][3]["confidence"] == pytest.approx(0.35)
    assert cal.ece([0.0, 1.0], [0, 1])["ece"] == pytest.approx(0.0)


def test_normalisations():
    assert cal.normalise([2, 4, 6], "minmax").tolist() == [0, 0.5, 1]
    assert cal.normalise([1.0, 1.0], "softmax").tolist() == [0.5, 0.5]
    assert cal.normalise([3.0, 1.0, 0.0], "softmax").sum() == pytest.approx(1.0)
    with pytest.raises(ValueError, match="outside \\[0, 1\\]"):
        cal.normalise([12.7, 3.0], "none")
    with pytest.raises(ValueError, match="unknown normalisation"):
        cal.normalise([0.5], "sigmoid")


def test_calibration_report_adds_non_relevant_candidates_per_relevant():
    run = {"q1": {f"d{i}": 1.0 - i / 10 for i in range(6)}, "q2": {f"e{i}": 0.9 - i / 10 for i in range(6)}}
    qrels = {"q1": {"d2": 2}, "q2": {"e0": 1, "e5": 0}}
    rep = cal.calibration_report(run, qrels, threshold=1, nonrel_ratios=(1, 2))
    conds = {c["label"]: c for c in rep["conditions"]}
    assert conds["all candidates"]["n"] == 12
    assert conds["1 non-relevant per relevant"]["n"] == 4  # 1 relevant + 1 non-relevant per turn
    assert conds["2 non-relevant per relevant"]["n"] == 6
    assert rep["nonrelevant_share"] == pytest.approx(10 / 12)


def test_risk_aware_order_penalises_covariance_with_docs_above():
    mean = np.array([1.0, 0.95, 0.9])
    cov = np.array([[0.0, 0.1, 0.0], [0.1, 0.0, 0.0], [0.0, 0.0, 0.0]])
    assert cal.risk_aware_order(mean, cov, 0.0) == [0, 1, 2]
    # position 2: doc1 .95 − 2·.5·.1 = .85 < doc2 .90
    assert cal.risk_aware_order(mean, cov, 0.5) == [0, 2, 1]


def test_risk_aware_run_prefers_the_certain_doc_when_b_grows():
    samples = [{"q": {"a": 1.4, "b": 0.8}}, {"q": {"a": 0.2, "b": 0.6}}]  # a: mean .8 var .36; b: mean .7 var .01
    assert max(cal.risk_aware_run(samples, 0.0)["q"].items(), key=lambda kv: kv[1])[0] == "a"
    assert max(cal.risk_aware_run(samples, 1.0)["q"].items(), key=lambda kv: kv[1])[0] == "b"
    summary = cal.stochastic_summary(samples)
    assert summary["q"]["a"] == pytest.approx((0.8, 0.36))


def test_gain_curve_reports_metric_change_against_b_zero():
    samples = [{"q": {"a": 1.4, "b": 0.8}}, {"q": {"a": 0.2, "b": 0.6}}]

    def p_at_1(run):
        top = max(run["q"].items(), key=lambda kv: kv[1])[0]
        return 1.0 if top == "b" else 0.0

    curve = cal.gain_curve(samples, [0.0, 1.0], p_at_1)
    assert [c["value"] for c in curve] == [0.0, 1.0]
    assert curve[1]["gain"] == 1.0
    with pytest.raises(ValueError, match="at least 2 sample runs"):
        cal.risk_aware_run(samples[:1], 0.5)


def test_samples_on_different_scales_go_to_one_scale_before_risk_aware_ranking():
    # Both samples rank a > c > b; a BM25-like one scores ≈ 10–20, a dense-like one ≈ 80–110.
    samples = [{"q": {"a": 20.0, "b": 10.0, "c": 15.0}}, {"q": {"a": 110.0, "b": 80.0, "c": 100.0}}]

    def order(run):
        return sorted(run["q"], key=lambda d: -run["q"][d])

    # Raw, var(a) = 45² = 2025 dwarfs the means: at b = 0.05 the worst doc, b (var 35² = 1225), comes first.
    assert order(cal.risk_aware_run(samples, 0.05))[0] == "b"
    scaled = cal.normalise_samples(samples, "minmax")
    assert scaled[1]["q"] == pytest.approx({"a": 1.0, "b": 0.0, "c": 2 / 3})
    for b in (0.0, 0.05, 1.0, 2.0):
        assert order(cal.risk_aware_run(scaled, b)) == ["a", "c", "b"]
    with pytest.raises(ValueError, match=r"scores outside \[0, 1\]"):
        cal.normalise_samples(samples, "none")
