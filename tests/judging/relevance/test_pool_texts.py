"""Pools a person can judge: text coverage before a pool is made, pools of passages with text only (depth counted
over them), the derived qrels version a new pool feeds by default, and passage texts uploaded from the pool page."""

from __future__ import annotations

import gzip
import re

import pytest
from django.core.exceptions import ValidationError
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from ecast.models import ImportJob, Passage
from evaluation.models import QrelsVersion
from judging.models import Pool, PoolPair
from judging.relevance import pool_pairs, pools, texts
from tests import factories
from tests.judging.relevance import helpers

pytestmark = pytest.mark.django_db

# Texts for a few passages of helpers.standard_pool's runs. Plain depth-3 pool (11 pairs): 1_1 d2 d3 d4 · 1_2 f1 f2
# f3 f5 f6 · 2_1 e2 e3 e4 (d1 and e1 are judged in "original"). Of its 11 passages, d2 f1 f5 e3 have text.
TEXTS = {
    "d2": "Throat cancer is treatable when found early.",
    "d9": "Most throat cancers are squamous cell carcinomas.",
    "f1": "Smoking and alcohol cause most throat cancers.",
    "f5": "HPV infection is a growing cause of throat cancer.",
    "e1": "Bees are insects that pollinate flowers.",
    "e3": "Pesticides and habitat loss are killing bees.",
}


def _inputs(coll):
    original = helpers.qrels(coll, {"1_1": {"d1": 2}, "2_1": {"e1": 0}})
    run_a = helpers.run(
        coll, "A", {"1_1": ["d1", "d2", "d3", "d9"], "1_2": ["f1", "f2", "f3"], "2_1": ["e1", "e2", "e3"]}
    )
    run_b = helpers.run(coll, "B", {"1_1": ["d2", "d4", "d1"], "1_2": ["f1", "f5", "f6"], "2_1": ["e4", "e1", "e2"]})
    return original, [run_a, run_b]


def _pairs(pool):
    return {(p.turn.turn_id, p.passage_id) for p in PoolPair.objects.filter(pool=pool).select_related("turn")}


@pytest.mark.parametrize("chunk", [pool_pairs.POOL_CHUNK, 1])  # every turn at once, or one turn at a time
def test_the_preview_counts_a_hand_built_pools_passages_with_text_and_stores_nothing(
    small_collection, monkeypatch, chunk
):
    monkeypatch.setattr(pool_pairs, "POOL_CHUNK", chunk)
    helpers.passages(TEXTS)
    original, runs = _inputs(small_collection)
    preview = pools.pool_preview(collection=small_collection, qrels_version=original, runs=runs, depth=3)
    assert {k: preview[k] for k in ("turns", "pairs", "pairs_with_text", "passages", "passages_with_text")} == {
        "turns": 3,
        "pairs": 11,
        "pairs_with_text": 4,
        "passages": 11,
        "passages_with_text": 4,  # d2 f1 f5 e3
    }
    assert preview["already_judged_skipped"] == 4 and preview["text_only_default"] is True
    # Only passages with text, depth 3 over them: A 1_1 → d2 d9 (d9 at rank 4); B 1_1 → d2; 1_2 → f1 f5;
    # A 2_1 → e1 (judged, counts, skipped) e3; B 2_1 → e1 (judged).
    assert preview["text_only"] == {
        "pairs": 5,
        "passages": 5,
        "turns": 3,
        "already_judged_skipped": 2,
        "deepest_rank": 4,
    }
    assert not Pool.objects.exists()


def test_the_preview_is_restricted_to_the_chosen_turns_and_says_when_no_passage_has_text(small_collection):
    original, runs = _inputs(small_collection)
    preview = pools.pool_preview(
        collection=small_collection, qrels_version=original, runs=runs, depth=2, turn_ids=["1_2"]
    )
    assert (preview["turns"], preview["pairs"], preview["passages_with_text"]) == (1, 3, 0)  # f1 f2 f5
    assert preview["text_only_default"] is False and preview["text_only"]["pairs"] == 0


def test_a_text_only_pool_counts_its_depth_over_passages_with_text(small_collection):
    helpers.passages(TEXTS)
    original, runs = _inputs(small_collection)
    pool = pools.pool_create(collection=small_collection, qrels_version=original, runs=runs, depth=3, text_only=True)
    assert pool.text_only
    assert _pairs(pool) == {("1_1", "d2"), ("1_1", "d9"), ("1_2", "f1"), ("1_2", "f5"), ("2_1", "e3")}
    assert PoolPair.objects.get(pool=pool, passage_id="d9").best_rank == 4  # its rank in the run, below depth 3
    assert pool.stats["with_text"] == pool.stats["pairs"] == 5
    assert pool.stats["deepest_rank"] == 4 and pool.stats["already_judged_skipped"] == 2
    # Depth 1: run A's first passage with text is d2 (d1 has none), so A still contributes one pair to 1_1.
    shallow = pools.pool_create(
        collection=small_collection, qrels_version=original, runs=runs[:1], depth=1, text_only=True
    )
    assert _pairs(shallow) == {("1_1", "d2"), ("1_2", "f1")}  # 2_1: e1 is the first with text, and judged


