"""Helpers for importer tests: shared-data paths and a one-call importer that asserts success."""

from __future__ import annotations

import pytest

from ecast.imports.services import import_file
from ecast.models import ImportJob

# The head of the iKAT 2023 GPT-4 response-relevance labels (irlabamsterdam/iKAT
# 2023/evaluation/automatic_eval_results/relevance_judgement-gpt4.txt): four columns under a header.
GPT4_LABELS = (
    "conv_id\tturn_id\trun_id\tgpt4-label\n"
    "1d8fd0f5121bd8a297b8f16d491f342e\t17-2_11\tgeorgetown_infosense_ikat_run_3\t0\n"
    "b2c9bb0beeea6b95737b72f56a4f9ab8\t10-1_9\tgeorgetown_infosense_ikat_run_3\t0\n"
    "5affe4201249c4cca89071d04e6f408a\t17-2_9\tGRILL_LLAMA2_only_10_docs\t0\n"
    "e4f934b4b8cae855f5ee7fdd5abd8324\t16-1_14\trun-4-GPT-4\t3\n"
)


def ok(kind, path, **kw):
    """Import and fail the test with the error report when the import did not succeed."""
    job = import_file(kind=kind, path=path, **kw)
    assert job.status == ImportJob.Status.SUCCEEDED, job.errors[:10]
    return job


@pytest.fixture
def cast(shared_data):
    return shared_data / "cast"
