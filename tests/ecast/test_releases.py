"""Releases: the ECAsT CSV round trip on the full shared file, JSONL provenance, filters, permissions, command."""

from __future__ import annotations

import csv
import hashlib
import io
import json
from collections import Counter

import pytest
from django.core.management import call_command

from ecast import releases, services
from ecast.core.csvfiles import csv_lines
from ecast.imports.services import import_file
from ecast.models import ImportJob, Paraphrase
from tests import factories
from tests.ecast.helpers import ECAST_TOPICS, ecast_topics_import

pytestmark = pytest.mark.django_db


def _rows(text: str) -> list[tuple[str, ...]]:
    return [tuple(r) for r in csv.reader(io.StringIO(text, newline=""))]


def _streamed(response) -> str:
    return b"".join(response.streaming_content).decode("utf-8")


def test_the_full_ecast_csv_round_trips_as_an_identical_multiset(shared_data, admin_api):
    ecast_topics_import(shared_data)
    source = shared_data / "ecast" / "ECAsT.csv"
    job = import_file(kind="ecast_csv", path=source)
    assert job.status == ImportJob.Status.SUCCEEDED, job.errors[:5]
    assert job.counts["rows"] == 9214 and job.counts["turns"] == 1203 and job.counts["pairs_created"] == 9214
    again = import_file(kind="ecast_csv", path=source)
    assert again.counts["pairs_created"] == 0 and Paraphrase.objects.count() == 2 * 9214

    original = _rows(source.read_text(encoding="utf-8"))
    exported = "".join(releases.release_csv_lines(pairs_queryset=releases.release_pairs()))
    # Byte for byte the published file: same rows, order, quoting and CRLF line ends.
    assert hashlib.sha256(exported.encode("utf-8")).hexdigest() == hashlib.sha256(source.read_bytes()).hexdigest()
    rows = _rows(exported)
    assert rows[0] == original[0] == ("TURN_ID", "MANUAL PARAPHRASE", "RAW PARAPHRASE")
    assert Counter(rows[1:]) == Counter(original[1:])

    response = admin_api.get("/api/releases/ecast.csv")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    assert Counter(_rows(_streamed(response))[1:]) == Counter(original[1:])

    one = admin_api.get("/api/releases/ecast.jsonl", {"collection": "CAsT 2020"})
    lines = [json.loads(x) for x in _streamed(one).splitlines()]
    assert len(lines) == sum(1 for r in original[1:] if 81 <= int(r[0].split("_")[0]) <= 105)
    first = lines[0]
    assert first["collection"] == "CAsT 2020" and first["turn"]["raw_utterance"]
    assert first["manual"]["provenance"]["source"] == "ECAsT.csv" and first["raw"]["provenance"]["line"] >= 2


def test_the_release_order_does_not_depend_on_the_import_order(shared_data):
    # Evaluation topics before training topics, and the later years first: conversations are stored in another
    # order than the published file's, and the release is still that file byte for byte.
    for name in reversed(ECAST_TOPICS):
        assert import_file(kind="cast_topics", path=shared_data / "cast" / name).status == "succeeded"
    source = shared_data / "ecast" / "ECAsT.csv"
    assert import_file(kind="ecast_csv", path=source).status == ImportJob.Status.SUCCEEDED
    exported = "".join(releases.release_csv_lines(pairs_queryset=releases.release_pairs()))
    assert exported.encode("utf-8") == source.read_bytes()
    order = [
        (r["turn_id"], r["manual_paraphrase"], r["raw_paraphrase"])
        for r in releases.release_jsonl_rows(pairs_queryset=releases.release_pairs())
    ]
    assert order == _rows(source.read_text(encoding="utf-8"))[1:]


@pytest.fixture
def pairs(small_collection):
    t12 = small_collection.turns.get(turn_id="1_2")
    t22 = small_collection.turns.get(turn_id="2_2")
    a = services.paraphrase_add(turn=t12, manual_text="Is throat cancer curable?", raw_text="Is it curable?")
    b = services.paraphrase_add(turn=t22, manual_text="Why are bees dying, in short?", raw_text="Why, in short?")
    for p in (*a, *b):
        services.paraphrase_approve(paraphrase=p)
    c = services.paraphrase_add(turn=t12, manual_text="Can throat cancer be treated?", raw_text="Can it be treated?")
    return a, b, c


def test_release_filters_by_status_collection_and_explicit_ids(pairs, small_collection):
    a, b, c = pairs
    approved = list(releases.release_csv_rows(pairs_queryset=releases.release_pairs()))
    assert approved == [
        ["TURN_ID", "MANUAL PARAPHRASE", "RAW PARAPHRASE"],
        ["1_2", "Is throat cancer curable?", "Is it curable?"],
        ["2_2", "Why are bees dying, in short?", "Why, in short?"],
    ]
    candidates = list(releases.release_csv_rows(pairs_queryset=releases.release_pairs(status="candidate")))
    assert candidates[1:] == [["1_2", "Can throat cancer be treated?", "Can it be treated?"]]
    other = factories.collection(name="Other")
    assert len(list(releases.release_csv_rows(pairs_queryset=releases.release_pairs(collection=other)))) == 1
    # Passing the raw member of a pair selects the pair; each pair appears once.
    chosen = Paraphrase.objects.filter(pk__in=[b[1].pk, b[0].pk])
    assert [r[0] for r in releases.release_csv_rows(pairs_queryset=chosen, header=False)] == ["2_2"]


