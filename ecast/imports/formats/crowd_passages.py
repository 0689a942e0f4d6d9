"""Passage texts from MTurk batch CSVs (the ``crowd_passages`` kind, CAsT-snippets): the ``Input.passage_id`` and
``Input.passage`` columns of one file or of every ``*.csv`` / ``*.csv.gz`` in a folder; the first text of an id wins."""

from __future__ import annotations

import csv
import io

from django.db import transaction

from ecast.imports.parsing import Parsed
from ecast.imports.writing import Context, Result, passages_upsert, raise_if


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


def _write_passages(ctx: Context, parsed: Parsed) -> Result:
    raise_if(parsed.errors)
    with transaction.atomic():
        created, updated = passages_upsert(
            ((pid, body) for _n, pid, body in parsed.records), source=ctx.name, collection=ctx.collection
        )
    counts = {**parsed.counts, "passages_created": created, "passages_updated": updated}
    return Result(counts=counts, collection=ctx.collection)


def write_crowd_passages(ctx: Context) -> Result:
    """Passage texts from MTurk batch CSVs (one file, or every *.csv / *.csv.gz in a folder)."""
    files = sorted(ctx.path.glob("*.csv*")) if ctx.path.is_dir() else [ctx.path]
    merged = Parsed(ctx.name)
    seen: set[str] = set()
    for f in files:
        name = f.name if ctx.path.is_dir() else ctx.name
        one = parse_crowd_passages(ctx.text(f, name), file=name)
        merged.errors += one.errors
        merged.counts["rows"] = merged.counts.get("rows", 0) + one.counts.get("rows", 0)
        for rec in one.records:
            if rec[1] not in seen:
                seen.add(rec[1])
                merged.records.append(rec)
    merged.counts["files"] = len(files)
    return _write_passages(ctx, merged)
