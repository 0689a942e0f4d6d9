"""The agreement report on an LLM version against its human parent: κ equals scikit-learn's, per-grade precision and
recall equal scikit-learn's, τ equals scipy's, all on the grades and scores read back independently."""

from __future__ import annotations

import pytest
from scipy.stats import kendalltau
from sklearn.metrics import cohen_kappa_score, precision_recall_fscore_support

from evaluation import services as eval_services
from evaluation.agreement import selectors as asel
from evaluation.models import Qrel, Run
from evaluation.selectors import score_rows
from judging.llm import services
from judging.models import LlmLabel
from tests.evaluation.helpers import add_run
from tests.judging.llm.helpers import judged_collection

pytestmark = pytest.mark.django_db


def test_the_llm_version_against_its_human_parent_matches_scikit_learn_and_scipy(
    tiny_causal, django_capture_on_commit_callbacks
):
    coll, original, _ = judged_collection()
    add_run(coll, "middle", {"1_1": ["d3", "d1"], "1_2": ["d5", "d4"], "2_1": ["d6"]})
    with django_capture_on_commit_callbacks(execute=True):
        job = services.llm_judge_job_create(collection=coll, source_version=original, model=str(tiny_causal))
    job.refresh_from_db()
    llm = job.target_version
    for version in (original, llm):
        eval_services.scores_compute_for_version(version=version, measures=["nDCG@3"])

    report = asel.agreement_report(a=original, b=llm, measure="nDCG@3")

    human = {
        (t, p): g for t, p, g in Qrel.objects.filter(version=original).values_list("turn_id", "passage_id", "grade")
    }
    labels = list(LlmLabel.objects.filter(job=job).order_by("turn_id", "passage_id"))
    a = [human[(lb.turn_id, lb.passage_id)] for lb in labels]
    b = [lb.grade for lb in labels]
    assert report["items"] == 7 and report["only_a"] == 1 and report["only_b"] == 0  # d8 has no text
    if len(set(b)) > 1:
        expected = cohen_kappa_score(a, b, labels=[0, 1, 2, 3, 4], weights="linear")
        assert report["kappa"]["value"] == pytest.approx(expected)
    else:  # a model that gives every pair one grade: κ = 0 by construction, reported as undefined
        assert report["kappa"]["value"] is None
        assert report["kappa"]["why_undefined"].startswith(f"B gave all 7 item(s) grade {b[0]}")
    precision, recall, _, _ = precision_recall_fscore_support(a, b, labels=[0, 1, 2, 3, 4], zero_division=0)
    for i, row in enumerate(report["per_grade"]):
        assert (row["precision"] or 0.0) == pytest.approx(precision[i])
        assert (row["recall"] or 0.0) == pytest.approx(recall[i])
        assert row["in_b"] == b.count(i)

    # τ compares the runs on the turns both versions judged: d8, 2_2's only passage, has no text, so the LLM
    # version judges 1_1, 1_2 and 2_1 of the original's four turns.
    shared = {"1_1", "1_2", "2_1"}
    assert (report["ranking"]["shared_turns"], report["ranking"]["turns_a"], report["ranking"]["turns_b"]) == (3, 4, 3)

    def means(version):
        names = dict(Run.objects.filter(collection=coll).values_list("pk", "name"))
        per_run: dict[str, list[float]] = {}
        for row in score_rows(version_ids=[version.pk], measures=["nDCG@3"], run_ids=list(names)):
            if row.turn_id in shared:
                per_run.setdefault(names[row.run_id], []).append(row.value)
        return {r: sum(v) / len(v) for r, v in per_run.items()}

    ma, mb = means(original), means(llm)
    runs = sorted(ma)
    tau = kendalltau([ma[r] for r in runs], [mb[r] for r in runs]).statistic
    got = report["ranking"]["tau"]
    assert got is not None and got == pytest.approx(tau)
    assert report["ranking"]["n"] == 3
