"""Live recompute with a real Celery worker on Redis: a burst of judgments → one recompute → the API shows it."""

from __future__ import annotations

import pytest
from celery.signals import after_task_publish, task_postrun
from django.db import transaction
from django.urls import reverse

from ecast.core.jobs import debounce_release
from evaluation import events, services
from evaluation.models import EvaluationJob, Qrel
from tests.evaluation.helpers import build
from tests.worker_helpers import wait_until


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_a_burst_of_judgments_is_recomputed_once_by_the_worker_and_shown_by_the_api(admin_api, settings, redis_url):
    from celery.contrib.testing.worker import start_worker

    from ecast.celery import app

    coll, version, runs = build()
    services.scores_compute_for_version(version=version)
    url = reverse("api-eval-run-scores", args=[runs["strong"].pk])
    before = admin_api.get(url, {"version": version.pk, "measure": "nDCG@3"}).json()["turns"]
    assert before["2_2"] == pytest.approx(0.0)

    def recomputed(turns):
        done = turns["2_2"] > 0.5 and EvaluationJob.objects.filter(kind="turns", status="succeeded").exists()
        return turns if done else None

    drains = {"queued": 0, "ran": 0}

    def on_publish(sender=None, **kwargs):
        drains["queued"] += sender == services.DRAIN_TASK

    def on_run(sender=None, task=None, **kwargs):
        drains["ran"] += task.name == services.DRAIN_TASK

    after_task_publish.connect(on_publish, weak=False)
    task_postrun.connect(on_run, weak=False)  # the test worker runs in this process, so its signals reach here
    settings.ECAST_RECOMPUTE_DELAY_S = 1.5
    debounce_release(services.recompute_key(version.pk))
    eager = app.conf.task_always_eager
    app.conf.task_always_eager = False
    app.control.purge()
    try:
        with start_worker(app, pool="solo", perform_ping_check=False, shutdown_timeout=20):
            t22, t11 = coll.turns.get(turn_id="2_2"), coll.turns.get(turn_id="1_1")
            # Five judgments, each saved in its own transaction like five assessor clicks.
            for turn, pid, grade in [(t22, "x4", 3), (t11, "x1", 2), (t22, "zz", 1), (t11, "q", 0), (t22, "yy", 0)]:
                with transaction.atomic():
                    Qrel.objects.create(version=version, turn=turn, passage_id=pid, grade=grade, source="assessed")
                    events.qrels_changed(version_id=version.pk, turn_ids=[turn.pk])
            after = wait_until(
                lambda: recomputed(admin_api.get(url, {"version": version.pk, "measure": "nDCG@3"}).json()["turns"]),
                timeout=40, poll=0.3, what="the recompute to show in the API",
            )  # fmt: skip
            # A second (wrong) drain would have been queued by one of the judgments above: every drain queued
            # so far must have run before the count below means anything.
            wait_until(lambda: drains["ran"] >= drains["queued"], timeout=40, what="every queued drain to run")
    finally:
        app.conf.task_always_eager = eager
        after_task_publish.disconnect(on_publish)
        task_postrun.disconnect(on_run)
    assert drains["queued"] == 1, drains
    assert after["2_2"] > 0.5, after
    assert after["1_1"] != before["1_1"]
    jobs = list(EvaluationJob.objects.filter(kind="turns"))
    assert len(jobs) == 1, [(j.pk, j.turn_ids) for j in jobs]
    assert sorted(jobs[0].turn_ids) == sorted([t22.pk, t11.pk]) and jobs[0].status == "succeeded"
