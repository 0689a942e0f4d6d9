"""The one way the app writes CSV: cells made safe for spreadsheets, whole responses, and streamed lines.

The rule, for every CSV the app writes (downloads, releases, ``export_release``):

* A text cell that starts with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return is read by Excel, LibreOffice
  and Google Sheets as a formula (CSV injection); it gets a leading apostrophe, which spreadsheets hide.
* A cell made of apostrophes followed by such a start gets one more, so the rule can be undone exactly:
  :func:`restore_cell` drops one leading apostrophe from exactly the cells :func:`safe_cell` changed. The ECAsT import
  restores its text cells, so a release round-trips byte for byte (``=cmd`` → ``'=cmd`` → ``=cmd``).
* Numbers, and text that is a plain decimal number (``-0.25``, ``+3``, ``-1e-4``), are written unchanged so the files
  still parse as data.

Not CSV, so written exactly: JSON and JSONL (values are JSON strings, never evaluated; the JSONL release is the
full-fidelity copy) and TREC qrels and runs, whose readers need the bytes as they are.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterable, Iterator, Sequence
from decimal import Decimal
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # Django is imported where a response is built: parsers (plain Python) share the cell rules
    from django.http import HttpResponse, StreamingHttpResponse

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
# The content type of every CSV the app serves (downloads that stream their own rows name it from here).
CSV_CONTENT_TYPE = "text/csv; charset=utf-8"
PLAIN_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")


def _runs_as_formula(text: str) -> bool:
    """Whether ``text``, with its leading apostrophes removed, is one a spreadsheet would evaluate."""
    bare = text.lstrip("'")
    return bare.startswith(FORMULA_STARTS) and not PLAIN_NUMBER.fullmatch(bare)


def safe_cell(value: Any) -> Any:
    """``value`` unchanged unless its text would run as a formula (see the module rule); then prefixed with ``'``."""
    if value is None or isinstance(value, (int, float, Decimal)):
        return value
    text = value if isinstance(value, str) else str(value)
    return "'" + text if _runs_as_formula(text) else value


def restore_cell(text: str) -> str:
    """The text :func:`safe_cell` was given, for a cell of a CSV the app wrote (the exact inverse on text)."""
    if text.startswith("'") and _runs_as_formula(text[1:]):
        return text[1:]
    return text


class _Echo:
    """A file-like object whose write returns the text, so csv.writer can produce one line at a time."""

    def write(self, value: str) -> str:
        return value


def csv_lines(rows: Iterable[Sequence[Any]], *, lineterminator: str = "\n") -> Iterator[str]:
    """CSV-encode rows one line at a time (minimal quoting), every cell made safe."""
    writer = csv.writer(_Echo(), lineterminator=lineterminator)
    for row in rows:
        yield writer.writerow([safe_cell(v) for v in row])


def csv_line(values: Sequence[Any]) -> str:
    """One CSV line, cells made safe."""
    return next(csv_lines([values]))


def csv_text(header: Sequence[str], rows: Iterable[Sequence[Any]], *, preamble: Sequence[str] = ()) -> str:
    """A whole CSV document: ``# `` comment lines, the header, then the rows."""
    buf = io.StringIO()
    for line in preamble:
        # Comment lines start with "#", which no spreadsheet runs; a line break inside one (a collection name, say)
        # would start a row of its own, so breaks become spaces.
        buf.write("# " + " ".join(str(line).splitlines()) + "\n")
    buf.writelines(csv_lines([header, *rows]))
    return buf.getvalue()


def csv_response(
    filename: str, header: Sequence[str], rows: Iterable[Sequence[Any]], preamble: Sequence[str] = ()
) -> HttpResponse:
    """A CSV download built in memory (small tables)."""
    from django.http import HttpResponse

    response = HttpResponse(csv_text(header, rows, preamble=preamble), content_type=CSV_CONTENT_TYPE)
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


def csv_streaming_response(filename: str, lines: Iterable[str]) -> StreamingHttpResponse:
    """A CSV download streamed from lines made by :func:`csv_lines` or :func:`csv_line` (memory stays flat)."""
    from django.http import StreamingHttpResponse

    response = StreamingHttpResponse(lines, content_type=CSV_CONTENT_TYPE)
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response
