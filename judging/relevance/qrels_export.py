"""Plain qrels writing and judgment aggregation (no Django): TREC qrels lines ``qid 0 docid grade``.

Aggregation of several assessors' grades for one pair:
- ``majority``: the most frequent grade; a tie goes to the lowest tied grade (a pair is not credited with more
  relevance than a plurality of assessors saw);
- ``median``: the lower median (``statistics.median_low``), so the result is always a grade someone gave;
- ``primary``: the first judgment recorded for the pair (the topic's primary assessor).
"""

from __future__ import annotations

import re
import statistics
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from typing import TextIO

from ecast.core.errors import DomainError


class QrelsExportError(DomainError, ValueError):
    """Grades that cannot be aggregated or ids that cannot be written as TREC qrels."""


AGGREGATIONS = ("majority", "median", "primary")


def aggregate(grades: Sequence[int], method: str) -> int:
    """One grade from several assessors' grades, given oldest judgment first."""
    if not grades:
        raise QrelsExportError("cannot aggregate an empty list of grades")
    if method not in AGGREGATIONS:
        raise QrelsExportError(f"unknown aggregation {method!r}; expected one of {', '.join(AGGREGATIONS)}")
    if len(grades) == 1:
        return int(grades[0])
    if method == "primary":
        return int(grades[0])
    if method == "median":
        return int(statistics.median_low(grades))
    if method == "majority":
        counts = Counter(grades)
        top = max(counts.values())
        return int(min(g for g, c in counts.items() if c == top))
    raise QrelsExportError(f"unknown aggregation {method!r}; expected one of {', '.join(AGGREGATIONS)}")


_WHITESPACE = re.compile(r"\s")


def qrels_line(qid: str, docid: str, grade: int) -> str:
    """One TREC qrels line (iteration column 0), newline-terminated."""
    # An id with whitespace would silently shift the columns for every reader of the file.
    if _WHITESPACE.search(qid) or _WHITESPACE.search(docid):
        raise QrelsExportError(f"qrels ids cannot contain whitespace: {qid!r} {docid!r}")
    return f"{qid} 0 {docid} {int(grade)}\n"


def iter_qrels_chunks(rows: Iterable[tuple[str, str, int]], *, lines_per_chunk: int = 2000) -> Iterator[str]:
    """Qrels text in chunks of many lines, so a streamed response sends few, reasonably sized writes."""
    buf: list[str] = []
    checked_qid = None
    search = _WHITESPACE.search
    for qid, docid, grade in rows:
        # Same checks as qrels_line, cheaper: this loop is the export's hot path. The query id is checked once per
        # turn; a passage id gets the regex only when cheap string tests find a space, a control character or non-ASCII.
        if qid != checked_qid:
            if search(qid):
                raise QrelsExportError(f"qrels ids cannot contain whitespace: {qid!r}")
            checked_qid = qid
        if (" " in docid or not (docid.isascii() and docid.isprintable())) and search(docid):
            raise QrelsExportError(f"qrels ids cannot contain whitespace: {docid!r}")
        buf.append(f"{qid} 0 {docid} {grade:d}\n")
        if len(buf) >= lines_per_chunk:
            yield "".join(buf)
            buf = []
    if buf:
        yield "".join(buf)


def write_qrels(rows: Iterable[tuple[str, str, int]], out: TextIO) -> int:
    """Write rows to a text stream as TREC qrels; returns the number of lines written."""
    n = 0
    for chunk in iter_qrels_chunks(rows):
        out.write(chunk)
        n += chunk.count("\n")
    return n
