"""End to end on real data: CLEF eHealth 2018 qrels and runs imported as an ad hoc collection (each qid a one-turn
conversation), then the pivot analysis through the services; the full-set MAP matches trec_eval (data README)."""

from __future__ import annotations

import pytest

from ecast.imports.services import qrels_import, run_import
from evaluation.analyses.services import pivots as pivot_services
from tests import factories

pytestmark = pytest.mark.django_db

RUNS = {
    "IELAB_01": ("IELAB__IELAB_01.txt.gz", 0.2644),
    "IMS_baseline": ("IMS__baseline.exp.gz", 0.2291),
    "indri_okapi_qe": ("baselines__indri_okapi_qe.out.gz", 0.1141),
    "elastic_BM25f_qe": ("baselines__elastic_BM25f_qe.out.gz", 0.1064),
}


def test_pivots_on_imported_clef_ehealth_2018_match_trec_eval(shared_data, django_capture_on_commit_callbacks):
    base = shared_data / "clef_ehealth_2018"
    coll = factories.collection("CLEF eHealth 2018", 2018, threshold=1)
    version = qrels_import(
        collection=coll, path=base / "qrels" / "CLEF2018_qrel_20180914.txt", options={"create_turns": True}
    )
    runs = [
        run_import(collection=coll, path=base / "runs_irtask1" / f, name=name, options={"create_turns": True})
        for name, (f, _) in RUNS.items()
    ]
    with django_capture_on_commit_callbacks(execute=True):
        obj = pivot_services.pivot_analysis_create(
            collection=coll, runs=runs, qrels_version=version, metrics=["AP", "nDCG@10"], n_splits=10
        )
    obj.refresh_from_db()
    assert obj.status == "succeeded", obj.error
    res = obj.results
    assert len(res["topics"]) == 50
    for name, (_, trec_eval_map) in RUNS.items():
        assert res["reference_means"]["AP"][res["systems"].index(name)] == pytest.approx(trec_eval_map, abs=5e-5)
    assert res["reference_means"]["nDCG@10"][res["systems"].index("IELAB_01")] == pytest.approx(0.6886, abs=5e-5)
