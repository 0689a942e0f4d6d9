"""Label-set scores read from the stores: hand-worked figures on a small scene, coverage, and live updates through
the cache when labels arrive (label_set_touch) or nuggets change (nugget_bank_touch)."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from evaluation.models import NuggetAssignment, ResponseLabelSet
from evaluation.responses import selectors as sel
from evaluation.responses import services
from tests.evaluation.responses.helpers import small_scene

pytestmark = pytest.mark.django_db


@pytest.fixture
def scene():
    return small_scene()


def test_the_nugget_leaderboard_ranks_runs_by_the_mean_over_fully_labelled_responses(scene):
    board = sel.leaderboard(label_set=scene["nugget_set"], measure="A")
    a, b = board
    # A: t1 (V_strict 1/3, A_strict 2/5, V 1/2, A 3/5) and t2 (all 1) → means
    assert (a.run, a.rank) == ("A", 1)
    assert a.values == pytest.approx({"V_strict": 2 / 3, "A_strict": 0.7, "V": 0.75, "A": 0.8})
    assert (a.scored, a.labelled, a.responses) == (2, 2, 2)
    # B has labels on 2 of its t1 answer's 5 nuggets: nothing scored yet, ranked last without a rank
    assert (b.run, b.rank, b.values["A"], b.scored, b.labelled) == ("B", None, None, 0, 1)


def test_the_citation_leaderboard_averages_over_judged_topics(scene):
    board = {r.run: r for r in sel.leaderboard(label_set=scene["citation_set"], measure="precision")}
    # only t1 is judged. A on t1: first citations full, partial, none, unjudged, (none), not_needed →
    # precision 1.5 / 3 = 0.5, recall 1.5 / 4 = 0.375. B on t1: two full → 1, 1.
    assert board["A"].values == {"precision": 0.5, "recall": 0.375}
    assert board["B"].values == {"precision": 1.0, "recall": 1.0}
    assert (board["B"].rank, board["A"].rank) == (1, 2)
    assert (board["A"].scored, board["A"].labelled) == (1, 1)


def test_scores_are_read_in_a_few_queries_and_then_from_the_cache(scene):
    label_set = ResponseLabelSet.objects.get(pk=scene["nugget_set"].pk)
    with CaptureQueriesContext(connection) as first:
        sel.label_set_scores(label_set=label_set)
    with CaptureQueriesContext(connection) as again:
        sel.label_set_scores(label_set=label_set)
    assert len(first) <= 6
    assert len(again) == 2  # the runs' and the bank's stamps


def test_a_label_arriving_with_a_touch_updates_the_leaderboard(scene):
    label_set = scene["nugget_set"]
    a1, _a2, b1 = scene["responses"]
    assert sel.leaderboard(label_set=label_set, measure="A")[1].values["A"] is None
    for n in scene["bank"].nuggets.filter(turn__turn_id="t1").order_by("position")[2:]:
        NuggetAssignment.objects.create(label_set=label_set, response=b1, nugget=n, label="not_support")
    services.label_set_touch(label_set=label_set)
    board = {r.run: r for r in sel.leaderboard(label_set=label_set, measure="A")}
    # B on t1: vital S, S, N; okay N, N → V_strict 2/3, A_strict 2/5
    assert board["B"].values["V_strict"] == pytest.approx(2 / 3) and board["B"].values["A_strict"] == pytest.approx(0.4)
    assert board["B"].scored == 1


def test_a_nugget_merged_away_leaves_the_scores_once_the_bank_is_touched(scene):
    label_set, bank = scene["nugget_set"], scene["bank"]
    sel.label_set_scores(label_set=label_set)
    n = bank.nuggets.get(text="n2")  # vital, labelled not_support for A on t1
    n.merged_into = bank.nuggets.get(text="n0")
    n.save()
    services.nugget_bank_touch(bank=bank)
    a = sel.leaderboard(label_set=label_set, measure="A")[0]
    # A on t1 without n2: vital S, P; okay S, P → V_strict 1/2; t2: 1 → mean 0.75
    assert a.values["V_strict"] == pytest.approx(0.75)


def test_a_runs_per_topic_rows_are_in_turn_order_with_none_where_not_scored(scene):
    run_a, run_b = scene["runs"]
    rows = sel.run_topic_rows(label_set=scene["nugget_set"], run=run_b)
    assert [(r["turn_id"], r["figures"], r["labelled"]) for r in rows] == [("t1", None, 2)]
    rows = sel.run_topic_rows(label_set=scene["citation_set"], run=run_a)
    assert [r["turn_id"] for r in rows] == ["t1", "t2"]
    assert rows[0]["figures"]["recall"] == 0.375 and rows[1]["figures"] is None


def test_label_counts_group_by_label_and_condition(scene):
    counts = sel.label_counts(label_sets=[scene["nugget_set"], scene["citation_set"]])
    assert counts[scene["nugget_set"].pk]["label"] == {"support": 5, "partial_support": 2, "not_support": 1}
    assert counts[scene["nugget_set"].pk]["condition"] == {"blind": 7, "post_edit": 1}
    assert counts[scene["citation_set"].pk]["label"] == {"full": 3, "none": 2, "partial": 1, "not_needed": 1}
    banks = sel.nugget_counts(bank_ids=[scene["bank"].pk])[scene["bank"].pk]
    assert banks["importance"] == {"vital": 4, "okay": 2} and banks["origin"] == {"imported": 5, "added": 1}


def test_writers_that_forget_the_touch_still_move_the_key_when_they_add_or_remove_rows(scene):
    label_set = scene["citation_set"]
    assert {r.run for r in sel.leaderboard(label_set=label_set, measure="precision")} == {"A", "B"}
    scene["runs"][1].delete()  # its answers and their labels go with it; no touch
    board = sel.leaderboard(label_set=label_set, measure="precision")
    assert [(r.run, r.values["precision"]) for r in board] == [("A", 0.5)]
    nugget_set, bank = scene["nugget_set"], scene["bank"]
    before = sel.leaderboard(label_set=nugget_set, measure="A")[0].values["V_strict"]
    bank.nuggets.filter(text="m0").delete()  # t2's only nugget, as a bulk re-import would rewrite it
    after = sel.leaderboard(label_set=nugget_set, measure="A")[0]
    assert before == pytest.approx(2 / 3) and after.values["V_strict"] == pytest.approx(1 / 3) and after.scored == 1
