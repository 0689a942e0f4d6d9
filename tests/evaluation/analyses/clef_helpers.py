"""Read the CLEF eHealth 2018 runs/qrels straight from shared data, through the import's reader (plain Python)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ecast.imports.formats.qrels import read_qrels
from ecast.imports.formats.runs import read_run
from evaluation.metrics import evaluate

RUNS = {
    "IELAB_01": "IELAB__IELAB_01.txt.gz",
    "IMS_baseline": "IMS__baseline.exp.gz",
    "indri_okapi_qe": "baselines__indri_okapi_qe.out.gz",
    "elastic_BM25f_qe": "baselines__elastic_BM25f_qe.out.gz",
    "SINAI_Run1": "SINAI__SINAI_Run1_google+cTakes.result.gz",
    "terrier_BM25": "baselines__terrier_BM25_noqe.out.gz",
    "terrier_DirichletLM": "baselines__terrier_DirichletLM_noqe.out.gz",
    "terrier_TF_IDF": "baselines__terrier_TF_IDF_noqe.out.gz",
    "CUNI_en_run1": "CUNI__CUNI_en.run1.gz",
}


def per_topic(qrels, run, measures: list[str]) -> dict[str, dict[str, float]]:
    """{measure: {qid: value}} with every judged qid present (0 when the run lacks it), as trec_eval -c."""
    return evaluate(qrels, run, measures, rel_threshold=1)


def clef_matrices(shared: Path, measures: list[str], runs: dict[str, str] = RUNS):
    """Score matrices [systems × topics] per measure for the CLEF 2018 runs."""
    base = shared / "clef_ehealth_2018"
    qrels = read_qrels(base / "qrels" / "CLEF2018_qrel_20180914.txt")
    topics = sorted(qrels)
    systems = list(runs)
    mats = {m: np.zeros((len(systems), len(topics))) for m in measures}
    for i, name in enumerate(systems):
        values = per_topic(qrels, read_run(base / "runs_irtask1" / runs[name]), measures)
        for m in measures:
            mats[m][i] = [values[m][t] for t in topics]
    return systems, topics, mats, qrels
