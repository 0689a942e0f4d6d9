"""TREC runs ``qid Q0 docid rank score tag``: the parse of the ``run`` kind, and the one run file reader of imports,
tests and benchmarks. Plain Python (no Django): the kind's writer is evaluation's (``evaluation.importers``), which
registers it, since runs live in evaluation."""

from __future__ import annotations

import math
from dataclasses import dataclass
from operator import itemgetter
from pathlib import Path
from typing import Any

from ecast.imports.parsing import Parsed, Progress, iter_lines, line_count, parse_file

# trec_eval ranks by score descending and breaks ties by docid descending (strcmp on the docno); the importer
# recomputes ranks the same way so stored rank order is exactly what trec_eval would evaluate.
RANK_TIE_BREAK = "score descending, then docid descending (trec_eval's order)"


@dataclass
class RunData:
    """A normalised run: per qid, doc ids and scores in rank order, plus the import report."""

    rankings: dict[str, tuple[list[str], list[float]]]
    first_line: dict[str, int]
    report: dict[str, Any]


def parse_run(text: str, *, file: str, progress: Progress = None) -> Parsed:
    """TREC run ``qid Q0 docid rank score tag``; deduplicated (best score kept) and re-ranked by trec_eval's order.

    The single record is a ``RunData``. Column 2 may be Q0/q0/0; the file's ranks are ignored (several public runs
    start at 0 or disagree with their scores) because trec_eval itself ranks by score.
    """
    p = Parsed(file)
    best: dict[str, dict[str, float]] = {}
    first_line: dict[str, int] = {}
    duplicates = 0
    dup_examples: list[str] = []
    tags: dict[str, int] = {}
    total = line_count(text)
    blank = 0
    isfinite = math.isfinite
    # Lines of one qid come together: its dict is looked up again only when the qid changes.
    last_qid: str | None = None
    docs: dict[str, float] = {}
    for n, line in enumerate(iter_lines(text), start=1):
        if progress and n % 20000 == 0:
            progress(n, total)
        cols = line.split()
        if len(cols) != 6:
            if cols:
                p.error(n, f"expected 6 columns 'qid Q0 docid rank score tag', found {len(cols)}")
            else:
                blank += 1
            continue
        qid, q0, docid, rank_s, score_s, tag = cols
        if q0 != "Q0" and q0 not in ("q0", "0"):
            p.error(n, f"column 2 must be Q0 (or q0 / 0), found {q0!r}")
            continue
        if not rank_s.isdecimal():  # decimal digits always parse; anything else (a sign, junk) is tried
            try:
                int(rank_s)
            except ValueError:
                p.error(n, f"rank {rank_s!r} is not an integer")
                continue
        try:
            score = float(score_s)
        except ValueError:
            p.error(n, f"score {score_s!r} is not a number")
            continue
        if not isfinite(score):
            p.error(n, f"score {score_s!r} is not finite")
            continue
        tags[tag] = tags.get(tag, 0) + 1
        if qid != last_qid:
            last_qid = qid
            found = best.get(qid)
            if found is None:
                found = best[qid] = {}
                first_line[qid] = n
            docs = found
        previous = docs.get(docid)
        if previous is not None:
            duplicates += 1
            if len(dup_examples) < 20:
                dup_examples.append(f"line {n}: {qid} {docid}")
            if score <= previous:
                continue
        docs[docid] = score
    return run_parsed(p, best, first_line, tags, duplicates, dup_examples, lines=total - blank)


def run_parsed(
    p: Parsed,
    best: dict[str, dict[str, float]],
    first_line: dict[str, int],
    tags: dict[str, int],
    duplicates: int,
    dup_examples: list[str],
    *,
    lines: int,
) -> Parsed:
    """``p`` completed with the ``RunData`` of best scores per (qid, docid): ranked in trec_eval's order, with the
    import report (shared by every run format, so all of them rank and report alike)."""
    rankings: dict[str, tuple[list[str], list[float]]] = {}
    for qid, docs in best.items():
        # Two stable sorts give (score desc, docid desc) without building composite keys for mixed types.
        ordered = sorted(docs.items(), key=itemgetter(0), reverse=True)
        ordered.sort(key=itemgetter(1), reverse=True)
        rankings[qid] = ([d for d, _ in ordered], [s for _, s in ordered])
    report = {
        "lines": lines,
        "duplicate_lines": duplicates,
        "duplicate_examples": dup_examples,
        "tags": sorted(tags, key=lambda t: -tags[t]),
        "queries": len(rankings),
        "documents": sum(len(d) for d, _ in rankings.values()),
        "rank_tie_break": RANK_TIE_BREAK,
    }
    if duplicates:
        p.warn(
            None,
            f"{duplicates} duplicate (qid, docid) line(s): kept the best-scored line of each",
            kind="duplicate lines",
        )
    if not rankings and not p.errors:
        p.error(None, "no ranking lines found")
    p.records.append(RunData(rankings=rankings, first_line=first_line, report=report))
    p.counts = {"queries": len(rankings), "documents": report["documents"], "duplicate_lines": duplicates}
    return p


def read_run(path: Path, *, name: str | None = None) -> dict[str, dict[str, float]]:
    """A TREC run file (plain or gzip) as ``{qid: {docid: score}}``, read as imports read it; ImportFailed if bad."""
    # Same parser as the import, so a duplicated (qid, docid) keeps its best score here too.
    data: RunData = parse_file(parse_run, path, name=name).records[0]
    return {qid: dict(zip(docs, scores, strict=True)) for qid, (docs, scores) in data.rankings.items()}
