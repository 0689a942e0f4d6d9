"""Real CAsT 2019–2021 turns as CQR sees them, with their manual and automatic rewrites and the canonical response
text the files carry. Shared by tests/ecast/pipeline/test_cqr.py and bench/bench_cqr.py. Plain Python, no Django.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

from ecast.pipeline.cqr import CqrTurn

# CAsT 2020: the manual topics with the canonical passage text (the extended file); CAsT 2021 has it inline.
FILES = {
    2020: "cast/2020/2020_manual_evaluation_topics_v1.0_extended.json",
    2021: "cast/2021/2021_manual_evaluation_topics_v1.0.json",
}


def cast_turns(shared: Path, year: int) -> list[CqrTurn]:
    """Every evaluation turn of a CAsT year in conversation order; 2019's manual rewrites come from its TSV."""
    manual: dict[str, str] = {}
    if year == 2019:
        topics = json.loads((shared / "cast/2019/evaluation_topics_v1.0.json").read_text())
        with (shared / "cast/2019/evaluation_topics_annotated_resolved_v1.0.tsv").open(newline="") as fh:
            manual = {row[0]: row[1] for row in csv.reader(fh, delimiter="\t") if row}
    else:
        topics = json.loads((shared / FILES[year]).read_text())
    out: list[CqrTurn] = []
    for topic in topics:
        history: list[str] = []
        responses: list[str] = []
        for turn in topic["turn"]:
            turn_id = f"{topic['number']}_{turn['number']}"
            out.append(
                CqrTurn(
                    list(history),
                    turn["raw_utterance"],
                    list(responses),
                    turn.get("automatic_rewritten_utterance", ""),
                    turn.get("manual_rewritten_utterance") or manual.get(turn_id, ""),
                )
            )
            history.append(turn["raw_utterance"])
            responses.append(turn.get("passage") or turn.get("canonical_passage") or "")
    return out
