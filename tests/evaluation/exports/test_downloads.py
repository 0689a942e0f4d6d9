"""Run, qrels and per-query downloads from the pages and the API: contents, names, formats and who may download."""

from __future__ import annotations

import csv
import gzip
import io
import json
import math

import ir_measures
import pytest
from django.urls import reverse

from evaluation import metrics, services
from evaluation import selectors as sel
from evaluation.scoring import MEASURES
from tests.evaluation.helpers import build

pytestmark = pytest.mark.django_db


@pytest.fixture
def scored():
    coll, version, runs = build(threshold=2)
    services.scores_compute_for_version(version=version)
    return coll, version, runs


def _body(response) -> bytes:
    return b"".join(response.streaming_content)


def _urls(version, run) -> list[str]:
    pages = [reverse("evaluation-run-download", args=[run.pk, f]) for f in ("trec", "csv", "ranx")]
    pages += [reverse("evaluation-qrels-download", args=[version.pk, f]) for f in ("trec", "csv", "ranx")]
    pages.append(reverse("evaluation-per-query-download", args=[version.pk, "csv"]))
    return pages


def _api_urls(version, run) -> list[str]:
    apis = [reverse("api-eval-run-download", args=[run.pk, f]) for f in ("trec", "csv", "ranx")]
    apis += [reverse("api-eval-qrels-download", args=[version.pk, f]) for f in ("trec", "csv", "ranx")]
    apis.append(reverse("api-eval-per-query-download", args=[version.pk, "csv"]))
    return apis


@pytest.mark.parametrize("who", ["rater_client", "assessor_client"])
def test_raters_and_assessors_cannot_download_runs_qrels_or_scores(request, who, scored):
    _coll, version, runs = scored
    client = request.getfixturevalue(who)
    assert [client.get(u).status_code for u in _urls(version, runs["strong"])] == [403] * 7


def test_anonymous_users_are_sent_to_login_for_downloads(client, scored):
    _coll, version, runs = scored
    for url in _urls(version, runs["strong"]):
        response = client.get(url)
        assert response.status_code == 302 and "/accounts/login/" in response["Location"]


@pytest.mark.parametrize("who,status", [("rater_api", 403), ("assessor_api", 403), ("anon_api", 401)])
def test_the_download_api_is_for_admins_only(request, who, status, scored):
    _coll, version, runs = scored
    client = request.getfixturevalue(who)
    assert {client.get(u).status_code for u in _api_urls(version, runs["strong"])} == {status}


def test_admins_download_everything_from_the_pages_and_the_api(admin_client, admin_api, scored):
    _coll, version, runs = scored
    for url in _urls(version, runs["strong"]):
        assert admin_client.get(url).status_code == 200, url
    for url in _api_urls(version, runs["strong"]):
        assert admin_api.get(url).status_code == 200, url


def test_an_unknown_format_is_not_found(admin_client, admin_api, scored):
    _coll, version, runs = scored
    assert admin_client.get(reverse("evaluation-run-download", args=[runs["strong"].pk, "xml"])).status_code == 404
    assert admin_api.get(reverse("api-eval-per-query-download", args=[version.pk, "ranx"])).status_code == 404
    assert admin_client.get(reverse("evaluation-run-download", args=[99999, "trec"])).status_code == 404


def test_a_trec_run_downloads_gzipped_and_named_after_collection_and_run(admin_client, scored):
    _coll, _version, runs = scored
    response = admin_client.get(reverse("evaluation-run-download", args=[runs["strong"].pk, "trec"]))
    assert response["Content-Disposition"] == 'attachment; filename="EvalMini-strong.run.gz"'
    lines = gzip.decompress(_body(response)).decode().splitlines()
    assert lines[:4] == [
        "1_1 Q0 d1 1 4.0 strong",
        "1_1 Q0 d3 2 3.0 strong",
        "1_1 Q0 d2 3 2.0 strong",
        "1_1 Q0 x1 4 1.0 strong",
    ]
    assert len(lines) == 4 + 3 + 1 + 2 + 2


def test_run_csv_and_ranx_json_hold_the_same_rankings(admin_client, scored):
    _coll, _version, runs = scored
    pk = runs["weak"].pk
    rows = list(
        csv.reader(io.StringIO(_body(admin_client.get(reverse("evaluation-run-download", args=[pk, "csv"]))).decode()))
    )
    assert rows[0] == ["qid", "docno", "score", "rank"] and rows[1] == ["1_1", "x1", "3.0", "0"]
    ranx = json.loads(_body(admin_client.get(reverse("evaluation-run-download", args=[pk, "ranx"]))))
    assert ranx == {
        "1_1": {"x1": 3.0, "d2": 2.0, "d1": 1.0},
        "1_2": {"x2": 3.0, "d5": 2.0, "d4": 1.0},
        "2_2": {"d8": 1.0},
    }
    assert {(r[0], r[1], float(r[2])) for r in rows[1:]} == {(q, d, s) for q, ds in ranx.items() for d, s in ds.items()}


