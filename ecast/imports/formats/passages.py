"""Passage texts, streamed: the ``passages_tsv`` and ``passages_jsonl`` import kinds (each line parsed, then written).

A corpus file can be MS MARCO-sized (8.8 M lines, 3 GB), so it is never read into memory: lines stream from the
file (gunzipped on the fly), each is validated, and the records to store go to a spool file on disk. Only when the
whole file is valid are they written, in batches inside one transaction, so a bad line anywhere means nothing is
written, and the database is locked for the writing only, not for the whole read.

With the option ``only_needed`` the import keeps only the texts of passages the collection needs: those that are
pooled, judged (any qrels version) or ranked by one of its runs; with no collection, those of every collection
(passage ids are corpus-wide). The needed ids are the only thing held in memory, so memory stays flat however long
the file is. The apps that own runs, qrels and pools register where the needed ids come from
(``needed_ids_register``); ecast never imports them. Without the option every passage of the file is stored.

Formats: TSV ``id<TAB>text`` (MS MARCO ``collection.tsv``; no header, exactly two fields a line: a line with more
fields, or a first line that is a header such as ``id<TAB>text``, is an error, so that no other TSV file is stored
as passages) and JSONL objects with an id (``id``, ``docid``,
``_id``, ``passage_id``, ``pid``) and a text (``contents``, ``text``, ``body``, ``passage``), plain or gzipped. TREC
iKAT's ``*_psg_text.jsonl`` objects ``{"doc_id", "passage_id", "passage_text"}`` are stored under the id its runs and
qrels use, ``<doc_id>:<passage_id>``.
"""

from __future__ import annotations

import json
import pickle
import tempfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from django.conf import settings
from django.db import connection, transaction

from ecast.imports.errors import ImportFailed, row_error
from ecast.imports.readers import LineReport, LineStream
from ecast.imports.writing import Context, Result, passages_upsert
from ecast.models import Collection

OPTIONS = ("only_needed",)
ID_KEYS = ("id", "docid", "_id", "passage_id", "pid")
TEXT_KEYS = ("contents", "text", "body", "passage")
IKAT_KEYS = ("doc_id", "passage_id", "passage_text")
# A first TSV line whose id or text is one of these names is a header, not a passage.
TSV_HEADER_IDS = {*ID_KEYS, "doc_id", "docno", "qid"}
TSV_HEADER_TEXTS = {*TEXT_KEYS, "passage_text"}
MAX_ID = 200  # Passage.passage_id max_length
BATCH = 2000  # records per spool batch and per database write


# ---------------------------------------------------------------- which passages a collection needs

NeededIds = Callable[[Collection | None], Iterable[str]]
_NEEDED: dict[str, NeededIds] = {}


def needed_ids_register(name: str, source: NeededIds) -> None:
    """Add (or replace) a source of needed passage ids: ``source(collection)`` yields the ids that collection's
    rows refer to (every collection's when None). Called by the apps that own runs, qrels and pools."""
    _NEEDED[name] = source


def needed_ids(collection: Collection | None) -> set[str]:
    """Every passage id the collection (None: any collection) pools, judges or ranks, from every registered source."""
    if not _NEEDED:
        raise RuntimeError("no source of needed passage ids is registered (judging registers one when it loads)")
    wanted: set[str] = set()
    for source in _NEEDED.values():
        wanted.update(source(collection))
    return wanted


# ---------------------------------------------------------------- parsing one line


def parse_tsv_line(line: str) -> tuple[str, str] | str:
    """(id, text) of an ``id<TAB>text`` line, or the reason it is bad."""
    fields = line.rstrip("\r\n").rstrip("\t").split("\t")
    if len(fields) < 2:
        return "expected 'id<TAB>text'"
    if len(fields) > 2:
        return (
            f"expected 2 tab-separated fields (id<TAB>text), found {len(fields)}: this is not a passages file, or a "
            "text holds a tab (replace it by a space)"
        )
    return fields[0].strip(), fields[1].strip()


