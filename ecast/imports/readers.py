"""Reading an uploaded file into text: size limit, gzip, binary and encoding checks. Plain Python, no Django."""

from __future__ import annotations

import gzip
import zlib
from pathlib import Path

from ecast.imports.errors import ImportFailed, row_error

GZIP_MAGIC = b"\x1f\x8b"


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
