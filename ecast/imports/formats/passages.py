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

import codecs
import gzip
import io
import json
import pickle
import tempfile
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, cast

from django.conf import settings
from django.db import connection, transaction

from ecast.imports.errors import ImportFailed, row_error
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
MAX_ERRORS = 1000  # the report keeps this many bad lines, then counts the rest
BATCH = 2000  # records per spool batch and per database write
CHECK_EVERY = 1 << 23  # characters read between progress reports and inflation checks
MAX_LINE = 1 << 20  # a longer line is an error (and is never held whole in memory)
# Decompressed content may be this many times the upload limit (a gzip-bomb guard; memory stays flat anyway).
# MS MARCO's collection.tsv.gz inflates 3.3 times.
GZIP_RATIO_LIMIT = 10
GZIP_MAGIC = b"\x1f\x8b"
HEAD_BYTES = 65536

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


# ---------------------------------------------------------------- reading lines, streamed


class _Report:
    """Bad lines found so far: the first ``MAX_ERRORS`` in full, then only counted (memory stays flat)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.errors: list[dict[str, Any]] = []
        self.more = 0

    def add(self, line: int | None, reason: str) -> None:
        if len(self.errors) < MAX_ERRORS:
            self.errors.append(row_error(self.name, line, reason))
        else:
            self.more += 1

    def __bool__(self) -> bool:
        return bool(self.errors)

    def fail(self) -> ImportFailed:
        extra = [row_error(self.name, None, f"… and {self.more:,} more bad line(s)")] if self.more else []
        return ImportFailed(self.errors + extra)


def _fatal(name: str, reason: str, line: int | None = None) -> ImportFailed:
    return ImportFailed([row_error(name, line, reason)])


def _utf8_error(raw: bytes, exc: UnicodeDecodeError) -> str:
    byte = raw[exc.start : exc.start + 1].hex()
    return (
        f"not valid UTF-8 (byte 0x{byte} at column {exc.start + 1}); re-save the file as UTF-8 (it looks like "
        "Latin-1/Windows-1252)"
    )


@dataclass
class LineStream:
    """The decoded lines of a (possibly gzipped) UTF-8 text file, numbered from 1, read in constant memory.

    Lines are decoded by a text wrapper in large chunks (the fast path). A chunk that is not valid UTF-8 makes the
    stream reopen the file, skip the lines already read and go on line by line, so the bad line is reported with
    its own number and the lines after it are still checked.
    """

    path: Path
    name: str
    report: _Report
    max_bytes: int | None = None
    progress: Callable[[int, int], None] | None = None
    size: int = 0
    lines: int = 0
    gzipped: bool = field(default=False, init=False)

    def open(self) -> None:
        """Check the file before the first line: present, within the upload limit, not empty, not binary."""
        if not self.path.is_file():
            raise _fatal(self.name, "file not found")
        self.size = self.path.stat().st_size
        if self.max_bytes is not None and self.size > self.max_bytes:
            raise _fatal(
                self.name,
                f"file is {self.size:,} bytes; the upload limit (ECAST_MAX_UPLOAD_BYTES) is {self.max_bytes:,} bytes",
            )
        with open(self.path, "rb") as fh:
            self.gzipped = fh.read(2) == GZIP_MAGIC
        raw, stream = self._binary()
        try:
            head = self._read(stream, HEAD_BYTES)
        finally:
            raw.close()
        if not head.strip():
            raise _fatal(self.name, "file is empty")
        if b"\x00" in head:
            raise _fatal(self.name, "binary file (contains NUL bytes); expected a UTF-8 text file")

    def _binary(self) -> tuple[IO[bytes], IO[bytes]]:
        raw = open(self.path, "rb")  # noqa: SIM115 - closed by the caller
        stream = cast(IO[bytes], gzip.GzipFile(fileobj=raw, mode="rb")) if self.gzipped else raw
        return raw, stream

    def _read(self, stream: IO[bytes], n: int) -> bytes:
        try:
            return stream.read(n)
        except (OSError, EOFError, zlib.error) as exc:
            raise _fatal(self.name, f"corrupt gzip file: {exc}") from exc

    def _check(self, raw: IO[bytes], stream: IO[bytes]) -> None:
        """Progress by compressed bytes read; refuse a gzip file that inflates past the guard."""
        if self.gzipped and self.max_bytes is not None and stream.tell() > self.max_bytes * GZIP_RATIO_LIMIT:
            raise _fatal(
                self.name,
                f"decompressed content exceeds {GZIP_RATIO_LIMIT} times the upload limit of {self.max_bytes:,} bytes",
            )
        if self.progress is not None:
            self.progress(min(raw.tell(), self.size), self.size)

    def _too_long(
        self, n: int, line: Any, readline: Callable[[int], Any], newline: Any, check: Callable, *, report: bool = True
    ) -> bool:
        """Whether ``line`` is the first ``MAX_LINE`` of a longer line; if so, report it and read past its end."""
        if len(line) < MAX_LINE or line.endswith(newline):
            return False
        if report:
            self.report.add(n, f"line longer than {MAX_LINE:,} characters")
        while len(line) == MAX_LINE and not line.endswith(newline):
            check()
            line = readline(MAX_LINE)
        return True

    def __iter__(self) -> Iterator[tuple[int, str]]:
        raw, stream = self._binary()
        n = 0
        try:
            # newline="\n": lines split where the line-by-line path splits them, so both number lines alike.
            text = io.TextIOWrapper(stream, encoding="utf-8-sig", errors="strict", newline="\n")  # type: ignore[type-var]
            readline = text.readline
            read, next_check = 0, CHECK_EVERY
            check = lambda: self._check(raw, stream)  # noqa: E731
            try:
                while line := readline(MAX_LINE):
                    n += 1
                    read += len(line)
                    if read >= next_check:
                        check()
                        next_check = read + CHECK_EVERY
                    if len(line) == MAX_LINE and self._too_long(n, line, readline, "\n", check):
                        continue
                    yield n, line
            except UnicodeDecodeError:
                yield from self._slow(skip=n)
                return
            except (OSError, EOFError, zlib.error) as exc:
                raise _fatal(self.name, f"corrupt gzip file: {exc}", n + 1) from exc
            self.lines = n
        finally:
            raw.close()

    def _slow(self, *, skip: int) -> Iterator[tuple[int, str]]:
        """Line by line from line ``skip + 1``: each line decoded alone, so a bad byte names its line."""
        raw, stream = self._binary()
        n = 0
        try:
            readline = stream.readline
            read, next_check = 0, CHECK_EVERY
            check = lambda: self._check(raw, stream)  # noqa: E731
            try:
                while data := readline(MAX_LINE):
                    n += 1
                    read += len(data)
                    if read >= next_check:
                        check()
                        next_check = read + CHECK_EVERY
                    if len(data) == MAX_LINE and self._too_long(n, data, readline, b"\n", check, report=n > skip):
                        continue
                    if n <= skip:  # read (and checked) by the fast path already
                        continue
                    if n == 1 and data.startswith(codecs.BOM_UTF8):
                        data = data[len(codecs.BOM_UTF8) :]
                    try:
                        line = data.decode("utf-8")
                    except UnicodeDecodeError as exc:
                        self.report.add(n, _utf8_error(data, exc))
                        continue
                    yield n, line
            except (OSError, EOFError, zlib.error) as exc:
                raise _fatal(self.name, f"corrupt gzip file: {exc}", n + 1) from exc
            self.lines = n
        finally:
            raw.close()


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
    report = _Report(name)
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
            raise _fatal(
                name,
                f"only_needed: {scope} has no run, qrels or pool yet, so no passage is needed; import them first "
                "or import without only_needed",
            )
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
