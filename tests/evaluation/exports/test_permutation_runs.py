"""A permutation experiment's rankings download as one TREC file, a run tag per system and order, and ir_measures
on the file (split by tag) gives the per-turn scores the experiment stored."""

from __future__ import annotations

import gzip
from collections import defaultdict

import ir_measures
import pytest
from django.test import Client

from evaluation.models import Permutation, PermutationResult, Qrel
from evaluation.permutations import services as svc
from tests.evaluation.permutations.helpers import labelled_collection

pytestmark = pytest.mark.django_db


@pytest.fixture
def experiment(settings, tmp_path, django_capture_on_commit_callbacks):
    settings.ECAST_CACHE_DIR = tmp_path / "cache"
    coll, version = labelled_collection()
    with django_capture_on_commit_callbacks(execute=True):
        exp = svc.permutation_experiment_create(
            collection=coll, name="exp", qrels_version=version, systems=["current", "fu"], k=3, seed=1
        )
    exp.refresh_from_db()
    return exp


def test_every_system_on_every_order_downloads_and_rescores_to_the_stored_per_turn_values(admin_client, experiment):
    response = admin_client.get(f"/evaluation/permutations/{experiment.pk}/runs.run.gz")
    assert response.status_code == 200 and response["Content-Type"] == "application/gzip"
    assert response["Content-Disposition"].endswith('-runs.run.gz"')
    text = gzip.decompress(b"".join(response.streaming_content)).decode()
    runs: dict[str, list[ir_measures.ScoredDoc]] = defaultdict(list)
    for line in text.splitlines():
        qid, _, doc, _, score, tag = line.split()
        runs[tag].append(ir_measures.ScoredDoc(qid, doc, float(score)))

    results = PermutationResult.objects.filter(permutation__experiment=experiment).select_related("permutation")
    expected_tags = {
        f"{r.system}@{'original' if r.permutation.is_original else f'order{r.permutation.index}'}" for r in results
    }
    # One run per system and order number: conversation by conversation, its order of that number (its original
    # order under "@original"), as a permuted test collection is read.
    assert set(runs) == expected_tags

    qrels = [
        ir_measures.Qrel(t, p, g)
        for t, p, g in Qrel.objects.filter(version=experiment.qrels_version).values_list(
            "turn__turn_id", "passage_id", "grade"
        )
    ]
    measure = ir_measures.parse_measure(experiment.measure)
    checked = 0
    for r in results:
        tag = f"{r.system}@{'original' if r.permutation.is_original else f'order{r.permutation.index}'}"
        got = {m.query_id: m.value for m in measure.iter_calc(qrels, runs[tag])}
        for turn_id, stored in r.per_turn.items():
            if turn_id in got:
                assert got[turn_id] == pytest.approx(stored, abs=1e-9), (tag, turn_id)
                checked += 1
    assert checked > 20


def test_only_admins_download_an_experiments_rankings(rater_client, experiment):
    url = f"/evaluation/permutations/{experiment.pk}/runs.run.gz"
    assert rater_client.get(url).status_code == 403
    assert Client().get(url).status_code == 302  # to log in
    assert Permutation.objects.filter(experiment=experiment).exists()