def test_a_text_only_pool_walks_deep_rankings_to_find_its_passages(small_collection):
    original = helpers.qrels(small_collection, {})
    ranking = [f"x{i}" for i in range(1, 61)]
    run = helpers.run(small_collection, "deep", {"1_3": ranking})
    helpers.passages({"x40": "forty", "x45": "forty-five", "x59": "fifty-nine"})
    pool = pools.pool_create(collection=small_collection, qrels_version=original, runs=[run], depth=2, text_only=True)
    assert _pairs(pool) == {("1_3", "x40"), ("1_3", "x45")} and pool.stats["deepest_rank"] == 45


def test_text_only_defaults_to_on_when_any_pooled_passage_has_text(small_collection):
    original, runs = _inputs(small_collection)
    without = pools.pool_create(collection=small_collection, qrels_version=original, runs=runs, text_only=None)
    assert not without.text_only and without.stats["pairs"] == 11
    helpers.passages({"f6": "Throat cancer is treated with surgery and radiation."})
    with_text = pools.pool_create(collection=small_collection, qrels_version=original, runs=runs, text_only=None)
    assert with_text.text_only and _pairs(with_text) == {("1_2", "f6")}


def test_a_new_pool_feeds_original_plus_its_name_created_if_missing(small_collection):
    original, runs = _inputs(small_collection)
    pool = pools.pool_create(
        collection=small_collection, qrels_version=original, runs=runs, name="Round 1", feed_version=True
    )
    derived = pool.target_version
    assert derived.name == "original + Round 1" and derived.parent == original
    assert set(derived.qrels.values_list("passage_id", "grade")) == {("d1", 2), ("e1", 0)}
    # A second pool of the same name feeds the same version instead of failing.
    again = pools.pool_create(
        collection=small_collection, qrels_version=original, runs=runs[:1], name="Round 1", feed_version=True
    )
    assert again.target_version == derived and QrelsVersion.objects.filter(parent=original).count() == 1
    # Without feed_version (code callers such as the demos) no version is made.
    assert pools.pool_create(collection=small_collection, qrels_version=original, runs=runs).target_version is None


def test_a_pool_cannot_feed_an_imported_version_of_its_default_name_and_then_nothing_is_stored(small_collection):
    original, runs = _inputs(small_collection)
    factories.qrels_version(small_collection, "original + R")
    with pytest.raises(ValidationError, match="imported qrels version"):
        pools.pool_create_start(
            collection=small_collection, qrels_version=original, runs=runs, name="R", feed_version=True
        )
    assert not Pool.objects.exists()


def test_pools_made_in_the_api_and_the_form_feed_a_derived_version_by_default(
    small_collection, admin_api, admin_client
):
    helpers.passages(TEXTS)
    original, runs = _inputs(small_collection)
    resp = admin_api.post(
        reverse("api-relevance-pool-create"),
        {"collection": small_collection.pk, "qrels_version": original.pk, "runs": [r.pk for r in runs], "name": "API"},
        format="json",
    )
    assert resp.status_code == 202, resp.content
    body = resp.json()
    assert body["target_version"] == "original + API"
    assert body["text_only"] is True and body["stats"]["pairs"] == 5  # on by default: some passages have text
    page = admin_client.get(reverse("relevance-admin"), {"collection": small_collection.pk}).content.decode()
    assert re.search(r'<input[^>]*name="feed_version"[^>]* checked', page)
    assert re.search(r'<input[^>]*name="text_only"[^>]* checked', page)
    resp = admin_client.post(
        reverse("relevance-admin"),
        {
            "collection": small_collection.pk,
            "qrels_version": original.pk,
            "runs": [runs[0].pk],
            "depth": 3,
            "name": "Form",
            "text_only": "on",
            "feed_version": "on",
            "cluster_threshold": 0.9,
            "assessors_per_pair": 1,
            "aggregation": "majority",
        },
    )
    assert resp.status_code == 302, resp.content.decode()[:2000]
    pool = Pool.objects.get(name="Form")
    assert pool.text_only and pool.target_version.name == "original + Form"


