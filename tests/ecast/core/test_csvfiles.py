"""CSV the app writes opens safely in a spreadsheet: formula-like text is neutralised, numbers stay numbers.

The rule is undone exactly on import, and every CSV download the app offers follows it."""

from __future__ import annotations

import csv
import io
import re
from decimal import Decimal
from pathlib import Path

import pytest
from django.core.management import call_command

from ecast.core.csvfiles import FORMULA_STARTS, PLAIN_NUMBER, csv_line, csv_response, csv_text, restore_cell, safe_cell
from ecast.imports.services import import_file
from ecast.models import Paraphrase, Turn
from evaluation.models import ResponseLabelSet, ResponseRun

REPO = Path(__file__).resolve().parents[3]
CMD = "=cmd|' /C calc'!A0"
LINK = '=HYPERLINK("http://example.invalid/x","click")'


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


@pytest.mark.parametrize("text", ["-inf", "+nan", "-1_000", "-0x10", "'=1+1", "''@SUM(A1)", "\n=1"[1:]])
def test_it_prefixes_text_python_or_a_spreadsheet_might_read_otherwise(text):
    assert safe_cell(text) == "'" + text


def test_objects_are_judged_by_their_text():
    class Named:
        def __str__(self) -> str:
            return "=1+1"

    assert safe_cell(Named()) == "'=1+1" and safe_cell(Decimal("-1.5")) == Decimal("-1.5")


@pytest.mark.parametrize(
    "text",
    [CMD, LINK, "-2+3", "'=1+1", "''=1+1", "'", "''", "'plain", "'-0.5", "-0.5", "plain", "", "\t=1", "'\r=1"],
)
def test_restore_cell_undoes_safe_cell_exactly(text):
    assert restore_cell(safe_cell(text)) == text


def test_a_line_break_in_a_comment_line_cannot_start_a_row():
    text = csv_text(["a"], [["b"]], preamble=[f"collection=x\n{CMD}\r\n{LINK}"])
    assert text.splitlines()[0].startswith("# collection=x ") and len(text.splitlines()) == 3


def test_only_ecast_csvfiles_writes_csv():
    """Every CSV goes through ecast.core.csvfiles: no other module builds a writer, a CSV response or a CSV header."""
    # "text/csv" may appear in OpenAPI declarations, `(200, "text/csv")`, which produce nothing.
    patterns = re.compile(r'csv\.writer|csv\.DictWriter|\.to_csv\(|(?<!\(200, )"text/csv|Content-Disposition.*\.csv')
    offending = [
        f"{path.relative_to(REPO)}:{n}"
        for app in ("ecast", "judging", "evaluation")
        for path in sorted((REPO / app).rglob("*.py"))
        # ecast/demo/build.py is a maintainer's tool that copies published rows into the demo data as they are.
        if path.name != "csvfiles.py" and path.relative_to(REPO).as_posix() != "ecast/demo/build.py"
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if patterns.search(line)
    ]
    # The one exception: the meta-evaluation service stores an uploaded table for itself (read back by pandas).
    assert offending == ["evaluation/analyses/services/metaeval.py:138"]


# ---------------------------------------------------------------- every CSV download, table-driven


@pytest.fixture
def hostile(db, tmp_path, admin_user):
    """Formula-like text wherever a CSV download takes text from: paraphrases (imported), names, a file name."""
    from evaluation import services as evaluation_services
    from judging.models import Campaign
    from tests import factories
    from tests.evaluation.helpers import build
    from tests.judging.rating.helpers import rate_one

    coll = factories.paraphrase_collection(name="Hostile")
    ecast_csv = tmp_path / "ecast.csv"
    with open(ecast_csv, "w", newline="", encoding="utf-8") as handle:  # a hostile file, as uploaded
        csv.writer(handle).writerows([["TURN_ID", "MANUAL PARAPHRASE", "RAW PARAPHRASE"], ["1_2", CMD, LINK]])
    job = import_file(kind="ecast_csv", path=ecast_csv, collection=coll, file_name="ecast.csv")
    assert job.status == "succeeded", job.errors
    bad = tmp_path / "bad.csv"
    bad.write_text(f"TURN_ID,MANUAL PARAPHRASE,RAW PARAPHRASE\n9_9,{CMD},x\n")
    failed = import_file(kind="ecast_csv", path=bad, collection=coll, file_name=f"{LINK}.csv")
    assert failed.status == "failed"

    # A campaign whose items all carry labels, rated by a rater with a formula-like username.
    Paraphrase.objects.filter(turn__collection=coll, kind="manual", origin="generated").update(text=CMD)
    Turn.objects.filter(collection=coll).update(canonical_response_id="@SUM(A1)")  # the items' passage ids
    camp: Campaign = factories.rating_campaign(coll, size=6, n=3)
    raters = factories.users(3, prefix="-2+")
    for user in raters:
        while rate_one(camp, user, score=5):
            pass

    _coll, version, runs = build(name=f"Eval\n{CMD}")
    runs["strong"].name = LINK
    runs["strong"].save()
    evaluation_services.scores_compute_for_version(version=version)

    # Response judging: a run, a label set and a turn id that read as formulas.
    from tests.evaluation.responses.helpers import small_scene

    scene = small_scene()
    ResponseRun.objects.filter(pk=scene["runs"][0].pk).update(name=LINK)
    ResponseLabelSet.objects.filter(pk=scene["nugget_set"].pk).update(name=CMD)
    Turn.objects.filter(pk=scene["turns"]["t1"].pk).update(turn_id="@t1")
    return {
        "coll": coll,
        "job": failed,
        "camp": camp,
        "version": version,
        "run": runs["strong"],
        "tmp": tmp_path,
        "nugget_set": scene["nugget_set"],
        "citation_set": scene["citation_set"],
    }


