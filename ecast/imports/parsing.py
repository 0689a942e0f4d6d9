"""What every parser shares: text in, records and every bad row as {file, line, reason} out. Plain Python (no Django).

Each format of ``ecast.imports.formats`` parses with these: ``Parsed`` collects every bad row instead of stopping at
the first, so an import report lists all problems at once; line numbers are 1-based physical lines of the
(decompressed) file. The TSV helpers read the line formats, the JSON helpers the topic files (CAsT 2019–2022, iKAT),
whose topic and turn loop (``topic_objects``, ``numbered_turns``) is written here once.
"""

from __future__ import annotations

import bisect
import json
import re
from collections import Counter
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass, field
from functools import cached_property
from itertools import accumulate
from pathlib import Path
from typing import Any

from ecast.imports.errors import ImportFailed, row_error
from ecast.imports.readers import read_text

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
    # What a format reads beside its records, by name (e.g. the CLEF eHealth narratives by qid).
    extra: dict[str, Any] = field(default_factory=dict)

    def error(self, line: int | None, reason: str) -> None:
        self.errors.append(row_error(self.file, line, reason))

    def warn(self, line: int | None, reason: str, *, kind: str = "") -> None:
        self.warnings.append(row_error(self.file, line, reason, kind=kind))


def parse_file(parse: Callable[..., Parsed], path: Path, *, name: str | None = None) -> Parsed:
    """``parse`` of a file (plain or gzip) read as imports read it, for readers outside an import (tests,
    benchmarks); ImportFailed with every bad row."""
    name = name or path.name
    parsed = parse(read_text(path, name=name), file=name)
    if parsed.errors:
        raise ImportFailed(parsed.errors)
    return parsed


def text_lines(text: str) -> list[str]:
    """The lines of a text, without their line ends."""
    # splitlines() also drops the \r of CRLF files (the CAsT 2019 resolved TSV is CRLF).
    return text.splitlines()


def iter_lines(text: str) -> Iterator[str]:
    """The lines of a text one at a time (as ``text_lines`` gives them for \\n and \\r\\n files), without a list
    of them: a run of 20 M lines would hold a second copy of itself as line objects."""
    if "\n" not in text:
        yield from text.splitlines()  # one line, or old Mac \\r line ends
        return
    start = 0
    find = text.find
    while True:
        end = find("\n", start)
        if end < 0:
            if start < len(text):
                yield text[start:].rstrip("\r")
            return
        yield text[start : end - 1] if end > start and text[end - 1] == "\r" else text[start:end]
        start = end + 1


def line_count(text: str) -> int:
    """How many lines ``iter_lines`` yields (for progress), counted without splitting."""
    if "\n" not in text:
        return len(text.splitlines())
    return text.count("\n") + (0 if text.endswith("\n") else 1)


class LineIndex:
    """Offset → 1-based line number (for errors in files parsed as a whole: JSON, XML)."""

    def __init__(self, text: str):
        # From the lengths of the lines rather than a test of every character (that was most of parsing topics).
        ends = list(accumulate(len(line) + 1 for line in text.split("\n")))
        self.newlines = [end - 1 for end in ends[:-1]]

    def __call__(self, offset: int) -> int:
        return bisect.bisect_right(self.newlines, offset - 1) + 1


def key_lines(text: str) -> dict[str, int]:
    """The line of the first ``"key": {`` or ``"key": [`` of each key (for messages about a JSON object's entries)."""
    line_of = LineIndex(text)
    lines: dict[str, int] = {}
    for m in re.finditer(r'"((?:[^"\\]|\\.)*)"\s*:\s*[\[{]', text):
        lines.setdefault(m.group(1), line_of(m.start()))
    return lines


# ---------------------------------------------------------------- JSON lines


