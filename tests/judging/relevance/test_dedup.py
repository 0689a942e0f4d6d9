"""Near-duplicate clustering (plain module), hand-worked values."""

import pytest

from judging.relevance import dedup


def test_normalise_folds_case_accents_and_punctuation():
    assert dedup.normalise("  Café, au LAIT!\n") == "cafe au lait"


def test_jaccard_of_shingles_matches_a_hand_count():
    a = dedup.shingles("a b c d")  # {abc, bcd}
    b = dedup.shingles("a b c e")  # {abc, bce}
    assert dedup.jaccard(a, b) == pytest.approx(1 / 3)


def test_cluster_groups_by_threshold_and_keeps_the_first_item_as_head():
    items = [
        ("p1", "one two three four five six seven eight nine ten"),
        ("p2", "x"),
        ("p3", "One two three four five six seven eight nine ten."),  # identical after normalising
        ("p4", "one two three four five six seven eight nine eleven"),  # 7 of 9 shingles shared: J = 7/9
        ("p5", None),
        ("p6", None),
    ]
    assert dedup.cluster(items, threshold=0.9) == [["p1", "p3"], ["p2"], ["p4"], ["p5"], ["p6"]]
    assert dedup.cluster(items, threshold=0.7) == [["p1", "p3", "p4"], ["p2"], ["p5"], ["p6"]]


def test_cluster_rejects_a_threshold_outside_zero_one():
    with pytest.raises(ValueError):
        dedup.cluster([("a", "t")], threshold=0)
