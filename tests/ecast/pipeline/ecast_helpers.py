"""Real CAsT turns by id with their manual rewrites, and the curated ECAsT paraphrase pairs joined to them. Shared by
the filter and few-shot tests and bench/bench_generation.py. Plain Python, no Django."""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass
from pathlib import Path

from tests.ecast.pipeline.cqr_helpers import FILES


@dataclass(frozen=True)
class CastTurn:
    """One CAsT turn: id, number, raw utterance, manual rewrite, organisers' automatic rewrite, response text."""

    turn_id: str
    number: int
    raw: str
    manual: str
    automatic: str
    response: str


def cast_topics(shared: Path, year: int) -> list[list[CastTurn]]:
    """Every evaluation conversation of a CAsT year, turns in order (2019's manual rewrites come from its TSV)."""
    manual: dict[str, str] = {}
    if year == 2019:
        topics = json.loads((shared / "cast/2019/evaluation_topics_v1.0.json").read_text())
        with (shared / "cast/2019/evaluation_topics_annotated_resolved_v1.0.tsv").open(newline="") as fh:
            manual = {row[0]: row[1] for row in csv.reader(fh, delimiter="\t") if row}
    else:
        topics = json.loads((shared / FILES[year]).read_text())
    return [
        [
            CastTurn(
                f"{topic['number']}_{turn['number']}",
                int(turn["number"]),
                turn["raw_utterance"],
                turn.get("manual_rewritten_utterance") or manual.get(f"{topic['number']}_{turn['number']}", ""),
                turn.get("automatic_rewritten_utterance", ""),
                turn.get("passage") or turn.get("canonical_passage") or "",
            )
            for turn in topic["turn"]
        ]
        for topic in topics
    ]


@dataclass(frozen=True)
class EcastPair:
    """A curated ECAsT pair and the manual rewrite m_i it paraphrases."""

    turn_id: str
    manual: str
    para_manual: str
    para_raw: str

    @property
    def topic(self) -> str:
        return self.turn_id.split("_")[0]


def ecast_pairs(shared: Path, years: tuple[int, ...] = (2019, 2020)) -> list[EcastPair]:
    """ECAsT pairs of the given CAsT years' evaluation turns that have a manual rewrite, in file order."""
    manual = {t.turn_id: t.manual for y in years for conv in cast_topics(shared, y) for t in conv if t.manual}
    with (shared / "ecast/ECAsT.csv").open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    return [
        EcastPair(r["TURN_ID"], manual[r["TURN_ID"]], r["MANUAL PARAPHRASE"].strip(), r["RAW PARAPHRASE"].strip())
        for r in rows
        if r["TURN_ID"] in manual
    ]
