"""Stored scores through the database equal the shipped trec_eval summaries (DECAF CAsT 2019 exp1 and exp16)."""

from __future__ import annotations

import pytest

from evaluation import services
from evaluation.models import Run
from evaluation.selectors import score_means
from tests.evaluation.helpers import cast2019_decaf

pytestmark = pytest.mark.django_db

PAIRS = {
    "nDCG@3": "ndcg_cut_3",
    "AP": "map",
    "Bpref": "bpref",
    "RR": "recip_rank",
    "P@10": "P_10",
    "R@100": "recall_100",
}


def test_stored_means_equal_trec_eval_for_two_decaf_runs(shared_data):
    runs = (1, 16)
    coll, version = cast2019_decaf(shared_data, runs, "CAsT 2019 (test)")
    services.scores_compute_for_version(version=version)
    means = score_means(version=version, measures=list(PAIRS))
    for n in runs:
        summary = {}
        for line in (shared_data / f"runs/cast2019_decaf/exp{n}.trec_eval.txt").read_text().splitlines():
            parts = line.split()
            if len(parts) == 3 and parts[1] == "all":
                summary[parts[0]] = parts[2]
        run_id = Run.objects.get(collection=coll, name=f"exp{n}").pk
        for measure, te in PAIRS.items():
            assert means[run_id][measure] == pytest.approx(float(summary[te]), abs=1e-4), (n, measure)
