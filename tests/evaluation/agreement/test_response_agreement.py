"""Agreement of response label sets on hand-worked examples: exact agreement, κ and its bootstrap interval,
confusion, per topic and condition, run scores from one set's labels, and τ between the run rankings."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from evaluation.agreement import responses as ra

S, P, N = "support", "partial_support", "not_support"
A = {("1_1", "k1"): S, ("1_1", "k2"): S, ("1_1", "k3"): N, ("2_1", "k4"): P, ("2_1", "k5"): N, ("2_1", "k6"): S}
B = {("1_1", "k1"): S, ("1_1", "k2"): N, ("1_1", "k3"): N, ("2_1", "k4"): P, ("2_1", "k5"): S, ("2_1", "k6"): S}
B_EXTRA = {**B, ("2_1", "k7"): N}
CONDITIONS = {key: ("blind" if key[0] == "1_1" else "post_edit") for key in A}


def test_exact_agreement_kappa_and_confusion_by_hand():
    r = ra.label_agreement(A, B_EXTRA, labels=ra.NUGGET_LABELS, conditions=CONDITIONS)
    # codes not 0 / partial 1 / support 2: A = [2,2,0,1,0,2], B = [2,0,0,1,2,2]
    assert (r["items"], r["only_a"], r["only_b"]) == (6, 0, 1)
    assert r["exact"] == pytest.approx(4 / 6)
    # p_o = 24/36, marginals (2,1,3) on both sides: p_e = 14/36, κ = (24 − 14) / (36 − 14) = 5/11.
    assert r["kappa"] == pytest.approx(5 / 11)
    assert r["confusion"] == [[1, 0, 1], [0, 1, 0], [1, 0, 2]]
    assert r["labels"] == ["not_support", "partial_support", "support"]
    assert r["low"] is not None and r["low"] <= r["kappa"] <= r["high"]


def test_per_topic_and_per_condition_by_hand():
    r = ra.label_agreement(A, B, labels=ra.NUGGET_LABELS, conditions=CONDITIONS)
    # topic 1: A [2,2,0] B [2,0,0]: p_o 6/9, p_e (1·2 + 2·1)/9 = 4/9, κ = 2/5; topic 2: A [1,0,2] B [1,2,2]: κ = 1/2.
    topics = {t["topic"]: (t["items"], round(t["exact"], 4), round(t["kappa"], 4)) for t in r["topics"]}
    assert topics == {"1": (3, 0.6667, 0.4), "2": (3, 0.6667, 0.5)}
    conditions = {c["condition"]: round(c["kappa"], 4) for c in r["conditions"]}
    assert conditions == {"blind": 0.4, "post_edit": 0.5}


def test_kappa_of_a_table_equals_scikit_learns_and_the_bootstrap_is_seeded():
    rng = np.random.default_rng(3)
    a = rng.integers(0, 3, 200)
    b = np.where(rng.random(200) < 0.6, a, rng.integers(0, 3, 200))
    table = np.zeros((3, 3))
    for x, y in zip(a, b, strict=True):
        table[x, y] += 1
    assert ra.kappa_of_table(table) == pytest.approx(cohen_kappa_score(a, b))
    first = ra.bootstrap_interval(list(a), list(b), k=3)
    assert first == ra.bootstrap_interval(list(a), list(b), k=3)  # same seed, same interval
    assert first[0] < cohen_kappa_score(a, b) < first[1]
    assert ra.kappa_of_table(np.array([[4.0, 0.0], [0.0, 0.0]])) is None  # chance agreement certain


def test_undefined_kappa_says_why_and_unknown_labels_are_refused():
    same = {("1_1", "k1"): S, ("1_1", "k2"): S}
    r = ra.label_agreement(same, same, labels=ra.NUGGET_LABELS)
    assert r["kappa"] is None and "chance agreement is 100%" in r["why_undefined"] and r["exact"] == 1.0
    with pytest.raises(ValueError, match="labels \\['maybe'\\]"):
        ra.label_agreement({("1_1", "k"): "maybe"}, same, labels=ra.NUGGET_LABELS)


def test_nugget_run_scores_from_one_sets_labels_by_hand():
    nuggets = {"t1": [("n1", "vital"), ("n2", "okay")], "t2": [("n3", "vital")]}
    labels = {
        ("r1", "t1", "n1"): S,
        ("r1", "t1", "n2"): P,
        ("r1", "t2", "n3"): N,
        ("r2", "t1", "n1"): P,
        ("r2", "t1", "n2"): S,
        # r2's answer to t2 is not labelled: it is not scored
    }
    got = ra.nugget_run_scores(labels, nuggets)
    # r1: t1 (V_strict 1, A_strict 1/2, V 1, A 3/4) and t2 (all 0), averaged; r2: t1 only.
    assert got["r1"] == pytest.approx({"V_strict": 0.5, "A_strict": 0.25, "V": 0.5, "A": 0.375})
    assert got["r2"] == pytest.approx({"V_strict": 0.0, "A_strict": 0.5, "V": 0.5, "A": 0.75})


def test_citation_run_scores_count_an_unanswered_judged_topic_as_zero():
    sentences = {("r1", "t1"): [(0, True), (1, True), (2, False)], ("r2", "t1"): [(0, True)], ("r1", "t2"): [(0, True)]}
    labels = {("r1", "t1", 0): "full", ("r1", "t1", 1): "partial", ("r2", "t1", 0): "none", ("r1", "t2", 0): "full"}
    got = ra.citation_run_scores(labels, sentences)
    # r1: t1 P (1 + .5)/2 = .75, R 1.5/3 = .5; t2 P 1, R 1 → (.875, .75). r2: t1 0; t2 unanswered counts 0.
    assert got["r1"] == pytest.approx({"precision": 0.875, "recall": 0.75})
    assert got["r2"] == pytest.approx({"precision": 0.0, "recall": 0.0})


def test_kendall_tau_between_the_run_rankings_of_two_sets():
    a = {"r1": {"A": 0.5}, "r2": {"A": 0.3}, "r3": {"A": 0.1}}
    b = {"r1": {"A": 0.2}, "r2": {"A": 0.4}, "r3": {"A": 0.1}}
    # one discordant pair (r1, r2) of three: τ = (2 − 1) / 3.
    (row,) = ra.ranking_taus(a, b, ["A"])
    assert row["tau"] == pytest.approx(1 / 3) and row["n"] == 3 and row["swapped"] == 1