def test_the_per_query_table_names_binary_measures_with_their_threshold(admin_client, scored):
    _coll, version, runs = scored
    response = admin_client.get(reverse("evaluation-per-query-download", args=[version.pk, "csv"]))
    assert response["Content-Disposition"] == 'attachment; filename="EvalMini-original-perquery.csv"'
    rows = list(csv.DictReader(io.StringIO(_body(response).decode())))
    assert {r["name"] for r in rows} == {"strong", "weak"}
    got = {(r["name"], r["qid"], r["measure"]): float(r["value"]) for r in rows}
    assert got["strong", "1_1", "AP(rel=2)"] == 1.0
    assert got["weak", "2_1", "nDCG@3"] == 0.0  # judged, not ranked: 0 (trec_eval -c)
    assert len(rows) == 2 * 4 * len(MEASURES)


def _mean_by_ir_measures(measure: str, threshold: int, qrels, run) -> float:
    """trec_eval -c mean: every judged turn counts, a judged turn the run did not rank scores 0."""
    parsed = metrics.parse_measure(measure, rel_threshold=threshold)
    per_query = {m.query_id: m.value for m in ir_measures.iter_calc([parsed], qrels, run)}
    return math.fsum(per_query.get(q, 0.0) for q in qrels) / len(qrels)


def assert_downloads_reproduce_the_leaderboard(client, version, run) -> None:
    """ir_measures on the downloaded TREC run, ranx run and TREC qrels gives every mean the leaderboard shows."""
    qrels = list(
        ir_measures.read_trec_qrels(
            io.StringIO(_body(client.get(reverse("evaluation-qrels-download", args=[version.pk, "trec"]))).decode())
        )
    )
    qrels_by_qid: dict[str, dict[str, int]] = {}
    for q in qrels:
        qrels_by_qid.setdefault(q.query_id, {})[q.doc_id] = q.relevance
    assert qrels_by_qid == json.loads(
        _body(client.get(reverse("evaluation-qrels-download", args=[version.pk, "ranx"])))
    )
    trec_text = gzip.decompress(_body(client.get(reverse("evaluation-run-download", args=[run.pk, "trec"])))).decode()
    trec_run = list(ir_measures.read_trec_run(io.StringIO(trec_text)))
    ranx_run = json.loads(_body(client.get(reverse("evaluation-run-download", args=[run.pk, "ranx"]))))
    board = {row["run_id"]: row for row in sel.leaderboard(version=version, measures=MEASURES)}[run.pk]
    threshold = int(version.collection.relevance_threshold)
    for measure in MEASURES:
        shown = board["means"][measure]
        assert _mean_by_ir_measures(measure, threshold, qrels_by_qid, trec_run) == pytest.approx(shown, abs=1e-12), (
            measure
        )
        assert _mean_by_ir_measures(measure, threshold, qrels_by_qid, ranx_run) == pytest.approx(shown, abs=1e-12), (
            measure
        )


def test_downloaded_runs_and_qrels_reproduce_the_leaderboard_with_ir_measures(admin_client, scored):
    _coll, version, runs = scored
    for run in runs.values():
        assert_downloads_reproduce_the_leaderboard(admin_client, version, run)


def test_the_demo_bm25_run_downloaded_as_trec_and_ranx_reproduces_the_leaderboard(admin_client):
    from ecast.generation import demo as generation_demo
    from ecast.management.commands.load_demo import demo_collection_load
    from evaluation import demo as evaluation_demo
    from evaluation.models import QrelsVersion, Run
    from evaluation.robustness import demo as robustness_demo

    out = io.StringIO()
    collection = demo_collection_load(stdout=out)
    generation_demo.test_sets_load(collection=collection, stdout=out)
    robustness_demo.load(stdout=out)
    evaluation_demo.load(stdout=out)
    run = Run.objects.get(collection=collection, name="ecast-bm25-manual")
    assert "built-in BM25" in run.description
    for version in QrelsVersion.objects.filter(collection=collection):
        assert_downloads_reproduce_the_leaderboard(admin_client, version, run)


def test_the_runs_list_run_page_and_leaderboard_link_every_download(admin_client, scored):
    _coll, version, runs = scored
    strong = runs["strong"]
    run_links = [reverse("evaluation-run-download", args=[strong.pk, f]) for f in ("trec", "csv", "ranx")]
    qrels_links = [reverse("evaluation-qrels-download", args=[version.pk, f]) for f in ("trec", "csv", "ranx")]
    listing = admin_client.get(reverse("evaluation-runs")).content.decode()
    page = admin_client.get(reverse("evaluation-run", args=[strong.pk])).content.decode()
    board = admin_client.get(reverse("evaluation-leaderboard"), {"version": version.pk}).content.decode()
    for html in (listing, page, board):
        assert all(f'href="{u}"' in html for u in run_links)
        assert ">TREC</a> · " in html and ">ranx JSON</a>" in html
    assert all(f'href="{u}"' in board for u in qrels_links)
    assert f'href="{reverse("evaluation-per-query-download", args=[version.pk, "csv"])}"' in board
    versions = admin_client.get(reverse("relevance-admin")).content.decode()
    assert all(f'href="{u}"' in versions for u in qrels_links)