def test_an_edited_pair_is_released_with_its_current_text_once(pairs):
    a, _b, _c = pairs
    new = services.paraphrase_edit(paraphrase=a[1], text="Is it curable at all?")
    services.paraphrase_approve(paraphrase=new)
    rows = list(releases.release_csv_rows(pairs_queryset=releases.release_pairs(), header=False))
    assert ["1_2", "Is throat cancer curable?", "Is it curable at all?"] in rows and len(rows) == 2


def test_only_admins_may_download_releases(pairs, rater_api, assessor_api, anon_api, rater_client):
    for client in (rater_api, assessor_api):
        assert client.get("/api/releases/ecast.csv").status_code == 403
        assert client.get("/api/releases/ecast.jsonl").status_code == 403
    assert anon_api.get("/api/releases/ecast.csv").status_code in (401, 403)
    assert rater_client.get("/releases/").status_code == 403


def test_the_release_page_links_the_downloads(pairs, admin_client):
    page = admin_client.get("/releases/")
    assert page.status_code == 200 and b"/api/releases/ecast.csv" in page.content


def test_release_api_rejects_unknown_collection_and_status(admin_api):
    assert admin_api.get("/api/releases/ecast.csv", {"collection": "nope"}).status_code == 400
    assert admin_api.get("/api/releases/ecast.csv", {"status": "maybe"}).status_code == 400


def test_export_release_command_writes_csv_and_jsonl(pairs, tmp_path):
    out = tmp_path / "r.csv"
    call_command("export_release", "--output", str(out), stdout=io.StringIO())
    assert len(_rows(out.read_text(encoding="utf-8"))) == 3
    out = tmp_path / "r.jsonl"
    call_command("export_release", "--format", "jsonl", "--status", "all", "--output", str(out), stdout=io.StringIO())
    assert len(out.read_text(encoding="utf-8").splitlines()) == 3


def test_formula_like_paraphrases_are_neutralised_in_the_release_and_round_trip_exactly(small_collection, tmp_path):
    texts = ["=cmd|' /C calc'!A0", '=HYPERLINK("http://x","y")', "-2+3 apples", "'=already quoted", "'plain", "-0.5"]
    source = tmp_path / "in.csv"
    rows = [["TURN_ID", "MANUAL PARAPHRASE", "RAW PARAPHRASE"], *[["1_2", t, t + " (raw)"] for t in texts]]
    source.write_text("".join(csv_lines(rows)), encoding="utf-8")  # written as the app writes: neutralised
    assert import_file(kind="ecast_csv", path=source, collection=small_collection).status == "succeeded"
    assert sorted(Paraphrase.objects.filter(kind="manual").values_list("text", flat=True)) == sorted(texts)

    exported = "".join(csv_lines(releases.release_csv_rows(pairs_queryset=releases.release_pairs())))
    cells = [c for r in _rows(exported)[1:] for c in r[1:]]
    assert "'=cmd|' /C calc'!A0" in cells and "''=already quoted" in cells and "-0.5" in cells
    assert not [c for c in cells if c[:1] in "=+-@" and c != "-0.5"]

    Paraphrase.objects.all().delete()
    again = tmp_path / "again.csv"
    again.write_text(exported, encoding="utf-8")
    assert import_file(kind="ecast_csv", path=again, collection=small_collection).status == "succeeded"
    assert sorted(Paraphrase.objects.filter(kind="manual").values_list("text", flat=True)) == sorted(texts)
    assert "".join(csv_lines(releases.release_csv_rows(pairs_queryset=releases.release_pairs()))) == exported


def test_the_jsonl_release_keeps_formula_like_text_exactly(small_collection):
    turn = small_collection.turns.get(turn_id="1_2")
    manual, raw = services.paraphrase_add(turn=turn, manual_text="=cmd|' /C calc'!A0", raw_text="@SUM(A1)")
    for p in (manual, raw):
        services.paraphrase_approve(paraphrase=p)
    (line,) = releases.jsonl_lines(releases.release_jsonl_rows(pairs_queryset=releases.release_pairs()))
    row = json.loads(line)
    assert (row["manual_paraphrase"], row["raw_paraphrase"]) == ("=cmd|' /C calc'!A0", "@SUM(A1)")


def test_the_release_page_counts_exactly_the_rows_of_the_file_and_the_half_decided_pairs(pairs, admin_client):
    a, _b, c = pairs
    Paraphrase.objects.filter(pk=c[0].pk).update(status="approved")  # half-decided: left out of the file
    html = admin_client.get("/releases/").content.decode()
    coll = a[0].turn.collection
    rows = _streamed(admin_client.get("/api/releases/ecast.csv", {"collection": coll.pk})).splitlines()
    assert len(rows) - 1 == 2
    assert f'<tr data-collection="{coll.pk}">' in html
    row = html.split(f'<tr data-collection="{coll.pk}">')[1].split("</tr>")[0]
    assert '<td class="num release-rows">2</td>' in row and "half_decided=1" in row and ">1</a>" in row
