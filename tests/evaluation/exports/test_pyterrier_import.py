"""A PyTerrier results CSV imports as a run: the same rankings as its TREC twin, a downloaded CSV round-trips, and a
bad file is refused with file, line and reason and nothing written."""

from __future__ import annotations

import gzip

import pytest
from django.urls import reverse

from ecast.imports.services import import_file, run_import
from ecast.imports.sniff import sniff_path
from ecast.models import ImportJob
from evaluation.models import Run, RunTurn
from evaluation.selectors import run_dict
from tests.evaluation.helpers import build

pytestmark = pytest.mark.django_db

# As ``pt.Experiment``/``DataFrame.to_csv`` writes results: an index column, docid, a query with a comma.
PYTERRIER_CSV = (
    ",qid,docid,docno,rank,score,query,name\n"
    '0,1_1,10,d1,0,14.25,"what, then",BM25\n'
    '1,1_1,11,d3,1,9.5,"what, then",BM25\n'
    '2,1_1,12,d2,2,9.5,"what, then",BM25\n'
    "3,1_2,13,d4,0,3.0,next,BM25\n"
)


def test_a_pyterrier_results_csv_imports_as_a_run_named_by_its_name_column(small_collection, tmp_path):
    path = tmp_path / "bm25.csv"
    path.write_text(PYTERRIER_CSV)
    assert sniff_path(path).formats == {"pyterrier_run_csv"}
    run = run_import(collection=small_collection, path=path)
    assert run.name == "BM25"
    # Ranked by score, ties by docno descending (trec_eval's order), exactly as a TREC run of the same lines.
    rankings = {r.turn.turn_id: (r.doc_ids, r.scores) for r in RunTurn.objects.filter(run=run)}
    assert rankings == {"1_1": (["d1", "d3", "d2"], [14.25, 9.5, 9.5]), "1_2": (["d4"], [3.0])}
    trec = tmp_path / "bm25.run"
    trec.write_text("1_1 Q0 d1 1 14.25 t\n1_1 Q0 d2 3 9.5 t\n1_1 Q0 d3 2 9.5 t\n1_2 Q0 d4 1 3.0 t\n")
    twin = run_import(collection=small_collection, path=trec, name="twin")
    assert run_dict(run=twin) == run_dict(run=run)


def test_a_run_downloaded_as_csv_imports_back_unchanged(admin_client, tmp_path):
    coll, _version, runs = build()
    body = b"".join(
        admin_client.get(reverse("evaluation-run-download", args=[runs["strong"].pk, "csv"])).streaming_content
    )
    path = tmp_path / "strong.csv"
    path.write_bytes(body)
    again = run_import(collection=coll, path=path, name="strong-again")
    assert run_dict(run=again) == run_dict(run=runs["strong"])
    gz = tmp_path / "strong.run.gz"
    gz.write_bytes(
        b"".join(
            admin_client.get(reverse("evaluation-run-download", args=[runs["strong"].pk, "trec"])).streaming_content
        )
    )
    assert gzip.decompress(gz.read_bytes()).startswith(b"1_1 Q0 d1 1 ")
    assert run_dict(run=run_import(collection=coll, path=gz, name="strong-trec")) == run_dict(run=runs["strong"])


def test_a_bad_pyterrier_csv_is_refused_line_by_line_and_nothing_is_written(small_collection, tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text(
        "qid,docno,score,rank\n1_1,d1,1.5,0\n1_1,d2,high,1\n1_1,,1.0,2\n1_2,d4,2.0,first\n1_2,d5,inf,3\n1_2,d6\n"
    )
    job = import_file(kind="run", path=path, collection=small_collection)
    assert job.status == ImportJob.Status.FAILED
    assert [(e["file"], e["line"], e["reason"]) for e in job.errors] == [
        ("bad.csv", 3, "score 'high' is not a number"),
        ("bad.csv", 4, "docno '' is empty or holds whitespace"),
        ("bad.csv", 5, "rank 'first' is not an integer"),
        ("bad.csv", 6, "score 'inf' is not finite"),
        ("bad.csv", 7, "expected 4 columns like the header, found 2"),
    ]
    assert not Run.objects.exists() and not RunTurn.objects.exists()


def test_a_csv_without_a_score_column_is_not_taken_for_a_run(small_collection, tmp_path):
    path = tmp_path / "qrels.csv"
    path.write_text("qid,docno,label\n1_1,d1,2\n")
    job = import_file(kind="run", path=path, collection=small_collection)
    assert job.status == ImportJob.Status.FAILED
    assert "PyTerrier qrels CSV" in job.errors[0]["reason"] and not Run.objects.exists()


def test_a_pyterrier_csv_uploads_through_the_api_and_a_bad_one_names_file_and_line(admin_api):
    import io

    coll, _version, _runs = build()
    f = io.BytesIO(b"qid,docno,score,rank,name\n1_1,d1,3.0,0,pt\n2_1,d7,1.0,0,pt\n")
    f.name = "pt.csv"
    resp = admin_api.post(reverse("api-eval-run-upload"), {"collection": coll.pk, "file": f}, format="multipart")
    assert resp.status_code == 201, resp.content
    assert run_dict(run=Run.objects.get(collection=coll, name="pt")) == {"1_1": {"d1": 3.0}, "2_1": {"d7": 1.0}}
    f = io.BytesIO(b"qid,docno,score\n1_1,d1,3.0\n1_1,d2,n/a\n")
    f.name = "bad.csv"
    resp = admin_api.post(reverse("api-eval-run-upload"), {"collection": coll.pk, "file": f}, format="multipart")
    assert resp.status_code == 400 and "bad.csv:3: score 'n/a' is not a number" in resp.json()["detail"]
