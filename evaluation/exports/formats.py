"""Writers of runs, qrels and per-query scores in the formats other IR tools read. Plain Python (no Django).

* TREC run ``qid Q0 docno rank score tag`` and TREC qrels ``qid 0 docno label`` — what trec_eval and ir_measures read.
* PyTerrier CSV: runs ``qid,docno,score,rank`` (ranks from 0, as PyTerrier numbers them), qrels ``qid,docno,label``,
  per-query scores ``name,qid,measure,value`` (the long table ``pt.Experiment(perquery=True)`` returns and its
  ``save_dir`` keeps).
* ranx JSON: ``{qid: {docno: score}}`` for runs, ``{qid: {docno: label}}`` for qrels (``ranx.Run.from_file`` /
  ``ranx.Qrels.from_file`` with kind json, or ``json.load`` straight into ir_measures).

Scores are written with ``repr``: the shortest text that reads back as the very same double, so a tie stays a tie and
every reader ranks the documents exactly as the stored scores do (score descending, then docno descending, as
trec_eval). Everything is produced in chunks of many lines, so a response streams a run of millions of lines with
flat memory; :func:`gzipped` compresses such a stream on the fly.
"""

from __future__ import annotations

import json
import re
import zlib
from collections.abc import Iterable, Iterator, Sequence

from ecast.core.csvfiles import csv_lines
from ecast.core.errors import DomainError

# One ranking (a turn of a run): its qid, doc ids in rank order and their scores.
Ranking = tuple[str, Sequence[str], Sequence[float]]

LINES_PER_CHUNK = 2000
_WHITESPACE = re.compile(r"\s")
RUN_CSV_HEADER = ("qid", "docno", "score", "rank")
QRELS_CSV_HEADER = ("qid", "docno", "label")
PER_QUERY_HEADER = ("name", "qid", "measure", "value")


class ExportError(DomainError, ValueError):
    """Ids that the TREC formats cannot carry (whitespace would shift every column after it)."""


def run_tag(name: str) -> str:
    """The run name as a TREC tag: one whitespace-free token."""
    return _WHITESPACE.sub("_", name.strip()) or "run"


def _check_ids(qid: str, docs: Sequence[str]) -> None:
    # One search over the joined ids per ranking: cheap, and a stored id with a space would corrupt the file.
    if _WHITESPACE.search(qid) or _WHITESPACE.search("".join(docs)):
        bad = next((d for d in (qid, *docs) if _WHITESPACE.search(d)), qid)
        raise ExportError(f"TREC ids cannot contain whitespace: {bad!r}")


def _chunked(lines: Iterable[str], size: int = LINES_PER_CHUNK) -> Iterator[str]:
    buf: list[str] = []
    for line in lines:
        buf.append(line)
        if len(buf) >= size:
            yield "".join(buf)
            buf = []
    if buf:
        yield "".join(buf)


def trec_run_chunks(rankings: Iterable[Ranking], *, tag: str) -> Iterator[str]:
    """TREC run text (ranks from 1 in stored order, exact scores), in chunks of whole lines."""
    tag = run_tag(tag)

    def lines() -> Iterator[str]:
        for qid, docs, scores in rankings:
            _check_ids(qid, docs)
            for rank, (doc, score) in enumerate(zip(docs, scores, strict=True), start=1):
                yield f"{qid} Q0 {doc} {rank} {score!r} {tag}\n"

    return _chunked(lines())


def trec_tagged_chunks(rankings: Iterable[tuple[str, Ranking]]) -> Iterator[str]:
    """TREC run text where each ranking carries its own run tag (many runs in one file: split it by tag)."""

    def lines() -> Iterator[str]:
        for tag, (qid, docs, scores) in rankings:
            _check_ids(qid, docs)
            name = run_tag(tag)
            for rank, (doc, score) in enumerate(zip(docs, scores, strict=True), start=1):
                yield f"{qid} Q0 {doc} {rank} {score!r} {name}\n"

    return _chunked(lines())


def run_csv_chunks(rankings: Iterable[Ranking]) -> Iterator[str]:
    """PyTerrier results CSV ``qid,docno,score,rank`` (ranks from 0), cells spreadsheet-safe, in chunks."""

    def rows() -> Iterator[tuple[str, str, float, int]]:
        for qid, docs, scores in rankings:
            for rank, (doc, score) in enumerate(zip(docs, scores, strict=True)):
                yield qid, doc, score, rank

    return _chunked(_with_header(RUN_CSV_HEADER, rows()))


def _with_header(header: Sequence[str], rows: Iterable[Sequence[object]]) -> Iterator[str]:
    yield from csv_lines([header])
    yield from csv_lines(rows)


def ranx_json_chunks(groups: Iterable[tuple[str, Iterable[tuple[str, float | int]]]]) -> Iterator[str]:
    """ranx JSON ``{qid: {docno: value}}``, one query per chunk; floats exact (``json`` writes their ``repr``)."""
    dumps = json.dumps
    yield "{"
    first = True
    for qid, pairs in groups:
        body = ", ".join(f"{dumps(doc)}: {dumps(value)}" for doc, value in pairs)
        yield ("" if first else ",\n") + f"{dumps(qid)}: {{{body}}}"
        first = False
    yield "}\n"


def run_ranx_chunks(rankings: Iterable[Ranking]) -> Iterator[str]:
    """A run as ranx JSON."""
    return ranx_json_chunks((qid, zip(docs, scores, strict=True)) for qid, docs, scores in rankings)


def qrels_trec_chunks(rows: Iterable[tuple[str, str, int]]) -> Iterator[str]:
    """TREC qrels ``qid 0 docno label``, in chunks."""

    def lines() -> Iterator[str]:
        for qid, doc, label in rows:
            _check_ids(qid, (doc,))
            yield f"{qid} 0 {doc} {int(label):d}\n"

    return _chunked(lines())


def qrels_csv_chunks(rows: Iterable[tuple[str, str, int]]) -> Iterator[str]:
    """PyTerrier qrels CSV ``qid,docno,label``, in chunks."""
    return _chunked(_with_header(QRELS_CSV_HEADER, rows))


def qrels_ranx_chunks(rows: Iterable[tuple[str, str, int]]) -> Iterator[str]:
    """Qrels as ranx JSON; ``rows`` come grouped by qid."""

    def groups() -> Iterator[tuple[str, list[tuple[str, int]]]]:
        qid: str | None = None
        pairs: list[tuple[str, int]] = []
        for q, doc, label in rows:
            if q != qid:
                if qid is not None:
                    yield qid, pairs
                qid, pairs = q, []
            pairs.append((doc, int(label)))
        if qid is not None:
            yield qid, pairs

    return ranx_json_chunks(groups())


def per_query_csv_chunks(rows: Iterable[tuple[str, str, str, float]]) -> Iterator[str]:
    """The long per-query table ``name,qid,measure,value``, in chunks."""
    return _chunked(_with_header(PER_QUERY_HEADER, rows))


def gzipped(chunks: Iterable[str]) -> Iterator[bytes]:
    """A gzip stream of the UTF-8 text ``chunks``, compressed as it goes."""
    packer = zlib.compressobj(6, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    for chunk in chunks:
        data = packer.compress(chunk.encode("utf-8"))
        if data:
            yield data
    yield packer.flush()
