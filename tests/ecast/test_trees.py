"""Conversation trees as plain data: paths, leaves, branch-aware numbers, the flattened file's System numbers and
mixed-initiative System turns, on hand-worked trees and on CAsT 2022 topic 142 (eight branches)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ecast import trees

REPO = Path(__file__).resolve().parents[2]

# Topic 133 of the CAsT 2022 tree file: a clarifying question (3-1) is an alternative answer to 1-5.
TOPIC_133 = {
    "1-1": None,
    "1-2": "1-1",
    "1-3": "1-2",
    "1-4": "1-3",
    "1-5": "1-4",
    "1-6": "1-5",
    "1-7": "1-6",
    "1-8": "1-7",
    "2-1": "1-4",
    "2-2": "2-1",
    "2-3": "2-2",
    "2-4": "2-3",
    "3-1": "1-5",
    "3-2": "3-1",
}


def test_a_path_runs_from_the_root_and_skips_sibling_branches():
    assert trees.path_to(TOPIC_133, "3-2") == ["1-1", "1-2", "1-3", "1-4", "1-5", "3-1", "3-2"]
    assert trees.path_to(TOPIC_133, "2-1") == ["1-1", "1-2", "1-3", "1-4", "2-1"]
    assert trees.path_to(TOPIC_133, "1-1") == ["1-1"]


def test_every_leaf_ends_one_root_to_leaf_path():
    assert trees.leaves(TOPIC_133) == ["1-8", "2-4", "3-2"]
    paths = trees.root_to_leaf_paths(TOPIC_133)
    assert [p[-1] for p in paths] == ["1-8", "2-4", "3-2"] and all(p[0] == "1-1" for p in paths)
    assert [len(p) for p in paths] == [8, 8, 7]


def test_a_linear_conversation_is_the_tree_where_each_turn_follows_the_one_before():
    parents = trees.linear_parents([11, 12, 13])
    assert parents == {11: None, 12: 11, 13: 12}
    assert trees.path_to(parents, 13) == [11, 12, 13] and trees.root_to_leaf_paths(parents) == [[11, 12, 13]]


def _drawn(stretch: trees.Stretch[str]) -> tuple:
    return (stretch.nodes, [_drawn(b) for b in stretch.branches])


def test_a_tree_is_drawn_as_stretches_with_the_branches_nested_under_the_turn_they_part_at():
    (root,) = trees.stretches(TOPIC_133)
    assert _drawn(root) == (
        ["1-1", "1-2", "1-3", "1-4"],
        [
            (["1-5"], [(["1-6", "1-7", "1-8"], []), (["3-1", "3-2"], [])]),
            (["2-1", "2-2", "2-3", "2-4"], []),
        ],
    )
    assert [_drawn(s) for s in trees.stretches(trees.linear_parents([11, 12, 13]))] == [([11, 12, 13], [])]


def test_a_cycle_is_an_error_not_an_endless_loop():
    with pytest.raises(ValueError, match="cycle"):
        trees.path_to({"a": "b", "b": "a"}, "a")


@pytest.mark.parametrize(
    ("user", "following", "expected"),
    [
        ("1-3", ["1-5"], "1-4"),  # continues the branch
        ("1-3", [], "1-4"),  # the end of a path
        ("1-5", ["3-2"], "3-1"),  # an alternative answer opens branch 3
        ("1-3", ["1-5", "1-9", "3-1"], "1-4"),  # later users may go on in the branch (1-9) or open one (3-1)
        ("1-3", ["2-2", "4-1"], "2-1"),  # 142: "Buenos Aires …" answers 1-3 on a branch of its own
    ],
)
def test_the_flattened_file_s_system_numbers_come_from_the_user_turns_around_them(user, following, expected):
    assert trees.flattened_system_number(user, following) == expected


@pytest.mark.parametrize(
    ("response", "kind"),
    [
        ("What beauty product would you like to make?", trees.CLARIFICATION),
        ("I’m not sure I understand. What would you like more information about?", trees.CLARIFICATION),
        ("There are various alternative search engines. Would you like to know about them?", trees.SUGGESTION),
        ("Search engines can be biased in many ways. Are you interested in a specific way?", trees.SUGGESTION),
        ("The second one is pounded yam. What is it? Yams that have been crushed.", ""),
        ("Okay. Thanks for the feedback.", ""),
    ],
)
def test_a_system_turn_ending_in_a_question_takes_the_initiative(response, kind):
    assert trees.mixed_initiative(response) == kind


def test_cast_2022_topic_142_has_eight_paths_some_ending_on_a_user_turn(shared_data):
    topics = json.loads((shared_data / "cast/2022/2022_evaluation_topics_tree_v1.0.json").read_text())
    topic = next(t for t in topics if t["number"] == 142)
    parents = {t["number"]: t.get("parent") for t in topic["turn"]}
    assert trees.leaves(parents) == ["1-5", "3-5", "4-1", "5-9", "6-3", "7-2", "8-1", "9-2"]
    assert trees.path_to(parents, "6-3") == [
        "1-1",
        "1-2",
        "1-3",
        "2-1",
        "2-2",
        "2-3",
        "2-4",
        "2-5",
        "6-1",
        "6-2",
        "6-3",
    ]


def test_importing_it_loads_neither_django_nor_celery():
    probe = "import sys, ecast.trees; print(sorted(m for m in sys.modules if m.split('.')[0] in ('django','celery')))"
    done = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
