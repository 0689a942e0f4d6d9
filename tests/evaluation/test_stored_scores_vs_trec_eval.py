"""Stored scores through the database equal the shipped trec_eval summaries (DECAF CAsT 2019 exp1 and exp16)."""

from __future__ import annotations

import pytest

from ecast.imports.parsers import read_qrels, read_run
from ecast.models import Collection, Conversation, Turn
from evaluation import services
from evaluation.models import Qrel, QrelsVersion, Run, RunTurn
from evaluation.selectors import score_means

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
    qrels = read_qrels(shared_data / "cast/2019/2019qrels.txt")
    runs = {n: read_run(shared_data / f"runs/cast2019_decaf/exp{n}.run.gz") for n in (1, 16)}
    coll = Collection.objects.create(name="CAsT 2019 (test)", year=2019, relevance_threshold=1)
    qids = sorted(set(qrels) | {q for r in runs.values() for q in r})
    convs = {}
    for q in qids:
        topic = q.split("_")[0]
        if topic not in convs:
            convs[topic] = Conversation.objects.create(collection=coll, topic_id=topic)
    Turn.objects.bulk_create(
        [
            Turn(conversation=convs[q.split("_")[0]], collection=coll, number=int(q.split("_")[1]), turn_id=q)
            for q in qids
        ]
    )
    pk = dict(Turn.objects.filter(collection=coll).values_list("turn_id", "pk"))
    version = QrelsVersion.objects.create(collection=coll, name="original")
    Qrel.objects.bulk_create(
        [
            Qrel(version=version, turn_id=pk[q], passage_id=d, grade=g)
            for q, docs in qrels.items()
            for d, g in docs.items()
        ],
        batch_size=5000,
    )
    for n, run in runs.items():
        r = Run.objects.create(collection=coll, name=f"exp{n}")
        rows = []
        for q, docs in run.items():
            # The importer's normalisation: by score, ties by docid descending (trec_eval's order).
            ranked = sorted(docs.items(), key=lambda kv: (kv[1], kv[0]), reverse=True)
            rows.append(RunTurn(run=r, turn_id=pk[q], doc_ids=[d for d, _ in ranked], scores=[s for _, s in ranked]))
        RunTurn.objects.bulk_create(rows)
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
