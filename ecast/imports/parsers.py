"""Parsers and validators for every import format. Plain Python (no Django): text in, records + errors out.

Each parser collects every bad row as {file, line, reason} instead of stopping at the first, so an import report
lists all problems at once. Line numbers are 1-based physical lines of the (decompressed) file. ``read_run`` and
``read_qrels`` read a file into plain dicts by the same rules: the one reader of imports, tests and benchmarks.
"""

from __future__ import annotations

import bisect
import csv
import io
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import accumulate
from operator import itemgetter
from pathlib import Path
from typing import Any
from xml.etree.ElementTree import Element, ParseError

from defusedxml import DefusedXmlException
from defusedxml.ElementTree import fromstring as safe_fromstring

from ecast.core.csvfiles import restore_cell
from ecast.imports.errors import ImportFailed, row_error
from ecast.imports.readers import read_text

Progress = Callable[[int, int], None] | None
TURN_ID = re.compile(r"^\d+_\d+(-\d+)?$")  # 31_2; CAsT 2022 trees: 132_1-3 (branch-aware)
UTTERANCE_CLASSES = ("SE", "FT", "PT")
# trec_eval ranks by score descending and breaks ties by docid descending (strcmp on the docno); the importer
# recomputes ranks the same way so stored rank order is exactly what trec_eval would evaluate.
RANK_TIE_BREAK = "score descending, then docid descending (trec_eval's order)"


@dataclass
class Parsed:
    """What a parser found: records, errors (block the import), warnings (reported only) and counts."""

    file: str
    records: list[Any] = field(default_factory=list)
    errors: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[dict[str, Any]] = field(default_factory=list)
    counts: dict[str, Any] = field(default_factory=dict)

    def error(self, line: int | None, reason: str) -> None:
        self.errors.append(row_error(self.file, line, reason))

    def warn(self, line: int | None, reason: str, *, kind: str = "") -> None:
        self.warnings.append(row_error(self.file, line, reason, kind=kind))


def _lines(text: str) -> list[str]:
    # splitlines() also drops the \r of CRLF files (the CAsT 2019 resolved TSV is CRLF).
    return text.splitlines()


class LineIndex:
    """Offset → 1-based line number (for errors in files parsed as a whole: JSON, XML)."""

    def __init__(self, text: str):
        # From the lengths of the lines rather than a test of every character (that was most of parsing topics).
        ends = list(accumulate(len(line) + 1 for line in text.split("\n")))
        self.newlines = [end - 1 for end in ends[:-1]]

    def __call__(self, offset: int) -> int:
        return bisect.bisect_right(self.newlines, offset - 1) + 1


# ---------------------------------------------------------------- simple TSVs


def _tsv_rows(p: Parsed, text: str, ncols: int, *, header: tuple[str, ...] | None = None, progress: Progress = None):
    lines = _lines(text)
    total = len(lines)
    for n, line in enumerate(lines, start=1):
        if progress and n % 5000 == 0:
            progress(n, total)
        if not line.strip():
            continue
        cols = line.rstrip("\t").split("\t")
        if header and n == 1 and tuple(c.strip().lower() for c in cols) == header:
            continue
        if len(cols) != ncols:
            p.error(n, f"expected {ncols} tab-separated columns, found {len(cols)}")
            continue
        yield n, [c.strip() for c in cols]


def _check_turn_id(p: Parsed, n: int, value: str) -> bool:
    if not TURN_ID.match(value):
        p.error(n, f"{value!r} is not a turn id of the form <topic>_<turn>")
        return False
    return True


def parse_resolved_tsv(text: str, *, file: str) -> Parsed:
    """CAsT 2019 resolved utterances: ``turn_id<TAB>manual rewrite`` (CRLF). Records (line, turn_id, text)."""
    p = Parsed(file)
    seen: dict[str, int] = {}
    for n, (turn_id, rewrite) in _tsv_rows(p, text, 2):
        if not _check_turn_id(p, n, turn_id):
            continue
        if not rewrite:
            p.error(n, f"{turn_id}: empty rewrite")
            continue
        if turn_id in seen:
            p.error(n, f"{turn_id}: already given on line {seen[turn_id]}")
            continue
        seen[turn_id] = n
        p.records.append((n, turn_id, rewrite))
    p.counts = {"rewrites": len(p.records)}
    return p


