"""Intuitiveness Test and Metric Unanimity (Albahem et al. 2019) on hand-worked tables and on TREC DD 2016."""

from __future__ import annotations

import io
import math

import numpy as np
import pytest

from evaluation.analyses import metaeval as me

# 3 runs × 3 topics; complex c1, c2; simple s. Hand-worked pairs (r1 − r2):
# t1 AB: c1 +.1 c2 −.1 s +.8 → disagree, c1 correct | t1 AC, t1 BC agree
# t2 AB: c1 −.1 c2 +.1 s +.3 → disagree, c2 correct | t2 AC agree | t2 BC c1 tie → no disagreement
# t3 AB, AC: c1 +.1 c2 −.1 s 0 → disagree, simple tie (neither correct) | t3 BC all ties
TABLE = """run,topic,c1,c2,s
A,t1,.5,.2,.9
B,t1,.4,.3,.1
C,t1,.1,.1,.1
A,t2,.2,.6,.5
B,t2,.3,.5,.2
C,t2,.3,.9,.5
A,t3,.6,.1,.4
B,t3,.5,.2,.4
C,t3,.5,.2,.4
A,all,0,0,0
"""


def test_intuitiveness_counts_disagreements_and_discards_simple_ties():
    df = me.load_table(io.StringIO(TABLE))
    assert set(df["topic"]) == {"t1", "t2", "t3"}  # the "all" row is dropped
    pa = me.pair_deltas(df, ["c1", "c2", "s"])
    res = me.intuitiveness(pa, "c1", "c2", ["s"])
    assert res["cases"] == 9
    assert res["disagreements"] == 4
    assert (res["correct1"], res["correct2"]) == (1, 1)
    assert res["simple_ties"] == 2
    assert res["intuitiveness1"] == 0.25
    assert res["p_value"] == 1.0
    assert res["significant_winner"] is None


def test_unanimity_is_the_pmi_of_hand_counted_events():
    # c: +1 −1 0 +1; s1: +1 +1 −1 0; s2: +1 −1 −1 +1
    # Δm = 1+1+.5+1 = 3.5; ΔMS (all ≥ or all ≤) = cases 1,3,4 = 3; ΔmMS = cases 1,3,4 = 3
    pa = me.PairArrays(
        runs=[],
        deltas={"c": np.array([1.0, -1, 0, 1]), "s1": np.array([1.0, 1, -1, 0]), "s2": np.array([1.0, -1, -1, 1])},
        valid=np.ones(4, dtype=bool),
    )
    assert me.unanimity(pa, "c", ["s1", "s2"]) == pytest.approx(math.log((3 / 4) / ((3.5 / 4) * (3 / 4))))


def test_sign_test_flags_a_significant_winner():
    rows = ["run,topic,c1,c2,s"]
    for t in range(12):  # c1 always agrees with s, c2 always against: 12 of 12 for c1 → p = 2·.5^12
        rows += [f"A,{t},.6,.1,.9", f"B,{t},.5,.2,.1"]
    pa = me.pair_deltas(me.load_table(io.StringIO("\n".join(rows))), ["c1", "c2", "s"])
    res = me.intuitiveness(pa, "c1", "c2", ["s"])
    assert res["correct1"] == 12 and res["correct2"] == 0
    assert res["p_value"] == pytest.approx(2 * 0.5**12)
    assert res["significant_winner"] == "c1"


def test_dense_ranks_share_ties():
    assert me.dense_rank_desc([3, 1, 3, 0]) == [1, 2, 1, 3]


def test_it_rejects_a_table_with_a_non_numeric_cell_naming_the_line():
    with pytest.raises(me.TableError, match="line 3: column 'c1' is not numeric"):
        me.load_table(io.StringIO("run,topic,c1\nA,1,.5\nB,1,abc\n"), name="upload.csv")
    with pytest.raises(me.TableError, match="missing required column 'run'"):
        me.load_table(io.StringIO("topic,c1\n1,.5\n"))


def test_ranking_stability_prefers_the_measure_whose_ranking_survives_test_sets():
    means = {
        "stable": {"R1": {"a": 0.3, "b": 0.2, "c": 0.1}, "R2": {"a": 0.35, "b": 0.25, "c": 0.05}},
        "shaky": {"R1": {"a": 0.3, "b": 0.2, "c": 0.1}, "R2": {"a": 0.1, "b": 0.2, "c": 0.3}},
    }
    out = me.ranking_stability(means)
    assert [r["measure"] for r in out] == ["stable", "shaky"]
    assert out[0]["mean_tau"] == pytest.approx(1.0)
    assert out[1]["mean_tau"] == pytest.approx(-1.0)


def test_it_reproduces_table_1_of_the_paper_on_trec_dd_2016(shared_data):
    df = me.load_table(shared_data / "trec_dd_meta" / "trec-all-2016-evals.csv.gz")
    assert df["run"].nunique() == 21
    pa = me.pair_deltas(df, ["act", "nct", "nEU", "rbu_0.990_0.001", "p", "strec", "ttime"], iterations=[1])
    simple = ["p", "strec", "ttime"]
    r = me.intuitiveness(pa, "act", "nct", simple)  # paper: 0.0084/0.0823+ (4.27%)
    assert (round(r["intuitiveness1"], 4), round(r["intuitiveness2"], 4)) == (0.0084, 0.0823)
    assert round(100 * r["disagreement_fraction"], 2) == 4.27
    assert r["significant_winner"] == "nct"
    r = me.intuitiveness(pa, "nct", "nEU", simple)  # paper: 0.0307+/0.0028 (15.86%)
    assert (round(r["intuitiveness1"], 4), round(r["intuitiveness2"], 4)) == (0.0307, 0.0028)
    r = me.intuitiveness(pa, "act", "rbu_0.990_0.001", simple)  # paper: 0.0077/0.0694+ (5.84%)
    assert (round(r["intuitiveness1"], 4), round(r["intuitiveness2"], 4)) == (0.0077, 0.0694)
    res = me.meta_evaluate(df, me.DD_COMPLEX, {"Rel+Div+Eff": simple}, iteration_groups={"1": [1]})
    setting = res["settings"][0]
    assert setting["intuitiveness_rank"]["nct"] == 1  # nCT most intuitive on all dimensions (paper Table 2)
    assert setting["unanimity_rank"]["nct"] == 1
    assert setting["spearman"] > 0.5
