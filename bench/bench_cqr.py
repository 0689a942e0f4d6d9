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

import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
SHARED = Path(os.environ.get("ECAST_SHARED_DATA", REPO.parent / "shared" / "data"))

from ecast.pipeline import cqr  # noqa: E402
from ecast.pipeline.bleu import corpus_bleu  # noqa: E402
from tests.ecast.pipeline.cqr_helpers import cast_turns  # noqa: E402


def cqr_rows(shared: Path = SHARED) -> list[dict]:
    """Per CAsT year: turns scored and the corpus BLEU vs m_i of raw, organisers, rule (with and without the
    responses) and best, and the backend best picked."""
    rows = []
    for year in (2019, 2020, 2021):
        turns = cast_turns(shared, year)
        scored = cqr.scored_turns(turns)
        refs = [t.manual for t in scored]
        bare = [cqr.CqrTurn(t.history, t.utterance, [], t.automatic_rewrite, t.manual) for t in scored]
        choice = cqr.choose(turns)
        scores = choice["scores"]
        rows.append(
            {
                "year": year,
                "turns": len(scored),
                "raw": scores["raw"],
                "organisers": corpus_bleu([t.automatic_rewrite for t in scored], refs) if year != 2019 else None,
                "rule": scores["rule"],
                "rule_turns_only": corpus_bleu(cqr.rewrites("rule", bare), refs) or 0.0,
                "best": scores[choice["use"]],
                "picked": choice["use"],
            }
        )
    return rows


def print_cqr_rows(rows: list[dict]) -> None:
    print(f"{'year':<6}{'turns':>6}{'raw':>8}{'organisers':>12}{'rule':>8}{'rule, turns only':>18}{'best':>8}  picked")
    for r in rows:
        organisers = "—" if r["organisers"] is None else f"{r['organisers']:.2f}"
        print(
            f"{r['year']:<6}{r['turns']:>6}{r['raw']:>8.2f}{organisers:>12}{r['rule']:>8.2f}"
            f"{r['rule_turns_only']:>18.2f}{r['best']:>8.2f}  {r['picked']}"
        )


def main() -> None:
    print_cqr_rows(cqr_rows())


if __name__ == "__main__":
    main()