def test_the_preview_api_gives_the_same_numbers_and_rejects_bad_input(small_collection, admin_api):
    helpers.passages(TEXTS)
    original, runs = _inputs(small_collection)
    url = reverse("api-relevance-pool-preview")
    params = {"collection": small_collection.pk, "qrels_version": original.pk, "runs": [r.pk for r in runs]}
    data = admin_api.get(url, {**params, "depth": 3}).json()
    assert (data["passages_with_text"], data["passages"], data["text_only"]["pairs"]) == (4, 11, 5)
    one_turn = admin_api.get(url, {**params, "depth": 2, "turn_ids": "1_1, 1_2"}).json()
    assert one_turn["turns"] == 2 and one_turn["pairs"] == 5  # 1_1 d2 d4 · 1_2 f1 f2 f5
    assert admin_api.get(url, {**params, "depth": 0}).status_code == 400
    bad_turn = admin_api.get(url, {**params, "turn_ids": "9_9"})
    assert bad_turn.status_code == 400 and "unknown" in bad_turn.json()["detail"]
    assert admin_api.get(url, {**params, "runs": [999]}).status_code == 400
    assert not Pool.objects.exists()


def _upload(name: str, content: bytes) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, content, content_type="application/octet-stream")


def test_texts_uploaded_on_the_pool_page_give_its_pairs_text(
    small_collection, admin_client, django_capture_on_commit_callbacks
):
    original, runs = _inputs(small_collection)
    pool = pools.pool_create(collection=small_collection, qrels_version=original, runs=runs, depth=3)
    assert pool.stats["with_text"] == 0
    corpus = "".join(f"{pid}\t{text}\n" for pid, text in TEXTS.items()) + "zz1\tnot needed by this collection\n"
    with django_capture_on_commit_callbacks(execute=True):
        resp = admin_client.post(
            reverse("relevance-pool-texts", args=[pool.pk]),
            {"file": _upload("corpus.tsv.gz", gzip.compress(corpus.encode())), "only_needed": "on"},
        )
    job = ImportJob.objects.get()
    assert resp.status_code == 302 and resp["Location"] == reverse("import-job", args=[job.pk])
    assert job.kind == "passages_tsv" and job.options == {"only_needed": "true"}
    assert job.status == ImportJob.Status.SUCCEEDED, job.errors
    assert job.counts["passages_created"] == 6 and job.counts["not_needed"] == 1  # d9, e1: ranked or judged
    assert not Passage.objects.filter(passage_id="zz1").exists()
    pool.refresh_from_db()
    with_text = set(PoolPair.objects.filter(pool=pool, has_text=True).values_list("passage_id", flat=True))
    assert with_text == {"d2", "f1", "f5", "e3"} and pool.stats["with_text"] == 4
    page = admin_client.get(reverse("relevance-pool", args=[pool.pk])).content.decode()
    assert "4 of 11" in page and "corpus.tsv.gz" in page


def test_a_jsonl_upload_without_only_needed_stores_every_passage(
    small_collection, admin_client, django_capture_on_commit_callbacks
):
    original, runs = _inputs(small_collection)
    pool = pools.pool_create(collection=small_collection, qrels_version=original, runs=runs, depth=3)
    lines = b'{"id": "d3", "contents": "Radiation therapy."}\n{"id": "other", "contents": "Unrelated."}\n'
    with django_capture_on_commit_callbacks(execute=True):
        admin_client.post(reverse("relevance-pool-texts", args=[pool.pk]), {"file": _upload("texts.jsonl", lines)})
    job = ImportJob.objects.get()
    assert job.kind == "passages_jsonl" and job.status == ImportJob.Status.SUCCEEDED, job.errors
    assert set(Passage.objects.values_list("passage_id", flat=True)) == {"d3", "other"}
    assert list(PoolPair.objects.filter(pool=pool, has_text=True).values_list("passage_id", flat=True)) == ["d3"]


def test_refreshing_texts_touches_only_pairs_whose_passage_has_text(small_collection):
    original, runs = _inputs(small_collection)
    pool = pools.pool_create(collection=small_collection, qrels_version=original, runs=runs, depth=3)
    assert texts.pool_texts_refresh() == 0
    factories.passages({"f1": "x", "f2": ""})  # a row without text is no text
    assert texts.pool_texts_refresh(pool_ids=[pool.pk]) == 1
    pool.refresh_from_db()
    assert pool.stats["with_text"] == 1 and pool.stats["pairs"] == 11


def test_the_needed_passage_ids_are_the_collections_ranked_judged_and_pooled_ones(small_collection):
    original, runs = _inputs(small_collection)
    pools.pool_create(collection=small_collection, qrels_version=original, runs=runs, depth=3)
    other = helpers.qrels(small_collection, {"2_2": {"q7": 1}}, name="extra")
    assert other.qrels.count() == 1
    needed = set(texts.needed_passage_ids(small_collection))
    assert needed == {"d1", "d2", "d3", "d4", "d9", "f1", "f2", "f3", "f5", "f6", "e1", "e2", "e3", "e4", "q7"}
