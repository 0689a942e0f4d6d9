"""CSV the app writes opens safely in a spreadsheet: formula-like text is neutralised, numbers stay numbers."""

from __future__ import annotations

import csv
import io

import pytest

from ecast.csvfiles import csv_line, csv_response, safe_cell


@pytest.mark.parametrize(
    "text",
    ['=HYPERLINK("http://x","click")', "+1+1", "-2+3", "@SUM(A1)", "\t=1", "\r=1", "=cmd|' /C calc'!A0"],
)
def test_it_prefixes_text_a_spreadsheet_would_run_as_a_formula(text):
    assert safe_cell(text) == "'" + text


@pytest.mark.parametrize("value", ["-0.25", "+3", "-1e-4", -0.5, 3, None, "What is it?", "", "a=b"])
def test_it_keeps_numbers_and_plain_text_unchanged(value):
    assert safe_cell(value) == value


def test_a_csv_line_round_trips_through_the_csv_reader_with_the_prefix():
    line = csv_line(["81_2", "=1+1", -0.5, "plain, with comma"])
    assert next(csv.reader(io.StringIO(line))) == ["81_2", "'=1+1", "-0.5", "plain, with comma"]


def test_a_csv_download_has_its_comment_preamble_then_safe_rows():
    resp = csv_response("t.csv", ["run", "value"], [["@run", 0.5]], ["collection=demo"])
    assert resp["Content-Disposition"] == 'attachment; filename="t.csv"'
    assert resp.content.decode() == "# collection=demo\nrun,value\n'@run,0.5\n"
