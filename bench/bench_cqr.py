"""Benchmark of conversational query reformulation against the manual rewrites, per CAsT year.

For CAsT 2019, 2020 and 2021 (../shared/data/cast) it prints the corpus BLEU (``ecast.pipeline.bleu.corpus_bleu``)
of r_i against the manual rewrite m_i over every turn 2 or later that has one, for:

- raw: the utterance left alone (r_i = u_i);
- organisers: the automatic rewrite the topics file carries (CAsT 2020 and 2021; 2019 has none);
- rule: the rule resolver (``ecast.pipeline.resolver``), given the canonical responses where the files carry their
  text (CAsT 2020 via the extended topics file, CAsT 2021 inline), and without them ("rule, turns only");
- best: the default, ``ecast.pipeline.cqr.choose`` over the same turns, and which backend it picked.

Prints figures; asserts nothing. Usage: python bench/bench_cqr.py
"""

from __future__ import annotations

import csv
import json
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
SHARED = Path(os.environ.get("ECAST_SHARED_DATA", REPO.parent / "shared" / "data"))

from ecast.pipeline import cqr  # noqa: E402
from ecast.pipeline.bleu import corpus_bleu  # noqa: E402

FILES = {
    2020: "cast/2020/2020_manual_evaluation_topics_v1.0_extended.json",
    2021: "cast/2021/2021_manual_evaluation_topics_v1.0.json",
}


def cast_turns(year: int) -> list[cqr.CqrTurn]:
    """Every turn of a CAsT year as CQR sees it, with its manual rewrite, automatic rewrite and the earlier
    turns' canonical response text where the file has it."""
    if year == 2019:
        topics = json.loads((SHARED / "cast/2019/evaluation_topics_v1.0.json").read_text())
        with (SHARED / "cast/2019/evaluation_topics_annotated_resolved_v1.0.tsv").open(newline="") as fh:
            manual = {row[0]: row[1] for row in csv.reader(fh, delimiter="\t") if row}
    else:
        topics = json.loads((SHARED / FILES[year]).read_text())
        manual = {}
    out: list[cqr.CqrTurn] = []
    for topic in topics:
        history: list[str] = []
        responses: list[str] = []
        for turn in topic["turn"]:
            turn_id = f"{topic['number']}_{turn['number']}"
            out.append(
                cqr.CqrTurn(
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


def main() -> None:
    print(f"{'year':<6}{'turns':>6}{'raw':>8}{'organisers':>12}{'rule':>8}{'rule, turns only':>18}{'best':>8}  picked")
    for year in (2019, 2020, 2021):
        turns = cast_turns(year)
        scored = cqr.scored_turns(turns)
        refs = [t.manual for t in scored]
        organisers = corpus_bleu([t.automatic_rewrite for t in scored], refs) if year != 2019 else None
        bare = [cqr.CqrTurn(t.history, t.utterance, [], t.automatic_rewrite, t.manual) for t in scored]
        choice = cqr.choose(turns)
        scores = choice["scores"]
        print(
            f"{year:<6}{len(scored):>6}{scores['raw']:>8.2f}"
            f"{'—' if organisers is None else f'{organisers:.2f}':>12}{scores['rule']:>8.2f}"
            f"{corpus_bleu(cqr.rewrites('rule', bare), refs) or 0.0:>18.2f}"
            f"{scores[choice['use']]:>8.2f}  {choice['use']}"
        )


if __name__ == "__main__":
    main()
