"""The one way the app writes CSV: cells made safe for spreadsheets, whole responses, and streamed lines.

A text cell that starts with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return is read by Excel, LibreOffice and
Google Sheets as a formula (CSV injection); such cells get a leading apostrophe, which spreadsheets hide. Numbers,
and text that is a plain number (``-0.25``), are written unchanged so the files still parse as data.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from django.http import HttpResponse, StreamingHttpResponse

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def safe_cell(value: Any) -> Any:
    """``value`` unchanged unless it is text a spreadsheet would run as a formula; then prefixed with ``'``."""
    if not isinstance(value, str) or not value.startswith(FORMULA_STARTS):
        return value
    try:
        float(value)
    except ValueError:
        return "'" + value
    return value


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
        buf.write(f"# {line}\n")  # comment lines start with "#", which no spreadsheet runs
    buf.writelines(csv_lines([header, *rows]))
    return buf.getvalue()


def csv_response(
    filename: str, header: Sequence[str], rows: Iterable[Sequence[Any]], preamble: Sequence[str] = ()
) -> HttpResponse:
    """A CSV download built in memory (small tables)."""
    response = HttpResponse(csv_text(header, rows, preamble=preamble), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


def csv_streaming_response(filename: str, lines: Iterable[str]) -> StreamingHttpResponse:
    """A CSV download streamed from already encoded lines (large tables; memory stays flat)."""
    response = StreamingHttpResponse(lines, content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response