def parse_utterance_labels(text: str, *, file: str) -> Parsed:
    """SE/FT/PT labels (Mele et al. 2021): ``qid<TAB>utterance<TAB>SE|FT|PT``. Records (line, qid, label)."""
    p = Parsed(file)
    seen: dict[str, int] = {}
    for n, (qid, _utterance, label) in _tsv_rows(p, text, 3):
        if not _check_turn_id(p, n, qid):
            continue
        if label.upper() not in UTTERANCE_CLASSES:
            p.error(n, f"{qid}: label {label!r} is not one of SE, FT, PT")
            continue
        if qid in seen:
            p.error(n, f"{qid}: already labelled on line {seen[qid]}")
            continue
        seen[qid] = n
        p.records.append((n, qid, label.upper()))
    p.counts = {"labels": len(p.records)}
    return p


def parse_castur(text: str, *, file: str) -> Parsed:
    """CAsTUR: ``current_turn<TAB>relevant_turn`` with header; ``x`` = self-contained. Records (line, cur, rel|None)."""
    p = Parsed(file)
    for n, (current, relevant) in _tsv_rows(p, text, 2, header=("current_turn", "relevant_turn")):
        if not _check_turn_id(p, n, current):
            continue
        if relevant.lower() == "x":
            p.records.append((n, current, None))
            continue
        if not _check_turn_id(p, n, relevant):
            continue
        if relevant.split("_")[0] != current.split("_")[0]:
            p.error(n, f"{current}: relevant turn {relevant} belongs to another topic")
            continue
        if int(relevant.split("_")[1]) >= int(current.split("_")[1]):
            p.error(n, f"{current}: relevant turn {relevant} is not an earlier turn")
            continue
        p.records.append((n, current, relevant))
    p.counts = {"rows": len(p.records)}
    return p


# ---------------------------------------------------------------- ECAsT release CSV

ECAST_HEADER = ["TURN_ID", "MANUAL PARAPHRASE", "RAW PARAPHRASE"]


def parse_ecast_csv(text: str, *, file: str) -> Parsed:
    """ECAsT CSV ``TURN_ID,MANUAL PARAPHRASE,RAW PARAPHRASE``. Records (line, turn_id, manual, raw)."""
    p = Parsed(file)
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader)
    except (StopIteration, csv.Error) as exc:
        p.error(1, f"cannot read the CSV header: {exc}")
        return p
    if [h.strip().upper() for h in header] != ECAST_HEADER:
        p.error(1, f"header must be {','.join(ECAST_HEADER)}, found {','.join(header)}")
        return p
    start = reader.line_num + 1
    try:
        for row in reader:
            n = start
            start = reader.line_num + 1
            if not row or not any(c.strip() for c in row):
                continue
            if len(row) != 3:
                p.error(n, f"expected 3 columns (turn id, manual, raw), found {len(row)}")
                continue
            # Texts are kept byte for byte (some published rows end in a space) so a release round-trips exactly;
            # the apostrophe the app's CSV writer puts before formula-like text is removed (ecast.core.csvfiles rule).
            turn_id, manual, raw = row[0].strip(), restore_cell(row[1]), restore_cell(row[2])
            if not _check_turn_id(p, n, turn_id):
                continue
            if not manual.strip() or not raw.strip():
                p.error(n, f"{turn_id}: empty {'manual' if not manual else 'raw'} paraphrase")
                continue
            p.records.append((n, turn_id, manual, raw))
    except csv.Error as exc:
        p.error(reader.line_num, f"malformed CSV: {exc}")
    p.counts = {"rows": len(p.records)}
    return p


# ---------------------------------------------------------------- qrels and runs


def _clean_qid(qid: str) -> str:
    return qid.strip()


