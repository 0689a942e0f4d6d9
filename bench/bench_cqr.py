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


def main() -> None:
    print(f"{'year':<6}{'turns':>6}{'raw':>8}{'organisers':>12}{'rule':>8}{'rule, turns only':>18}{'best':>8}  picked")
    for year in (2019, 2020, 2021):
        turns = cast_turns(SHARED, year)
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
