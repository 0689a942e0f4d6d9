"""Live recompute with a real Celery worker on Redis: a burst of judgments → one recompute → the API shows it."""

from __future__ import annotations

import time

import pytest
from django.db import transaction
from django.urls import reverse

from ecast.core.jobs import debounce_release
from evaluation import events, services
from evaluation.models import EvaluationJob, Qrel
from tests.evaluation.helpers import build


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
            deadline = time.monotonic() + 40
            after = before
            while time.monotonic() < deadline:
                after = admin_api.get(url, {"version": version.pk, "measure": "nDCG@3"}).json()["turns"]
                if after["2_2"] > 0.5 and EvaluationJob.objects.filter(kind="turns", status="succeeded").exists():
                    break
                time.sleep(0.3)
            time.sleep(2.0)  # a second (wrong) drain would have run by now
    finally:
        app.conf.task_always_eager = eager
    assert after["2_2"] > 0.5, after
    assert after["1_1"] != before["1_1"]
    jobs = list(EvaluationJob.objects.filter(kind="turns"))
    assert len(jobs) == 1, [(j.pk, j.turn_ids) for j in jobs]
    assert sorted(jobs[0].turn_ids) == sorted([t22.pk, t11.pk]) and jobs[0].status == "succeeded"
