"""TREC qrels ``qid iter docid grade``: the parse of the ``qrels`` and ``ptkb_qrels`` kinds, and the one qrels file
reader of imports, tests and benchmarks. Plain Python (no Django): the kinds' writers are evaluation's
(``evaluation.importers``), which registers them, since qrels rows live in evaluation."""

from __future__ import annotations

from pathlib import Path

from ecast.imports.parsing import Parsed, Progress, parse_file, text_lines


def parse_qrels(text: str, *, file: str, progress: Progress = None) -> Parsed:
    """TREC qrels ``qid iter docid grade``. Records (line, qid, docid, grade); duplicates with another grade fail."""
    p = Parsed(file)
    seen: dict[tuple[str, str], tuple[int, int]] = {}
    duplicates = 0
    lines = text_lines(text)
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


def read_qrels(path: Path, *, name: str | None = None) -> dict[str, dict[str, int]]:
    """A qrels file (plain or gzip) as ``{qid: {docid: grade}}``, read as imports read it; ImportFailed if bad."""
    qrels: dict[str, dict[str, int]] = {}
    for _n, qid, docid, grade in parse_file(parse_qrels, path, name=name).records:
        qrels.setdefault(qid, {})[docid] = grade
    return qrels
