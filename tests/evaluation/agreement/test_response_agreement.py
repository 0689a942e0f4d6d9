"""Agreement of response label sets on hand-worked examples: exact agreement, κ and its bootstrap interval,
confusion, per topic and condition, run scores from one set's labels, and τ between the run rankings."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from evaluation.agreement import responses as ra
from evaluation.responses import scores

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


def test_run_scores_of_two_nugget_sets_cover_only_the_responses_both_fully_labelled():
    nuggets = [(1, 1, "vital"), (2, 1, "okay"), (3, 2, "vital")]
    responses = [(10, 1, 1), (11, 1, 2), (20, 2, 1), (21, 2, 2)]
    a = scores.nugget_table(
        responses, nuggets, [(10, 1, S), (10, 2, P), (11, 3, N), (20, 1, P), (20, 2, S), (21, 3, S)]
    )
    # B leaves response 11 unlabelled: it drops out of both sides.
    b = scores.nugget_table(responses, nuggets, [(10, 1, S), (10, 2, S), (20, 1, N), (20, 2, S), (21, 3, S)])
    by_a, by_b = scores.shared_run_scores(a, b)
    # run 1 is response 10 alone: A has n1 S, n2 P → V_strict 1, A_strict 1/2, V 1, A 3/4.
    assert by_a[1] == pytest.approx({"V_strict": 1.0, "A_strict": 0.5, "V": 1.0, "A": 0.75})
    # run 2 is responses 20 (0, 1/2, 1/2, 3/4) and 21 (all 1), averaged.
    assert by_a[2] == pytest.approx({"V_strict": 0.5, "A_strict": 0.75, "V": 0.75, "A": 0.875})
    assert by_b[1] == pytest.approx({"V_strict": 1.0, "A_strict": 1.0, "V": 1.0, "A": 1.0})
    assert by_b[2] == pytest.approx({"V_strict": 0.5, "A_strict": 0.75, "V": 0.5, "A": 0.75})


def test_run_scores_of_two_citation_sets_cover_only_the_topics_both_judged():
    responses = [(10, 1, 1), (11, 1, 2), (20, 2, 1)]
    sentences = [(10, 100, "p1"), (10, 101, "p2"), (10, 102, None), (11, 110, "p3"), (20, 200, "p4")]
    a = scores.citation_table(
        responses,
        sentences,
        [(100, "p1", "full"), (101, "p2", "partial"), (110, "p3", "full"), (200, "p4", "none")],
        [1, 2],
    )
    b = scores.citation_table(responses, sentences, [(100, "p1", "partial"), (200, "p4", "full")], [1])
    by_a, by_b = scores.shared_run_scores(a, b)
    # Topic 2 (judged in A only) is left out. A, run 1 on topic 1: P (1 + .5) / 2, R 1.5 / 3 (the uncited sentence).
    assert by_a == {1: {"precision": 0.75, "recall": 0.5}, 2: {"precision": 0.0, "recall": 0.0}}
    # B, run 1: sentence 101 unjudged is left out: P .5 / 1, R .5 / 2; run 2: full.
    assert by_b == {1: {"precision": 0.5, "recall": 0.25}, 2: {"precision": 1.0, "recall": 1.0}}
    with pytest.raises(scores.ScoreError, match="different kinds"):
        scores.shared_run_scores(a, scores.nugget_table([], [], []))


def test_kendall_tau_between_the_run_rankings_of_two_sets():
    a = {"r1": {"A": 0.5}, "r2": {"A": 0.3}, "r3": {"A": 0.1}}
    b = {"r1": {"A": 0.2}, "r2": {"A": 0.4}, "r3": {"A": 0.1}}
    # one discordant pair (r1, r2) of three: τ = (2 − 1) / 3.
    (row,) = ra.ranking_taus(a, b, ["A"])
    assert row["tau"] == pytest.approx(1 / 3) and row["n"] == 3 and row["swapped"] == 1


def test_an_undefined_kappa_names_the_label_given_to_every_item():
    a = {("1_1", f"s{i}"): "full" for i in range(4)}
    b = {("1_1", "s0"): "none", ("1_1", "s1"): "partial", ("1_1", "s2"): "full", ("1_1", "s3"): "none"}
    r = ra.label_agreement(a, b, labels=ra.CITATION_LABELS)
    assert r["kappa"] is None and r["why_undefined"].startswith("A gave all 4 item(s) the label 'full':")