def _body(response) -> str:
    assert response.status_code == 200, getattr(response, "content", b"")[:300]
    content = b"".join(response.streaming_content) if response.streaming else response.content
    return content.decode("utf-8")


def _export_release(h, _api, _web) -> str:
    out = h["tmp"] / "release.csv"
    call_command("export_release", "--status", "all", "--output", str(out), stdout=io.StringIO())
    return out.read_text(encoding="utf-8")


DOWNLOADS = [
    ("release API", lambda h, api, web: _body(api.get("/api/releases/ecast.csv", {"status": "all"})), [CMD, LINK]),
    ("export_release command", _export_release, [CMD, LINK]),
    ("import errors", lambda h, api, web: _body(web.get(f"/imports/{h['job'].pk}/errors.csv")), [f"{LINK}.csv"]),
    (
        "campaign release",
        lambda h, api, web: _body(api.get(f"/api/rating/campaigns/{h['camp'].pk}/release/", {"output": "csv"})),
        [CMD],
    ),
    (
        "campaign ratings",
        lambda h, api, web: _body(api.get(f"/api/rating/campaigns/{h['camp'].pk}/ratings.csv")),
        ["-2+0", "@SUM(A1)"],
    ),
    (
        "campaign labels",
        lambda h, api, web: _body(api.get(f"/api/rating/campaigns/{h['camp'].pk}/labels.csv")),
        ["@SUM(A1)"],
    ),
    (
        "leaderboard",
        lambda h, api, web: _body(web.get(f"/evaluation/versions/{h['version'].pk}/leaderboard.csv")),
        [LINK],
    ),
    # Names only in "# " comment lines here: the check is that no line break in them starts a row of their own.
    ("run scores", lambda h, api, web: _body(web.get(f"/evaluation/runs/{h['run'].pk}/scores.csv")), []),
    ("run as CSV", lambda h, api, web: _body(web.get(f"/evaluation/runs/{h['run'].pk}/download/csv/")), []),
    ("qrels as CSV", lambda h, api, web: _body(web.get(f"/evaluation/versions/{h['version'].pk}/qrels/csv/")), []),
    (
        "per-query scores",
        lambda h, api, web: _body(web.get(f"/evaluation/versions/{h['version'].pk}/per-query/csv/")),
        [LINK],
    ),
    (
        "response scores per response",
        lambda h, api, web: _body(
            web.get(f"/evaluation/responses/label-sets/{h['nugget_set'].pk}/download/per-response.csv")
        ),
        [LINK, CMD, "@t1"],
    ),
    (
        "response scores per run",
        lambda h, api, web: _body(api.get(f"/api/responses/label-sets/{h['citation_set'].pk}/download/per-run.csv")),
        [LINK],
    ),
]


@pytest.mark.parametrize(("name", "fetch", "neutralised"), DOWNLOADS, ids=[d[0] for d in DOWNLOADS])
def test_every_csv_download_neutralises_formula_like_text(hostile, admin_api, admin_client, name, fetch, neutralised):
    text = fetch(hostile, admin_api, admin_client)
    rows = list(csv.reader(io.StringIO(text, newline="")))
    live = [
        cell for row in rows for cell in row if cell.startswith(FORMULA_STARTS) and not PLAIN_NUMBER.fullmatch(cell)
    ]
    assert live == [], name
    cells = {cell for row in rows for cell in row}
    for original in neutralised:
        assert "'" + original in cells, (name, original)