def tsv_header(pid: str, body: str) -> bool:
    """Whether a first line is a header (``id<TAB>text``, ``docid<TAB>passage``, …) rather than a passage."""
    return pid.lower() in TSV_HEADER_IDS or body.lower() in TSV_HEADER_TEXTS


def parse_jsonl_line(line: str) -> tuple[str, str] | str:
    """(id, text) of a JSON object line, or the reason it is bad."""
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as exc:
        return f"invalid JSON: {exc.msg}"
    if not isinstance(obj, dict):
        return "expected a JSON object per line"
    if "passage_text" in obj or "doc_id" in obj:
        return _ikat_record(obj)
    pid = next((obj[k] for k in ID_KEYS if k in obj), None)
    body = next((obj[k] for k in TEXT_KEYS if k in obj), None)
    if pid is None or body is None:
        return f"object needs an id ({', '.join(ID_KEYS)}) and a text ({', '.join(TEXT_KEYS)})"
    if not isinstance(body, str):
        return "text must be a string"
    if not isinstance(pid, str | int) or isinstance(pid, bool):
        return "id must be a string or a number"
    return str(pid).strip(), body.strip()


def _ikat_record(obj: dict[str, Any]) -> tuple[str, str] | str:
    """(``<doc_id>:<passage_id>``, text) of an iKAT passage object, or the reason it is bad."""
    missing = [k for k in IKAT_KEYS if k not in obj]
    if missing:
        return f"an iKAT passage object needs {', '.join(IKAT_KEYS)}; this one lacks {', '.join(missing)}"
    doc_id, passage_id, body = (obj[k] for k in IKAT_KEYS)
    if not isinstance(doc_id, str) or not isinstance(passage_id, str | int) or isinstance(passage_id, bool):
        return "doc_id must be a string and passage_id a string or a number"
    if not isinstance(body, str):
        return "passage_text must be a string"
    if not doc_id.strip() or not str(passage_id).strip():
        return "empty passage id"
    return f"{doc_id.strip()}:{str(passage_id).strip()}", body.strip()


PARSERS: dict[str, Callable[[str], tuple[str, str] | str]] = {"tsv": parse_tsv_line, "jsonl": parse_jsonl_line}


# ---------------------------------------------------------------- the import


@dataclass
class CorpusCounts:
    lines: int = 0
    passages: int = 0  # valid passage lines
    kept: int = 0
    not_needed: int = 0
    duplicates: int = 0