def jsonl_objects(p: Parsed, text: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line, object) of each non-blank line of a JSON-lines file; a line that is not a JSON object is an error."""
    for n, line in enumerate(text_lines(text), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            p.error(n, f"invalid JSON: {exc.msg} (column {exc.colno})")
            continue
        if not isinstance(obj, dict):
            p.error(n, f"expected a JSON object, got {type(obj).__name__}")
            continue
        yield n, obj


def id_value(value: Any) -> str:
    """An id given as a string or an integer (TREC RAG 2025 narrative ids are numbers), stripped; "" otherwise."""
    if isinstance(value, bool) or not isinstance(value, str | int):
        return ""
    return str(value).strip()


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


def turn_rows(
    p: Parsed, text: str, ncols: int, *, bad: Callable[[list[str]], str], again: str
) -> Iterator[tuple[int, list[str]]]:
    """``tsv_rows`` whose first column is a turn id given once: a bad id, a row ``bad`` gives a reason against ("" when
    good) and an id given again ("<id>: <again> on line <n>") are errors, checked in that order."""
    seen: dict[str, int] = {}
    for n, cols in tsv_rows(p, text, ncols):
        turn_id = cols[0]
        if not check_turn_id(p, n, turn_id):
            continue
        reason = bad(cols)
        if reason:
            p.error(n, reason)
            continue
        if turn_id in seen:
            p.error(n, f"{turn_id}: {again} on line {seen[turn_id]}")
            continue
        seen[turn_id] = n
        yield n, cols


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


class Unread:
    """The fields of a topics file that no column stores, counted per level ("topic", "User turn", …), so that an
    import lists what it ignored instead of dropping it without a word."""

    def __init__(self) -> None:
        self.counts: Counter[tuple[str, str]] = Counter()

    def note(self, level: str, obj: dict[str, Any], read: Collection[str]) -> None:
        self.counts.update((level, key) for key in obj if key not in read)

    def report(self, p: Parsed) -> None:
        """Put the ignored fields in the counts (``ignored_fields``: "<level>.<field>" → how many) and warn once
        per field."""
        if not self.counts:
            return
        p.counts["ignored_fields"] = {f"{level}.{key}": n for (level, key), n in sorted(self.counts.items())}
        for (level, key), n in sorted(self.counts.items()):
            p.warn(None, f"field {key!r} of {n} {level}(s) is not stored (ignored)", kind="ignored field")


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


@dataclass
class Located:
    """One topic object of a topics file: its position (from 1), the object and the line it starts on (None where
    the text could not be split into elements), with the lines of its turns for messages."""

    index: int
    value: dict[str, Any]
    line: int | None
    text: str
    span: tuple[int, int] | None
    line_of: LineIndex
    turns_key: re.Pattern[str]

    @property
    def where(self) -> str:
        """How messages name the topic before its number is known: "topic #3"."""
        return f"topic #{self.index}"

    @cached_property
    def turn_lines(self) -> list[int]:
        """The line of each element of the topic's turn array (the first that ``turns_key`` finds in it)."""
        key = self.turns_key.search(self.text, self.span[0], self.span[1]) if self.span else None
        return [self.line_of(start) for start, _end in array_spans(self.text, key.end() - 1)] if key else []

    def turn_line(self, j: int) -> int | None:
        """The line of turn ``j`` (from 1); the topic's own line past what the text could be split into."""
        return self.turn_lines[j - 1] if j <= len(self.turn_lines) else self.line


def topic_objects(
    p: Parsed, text: str, data: list[Any], *, expected: str, turns_key: re.Pattern[str] = TURN_KEY
) -> Iterator[Located]:
    """Each topic of a topics file's parsed list with its line; a topic that is not an object is an error ("expected
    an object with ``expected``") and is left out. ``turns_key`` finds a topic's turn array, for the turns' lines."""
    line_of = LineIndex(text)
    spans = array_spans(text, _WS.match(text).end())  # type: ignore[union-attr]
    for i, topic in enumerate(data, start=1):
        span = spans[i - 1] if i <= len(spans) else None
        line = line_of(span[0]) if span else None
        if not isinstance(topic, dict):
            p.error(line, f"topic #{i}: expected an object with {expected}, got {type(topic).__name__}")
            continue
        yield Located(i, topic, line, text, span, line_of, turns_key)


def numbered_turns(
    p: Parsed, topic: Located, where: str, turns: list[Any], *, key: str, name: str
) -> Iterator[tuple[dict[str, Any], int | None, str, int | None]]:
    """(turn, number, where, line) of each turn object of a topic, its number read from ``key`` (None when bad:
    reported) and ``where`` naming it for messages; a turn that is not an object is an error and is left out, and a
    number given twice is an error ("<name> appears twice")."""
    seen: set[int] = set()
    for j, turn in enumerate(turns, start=1):
        twhere = f"{where}, turn #{j}"
        tline = topic.turn_line(j)
        if not isinstance(turn, dict):
            p.error(tline, f"{twhere}: expected an object, got {type(turn).__name__}")
            continue
        number = int_field(p, twhere, turn, key, line=tline)
        if number is not None:
            twhere = f"{where}, turn {number}"
            if number in seen:
                p.error(tline, f"{twhere}: {name} appears twice")
            seen.add(number)
        yield turn, number, twhere, tline
