"""The import REST API, the admin import pages and the import_data command; permissions for each."""

from __future__ import annotations

import io
import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command

from ecast.models import ImportJob, Passage, Turn

pytestmark = pytest.mark.django_db


def _upload(name: str, content: bytes) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, content, content_type="application/octet-stream")


def test_admin_uploads_a_file_and_polls_the_job(admin_api, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_api.post(
            "/api/imports/",
            {"kind": "passages_tsv", "file": _upload("p.tsv", b"MARCO_1\tfirst\nMARCO_2\tsecond\n")},
            format="multipart",
        )
    assert response.status_code == 202, response.content
    job_id = response.json()["id"]
    detail = admin_api.get(f"/api/imports/{job_id}/").json()
    assert detail["status"] == "succeeded" and detail["counts"]["passages_created"] == 2
    assert detail["progress_done"] == detail["progress_total"] and detail["errors"] == []
    assert Passage.objects.count() == 2
    assert ImportJob.objects.get(pk=job_id).stored_path.endswith("p.tsv")


def test_the_api_reports_every_bad_row_of_a_failed_import(
    admin_api, small_collection, django_capture_on_commit_callbacks
):
    content = b"1_1 Q0 a 1 1.0 t\n1_1 Q0 b x 1.0 t\n1_2 Q0 c 3 abc t\n"
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_api.post(
            "/api/imports/",
            {
                "kind": "run",
                "file": _upload("r.run", content),
                "collection": small_collection.pk,
                "options": json.dumps({"name": "bm25"}),
            },
            format="multipart",
        )
    assert response.status_code == 202
    detail = admin_api.get(response.json()["url"]).json()
    assert detail["status"] == "failed"
    assert [(e["file"], e["line"]) for e in detail["errors"]] == [("r.run", 2), ("r.run", 3)]


def test_the_api_refuses_an_upload_over_the_limit_before_storing_it(admin_api, settings):
    settings.ECAST_MAX_UPLOAD_BYTES = 5
    response = admin_api.post(
        "/api/imports/", {"kind": "passages_tsv", "file": _upload("p.tsv", b"MARCO_1\tlong text\n")}, format="multipart"
    )
    assert response.status_code == 400
    assert "upload limit" in response.json()["errors"][0]["reason"]
    assert ImportJob.objects.get().stored_path == ""


def test_the_api_rejects_server_paths_in_options(admin_api):
    response = admin_api.post(
        "/api/imports/",
        {"kind": "cast_topics", "file": _upload("t.json", b"[]"), "options": '{"resolved_tsv": "/etc/passwd"}'},
        format="multipart",
    )
    assert response.status_code == 400 and "as a file" in response.json()["errors"][0]["reason"]


def test_only_admins_may_import(rater_api, assessor_api, anon_api, admin_api):
    for client in (rater_api, assessor_api):
        r = client.post(
            "/api/imports/", {"kind": "passages_tsv", "file": _upload("p.tsv", b"a\tb\n")}, format="multipart"
        )
        assert r.status_code == 403
    assert anon_api.post("/api/imports/", {}, format="multipart").status_code in (401, 403)
    job = ImportJob.objects.create(kind="qrels", file_name="x")
    assert rater_api.get(f"/api/imports/{job.pk}/").status_code == 403
    assert admin_api.get(f"/api/imports/{job.pk}/").status_code == 200
    assert not Passage.objects.exists()


def test_import_pages_are_admin_only(rater_client):
    job = ImportJob.objects.create(kind="qrels", file_name="x")
    base = f"/imports/{job.pk}/"
    for url in ("/imports/", base, f"/jobs/import/{job.pk}/progress/", base + "errors.csv"):
        assert rater_client.get(url).status_code == 403


def test_the_import_page_runs_an_upload_and_shows_the_error_table(admin_client, django_capture_on_commit_callbacks):
    assert admin_client.get("/imports/").status_code == 200
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_client.post(
            "/imports/",
            {"kind": "passages_jsonl", "file": _upload("p.jsonl", b'{"id": "a", "text": "x"}\nnope\n{"x": 1}\n')},
        )
    assert response.status_code == 302
    page = admin_client.get(response["Location"])
    html = page.content.decode()
    assert "Errors (2)" in html and "invalid JSON" in html and "p.jsonl" in html
    report = admin_client.get(response["Location"] + "errors.csv").content.decode().splitlines()
    assert report[0] == "file,line,reason" and report[1].startswith("p.jsonl,2,invalid JSON")
    job = ImportJob.objects.latest("pk")
    progress = admin_client.get(f"/jobs/import/{job.pk}/progress/").json()
    assert progress["status"] == "failed" and progress["detail"]["errors"] == 2
    assert "p.jsonl" in admin_client.get("/imports/").content.decode()


def test_import_data_command_prints_the_report_and_fails_non_zero(tmp_path, small_collection):
    good = tmp_path / "labels.tsv"
    good.write_text("1_1\tWhat is throat cancer?\tSE\n1_2\tIs it treatable?\tFT\n", encoding="utf-8")
    out = io.StringIO()
    call_command("import_data", "utterance_labels", str(good), "--collection", "Mini", stdout=out)
    assert "succeeded into Mini" in out.getvalue()
    assert Turn.objects.get(turn_id="1_2").utterance_class == "FT"
    bad = tmp_path / "bad.tsv"
    bad.write_text("1_1\tx\tSE\n5_5\ty\tFT\n6_1\tz\tPT\n", encoding="utf-8")
    err = io.StringIO()
    with pytest.raises(CommandError, match="2 error"):
        call_command("import_data", "utterance_labels", str(bad), "--collection", "Mini", stderr=err)
    assert "bad.tsv:2: unknown turn 5_5" in err.getvalue() and "bad.tsv:3:" in err.getvalue()
    out = io.StringIO()
    call_command(
        "import_data", "utterance_labels", str(bad), "--collection", "Mini", "--option", "skip_unknown=true", stdout=out
    )
    assert "skipped_unknown 2" in out.getvalue()


def test_a_request_declaring_more_than_the_limit_is_refused_before_its_body_is_read(admin_api, admin_client, settings):
    settings.ECAST_MAX_UPLOAD_BYTES = 1000
    big = _upload("p.tsv", b"MARCO_1\t" + b"x" * 200_000 + b"\n")
    response = admin_api.post("/api/imports/", {"kind": "passages_tsv", "file": big}, format="multipart")
    assert response.status_code == 413 and "upload limit" in response.json()["detail"]
    big.seek(0)
    page = admin_client.post("/imports/", {"kind": "passages_tsv", "file": big}, follow=True)
    assert "upload limit" in page.content.decode()
    assert not ImportJob.objects.exists() and not Passage.objects.exists()


def _run_with_unknown_turns(tmp_path, unknown: int):
    lines = ["1_1 Q0 d1 1 9.0 tag", "1_1 Q0 d1 2 8.0 tag"] + [f"9{i:03d}_1 Q0 d{i} 1 1.0 tag" for i in range(unknown)]
    path = tmp_path / "big.run"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_the_job_page_summarises_warnings_by_kind_and_offers_the_full_list_as_csv(
    tmp_path, admin_client, small_collection
):
    from ecast.imports.services import import_file

    job = import_file(kind="run", path=_run_with_unknown_turns(tmp_path, 191), collection=small_collection)
    assert job.status == "succeeded", job.errors
    html = admin_client.get(f"/imports/{job.pk}/").content.decode()
    assert "Warnings (192)" in html
    summary = html[html.index('id="warning-summary"') :]
    assert '<td>unknown turn</td><td class="num">191</td>' in summary
    assert '<td>duplicate lines</td><td class="num">1</td>' in summary
    assert "unknown turn 9000_1 in Mini" in summary and "unknown turn 9002_1 in Mini" in summary
    assert "unknown turn 9003_1" not in summary and "… and 188 more" in summary
    assert f'href="/imports/{job.pk}/warnings.csv"' in html
    rows = admin_client.get(f"/imports/{job.pk}/warnings.csv").content.decode().splitlines()
    assert rows[0] == "kind,file,line,reason" and len(rows) == 1 + 192
    assert rows[1] == "unknown turn,big.run,3,unknown turn 9000_1 in Mini: its lines were skipped"


def test_import_data_prints_warnings_as_a_summary_by_kind(tmp_path, small_collection):
    out = io.StringIO()
    call_command("import_data", "run", str(_run_with_unknown_turns(tmp_path, 5)), "--collection", "Mini", stdout=out)
    text = out.getvalue()
    assert "6 warning(s) (the import went ahead):" in text and "5 × unknown turn, e.g.:" in text
    assert "big.run:3: unknown turn 9000_1 in Mini: its lines were skipped" in text and "… and 2 more" in text
    assert "9004_1" not in text and "warnings.csv" in text


def test_a_failed_import_data_keeps_no_collection_it_created(tmp_path):
    from ecast.models import Collection

    bad = tmp_path / "bad.run"
    bad.write_text("not a run line\n", encoding="utf-8")
    err = io.StringIO()
    with pytest.raises(CommandError, match="the new collection “Brand new” was not kept"):
        call_command("import_data", "run", str(bad), "--collection", "Brand new", stderr=err)
    assert "bad.run:1:" in err.getvalue()
    assert not Collection.objects.filter(name="Brand new").exists()
    assert ImportJob.objects.get().status == "failed"


def test_passages_uploaded_for_a_collection_join_its_corpus_as_the_import_page_says(
    admin_client, small_collection, django_capture_on_commit_callbacks
):
    page = admin_client.get("/imports/").content.decode()
    assert "Passage texts join the chosen collection&#x27;s corpus, which its built-in BM25 runs search" in page
    with django_capture_on_commit_callbacks(execute=True):
        admin_client.post(
            "/imports/",
            {"kind": "passages_tsv", "collection": small_collection.pk, "file": _upload("p.tsv", b"MARCO_7\tgarage\n")},
        )
    assert list(small_collection.corpus.values_list("passage_id", flat=True)) == ["MARCO_7"]
