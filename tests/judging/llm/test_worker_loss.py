"""An LLM judge job whose worker is killed (SIGKILL, by its pid) mid-job resumes after its last committed batch: the
sweeper re-queues it, a new worker labels only the pairs left, and the labels equal an uninterrupted run's, each pair
exactly once. Real workers and beat, on Redis + PostgreSQL (the fleet of tests/worker_helpers.py)."""

from __future__ import annotations

import time

import pytest

from ecast.core import jobs
from ecast.models import JobRecovery
from evaluation.models import Qrel
from judging.llm import services
from judging.models import LlmJudgeJob, LlmLabel
from tests import factories
from tests.worker_helpers import go_live, record, wait_for

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]

TOPICS = {str(i): [f"What is topic {i}?", "How does it work?", "Why is it used?", "Who made it?"] for i in range(6)}
PER_TURN = 20  # 6 × 4 turns × 20 passages = 480 pairs, one per batch: long enough to kill mid-way


def judged(name: str, year: int):
    coll = factories.collection_with_turns(name=name, year=year, conversations=TOPICS)
    judgments = {t.turn_id: {f"p{t.number}-{k}": k % 5 for k in range(PER_TURN)} for t in coll.turns.all()}
    version = factories.qrels_version(coll, "original", judgments)
    factories.passages(
        {
            f"p{n}-{k}": f"Passage {k} about turn {n}: " + "words " * (k + 5)
            for n in range(1, 5)
            for k in range(PER_TURN)
        }
    )
    return coll, version


def labels(job: LlmJudgeJob) -> dict[tuple[str, str], tuple[int, tuple[float, ...]]]:
    rows = LlmLabel.objects.filter(job=job).values_list("turn__turn_id", "passage_id", "grade", "probabilities")
    return {(t, p): (g, tuple(round(x, 5) for x in probs)) for t, p, g, probs in rows}


def test_an_llm_judge_job_whose_worker_is_killed_resumes_and_labels_every_pair_once(fleet, settings, tiny_causal):
    params = {"batch_size": 1}
    ref_coll, ref_version = judged("Uninterrupted", 2020)
    reference = services.llm_judge_job_create(
        collection=ref_coll, source_version=ref_version, model=str(tiny_causal), params=params
    )
    services.llm_judge_run(job_id=reference.pk)  # inline: the uninterrupted run
    expected = labels(reference)
    total = len(expected)
    assert total == len(TOPICS) * 4 * PER_TURN

    coll, version = judged("Killed", 2021)
    go_live(settings)
    fleet.beat()
    first = fleet.worker()
    job = services.llm_judge_job_create(collection=coll, source_version=version, model=str(tiny_causal), params=params)
    done = lambda: LlmLabel.objects.filter(job=job).count()  # noqa: E731
    killed_at, done_at_kill = fleet.kill_mid_job(first, done, total, at_least=20, before_end=150)
    job = wait_for(
        lambda: LlmJudgeJob.objects.filter(pk=job.pk, status=LlmJudgeJob.Status.SUCCEEDED).first(),
        timeout=180, poll=0.2, fleet=fleet, what="the killed job to finish",
    )  # fmt: skip
    recovered_s = time.monotonic() - killed_at
    got = labels(job)
    assert got == expected  # same grades and probabilities as the uninterrupted run, no pair missing
    assert LlmLabel.objects.filter(job=job).count() == total == job.progress_done  # none twice
    assert Qrel.objects.filter(version=job.target_version).count() == total
    recoveries = list(JobRecovery.objects.filter(kind=services.KIND, job_id=job.pk).values_list("reason", "detail"))
    losses = [detail for reason, detail in recoveries if reason == JobRecovery.Reason.WORKER_LOST]
    assert len(losses) >= 1, f"recoveries: {recoveries}\n{fleet.output()}"
    health = jobs.job_health(services.KIND, job.pk)
    record(
        "llm judge",
        {
            "pairs": total,
            "labelled_at_kill": done_at_kill,
            "seconds_from_kill_to_done": round(recovered_s, 1),
            "recoveries": [r["detail"] for r in health["recoveries"]],
        },
    )
