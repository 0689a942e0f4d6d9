"""Reading an uploaded file: whole into text (``read_text``), or line by line in constant memory (``LineStream``),
with the size limit, gzip, binary and encoding checks. Plain Python, no Django."""

from __future__ import annotations

import codecs
import gzip
import io
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, cast

from ecast.imports.errors import ImportFailed, row_error

GZIP_MAGIC = b"\x1f\x8b"
MAX_ERRORS = 1000  # a line-by-line report keeps this many bad lines, then counts the rest
CHECK_EVERY = 1 << 23  # characters read between progress reports and inflation checks
MAX_LINE = 1 << 20  # a longer line is an error (and is never held whole in memory)
# A streamed file's decompressed content may be this many times the upload limit (a gzip-bomb guard; memory stays
# flat anyway). MS MARCO's collection.tsv.gz inflates 3.3 times.
GZIP_RATIO_LIMIT = 10
HEAD_BYTES = 65536


def _fail(name: str, reason: str, line: int | None = None) -> ImportFailed:
    return ImportFailed([row_error(name, line, reason)])


INFLATE_CHUNK = 1 << 20


def inflated_size(path: Path, *, stop_after: int) -> int:
    """How many bytes a gzip file inflates to, counted a chunk at a time and never kept; stops counting once past
    ``stop_after``. A gzip bomb is refused with flat memory (reading it whole up to the limit held the limit's worth
    of bytes first); a file within the limit is inflated twice, which costs far less than parsing it."""
    total = 0
    with gzip.open(path, "rb") as gz:
        while total <= stop_after:
            chunk = gz.read(INFLATE_CHUNK)
            if not chunk:
                break
            total += len(chunk)
    return total


def read_bytes(path: Path, *, name: str | None = None, max_bytes: int | None = None) -> bytes:
    """The file's bytes, gunzipped when it is gzip; checks the size limit before reading anything."""
    name = name or path.name
    if not path.is_file():
        raise _fail(name, "file not found")
    size = path.stat().st_size
    if max_bytes is not None and size > max_bytes:
        raise _fail(name, f"file is {size:,} bytes; the upload limit (ECAST_MAX_UPLOAD_BYTES) is {max_bytes:,} bytes")
    with open(path, "rb") as fh:
        head = fh.read(2)
    if head == GZIP_MAGIC:
        try:
            if max_bytes is not None and inflated_size(path, stop_after=max_bytes) > max_bytes:
                raise _fail(name, f"decompressed content exceeds the upload limit of {max_bytes:,} bytes")
            with gzip.open(path, "rb") as gz:
                data = gz.read()
        except (OSError, EOFError, zlib.error) as exc:
            raise _fail(name, f"corrupt gzip file: {exc}") from exc
    else:
        data = path.read_bytes()
    return data


def decode(data: bytes, *, name: str) -> str:
    """Strict UTF-8 (a BOM is dropped); binary, empty and non-UTF-8 input become a clear error."""
    if not data.strip():
        raise _fail(name, "file is empty")
    if b"\x00" in data[:65536]:
        raise _fail(name, "binary file (contains NUL bytes); expected a UTF-8 text file")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        byte = data[exc.start : exc.start + 1].hex()
        raise _fail(
            name,
            f"not valid UTF-8 (byte 0x{byte} at column {column}); re-save the file as UTF-8 (it looks like "
            "Latin-1/Windows-1252)",
            line,
        ) from exc


def read_text(path: Path, *, name: str | None = None, max_bytes: int | None = None) -> str:
    """Read, gunzip and decode a text file, raising ImportFailed with file/line/reason on bad input."""
    name = name or path.name
    return decode(read_bytes(path, name=name, max_bytes=max_bytes), name=name)


# ---------------------------------------------------------------- reading lines, streamed


class LineReport:
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
    report: LineReport
    max_bytes: int | None = None
    progress: Callable[[int, int], None] | None = None
    size: int = 0
    lines: int = 0
    gzipped: bool = field(default=False, init=False)

    def open(self) -> None:
        """Check the file before the first line: present, within the upload limit, not empty, not binary."""
        if not self.path.is_file():
            raise _fail(self.name, "file not found")
        self.size = self.path.stat().st_size
        if self.max_bytes is not None and self.size > self.max_bytes:
            raise _fail(
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
            raise _fail(self.name, "file is empty")
        if b"\x00" in head:
            raise _fail(self.name, "binary file (contains NUL bytes); expected a UTF-8 text file")

    def _binary(self) -> tuple[IO[bytes], IO[bytes]]:
        raw = open(self.path, "rb")  # noqa: SIM115 - closed by the caller
        stream = cast(IO[bytes], gzip.GzipFile(fileobj=raw, mode="rb")) if self.gzipped else raw
        return raw, stream

    def _read(self, stream: IO[bytes], n: int) -> bytes:
        try:
            return stream.read(n)
        except (OSError, EOFError, zlib.error) as exc:
            raise _fail(self.name, f"corrupt gzip file: {exc}") from exc

    def _check(self, raw: IO[bytes], stream: IO[bytes]) -> None:
        """Progress by compressed bytes read; refuse a gzip file that inflates past the guard."""
        if self.gzipped and self.max_bytes is not None and stream.tell() > self.max_bytes * GZIP_RATIO_LIMIT:
            raise _fail(
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
                raise _fail(self.name, f"corrupt gzip file: {exc}", n + 1) from exc
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
                raise _fail(self.name, f"corrupt gzip file: {exc}", n + 1) from exc
            self.lines = n
        finally:
            raw.close()
