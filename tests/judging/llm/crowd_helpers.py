"""Real human labels with text for the LLM judge: the crowd-annotated CAsT 2020 passages (Łajewska & Balog, CIKM
2023; ../shared/data/crowd/, one row per worker) with their NIST grades (``Input.relevance_score``), read once per
(turn, passage) with the CAsT 2020 turns they belong to. Used by the real-data tests and bench/bench_llm_judge.py."""

from __future__ import annotations

import csv
import gzip
import json
from dataclasses import dataclass
from pathlib import Path

CROWD = "crowd/cast2020_snippets_lajewska2023"
TOPICS = "cast/2020/2020_manual_evaluation_topics_v1.0.json"


@dataclass(frozen=True)
class CrowdPair:
    turn_id: str
    passage_id: str
    nist_grade: int
    text: str


def crowd_pairs(shared: Path) -> list[CrowdPair]:
    """Each (turn, passage) of the crowd files once, with its NIST grade and passage text, in file order."""
    seen: dict[tuple[str, str], CrowdPair] = {}
    for path in sorted((shared / CROWD).glob("*.csv.gz")):
        with gzip.open(path, "rt", encoding="utf-8", newline="") as handle:
            for row in csv.DictReader(handle):
                key = (row["Input.turn_id"], row["Input.passage_id"])
                if key not in seen:
                    seen[key] = CrowdPair(*key, int(row["Input.relevance_score"]), row["Input.passage"])
    return list(seen.values())


def cast2020_turns(shared: Path) -> dict[str, tuple[str, str, tuple[str, ...]]]:
    """{turn id: (raw utterance, manual rewrite, earlier raw utterances)} of the CAsT 2020 manual topics."""
    out: dict[str, tuple[str, str, tuple[str, ...]]] = {}
    for topic in json.loads((shared / TOPICS).read_text()):
        history: list[str] = []
        for turn in topic["turn"]:
            tid = f"{topic['number']}_{turn['number']}"
            out[tid] = (turn["raw_utterance"], turn.get("manual_rewritten_utterance", ""), tuple(history))
            history.append(turn["raw_utterance"])
    return out
