"""The agreement core on hand-worked examples, and its κ and τ against scikit-learn's and scipy's."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from scipy.stats import kendalltau
from sklearn.metrics import cohen_kappa_score

from evaluation.agreement import algorithms as al

REPO = Path(__file__).resolve().parents[3]

# Four items over two topics. Grades A = 0, 1, 2, 2 and B = 0, 2, 2, 1.
A = {("1_1", "d1"): 0, ("1_2", "d2"): 1, ("2_1", "d3"): 2, ("2_1", "d4"): 2}
B = {("1_1", "d1"): 0, ("1_2", "d2"): 2, ("2_1", "d3"): 2, ("2_1", "d4"): 1}


def test_linear_weighted_kappa_matches_the_hand_worked_value():
    # Observed mean disagreement (0 + 1 + 0 + 1) / 4 = 0.5. Marginals A = B = (1/4, 1/4, 1/2) on grades 0, 1, 2;
    # expected disagreement = 1/4·(1/4 + 2·1/2) + 1/4·(1/4 + 1/2) + 1/2·(2·1/4 + 1/4) = 0.875; κ = 1 − 0.5/0.875 = 3/7.
    k = al.kappa([0, 1, 2, 2], [0, 2, 2, 1], scale=[0, 1, 2, 3, 4], weighted=True)
    assert k.value == pytest.approx(3 / 7)
    assert k.weights == "linear" and k.n == 4


def test_unweighted_kappa_matches_the_hand_worked_value():
    # p_o = 2/4, p_e = 1/16 + 1/16 + 1/4 = 0.375, κ = (0.5 − 0.375) / 0.625 = 0.2.
    assert al.kappa([0, 1, 2, 2], [0, 2, 2, 1], scale=[0, 1, 2], weighted=False).value == pytest.approx(0.2)


def test_unused_grades_at_the_ends_of_the_scale_leave_weighted_kappa_unchanged():
    short = al.kappa([0, 1, 2, 2], [0, 2, 2, 1], scale=[0, 1, 2], weighted=True).value
    assert short == pytest.approx(al.kappa([0, 1, 2, 2], [0, 2, 2, 1], scale=[0, 1, 2, 3, 4], weighted=True).value)


def test_weights_are_grade_distances_even_when_middle_grades_are_unused():
    # Only grades 0, 1 and 4 occur: without the full label list scikit-learn would weigh 1↔4 like 0↔1.
    a, b = [0, 1, 4, 4, 1, 0], [1, 1, 4, 1, 0, 0]
    expected = cohen_kappa_score(a + [2, 3], b + [2, 3], weights="linear")  # all five grades present
    with_labels = cohen_kappa_score(a + [2, 3], b + [2, 3], weights="linear", labels=[0, 1, 2, 3, 4])
    assert al.kappa(a + [2, 3], b + [2, 3], scale=al.scale_of(a + b), weighted=True).value == expected == with_labels
    assert al.kappa(a, b, scale=al.scale_of(a + b), weighted=True).value == pytest.approx(
        cohen_kappa_score(a, b, weights="linear", labels=[0, 1, 2, 3, 4])
    )
    assert al.kappa(a, b, scale=al.scale_of(a + b), weighted=True).value != pytest.approx(
        cohen_kappa_score(a, b, weights="linear")
    )


def test_the_report_holds_kappa_confusion_binary_view_and_topics():
    r = al.agreement(A, B, threshold=2)
    assert r["items"] == 4 and r["only_a"] == r["only_b"] == 0
    assert r["graded"] and r["scale"] == [0, 1, 2, 3, 4] and r["weights"] == "linear"
    assert r["exact"] == 0.5
    assert r["kappa"]["value"] == pytest.approx(3 / 7)
    assert r["confusion"] == [
        [1, 0, 0, 0, 0],
        [0, 0, 1, 0, 0],
        [0, 1, 1, 0, 0],
        [0, 0, 0, 0, 0],
        [0, 0, 0, 0, 0],
    ]
    # Binarised at 2: A = 0, 0, 1, 1 and B = 0, 1, 1, 0; p_o = p_e = 0.5 so κ = 0; overlap = 1 both / 3 either.
    binary = r["binary"]
    assert binary["threshold"] == 2 and not binary["already_binary"]
    assert binary["confusion"] == [[1, 1], [1, 1]]
    assert binary["kappa"]["value"] == pytest.approx(0.0)
    assert binary["overlap"] == pytest.approx(1 / 3)
    assert (binary["relevant_a"], binary["relevant_b"], binary["relevant_both"]) == (2, 2, 1)
    # Topic 1: A = 0, 1 / B = 0, 2: disagreement 0.5 observed, 1.0 expected → κ = 0.5.
    # Topic 2: A = 2, 2 / B = 2, 1: A has a single grade, so observed = expected whatever B says: undefined.
    t1, t2 = r["topics"]
    assert (t1["topic"], t1["items"], t1["exact"], t1["kappa"]) == ("1", 2, 0.5, pytest.approx(0.5))
    assert (t2["topic"], t2["items"], t2["exact"], t2["kappa"]) == ("2", 2, 0.5, None)
    assert t2["why_undefined"].startswith("A gave all 2 item(s) grade 2")
    assert t1["overlap"] == 0.0 and t2["overlap"] == 0.5


def test_per_grade_precision_and_recall_of_b_against_a_match_the_hand_worked_values_and_scikit_learn():
    from sklearn.metrics import precision_score, recall_score

    a = [2, 0, 1, 3, 0, 1, 2, 0, 0]
    b = [0, 0, 1, 2, 0, 1, 2, 0, 0]
    rows = {r["grade"]: r for r in al.per_grade(a, b, scale=[0, 1, 2, 3, 4])}
    # B gave 0 to five items, four of which A gave 0; A's four 0s were all found by B.
    assert (rows[0]["precision"], rows[0]["recall"], rows[0]["in_a"], rows[0]["in_b"]) == (0.8, 1.0, 4, 5)
    assert (rows[1]["precision"], rows[1]["recall"]) == (1.0, 1.0)
    assert (rows[2]["precision"], rows[2]["recall"]) == (0.5, 0.5)
    assert (rows[3]["precision"], rows[3]["recall"]) == (None, 0.0)  # B never gave 3: precision is 0/0
    assert (rows[4]["precision"], rows[4]["recall"], rows[4]["f1"]) == (None, None, None)
    for g in (0, 1, 2):
        assert rows[g]["precision"] == pytest.approx(precision_score(a, b, labels=[g], average="macro"))
        assert rows[g]["recall"] == pytest.approx(recall_score(a, b, labels=[g], average="macro"))
    report = al.agreement(
        {("1_1", str(i)): g for i, g in enumerate(a)}, {("1_1", str(i)): g for i, g in enumerate(b)}, threshold=2
    )
    assert report["per_grade"] == al.per_grade(a, b, scale=[0, 1, 2, 3, 4])
    binary = {r["grade"]: r for r in report["binary"]["per_grade"]}
    # Binarised at 2: A relevant at items 0, 3, 6; B at 3, 6.
    assert (binary[1]["precision"], binary[1]["recall"]) == (1.0, pytest.approx(2 / 3))


def test_items_judged_on_one_side_only_are_counted_but_not_compared():
    r = al.agreement({**A, ("3_1", "x"): 4}, {**B, ("3_1", "y"): 0, ("3_2", "z"): 1}, threshold=2)
    assert (r["items"], r["only_a"], r["only_b"]) == (4, 1, 2)
    assert r["kappa"]["value"] == pytest.approx(3 / 7)


def test_kappa_is_undefined_when_both_give_every_item_one_grade_and_says_why():
    r = al.agreement({**A, ("3_1", "x"): 3, ("3_1", "y"): 3}, {**B, ("3_1", "x"): 3, ("3_1", "y"): 3}, threshold=2)
    t3 = r["topics"][-1]
    assert t3["topic"] == "3" and t3["kappa"] is None and t3["exact"] == 1.0
    assert "grade 3" in t3["why_undefined"] and "0/0" in t3["why_undefined"]
    empty = al.agreement({("1_1", "a"): 1}, {("1_1", "b"): 1}, threshold=1)
    assert empty["items"] == 0 and empty["kappa"]["value"] is None
    assert empty["kappa"]["why_undefined"] == "no item was judged in both assessments"
    assert empty["topics"] == [] and empty["exact"] is None


def test_a_binary_scale_gets_unweighted_kappa_and_is_its_own_binary_view():
    a = {("9-1_1", "1"): 1, ("9-1_1", "2"): 0, ("9-1_2", "1"): 1, ("9-2_1", "3"): 0}
    b = {("9-1_1", "1"): 1, ("9-1_1", "2"): 1, ("9-1_2", "1"): 1, ("9-2_1", "3"): 0}
    r = al.agreement(a, b, threshold=2)
    # p_o = 3/4; marginals A (1/2, 1/2), B (1/4, 3/4): p_e = 1/8 + 3/8 = 1/2; κ = 0.25 / 0.5 = 0.5.
    assert not r["graded"] and r["weights"] is None and r["scale"] == [0, 1]
    assert r["kappa"]["value"] == pytest.approx(0.5)
    assert r["binary"]["already_binary"] and r["binary"]["threshold"] == 1
    assert r["binary"]["kappa"]["value"] == pytest.approx(0.5)
    assert [t["topic"] for t in r["topics"]] == ["9-1", "9-2"]


def test_the_interval_brackets_kappa_and_is_empty_for_a_single_item():
    k = al.kappa([0, 1, 2, 2, 3, 4, 4, 1], [0, 2, 2, 1, 3, 4, 3, 1], scale=[0, 1, 2, 3, 4], weighted=True)
    assert k.se is not None and k.se > 0 and k.low < k.value < k.high
    assert k.high - k.value == pytest.approx(1.959964 * k.se, rel=1e-5) or k.high == 1.0
    one = al.kappa([1], [2], scale=[0, 1, 2, 3, 4], weighted=True)
    assert one.se is None and one.low is None


def test_topics_and_turns_sort_naturally():
    a = {("10_1", "x"): 1, ("2_10", "x"): 1, ("2_9", "x"): 0}
    assert [(p.topic, p.turn) for p in al.paired_items(a, a)] == [("2", "2_9"), ("2", "2_10"), ("10", "10_1")]
    assert al.topic_of("9-1_3") == "9-1" and al.topic_of("132_1-1") == "132"


def test_kendall_tau_matches_the_hand_worked_value_and_lists_the_swapped_pair():
    a = {"s1": 0.5, "s2": 0.4, "s3": 0.3, "s4": 0.2}
    b = {"s1": 0.45, "s2": 0.30, "s3": 0.35, "s4": 0.10}
    r = al.ranking_agreement(a, b)
    # 6 pairs, 1 discordant (s2, s3): τ = (5 − 1) / 6.
    assert r["tau"] == pytest.approx(2 / 3)
    assert r["tau"] == pytest.approx(kendalltau(list(a.values()), list(b.values())).statistic)
    assert r["swapped"] == [{"x": "s2", "y": "s3", "a_x": 0.4, "a_y": 0.3, "b_x": 0.30, "b_y": 0.35}]
    assert [(s["system"], s["rank_a"], s["rank_b"]) for s in r["systems"]] == [
        ("s1", 1, 1),
        ("s2", 2, 3),
        ("s3", 3, 2),
        ("s4", 4, 4),
    ]


def test_kendall_tau_needs_two_systems_scored_under_both():
    r = al.ranking_agreement({"s1": 0.5, "s2": 0.1}, {"s1": 0.4})
    assert r["tau"] is None and r["n"] == 1 and r["swapped"] == []
    assert r["why_undefined"] == "τ needs at least two runs scored under both"


def test_kendall_tau_over_runs_one_side_scores_alike_is_undefined_and_says_which_side():
    r = al.ranking_agreement({"s1": 0.6, "s2": 0.6}, {"s1": 0.4, "s2": 0.1})
    assert r["tau"] is None and r["n"] == 2
    assert r["why_undefined"] == "every run scores the same under A, so there is no order to compare"
    assert al.ranking_agreement({"s1": 0.5, "s2": 0.1}, {"s1": 0.5, "s2": 0.5})["why_undefined"].endswith(
        "under B, so there is no order to compare"
    )


def test_importing_the_algorithms_loads_neither_django_nor_celery():
    probe = (
        "import json, sys; import evaluation.agreement.algorithms; "
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in ('django', 'celery'))))"
    )
    done = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []


def test_a_graded_assessment_against_a_binary_one_is_compared_on_relevance_not_on_grade_distance():
    # NIST-style grades against crowd-style "holds an answer" labels, threshold 2. Binary view:
    # A cut at 2 = 0, 0, 1, 1, 1, 0 against B = 0, 1, 1, 1, 0, 0 → p_o = 4/6; marginals A = B = (1/2, 1/2);
    # p_e = 1/2; κ = (2/3 − 1/2) / (1/2) = 1/3. A weighted κ over 0–4 would read B's 1 against A's 4 as 3 steps.
    graded = {("1_1", f"d{i}"): g for i, g in enumerate([0, 1, 2, 4, 3, 1])}
    binary = {("1_1", f"d{i}"): g for i, g in enumerate([0, 1, 1, 1, 0, 0])}

    report = al.agreement(graded, binary, threshold=2)

    assert report["mixed"] and not report["graded"] and report["weights"] is None
    assert report["kappa"]["value"] == pytest.approx(1 / 3)
    assert report["kappa"]["value"] == pytest.approx(cohen_kappa_score([0, 0, 1, 1, 1, 0], [0, 1, 1, 1, 0, 0]))
    assert report["exact"] == pytest.approx(4 / 6)
    # The confusion table keeps each side's own scale: grades 0–4 of A against 0/1 of B.
    assert report["scale_a"] == [0, 1, 2, 3, 4] and report["scale_b"] == [0, 1]
    assert report["confusion"] == [[1, 0], [1, 1], [0, 1], [1, 0], [0, 1]]
    # B's label 1 is relevant as it stands: only the graded side is cut at the threshold.
    assert report["binary"]["relevant_a"] == 3 and report["binary"]["relevant_b"] == 3
    assert report["binary"]["cut_a"] == 2 and report["binary"]["cut_b"] == 1


def test_two_graded_assessments_share_one_square_confusion_table():
    report = al.agreement(A, B, threshold=2)
    assert not report["mixed"] and report["scale_a"] == report["scale_b"] == report["scale"] == [0, 1, 2, 3, 4]
    assert len(report["confusion"]) == 5 and all(len(row) == 5 for row in report["confusion"])


def test_kappa_is_undefined_not_zero_when_one_side_gives_every_item_one_grade():
    # B (a judge that grades everything 0) against A = 0, 1, 2, 3: p_o = 1/4 = p_e, so scikit-learn says κ = 0 with
    # a zero standard error, i.e. "0.000 (95% CI 0.000 to 0.000)" whatever A says: no value, and why.
    a, b = [0, 1, 2, 3], [0, 0, 0, 0]
    assert cohen_kappa_score(a, b, weights="linear") == 0.0
    k = al.kappa(a, b, scale=[0, 1, 2, 3, 4], weighted=True)
    assert (k.value, k.se, k.low, k.high) == (None, None, None, None)
    assert k.why_undefined.startswith("B gave all 4 item(s) grade 0") and "by construction" in k.why_undefined
    items_a = {("1_1", f"d{i}"): g for i, g in enumerate(a)}
    items_b = {("1_1", f"d{i}"): g for i, g in enumerate(b)}
    r = al.agreement(items_a, items_b, threshold=2)
    # B's 0s read as binary, so the headline κ is on relevance (A cut at 2: 0, 0, 1, 1; B: 0, 0, 0, 0)
    assert r["mixed"] and r["exact"] == 0.5
    assert r["kappa"]["value"] is None and r["kappa"]["low"] is None
    # binarised at 2 B is still all 0: undefined there too
    assert r["binary"]["kappa"]["value"] is None and r["binary"]["kappa"]["why_undefined"].startswith("B gave all")


def test_kappa_of_a_single_item_is_undefined_and_says_it_needs_two():
    k = al.kappa([1], [2], scale=[0, 1, 2, 3, 4], weighted=True)
    assert k.value is None and k.why_undefined == "only 1 item was judged in both assessments; κ needs at least 2"


# Three runs under A (turns t1, t2, t3) and B (t1, t2 only).
PER_TURN_A = {
    "s1": {"t1": 0.8, "t2": 0.6, "t3": 0.0},
    "s2": {"t1": 0.5, "t2": 0.5, "t3": 1.0},
    "s3": {"t1": 0.2, "t2": 0.4, "t3": 0.9},
}
PER_TURN_B = {"s1": {"t1": 0.7, "t2": 0.7}, "s2": {"t1": 0.6, "t2": 0.2}, "s3": {"t1": 0.3, "t2": 0.1}}


def test_kendall_tau_between_versions_compares_the_runs_on_the_turns_both_judged_only():
    # Over every turn A orders s2 (0.667) > s3 (0.5) > s1 (0.467) and B s1 (0.7) > s2 (0.4) > s3 (0.2): τ = −1/3.
    # On the shared turns t1, t2 A orders s1 (0.7) > s2 (0.5) > s3 (0.3), as B does: τ = 1.
    full = al.ranking_agreement(
        {s: sum(v.values()) / len(v) for s, v in PER_TURN_A.items()},
        {s: sum(v.values()) / len(v) for s, v in PER_TURN_B.items()},
    )
    assert full["tau"] == pytest.approx(-1 / 3)
    r = al.shared_turn_ranking(PER_TURN_A, PER_TURN_B, turns_a=["t1", "t2", "t3"], turns_b=["t1", "t2"])
    assert r["tau"] == pytest.approx(1.0) and r["swapped"] == [] and r["why_undefined"] == ""
    assert (r["shared_turns"], r["turns_a"], r["turns_b"], r["restricted"]) == (2, 3, 2, True)
    assert {s["system"]: s["a"] for s in r["systems"]} == {
        "s1": pytest.approx(0.7),
        "s2": pytest.approx(0.5),
        "s3": pytest.approx(0.3),
    }


def test_kendall_tau_over_fewer_than_two_shared_turns_is_undefined_and_says_why():
    r = al.shared_turn_ranking(PER_TURN_A, PER_TURN_B, turns_a=["t1", "t2", "t3"], turns_b=["t1"])
    assert r["tau"] is None and r["pvalue"] is None and r["swapped"] == [] and r["shared_turns"] == 1
    assert r["why_undefined"].startswith("only 1 turn was judged in both versions")
    none = al.shared_turn_ranking(PER_TURN_A, {}, turns_a=["t1"], turns_b=["t9"])
    assert none["tau"] is None and none["why_undefined"].startswith("no turn was judged in both versions")
