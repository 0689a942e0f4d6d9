"""A fine-tune job whose worker is killed (SIGKILL) mid-training stores no half adapter: the sweeper re-queues it, a
new worker trains from the start, and the job ends with exactly one adapter. Real workers and beat, on Redis +
PostgreSQL (the fleet of tests/worker_helpers.py)."""

from __future__ import annotations

import pytest

from ecast.generation import finetune
from ecast.models import Adapter, FinetuneJob, JobRecovery
from tests import factories
from tests.worker_helpers import go_live, record, wait_for

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]

EPOCHS = 20


def test_a_fine_tune_job_whose_worker_is_killed_trains_again_and_stores_one_adapter(fleet, settings, tiny_causal):
    coll = factories.paraphrase_collection(name="Killed fine-tune", topics=6, turns=3)
    params = {"epochs": EPOCHS, "batch_size": 1, "learning_rate": 0.01, "max_tokens": 256}
    go_live(settings)
    fleet.beat()
    first = fleet.worker()
    job = finetune.finetune_job_create(collection=coll, base_model=str(tiny_causal), params=params)
    total = EPOCHS * 15  # 18 approved pairs in 6 conversations, one held out: 15 steps of 1 pair per epoch
    done = lambda: FinetuneJob.objects.get(pk=job.pk).progress_done  # noqa: E731
    _killed_at, done_at_kill = fleet.kill_mid_job(first, done, total, at_least=20, before_end=100)
    assert not Adapter.objects.exists()
    job = wait_for(
        lambda: FinetuneJob.objects.filter(pk=job.pk, status=FinetuneJob.Status.SUCCEEDED).first(),
        timeout=300, poll=0.5, fleet=fleet, what="the killed fine-tune job to finish",
    )  # fmt: skip
    assert job.progress_total == total and len(job.metrics["heldout_loss"]) == EPOCHS + 1
    assert Adapter.objects.filter(job=job).count() == 1 == Adapter.objects.count()
    reasons = list(JobRecovery.objects.filter(kind=finetune.KIND, job_id=job.pk).values_list("reason", flat=True))
    assert JobRecovery.Reason.WORKER_LOST in reasons, f"recoveries: {reasons}\n{fleet.output()}"
    record("fine-tune", {"steps": total, "steps_at_kill": done_at_kill, "recoveries": reasons})