def parse_qrels(text: str, *, file: str, progress: Progress = None) -> Parsed:
    """TREC qrels ``qid iter docid grade``. Records (line, qid, docid, grade); duplicates with another grade fail."""
    p = Parsed(file)
    seen: dict[tuple[str, str], tuple[int, int]] = {}
    duplicates = 0
    lines = _lines(text)
    for n, line in enumerate(lines, start=1):
        if progress and n % 10000 == 0:
            progress(n, len(lines))
        cols = line.split()
        if not cols:
            continue
        if len(cols) != 4:
            p.error(n, f"expected 4 columns 'qid iter docid grade', found {len(cols)}")
            continue
        qid, _iter, docid, grade_s = cols
        try:
            grade = int(grade_s)
        except ValueError:
            p.error(n, f"grade {grade_s!r} is not an integer")
            continue
        if not -1 <= grade <= 10:
            p.error(n, f"grade {grade} is outside -1..10")
            continue
        key = (qid, docid)
        if key in seen:
            first_line, first_grade = seen[key]
            if first_grade != grade:
                p.error(n, f"{qid} {docid}: grade {grade} contradicts grade {first_grade} on line {first_line}")
            else:
                duplicates += 1
            continue
        seen[key] = (n, grade)
        p.records.append((n, qid, docid, grade))
    p.counts = {"qrels": len(p.records), "duplicate_lines": duplicates, "turns": len({r[1] for r in p.records})}
    return p


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
    lines = _lines(text)
    total = len(lines)
    blank = 0
    isfinite = math.isfinite
    # Lines of one qid come together: its dict is looked up again only when the qid changes.
    last_qid: str | None = None
    docs: dict[str, float] = {}
    for n, line in enumerate(lines, start=1):
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
    nonblank = total - blank
    rankings: dict[str, tuple[list[str], list[float]]] = {}
    for qid, docs in best.items():
        # Two stable sorts give (score desc, docid desc) without building composite keys for mixed types.
        ordered = sorted(docs.items(), key=itemgetter(0), reverse=True)
        ordered.sort(key=itemgetter(1), reverse=True)
        rankings[qid] = ([d for d, _ in ordered], [s for _, s in ordered])
    report = {
        "lines": nonblank,
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


def read_qrels(path: Path, *, name: str | None = None) -> dict[str, dict[str, int]]:
    """A qrels file (plain or gzip) as ``{qid: {docid: grade}}``, read as imports read it; ImportFailed if bad."""
    name = name or path.name
    parsed = parse_qrels(read_text(path, name=name), file=name)
    if parsed.errors:
        raise ImportFailed(parsed.errors)
    qrels: dict[str, dict[str, int]] = {}
    for _n, qid, docid, grade in parsed.records:
        qrels.setdefault(qid, {})[docid] = grade
    return qrels


def read_run(path: Path, *, name: str | None = None) -> dict[str, dict[str, float]]:
    """A TREC run file (plain or gzip) as ``{qid: {docid: score}}``, read as imports read it; ImportFailed if bad."""
    # Same parser as the import, so a duplicated (qid, docid) keeps its best score here too.
    name = name or path.name
    parsed = parse_run(read_text(path, name=name), file=name)
    if parsed.errors:
        raise ImportFailed(parsed.errors)
    data: RunData = parsed.records[0]
    return {qid: dict(zip(docs, scores, strict=True)) for qid, (docs, scores) in data.rankings.items()}


# ---------------------------------------------------------------- passages and ad hoc queries


def _add_passage(p: Parsed, seen: dict[str, int], n: int, pid: str, body: str) -> None:
    if not pid:
        p.error(n, "empty passage id")
    elif len(pid) > 200:
        p.error(n, f"passage id longer than 200 characters: {pid[:40]}…")
    elif not body:
        p.error(n, f"{pid}: empty passage text")
    elif pid in seen:
        p.counts["duplicates"] = p.counts.get("duplicates", 0) + 1
    else:
        seen[pid] = n
        p.records.append((n, pid, body))


def parse_crowd_passages(text: str, *, file: str) -> Parsed:
    """MTurk batch CSV with ``Input.passage_id`` and ``Input.passage`` (CAsT-snippets); first text per id wins."""
    p = Parsed(file)
    reader = csv.DictReader(io.StringIO(text, newline=""))
    fields = reader.fieldnames or []
    if "Input.passage_id" not in fields or "Input.passage" not in fields:
        p.error(1, "CSV header lacks the columns Input.passage_id and Input.passage")
        return p
    seen: dict[str, int] = {}
    start = reader.line_num + 1
    rows = 0
    try:
        for row in reader:
            n = start
            start = reader.line_num + 1
            rows += 1
            pid = (row.get("Input.passage_id") or "").strip()
            body = " ".join((row.get("Input.passage") or "").split())
            _add_passage(p, seen, n, pid, body)
    except csv.Error as exc:
        p.error(reader.line_num, f"malformed CSV: {exc}")
    p.counts = {"passages": len(p.records), "rows": rows, **p.counts}
    return p


# CLEF eHealth topics come in two layouts: 2016–2018 ``<queries><query><id>…</id><en>…</en>…</query>`` (the query
# text in <en>, or <title>) and 2021 ``<topics><topic><id>…</id><query>…</query><narrative>…</narrative></topic>``.
CLEF_LAYOUTS = {"topic": ("query",), "query": ("en", "title")}
_XML_DECLARATIONS = re.compile(r"<!(DOCTYPE|ENTITY)\b", re.I)
_XML_POSITION = re.compile(r":? line \d+, column \d+$")
# "&" not starting an entity or character reference: the organisers' 2021 narratives hold a few bare ones.
_BARE_AMPERSAND = re.compile(r"&(?!(?:#\d+|#x[0-9a-fA-F]+|[A-Za-z_][\w.-]*);)")


def _xml_element(block: str) -> Element:
    """One element, parsed by the standard library's parser through defusedxml (no DTD, no entity expansion)."""
    return safe_fromstring(_BARE_AMPERSAND.sub("&amp;", block), forbid_dtd=True)


def _xml_text(element: Element | None) -> str:
    return " ".join("".join(element.itertext()).split()) if element is not None else ""


def parse_clef_queries(text: str, *, file: str) -> Parsed:
    """CLEF eHealth topics, 2016–2018 ``<queries><query><id>…</id><en>…</en>`` or 2021 ``<topics><topic><id>…</id>
    <query>…</query>``. Records (line, qid, text), the line being that of the element's opening tag.

    Each <query>/<topic> element is parsed on its own (XML, no DTD or entities), so one malformed element is
    reported with its line and the others are still checked; a bare "&" in a text is read as itself, as the
    organisers meant it.
    """
    p = Parsed(file)
    declaration = _XML_DECLARATIONS.search(text)
    if declaration:
        n = text.count("\n", 0, declaration.start()) + 1
        p.error(n, "a DTD or entity declaration (<!DOCTYPE, <!ENTITY) is not allowed in a topics file")
        return p
    tag = "topic" if re.search(r"<topic\b", text) else "query" if re.search(r"<query\b", text) else ""
    if not tag:
        p.error(None, "no <topic> or <query> elements found; expected CLEF eHealth topics (XML)")
        return p
    opening = re.compile(rf"<{tag}\b[^>]*>")
    closing = re.compile(rf"</{tag}\s*>")
    line_of = LineIndex(text)
    seen: dict[str, int] = {}
    pos = 0
    while match := opening.search(text, pos):
        n = line_of(match.start())
        close = closing.search(text, match.end())
        following = opening.search(text, match.end())
        if close is None or (following is not None and following.start() < close.start()):
            until = f"the next <{tag}>" if following else "the end of the file"
            p.error(n, f"<{tag}> is not closed before {until}")
            if following is None:
                break
            pos = following.start()
            continue
        pos = close.end()
        try:
            element = _xml_element(text[match.start() : close.end()])
        except (ParseError, DefusedXmlException) as exc:
            row = getattr(exc, "position", (1, 0))[0]
            reason = _XML_POSITION.sub("", str(exc))  # the position is the element's, not the file's: the line says it
            p.error(n + row - 1, f"<{tag}> is not well-formed XML: {reason}")
            continue
        qid = _xml_text(element.find("id"))
        body = next((t for t in (_xml_text(element.find(k)) for k in CLEF_LAYOUTS[tag]) if t), "")
        wanted = " or ".join(f"<{k}>" for k in CLEF_LAYOUTS[tag])
        if not qid:
            p.error(n, f"<{tag}> without an <id>")
        elif not body:
            p.error(n, f"{tag} {qid}: no query text in {wanted}")
        elif qid in seen:
            p.error(n, f"{tag} {qid} appears twice (first on line {seen[qid]})")
        else:
            seen[qid] = n
            p.records.append((n, qid, body))
    p.counts = {"queries": len(p.records)}
    return p


def read_queries_map(parsed: Parsed) -> dict[str, str]:
    """qid → query text from a parsed queries file (TSV or CLEF)."""
    return {qid: body for _n, qid, body in parsed.records}


def parse_queries_tsv(text: str, *, file: str) -> Parsed:
    """Queries as ``qid<TAB>text``. Records (line, qid, text)."""
    p = Parsed(file)
    for n, line in enumerate(_lines(text), start=1):
        if not line.strip():
            continue
        if "\t" not in line:
            p.error(n, "expected 'qid<TAB>text'")
            continue
        qid, body = line.split("\t", 1)
        p.records.append((n, qid.strip(), body.strip()))
    return p
