"""TREC runs ``qid Q0 docid rank score tag``: the parse of the ``run`` kind, and the one run file reader of imports,
tests and benchmarks. Plain Python (no Django): the kind's writer is evaluation's (``evaluation.importers``), which
registers it, since runs live in evaluation.

A run file can hold 20 M lines (MS MARCO dev runs hold 7 M), so an import never holds it whole: its lines stream
from the file (``LineStream``) and are checked one by one, and each turn's ranking, once its lines end, is ranked and
pickled into a spool file on disk (``RunSpooler``). Only a file with no bad line is written, from the spool, one turn
at a time; memory holds one turn's lines and a few numbers per turn, however long the file. Lines of a turn that
come back later in the file (a file not grouped by qid) are merged with the turn's earlier lines before anything is
written, with the duplicates counted as if the file had been read whole.
"""

from __future__ import annotations

import io
import math
import pickle
import tempfile
from collections.abc import Callable, Container, Iterable, Iterator
from dataclasses import dataclass, field
from itertools import islice
from operator import itemgetter
from pathlib import Path
from typing import IO, Any

from ecast.imports.errors import row_error
from ecast.imports.parsing import Parsed, Progress, iter_lines, line_count
from ecast.imports.readers import LineReport, LineStream

# trec_eval ranks by score descending and breaks ties by docid descending (strcmp on the docno); the importer
# recomputes ranks the same way so stored rank order is exactly what trec_eval would evaluate.
RANK_TIE_BREAK = "score descending, then docid descending (trec_eval's order)"
DUPLICATE_EXAMPLES = 20
Lines = Iterable[tuple[int, str]]


@dataclass
class RunData:
    """A normalised run held in memory: per qid, doc ids and scores in rank order, plus the import report."""

    rankings: dict[str, tuple[list[str], list[float]]]
    first_line: dict[str, int]
    report: dict[str, Any]


def ranked(docs: dict[str, float]) -> tuple[list[str], list[float]]:
    """Doc ids and their scores in trec_eval's order: score descending, then doc id descending."""
    # Two stable sorts give (score desc, docid desc) without building composite keys for mixed types.
    ordered = sorted(docs.items(), key=itemgetter(0), reverse=True)
    ordered.sort(key=itemgetter(1), reverse=True)
    return [d for d, _ in ordered], [s for _, s in ordered]


@dataclass
class SpooledRun:
    """A valid run's rankings on disk, one pickled (doc ids, scores) per turn in trec_eval's order, and its report."""

    spool: IO[bytes]
    offsets: dict[str, int]  # qid → where its ranking starts in the spool, in the order the qids first appear
    first_line: dict[str, int]
    sizes: dict[str, int]  # qid → documents in its ranking
    report: dict[str, Any]
    warnings: list[dict[str, Any]] = field(default_factory=list)

    def rankings(self, qids: Container[str] | None = None) -> Iterator[tuple[str, list[str], list[float]]]:
        """(qid, doc ids, scores) of each turn (of ``qids`` only, when given) in order of first appearance, read
        back one at a time."""
        spool, at = self.spool, -1
        for qid, offset in self.offsets.items():
            if qids is not None and qid not in qids:
                continue
            if offset != at:  # turns merged from scattered lines were spooled last
                spool.seek(offset)
            docs, scores = pickle.load(spool)  # noqa: S301 - our own spool, written by this process
            at = spool.tell()
            yield qid, docs, scores

    def data(self) -> RunData:
        """The whole run in memory (for readers of small runs: tests, benchmarks, exports read back)."""
        rankings = {qid: (docs, scores) for qid, docs, scores in self.rankings()}
        return RunData(rankings=rankings, first_line=self.first_line, report=self.report)


