"""What every parser shares: text in, records and every bad row as {file, line, reason} out. Plain Python (no Django).

Each format of ``ecast.imports.formats`` parses with these: ``Parsed`` collects every bad row instead of stopping at
the first, so an import report lists all problems at once; line numbers are 1-based physical lines of the
(decompressed) file. The TSV helpers read the line formats, the JSON helpers the topic files (CAsT 2019–2022, iKAT),
with the line of each topic and turn for messages.
"""

from __future__ import annotations

import bisect
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import accumulate
from typing import Any

from ecast.imports.errors import row_error

Progress = Callable[[int, int], None] | None
TURN_ID = re.compile(r"^\d+_\d+(-\d+)?$")  # 31_2; CAsT 2022 trees: 132_1-3 (branch-aware)


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


def text_lines(text: str) -> list[str]:
    """The lines of a text, without their line ends."""
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


def tsv_rows(p: Parsed, text: str, ncols: int, *, header: tuple[str, ...] | None = None, progress: Progress = None):
    """(line, stripped columns) of each non-blank row with ``ncols`` tab-separated columns; other rows are errors."""
    lines = text_lines(text)
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


def check_turn_id(p: Parsed, n: int, value: str) -> bool:
    """Whether ``value`` is a turn id (``31_2``, ``132_1-3``); if not, the error is recorded."""
    if not TURN_ID.match(value):
        p.error(n, f"{value!r} is not a turn id of the form <topic>_<turn>")
        return False
    return True


# ---------------------------------------------------------------- JSON lists of topics


def str_field(p: Parsed, where: str, obj: dict, key: str, *, line: int | None, required: bool = False) -> str:
    """The stripped string ``obj[key]`` ("" when absent); a non-string, or a required one missing or empty, is an
    error."""
    value = obj.get(key)
    if value is None:
        if required:
            p.error(line, f"{where}: missing {key!r}")
        return ""
    if not isinstance(value, str):
        p.error(line, f"{where}: {key!r} must be a string, got {type(value).__name__}")
        return ""
    if required and not value.strip():
        p.error(line, f"{where}: {key!r} is empty")
    return value.strip()


def int_field(p: Parsed, where: str, obj: dict, key: str, *, line: int | None) -> int | None:
    """``obj[key]`` as an integer ≥ 1 (an int or a string of digits); None, with the error recorded, otherwise."""
    value = obj.get(key)
    if isinstance(value, bool) or not isinstance(value, int | str):
        p.error(line, f"{where}: {key!r} must be an integer, got {value!r}")
        return None
    try:
        number = int(value)
    except ValueError:
        p.error(line, f"{where}: {key!r} must be an integer, got {value!r}")
        return None
    if number < 1:
        p.error(line, f"{where}: {key!r} must be ≥ 1, got {number}")
        return None
    return number


_WS = re.compile(r"\s*")
TURN_KEY = re.compile(r'"turn"\s*:\s*\[')


def array_spans(text: str, pos: int) -> list[tuple[int, int]]:
    """(start, end) offsets of the elements of the JSON array whose '[' is at ``pos`` (for error line numbers)."""
    decoder = json.JSONDecoder()
    spans: list[tuple[int, int]] = []
    pos = _WS.match(text, pos + 1).end()  # type: ignore[union-attr]
    try:
        while pos < len(text) and text[pos] != "]":
            _obj, end = decoder.raw_decode(text, pos)
            spans.append((pos, end))
            pos = _WS.match(text, end).end()  # type: ignore[union-attr]
            if text.startswith(",", pos):
                pos = _WS.match(text, pos + 1).end()  # type: ignore[union-attr]
            else:
                break
    except ValueError:
        pass
    return spans


def load_topic_list(p: Parsed, text: str, *, example: str) -> list[Any] | None:
    """The file's JSON list of topics; None (with the error recorded) when it is not JSON or not a non-empty list."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        p.error(exc.lineno, f"invalid JSON: {exc.msg} (column {exc.colno})")
        return None
    if not isinstance(data, list) or not data:
        p.error(None, f"expected a non-empty JSON list of topics like {example}")
        return None
    return data
