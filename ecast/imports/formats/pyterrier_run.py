"""PyTerrier results CSV ``qid,docno,score,rank`` (optional ``name``, ``query``, ``docid`` and an unnamed index
column, as ``DataFrame.to_csv`` writes them): a second file format of the ``run`` kind. Plain Python (no Django).

Read into the same ``RunData`` as a TREC run, deduplicated and ranked the same way (the ``rank`` column is checked
but, as in TREC runs, the ranking comes from the scores). Cells the app's CSV writer made spreadsheet-safe are
restored (``ecast.core.csvfiles``), so a run downloaded as CSV imports back unchanged; a ``name`` column gives the
run its name as a TREC tag would.
"""

from __future__ import annotations

import csv
import io
import math
import re

from ecast.core.csvfiles import restore_cell
from ecast.imports.formats.runs import run_parsed
from ecast.imports.parsing import Parsed, Progress

REQUIRED = ("qid", "docno", "score")
OPTIONAL = ("rank", "name", "query", "docid", "")
_WHITESPACE = re.compile(r"\s")


def header_of(text: str) -> list[str] | None:
    """The CSV header of a text when it is a PyTerrier results table (names ``qid``, ``docno`` and ``score``)."""
    first = next((line for line in text.splitlines() if line.strip()), "")
    if "," not in first:
        return None
    try:
        names = [h.strip() for h in next(csv.reader([first]))]
    except csv.Error:
        return None
    return names if all(r in names for r in REQUIRED) else None


def parse_pyterrier_run(text: str, *, file: str, progress: Progress = None) -> Parsed:
    """A PyTerrier results CSV as a run (one ``RunData`` record); every bad row is an error with its line."""
    p = Parsed(file)
    reader = csv.reader(io.StringIO(text, newline=""))
    header: list[str] | None = None
    best: dict[str, dict[str, float]] = {}
    first_line: dict[str, int] = {}
    tags: dict[str, int] = {}
    duplicates, rows = 0, 0
    dup_examples: list[str] = []
    col: dict[str, int] = {}
    for values in reader:
        n = reader.line_num
        if not any(v.strip() for v in values):
            continue
        if header is None:
            header = [h.strip() for h in values]
            missing = [r for r in REQUIRED if r not in header]
            if missing:
                p.error(n, f"the header lacks column(s) {', '.join(missing)}; expected qid, docno, score[, rank]")
                break
            col = {name: header.index(name) for name in (*REQUIRED, "rank", "name") if name in header}
            ignored = [h for h in header if h not in REQUIRED and h not in OPTIONAL]
            if ignored:
                p.warn(n, f"column(s) {', '.join(ignored)} are not stored (ignored)", kind="ignored field")
            continue
        rows += 1
        if progress and rows % 20000 == 0:
            progress(rows, 0)
        if len(values) != len(header):
            p.error(n, f"expected {len(header)} columns like the header, found {len(values)}")
            continue
        qid = restore_cell(values[col["qid"]].strip())
        docno = restore_cell(values[col["docno"]].strip())
        bad = next(
            (f"{what} {v!r}" for what, v in (("qid", qid), ("docno", docno)) if not v or _WHITESPACE.search(v)), ""
        )
        if bad:
            p.error(n, f"{bad} is empty or holds whitespace")
            continue
        score_s = values[col["score"]].strip()
        try:
            score = float(score_s)
        except ValueError:
            p.error(n, f"score {score_s!r} is not a number")
            continue
        if not math.isfinite(score):
            p.error(n, f"score {score_s!r} is not finite")
            continue
        if "rank" in col:
            rank_s = values[col["rank"]].strip()
            try:
                int(rank_s)
            except ValueError:
                p.error(n, f"rank {rank_s!r} is not an integer")
                continue
        if "name" in col:
            tag = restore_cell(values[col["name"]].strip())
            tags[tag] = tags.get(tag, 0) + 1
        docs = best.get(qid)
        if docs is None:
            docs = best[qid] = {}
            first_line[qid] = n
        previous = docs.get(docno)
        if previous is not None:
            duplicates += 1
            if len(dup_examples) < 20:
                dup_examples.append(f"line {n}: {qid} {docno}")
            if score <= previous:
                continue
        docs[docno] = score
    if header is None:
        p.error(None, "the file is empty; expected a header qid,docno,score[,rank]")
    if p.errors:
        best = {}
    return run_parsed(p, best, first_line, tags, duplicates, dup_examples, lines=rows)