class RunSpooler:
    """Turns a run's valid lines, met in file order, into ranked turns in a spool.

    A parser calls ``turn`` when the qid changes and fills the dict it returns with the best score of each doc id
    (calling ``duplicate`` for a doc id met again in the same stretch of lines); for a qid met before, it also
    notes the line of each doc id's first line in the returned ``lines_of``. Once the report holds an error nothing
    more is spooled (the file will not be written), but the lines are still checked.
    """

    def __init__(self, report: LineReport, spool: IO[bytes]) -> None:
        self.report = report
        self.spool = spool
        self.first_line: dict[str, int] = {}
        self.segments: dict[str, list[int]] = {}  # qid → offsets of its stretches of lines in the spool
        self.sizes: dict[str, int] = {}
        self.duplicates = 0
        self.examples: list[tuple[int, str]] = []
        self.qid: str | None = None
        self.docs: dict[str, float] = {}
        self.lines_of: dict[str, int] | None = None
        self.warnings: list[dict[str, Any]] = []  # what a format warns of besides duplicates (ignored columns)

    def turn(self, qid: str, n: int) -> tuple[dict[str, float], dict[str, int] | None]:
        """Close the stretch being read and start one of ``qid``, met on line ``n``: its dict of best scores, and a
        dict for each doc id's first line when ``qid`` was met before (None otherwise)."""
        self._close()
        self.qid, self.docs = qid, {}
        if qid in self.first_line:
            self.lines_of = {}
        else:
            self.first_line[qid] = n
            self.lines_of = None
        return self.docs, self.lines_of

    def duplicate(self, n: int, qid: str, docid: str) -> None:
        self.duplicates += 1
        if len(self.examples) < DUPLICATE_EXAMPLES:
            self.examples.append((n, f"line {n}: {qid} {docid}"))

    def _dump(self, value: Any) -> int:
        offset = self.spool.tell()
        pickle.dump(value, self.spool, protocol=pickle.HIGHEST_PROTOCOL)
        return offset

    def _close(self) -> None:
        qid, docs = self.qid, self.docs
        self.qid, self.docs = None, {}
        if qid is None or self.report:
            return
        if self.lines_of is None:  # the qid's first stretch: ranked now, usually its only one
            ids, scores = ranked(docs)
            self.segments[qid] = [self._dump((ids, scores))]
            self.sizes[qid] = len(ids)
        else:
            self.segments[qid].append(self._dump((docs, self.lines_of)))

    def _load(self, offset: int) -> Any:
        self.spool.seek(offset)
        return pickle.load(self.spool)  # noqa: S301 - our own spool, written by this process

    def _merge(self, qid: str, offsets: list[int], examples: list[tuple[int, str]]) -> int:
        """Merge the stretches of a qid whose lines are scattered into one ranking, spooled at the end; its offset.
        A doc id of a later stretch met in an earlier one is a duplicate on the line where its stretch met it."""
        ids, scores = self._load(offsets[0])
        best = dict(zip(ids, scores, strict=True))
        for offset in offsets[1:]:
            docs, lines_of = self._load(offset)
            for docid, score in docs.items():
                previous = best.get(docid)
                if previous is None:
                    best[docid] = score
                    continue
                self.duplicates += 1
                examples.append((lines_of[docid], f"line {lines_of[docid]}: {qid} {docid}"))
                if score > previous:
                    best[docid] = score
            examples[:] = sorted(examples)[:DUPLICATE_EXAMPLES]
        self.spool.seek(0, io.SEEK_END)
        self.sizes[qid] = len(best)
        return self._dump(ranked(best))

    def finish(self, *, file: str, lines: int, tags: dict[str, int]) -> SpooledRun:
        """The spooled run with its report (``lines``: the file's ranking lines; ``tags``: lines per tag, in order
        of first appearance); "no ranking lines found" is an error of the report when there were none."""
        self._close()
        offsets: dict[str, int] = {}
        examples: list[tuple[int, str]] = []
        if not self.report:
            for qid, segments in self.segments.items():
                offsets[qid] = segments[0] if len(segments) == 1 else self._merge(qid, segments, examples)
        self.segments = {}
        if not offsets and not self.report:
            self.report.add(None, "no ranking lines found")
        documents = sum(self.sizes.values())
        report = {
            "lines": lines,
            "duplicate_lines": self.duplicates,
            "duplicate_examples": [text for _n, text in sorted(self.examples + examples)[:DUPLICATE_EXAMPLES]],
            "tags": sorted(tags, key=lambda t: -tags[t]),
            "queries": len(offsets),
            "documents": documents,
            "rank_tie_break": RANK_TIE_BREAK,
        }
        run = SpooledRun(self.spool, offsets, self.first_line, self.sizes, report, list(self.warnings))
        if self.duplicates:
            reason = f"{self.duplicates} duplicate (qid, docid) line(s): kept the best-scored line of each"
            run.warnings.append(row_error(file, None, reason, kind="duplicate lines"))
        return run


