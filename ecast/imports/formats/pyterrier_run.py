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
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from ecast.core.csvfiles import restore_cell
from ecast.imports.errors import row_error
from ecast.imports.formats.runs import Lines, RunSpooler, SpooledRun, parsed_run, spool_run_file, with_progress
from ecast.imports.parsing import Parsed, Progress
from ecast.imports.readers import LineReport

REQUIRED = ("qid", "docno", "score")
OPTIONAL = ("rank", "name", "query", "docid", "")
_WHITESPACE = re.compile(r"\s")


def header_of(text: str) -> list[str] | None:
    """The CSV header of a text when it is a PyTerrier results table (names ``qid``, ``docno`` and ``score``)."""
    return header_of_line(next((line for line in text.splitlines() if line.strip()), ""))


def header_of_line(first: str) -> list[str] | None:
    """The CSV header in a file's first non-blank line when it is a PyTerrier results table."""
    if "," not in first:
        return None
    try:
        names = [h.strip() for h in next(csv.reader([first]))]
    except csv.Error:
        return None
    return names if all(r in names for r in REQUIRED) else None


def pyterrier_run_lines(lines: Lines, report: LineReport, spooler: RunSpooler, *, file: str) -> SpooledRun:
    """Check and spool the (line number, line) of a PyTerrier results CSV, the line ends kept (a quoted cell may
    span lines); every bad row is an error with its (last) line."""
    at = [0]

    def texts() -> Iterator[str]:
        for n, line in lines:
            at[0] = n
            yield line

    reader = csv.reader(texts())
    header: list[str] | None = None
    tags: dict[str, int] = {}
    rows = 0
    col: dict[str, int] = {}
    last_qid: str | None = None
    docs: dict[str, float] = {}
    lines_of: dict[str, int] | None = None
    for values in reader:
        n = at[0]
        if not any(v.strip() for v in values):
            continue
        if header is None:
            header = [h.strip() for h in values]
            missing = [r for r in REQUIRED if r not in header]
            if missing:
                report.add(n, f"the header lacks column(s) {', '.join(missing)}; expected qid, docno, score[, rank]")
                break
            col = {name: header.index(name) for name in (*REQUIRED, "rank", "name") if name in header}
            ignored = [h for h in header if h not in REQUIRED and h not in OPTIONAL]
            if ignored:
                spooler.warnings.append(
                    row_error(file, n, f"column(s) {', '.join(ignored)} are not stored (ignored)", kind="ignored field")
                )
            continue
        rows += 1
        if len(values) != len(header):
            report.add(n, f"expected {len(header)} columns like the header, found {len(values)}")
            continue
        qid = restore_cell(values[col["qid"]].strip())
        docno = restore_cell(values[col["docno"]].strip())
        bad = next(
            (f"{what} {v!r}" for what, v in (("qid", qid), ("docno", docno)) if not v or _WHITESPACE.search(v)), ""
        )
        if bad:
            report.add(n, f"{bad} is empty or holds whitespace")
            continue
        score_s = values[col["score"]].strip()
        try:
            score = float(score_s)
        except ValueError:
            report.add(n, f"score {score_s!r} is not a number")
            continue
        if not math.isfinite(score):
            report.add(n, f"score {score_s!r} is not finite")
            continue
        if "rank" in col:
            rank_s = values[col["rank"]].strip()
            try:
                int(rank_s)
            except ValueError:
                report.add(n, f"rank {rank_s!r} is not an integer")
                continue
        if "name" in col:
            tag = restore_cell(values[col["name"]].strip())
            tags[tag] = tags.get(tag, 0) + 1
        if qid != last_qid:
            last_qid = qid
            docs, lines_of = spooler.turn(qid, n)
        previous = docs.get(docno)
        if previous is not None:
            spooler.duplicate(n, qid, docno)
            if score <= previous:
                continue
        elif lines_of is not None:
            lines_of[docno] = n
        docs[docno] = score
    if header is None:
        report.add(None, "the file is empty; expected a header qid,docno,score[,rank]")
    return spooler.finish(file=file, lines=rows, tags=tags)


def parse_pyterrier_run(text: str, *, file: str, progress: Progress = None) -> Parsed:
    """A PyTerrier results CSV held in memory, as a run (one ``RunData`` record); every bad row is an error with
    its line."""
    report = LineReport(file)
    with io.BytesIO() as spool:
        lines = with_progress(enumerate(io.StringIO(text, newline=""), start=1), progress, 0)
        run = pyterrier_run_lines(lines, report, RunSpooler(report, spool), file=file)
        return parsed_run(run, report, file=file)


def parse_pyterrier_run_file(
    path: Path, *, name: str, spool: IO[bytes], max_bytes: int | None = None, progress: Progress = None
) -> SpooledRun:
    """A PyTerrier results CSV (plain or gzip) streamed into ``spool`` with flat memory; ImportFailed with every bad
    row before anything is written."""
    return spool_run_file(pyterrier_run_lines, path, name=name, spool=spool, max_bytes=max_bytes, progress=progress)
