"""Qrels export: TREC format re-read by ir_measures, aggregation choices, sidecar JSON, streamed responses."""

import io
import json

import ir_measures
import pytest

from judging.models import PoolPair
from judging.relevance import selectors, services, versions
from judging.relevance.qrels_export import aggregate, write_qrels
from tests.judging.relevance import helpers


def test_aggregation_rules_on_hand_worked_grades():
    assert aggregate([3, 1, 1, 4], "majority") == 1
    assert aggregate([3, 1, 4, 4], "majority") == 4
    assert aggregate([3, 1], "majority") == 1  # tie → lowest tied grade
    assert aggregate([4, 0, 1], "median") == 1
    assert aggregate([4, 0, 1, 3], "median") == 1  # lower median
    assert aggregate([2, 4, 4], "primary") == 2
    with pytest.raises(ValueError):
        aggregate([], "majority")
    with pytest.raises(ValueError):
        aggregate([1], "mean")


def test_write_qrels_refuses_ids_with_whitespace():
    with pytest.raises(ValueError):
        write_qrels([("1_1", "bad id", 1)], io.StringIO())


def _read(text: str) -> dict[tuple[str, str], int]:
    return {(q.query_id, q.doc_id): q.relevance for q in ir_measures.read_trec_qrels(io.StringIO(text))}


@pytest.fixture
def judged_version(small_collection, assessor):
    """original + new with d2 judged 4/0/1 by three assessors, f5 judged 2 by one, e2 (topic 2) judged 3."""
    pool, original = helpers.standard_pool(small_collection, assessors_per_pair=3)
    derived = versions.qrels_version_derive(parent=original, pool=pool)
    users = [assessor, helpers.assessor_user("assessor2"), helpers.assessor_user("assessor3")]
    d2 = PoolPair.objects.get(pool=pool, passage_id="d2")
    for user, grade in zip(users, [4, 0, 1], strict=True):
        a = services.assignment_create(pool=pool, conversation=d2.turn.conversation, assessor=user)
        services.judgment_submit(assignment=a, pair=d2, grade=grade, assessor=user)
    a1 = services.assignment_take(pool=pool, assessor=assessor)
    services.judgment_submit(
        assignment=a1, pair=PoolPair.objects.get(pool=pool, passage_id="f5"), grade=2, assessor=assessor
    )
    e2 = PoolPair.objects.get(pool=pool, passage_id="e2")
    a2 = services.assignment_create(pool=pool, conversation=e2.turn.conversation, assessor=assessor)
    services.judgment_submit(assignment=a2, pair=e2, grade=3, assessor=assessor)
    return derived


@pytest.mark.django_db
@pytest.mark.parametrize(("aggregation", "d2_grade"), [("majority", 0), ("median", 1), ("primary", 4)])
def test_every_export_is_valid_trec_qrels_with_the_chosen_aggregation(judged_version, aggregation, d2_grade):
    out = io.StringIO()
    write_qrels(selectors.qrels_export_rows(version=judged_version, aggregation=aggregation), out)
    assert _read(out.getvalue()) == {
        ("1_1", "d1"): 2,
        ("2_1", "e1"): 0,
        ("1_1", "d2"): d2_grade,
        ("1_2", "f5"): 2,
        ("2_1", "e2"): 3,
    }


@pytest.mark.django_db
def test_the_original_version_exports_unchanged(judged_version):
    out = io.StringIO()
    write_qrels(selectors.qrels_export_rows(version=judged_version.parent, aggregation="majority"), out)
    assert _read(out.getvalue()) == {("1_1", "d1"): 2, ("2_1", "e1"): 0}


@pytest.mark.django_db
def test_the_sidecar_names_threshold_pool_runs_depth_assessors_and_counts(judged_version):
    side = selectors.qrels_export_sidecar(version=judged_version, aggregation="median")
    assert side["relevance_threshold"] == 1 and side["aggregation"] == "median"
    assert side["parent_version"] == "original"
    assert side["pools"][0]["runs"] == ["A", "B"] and side["pools"][0]["depth"] == 3
    assert side["assessors"] == [
        {"username": "assessor1", "judgments": 3},
        {"username": "assessor2", "judgments": 1},
        {"username": "assessor3", "judgments": 1},
    ]
    assert side["counts"]["rows"] == 5 and side["counts"]["imported"] == 2 and side["counts"]["assessed"] == 3
    assert side["counts"]["pairs_with_several_assessors"] == 1


@pytest.mark.django_db
def test_the_export_api_streams_qrels_that_ir_measures_reads(judged_version, admin_api):
    resp = admin_api.get(f"/api/judging/relevance/qrels-versions/{judged_version.pk}/export/?aggregation=median")
    assert resp.status_code == 200 and resp.streaming
    text = b"".join(resp.streaming_content).decode()
    assert _read(text)[("1_1", "d2")] == 1
    assert "attachment" in resp["Content-Disposition"]
    bad = admin_api.get(f"/api/judging/relevance/qrels-versions/{judged_version.pk}/export/?aggregation=mean")
    assert bad.status_code == 400


@pytest.mark.django_db
def test_the_export_page_streams_and_the_sidecar_downloads(judged_version, admin_client):
    resp = admin_client.get(f"/judging/relevance/admin/versions/{judged_version.pk}/qrels/?aggregation=primary")
    assert resp.status_code == 200 and resp.streaming
    assert _read(b"".join(resp.streaming_content).decode())[("1_1", "d2")] == 4
    side = admin_client.get(f"/judging/relevance/admin/versions/{judged_version.pk}/sidecar/?aggregation=primary")
    assert side.status_code == 200 and json.loads(side.content)["aggregation"] == "primary"


@pytest.mark.parametrize("bad", ["a b", "a\tb", "a\rb", "a\x0bb", "a\u00a0b"])
def test_the_streamed_writer_refuses_any_whitespace_in_ids(bad):
    with pytest.raises(ValueError, match="whitespace"):
        write_qrels([("1_1", "ok", 1), ("1_1", bad, 1)], io.StringIO())
    with pytest.raises(ValueError, match="whitespace"):
        write_qrels([(bad, "doc", 1)], io.StringIO())