def trec_run_lines(lines: Lines, report: LineReport, spooler: RunSpooler, *, file: str) -> SpooledRun:
    """Check and spool the (line number, line) of a TREC run; column 2 may be Q0/q0/0, and the file's ranks are
    checked but ignored (several public runs start at 0 or disagree with their scores) because trec_eval itself
    ranks by score."""
    tags: dict[str, int] = {}
    blank = total = 0
    isfinite = math.isfinite
    add = report.add
    # Lines of one qid come together: its dict is looked up again only when the qid changes.
    last_qid: str | None = None
    docs: dict[str, float] = {}
    lines_of: dict[str, int] | None = None
    for n, line in lines:
        total = n
        cols = line.split()
        if len(cols) != 6:
            if cols:
                add(n, f"expected 6 columns 'qid Q0 docid rank score tag', found {len(cols)}")
            else:
                blank += 1
            continue
        qid, q0, docid, rank_s, score_s, tag = cols
        if q0 != "Q0" and q0 not in ("q0", "0"):
            add(n, f"column 2 must be Q0 (or q0 / 0), found {q0!r}")
            continue
        if not rank_s.isdecimal():  # decimal digits always parse; anything else (a sign, junk) is tried
            try:
                int(rank_s)
            except ValueError:
                add(n, f"rank {rank_s!r} is not an integer")
                continue
        try:
            score = float(score_s)
        except ValueError:
            add(n, f"score {score_s!r} is not a number")
            continue
        if not isfinite(score):
            add(n, f"score {score_s!r} is not finite")
            continue
        tags[tag] = tags.get(tag, 0) + 1
        if qid != last_qid:
            last_qid = qid
            docs, lines_of = spooler.turn(qid, n)
        previous = docs.get(docid)
        if previous is not None:
            spooler.duplicate(n, qid, docid)
            if score <= previous:
                continue
        elif lines_of is not None:
            lines_of[docid] = n
        docs[docid] = score
    return spooler.finish(file=file, lines=total - blank, tags=tags)


def with_progress(lines: Lines, progress: Progress, total: int, *, every: int = 20000) -> Lines:
    """``lines`` reporting ``progress(n, total)`` every ``every`` lines."""
    if progress is None:
        return lines
    return _reporting(lines, progress, total, every)


def _reporting(lines: Lines, progress: Callable[[int, int], None], total: int, every: int) -> Lines:
    for n, line in lines:
        if n % every == 0:
            progress(n, total)
        yield n, line


def parsed_run(run: SpooledRun, report: LineReport, *, file: str) -> Parsed:
    """A ``Parsed`` with the run's ``RunData`` (read back into memory) as its one record, for readers of text."""
    p = Parsed(file)
    p.errors = report.fail().errors if report else []
    p.warnings = list(run.warnings)
    p.records.append(run.data())
    p.counts = {key: run.report[key] for key in ("queries", "documents", "duplicate_lines")}
    return p


def parse_run(text: str, *, file: str, progress: Progress = None) -> Parsed:
    """TREC run ``qid Q0 docid rank score tag`` held in memory; deduplicated (best score kept) and re-ranked by
    trec_eval's order. The single record is a ``RunData``."""
    report = LineReport(file)
    with io.BytesIO() as spool:
        lines = with_progress(enumerate(iter_lines(text), start=1), progress, line_count(text) if progress else 0)
        run = trec_run_lines(lines, report, RunSpooler(report, spool), file=file)
        return parsed_run(run, report, file=file)


def parse_run_file(
    path: Path, *, name: str, spool: IO[bytes], max_bytes: int | None = None, progress: Progress = None
) -> SpooledRun:
    """A TREC run file (plain or gzip) streamed into ``spool`` with flat memory; ImportFailed with every bad line
    (the first ``MAX_ERRORS`` of them, then a count), before anything is written."""
    return spool_run_file(trec_run_lines, path, name=name, spool=spool, max_bytes=max_bytes, progress=progress)


def spool_run_file(
    read: Callable[..., SpooledRun],
    path: Path,
    *,
    name: str,
    spool: IO[bytes],
    max_bytes: int | None = None,
    progress: Progress = None,
) -> SpooledRun:
    """Stream ``path`` line by line through ``read`` (a run format's line reader) into ``spool``; ImportFailed with
    every bad line once the file is read, before anything is written."""
    report = LineReport(name)
    stream = LineStream(path=path, name=name, report=report, max_bytes=max_bytes, progress=progress)
    stream.open()
    run = read(stream, report, RunSpooler(report, spool), file=name)
    if report:
        raise report.fail()
    return run


def first_text_line(path: Path, *, name: str, max_bytes: int | None = None) -> str:
    """The first non-blank line of a (possibly gzipped) text file, read without reading the rest; the file's checks
    (size, empty, binary) raise ImportFailed as reading it would."""
    stream = LineStream(path=path, name=name, report=LineReport(name), max_bytes=max_bytes)
    stream.open()
    return next((line for _n, line in islice(stream, 10_000) if line.strip()), "")


def read_run(path: Path, *, name: str | None = None) -> dict[str, dict[str, float]]:
    """A TREC run file (plain or gzip) as ``{qid: {docid: score}}``, read as imports read it; ImportFailed if bad."""
    # Same parser as the import, so a duplicated (qid, docid) keeps its best score here too.
    with tempfile.TemporaryFile(prefix="ecast-run-") as spool:
        run = parse_run_file(path, name=name or path.name, spool=spool)
        return {qid: dict(zip(docs, scores, strict=True)) for qid, docs, scores in run.rankings()}
