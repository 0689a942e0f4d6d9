"""Session metrics on a tiny hand-worked session (values worked out by hand in the comments)."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from evaluation.analyses import metaeval
from evaluation.analyses import session_metrics as sm

# Subtopics s1..s3 (weights 1/3), grades /4. Session: iteration 1 = [a, x], iteration 2 = [b, c]; d unretrieved.
QRELS = {"a": {"s1": 4}, "b": {"s1": 2, "s2": 2}, "c": {"s2": 2}, "d": {"s2": 4, "s3": 2}}
SESSION = [["a", "x"], ["b", "c"]]


def test_simple_metrics_match_hand_values():
    assert sm.precision(SESSION, QRELS) == 0.75
    assert sm.subtopic_recall(SESSION, QRELS) == pytest.approx(2 / 3)  # s3 only in d
    assert sm.reciprocal_iteration(SESSION) == 0.5
    assert sm.negative_iteration(SESSION) == -2
    # a: 4.4+.64(1.8+7.8)=10.544; x: 4.4+.39(.9+7.8)=7.793; b: 4.4+.64(3.6+7.8)=11.696; c: 4.4+.64·7.8=9.392
    assert sm.total_time(SESSION, QRELS, {"a": 100, "x": 50, "b": 200, "c": 0}) == pytest.approx(39.425)


def test_cube_test_fills_each_subtopic_cube_once_with_gamma_decay():
    # a fills s1 (1/3); b adds s2 .5 (1/6), s1 is full; c adds s2 .5 at γ^1 (1/12): gain 7/12 over 2 iterations.
    assert sm.cube_test(SESSION, QRELS) == pytest.approx(7 / 24)
    # ACT = mean(CT@1 = (1/3)/1, CT@2 = 7/24) = 0.3125
    assert sm.average_cube_test(SESSION, QRELS) == pytest.approx(0.3125)
    # Greedy ideal: d (1/3 + 1/6) then a (1/3); nothing else adds gain: 5/6. nCT = (7/12)/(5/6) = 0.7
    assert sm.normalized_cube_test(SESSION, QRELS) == pytest.approx(0.7)


def test_session_dcg_discounts_later_iterations():
    # gains a=4, x=0, b=4, c=2. DCG1 = 4; DCG2 = 4 + 2/log2(3), discounted by 1 + log4(2) = 1.5.
    expected = 4 + (4 + 2 / math.log2(3)) / 1.5
    assert sm.session_dcg(SESSION, QRELS) == pytest.approx(expected)
    ideal = (6 + 4 / math.log2(3)) + (4 + 2 / math.log2(3)) / 1.5
    assert sm.normalized_session_dcg(SESSION, QRELS) == pytest.approx(expected / ideal)
    assert sm.normalized_session_dcg([["d", "a"], ["b", "c"]], QRELS) == pytest.approx(1.0)


def test_rank_biased_utility_matches_hand_value():
    # p=.8, e=.01: .8(1/3-.01) + .64(0-.01) + .512(1/6-.01) + .4096(1/12-.01)
    expected = 0.8 * (1 / 3 - 0.01) - 0.0064 + 0.512 * (1 / 6 - 0.01) + 0.4096 * (1 / 12 - 0.01)
    assert sm.rank_biased_utility(SESSION, QRELS, p=0.8, e=0.01) == pytest.approx(expected)
    assert expected == pytest.approx(0.362517, abs=1e-6)


def test_rank_biased_utility_of_an_empty_result_is_minus_the_effort():
    # As in the TREC DD 2016 table: 25 non-relevant docs, p=.99, e=.001 → −.001 Σ_{k=1..25} .99^k = −0.0219957.
    session = [[f"n{i}_{j}" for j in range(5)] for i in range(5)]
    assert sm.rank_biased_utility(session, QRELS, p=0.99, e=0.001) == pytest.approx(-0.0219956854, abs=1e-9)


def test_expected_utility_and_its_normalisation():
    # it1 gain 1/3, cost 2, P(stop)=.5; it2 gain 1/3 + (1/12 + 1/6 + 1/12) = 2/3, cost 4, P=.5 → .47
    assert sm.expected_utility(SESSION, QRELS, a=0.01) == pytest.approx(0.47)
    neu = sm.normalized_expected_utility(SESSION, QRELS, a=0.01)
    assert 0 < neu < 1
    assert sm.normalized_expected_utility([["x", "y"], ["z", "w"]], QRELS, a=0.01) == pytest.approx(0.0)


def test_alpha_ndcg_via_ir_measures_pyndeval():
    qrels = {"1": {"a": {"1": 1}, "b": {"2": 1}}, "2": {"a": {"1": 1}, "b": {"2": 1}}}
    res = sm.diversity_measures({"1": [["x", "a"]], "2": [["a", "b"]]}, qrels, ["alpha_nDCG@20", "ERR_IA@20"])
    # topic 1: a at rank 2 → 1/log2(3) over the ideal 1 + 1/log2(3).
    assert res["alpha_nDCG@20"]["1"] == pytest.approx((1 / math.log2(3)) / (1 + 1 / math.log2(3)))
    assert res["alpha_nDCG@20"]["2"] == pytest.approx(1.0)
    assert res["ERR_IA@20"]["2"] > res["ERR_IA@20"]["1"]


def test_session_metric_table_feeds_the_meta_evaluation():
    sessions = {
        "good": {"t1": [["a", "b"], ["d", "c"]], "t2": [["d", "a"]]},
        "bad": {"t1": [["x", "y"], ["a", "z"]], "t2": [["x", "c"]]},
    }
    rows = sm.session_metric_table(sessions, {"t1": QRELS, "t2": QRELS}, lengths={"a": 100})
    assert len(rows) == 2 + 1 + 2 + 1  # one row per iteration prefix
    first = next(r for r in rows if r["run"] == "good" and r["topic"] == "t1" and r["iteration"] == 1)
    assert first["p"] == 1.0 and first["rtime"] == 1.0 and first["ntime"] == -1.0
    df = pd.DataFrame(rows)
    res = metaeval.meta_evaluate(df, ["act", "nct", "nsDCG"], {"Rel": ["p"]}, iteration_groups={"All": None})
    assert res["settings"][0]["cases"] == 3  # 1 run pair × (t1 it 1, t1 it 2, t2 it 1)
