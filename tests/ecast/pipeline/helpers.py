"""The hand-labelled CAsT turns for preprocessing (data/cast_preprocess_labels.json) and their scoring.

Shared by tests/ecast/pipeline/test_preprocess_labels.py and bench/bench_preprocess.py. Plain Python, no Django.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

LABELS = Path(__file__).resolve().parent / "data" / "cast_preprocess_labels.json"
# Turns the issue names; each must come out exactly as labelled.
NAMED = ("117_5", "113_11", "115_11", "128_8", "127_5", "110_2", "99_6", "113_12", "120_4", "114_8", "111_1", "100_3")


def load(*, heldout: bool | None = False) -> list[dict[str, Any]]:
    """Labelled turns: the CAsT 2020 + 2021 set (heldout=False), the CAsT 2022 held-out set (True) or both (None)."""
    turns = json.loads(LABELS.read_text())["turns"]
    return [t for t in turns if heldout is None or bool(t.get("heldout")) == heldout]


@dataclass
class PR:
    """Precision and recall from true-positive, predicted and expected counts."""

    tp: int = 0
    predicted: int = 0
    expected: int = 0

    @property
    def precision(self) -> float:
        return self.tp / self.predicted if self.predicted else 1.0

    @property
    def recall(self) -> float:
        return self.tp / self.expected if self.expected else 1.0

    def add(self, predicted: Iterable[str], expected: Iterable[str]) -> None:
        p, e = Counter(predicted), Counter(expected)
        self.tp += sum((p & e).values())
        self.predicted += sum(p.values())
        self.expected += sum(e.values())


@dataclass
class Scores:
    """Per-category detection scores over a labelled set.

    feedback / revealment: parts (exact strings) set aside under that category; *_turns: whether a turn has any;
    negative: the turn-level negative-feedback flag; final: exact-match accuracy of the final question, over all
    turns and over the turns with more than the final question.
    """

    negative: PR
    feedback: PR
    revealment: PR
    feedback_turns: PR
    revealment_turns: PR
    final_all: tuple[int, int]
    final_multi: tuple[int, int]
    wrong: list[str]  # ids of turns with any difference


def score(preprocess: Callable[[str], Any], turns: list[dict[str, Any]]) -> Scores:
    """Run ``preprocess`` (text -> an object with final_question, feedback, revealment, negative_feedback)."""
    s = Scores(PR(), PR(), PR(), PR(), PR(), (0, 0), (0, 0), [])
    for t in turns:
        r = preprocess(t["raw"])
        s.negative.add(["x"] if r.negative_feedback else [], ["x"] if t["negative_feedback"] else [])
        s.feedback.add(r.feedback, t["feedback"])
        s.revealment.add(r.revealment, t["revealment"])
        s.feedback_turns.add(["x"] if r.feedback else [], ["x"] if t["feedback"] else [])
        s.revealment_turns.add(["x"] if r.revealment else [], ["x"] if t["revealment"] else [])
        ok = r.final_question == t["final_question"]
        s.final_all = (s.final_all[0] + ok, s.final_all[1] + 1)
        if t["final_question"] != " ".join(t["raw"].split()):
            s.final_multi = (s.final_multi[0] + ok, s.final_multi[1] + 1)
        same = (
            ok
            and r.feedback == t["feedback"]
            and r.revealment == t["revealment"]
            and r.negative_feedback == t["negative_feedback"]
        )
        if not same:
            s.wrong.append(t["id"])
    return s