def corpus_stream(
    *,
    path: Path,
    name: str,
    fmt: str,
    wanted: set[str] | None,
    spool: IO[bytes],
    max_bytes: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> CorpusCounts:
    """Validate every line of the file and pickle the records to keep into ``spool`` in batches of ``BATCH``;
    ``wanted`` None keeps every passage. Raises ImportFailed with every bad line (file, line, reason).

    The first text of an id wins; later lines with the same id are counted as duplicates (among kept ids only, so
    that memory holds no more than the kept ids)."""
    parse = PARSERS[fmt]
    report = LineReport(name)
    stream = LineStream(path=path, name=name, report=report, max_bytes=max_bytes, progress=progress)
    stream.open()
    counts = CorpusCounts()
    kept: set[str] = set()
    batch: list[tuple[str, str]] = []
    first = True
    for n, line in stream:
        record = parse(line)
        if isinstance(record, str):
            if line.strip():  # blank lines are allowed anywhere
                report.add(n, record)
                first = False
            continue
        pid, body = record
        if first and fmt == "tsv" and tsv_header(pid, body):
            report.add(n, f"a header ({pid}, {body}), not a passage: a passages TSV has no header line; remove it")
            first = False
            continue
        first = False
        if not pid:
            report.add(n, "empty passage id")
        elif len(pid) > MAX_ID:
            report.add(n, f"passage id longer than {MAX_ID} characters: {pid[:40]}…")
        elif len(pid.split()) != 1:
            report.add(n, f"passage id {pid[:60]!r} holds whitespace: runs and qrels separate their columns by it")
        elif not body:
            report.add(n, f"{pid}: empty passage text")
        elif wanted is not None and pid not in wanted:
            counts.passages += 1
            counts.not_needed += 1
        elif pid in kept:
            counts.passages += 1
            counts.duplicates += 1
        else:
            counts.passages += 1
            kept.add(pid)
            if not report:  # once the file is known to be bad, nothing more is spooled
                batch.append((pid, body))
                if len(batch) >= BATCH:
                    pickle.dump(batch, spool, protocol=pickle.HIGHEST_PROTOCOL)
                    batch = []
    counts.lines = stream.lines
    if report:
        raise report.fail()
    if batch:
        pickle.dump(batch, spool, protocol=pickle.HIGHEST_PROTOCOL)
    counts.kept = len(kept)
    return counts


def _spooled(spool: IO[bytes]) -> Iterator[list[tuple[str, str]]]:
    spool.seek(0)
    while True:
        try:
            yield pickle.load(spool)  # noqa: S301 - our own spool file, written just above in this process
        except EOFError:
            return


def _forget_queries() -> None:
    """Drop the statements DEBUG logs: each carries a batch of passage texts, and a worker keeps 9,000 of them, so
    a long import would hold gigabytes in a DEBUG process (a test capturing queries keeps its log)."""
    if settings.DEBUG and not connection.force_debug_cursor:
        connection.queries_log.clear()


def corpus_import(
    *,
    path: Path,
    name: str,
    fmt: str,
    collection: Collection | None = None,
    only_needed: bool = False,
    max_bytes: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """Stream a TSV/JSONL corpus file (plain or gzipped) into Passage rows atomically; returns the counts.

    ``only_needed`` keeps the passages that ``collection`` (None: any collection) pools, judges or ranks. The
    passages kept join ``collection``'s corpus, the passages its built-in runs retrieve from.
    """
    if fmt not in PARSERS:
        raise ValueError(f"format must be one of {', '.join(PARSERS)}")
    wanted: set[str] | None = None
    if only_needed:
        wanted = needed_ids(collection)
        if not wanted:
            scope = collection.name if collection is not None else "any collection"
            reason = (
                f"only_needed: {scope} has no run, qrels or pool yet, so no passage is needed; import them first "
                "or import without only_needed"
            )
            raise ImportFailed([row_error(name, None, reason)])
    source = name[:300]
    with tempfile.TemporaryFile(prefix="ecast-corpus-") as spool:
        counts = corpus_stream(
            path=path, name=name, fmt=fmt, wanted=wanted, spool=spool, max_bytes=max_bytes, progress=progress
        )
        created = updated = 0
        with transaction.atomic():
            for batch in _spooled(spool):
                c, u = passages_upsert(batch, source=source, collection=collection)
                created, updated = created + c, updated + u
                _forget_queries()
    result: dict[str, Any] = {"lines": counts.lines, "passages": counts.passages}
    if wanted is not None:
        result.update({"needed_ids": len(wanted), "not_needed": counts.not_needed})
    result.update(
        {
            "passages_created": created,
            "passages_updated": updated,
            "passages_unchanged": counts.kept - created - updated,
        }
    )
    if counts.duplicates:
        result["duplicates"] = counts.duplicates
    return result


def _writer(fmt: str) -> Callable[[Context], Result]:
    def write(ctx: Context) -> Result:
        counts = corpus_import(
            path=ctx.path,
            name=ctx.name,
            fmt=fmt,
            collection=ctx.collection,
            only_needed=ctx.flag("only_needed"),
            max_bytes=ctx.max_bytes,
            progress=ctx.progress,
        )
        return Result(counts=counts, collection=ctx.collection)

    write.__doc__ = f"Passage texts from a {fmt.upper()} corpus file, streamed (see ``{__name__}``)."
    return write


write_passages_tsv = _writer("tsv")
write_passages_jsonl = _writer("jsonl")
