"""`manage.py llm_judge` labels a human version inline and prints the agreement figures of the LLM version."""

from __future__ import annotations

import io

import pytest
from django.core.management import CommandError, call_command

from evaluation.agreement import selectors as asel
from judging.models import LlmJudgeJob
from tests.judging.llm.helpers import judged_collection

pytestmark = pytest.mark.django_db


def test_it_labels_the_version_and_prints_kappa_confusion_per_grade_and_tau(tiny_causal):
    coll, original, _ = judged_collection()
    out = io.StringIO()
    call_command(
        "llm_judge", "--collection", coll.name, "--qrels-version", "original", "--model", str(tiny_causal), stdout=out
    )
    text = out.getvalue()
    job = LlmJudgeJob.objects.get()
    assert job.status == "succeeded" and job.progress_done == 7
    report = asel.agreement_report(a=original, b=job.target_version, measure="nDCG@3")
    k, rk = report["kappa"], report["ranking"]
    if k["value"] is None:  # the tiny model may give every pair one grade
        assert f"Cohen's κ (linear) undefined: {k['why_undefined']}" in text
    else:
        assert f"Cohen's κ (linear) = {k['value']:.3f}" in text
    assert "7 pairs judged by both" in text and "grade 4: precision" in text
    shared = f"by nDCG@3 over the {rk['shared_turns']} turn(s) both judged (A {rk['turns_a']}, B {rk['turns_b']})"
    assert shared in text


def test_it_names_a_missing_version():
    coll, _, _ = judged_collection()
    with pytest.raises(CommandError, match="has no qrels version 'nope'"):
        call_command("llm_judge", "--collection", coll.name, "--qrels-version", "nope")
